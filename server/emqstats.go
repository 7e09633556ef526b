package server

import (
	"strconv"
	"sync/atomic"

	"github.com/emqd/emqd/internal/store"
	"github.com/emqd/emqd/internal/verbs"
)

// Observability (docs/architecture.md §6): the EMQ.* transition accounting (verbs.Stats),
// the "# EMQ" INFO section, the opt-in sweeper's own counts, the
// Prometheus endpoint (metrics.go) and the rate-limited log lines
// (logging.go). It starts after the start hooks, so the append-only
// file's replay counts nothing.

// observability is the server's part of it; s.obs is set under the store
// lock once, before the listener opens.
type observability struct {
	stats *verbs.Stats
	// The opt-in sweeper's jobs (docs/verbs.md §4.11; a part of the
	// stall counts, which also count the sweeps clients send).
	sweepRecovered, sweepDead atomic.Int64
	metrics                   *metricsServer // nil: metrics-addr is empty
	refusedLog, protoLog      rateLog
	authLog                   rateLog // failed authentications (auth.go)
}

// EMQStats is the server's transition accounting (the verbs count into it
// once Start has replayed the append-only file). Nil before that.
func (s *Server) EMQStats() *verbs.Stats {
	if s.obs == nil {
		return nil
	}
	return s.obs.stats
}

// startObservability installs the accounting, learns the queues already
// in the keyspace, adds the EMQ INFO section and opens the metrics
// endpoint (metrics-addr).
func (s *Server) startObservability() error {
	o := &observability{stats: verbs.NewStats()}
	s.store.Lock()
	discoverQueues(s, o.stats)
	s.obs = o
	s.verbs.SetStats(o.stats)
	s.store.Unlock()
	s.SetInfoSection("emq", s.emqInfo)
	if addr := s.Config("metrics-addr"); addr != "" {
		m, err := startMetrics(s, addr)
		if err != nil {
			return err
		}
		o.metrics = m
		s.OnClose(m.close)
	}
	return nil
}

// discoverQueues registers every queue that has one of its set, counter
// or meta keys in the keyspace (verbs.ParseQueueKey; job rows are not
// looked at), store lock held, once, at boot.
func discoverQueues(s *Server, st *verbs.Stats) {
	for d := 0; d < s.store.NumDBs(); d++ {
		db := s.store.DB(d)
		if db.Len() == 0 {
			continue
		}
		db.Keys(func(key string, _ *store.Value) bool {
			if q, _, ok := verbs.ParseQueueKey(key); ok {
				st.Known(d, q)
			}
			return true
		})
	}
}

// queuePruneEveryMs is how often (server clock) the clients cron forgets
// the known queues that have no key left (pruneQueuesLocked).
const queuePruneEveryMs = 10_000

// pruneQueuesLocked forgets, every queuePruneEveryMs, the known queues
// none of whose set, counter, meta or schedule keys is in the keyspace any
// more (the keys discoverQueues looks at), and registers the keyspace's
// queues again when a queue was turned away while MaxTrackedQueues were
// known (docs/operations.md §2.5). Store lock held; its cost is a few map
// lookups per known queue (at most 10,000 queues, ~11 keys each).
func (s *Server) pruneQueuesLocked(now int64) {
	st := s.EMQStats()
	if st == nil {
		return
	}
	if s.lastQueuePrune == 0 {
		s.lastQueuePrune = now // the first prune is a period after boot
	}
	if now-s.lastQueuePrune < queuePruneEveryMs {
		return
	}
	s.lastQueuePrune = now
	_, rescan := st.Prune(func(d int, q string) bool {
		if d >= s.store.NumDBs() {
			return true
		}
		db := s.store.DB(d)
		k := verbs.NewKeys(q)
		for _, key := range [...]string{k.Pending, k.Active, k.Schedule, k.Dead, k.Completed, k.Failed,
			k.Meta, k.Done, k.Sched, k.Waiting, k.LanesKnown} {
			if db.Peek(key) != nil {
				return false
			}
		}
		return true
	})
	if rescan {
		discoverQueues(s, st)
	}
}

// emqInfo generates INFO's "# EMQ" section: the queues known (seen by a
// verb since start, or present at boot), the transition totals since
// start (names as verbs.Transition), the refusals caused by stored data
// (docs/verbs.md §2.11) and the opt-in sweeper's share of the stall counts.
func (s *Server) emqInfo(add func(field, value string)) {
	i := func(k string, v int64) { add(k, strconv.FormatInt(v, 10)) }
	st := s.EMQStats()
	if st == nil {
		return
	}
	i("emq_queues", int64(st.NumQueues()))
	i("emq_queue_latency_max_ms", s.maxQueueLatencyMs(st))
	i("emq_waiting_parents", s.waitingParents(st))
	lanes, slots := s.laneTotals(st)
	i("emq_lanes", lanes)
	i("emq_lane_slots", slots)
	for t := verbs.Transition(0); t < verbs.NumTransitions; t++ {
		i("emq_"+t.String(), st.Total(t))
	}
	_, _, lagMax := st.SchedLag()
	i("emq_schedule_lag_p99_ms", max(st.SchedLagQuantileMs(0.99), 0))
	i("emq_schedule_lag_max_ms", lagMax)
	i("emq_bad_row_refusals", s.verbs.BadRowRefusals())
	i("emq_sweep_interval_ms", s.configInt("emq-sweep-interval-ms"))
	i("emq_sweep_recovered", s.obs.sweepRecovered.Load())
	i("emq_sweep_dead", s.obs.sweepDead.Load())
	i("emq_contained_panics", s.statPanics)
}

// sweepMark reads the stall totals before one sweep call (store lock).
func (s *Server) sweepMark() (recovered, dead int64) {
	st := s.EMQStats()
	if st == nil {
		return 0, 0
	}
	return st.Total(verbs.StallRecovered), st.Total(verbs.StallDead)
}

// sweepNote counts and logs what one sweep call of queue q in db did,
// given sweepMark's reading before it (store lock).
func (s *Server) sweepNote(db int, q string, recovered0, dead0 int64) {
	st := s.EMQStats()
	if st == nil {
		return
	}
	rec := st.Total(verbs.StallRecovered) - recovered0
	dead := st.Total(verbs.StallDead) - dead0
	if rec == 0 && dead == 0 {
		return
	}
	s.obs.sweepRecovered.Add(rec)
	s.obs.sweepDead.Add(dead)
	s.log.Info("Stalled-job sweep", "db", db, "queue", q, "recovered", rec, "dead", dead)
}

// waitingParents is the number of flow parents waiting on children over
// the known queues (INFO's emq_waiting_parents; docs/verbs.md §4.25): the
// sizes of their emq:{q}:waiting sets, read under the store lock.
func (s *Server) waitingParents(st *verbs.Stats) int64 {
	var n int64
	for _, q := range st.Queues() {
		if q.DB >= s.store.NumDBs() {
			continue
		}
		if z, _ := s.store.DB(q.DB).LookupZSet(verbs.NewKeys(q.Queue).Waiting); z != nil {
			n += int64(z.Len())
		}
	}
	return n
}

// laneTotals is the number of lanes and of lane slots held over the
// known queues (INFO's emq_lanes and emq_lane_slots; docs/verbs.md
// §4.26.5), read under the store lock.
func (s *Server) laneTotals(st *verbs.Stats) (lanes, slots int64) {
	for _, q := range st.Queues() {
		if q.DB >= s.store.NumDBs() {
			continue
		}
		lanes += int64(verbs.LaneCounts(s.store.DB(q.DB), verbs.NewKeys(q.Queue), func(_ string, _, active int64) {
			slots += active
		}))
	}
	return lanes, slots
}

// maxQueueLatencyMs is the largest EMQ.COUNTS latency_ms over the known
// queues (INFO's emq_queue_latency_max_ms; docs/verbs.md §4.16): how long
// the most waited-on next job of any queue has waited. INFO runs under the
// store lock (a command, or InfoText), so it reads the keyspace directly.
func (s *Server) maxQueueLatencyMs(st *verbs.Stats) int64 {
	qs := st.Queues()
	var m int64
	now := s.clock.NowMs()
	for _, q := range qs {
		if q.DB >= s.store.NumDBs() {
			continue
		}
		m = max(m, verbs.QueueLatencyMs(s.store.DB(q.DB), verbs.NewKeys(q.Queue), now))
	}
	return m
}
