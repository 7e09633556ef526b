package emq_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/emqd/emqd/emq"
)

// TestEnqueueOptionsRefused: options that contradict each other are
// refused before anything is sent; the queue stays empty.
func TestEnqueueOptionsRefused(t *testing.T) {
	e := newEnv(t)
	both := &emq.EnqueueOptions{Delay: time.Second, RunAt: e.now().Add(time.Hour)}
	const want = "emq: EnqueueOptions: set at most one of Delay and RunAt"
	if _, err := e.c.Enqueue(e.ctx, "q", []byte("x"), both); err == nil || err.Error() != want {
		t.Fatalf("Enqueue: %v", err)
	}
	if _, err := e.c.EnqueueMany(e.ctx, "q", []emq.NewJob{{Payload: []byte("x")}}, both); err == nil || err.Error() != want {
		t.Fatalf("EnqueueMany: %v", err)
	}
	if _, err := e.c.Enqueue(e.ctx, "q", []byte("x"), &emq.EnqueueOptions{Delay: -time.Second}); err == nil || err.Error() != "emq: EnqueueOptions: negative Delay -1s" {
		t.Fatalf("negative delay: %v", err)
	}
	if n := e.counts("q"); n != (emq.Counts{}) {
		t.Fatalf("counts after refusals %+v", n)
	}
	if keys, _ := e.rdb.Keys(e.ctx, "*").Result(); len(keys) != 0 {
		t.Fatalf("keys after refusals %v", keys)
	}
}

// TestNewInspector: an Inspector made on its own sees what the client's
// does, with the client's target.
func TestNewInspector(t *testing.T) {
	e := newEnv(t)
	e.enqueue("q", "a")
	in := emq.NewInspector(e.rdb, nil)
	if in.Target() != emq.Native || in.Redis() != e.rdb || e.c.Inspector().Redis() != e.rdb {
		t.Fatalf("target %v", in.Target())
	}
	a, err1 := in.Counts(e.ctx, "q")
	b, err2 := e.in.Counts(e.ctx, "q")
	if err1 != nil || err2 != nil || a != b || a.Pending != 1 {
		t.Fatalf("counts %+v %+v %v %v", a, b, err1, err2)
	}
	f := emq.NewInspector(e.rdb, &emq.ClientOptions{Target: emq.Functions})
	if f.Target() != emq.Functions || f.Target().String() != "functions" {
		t.Fatalf("functions target %v", f.Target())
	}
}

// TestClaimWaitForever: ClaimOptions.WaitForever sends BLOCK 0: the claim
// waits until a job arrives, however far the clock moves.
func TestClaimWaitForever(t *testing.T) {
	e := newEnv(t)
	got := make(chan []*emq.Lease, 1)
	go func() {
		ls, err := e.c.Claim(context.Background(), "q", time.Minute, &emq.ClaimOptions{WaitForever: true, WaitFor: time.Millisecond})
		if err != nil {
			t.Error(err)
		}
		got <- ls
	}()
	e.waitBlocked(1)
	e.clk.Advance(3_600_000)
	e.waitBlocked(1) // still parked an hour later
	id := e.enqueue("q", "late")
	ls := recv(t, got, "claim")
	if !reflect.DeepEqual(parts(ls), []leasePart{{Queue: "q", ID: id, Payload: "late", Token: "1"}}) {
		t.Fatalf("claim %+v", parts(ls))
	}
}

// TestLeaseDelayUntil: a lease defers its job to a time; the rebuilt
// lease of a spent token is refused.
func TestLeaseDelayUntil(t *testing.T) {
	e := newEnv(t)
	id := e.enqueue("q", "x")
	ls, err := e.c.Claim(e.ctx, "q", time.Minute, nil)
	if err != nil || len(ls) != 1 {
		t.Fatalf("claim %v %v", ls, err)
	}
	at := e.now().Add(90 * time.Minute)
	if err := ls[0].DelayUntil(e.ctx, at); err != nil {
		t.Fatal(err)
	}
	if j := e.job("q", id); j.State != emq.StateScheduled || !j.RunAt.Equal(at) || j.Failures != 0 {
		t.Fatalf("row %+v", j)
	}
	if err := e.c.Lease("q", id, ls[0].Token).DelayUntil(e.ctx, at); !errors.Is(err, emq.ErrStale) {
		t.Fatalf("second DelayUntil: %v", err)
	}
}

// TestJobChildren: a flow parent's handler reads its children through
// its *Job; a plain job's answer is ErrNoFlow.
func TestJobChildren(t *testing.T) {
	e := newEnv(t)
	const p, k = "JOBP0000000001", "JOBK0000000001"
	if _, err := e.c.Flow(e.ctx, emq.FlowJob{Queue: "parents", ID: p, Children: []emq.FlowJob{{Queue: "kids", ID: k}}}); err != nil {
		t.Fatal(err)
	}
	ls, err := e.c.Claim(e.ctx, "kids", time.Minute, nil)
	if err != nil || len(ls) != 1 {
		t.Fatalf("claim %v %v", ls, err)
	}
	if err := ls[0].Complete(e.ctx, &emq.CompleteOptions{Result: []byte{}}); err != nil {
		t.Fatal(err)
	}
	plain := e.enqueue("parents", "plain")
	type read struct {
		id   string
		kids []emq.Child
		err  error
	}
	reads := make(chan read, 2)
	wk := e.startWorker("parents", emq.WorkerOptions{}, func(ctx context.Context, j *emq.Job) error {
		kids, err := j.Children(ctx)
		reads <- read{j.ID, kids, err}
		return nil
	})
	for range 2 {
		r := recv(t, reads, "handler")
		switch r.id {
		case p:
			if r.err != nil || !reflect.DeepEqual(r.kids, []emq.Child{{Queue: "kids", ID: k, State: emq.StateCompleted, HasResult: true}}) {
				t.Errorf("parent's children %+v %v", r.kids, r.err)
			}
		case plain:
			if !errors.Is(r.err, emq.ErrNoFlow) {
				t.Errorf("plain job's children: %v", r.err)
			}
		default:
			t.Errorf("handler ran %s", r.id)
		}
	}
	wk.stop(t)
}
