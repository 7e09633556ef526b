package dashboard

import (
	"sync"

	"github.com/emqd/emqd/clock"
)

// Throughput: the server's per-queue transition totals (Options.Queues) are
// sampled every SampleEveryMs on the server clock and kept for
// SampleSlots intervals (15 minutes), per queue. A page shows the counts
// over the last 1, 5 and 15 minutes (the live totals minus the newest
// sample at least that old, or the oldest sample kept) and a bar per
// interval. A page also takes a sample itself when one is due, so what it
// shows never depends on when the timer's goroutine ran.

const (
	// SampleEveryMs is the sampling interval, ms of the server clock.
	SampleEveryMs = 30_000
	// SampleSlots is the number of intervals kept (15 minutes).
	SampleSlots = 30
)

// nCounters are the counters sampled: enqueued, completed, failed, died.
const nCounters = 4

type counters [nCounters]int64

func countersOf(q Queue) counters {
	return counters{q.Enqueued, q.Completed, q.Failed, q.Died}
}

// series is one queue's samples, in the ring's slots.
type series struct {
	v [SampleSlots + 1]counters
}

type sampler struct {
	clk    clock.Clock
	queues func() []Queue

	mu     sync.Mutex
	at     [SampleSlots + 1]int64 // sample times; ring of n entries ending at head
	n      int                    // samples kept
	head   int                    // slot of the newest sample
	series map[queueRef]*series
	timer  clock.Timer
	closed bool
}

func newSampler(clk clock.Clock, queues func() []Queue) *sampler {
	s := &sampler{clk: clk, queues: queues, series: map[queueRef]*series{}, head: -1}
	s.mu.Lock()
	s.sampleLocked(clk.NowMs())
	s.mu.Unlock()
	return s
}

// tick is the timer's callback.
func (s *sampler) tick() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.dueLocked(s.clk.NowMs())
}

// due takes a sample if one is due at now (a page calls it).
func (s *sampler) due(now int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dueLocked(now)
}

func (s *sampler) dueLocked(now int64) {
	if s.closed {
		return
	}
	if now-s.at[s.head] >= SampleEveryMs {
		s.sampleLocked(now)
	}
}

// sampleLocked records the totals at now and arms the next tick.
func (s *sampler) sampleLocked(now int64) {
	s.head = (s.head + 1) % len(s.at)
	s.at[s.head] = now
	if s.n < len(s.at) {
		s.n++
	}
	for _, q := range s.queues() {
		k := queueRef{q.DB, q.Name}
		sr := s.series[k]
		if sr == nil {
			// A queue's totals were 0 before it was first counted, so
			// the earlier samples of a new queue are zeros.
			sr = &series{}
			s.series[k] = sr
		}
		sr.v[s.head] = countersOf(q)
	}
	if s.timer != nil {
		s.timer.Stop()
	}
	s.timer = s.clk.AfterFunc(SampleEveryMs, s.tick)
}

func (s *sampler) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.timer != nil {
		s.timer.Stop()
	}
}

// Windows are the spans a page shows counts over, in ms.
var windows = [3]int64{60_000, 5 * 60_000, 15 * 60_000}

// rates are one queue's counts over the windows and per interval.
type rates struct {
	// Over[w][c]: counter c over windows[w] (or over the history kept,
	// Partial, when it is shorter).
	Over    [len(windows)]counters
	Partial [len(windows)]bool
	// Bars[i][c]: counter c during the i-th interval, oldest first.
	Bars []counters
}

// rates computes a queue's counts from its live totals cur at now.
func (s *sampler) rates(q queueRef, cur counters, now int64) rates {
	s.mu.Lock()
	defer s.mu.Unlock()
	var r rates
	sr := s.series[q]
	val := func(slot int) counters {
		if sr == nil {
			return counters{}
		}
		return sr.v[slot]
	}
	slot := func(age int) int { return (s.head - age + len(s.at)) % len(s.at) }
	for w, span := range windows {
		// The newest sample at least span old; else the oldest kept.
		base, found := slot(s.n-1), false
		for age := 0; age < s.n; age++ {
			if now-s.at[slot(age)] >= span {
				base, found = slot(age), true
				break
			}
		}
		r.Partial[w] = !found
		b := val(base)
		for c := range cur {
			r.Over[w][c] = cur[c] - b[c]
		}
	}
	// Bars: one per interval between consecutive samples, then the one in
	// progress (the live totals), oldest first.
	for age := s.n - 1; age >= 1; age-- {
		a, b := val(slot(age)), val(slot(age-1))
		var d counters
		for c := range d {
			d[c] = b[c] - a[c]
		}
		r.Bars = append(r.Bars, d)
	}
	last := val(s.head)
	var d counters
	for c := range d {
		d[c] = cur[c] - last[c]
	}
	r.Bars = append(r.Bars, d)
	return r
}
