package server

import (
	"testing"
	"time"

	"github.com/emqd/emqd/clock"
)

// TestTimeNowPairsBothClocks: timeNow (runtime time.now, the batch's one
// clock pair in runLocked) gives the wall clock time.Now gives and the
// monotonic clock nanotime gives: each of 1,000 readings lies between the
// readings of each clock taken just before and just after it.
func TestTimeNowPairsBothClocks(t *testing.T) {
	for i := 0; i < 1000; i++ {
		w0, m0 := time.Now().UnixNano(), nanotime()
		sec, nsec, mono := timeNow()
		w1, m1 := time.Now().UnixNano(), nanotime()
		wall := sec*1e9 + int64(nsec)
		if wall < w0 || wall > w1 {
			t.Fatalf("reading %d: wall %d outside time.Now's [%d, %d]", i, wall, w0, w1)
		}
		if mono < m0 || mono > m1 {
			t.Fatalf("reading %d: mono %d outside nanotime's [%d, %d]", i, mono, m0, m1)
		}
	}
}

// TestBatchEndMsWithoutClockRead: with the wall clock, the time a batch's
// replies are stamped with (lastIO) is the batch's wall reading moved on by
// the monotonic time its commands took, so it is not before the batch
// started nor after the write; with another clock it is that clock's.
func TestBatchEndMsWithoutClockRead(t *testing.T) {
	s := &Server{wall: true, clock: clock.Wall{}}
	c := &client{s: s}
	sec, nsec, mono := timeNow()
	c.batchWall, c.batchMono = sec*1e9+int64(nsec), mono
	c.tick = mono + 2_500_000_000 // the batch's commands took 2.5 s
	if got, want := c.batchEndMs(), (c.batchWall+2_500_000_000)/1e6; got != want {
		t.Fatalf("wall clock: batchEndMs = %d, want %d (batch start %d ms + 2500)", got, want, c.batchWall/1e6)
	}
	c.tick = mono
	before := time.Now().UnixMilli()
	if got := c.batchEndMs(); got > before || got < c.batchWall/1e6 {
		t.Fatalf("wall clock, no command: batchEndMs = %d, want %d..%d", got, c.batchWall/1e6, before)
	}
	m := clock.NewManual(1_000_000)
	s.wall, s.clock = false, m
	if got := c.batchEndMs(); got != 1_000_000 {
		t.Fatalf("manual clock: batchEndMs = %d, want 1000000", got)
	}
}
