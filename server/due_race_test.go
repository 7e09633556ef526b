package server

import (
	"sync/atomic"
	"testing"

	"github.com/emqd/emqd/clock"
)

// parkJumpClock is a manual clock whose reading jumps forward the moment
// a blocked claim arms its BLOCK timeout (AfterFunc with blockMs): the
// clock moving between a claim's run and its parking, as a test's Advance
// on another goroutine or a wall clock crossing a millisecond does.
type parkJumpClock struct {
	m       *clock.Manual
	off     atomic.Int64
	blockMs int64
	jumpMs  int64
	armed   atomic.Bool
}

func (j *parkJumpClock) NowMs() int64 { return j.m.NowMs() + j.off.Load() }
func (j *parkJumpClock) AfterFunc(d int64, f func()) clock.Timer {
	if d == j.blockMs && j.armed.CompareAndSwap(true, false) {
		j.off.Add(j.jumpMs)
	}
	return j.m.AfterFunc(d, f)
}

// TestDueWhileParkingServed: a claim that ran at T and found its job due at
// T+1000 not yet due, and parked after the clock reached T+1000, is served
// at once: armDue judges a due time against the time the claim ran at, not
// a fresh reading (the TestWorkerPanicBecomesFail flake: the test's
// Advance(1000) landed while the worker's claim was between the two, and
// the claim waited for its timeout with the job due).
func TestDueWhileParkingServed(t *testing.T) {
	jc := &parkJumpClock{m: clock.NewManual(1_700_000_000_000), blockMs: 20_000, jumpMs: 1000}
	s := startServer(t, nil, jc)
	c, p := dial(t, s), dial(t, s)
	if r := c.Do("EMQ.ENQUEUE", "q", "JOB00000000001", "x", "DELAY", "1000"); r != "$14\r\nJOB00000000001\r\n" {
		t.Fatal(r)
	}
	jc.armed.Store(true)
	if ids := claimIDs(t, p.Do("EMQ.CLAIM", "q", "30000", "BLOCK", "20000")); len(ids) != 1 || ids[0] != "JOB00000000001" {
		t.Fatalf("claimed %v", ids)
	}
	if jc.armed.Load() {
		t.Fatal("the claim never parked: the clock did not jump while it did")
	}
	if r := c.Do("ZCARD", "emq:{q}:schedule"); r != ":0\r\n" {
		t.Fatalf("schedule %q", r)
	}
}
