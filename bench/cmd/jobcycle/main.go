// Command jobcycle measures the native EMQ.* verbs of emqd against the
// scripted executor (the Lua scripts in bench/lua run through EVALSHA on a
// real redis-server) and against the cluster library (cluster/emq.lua,
// FCALL, on one redis-server and on a 3-primary Redis Cluster with the
// queues on one primary or spread over three), over the same keyspace
// (docs/verbs.md §1.1), in one run.
//
// The job cycle, per job: ENQUEUE, CLAIM, COMPLETE; and a variant with one
// failure: ENQUEUE, CLAIM, FAIL (retry, delay 0), CLAIM (promotes the due
// retry), COMPLETE. It is run twice: one command per round trip (32 workers)
// and pipelined in batches of 100 (8 workers). Each worker drives its own
// queue, so every claim takes the job the worker just enqueued (or retried),
// and each pipelined phase is one round trip of `batch` commands.
//
// With --next (the default) every cell also runs in the NEXT form
// (docs/verbs.md §4.5.1), as a worker with it runs: per job (per batch when
// pipelined) ENQUEUE, then COMPLETE ... NEXT, which claims the next job: two
// round trips instead of three; the failure variant ENQUEUE, FAIL ... NEXT
// (its claim takes the due retry back), COMPLETE ... NEXT: three instead of
// five. emqd and the cluster library have the form; the scripts (bench/lua,
// one script per transition) have no combined verb, so the scripted side's
// NEXT rows are its plain ones, measured once. The pipelined NEXT cell keeps
// one round trip per phase (ENQUEUE x batch, then COMPLETE NEXT x batch)
// rather than one pipeline of both: a producer's batch and a worker's
// completions are two clients' round trips (bench/README.md, "The job cycle
// with NEXT").
//
// Then it times the stall sweep: `sweep-leases` jobs are enqueued and claimed
// with lease_ms 1, and once the leases have expired, EMQ.STALLED.CHECK
// (native) and sweep_stalled.lua (scripted) are called, `sweep-limit` per
// call, until the sweep comes back empty.
//
// By default it starts the servers itself, one side after the other (emqd
// from --emqd-bin, then redis-server, ...; persistence off, free loopback
// ports): each runs only while its side is measured, so the sides never
// share the cores (the three primaries of a cluster side do). --sides
// picks the sides.
// --emqd-addr and --redis-addr use running servers instead (a fresh queue
// name per run keeps runs apart; nothing is flushed).
//
// The job cycle is driven by a lean RESP client (raw.go: one net.Conn per
// worker, pre-encoded commands, replies parsed without allocating), the same
// for both sides, so the driver's own CPU does not dilute the servers'
// difference on a small machine; --client go-redis drives it through
// go-redis instead. The sweep timing always uses go-redis (one call per
// round trip, each doing up to sweep-limit jobs of work).
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emqd/emqd/bench/internal/procs"
	"github.com/emqd/emqd/bench/lua"
	"github.com/redis/go-redis/v9"
)

type config struct {
	emqdAddr, redisAddr string
	libraryAddr         string
	clusterAddrs        []string
	emqdBin, redisBin   string
	redisCli            string
	sides               []string
	jobs                int
	workers1, workersP  int
	batch               int
	leaseMs             int
	payloadBytes        int
	sweepLeases         int
	sweepLimit          int
	maxStalled          int
	only                string
	client              string
	rounds              int
	serverCPU           string
	tsv                 bool
	retryCells          bool
	next                bool
	lanes               int
}

func main() {
	var c config
	fs := flag.NewFlagSet("jobcycle", flag.ExitOnError)
	fs.StringVar(&c.emqdAddr, "emqd-addr", "", "address of a running emqd (default: start --emqd-bin on a free port)")
	fs.StringVar(&c.redisAddr, "redis-addr", "", "address of a running redis-server (default: start --redis-bin on a free port)")
	fs.StringVar(&c.emqdBin, "emqd-bin", "bench/bin/emqd", "emqd binary to start when --emqd-addr is empty")
	fs.StringVar(&c.redisBin, "redis-bin", "redis-server", "redis-server binary to start when --redis-addr is empty")
	fs.IntVar(&c.jobs, "jobs", 200000, "jobs per cell of the job-cycle table")
	fs.IntVar(&c.workers1, "workers", 32, "workers of the one-command-per-round-trip runs")
	fs.IntVar(&c.workersP, "pipelined-workers", 8, "workers of the pipelined runs")
	fs.IntVar(&c.batch, "batch", 100, "commands per pipelined round trip")
	fs.IntVar(&c.leaseMs, "lease-ms", 30000, "lease_ms of the job-cycle claims")
	fs.IntVar(&c.payloadBytes, "payload-bytes", 64, "payload size in bytes")
	fs.IntVar(&c.sweepLeases, "sweep-leases", 100000, "expired leases the sweep timing recovers")
	fs.IntVar(&c.sweepLimit, "sweep-limit", 100, "limit per sweep call")
	fs.IntVar(&c.maxStalled, "max-stalled", 1, "max_stalled of the sweep (1: every expiry is dead-lettered; 2+: recovered)")
	fs.StringVar(&c.only, "only", "all", "what to run: all, cycle or sweep")
	fs.StringVar(&c.libraryAddr, "library-addr", "", "address of a running redis-server for the library side (default: start --redis-bin); the library is loaded on it")
	fs.StringVar(&c.redisCli, "redis-cli", "redis-cli", "redis-cli binary (creates the cluster of the cluster sides)")
	clusterAddrs := fs.String("cluster-addrs", "", "primaries of a running cluster (host:port,...; the library is loaded on them) for the cluster sides (default: start 3 redis-server primaries here)")
	sides := fs.String("sides", "emqd,redis,library,cluster/3,cluster/1", "sides to run, in order: emqd (native verbs), emqd+lanes (the same with every job in one of --lanes lanes; not in the default), redis (Lua scripts, EVALSHA), library (FCALL, one redis-server), cluster/3 and cluster/1 (FCALL on a 3-primary cluster, the workers' queues spread over 3 primaries or all on 1)")
	fs.StringVar(&c.client, "client", "raw", "job-cycle client: raw (lean RESP over net.Conn, pre-encoded commands) or go-redis; the sweep always uses go-redis")
	fs.IntVar(&c.rounds, "rounds", 1, "rounds; each runs every side in turn (emqd, redis, ... emqd, redis, ...) and the tables print medians")
	fs.StringVar(&c.serverCPU, "server-cpu", "", "run the emqd, redis and library servers the driver starts under taskset -c LIST (e.g. 0; pin the driver itself elsewhere)")
	fs.BoolVar(&c.tsv, "tsv", false, "print the medians of sides emqd and redis as tab-separated lines instead of the tables: cycle, name, mode, workers, batch, emqd jobs/s, redis jobs/s, emqd and redis server CPU per job (us; 0: not read); sweep, leases, limit, emqd s, redis s")
	fs.IntVar(&c.lanes, "lanes", 100, "lanes of each worker's queue on side emqd+lanes (every job in lane l<hash(id) mod lanes>)")
	fs.BoolVar(&c.retryCells, "retry-cells", true, "also run the cycle with one failure (enqueue, claim, fail, claim, complete)")
	fs.BoolVar(&c.next, "next", true, "also run every cell in the NEXT form (enqueue, complete NEXT; enqueue, fail NEXT, complete NEXT: docs/verbs.md §4.5.1) on the sides that have it (emqd, the library, the clusters); the scripted side's NEXT rows are its plain ones. --next=false: the plain form only")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: jobcycle [flags]

Runs the job cycle (enqueue, claim, complete; and enqueue, claim, fail,
claim, complete) with concurrent workers against emqd's native EMQ.* verbs,
against Lua scripts (EVALSHA) on redis-server, and against the cluster
library (FCALL) on one redis-server and on a 3-primary cluster, unpipelined
and pipelined, then times EMQ.STALLED.CHECK against the scripted sweep and
the library's over expired leases. Prints jobs/s (and sweep time) per side
and each side's ratio to emqd.

Example (servers started by the driver):
  go build -o bench/bin/emqd ./cmd/emqd && go run ./bench/cmd/jobcycle

Flags:
`)
		fs.PrintDefaults()
	}
	_ = fs.Parse(os.Args[1:])
	c.sides = strings.Split(*sides, ",")
	if *clusterAddrs != "" {
		c.clusterAddrs = strings.Split(*clusterAddrs, ",")
	}
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "jobcycle:", err)
		os.Exit(1)
	}
}

func run(c config) error {
	if c.only != "all" && c.only != "cycle" && c.only != "sweep" {
		return fmt.Errorf("--only must be all, cycle or sweep")
	}
	if c.client != "raw" && c.client != "go-redis" {
		return fmt.Errorf("--client must be raw or go-redis")
	}
	if c.next && c.client != "raw" {
		return fmt.Errorf("the NEXT form runs on --client raw only (add --next=false)")
	}
	if c.jobs <= 0 || c.workers1 <= 0 || c.workersP <= 0 || c.batch <= 0 || c.sweepLimit <= 0 || c.maxStalled <= 0 || c.rounds <= 0 {
		return fmt.Errorf("counts must be positive")
	}
	cells := makeCells(c)
	known := map[string]bool{"emqd": true, "emqd+lanes": true, "redis": true, "library": true, "cluster/3": true, "cluster/1": true}
	for _, sd := range c.sides {
		if !known[sd] {
			return fmt.Errorf("unknown side %q (emqd, emqd+lanes, redis, library, cluster/3, cluster/1)", sd)
		}
		if sd == "emqd+lanes" && c.client != "raw" {
			return fmt.Errorf("side emqd+lanes needs --client raw")
		}
	}
	if c.lanes < 1 {
		return fmt.Errorf("--lanes must be positive")
	}
	// One side after the other, round after round (emqd, redis, ...,
	// emqd, redis, ...): a server the driver starts runs only while its
	// side is measured, so the sides never share the cores, and a change of
	// the machine's load during the run falls on every side alike.
	res := make([]sideResult, len(c.sides))
	rates := make([][][]float64, len(c.sides))
	cpus := make([][][]float64, len(c.sides))
	sweeps := make([][]sweepResult, len(c.sides))
	for round := 0; round < c.rounds; round++ {
		tag := randTag()
		for i, name := range c.sides {
			r, err := runSide(c, name, tag, cells)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			res[i].addr = r.addr
			if rates[i] == nil {
				rates[i] = make([][]float64, len(cells))
				cpus[i] = make([][]float64, len(cells))
			}
			for j, v := range r.rates {
				rates[i][j] = append(rates[i][j], v)
				cpus[i][j] = append(cpus[i][j], r.cpu[j])
			}
			sweeps[i] = append(sweeps[i], r.sweep)
		}
	}
	for i := range res {
		res[i].rates = make([]float64, len(cells))
		res[i].cpu = make([]float64, len(cells))
		for j := range cells {
			res[i].rates[j] = median(rates[i][j])
			if c.only != "sweep" {
				res[i].cpu[j] = median(cpus[i][j])
			}
		}
		res[i].sweep = medianSweep(sweeps[i])
		var cpu []float64
		for _, r := range sweeps[i] {
			cpu = append(cpu, float64(r.cpu))
		}
		res[i].sweepCPU = time.Duration(median(cpu))
	}
	if c.tsv {
		e, r := slices.Index(c.sides, "emqd"), slices.Index(c.sides, "redis")
		if e < 0 || r < 0 {
			return fmt.Errorf("--tsv needs the sides emqd and redis")
		}
		if c.only != "sweep" {
			for i, cl := range cells {
				fmt.Printf("cycle\t%s\t%s\t%d\t%d\t%.0f\t%.0f\t%.2f\t%.2f\n", cl.name, cl.mode, cl.cy.workers, cl.cy.batch, res[e].rates[i], res[r].rates[i], res[e].cpu[i], res[r].cpu[i])
			}
		}
		if c.only != "cycle" {
			fmt.Printf("sweep\t%d\t%d\t%.4f\t%.4f\n", c.sweepLeases, c.sweepLimit, res[e].sweep.elapsed.Seconds(), res[r].sweep.elapsed.Seconds())
		}
		return nil
	}
	if c.rounds > 1 {
		fmt.Printf("%d rounds, medians\n", c.rounds)
	}
	for i, name := range c.sides {
		fmt.Printf("%-10s %s\n", name, res[i].addr)
	}
	fmt.Printf("payload %d B, client %s\n", c.payloadBytes, c.client)
	base := -1 // the column ratios are taken against (emqd when run)
	for i, name := range c.sides {
		if name == "emqd" {
			base = i
		}
	}
	if c.only != "sweep" {
		fmt.Printf("\njob cycle, %d jobs per cell (lease_ms %d), jobs/s\n", c.jobs, c.leaseMs)
		fmt.Printf("%-26s %7s %5s", "cycle", "workers", "batch")
		for _, name := range c.sides {
			fmt.Printf(" %10s", name)
		}
		fmt.Println()
		for ci, cl := range cells {
			fmt.Printf("%-26s %7d %5d", cl.name, cl.cy.workers, cl.cy.batch)
			for i := range c.sides {
				fmt.Printf(" %10.0f", res[i].rates[ci])
			}
			fmt.Printf("   (%s)\n", cl.mode)
		}
		fmt.Printf("\nserver CPU per job (us, all threads, from the first command to the last reply; - : not read)\n")
		for ci, cl := range cells {
			fmt.Printf("%-26s %7d %5d", cl.name, cl.cy.workers, cl.cy.batch)
			for i := range c.sides {
				if res[i].cpu[ci] > 0 {
					fmt.Printf(" %10.2f", res[i].cpu[ci])
				} else {
					fmt.Printf(" %10s", "-")
				}
			}
			fmt.Printf("   (%s)\n", cl.mode)
		}
		if c.next {
			fmt.Printf("(NEXT rows: emqd and the library run enqueue + complete NEXT (+ fail NEXT), 2 (3) commands\n" +
				" and round trips per job or batch; the scripts have no combined verb: their NEXT rows are their plain ones)\n")
		}
		if base >= 0 && len(c.sides) > 1 {
			fmt.Printf("\neach side / emqd\n")
			for ci, cl := range cells {
				fmt.Printf("%-26s %7d %5d", cl.name, cl.cy.workers, cl.cy.batch)
				for i := range c.sides {
					fmt.Printf(" %9.2fx", res[i].rates[ci]/res[base].rates[ci])
				}
				fmt.Printf("   (%s)\n", cl.mode)
			}
		}
	}
	if c.only != "cycle" {
		fmt.Printf("\nstall sweep over %d expired leases, limit %d per call, max_stalled %d\n", c.sweepLeases, c.sweepLimit, c.maxStalled)
		fmt.Printf("%-28s %10s %8s %12s %14s %12s %14s\n", "sweep", "time", "calls", "us/call", "leases/s", "server CPU", "CPU us/lease")
		labels := map[string]string{"emqd": "EMQ.STALLED.CHECK (emqd)", "redis": "sweep_stalled.lua (redis)", "library": "emq_stalled_check (library)"}
		for i, name := range c.sides {
			r := res[i].sweep
			if r.calls == 0 {
				continue // the cluster sides run no sweep (one queue is one node: the library's)
			}
			fmt.Printf("%-28s %10s %8d %12.1f %14.0f", labels[name], r.elapsed.Round(time.Millisecond), r.calls,
				float64(r.elapsed.Microseconds())/float64(r.calls), float64(r.swept)/r.elapsed.Seconds())
			if cpu := res[i].sweepCPU; cpu > 0 {
				fmt.Printf(" %12s %14.2f\n", cpu.Round(time.Millisecond), float64(cpu.Nanoseconds())/1000/float64(r.swept))
			} else {
				fmt.Printf(" %12s %14s\n", "-", "-")
			}
		}
	}
	return nil
}

// median is the middle value of v (the mean of the two middle ones for an
// even count).
func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// medianSweep is the sweep of median duration.
func medianSweep(v []sweepResult) sweepResult {
	s := slices.Clone(v)
	slices.SortFunc(s, func(a, b sweepResult) int { return int(a.elapsed - b.elapsed) })
	return s[(len(s)-1)/2]
}

// cell is one row of the job-cycle table.
type cell struct {
	name, mode string
	cy         cycle
}

// Names of the cells' cycles (the --tsv lines' second field; bench/cmd/compare
// reads them).
const (
	cyclePlain      = "enq,claim,complete"
	cyclePlainRetry = "enq,claim,fail,claim,compl"
	cycleNext       = "enq,complete NEXT"
	cycleNextRetry  = "enq,fail NEXT,compl NEXT"
)

// makeCells lists the job-cycle cells: one command per round trip, then
// pipelined; in each, the NEXT form (with --next) before the plain one, and
// each without, then with the failure (with --retry-cells).
func makeCells(c config) []cell {
	payload := strings.Repeat("x", c.payloadBytes)
	var cells []cell
	for _, m := range []struct {
		name           string
		workers, batch int
	}{{"1 cmd/round trip", c.workers1, 1}, {"pipelined", c.workersP, c.batch}} {
		for _, next := range []bool{true, false} {
			if next && !c.next {
				continue
			}
			for _, retry := range []bool{false, true} {
				if retry && !c.retryCells {
					continue
				}
				name := map[[2]bool]string{{false, false}: cyclePlain, {false, true}: cyclePlainRetry,
					{true, false}: cycleNext, {true, true}: cycleNextRetry}[[2]bool{next, retry}]
				cells = append(cells, cell{name: name, mode: m.name,
					cy: cycle{jobs: c.jobs, workers: m.workers, batch: m.batch, retry: retry, next: next, leaseMs: c.leaseMs, payload: payload}})
			}
		}
	}
	return cells
}

// plainTwin is the index of the plain cell of cell i's mode and variant:
// a side without the NEXT form reports it for the NEXT cell (a worker of
// that side runs the plain cycle).
func plainTwin(cells []cell, i int) int {
	for j, cl := range cells {
		if !cl.cy.next && cl.cy.batch == cells[i].cy.batch && cl.cy.workers == cells[i].cy.workers && cl.cy.retry == cells[i].cy.retry {
			return j
		}
	}
	return -1
}

type sideResult struct {
	addr  string
	rates []float64
	cpu   []float64 // server CPU per job (us) of each cell; 0: not read
	sweep sweepResult
	// sweepCPU is the median of the rounds' sweep CPU (0: not read).
	sweepCPU time.Duration
}

// startSide starts the servers of one side (or uses the given address).
func startSide(c config, name string) (*env, error) {
	switch name {
	case "library":
		return startLibrary(c)
	case "cluster/3":
		return startCluster(c, 3)
	case "cluster/1":
		return startCluster(c, 1)
	}
	native := name == "emqd" || name == "emqd+lanes"
	addr, bin := c.redisAddr, c.redisBin
	start := func(bin string) (*procs.Proc, error) { return procs.StartRedisCPU(c.serverCPU, bin) }
	if native {
		addr, bin = c.emqdAddr, c.emqdBin
		start = func(bin string) (*procs.Proc, error) { return procs.StartEmqdCPU(c.serverCPU, bin) }
	}
	stop, pid := func() {}, 0
	if addr == "" {
		p, err := start(bin)
		if err != nil {
			if native {
				err = fmt.Errorf("%w (build it: go build -o bench/bin/emqd ./cmd/emqd)", err)
			}
			return nil, err
		}
		addr, stop, pid = p.Addr, func() { p.Stop(5 * time.Second) }, p.Pid()
	}
	rdb := newClient(addr, c.workers1+4)
	e := &env{addr: addr, pid: pid, ex: &nativeExec{rdb: rdb}, raw: rawNative{}, route: func(string) string { return addr },
		stop: func() { rdb.Close(); stop() }, sweep: true}
	if name == "emqd+lanes" {
		// The job cycle with lanes on; the sweep is timed on "emqd".
		e.raw, e.sweep = newRawLanes(c.lanes), false
	}
	if !native {
		e.ex, e.raw = &scriptExec{rdb: rdb}, rawScripted{}
		for _, s := range lua.All() {
			if err := rdb.ScriptLoad(context.Background(), s.Src).Err(); err != nil {
				e.stop()
				return nil, fmt.Errorf("SCRIPT LOAD %s: %w", s.Name, err)
			}
		}
	}
	return e, nil
}

// runSide measures one side: it starts its servers unless an address was
// given, runs every cell and the sweep, and stops the servers.
func runSide(c config, name, tag string, cells []cell) (sideResult, error) {
	var res sideResult
	e, err := startSide(c, name)
	if err != nil {
		return res, err
	}
	defer e.stop()
	res.addr = e.addr
	ctx := context.Background()
	ex := e.ex
	if err := ex.client().Ping(ctx).Err(); err != nil {
		return res, fmt.Errorf("%s: %w", e.addr, err)
	}
	if c.only != "sweep" {
		res.rates = make([]float64, len(cells))
		res.cpu = make([]float64, len(cells))
		for ci, cl := range cells {
			if cl.cy.next && !e.raw.hasNext() {
				continue // its plain twin's figure, below
			}
			fmt.Fprintf(os.Stderr, "%s: %s, %s ...\n", name, cl.name, cl.mode)
			q := fmt.Sprintf("jc.%s.%s.%d.%v.%v", tag, strings.NewReplacer("/", "", "+", "-").Replace(name), cl.cy.batch, cl.cy.retry, cl.cy.next)
			cy := cl.cy
			cy.place = e.place
			if e.pid != 0 {
				pid := e.pid
				cy.cpuNs = func() (int64, error) { return procs.CPUNanos(pid) }
				cy.cpuPerJob = &res.cpu[ci]
			}
			var r float64
			var err error
			if name == "emqd+lanes" {
				if err := keepLanesOn(ctx, ex.client(), cy, q); err != nil {
					return res, err
				}
			}
			if c.client == "raw" {
				r, err = cy.runRaw(e.route, e.raw, q, func(q string) error { return cy.check(ctx, ex.client(), q) })
			} else {
				r, err = cy.run(ctx, ex, q)
			}
			if err != nil {
				return res, fmt.Errorf("%s %s: %w", cl.mode, cl.name, err)
			}
			res.rates[ci] = r
		}
		for ci, cl := range cells {
			if cl.cy.next && !e.raw.hasNext() {
				res.rates[ci] = res.rates[plainTwin(cells, ci)]
				res.cpu[ci] = res.cpu[plainTwin(cells, ci)]
			}
		}
	}
	if c.only != "cycle" && e.sweep {
		fmt.Fprintf(os.Stderr, "%s: sweep ...\n", name)
		r, err := sweep(ctx, ex, fmt.Sprintf("sw.%s.%s", tag, name), c, payload(c), e.pid)
		if err != nil {
			return res, fmt.Errorf("sweep: %w", err)
		}
		res.sweep = r
	}
	return res, nil
}

// lanesKeepOn is the lane side emqd+lanes configures in each worker's
// queue, with a MAX_ACTIVE no run reaches, so the queue keeps its lanes on
// between batches. It was a workaround: a claim on a queue whose lanes all
// emptied that promoted only due lane jobs answered empty, which the cycle
// would take for a lost job. Such a claim now serves the rest of the call
// with the lane selection (docs/verbs.md §4.26.4), so the lane is no longer
// needed; it stays so the side's figures compare with those of
// bench/README.md.
const lanesKeepOn = "l0"

func keepLanesOn(ctx context.Context, rdb redis.UniversalClient, cy cycle, q string) error {
	for w := 0; w < cy.workers; w++ {
		if err := rdb.Do(ctx, "EMQ.LANE", cy.qname(q, w), lanesKeepOn, "MAX_ACTIVE", 1<<30).Err(); err != nil {
			return fmt.Errorf("EMQ.LANE: %w", err)
		}
	}
	return nil
}

func payload(c config) string { return strings.Repeat("x", c.payloadBytes) }

func newClient(addr string, pool int) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr: addr, PoolSize: pool, MinIdleConns: 0, MaxRetries: -1,
		ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second,
	})
}

func randTag() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// jobID returns the n-th id of a run: "JOB" + 11 base-62 digits, fixed width,
// so ids of one run sort by n (docs/verbs.md §1.4: ids sort by bytes in
// mint order).
func jobID(base uint64, n uint64) string {
	const digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	v := base + n
	var b [14]byte
	copy(b[:], "JOB")
	for i := 13; i >= 3; i-- {
		b[i] = digits[v%62]
		v /= 62
	}
	return string(b[:])
}

// executor builds the commands of one transition for one side.
type executor interface {
	client() redis.UniversalClient
	enqueue(ctx context.Context, q, id, payload string) *redis.Cmd
	claim(ctx context.Context, q string, leaseMs int) *redis.Cmd
	complete(ctx context.Context, q, id, token string) *redis.Cmd
	fail(ctx context.Context, q, id, token string, maxAttempts, delayMs int, msg string) *redis.Cmd
	sweep(ctx context.Context, q string, maxStalled, limit int) *redis.Cmd
	// claimMany claims up to n jobs in one command when the side can (setup
	// of the sweep timing only); nil means "send n claims".
	claimMany(ctx context.Context, q string, leaseMs, n int) *redis.Cmd
}

type nativeExec struct{ rdb *redis.Client }

func (e *nativeExec) client() redis.UniversalClient { return e.rdb }
func (e *nativeExec) enqueue(ctx context.Context, q, id, payload string) *redis.Cmd {
	return redis.NewCmd(ctx, "EMQ.ENQUEUE", q, id, payload)
}
func (e *nativeExec) claim(ctx context.Context, q string, leaseMs int) *redis.Cmd {
	return redis.NewCmd(ctx, "EMQ.CLAIM", q, leaseMs)
}
func (e *nativeExec) complete(ctx context.Context, q, id, token string) *redis.Cmd {
	return redis.NewCmd(ctx, "EMQ.COMPLETE", q, id, token)
}
func (e *nativeExec) fail(ctx context.Context, q, id, token string, maxAttempts, delayMs int, msg string) *redis.Cmd {
	return redis.NewCmd(ctx, "EMQ.FAIL", q, id, token, maxAttempts, delayMs, msg)
}
func (e *nativeExec) sweep(ctx context.Context, q string, maxStalled, limit int) *redis.Cmd {
	return redis.NewCmd(ctx, "EMQ.STALLED.CHECK", q, maxStalled, limit)
}
func (e *nativeExec) claimMany(ctx context.Context, q string, leaseMs, n int) *redis.Cmd {
	return redis.NewCmd(ctx, "EMQ.CLAIM", q, leaseMs, "COUNT", n)
}

type scriptExec struct{ rdb *redis.Client }

func evalsha(ctx context.Context, s lua.Script, keys []string, args ...any) *redis.Cmd {
	a := make([]any, 0, 3+len(keys)+len(args))
	a = append(a, "EVALSHA", s.SHA, len(keys))
	for _, k := range keys {
		a = append(a, k)
	}
	a = append(a, args...)
	return redis.NewCmd(ctx, a...)
}

func (e *scriptExec) client() redis.UniversalClient { return e.rdb }
func (e *scriptExec) enqueue(ctx context.Context, q, id, payload string) *redis.Cmd {
	k := lua.Keys{Q: q}
	return evalsha(ctx, lua.Enqueue, []string{k.Row(id), k.Pending()}, id, payload)
}
func (e *scriptExec) claim(ctx context.Context, q string, leaseMs int) *redis.Cmd {
	k := lua.Keys{Q: q}
	return evalsha(ctx, lua.Claim, []string{k.Pending(), k.Active(), k.Schedule()}, k.Prefix(), leaseMs)
}
func (e *scriptExec) complete(ctx context.Context, q, id, token string) *redis.Cmd {
	k := lua.Keys{Q: q}
	return evalsha(ctx, lua.Complete, []string{k.Active(), k.Row(id), k.Completed()}, id, token)
}
func (e *scriptExec) fail(ctx context.Context, q, id, token string, maxAttempts, delayMs int, msg string) *redis.Cmd {
	k := lua.Keys{Q: q}
	return evalsha(ctx, lua.Retry, []string{k.Active(), k.Schedule(), k.Dead(), k.Row(id)}, id, token, delayMs, maxAttempts, msg, k.Prefix())
}
func (e *scriptExec) sweep(ctx context.Context, q string, maxStalled, limit int) *redis.Cmd {
	k := lua.Keys{Q: q}
	return evalsha(ctx, lua.SweepStalled, []string{k.Active(), k.Pending(), k.Dead()}, k.Prefix(), maxStalled, limit)
}
func (e *scriptExec) claimMany(ctx context.Context, q string, leaseMs, n int) *redis.Cmd { return nil }

// send runs cmds in one round trip (one command: a plain call; more: a
// pipeline) and returns the first transport error. Error replies stay on
// their commands.
func send(ctx context.Context, rdb redis.UniversalClient, cmds []*redis.Cmd) error {
	if len(cmds) == 1 {
		err := rdb.Process(ctx, cmds[0])
		if err != nil && !isReply(err) {
			return err
		}
		return nil
	}
	p := rdb.Pipeline()
	for _, c := range cmds {
		_ = p.Process(ctx, c)
	}
	_, err := p.Exec(ctx)
	if err != nil && !isReply(err) {
		return err
	}
	return nil
}

// isReply reports whether err is a server reply (an error reply or nil)
// rather than a transport failure.
func isReply(err error) bool {
	if errors.Is(err, redis.Nil) {
		return true
	}
	var re redis.Error
	return errors.As(err, &re)
}

type claimed struct{ id, token string }

// parseClaim reads the first job of a claim reply ([[id, payload, token,
// ...]] for both sides).
func parseClaim(c *redis.Cmd) (claimed, error) {
	v, err := c.Result()
	if err != nil {
		return claimed{}, err
	}
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		return claimed{}, fmt.Errorf("claim: nothing claimed (%v)", v)
	}
	job, ok := arr[0].([]any)
	if !ok || len(job) < 3 {
		return claimed{}, fmt.Errorf("claim: unexpected reply %v", v)
	}
	id, _ := job[0].(string)
	tok, _ := job[2].(string)
	return claimed{id, tok}, nil
}

type cycle struct {
	jobs, workers, batch int
	retry                bool
	// next runs the cycle with the finishing verbs' NEXT form
	// (workerRawNext; the lean client only).
	next bool
	// stats, when set, is called after a lean-client run with each
	// worker's batches of job numbers taken (of up to batch jobs) and
	// round trips made.
	stats func(batches, trips int)
	// cpuNs, when set, reads the server's CPU time (ns, all threads); a
	// lean-client run then sets *cpuPerJob to the server CPU per job (us)
	// from the first command to the last reply.
	cpuNs     func() (int64, error)
	cpuPerJob *float64
	leaseMs   int
	payload   string
	// place, when set, gives the queue of a worker's name "<q>.<w>" (the
	// cluster sides put it on a chosen primary).
	place func(name string) string
}

// qname is the queue of worker w of run q.
func (cy cycle) qname(q string, w int) string {
	name := fmt.Sprintf("%s.%d", q, w)
	if cy.place != nil {
		return cy.place(name)
	}
	return name
}

// run drives the cycle with its workers, each on its own queue q.<w>, and
// returns jobs/s. It checks every reply and, at the end, that the queues hold
// exactly `jobs` completions and nothing pending, active or scheduled.
func (cy cycle) run(ctx context.Context, ex executor, q string) (float64, error) {
	var next atomic.Int64
	base := uint64(time.Now().UnixMilli()) << 20
	var wg sync.WaitGroup
	errs := make(chan error, cy.workers)
	start := time.Now()
	for w := 0; w < cy.workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			if err := cy.worker(ctx, ex, cy.qname(q, w), base, &next); err != nil {
				errs <- err
			}
		}(w)
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	if err := cy.check(ctx, ex.client(), q); err != nil {
		return 0, err
	}
	return float64(cy.jobs) / elapsed.Seconds(), nil
}

// check verifies the outcome of a run on queues q.<w>: exactly `jobs`
// completions counted and nothing pending, active, scheduled or dead.
func (cy cycle) check(ctx context.Context, rdb redis.UniversalClient, q string) error {
	var total int64
	for w := 0; w < cy.workers; w++ {
		k := lua.Keys{Q: cy.qname(q, w)}
		p := rdb.Pipeline()
		done := p.HGet(ctx, k.Completed(), "count")
		// Lanes leave no keys once empty and idle, but a configured one
		// (docs/verbs.md §4.26.4).
		known := p.ZRange(ctx, k.Prefix()+"lanes:known", 0, -1)
		sets := []*redis.IntCmd{p.ZCard(ctx, k.Pending()), p.ZCard(ctx, k.Active()), p.ZCard(ctx, k.Schedule()), p.ZCard(ctx, k.Dead())}
		if _, err := p.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		n, _ := done.Int64()
		total += n
		if err := checkLanes(ctx, rdb, k, known.Val()); err != nil {
			return err
		}
		for _, s := range sets {
			if s.Val() != 0 {
				return fmt.Errorf("queue %s: %s holds %d members after the run", k.Q, s.Args()[1], s.Val())
			}
		}
	}
	if total != int64(cy.jobs) {
		return fmt.Errorf("%d completions counted, want %d", total, cy.jobs)
	}
	return nil
}

// checkLanes checks the lanes left in queue k's registry after a run: at
// most the one lane side emqd+lanes configures (lanesKeepOn), with no
// pending job and every slot given back (docs/verbs.md §4.26.3, §4.26.4).
func checkLanes(ctx context.Context, rdb redis.UniversalClient, k lua.Keys, known []string) error {
	if len(known) > 1 || (len(known) == 1 && known[0] != lanesKeepOn) {
		return fmt.Errorf("queue %s: lanes %v left after the run", k.Q, known)
	}
	for _, l := range known {
		n, err := rdb.ZCard(ctx, k.Prefix()+"lane:"+l+":pending").Result()
		if err != nil {
			return err
		}
		active, err := rdb.HGet(ctx, k.Prefix()+"lane:"+l, "active").Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		if n != 0 || (active != "" && active != "0") {
			return fmt.Errorf("queue %s: lane %s holds %d pending, %q active after the run", k.Q, l, n, active)
		}
	}
	return nil
}

func (cy cycle) worker(ctx context.Context, ex executor, q string, base uint64, next *atomic.Int64) error {
	rdb := ex.client()
	ids := make([]string, 0, cy.batch)
	cmds := make([]*redis.Cmd, 0, cy.batch)
	jobs := make([]claimed, 0, cy.batch)
	for {
		// Take up to batch job numbers.
		first := next.Add(int64(cy.batch)) - int64(cy.batch)
		if first >= int64(cy.jobs) {
			return nil
		}
		n := min(int64(cy.batch), int64(cy.jobs)-first)
		ids = ids[:0]
		for i := int64(0); i < n; i++ {
			ids = append(ids, jobID(base, uint64(first+i)))
		}
		// ENQUEUE.
		cmds = cmds[:0]
		for _, id := range ids {
			cmds = append(cmds, ex.enqueue(ctx, q, id, cy.payload))
		}
		if err := send(ctx, rdb, cmds); err != nil {
			return err
		}
		for i, c := range cmds {
			if s, err := c.Text(); err != nil || s != ids[i] {
				return fmt.Errorf("enqueue %s: %q %v", ids[i], s, err)
			}
		}
		claim := func(wantTok string) error {
			cmds = cmds[:0]
			for range ids {
				cmds = append(cmds, ex.claim(ctx, q, cy.leaseMs))
			}
			if err := send(ctx, rdb, cmds); err != nil {
				return err
			}
			jobs = jobs[:0]
			for _, c := range cmds {
				j, err := parseClaim(c)
				if err != nil {
					return err
				}
				if j.token != wantTok {
					return fmt.Errorf("claim %s: token %q, want %q", j.id, j.token, wantTok)
				}
				jobs = append(jobs, j)
			}
			return nil
		}
		if err := claim("1"); err != nil {
			return err
		}
		if cy.retry {
			cmds = cmds[:0]
			for _, j := range jobs {
				cmds = append(cmds, ex.fail(ctx, q, j.id, j.token, 3, 0, "boom"))
			}
			if err := send(ctx, rdb, cmds); err != nil {
				return err
			}
			for i, c := range cmds {
				v, err := c.Result()
				if err != nil {
					return fmt.Errorf("fail %s: %w", jobs[i].id, err)
				}
				verdict := v
				if arr, ok := v.([]any); ok && len(arr) > 0 { // native: ["scheduled", f]
					verdict = arr[0]
				}
				if verdict != "scheduled" {
					return fmt.Errorf("fail %s: %v, want scheduled", jobs[i].id, v)
				}
			}
			if err := claim("2"); err != nil {
				return err
			}
		}
		cmds = cmds[:0]
		for _, j := range jobs {
			cmds = append(cmds, ex.complete(ctx, q, j.id, j.token))
		}
		if err := send(ctx, rdb, cmds); err != nil {
			return err
		}
		for i, c := range cmds {
			if v, err := c.Int64(); err != nil || v != 1 {
				return fmt.Errorf("complete %s: %d %v", jobs[i].id, v, err)
			}
		}
	}
}

type sweepResult struct {
	elapsed      time.Duration
	calls, swept int
	// cpu is the server's CPU time over the timed calls (all threads'
	// schedstat; 0: not read): on a loaded machine it moves much less than
	// elapsed, which counts the time the server waited for its core.
	cpu time.Duration
}

// sweep fills queue q with c.sweepLeases active jobs leased for 1 ms, waits
// for the leases to expire, then times sweep calls until one comes back
// empty, and checks that every lease was swept. pid (0: unknown) is the
// server's process, whose CPU over the timed calls r.cpu reports.
func sweep(ctx context.Context, ex executor, q string, c config, payload string, pid int) (sweepResult, error) {
	rdb := ex.client()
	base := uint64(time.Now().UnixMilli()) << 20
	const chunk = 1000
	for first := 0; first < c.sweepLeases; first += chunk {
		n := min(chunk, c.sweepLeases-first)
		cmds := make([]*redis.Cmd, 0, n)
		for i := 0; i < n; i++ {
			cmds = append(cmds, ex.enqueue(ctx, q, jobID(base, uint64(first+i)), payload))
		}
		if err := send(ctx, rdb, cmds); err != nil {
			return sweepResult{}, err
		}
		if many := ex.claimMany(ctx, q, 1, n); many != nil {
			cmds = []*redis.Cmd{many}
		} else {
			cmds = cmds[:0]
			for i := 0; i < n; i++ {
				cmds = append(cmds, ex.claim(ctx, q, 1))
			}
		}
		if err := send(ctx, rdb, cmds); err != nil {
			return sweepResult{}, err
		}
		for _, cm := range cmds {
			if err := cm.Err(); err != nil {
				return sweepResult{}, fmt.Errorf("setup claim: %w", err)
			}
		}
	}
	k := lua.Keys{Q: q}
	if n, err := rdb.ZCard(ctx, k.Active()).Result(); err != nil || n != int64(c.sweepLeases) {
		return sweepResult{}, fmt.Errorf("setup: %d active, want %d (%v)", n, c.sweepLeases, err)
	}
	time.Sleep(20 * time.Millisecond) // every lease (1 ms) has expired
	var r sweepResult
	var cpu0 int64
	if pid != 0 {
		var err error
		if cpu0, err = procs.CPUNanos(pid); err != nil {
			return r, err
		}
	}
	start := time.Now()
	for {
		cmd := ex.sweep(ctx, q, c.maxStalled, c.sweepLimit)
		if err := rdb.Process(ctx, cmd); err != nil {
			return r, err
		}
		r.calls++
		v, _ := cmd.Result()
		arr, ok := v.([]any)
		if !ok || len(arr) != 2 {
			return r, fmt.Errorf("sweep reply %v", v)
		}
		rec, _ := arr[0].([]any)
		dead, _ := arr[1].([]any)
		if len(rec)+len(dead) == 0 {
			break
		}
		r.swept += len(rec) + len(dead)
	}
	r.elapsed = time.Since(start)
	if pid != 0 {
		cpu1, err := procs.CPUNanos(pid)
		if err != nil {
			return r, err
		}
		r.cpu = time.Duration(cpu1 - cpu0)
	}
	if r.swept != c.sweepLeases {
		return r, fmt.Errorf("swept %d, want %d", r.swept, c.sweepLeases)
	}
	if n, err := rdb.ZCard(ctx, k.Active()).Result(); err != nil || n != 0 {
		return r, fmt.Errorf("after the sweep: %d active (%v)", n, err)
	}
	return r, nil
}
