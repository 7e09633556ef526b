package emq

import (
	"context"
	"fmt"
)

// The operator bulk actions (docs/verbs.md §4.24), as an inspector would
// offer them (Asynq's RunAllArchivedTasks, DeleteAllArchivedTasks, ...;
// BullMQ's retryJobs, clean, drain, promoteJobs): each method sends its
// bounded verb again and again until the set is empty, and returns what
// was done. Every call is atomic on the server; the loop as a whole is
// not (jobs that arrive meanwhile are taken too, by a later call).

// Bulk is the outcome of a bulk action: Done jobs moved or removed over
// every call, Left members still in the set after the last call (0 unless
// OneCall was given, or the context ended the loop), and Calls, the
// number of server calls made.
type Bulk struct {
	Done, Left int64
	Calls      int
}

// BulkOption sets an option of the bulk methods.
type BulkOption func(*bulkOpts)

type bulkOpts struct {
	limit int
	once  bool
}

// BatchSize sets the jobs per server call (the verb's LIMIT: 1 to 10,000;
// default the server's 1,000). Larger batches make fewer round trips and
// hold other clients back longer per call (docs/verbs.md §4.24).
func BatchSize(n int) BulkOption { return func(o *bulkOpts) { o.limit = n } }

// OneCall makes a bulk method send its verb once: Bulk.Left then says how
// many members remain, for a caller that paces the loop itself.
func OneCall() BulkOption { return func(o *bulkOpts) { o.once = true } }

// bulk runs verb q args... [LIMIT n] until the set is empty (or once),
// summing the [done, left] replies. A call that moved nothing while
// members are left ends the loop (it cannot happen: every selected member
// leaves the set, docs/verbs.md §4.24; the check keeps a bug from spinning).
func (c *Client) bulk(ctx context.Context, verb, q string, args []any, opts []BulkOption) (Bulk, error) {
	var o bulkOpts
	for _, f := range opts {
		f(&o)
	}
	if o.limit != 0 {
		args = append(args, "LIMIT", o.limit)
	}
	var out Bulk
	for {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		v, err := c.do(ctx, verb, q, args...)
		if err != nil {
			return out, err
		}
		arr, ok := v.([]any)
		if !ok || len(arr) != 2 {
			return out, badReply(verb, v)
		}
		done, ok1 := asInt(arr[0])
		left, ok2 := asInt(arr[1])
		if !ok1 || !ok2 {
			return out, badReply(verb, v)
		}
		out.Done += done
		out.Left = left
		out.Calls++
		if o.once || left == 0 || done == 0 {
			return out, nil
		}
	}
}

// ReprocessAll returns every dead job of queue q to pending, oldest death
// first (EMQ.REPROCESS.ALL, docs/verbs.md §4.24): with reset, each with a
// fresh retry and stall budget (as Reprocess with Reset). A dead member
// without a row is dropped and not counted. Errors: ErrLane (a lane row:
// nothing of that call was reprocessed), the server's argument errors.
func (c *Client) ReprocessAll(ctx context.Context, q string, reset bool, opts ...BulkOption) (Bulk, error) {
	var args []any
	if reset {
		args = append(args, "RESET")
	}
	return c.bulk(ctx, "EMQ.REPROCESS.ALL", q, args, opts)
}

// RemoveAll deletes every job of queue q in state (Pending: drain the
// queue; Scheduled; Dead; Retained: the retained completed jobs), in the
// set's order, each as Remove would (EMQ.REMOVE.ALL, docs/verbs.md §4.24).
// Held (Active) jobs are never removed: state Active is refused before
// anything is sent. Errors: ErrState (a member that is also held), ErrLane.
func (c *Client) RemoveAll(ctx context.Context, q string, state State, opts ...BulkOption) (Bulk, error) {
	switch state {
	case Pending, Scheduled, Dead, Retained:
	default:
		return Bulk{}, fmt.Errorf("emq: RemoveAll of state %q: only pending, scheduled, dead and completed jobs can be removed", state)
	}
	return c.bulk(ctx, "EMQ.REMOVE.ALL", q, []any{string(state)}, opts)
}

// Drain deletes every pending job of queue q (RemoveAll(ctx, q, Pending);
// BullMQ's drain). Held and scheduled jobs stay.
func (c *Client) Drain(ctx context.Context, q string, opts ...BulkOption) (Bulk, error) {
	return c.RemoveAll(ctx, q, Pending, opts...)
}

// PromoteAll moves every scheduled job of queue q to pending now, due or
// not, earliest first (EMQ.PROMOTE.ALL, docs/verbs.md §4.24). Charges
// nothing. Errors: ErrLane.
func (c *Client) PromoteAll(ctx context.Context, q string, opts ...BulkOption) (Bulk, error) {
	return c.bulk(ctx, "EMQ.PROMOTE.ALL", q, nil, opts)
}

// RunNow moves scheduled job id of queue q to pending now, due or not
// (EMQ.PROMOTE.JOB, docs/verbs.md §4.24.1). Errors: ErrState (`job is not
// scheduled`), ErrStale (`job gone`), ErrLane.
func (c *Client) RunNow(ctx context.Context, q, id string) error {
	_, err := c.do(ctx, "EMQ.PROMOTE.JOB", q, id)
	return err
}
