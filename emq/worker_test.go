package emq_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emqd/emqd/emq"
)

// TestWorkerRetriesWithBackoffThenDeadLetters: a handler error becomes
// EMQ.FAIL with the backoff computed from the failures CLAIM returned
// (1 s, 2 s: Exponential without jitter), the retry runs only once that
// time has passed on the server's clock, and the MaxAttempts-th failure
// dead-letters the job with the error as last_error.
func TestWorkerRetriesWithBackoffThenDeadLetters(t *testing.T) {
	e := newEnv(t)
	id := e.enqueue("mail", "to=ada")
	runs := make(chan int64, 10)
	wk := e.startWorker("mail", emq.WorkerOptions{
		MaxAttempts: 3,
		Backoff:     emq.Exponential(time.Second, time.Hour, 0),
	}, func(ctx context.Context, j *emq.Job) error {
		runs <- j.Failures
		return errors.New("smtp timeout")
	})

	for i, wantDelay := range []time.Duration{time.Second, 2 * time.Second} {
		if f := recv(t, runs, "run"); f != int64(i) {
			t.Fatalf("run %d saw failures %d", i+1, f)
		}
		out := wk.outcome(t)
		if out.o.Kind != emq.Retried || out.o.Failures != int64(i+1) || out.o.Err.Error() != "smtp timeout" {
			t.Fatalf("run %d: outcome %+v", i+1, out.o)
		}
		j := e.job("mail", id)
		if j.State != "scheduled" || !j.RunAt.Equal(e.now().Add(wantDelay)) || j.Failures != int64(i+1) || j.LastError != "smtp timeout" {
			t.Fatalf("after run %d: %+v, want run_at now+%v", i+1, j, wantDelay)
		}
		// One ms early: still scheduled (only the due time makes it
		// claimable, and no one may take it before).
		e.clk.Advance(wantDelay.Milliseconds() - 1)
		if j := e.job("mail", id); j.State != "scheduled" {
			t.Fatalf("claimed before its backoff ran out: %+v", j)
		}
		e.clk.Advance(1)
	}
	if f := recv(t, runs, "run"); f != 2 {
		t.Fatalf("third run saw failures %d", f)
	}
	out := wk.outcome(t)
	if out.o.Kind != emq.DeadLettered || out.o.Failures != 3 {
		t.Fatalf("third outcome %+v", out.o)
	}
	j := e.job("mail", id)
	if j.State != "dead" || j.Failures != 3 || j.LastError != "smtp timeout" || j.Attempts != "3" {
		t.Fatalf("dead row %+v", j)
	}
	if n := e.counts("mail"); n.Dead != 1 || n.Failed != 1 || n.Pending+n.Active+n.Scheduled != 0 {
		t.Fatalf("counts %+v", n)
	}
	wk.stop(t)
	if s := wk.w.Stats(); s.Claimed != 3 || s.Retried != 2 || s.DeadLettered != 1 || s.Running != 0 {
		t.Fatalf("stats %+v", s)
	}
}

// TestWorkerNoRetry: an error wrapping ErrNoRetry dead-letters the job at
// its first failure, whatever MaxAttempts says.
func TestWorkerNoRetry(t *testing.T) {
	e := newEnv(t)
	id := e.enqueue("mail", "to=nobody")
	wk := e.startWorker("mail", emq.WorkerOptions{MaxAttempts: 10}, func(ctx context.Context, j *emq.Job) error {
		return fmt.Errorf("no such mailbox: %w", emq.ErrNoRetry)
	})
	out := wk.outcome(t)
	if out.o.Kind != emq.DeadLettered || out.o.Failures != 1 {
		t.Fatalf("outcome %+v", out.o)
	}
	if j := e.job("mail", id); j.State != "dead" || j.LastError != "no such mailbox: emq: do not retry" {
		t.Fatalf("row %+v", j)
	}
	if err := emq.NoRetry(errors.New("bad input")); err.Error() != "bad input" || !errors.Is(err, emq.ErrNoRetry) {
		t.Fatalf("NoRetry: %v", err)
	}
}

// TestWorkerLeaseExpiresWithoutHeartbeats: with no heartbeats, a handler
// that outlives its lease sees its context cancelled (ErrLeaseExpired) once
// the lease runs out; the sweep recovers the job, and the worker's FAIL is
// refused (EMQSTALE lease lost), so no retry budget is charged: the next
// run sees failures 0.
func TestWorkerLeaseExpiresWithoutHeartbeats(t *testing.T) {
	e := newEnv(t)
	id := e.enqueue("mail", "slow")
	causes := make(chan error, 1)
	release := make(chan struct{})
	second := make(chan *emq.Job, 1)
	wk := e.startWorker("mail", emq.WorkerOptions{LeaseDuration: time.Second, HeartbeatInterval: -1, StallSweepInterval: -1 /* the test sweeps */},
		func(ctx context.Context, j *emq.Job) error {
			if j.Token != "1" {
				second <- j
				return nil
			}
			<-ctx.Done()
			causes <- context.Cause(ctx)
			<-release
			return ctx.Err()
		})
	recv(t, wk.claimed, "claim")
	e.clk.Advance(999)
	select {
	case c := <-causes:
		t.Fatalf("cancelled before the lease ran out: %v", c)
	default:
	}
	e.clk.Advance(1)
	if c := recv(t, causes, "cancellation"); !errors.Is(c, emq.ErrLeaseExpired) {
		t.Fatalf("cause %v", c)
	}
	rec, dead, err := e.c.StalledCheck(e.ctx, "mail", &emq.StalledCheckOptions{MaxStalled: 2, Limit: 0})
	if err != nil || len(rec) != 1 || rec[0] != id || len(dead) != 0 {
		t.Fatalf("sweep: %v %v %v", rec, dead, err)
	}
	close(release)
	out := wk.outcome(t)
	var re *emq.Error
	if out.o.Kind != emq.LeaseLost || !errors.As(out.o.Err, &re) || re.Detail != "lease lost" {
		t.Fatalf("outcome %+v", out.o)
	}
	j := recv(t, second, "second run")
	if j.Token != "2" || j.Failures != 0 {
		t.Fatalf("second run token %s failures %d", j.Token, j.Failures)
	}
	if out := wk.outcome(t); out.o.Kind != emq.Completed {
		t.Fatalf("second outcome %+v", out.o)
	}
}

// TestWorkerLeaseLostOnHeartbeat: when a heartbeat is refused (the job was
// taken from the holder: here released with its token by someone else),
// the handler's context is cancelled with ErrLeaseLost and the worker sends
// nothing for it.
func TestWorkerLeaseLostOnHeartbeat(t *testing.T) {
	e := newEnv(t)
	id := e.enqueue("mail", "x")
	causes := make(chan error, 1)
	runs := make(chan *emq.Job, 2)
	wk := e.startWorker("mail", emq.WorkerOptions{LeaseDuration: 3 * time.Second, HeartbeatInterval: time.Second},
		func(ctx context.Context, j *emq.Job) error {
			runs <- j
			if j.Token != "1" {
				return nil
			}
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return errors.New("interrupted")
		})
	j := recv(t, runs, "run")
	if err := e.c.Lease("mail", id, j.Token).Requeue(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(1000)
	b := recv(t, wk.beats, "heartbeat")
	if !errors.Is(b.err, emq.ErrStale) {
		t.Fatalf("heartbeat error %v", b.err)
	}
	if c := recv(t, causes, "cancellation"); !errors.Is(c, emq.ErrLeaseLost) {
		t.Fatalf("cause %v", c)
	}
	if out := wk.outcome(t); out.o.Kind != emq.LeaseLost {
		t.Fatalf("outcome %+v", out.o)
	}
	// The handler's error was not sent: the job's next run has no failure.
	if j := recv(t, runs, "second run"); j.Token != "2" || j.Failures != 0 {
		t.Fatalf("second run %+v", j)
	}
	if out := wk.outcome(t); out.o.Kind != emq.Completed {
		t.Fatalf("second outcome %+v", out.o)
	}
}

// TestWorkerHeartbeatsKeepLongJobAlive: a job running ten leases long is
// extended every Heartbeat (each EMQ.EXTEND moves lease_deadline_ms to
// now + Lease), a sweep after all that time recovers nothing, and the job
// completes.
func TestWorkerHeartbeatsKeepLongJobAlive(t *testing.T) {
	e := newEnv(t)
	id := e.enqueue("mail", "long")
	release := make(chan struct{})
	wk := e.startWorker("mail", emq.WorkerOptions{LeaseDuration: 3 * time.Second, HeartbeatInterval: time.Second, StallSweepInterval: -1},
		func(ctx context.Context, j *emq.Job) error {
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		})
	recv(t, wk.claimed, "claim")
	for i := 0; i < 30; i++ {
		e.clk.Advance(1000)
		if b := recv(t, wk.beats, "heartbeat"); b.err != nil {
			t.Fatalf("heartbeat %d: %v", i, b.err)
		}
		if j := e.job("mail", id); j.State != "active" || !j.LeaseDeadline.Equal(e.now().Add(3*time.Second)) {
			t.Fatalf("after heartbeat %d: %+v", i, j)
		}
	}
	rec, dead, err := e.c.StalledCheck(e.ctx, "mail", &emq.StalledCheckOptions{MaxStalled: 1, Limit: 0})
	if err != nil || len(rec)+len(dead) != 0 {
		t.Fatalf("sweep recovered %v %v %v", rec, dead, err)
	}
	close(release)
	if out := wk.outcome(t); out.o.Kind != emq.Completed {
		t.Fatalf("outcome %+v", out.o)
	}
	if n := e.counts("mail"); n.Completed != 1 || n.Active != 0 {
		t.Fatalf("counts %+v", n)
	}
}

// TestWorkerPanicBecomesFail: a panicking handler does not crash the
// worker: the panic becomes EMQ.FAIL with "panic: <value>" as last_error,
// and the worker goes on (the retry runs and completes).
func TestWorkerPanicBecomesFail(t *testing.T) {
	e := newEnv(t)
	id := e.enqueue("mail", "x")
	second := make(chan *emq.Job, 1)
	wk := e.startWorker("mail", emq.WorkerOptions{Backoff: emq.Exponential(time.Second, time.Second, 0)},
		func(ctx context.Context, j *emq.Job) error {
			if j.Token == "1" {
				var m map[string]int
				m["boom"]++ // a nil map write: a runtime panic
			}
			second <- j
			return nil
		})
	out := wk.outcome(t)
	var pe *emq.PanicError
	if out.o.Kind != emq.Retried || !errors.As(out.o.Err, &pe) || !strings.Contains(pe.Error(), "panic: assignment to entry in nil map") ||
		!strings.Contains(string(pe.Stack), "worker_test.go") {
		t.Fatalf("outcome %+v", out.o)
	}
	if j := e.job("mail", id); j.State != "scheduled" || j.LastError != "panic: assignment to entry in nil map" || j.Failures != 1 {
		t.Fatalf("row %+v", j)
	}
	e.clk.Advance(1000)
	if j := recv(t, second, "second run"); j.Failures != 1 {
		t.Fatalf("second run %+v", j)
	}
	if out := wk.outcome(t); out.o.Kind != emq.Completed {
		t.Fatalf("second outcome %+v", out.o)
	}
	if s := wk.w.Stats(); s.Panics != 1 || s.Completed != 1 || s.Retried != 1 {
		t.Fatalf("stats %+v", s)
	}
}

// TestWorkerShutdownRequeuesAndLosesNothing: Run's context ends with three
// jobs running and two pending. Claiming stops; a handler that finishes
// within the grace completes; when the grace (on the worker's clock) runs
// out, the two still running see ErrShutdown and their jobs are given back
// with EMQ.REQUEUE, charging nothing. Every job is accounted for.
func TestWorkerShutdownRequeuesAndLosesNothing(t *testing.T) {
	e := newEnv(t)
	var ids []string
	for i := 0; i < 5; i++ {
		ids = append(ids, e.enqueue("mail", fmt.Sprint(i)))
	}
	started := make(chan string, 5)
	finish := make(chan struct{})
	causes := make(chan error, 5)
	wk := e.startWorker("mail", emq.WorkerOptions{Concurrency: 3, ShutdownGrace: 10 * time.Second},
		func(ctx context.Context, j *emq.Job) error {
			started <- j.ID
			if j.ID == ids[0] {
				<-finish
				return nil
			}
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return ctx.Err()
		})
	for i := 0; i < 3; i++ {
		recv(t, started, "start")
	}
	wk.cancel()
	if held := recv(t, wk.draining, "drain"); held != 3 {
		t.Fatalf("draining with %d jobs held, want 3", held)
	}
	close(finish)
	if out := wk.outcome(t); out.job.ID != ids[0] || out.o.Kind != emq.Completed {
		t.Fatalf("outcome within the grace %+v %+v", out.job, out.o)
	}
	select {
	case <-wk.done:
		t.Fatalf("Run returned before the grace ran out: %v", wk.err)
	default:
	}
	e.clk.Advance(10_000)
	released := map[string]bool{}
	for i := 0; i < 2; i++ {
		out := wk.outcome(t)
		if out.o.Kind != emq.Released {
			t.Fatalf("outcome after the grace %+v", out.o)
		}
		released[out.job.ID] = true
	}
	wk.wait(t)
	for i := 0; i < 2; i++ {
		if c := recv(t, causes, "cancellation"); !errors.Is(c, emq.ErrShutdown) {
			t.Fatalf("cause %v", c)
		}
	}
	if !released[ids[1]] || !released[ids[2]] {
		t.Fatalf("released %v, want %s and %s", released, ids[1], ids[2])
	}
	if n := e.counts("mail"); n.Pending != 4 || n.Active != 0 || n.Scheduled != 0 || n.Completed != 1 || n.Dead != 0 {
		t.Fatalf("counts %+v", n)
	}
	for _, id := range ids[1:3] {
		if j := e.job("mail", id); j.State != "pending" || j.Attempts != "1" || j.Failures != 0 || j.Stalled != 0 ||
			j.Fields["failures"] != "" || j.Fields["stalled"] != "" {
			t.Fatalf("released row %+v", j)
		}
	}
	if s := wk.w.Stats(); s.Claimed != 3 || s.Completed != 1 || s.Released != 2 || s.Running != 0 {
		t.Fatalf("stats %+v", s)
	}
}

// TestWorkerShutdownWhileIdle: a worker parked in EMQ.CLAIM ... BLOCK
// stops at once when its context ends (CLIENT UNBLOCK; the manual clock
// never times the claim out), and the unblocked claim took nothing.
func TestWorkerShutdownWhileIdle(t *testing.T) {
	e := newEnv(t)
	wk := e.startWorker("mail", emq.WorkerOptions{ClaimWait: time.Hour},
		func(ctx context.Context, j *emq.Job) error { return nil })
	e.waitBlocked(1)
	wk.stop(t)
	e.waitBlocked(0)
	e.enqueue("mail", "after")
	if n := e.counts("mail"); n.Pending != 1 || n.Active != 0 {
		t.Fatalf("counts %+v", n)
	}
	if s := wk.w.Stats(); s.Claimed != 0 || s.ClaimErrors != 0 {
		t.Fatalf("stats %+v", s)
	}
}

// TestWorkerConcurrency: with Concurrency 3 and eight jobs, three run at
// once (three are active on the server, five wait), never more, and all
// eight complete.
func TestWorkerConcurrency(t *testing.T) {
	e := newEnv(t)
	for i := 0; i < 8; i++ {
		e.enqueue("mail", fmt.Sprint(i))
	}
	var running, most atomic.Int64
	started := make(chan struct{}, 8)
	release := make(chan struct{})
	var mu sync.Mutex
	wk := e.startWorker("mail", emq.WorkerOptions{Concurrency: 3}, func(ctx context.Context, j *emq.Job) error {
		n := running.Add(1)
		mu.Lock()
		most.Store(max(most.Load(), n))
		mu.Unlock()
		started <- struct{}{}
		<-release
		running.Add(-1)
		return nil
	})
	for i := 0; i < 3; i++ {
		recv(t, started, "start")
	}
	if n := e.counts("mail"); n.Active != 3 || n.Pending != 5 {
		t.Fatalf("counts with three running %+v", n)
	}
	close(release)
	for i := 0; i < 8; i++ {
		if out := wk.outcome(t); out.o.Kind != emq.Completed {
			t.Fatalf("outcome %+v", out.o)
		}
	}
	if most.Load() != 3 {
		t.Fatalf("at most %d handlers ran at once, want 3", most.Load())
	}
	if n := e.counts("mail"); n.Completed != 8 || n.Pending+n.Active != 0 {
		t.Fatalf("counts %+v", n)
	}
}

// TestWorkerAbandon: ErrAbandon sends nothing and stops the heartbeats; the
// lease expires and the sweep recovers the job, charging its stall budget.
func TestWorkerAbandon(t *testing.T) {
	e := newEnv(t)
	id := e.enqueue("mail", "x")
	wk := e.startWorker("mail", emq.WorkerOptions{LeaseDuration: time.Second, Concurrency: 1, StallSweepInterval: -1},
		func(ctx context.Context, j *emq.Job) error {
			if j.Token == "1" {
				return emq.ErrAbandon
			}
			return nil
		})
	if out := wk.outcome(t); out.o.Kind != emq.Abandoned {
		t.Fatalf("outcome %+v", out.o)
	}
	if j := e.job("mail", id); j.State != "active" {
		t.Fatalf("row %+v", j)
	}
	e.clk.Advance(1000)
	if rec, _, err := e.c.StalledCheck(e.ctx, "mail", &emq.StalledCheckOptions{MaxStalled: 2, Limit: 0}); err != nil || len(rec) != 1 {
		t.Fatalf("sweep %v %v", rec, err)
	}
	if out := wk.outcome(t); out.o.Kind != emq.Completed {
		t.Fatalf("second outcome %+v", out.o)
	}
}

// TestRunArguments: Run refuses what it cannot run with.
func TestRunArguments(t *testing.T) {
	e := newEnv(t)
	w := emq.NewWorker(e.c, nil)
	if err := w.Run(e.ctx, "bad name", func(context.Context, *emq.Job) error { return nil }); err == nil {
		t.Fatal("invalid queue name accepted")
	}
	if err := w.Run(e.ctx, "q", nil); err == nil {
		t.Fatal("nil handler accepted")
	}
	o := w.Options()
	if o.Concurrency != 1 || o.LeaseDuration != 30*time.Second || o.HeartbeatInterval != 10*time.Second || o.MaxAttempts != 25 ||
		o.ShutdownGrace != 10*time.Second || o.ClaimWait != time.Second || o.StallSweepInterval != 15*time.Second || o.MaxStalled != 2 {
		t.Fatalf("defaults %+v", o)
	}
}
