package emq

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// EnqueueOptions are Enqueue's and EnqueueMany's options (nil: a minted
// id, due now, priority 0, the default lane).
type EnqueueOptions struct {
	// ID admits the job under the caller's own id ("JOB" followed by 11
	// characters of 0-9A-Za-z; docs/verbs.md §1.4) instead of a minted
	// one: a second Enqueue with the same id writes nothing and returns
	// ErrDuplicate (idempotent admission). EnqueueMany ignores it (give
	// NewJob.ID).
	ID string
	// Delay schedules the job to run Delay from now on the server's clock
	// (EMQ.ENQUEUE ... DELAY delay_ms; rounded up to whole ms; 0: due
	// now).
	Delay time.Duration
	// RunAt schedules the job to run at RunAt (EMQ.ENQUEUE ... AT
	// run_at_ms, Unix ms; a time in the past is simply due; zero: due
	// now). At most one of Delay and RunAt.
	RunAt time.Time
	// Priority is the job's priority (EMQ.ENQUEUE ... PRIORITY p,
	// docs/verbs.md §4.2): pending jobs are served by priority, lower
	// first, then by id; 0 is the default. It must be within ±(2^53-1),
	// else the server refuses with ERR priority must be an integer
	// between ....
	Priority int64
	// Lane puts the job in lane Lane of its queue (EMQ.ENQUEUE ... LANE
	// name, docs/verbs.md §4.26): lanes share the queue's claims by
	// weight, each with its own MAX_ACTIVE and RATE (Inspector.SetLane).
	// "" and "default" are the plain pending set. The cluster library has
	// the same lanes (docs/cluster.md §9).
	Lane string
}

// args are the options' words after the id and payload (or before
// JOBS); an error for options that contradict each other, before
// anything is sent.
func (o *EnqueueOptions) args(args []any) ([]any, error) {
	if o == nil {
		return args, nil
	}
	switch {
	case o.Delay != 0 && !o.RunAt.IsZero():
		return nil, errors.New("emq: EnqueueOptions: set at most one of Delay and RunAt")
	case o.Delay < 0:
		return nil, fmt.Errorf("emq: EnqueueOptions: negative Delay %v", o.Delay)
	case o.Delay > 0:
		args = append(args, "DELAY", ms(o.Delay))
	case !o.RunAt.IsZero():
		args = append(args, "AT", max(o.RunAt.UnixMilli(), 0))
	}
	if o.Priority != 0 {
		args = append(args, "PRIORITY", o.Priority)
	}
	if o.Lane != "" {
		args = append(args, "LANE", o.Lane)
	}
	return args, nil
}

// Enqueue admits a job on queue q (EMQ.ENQUEUE, docs/verbs.md §4.2) and returns
// its id. Errors: ErrDuplicate (with the id) when EnqueueOptions.ID names
// a job that exists; an *Error of class EMQKIND for a malformed id; the
// server's argument errors (`ERR invalid queue name`, ...) as go-redis
// errors; contradicting options, before anything is sent.
func (c *Client) Enqueue(ctx context.Context, q string, payload []byte, o *EnqueueOptions) (string, error) {
	own := ""
	if o != nil {
		own = o.ID
	}
	id := own
	if id == "" {
		id = "*"
	}
	args, err := o.args([]any{id, payload})
	if err != nil {
		return "", err
	}
	v, err := c.do(ctx, "EMQ.ENQUEUE", q, args...)
	if errors.Is(err, redis.Nil) || (err == nil && v == nil) {
		return own, ErrDuplicate
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
// (ID is ignored: give NewJob.ID). It returns one
// id per job, in order: the job's id, or "" for a duplicate (an id that
// exists, or one admitted by an earlier job of the same call). A malformed
// id anywhere refuses the whole call (*Error EMQKIND) and admits nothing.
// An empty jobs admits nothing and sends nothing.
func (c *Client) EnqueueMany(ctx context.Context, q string, jobs []NewJob, o *EnqueueOptions) ([]string, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	args, err := o.args(make([]any, 0, 5+2*len(jobs)))
	if err != nil {
		return nil, err
	}
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
	// its enqueue, on the server's clock; with lanes, the longest such
	// wait among the lanes' heads (latency_ms, docs/verbs.md §4.16; 0 when
	// nothing is pending).
	Latency time.Duration
	// Retained is the number of completed jobs the queue keeps (its
	// COMPLETED retention, docs/verbs.md §4.21).
	Retained int64
	// Waiting is the number of flow parents waiting on their children
	// (docs/verbs.md §4.25).
	Waiting int64
}

// CountsMany returns the counts of every queue of qs, in one round trip
// (EMQ.COUNTS of each, pipelined): counts[k] and errs[k] are qs[k]'s, a
// refusal of one queue (WRONGTYPE, an invalid name) in its errs[k] and
// its counts zero. err is a failure of the connection (then the slices
// are nil); an error reply never is.
func (i *Inspector) CountsMany(ctx context.Context, qs []string) (counts []Counts, errs []error, err error) {
	if len(qs) == 0 {
		return nil, nil, nil
	}
	cmds, err := i.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, q := range qs {
			p.Do(ctx, i.argv("EMQ.COUNTS", q)...)
		}
		return nil
	})
	var re redis.Error
	if err != nil && !errors.As(err, &re) {
		return nil, nil, err
	}
	counts, errs = make([]Counts, len(qs)), make([]error, len(qs))
	for k, c := range cmds {
		cmd, ok := c.(*redis.Cmd)
		if !ok {
			return nil, nil, fmt.Errorf("%w to EMQ.COUNTS: %T", errReply, c)
		}
		v, err := cmd.Result()
		if err != nil {
			errs[k] = typed(err)
			continue
		}
		counts[k], errs[k] = parseCounts(v)
	}
	return counts, errs, nil
}

// Counts returns queue q's counts (EMQ.COUNTS, docs/verbs.md §4.16).
func (i *Inspector) Counts(ctx context.Context, q string) (Counts, error) {
	v, err := i.do(ctx, "EMQ.COUNTS", q)
	if err != nil {
		return Counts{}, err
	}
	return parseCounts(v)
}

func parseCounts(v any) (Counts, error) {
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
	// State is the row's state (docs/verbs.md §1.3).
	State JobState
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
	// Lane is the job's lane (the row's lane field, docs/verbs.md §4.26;
	// "": the default lane), so a listing of every lane's pending jobs
	// (List of StatePending, §4.26.6) shows where each one waits.
	Lane string
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
	// FieldList is the same fields in the reply's order: the row's order
	// over RESP2 (a flat array, docs/verbs.md §4.17); over RESP3 the map
	// arrives unordered in go-redis, and so does this list.
	FieldList []Field
}

// Field is one field of a reply (a job row, a schedule), in FieldList.
type Field struct{ Name, Value string }

func parseJob(verb, id string, v any) (*JobInfo, error) {
	pairs, ok := asPairs(v)
	if !ok {
		return nil, badReply(verb, v)
	}
	j := &JobInfo{ID: id, Fields: make(map[string]string, len(pairs)), FieldList: make([]Field, 0, len(pairs))}
	for _, p := range pairs {
		name, ok1 := asString(p[0])
		val, ok2 := asString(p[1])
		if !ok1 || !ok2 {
			return nil, badReply(verb, v)
		}
		j.Fields[name] = val
		j.FieldList = append(j.FieldList, Field{name, val})
		n, _ := asInt(val)
		switch name {
		case "state":
			j.State = JobState(val)
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
		case "lane":
			j.Lane = val
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
func (i *Inspector) Job(ctx context.Context, q, id string) (*JobInfo, error) {
	v, err := i.do(ctx, "EMQ.JOB", q, id)
	if errors.Is(err, redis.Nil) || (err == nil && v == nil) {
		return nil, ErrNoJob
	}
	if err != nil {
		return nil, err
	}
	return parseJob("EMQ.JOB", id, v)
}

// JobState is a job's state, as the verbs name it (docs/verbs.md §1.3,
// the row's `state` field; EMQ.LIST's state words, §4.18).
type JobState string

// The states of a job.
const (
	// StatePending: waiting to be claimed (the pending set or a lane's).
	StatePending JobState = "pending"
	// StateActive: held by a claimer until its lease runs out.
	StateActive JobState = "active"
	// StateScheduled: due later (a delay, a retry's backoff, a run-at).
	StateScheduled JobState = "scheduled"
	// StateDead: dead-lettered (failures or stalls spent, or a flow
	// parent whose child died).
	StateDead JobState = "dead"
	// StateCompleted: completed and retained (docs/verbs.md §4.21); a
	// completion without retention deletes the row.
	StateCompleted JobState = "completed"
	// StateWaiting: a flow parent waiting on its children (§4.25).
	StateWaiting JobState = "waiting"
	// StateRemoved is no row's state: Child.State of a child that was
	// removed (EMQ.CHILDREN, §4.25.5).
	StateRemoved JobState = "removed"
)

// ListMax is the largest count List accepts (EMQ.LIST's cap).
const ListMax = 1000

// ListOptions are the page of a listing (List, ListSchedules; nil: the
// first page of the verb's default size).
type ListOptions struct {
	// Offset is the first entry's position in the listing's order (0: the
	// first).
	Offset int
	// Count is the most entries returned (0: the verb's default, 100; at
	// most ListMax).
	Count int
	// Lane, for List of StatePending, lists the pending jobs of that lane
	// only (EMQ.LIST ... LANE name; "default": the default lane's); ""
	// lists every lane's, the default lane's first, then the other lanes'
	// by name (docs/verbs.md §4.26.6). The server refuses it with any
	// other state (ERR LANE applies to state pending only) and refuses a
	// name outside the queue-name alphabet (ERR invalid lane name); a lane
	// with no pending jobs lists none. LanesPage ignores it.
	Lane string
}

// page is the OFFSET and COUNT words (none for the default first page). A
// negative Offset or Count is sent as it is, so the server refuses it
// with its own text (docs/verbs.md §4.18) and writes nothing.
func (o *ListOptions) page() []any {
	if o == nil || (o.Count == 0 && o.Offset == 0) {
		return nil
	}
	count := o.Count
	if count == 0 {
		count = 100
	}
	return []any{o.Offset, count}
}

// List returns a page of the jobs of queue q in state, in the state's set
// order (EMQ.LIST, docs/verbs.md §4.18): pending by priority then id, lane
// by lane (the default lane's first, then the other lanes' by name; one
// lane's with o.Lane, §4.26.6), dead by id, active by lease deadline,
// scheduled by run-at time. Page with Offset += len(result) until a page
// is shorter than Count. A member without a row comes back with Missing
// set.
func (i *Inspector) List(ctx context.Context, q string, state JobState, o *ListOptions) ([]JobInfo, error) {
	args := append([]any{string(state)}, o.page()...)
	if o != nil && o.Lane != "" {
		args = append(args, "LANE", o.Lane)
	}
	v, err := i.do(ctx, "EMQ.LIST", q, args...)
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

// ReprocessOptions are Reprocess's options (nil: the budgets as they
// are).
type ReprocessOptions struct {
	// ResetBudget gives the job a fresh retry and stall budget:
	// EMQ.REPROCESS ... RESET deletes `failures` and `stalled` (never
	// `attempts`, so tokens only grow).
	ResetBudget bool
}

// Reprocess returns dead job id of queue q to pending (EMQ.REPROCESS,
// docs/verbs.md §4.13). Errors: ErrState (`job is not dead`), ErrStale (`job
// gone`: a dead member without a row), ErrLane.
func (i *Inspector) Reprocess(ctx context.Context, q, id string, o *ReprocessOptions) error {
	var err error
	if o != nil && o.ResetBudget {
		_, err = i.do(ctx, "EMQ.REPROCESS", q, id, "RESET")
	} else {
		_, err = i.do(ctx, "EMQ.REPROCESS", q, id)
	}
	return err
}

// Remove deletes job id of queue q unless it is held (EMQ.REMOVE,
// docs/verbs.md §4.15): true when something was removed, false when there was
// no such job. Errors: ErrState (`job is active`), ErrLane.
func (i *Inspector) Remove(ctx context.Context, q, id string) (bool, error) {
	v, err := i.do(ctx, "EMQ.REMOVE", q, id)
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
func (i *Inspector) Pause(ctx context.Context, q string) error {
	_, err := i.do(ctx, "EMQ.PAUSE", q)
	return err
}

// Resume lets queue q hand out jobs again (EMQ.RESUME) and wakes its
// blocked claimers.
func (i *Inspector) Resume(ctx context.Context, q string) error {
	_, err := i.do(ctx, "EMQ.RESUME", q)
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
func (i *Inspector) SetRetention(ctx context.Context, q string, kind RetainKind, r Retention) error {
	_, err := i.do(ctx, "EMQ.RETAIN", q, string(kind), r.MaxCount, ms(r.MaxAge))
	return err
}

// Retention returns queue q's two settings (EMQ.RETAIN q).
func (i *Inspector) Retention(ctx context.Context, q string) (completed, dead Retention, err error) {
	v, err := i.do(ctx, "EMQ.RETAIN", q)
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
