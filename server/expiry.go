package server

import (
	"runtime"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/emqd/emqd/internal/store"
)

// Key expiry on the server side (docs/compat.md §1.7): the active expire
// cycle, and the directives the store follows (the encoding thresholds
// OBJECT ENCODING reports, proto-max-bulk-len for SETRANGE and APPEND).
//
// The cycle runs hz times a second of the server clock (so clock.Manual
// and EMQ.DEBUG CLOCK ADVANCE drive it in tests), each run doing up to
// Valkey's slow-cycle budget (25% of the period at active-expire-effort 1)
// in slices of at most expireSlice of real time under the store lock, so a
// client never waits behind it for longer than one slice.

// expireSlice is the longest the cycle holds the store lock at once.
const expireSlice = time.Millisecond

// expiry is the cycle's state (store lock).
type expiry struct {
	periodic
	// runs counts finished cycles (tests wait on it: waitExpireCycle).
	runs atomic.Int64
	// held is DEBUG SET-ACTIVE-EXPIRE 0: the cycle still ticks but
	// reclaims nothing (keys expire only when touched), as Valkey's
	// server.active_expire_enabled.
	held atomic.Bool
	// fastDue is set when the last cycle hit its time limit or left the
	// stale estimate at or above the acceptable percentage: Valkey's
	// condition for a fast cycle (fastExpireLocked). lastFast is the
	// monotonic time (ns) the last fast cycle began (store lock).
	fastDue  atomic.Bool
	lastFast int64
}

// The fast cycle's budget at active-expire-effort 1 (Valkey's
// ACTIVE_EXPIRE_CYCLE_FAST_DURATION, a quarter more per effort step): it
// runs at most once in twice that time.
const expireFastDuration = time.Millisecond

// setFastDue records whether a fast cycle is due after a cycle that
// reported more (its time limit) at the given effort (store lock held).
func (s *Server) setFastDue(more bool, effort int) {
	acceptable := float64(store.ExpireAcceptableStale(effort)) / 100
	s.exp.fastDue.Store(more || s.store.ExpiredStalePerc >= acceptable)
}

// fastExpireLocked is Valkey's fast active expire cycle (expire.c,
// ACTIVE_EXPIRE_CYCLE_FAST, which beforeSleep runs on every turn of the
// event loop): when the last cycle hit its time limit or left more than the
// acceptable share of sampled keys expired, it runs the same sampling for
// at most expireFastDuration, and not again within twice that. emqd runs it
// at the end of a client's batch, under the batch's store lock (where a
// Valkey event-loop turn ends), so a busy server with many expired keys
// reclaims them between slow cycles, as Valkey does; an idle one runs it
// after each slow cycle (hz times a second), as Valkey's first event-loop
// turn after its cron does. mono is the monotonic clock (ns).
func (s *Server) fastExpireLocked(mono int64) {
	e := s.exp
	if mono-e.lastFast < int64(2*expireFastDuration) {
		return // within the shortest spacing: no config lookup on every batch
	}
	effort := int(s.configInt("active-expire-effort"))
	dur := expireFastDuration + expireFastDuration/4*time.Duration(min(max(effort, 1), 10)-1)
	if mono-e.lastFast < int64(2*dur) || e.held.Load() || s.paused.Load() || e.stopped() {
		return
	}
	e.lastFast = mono
	st := s.store
	now := st.Now()
	st.SetNow(s.clock.NowMs())
	start := time.Now()
	more := st.ActiveExpireCycle(dur, effort)
	st.SetNow(now)
	s.setFastDue(more, effort)
	if s.latencyThreshold.Load() > 0 {
		s.latencySample("expire-cycle", time.Since(start).Milliseconds())
	}
}

// startExpiry applies the store's directives and arms the cycle (Start,
// before the AOF is replayed).
func (s *Server) startExpiry() {
	s.exp = &expiry{}
	st := s.store
	st.Lock()
	s.applyStoreConfig()
	st.Unlock()
	for _, name := range []string{"hash-max-listpack-entries", "hash-max-listpack-value",
		"zset-max-listpack-entries", "zset-max-listpack-value", "proto-max-bulk-len"} {
		s.OnConfigSet(name, func(string) error { s.applyStoreConfig(); return nil })
	}
	st.Lock()
	s.armExpireLocked()
	st.Unlock()
	s.OnClose(func() error {
		st.Lock()
		defer st.Unlock()
		s.exp.halt()
		return nil
	})
}

// applyStoreConfig copies the directives the store follows into it (store
// lock held).
func (s *Server) applyStoreConfig() {
	st := s.store
	st.SetLimits(store.Limits{
		HashEntries: s.configInt("hash-max-listpack-entries"),
		HashValue:   s.configInt("hash-max-listpack-value"),
		ZSetEntries: s.configInt("zset-max-listpack-entries"),
		ZSetValue:   s.configInt("zset-max-listpack-value"),
	})
	st.ProtoMaxBulkLen = s.configInt("proto-max-bulk-len")
}

// armExpireLocked schedules the next cycle 1000/hz ms of server clock from
// now (store lock held).
func (s *Server) armExpireLocked() { s.exp.arm(s.clock, s.hzPeriodMs(), s.expireTick) }

// expireTick runs one cycle: slices of at most expireSlice under the store
// lock while the store reports it hit its time limit, up to the slow
// cycle's budget (Valkey: 25 + 2*(effort-1) percent of 1000/hz ms).
func (s *Server) expireTick() {
	st := s.store
	hz := max(s.configInt("hz"), 1)
	effort := int(s.configInt("active-expire-effort"))
	budget := time.Duration((25+2*(effort-1))*10000/int(hz)) * time.Microsecond
	var spent time.Duration
	for first := true; ; first = false {
		st.Lock()
		if s.exp.stopped() {
			st.Unlock()
			return
		}
		if first {
			// Maps emptied by deletions are rebuilt here, where no
			// command is iterating one (internal/store/shrink.go).
			st.ShrinkMaps()
		}
		if s.exp.held.Load() || s.paused.Load() {
			s.armExpireLocked()
			st.Unlock()
			break
		}
		start := time.Now()
		st.SetNow(s.clock.NowMs())
		more := st.ActiveExpireCycle(min(expireSlice, budget-spent), effort)
		s.setFastDue(more, effort)
		spent += time.Since(start)
		if s.latencyThreshold.Load() > 0 && (!more || spent >= budget) {
			s.latencySample("expire-cycle", spent.Milliseconds())
		}
		if !more || spent >= budget {
			if s.exp.fastDue.Load() {
				// Valkey's next event-loop turn after its cron: beforeSleep's
				// fast cycle, when one is due.
				_, _, mono := timeNow()
				s.fastExpireLocked(mono)
			}
			s.armExpireLocked()
			st.Unlock()
			break
		}
		st.Unlock()
		runtime.Gosched()
	}
	s.exp.runs.Add(1)
}

// expireInfo adds the expiry fields of INFO stats (store lock held).
func (s *Server) expireInfo(add func(field, value string)) {
	st := s.store
	add("expired_keys", strconv.FormatInt(st.ExpiredKeys, 10))
	add("expired_stale_perc", strconv.FormatFloat(st.ExpiredStalePerc*100, 'f', 2, 64))
	add("expired_time_cap_reached_count", strconv.FormatInt(st.ExpiredTimeCapCount, 10))
	add("expire_cycle_cpu_milliseconds", strconv.FormatInt(st.ExpireCycleCPUMicros/1000, 10))
}
