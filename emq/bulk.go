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
// SingleCall was set, or the context ended the loop), and Calls, the
// number of server calls made.
type Bulk struct {
	Done, Left int64
	Calls      int
}

// BulkOptions are the bulk actions' options (nil: loop until the set is
// empty, the server's batch size).
type BulkOptions struct {
	// BatchSize is the jobs per server call (the verb's LIMIT: 1 to
	// 10,000; 0: the server's 1,000). Larger batches make fewer round
	// trips and hold other clients back longer per call (docs/verbs.md
	// §4.24).
	BatchSize int
	// SingleCall sends the verb once: Bulk.Left then says how many members
	// remain, for a caller that paces the loop itself.
	SingleCall bool
	// MaxCalls bounds the calls of one action (0: none; the loop runs
	// until the set is empty): Bulk.Left then says how many members
	// remain (the dashboard's bound of one click).
	MaxCalls int
}

// ReprocessAllOptions are ReprocessAll's options (nil: the budgets as
// they are, and BulkOptions' defaults).
type ReprocessAllOptions struct {
	// ResetBudget gives each job a fresh retry and stall budget (as
	// ReprocessOptions.ResetBudget).
	ResetBudget bool
	BulkOptions
}

// bulk runs verb q args... [LIMIT n] until the set is empty (or once),
// summing the [done, left] replies. A call that moved nothing while
// members are left ends the loop (it cannot happen: every selected member
// leaves the set, docs/verbs.md §4.24; the check keeps a bug from spinning).
func (i *Inspector) bulk(ctx context.Context, verb, q string, args []any, o *BulkOptions) (Bulk, error) {
	if o == nil {
		o = &BulkOptions{}
	}
	if o.BatchSize != 0 {
		args = append(args, "LIMIT", o.BatchSize)
	}
	var out Bulk
	for {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		v, err := i.do(ctx, verb, q, args...)
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
		if o.SingleCall || left == 0 || done == 0 || (o.MaxCalls > 0 && out.Calls >= o.MaxCalls) {
			return out, nil
		}
	}
}

// ReprocessAll returns every dead job of queue q to pending, oldest death
// first (EMQ.REPROCESS.ALL, docs/verbs.md §4.24): with ResetBudget, each
// with a fresh retry and stall budget. A dead member
// without a row is dropped and not counted. Errors: ErrLane (a lane row:
// nothing of that call was reprocessed), the server's argument errors.
func (i *Inspector) ReprocessAll(ctx context.Context, q string, o *ReprocessAllOptions) (Bulk, error) {
	var args []any
	var bo *BulkOptions
	if o != nil {
		if o.ResetBudget {
			args = append(args, "RESET")
		}
		bo = &o.BulkOptions
	}
	return i.bulk(ctx, "EMQ.REPROCESS.ALL", q, args, bo)
}

// RemoveAllOptions are RemoveAll's and Drain's options (nil: every lane,
// and BulkOptions' defaults).
type RemoveAllOptions struct {
	// Lane, with StatePending, removes the pending jobs of that lane only
	// (EMQ.REMOVE.ALL ... LANE name; "default": the default lane's). ""
	// removes every lane's pending jobs (docs/verbs.md §4.26.6). With any
	// other state the server refuses it (ERR LANE applies to state pending
	// only) and nothing is removed; a lane name outside the queue-name
	// alphabet is refused (ERR invalid lane name); a lane with no pending
	// jobs removes nothing.
	Lane string
	BulkOptions
}

// RemoveAll deletes every job of queue q in state (StatePending: drain
// the queue, every lane's pending jobs, or one lane's with o.Lane;
// StateScheduled; StateDead; StateCompleted: the retained completed
// jobs), in the set's order (pending: the default lane's, then the other
// lanes' by name), each as Remove would (EMQ.REMOVE.ALL, docs/verbs.md
// §4.24, §4.26.6). Held (StateActive) jobs are never removed: that state,
// as any other, is refused before anything is sent. Errors: ErrState (a
// member that is also held), ErrLane, the server's argument errors.
func (i *Inspector) RemoveAll(ctx context.Context, q string, state JobState, o *RemoveAllOptions) (Bulk, error) {
	switch state {
	case StatePending, StateScheduled, StateDead, StateCompleted:
	default:
		return Bulk{}, fmt.Errorf("emq: RemoveAll of state %q: only pending, scheduled, dead and completed jobs can be removed", state)
	}
	args := []any{string(state)}
	var bo *BulkOptions
	if o != nil {
		if o.Lane != "" {
			args = append(args, "LANE", o.Lane)
		}
		bo = &o.BulkOptions
	}
	return i.bulk(ctx, "EMQ.REMOVE.ALL", q, args, bo)
}

// Drain deletes every pending job of queue q, in every lane (o.Lane: of
// that lane only) (RemoveAll(ctx, q, StatePending, o); BullMQ's drain).
// Held and scheduled jobs stay.
func (i *Inspector) Drain(ctx context.Context, q string, o *RemoveAllOptions) (Bulk, error) {
	return i.RemoveAll(ctx, q, StatePending, o)
}

// PromoteAll moves every scheduled job of queue q to pending now, due or
// not, earliest first (EMQ.PROMOTE.ALL, docs/verbs.md §4.24). Charges
// nothing. Errors: ErrLane.
func (i *Inspector) PromoteAll(ctx context.Context, q string, o *BulkOptions) (Bulk, error) {
	return i.bulk(ctx, "EMQ.PROMOTE.ALL", q, nil, o)
}

// RunNow moves scheduled job id of queue q to pending now, due or not
// (EMQ.PROMOTE.JOB, docs/verbs.md §4.24.1). Errors: ErrState (`job is not
// scheduled`), ErrStale (`job gone`), ErrLane.
func (i *Inspector) RunNow(ctx context.Context, q, id string) error {
	_, err := i.do(ctx, "EMQ.PROMOTE.JOB", q, id)
	return err
}
