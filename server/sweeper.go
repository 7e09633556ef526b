package server

import (
	"github.com/emqd/emqd/internal/resp"
	"github.com/emqd/emqd/internal/store"
	"github.com/emqd/emqd/internal/verbs"
)

// The opt-in stalled-job sweep (docs/verbs.md §4.11: "emqd's own opt-in
// sweeper"): every
// emq-sweep-interval-ms (0: off) of the server clock, for every queue that
// has an active set in any database, the server calls verbs.StalledCheck
// (EMQ.STALLED.CHECK q <emq-max-stalled>) under the store lock, with the
// effects of a client's command (recorded in the append-only file, counted,
// waking blocked claimers) and no argv through the registry.

func (s *Server) startSweeper() {
	s.store.Lock()
	defer s.store.Unlock()
	s.armSweepLocked()
}

func (s *Server) stopSweeper() {
	s.store.Lock()
	defer s.store.Unlock()
	s.sweep.halt()
}

func (s *Server) armSweepLocked() {
	iv := s.configInt("emq-sweep-interval-ms")
	if iv <= 0 {
		iv = 1000 // look again later in case CONFIG SET turns it on
	}
	s.sweep.arm(s.clock, iv, s.sweepTick)
}

func (s *Server) sweepTick() {
	s.store.Lock()
	defer s.store.Unlock()
	if s.sweep.stopped() {
		return
	}
	// CLIENT PAUSE (WRITE or ALL) holds the sweep as Valkey holds its
	// active expiry during a pause: the dataset does not change until the
	// pause ends (pause.go); the next tick after it sweeps.
	if s.configInt("emq-sweep-interval-ms") > 0 && !s.paused.Load() {
		s.sweepOnce()
	}
	s.armSweepLocked()
}

// verbUnit runs f, one in-process verb call of the sweeper or the
// schedule timer (what: "stalled-job sweep", "schedule timer"; name: its
// command line for the log), as a unit (panics.go): it reports false when
// f panicked before writing (logged; the caller goes on with the next
// queue).
func (s *Server) verbUnit(what, name string, f func()) (ok bool) {
	m0 := s.store.Mutations()
	defer func() {
		if r := recover(); r != nil {
			s.contained(r, m0, what, name, "")
			ok = false
		}
	}()
	f()
	return true
}

// sweepOnce calls verbs.StalledCheck for every queue with an active set
// (store lock held), with emq-max-stalled and the default limit, as
// `EMQ.STALLED.CHECK q <emq-max-stalled>` from a client: counted in INFO
// commandstats, recorded in the append-only file by that command line.
func (s *Server) sweepOnce() {
	e := s.reg.lookupFullName("emq.stalled.check")
	if e == nil || e.handler == nil {
		return // renamed away (rename-command): the sweep is off too
	}
	maxStalled := s.configInt("emq-max-stalled")
	var w resp.Writer
	w.Proto = 2
	x := s.newCtx(&w)
	for d := 0; d < s.store.NumDBs(); d++ {
		db := s.store.DB(d)
		var queues []string
		db.Keys(func(key string, v *store.Value) bool {
			if q, part, ok := verbs.ParseQueueKey(key); ok && part == verbs.PartActive && v.Kind == store.KindZSet {
				queues = append(queues, q)
			}
			return true
		})
		for _, q := range queues {
			a := verbs.StalledCheckArgs{Queue: q, MaxStalled: maxStalled}
			x.ResetForCommand(nil)
			x.DB = db
			x.NowMs = s.clock.NowMs()
			s.store.SetNow(x.NowMs)
			w.Reset()
			r0, d0 := s.sweepMark()
			var err error
			if !s.verbUnit("stalled-job sweep", "EMQ.STALLED.CHECK "+q, func() { _, err = s.verbs.StalledCheck(&x, &a) }) {
				continue
			}
			s.sweepNote(d, q, r0, d0)
			e.calls++
			s.statCmds++
			if x.Changed() && !x.Propagated() && s.store.Persisting() {
				s.store.Record(d, [][][]byte{a.Argv()})
			}
			if err != nil {
				s.log.Warn("stalled-job sweep refused", "db", d, "queue", q, "reply", err.Error())
			}
		}
	}
	s.blk.serveReady(s)
}
