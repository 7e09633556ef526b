package clock

import (
	"math"
	"sync/atomic"
	"testing"
	"time"
)

// TestWallAfterFuncHugeDelay: a delay past what time.Duration holds must not
// overflow into an immediate (or negative) timer: the timer's delay is
// clamped to about 292 years, so it is still pending.
func TestWallAfterFuncHugeDelay(t *testing.T) {
	const years290 = 290 * 365 * 24 * time.Hour
	for _, ms := range []int64{9223372036855, 18446744073710, math.MaxInt64} {
		if d := wallDelay(ms); d < years290 {
			t.Fatalf("AfterFunc(%d ms) waits %v", ms, d)
		}
		var fired atomic.Bool
		tm := Wall{}.AfterFunc(ms, func() { fired.Store(true) })
		if !tm.Stop() || fired.Load() {
			t.Fatalf("AfterFunc(%d ms) fired at once", ms)
		}
	}
	if wallDelay(-5) != 0 || wallDelay(1500) != 1500*time.Millisecond {
		t.Fatalf("wallDelay(-5) = %v, wallDelay(1500) = %v", wallDelay(-5), wallDelay(1500))
	}
}

// TestManualWait: Wait returns once the callbacks of the timers that came
// due have returned, callbacks they start included.
func TestManualWait(t *testing.T) {
	m := NewManual(0)
	var n atomic.Int64
	m.AfterFunc(10, func() {
		n.Add(1)
		m.AfterFunc(0, func() { n.Add(10) })
	})
	m.AfterFunc(20, func() { n.Add(100) })
	m.Advance(10)
	m.Wait()
	if n.Load() != 11 {
		t.Fatalf("after Advance(10) and Wait: %d, want 11", n.Load())
	}
	m.Advance(9)
	m.Wait()
	if n.Load() != 11 {
		t.Fatalf("a timer fired early: %d", n.Load())
	}
	m.Advance(1)
	m.Wait()
	if n.Load() != 111 {
		t.Fatalf("after Advance(1) and Wait: %d, want 111", n.Load())
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
