package emq

import (
	"context"
	"time"
)

// LaneSettings are one lane's settings for SetLane. A zero field leaves
// the setting as it is; ResetFirst puts every setting back to its default
// before the others apply.
type LaneSettings struct {
	Weight     int           // 1..1000; default 1
	MaxActive  int           // at most this many leases held at once; -1: no cap
	RateCount  int           // at most RateCount claims ...
	RatePer    time.Duration // ... in any window of RatePer (whole ms); RateCount -1: no limit
	Pause      bool          // take the lane out of the selection
	Resume     bool          // bring it back
	ResetFirst bool          // EMQ.LANE ... RESET
}

// SetLane configures lane name of queue q (EMQ.LANE, docs/verbs.md
// §4.26.1). Errors: the server's argument errors (ERR invalid lane name,
// ERR weight must be an integer between 1 and 1000, ...).
func (i *Inspector) SetLane(ctx context.Context, q, name string, s LaneSettings) error {
	args := []any{name}
	if s.Weight != 0 {
		args = append(args, "WEIGHT", s.Weight)
	}
	switch {
	case s.MaxActive > 0:
		args = append(args, "MAX_ACTIVE", s.MaxActive)
	case s.MaxActive < 0:
		args = append(args, "MAX_ACTIVE", 0)
	}
	switch {
	case s.RateCount > 0:
		args = append(args, "RATE", s.RateCount, max(ms(s.RatePer), 1))
	case s.RateCount < 0:
		args = append(args, "RATE", 0, 1)
	}
	switch {
	case s.Pause:
		args = append(args, "PAUSE")
	case s.Resume:
		args = append(args, "RESUME")
	}
	if s.ResetFirst {
		args = append(args, "RESET")
	}
	_, err := i.do(ctx, "EMQ.LANE", q, args...)
	return err
}

// LaneState is a lane's state as EMQ.LANES names it (docs/verbs.md
// §4.26.5).
type LaneState string

// The states of a lane.
const (
	LaneReady   LaneState = "ready"   // claimable
	LaneLimited LaneState = "limited" // out of rate tokens
	LaneFull    LaneState = "full"    // at MAX_ACTIVE
	LanePaused  LaneState = "paused"  // taken out of the selection
	LaneIdle    LaneState = "idle"    // no pending job
)

// Lane is one lane as EMQ.LANES shows it (docs/verbs.md §4.26.5).
type Lane struct {
	Name      string
	State     LaneState
	Pending   int64
	Active    int64 // slots held
	Weight    int64
	MaxActive int64 // 0: no cap
	RateCount int64 // 0: no limit
	RatePer   time.Duration
	Paused    bool
}

// LanesPageMax is the largest page LanesPage asks for (EMQ.LANES' count
// bound, docs/verbs.md §4.26.5).
const LanesPageMax = 1000

// Lanes lists every lane of queue q, by name (none for a queue without
// lanes), in pages of LanesPageMax (EMQ.LANES q offset count, docs/verbs.md
// §4.26.5); a queue with many lanes costs one call per 1,000 of them. A
// lane added or removed between two pages shifts the later pages by one.
func (i *Inspector) Lanes(ctx context.Context, q string) ([]Lane, error) {
	var out []Lane
	for {
		page, err := i.LanesPage(ctx, q, &ListOptions{Offset: len(out), Count: LanesPageMax})
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if len(page) < LanesPageMax {
			return out, nil
		}
	}
}

// LanesPage lists one page of the lanes of queue q, by name, from rank
// Offset (EMQ.LANES q offset count, docs/verbs.md §4.26.5; nil: the
// verb's first page of 100): Offset >= 0, Count at most 1000, else the
// server's argument error (ERR count must be at most 1000, ...). A short
// page is the last one.
func (i *Inspector) LanesPage(ctx context.Context, q string, o *ListOptions) ([]Lane, error) {
	v, err := i.do(ctx, "EMQ.LANES", q, o.page()...)
	if err != nil {
		return nil, err
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, badReply("EMQ.LANES", v)
	}
	out := make([]Lane, 0, len(arr))
	for _, x := range arr {
		pairs, ok := asPairs(x)
		if !ok {
			return nil, badReply("EMQ.LANES", v)
		}
		var l Lane
		for _, p := range pairs {
			name, _ := asString(p[0])
			switch name {
			case "lane":
				l.Name, _ = asString(p[1])
			case "state":
				st, _ := asString(p[1])
				l.State = LaneState(st)
			default:
				n, _ := asInt(p[1])
				switch name {
				case "pending":
					l.Pending = n
				case "active":
					l.Active = n
				case "weight":
					l.Weight = n
				case "max_active":
					l.MaxActive = n
				case "rate_count":
					l.RateCount = n
				case "rate_per_ms":
					l.RatePer = time.Duration(n) * time.Millisecond
				case "paused":
					l.Paused = n != 0
				}
			}
		}
		out = append(out, l)
	}
	return out, nil
}
