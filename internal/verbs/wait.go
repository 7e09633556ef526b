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

// writeWaitReply writes EMQ.WAIT's answer for a finished row h: a map of
// four entries, always in this order: state (completed or dead), result
// (the row's result, nil when none), error (the row's last_error, nil when
// none), finished_at (Unix ms as stored, nil when the row lacks it).
func writeWaitReply(c *store.Ctx, h *store.Hash) {
	c.W.Map(4)
	for _, f := range [...]string{"state", "result", "last_error", "finished_at"} {
		name := f
		if f == "last_error" {
			name = "error"
		}
		c.W.BulkString(name)
		if b, ok := h.Get(f); ok {
			c.W.Bulk(b)
		} else {
			c.W.Nil()
		}
	}
}

func (vs *Verbs) cmdWait(c *store.Ctx) {
	k := vs.queueArg(c)
	if k == nil {
		return
	}
	timeout, e := intArg(c.Argv[3], 0, errNonNegTimeout)
	if e != "" {
		c.W.Error(e)
		return
	}
	rowKey, _ := k.rowOf(c.Argv[2])
	if !vs.waitOnce(c, rowKey) {
		if c.InMulti {
			// A transaction cannot wait: answer what a timeout answers, as
			// Valkey's blocking commands do (and EMQ.CLAIM BLOCK).
			c.W.NilArray()
			return
		}
		db := c.DB.Index
		c.Block = &store.BlockSpec{
			DB:        db,
			Keys:      []string{rowKey},
			AnyKind:   true,
			TimeoutMs: timeout,
			Retry: func(rc *store.Ctx) bool {
				if rc.DB == nil || rc.DB.Index != db {
					rc.DB = rc.S.DB(db)
				}
				return vs.waitOnce(rc, rowKey)
			},
		}
	}
}

// waitOnce answers c when the job of rowKey is finished, gone or the row
// refuses, and reports whether it answered.
func (vs *Verbs) waitOnce(c *store.Ctx, rowKey string) bool {
	h, done, gone, ref := waitOutcome(c.DB, rowKey)
	switch {
	case ref.Refused():
		vs.refuseReply(c, ref)
	case gone:
		c.W.Error(ErrGone)
	case done:
		writeWaitReply(c, h)
	default:
		return false
	}
	return true
}
