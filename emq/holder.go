package emq

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// The holder verbs, for callers who write their own worker loop: Claim
// hands out leases and each *Lease sends its own verbs. Each refusal of
// the common guard (docs/verbs.md §4.4) comes back as *Error: ErrStale
// (job gone, token mismatch, lease lost), ErrLane, ErrState (job is dead).

// Lease is one job held by its claimer (EMQ.CLAIM's reply): what the job
// is, and the fencing token the holder verbs present. Its methods are
// the holder verbs; they may be called from any goroutine, and a Lease
// is a plain value (Client.Lease rebuilds one from its parts).
type Lease struct {
	Queue string
	ID    string
	// Payload is the job's bytes as enqueued.
	Payload []byte
	// Token is the fencing token to present back, exactly as sent.
	Token string
	// Failures is the retry budget already spent (0 on the first run):
	// the input of a backoff.
	Failures int64
	c        *core
}

// Lease returns the lease of job id of queue q held with token, for a
// holder that kept the three (across a restart, in another process): its
// methods then send the holder verbs with them. Payload and Failures are
// empty.
func (c *Client) Lease(q, id, token string) *Lease {
	return &Lease{Queue: q, ID: id, Token: token, c: &c.core}
}

// ClaimOptions are Claim's options (nil: one job, no wait).
type ClaimOptions struct {
	// MaxJobs is the most jobs this claim hands out (EMQ.CLAIM ... COUNT
	// n; 0: 1).
	MaxJobs int
	// WaitFor is how long the claim waits for a job when none is
	// claimable (EMQ.CLAIM ... BLOCK block_ms, rounded up to whole ms;
	// 0: it answers at once). The wait runs on the server's clock; keep
	// it below the go-redis client's ReadTimeout. Functions target: not
	// sent (a function cannot block); Claim then answers at once.
	WaitFor time.Duration
	// WaitForever waits with no timeout (BLOCK 0); WaitFor is then
	// ignored.
	WaitForever bool
}

// Claim hands out up to MaxJobs jobs of queue q, lowest priority first,
// then lowest id (and fairly across lanes, docs/verbs.md §4.26), each
// leased for lease (EMQ.CLAIM, docs/verbs.md §4.3; rounded up to whole
// ms, at least 1). No job (nothing claimable, a paused queue, or a wait
// that timed out): an empty slice and no error. A lease that is not
// positive, or a negative MaxJobs or WaitFor, is the server's refusal.
func (c *Client) Claim(ctx context.Context, q string, lease time.Duration, o *ClaimOptions) ([]*Lease, error) {
	if o == nil {
		o = &ClaimOptions{}
	}
	// A lease that is not positive and a negative MaxJobs or WaitFor are
	// sent as they are, so the server refuses them with its own text and
	// hands out nothing (they were silently made 1 ms, 1 and no wait).
	lms := lease.Milliseconds()
	if lease > 0 {
		lms = posMs(lease)
	}
	args := []any{lms}
	if o.MaxJobs > 1 || o.MaxJobs < 0 {
		args = append(args, "COUNT", o.MaxJobs)
	}
	if c.target == Native {
		switch {
		case o.WaitForever:
			args = append(args, "BLOCK", 0)
		case o.WaitFor < 0:
			args = append(args, "BLOCK", min(o.WaitFor.Milliseconds(), -1))
		case o.WaitFor > 0:
			args = append(args, "BLOCK", ms(o.WaitFor))
		}
	}
	v, err := c.do(ctx, "EMQ.CLAIM", q, args...)
	return c.parseClaim(q, v, err)
}

// claimOn is Claim over a given go-redis connection (the worker's own).
func (c *Client) claimOn(ctx context.Context, conn *redis.Conn, q string, lease time.Duration, count int, block time.Duration) ([]*Lease, error) {
	args := []any{"EMQ.CLAIM", q, posMs(lease), "COUNT", count, "BLOCK", ms(block)}
	cmd := redis.NewCmd(ctx, args...)
	_ = conn.Process(ctx, cmd)
	v, err := cmd.Result()
	return c.parseClaim(q, v, typed(err))
}

func (c *core) parseClaim(q string, v any, err error) ([]*Lease, error) {
	if errors.Is(err, redis.Nil) {
		return nil, nil // BLOCK timed out
	}
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, nil
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, badReply("EMQ.CLAIM", v)
	}
	out := make([]*Lease, 0, len(arr))
	for _, e := range arr {
		t, ok := e.([]any)
		if !ok || len(t) != 4 {
			return nil, badReply("EMQ.CLAIM", v)
		}
		id, ok1 := asString(t[0])
		payload, ok2 := asString(t[1])
		tok, ok3 := asString(t[2])
		f, ok4 := asInt(t[3])
		if !ok1 || !ok2 || !ok3 || !ok4 {
			return nil, badReply("EMQ.CLAIM", v)
		}
		out = append(out, &Lease{Queue: q, ID: id, Payload: []byte(payload), Token: tok, Failures: f, c: c})
	}
	return out, nil
}

// CompleteOptions are Lease.Complete's options (nil: no result).
type CompleteOptions struct {
	// Result is kept with the job while its queue retains completed jobs
	// (EMQ.COMPLETE ... RESULT, docs/verbs.md §4.5: at most 1 MiB;
	// Inspector.SetRetention); nil sends none, an empty non-nil slice an
	// empty one.
	Result []byte
}

// Complete finishes the job (EMQ.COMPLETE): the row is deleted (or kept
// with its result while the queue retains completed jobs) and the queue's
// completed count grows.
func (l *Lease) Complete(ctx context.Context, o *CompleteOptions) error {
	var err error
	if o != nil && o.Result != nil {
		_, err = l.c.do(ctx, "EMQ.COMPLETE", l.Queue, l.ID, l.Token, "RESULT", o.Result)
	} else {
		_, err = l.c.do(ctx, "EMQ.COMPLETE", l.Queue, l.ID, l.Token)
	}
	return err
}

// FailVerdict is EMQ.FAIL's reply: Dead when the job went to the
// dead-letter set, else it was scheduled for a retry; Failures is the retry
// budget spent, this failure included.
type FailVerdict struct {
	Dead     bool
	Failures int64
}

// DefaultMaxAttempts is the failures after which a job is dead-lettered
// unless told otherwise (FailOptions.MaxAttempts,
// WorkerOptions.MaxAttempts): Sidekiq's 25.
const DefaultMaxAttempts = 25

// FailOptions are Lease.Fail's options (nil: DefaultMaxAttempts, retry at
// once).
type FailOptions struct {
	// MaxAttempts is EMQ.FAIL's max_attempts: failures+1 >= MaxAttempts
	// dead-letters the job (0: DefaultMaxAttempts; 1: dead now).
	MaxAttempts int
	// RetryIn is the delay before the retry (EMQ.FAIL's delay_ms, rounded
	// up to whole ms; 0: due at once). DefaultBackoff(l.Failures) is the
	// Worker's.
	RetryIn time.Duration
}

// Fail records a failure of the job (EMQ.FAIL, docs/verbs.md §4.6) with
// reason as its last_error: it is retried after RetryIn, or dead-lettered
// once MaxAttempts failures are spent.
func (l *Lease) Fail(ctx context.Context, reason string, o *FailOptions) (FailVerdict, error) {
	maxAttempts, delay := DefaultMaxAttempts, time.Duration(0)
	if o != nil {
		if o.MaxAttempts > 0 {
			maxAttempts = o.MaxAttempts
		}
		delay = o.RetryIn
	}
	v, err := l.c.do(ctx, "EMQ.FAIL", l.Queue, l.ID, l.Token, maxAttempts, ms(delay), reason)
	if err != nil {
		return FailVerdict{}, err
	}
	arr, ok := v.([]any)
	if !ok || len(arr) != 2 {
		return FailVerdict{}, badReply("EMQ.FAIL", v)
	}
	verdict, _ := asString(arr[0])
	f, ok := asInt(arr[1])
	if !ok || (verdict != "dead" && verdict != "scheduled") {
		return FailVerdict{}, badReply("EMQ.FAIL", v)
	}
	return FailVerdict{Dead: verdict == "dead", Failures: f}, nil
}

// Requeue gives the job back without failing it (EMQ.REQUEUE): pending
// again, no budget charged.
func (l *Lease) Requeue(ctx context.Context) error {
	_, err := l.c.do(ctx, "EMQ.REQUEUE", l.Queue, l.ID, l.Token)
	return err
}

// Extend sets the lease to run out d from now on the server's clock
// (EMQ.EXTEND, the heartbeat; rounded up to whole ms, at least 1).
func (l *Lease) Extend(ctx context.Context, d time.Duration) error {
	_, err := l.c.do(ctx, "EMQ.EXTEND", l.Queue, l.ID, l.Token, posMs(d))
	return err
}

// Delay defers the job by d without failing it (EMQ.DELAY ... IN
// delay_ms): it leaves active for scheduled and the lease ends.
func (l *Lease) Delay(ctx context.Context, d time.Duration) error {
	_, err := l.c.do(ctx, "EMQ.DELAY", l.Queue, l.ID, l.Token, "IN", ms(d))
	return err
}

// DelayUntil defers the job to t without failing it (EMQ.DELAY ... AT
// run_at_ms).
func (l *Lease) DelayUntil(ctx context.Context, t time.Time) error {
	_, err := l.c.do(ctx, "EMQ.DELAY", l.Queue, l.ID, l.Token, "AT", max(t.UnixMilli(), 0))
	return err
}

// Progress stores value in the job's `progress` field (EMQ.PROGRESS).
func (l *Lease) Progress(ctx context.Context, value string) error {
	_, err := l.c.do(ctx, "EMQ.PROGRESS", l.Queue, l.ID, l.Token, value)
	return err
}

// StalledCheckOptions are StalledCheck's options (nil: the verb's
// defaults, no guard).
type StalledCheckOptions struct {
	// MaxStalled caps the stall budget (0: the verb's default, 1: the
	// first counted stall dead-letters).
	MaxStalled int
	// Limit is the most expired leases one call recovers (0: the verb's
	// default, 100).
	Limit int
	// Every is the sweep guard (EMQ.STALLED.CHECK ... EVERY interval_ms,
	// docs/verbs.md §4.11.1; rounded up to whole ms): when a guarded sweep
	// of the queue ran less than Every ago on the server's clock, the call
	// answers two empty lists at once and writes nothing. 0: no guard.
	Every time.Duration
}

// StalledCheck recovers expired leases of queue q (EMQ.STALLED.CHECK,
// docs/verbs.md §4.11) and returns the ids sent back to pending and those
// dead-lettered.
func (c *Client) StalledCheck(ctx context.Context, q string, o *StalledCheckOptions) (recovered, dead []string, err error) {
	if o == nil {
		o = &StalledCheckOptions{}
	}
	var args []any
	switch {
	case o.Limit > 0:
		args = []any{max(o.MaxStalled, 1), o.Limit}
	case o.MaxStalled > 0:
		args = []any{o.MaxStalled}
	}
	if o.Every > 0 {
		args = append(args, "EVERY", posMs(o.Every))
	}
	v, err := c.do(ctx, "EMQ.STALLED.CHECK", q, args...)
	if err != nil {
		return nil, nil, err
	}
	arr, ok := v.([]any)
	if !ok || len(arr) != 2 {
		return nil, nil, badReply("EMQ.STALLED.CHECK", v)
	}
	lists := [2][]string{}
	for i := range arr {
		if arr[i] == nil {
			continue
		}
		ids, ok := arr[i].([]any)
		if !ok {
			return nil, nil, badReply("EMQ.STALLED.CHECK", v)
		}
		for _, x := range ids {
			s, ok := asString(x)
			if !ok {
				return nil, nil, badReply("EMQ.STALLED.CHECK", v)
			}
			lists[i] = append(lists[i], s)
		}
	}
	return lists[0], lists[1], nil
}

// BatchOptions are the options of a bounded maintenance call (Promote,
// FireSchedules; nil: the verb's default).
type BatchOptions struct {
	// Limit is the most items one call moves (0: the verb's default, 100).
	Limit int
}

func (o *BatchOptions) limit() int {
	if o == nil {
		return 0
	}
	return o.Limit
}

// Promote moves up to Limit due scheduled jobs of queue q to pending
// (EMQ.PROMOTE) and returns how many it moved.
func (i *Inspector) Promote(ctx context.Context, q string, o *BatchOptions) (int, error) {
	var v any
	var err error
	if n := o.limit(); n > 0 {
		v, err = i.do(ctx, "EMQ.PROMOTE", q, n)
	} else {
		v, err = i.do(ctx, "EMQ.PROMOTE", q)
	}
	if err != nil {
		return 0, err
	}
	n, ok := asInt(v)
	if !ok {
		return 0, badReply("EMQ.PROMOTE", v)
	}
	return int(n), nil
}
