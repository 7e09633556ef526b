// Command compare measures emqd against a reference server on one machine
// (--redis-bin: Debian's redis-server 7 by default, Valkey 8.0.1's
// valkey-server when bench/compare.sh is given its directory), per core, and prints every measure with both sides and the ratio
// emqd/redis: redis-benchmark -P 1 and -P 32, the job cycle and the stall
// sweep (bench/cmd/jobcycle), the bytes of a pending job, the boot from an
// AOF (bench/cmd/aofboot) and the peak resident memory of big commands.
//
// Both servers run pinned to one core (--server-cpu, taskset -c) and every
// client (redis-benchmark, the drivers) on another (bench/compare.sh runs
// this command under taskset -c 1). Rounds alternate: emqd, redis, emqd,
// redis ... and the tables print medians, so a change of the machine's load
// during the run falls on both sides alike.
//
// Run it through bench/compare.sh, which builds the binaries first.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emqd/emqd/bench/internal/procs"
	"github.com/emqd/emqd/bench/lua"
	"github.com/redis/go-redis/v9"
)

type config struct {
	quick                  bool
	rounds                 int
	serverCPU, clientCPU   string
	emqdBin, redisBin      string
	jobcycleBin, aofbootBn string
	benchBin               string
	only                   map[string]bool

	rbRequests, rbClients int
	cycleJobs             int
	sweepLeases           int
	memJobs               int
	memIdle, memCycle     time.Duration
	memWorkers            int
	conns                 int
	bootJobs              int
	bigValueMB            int
	zaddMembers           []int
}

func main() {
	var c config
	var only, zadd string
	flag.BoolVar(&c.quick, "quick", false, "a smoke run: small counts, one round")
	flag.IntVar(&c.rounds, "rounds", 3, "alternating rounds per measure (medians printed)")
	flag.StringVar(&c.serverCPU, "server-cpu", "0", "CPU list both servers are pinned to (taskset -c)")
	flag.StringVar(&c.clientCPU, "client-cpu", "1", "CPU list redis-benchmark runs on (the drivers inherit this process's affinity)")
	flag.StringVar(&c.emqdBin, "emqd-bin", "bench/bin/emqd", "emqd binary")
	flag.StringVar(&c.redisBin, "redis-bin", "redis-server", "redis-server binary")
	flag.StringVar(&c.benchBin, "redis-benchmark", "redis-benchmark", "redis-benchmark binary")
	flag.StringVar(&c.jobcycleBin, "jobcycle-bin", "bench/bin/jobcycle", "bench/cmd/jobcycle binary")
	flag.StringVar(&c.aofbootBn, "aofboot-bin", "bench/bin/aofboot", "bench/cmd/aofboot binary")
	flag.StringVar(&only, "only", "rb,cycle,mem,conn,boot,peak", "measures to run: rb (redis-benchmark), cycle (job cycle and stall sweep), mem (bytes per job), conn (bytes per idle connection), boot, peak")
	flag.IntVar(&c.rbRequests, "rb-requests", 200000, "redis-benchmark -n per test and round")
	flag.IntVar(&c.rbClients, "rb-clients", 50, "redis-benchmark -c")
	flag.IntVar(&c.cycleJobs, "cycle-jobs", 200000, "jobs per job-cycle cell and round")
	flag.IntVar(&c.sweepLeases, "sweep-leases", 100000, "expired leases of the stall sweep")
	flag.IntVar(&c.memJobs, "mem-jobs", 200000, "pending jobs of the memory measure")
	flag.DurationVar(&c.memIdle, "mem-idle", time.Minute, "idle time of the memory measure before its second reading")
	flag.DurationVar(&c.memCycle, "mem-cycle", 30*time.Second, "length of the memory measure's job cycle (the backlog kept at --mem-jobs)")
	flag.IntVar(&c.conns, "conns", 5000, "idle connections of the per-connection memory measure")
	flag.IntVar(&c.memWorkers, "mem-workers", 8, "workers of the memory measure's job cycle")
	flag.IntVar(&c.bootJobs, "boot-jobs", 500000, "jobs in the AOF of the boot measure")
	flag.IntVar(&c.bigValueMB, "big-value-mb", 100, "size of the one HSET value of the peak measure (MB)")
	flag.StringVar(&zadd, "zadd-members", "1000000,10000000", "member counts of the one-ZADD peak measures")
	flag.Parse()
	if c.quick {
		c.rounds = 1
		c.rbRequests = 20000
		c.cycleJobs = 5000
		c.sweepLeases = 5000
		c.memJobs = 20000
		c.memIdle = 5 * time.Second
		c.memCycle = 5 * time.Second
		c.conns = 500
		c.bootJobs = 20000
		c.bigValueMB = 10
		zadd = "100000"
	}
	c.only = map[string]bool{}
	for _, s := range strings.Split(only, ",") {
		c.only[strings.TrimSpace(s)] = true
	}
	for _, s := range strings.Split(zadd, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			fmt.Fprintln(os.Stderr, "compare: bad --zadd-members")
			os.Exit(2)
		}
		c.zaddMembers = append(c.zaddMembers, n)
	}
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(1)
	}
}

// row is one line of the final table. higher says which way is better for
// emqd: the ratio is emqd/redis either way, and the goal reads with it.
type row struct {
	section, name string
	emqd, redis   float64
	unit          string
	goal          string // e.g. ">= 1.0x"
	ok            func(ratio float64) bool
}

func (r row) ratio() float64 {
	if r.redis == 0 {
		return 0
	}
	return r.emqd / r.redis
}

func atLeast(g float64) (string, func(float64) bool) {
	return fmt.Sprintf(">= %.1fx", g), func(r float64) bool { return r >= g }
}

func atMost(g float64) (string, func(float64) bool) {
	return fmt.Sprintf("<= %.1fx", g), func(r float64) bool { return r > 0 && r <= g }
}

func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "[%s] "+format+"\n", append([]any{time.Now().Format("15:04:05")}, a...)...)
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func run(c config) error {
	start := time.Now()
	load0 := loadavg()
	var rows []row
	add := func(rs ...row) { rows = append(rows, rs...) }
	if c.only["rb"] {
		rs, err := redisBenchmark(c)
		if err != nil {
			return fmt.Errorf("redis-benchmark: %w", err)
		}
		add(rs...)
	}
	if c.only["cycle"] {
		rs, err := jobCycle(c)
		if err != nil {
			return fmt.Errorf("job cycle: %w", err)
		}
		add(rs...)
	}
	if c.only["mem"] {
		rs, err := jobMemory(c)
		if err != nil {
			return fmt.Errorf("bytes per job: %w", err)
		}
		add(rs...)
	}
	if c.only["conn"] {
		rs, err := connMemory(c)
		if err != nil {
			return fmt.Errorf("bytes per connection: %w", err)
		}
		add(rs...)
	}
	if c.only["boot"] {
		rs, err := bootTime(c)
		if err != nil {
			return fmt.Errorf("boot: %w", err)
		}
		add(rs...)
	}
	if c.only["peak"] {
		rs, err := peakMemory(c)
		if err != nil {
			return fmt.Errorf("peak memory: %w", err)
		}
		add(rs...)
	}
	host, _ := os.Hostname()
	fmt.Printf("\nemqd against %s %s (%s), servers on CPU %s, clients on CPU %s; %d round(s), medians; ratio = emqd / reference (the column \"redis\")\n",
		filepath.Base(c.redisBin), redisVersion(c.redisBin), c.redisBin, c.serverCPU, c.clientCPU, c.rounds)
	fmt.Printf("host %s, load average %s at the start, %s at the end, %s elapsed%s\n",
		host, load0, loadavg(), time.Since(start).Round(time.Second), map[bool]string{true: " (quick mode: smoke counts)", false: ""}[c.quick])
	fmt.Printf("\n%-54s %14s %14s %-6s %8s %8s %s\n", "measure", "emqd", "redis", "unit", "ratio", "goal", "")
	section := ""
	met, total := 0, 0
	for _, r := range rows {
		if r.section != section {
			section = r.section
			fmt.Printf("-- %s\n", section)
		}
		verdict := ""
		if r.ok != nil {
			total++
			if r.ok(r.ratio()) {
				verdict = "met"
				met++
			} else {
				verdict = "NOT MET"
			}
		}
		fmt.Printf("%-54s %14s %14s %-6s %7.2fx %8s %s\n", r.name, fmtNum(r.emqd), fmtNum(r.redis), r.unit, r.ratio(), r.goal, verdict)
	}
	fmt.Printf("\n%d of %d goals met\n", met, total)
	return nil
}

func fmtNum(v float64) string {
	switch {
	case v >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

func redisVersion(bin string) string {
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return "?"
	}
	for _, f := range strings.Fields(string(out)) {
		if strings.HasPrefix(f, "v=") {
			return f[2:]
		}
	}
	return strings.TrimSpace(string(out))
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// ---- redis-benchmark

// rbTest is one redis-benchmark test: a -t name, or a custom command.
type rbTest struct {
	name string   // as printed
	args []string // after the common flags
}

var rbTests = []rbTest{
	{"PING_INLINE", []string{"-t", "ping_inline"}},
	{"HSET", []string{"-t", "hset"}},
	{"ZADD", []string{"-t", "zadd"}},
	{"ZPOPMIN", []string{"-t", "zpopmin"}},
	{"HGET", []string{"HGET", "bench:h", "f"}},
	{"HINCRBY", []string{"HINCRBY", "bench:h", "n", "1"}},
	{"ZRANGEBYSCORE k -inf +inf LIMIT 0 10", []string{"ZRANGEBYSCORE", "bench:z", "-inf", "+inf", "LIMIT", "0", "10"}},
}

// populate writes the keys the custom commands read: a hash with fields f
// and n, a 1000-member sorted set.
func populate(addr string) error {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2})
	defer rdb.Close()
	if err := rdb.HSet(ctx, "bench:h", "f", "somevalue", "n", 0).Err(); err != nil {
		return err
	}
	zs := make([]redis.Z, 0, 1000)
	for i := 1; i <= 1000; i++ {
		zs = append(zs, redis.Z{Score: float64(i), Member: fmt.Sprintf("m:%d", i)})
	}
	return rdb.ZAdd(ctx, "bench:z", zs...).Err()
}

func redisBenchmark(c config) ([]row, error) {
	e, err := procs.StartEmqdCPU(c.serverCPU, c.emqdBin)
	if err != nil {
		return nil, err
	}
	defer e.Stop(5 * time.Second)
	r, err := procs.StartRedisCPU(c.serverCPU, c.redisBin)
	if err != nil {
		return nil, err
	}
	defer r.Stop(5 * time.Second)
	for _, p := range []*procs.Proc{e, r} {
		if err := populate(p.Addr); err != nil {
			return nil, fmt.Errorf("%s: populate: %w", p.Name, err)
		}
	}
	type key struct {
		p    int
		test string
		side int
	}
	res := map[key][]float64{}
	cpu := map[key][]float64{}  // server CPU per request, us
	wait := map[key][]float64{} // server run-queue wait, % of the test's wall time
	ccpu := map[key][]float64{} // redis-benchmark's CPU per request, us
	for round := 0; round < c.rounds; round++ {
		for _, p := range []int{1, 32} {
			logf("redis-benchmark round %d/%d, -P %d", round+1, c.rounds, p)
			for _, t := range rbTests {
				for side, proc := range []*procs.Proc{e, r} {
					ns0, w0, err := procs.SchedNanos(proc.Cmd.Process.Pid)
					if err != nil {
						return nil, err
					}
					t0 := time.Now()
					rps, client, err := runRB(c, proc.Addr, p, t)
					if err != nil {
						return nil, fmt.Errorf("%s -P %d %s: %w", proc.Name, p, t.name, err)
					}
					wall := time.Since(t0)
					ns1, w1, err := procs.SchedNanos(proc.Cmd.Process.Pid)
					if err != nil {
						return nil, err
					}
					k := key{p, t.name, side}
					res[k] = append(res[k], rps)
					cpu[k] = append(cpu[k], float64(ns1-ns0)/1e3/float64(c.rbRequests))
					wait[k] = append(wait[k], 100*float64(w1-w0)/float64(wall.Nanoseconds()))
					ccpu[k] = append(ccpu[k], float64(client.Nanoseconds())/1e3/float64(c.rbRequests))
				}
			}
		}
	}
	var rows []row
	for _, p := range []int{1, 32} {
		g, ok := atLeast(1.0)
		for _, t := range rbTests {
			rows = append(rows, row{
				section: fmt.Sprintf("redis-benchmark -P %d -c %d -n %d (requests/s)", p, c.rbClients, c.rbRequests),
				name:    t.name, unit: "rps",
				emqd: median(res[key{p, t.name, 0}]), redis: median(res[key{p, t.name, 1}]),
				goal: g, ok: ok,
			})
		}
		// With one request per round trip the single-threaded client is
		// the bottleneck and both servers answer at its rate: the CPU
		// each server spent per request is what compares them per core.
		// Shown beside the goal rows, with no goal of its own.
		for _, t := range rbTests {
			rows = append(rows, row{
				section: fmt.Sprintf("redis-benchmark -P %d: server CPU per request (us; lower is better, no goal)", p),
				name:    t.name, unit: "us",
				emqd: median(cpu[key{p, t.name, 0}]), redis: median(cpu[key{p, t.name, 1}]),
			})
		}
		// Why a rate and the CPU per request disagree: the share of the
		// test's wall time the server waited for CPU 0 behind other
		// processes, and what the client on CPU 1 spent per request
		// (bench/README.md, "`-P 32` and `-P 1` (issue 25, round 6)").
		for _, t := range rbTests {
			rows = append(rows, row{
				section: fmt.Sprintf("redis-benchmark -P %d: server run-queue wait (%% of the wall time; no goal)", p),
				name:    t.name, unit: "%",
				emqd: median(wait[key{p, t.name, 0}]), redis: median(wait[key{p, t.name, 1}]),
			})
		}
		for _, t := range rbTests {
			rows = append(rows, row{
				section: fmt.Sprintf("redis-benchmark -P %d: redis-benchmark's CPU per request (us; no goal)", p),
				name:    t.name, unit: "us",
				emqd: median(ccpu[key{p, t.name, 0}]), redis: median(ccpu[key{p, t.name, 1}]),
			})
		}
	}
	return rows, nil
}

// runRB runs one redis-benchmark test on the client CPUs and returns its
// requests per second and the CPU time (user and system) redis-benchmark
// used. An error reply stops redis-benchmark 7 and fails the measure.
func runRB(c config, addr string, p int, t rbTest) (float64, time.Duration, error) {
	host, port, _ := net.SplitHostPort(addr)
	args := []string{"-c", c.clientCPU, c.benchBin, "-h", host, "-p", port, "-c", strconv.Itoa(c.rbClients),
		"-n", strconv.Itoa(c.rbRequests), "-P", strconv.Itoa(p), "--csv"}
	args = append(args, t.args...)
	cmd := exec.Command("taskset", args...) // taskset execs redis-benchmark: one process
	out, err := cmd.CombinedOutput()
	if err != nil {
		return 0, 0, fmt.Errorf("%v: %s", err, out)
	}
	client := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	for _, line := range strings.Split(strings.ReplaceAll(string(out), "\r", "\n"), "\n") {
		if !strings.HasPrefix(line, `"`) || strings.HasPrefix(line, `"test"`) {
			continue
		}
		f := strings.Split(line, `","`)
		if len(f) < 2 {
			continue
		}
		v, err := strconv.ParseFloat(strings.Trim(f[1], `"`), 64)
		if err != nil {
			return 0, 0, fmt.Errorf("bad csv line %q", line)
		}
		return v, client, nil
	}
	return 0, 0, fmt.Errorf("no result in %q", out)
}

// ---- job cycle and stall sweep (bench/cmd/jobcycle)

func jobCycle(c config) ([]row, error) {
	args := []string{"--emqd-bin", c.emqdBin, "--redis-bin", c.redisBin, "--rounds", strconv.Itoa(c.rounds),
		"--server-cpu", c.serverCPU, "--tsv", "--sides", "emqd,redis", "--jobs", strconv.Itoa(c.cycleJobs),
		"--sweep-leases", strconv.Itoa(c.sweepLeases), "--sweep-limit", "100"}
	logf("job cycle and stall sweep: %s %s", c.jobcycleBin, strings.Join(args, " "))
	cmd := exec.Command(c.jobcycleBin, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, err
	}
	var rows, cpuRows []row
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(line, "\t")
		switch {
		case len(f) == 9 && f[0] == "cycle":
			e, _ := strconv.ParseFloat(f[5], 64)
			r, _ := strconv.ParseFloat(f[6], 64)
			name := fmt.Sprintf("%s, %s workers, %s per round trip", f[1], f[3], f[4])
			rw := row{section: "job cycle, native verbs against Lua scripts (jobs/s)", unit: "jobs/s", emqd: e, redis: r, name: name}
			// Beside the rates, with no goal: the servers' CPU per job (a
			// loaded machine moves it less than the rate).
			ec, _ := strconv.ParseFloat(f[7], 64)
			rc, _ := strconv.ParseFloat(f[8], 64)
			cpuRows = append(cpuRows, row{section: "job cycle: server CPU per job (us; lower is better, no goal)", unit: "us", emqd: ec, redis: rc, name: name})
			// The goal rows (bench/README.md, "The job cycle with NEXT"): one
			// command per round trip in the NEXT form (emqd's ENQUEUE and
			// COMPLETE ... NEXT against the scripts' ENQUEUE, CLAIM,
			// COMPLETE), >= 2x; pipelined in the plain form, >= 3x, the
			// form that goal was set in. The other rows are shown beside.
			switch {
			case f[1] == "enq,complete NEXT" && f[4] == "1":
				rw.goal, rw.ok = atLeast(2)
			case f[1] == "enq,claim,complete" && f[4] != "1":
				rw.goal, rw.ok = atLeast(3)
			}
			rows = append(rows, rw)
		case len(f) == 5 && f[0] == "sweep":
			e, _ := strconv.ParseFloat(f[3], 64)
			r, _ := strconv.ParseFloat(f[4], 64)
			n, _ := strconv.ParseFloat(f[1], 64)
			g, ok := atLeast(3)
			rows = append(rows, row{section: "stall sweep (expired leases/s)", unit: "lease/s",
				name: fmt.Sprintf("%s expired leases, %s per call", f[1], f[2]), emqd: n / e, redis: n / r, goal: g, ok: ok})
		}
	}
	if len(rows) == 0 {
		return nil, errors.New("jobcycle printed no results")
	}
	return append(rows, cpuRows...), nil
}

// ---- bytes per pending job

// memPhases are the moments the resident set is read, in order: right after
// the fill, after memIdle of idleness, the peak during memCycle of a
// sustained job cycle over the same backlog, and after MEMORY PURGE. None
// but the last is preceded by a purge: the first three are what a user
// sees and plans maxmemory against (issue 25).
var memPhases = []string{"after the fill, no purge", "after idle, no purge", "peak during a job cycle, no purge", "after MEMORY PURGE"}

// jobMemory fills each server with memJobs pending jobs (64-byte payloads,
// the same client ids on both) and reads the resident set (/proc VmRSS) of
// the fresh server first, then at each of memPhases. Bytes per job =
// (resident set - fresh) / jobs.
func jobMemory(c config) ([]row, error) {
	var per [2][len4][]float64
	var rss [2][]float64
	var used [2][]float64
	var cpu [2][]float64
	for round := 0; round < c.rounds; round++ {
		for side := 0; side < 2; side++ {
			m, err := memOneSide(c, side == 0)
			if err != nil {
				return nil, err
			}
			for i := range memPhases {
				per[side][i] = append(per[side][i], (m.rss[i]-m.base)/float64(c.memJobs))
			}
			rss[side] = append(rss[side], m.rss[0])
			used[side] = append(used[side], m.used/float64(c.memJobs))
			cpu[side] = append(cpu[side], m.cpuPerCycle)
		}
	}
	g, ok := atMost(1.0)
	sec := fmt.Sprintf("memory of %d pending jobs, 64-byte payloads (resident set growth per job)", c.memJobs)
	var rows []row
	for i, ph := range memPhases {
		rows = append(rows, row{section: sec, name: "bytes per job, " + ph, unit: "B", emqd: median(per[0][i]), redis: median(per[1][i]), goal: g, ok: ok})
	}
	rows = append(rows,
		row{section: sec, name: "used_memory per job after the fill", unit: "B", emqd: median(used[0]), redis: median(used[1])},
		row{section: sec, name: "resident set after the fill", unit: "MB", emqd: median(rss[0]) / 1e6, redis: median(rss[1]) / 1e6},
		row{section: sec, name: "server CPU per job during the cycle", unit: "us", emqd: median(cpu[0]), redis: median(cpu[1])})
	return rows, nil
}

const len4 = 4

type memReading struct {
	base float64       // VmRSS of the fresh server
	rss  [len4]float64 // at each of memPhases
	used float64       // used_memory after the fill
	// cpuPerCycle is the server's CPU (all threads, schedstat) per job of
	// the cycle (enqueue, claim, complete), in microseconds: the price of
	// the collector's setting beside the resident set it buys.
	cpuPerCycle float64
	// fillHeap and peakHeap are emqd's collector fields (INFO memory) after
	// the fill and at the cycle's highest resident reading, for the log.
	fillHeap, peakHeap string
}

// heapFields reads emqd's INFO memory fields that say where a resident
// set's bytes are: the live data, the heap's target, the objects not yet
// collected, the free pages kept, and the soft limit.
func heapFields(ctx context.Context, rdb *redis.Client) string {
	s, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		for _, f := range []string{"go_heap_live", "go_heap_goal", "go_heap_unreclaimed", "go_heap_free_kept", "go_memory_limit"} {
			if v, ok := strings.CutPrefix(line, f+":"); ok {
				if n, err := strconv.ParseFloat(v, 64); err == nil && n > 0 {
					v = fmt.Sprintf("%.1f MB", n/1e6)
				}
				fmt.Fprintf(&b, "%s %s, ", f, v)
			}
		}
	}
	return strings.TrimSuffix(b.String(), ", ")
}

func memOneSide(c config, native bool) (m memReading, err error) {
	var p *procs.Proc
	if native {
		p, err = procs.StartEmqdCPU(c.serverCPU, c.emqdBin)
	} else {
		p, err = procs.StartRedisCPU(c.serverCPU, c.redisBin)
	}
	if err != nil {
		return m, err
	}
	defer p.Stop(5 * time.Second)
	logf("bytes per job: %s, %d jobs", p.Name, c.memJobs)
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr, Protocol: 2, PoolSize: c.memWorkers + 2, ReadTimeout: time.Minute})
	defer rdb.Close()
	var ex interface {
		enqueue(id string) *redis.Cmd
		claim() *redis.Cmd
		complete(id, token string) *redis.Cmd
	}
	k := lua.Keys{Q: "mem"}
	if native {
		ex = memNative{k}
	} else {
		for _, s := range []lua.Script{lua.Enqueue, lua.Claim, lua.Complete} {
			if err := rdb.ScriptLoad(ctx, s.Src).Err(); err != nil {
				return m, err
			}
		}
		ex = memScripted{k}
	}
	rssNow := func() (float64, error) {
		st, err := procs.Status(p.Pid(), "VmRSS")
		if err != nil {
			return 0, err
		}
		return float64(st["VmRSS"]) * 1024, nil
	}
	time.Sleep(200 * time.Millisecond)
	if m.base, err = rssNow(); err != nil {
		return m, err
	}
	base := uint64(time.Now().UnixMilli()) << 20
	const batch = 1000
	for first := 0; first < c.memJobs; first += batch {
		pipe := rdb.Pipeline()
		for i := first; i < min(first+batch, c.memJobs); i++ {
			_ = pipe.Process(ctx, ex.enqueue(jobID(base, uint64(i))))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return m, err
		}
	}
	n, err := rdb.ZCard(ctx, k.Pending()).Result()
	if err != nil || n != int64(c.memJobs) {
		return m, fmt.Errorf("%s: %d pending, want %d (%v)", p.Name, n, c.memJobs, err)
	}
	time.Sleep(200 * time.Millisecond)
	if m.rss[0], err = rssNow(); err != nil {
		return m, err
	}
	if v, err := infoField(ctx, rdb, "memory", "used_memory"); err == nil {
		m.used, _ = strconv.ParseFloat(strings.TrimSpace(v), 64)
	}
	if native {
		m.fillHeap = heapFields(ctx, rdb)
	}
	time.Sleep(c.memIdle)
	if m.rss[1], err = rssNow(); err != nil {
		return m, err
	}
	// The cycle: memWorkers workers each enqueue a new job, claim the
	// oldest and complete it, so the backlog stays at memJobs while rows
	// are created and deleted; the resident set is sampled every 100 ms.
	next := uint64(c.memJobs)
	var mu sync.Mutex
	stop := make(chan struct{})
	errs := make(chan error, c.memWorkers)
	var cycles atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < c.memWorkers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					errs <- nil
					return
				default:
				}
				mu.Lock()
				id := jobID(base, next)
				next++
				mu.Unlock()
				en, cl := ex.enqueue(id), ex.claim()
				pipe := rdb.Pipeline()
				_ = pipe.Process(ctx, en)
				_ = pipe.Process(ctx, cl)
				if _, err := pipe.Exec(ctx); err != nil {
					errs <- err
					return
				}
				j, err := parseClaimed(cl)
				if err != nil {
					errs <- err
					return
				}
				if err := rdb.Process(ctx, ex.complete(j[0], j[1])); err != nil {
					errs <- fmt.Errorf("complete: %w", err)
					return
				}
				cycles.Add(1)
			}
		}()
	}
	cpu0, err := procs.CPUNanos(p.Pid())
	if err != nil {
		return m, err
	}
	deadline := time.Now().Add(c.memCycle)
	var werr error
	for time.Now().Before(deadline) && werr == nil {
		time.Sleep(100 * time.Millisecond)
		r, err := rssNow()
		if err != nil {
			werr = err
		}
		if r > m.rss[2] && native {
			m.peakHeap = heapFields(ctx, rdb)
		}
		m.rss[2] = max(m.rss[2], r)
		select {
		case werr = <-errs:
		default:
		}
	}
	close(stop)
	wg.Wait()
	if werr != nil {
		return m, werr
	}
	cpu1, err := procs.CPUNanos(p.Pid())
	if err != nil {
		return m, err
	}
	if n := cycles.Load(); n > 0 {
		m.cpuPerCycle = float64(cpu1-cpu0) / 1e3 / float64(n)
	}
	gc := ""
	if native {
		if v, err := infoField(ctx, rdb, "memory", "go_gc_percent"); err == nil {
			gc = ", go_gc_percent " + strings.TrimSpace(v)
		}
	}
	logf("%s: %d cycles in %v, %.1f us of server CPU per cycle%s", p.Name, cycles.Load(), c.memCycle, m.cpuPerCycle, gc)
	if err := rdb.Do(ctx, "MEMORY", "PURGE").Err(); err != nil {
		return m, fmt.Errorf("MEMORY PURGE: %w", err)
	}
	time.Sleep(200 * time.Millisecond)
	if m.rss[3], err = rssNow(); err != nil {
		return m, err
	}
	logf("%s: fresh %.1f MB; %s", p.Name, m.base/1e6, fmtPhases(m))
	if native {
		logf("%s: at the fill %s; at the cycle's peak %s", p.Name, m.fillHeap, m.peakHeap)
	}
	return m, nil
}

func fmtPhases(m memReading) string {
	var b strings.Builder
	for i, ph := range memPhases {
		fmt.Fprintf(&b, "%s %.1f MB; ", ph, m.rss[i]/1e6)
	}
	fmt.Fprintf(&b, "used_memory %.1f MB", m.used/1e6)
	return b.String()
}

// parseClaimed reads a one-job claim reply, {{id, payload, token}}, from
// either side.
func parseClaimed(c *redis.Cmd) ([2]string, error) {
	v, err := c.Result()
	if err != nil {
		return [2]string{}, err
	}
	arr, _ := v.([]any)
	if len(arr) == 0 {
		return [2]string{}, fmt.Errorf("claim: nothing claimed (%v)", v)
	}
	job, _ := arr[0].([]any)
	if len(job) < 3 {
		return [2]string{}, fmt.Errorf("claim: unexpected reply %v", v)
	}
	id, _ := job[0].(string)
	tok, _ := job[2].(string)
	return [2]string{id, tok}, nil
}

type memNative struct{ k lua.Keys }

func (e memNative) enqueue(id string) *redis.Cmd {
	return redis.NewCmd(context.Background(), "EMQ.ENQUEUE", e.k.Q, id, memPayload)
}
func (e memNative) claim() *redis.Cmd {
	return redis.NewCmd(context.Background(), "EMQ.CLAIM", e.k.Q, 60000)
}
func (e memNative) complete(id, token string) *redis.Cmd {
	return redis.NewCmd(context.Background(), "EMQ.COMPLETE", e.k.Q, id, token)
}

type memScripted struct{ k lua.Keys }

func (e memScripted) enqueue(id string) *redis.Cmd {
	return redis.NewCmd(context.Background(), "EVALSHA", lua.Enqueue.SHA, 2, e.k.Row(id), e.k.Pending(), id, memPayload)
}
func (e memScripted) claim() *redis.Cmd {
	return redis.NewCmd(context.Background(), "EVALSHA", lua.Claim.SHA, 3, e.k.Pending(), e.k.Active(), e.k.Schedule(), e.k.Prefix(), 60000)
}
func (e memScripted) complete(id, token string) *redis.Cmd {
	return redis.NewCmd(context.Background(), "EVALSHA", lua.Complete.SHA, 3, e.k.Active(), e.k.Row(id), e.k.Completed(), id, token)
}

var memPayload = strings.Repeat("x", 64)

func infoField(ctx context.Context, rdb *redis.Client, section, field string) (string, error) {
	s, err := rdb.Info(ctx, section).Result()
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(s, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("no %s in INFO %s", field, section)
}

// jobID is bench/cmd/jobcycle's: "JOB" and 11 base-62 digits.
func jobID(base, n uint64) string {
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

// ---- bytes per idle connection

// connMemory opens connJobs connections to a fresh server, each sending one
// PING and reading its PONG, then leaves them idle and reads the resident
// set growth per connection (issue 27 item 9: 11.8 KB against Valkey's
// 3.6 KB). The clients stay connected while the server is read.
func connMemory(c config) ([]row, error) {
	var per [2][]float64
	for round := 0; round < c.rounds; round++ {
		for side := 0; side < 2; side++ {
			b, err := connOneSide(c, side == 0)
			if err != nil {
				return nil, err
			}
			per[side] = append(per[side], b)
		}
	}
	g, ok := atMost(1.0)
	return []row{{section: fmt.Sprintf("memory of %d idle connections (resident set growth per connection, after one PING each)", c.conns),
		name: "bytes per idle connection", unit: "B", emqd: median(per[0]), redis: median(per[1]), goal: g, ok: ok}}, nil
}

func connOneSide(c config, native bool) (float64, error) {
	var p *procs.Proc
	var err error
	if native {
		p, err = procs.StartEmqdCPU(c.serverCPU, c.emqdBin)
	} else {
		p, err = procs.StartRedisCPU(c.serverCPU, c.redisBin, "--maxclients", "20000")
	}
	if err != nil {
		return 0, err
	}
	defer p.Stop(5 * time.Second)
	rss := func() (float64, error) {
		st, err := procs.Status(p.Pid(), "VmRSS")
		if err != nil {
			return 0, err
		}
		return float64(st["VmRSS"]) * 1024, nil
	}
	time.Sleep(200 * time.Millisecond)
	before, err := rss()
	if err != nil {
		return 0, err
	}
	conns := make([]net.Conn, 0, c.conns)
	defer func() {
		for _, nc := range conns {
			nc.Close()
		}
	}()
	buf := make([]byte, 16)
	for i := 0; i < c.conns; i++ {
		nc, err := net.Dial("tcp", p.Addr)
		if err != nil {
			return 0, fmt.Errorf("%s: connection %d: %w", p.Name, i, err)
		}
		conns = append(conns, nc)
		if _, err := nc.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
			return 0, err
		}
		_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		if n, err := io.ReadAtLeast(nc, buf, 7); err != nil || string(buf[:n]) != "+PONG\r\n" {
			return 0, fmt.Errorf("%s: connection %d: PING answered %q (%v)", p.Name, i, buf[:n], err)
		}
	}
	time.Sleep(time.Second)
	after, err := rss()
	if err != nil {
		return 0, err
	}
	logf("%s: %d idle connections: %.1f MB -> %.1f MB", p.Name, c.conns, before/1e6, after/1e6)
	return (after - before) / float64(c.conns), nil
}

// ---- boot from an AOF (bench/cmd/aofboot)

func bootTime(c config) ([]row, error) {
	args := []string{"--emqd-bin", c.emqdBin, "--redis-bin", c.redisBin, "--jobs", strconv.Itoa(c.bootJobs),
		"--runs", strconv.Itoa(max(c.rounds, 1)), "--server-cpu", c.serverCPU, "--skip-rewrite", "--tsv"}
	logf("boot: %s %s", c.aofbootBn, strings.Join(args, " "))
	cmd := exec.Command(c.aofbootBn, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(line, "\t")
		if len(f) == 5 && f[0] == "boot" {
			e, _ := strconv.ParseFloat(f[3], 64)
			r, _ := strconv.ParseFloat(f[4], 64)
			g, ok := atMost(1.0)
			return []row{{section: "boot from the AOF as written, exec to first PONG (s)", unit: "s",
				name: fmt.Sprintf("%s jobs (3/4 pending, 1/4 active), %s MB", f[1], f[2]), emqd: e, redis: r, goal: g, ok: ok}}, nil
		}
	}
	return nil, errors.New("aofboot printed no result")
}

// ---- peak memory of big commands

// peakMemory sends one big command to a fresh server (appendonly yes,
// appendfsync everysec, so the AOF's copy of the command counts) and reads
// the peak resident set (VmHWM) once it answered.
func peakMemory(c config) ([]row, error) {
	type job struct {
		name  string
		write func(w *bufio.Writer) error
		want  string
	}
	jobs := []job{{
		name: fmt.Sprintf("one HSET of a %d MB value", c.bigValueMB),
		write: func(w *bufio.Writer) error {
			return writeBigHSet(w, c.bigValueMB<<20)
		},
		want: ":1",
	}}
	for _, n := range c.zaddMembers {
		jobs = append(jobs, job{
			name:  fmt.Sprintf("one ZADD of %d members", n),
			write: func(w *bufio.Writer) error { return writeBigZAdd(w, n) },
			want:  ":" + strconv.Itoa(n),
		})
	}
	var rows []row
	for _, j := range jobs {
		var peak [2][]float64
		var failed [2]string
		for round := 0; round < c.rounds; round++ {
			for side := 0; side < 2; side++ {
				if failed[side] != "" {
					continue
				}
				hwm, err := peakOne(c, side == 0, j.write, j.want)
				if err != nil {
					logf("peak %s: %s: %v", j.name, []string{"emqd", "redis-server"}[side], err)
					failed[side] = err.Error()
					continue
				}
				peak[side] = append(peak[side], hwm)
			}
		}
		g, ok := atMost(1.5)
		rw := row{section: "peak resident set of one big command (VmHWM, appendonly yes)", unit: "MB",
			name: j.name, emqd: median(peak[0]) / 1e6, redis: median(peak[1]) / 1e6, goal: g, ok: ok}
		for side, f := range failed {
			if f != "" {
				rw.name += fmt.Sprintf(" [%s failed: %s]", []string{"emqd", "redis"}[side], f)
			}
		}
		rows = append(rows, rw)
	}
	return rows, nil
}

func peakOne(c config, native bool, write func(*bufio.Writer) error, want string) (float64, error) {
	dir, err := os.MkdirTemp("", "bench-peak-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	var p *procs.Proc
	if native {
		p, err = procs.StartEmqdCPU(c.serverCPU, c.emqdBin, "--appendonly", "yes", "--appendfsync", "everysec", "--dir", dir)
	} else {
		p, err = procs.StartRedisCPU(c.serverCPU, c.redisBin, "--appendonly", "yes", "--appendfsync", "everysec",
			"--dir", filepath.Join(dir), "--auto-aof-rewrite-percentage", "0")
	}
	if err != nil {
		return 0, err
	}
	defer p.Stop(30 * time.Second)
	logf("peak: %s", p.Name)
	nc, err := net.Dial("tcp", p.Addr)
	if err != nil {
		return 0, err
	}
	defer nc.Close()
	errc := make(chan error, 1)
	go func() {
		w := bufio.NewWriterSize(nc, 1<<20)
		if err := write(w); err != nil {
			errc <- err
			return
		}
		errc <- w.Flush()
	}()
	line, err := bufio.NewReader(nc).ReadString('\n')
	if err != nil {
		select {
		case <-p.Done():
			return 0, fmt.Errorf("the server exited (%v)", err)
		default:
		}
		return 0, err
	}
	if werr := <-errc; werr != nil {
		return 0, werr
	}
	if strings.TrimSpace(line) != want {
		return 0, fmt.Errorf("reply %q, want %q", strings.TrimSpace(line), want)
	}
	st, err := procs.Status(p.Pid(), "VmHWM")
	if err != nil {
		return 0, err
	}
	return float64(st["VmHWM"]) * 1024, nil
}

func writeBulkHeader(w *bufio.Writer, n int) {
	w.WriteByte('$')
	w.WriteString(strconv.Itoa(n))
	w.WriteString("\r\n")
}

func writeBulk(w *bufio.Writer, s string) {
	writeBulkHeader(w, len(s))
	w.WriteString(s)
	w.WriteString("\r\n")
}

// writeBigHSet writes HSET big f <n bytes>.
func writeBigHSet(w *bufio.Writer, n int) error {
	w.WriteString("*4\r\n")
	writeBulk(w, "HSET")
	writeBulk(w, "big")
	writeBulk(w, "f")
	writeBulkHeader(w, n)
	chunk := []byte(strings.Repeat("v", 1<<16))
	for left := n; left > 0; {
		k := min(left, len(chunk))
		if _, err := w.Write(chunk[:k]); err != nil {
			return err
		}
		left -= k
	}
	_, err := w.WriteString("\r\n")
	return err
}

// writeBigZAdd writes ZADD big 1 m:1 2 m:2 ... n m:n, generated on the fly.
func writeBigZAdd(w *bufio.Writer, n int) error {
	w.WriteByte('*')
	w.WriteString(strconv.Itoa(2 + 2*n))
	w.WriteString("\r\n")
	writeBulk(w, "ZADD")
	writeBulk(w, "big")
	var num []byte
	for i := 1; i <= n; i++ {
		num = strconv.AppendInt(num[:0], int64(i), 10)
		writeBulkHeader(w, len(num))
		w.Write(num)
		w.WriteString("\r\n")
		writeBulkHeader(w, len(num)+2)
		w.WriteString("m:")
		w.Write(num)
		if _, err := w.WriteString("\r\n"); err != nil {
			return err
		}
	}
	return nil
}
