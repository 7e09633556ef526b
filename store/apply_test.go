package store

import (
	"testing"

	"github.com/emqd/emqd/plan"
)

// TestApplyPlanKeptKeys: a plan that writes the same keys many times, and
// removes a key and writes it again, leaves the keyspace that its ops
// applied one plan at a time leave (the plan's kept values, planKeys, are
// dropped with their keys).
func TestApplyPlanKeptKeys(t *testing.T) {
	p := &plan.Plan{}
	p.ZAdd("z", 1, "a")
	p.ZAdd("z", 2, "b")
	p.HIncrBy("c", "count", 1)
	p.ZRem("z", "a")
	p.HIncrBy("c", "count", 1)
	p.ZRem("z", "b") // z is dropped (empty)
	p.ZAdd("z", 3, "c")
	p.Del("c")
	p.HIncrBy("c", "count", 5)
	p.ZAdd("y", 0, "m")
	p.ZRem("y", "m") // y is dropped
	p.HSet("h", "f", "v")
	p.HDel("h", "f") // h is dropped
	p.HIncrBy("h", "n", 2)
	p.ZRem("gone", "x")

	whole, split := New(1), New(1)
	(&Ctx{S: whole, DB: whole.DB(0)}).ApplyPlan(p)
	for _, o := range p.Ops {
		(&Ctx{S: split, DB: split.DB(0)}).ApplyPlan(&plan.Plan{Ops: []plan.Op{o}})
	}
	for _, s := range []*Store{whole, split} {
		d := s.DB(0)
		if d.Len() != 3 {
			t.Errorf("%d keys, want z, c, h", d.Len())
		}
		z, _ := d.LookupZSet("z")
		if z == nil || z.Len() != 1 {
			t.Fatalf("z: %v", z)
		}
		if sc, ok := z.Score("c"); !ok || sc != 3 {
			t.Errorf("z c: %v %v", sc, ok)
		}
		c, _ := d.LookupHash("c")
		if v, _ := c.Get("count"); string(v) != "5" {
			t.Errorf("c count %q, want 5", v)
		}
		h, _ := d.LookupHash("h")
		if v, _ := h.Get("n"); string(v) != "2" || h.Len() != 1 {
			t.Errorf("h n %q (%d fields), want 2", v, h.Len())
		}
	}
}
