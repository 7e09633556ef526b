package emq_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/emqd/emqd/emq"
	"github.com/redis/go-redis/v9"
)

// TestTypedErrors: every EMQ refusal class comes back as *emq.Error,
// matched by errors.Is against its sentinel only, with the reply's detail,
// and still unwraps to the go-redis error reply; other replies (WRONGTYPE)
// stay plain go-redis errors.
func TestTypedErrors(t *testing.T) {
	e := newEnv(t)
	sentinels := []error{emq.ErrStale, emq.ErrState, emq.ErrLane, emq.ErrKind, emq.ErrLimit}
	check := func(err, want error, class, detail string) {
		t.Helper()
		var me *emq.Error
		if !errors.As(err, &me) || me.Class != class || me.Detail != detail || me.Error() != class+" "+detail {
			t.Fatalf("%v: want %s %s", err, class, detail)
		}
		for _, s := range sentinels {
			if errors.Is(err, s) != (s == want) {
				t.Fatalf("%v: errors.Is(%v) = %v", err, s, errors.Is(err, s))
			}
		}
		var re redis.Error
		if !errors.As(err, &re) || re.Error() != class+" "+detail {
			t.Fatalf("%v does not unwrap to the go-redis reply", err)
		}
	}

	_, err := e.c.Enqueue(e.ctx, "q", []byte("x"), &emq.EnqueueOptions{ID: "job-1"})
	check(err, emq.ErrKind, "EMQKIND", "job id must be JOB followed by 11 characters from 0-9A-Za-z")

	id := e.enqueue("q", "x", &emq.EnqueueOptions{ID: "JOB00000000001"})
	if id != "JOB00000000001" {
		t.Fatalf("id %q", id)
	}
	if id2, err := e.c.Enqueue(e.ctx, "q", []byte("y"), &emq.EnqueueOptions{ID: id}); !errors.Is(err, emq.ErrDuplicate) || id2 != id {
		t.Fatalf("duplicate: %q %v", id2, err)
	}
	err = e.in.Reprocess(e.ctx, "q", id, nil)
	check(err, emq.ErrState, "EMQSTATE", "job is not dead")

	jobs, err := e.c.Claim(e.ctx, "q", time.Second, nil)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim %v %v", jobs, err)
	}
	check(e.c.Lease("q", id, "2").Complete(e.ctx, nil), emq.ErrStale, "EMQSTALE", "complete token mismatch")
	_, err = e.in.Remove(e.ctx, "q", id)
	check(err, emq.ErrState, "EMQSTATE", "job is active")

	e.rdb.HSet(e.ctx, "emq:{q}:job:"+id, "group", "g")
	check(e.c.Lease("q", id, "1").Extend(e.ctx, time.Second), emq.ErrLane, "EMQLANE", "lane rows are not served natively")

	// A job larger than the connection's output limit (docs/verbs.md §2.16).
	e.rdb.ConfigSet(e.ctx, "client-output-buffer-limit", "normal 1mb 0 0")
	e.enqueue("big", string(make([]byte, 2<<20)))
	_, err = e.c.Claim(e.ctx, "big", time.Second, nil)
	check(err, emq.ErrLimit, "EMQLIMIT", "the next job's reply would pass this client's output buffer limit (client-output-buffer-limit); nothing was claimed")
	e.rdb.ConfigSet(e.ctx, "client-output-buffer-limit", "normal 0 0 0")

	e.rdb.Set(e.ctx, "emq:{q}:job:JOB00000000009", "x", 0)
	err = e.c.Lease("q", "JOB00000000009", "1").Complete(e.ctx, nil)
	var me *emq.Error
	if errors.As(err, &me) || err == nil || err.Error() != "WRONGTYPE Operation against a key holding the wrong kind of value" {
		t.Fatalf("WRONGTYPE: %v", err)
	}
	if _, err := e.in.Job(e.ctx, "q", "JOB0000000000Z"); !errors.Is(err, emq.ErrNoJob) {
		t.Fatalf("missing job: %v", err)
	}
}

// TestClientVerbs drives every Client method against emqd, in RESP2 and
// RESP3 (go-redis decodes maps differently), and checks each reply's
// decoding against the row the verb left.
func TestClientVerbs(t *testing.T) {
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			e := newEnvProto(t, proto)
			ctx := e.ctx
			a := e.enqueue("q", "a")
			b := e.enqueue("q", "b", &emq.EnqueueOptions{Delay: 1500 * time.Microsecond}) // rounded up: 2 ms
			c := e.enqueue("q", "c", &emq.EnqueueOptions{RunAt: e.now().Add(time.Hour)})
			if j := e.job("q", b); j.State != "scheduled" || !j.RunAt.Equal(e.now().Add(2*time.Millisecond)) {
				t.Fatalf("delayed %+v", j)
			}
			if j := e.job("q", c); !j.RunAt.Equal(e.now().Add(time.Hour)) || string(j.Payload) != "c" || j.Attempts != "0" {
				t.Fatalf("run-at %+v", j)
			}
			if err := e.in.Pause(ctx, "q"); err != nil {
				t.Fatal(err)
			}
			if jobs, err := e.c.Claim(ctx, "q", time.Second, &emq.ClaimOptions{MaxJobs: 5}); err != nil || len(jobs) != 0 {
				t.Fatalf("claim while paused %v %v", jobs, err)
			}
			if err := e.in.Resume(ctx, "q"); err != nil {
				t.Fatal(err)
			}
			e.clk.Advance(2)
			jobs, err := e.c.Claim(ctx, "q", 10*time.Second, &emq.ClaimOptions{MaxJobs: 5, WaitFor: time.Second})
			if err != nil || !reflect.DeepEqual(parts(jobs), []leasePart{
				{Queue: "q", ID: a, Payload: "a", Token: "1"}, {Queue: "q", ID: b, Payload: "b", Token: "1"},
			}) {
				t.Fatalf("claim %+v %v", jobs, err)
			}
			if err := e.c.Lease("q", a, "1").Progress(ctx, "50%"); err != nil {
				t.Fatal(err)
			}
			if err := e.c.Lease("q", a, "1").Extend(ctx, 20*time.Second); err != nil {
				t.Fatal(err)
			}
			j := e.job("q", a)
			if j.Progress != "50%" || !j.LeaseDeadline.Equal(e.now().Add(20*time.Second)) || j.LeaseEpoch != e.srv.RunID() ||
				j.Fields["progress"] != "50%" || j.State != "active" {
				t.Fatalf("extended %+v", j)
			}
			v, err := e.c.Lease("q", b, "1").Fail(ctx, "bad", &emq.FailOptions{MaxAttempts: 1, RetryIn: 0})
			if err != nil || v != (emq.FailVerdict{Dead: true, Failures: 1}) {
				t.Fatalf("fail %+v %v", v, err)
			}
			if err := e.c.Lease("q", a, "1").Delay(ctx, time.Minute); err != nil {
				t.Fatal(err)
			}
			n := e.counts("q")
			if n != (emq.Counts{Scheduled: 2, Dead: 1, Failed: 1}) {
				t.Fatalf("counts %+v", n)
			}
			list, err := e.in.List(ctx, "q", emq.StateScheduled, nil)
			if err != nil || len(list) != 2 || list[0].ID != a || list[1].ID != c || !list[0].RunAt.Equal(e.now().Add(time.Minute)) {
				t.Fatalf("list scheduled %v %v", list, err)
			}
			dead, err := e.in.List(ctx, "q", emq.StateDead, &emq.ListOptions{Offset: 0, Count: 10})
			if err != nil || len(dead) != 1 || dead[0].ID != b || dead[0].LastError != "bad" || dead[0].Failures != 1 {
				t.Fatalf("list dead %v %v", dead, err)
			}
			e.rdb.ZAdd(ctx, "emq:{q}:dead", redis.Z{Member: "JOBzzzzzzzzzzz"})
			if dead, err := e.in.List(ctx, "q", emq.StateDead, &emq.ListOptions{Offset: 1, Count: 5}); err != nil || len(dead) != 1 || !dead[0].Missing || dead[0].ID != "JOBzzzzzzzzzzz" {
				t.Fatalf("list ghost %v %v", dead, err)
			}
			e.rdb.ZRem(ctx, "emq:{q}:dead", "JOBzzzzzzzzzzz")
			if _, err := e.in.List(ctx, "q", emq.StateDead, &emq.ListOptions{Offset: 0, Count: emq.ListMax + 1}); err == nil || err.Error() != "ERR count must be at most 1000" {
				t.Fatalf("list over the cap: %v", err)
			}
			if err := e.in.Reprocess(ctx, "q", b, &emq.ReprocessOptions{ResetBudget: true}); err != nil {
				t.Fatal(err)
			}
			if j := e.job("q", b); j.State != "pending" || j.Fields["failures"] != "" {
				t.Fatalf("reprocessed %+v", j)
			}
			if ok, err := e.in.Remove(ctx, "q", b); !ok || err != nil {
				t.Fatalf("remove %v %v", ok, err)
			}
			if ok, err := e.in.Remove(ctx, "q", b); ok || err != nil {
				t.Fatalf("remove twice %v %v", ok, err)
			}
			e.clk.Advance(time.Minute.Milliseconds())
			if n, err := e.in.Promote(ctx, "q", nil); n != 1 || err != nil {
				t.Fatalf("promote %d %v", n, err)
			}
			jobs, _ = e.c.Claim(ctx, "q", time.Second, nil)
			if len(jobs) != 1 || jobs[0].ID != a || jobs[0].Token != "2" {
				t.Fatalf("reclaim %+v", jobs)
			}
			if err := e.c.Lease("q", a, "2").Requeue(ctx); err != nil {
				t.Fatal(err)
			}
			jobs, _ = e.c.Claim(ctx, "q", time.Second, nil)
			e.clk.Advance(1000)
			rec, dl, err := e.c.StalledCheck(ctx, "q", &emq.StalledCheckOptions{MaxStalled: 0, Limit: 0}) // the verb's defaults: max_stalled 1
			if err != nil || len(rec) != 0 || !reflect.DeepEqual(dl, []string{a}) {
				t.Fatalf("sweep %v %v %v", rec, dl, err)
			}
			if err := e.in.Reprocess(ctx, "q", a, nil); err != nil {
				t.Fatal(err)
			}
			jobs, _ = e.c.Claim(ctx, "q", time.Second, nil)
			if err := e.c.Lease("q", a, jobs[0].Token).Complete(ctx, nil); err != nil || jobs[0].Token != "4" {
				t.Fatalf("complete %v %+v", err, jobs)
			}
			if n := e.counts("q"); n.Completed != 1 || n.Failed != 2 || n.Scheduled != 1 {
				t.Fatalf("final counts %+v", n)
			}
		})
	}
}

// TestFunctionsArgv: the Functions target's command for a verb.
func TestFunctionsArgv(t *testing.T) {
	for verb, fn := range map[string]string{
		"EMQ.ENQUEUE": "emq_enqueue", "EMQ.STALLED.CHECK": "emq_stalled_check", "EMQ.LIST": "emq_list",
	} {
		if got := emq.FunctionName(verb); got != fn {
			t.Fatalf("%s -> %s, want %s", verb, got, fn)
		}
	}
}

// TestSweeper: RunSweeper sends EMQ.STALLED.CHECK every Interval on its
// clock and reports what it recovered.
func TestSweeper(t *testing.T) {
	e := newEnv(t)
	id := e.enqueue("q", "x")
	if _, err := e.c.Claim(e.ctx, "q", 2*time.Second, nil); err != nil {
		t.Fatal(err)
	}
	sweeps := make(chan []string, 10)
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() {
		done <- e.c.RunSweeper(ctx, "q", &emq.SweeperOptions{
			Interval: time.Second, MaxStalled: 2, Clock: manualClock{e.clk}, Logger: quiet,
			OnSweep: func(rec, dead []string, err error) {
				if err != nil {
					t.Error(err)
				}
				sweeps <- append(rec, dead...)
			},
		})
	}()
	for i := 0; i < 2; i++ { // at once, then after 1 s: the lease (2 s) has not run out
		if got := recv(t, sweeps, "sweep"); len(got) != 0 {
			t.Fatalf("sweep %d: %v", i, got)
		}
		e.clk.Advance(1000)
	}
	if got := recv(t, sweeps, "sweep"); !reflect.DeepEqual(got, []string{id}) {
		t.Fatalf("third sweep %v", got)
	}
	cancel()
	if err := recv(t, done, "return"); err != nil {
		t.Fatal(err)
	}
	if j := e.job("q", id); j.State != "pending" || j.Stalled != 1 {
		t.Fatalf("row %+v", j)
	}
}

// TestNegativeSweeperOptionsRefused: a negative Interval, MaxStalled or
// BatchSize makes RunSweeper return an error naming each such field, on a
// live context and before any sweep: the expired lease stays active, no
// OnSweep call is made.
func TestNegativeSweeperOptionsRefused(t *testing.T) {
	e := newEnv(t)
	id := e.enqueue("q", "x")
	if _, err := e.c.Claim(e.ctx, "q", time.Second, nil); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(5000) // the lease has run out: a sweep would recover it
	for _, tc := range []struct {
		o    emq.SweeperOptions
		want string
	}{
		{emq.SweeperOptions{Interval: -time.Second}, "emq: SweeperOptions.Interval must not be negative (got -1s; 0 is the default)"},
		{emq.SweeperOptions{MaxStalled: -1}, "emq: SweeperOptions.MaxStalled must not be negative (got -1; 0 is the default)"},
		{emq.SweeperOptions{BatchSize: -100}, "emq: SweeperOptions.BatchSize must not be negative (got -100; 0 is the default)"},
		{emq.SweeperOptions{Interval: -1, BatchSize: -1}, "emq: SweeperOptions.Interval must not be negative (got -1ns; 0 is the default)\n" +
			"emq: SweeperOptions.BatchSize must not be negative (got -1; 0 is the default)"},
	} {
		o := tc.o
		o.Clock, o.Logger = manualClock{e.clk}, quiet
		o.OnSweep = func([]string, []string, error) { t.Errorf("%+v: a sweep ran", tc.o) }
		ctx, cancel := context.WithTimeout(e.ctx, time.Minute)
		err := e.c.RunSweeper(ctx, "q", &o)
		cancel()
		if err == nil || err.Error() != tc.want {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		}
	}
	if j := e.job("q", id); j.State != "active" || j.Stalled != 0 {
		t.Fatalf("row after refusals %+v", j)
	}
}

// A transient refusal (the server could not run the command now, and did
// not) is not a reply: the worker resends it like a transport failure.
func TestTransientRefusals(t *testing.T) {
	for _, c := range []struct {
		err              error
		reply, transient bool
	}{
		{nil, true, false},
		{redis.Nil, true, false},
		{redis.ErrClosed, false, false},
		{proto("EMQSTALE job gone"), true, false},
		{proto("ERR syntax error"), true, false},
		{proto("LOADING Redis is loading the dataset in memory"), false, true},
		{proto("CLUSTERDOWN The cluster is down"), false, true},
		{proto("TRYAGAIN Multiple keys request during rehashing of slot"), false, true},
		{proto("READONLY You can't write against a read only replica."), false, true},
		{proto("MOVED 3999 127.0.0.1:6381"), false, true},
		{proto("BUSY Redis is busy running a script."), false, true},
		{proto("BUSYGROUP Consumer Group name already exists"), true, false},
	} {
		if got := emq.IsReply(c.err); got != c.reply {
			t.Errorf("IsReply(%v) = %v", c.err, got)
		}
		if got := emq.IsTransient(c.err); got != c.transient {
			t.Errorf("IsTransient(%v) = %v", c.err, got)
		}
	}
}

// proto is an error reply as go-redis returns it.
type proto string

func (p proto) Error() string { return string(p) }
func (p proto) RedisError()   {}

// TestRetentionThroughTheLibrary: SetRetention, CompleteResult, Job's
// result and times, Counts.Retained, List(Retained) (docs/verbs.md §4.21).
func TestRetentionThroughTheLibrary(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	c := e.c
	if err := c.Inspector().SetRetention(ctx, "q", emq.RetainCompleted, emq.Retention{MaxCount: 10, MaxAge: time.Hour}); err != nil {
		t.Fatal(err)
	}
	done, dead, err := c.Inspector().Retention(ctx, "q")
	if err != nil || done != (emq.Retention{MaxCount: 10, MaxAge: time.Hour}) || dead != (emq.Retention{}) {
		t.Fatalf("retention %v %v %v", done, dead, err)
	}
	id, _ := c.Enqueue(ctx, "q", []byte("p"), nil)
	jobs, err := c.Claim(ctx, "q", time.Second, nil)
	if err != nil || len(jobs) != 1 {
		t.Fatal(jobs, err)
	}
	if err := c.Lease("q", id, jobs[0].Token).Complete(ctx, &emq.CompleteOptions{Result: []byte("42")}); err != nil {
		t.Fatal(err)
	}
	j, err := c.Inspector().Job(ctx, "q", id)
	if err != nil || j.State != "completed" || string(j.Result) != "42" || !j.FinishedAt.Equal(e.now()) || !j.EnqueuedAt.Equal(e.now()) || !j.ClaimedAt.Equal(e.now()) {
		t.Fatalf("job %+v %v", j, err)
	}
	n, err := c.Inspector().Counts(ctx, "q")
	if err != nil || n.Retained != 1 || n.Completed != 1 {
		t.Fatalf("counts %+v %v", n, err)
	}
	l, err := c.Inspector().List(ctx, "q", emq.StateCompleted, &emq.ListOptions{Offset: 0, Count: 10})
	if err != nil || len(l) != 1 || l[0].ID != id {
		t.Fatalf("list %v %v", l, err)
	}
}
