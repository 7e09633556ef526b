package verbs

import (
	"strconv"
	"strings"

	"github.com/emqd/emqd/internal/plan"
	"github.com/emqd/emqd/internal/store"
)

// Plan building: the field lists that never change are shared read-only
// slices (the store keeps value slices and never modifies them; the Feed
// copies what it records).

// newPlan returns an empty plan with room for n ops (plan.Get: apply gives
// it back).
func newPlan(n int) *plan.Plan { return plan.Get(n) }

var (
	fvStatePending   = [][]byte{fState, vPending}
	fvStateScheduled = [][]byte{fState, vScheduled}
	fvCount          = [][]byte{fCount}
	fvAttempts       = [][]byte{fAttempts}
	fvLastError      = [][]byte{fLastError}
	fvReset          = [][]byte{fLastError, fFailures, fStalled}
	fvPaused         = [][]byte{fPaused}
	fvPausedOne      = [][]byte{fPaused, vOne}
)

// smallCounts are the decimal forms of 0..99, shared read-only (a stalled
// count is almost always one of them).
var smallCounts = func() [][]byte {
	out := make([][]byte, 100)
	for i := range out {
		out[i] = strconv.AppendInt(nil, int64(i), 10)
	}
	return out
}()

// countBytes is n in decimal: a shared slice for 0..99, else a new one.
func countBytes(n int64) []byte {
	if n >= 0 && n < int64(len(smallCounts)) {
		return smallCounts[n]
	}
	return strconv.AppendInt(nil, n, 10)
}

// hset appends HSET key with fv (field, value, ...), kept as given.
func hset(p *plan.Plan, key string, fv [][]byte) {
	p.Ops = append(p.Ops, plan.Op{Kind: plan.HSet, Key: key, Fields: fv})
}

// hdel appends HDEL key fields...
func hdel(p *plan.Plan, key string, fields [][]byte) {
	p.Ops = append(p.Ops, plan.Op{Kind: plan.HDel, Key: key, Fields: fields})
}

// hincr1 appends HINCRBY key field 1 (field: a one-element static list).
func hincr1(p *plan.Plan, key string, field [][]byte) {
	p.Ops = append(p.Ops, plan.Op{Kind: plan.HIncrBy, Key: key, Fields: field, Num: 1})
}

// rowOf builds the row key of id and returns it with id as a substring of
// it (one allocation for both).
func (k *Keys) rowOf(id []byte) (rowKey, idStr string) {
	var sb strings.Builder
	sb.Grow(len(k.JobPrefix) + len(id))
	sb.WriteString(k.JobPrefix)
	sb.Write(id)
	rk := sb.String()
	return rk, rk[len(k.JobPrefix):]
}

// rowKeyStack is the longest row key rowIn builds on the stack.
const rowKeyStack = 128

// rowIn is rowOf for a job whose row d likely holds (a claim's pending
// member, a token verb's id): when d holds the row it returns the
// keyspace's own string of the row key and id as its tail, without an
// allocation (the key is built on the stack to look it up,
// store.DB.WarmKey; the stored string is immutable and lives as long as
// anything holds it); otherwise rowOf(id). Two of a job cycle's three row
// keys were built this way for a lookup and dropped (bench/README.md
// "Memory during a job cycle (issue 25, round 8)").
func (k *Keys) rowIn(d *store.DB, id []byte) (rowKey, idStr string) {
	if n := len(k.JobPrefix) + len(id); n <= rowKeyStack {
		var b [rowKeyStack]byte
		kb := append(append(b[:0], k.JobPrefix...), id...)
		if rk, _ := d.WarmKey(kb); rk != "" {
			return rk, rk[len(k.JobPrefix):]
		}
	}
	return k.rowOf(id)
}
