// Package clock is the server clock: every score a verb computes comes from
// it (docs/verbs.md §4.19). The binary uses Wall; tests use Manual and advance it.
package clock

import (
	"math"
	"sort"
	"sync"
	"time"
)

// Timer is a pending callback created by AfterFunc.
type Timer interface {
	// Stop cancels the callback; it reports whether it was still pending.
	Stop() bool
}

// Clock gives the time in Unix milliseconds and fires callbacks after a
// duration measured on the same clock.
type Clock interface {
	// NowMs is the current Unix time in milliseconds.
	NowMs() int64
	// AfterFunc calls f in its own goroutine once the clock has moved d
	// milliseconds forward (d <= 0: as soon as possible).
	AfterFunc(dMs int64, f func()) Timer
}

// Wall is the system clock.
type Wall struct{}

// NowMs returns the system's wall clock in Unix milliseconds, as
// time.Now().UnixMilli() would (wallMs: on Linux one gettimeofday(2)
// through the vDSO, where time.Now reads the wall and the monotonic clock).
func (Wall) NowMs() int64 { return wallMs() }

// maxTimerMs is the longest delay a time.Duration can hold, in ms (about
// 292 years); longer delays are clamped to it rather than overflowing into
// a short or negative one.
const maxTimerMs = int64(math.MaxInt64 / int64(time.Millisecond))

// AfterFunc is time.AfterFunc; dMs is clamped to [0, ~292 years].
func (Wall) AfterFunc(dMs int64, f func()) Timer {
	return time.AfterFunc(wallDelay(dMs), f)
}

// wallDelay is dMs as a time.Duration, clamped to [0, maxTimerMs] ms.
func wallDelay(dMs int64) time.Duration {
	return time.Duration(min(max(dMs, 0), maxTimerMs)) * time.Millisecond
}

// Manual is a clock that only moves when told to. Its zero value is not
// usable; create it with NewManual. Safe for concurrent use.
type Manual struct {
	mu      sync.Mutex
	now     int64
	seq     int64
	timers  []*manualTimer
	running int       // callback goroutines started and not yet returned
	idle    sync.Cond // signalled when running drops to 0 (L is &mu)
}

type manualTimer struct {
	c   *Manual
	at  int64
	seq int64
	f   func()
	off bool
}

// NewManual returns a manual clock reading startMs (Unix ms).
func NewManual(startMs int64) *Manual {
	m := &Manual{now: startMs}
	m.idle.L = &m.mu
	return m
}

// goRun runs fs one after another in a new goroutine, counted in running
// (m.mu held).
func (m *Manual) goRun(fs ...func()) {
	m.running++
	go func() {
		for _, f := range fs {
			f()
		}
		m.mu.Lock()
		m.running--
		if m.running == 0 {
			m.idle.Broadcast()
		}
		m.mu.Unlock()
	}()
}

// Wait returns once every timer callback the clock has started (by
// Advance, Set, a due AfterFunc or a Shifted clock over it) has returned,
// the callbacks those start meanwhile included. Advance and Set wait so
// themselves; Wait is the synchronisation point after a callback started
// another way (EMQ.DEBUG CLOCK ADVANCE on a Shifted clock over this one,
// AfterFunc(0)): after it, whatever those callbacks do is done, so a
// check that something did not happen is not a guess.
func (m *Manual) Wait() {
	m.mu.Lock()
	for m.running > 0 {
		m.idle.Wait()
	}
	m.mu.Unlock()
}

// NowMs returns the clock's reading.
func (m *Manual) NowMs() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// AfterFunc registers f to run once Advance/Set moves the clock to at least
// now+dMs. With dMs <= 0 it runs f at once in its own goroutine.
func (m *Manual) AfterFunc(dMs int64, f func()) Timer {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seq++
	t := &manualTimer{c: m, at: m.now + dMs, seq: m.seq, f: f}
	if dMs <= 0 {
		t.off = true
		m.goRun(f)
		return t
	}
	m.timers = append(m.timers, t)
	return t
}

func (t *manualTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.off {
		return false
	}
	t.off = true
	for i, x := range t.c.timers {
		if x == t {
			t.c.timers = append(t.c.timers[:i], t.c.timers[i+1:]...)
			break
		}
	}
	return true
}

// Advance moves the clock forward by dMs milliseconds (negative values are
// allowed, to model a wall clock that steps back) and fires every timer now
// due (see Set).
func (m *Manual) Advance(dMs int64) { m.Set(m.NowMs() + dMs) }

// Set sets the clock to ms, fires every timer now due, in deadline order,
// from one new goroutine, and returns once every callback the clock has
// started has returned (as Wait).
//
// It first waits for the callbacks still running from earlier moves (and
// from AfterFunc(0)): a periodic task re-arms itself from its callback, so
// a move that overtook a callback still running would find no timer to
// fire and no tick would see the new time (the TestIdleTimeout flake:
// Advance(1500), Advance(600), the cron's tick re-armed after the second
// move). And it waits for the callbacks it fires, so after Advance the
// timers' work is done: a test needs no Wait between two moves nor before
// it reads what a tick did. Each due timer fires once, reading the new
// time, so a timer a callback arms lies beyond it: Advance(1000) runs a
// 100 ms periodic task once, not ten times (docs/architecture.md §9).
//
// The caller must not hold a lock a callback takes, nor be a callback
// itself: either would wait for itself. EMQ.DEBUG CLOCK ADVANCE moves a
// Shifted clock, which fires without waiting, so it may run under the
// store lock.
func (m *Manual) Set(ms int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for m.running > 0 {
		m.idle.Wait()
	}
	m.now = ms
	var due, keep []*manualTimer
	for _, t := range m.timers {
		if t.at <= ms {
			t.off = true
			due = append(due, t)
		} else {
			keep = append(keep, t)
		}
	}
	m.timers = keep
	sort.Slice(due, func(i, j int) bool {
		if due[i].at != due[j].at {
			return due[i].at < due[j].at
		}
		return due[i].seq < due[j].seq
	})
	if len(due) == 0 {
		return
	}
	// Callbacks run outside the caller's goroutine, one after another in
	// order; m.idle.Wait releases m.mu, so they may read the clock and arm
	// timers.
	fs := make([]func(), len(due))
	for i, t := range due {
		fs[i] = t.f
	}
	m.goRun(fs...)
	for m.running > 0 {
		m.idle.Wait()
	}
}
