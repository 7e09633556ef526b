package clock

import (
	"math"
	"sync/atomic"
	"testing"
	"time"
)

// TestWallAfterFuncHugeDelay: a delay past what time.Duration holds must not
// overflow into an immediate (or negative) timer.
func TestWallAfterFuncHugeDelay(t *testing.T) {
	for _, ms := range []int64{9223372036855, 18446744073710, math.MaxInt64} {
		var fired atomic.Bool
		tm := Wall{}.AfterFunc(ms, func() { fired.Store(true) })
		time.Sleep(20 * time.Millisecond)
		if !tm.Stop() || fired.Load() {
			t.Fatalf("AfterFunc(%d ms) fired at once", ms)
		}
	}
}

// TestManualFiresInOrder: timers fire once the clock reaches them, in
// deadline order, and a stopped timer never fires.
func TestManualFiresInOrder(t *testing.T) {
	m := NewManual(1000)
	got := make(chan int, 3)
	m.AfterFunc(30, func() { got <- 30 })
	m.AfterFunc(10, func() { got <- 10 })
	stopped := m.AfterFunc(20, func() { got <- 20 })
	if !stopped.Stop() {
		t.Fatal("Stop of a pending timer reported false")
	}
	m.Advance(9)
	m.Advance(30)
	if a, b := <-got, <-got; a != 10 || b != 30 {
		t.Fatalf("fired %d then %d, want 10 then 30", a, b)
	}
	if m.NowMs() != 1039 {
		t.Fatalf("NowMs = %d", m.NowMs())
	}
	select {
	case x := <-got:
		t.Fatalf("unexpected fire %d", x)
	case <-time.After(20 * time.Millisecond):
	}
}

// TestShiftedAdvanceFiresDueTimers: Advance moves the reading and fires the
// timers it makes due, and only those.
func TestShiftedAdvanceFiresDueTimers(t *testing.T) {
	base := NewManual(5000)
	s := NewShifted(base)
	got := make(chan string, 2)
	s.AfterFunc(100, func() { got <- "due" })
	s.AfterFunc(10_000, func() { got <- "late" })
	s.Advance(150)
	if now := s.NowMs(); now != 5150 {
		t.Fatalf("NowMs = %d, want 5150", now)
	}
	if x := <-got; x != "due" {
		t.Fatalf("fired %q", x)
	}
	select {
	case x := <-got:
		t.Fatalf("unexpected fire %q", x)
	case <-time.After(20 * time.Millisecond):
	}
}
