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

// TestArgvsIntoReuses: rendering into a scratch gives what Argvs gives,
// plan after plan (a smaller plan after a bigger one, a bigger after a
// smaller), allocates nothing once the scratch has room, and Release
// clears the references and drops a scratch grown past argvScratchKeep.
func TestArgvsIntoReuses(t *testing.T) {
	big := &Plan{}
	for i := range 20 {
		big.ZAdd("emq:{q}:pending", int64(i), "JOB0000000000"+string(rune('a'+i)))
	}
	big.HSet("row", "state", "active", "attempts", "1")
	small := &Plan{}
	small.HIncrBy("emq:{q}:metrics:completed", "count", 1)
	small.Del("emq:{q}:job:JOB00000000001")
	var sc ArgvScratch
	for round, p := range []*Plan{small, big, small, big} {
		got := p.ArgvsInto(&sc)
		if want := p.Argvs(); !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d: ArgvsInto %q, Argvs %q", round, got, want)
		}
		sc.Release()
	}
	if allocs := testing.AllocsPerRun(100, func() { big.ArgvsInto(&sc); sc.Release() }); allocs != 0 {
		t.Fatalf("ArgvsInto with room: %v allocations, want 0", allocs)
	}
	big.ArgvsInto(&sc)
	args := sc.args[:cap(sc.args)]
	sc.Release()
	for i, a := range args {
		if a != nil {
			t.Fatalf("after Release args[%d] = %q, want nil (a payload kept alive)", i, a)
		}
	}
	huge := &Plan{}
	huge.HSetBytes("k", []byte("f"), make([]byte, 1))
	huge.Del(string(make([]byte, argvScratchKeep+1)))
	huge.ArgvsInto(&sc)
	sc.Release()
	if sc.buf != nil || sc.args != nil || sc.out != nil {
		t.Fatalf("a render past %d bytes was kept (buf cap %d)", argvScratchKeep, cap(sc.buf))
	}
}
