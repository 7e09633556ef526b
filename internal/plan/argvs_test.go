package plan

import (
	"math"
	"reflect"
	"testing"
)

// TestArgvsMatchesArgv: the batched rendering equals Op.Argv op by op.
func TestArgvsMatchesArgv(t *testing.T) {
	p := &Plan{}
	p.HSet("emq:{q}:job:JOB00000000001", "state", "pending", "attempts", "0", "payload", "")
	p.HSetBytes("k", []byte("f"), []byte{0, 1, 2})
	p.HDel("row", "last_error", "failures", "stalled")
	p.HIncrBy("emq:{q}:metrics:failed", "count", 1)
	p.HIncrBy("c", "n", math.MinInt64)
	p.ZAdd("emq:{q}:active", 1700000000000, "JOB00000000001")
	p.ZAdd("z", math.MaxInt64, "")
	p.ZAdd("z", -5, "m")
	p.ZRem("emq:{q}:pending", "JOB00000000001")
	p.Del("emq:{q}:job:JOB00000000001")
	got := p.Argvs()
	if len(got) != len(p.Ops) {
		t.Fatalf("%d argvs for %d ops", len(got), len(p.Ops))
	}
	for i, o := range p.Ops {
		if want := o.Argv(); !reflect.DeepEqual(got[i], want) {
			t.Errorf("op %d: got %q, want %q", i, got[i], want)
		}
	}
	if len((&Plan{}).Argvs()) != 0 {
		t.Error("empty plan")
	}
}
