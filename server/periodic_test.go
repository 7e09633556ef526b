package server

import (
	"sync/atomic"
	"testing"

	"github.com/emqd/emqd/clock"
)

// TestPeriodic: a task re-arms itself each period of the server clock;
// after halt the pending tick never runs and arm does nothing.
func TestPeriodic(t *testing.T) {
	clk := clock.NewManual(1000)
	var p periodic
	var ticks atomic.Int64
	var tick func()
	tick = func() {
		ticks.Add(1)
		p.arm(clk, 100, tick) // the tests' single goroutine stands in for the store lock
	}
	p.arm(clk, 100, tick)
	for i := 0; i < 5; i++ {
		clk.Advance(100)
		clk.Wait()
	}
	if n := ticks.Load(); n != 5 {
		t.Fatalf("%d ticks in 5 periods, want 5", n)
	}
	p.halt()
	if !p.stopped() || p.t != nil {
		t.Fatal("halt left the task running")
	}
	p.arm(clk, 100, tick)
	clk.Advance(1000)
	clk.Wait()
	if n := ticks.Load(); n != 5 {
		t.Fatalf("%d ticks after halt, want still 5", n)
	}
}
