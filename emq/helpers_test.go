package emq_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/emqd/emqd/clock"
	"github.com/emqd/emqd/emq"
	"github.com/emqd/emqd/server"
	"github.com/redis/go-redis/v9"
)

const t0 = int64(1_700_000_000_000)

// manualClock adapts the server's clock.Manual to emq.Clock, so one
// Advance moves emqd's time and fires the worker's timers.
type manualClock struct{ m *clock.Manual }

func (c manualClock) Now() time.Time { return time.UnixMilli(c.m.NowMs()) }
func (c manualClock) AfterFunc(d time.Duration, f func()) emq.Timer {
	return c.m.AfterFunc(int64((d+time.Millisecond-1)/time.Millisecond), f)
}

// env is an embedded emqd on a manual clock and an emq.Client over a
// go-redis client that never times out a read (a blocked claim waits on
// the manual clock).
type env struct {
	t   *testing.T
	clk *clock.Manual
	srv *server.Server
	rdb *redis.Client
	c   *emq.Client
	in  *emq.Inspector
	ctx context.Context
}

func newEnv(t *testing.T) *env { return newEnvProto(t, 3) }

func newEnvProto(t *testing.T, proto int) *env {
	t.Helper()
	clk := clock.NewManual(t0)
	srv := server.StartTest(t, server.Options{Clock: clk})
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), Protocol: proto, ReadTimeout: -1, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	c := emq.New(rdb, nil)
	return &env{t: t, clk: clk, srv: srv, rdb: rdb, c: c, in: c.Inspector(), ctx: context.Background()}
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// within is the liveness bound of every wait in these tests: a wait that
// passes it is a hang, reported as a failure; no assertion depends on it.
const within = 20 * time.Second

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(within):
		t.Fatalf("no %s within %v", what, within)
	}
	var zero T
	return zero
}

// worker is one Run of a worker in the background.
type worker struct {
	w        *emq.Worker
	cancel   context.CancelFunc
	done     chan struct{} // closed when Run returned (err holds its error)
	err      error
	outcomes chan outcome
	beats    chan beat
	claimed  chan *emq.Job
	draining chan int
}

type outcome struct {
	job *emq.Job
	o   emq.Outcome
}

type beat struct {
	job *emq.Job
	err error
}

// startWorker runs a worker on queue q with the env's clock, quiet logs
// and hooks that report claims, heartbeats and outcomes on channels.
func (e *env) startWorker(q string, o emq.WorkerOptions, h emq.Handler) *worker {
	e.t.Helper()
	wk := &worker{
		done:     make(chan struct{}),
		outcomes: make(chan outcome, 100),
		beats:    make(chan beat, 100),
		claimed:  make(chan *emq.Job, 100),
		draining: make(chan int, 1),
	}
	o.Clock = manualClock{e.clk}
	o.Logger = quiet
	o.Hooks = emq.Hooks{
		Claimed:   func(j *emq.Job) { wk.claimed <- j },
		Heartbeat: func(j *emq.Job, err error) { wk.beats <- beat{j, err} },
		Done:      func(j *emq.Job, out emq.Outcome) { wk.outcomes <- outcome{j, out} },
		Draining:  func(_ string, held int) { wk.draining <- held },
	}
	wk.w = emq.NewWorker(e.c, &o)
	ctx, cancel := context.WithCancel(context.Background())
	wk.cancel = cancel
	go func() {
		wk.err = wk.w.Run(ctx, q, h)
		close(wk.done)
	}()
	e.t.Cleanup(func() {
		cancel()
		select {
		case <-wk.done:
		case <-time.After(within):
		}
	})
	return wk
}

func (wk *worker) outcome(t *testing.T) outcome {
	t.Helper()
	return recv(t, wk.outcomes, "outcome")
}

// stop cancels Run's context and waits for Run to return.
func (wk *worker) stop(t *testing.T) {
	t.Helper()
	wk.cancel()
	wk.wait(t)
}

// wait waits for Run to return, which must be without an error.
func (wk *worker) wait(t *testing.T) {
	t.Helper()
	select {
	case <-wk.done:
	case <-time.After(within):
		t.Fatalf("Run did not return within %v", within)
	}
	if wk.err != nil {
		t.Fatalf("Run: %v", wk.err)
	}
}

// enqueue admits payload on q with the options o (none or one).
func (e *env) enqueue(q, payload string, o ...*emq.EnqueueOptions) string {
	e.t.Helper()
	var opts *emq.EnqueueOptions
	if len(o) > 0 {
		opts = o[0]
	}
	id, err := e.c.Enqueue(e.ctx, q, []byte(payload), opts)
	if err != nil {
		e.t.Fatalf("enqueue: %v", err)
	}
	return id
}

func (e *env) job(q, id string) *emq.JobInfo {
	e.t.Helper()
	j, err := e.in.Job(e.ctx, q, id)
	if err != nil {
		e.t.Fatalf("job %s: %v", id, err)
	}
	return j
}

func (e *env) counts(q string) emq.Counts {
	e.t.Helper()
	n, err := e.in.Counts(e.ctx, q)
	if err != nil {
		e.t.Fatalf("counts: %v", err)
	}
	return n
}

// waitBlocked waits until the server reports n clients parked in a
// blocking claim (INFO clients: blocked_clients), the sync point for "the
// worker is waiting for jobs".
func (e *env) waitBlocked(n int) {
	e.t.Helper()
	want := "blocked_clients:" + string(rune('0'+n)) + "\r"
	deadline := time.Now().Add(within)
	for {
		info, err := e.rdb.Info(e.ctx, "clients").Result()
		if err != nil {
			e.t.Fatal(err)
		}
		if strings.Contains(info, want) {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("no %q in %q", want, info)
		}
		time.Sleep(time.Millisecond)
	}
}

func (e *env) now() time.Time { return time.UnixMilli(e.clk.NowMs()) }

// leasePart is a lease's exported fields, for comparing claims.
type leasePart struct {
	Queue, ID, Payload, Token string
	Failures                  int64
}

func parts(ls []*emq.Lease) []leasePart {
	out := make([]leasePart, len(ls))
	for i, l := range ls {
		out[i] = leasePart{l.Queue, l.ID, string(l.Payload), l.Token, l.Failures}
	}
	return out
}
