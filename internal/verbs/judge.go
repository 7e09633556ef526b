package verbs

import (
	"math"

	"github.com/emqd/emqd/internal/num"
	"github.com/emqd/emqd/internal/store"
)

// What the judgements of several families share (docs/architecture.md
// §2.5): each judgement takes what its verb's read pass saw,
// `now`, the run_id and the parsed arguments, and returns a verdict and the
// write plan, or a Refusal. A refusal comes with no plan: nothing is written
// (docs/verbs.md §2.2).

// Refusal is a verb's "no" (docs/architecture.md §2.6): Text is the full
// error reply ("ERR ...", "WRONGTYPE ...", "LEASE_LOST ..."), exactly what
// the wire answers. Bad marks a refusal caused by stored data (a wrong
// type, a lane row, a counter HINCRBY would refuse: docs/verbs.md §2.11),
// Key the key holding that data. A refusal wrote nothing: keyspace,
// append-only file, counters and events are as before the call. The typed
// verb methods return it as their error (always a *Refusal or nil).
type Refusal struct {
	Text string
	Key  string
	Bad  bool
}

// Error is the error reply's text.
func (r *Refusal) Error() string { return r.Text }

// refusal is the judgements' spelling of a Refusal (a value: the zero one,
// noRefusal, is "no refusal"; a typed method hands out a *Refusal).
type refusal = Refusal

// Refused reports whether r is a refusal.
func (r refusal) Refused() bool { return r.Text != "" }

var noRefusal refusal

func refuse(text string) refusal { return refusal{Text: text} }

func badRow(text, key string) refusal { return refusal{Text: text, Key: key, Bad: true} }

func wrongType(key string) refusal { return badRow(store.ErrWrongType, key) }

func kindCheck(k keyKind, key string) refusal {
	if k == keyWrong {
		return wrongType(key)
	}
	return noRefusal
}

// counterCheck judges a metrics hash that will get n HINCRBY count 1.
func counterCheck(c counter, key string, n int64) refusal {
	if c.Kind == keyWrong {
		return wrongType(key)
	}
	if _, e := nextCount(c.Count, n); e != "" {
		return badRow(e, key)
	}
	return noRefusal
}

// nextCount applies HINCRBY's rule (docs/verbs.md §2.5; Valkey t_hash.c) to a
// stored counter incremented by incr (> 0): a missing field counts as 0; a
// value string2ll refuses gives "ERR hash value is not an integer"; a sum
// beyond int64 gives "ERR increment or decrement would overflow".
func nextCount(f rowField, incr int64) (int64, string) {
	var cur int64
	if f.Present {
		n, ok := num.ParseInt(f.Val)
		if !ok {
			return 0, store.ErrHashNotInt
		}
		cur = n
	}
	if cur > 0 && incr > math.MaxInt64-cur {
		return 0, store.ErrOverflow
	}
	return cur + incr, ""
}

// MaxScoreMs is the latest time (Unix ms, about 285,000 years from 1970) a
// verb writes as a score: 2^53-1, the largest integer a sorted-set score (an
// IEEE double) holds exactly, so EMQ.JOB's lease_deadline_ms and run_at_ms
// read back what was computed. Later times are saturated to it.
const MaxScoreMs = 1<<53 - 1

// addMs is now+d saturated at MaxScoreMs (a score that never comes due
// rather than one that wraps into the past or loses precision). d >= 0.
func addMs(now, d int64) int64 {
	if d > 0 && now > MaxScoreMs-d {
		return MaxScoreMs
	}
	return min(now+d, MaxScoreMs)
}

// atMs is an absolute run_at_ms saturated at MaxScoreMs.
func atMs(ms int64) int64 { return min(ms, MaxScoreMs) }
