package emq_test

import (
	"testing"
	"time"

	"github.com/emqd/emqd/emq"
)

// TestWithPriority: Enqueue and EnqueueMany send PRIORITY p, and the claim
// serves by priority, then id (docs/verbs.md §4.3.1).
func TestWithPriority(t *testing.T) {
	e := newEnv(t)
	a := e.enqueue("q", "a", &emq.EnqueueOptions{Priority: 3})
	b := e.enqueue("q", "b")
	ids, err := e.c.EnqueueMany(e.ctx, "q", []emq.NewJob{{Payload: []byte("c")}}, &emq.EnqueueOptions{Priority: -4})
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := e.c.Claim(e.ctx, "q", time.Second, &emq.ClaimOptions{MaxJobs: 3})
	if err != nil || len(jobs) != 3 || jobs[0].ID != ids[0] || jobs[1].ID != b || jobs[2].ID != a {
		t.Fatalf("claim %+v %v", jobs, err)
	}
	if _, err := e.c.Enqueue(e.ctx, "q", []byte("x"), &emq.EnqueueOptions{Priority: 1 << 53}); err == nil {
		t.Fatal("PRIORITY 2^53 admitted")
	}
}

// TestLanes: WithLane, SetLane and Lanes drive EMQ.ENQUEUE ... LANE,
// EMQ.LANE and EMQ.LANES (docs/verbs.md §4.26).
func TestLanes(t *testing.T) {
	e := newEnv(t)
	if err := e.in.SetLane(e.ctx, "q", "a", emq.LaneSettings{Weight: 2, MaxActive: 1, RateCount: 5, RatePer: time.Second}); err != nil {
		t.Fatal(err)
	}
	e.enqueue("q", "a1", &emq.EnqueueOptions{Lane: "a"})
	e.enqueue("q", "a2", &emq.EnqueueOptions{Lane: "a"})
	e.enqueue("q", "b1", &emq.EnqueueOptions{Lane: "b"})
	jobs, err := e.c.Claim(e.ctx, "q", time.Second, &emq.ClaimOptions{MaxJobs: 3})
	if err != nil || len(jobs) != 2 {
		t.Fatalf("claim %+v %v (MAX_ACTIVE 1 holds a2 back)", jobs, err)
	}
	lanes, err := e.in.Lanes(e.ctx, "q")
	if err != nil || len(lanes) != 2 {
		t.Fatalf("lanes %+v %v", lanes, err)
	}
	a := lanes[0]
	if a.Name != "a" || a.State != emq.LaneFull || a.Active != 1 || a.Pending != 1 || a.Weight != 2 || a.MaxActive != 1 ||
		a.RateCount != 5 || a.RatePer != time.Second {
		t.Fatalf("lane a %+v", a)
	}
	if err := e.in.SetLane(e.ctx, "q", "a", emq.LaneSettings{MaxActive: -1}); err != nil {
		t.Fatal(err)
	}
	if jobs, err := e.c.Claim(e.ctx, "q", time.Second, nil); err != nil || len(jobs) != 1 || string(jobs[0].Payload) != "a2" {
		t.Fatalf("after lifting MAX_ACTIVE %+v %v", jobs, err)
	}
	if err := e.in.SetLane(e.ctx, "q", "bad name", emq.LaneSettings{Weight: 2}); err == nil {
		t.Fatal("a bad lane name was accepted")
	}
}
