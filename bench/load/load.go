// Package load is the core of the emqd load driver (bench/cmd/emqload):
// producers and workers against a real emqd address, with failures, worker
// crashes and (optionally) SIGKILL restarts of the server, and a verification
// at the end that no job was lost or completed twice.
//
// # The run
//
// Producers admit jobs with EMQ.ENQUEUE and client-supplied ids (idempotent
// admission). The workers are the emq library's Worker (Concurrency
// Workers): it claims with EMQ.CLAIM ... BLOCK, heartbeats with EMQ.EXTEND
// while the handler works, and completes (EMQ.COMPLETE) or fails (EMQ.FAIL
// with max_attempts and a backoff computed from the `failures` the claim
// returned) as the handler says; the handler may also crash: drop the job
// without a word (emq.ErrAbandon), leaving its lease to expire. The
// library's sweeper sends EMQ.STALLED.CHECK (max_stalled large by default,
// so crashed jobs are recovered rather than dead-lettered) on an interval.
// The run stops after Jobs jobs (or Duration), then drains: waits until
// every admitted job is completed or dead.
//
// # What "completed exactly once" means, across crashes
//
// A job is completed when one EMQ.COMPLETE for it was applied: that deletes
// its row. The driver records, per job, how many EMQ.COMPLETE calls answered
// 1 ("acked") and how many had their reply lost (the connection died with
// the server) and, resent with the same token once the server was back,
// answered `EMQSTALE job gone` ("gone"). The rules it relies on:
//
//   - Only an applied EMQ.COMPLETE deletes a row (the driver sends no
//     EMQ.REMOVE), and a deleted row is never re-created: a producer resends
//     an ENQUEUE whose reply was lost only while no worker has seen the job
//     claimed, and it holds the job's lock while the resend is in flight,
//     which a worker takes before it records the claim. A job can only be
//     completed after a worker saw its claim, so a resent ENQUEUE always
//     meets the row (and answers nil, a duplicate) or nothing (first
//     admission).
//   - So at most one EMQ.COMPLETE per job is ever applied. A resent COMPLETE
//     that answers 1 means the lost one was not applied; one that answers
//     `job gone` means the row was deleted by an applied COMPLETE whose reply
//     was lost (ours, or another holder's after a recovery; either way
//     exactly one).
//
// Verification, per job, against its row (EMQ.JOB) at the end: no row and
// exactly one acked COMPLETE, or no row, none acked and at least one "gone":
// completed exactly once. Two acked: a duplicate. A row in state `dead` with
// a `last_error`: dead with a reason. No row and no completion: lost. A row
// in any other state: left over. Then EMQ.COUNTS must show nothing pending,
// active or scheduled, `completed` equal to the completed jobs and `dead` and
// `failed` equal to the dead ones.
//
// Across SIGKILL restarts these rules hold only if an answered write is
// durable: run emqd with `--appendonly yes --appendfsync always`. With
// `everysec` a kill can undo up to a second of answered writes (an admitted
// job vanishes, or an acked completion comes back and is completed again),
// and the verification reports exactly that.
package load

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"math/big"
	"time"

	"github.com/redis/go-redis/v9"
)

// Config is one load run. Zero values take the defaults noted.
type Config struct {
	// Addr is emqd's host:port (this or Cluster is required).
	Addr string
	// Cluster, instead of Addr, names nodes (host:port, any of them) of a
	// Valkey/Redis Cluster whose primaries have the emq FUNCTION library
	// loaded (docs/cluster.md): the driver then speaks to it through a
	// go-redis ClusterClient with the emq library's Functions target (FCALL
	// emq_x 1 q ...; an idle worker polls, PollInterval). Killing and
	// restarting its nodes is the caller's (RestartCmd is emqd's).
	Cluster []string
	// Queues spreads the jobs over this many queues (default 1): with more
	// than one, the queues are Queue.0 ... Queue.<n-1> and job n goes to
	// queue n%Queues; on a cluster they hash to slots all over it. Workers
	// are shared out among the queues (at least one each).
	Queues int
	// PollInterval is the longest wait of an idle worker between two claims
	// on the Functions target, which cannot block (default 100 ms).
	PollInterval time.Duration
	// Password is sent with AUTH when set (requirepass).
	Password string
	// Queue is the queue name (default: "load-" and a random suffix, so a
	// run starts from an empty queue). The queue must be empty at start.
	Queue string
	// Jobs is the number of jobs to produce; 0 means produce until Duration.
	Jobs int
	// Duration bounds the producing phase when Jobs is 0.
	Duration time.Duration
	// Producers (default 4) are goroutines, each with its own connection
	// while it works; Workers (default 16) is the worker's Concurrency.
	Producers, Workers int
	// PayloadBytes is the payload size (default 64).
	PayloadBytes int
	// Work is the mean simulated work per job (uniform in [0, 2*Work]).
	Work time.Duration
	// LeaseMs is the claim's lease_ms (default 2000).
	LeaseMs int
	// Heartbeat is how often a working worker sends EMQ.EXTEND (default
	// LeaseMs/3).
	Heartbeat time.Duration
	// BlockMs is the claim's BLOCK block_ms (default 500); the worker claims
	// COUNT as many jobs as it has free slots.
	BlockMs int
	// FailRate is the probability that a worker fails a job it holds
	// (EMQ.FAIL); CrashRate that it drops it without a word.
	FailRate, CrashRate float64
	// MaxAttempts is EMQ.FAIL's max_attempts (default 5).
	MaxAttempts int
	// BackoffBase and BackoffMax give the retry delay for a job that has
	// failed f times: min(BackoffBase << f, BackoffMax) (defaults 10 ms, 1 s).
	BackoffBase, BackoffMax time.Duration
	// SweepEvery is the sweeper's interval (default 250 ms).
	SweepEvery time.Duration
	// MaxStalled is EMQ.STALLED.CHECK's max_stalled (default 1000, so a
	// crashed job is recovered, not dead-lettered).
	MaxStalled int
	// SweepLimit is the limit of EMQ.STALLED.CHECK (100).
	SweepLimit int
	// MaxBacklog bounds admitted but unfinished jobs; producers wait above
	// it (default 20 per worker).
	MaxBacklog int
	// DrainTimeout bounds the wait for the last jobs after producing
	// (default 30 s plus 3 leases).
	DrainTimeout time.Duration
	// RetryFor bounds how long one call is resent through transport errors
	// (default 60 s).
	RetryFor time.Duration
	// RestartCmd, when set, is a shell command that starts emqd listening on
	// Addr; the driver starts it itself (and stops it at the end).
	RestartCmd string
	// RestartEvery, with RestartCmd, kills that emqd with SIGKILL at this
	// interval while the load runs and starts the command again.
	RestartEvery time.Duration
	// RestartAfter, with RestartCmd, kills that emqd with SIGKILL each time
	// this many more jobs have a known outcome (completed or dead) and
	// starts the command again: the number of restarts of a run of Jobs jobs
	// is (Jobs-1)/RestartAfter whatever the machine's speed, where
	// RestartEvery's depends on it. It excludes RestartEvery.
	RestartAfter int
	// ServerLog receives the output of RestartCmd (default: discarded).
	ServerLog io.Writer
	// Progress receives progress lines (nil: none); ProgressTTY makes it one
	// line rewritten in place; ProgressEvery is the interval (default 250 ms
	// on a TTY, 5 s otherwise).
	Progress      io.Writer
	ProgressTTY   bool
	ProgressEvery time.Duration
	// Seed seeds the workers' random choices (0: random).
	Seed uint64
}

func (c *Config) defaults() error {
	if c.Addr == "" && len(c.Cluster) == 0 {
		return errors.New("load: Addr or Cluster is required")
	}
	if c.Addr != "" && len(c.Cluster) > 0 {
		return errors.New("load: Addr and Cluster exclude each other")
	}
	if len(c.Cluster) > 0 && c.RestartCmd != "" {
		return errors.New("load: RestartCmd restarts emqd; with Cluster the caller kills and restarts nodes")
	}
	if c.Jobs < 0 || (c.Jobs == 0 && c.Duration <= 0) {
		return errors.New("load: set Jobs > 0 or a Duration")
	}
	if c.FailRate < 0 || c.CrashRate < 0 || c.FailRate+c.CrashRate > 1 {
		return errors.New("load: FailRate and CrashRate must be >= 0 with a sum <= 1")
	}
	if c.RestartEvery > 0 && c.RestartCmd == "" {
		return errors.New("load: RestartEvery needs RestartCmd")
	}
	if c.RestartAfter < 0 {
		return errors.New("load: RestartAfter must be >= 0")
	}
	if c.RestartAfter > 0 && c.RestartCmd == "" {
		return errors.New("load: RestartAfter needs RestartCmd")
	}
	if c.RestartAfter > 0 && c.RestartEvery > 0 {
		return errors.New("load: RestartAfter and RestartEvery exclude each other")
	}
	def := func(p *int, v int) {
		if *p <= 0 {
			*p = v
		}
	}
	defd := func(p *time.Duration, v time.Duration) {
		if *p <= 0 {
			*p = v
		}
	}
	if c.Queue == "" {
		c.Queue = "load-" + randString(8)
	}
	def(&c.Queues, 1)
	defd(&c.PollInterval, 100*time.Millisecond)
	def(&c.Producers, 4)
	def(&c.Workers, 16)
	if c.PayloadBytes < 0 {
		c.PayloadBytes = 0
	} else if c.PayloadBytes == 0 {
		c.PayloadBytes = 64
	}
	def(&c.LeaseMs, 2000)
	defd(&c.Heartbeat, time.Duration(c.LeaseMs)*time.Millisecond/3)
	def(&c.BlockMs, 500)
	def(&c.MaxAttempts, 5)
	defd(&c.BackoffBase, 10*time.Millisecond)
	defd(&c.BackoffMax, time.Second)
	defd(&c.SweepEvery, 250*time.Millisecond)
	def(&c.MaxStalled, 1000)
	def(&c.SweepLimit, 100)
	def(&c.MaxBacklog, 20*c.Workers)
	defd(&c.DrainTimeout, 30*time.Second+3*time.Duration(c.LeaseMs)*time.Millisecond)
	defd(&c.RetryFor, 60*time.Second)
	if c.ProgressEvery <= 0 {
		c.ProgressEvery = 5 * time.Second
		if c.ProgressTTY {
			c.ProgressEvery = 250 * time.Millisecond
		}
	}
	if c.ServerLog == nil {
		c.ServerLog = io.Discard
	}
	return nil
}

// Result is what a run did and what the verification found.
type Result struct {
	// Queue is Config.Queue; Queues the queues the jobs were spread over.
	Queue  string
	Queues []string
	// Enqueued is the number of jobs admitted (ENQUEUE answered the id, or
	// nil for a resend whose first reply was lost).
	Enqueued int
	// Completed and Dead are the verified outcomes.
	Completed, Dead int
	// Failed counts EMQ.FAIL calls that were applied; Crashes the jobs
	// dropped on purpose; Stale the refusals a worker got for a job it no
	// longer held (its lease was recovered); Recovered and StallDead what the
	// sweeps reported; Extends the heartbeats sent.
	Failed, Crashes, Stale, Recovered, StallDead, Extends int64
	// CompletedLostReply counts completions known only by "job gone" after
	// a lost reply; DupAdmissions ENQUEUE resends answered nil.
	CompletedLostReply, DupAdmissions int64
	// Restarts is the number of SIGKILL restarts of the server.
	Restarts int
	// Elapsed runs from the start to the last job's outcome.
	Elapsed time.Duration
	// JobsPerSec is (Completed+Dead)/Elapsed.
	JobsPerSec float64
	// P50, P99, P999 are enqueue-to-complete latencies of completed jobs
	// (from the first ENQUEUE sent to the COMPLETE's reply).
	P50, P99, P999 time.Duration
	// Counts is the final EMQ.COUNTS reply.
	Counts map[string]int64
	// Lost, Duplicates and LeftOver list job ids (at most 20 each; the
	// numbers are in the N fields); Problems lists every other finding.
	Lost, Duplicates, LeftOver    []string
	NLost, NDuplicates, NLeftOver int
	Problems                      []string
}

// OK reports whether the verification found nothing wrong.
func (r *Result) OK() bool {
	return r.NLost == 0 && r.NDuplicates == 0 && r.NLeftOver == 0 && len(r.Problems) == 0
}

// Summary is the human-readable report of the run.
func (r *Result) Summary() string {
	name := "queue " + r.Queue
	if len(r.Queues) > 1 {
		name = fmt.Sprintf("queues %s .. %s", r.Queues[0], r.Queues[len(r.Queues)-1])
	}
	s := fmt.Sprintf("%s: %d enqueued, %d completed, %d dead in %v: %.0f jobs/s\n",
		name, r.Enqueued, r.Completed, r.Dead, r.Elapsed.Round(time.Millisecond), r.JobsPerSec)
	s += fmt.Sprintf("latency enqueue->complete: p50 %v  p99 %v  p999 %v\n",
		r.P50.Round(time.Microsecond), r.P99.Round(time.Microsecond), r.P999.Round(time.Microsecond))
	s += fmt.Sprintf("fails %d  crashes %d  stale %d  extends %d  sweep recovered %d, dead %d  restarts %d  completions known by reply loss %d  duplicate admissions %d\n",
		r.Failed, r.Crashes, r.Stale, r.Extends, r.Recovered, r.StallDead, r.Restarts, r.CompletedLostReply, r.DupAdmissions)
	s += fmt.Sprintf("EMQ.COUNTS %v\n", r.Counts)
	if r.OK() {
		s += "verified: every job completed exactly once or dead with a reason; nothing left\n"
		return s
	}
	s += fmt.Sprintf("VERIFICATION FAILED: %d lost %v, %d completed twice %v, %d left over %v\n",
		r.NLost, r.Lost, r.NDuplicates, r.Duplicates, r.NLeftOver, r.LeftOver)
	for _, p := range r.Problems {
		s += "  " + p + "\n"
	}
	return s
}

// Run drives one load run and verifies it. The error is for a run that could
// not be carried out (bad config, server unreachable); a run that lost jobs
// returns a Result whose OK is false. Cancelling ctx stops producing; the
// run then drains and verifies as usual.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	d := newDriver(cfg)
	return d.run(ctx)
}

func newClient(c Config, pool int) redis.UniversalClient {
	rt := time.Duration(c.BlockMs)*time.Millisecond + 5*time.Second
	if len(c.Cluster) > 0 {
		return redis.NewClusterClient(&redis.ClusterOptions{
			Addrs:    c.Cluster,
			Password: c.Password,
			PoolSize: pool,
			// As below: the driver resends, go-redis must not. MOVED and
			// ASK are still followed (MaxRedirects).
			MaxRetries:   -1,
			DialTimeout:  time.Second,
			ReadTimeout:  rt,
			WriteTimeout: 5 * time.Second,
		})
	}
	return redis.NewClient(&redis.Options{
		Addr:     c.Addr,
		Password: c.Password,
		PoolSize: pool,
		// The driver resends calls itself: go-redis must not resend a
		// command whose reply was lost (it would hide the loss).
		MaxRetries:   -1,
		DialTimeout:  time.Second,
		ReadTimeout:  rt,
		WriteTimeout: 5 * time.Second,
	})
}

const b62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

func randString(n int) string {
	b := make([]byte, n)
	for i := range b {
		v, _ := rand.Int(rand.Reader, big.NewInt(62))
		b[i] = b62[v.Int64()]
	}
	return string(b)
}

// jobID is "JOB" + tag (4 base-62 characters) + n in 7 base-62 digits: a
// well-formed 14-byte id (docs/verbs.md §1.4), sorting by n within a run.
func jobID(tag string, n int64) string {
	var b [14]byte
	copy(b[:], "JOB")
	copy(b[3:7], tag)
	for i := 13; i >= 7; i-- {
		b[i] = b62[n%62]
		n /= 62
	}
	return string(b[:])
}
