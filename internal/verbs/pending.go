package verbs

import (
	"github.com/emqd/emqd/internal/num"
	"github.com/emqd/emqd/internal/plan"
	"github.com/emqd/emqd/internal/store"
)

// Seam 1, "into pending" (docs/verbs.md §1.3, §4.3.1): the one way a job
// enters pending. Every verb that puts a job there (EMQ.ENQUEUE and its
// batch form, the claim's promotion, EMQ.PROMOTE, EMQ.REQUEUE, the sweep's
// recovery and the restart exemption, EMQ.REPROCESS, a schedule's fire,
// and a flow's parent release) calls intoPending, so every return to
// pending restores the job's priority (and, with lanes, its lane).

// MaxPriority bounds a job's priority: |p| <= 2^53-1, the integers a
// sorted-set score (a double) holds exactly (docs/verbs.md §1.3).
const MaxPriority = 1<<53 - 1

// ErrPriorityRange answers a PRIORITY argument outside ±MaxPriority.
const ErrPriorityRange = "ERR priority must be an integer between -9007199254740991 and 9007199254740991"

var fPriority = []byte("priority")

// priorityArg parses a PRIORITY argument: an integer (Valkey's string2ll
// rule, else ERR value is not an integer or out of range) within
// ±MaxPriority (else ErrPriorityRange).
func priorityArg(b []byte) (int64, string) {
	n, ok := num.ParseInt(b)
	if !ok {
		return 0, store.ErrNotInteger
	}
	if n < -MaxPriority || n > MaxPriority {
		return 0, ErrPriorityRange
	}
	return n, ""
}

// rowPriority is the priority a row stores (absent: 0). A value that is not
// an integer within ±MaxPriority (written by hand) is a bad row: the verb
// refuses with ERR hash value is not an integer (docs/verbs.md §2.11).
func rowPriority(row *jobRow, rowKey string) (int64, refusal) {
	if row == nil || !row.Priority.Present {
		return 0, noRefusal
	}
	n, ok := num.ParseInt(row.Priority.Val)
	if !ok || n < -MaxPriority || n > MaxPriority {
		return 0, badRow(store.ErrHashNotInt, rowKey)
	}
	return n, noRefusal
}

// checkIntoPending judges, before anything is written, whether row (of
// rowKey) can enter pending: its priority must be readable, and its lane's
// state (lt; nil: not looked at) must be. Verbs that move many jobs call
// it for each before building their plan, so a refusal writes nothing.
func checkIntoPending(lt *laneTx, row *jobRow, rowKey string) refusal {
	if _, ref := rowPriority(row, rowKey); ref.Refused() {
		return ref
	}
	if lt != nil && (lt.on || laneOf(row) != DefaultLane) {
		if _, ref := lt.lane(laneOf(row)); ref.Refused() {
			return ref
		}
	}
	return noRefusal
}

// intoPending appends the write that puts id (whose row is row) into the
// pending set of its lane: ZADD <pending> <priority> id, the score being
// the row's priority (0 when absent, so a queue without priorities writes
// the same bytes as before priorities existed), and records the lane's
// change in lt (lanes.go; flush writes it). The caller has judged the row
// with checkIntoPending.
func intoPending(p *plan.Plan, k *Keys, lt *laneTx, id string, row *jobRow) {
	prio, _ := rowPriority(row, "")
	intoPendingLane(p, k, lt, id, row, prio)
}
