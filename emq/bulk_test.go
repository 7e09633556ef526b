package emq_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/emqd/emqd/cluster"
	"github.com/emqd/emqd/cluster/clustertest"
	"github.com/emqd/emqd/emq"
)

// bulkScenario drives the bulk admin methods on c (either target): 25 dead
// jobs reprocessed in batches of 10 (three calls), run now, promote all,
// drain, remove the retained completed jobs, and the refusals.
func bulkScenario(t *testing.T, c *emq.Client, q string) {
	ctx := context.Background()
	var jobs []emq.NewJob
	for i := 0; i < 25; i++ {
		jobs = append(jobs, emq.NewJob{Payload: []byte("p")})
	}
	ids, err := c.EnqueueMany(ctx, q, jobs, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range ids {
		got, err := c.Claim(ctx, q, time.Minute, nil)
		if err != nil || len(got) != 1 {
			t.Fatalf("claim %v %v", got, err)
		}
		if v, err := got[0].Fail(ctx, "boom", &emq.FailOptions{MaxAttempts: 1, RetryIn: 0}); err != nil || !v.Dead {
			t.Fatalf("fail %+v %v", v, err)
		}
	}
	b, err := c.Inspector().ReprocessAll(ctx, q, &emq.ReprocessAllOptions{BulkOptions: emq.BulkOptions{BatchSize: 10, SingleCall: true}})
	if err != nil || b != (emq.Bulk{Done: 10, Left: 15, Calls: 1}) {
		t.Fatalf("one call %+v %v", b, err)
	}
	b, err = c.Inspector().ReprocessAll(ctx, q, &emq.ReprocessAllOptions{ResetBudget: true, BulkOptions: emq.BulkOptions{BatchSize: 10}})
	if err != nil || b != (emq.Bulk{Done: 15, Left: 0, Calls: 2}) {
		t.Fatalf("reprocess all %+v %v", b, err)
	}
	j, err := c.Inspector().Job(ctx, q, ids[24])
	if err != nil || j.State != "pending" || j.Failures != 0 {
		t.Fatalf("reset job %+v %v", j, err)
	}
	if j, err = c.Inspector().Job(ctx, q, ids[0]); err != nil || j.Failures != 1 {
		t.Fatalf("job reprocessed without reset %+v %v", j, err)
	}
	b, err = c.Inspector().Drain(ctx, q, &emq.RemoveAllOptions{BulkOptions: emq.BulkOptions{BatchSize: 7, MaxCalls: 2}})
	if err != nil || b != (emq.Bulk{Done: 14, Left: 11, Calls: 2}) {
		t.Fatalf("drain of two calls %+v %v", b, err)
	}
	b, err = c.Inspector().Drain(ctx, q, &emq.RemoveAllOptions{BulkOptions: emq.BulkOptions{BatchSize: 7}})
	if err != nil || b != (emq.Bulk{Done: 11, Left: 0, Calls: 2}) {
		t.Fatalf("drain %+v %v", b, err)
	}
	a, _ := c.Enqueue(ctx, q, []byte("a"), &emq.EnqueueOptions{Delay: time.Hour})
	_, _ = c.Enqueue(ctx, q, []byte("b"), &emq.EnqueueOptions{Delay: 2 * time.Hour})
	_, _ = c.Enqueue(ctx, q, []byte("c"), &emq.EnqueueOptions{Delay: 3 * time.Hour})
	if err := c.Inspector().RunNow(ctx, q, a); err != nil {
		t.Fatal(err)
	}
	if err := c.Inspector().RunNow(ctx, q, a); !errors.Is(err, emq.ErrState) {
		t.Fatalf("run now of a pending job: %v", err)
	}
	if err := c.Inspector().RunNow(ctx, q, "JOB00000000009"); !errors.Is(err, emq.ErrStale) {
		t.Fatalf("run now of no job: %v", err)
	}
	if b, err = c.Inspector().PromoteAll(ctx, q, nil); err != nil || b != (emq.Bulk{Done: 2, Calls: 1}) {
		t.Fatalf("promote all %+v %v", b, err)
	}
	if n, err := c.Inspector().Counts(ctx, q); err != nil || n.Pending != 3 || n.Scheduled != 0 {
		t.Fatalf("counts %+v %v", n, err)
	}
	if err := c.Inspector().SetRetention(ctx, q, emq.RetainCompleted, emq.Retention{MaxCount: 100}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		got, err := c.Claim(ctx, q, time.Minute, nil)
		if err != nil || len(got) != 1 {
			t.Fatalf("claim %v %v", got, err)
		}
		if err := got[0].Complete(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	if b, err = c.Inspector().RemoveAll(ctx, q, emq.StateCompleted, nil); err != nil || b.Done != 3 || b.Left != 0 {
		t.Fatalf("remove retained %+v %v", b, err)
	}
	if _, err := c.Inspector().RemoveAll(ctx, q, emq.StateActive, nil); err == nil {
		t.Fatal("RemoveAll of active jobs was sent")
	}
	if _, err := c.Inspector().PromoteAll(ctx, q, &emq.BulkOptions{BatchSize: 10001}); err == nil || err.Error() != "ERR limit must be at most 10000" {
		t.Fatalf("batch too large: %v", err)
	}
}

// TestBulkAdmin: the bulk methods against emqd (RESP2 and RESP3).
func TestBulkAdmin(t *testing.T) {
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			e := newEnvProto(t, proto)
			bulkScenario(t, e.c, "bulk")
		})
	}
}

// TestBulkAdminFunctions: the same through the cluster library's
// functions (FCALL emq_reprocess_all, ...), on a real redis-server 7.
func TestBulkAdminFunctions(t *testing.T) {
	node := clustertest.StartLibraryNode(t, clustertest.NodeOptions{}, cluster.DebugClock())
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			c := emq.New(node.Client(proto), &emq.ClientOptions{Target: emq.Functions})
			bulkScenario(t, c, fmt.Sprintf("bulk%d", proto))
		})
	}
}
