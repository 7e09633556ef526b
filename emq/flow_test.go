package emq_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/emqd/emqd/cluster"
	"github.com/emqd/emqd/cluster/clustertest"
	"github.com/emqd/emqd/emq"
)

// flowScenario: Client.Flow adds a nested flow (idempotent), the children
// complete with results or die, and the parent's worker reads them with
// Client.Children (docs/verbs.md §4.25). cq is the children's queue.
func flowScenario(t *testing.T, c *emq.Client, q, cq string) {
	ctx := context.Background()
	const p, a, b, g = "JOBP0000000001", "JOBA0000000001", "JOBB0000000001", "JOBG0000000001"
	kids := []emq.FlowJob{
		{Queue: cq, ID: a, Payload: []byte("a")},
		{Queue: cq, ID: b, Payload: []byte("b"), OnChildFail: emq.IgnoreFailure,
			Children: []emq.FlowJob{{Queue: cq, ID: g, Payload: []byte("g")}}},
	}
	for i := 0; i < 2; i++ {
		if n, err := c.Flow(ctx, emq.FlowJob{Queue: q, ID: p, Payload: []byte("album"), OnChildFail: emq.IgnoreFailure, Children: kids}); err != nil || n != 4 {
			t.Fatalf("flow %d: %d %v", i, n, err)
		}
	}
	if _, err := c.Flow(ctx, emq.FlowJob{Queue: q, ID: p, Payload: []byte("album"), OnChildFail: emq.FailParent, Children: kids}); !errors.Is(err, emq.ErrFlow) {
		t.Fatalf("conflicting flow: %v", err)
	}
	if _, err := c.Inspector().Children(ctx, q, "JOBP0000000009"); !errors.Is(err, emq.ErrNoFlow) {
		t.Fatalf("no flow: %v", err)
	}
	finish := func(id string, ok bool, out string) {
		t.Helper()
		jobs, err := c.Claim(ctx, cq, time.Minute, nil)
		if err != nil || len(jobs) != 1 || jobs[0].ID != id {
			t.Fatalf("claim for %s: %v %v", id, jobs, err)
		}
		if ok {
			err = c.Lease(cq, id, jobs[0].Token).Complete(ctx, &emq.CompleteOptions{Result: []byte(out)})
		} else {
			_, err = c.Lease(cq, id, jobs[0].Token).Fail(ctx, out, &emq.FailOptions{MaxAttempts: 1, RetryIn: 0})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	// Claimed in id order: a, then g (b waits on g).
	finish(a, true, "thumb")
	finish(g, false, "bad pixel") // b is ignore: released; its roster shows the death
	got, err := c.Inspector().Children(ctx, cq, b)
	if err != nil || !reflect.DeepEqual(got, []emq.Child{{Queue: cq, ID: g, State: "dead", Error: "bad pixel"}}) {
		t.Fatalf("b's children %+v %v", got, err)
	}
	finish(b, true, "mid")
	n, err := c.Inspector().Counts(ctx, q)
	if err != nil || n.Waiting != 0 || n.Pending < 1 {
		t.Fatalf("counts %+v %v", n, err)
	}
	got, err = c.Inspector().Children(ctx, q, p)
	want := []emq.Child{
		{Queue: cq, ID: a, State: "completed", Result: "thumb", HasResult: true},
		{Queue: cq, ID: b, State: "completed", Result: "mid", HasResult: true},
	}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("children %+v %v", got, err)
	}
	// The parent's holder reads the same through its lease, then gives
	// the parent back for the callers' checks.
	parent, err := c.Claim(ctx, q, time.Minute, nil)
	if err != nil || len(parent) != 1 || parent[0].ID != p {
		t.Fatalf("claim of the parent: %v %v", parent, err)
	}
	if got, err := parent[0].Children(ctx); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("lease.Children %+v %v", got, err)
	}
	if err := parent[0].Requeue(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestClientFlow(t *testing.T) {
	for _, proto := range []int{2, 3} {
		e := newEnvProto(t, proto)
		flowScenario(t, e.c, "album", "img")
		j, err := e.in.Job(e.ctx, "album", "JOBP0000000001")
		if err != nil || j.State != "pending" || j.Fields["children"] != "2" || j.Fields["children_left"] != "0" {
			t.Fatalf("RESP%d parent %+v %v", proto, j, err)
		}
	}
}

// TestClientFlowFunctions: the same on the cluster library, whose flows
// live in one queue (docs/cluster.md §7); another queue is refused.
func TestClientFlowFunctions(t *testing.T) {
	node := clustertest.StartLibraryNode(t, clustertest.NodeOptions{}, cluster.DebugClock())
	c := emq.New(node.Client(3), &emq.ClientOptions{Target: emq.Functions})
	flowScenario(t, c, "fq", "fq")
	_, err := c.Flow(context.Background(), emq.FlowJob{Queue: "fq", ID: "JOBP0000000002", Children: []emq.FlowJob{{Queue: "other", ID: "JOBA0000000002"}}})
	if err == nil || err.Error() != "ERR in a cluster every job of a flow must be in the parent's queue (another queue's keys are in another slot; docs/cluster.md §7)" {
		t.Fatalf("cross-queue flow on a cluster: %v", err)
	}
}
