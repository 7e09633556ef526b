package emq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"
)

// Handler does one job. Its return value decides what the worker sends:
//
//   - nil: EMQ.COMPLETE.
//   - an error: EMQ.FAIL with the error's text as last_error, retried after
//     WorkerOptions.Backoff(j.Failures) until MaxAttempts failures, then
//     dead-lettered.
//   - an error wrapping ErrNoRetry (see NoRetry): EMQ.FAIL with
//     max_attempts 1, so the job goes to the dead-letter set now.
//   - ErrAbandon: nothing; the job is left to its lease (a crash drill).
//
// A panic is recovered and treated as an error whose text is "panic: " and
// the panic value. ctx is cancelled when the job is no longer the
// handler's to finish; context.Cause(ctx) tells why: ErrLeaseLost (a
// heartbeat was refused: the lease was recovered and may be someone
// else's), ErrLeaseExpired (the lease ran out with no heartbeat answered),
// ErrShutdown (the shutdown grace ran out; the job was given back). A
// handler should return soon after; what it returns after ErrLeaseLost or
// ErrShutdown is not sent.
type Handler func(ctx context.Context, j *Job) error

// Sentinel errors of the worker.
var (
	// ErrNoRetry, wrapped in a handler's error, dead-letters the job at
	// once (EMQ.FAIL with max_attempts 1): fmt.Errorf("bad input: %w",
	// emq.ErrNoRetry) or emq.NoRetry(err).
	ErrNoRetry = errors.New("emq: do not retry")
	// ErrAbandon, returned by a handler, makes the worker drop the job
	// without a word: no verb is sent and heartbeats stop, so the lease
	// expires and a sweep (EMQ.STALLED.CHECK) recovers it, charging its
	// stall budget. It exists for crash drills and tests.
	ErrAbandon = errors.New("emq: job abandoned to its lease")
	// ErrLeaseLost is the cause of a handler's context cancelled because a
	// heartbeat (EMQ.EXTEND) was refused: the job is no longer held.
	ErrLeaseLost = errors.New("emq: lease lost")
	// ErrLeaseExpired is the cause of a handler's context cancelled because
	// the lease ran out (by the worker's clock) without a heartbeat being
	// answered: a sweep may hand the job to someone else at any time.
	ErrLeaseExpired = errors.New("emq: lease expired")
	// ErrShutdown is the cause of a handler's context cancelled because the
	// worker's shutdown grace ran out; its job was given back (EMQ.REQUEUE).
	ErrShutdown = errors.New("emq: worker shut down")
)

type noRetry struct{ err error }

func (e noRetry) Error() string        { return e.err.Error() }
func (e noRetry) Unwrap() error        { return e.err }
func (e noRetry) Is(target error) bool { return target == ErrNoRetry }

// NoRetry wraps err so that the worker dead-letters the job at once; the
// text sent as last_error is err's own.
func NoRetry(err error) error {
	if err == nil {
		err = ErrNoRetry
	}
	return noRetry{err}
}

// PanicError is the error a recovered handler panic becomes.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// Job is a claimed job, as a handler gets it.
type Job struct {
	Queue string
	ID    string
	// Payload is the job's bytes as enqueued.
	Payload []byte
	// Token is the fencing token this run holds the job with.
	Token string
	// Failures is the retry budget already spent (0 on a first run).
	Failures int64
	lease    *Lease
}

// Progress stores value in the job's `progress` field (EMQ.PROGRESS).
func (j *Job) Progress(ctx context.Context, value string) error {
	return j.lease.Progress(ctx, value)
}

// Children returns the children of the job when it is a flow parent
// (EMQ.CHILDREN, docs/verbs.md §4.25.5): each child's state and result
// or error, to fan in. Errors: ErrNoFlow.
func (j *Job) Children(ctx context.Context) ([]Child, error) {
	return j.lease.Children(ctx)
}

// OutcomeKind is how a worker settled a job.
type OutcomeKind int

// The outcomes of a job a worker claimed.
const (
	// Completed: EMQ.COMPLETE was applied.
	Completed OutcomeKind = iota + 1
	// Retried: EMQ.FAIL scheduled a retry.
	Retried
	// DeadLettered: EMQ.FAIL sent the job to the dead-letter set.
	DeadLettered
	// Released: given back at shutdown with EMQ.REQUEUE (nothing charged).
	Released
	// LeaseLost: the job was no longer held (a heartbeat or the outcome
	// verb was refused with an EMQ error); nothing was applied.
	LeaseLost
	// Abandoned: the handler returned ErrAbandon; nothing was sent.
	Abandoned
	// Unreported: the outcome verb got no reply within AckTimeout; the
	// lease will expire and a sweep will recover the job.
	Unreported
)

func (k OutcomeKind) String() string {
	switch k {
	case Completed:
		return "completed"
	case Retried:
		return "retried"
	case DeadLettered:
		return "dead-lettered"
	case Released:
		return "released"
	case LeaseLost:
		return "lease lost"
	case Abandoned:
		return "abandoned"
	case Unreported:
		return "unreported"
	}
	return "unknown"
}

// Outcome is how one job ended for the worker.
type Outcome struct {
	Kind OutcomeKind
	// Failures is EMQ.FAIL's count (Retried, DeadLettered): the budget
	// spent, this failure included; 0 when the reply was lost.
	Failures int64
	// LostReply is true when the verb's first reply was lost (a transport
	// error) and the answer to its resend showed it had been applied (a
	// resent COMPLETE answering `EMQSTALE job gone`, a resent FAIL
	// answering `EMQSTATE job is dead`, a resent REQUEUE answering
	// `EMQSTALE lease lost`).
	LostReply bool
	// Err is the handler's error (Retried, DeadLettered), the refusal
	// (LeaseLost) or the transport error (Unreported).
	Err error
}

// Hooks are called by the worker's goroutines, synchronously: keep them
// short. Any may be nil.
type Hooks struct {
	// Claimed is called for each job EMQ.CLAIM handed out, before its
	// handler starts (and also for a job claimed as shutdown began, which
	// is given back without running).
	Claimed func(j *Job)
	// Heartbeat is called after each EMQ.EXTEND with its error (nil: the
	// lease was extended).
	Heartbeat func(j *Job, err error)
	// Done is called once per claimed job when the worker has settled it.
	Done func(j *Job, o Outcome)
	// Draining is called once per Run when its context has ended and
	// claiming has stopped, with the number of jobs still held; the
	// shutdown grace has started.
	Draining func(queue string, held int)
}

// WorkerOptions configure a Worker (nil: every default). Zero values take
// the defaults noted. A negative Concurrency, LeaseDuration,
// MaxAttempts, ClaimWait, PollInterval, AckTimeout or MaxStalled is
// refused: Run returns the error (naming each such field) and claims
// nothing, as the verbs refuse a negative lease_ms or count
// (TestNegativeWorkerOptionsRefused). A negative HeartbeatInterval,
// ShutdownGrace or StallSweepInterval has a meaning of its own (below).
type WorkerOptions struct {
	// Concurrency is the number of jobs run at once (default 1). The worker
	// claims with COUNT up to the number of free slots.
	Concurrency int
	// LeaseDuration is the claim's and each heartbeat's lease_ms (default
	// 30 s).
	LeaseDuration time.Duration
	// HeartbeatInterval is the interval of EMQ.EXTEND while a handler runs
	// (default LeaseDuration/3; negative: no heartbeats, so a handler must
	// finish within its lease).
	HeartbeatInterval time.Duration
	// MaxAttempts is EMQ.FAIL's max_attempts: the failures after which a
	// job is dead-lettered (default DefaultMaxAttempts, 25).
	MaxAttempts int
	// Backoff gives EMQ.FAIL's delay for a job that failed `failures` times
	// before this failure (the count EMQ.CLAIM returned); default
	// DefaultBackoff.
	Backoff func(failures int64) time.Duration
	// ClaimWait is how long one claim waits for a job (EMQ.CLAIM's BLOCK
	// block_ms, on the server's clock; default 1 s; never more than half
	// the go-redis ReadTimeout of a *redis.Client or *redis.ClusterClient).
	// A job arriving wakes the claim at once; the wait only bounds an idle
	// claim, and so how soon shutdown is seen where CLIENT UNBLOCK is not
	// available.
	ClaimWait time.Duration
	// PollInterval is the longest wait between two claims that found
	// nothing, for the Functions target (which cannot block; default 1 s;
	// the wait starts at 10 ms and doubles).
	PollInterval time.Duration
	// ShutdownGrace is how long running handlers may finish after Run's
	// context ends (default 10 s; negative: no grace, they are cancelled
	// at once); then their contexts are cancelled (ErrShutdown) and their
	// jobs given back with EMQ.REQUEUE.
	ShutdownGrace time.Duration
	// AckTimeout bounds how long an outcome verb (COMPLETE, FAIL, REQUEUE)
	// is resent through transport errors (default 1 min).
	AckTimeout time.Duration
	// StallSweepInterval is the interval of the worker's own recovery of
	// expired leases of its queue (EMQ.STALLED.CHECK, docs/verbs.md
	// §4.11): default LeaseDuration/2 (at least 10 ms); negative: the
	// worker sends no sweep (emqd's
	// own sweeper, or a RunSweeper, does it). Each Run sends the sweep at
	// start and then every interval, with the sweep guard EVERY set to
	// nine tenths of the interval (docs/verbs.md §4.11.1), so N workers of
	// one queue cost one sweep per interval, not N, while a worker's own
	// tick arriving a little early is not held back by its previous sweep.
	// A job held by a worker that died is back in pending at most
	// LeaseDuration + StallSweepInterval after its last claim or
	// heartbeat.
	StallSweepInterval time.Duration
	// MaxStalled is the sweep's max_stalled (default 2: a job survives one
	// counted stall, goes back to pending, and dies at the second). The
	// verb's own default is 1 (the first counted stall dead-letters); the
	// library's is 2 because a worker killed with jobs in hand, or a claim
	// whose reply was lost, is no fault of the job (BullMQ's default
	// maxStalledCount 1 allows one recovery too).
	MaxStalled int
	// Clock runs every timer of the worker (default WallClock). With a
	// manual clock shared with an embedded emqd, the server's BLOCK
	// timeouts follow it too: give such a test's go-redis client
	// ReadTimeout: -1 so no wall-clock read timeout ends a claim.
	Clock Clock
	// Logger receives claim errors and recovered panics (default
	// slog.Default()).
	Logger *slog.Logger
	// Hooks observe claims, heartbeats and outcomes.
	Hooks Hooks
}

// negatives collects "must not be negative" errors for the options of
// one struct (named in each error), for the options that have no meaning
// below zero; 0 always means the default.
type negatives struct {
	kind string // "WorkerOptions", "SweeperOptions"
	errs []error
}

func (n *negatives) check(name string, bad bool, v any) {
	if bad {
		n.errs = append(n.errs, fmt.Errorf("emq: %s.%s must not be negative (got %v; 0 is the default)", n.kind, name, v))
	}
}

func (n *negatives) err() error { return errors.Join(n.errs...) }

// check refuses the negative options that have no meaning (WorkerOptions'
// doc); nil when there is none.
func (o *WorkerOptions) check() error {
	n := negatives{kind: "WorkerOptions"}
	n.check("Concurrency", o.Concurrency < 0, o.Concurrency)
	n.check("LeaseDuration", o.LeaseDuration < 0, o.LeaseDuration)
	n.check("MaxAttempts", o.MaxAttempts < 0, o.MaxAttempts)
	n.check("ClaimWait", o.ClaimWait < 0, o.ClaimWait)
	n.check("PollInterval", o.PollInterval < 0, o.PollInterval)
	n.check("AckTimeout", o.AckTimeout < 0, o.AckTimeout)
	n.check("MaxStalled", o.MaxStalled < 0, o.MaxStalled)
	return n.err()
}

func (o *WorkerOptions) defaults(rdb redis.UniversalClient) {
	if o.Concurrency <= 0 {
		o.Concurrency = 1
	}
	if o.LeaseDuration <= 0 {
		o.LeaseDuration = 30 * time.Second
	}
	if o.HeartbeatInterval == 0 {
		o.HeartbeatInterval = o.LeaseDuration / 3
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.Backoff == nil {
		o.Backoff = DefaultBackoff
	}
	if o.ClaimWait <= 0 {
		o.ClaimWait = time.Second
	}
	if rt := readTimeout(rdb); rt > 0 && o.ClaimWait > rt/2 {
		o.ClaimWait = max(rt/2, time.Millisecond)
	}
	if o.PollInterval <= 0 {
		o.PollInterval = time.Second
	}
	if o.ShutdownGrace == 0 {
		o.ShutdownGrace = 10 * time.Second
	}
	if o.AckTimeout <= 0 {
		o.AckTimeout = time.Minute
	}
	if o.StallSweepInterval == 0 {
		o.StallSweepInterval = max(o.LeaseDuration/2, 10*time.Millisecond)
	}
	if o.MaxStalled <= 0 {
		o.MaxStalled = DefaultMaxStalled
	}
	if o.Clock == nil {
		o.Clock = WallClock
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// DefaultMaxStalled is WorkerOptions.MaxStalled's default: one recovery,
// death at the second counted stall.
const DefaultMaxStalled = 2

// sweepGuard is the EVERY a worker sends with its sweep of interval d:
// nine tenths of it (at least 1 ms).
func sweepGuard(d time.Duration) time.Duration { return max(d-d/10, time.Millisecond) }

// sweep sends the guarded EMQ.STALLED.CHECK at once and every StallSweepInterval
// until ctx ends; a sweep that returns a full batch of 100 is repeated at
// once without the guard (the guard would hold its own repeat back).
func (r *run) sweep(ctx context.Context) {
	o := r.o
	const limit = 100
	for ctx.Err() == nil {
		tick := make(chan struct{})
		t := o.Clock.AfterFunc(o.StallSweepInterval, func() { close(tick) })
		every := sweepGuard(o.StallSweepInterval)
		for ctx.Err() == nil {
			rec, dead, err := r.c.StalledCheck(r.base, r.q, &StalledCheckOptions{MaxStalled: o.MaxStalled, Limit: limit, Every: every})
			if err != nil {
				o.Logger.Warn("emq: EMQ.STALLED.CHECK failed", "queue", r.q, "err", err)
				break
			}
			if len(rec)+len(dead) < limit {
				break
			}
			every = 0
		}
		select {
		case <-tick:
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}

// readTimeout is the go-redis ReadTimeout of rdb when it can be known.
func readTimeout(rdb redis.UniversalClient) time.Duration {
	switch x := rdb.(type) {
	case *redis.Client:
		return x.Options().ReadTimeout
	case *redis.ClusterClient:
		return x.Options().ReadTimeout
	}
	return 0
}

// Stats are a worker's counts since it was made, over all its Runs.
type Stats struct {
	// Claimed jobs, and how they ended (see OutcomeKind).
	Claimed, Completed, Retried, DeadLettered, Released, LeaseLost, Abandoned, Unreported int64
	// Running is the number of jobs held right now.
	Running int64
	// Heartbeats sent and those that failed (refused or no reply); Panics
	// recovered; ClaimErrors (refused or failed claims).
	Heartbeats, HeartbeatErrors, Panics, ClaimErrors int64
}

// Worker runs handlers for claimed jobs. Make it with NewWorker; one Worker
// may Run several queues at once, each Run with its own Concurrency.
type Worker struct {
	c   *Client
	o   WorkerOptions
	bad error // the options' refusal (WorkerOptions.check), returned by Run
	n   struct {
		claimed, completed, retried, dead, released, lost, abandoned, unreported atomic.Int64
		running, beats, beatErrs, panics, claimErrs                              atomic.Int64
	}
}

// NewWorker returns a worker over c with opts (nil: every default; the
// defaults are filled in a copy, opts is not changed). Options it refuses
// (a negative Concurrency, ...: WorkerOptions) make every Run return the
// error.
func NewWorker(c *Client, opts *WorkerOptions) *Worker {
	var o WorkerOptions
	if opts != nil {
		o = *opts
	}
	bad := o.check()
	o.defaults(c.redis)
	return &Worker{c: c, o: o, bad: bad}
}

// Options returns the worker's options with the defaults filled in. For a
// worker whose options were refused (NewWorker), each refused field reads
// as its default here, and Run returns the refusal.
func (w *Worker) Options() WorkerOptions { return w.o }

// Stats returns the worker's counts.
func (w *Worker) Stats() Stats {
	n := &w.n
	return Stats{
		Claimed: n.claimed.Load(), Completed: n.completed.Load(), Retried: n.retried.Load(),
		DeadLettered: n.dead.Load(), Released: n.released.Load(), LeaseLost: n.lost.Load(),
		Abandoned: n.abandoned.Load(), Unreported: n.unreported.Load(), Running: n.running.Load(),
		Heartbeats: n.beats.Load(), HeartbeatErrors: n.beatErrs.Load(), Panics: n.panics.Load(),
		ClaimErrors: n.claimErrs.Load(),
	}
}

// ValidQueue reports whether q is a queue name the verbs accept:
// ^[A-Za-z0-9._-]{1,128}$ and not "emq" (docs/verbs.md §1.2).
func ValidQueue(q string) bool {
	if len(q) == 0 || len(q) > 128 || q == "emq" {
		return false
	}
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// Run claims jobs of queue q and runs h for each, up to Concurrency at
// once, until ctx ends. Then it stops claiming (a blocked claim on emqd is
// ended at once with CLIENT UNBLOCK when rdb is a *redis.Client), lets the
// running handlers finish for up to ShutdownGrace, gives back the jobs
// still running with EMQ.REQUEUE (which charges nothing) and returns nil.
// It returns an error only for arguments it cannot run with (a nil
// handler, an invalid queue name, options NewWorker refused), before
// sending anything; claim errors (the server down, a bad row refusing the
// claim) are logged and retried with backoff.
func (w *Worker) Run(ctx context.Context, q string, h Handler) error {
	if w.bad != nil {
		return w.bad
	}
	if h == nil {
		return errors.New("emq: Run needs a handler")
	}
	if !ValidQueue(q) {
		return fmt.Errorf("emq: invalid queue name %q", q)
	}
	r := &run{
		w:     w,
		c:     w.c,
		o:     &w.o,
		q:     q,
		h:     h,
		ctx:   ctx,
		base:  context.WithoutCancel(ctx),
		slots: make(chan struct{}, w.o.Concurrency),
		held:  make(map[*held]struct{}),
	}
	if sc, ok := w.c.redis.(interface{ Conn() *redis.Conn }); ok && w.c.target == Native {
		r.newConn = sc.Conn
		defer func() { // fetch has returned: its connection is ours
			if r.conn != nil {
				r.conn.Close()
			}
		}()
	}
	if w.o.StallSweepInterval > 0 {
		swept := make(chan struct{})
		defer func() { <-swept }()
		go func() {
			defer close(swept)
			r.sweep(ctx)
		}()
	}
	fetched := make(chan struct{})
	go func() {
		defer close(fetched)
		r.fetch(ctx)
	}()
	select {
	case <-fetched:
	case <-ctx.Done():
		r.unblock(fetched)
		<-fetched
	}

	// Shutdown: the grace, then the release of what is left.
	settled := make(chan struct{})
	go func() {
		r.pending.Wait()
		close(settled)
	}()
	graceOver := make(chan struct{})
	t := w.o.Clock.AfterFunc(max(w.o.ShutdownGrace, 0), func() { close(graceOver) })
	if w.o.Hooks.Draining != nil {
		r.mu.Lock()
		n := len(r.held)
		r.mu.Unlock()
		w.o.Hooks.Draining(q, n)
	}
	select {
	case <-settled:
		t.Stop()
	case <-graceOver:
		r.mu.Lock()
		left := make([]*held, 0, len(r.held))
		for a := range r.held {
			left = append(left, a)
		}
		r.mu.Unlock()
		var wg sync.WaitGroup
		for _, a := range left {
			wg.Add(1)
			go func() {
				defer wg.Done()
				a.release()
			}()
		}
		wg.Wait()
		<-settled
	}
	return nil
}

// run is one Run call.
type run struct {
	w     *Worker
	c     *Client
	o     *WorkerOptions
	q     string
	h     Handler
	ctx   context.Context // Run's: its end stops claiming
	base  context.Context // Run's values without its cancellation
	slots chan struct{}

	mu      sync.Mutex
	held    map[*held]struct{}
	pending sync.WaitGroup // jobs claimed and not yet settled

	// The native blocking claim runs on its own connection, so that
	// shutdown can end it with CLIENT UNBLOCK <connID>.
	conn      *redis.Conn // owned by fetch; nil until the first claim
	newConn   func() *redis.Conn
	connID    atomic.Int64
	inClaim   atomic.Bool
	noUnblock atomic.Bool
}

const (
	errWaitMin = 10 * time.Millisecond
	errWaitMax = time.Second
	pollMin    = 10 * time.Millisecond
)

// fetch is the claim loop: one claim at a time, for as many jobs as there
// are free slots.
func (r *run) fetch(ctx context.Context) {
	o := r.o
	errWait, pollWait := errWaitMin, pollMin
	for ctx.Err() == nil {
		select {
		case r.slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		n := 1
	more:
		for n < o.Concurrency {
			select {
			case r.slots <- struct{}{}:
				n++
			default:
				break more
			}
		}
		jobs, err := r.claim(ctx, n)
		at := o.Clock.Now()
		for i := len(jobs); i < n; i++ {
			<-r.slots
		}
		if err != nil {
			r.w.n.claimErrs.Add(1)
			o.Logger.Warn("emq: claim failed", "queue", r.q, "err", err, "retry_in", errWait)
			if !sleep(ctx, o.Clock, errWait) {
				return
			}
			errWait = min(2*errWait, errWaitMax)
			continue
		}
		errWait = errWaitMin
		for _, cj := range jobs {
			r.start(ctx, cj, at)
		}
		if r.c.target == Functions {
			if len(jobs) > 0 {
				pollWait = pollMin
				continue
			}
			if !sleep(ctx, o.Clock, pollWait) {
				return
			}
			pollWait = min(2*pollWait, o.PollInterval)
		}
	}
}

// claim sends one EMQ.CLAIM for up to n jobs.
func (r *run) claim(ctx context.Context, n int) ([]*Lease, error) {
	o := r.o
	if r.c.target == Functions {
		return r.c.Claim(r.base, r.q, o.LeaseDuration, &ClaimOptions{MaxJobs: n})
	}
	if r.newConn == nil {
		return r.c.Claim(r.base, r.q, o.LeaseDuration, &ClaimOptions{MaxJobs: n, WaitFor: o.ClaimWait})
	}
	if r.conn == nil {
		// A PING on the shared client first: go-redis's first connection
		// settles its handshake options there, under the client's lock,
		// before a Conn (a copy of the client with its own lock) dials.
		if err := r.c.redis.Ping(r.base).Err(); err != nil {
			return nil, err
		}
		r.conn = r.newConn()
	}
	if r.connID.Load() == 0 && !r.noUnblock.Load() {
		id, err := r.conn.ClientID(r.base).Result()
		switch {
		case err == nil:
			r.connID.Store(id)
		case IsReply(err):
			r.noUnblock.Store(true) // no CLIENT ID: shutdown waits for the BLOCK timeout
		default:
			r.redial()
			return nil, err
		}
	}
	r.inClaim.Store(true)
	defer r.inClaim.Store(false)
	if ctx.Err() != nil {
		return nil, nil // shutdown began: the unblocker saw inClaim or sees fetch end
	}
	jobs, err := r.c.claimOn(r.base, r.conn, r.q, o.LeaseDuration, n, o.ClaimWait)
	if err != nil && !IsReply(err) {
		r.redial()
	}
	return jobs, err
}

// redial replaces the claim connection after a transport error (a
// go-redis Conn whose connection broke stays broken); the next claim asks
// the new one's CLIENT ID.
func (r *run) redial() {
	r.connID.Store(0)
	r.conn.Close()
	r.conn = nil
}

// unblock ends the fetcher's blocked claim (CLIENT UNBLOCK) until the
// fetcher has returned. The claim may not be parked on the server yet when
// the first UNBLOCK arrives (it answers 0), hence the retries; their
// pacing uses the wall clock, as it only waits out a few microseconds'
// race, and no outcome depends on it.
func (r *run) unblock(fetched <-chan struct{}) {
	if r.newConn == nil {
		return
	}
	wait := 100 * time.Microsecond
	for {
		select {
		case <-fetched:
			return
		default:
		}
		if id := r.connID.Load(); r.inClaim.Load() && id != 0 && !r.noUnblock.Load() {
			n, err := r.c.redis.Do(r.base, "CLIENT", "UNBLOCK", id).Int64()
			switch {
			case err == nil && n == 1:
				return // the claim answers a nil array now
			case err != nil && IsReply(err):
				r.noUnblock.Store(true) // not supported: wait for the BLOCK timeout
				return
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-fetched:
			t.Stop()
			return
		case <-t.C:
		}
		wait = min(2*wait, 50*time.Millisecond)
	}
}

// held is one claimed job until the worker settles it.
type held struct {
	r      *run
	job    *Job
	ctx    context.Context
	cancel context.CancelCauseFunc

	mu       sync.Mutex
	settled  bool
	lost     bool
	lostErr  error
	expired  bool
	beatT    Timer
	leaseT   Timer
	deadline time.Time
}

// start takes one claimed job: it holds one slot (taken by fetch). The
// job's timers are armed before the Claimed hook runs, so a test that
// advances its clock after the hook moves them.
func (r *run) start(ctx context.Context, l *Lease, at time.Time) {
	o := r.o
	j := &Job{Queue: r.q, ID: l.ID, Payload: l.Payload, Token: l.Token, Failures: l.Failures, lease: l}
	a := &held{r: r, job: j}
	a.ctx, a.cancel = context.WithCancelCause(r.base)
	r.pending.Add(1)
	r.mu.Lock()
	r.held[a] = struct{}{}
	r.mu.Unlock()
	r.w.n.claimed.Add(1)
	r.w.n.running.Add(1)
	stopping := ctx.Err() != nil
	if !stopping {
		a.mu.Lock()
		// The lease began when the server served the claim, at most a
		// network latency before the reply arrived.
		a.deadline = at.Add(o.LeaseDuration)
		a.leaseT = o.Clock.AfterFunc(a.deadline.Sub(o.Clock.Now()), a.expire)
		if o.HeartbeatInterval > 0 {
			a.beatT = o.Clock.AfterFunc(o.HeartbeatInterval, a.beat)
		}
		a.mu.Unlock()
	}
	if o.Hooks.Claimed != nil {
		o.Hooks.Claimed(j)
	}
	if stopping {
		a.release() // claimed as shutdown began: give it back unrun
		return
	}
	go a.run()
}

func (a *held) stopTimers() {
	if a.beatT != nil {
		a.beatT.Stop()
	}
	if a.leaseT != nil {
		a.leaseT.Stop()
	}
}

// beat sends one heartbeat and arms the next (before the Heartbeat hook
// runs, so a test that advances its clock after the hook moves it).
func (a *held) beat() {
	r, o := a.r, a.r.o
	a.mu.Lock()
	if a.settled || a.lost || a.expired {
		a.mu.Unlock()
		return
	}
	a.mu.Unlock()
	sent := o.Clock.Now()
	err := a.job.lease.Extend(r.base, o.LeaseDuration)
	r.w.n.beats.Add(1)
	if err != nil {
		r.w.n.beatErrs.Add(1)
	}
	a.mu.Lock()
	if !a.settled && !a.lost && !a.expired {
		var refusal *Error
		switch {
		case err == nil:
			a.deadline = sent.Add(o.LeaseDuration)
			a.leaseT.Stop()
			a.leaseT = o.Clock.AfterFunc(a.deadline.Sub(o.Clock.Now()), a.expire)
		case errors.As(err, &refusal):
			a.lost, a.lostErr = true, err
			a.leaseT.Stop()
			a.cancel(ErrLeaseLost)
		}
		if !a.lost {
			a.beatT = o.Clock.AfterFunc(o.HeartbeatInterval, a.beat)
		}
	}
	a.mu.Unlock()
	if o.Hooks.Heartbeat != nil {
		o.Hooks.Heartbeat(a.job, err)
	}
}

// expire runs at the local lease deadline.
func (a *held) expire() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.settled || a.lost || a.expired {
		return
	}
	a.expired = true
	if a.beatT != nil {
		a.beatT.Stop()
	}
	a.cancel(ErrLeaseExpired)
}

// run runs the handler and settles the job with its result.
func (a *held) run() {
	err := a.call()
	r := a.r
	a.mu.Lock()
	if a.settled {
		a.mu.Unlock()
		return // released at shutdown: the result is not sent
	}
	a.settled = true
	a.stopTimers()
	lost, lostErr, expired := a.lost, a.lostErr, a.expired
	a.mu.Unlock()
	var o Outcome
	var next *Lease
	switch {
	case lost:
		o = Outcome{Kind: LeaseLost, Err: lostErr}
	case err == nil && r.ctx.Err() == nil:
		o, next = r.completeAndClaim(a.job)
	case err == nil:
		o = r.complete(a.job, false, nil)
	case errors.Is(err, ErrAbandon):
		o = Outcome{Kind: Abandoned}
	case errors.Is(err, ErrNoRetry):
		o = r.fail(a.job, 1, 0, err)
	default:
		if expired && !errors.Is(err, ErrLeaseExpired) {
			// The worker cancelled the handler: say so in last_error.
			err = fmt.Errorf("%w: %w", ErrLeaseExpired, err)
		}
		o = r.fail(a.job, r.o.MaxAttempts, r.o.Backoff(a.job.Failures), err)
	}
	a.cancel(context.Canceled)
	a.finish(o, next)
}

// call runs the handler, turning a panic into a *PanicError.
func (a *held) call() (err error) {
	r := a.r
	defer func() {
		if v := recover(); v != nil {
			pe := &PanicError{Value: v, Stack: debug.Stack()}
			r.w.n.panics.Add(1)
			r.o.Logger.Error("emq: handler panicked", "queue", r.q, "id", a.job.ID, "panic", fmt.Sprint(v),
				"stack", string(pe.Stack))
			err = pe
		}
	}()
	return r.h(a.ctx, a.job)
}

// release gives the job back (shutdown) unless it is settled already.
func (a *held) release() {
	a.mu.Lock()
	if a.settled {
		a.mu.Unlock()
		return
	}
	a.settled = true
	a.stopTimers()
	lost, lostErr := a.lost, a.lostErr
	a.mu.Unlock()
	a.cancel(ErrShutdown)
	if lost {
		a.finish(Outcome{Kind: LeaseLost, Err: lostErr}, nil)
		return
	}
	a.finish(a.r.requeue(a.job), nil)
}

// finish records o and calls the Done hook. A next job (claimed in the
// same round trip as the completion, see completeAndClaim) takes over the
// job's slot; else the slot goes back to the fetcher.
func (a *held) finish(o Outcome, next *Lease) {
	r := a.r
	n := &r.w.n
	switch o.Kind {
	case Completed:
		n.completed.Add(1)
	case Retried:
		n.retried.Add(1)
	case DeadLettered:
		n.dead.Add(1)
	case Released:
		n.released.Add(1)
	case LeaseLost:
		n.lost.Add(1)
	case Abandoned:
		n.abandoned.Add(1)
	case Unreported:
		n.unreported.Add(1)
		r.o.Logger.Warn("emq: no reply to a job's outcome; its lease will expire", "queue", r.q, "id", a.job.ID, "err", o.Err)
	}
	n.running.Add(-1)
	r.mu.Lock()
	delete(r.held, a)
	r.mu.Unlock()
	if r.o.Hooks.Done != nil {
		r.o.Hooks.Done(a.job, o)
	}
	if next != nil {
		// The next job is pending before this one is done, so Run's wait
		// never sees zero in between; start gives it back if Run's
		// context ended meanwhile.
		r.start(r.ctx, next, r.o.Clock.Now())
		r.pending.Done()
		return
	}
	<-r.slots
	r.pending.Done()
}

// send runs f, resending it through transport errors (with backoff on the
// worker's clock) until it gets a reply or AckTimeout passes. lost reports
// whether an attempt's reply was lost.
func (r *run) send(f func() error) (lost bool, err error) {
	o := r.o
	start := o.Clock.Now()
	wait := errWaitMin
	for {
		err = f()
		if IsReply(err) {
			return lost, err
		}
		lost = true
		if o.Clock.Now().Sub(start) >= o.AckTimeout {
			return lost, err
		}
		sleep(context.Background(), o.Clock, wait)
		wait = min(2*wait, time.Second)
	}
}

func isRefusal(err error, class, detail string) bool {
	var e *Error
	return errors.As(err, &e) && e.Class == class && e.Detail == detail
}

// completeAndClaim sends EMQ.COMPLETE ... NEXT lease_ms (docs/verbs.md
// §4.5.1): the completion and the claim of one job for the freed slot in
// one command, so a busy worker costs one command and one round trip per
// job. A transport error falls back to complete's resends (a job the lost
// reply may have leased is recovered by the sweep, as for any lost claim).
// A refusal (the guard's, or the claim's: a bad row in pending refuses the
// whole call and completes nothing) is settled by a plain EMQ.COMPLETE, so
// the job's outcome never depends on another job's row.
func (r *run) completeAndClaim(j *Job) (Outcome, *Lease) {
	v, err := r.c.do(r.base, "EMQ.COMPLETE", r.q, j.ID, j.Token, "NEXT", posMs(r.o.LeaseDuration))
	if !IsReply(err) {
		return r.complete(j, true, err), nil
	}
	if err != nil {
		return r.complete(j, false, nil), nil
	}
	jobs, cerr := r.c.parseClaim(r.q, v, nil)
	if cerr != nil || len(jobs) != 1 {
		return Outcome{Kind: Completed}, nil
	}
	return Outcome{Kind: Completed}, jobs[0]
}

// complete sends EMQ.COMPLETE with resends; lost and first are the state
// of a first attempt already made (completeAndClaim's).
func (r *run) complete(j *Job, lost bool, first error) Outcome {
	sent := lost
	l, err := r.send(func() error {
		if sent {
			sent = false
			return first
		}
		return j.lease.Complete(r.base, nil)
	})
	return completeOutcome(l, err)
}

func completeOutcome(lost bool, err error) Outcome {
	switch {
	case err == nil:
		return Outcome{Kind: Completed}
	case !IsReply(err):
		return Outcome{Kind: Unreported, Err: err}
	case lost && isRefusal(err, "EMQSTALE", "job gone"):
		return Outcome{Kind: Completed, LostReply: true}
	}
	return Outcome{Kind: LeaseLost, Err: err}
}

// maxErrorText bounds the last_error a worker sends (bytes).
const maxErrorText = 4096

func errorText(err error) string {
	s := err.Error()
	if len(s) <= maxErrorText {
		return s
	}
	s = s[:maxErrorText]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

func (r *run) fail(j *Job, maxAttempts int, delay time.Duration, cause error) Outcome {
	var v FailVerdict
	text := errorText(cause)
	lost, err := r.send(func() (e error) {
		v, e = j.lease.Fail(r.base, text, &FailOptions{MaxAttempts: maxAttempts, RetryIn: delay})
		return e
	})
	switch {
	case err == nil && v.Dead:
		return Outcome{Kind: DeadLettered, Failures: v.Failures, Err: cause}
	case err == nil:
		return Outcome{Kind: Retried, Failures: v.Failures, Err: cause}
	case !IsReply(err):
		return Outcome{Kind: Unreported, Err: err}
	case lost && isRefusal(err, "EMQSTATE", "job is dead"):
		return Outcome{Kind: DeadLettered, LostReply: true, Err: cause}
	}
	return Outcome{Kind: LeaseLost, Err: err}
}

func (r *run) requeue(j *Job) Outcome {
	lost, err := r.send(func() error { return j.lease.Requeue(r.base) })
	switch {
	case err == nil:
		return Outcome{Kind: Released}
	case !IsReply(err):
		return Outcome{Kind: Unreported, Err: err}
	case lost && isRefusal(err, "EMQSTALE", "lease lost"):
		return Outcome{Kind: Released, LostReply: true}
	}
	return Outcome{Kind: LeaseLost, Err: err}
}
