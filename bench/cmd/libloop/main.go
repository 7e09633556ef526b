// Command libloop measures the emq library's job loop against emqd, as
// issue 21 asks: go-redis underneath, 8 producers, 64 workers, 200,000
// jobs, the append-only file on with appendfsync everysec. It reports jobs
// per second (from the first enqueue to the last completion) and the
// server's CPU per job (utime+stime of the emqd process, /proc/<pid>/stat,
// over the same span), for two loops, each on a fresh emqd started from
// --emqd-bin:
//
//   - before: what the library did before EMQ.ENQUEUE.MANY and NEXT: each
//     producer sends one EMQ.ENQUEUE per job (Client.Enqueue); each worker
//     claims one job (EMQ.CLAIM ... BLOCK) and then, per job, pipelines
//     EMQ.COMPLETE and EMQ.CLAIM in one round trip (the Worker's loop up to
//     that change, written out with the Client's calls and go-redis);
//   - after: producers send EMQ.ENQUEUE.MANY batches (Client.EnqueueMany,
//     --batch jobs each); the workers are emq.Worker runs (8 Runs of
//     Concurrency 8), which complete with EMQ.COMPLETE ... NEXT.
//
// --rounds alternates the two (before, after, before, ...) so that both
// see the same load on a shared machine; compare ratios, not figures.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emqd/emqd/bench/internal/procs"
	"github.com/emqd/emqd/emq"
	"github.com/redis/go-redis/v9"
)

func main() {
	bin := flag.String("emqd-bin", "bench/bin/emqd", "the emqd binary")
	jobs := flag.Int("jobs", 200000, "jobs per run")
	producers := flag.Int("producers", 8, "producer goroutines")
	workers := flag.Int("workers", 64, "worker slots")
	batch := flag.Int("batch", 100, "jobs per EMQ.ENQUEUE.MANY (after)")
	rounds := flag.Int("rounds", 1, "before/after pairs")
	flag.Parse()
	for r := 0; r < *rounds; r++ {
		for _, mode := range []string{"before", "after"} {
			res, err := run(*bin, mode, *jobs, *producers, *workers, *batch)
			if err != nil {
				fmt.Fprintln(os.Stderr, mode+":", err)
				os.Exit(1)
			}
			fmt.Printf("round %d %-6s %8.0f jobs/s  %6.2f µs server CPU/job  (%d jobs in %v, server CPU %v)\n",
				r+1, mode, float64(*jobs)/res.wall.Seconds(), float64(res.cpu.Microseconds())/float64(*jobs), *jobs, res.wall.Round(time.Millisecond), res.cpu)
		}
	}
}

type result struct{ wall, cpu time.Duration }

// cpuOf is the user+system CPU time of process pid (clock ticks of 10 ms).
func cpuOf(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * 10 * time.Millisecond, nil
}

func run(bin, mode string, jobs, producers, workers, batch int) (result, error) {
	dir, err := os.MkdirTemp("", "libloop-")
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(dir)
	p, err := procs.StartEmqdCPU("", bin, "--appendonly", "yes", "--appendfsync", "everysec", "--dir", filepath.Clean(dir))
	if err != nil {
		return result{}, err
	}
	defer p.Stop(5 * time.Second)
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr, PoolSize: producers + workers + 16, MaxRetries: -1, ReadTimeout: 10 * time.Second})
	defer rdb.Close()
	c := emq.New(rdb, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const q = "bench"
	var done atomic.Int64
	finished := make(chan struct{})
	completed := func() {
		if done.Add(1) == int64(jobs) {
			close(finished)
		}
	}
	cpu0, err := cpuOf(p.Pid())
	if err != nil {
		return result{}, err
	}
	start := time.Now()
	var wg sync.WaitGroup
	payload := []byte("payload-of-a-job")
	errs := make(chan error, producers+workers+8)
	for i := 0; i < producers; i++ {
		n := jobs / producers
		if i < jobs%producers {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if mode == "before" {
				for j := 0; j < n; j++ {
					if _, err := c.Enqueue(ctx, q, payload, nil); err != nil {
						errs <- err
						return
					}
				}
				return
			}
			for j := 0; j < n; j += batch {
				k := min(batch, n-j)
				b := make([]emq.NewJob, k)
				for x := range b {
					b[x].Payload = payload
				}
				if _, err := c.EnqueueMany(ctx, q, b, nil); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	lease := 30 * time.Second
	if mode == "before" {
		for i := 0; i < workers; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					got, err := c.Claim(ctx, q, lease, &emq.ClaimOptions{WaitFor: 100 * time.Millisecond})
					if err != nil || len(got) == 0 {
						continue
					}
					j := got[0]
					for {
						var claim *redis.Cmd
						_, err := rdb.Pipelined(ctx, func(pl redis.Pipeliner) error {
							pl.Do(ctx, "EMQ.COMPLETE", q, j.ID, j.Token)
							claim = pl.Do(ctx, "EMQ.CLAIM", q, lease.Milliseconds())
							return nil
						})
						if err != nil && ctx.Err() == nil {
							errs <- err
							return
						}
						completed()
						arr, _ := claim.Val().([]any)
						if len(arr) != 1 {
							break
						}
						e, _ := arr[0].([]any)
						if len(e) != 4 {
							break
						}
						j = c.Lease(q, e[0].(string), e[2].(string))
					}
				}
			}()
		}
	} else {
		w := emq.NewWorker(c, &emq.WorkerOptions{Concurrency: workers / 8, LeaseDuration: lease,
			Logger: slog.New(slog.DiscardHandler),
			Hooks:  emq.Hooks{Done: func(_ *emq.Job, o emq.Outcome) { completed() }}})
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				w.Run(ctx, q, func(context.Context, *emq.Job) error { return nil })
			}()
		}
	}
	select {
	case <-finished:
	case err := <-errs:
		cancel()
		wg.Wait()
		return result{}, err
	case <-time.After(10 * time.Minute):
		cancel()
		return result{}, fmt.Errorf("%d of %d jobs completed in 10 minutes", done.Load(), jobs)
	}
	wall := time.Since(start)
	cpu1, err := cpuOf(p.Pid())
	cancel()
	wg.Wait()
	if err != nil {
		return result{}, err
	}
	return result{wall: wall, cpu: cpu1 - cpu0}, nil
}
