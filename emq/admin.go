package emq

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// EnqueueOption sets an option of Client.Enqueue.
type EnqueueOption func(*enqueueOpts)

type enqueueOpts struct {
	id      string
	delay   time.Duration
	runAt   time.Time
	delayed bool
	at      bool
	prio    int64
	hasPrio bool
	lane    string
}

// WithPriority gives the job priority p (EMQ.ENQUEUE ... PRIORITY p,
// docs/verbs.md §4.2): pending jobs are served by priority, lower first,
// then by id; the default is 0. p must be within ±(2^53-1), else the
// server refuses with ERR priority must be an integer between ....
func WithPriority(p int64) EnqueueOption {
	return func(o *enqueueOpts) { o.prio, o.hasPrio = p, true }
}

// optArgs are the options' words after the id and payload (or before
// JOBS).
func (o *enqueueOpts) optArgs(args []any) []any {
	switch {
	case o.delayed:
		args = append(args, "DELAY", ms(o.delay))
	case o.at:
		args = append(args, "AT", max(o.runAt.UnixMilli(), 0))
	}
	if o.hasPrio {
		args = append(args, "PRIORITY", o.prio)
	}
	if o.lane != "" {
		args = append(args, "LANE", o.lane)
	}
	return args
}

// WithID admits the job under the caller's own id ("JOB" followed by 11
// characters of 0-9A-Za-z; docs/verbs.md §1.4) instead of a minted
// one: a second Enqueue with the same id writes nothing and returns
// ErrDuplicate (idempotent admission).
func WithID(id string) EnqueueOption { return func(o *enqueueOpts) { o.id = id } }

// WithDelay schedules the job to run d from now on the server's clock
// (EMQ.ENQUEUE ... DELAY delay_ms; d rounded up to whole ms).
func WithDelay(d time.Duration) EnqueueOption {
	return func(o *enqueueOpts) { o.delay, o.delayed, o.at = d, true, false }
}

// WithRunAt schedules the job to run at t (EMQ.ENQUEUE ... AT run_at_ms,
// Unix ms; a time in the past is simply due).
func WithRunAt(t time.Time) EnqueueOption {
	return func(o *enqueueOpts) { o.runAt, o.at, o.delayed = t, true, false }
}

// Enqueue admits a job on queue q (EMQ.ENQUEUE, docs/verbs.md §4.2) and returns
// its id. Errors: ErrDuplicate (with the id) when WithID names a job that
// exists; an *Error of class EMQKIND for a malformed id; the server's
// argument errors (`ERR invalid queue name`, ...) as go-redis errors.
func (c *Client) Enqueue(ctx context.Context, q string, payload []byte, opts ...EnqueueOption) (string, error) {
	var o enqueueOpts
	for _, f := range opts {
		f(&o)
	}
	id := o.id
	if id == "" {
		id = "*"
	}
	args := o.optArgs([]any{id, payload})
	v, err := c.do(ctx, "EMQ.ENQUEUE", q, args...)
	if errors.Is(err, redis.Nil) || (err == nil && v == nil) {
		return o.id, ErrDuplicate
	}
	if err != nil {
		return "", err
	}
	s, ok := asString(v)
	if !ok {
		return "", badReply("EMQ.ENQUEUE", v)
	}
	return s, nil
}

// NewJob is one job of EnqueueMany: its payload and, optionally, the
// caller's own id ("" mints one).
type NewJob struct {
	ID      string
	Payload []byte
}

// EnqueueMany admits jobs on queue q in one atomic verb (EMQ.ENQUEUE.MANY,
// docs/verbs.md §4.2.1), all or nothing, with the options of Enqueue
// (WithDelay, WithRunAt, WithPriority; WithID is ignored: give NewJob.ID). It returns one
// id per job, in order: the job's id, or "" for a duplicate (an id that
// exists, or one admitted by an earlier job of the same call). A malformed
// id anywhere refuses the whole call (*Error EMQKIND) and admits nothing.
// An empty jobs admits nothing and sends nothing.
func (c *Client) EnqueueMany(ctx context.Context, q string, jobs []NewJob, opts ...EnqueueOption) ([]string, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	var o enqueueOpts
	for _, f := range opts {
		f(&o)
	}
	args := o.optArgs(make([]any, 0, 5+2*len(jobs)))
	args = append(args, "JOBS")
	for _, j := range jobs {
		id := j.ID
		if id == "" {
			id = "*"
		}
		args = append(args, id, j.Payload)
	}
	v, err := c.do(ctx, "EMQ.ENQUEUE.MANY", q, args...)
	if err != nil {
		return nil, err
	}
	arr, ok := v.([]any)
	if !ok || len(arr) != len(jobs) {
		return nil, badReply("EMQ.ENQUEUE.MANY", v)
	}
	out := make([]string, len(arr))
	for i, x := range arr {
		if x == nil {
			continue
		}
		if out[i], ok = asString(x); !ok {
			return nil, badReply("EMQ.ENQUEUE.MANY", v)
		}
	}
	return out, nil
}

// Counts are a queue's set sizes and its persistent metric counts
// (EMQ.COUNTS).
type Counts struct {
	Pending, Active, Scheduled, Dead int64
	// Completed and Failed are the queue's metrics:completed and
	// metrics:failed counts (jobs completed; jobs that died).
	Completed, Failed int64
	// Latency is how long the job the next claim takes has waited since
	// its enqueue, on the server's clock (latency_ms, docs/verbs.md §4.16;
	// 0 when nothing is pending).
	Latency time.Duration
	// Retained is the number of completed jobs the queue keeps (its
	// COMPLETED retention, docs/verbs.md §4.21).
	Retained int64
	// Waiting is the number of flow parents waiting on their children
	// (docs/verbs.md §4.25).
	Waiting int64
}

// Counts returns queue q's counts (EMQ.COUNTS, docs/verbs.md §4.16).
func (c *Client) Counts(ctx context.Context, q string) (Counts, error) {
	v, err := c.do(ctx, "EMQ.COUNTS", q)
	if err != nil {
		return Counts{}, err
	}
	pairs, ok := asPairs(v)
	if !ok {
		return Counts{}, badReply("EMQ.COUNTS", v)
	}
	var n Counts
	for _, p := range pairs {
		name, _ := asString(p[0])
		x, ok := asInt(p[1])
		if !ok {
			return Counts{}, badReply("EMQ.COUNTS", v)
		}
		switch name {
		case "pending":
			n.Pending = x
		case "active":
			n.Active = x
		case "scheduled":
			n.Scheduled = x
		case "dead":
			n.Dead = x
		case "completed":
			n.Completed = x
		case "failed":
			n.Failed = x
		case "latency_ms":
			n.Latency = time.Duration(x) * time.Millisecond
		case "retained":
			n.Retained = x
		case "waiting":
			n.Waiting = x
		}
	}
	return n, nil
}

// JobInfo is a job row as EMQ.JOB and EMQ.LIST show it (docs/verbs.md
// §1.3). Numbers that do not parse (a row repaired by hand) read
// as 0; Fields keeps every field as sent.
type JobInfo struct {
	ID string
	// Missing is true for a member of the listed set that has no row (a
	// ghost, listed by EMQ.LIST as [id, nil]); the other fields are empty.
	Missing bool
	// State is pending, active, scheduled, dead or completed (a retained
	// job, docs/verbs.md §4.21).
	State string
	// Attempts is the fencing token as stored (EMQ.CLAIM adds 1).
	Attempts string
	Payload  []byte
	// Failures and Stalled are the retry and stall budgets spent.
	Failures, Stalled int64
	// LastError is the error text of the last EMQ.FAIL, or "stalled".
	LastError string
	// LeaseEpoch is the run_id of the server that granted the lease.
	LeaseEpoch string
	// Progress is the last value sent with EMQ.PROGRESS.
	Progress string
	// Result is the value sent with EMQ.COMPLETE ... RESULT (a retained
	// job).
	Result []byte
	// EnqueuedAt, ClaimedAt (the last claim) and FinishedAt are the row's
	// times (server clock; zero when the row has none yet,
	// docs/verbs.md §1.3).
	EnqueuedAt, ClaimedAt, FinishedAt time.Time
	// LeaseDeadline is set while the job is in active; RunAt while it is
	// in schedule (server clock).
	LeaseDeadline, RunAt time.Time
	// Fields holds every field of the reply, the two times included.
	Fields map[string]string
}

func parseJob(verb, id string, v any) (*JobInfo, error) {
	pairs, ok := asPairs(v)
	if !ok {
		return nil, badReply(verb, v)
	}
	j := &JobInfo{ID: id, Fields: make(map[string]string, len(pairs))}
	for _, p := range pairs {
		name, ok1 := asString(p[0])
		val, ok2 := asString(p[1])
		if !ok1 || !ok2 {
			return nil, badReply(verb, v)
		}
		j.Fields[name] = val
		n, _ := asInt(val)
		switch name {
		case "state":
			j.State = val
		case "attempts":
			j.Attempts = val
		case "payload":
			j.Payload = []byte(val)
		case "failures":
			j.Failures = n
		case "stalled":
			j.Stalled = n
		case "last_error":
			j.LastError = val
		case "lease_epoch":
			j.LeaseEpoch = val
		case "progress":
			j.Progress = val
		case "result":
			j.Result = []byte(val)
		case "enqueued_at":
			j.EnqueuedAt = time.UnixMilli(n)
		case "claimed_at":
			j.ClaimedAt = time.UnixMilli(n)
		case "finished_at":
			j.FinishedAt = time.UnixMilli(n)
		case "lease_deadline_ms":
			j.LeaseDeadline = time.UnixMilli(n)
		case "run_at_ms":
			j.RunAt = time.UnixMilli(n)
		}
	}
	return j, nil
}

// Job returns the row of job id in queue q (EMQ.JOB, docs/verbs.md §4.17), or
// ErrNoJob.
func (c *Client) Job(ctx context.Context, q, id string) (*JobInfo, error) {
	v, err := c.do(ctx, "EMQ.JOB", q, id)
	if errors.Is(err, redis.Nil) || (err == nil && v == nil) {
		return nil, ErrNoJob
	}
	if err != nil {
		return nil, err
	}
	return parseJob("EMQ.JOB", id, v)
}

// State names a job state, for List.
type State string

// The four states of a job row.
const (
	Pending   State = "pending"
	Active    State = "active"
	Scheduled State = "scheduled"
	Dead      State = "dead"
	// Retained lists the retained completed jobs (EMQ.LIST q completed,
	// docs/verbs.md §4.21).
	Retained State = "completed"
)

// ListMax is the largest count List accepts (EMQ.LIST's cap).
const ListMax = 1000

// List returns up to count jobs of queue q in state, from offset in the
// state's set order (EMQ.LIST, docs/verbs.md §4.18): pending and dead by id,
// active by lease deadline, scheduled by run-at time. count 0 means the
// verb's default (100); at most ListMax. Page with offset += len(result)
// until a page is shorter than count. A member without a row comes back
// with Missing set.
func (c *Client) List(ctx context.Context, q string, state State, offset, count int) ([]JobInfo, error) {
	var v any
	var err error
	if count == 0 && offset == 0 {
		v, err = c.do(ctx, "EMQ.LIST", q, string(state))
	} else {
		if count == 0 {
			count = 100
		}
		v, err = c.do(ctx, "EMQ.LIST", q, string(state), offset, count)
	}
	if err != nil {
		return nil, err
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, badReply("EMQ.LIST", v)
	}
	out := make([]JobInfo, 0, len(arr))
	for _, e := range arr {
		pair, ok := e.([]any)
		if !ok || len(pair) != 2 {
			return nil, badReply("EMQ.LIST", v)
		}
		id, ok := asString(pair[0])
		if !ok {
			return nil, badReply("EMQ.LIST", v)
		}
		if pair[1] == nil {
			out = append(out, JobInfo{ID: id, Missing: true})
			continue
		}
		j, err := parseJob("EMQ.LIST", id, pair[1])
		if err != nil {
			return nil, err
		}
		out = append(out, *j)
	}
	return out, nil
}

// ReprocessOption sets an option of Client.Reprocess.
type ReprocessOption func(*bool)

// Reset gives the job a fresh budget: EMQ.REPROCESS ... RESET deletes
// `failures` and `stalled` (never `attempts`, so tokens only grow).
func Reset() ReprocessOption { return func(r *bool) { *r = true } }

// Reprocess returns dead job id of queue q to pending (EMQ.REPROCESS,
// docs/verbs.md §4.13). Errors: ErrState (`job is not dead`), ErrStale (`job
// gone`: a dead member without a row), ErrLane.
func (c *Client) Reprocess(ctx context.Context, q, id string, opts ...ReprocessOption) error {
	var reset bool
	for _, o := range opts {
		o(&reset)
	}
	var err error
	if reset {
		_, err = c.do(ctx, "EMQ.REPROCESS", q, id, "RESET")
	} else {
		_, err = c.do(ctx, "EMQ.REPROCESS", q, id)
	}
	return err
}

// Remove deletes job id of queue q unless it is held (EMQ.REMOVE,
// docs/verbs.md §4.15): true when something was removed, false when there was
// no such job. Errors: ErrState (`job is active`), ErrLane.
func (c *Client) Remove(ctx context.Context, q, id string) (bool, error) {
	v, err := c.do(ctx, "EMQ.REMOVE", q, id)
	if err != nil {
		return false, err
	}
	n, ok := asInt(v)
	if !ok {
		return false, badReply("EMQ.REMOVE", v)
	}
	return n == 1, nil
}

// Pause stops queue q from handing out jobs (EMQ.PAUSE): claims get
// nothing, blocked claimers keep waiting.
func (c *Client) Pause(ctx context.Context, q string) error {
	_, err := c.do(ctx, "EMQ.PAUSE", q)
	return err
}

// Resume lets queue q hand out jobs again (EMQ.RESUME) and wakes its
// blocked claimers.
func (c *Client) Resume(ctx context.Context, q string) error {
	_, err := c.do(ctx, "EMQ.RESUME", q)
	return err
}

// String is the job's id, state and budgets, for logs.
func (j JobInfo) String() string {
	if j.Missing {
		return j.ID + " (no row)"
	}
	return fmt.Sprintf("%s %s attempts=%s failures=%d stalled=%d", j.ID, j.State, j.Attempts, j.Failures, j.Stalled)
}

// RetainKind names the set a retention setting applies to (EMQ.RETAIN).
type RetainKind string

// The two kinds of retention (docs/verbs.md §4.21).
const (
	RetainCompleted RetainKind = "COMPLETED"
	RetainDead      RetainKind = "DEAD"
)

// Retention is one kind's setting: keep at most MaxCount jobs (0: no
// count cap) finished less than MaxAge ago (0: no age cap); COMPLETED with
// both 0 keeps none, DEAD with both 0 keeps all (the defaults).
type Retention struct {
	MaxCount int64
	MaxAge   time.Duration
}

// SetRetention sets queue q's retention of kind (EMQ.RETAIN,
// docs/verbs.md §4.21); MaxAge is sent in whole ms (as every duration of the library).
func (c *Client) SetRetention(ctx context.Context, q string, kind RetainKind, r Retention) error {
	_, err := c.do(ctx, "EMQ.RETAIN", q, string(kind), r.MaxCount, ms(r.MaxAge))
	return err
}

// Retention returns queue q's two settings (EMQ.RETAIN q).
func (c *Client) Retention(ctx context.Context, q string) (completed, dead Retention, err error) {
	v, err := c.do(ctx, "EMQ.RETAIN", q)
	if err != nil {
		return Retention{}, Retention{}, err
	}
	pairs, ok := asPairs(v)
	if !ok {
		return Retention{}, Retention{}, badReply("EMQ.RETAIN", v)
	}
	for _, p := range pairs {
		name, _ := asString(p[0])
		x, ok := asInt(p[1])
		if !ok {
			return Retention{}, Retention{}, badReply("EMQ.RETAIN", v)
		}
		switch name {
		case "completed_max_count":
			completed.MaxCount = x
		case "completed_max_age_ms":
			completed.MaxAge = time.Duration(x) * time.Millisecond
		case "dead_max_count":
			dead.MaxCount = x
		case "dead_max_age_ms":
			dead.MaxAge = time.Duration(x) * time.Millisecond
		}
	}
	return completed, dead, nil
}
