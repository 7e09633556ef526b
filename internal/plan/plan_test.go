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
