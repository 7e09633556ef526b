package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/emqd/emqd/bench/internal/procs"
	"github.com/emqd/emqd/bench/lua"
	"github.com/emqd/emqd/internal/testsupport"
	"github.com/emqd/emqd/server"
	"github.com/redis/go-redis/v9"
)

// startScripted starts redis-server with the scripts loaded, or skips.
func startScripted(t *testing.T) *scriptExec {
	ex, _ := startScriptedPid(t)
	return ex
}

// startScriptedPid is startScripted also giving the server's process id.
func startScriptedPid(t *testing.T) (*scriptExec, int) {
	t.Helper()
	bin := testsupport.LookPath(t, "redis-server", "redis-server")
	p, err := procs.StartRedis(bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Kill() })
	ex := &scriptExec{rdb: newClient(p.Addr, 8)}
	t.Cleanup(func() { ex.rdb.Close() })
	for _, s := range lua.All() {
		if err := ex.rdb.ScriptLoad(context.Background(), s.Src).Err(); err != nil {
			t.Fatal(err)
		}
	}
	return ex, p.Pid()
}

// The scripted cycle completes every job, unpipelined and pipelined, with
// and without the failure; run checks the counts and the empty sets.
func TestScriptedCycle(t *testing.T) {
	ex := startScripted(t)
	ctx := context.Background()
	for _, batch := range []int{1, 25} {
		for _, retry := range []bool{false, true} {
			cy := cycle{jobs: 300, workers: 3, batch: batch, retry: retry, leaseMs: 30000, payload: "p"}
			r, err := cy.run(ctx, ex, "t."+randTag())
			if err != nil {
				t.Fatalf("batch %d retry %v: %v", batch, retry, err)
			}
			if r <= 0 {
				t.Fatalf("rate %v", r)
			}
		}
	}
}

// The scripted sweep counts every expiry: at max_stalled 1 all die, at 2
// all are recovered with stalled 1; the server's CPU over the timed calls
// is read (more than nothing, less than the elapsed time on one thread).
func TestScriptedSweep(t *testing.T) {
	ex, pid := startScriptedPid(t)
	ctx := context.Background()
	for _, ms := range []int{1, 2} {
		q := "sw." + randTag()
		r, err := sweep(ctx, ex, q, config{sweepLeases: 250, sweepLimit: 100, maxStalled: ms}, "p", pid)
		if err != nil {
			t.Fatal(err)
		}
		if r.cpu <= 0 {
			t.Fatalf("server CPU over the sweep: %v", r.cpu)
		}
		if r.calls != 4 || r.swept != 250 {
			t.Fatalf("calls %d swept %d, want 4 and 250", r.calls, r.swept)
		}
		k := lua.Keys{Q: q}
		dead := ex.rdb.ZCard(ctx, k.Dead()).Val()
		pending := ex.rdb.ZCard(ctx, k.Pending()).Val()
		failed, _ := ex.rdb.HGet(ctx, k.Failed(), "count").Int()
		if ms == 1 && (dead != 250 || pending != 0 || failed != 250) {
			t.Fatalf("max_stalled 1: dead %d pending %d failed %d", dead, pending, failed)
		}
		if ms == 2 && (dead != 0 || pending != 250 || failed != 0) {
			t.Fatalf("max_stalled 2: dead %d pending %d failed %d", dead, pending, failed)
		}
	}
}

// The scripted retry caps on attempts (docs/verbs.md §4.6 contrasts the
// native cap on failures): a job claimed,
// released and claimed again (token 2) dies at max_attempts 2 on its first
// failure, where the native verb would retry it.
func TestScriptedRetryCapsOnAttempts(t *testing.T) {
	ex := startScripted(t)
	ctx := context.Background()
	q := "cap." + randTag()
	k := lua.Keys{Q: q}
	id := jobID(1, 0)
	if err := ex.rdb.Process(ctx, ex.enqueue(ctx, q, id, "p")); err != nil {
		t.Fatal(err)
	}
	c := ex.claim(ctx, q, 30000)
	_ = ex.rdb.Process(ctx, c)
	j, err := parseClaim(c)
	if err != nil || j.token != "1" {
		t.Fatalf("claim %v %v", j, err)
	}
	// Release by hand (the requeue's three writes), then claim again.
	ex.rdb.ZRem(ctx, k.Active(), id)
	ex.rdb.HSet(ctx, k.Row(id), "state", "pending")
	ex.rdb.ZAdd(ctx, k.Pending(), redis.Z{Score: 0, Member: id})
	c = ex.claim(ctx, q, 30000)
	_ = ex.rdb.Process(ctx, c)
	if j, err = parseClaim(c); err != nil || j.token != "2" {
		t.Fatalf("claim %v %v", j, err)
	}
	// A stale token is refused with nothing written.
	f := ex.fail(ctx, q, id, "1", 2, 0, "boom")
	_ = ex.rdb.Process(ctx, f)
	if f.Err() == nil || f.Err().Error() != "EMQSTALE retry token mismatch" {
		t.Fatalf("stale fail: %v", f.Err())
	}
	f = ex.fail(ctx, q, id, "2", 2, 0, "boom")
	_ = ex.rdb.Process(ctx, f)
	if v, err := f.Text(); err != nil || v != "dead" {
		t.Fatalf("fail: %q %v, want dead", v, err)
	}
	row := ex.rdb.HGetAll(ctx, k.Row(id)).Val()
	if row["state"] != "dead" || row["attempts"] != "2" || row["last_error"] != "boom" {
		t.Fatalf("row %v", row)
	}
	cp := ex.complete(ctx, q, id, "2")
	_ = ex.rdb.Process(ctx, cp)
	if cp.Err() == nil || cp.Err().Error() != "EMQSTATE job is dead" {
		t.Fatalf("complete of a dead job: %v", cp.Err())
	}
}

// The lean client drives the same cycle on both sides: every reply is
// checked by workerRaw and the outcome (completions, empty sets) by check.
func TestRawCycle(t *testing.T) {
	ctx := context.Background()
	type target struct {
		name string
		addr string
		side rawSide
		rdb  *redis.Client
	}
	var sides []target
	s := server.StartTest(t)
	nrdb := newClient(s.Addr(), 4)
	t.Cleanup(func() { nrdb.Close() })
	sides = append(sides, target{"emqd", s.Addr(), rawNative{}, nrdb})
	sides = append(sides, target{"emqd+lanes", s.Addr(), newRawLanes(7), nrdb})
	if _, err := exec.LookPath("redis-server"); err == nil || os.Getenv(testsupport.RequireEnv) == "1" {
		ex := startScripted(t)
		sides = append(sides, target{"redis", ex.rdb.Options().Addr, rawScripted{}, ex.rdb})
	}
	for _, sd := range sides {
		for _, next := range []bool{false, true} {
			if next && !sd.side.hasNext() {
				continue
			}
			for _, batch := range []int{1, 25} {
				for _, retry := range []bool{false, true} {
					cy := cycle{jobs: 300, workers: 3, batch: batch, retry: retry, next: next, leaseMs: 30000, payload: "p"}
					q := "raw." + randTag()
					if sd.name == "emqd+lanes" {
						if err := keepLanesOn(ctx, sd.rdb, cy, q); err != nil {
							t.Fatal(err)
						}
					}
					r, err := cy.runRaw(fixed(sd.addr), sd.side, q, func(q string) error { return cy.check(ctx, sd.rdb, q) })
					if err != nil {
						t.Fatalf("%s next %v batch %d retry %v: %v", sd.name, next, batch, retry, err)
					}
					if r <= 0 {
						t.Fatalf("%s rate %v", sd.name, r)
					}
				}
			}
		}
	}
}

// The NEXT form saves a round trip per batch (per job at batch 1): a
// worker's batch costs ENQUEUE and COMPLETE NEXT (2 round trips, and one
// more for the first batch's CLAIM) against ENQUEUE, CLAIM, COMPLETE (3);
// with the failure ENQUEUE, FAIL NEXT, COMPLETE NEXT (3, +1) against 5.
// The failure variant's FAIL NEXT takes its own retry back (the oldest id
// of the queue), which workerRawNext checks by the token.
func TestNextRoundTrips(t *testing.T) {
	ctx := context.Background()
	s := server.StartTest(t)
	rdb := newClient(s.Addr(), 4)
	t.Cleanup(func() { rdb.Close() })
	for _, next := range []bool{false, true} {
		for _, batch := range []int{1, 7} {
			for _, retry := range []bool{false, true} {
				per, extra := 3, 0
				switch {
				case next && retry:
					per, extra = 3, 1
				case next:
					per, extra = 2, 1
				case retry:
					per = 5
				}
				var batches, trips, workers int
				cy := cycle{jobs: 100, workers: 3, batch: batch, retry: retry, next: next, leaseMs: 30000, payload: "p",
					stats: func(b, tr int) {
						want := 0
						if b > 0 {
							want = per*b + extra
						}
						if tr != want {
							t.Errorf("next %v batch %d retry %v: a worker of %d batches made %d round trips, want %d", next, batch, retry, b, tr, want)
						}
						batches += b
						trips += tr
						workers++
					}}
				q := "trips." + randTag()
				if _, err := cy.runRaw(fixed(s.Addr()), rawNative{}, q, func(q string) error { return cy.check(ctx, rdb, q) }); err != nil {
					t.Fatalf("next %v batch %d retry %v: %v", next, batch, retry, err)
				}
				if min := (100 + batch - 1) / batch; workers != 3 || batches < min || batches > min+2 {
					t.Fatalf("next %v batch %d: %d workers took %d batches, want 3 and %d to %d", next, batch, workers, batches, min, min+2)
				}
			}
		}
	}
}

// The scripted side has no NEXT form: its NEXT cells report the plain
// cell of the same mode and variant, and the cells list the NEXT form
// before the plain one in each mode (bench/cmd/compare reads the names).
func TestCellsAndPlainTwins(t *testing.T) {
	cells := makeCells(config{jobs: 10, workers1: 32, workersP: 8, batch: 100, retryCells: true, next: true, payloadBytes: 1})
	var names []string
	for i, cl := range cells {
		names = append(names, fmt.Sprintf("%s/%d", cl.name, cl.cy.batch))
		tw := plainTwin(cells, i)
		if tw < 0 || cells[tw].cy.next || cells[tw].cy.batch != cl.cy.batch || cells[tw].cy.retry != cl.cy.retry {
			t.Fatalf("cell %d (%s): plain twin %d", i, cl.name, tw)
		}
		if !cl.cy.next && tw != i {
			t.Fatalf("plain cell %d (%s) has twin %d", i, cl.name, tw)
		}
	}
	want := []string{cycleNext + "/1", cycleNextRetry + "/1", cyclePlain + "/1", cyclePlainRetry + "/1",
		cycleNext + "/100", cycleNextRetry + "/100", cyclePlain + "/100", cyclePlainRetry + "/100"}
	if !slices.Equal(names, want) {
		t.Fatalf("cells %v, want %v", names, want)
	}
	if n := len(makeCells(config{jobs: 10, workers1: 1, workersP: 1, batch: 2, retryCells: true})); n != 4 {
		t.Fatalf("--next=false: %d cells, want 4", n)
	}
}

// A wrong expectation is caught: check refuses a count that is not the
// number of jobs run.
func TestRawCycleCheckCounts(t *testing.T) {
	s := server.StartTest(t)
	rdb := newClient(s.Addr(), 4)
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	cy := cycle{jobs: 50, workers: 2, batch: 10, leaseMs: 30000, payload: "p"}
	q := "raw." + randTag()
	if _, err := cy.runRaw(fixed(s.Addr()), rawNative{}, q, func(q string) error { return cy.check(ctx, rdb, q) }); err != nil {
		t.Fatal(err)
	}
	cy.jobs = 51
	if err := cy.check(ctx, rdb, q); err == nil || err.Error() != "50 completions counted, want 51" {
		t.Fatalf("check: %v", err)
	}
}

// The reply parser reads nested arrays, nil, integers, errors and bulks.
func TestRawReplyParser(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	c := &rawConn{nc: a, br: bufio.NewReader(a)}
	go func() {
		buf := make([]byte, 64)
		_, _ = b.Read(buf) // the command
		_, _ = b.Write([]byte("*2\r\n*3\r\n$2\r\nid\r\n$-1\r\n:7\r\n+OK\r\n-ERR x y\r\n*-1\r\n"))
		b.Close()
	}()
	c.e.array(1)
	c.e.bulk("PING")
	if err := c.roundTrip(3); err != nil {
		t.Fatal(err)
	}
	got := []string{c.describe(c.reply(0)), c.describe(c.reply(1)), c.describe(c.reply(2))}
	want := []string{`[[$"id" nil :7] +"OK"]`, `-"ERR x y"`, "nil"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("reply %d: %s, want %s", i, got[i], want[i])
		}
	}
}

// fixed routes every queue to addr.
func fixed(addr string) func(string) string { return func(string) string { return addr } }

// needRedis skips (or fails, EMQD_REQUIRE_REFERENCE=1) without redis-server
// and redis-cli.
func needRedis(t *testing.T) {
	t.Helper()
	for _, bin := range []string{"redis-server", "redis-cli"} {
		testsupport.LookPath(t, bin, "redis-server and redis-tools")
	}
}

// The library side (FCALL on one redis-server) runs the cycle with both
// clients and the sweep: every reply checked, the counts checked.
func TestLibrarySide(t *testing.T) {
	needRedis(t)
	c := config{redisBin: "redis-server", redisCli: "redis-cli", workers1: 4}
	e, err := startLibrary(c)
	if err != nil {
		t.Fatal(err)
	}
	defer e.stop()
	ctx := context.Background()
	for _, batch := range []int{1, 25} {
		for _, retry := range []bool{false, true} {
			cy := cycle{jobs: 200, workers: 3, batch: batch, retry: retry, leaseMs: 30000, payload: "p"}
			if _, err := cy.runRaw(e.route, e.raw, "lib."+randTag(), func(q string) error { return cy.check(ctx, e.ex.client(), q) }); err != nil {
				t.Fatalf("raw batch %d retry %v: %v", batch, retry, err)
			}
			if _, err := cy.run(ctx, e.ex, "lib."+randTag()); err != nil {
				t.Fatalf("go-redis batch %d retry %v: %v", batch, retry, err)
			}
			cy.next = true
			if _, err := cy.runRaw(e.route, e.raw, "lib."+randTag(), func(q string) error { return cy.check(ctx, e.ex.client(), q) }); err != nil {
				t.Fatalf("raw NEXT batch %d retry %v: %v", batch, retry, err)
			}
		}
	}
	r, err := sweep(ctx, e.ex, "sw."+randTag(), config{sweepLeases: 250, sweepLimit: 100, maxStalled: 2}, "p", e.pid)
	if err != nil || r.calls != 4 || r.swept != 250 {
		t.Fatalf("sweep %+v %v", r, err)
	}
}

// The cluster sides place the workers' queues on 3 primaries or on 1, and
// the lean client reaches each queue's primary directly (a MOVED reply
// would fail the cycle's reply checks).
func TestClusterSides(t *testing.T) {
	needRedis(t)
	c := config{redisBin: "redis-server", redisCli: "redis-cli", workers1: 4}
	ctx := context.Background()
	e, err := startCluster(c, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer e.stop()
	for _, spread := range []int{3, 1} {
		e.place = placer(e.addrs, e.route, spread)
		cy := cycle{jobs: 120, workers: 6, batch: 10, retry: true, leaseMs: 30000, payload: "p", place: e.place}
		q := "cl." + randTag()
		used := map[string]bool{}
		for w := 0; w < cy.workers; w++ {
			used[e.route(cy.qname(q, w))] = true
		}
		if len(used) != spread {
			t.Fatalf("spread %d: queues on %d primaries", spread, len(used))
		}
		if _, err := cy.runRaw(e.route, e.raw, q, func(q string) error { return cy.check(ctx, e.ex.client(), q) }); err != nil {
			t.Fatalf("spread %d raw: %v", spread, err)
		}
		cy.next = true
		if _, err := cy.runRaw(e.route, e.raw, "cl."+randTag(), func(q string) error { return cy.check(ctx, e.ex.client(), q) }); err != nil {
			t.Fatalf("spread %d raw NEXT: %v", spread, err)
		}
		cy.next = false
		if _, err := cy.run(ctx, e.ex, "cl."+randTag()); err != nil {
			t.Fatalf("spread %d go-redis: %v", spread, err)
		}
	}
}

// Side emqd+lanes enqueues into its lanes: 70 jobs through rawLanes over 7
// lanes land in 7 lanes (EMQ.LANES), none in the plain pending set.
func TestRawLanesEnqueue(t *testing.T) {
	ctx := context.Background()
	s := server.StartTest(t)
	rdb := newClient(s.Addr(), 2)
	t.Cleanup(func() { rdb.Close() })
	c, err := dialRaw(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.nc.Close()
	k := newQKeys("lanes."+randTag(), 30000)
	for i := 0; i < 70; i++ {
		newRawLanes(7).enqueue(&c.e, k, jobID(1<<40, uint64(i)), "p")
	}
	if err := c.roundTrip(70); err != nil {
		t.Fatal(err)
	}
	lanes, err := rdb.Do(ctx, "EMQ.LANES", k.q).Slice()
	if err != nil || len(lanes) != 7 {
		t.Fatalf("EMQ.LANES: %d lanes %v", len(lanes), err)
	}
	var pending int64
	for _, l := range lanes {
		m := l.(map[any]any)
		pending += m["pending"].(int64)
	}
	if n := rdb.ZCard(ctx, k.pending).Val(); pending != 70 || n != 0 {
		t.Fatalf("lanes hold %d jobs, the plain pending set %d; want 70 and 0", pending, n)
	}
	// checkLanes refuses lanes left with jobs, and the kept-on lane with a
	// job or a slot held.
	lk := lua.Keys{Q: k.q}
	known := rdb.ZRange(ctx, lk.Prefix()+"lanes:known", 0, -1).Val()
	if err := checkLanes(ctx, rdb, lk, known); err == nil || len(known) != 7 {
		t.Fatalf("checkLanes over %v: %v", known, err)
	}
	if err := checkLanes(ctx, rdb, lk, []string{lanesKeepOn}); err == nil || !strings.Contains(err.Error(), "pending") {
		t.Fatalf("checkLanes over l0 holding jobs: %v", err)
	}
}

// A run with cpuNs set reports the server's CPU per job: here the test's
// own process holds the server, so the figure is positive, and it is the
// CPU read over the run divided by the jobs (a reader that counts 1 ms
// per read gives 1 ms over the run: 1000 us / jobs).
func TestCPUPerJob(t *testing.T) {
	ctx := context.Background()
	s := server.StartTest(t)
	rdb := newClient(s.Addr(), 4)
	t.Cleanup(func() { rdb.Close() })
	if n, err := procs.CPUNanos(os.Getpid()); err != nil || n <= 0 {
		t.Fatalf("cpuNanos of this process: %d %v", n, err)
	}
	var got float64
	var reads int64
	cy := cycle{jobs: 40, workers: 2, batch: 5, next: true, leaseMs: 30000, payload: "p", cpuPerJob: &got,
		cpuNs: func() (int64, error) { reads++; return reads * 1e6, nil }}
	q := "cpu." + randTag()
	if _, err := cy.runRaw(fixed(s.Addr()), rawNative{}, q, func(q string) error { return cy.check(ctx, rdb, q) }); err != nil {
		t.Fatal(err)
	}
	if reads != 2 || got != 1000.0/40 {
		t.Fatalf("%d reads, %v us per job; want 2 and %v", reads, got, 1000.0/40)
	}
}
