package emq

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// SweeperOptions configure RunSweeper (nil: every default). Zero values
// take the defaults noted; a negative Interval, MaxStalled or BatchSize is
// refused: RunSweeper returns the error (naming each such field) before
// it sweeps, as NewWorker's Run does for WorkerOptions
// (TestNegativeSweeperOptionsRefused).
type SweeperOptions struct {
	// Interval between sweeps (default 5 s).
	Interval time.Duration
	// MaxStalled is EMQ.STALLED.CHECK's max_stalled (default 1, the verb's:
	// the first counted stall dead-letters the job; 2 or more give a
	// stalled job more runs). Use 2 or more: a claim whose reply was lost
	// in transit leaves a job leased to no worker, and its first stall
	// is then no fault of the job (README, "Workers in Go";
	// docs/verbs.md §4.11).
	MaxStalled int
	// BatchSize is EMQ.STALLED.CHECK's limit (default 100). A sweep
	// repeats the verb while it returns a full batch.
	BatchSize int
	// Clock runs the interval (default WallClock).
	Clock Clock
	// Logger receives refused sweeps (default slog.Default()).
	Logger *slog.Logger
	// OnSweep, when set, is called after each EMQ.STALLED.CHECK with its
	// result.
	OnSweep func(recovered, dead []string, err error)
	// Schedules makes each sweep also fire the queue's due schedule slots
	// (EMQ.SCHEDULE.FIRE, repeated while a call is full): how schedules
	// fire on a cluster, where no server timer does (docs/cluster.md
	// "schedule firing"). Harmless on emqd, which fires them itself. The
	// slots fire late by at most Interval.
	Schedules bool
}

// RunSweeper sends EMQ.STALLED.CHECK for queue q at once and then every
// Interval until ctx ends, and returns nil then. It is the recovery of expired leases for
// deployments that do not turn on emqd's own sweeper
// (`emq-sweep-interval-ms`); run one per queue (more are harmless: each
// expired lease is recovered once). Refusals and transport errors are
// logged and the next interval tries again.
func (c *Client) RunSweeper(ctx context.Context, q string, opts *SweeperOptions) error {
	var o SweeperOptions
	if opts != nil {
		o = *opts
	}
	if !ValidQueue(q) {
		return fmt.Errorf("emq: invalid queue name %q", q)
	}
	neg := negatives{kind: "SweeperOptions"}
	neg.check("Interval", o.Interval < 0, o.Interval)
	neg.check("MaxStalled", o.MaxStalled < 0, o.MaxStalled)
	neg.check("BatchSize", o.BatchSize < 0, o.BatchSize)
	if err := neg.err(); err != nil {
		return err
	}
	if o.Interval <= 0 {
		o.Interval = 5 * time.Second
	}
	if o.MaxStalled <= 0 {
		o.MaxStalled = 1
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 100
	}
	if o.Clock == nil {
		o.Clock = WallClock
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	bg := context.WithoutCancel(ctx)
	// The next interval's timer is armed before each sweep, so sweeps keep
	// their cadence and a test that advances its clock after OnSweep moves
	// it. The first sweep runs at once.
	for {
		tick := make(chan struct{})
		t := o.Clock.AfterFunc(o.Interval, func() { close(tick) })
		for {
			rec, dead, err := c.StalledCheck(bg, q, &StalledCheckOptions{MaxStalled: o.MaxStalled, Limit: o.BatchSize})
			if o.OnSweep != nil {
				o.OnSweep(rec, dead, err)
			}
			if err != nil {
				o.Logger.Warn("emq: EMQ.STALLED.CHECK failed", "queue", q, "err", err)
				break
			}
			if len(rec)+len(dead) < o.BatchSize || ctx.Err() != nil {
				break
			}
		}
		if o.Schedules {
			if err := c.fireAll(bg, q); err != nil {
				o.Logger.Warn("emq: schedule fire failed", "queue", q, "err", err)
			}
		}
		select {
		case <-tick:
		case <-ctx.Done():
			t.Stop()
			return nil
		}
	}
}
