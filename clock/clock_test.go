package clock

import (
	"math"
	"slices"
	"sync"
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

// TestManualAdvanceTwiceTicksTwice: a periodic task re-arms itself from its
// callback; two moves back to back each fire it once, and each tick reads
// the time of its own move. The callback is slow (a loaded machine, a tick
// waiting for the store lock): a move that did not wait for it found no
// timer to fire, so no tick saw the second time (the TestIdleTimeout flake).
func TestManualAdvanceTwiceTicksTwice(t *testing.T) {
	m := NewManual(1000)
	var mu sync.Mutex
	var saw []int64
	var tick func()
	tick = func() {
		time.Sleep(5 * time.Millisecond) // slow, not a timing assumption: it passes however slow
		mu.Lock()
		saw = append(saw, m.NowMs())
		mu.Unlock()
		m.AfterFunc(100, tick)
	}
	m.AfterFunc(100, tick)
	for round := 0; round < 3; round++ {
		base := m.NowMs()
		m.Advance(1500)
		m.Advance(600)
		mu.Lock()
		got := append([]int64(nil), saw...)
		saw = saw[:0]
		mu.Unlock()
		if want := []int64{base + 1500, base + 2100}; !slices.Equal(got, want) {
			t.Fatalf("round %d: ticks saw %v, want %v", round, got, want)
		}
	}
}

// TestManualAdvanceReturnsAfterCallbacks: after Advance the due callbacks
// have returned, the ones they start at once included; Advance(1000) fires
// a 100 ms periodic task once (each due timer once, at the new time), not
// once per period.
func TestManualAdvanceReturnsAfterCallbacks(t *testing.T) {
	m := NewManual(0)
	var n atomic.Int64
	var tick func()
	tick = func() {
		time.Sleep(time.Millisecond)
		n.Add(1)
		m.AfterFunc(0, func() { time.Sleep(time.Millisecond); n.Add(10) })
		m.AfterFunc(100, tick)
	}
	m.AfterFunc(100, tick)
	m.Advance(1000)
	if got := n.Load(); got != 11 {
		t.Fatalf("after Advance(1000): %d, want 11 (one tick, its AfterFunc(0), both returned)", got)
	}
	m.Advance(99)
	if got := n.Load(); got != 11 {
		t.Fatalf("a timer fired early: %d", got)
	}
	m.Advance(1)
	if got := n.Load(); got != 22 {
		t.Fatalf("after Advance(1): %d, want 22", got)
	}
}

// TestShiftedFiresCountedByBase: the timers a Shifted clock's Advance fires
// run as the base Manual's callbacks, so the base's Wait (and its next
// Advance) waits for them.
func TestShiftedFiresCountedByBase(t *testing.T) {
	base := NewManual(5000)
	s := NewShifted(base)
	var done atomic.Bool
	s.AfterFunc(100, func() { time.Sleep(5 * time.Millisecond); done.Store(true) })
	s.Advance(150)
	base.Wait()
	if !done.Load() {
		t.Fatal("Wait returned before the shifted timer's callback")
	}
	var second atomic.Bool
	s.AfterFunc(10, func() { time.Sleep(5 * time.Millisecond); second.Store(true) })
	s.Advance(10)
	base.Advance(0)
	if !second.Load() {
		t.Fatal("the base's Advance did not wait for the shifted timer's callback")
	}
}

// TestWallNowMsIsTimeNow: Wall.NowMs (one gettimeofday on Linux) reads the
// same clock as time.Now: each of 1,000 readings lies between the
// time.Now().UnixMilli() read just before it and the one just after.
func TestWallNowMsIsTimeNow(t *testing.T) {
	for i := 0; i < 1000; i++ {
		before := time.Now().UnixMilli()
		got := Wall{}.NowMs()
		after := time.Now().UnixMilli()
		if got < before || got > after {
			t.Fatalf("reading %d: Wall.NowMs() = %d, outside time.Now's [%d, %d]", i, got, before, after)
		}
	}
}
