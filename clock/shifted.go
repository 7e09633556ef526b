package clock

import "sync"

// Shifted is a clock that reads its base clock plus an offset that only
// grows through Advance: the server clock of a binary started with
// enable-debug-command yes, so EMQ.DEBUG CLOCK ADVANCE can move it
// (docs/verbs.md §4.19). Timers fire at their deadline on the shifted time.
type Shifted struct {
	base Clock
	mu   sync.Mutex
	off  int64
	pend map[*shiftedTimer]struct{}
}

type shiftedTimer struct {
	c        *Shifted
	deadline int64
	f        func()
	inner    Timer
	done     bool
}

// NewShifted returns base shifted by zero.
func NewShifted(base Clock) *Shifted {
	return &Shifted{base: base, pend: make(map[*shiftedTimer]struct{})}
}

// NowMs is the base reading plus the offset.
func (s *Shifted) NowMs() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.base.NowMs() + s.off
}

// AfterFunc runs f once the shifted time reaches now+dMs.
func (s *Shifted) AfterFunc(dMs int64, f func()) Timer {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := &shiftedTimer{c: s, deadline: s.base.NowMs() + s.off + dMs, f: f}
	s.pend[t] = struct{}{}
	t.inner = s.base.AfterFunc(dMs, t.fire)
	return t
}

func (t *shiftedTimer) fire() {
	s := t.c
	s.mu.Lock()
	if t.done {
		s.mu.Unlock()
		return
	}
	t.done = true
	delete(s.pend, t)
	s.mu.Unlock()
	t.f()
}

func (t *shiftedTimer) Stop() bool {
	s := t.c
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.done {
		return false
	}
	t.done = true
	delete(s.pend, t)
	t.inner.Stop()
	return true
}

// Advance moves the clock forward by dMs (> 0) and fires the timers now
// due, each in its own goroutine started by the base clock's AfterFunc(0),
// so a Manual base counts them (its Wait returns once they have returned,
// and its next Advance waits for them). It does not wait for them itself:
// EMQ.DEBUG CLOCK ADVANCE calls it under the store lock.
func (s *Shifted) Advance(dMs int64) {
	s.mu.Lock()
	s.off += dMs
	now := s.base.NowMs() + s.off
	var due []*shiftedTimer
	for t := range s.pend {
		if t.deadline <= now {
			due = append(due, t)
		}
	}
	s.mu.Unlock()
	for _, t := range due {
		if t.inner.Stop() {
			s.base.AfterFunc(0, t.fire)
		}
	}
}
