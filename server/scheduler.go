package server

import (
	"container/heap"
	"errors"
	"strings"

	"github.com/emqd/emqd/clock"
	"github.com/emqd/emqd/internal/resp"
	"github.com/emqd/emqd/internal/store"
	"github.com/emqd/emqd/internal/verbs"
)

// The schedule timer (docs/verbs.md §4.22.4). Every queue's schedules
// live in its sorted set emq:{q}:sched, scored by next fire time. The
// server keeps one entry per (db, queue) holding that set's least score,
// in a min-heap, and ONE clock timer armed at the heap's minimum: no
// polling, no scan of the schedules per tick. An entry is re-read when the
// set is written (store.Observer.KeyChanged, so verbs, plain commands, the AOF
// replay, MOVE/COPY; SWAPDB rescans its databases), at the end of the
// batch or timer callback that wrote it (serveReady). When the timer
// passes, the server calls verbs.ScheduleFire (EMQ.SCHEDULE.FIRE q) for
// every due queue, with the effects of a client's command: the plan of each is one record of the append-only
// file, which is committed (fsynced under appendfsync always) before the
// callback returns, and its occurrences wake blocked claimers.

// schedFiresPerTick bounds the queues one timer callback fires before it
// lets go of the store lock (it re-arms at once when more are due).
const schedFiresPerTick = 64

// schedStuckMs is how long a queue whose EMQ.SCHEDULE.FIRE wrote nothing
// while a schedule was due (a refusal: a bad row) waits before the next
// try.
const schedStuckMs = 1000

type schedEntry struct {
	k   queueKey
	at  int64
	idx int
}

type schedHeap []*schedEntry

func (h schedHeap) Len() int           { return len(h) }
func (h schedHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h schedHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx, h[j].idx = i, j
}
func (h *schedHeap) Push(x any) {
	e := x.(*schedEntry)
	e.idx = len(*h)
	*h = append(*h, e)
}
func (h *schedHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	e.idx = -1
	return e
}

// scheduler is the server's schedule index and timer (store lock held for
// every field).
type scheduler struct {
	entries  map[queueKey]*schedEntry
	h        schedHeap
	dirty    map[queueKey]bool
	rescan   map[int]bool
	stuck    map[queueKey]int64
	timer    clock.Timer
	armedAt  int64
	armed    bool
	gen      uint64
	started  bool
	stopped  bool
	firesRun int64 // EMQ.SCHEDULE.FIRE calls the timer made
}

func newScheduler() *scheduler {
	return &scheduler{
		entries: make(map[queueKey]*schedEntry),
		dirty:   make(map[queueKey]bool),
		rescan:  make(map[int]bool),
		stuck:   make(map[queueKey]int64),
	}
}

// schedKeyWritten is called from onKeyReady with every written key: a
// queue's emq:{q}:sched marks the queue for a re-read.
func (s *Server) schedKeyWritten(db int, key string) {
	if !strings.HasSuffix(key, ":"+verbs.PartSched) {
		return
	}
	q, part, ok := verbs.ParseQueueKey(key)
	if !ok || part != verbs.PartSched {
		return
	}
	s.sched.dirty[queueKey{db: db, queue: q}] = true
}

// schedDBReplaced is called from onDBReady (SWAPDB).
func (s *Server) schedDBReplaced(db int) { s.sched.rescan[db] = true }

// schedFlush re-reads the marked queues and re-arms the timer (store lock
// held; serveReady calls it at the end of every batch and timer callback).
func (s *Server) schedFlush() {
	sc := s.sched
	if len(sc.rescan) == 0 && len(sc.dirty) == 0 {
		// Nothing to look at (every batch calls this): no map iteration
		// is started, and the timer is armed as the loops below would
		// leave it.
		s.schedArm()
		return
	}
	for db := range sc.rescan {
		delete(sc.rescan, db)
		for k := range sc.entries {
			if k.db == db {
				sc.dirty[k] = true
			}
		}
		s.store.DB(db).Keys(func(key string, v *store.Value) bool {
			if !strings.HasSuffix(key, ":"+verbs.PartSched) {
				return true
			}
			if q, part, ok := verbs.ParseQueueKey(key); ok && part == verbs.PartSched {
				sc.dirty[queueKey{db: db, queue: q}] = true
			}
			return true
		})
	}
	for k := range sc.dirty {
		delete(sc.dirty, k)
		at, ok := int64(0), false
		if v := s.store.DB(k.db).Peek(verbs.NewKeys(k.queue).Sched); v != nil && v.Kind == store.KindZSet {
			if it, has := v.ZSet.Min(); has && it.Score < verbs.MaxScoreMs {
				// A score below 0 (ZADD -inf or -1e19 by hand) is due now;
				// int64 of it would overflow the timer's delay.
				at, ok = 0, true
				if it.Score > 0 {
					at = int64(it.Score)
				}
			}
		}
		if st, has := sc.stuck[k]; has {
			if !ok {
				delete(sc.stuck, k)
			} else if at < st {
				at = st
			}
		}
		e := sc.entries[k]
		switch {
		case !ok && e != nil:
			heap.Remove(&sc.h, e.idx)
			delete(sc.entries, k)
		case ok && e == nil:
			e = &schedEntry{k: k, at: at}
			sc.entries[k] = e
			heap.Push(&sc.h, e)
		case ok:
			e.at = at
			heap.Fix(&sc.h, e.idx)
		}
	}
	s.schedArm()
}

// schedArm arms the one timer at the heap's minimum.
func (s *Server) schedArm() {
	sc := s.sched
	if !sc.started || sc.stopped {
		return
	}
	if len(sc.h) == 0 {
		if sc.armed {
			sc.timer.Stop()
			sc.armed = false
		}
		return
	}
	at := sc.h[0].at
	if sc.armed && sc.armedAt == at {
		return
	}
	if sc.armed {
		sc.timer.Stop()
	}
	sc.gen++
	gen := sc.gen
	sc.armed, sc.armedAt = true, at
	sc.timer = s.clock.AfterFunc(at-s.clock.NowMs(), func() { s.schedTick(gen) })
}

// schedTick fires every due queue (at most schedFiresPerTick), then
// commits what it wrote.
func (s *Server) schedTick(gen uint64) {
	s.store.Lock()
	sc := s.sched
	if sc.stopped || gen != sc.gen {
		s.store.Unlock()
		return
	}
	sc.armed = false
	if s.paused.Load() {
		// CLIENT PAUSE holds the schedules' fires as it holds the active
		// expiry (pause.go): look again when the pause is due to end;
		// CLIENT UNPAUSE re-arms at once (unpauseLocked).
		sc.gen++
		gen := sc.gen
		sc.armed, sc.armedAt = true, -1
		sc.timer = s.clock.AfterFunc(max(s.pause.until-s.clock.NowMs(), 1), func() { s.schedTick(gen) })
		s.store.Unlock()
		return
	}
	e := s.reg.lookupFullName("emq.schedule.fire")
	wrote := false
	if e != nil && e.handler != nil {
		var w resp.Writer
		w.Proto = 2
		x := s.newCtx(&w)
		for n := 0; n < schedFiresPerTick && len(sc.h) > 0; n++ {
			now := s.clock.NowMs()
			top := sc.h[0]
			if top.at > now {
				break
			}
			k := top.k
			heap.Pop(&sc.h)
			delete(sc.entries, k)
			sc.dirty[k] = true
			a := verbs.ScheduleFireArgs{Queue: k.queue}
			x.ResetForCommand(nil)
			x.DB = s.store.DB(k.db)
			x.NowMs = now
			s.store.SetNow(now)
			w.Reset()
			var err error
			if !s.verbUnit("schedule timer", "EMQ.SCHEDULE.FIRE "+k.queue, func() { _, err = s.verbs.ScheduleFire(&x, &a) }) {
				sc.stuck[k] = now + schedStuckMs
				continue
			}
			e.calls++
			s.statCmds++
			sc.firesRun++
			if x.Changed() {
				wrote = true
				delete(sc.stuck, k)
				if !x.Propagated() && s.store.Persisting() {
					s.store.Record(k.db, [][][]byte{a.Argv()})
				}
			} else {
				sc.stuck[k] = now + schedStuckMs
			}
			// A refusal caused by stored data (a malformed schedule hash)
			// is counted and logged by the verbs once per key per minute
			// (docs/verbs.md §2.11); logging it here too would repeat it
			// every schedStuckMs for as long as the hash stays broken.
			var ref *verbs.Refusal
			if err != nil && !(errors.As(err, &ref) && ref.Bad) {
				s.log.Warn("schedule fire refused", "db", k.db, "queue", k.queue, "reply", err.Error())
			}
		}
	}
	s.blk.serveReady(s) // wakes claimers, re-reads the fired queues, re-arms
	s.store.Unlock()
	if wrote {
		if f := s.commit.Load(); f != nil {
			if err := (*f)(); err != nil {
				s.log.Warn("schedule fire: the append-only file could not be committed", "err", err)
			}
		}
	}
}

// startScheduler finds every queue with schedules and arms the timer. It
// scans each database once rather than trusting the keys the boot marked:
// an RDB load (dump.rdb, or the RDB preamble of the append-only file)
// restores keys without the write notifications an AOF command replay
// gives, so schedules loaded that way would never fire
// (TestScheduleExactlyOnceAcrossKills: slots missed after a kill during a
// rewrite, once aof-use-rdb-preamble became the default).
func (s *Server) startScheduler() {
	s.store.Lock()
	defer s.store.Unlock()
	s.sched.started = true
	for db := 0; db < s.store.NumDBs(); db++ {
		s.sched.rescan[db] = true
	}
	s.schedFlush()
}

func (s *Server) stopScheduler() {
	s.store.Lock()
	defer s.store.Unlock()
	s.sched.stopped = true
	if s.sched.armed {
		s.sched.timer.Stop()
		s.sched.armed = false
	}
}
