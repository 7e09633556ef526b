package emq_test

import (
	"context"
	"testing"
	"time"

	"github.com/emqd/emqd/cluster"
	"github.com/emqd/emqd/cluster/clustertest"
	"github.com/emqd/emqd/emq"
)

// TestLanesFunctions: EnqueueOptions.Lane, SetLane, Lanes and LanesPage on
// the cluster library, which has emqd's lanes (docs/cluster.md §9): the
// same assertions as TestLanes, through FCALL.
func TestLanesFunctions(t *testing.T) {
	ctx := context.Background()
	node := clustertest.StartLibraryNode(t, clustertest.NodeOptions{}, cluster.DebugClock())
	c := emq.New(node.Client(3), &emq.ClientOptions{Target: emq.Functions})
	in := c.Inspector()
	if err := in.SetLane(ctx, "q", "a", emq.LaneSettings{Weight: 2, MaxActive: 1, RateCount: 5, RatePer: time.Second}); err != nil {
		t.Fatal(err)
	}
	for _, j := range []struct{ payload, lane string }{{"a1", "a"}, {"a2", "a"}, {"b1", "b"}} {
		if _, err := c.Enqueue(ctx, "q", []byte(j.payload), &emq.EnqueueOptions{Lane: j.lane}); err != nil {
			t.Fatal(err)
		}
	}
	jobs, err := c.Claim(ctx, "q", time.Second, &emq.ClaimOptions{MaxJobs: 3})
	if err != nil || len(jobs) != 2 || string(jobs[0].Payload) != "a1" || string(jobs[1].Payload) != "b1" {
		t.Fatalf("claim %+v %v (MAX_ACTIVE 1 holds a2 back)", jobs, err)
	}
	lanes, err := in.Lanes(ctx, "q")
	if err != nil || len(lanes) != 2 {
		t.Fatalf("lanes %+v %v", lanes, err)
	}
	a := lanes[0]
	if a.Name != "a" || a.State != "full" || a.Active != 1 || a.Pending != 1 || a.Weight != 2 || a.MaxActive != 1 ||
		a.RateCount != 5 || a.RatePer != time.Second {
		t.Fatalf("lane a %+v", a)
	}
	if page, err := in.LanesPage(ctx, "q", &emq.ListOptions{Offset: 1, Count: 5}); err != nil || len(page) != 1 || page[0].Name != "b" {
		t.Fatalf("LanesPage(1, 5): %+v %v", page, err)
	}
	// The slot comes back with the lease: a2 is next.
	if err := jobs[0].Complete(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if next, err := c.Claim(ctx, "q", time.Second, nil); err != nil || len(next) != 1 || string(next[0].Payload) != "a2" {
		t.Fatalf("after the slot came back %+v %v", next, err)
	}
	if err := in.SetLane(ctx, "q", "bad name", emq.LaneSettings{Weight: 2}); err == nil || err.Error() != "ERR invalid lane name" {
		t.Fatalf("a bad lane name: %v", err)
	}
}
