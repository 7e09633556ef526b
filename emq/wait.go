package emq

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// Finished is a finished job as EMQ.WAIT answers it (docs/verbs.md §4.23).
type Finished struct {
	// State is StateCompleted or StateDead.
	State JobState
	// Result is the value sent with COMPLETE ... RESULT (HasResult false:
	// none).
	Result    string
	HasResult bool
	// Error is the row's last_error (a dead job's last FAIL text, or
	// "stalled"); empty when none.
	Error string
	// FinishedAt is the row's finished_at (zero for a row without it).
	FinishedAt time.Time
}

// ErrWaitTimeout is Wait's error when the job did not finish within the
// timeout.
var ErrWaitTimeout = errors.New("emq: wait timed out")

// WaitPoll is how often Wait asks again on the Functions target, where
// emq_wait cannot block (docs/cluster.md §3).
var WaitPoll = 50 * time.Millisecond

// Wait waits up to timeout (0: forever; whole ms, rounded up) for job id
// of queue q to be completed or dead (EMQ.WAIT, docs/verbs.md §4.23) and
// returns its outcome. Errors: ErrWaitTimeout; an *Error matching
// ErrStale (EMQSTALE job gone) for a job with no row (never there, or
// finished without retention, docs/verbs.md §4.21); ctx's error. Native
// target: one blocking command, so keep timeout below the go-redis
// client's ReadTimeout; Functions target: polls emq_wait every WaitPoll.
func (c *Client) Wait(ctx context.Context, q, id string, timeout time.Duration) (*Finished, error) {
	if c.target == Native {
		v, err := c.do(ctx, "EMQ.WAIT", q, id, ms(timeout))
		return parseWait(v, err)
	}
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	for {
		v, err := c.do(ctx, "EMQ.WAIT", q, id, 0)
		o, err := parseWait(v, err)
		if !errors.Is(err, ErrWaitTimeout) {
			return o, err
		}
		wait := WaitPoll
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				return nil, ErrWaitTimeout
			}
			wait = min(wait, left)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

func parseWait(v any, err error) (*Finished, error) {
	if errors.Is(err, redis.Nil) || (err == nil && v == nil) {
		return nil, ErrWaitTimeout
	}
	if err != nil {
		return nil, err
	}
	pairs, ok := asPairs(v)
	if !ok {
		return nil, errReply
	}
	o := &Finished{}
	for _, p := range pairs {
		name, _ := p[0].(string)
		val, isStr := p[1].(string)
		switch name {
		case "state":
			o.State = JobState(val)
		case "result":
			o.Result, o.HasResult = val, isStr
		case "error":
			o.Error = val
		case "finished_at":
			if n, ok := asInt(p[1]); ok {
				o.FinishedAt = time.UnixMilli(n)
			}
		}
	}
	if o.State != StateCompleted && o.State != StateDead {
		return nil, errReply
	}
	return o, nil
}
