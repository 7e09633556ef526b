package load

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// job is the driver's record of one job.
type job struct {
	id    string
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
	cfg   Config
	rdb   *redis.Client
	tag   string
	start time.Time

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

	probMu   sync.Mutex
	problems []string

	latMu sync.Mutex
	lat   []time.Duration

	stopWorkers chan struct{}
	payload     string
	sup         *supervisor
}

func newDriver(cfg Config) *driver {
	return &driver{
		cfg:         cfg,
		tag:         randString(4),
		jobs:        make(map[string]*job),
		stopWorkers: make(chan struct{}),
		payload:     strings.Repeat("p", cfg.PayloadBytes),
	}
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
		d.resolved.Add(1)
		d.lastDoneNs.Store(int64(time.Since(d.start)))
	}
}

// isReply reports whether err came from the server (an error reply, or nil)
// rather than from the transport.
func isReply(err error) bool {
	if err == nil || errors.Is(err, redis.Nil) {
		return true
	}
	var re redis.Error
	return errors.As(err, &re)
}

func (d *driver) run(ctx context.Context) (*Result, error) {
	cfg := d.cfg
	if cfg.RestartCmd != "" {
		d.sup = &supervisor{cmdline: cfg.RestartCmd, addr: cfg.Addr, log: cfg.ServerLog}
		if err := d.sup.start(); err != nil {
			return nil, err
		}
		defer d.sup.stop()
	}
	d.rdb = newClient(cfg, cfg.Producers+cfg.Workers+8)
	defer d.rdb.Close()
	bg := context.Background()
	if err := d.rdb.Ping(bg).Err(); err != nil {
		return nil, fmt.Errorf("load: %s: %w", cfg.Addr, err)
	}
	if d.sup != nil {
		d.checkDurability(bg)
	}
	counts, err := d.counts(bg)
	if err != nil {
		return nil, fmt.Errorf("load: EMQ.COUNTS: %w", err)
	}
	for k, v := range counts {
		if v != 0 {
			return nil, fmt.Errorf("load: queue %q is not empty (%s %d); use a fresh queue", cfg.Queue, k, v)
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
	for w := 0; w < cfg.Workers; w++ {
		workWG.Add(1)
		go func(w int) {
			defer workWG.Done()
			d.worker(rand.New(rand.NewPCG(seed, uint64(w))))
		}(w)
	}
	stopBG := make(chan struct{})
	bgWG.Add(1)
	go func() { defer bgWG.Done(); d.sweeper(stopBG) }()
	if cfg.Progress != nil {
		bgWG.Add(1)
		go func() { defer bgWG.Done(); d.progress(stopBG) }()
	}
	restartsDone := make(chan struct{})
	stopRestarts := make(chan struct{})
	if d.sup != nil && cfg.RestartEvery > 0 {
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
	close(d.stopWorkers)
	workWG.Wait()
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
		j := &job{id: jobID(d.tag, n), enqAt: time.Now()}
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
			return d.rdb.Do(bg, "EMQ.ENQUEUE", d.cfg.Queue, j.id, d.payload).Err()
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

// claimedJob is one entry of an EMQ.CLAIM reply.
type claimedJob struct {
	id, token string
	failures  int64
}

func parseClaim(v any) ([]claimedJob, error) {
	arr, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("EMQ.CLAIM reply %T %v", v, v)
	}
	out := make([]claimedJob, 0, len(arr))
	for _, e := range arr {
		t, ok := e.([]any)
		if !ok || len(t) != 4 {
			return nil, fmt.Errorf("EMQ.CLAIM entry %v", e)
		}
		id, ok1 := t[0].(string)
		tok, ok2 := t[2].(string)
		f, ok3 := t[3].(int64)
		if !ok1 || !ok2 || !ok3 {
			return nil, fmt.Errorf("EMQ.CLAIM entry %v", e)
		}
		out = append(out, claimedJob{id, tok, f})
	}
	return out, nil
}

func (d *driver) stopped() bool {
	select {
	case <-d.stopWorkers:
		return true
	default:
		return false
	}
}

func (d *driver) worker(rng *rand.Rand) {
	bg := context.Background()
	backoff := 10 * time.Millisecond
	for !d.stopped() {
		v, err := d.rdb.Do(bg, "EMQ.CLAIM", d.cfg.Queue, d.cfg.LeaseMs, "COUNT", d.cfg.ClaimCount, "BLOCK", d.cfg.BlockMs).Result()
		if errors.Is(err, redis.Nil) {
			continue // BLOCK timed out
		}
		if err != nil {
			if isReply(err) {
				d.problem("EMQ.CLAIM refused: %v", err)
			}
			// A lost CLAIM reply leaves its job leased to nobody: the
			// sweep recovers it once the lease expires.
			time.Sleep(backoff)
			backoff = min(2*backoff, 200*time.Millisecond)
			continue
		}
		backoff = 10 * time.Millisecond
		jobs, err := parseClaim(v)
		if err != nil {
			d.problem("%v", err)
			continue
		}
		d.holding.Add(int64(len(jobs)))
		for _, cj := range jobs {
			d.process(rng, cj)
			d.holding.Add(-1)
		}
	}
}

func (d *driver) process(rng *rand.Rand, cj claimedJob) {
	bg := context.Background()
	q := d.cfg.Queue
	j := d.get(cj.id)
	if j == nil {
		d.problem("claimed job %s that this run never enqueued", cj.id)
		return
	}
	j.mu.Lock()
	j.claimed = true
	j.mu.Unlock()

	roll := rng.Float64()
	if roll < d.cfg.CrashRate {
		d.crashes.Add(1)
		return // drop it without a word: the lease expires, the sweep recovers it
	}
	// Work, heartbeating.
	if d.cfg.Work > 0 {
		left := time.Duration(rng.Int64N(int64(2*d.cfg.Work) + 1))
		for left > 0 {
			step := min(left, d.cfg.Heartbeat)
			time.Sleep(step)
			left -= step
			if left <= 0 {
				break
			}
			d.extends.Add(1)
			err := d.rdb.Do(bg, "EMQ.EXTEND", q, cj.id, cj.token, d.cfg.LeaseMs).Err()
			if err != nil && isReply(err) {
				d.stale.Add(1) // the lease was recovered: someone else has it now
				return
			}
		}
	}
	if roll < d.cfg.CrashRate+d.cfg.FailRate {
		d.fail(j, cj)
		return
	}
	d.complete(j, cj)
}

func (d *driver) backoff(failures int64) time.Duration {
	b := d.cfg.BackoffBase
	for i := int64(0); i < failures && b < d.cfg.BackoffMax; i++ {
		b *= 2
	}
	return min(b, d.cfg.BackoffMax)
}

func (d *driver) fail(j *job, cj claimedJob) {
	bg := context.Background()
	delay := d.backoff(cj.failures).Milliseconds()
	var v any
	lost, err := d.retry(func() error {
		var e error
		v, e = d.rdb.Do(bg, "EMQ.FAIL", d.cfg.Queue, cj.id, cj.token, d.cfg.MaxAttempts, delay, "simulated failure").Result()
		return e
	})
	switch {
	case err == nil:
		arr, ok := v.([]any)
		if !ok || len(arr) != 2 {
			d.problem("EMQ.FAIL %s: reply %v", cj.id, v)
			return
		}
		d.failed.Add(1)
		if arr[0] == "dead" {
			j.mu.Lock()
			j.deadSeen = true
			d.resolve(j)
			j.mu.Unlock()
		} else if arr[0] != "scheduled" {
			d.problem("EMQ.FAIL %s: verdict %v", cj.id, arr[0])
		}
	case isReply(err):
		msg := err.Error()
		switch {
		case lost && msg == "EMQSTATE job is dead":
			// The lost FAIL was applied and dead-lettered the job.
			d.failed.Add(1)
			j.mu.Lock()
			j.deadSeen = true
			d.resolve(j)
			j.mu.Unlock()
		case strings.HasPrefix(msg, "EMQSTALE") || strings.HasPrefix(msg, "EMQSTATE"):
			// Not ours any more (recovered by the sweep), or the lost FAIL
			// was applied (scheduled): either way the job goes on.
			d.stale.Add(1)
		default:
			d.problem("EMQ.FAIL %s: %v", cj.id, err)
		}
	default:
		d.problem("EMQ.FAIL %s: no reply within %v: %v", cj.id, d.cfg.RetryFor, err)
	}
}

func (d *driver) complete(j *job, cj claimedJob) {
	bg := context.Background()
	lost, err := d.retry(func() error {
		return d.rdb.Do(bg, "EMQ.COMPLETE", d.cfg.Queue, cj.id, cj.token).Err()
	})
	switch {
	case err == nil:
		now := time.Now()
		j.mu.Lock()
		j.acked++
		first := !j.resolved
		d.resolve(j)
		j.mu.Unlock()
		if first {
			d.latMu.Lock()
			d.lat = append(d.lat, now.Sub(j.enqAt))
			d.latMu.Unlock()
		}
	case isReply(err):
		msg := err.Error()
		switch {
		case lost && msg == "EMQSTALE job gone":
			// The row is gone: an applied COMPLETE deleted it, and its
			// reply was lost (see the package doc).
			now := time.Now()
			d.lostReplyCompletions.Add(1)
			j.mu.Lock()
			j.gone++
			first := !j.resolved
			d.resolve(j)
			j.mu.Unlock()
			if first {
				d.latMu.Lock()
				d.lat = append(d.lat, now.Sub(j.enqAt))
				d.latMu.Unlock()
			}
		case strings.HasPrefix(msg, "EMQSTALE") || strings.HasPrefix(msg, "EMQSTATE"):
			d.stale.Add(1)
		default:
			d.problem("EMQ.COMPLETE %s: %v", cj.id, err)
		}
	default:
		d.problem("EMQ.COMPLETE %s: no reply within %v: %v", cj.id, d.cfg.RetryFor, err)
	}
}

func (d *driver) sweeper(stop <-chan struct{}) {
	bg := context.Background()
	t := time.NewTicker(d.cfg.SweepEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		for {
			v, err := d.rdb.Do(bg, "EMQ.STALLED.CHECK", d.cfg.Queue, d.cfg.MaxStalled, d.cfg.SweepLimit).Result()
			if err != nil {
				if isReply(err) {
					d.problem("EMQ.STALLED.CHECK: %v", err)
				}
				break
			}
			arr, ok := v.([]any)
			if !ok || len(arr) != 2 {
				d.problem("EMQ.STALLED.CHECK reply %v", v)
				break
			}
			rec, _ := arr[0].([]any)
			dead, _ := arr[1].([]any)
			d.recovered.Add(int64(len(rec)))
			d.stallDead.Add(int64(len(dead)))
			for _, x := range dead {
				id, _ := x.(string)
				if j := d.get(id); j != nil {
					j.mu.Lock()
					j.deadSeen = true
					d.resolve(j)
					j.mu.Unlock()
				}
			}
			if len(rec)+len(dead) < d.cfg.SweepLimit {
				break
			}
		}
		for {
			n, err := d.rdb.Do(bg, "EMQ.PROMOTE", d.cfg.Queue, d.cfg.SweepLimit).Int64()
			if err != nil {
				if isReply(err) {
					d.problem("EMQ.PROMOTE: %v", err)
				}
				break
			}
			if n < int64(d.cfg.SweepLimit) {
				break
			}
		}
	}
}

func (d *driver) restarter(stop <-chan struct{}) {
	t := time.NewTicker(d.cfg.RestartEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
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
