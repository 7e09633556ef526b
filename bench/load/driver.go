package load

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emqd/emqd/emq"
	"github.com/redis/go-redis/v9"
)

// job is the driver's record of one job.
type job struct {
	id    string
	q     string    // its queue
	enqAt time.Time // first ENQUEUE sent

	mu        sync.Mutex // held across a resent ENQUEUE and to record a claim
	admitted  bool       // ENQUEUE answered the id or nil
	claimed   bool       // a worker saw the job in a CLAIM reply
	resolved  bool       // counted once in driver.resolved
	acked     int32      // EMQ.COMPLETE answered 1
	gone      int32      // a resent EMQ.COMPLETE answered "EMQSTALE job gone"
	deadSeen  bool       // FAIL answered dead, or the sweep listed it dead
	unadmitEr string     // ENQUEUE refused (an error reply) or never confirmed
}

type driver struct {
	cfg    Config
	rdb    redis.UniversalClient
	target emq.Target // Native (EMQ.*) or, on a cluster, Functions (FCALL emq_*)
	queues []string
	tag    string
	start  time.Time

	mu   sync.RWMutex
	jobs map[string]*job
	all  []*job

	next       atomic.Int64 // job numbers handed to producers
	admitted   atomic.Int64
	resolved   atomic.Int64 // jobs with a known outcome (completed or dead)
	holding    atomic.Int64 // jobs a worker holds right now
	lastDoneNs atomic.Int64 // since start, of the latest outcome

	failed, crashes, stale, recovered, stallDead, extends atomic.Int64
	lostReplyCompletions, dupAdmissions                   atomic.Int64
	restarts                                              atomic.Int64
	// restartKick receives one signal each RestartAfter outcomes (nil
	// without RestartAfter).
	restartKick chan struct{}

	probMu   sync.Mutex
	problems []string

	latMu sync.Mutex
	lat   []time.Duration

	payload string
	sup     *supervisor
}

func newDriver(cfg Config) *driver {
	d := &driver{
		cfg:     cfg,
		tag:     randString(4),
		jobs:    make(map[string]*job),
		payload: strings.Repeat("p", cfg.PayloadBytes),
		queues:  []string{cfg.Queue},
	}
	if cfg.Queues > 1 {
		d.queues = make([]string, cfg.Queues)
		for i := range d.queues {
			d.queues[i] = fmt.Sprintf("%s.%d", cfg.Queue, i)
		}
	}
	if len(cfg.Cluster) > 0 {
		d.target = emq.Functions
	}
	return d
}

// argv is verb on queue q for the driver's target: EMQ.X q args..., or
// FCALL emq_x 1 q args... (docs/cluster.md §1.2).
func (d *driver) argv(verb, q string, args ...any) []any {
	if d.target == emq.Functions {
		return append([]any{"FCALL", emq.FunctionName(verb), 1, q}, args...)
	}
	return append([]any{verb, q}, args...)
}

func (d *driver) problem(format string, args ...any) {
	d.probMu.Lock()
	defer d.probMu.Unlock()
	if len(d.problems) < 50 {
		d.problems = append(d.problems, fmt.Sprintf(format, args...))
	}
}

func (d *driver) get(id string) *job {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.jobs[id]
}

// resolve records a job's first known outcome.
func (d *driver) resolve(j *job) {
	if !j.resolved {
		j.resolved = true
		n := d.resolved.Add(1)
		if d.restartKick != nil && n%int64(d.cfg.RestartAfter) == 0 && (d.cfg.Jobs == 0 || n < int64(d.cfg.Jobs)) {
			select {
			case d.restartKick <- struct{}{}:
			default: // a restart is pending already
			}
		}
		d.lastDoneNs.Store(int64(time.Since(d.start)))
	}
}

// isReply reports whether err came from the server (an error reply, or nil)
// rather than from the transport.
// A transient refusal (a node loading, a cluster slot not served yet:
// emq.IsTransient) is not an answer: it is resent like a transport error.
func isReply(err error) bool { return emq.IsReply(err) }

func (d *driver) run(ctx context.Context) (*Result, error) {
	cfg := d.cfg
	if cfg.RestartCmd != "" {
		d.sup = &supervisor{cmdline: cfg.RestartCmd, addr: cfg.Addr, log: cfg.ServerLog}
		if cfg.RestartAfter > 0 {
			d.restartKick = make(chan struct{}, 1)
		}
		if err := d.sup.start(); err != nil {
			return nil, err
		}
		defer d.sup.stop()
	}
	d.rdb = newClient(cfg, cfg.Producers+cfg.Workers+8)
	defer d.rdb.Close()
	bg := context.Background()
	if err := d.rdb.Ping(bg).Err(); err != nil {
		return nil, fmt.Errorf("load: %s: %w", cfg.Addr+strings.Join(cfg.Cluster, ","), err)
	}
	if d.sup != nil {
		d.checkDurability(bg)
	}
	for _, q := range d.queues {
		counts, err := d.countsOf(bg, q)
		if err != nil {
			return nil, fmt.Errorf("load: EMQ.COUNTS: %w", err)
		}
		for k, v := range counts {
			if v != 0 {
				return nil, fmt.Errorf("load: queue %q is not empty (%s %d); use a fresh queue", q, k, v)
			}
		}
	}

	d.start = time.Now()
	produceCtx := ctx
	if cfg.Jobs == 0 {
		var cancel context.CancelFunc
		produceCtx, cancel = context.WithTimeout(ctx, cfg.Duration)
		defer cancel()
	}
	var prodWG, workWG, bgWG sync.WaitGroup
	for p := 0; p < cfg.Producers; p++ {
		prodWG.Add(1)
		go func() { defer prodWG.Done(); d.producer(produceCtx) }()
	}
	seed := cfg.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	workCtx, stopWorkers := context.WithCancel(context.Background())
	defer stopWorkers()
	workWG.Add(1)
	go func() { defer workWG.Done(); d.runWorkers(workCtx, seed) }()
	stopBG := make(chan struct{})
	sweepCtx, stopSweeper := context.WithCancel(context.Background())
	defer stopSweeper()
	bgWG.Add(1)
	go func() { defer bgWG.Done(); d.sweeper(sweepCtx) }()
	if cfg.Progress != nil {
		bgWG.Add(1)
		go func() { defer bgWG.Done(); d.progress(stopBG) }()
	}
	restartsDone := make(chan struct{})
	stopRestarts := make(chan struct{})
	if d.sup != nil && (cfg.RestartEvery > 0 || cfg.RestartAfter > 0) {
		go func() { defer close(restartsDone); d.restarter(stopRestarts) }()
	} else {
		close(restartsDone)
	}

	prodWG.Wait()
	drained := d.drain()
	close(stopRestarts)
	<-restartsDone
	if !drained {
		// The server was just restarted, or the drain timed out: let the
		// sweeper and workers take one more lease's worth of time.
		d.drainFor(2*time.Duration(cfg.LeaseMs)*time.Millisecond + 2*time.Second)
	}
	stopWorkers()
	workWG.Wait()
	stopSweeper()
	close(stopBG)
	bgWG.Wait()
	if cfg.Progress != nil && cfg.ProgressTTY {
		fmt.Fprintln(cfg.Progress)
	}
	return d.verify(bg)
}

// checkDurability warns (as a problem note on stderr-like progress) when the
// restarted server would lose answered writes on SIGKILL.
func (d *driver) checkDurability(ctx context.Context) {
	if d.cfg.Progress == nil {
		return
	}
	ao, err1 := d.rdb.ConfigGet(ctx, "appendonly").Result()
	af, err2 := d.rdb.ConfigGet(ctx, "appendfsync").Result()
	if err1 != nil || err2 != nil {
		return
	}
	if ao["appendonly"] != "yes" || af["appendfsync"] != "always" {
		fmt.Fprintf(d.cfg.Progress, "warning: restarts with appendonly %q appendfsync %q: answered writes may be undone by SIGKILL; the verification will report them (use --appendonly yes --appendfsync always)\n",
			ao["appendonly"], af["appendfsync"])
	}
}

// drain waits until every admitted job has an outcome and no worker holds a
// job, or DrainTimeout passes. When the driver's own records cannot settle
// (a FAIL whose reply was lost may have dead-lettered a job unseen), the
// server's counts decide: nothing pending, active or scheduled.
func (d *driver) drain() bool {
	deadline := time.Now().Add(d.cfg.DrainTimeout)
	lastCounts := time.Time{}
	for time.Now().Before(deadline) {
		if d.holding.Load() == 0 {
			if d.resolved.Load() >= d.admitted.Load() {
				return true
			}
			if time.Since(lastCounts) > 500*time.Millisecond {
				lastCounts = time.Now()
				c, err := d.counts(context.Background())
				if err == nil && c["pending"]+c["active"]+c["scheduled"] == 0 && d.holding.Load() == 0 {
					return true
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

func (d *driver) drainFor(max time.Duration) {
	saved := d.cfg.DrainTimeout
	d.cfg.DrainTimeout = max
	d.drain()
	d.cfg.DrainTimeout = saved
}

// retry resends f through transport errors (the server is down or
// restarting) until it gets a server reply or RetryFor passes. It reports
// whether any attempt failed in transport (a reply was lost).
func (d *driver) retry(f func() error) (lost bool, err error) {
	deadline := time.Now().Add(d.cfg.RetryFor)
	backoff := 10 * time.Millisecond
	for {
		err = f()
		if isReply(err) {
			return lost, err
		}
		lost = true
		if time.Now().After(deadline) {
			return lost, err
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, 200*time.Millisecond)
	}
}

func (d *driver) producer(ctx context.Context) {
	bg := context.Background()
	for {
		if ctx.Err() != nil {
			return
		}
		n := d.next.Add(1) - 1
		if d.cfg.Jobs > 0 && n >= int64(d.cfg.Jobs) {
			return
		}
		for d.admitted.Load()-d.resolved.Load() >= int64(d.cfg.MaxBacklog) {
			if ctx.Err() != nil {
				return
			}
			time.Sleep(200 * time.Microsecond)
		}
		j := &job{id: jobID(d.tag, n), q: d.queues[n%int64(len(d.queues))], enqAt: time.Now()}
		d.mu.Lock()
		d.jobs[j.id] = j
		d.all = append(d.all, j)
		d.mu.Unlock()
		attempt := 0
		lost, err := d.retry(func() error {
			j.mu.Lock()
			defer j.mu.Unlock()
			if attempt > 0 && j.claimed {
				return nil // a worker saw it claimed: it was admitted
			}
			attempt++
			return d.rdb.Do(bg, d.argv("EMQ.ENQUEUE", j.q, j.id, d.payload)...).Err()
		})
		j.mu.Lock()
		switch {
		case err == nil || errors.Is(err, redis.Nil):
			j.admitted = true
			if errors.Is(err, redis.Nil) {
				if lost {
					d.dupAdmissions.Add(1) // the lost first ENQUEUE was applied
				} else {
					d.problem("job %s: EMQ.ENQUEUE answered nil on the first send: the id already existed", j.id)
				}
			}
		case isReply(err):
			j.unadmitEr = "ENQUEUE refused: " + err.Error()
			d.problem("job %s: EMQ.ENQUEUE refused: %v", j.id, err)
		default:
			j.unadmitEr = "ENQUEUE never answered: " + err.Error()
			d.problem("job %s: EMQ.ENQUEUE never answered: %v", j.id, err)
		}
		j.mu.Unlock()
		if err == nil || errors.Is(err, redis.Nil) {
			d.admitted.Add(1)
		}
	}
}

// The workers are one emq.Worker (package emq) with Concurrency Workers:
// the library claims with BLOCK, heartbeats, fails with backoff, resends
// its outcome verbs through transport errors and reports each outcome to
// the hooks below, so the zero-loss runs test the library.

// errSimulated is a handler's simulated failure (EMQ.FAIL's last_error).
var errSimulated = errors.New("simulated failure")

// runWorkers runs the workers until ctx ends and the library has settled
// every job it held: one emq.Worker running every queue, the Workers shared
// out among them.
func (d *driver) runWorkers(ctx context.Context, seed uint64) {
	cfg := d.cfg
	c := emq.New(d.rdb, &emq.ClientOptions{Target: d.target})
	w := emq.NewWorker(c, &emq.WorkerOptions{
		Concurrency:       max(1, cfg.Workers/len(d.queues)),
		PollInterval:      cfg.PollInterval,
		LeaseDuration:     time.Duration(cfg.LeaseMs) * time.Millisecond,
		HeartbeatInterval: cfg.Heartbeat,
		MaxAttempts:       cfg.MaxAttempts,
		Backoff:           d.backoff,
		ClaimWait:         time.Duration(cfg.BlockMs) * time.Millisecond,
		ShutdownGrace:     2 * time.Duration(cfg.LeaseMs) * time.Millisecond,
		AckTimeout:        cfg.RetryFor,
		// The driver runs its own sweeper (sweepQueue), which records what
		// each sweep recovered and dead-lettered for the verification.
		StallSweepInterval: -1,
		Logger:             slog.New(&claimLog{d: d}),
		Hooks: emq.Hooks{
			Claimed: d.onClaimed,
			Heartbeat: func(*emq.Job, error) {
				d.extends.Add(1)
			},
			Done: d.onDone,
		},
	})
	var wg sync.WaitGroup
	for _, q := range d.queues {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = w.Run(ctx, q, func(ctx context.Context, j *emq.Job) error {
				return d.handle(ctx, j, seed)
			})
		}()
	}
	wg.Wait()
}

// handle is the simulated work of one run of a job: crash (drop it without
// a word), work, then fail or complete. The choice is drawn from the seed,
// the job and its token, so a run's choices repeat with its seed.
func (d *driver) handle(ctx context.Context, j *emq.Job, seed uint64) error {
	h := fnv.New64a()
	h.Write([]byte(j.ID))
	h.Write([]byte(j.Token))
	rng := rand.New(rand.NewPCG(seed, h.Sum64()))
	roll := rng.Float64()
	if roll < d.cfg.CrashRate {
		d.crashes.Add(1)
		return emq.ErrAbandon // the lease expires, the sweep recovers it
	}
	if d.cfg.Work > 0 {
		t := time.NewTimer(time.Duration(rng.Int64N(int64(2*d.cfg.Work) + 1)))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			// The lease was lost (nothing is sent) or ran out with no
			// heartbeat answered (a server restart: the worker fails the
			// job, charging one failure).
			return ctx.Err()
		}
	}
	if roll < d.cfg.CrashRate+d.cfg.FailRate {
		return errSimulated
	}
	return nil
}

// onClaimed records that a worker saw the job claimed (under the job's
// lock: see the package doc on resent ENQUEUEs).
func (d *driver) onClaimed(ej *emq.Job) {
	d.holding.Add(1)
	j := d.get(ej.ID)
	if j == nil {
		d.problem("claimed job %s that this run never enqueued", ej.ID)
		return
	}
	j.mu.Lock()
	j.claimed = true
	j.mu.Unlock()
}

// onDone records the library's outcome of one claimed job.
func (d *driver) onDone(ej *emq.Job, o emq.Outcome) {
	defer d.holding.Add(-1)
	j := d.get(ej.ID)
	if j == nil {
		return
	}
	switch o.Kind {
	case emq.Completed:
		now := time.Now()
		j.mu.Lock()
		if o.LostReply {
			// The row is gone: an applied COMPLETE deleted it, and its reply
			// was lost (see the package doc).
			d.lostReplyCompletions.Add(1)
			j.gone++
		} else {
			j.acked++
		}
		first := !j.resolved
		d.resolve(j)
		j.mu.Unlock()
		if first {
			d.latMu.Lock()
			d.lat = append(d.lat, now.Sub(j.enqAt))
			d.latMu.Unlock()
		}
	case emq.Retried:
		d.failed.Add(1)
	case emq.DeadLettered:
		d.failed.Add(1)
		j.mu.Lock()
		j.deadSeen = true
		d.resolve(j)
		j.mu.Unlock()
	case emq.LeaseLost:
		// Not ours any more (recovered by the sweep, or a lost FAIL's reply
		// that was applied): either way the job goes on.
		if !errors.Is(o.Err, emq.ErrStale) && !errors.Is(o.Err, emq.ErrState) {
			d.problem("job %s: refused: %v", ej.ID, o.Err)
		}
		d.stale.Add(1)
	case emq.Unreported:
		d.problem("job %s: no reply to its outcome within %v: %v", ej.ID, d.cfg.RetryFor, o.Err)
	case emq.Released, emq.Abandoned:
	}
}

// claimLog turns the library's claim-failure log lines into problems when
// the server refused the claim (a transport error while the server
// restarts is expected and retried).
type claimLog struct{ d *driver }

func (h *claimLog) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (h *claimLog) Handle(_ context.Context, r slog.Record) error {
	var err error
	r.Attrs(func(a slog.Attr) bool {
		if e, ok := a.Value.Any().(error); ok {
			err = e
		}
		return true
	})
	if err == nil || emq.IsReply(err) {
		h.d.problem("emq: %s: %v", r.Message, err)
	}
	return nil
}
func (h *claimLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *claimLog) WithGroup(string) slog.Handler      { return h }

func (d *driver) backoff(failures int64) time.Duration {
	b := d.cfg.BackoffBase
	for i := int64(0); i < failures && b < d.cfg.BackoffMax; i++ {
		b *= 2
	}
	return min(b, d.cfg.BackoffMax)
}

// sweeper is the library's sweeper (EMQ.STALLED.CHECK every SweepEvery),
// one per queue, recording what it recovered and what it dead-lettered.
func (d *driver) sweeper(ctx context.Context) {
	var wg sync.WaitGroup
	for _, q := range d.queues {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.sweepQueue(ctx, q)
		}()
	}
	wg.Wait()
}

func (d *driver) sweepQueue(ctx context.Context, q string) {
	c := emq.New(d.rdb, &emq.ClientOptions{Target: d.target})
	_ = c.RunSweeper(ctx, q, &emq.SweeperOptions{
		Interval:   d.cfg.SweepEvery,
		MaxStalled: d.cfg.MaxStalled,
		BatchSize:  d.cfg.SweepLimit,
		Logger:     slog.New(slog.DiscardHandler),
		OnSweep: func(rec, dead []string, err error) {
			if err != nil {
				if emq.IsReply(err) {
					d.problem("EMQ.STALLED.CHECK: %v", err)
				}
				return
			}
			d.recovered.Add(int64(len(rec)))
			d.stallDead.Add(int64(len(dead)))
			for _, id := range dead {
				if j := d.get(id); j != nil {
					j.mu.Lock()
					j.deadSeen = true
					d.resolve(j)
					j.mu.Unlock()
				}
			}
		},
	})
}

// restarter restarts the server at every tick of RestartEvery, or at every
// kick of resolve (RestartAfter), until stop.
func (d *driver) restarter(stop <-chan struct{}) {
	var tick <-chan time.Time
	if d.cfg.RestartEvery > 0 {
		t := time.NewTicker(d.cfg.RestartEvery)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-stop:
			return
		case <-tick:
		case <-d.restartKick:
		}
		if err := d.sup.restart(); err != nil {
			d.problem("restart: %v", err)
			return
		}
		d.restarts.Add(1)
	}
}

func (d *driver) progress(stop <-chan struct{}) {
	t := time.NewTicker(d.cfg.ProgressEvery)
	defer t.Stop()
	lastDone, lastT := int64(0), time.Now()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		done, now := d.resolved.Load(), time.Now()
		rate := float64(done-lastDone) / now.Sub(lastT).Seconds()
		lastDone, lastT = done, now
		total := "?"
		if d.cfg.Jobs > 0 {
			total = fmt.Sprint(d.cfg.Jobs)
		}
		line := fmt.Sprintf("%6.1fs  done %d/%s  %.0f jobs/s  in flight %d  held %d  fails %d  crashes %d  stale %d  restarts %d",
			time.Since(d.start).Seconds(), done, total, rate, d.admitted.Load()-done, d.holding.Load(),
			d.failed.Load(), d.crashes.Load(), d.stale.Load(), d.restarts.Load())
		if d.cfg.ProgressTTY {
			fmt.Fprintf(d.cfg.Progress, "\r\x1b[K%s", line)
		} else {
			fmt.Fprintln(d.cfg.Progress, line)
		}
	}
}
