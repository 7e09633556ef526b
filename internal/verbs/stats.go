package verbs

import (
	"sort"
	"sync"
	"sync/atomic"

	"github.com/emqd/emqd/internal/store"
)

// Transition accounting (docs/architecture.md §6): every verb that applies
// its plan counts the job state changes the plan made, per queue of a
// database. A refusal applies nothing and counts nothing. The counts live
// in the Stats the server hands its Verbs (SetStats); before that (the
// append-only file's replay) nothing is counted.

// Transition is one kind of counted job state change.
type Transition uint8

// The counted transitions. Names (Transition.String) are the INFO field
// suffixes (emq_<name>) and the Prometheus transition label.
const (
	Enqueued         Transition = iota // EMQ.ENQUEUE created a row (a duplicate id counts nothing)
	Claimed                            // EMQ.CLAIM handed a job out (one per job, BLOCK wake-ups included)
	Completed                          // EMQ.COMPLETE
	Failed                             // EMQ.FAIL, either verdict (retried or dead)
	FailedDead                         // the EMQ.FAIL verdicts that dead-lettered (a subset of Failed)
	StallRecovered                     // EMQ.STALLED.CHECK sent back to pending (exempt leases included)
	StallDead                          // EMQ.STALLED.CHECK dead-lettered
	Promoted                           // scheduled -> pending, by EMQ.PROMOTE or by EMQ.CLAIM's own promotion
	Requeued                           // EMQ.REQUEUE
	Delayed                            // EMQ.DELAY
	Reprocessed                        // EMQ.REPROCESS (dead -> pending)
	Removed                            // EMQ.REMOVE removed a job
	SchedFired                         // a schedule's slot enqueued its occurrence (EMQ.SCHEDULE.FIRE)
	SchedSkipped                       // a slot not enqueued: OVERLAP skip, the previous occurrence still ran
	SchedMissed                        // a late slot not enqueued: CATCHUP none or one
	TrimmedCompleted                   // retention dropped a retained completed job (docs/verbs.md §4.21)
	TrimmedDead                        // retention dropped a dead job (never silent: counted here)
	FlowReleased                       // a flow parent left waiting for pending (docs/verbs.md §4.25)
	FlowDead                           // a flow parent died of a child's death (ON_CHILD_FAIL fail)
	NumTransitions
)

var transitionNames = [NumTransitions]string{
	"enqueued", "claimed", "completed", "failed", "failed_dead", "stall_recovered", "stall_dead",
	"promoted", "requeued", "delayed", "reprocessed", "removed",
	"schedule_fired", "schedule_skipped", "schedule_missed",
	"trimmed_completed", "trimmed_dead", "flow_released", "flow_dead",
}

// String is the transition's name ("enqueued", "stall_dead", ...).
func (t Transition) String() string {
	if t < NumTransitions {
		return transitionNames[t]
	}
	return "unknown"
}

// MaxTrackedQueues bounds the queues a Stats counts one by one (queue
// names come from clients); transitions of further queues still count in
// the totals.
const MaxTrackedQueues = 10000

// QueueStats are the counters of one queue of one database.
type QueueStats struct {
	DB    int
	Queue string
	n     [NumTransitions]atomic.Int64
}

// Count is the number of t transitions of the queue since the server
// started.
func (q *QueueStats) Count(t Transition) int64 { return q.n[t].Load() }

type queueID struct {
	db int
	q  string
}

// Stats is one server's transition accounting. The verbs add to it under
// the store lock; Total, Queues and QueueStats.Count may be read from any
// goroutine.
type Stats struct {
	mu     sync.Mutex
	queues map[queueID]*QueueStats
	// overflowed: Known turned a queue away because MaxTrackedQueues were
	// known (Prune's caller rescans the keyspace once room is made).
	overflowed bool
	total      [NumTransitions]atomic.Int64
	// lag counts fired occurrences by their lag (now - slot, ms) in the
	// buckets SchedLagBucketsMs (the last one: above them all).
	lag    [len(SchedLagBucketsMs) + 1]atomic.Int64
	lagSum atomic.Int64
	lagMax atomic.Int64
	// gen counts the Prunes that forgot a queue: a QueueStats a Keys
	// cached (knownFor) is current while gen is what it was then.
	gen atomic.Uint64
}

// SchedLagBucketsMs are the upper bounds (ms, inclusive) of the schedule
// lag histogram: INFO's emq_schedule_lag_p99_ms is the bound of the bucket
// holding the 99th percentile, /metrics exports the histogram
// (docs/verbs.md §4.22.7).
var SchedLagBucketsMs = [...]int64{0, 1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 60000}

// schedLag counts one fired occurrence of lag ms.
func (s *Stats) schedLag(ms int64) {
	i := 0
	for i < len(SchedLagBucketsMs) && ms > SchedLagBucketsMs[i] {
		i++
	}
	s.lag[i].Add(1)
	s.lagSum.Add(ms)
	for {
		m := s.lagMax.Load()
		if ms <= m || s.lagMax.CompareAndSwap(m, ms) {
			break
		}
	}
}

// SchedLag returns the lag histogram: per-bucket counts (not cumulative;
// the last is above every bound), the sum and the largest lag, in ms.
func (s *Stats) SchedLag() (counts []int64, sumMs, maxMs int64) {
	counts = make([]int64, len(s.lag))
	for i := range s.lag {
		counts[i] = s.lag[i].Load()
	}
	return counts, s.lagSum.Load(), s.lagMax.Load()
}

// SchedLagQuantileMs is the upper bound of the bucket holding quantile q
// (0..1) of the fired occurrences' lags, capped at the largest lag (-1:
// none fired).
func (s *Stats) SchedLagQuantileMs(q float64) int64 {
	counts, _, mx := s.SchedLag()
	var n int64
	for _, c := range counts {
		n += c
	}
	if n == 0 {
		return -1
	}
	rank := int64(float64(n)*q + 0.999999)
	if rank < 1 {
		rank = 1
	}
	var acc int64
	for i, c := range counts {
		acc += c
		if acc >= rank {
			if i < len(SchedLagBucketsMs) {
				// The bucket's bound, but never above the largest lag seen.
				return min(SchedLagBucketsMs[i], mx)
			}
			return mx
		}
	}
	return mx
}

// NewStats returns empty accounting.
func NewStats() *Stats { return &Stats{queues: make(map[queueID]*QueueStats)} }

// Total is the number of t transitions over every queue and database.
func (s *Stats) Total(t Transition) int64 { return s.total[t].Load() }

// Known registers queue q of db without counting anything (the server
// does it at boot for the queues already in the keyspace) and returns its
// counters (nil once MaxTrackedQueues are known).
func (s *Stats) Known(db int, q string) *QueueStats {
	id := queueID{db, q}
	s.mu.Lock()
	defer s.mu.Unlock()
	qs := s.queues[id]
	if qs == nil {
		if len(s.queues) >= MaxTrackedQueues {
			s.overflowed = true
			return nil
		}
		qs = &QueueStats{DB: db, Queue: q}
		s.queues[id] = qs
	}
	return qs
}

// Prune forgets every known queue for which gone reports true (the server
// passes "none of its keys is in the keyspace", docs/operations.md §2.5),
// and reports how many it forgot and whether a queue was turned away
// while the table was full since the last Prune that made room (the
// caller then registers the keyspace's queues again). Without it a client
// that once touched MaxTrackedQueues names would hide every later queue
// from INFO, /metrics and the dashboard until a restart.
func (s *Stats) Prune(gone func(db int, q string) bool) (forgot int, rescan bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id := range s.queues {
		if gone(id.db, id.q) {
			delete(s.queues, id)
			forgot++
		}
	}
	if forgot > 0 {
		s.gen.Add(1)
	}
	if s.overflowed && len(s.queues) < MaxTrackedQueues {
		s.overflowed, rescan = false, true
	}
	return forgot, rescan
}

// NumQueues is the number of queues known.
func (s *Stats) NumQueues() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queues)
}

// Queues lists the known queues ordered by database, then name.
func (s *Stats) Queues() []*QueueStats {
	s.mu.Lock()
	out := make([]*QueueStats, 0, len(s.queues))
	for _, q := range s.queues {
		out = append(out, q)
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].DB != out[j].DB {
			return out[i].DB < out[j].DB
		}
		return out[i].Queue < out[j].Queue
	})
	return out
}

// add counts n transitions t of k's queue in db (store lock held).
func (s *Stats) add(db int, k *Keys, t Transition, n int64) {
	s.total[t].Add(n)
	if qs := s.knownFor(db, k); qs != nil {
		qs.n[t].Add(n)
	}
}

// knownFor is Known of k's queue in db through the counters k cached:
// Known takes the lock and hashes the queue for every transition (a job
// cycle counts three, 2.3% of the pipelined cycle's server CPU in a
// profile). The cache is k's (the verbs' key cache, under the store lock)
// and holds while it is of s, of db, and no Prune forgot a queue since (a
// forgotten queue's counters are registered anew, as Known would); a
// queue turned away (nil) is not cached.
func (s *Stats) knownFor(db int, k *Keys) *QueueStats {
	g := s.gen.Load()
	if k.qs != nil && k.qsOf == s && k.qsDB == db && k.qsGen == g {
		return k.qs
	}
	qs := s.Known(db, k.Queue)
	k.qs, k.qsOf, k.qsDB, k.qsGen = qs, s, db, g
	return qs
}

// count adds n transitions t of k's queue to the server's accounting, if
// it has one. Call it after the plan was applied.
func (vs *Verbs) count(c *store.Ctx, k *Keys, t Transition, n int) {
	if n <= 0 || vs.stats == nil {
		return
	}
	vs.stats.add(c.DB.Index, k, t, int64(n))
}
