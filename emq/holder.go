package emq

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// The holder verbs, for callers who write their own worker loop. Each
// refusal of the common guard (docs/verbs.md §4.4) comes
// back as *Error: ErrStale (job gone, token mismatch, lease lost), ErrLane,
// ErrState (job is dead).

// Claimed is one job handed out by EMQ.CLAIM.
type Claimed struct {
	ID      string
	Payload []byte
	// Token is the fencing token to present back, exactly as sent.
	Token string
	// Failures is the retry budget already spent (0 on the first run):
	// the input of a backoff.
	Failures int64
}

// ClaimOption sets an option of Client.Claim.
type ClaimOption func(*claimOpts)

type claimOpts struct {
	count int
	block time.Duration
	isBlk bool
}

// Count asks for up to n jobs (EMQ.CLAIM ... COUNT n; default 1).
func Count(n int) ClaimOption { return func(o *claimOpts) { o.count = n } }

// Block waits up to d for a job when none is claimable (EMQ.CLAIM ...
// BLOCK block_ms; 0 waits forever). The wait runs on the server's clock;
// keep d below the go-redis client's ReadTimeout. Functions target: not
// sent (a function cannot block); Claim then returns at once.
func Block(d time.Duration) ClaimOption {
	return func(o *claimOpts) { o.block, o.isBlk = d, true }
}

// Claim hands out up to Count jobs of queue q, lowest id first, each leased
// for lease (EMQ.CLAIM, docs/verbs.md §4.3). No job (nothing claimable, a
// paused queue, or a Block that timed out): an empty slice and no error.
func (c *Client) Claim(ctx context.Context, q string, lease time.Duration, opts ...ClaimOption) ([]Claimed, error) {
	var o claimOpts
	for _, f := range opts {
		f(&o)
	}
	args := []any{posMs(lease)}
	if o.count > 1 {
		args = append(args, "COUNT", o.count)
	}
	if o.isBlk && c.target == Native {
		args = append(args, "BLOCK", ms(o.block))
	}
	v, err := c.do(ctx, "EMQ.CLAIM", q, args...)
	return parseClaim(v, err)
}

// claimOn is Claim over a given go-redis connection (the worker's own).
func (c *Client) claimOn(ctx context.Context, conn *redis.Conn, q string, lease time.Duration, count int, block time.Duration) ([]Claimed, error) {
	args := []any{"EMQ.CLAIM", q, posMs(lease), "COUNT", count, "BLOCK", ms(block)}
	cmd := redis.NewCmd(ctx, args...)
	_ = conn.Process(ctx, cmd)
	v, err := cmd.Result()
	return parseClaim(v, typed(err))
}

func parseClaim(v any, err error) ([]Claimed, error) {
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
	out := make([]Claimed, 0, len(arr))
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
		out = append(out, Claimed{ID: id, Payload: []byte(payload), Token: tok, Failures: f})
	}
	return out, nil
}

// Complete finishes job id held with token (EMQ.COMPLETE): the row is
// deleted and the queue's completed count grows.
func (c *Client) Complete(ctx context.Context, q, id, token string) error {
	_, err := c.do(ctx, "EMQ.COMPLETE", q, id, token)
	return err
}

// CompleteResult is Complete with the job's result (EMQ.COMPLETE ...
// RESULT, docs/verbs.md §4.5: at most 1 MiB), kept while the queue
// retains completed jobs (SetRetention).
func (c *Client) CompleteResult(ctx context.Context, q, id, token string, result []byte) error {
	_, err := c.do(ctx, "EMQ.COMPLETE", q, id, token, "RESULT", result)
	return err
}

// FailVerdict is EMQ.FAIL's reply: Dead when the job went to the
// dead-letter set, else it was scheduled for a retry; Failures is the retry
// budget spent, this failure included.
type FailVerdict struct {
	Dead     bool
	Failures int64
}

// Fail records a failure of job id held with token (EMQ.FAIL,
// docs/verbs.md §4.6): failures+1 >= maxAttempts dead-letters the job, else it
// is retried after delay (rounded up to ms). errText becomes last_error.
func (c *Client) Fail(ctx context.Context, q, id, token string, maxAttempts int, delay time.Duration, errText string) (FailVerdict, error) {
	v, err := c.do(ctx, "EMQ.FAIL", q, id, token, maxAttempts, ms(delay), errText)
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

// Requeue gives job id back without failing it (EMQ.REQUEUE): pending
// again, no budget charged.
func (c *Client) Requeue(ctx context.Context, q, id, token string) error {
	_, err := c.do(ctx, "EMQ.REQUEUE", q, id, token)
	return err
}

// Extend sets the lease of job id to lease from now (EMQ.EXTEND, the
// heartbeat).
func (c *Client) Extend(ctx context.Context, q, id, token string, lease time.Duration) error {
	_, err := c.do(ctx, "EMQ.EXTEND", q, id, token, posMs(lease))
	return err
}

// Delay defers job id by d without failing it (EMQ.DELAY ... IN delay_ms).
func (c *Client) Delay(ctx context.Context, q, id, token string, d time.Duration) error {
	_, err := c.do(ctx, "EMQ.DELAY", q, id, token, "IN", ms(d))
	return err
}

// DelayUntil defers job id to t without failing it (EMQ.DELAY ... AT
// run_at_ms).
func (c *Client) DelayUntil(ctx context.Context, q, id, token string, t time.Time) error {
	_, err := c.do(ctx, "EMQ.DELAY", q, id, token, "AT", max(t.UnixMilli(), 0))
	return err
}

// Progress stores value in the job's `progress` field (EMQ.PROGRESS).
func (c *Client) Progress(ctx context.Context, q, id, token, value string) error {
	_, err := c.do(ctx, "EMQ.PROGRESS", q, id, token, value)
	return err
}

// StalledCheck recovers expired leases of queue q (EMQ.STALLED.CHECK,
// docs/verbs.md §4.11): at most limit of them (0: the verb's default, 100);
// maxStalled (0: the verb's default, 1) caps the stall budget. It returns
// the ids sent back to pending and those dead-lettered.
func (c *Client) StalledCheck(ctx context.Context, q string, maxStalled, limit int) (recovered, dead []string, err error) {
	return c.StalledCheckEvery(ctx, q, maxStalled, limit, 0)
}

// StalledCheckEvery is StalledCheck with the sweep guard (EMQ.STALLED.CHECK
// ... EVERY interval_ms, docs/verbs.md §4.11.1): when a guarded sweep of q
// ran less than every ago on the server's clock, the call answers two
// empty lists at once and writes nothing. every <= 0 sends no guard
// (StalledCheck); it is rounded up to whole milliseconds.
func (c *Client) StalledCheckEvery(ctx context.Context, q string, maxStalled, limit int, every time.Duration) (recovered, dead []string, err error) {
	var args []any
	switch {
	case limit > 0:
		args = []any{max(maxStalled, 1), limit}
	case maxStalled > 0:
		args = []any{maxStalled}
	}
	if every > 0 {
		args = append(args, "EVERY", posMs(every))
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

// Promote moves up to limit (0: the verb's default, 100) due scheduled jobs
// of queue q to pending (EMQ.PROMOTE) and returns how many it moved.
func (c *Client) Promote(ctx context.Context, q string, limit int) (int, error) {
	var v any
	var err error
	if limit > 0 {
		v, err = c.do(ctx, "EMQ.PROMOTE", q, limit)
	} else {
		v, err = c.do(ctx, "EMQ.PROMOTE", q)
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
