package emq

import (
	"context"
	"math/rand/v2"
	"time"
)

// Clock is the library's source of time: heartbeats, the local lease
// deadline, the shutdown grace, the sweeper's interval, the Functions
// target's polling and the waits between resends all run on its timers.
// The default is the wall clock. A test that drives emqd on a manual clock
// gives the worker the same clock (through a small adapter), so advancing
// it fires the worker's timers too and no test has to sleep.
type Clock interface {
	// Now is the current time.
	Now() time.Time
	// AfterFunc calls f in its own goroutine once the clock has moved d
	// forward (d <= 0: as soon as possible).
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc callback.
type Timer interface {
	// Stop cancels the callback; it reports whether it was still pending.
	Stop() bool
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }
func (wallClock) AfterFunc(d time.Duration, f func()) Timer {
	return time.AfterFunc(d, f)
}

// WallClock is the system clock, the default Clock.
var WallClock Clock = wallClock{}

// sleep waits d on clk; false when ctx ended first.
func sleep(ctx context.Context, clk Clock, d time.Duration) bool {
	if ctx.Err() != nil {
		return false
	}
	ch := make(chan struct{})
	t := clk.AfterFunc(d, func() { close(ch) })
	select {
	case <-ch:
		return true
	case <-ctx.Done():
		t.Stop()
		return false
	}
}

// Exponential returns a backoff: for a job that has failed `failures`
// times before, base * 2^failures, at most max, then shortened by a random
// fraction of at most jitter (0 <= jitter <= 1; 0: no randomness), so the
// delay lies in [d*(1-jitter), d]. The worker sends it as EMQ.FAIL's
// delay_ms.
func Exponential(base, max time.Duration, jitter float64) func(failures int64) time.Duration {
	jitter = min(1, jitter)
	return func(failures int64) time.Duration {
		d := base
		for i := int64(0); i < failures && d < max; i++ {
			d *= 2
		}
		d = min(d, max)
		if jitter > 0 && d > 0 {
			d -= time.Duration(rand.Float64() * jitter * float64(d))
		}
		return d
	}
}

// DefaultBackoff is the worker's backoff unless told otherwise: 1 s doubled
// per failure, at most 1 h, with 20% jitter.
var DefaultBackoff = Exponential(time.Second, time.Hour, 0.2)
