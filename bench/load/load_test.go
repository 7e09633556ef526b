package load

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/emqd/emqd/emq"
	"github.com/emqd/emqd/internal/testsupport"
	"github.com/emqd/emqd/server"
	"github.com/redis/go-redis/v9"
)

func startEmbedded(t *testing.T) *server.Server {
	t.Helper()
	srv, err := server.Start(server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Close(ctx)
	})
	return srv
}

// smallConfig is a load run of a few seconds with failures, crashes and
// heartbeats switched on.
func smallConfig(addr string, jobs int) Config {
	return Config{
		Addr: addr, Jobs: jobs, Producers: 2, Workers: 8,
		FailRate: 0.2, CrashRate: 0.05, MaxAttempts: 3,
		LeaseMs: 250, Work: 2 * time.Millisecond, Heartbeat: time.Millisecond,
		BlockMs: 100, BackoffBase: time.Millisecond, BackoffMax: 8 * time.Millisecond,
		SweepEvery: 20 * time.Millisecond, MaxBacklog: 200, Seed: 7,
		DrainTimeout: 20 * time.Second, RetryFor: 20 * time.Second,
	}
}

// The driver at small scale against an embedded emqd, failures and crashes
// on: zero lost, zero duplicates, nothing left over, and every mechanism was
// exercised (fails that retried and that died, crashes the sweep recovered,
// heartbeats).
func TestLoadEmbeddedFailuresAndCrashes(t *testing.T) {
	srv := startEmbedded(t)
	const jobs = 1500
	res, err := Run(context.Background(), smallConfig(srv.Addr(), jobs))
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + res.Summary())
	if !res.OK() {
		t.Fatalf("verification failed:\n%s", res.Summary())
	}
	if res.Enqueued != jobs || res.Completed+res.Dead != jobs {
		t.Fatalf("enqueued %d, completed %d + dead %d, want %d", res.Enqueued, res.Completed, res.Dead, jobs)
	}
	if res.Failed == 0 || res.Dead == 0 || res.Crashes == 0 || res.Extends == 0 {
		t.Fatalf("a mechanism went unexercised: failed %d dead %d crashes %d extends %d", res.Failed, res.Dead, res.Crashes, res.Extends)
	}
	if res.Recovered < res.Crashes {
		t.Fatalf("the sweep recovered %d, fewer than the %d crashed jobs", res.Recovered, res.Crashes)
	}
	if res.Counts["completed"] != int64(res.Completed) || res.Counts["dead"] != int64(res.Dead) {
		t.Fatalf("counts %v vs completed %d dead %d", res.Counts, res.Completed, res.Dead)
	}
	if res.P50 <= 0 || res.P50 > res.P99 || res.P99 > res.P999 {
		t.Fatalf("latency percentiles %v %v %v", res.P50, res.P99, res.P999)
	}
}

// The verification catches what it exists to catch: a job whose row vanished
// with no completion (lost), a job COMPLETE acked twice (duplicate), a job
// left pending, and it counts a dead job with a reason as dead.
func TestVerifyFindsLossDuplicatesAndLeftovers(t *testing.T) {
	srv := startEmbedded(t)
	ctx := context.Background()
	cfg := Config{Addr: srv.Addr(), Jobs: 5}
	if err := cfg.defaults(); err != nil {
		t.Fatal(err)
	}
	d := newDriver(cfg)
	d.rdb = newClient(cfg, 4)
	defer d.rdb.Close()
	q := cfg.Queue
	add := func(n int64, acked int32) *job {
		j := &job{id: jobID(d.tag, n), q: q, enqAt: time.Now(), admitted: true, acked: acked}
		d.jobs[j.id] = j
		d.all = append(d.all, j)
		return j
	}
	add(0, 1)         // no row, acked once: completed
	lost := add(1, 0) // no row, never completed: lost
	dup := add(2, 2)  // no row, acked twice: duplicate
	left := add(3, 0) // row left pending
	dead := add(4, 0) // dead with a reason
	for _, j := range []*job{left, dead} {
		if err := d.rdb.Do(ctx, "EMQ.ENQUEUE", q, j.id, "p").Err(); err != nil {
			t.Fatal(err)
		}
	}
	// Claim the dead one (lowest id first: left was enqueued first, so claim
	// both and requeue left).
	ec := emq.New(d.rdb, nil)
	cl, err := ec.Claim(ctx, q, 10*time.Second, &emq.ClaimOptions{MaxJobs: 2})
	if err != nil || len(cl) != 2 {
		t.Fatalf("claim %v %v", cl, err)
	}
	for _, c := range cl {
		var err error
		if c.ID == left.id {
			err = c.Requeue(ctx)
		} else {
			_, err = c.Fail(ctx, "boom", &emq.FailOptions{MaxAttempts: 1})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	r, err := d.verify(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r.OK() {
		t.Fatalf("verification passed a broken run:\n%s", r.Summary())
	}
	if r.NLost != 1 || r.Lost[0] != lost.id || r.NDuplicates != 1 || r.Duplicates[0] != dup.id ||
		r.NLeftOver != 1 || r.LeftOver[0] != left.id || r.Dead != 1 || r.Completed != 2 {
		t.Fatalf("findings:\n%s", r.Summary())
	}
	want := []string{"EMQ.COUNTS pending is 1, want 0", "EMQ.COUNTS completed is 0, the jobs say 2"}
	for _, w := range want {
		found := false
		for _, p := range r.Problems {
			found = found || p == w
		}
		if !found {
			t.Fatalf("problem %q not reported: %q", w, r.Problems)
		}
	}
}

// The real binary under SIGKILL restarts (appendfsync always): still zero
// loss. A binary that does not start with persistence on, or loses an
// admitted job across a SIGKILL, fails the test (docs/durability.md).
func TestLoadRestartsBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and restarts the emqd binary")
	}
	tmp := t.TempDir()
	bin := testsupport.BuildEmqd(t)
	port := testsupport.FreePort(t)
	addr := "127.0.0.1:" + port
	dataDir := filepath.Join(tmp, "data")
	if err := os.Mkdir(dataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmdline := fmt.Sprintf("%s --port %s --bind 127.0.0.1 --dir %s --appendonly yes --appendfsync always", bin, port, dataDir)

	// Does this build persist? Admit a job, SIGKILL, restart, look for it.
	sup := &supervisor{cmdline: cmdline, addr: addr, log: &strings.Builder{}}
	if err := sup.start(); err != nil {
		t.Fatalf("emqd does not start with persistence on: %v", err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	ctx := context.Background()
	if err := rdb.Do(ctx, "EMQ.ENQUEUE", "probe", "JOB00000000001", "p").Err(); err != nil {
		sup.stop()
		t.Fatal(err)
	}
	if err := sup.restart(); err != nil {
		t.Fatal(err)
	}
	n, err := rdb.Do(ctx, "EMQ.COUNTS", "probe").Result()
	rdb.Close()
	sup.stop()
	if err != nil {
		t.Fatal(err)
	}
	if m, err := toMap(n); err != nil || m["pending"] != int64(1) {
		t.Fatalf("emqd lost an admitted job across SIGKILL (EMQ.COUNTS %v)", n)
	}

	cfg := smallConfig(addr, 1500)
	cfg.FailRate, cfg.CrashRate = 0.1, 0.02
	cfg.RestartCmd = cmdline
	// A restart after every 400 outcomes: 3 restarts in 1500 jobs however
	// slow the machine (a wall-clock interval gave 1 on a loaded one).
	cfg.RestartAfter = 400
	var log strings.Builder
	cfg.ServerLog = &log
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("%v\nserver log:\n%s", err, log.String())
	}
	t.Log("\n" + res.Summary())
	if !res.OK() {
		t.Fatalf("verification failed:\n%s", res.Summary())
	}
	if res.Restarts != 3 {
		t.Fatalf("%d restarts, want 3 (one after each 400 of the 1500 outcomes)", res.Restarts)
	}
	if res.Completed+res.Dead != 1500 {
		t.Fatalf("completed %d + dead %d, want 1500", res.Completed, res.Dead)
	}
}
