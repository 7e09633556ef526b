package emq_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/emqd/emqd/cluster"
	"github.com/emqd/emqd/cluster/clustertest"
	"github.com/emqd/emqd/emq"
)

// TestFunctionsTarget: the Functions target against a real redis-server 7
// with the cluster/ FUNCTION library loaded, in RESP2 and RESP3: the
// client's verbs map to FCALL emq_* and decode the library's replies as
// emqd's, refusals come back typed, and a worker (polling: a function
// cannot block) runs jobs to completion through a retry.
func TestFunctionsTarget(t *testing.T) {
	node := clustertest.StartLibraryNode(t, clustertest.NodeOptions{}, cluster.DebugClock())
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			rdb := node.Client(proto)
			c := emq.New(rdb, &emq.ClientOptions{Target: emq.Functions})
			ctx := context.Background()
			q := fmt.Sprintf("fn%d", proto)

			id, err := c.Enqueue(ctx, q, []byte("a"), nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Enqueue(ctx, q, []byte("x"), &emq.EnqueueOptions{ID: "nope"}); !errors.Is(err, emq.ErrKind) {
				t.Fatalf("bad id: %v", err)
			}
			jobs, err := c.Claim(ctx, q, time.Minute, &emq.ClaimOptions{MaxJobs: 5, WaitFor: time.Second})
			if err != nil || len(jobs) != 1 || jobs[0].ID != id || string(jobs[0].Payload) != "a" || jobs[0].Token != "1" {
				t.Fatalf("claim %+v %v", jobs, err)
			}
			if err := c.Lease(q, id, "7").Complete(ctx, nil); !errors.Is(err, emq.ErrStale) {
				t.Fatalf("wrong token: %v", err)
			}
			j, err := c.Inspector().Job(ctx, q, id)
			if err != nil || j.State != "active" || j.Attempts != "1" || j.LeaseDeadline.IsZero() {
				t.Fatalf("job %+v %v", j, err)
			}
			list, err := c.Inspector().List(ctx, q, emq.StateActive, &emq.ListOptions{Offset: 0, Count: 10})
			if err != nil || len(list) != 1 || list[0].ID != id || list[0].State != "active" {
				t.Fatalf("list %+v %v", list, err)
			}
			v, err := c.Lease(q, id, "1").Fail(ctx, "boom", &emq.FailOptions{MaxAttempts: 1, RetryIn: 0})
			if err != nil || !v.Dead || v.Failures != 1 {
				t.Fatalf("fail %+v %v", v, err)
			}
			if err := c.Inspector().Reprocess(ctx, q, id, &emq.ReprocessOptions{ResetBudget: true}); err != nil {
				t.Fatal(err)
			}
			if n, err := c.Inspector().Counts(ctx, q); err != nil || n != (emq.Counts{Pending: 1, Failed: 1, Latency: n.Latency}) {
				t.Fatalf("counts %+v %v", n, err)
			}
			// CountsMany sends one FCALL emq_counts per queue in a pipeline.
			if ns, errs, err := c.Inspector().CountsMany(ctx, []string{q, q + "-empty"}); err != nil || len(ns) != 2 ||
				errs[0] != nil || errs[1] != nil || ns[0].Pending != 1 || ns[0].Failed != 1 || ns[1] != (emq.Counts{}) {
				t.Fatalf("CountsMany %+v %v %v", ns, errs, err)
			}

			// A worker: the reprocessed job and nine more; each fails once.
			for i := 0; i < 9; i++ {
				if _, err := c.Enqueue(ctx, q, []byte(fmt.Sprint(i)), nil); err != nil {
					t.Fatal(err)
				}
			}
			var mu sync.Mutex
			done := map[string]bool{}
			all := make(chan struct{})
			w := emq.NewWorker(c, &emq.WorkerOptions{
				Concurrency: 3, PollInterval: 20 * time.Millisecond, Logger: quiet,
				Backoff: func(int64) time.Duration { return 0 },
				Hooks: emq.Hooks{Done: func(j *emq.Job, o emq.Outcome) {
					if o.Kind != emq.Completed {
						return
					}
					mu.Lock()
					defer mu.Unlock()
					done[j.ID] = true
					if len(done) == 10 {
						close(all)
					}
				}},
			})
			wctx, stop := context.WithCancel(ctx)
			ran := make(chan error, 1)
			go func() {
				ran <- w.Run(wctx, q, func(ctx context.Context, j *emq.Job) error {
					if j.Failures == 0 {
						return errors.New("first try fails")
					}
					return nil
				})
			}()
			recv(t, all, "ten completions")
			stop()
			if err := recv(t, ran, "return from Run"); err != nil {
				t.Fatal(err)
			}
			if n, err := c.Inspector().Counts(ctx, q); err != nil || n.Completed != 10 || n.Pending+n.Active+n.Scheduled+n.Dead != 0 {
				t.Fatalf("counts after the worker %+v %v", n, err)
			}
			if s := w.Stats(); s.Retried != 10 || s.Completed != 10 {
				t.Fatalf("stats %+v", s)
			}
		})
	}
}

// TestFunctionsOnCluster: one worker per queue over a *redis.ClusterClient
// on a three-primary Redis Cluster; each queue's keys live in its own slot
// and every job completes.
func TestFunctionsOnCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Redis Cluster")
	}
	cl := clustertest.StartCluster(t, 3)
	rdb := cl.Client()
	c := emq.New(rdb, &emq.ClientOptions{Target: emq.Functions})
	ctx := context.Background()
	queues := []string{"alpha", "beta", "gamma", "delta"}
	nodes := map[string]bool{}
	for _, q := range queues {
		nodes[cl.NodeOf("emq:{"+q+"}:pending").Addr] = true
		for i := 0; i < 5; i++ {
			if _, err := c.Enqueue(ctx, q, []byte(q), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(nodes) < 2 {
		t.Fatalf("the queues all live on one node: %v", nodes)
	}
	var wg sync.WaitGroup
	for _, q := range queues {
		var mu sync.Mutex
		n := 0
		full := make(chan struct{})
		w := emq.NewWorker(c, &emq.WorkerOptions{
			Concurrency: 2, PollInterval: 20 * time.Millisecond, Logger: quiet,
			Hooks: emq.Hooks{Done: func(j *emq.Job, o emq.Outcome) {
				mu.Lock()
				defer mu.Unlock()
				if n++; n == 5 {
					close(full)
				}
			}},
		})
		wctx, stop := context.WithCancel(ctx)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Run(wctx, q, func(ctx context.Context, j *emq.Job) error {
				if string(j.Payload) != q {
					return emq.NoRetry(fmt.Errorf("payload %q in queue %s", j.Payload, q))
				}
				return nil
			}); err != nil {
				t.Error(err)
			}
		}()
		go func() {
			<-full
			stop()
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	recv(t, done, "all queues done")
	for _, q := range queues {
		if n, err := c.Inspector().Counts(ctx, q); err != nil || n.Completed != 5 || n.Pending+n.Active+n.Dead != 0 {
			t.Fatalf("%s: counts %+v %v", q, n, err)
		}
	}
}
