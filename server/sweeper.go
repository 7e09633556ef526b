package server

import (
	"strconv"

	"github.com/emqd/emqd/internal/resp"
	"github.com/emqd/emqd/internal/store"
	"github.com/emqd/emqd/internal/verbs"
)

// The opt-in stalled-job sweep (docs/verbs.md §4.11: "emqd's own opt-in
// sweeper"): every
// emq-sweep-interval-ms (0: off) of the server clock, for every queue that
// has an active set in any database, the server runs
// EMQ.STALLED.CHECK q <emq-max-stalled> under the store lock, exactly as a
// client's command (propagated to the append-only file, waking blocked
// claimers).

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
	if s.configInt("emq-sweep-interval-ms") > 0 {
		s.sweepOnce()
	}
	s.armSweepLocked()
}

// sweepUnit runs one queue's EMQ.STALLED.CHECK as a unit (panics.go): it
// reports false when the handler panicked before writing (logged; the
// sweep goes on with the next queue).
func (s *Server) sweepUnit(e *command, x *store.Ctx, queue string) (ok bool) {
	m0 := s.store.Mutations()
	defer func() {
		if r := recover(); r != nil {
			s.contained(r, m0, "stalled-job sweep", "EMQ.STALLED.CHECK "+queue, "")
			ok = false
		}
	}()
	e.handler(x)
	return true
}

// sweepOnce runs EMQ.STALLED.CHECK for every queue with an active set
// (store lock held).
func (s *Server) sweepOnce() {
	e := s.reg.lookupFullName("emq.stalled.check")
	if e == nil || e.handler == nil {
		return
	}
	max := []byte(s.Config("emq-max-stalled"))
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
			argv := [][]byte{[]byte("EMQ.STALLED.CHECK"), []byte(q), max}
			x.ResetForCommand(argv)
			x.DB = db
			x.NowMs = s.clock.NowMs()
			s.store.SetNow(x.NowMs)
			w.Reset()
			r0, d0 := s.sweepMark()
			if !s.sweepUnit(e, &x, q) {
				continue
			}
			s.sweepNote(d, q, r0, d0)
			e.calls++
			s.statCmds++
			if x.Changed() && !x.Propagated() && s.store.Persisting() {
				s.store.Record(d, [][][]byte{argv})
			}
			if len(w.Buf) > 0 && w.Buf[0] == '-' {
				s.log.Warn("stalled-job sweep refused", "db", d, "queue", q, "reply", strconv.Quote(string(w.Buf)))
			}
		}
	}
	s.blk.serveReady(s)
}
