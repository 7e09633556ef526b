package plan

import "testing"

// TestPoolGivesBackOnlyItsOwn: Put takes back only plans from Get, clears
// their ops first (the pool holds nothing they pointed to), and Get hands
// out empty plans with the room asked for.
func TestPoolGivesBackOnlyItsOwn(t *testing.T) {
	own := &Plan{}
	own.HSet("row", "state", "active")
	Put(own) // not from Get: left alone
	if len(own.Ops) != 1 || own.Ops[0].Key != "row" {
		t.Fatalf("Put changed a plan that was not from Get: %+v", own.Ops)
	}
	Put(nil)

	p := Get(3)
	if len(p.Ops) != 0 || cap(p.Ops) < 3 {
		t.Fatalf("Get(3): len %d cap %d", len(p.Ops), cap(p.Ops))
	}
	p.ZAdd("active", 5, "id-1")
	p.HSetBytes("row", []byte("f"), []byte("v"))
	ops := p.Ops[:2:2]
	Put(p)
	if len(p.Ops) != 0 {
		t.Fatalf("Put left %d ops", len(p.Ops))
	}
	for i, o := range ops {
		if o.Key != "" || o.Member != "" || o.Fields != nil || o.Kind != 0 {
			t.Fatalf("op %d not cleared: %+v", i, o)
		}
	}
	q := Get(100)
	if len(q.Ops) != 0 || cap(q.Ops) < 100 {
		t.Fatalf("Get(100): len %d cap %d", len(q.Ops), cap(q.Ops))
	}
	for i := 0; i < 100; i++ {
		q.Del("k")
	}
	Put(q) // more room than the pool keeps: the ops go
	if q.Ops != nil {
		t.Fatalf("a plan of %d ops kept its room in the pool", cap(q.Ops))
	}
}

// TestHSetBytesCopiesTheList: HSetBytes keeps a copy of the caller's list
// (a scratch or variadic list may change after the call) in the plan's own
// backing, each op's Fields capped so that nothing appended to one reaches
// the next; Put clears the backing (the pool holds no value bytes), and a
// plan from the pool reuses it without allocating.
func TestHSetBytesCopiesTheList(t *testing.T) {
	p := Get(2)
	scratch := [][]byte{[]byte("state"), []byte("pending")}
	p.HSetBytes("row", scratch...)
	scratch[1] = []byte("changed")
	p.HSetBytes("mint", []byte("last"), []byte("JOB1"))
	if got := string(p.Ops[0].Fields[1]); got != "pending" {
		t.Fatalf("op 0's value %q after the caller changed its list", got)
	}
	f0 := p.Ops[0].Fields
	if cap(f0) != 2 {
		t.Fatalf("op 0's Fields: cap %d, want 2 (capped)", cap(f0))
	}
	_ = append(f0, []byte("x"))
	if got := string(p.Ops[1].Fields[0]); got != "last" {
		t.Fatalf("op 1's field %q after an append to op 0's Fields", got)
	}
	back := p.fields[:cap(p.fields)]
	Put(p)
	for i, b := range back {
		if b != nil {
			t.Fatalf("Put left field slice %d (%q) in the backing", i, b)
		}
	}
	q := &Plan{pooled: true, fields: back[:0]}
	row, st := []byte("state"), []byte("active")
	if n := testing.AllocsPerRun(100, func() {
		q.Ops = q.Ops[:0]
		q.fields = q.fields[:0]
		q.HSetBytes("row", st, row)
	}); n != 0 {
		t.Fatalf("HSetBytes into a reused backing: %v allocations, want 0", n)
	}
}
