package emq_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emqd/emqd/emq"
	"github.com/emqd/emqd/server"
	"github.com/redis/go-redis/v9"
)

// BenchmarkJobCycle measures the library's cost per job against the same
// cycle sent by hand: b.N jobs are enqueued, then processed to completion
// by (raw) 8 goroutines looping EMQ.CLAIM COUNT 8 and EMQ.COMPLETE, or
// (worker) an emq.Worker with Concurrency 8 and an empty handler (a
// goroutine per job, heartbeat and lease timers, hooks, outcome
// bookkeeping). Reported: jobs/s of the processing phase.
//
//	go test ./emq -run '^$' -bench JobCycle -benchtime 20000x -count 5
func BenchmarkJobCycle(b *testing.B) {
	for _, kind := range []string{"raw", "worker"} {
		b.Run(kind, func(b *testing.B) {
			s := server.StartTest(b)
			rdb := redis.NewClient(&redis.Options{Addr: s.Addr(), PoolSize: 32, MaxRetries: -1})
			defer rdb.Close()
			c := emq.New(rdb, nil)
			ctx := context.Background()
			const q = "bench"
			for i := 0; i < b.N; i += 1000 {
				p := rdb.Pipeline()
				for k := i; k < min(i+1000, b.N); k++ {
					p.Do(ctx, "EMQ.ENQUEUE", q, "*", "payload-of-sixty-four-bytes-payload-of-sixty-four-bytes-payload")
				}
				if _, err := p.Exec(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			start := time.Now()
			if kind == "raw" {
				var wg sync.WaitGroup
				for g := 0; g < 8; g++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							jobs, err := c.Claim(ctx, q, 30*time.Second, &emq.ClaimOptions{MaxJobs: 8})
							if err != nil {
								b.Error(err)
								return
							}
							if len(jobs) == 0 {
								return
							}
							for _, j := range jobs {
								if err := j.Complete(ctx, nil); err != nil {
									b.Error(err)
									return
								}
							}
						}
					}()
				}
				wg.Wait()
			} else {
				var done atomic.Int64
				wctx, stop := context.WithCancel(ctx)
				w := emq.NewWorker(c, &emq.WorkerOptions{Concurrency: 8, Logger: quiet, Hooks: emq.Hooks{
					Done: func(_ *emq.Job, o emq.Outcome) {
						if o.Kind != emq.Completed {
							b.Errorf("outcome %v", o)
						}
						if done.Add(1) == int64(b.N) {
							stop()
						}
					},
				}})
				if err := w.Run(wctx, q, func(context.Context, *emq.Job) error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
			el := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/el.Seconds(), "jobs/s")
			n, err := c.Inspector().Counts(ctx, q)
			if err != nil || n.Completed != int64(b.N) || n.Pending+n.Active != 0 {
				b.Fatalf("counts %+v %v", n, err)
			}
		})
	}
}
