package verbs

import (
	"github.com/emqd/emqd/internal/store"
)

// EMQ.WAIT q id timeout_ms (docs/verbs.md §4.23): waits until job id of
// queue q is completed or dead and answers its outcome.

var errNonNegTimeout = errNonNegative("timeout_ms")

// waitOutcome reads id's row (rowKey) as EMQ.WAIT judges it: done reports
// a finished job (state completed or dead), gone a missing row; a row of
// another type refuses with WRONGTYPE.
func waitOutcome(d *store.DB, rowKey string) (h *store.Hash, done, gone bool, ref refusal) {
	h, kind := hashKind(d, rowKey)
	if kind == keyWrong {
		return nil, false, false, wrongType(rowKey)
	}
	if h == nil {
		return nil, false, true, noRefusal
	}
	st, _ := h.Get("state")
	s := string(st)
	return h, s == "completed" || s == "dead", false, noRefusal
}

// WaitResult is EMQ.WAIT's answer (docs/verbs.md §4.23) from one look at
// the job's row: Finished is false while the job is neither completed nor
// dead (the adapter then blocks and looks again). Once finished: State
// (completed or dead), and Result, Error (the row's last_error) and
// FinishedAt (Unix ms as stored), each with its Has flag (false: the row
// lacks it, the reply's nil). The bytes are views of the store
// (docs/architecture.md §2.5.1).
type WaitResult struct {
	Finished                     bool
	State                        []byte
	Result, Error, FinishedAt    []byte
	HasResult, HasError, HasTime bool
}

// Wait is one attempt of EMQ.WAIT q id (docs/verbs.md §4.23): the job's
// outcome if it has finished. Refusals: ErrGone when the job has no row, a
// row key of the wrong type. It never blocks (blocking belongs to the
// connection, as for Claim: docs/architecture.md §2.5.1).
func (vs *Verbs) Wait(c *store.Ctx, j *JobRef) (WaitResult, error) {
	_, rowKey := vs.jobRefKeys(j)
	h, done, gone, ref := waitOutcome(c.DB, rowKey)
	switch {
	case ref.Refused():
		return WaitResult{}, vs.refused(c, ref)
	case gone:
		return WaitResult{}, vs.refused(c, refuse(ErrGone))
	case !done:
		return WaitResult{}, nil
	}
	r := WaitResult{Finished: true}
	r.State, _ = h.Get("state")
	r.Result, r.HasResult = h.Get("result")
	r.Error, r.HasError = h.Get("last_error")
	r.FinishedAt, r.HasTime = h.Get("finished_at")
	return r, nil
}

// writeWaitReply writes EMQ.WAIT's answer for a finished job: a map of
// four entries, always in this order: state, result, error, finished_at
// (nil where the row lacks the field).
func writeWaitReply(c *store.Ctx, r *WaitResult) {
	w := c.W
	w.Map(4)
	w.BulkString("state")
	w.Bulk(r.State)
	for _, f := range [...]struct {
		name string
		v    []byte
		ok   bool
	}{{"result", r.Result, r.HasResult}, {"error", r.Error, r.HasError}, {"finished_at", r.FinishedAt, r.HasTime}} {
		w.BulkString(f.name)
		if f.ok {
			w.Bulk(f.v)
		} else {
			w.Nil()
		}
	}
}

func (vs *Verbs) cmdWait(c *store.Ctx) {
	j, ok := vs.parseJobRef(c)
	if !ok {
		return
	}
	timeout, e := intArg(c.Argv[3], 0, errNonNegTimeout)
	if e != "" {
		c.W.Error(e)
		return
	}
	if !vs.waitOnce(c, &j) {
		if c.InMulti {
			// A transaction cannot wait: answer what a timeout answers, as
			// Valkey's blocking commands do (and EMQ.CLAIM BLOCK).
			c.W.NilArray()
			return
		}
		db := c.DB.Index
		c.Block = &store.BlockSpec{
			DB:        db,
			Keys:      []string{j.row},
			AnyKind:   true,
			TimeoutMs: timeout,
			Retry: func(rc *store.Ctx) bool {
				if rc.DB == nil || rc.DB.Index != db {
					rc.DB = rc.S.DB(db)
				}
				return vs.waitOnce(rc, &j)
			},
		}
	}
}

// waitOnce answers c when the job j is finished, gone or its row refuses,
// and reports whether it answered.
func (vs *Verbs) waitOnce(c *store.Ctx, j *JobRef) bool {
	r, err := vs.Wait(c, j)
	switch {
	case err != nil:
		replyRefusal(c, err)
	case r.Finished:
		writeWaitReply(c, &r)
	default:
		return false
	}
	return true
}
