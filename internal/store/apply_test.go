package store

import (
	"fmt"
	"math"
	"math/rand"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/emqd/emqd/internal/plan"
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

// TestApplyPlanRandom: random plans over a few hashes and sorted sets leave
// the keyspace (types, encodings, fields in order, members in order) that
// their ops applied one plan at a time leave: the kept values and the held
// back increments (planKeys) change nothing.
func TestApplyPlanRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	hashes, zsets := []string{"h1", "h2", "h3"}, []string{"z1", "z2"}
	fields := []string{"a", "b", "count", "c"}
	for iter := 0; iter < 3000; iter++ {
		lim := Limits{HashEntries: int64(2 + rng.Intn(4)), HashValue: []int64{64, 20, 3}[rng.Intn(3)], ZSetEntries: 4, ZSetValue: 64}
		model := map[string]map[string]int64{}
		zmodel := map[string]map[string]int64{}
		p := &plan.Plan{}
		for i, n := 0, 1+rng.Intn(40); i < n; i++ {
			hk, zk := hashes[rng.Intn(len(hashes))], zsets[rng.Intn(len(zsets))]
			f := fields[rng.Intn(len(fields))]
			switch rng.Intn(8) {
			case 0:
				// One to three pairs (a field may repeat: the last value
				// stays), often after increments of the same hash (the
				// claim's HINCRBY attempts and HSET of the row, folded into
				// one write: planKeys.foldIncr).
				var fv []string
				for j, m := 0, 1+rng.Intn(3); j < m; j++ {
					if j > 0 {
						f = fields[rng.Intn(len(fields))]
					}
					v := int64(rng.Intn(2000) - 1000)
					fv = append(fv, f, strconv.FormatInt(v, 10))
					if model[hk] == nil {
						model[hk] = map[string]int64{}
					}
					model[hk][f] = v
				}
				p.HSet(hk, fv...)
			case 1:
				p.HDel(hk, f)
				delete(model[hk], f)
			case 2, 3, 4:
				cur := model[hk][f]
				d := int64(rng.Intn(7) - 3)
				if rng.Intn(10) == 0 {
					d = math.MaxInt64 / 2
				}
				if s := cur + d; (s > cur) != (d > 0) && d != 0 {
					d = -d // keep every step in range
				}
				p.HIncrBy(hk, f, d)
				if model[hk] == nil {
					model[hk] = map[string]int64{}
				}
				model[hk][f] = cur + d
			case 5:
				for j, m := 0, 1+rng.Intn(6); j < m; j++ {
					mem, sc := fmt.Sprint("m", rng.Intn(12)), int64(rng.Intn(5))
					p.ZAdd(zk, sc, mem)
					if zmodel[zk] == nil {
						zmodel[zk] = map[string]int64{}
					}
					zmodel[zk][mem] = sc
				}
			case 6:
				// Mostly the least members, in order (the sweep's ZREMs),
				// interleaved with writes to other keys.
				for j, m := 0, 1+rng.Intn(5); j < m; j++ {
					mem := fmt.Sprint("m", rng.Intn(12))
					if least := zLeast(zmodel[zk]); least != "" && rng.Intn(5) > 0 {
						mem = least
					}
					p.ZRem(zk, mem)
					delete(zmodel[zk], mem)
					if rng.Intn(3) == 0 && model[hk]["count"] < math.MaxInt64 {
						p.HIncrBy(hk, "count", 1)
						if model[hk] == nil {
							model[hk] = map[string]int64{}
						}
						model[hk]["count"]++
					}
				}
			case 7:
				k := hk
				if rng.Intn(2) == 0 {
					k = zk
					delete(zmodel, zk)
				} else {
					delete(model, hk)
				}
				p.Del(k)
			}
		}
		whole, split := New(1), New(1)
		whole.SetLimits(lim)
		split.SetLimits(lim)
		(&Ctx{S: whole, DB: whole.DB(0)}).ApplyPlan(p)
		for _, o := range p.Ops {
			(&Ctx{S: split, DB: split.DB(0)}).ApplyPlan(&plan.Plan{Ops: []plan.Op{o}})
		}
		if got, want := dumpDB(whole.DB(0)), dumpDB(split.DB(0)); got != want {
			t.Fatalf("iter %d: plan %v\n got %s\nwant %s", iter, p.Argvs(), got, want)
		}
		// The same plan once more over what it left, on one side after a
		// read pass (GetKept of some of its keys, as a verb's judgement):
		// the plan's ops find those values in the memo (readMemo), and
		// the keyspace ends the same.
		memo := New(1)
		memo.SetLimits(lim)
		(&Ctx{S: memo, DB: memo.DB(0)}).ApplyPlan(p)
		kept := 0
		for _, k := range append(append([]string{}, hashes...), zsets...) {
			if rng.Intn(3) > 0 && memo.DB(0).GetKept(k) != nil {
				kept++
			}
		}
		if kept > 0 && !memo.memo.valid(memo.DB(0)) {
			t.Fatalf("iter %d: the memo of %d keys does not hold before the plan", iter, kept)
		}
		(&Ctx{S: memo, DB: memo.DB(0)}).ApplyPlan(p)
		(&Ctx{S: whole, DB: whole.DB(0)}).ApplyPlan(p)
		if got, want := dumpDB(memo.DB(0)), dumpDB(whole.DB(0)); got != want {
			t.Fatalf("iter %d: plan %v applied twice, the second after a read pass\n got %s\nwant %s", iter, p.Argvs(), got, want)
		}
		if memo.memo.db != nil {
			t.Fatalf("iter %d: the memo outlived its plan", iter)
		}
	}
}

// TestReadMemoStamp: a value kept by GetKept is found again by the same
// command, and forgotten when the command ends (ResetForCommand), when the
// clock moves, when the keyspace changes, and when a lazy expiry deletes
// another key (which Mutations does not count).
func TestReadMemoStamp(t *testing.T) {
	s := New(1)
	s.SetNow(1000)
	d := s.DB(0)
	c := &Ctx{S: s, DB: d}
	(&Ctx{S: s, DB: d}).ApplyPlan(&plan.Plan{Ops: []plan.Op{
		{Kind: plan.HSet, Key: "a", Fields: [][]byte{[]byte("f"), []byte("1")}},
		{Kind: plan.HSet, Key: "b", Fields: [][]byte{[]byte("f"), []byte("2")}},
	}})
	d.SetExpire("b", 1500)
	for _, tc := range []struct {
		name          string
		before, after func()
	}{
		{"the next command", func() {}, func() { c.ResetForCommand(nil) }},
		{"the clock", func() {}, func() { s.SetNow(1001) }},
		{"a write", func() {}, func() { d.Remove("a"); d.Put("a", newHashValue(s.hashLim)) }},
		{"a lazy expiry", func() { s.SetNow(2000) }, func() {
			if d.Get("b") != nil {
				t.Fatal("b has not expired")
			}
		}},
	} {
		tc.before()
		v := d.GetKept("a")
		if v == nil || s.memo.find("a") != v || d.GetKept("a") != v {
			t.Fatalf("%s: a not kept", tc.name)
		}
		tc.after()
		if s.memo.valid(d) {
			t.Errorf("%s: the memo still holds", tc.name)
		}
		if got := d.GetKept("a"); got != d.Get("a") {
			t.Errorf("%s: GetKept %p, Get %p", tc.name, got, d.Get("a"))
		}
	}
}

// zLeast is the least member of a model sorted set ("" when empty).
func zLeast(z map[string]int64) string {
	least := ""
	for m, s := range z {
		if least == "" || s < z[least] || s == z[least] && m < least {
			least = m
		}
	}
	return least
}

func dumpDB(d *DB) string {
	var keys []string
	d.Keys(func(k string, _ *Value) bool { keys = append(keys, k); return true })
	sort.Strings(keys)
	var sb strings.Builder
	for _, k := range keys {
		v := d.Peek(k)
		switch v.Kind {
		case KindHash:
			fmt.Fprintf(&sb, "%s: %s\n", k, dumpHash(v.Hash()))
		case KindZSet:
			fmt.Fprintf(&sb, "%s: zset big=%v", k, v.ZSet.Big())
			v.ZSet.AscendAll(func(it ZItem) bool { fmt.Fprintf(&sb, " %s=%v", it.Member, it.Score); return true })
			sb.WriteString("\n")
		}
	}
	return sb.String()
}

// TestApplyPlanHeldIncrements: held back increments whose sum wraps around
// an int64 though every step fits, and more fields than are held at once,
// end as op by op.
func TestApplyPlanHeldIncrements(t *testing.T) {
	p := &plan.Plan{}
	p.HSet("c", "n", strconv.FormatInt(-math.MaxInt64, 10))
	p.HIncrBy("c", "n", math.MaxInt64) // 0
	p.HIncrBy("c", "n", math.MaxInt64) // MaxInt64: the held sum wraps around
	p.HIncrBy("c", "n", -5)
	for _, f := range []string{"a", "b", "c", "d", "e", "f", "a", "e"} {
		p.HIncrBy("m", f, 2)
		p.HIncrBy("m2", f, 1)
	}
	whole, split := New(1), New(1)
	(&Ctx{S: whole, DB: whole.DB(0)}).ApplyPlan(p)
	for _, o := range p.Ops {
		(&Ctx{S: split, DB: split.DB(0)}).ApplyPlan(&plan.Plan{Ops: []plan.Op{o}})
	}
	got, want := dumpDB(whole.DB(0)), dumpDB(split.DB(0))
	if got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	const w = `c: big=false len=1: n="9223372036854775802"
m: big=false len=6: a="4" b="2" c="2" d="2" e="4" f="2"
m2: big=false len=6: a="2" b="1" c="1" d="1" e="2" f="1"
`
	if got != w {
		t.Fatalf("got %s\nwant %s", got, w)
	}
}

// TestApplyPlanScratchStartsAndEndsEmpty: the store's planKeys scratch is
// empty after a plan, and a scratch left dirty (a plan a contained panic
// cut short) does not leak into the next plan: a stale kept value for a
// key would make the plan write into a value no longer in the keyspace.
func TestApplyPlanScratchStartsAndEndsEmpty(t *testing.T) {
	s := New(1)
	c := &Ctx{S: s, DB: s.DB(0)}
	p := &plan.Plan{}
	p.ZAdd("z", 1, "a")
	p.HIncrBy("m", "count", 1)
	c.ApplyPlan(p)
	if s.planKeys.next != 0 || s.planKeys.used != 0 || s.planKeys.dirty || s.planKeys.keys != [8]string{} ||
		s.planKeys.vals != [8]*Value{} || s.planKeys.incr != nil || s.planKeys.head != (heldHead{}) {
		t.Fatalf("scratch not empty after a plan: %+v", s.planKeys)
	}
	for i, b := range s.planKeys.buf {
		if b.key != "" || b.h != nil || b.field != nil || b.sum != 0 {
			t.Fatalf("held increment %d not cleared: %+v", i, b)
		}
	}
	// Leave it as a plan cut short by a contained panic would: a value of
	// "z" that is not in the keyspace kept, and the plan never ended.
	stale := &Value{Kind: KindZSet, ZSet: NewZSet()}
	s.planKeys.dirty = true
	s.planKeys.put("z", stale)
	q := &plan.Plan{}
	q.ZAdd("z", 2, "b")
	c.ApplyPlan(q)
	if stale.ZSet.Len() != 0 {
		t.Fatal("the plan wrote into a stale kept value")
	}
	if z := s.DB(0).Get("z"); z == nil || z.ZSet.Len() != 2 {
		t.Fatalf("z after the plan: %+v", z)
	}
}
