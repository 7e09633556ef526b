package emq_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
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

// TestNegativeOptionsRefused (the newcomer's finding: a lease of -1 s
// was claimed as 1 ms, a negative MaxJobs as 1, a negative offset as the
// first page): each reaches the server as given and comes back as its
// refusal (docs/verbs.md §4.3, §4.18), nothing handed out.
func TestNegativeOptionsRefused(t *testing.T) {
	e := newEnv(t)
	e.enqueue("q", "a")
	for _, tc := range []struct {
		name string
		call func() error
		want string
	}{
		{"lease", func() error { _, err := e.c.Claim(e.ctx, "q", -time.Second, nil); return err }, "ERR lease_ms must be a positive integer"},
		{"zero lease", func() error { _, err := e.c.Claim(e.ctx, "q", 0, nil); return err }, "ERR lease_ms must be a positive integer"},
		{"MaxJobs", func() error {
			_, err := e.c.Claim(e.ctx, "q", time.Second, &emq.ClaimOptions{MaxJobs: -5})
			return err
		}, "ERR count must be a positive integer"},
		{"WaitFor", func() error {
			_, err := e.c.Claim(e.ctx, "q", time.Second, &emq.ClaimOptions{WaitFor: -time.Second})
			return err
		}, "ERR block_ms must be a non-negative integer"},
		{"List offset", func() error {
			_, err := e.c.Inspector().List(e.ctx, "q", emq.StatePending, &emq.ListOptions{Offset: -1})
			return err
		}, "ERR offset must be a non-negative integer"},
		{"Lanes count", func() error {
			_, err := e.c.Inspector().LanesPage(e.ctx, "q", &emq.ListOptions{Count: -2})
			return err
		}, "ERR count must be a positive integer"},
	} {
		if err := tc.call(); err == nil || err.Error() != tc.want {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	if n := e.counts("q"); n.Pending != 1 || n.Active != 0 {
		t.Fatalf("counts after refusals %+v", n)
	}
}

// TestNewInspector: an Inspector made on its own sees what the client's
// does, with the client's target.
func TestNewInspector(t *testing.T) {
	e := newEnv(t)
	e.enqueue("q", "a")
	in := emq.NewInspector(e.rdb, nil)
	if in.Target() != emq.Native || e.c.Redis() != e.rdb {
		t.Fatalf("target %v", in.Target())
	}
	a, err1 := in.Counts(e.ctx, "q")
	b, err2 := e.in.Counts(e.ctx, "q")
	if err1 != nil || err2 != nil || a != b || a.Pending != 1 {
		t.Fatalf("counts %+v %+v %v %v", a, b, err1, err2)
	}
	// Over one connection: its SELECTed database is the one inspected.
	conn := e.rdb.Conn()
	defer conn.Close()
	if err := conn.Select(e.ctx, 1).Err(); err != nil {
		t.Fatal(err)
	}
	on := emq.NewInspector(conn, nil)
	if n, err := on.Counts(e.ctx, "q"); err != nil || n.Pending != 0 {
		t.Fatalf("db 1 counts %+v %v", n, err)
	}
	if err := conn.Do(e.ctx, "EMQ.ENQUEUE", "q", "*", "b").Err(); err != nil {
		t.Fatal(err)
	}
	if err := conn.Do(e.ctx, "EMQ.ENQUEUE", "q", "*", "c").Err(); err != nil {
		t.Fatal(err)
	}
	n1, err1 := on.Counts(e.ctx, "q")
	n0, err0 := e.in.Counts(e.ctx, "q")
	if err1 != nil || err0 != nil || n1.Pending != 2 || n0.Pending != 1 {
		t.Fatalf("db 1 %+v %v, db 0 %+v %v", n1, err1, n0, err0)
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

// TestCountsMany: the counts of several queues in one pipeline; a queue
// the server refuses keeps its refusal in its own slot.
func TestCountsMany(t *testing.T) {
	e := newEnv(t)
	e.enqueue("a", "1")
	e.enqueue("a", "2")
	e.enqueue("c", "3", &emq.EnqueueOptions{Delay: time.Minute})
	if err := e.rdb.Set(e.ctx, "emq:{b}:pending", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	counts, errs, err := e.in.CountsMany(e.ctx, []string{"a", "b", "bad name", "c"})
	if err != nil || len(counts) != 4 || len(errs) != 4 {
		t.Fatalf("CountsMany: %v %v %v", counts, errs, err)
	}
	if errs[0] != nil || counts[0].Pending != 2 || errs[3] != nil || counts[3].Scheduled != 1 {
		t.Fatalf("a %+v %v, c %+v %v", counts[0], errs[0], counts[3], errs[3])
	}
	if errs[1] == nil || !strings.HasPrefix(errs[1].Error(), "WRONGTYPE") || counts[1] != (emq.Counts{}) {
		t.Fatalf("b %+v %v", counts[1], errs[1])
	}
	if errs[2] == nil || errs[2].Error() != "ERR invalid queue name" {
		t.Fatalf("bad name %v", errs[2])
	}
	if c, errs, err := e.in.CountsMany(e.ctx, nil); c != nil || errs != nil || err != nil {
		t.Fatalf("none: %v %v %v", c, errs, err)
	}
}

// TestFieldListOrder: over RESP2 a job's and a schedule's FieldList is
// the reply's order, as the raw reply sends it.
func TestFieldListOrder(t *testing.T) {
	e := newEnvProto(t, 2)
	id := e.enqueue("q", "x")
	raw, err := e.rdb.Do(e.ctx, "EMQ.JOB", "q", id).Slice()
	if err != nil {
		t.Fatal(err)
	}
	j := e.job("q", id)
	if len(j.FieldList) != len(raw)/2 || len(j.FieldList) < 4 {
		t.Fatalf("FieldList %v, raw %v", j.FieldList, raw)
	}
	for k, f := range j.FieldList {
		if f.Name != raw[2*k] || f.Value != raw[2*k+1] || j.Fields[f.Name] != f.Value {
			t.Fatalf("field %d: %+v, raw %v %v", k, f, raw[2*k], raw[2*k+1])
		}
	}
	if err := e.in.Schedule(e.ctx, "q", "tick", emq.ScheduleSpec{Every: time.Second}); err != nil {
		t.Fatal(err)
	}
	raw, err = e.rdb.Do(e.ctx, "EMQ.SCHEDULE.GET", "q", "tick").Slice()
	if err != nil {
		t.Fatal(err)
	}
	s, err := e.in.GetSchedule(e.ctx, "q", "tick")
	if err != nil || len(s.FieldList) != len(raw)/2 || s.FieldList[0].Name != raw[0] || s.Missing {
		t.Fatalf("schedule %+v %v, raw %v", s, err, raw)
	}
	for k, f := range s.FieldList {
		if f.Name != raw[2*k] || f.Value != raw[2*k+1] {
			t.Fatalf("schedule field %d: %+v, raw %v %v", k, f, raw[2*k], raw[2*k+1])
		}
	}
}

// TestNegativeWorkerOptionsRefused: a negative Concurrency (run as 1
// before), LeaseDuration, MaxAttempts, ClaimWait, PollInterval, AckTimeout
// or MaxStalled makes Run return an error naming the field, before
// anything is claimed; several are named together; 0 keeps the default,
// and the negatives that mean something (no heartbeats, no grace, no
// sweep) are accepted.
func TestNegativeWorkerOptionsRefused(t *testing.T) {
	e := newEnv(t)
	e.enqueue("q", "a")
	h := func(context.Context, *emq.Job) error { t.Error("a handler ran"); return nil }
	for _, tc := range []struct {
		o    emq.WorkerOptions
		want string
	}{
		{emq.WorkerOptions{Concurrency: -1}, "emq: WorkerOptions.Concurrency must not be negative (got -1; 0 is the default)"},
		{emq.WorkerOptions{LeaseDuration: -time.Second}, "emq: WorkerOptions.LeaseDuration must not be negative (got -1s; 0 is the default)"},
		{emq.WorkerOptions{MaxAttempts: -3}, "emq: WorkerOptions.MaxAttempts must not be negative (got -3; 0 is the default)"},
		{emq.WorkerOptions{ClaimWait: -time.Millisecond}, "emq: WorkerOptions.ClaimWait must not be negative (got -1ms; 0 is the default)"},
		{emq.WorkerOptions{PollInterval: -time.Second}, "emq: WorkerOptions.PollInterval must not be negative (got -1s; 0 is the default)"},
		{emq.WorkerOptions{AckTimeout: -time.Minute}, "emq: WorkerOptions.AckTimeout must not be negative (got -1m0s; 0 is the default)"},
		{emq.WorkerOptions{MaxStalled: -2}, "emq: WorkerOptions.MaxStalled must not be negative (got -2; 0 is the default)"},
		{emq.WorkerOptions{Concurrency: -8, MaxStalled: -1}, "emq: WorkerOptions.Concurrency must not be negative (got -8; 0 is the default)\n" +
			"emq: WorkerOptions.MaxStalled must not be negative (got -1; 0 is the default)"},
	} {
		// A live context (bounded, so a worker that runs ends): the
		// refusal must come before any claim, not from the context ending.
		ctx, cancel := context.WithTimeout(e.ctx, 2*time.Second)
		err := emq.NewWorker(e.c, &tc.o).Run(ctx, "q", h)
		cancel()
		if err == nil || err.Error() != tc.want {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		}
	}
	if n := e.counts("q"); n.Pending != 1 || n.Active != 0 {
		t.Fatalf("counts after refusals %+v", n)
	}
	if o := emq.NewWorker(e.c, &emq.WorkerOptions{}).Options(); o.Concurrency != 1 || o.MaxAttempts != emq.DefaultMaxAttempts || o.MaxStalled != emq.DefaultMaxStalled {
		t.Fatalf("zero options: %+v", o)
	}
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	meaningful := &emq.WorkerOptions{HeartbeatInterval: -1, ShutdownGrace: -1, StallSweepInterval: -1}
	if err := emq.NewWorker(e.c, meaningful).Run(ctx, "empty", h); err != nil {
		t.Fatalf("negative HeartbeatInterval, ShutdownGrace, StallSweepInterval: %v", err)
	}
}

// A ScheduleSpec is sent as the caller gave it (the newcomer run of this
// stop): a period that is not whole milliseconds is refused here (rounded
// up, 999ms+1ns went through as 1000, past the server's floor), a negative
// Every beside a Cron counts as set, and a negative Limit or a Start before
// 1970 reaches the server and comes back as its refusal; before, they meant
// "no limit" (a schedule firing for ever) and 1970. Nothing is stored.
func TestScheduleSpecSentAsGiven(t *testing.T) {
	e := newEnv(t)
	in := e.c.Inspector()
	for _, tc := range []struct {
		name string
		spec emq.ScheduleSpec
		want string
	}{
		{"Every 999ms+1ns", emq.ScheduleSpec{Every: 999*time.Millisecond + 1, Payload: []byte("p")}, "emq: Schedule: Every 999.000001ms is not a whole number of milliseconds"},
		{"Every 1000.5ms", emq.ScheduleSpec{Every: 1000*time.Millisecond + 500*time.Microsecond, Payload: []byte("p")}, "emq: Schedule: Every 1.0005s is not a whole number of milliseconds"},
		{"Every 999ms", emq.ScheduleSpec{Every: 999 * time.Millisecond, Payload: []byte("p")}, "ERR interval_ms must be at least 1000"},
		{"Every negative", emq.ScheduleSpec{Every: -time.Second, Payload: []byte("p")}, "ERR interval_ms must be a positive integer"},
		{"Every negative and Cron", emq.ScheduleSpec{Every: -time.Second, Cron: "@hourly", Payload: []byte("p")}, "emq: Schedule: set exactly one of Every and Cron"},
		{"Limit negative", emq.ScheduleSpec{Every: time.Second, Limit: -5, Payload: []byte("p")}, "ERR limit must be a positive integer"},
		{"Start before 1970", emq.ScheduleSpec{Every: time.Second, Start: time.UnixMilli(-5000), Payload: []byte("p")}, "ERR start_ms must be a non-negative integer"},
	} {
		if err := in.Schedule(e.ctx, "q", "s", tc.spec); err == nil || err.Error() != tc.want {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
		if r := e.rdb.Do(e.ctx, "EXISTS", "emq:{q}:sched:s").Val(); r != int64(0) {
			t.Fatalf("%s: a refused spec stored the schedule (EXISTS %v)", tc.name, r)
		}
	}
}
