package emq_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/emqd/emqd/cluster"
	"github.com/emqd/emqd/cluster/clustertest"
	"github.com/emqd/emqd/emq"
)

// TestClientWait: Client.Wait on the native target blocks until the job
// completes (with its result), answers a dead job with its error, times
// out on the server clock, and reports a job with no row as ErrStale.
func TestClientWait(t *testing.T) {
	for _, proto := range []int{2, 3} {
		e := newEnvProto(t, proto)
		if _, err := e.rdb.Do(e.ctx, "EMQ.RETAIN", "q", "COMPLETED", 10, 0).Result(); err != nil {
			t.Fatal(err)
		}
		id := e.enqueue("q", "p")
		jobs, err := e.c.Claim(e.ctx, "q", time.Minute, nil)
		if err != nil || len(jobs) != 1 {
			t.Fatalf("claim %v %v", jobs, err)
		}
		type res struct {
			f   *emq.Finished
			err error
		}
		ch := make(chan res, 1)
		go func() {
			f, err := e.c.Wait(e.ctx, "q", id, 0)
			ch <- res{f, err}
		}()
		e.waitBlocked(1)
		if err := e.c.Lease("q", id, jobs[0].Token).Complete(e.ctx, &emq.CompleteOptions{Result: []byte("42")}); err != nil {
			t.Fatal(err)
		}
		r := recv(t, ch, "wait")
		if r.err != nil || r.f.State != "completed" || r.f.Result != "42" || !r.f.HasResult || r.f.Error != "" || !r.f.FinishedAt.Equal(e.now()) {
			t.Fatalf("RESP%d completed: %+v %v", proto, r.f, r.err)
		}
		// A dead job answers at once.
		id2 := e.enqueue("q", "p")
		jobs, _ = e.c.Claim(e.ctx, "q", time.Minute, nil)
		if _, err := e.c.Lease("q", id2, jobs[0].Token).Fail(e.ctx, "boom", &emq.FailOptions{MaxAttempts: 1, RetryIn: 0}); err != nil {
			t.Fatal(err)
		}
		f, err := e.c.Wait(e.ctx, "q", id2, time.Second)
		if err != nil || f.State != "dead" || f.Error != "boom" || f.HasResult {
			t.Fatalf("RESP%d dead: %+v %v", proto, f, err)
		}
		// Times out on the server clock.
		id3 := e.enqueue("q", "p")
		go func() {
			f, err := e.c.Wait(e.ctx, "q", id3, 500*time.Millisecond)
			ch <- res{f, err}
		}()
		e.waitBlocked(1)
		e.clk.Advance(500)
		if r := recv(t, ch, "timeout"); !errors.Is(r.err, emq.ErrWaitTimeout) || r.f != nil {
			t.Fatalf("RESP%d timeout: %+v %v", proto, r.f, r.err)
		}
		if _, err := e.c.Wait(e.ctx, "q", "JOB0000000000Z", 0); !errors.Is(err, emq.ErrStale) {
			t.Fatalf("RESP%d gone: %v", proto, err)
		}
	}
}

// TestClientWaitFunctions: on the Functions target Wait polls emq_wait
// (which answers at once, docs/cluster.md §3) until the job finishes, and
// times out on the caller's clock.
func TestClientWaitFunctions(t *testing.T) {
	node := clustertest.StartLibraryNode(t, clustertest.NodeOptions{}, cluster.DebugClock())
	c := emq.New(node.Client(3), &emq.ClientOptions{Target: emq.Functions})
	ctx := context.Background()
	if err := c.Inspector().SetRetention(ctx, "wq", emq.RetainCompleted, emq.Retention{MaxCount: 10}); err != nil {
		t.Fatal(err)
	}
	id, err := c.Enqueue(ctx, "wq", []byte("p"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Wait(ctx, "wq", id, 60*time.Millisecond); !errors.Is(err, emq.ErrWaitTimeout) {
		t.Fatalf("timeout: %v", err)
	}
	jobs, err := c.Claim(ctx, "wq", time.Minute, nil)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim %v %v", jobs, err)
	}
	ch := make(chan error, 1)
	var got *emq.Finished
	go func() {
		f, err := c.Wait(ctx, "wq", id, 0)
		got = f
		ch <- err
	}()
	time.Sleep(2 * emq.WaitPoll) // let it poll at least once unfinished
	if err := c.Lease("wq", id, jobs[0].Token).Complete(ctx, &emq.CompleteOptions{Result: []byte("ok")}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ch:
		if err != nil || got.State != "completed" || got.Result != "ok" {
			t.Fatalf("wait %+v %v", got, err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Wait never returned")
	}
}
