package check

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/emqd/emqd/internal/testsupport"
	"github.com/redis/go-redis/v9"
)

// Config is one checked run.
type Config struct {
	Bin       string        // the emqd binary
	Dir       string        // its data directory (created; the AOF lives there)
	Duration  time.Duration // how long the clients run
	Producers int           // clients sending EMQ.ENQUEUE
	Workers   int           // clients claiming and releasing
	Lease     time.Duration // lease_ms of every claim
	// FaultEvery is the time between two faults (0: no faults). The faults
	// cycle through Faults in order.
	FaultEvery time.Duration
	Faults     []string // of kill, pause, cut, clock, freeze, partition (default all six)
	Seed       uint64
	// Fsync is emqd's appendfsync: always (the default) or everysec. A
	// SIGKILL loses nothing acknowledged under either (the page cache
	// survives a process crash, docs/durability.md §2.3), so the checker
	// holds both to the same properties. The fault "power" (FsyncFault)
	// is a power loss: under always it must lose nothing acknowledged;
	// under everysec what was acknowledged within PowerBound before a cut
	// may be lost, and CheckRun reports it (power.go).
	Fsync string
	// Cluster, when set, runs against a Valkey or Redis Cluster with the emq
	// FUNCTION library instead of emqd (Bin unused; faults kill, pause,
	// cut, freeze and partition; docs/cluster.md §8).
	Cluster *ClusterConfig
	// Netns runs emqd in a network namespace of its own, reached over two
	// veth pairs, and makes the fault "partition" a real one: the link of
	// the partitioned workers' path goes down and comes back (needs root
	// and iproute2; NetnsAvailable says whether it can). Without it the
	// partition is a relay on loopback that holds the bytes.
	Netns bool
	// TmpfsMB, when above 0, mounts a tmpfs of that many MB on Dir for the
	// run (root), so the fault "diskfull" can fill the AOF's disk: a filler
	// file takes every free byte for two leases and a half, then goes.
	TmpfsMB int
	// FsyncFault mounts a FUSE loopback on Dir (root and /dev/fuse:
	// FuseAvailable), over Dir+".backing": the fault "fsync" makes its
	// fsync answer EIO for two leases and a half, the fault "power" cuts
	// every file back to its last good fsync (fsyncfault.go).
	FsyncFault bool
	fsyncLies  bool // tests: the fsync fault drops the bytes and answers success
	// NoFlows leaves the flow producer out (a server without EMQ.FLOW).
	NoFlows bool
	// NoLanes leaves lanes out (a server without EMQ.LANE; always on a
	// cluster, whose library refuses lanes).
	NoLanes bool
	// NoRetain leaves the queue at the default retention (a completed
	// job's row is deleted); otherwise the run sets EMQ.RETAIN q COMPLETED
	// 1000000 0 (docs/verbs.md §4.21) and checks the RESULT of every
	// retained row.
	NoRetain bool
	// NoSchedules leaves the two schedules out (always on a cluster, where
	// a client fires schedules: docs/cluster.md §3).
	NoSchedules bool
	Log         func(format string, args ...any) // progress lines (nil: none)
}

// Stats are a run's figures.
type Stats struct {
	Ops, Unknown, Refused int
	Enqueued, Completed   int
	Faults                map[string]int
	Epochs                int // server processes
	LinJobs, LinTimedOut  int
	// The sweep listings (a job a sweep recovered or dead-lettered) by what
	// the checker could decide of the restart exemption: counted for
	// certain, exempt for certain, undecidable (an indeterminate operation
	// may have stamped the lease).
	Counted, Exempt, Undecided int
	// Removed and Revived count the accepted EMQ.REMOVE (reply 1) and
	// EMQ.REPROCESS of the janitor; Progress the accepted EMQ.PROGRESS.
	Removed, Revived, Progress int
	Flows, Released            int // acknowledged EMQ.FLOW calls; their parents claimed at least once
	// Results counts the retained rows whose result was compared with
	// their COMPLETE's RESULT, Reads the accepted EMQ.JOB reads, Resets
	// the accepted EMQ.REPROCESS ... RESET.
	Results, Reads, Resets int
	// Slots counts the schedule slots judged (fired, or missed under a
	// fault), Occurrences the occurrences seen, Missed the slots the
	// schedules counted as missed.
	Slots, Occurrences, Missed int
	// FsyncEIO counts the fsyncs the fault "fsync" answered EIO.
	FsyncEIO int
	// LaneLeases counts the lane leases judged against MAX_ACTIVE and
	// LanePeak each lane's most leases certainly held at once.
	LaneLeases int
	LanePeak   map[string]int
	// PowerCuts are the fault "power"'s cuts with what each lost inside
	// the everysec window (power.go; nil under always, where a cut may
	// lose nothing); RolledBack counts the jobs an operation acknowledged
	// inside a window touched, whose other properties were not judged.
	PowerCuts  []CutLoss
	RolledBack int
}

func (s Stats) String() string {
	return fmt.Sprintf("%d ops (%d unanswered, %d refused), %d enqueues acknowledged, %d completes accepted, %d progress, %d removed, %d reprocessed (%d with RESET), %d flows (%d parents claimed), %d results compared, %d EMQ.JOB reads, schedule slots %d (%d occurrences, %d missed), faults %v, %d fsyncs answered EIO, %d server processes, %d jobs linearized (%d searches timed out), sweep listings: %d counted, %d exempt, %d undecided, lane leases %d (peaks %v)%s",
		s.Ops, s.Unknown, s.Refused, s.Enqueued, s.Completed, s.Progress, s.Removed, s.Revived, s.Resets, s.Flows, s.Released, s.Results, s.Reads, s.Slots, s.Occurrences, s.Missed, s.Faults, s.FsyncEIO, s.Epochs, s.LinJobs, s.LinTimedOut, s.Counted, s.Exempt, s.Undecided, s.LaneLeases, s.LanePeak, powerSummary(s.PowerCuts, s.RolledBack))
}

const queue = "chk"

// run is the state of one run.
type run struct {
	cfg   Config
	start time.Time
	args  []string
	addr  atomic.Value // string: host:port of the running process (a restart takes a new free port)

	procMu sync.Mutex
	proc   *testsupport.Proc
	paused bool
	epochs []string

	histMu sync.Mutex
	ops    []Op
	faults []Fault
	clock  []ClockSample

	freezeUntil atomic.Int64 // ns since start: workers holding jobs sleep until then (fault "freeze")
	partUntil   atomic.Int64 // ns since start: the partitioned clients' bytes are held until then (fault "partition")
	firstWorker int          // client ids: producers, then workers, then the sweeper

	connsMu sync.Mutex
	conns   map[net.Conn]struct{}
	nextID  atomic.Int64

	cl *clusterRun // nil: emqd
	ns *netns      // nil: loopback
	ff *fsyncFS    // nil: the data directory is the OS's
}

func (r *run) now() int64 { return int64(time.Since(r.start)) }

func (r *run) logf(format string, args ...any) {
	if r.cfg.Log != nil {
		r.cfg.Log(format, args...)
	}
}

// Run starts emqd (appendfsync always, debug commands on), runs the
// clients and the faults for cfg.Duration, reads every job back and
// returns the history with its figures. The caller checks it (Check).
func Run(ctx context.Context, cfg Config) (*History, Stats, error) {
	if cfg.Producers == 0 {
		cfg.Producers = 2
	}
	if cfg.Workers == 0 {
		cfg.Workers = 4
	}
	if cfg.Lease == 0 {
		cfg.Lease = 800 * time.Millisecond
	}
	if len(cfg.Faults) == 0 {
		cfg.Faults = []string{"kill", "pause", "cut", "clock", "freeze", "partition"}
		if cfg.Cluster != nil {
			cfg.Faults = []string{"kill", "pause", "cut", "freeze", "partition"}
		}
	}
	for _, f := range cfg.Faults {
		switch f {
		case "kill", "pause", "cut", "clock", "freeze", "partition":
		case "power":
			if !cfg.FsyncFault || cfg.Cluster != nil {
				return nil, Stats{}, errors.New("check: fault power needs an emqd run with FsyncFault (the AOF on the checker's FUSE loopback, which drops the unsynced bytes)")
			}
		case "fsync":
			if !cfg.FsyncFault || cfg.Cluster != nil {
				return nil, Stats{}, errors.New("check: fault fsync needs an emqd run with FsyncFault (the AOF on the checker's FUSE loopback)")
			}
		case "diskfull":
			if cfg.TmpfsMB <= 0 || cfg.Cluster != nil {
				return nil, Stats{}, errors.New("check: fault diskfull needs an emqd run with TmpfsMB (the AOF on a tmpfs the run mounts)")
			}
		case "isolate":
			if cfg.Cluster == nil || !cfg.Cluster.Netns {
				return nil, Stats{}, errors.New("check: fault isolate (the primary cut off from the other nodes) needs a cluster run with its nodes in network namespaces (ClusterConfig.Netns)")
			}
		case "stale":
			if cfg.Cluster == nil {
				return nil, Stats{}, errors.New("check: fault stale (a failover to a replica that missed writes) needs a cluster run")
			}
		default:
			return nil, Stats{}, fmt.Errorf("check: unknown fault %q (kill, pause, cut, clock, freeze, partition; diskfull, fsync, power; stale on a cluster)", f)
		}
		if f == "clock" && cfg.Cluster != nil {
			return nil, Stats{}, errors.New("check: fault clock is emqd's (EMQ.DEBUG CLOCK); on a cluster the test clock lives in one node's Lua state and a failover would undo it (docs/cluster.md §8)")
		}
	}
	if cfg.Netns && cfg.Cluster != nil {
		return nil, Stats{}, errors.New("check: netns is for emqd runs (a cluster's nodes stay on loopback)")
	}
	if cfg.Cluster != nil && (cfg.Cluster.Server == "" || cfg.Cluster.CLI == "") {
		return nil, Stats{}, errors.New("check: a cluster run needs the server and cli binaries (valkey-server, valkey-cli or redis-server, redis-cli)")
	}
	if cfg.Fsync == "" {
		cfg.Fsync = "always"
	}
	if cfg.Fsync != "always" && cfg.Fsync != "everysec" {
		return nil, Stats{}, fmt.Errorf("check: appendfsync %q: always or everysec", cfg.Fsync)
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, Stats{}, err
	}
	if cfg.TmpfsMB > 0 {
		if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%dm", cfg.TmpfsMB), "tmpfs", cfg.Dir).CombinedOutput(); err != nil {
			return nil, Stats{}, fmt.Errorf("check: mount a tmpfs on %s: %v: %s", cfg.Dir, err, strings.TrimSpace(string(out)))
		}
		defer exec.Command("umount", cfg.Dir).Run() // after the server's stop below
	}
	r := &run{cfg: cfg, start: time.Now(), conns: map[net.Conn]struct{}{}, firstWorker: cfg.Producers}
	if cfg.FsyncFault {
		if cfg.Cluster != nil || cfg.TmpfsMB > 0 {
			return nil, Stats{}, errors.New("check: FsyncFault is for an emqd run without TmpfsMB")
		}
		ff, err := mountFsyncFS(cfg.Dir, filepath.Clean(cfg.Dir)+".backing")
		if err != nil {
			return nil, Stats{}, err
		}
		defer ff.unmount() // after the server's stop below
		ff.lies = cfg.fsyncLies
		r.ff = ff
	}
	r.args = []string{"--dir", cfg.Dir, "--appendonly", "yes", "--appendfsync", cfg.Fsync, "--enable-debug-command", "yes"}
	if cfg.Cluster != nil {
		r.cl = &clusterRun{cfg: *cfg.Cluster, bin: cfg.Cluster.Server, r: r}
		defer r.cl.stopAll()
		if err := r.cl.startCluster(cfg.Dir, cfg.Fsync); err != nil {
			return nil, Stats{}, err
		}
		r.addr.Store(r.cl.shard[0].addr)
		r.epochs = []string{r.cl.shard[0].runID, r.cl.shard[1].runID}
		r.logf("cluster up: slot %d on %s, replica %s", r.cl.slot, r.cl.shard[0].addr, r.cl.shard[1].addr)
		routeCtx, stopRoute := context.WithCancel(ctx)
		defer stopRoute()
		go r.cl.route(routeCtx)
		r.start = time.Now()
	} else {
		if cfg.Netns {
			ns, err := newNetns()
			if err != nil {
				return nil, Stats{}, err
			}
			defer ns.close() // after the server's stop below
			r.ns = ns
		}
		if err := r.startServer(); err != nil {
			return nil, Stats{}, err
		}
		defer func() {
			r.procMu.Lock()
			if r.paused {
				_ = r.proc.Signal(syscall.SIGCONT)
			}
			r.proc.StopWithin(10 * time.Second)
			r.procMu.Unlock()
		}()
	}
	if cfg.Cluster != nil {
		r.cfg.NoLanes, cfg.NoLanes = true, true
		r.cfg.NoSchedules, cfg.NoSchedules = true, true
	}
	if err := r.setup(ctx); err != nil {
		return nil, Stats{}, err
	}
	rctx, cancel := context.WithTimeout(ctx, cfg.Duration) // from the first client on
	defer cancel()

	var wg sync.WaitGroup
	client := 0
	for i := 0; i < cfg.Producers; i++ {
		c := client
		client++
		wg.Add(1)
		go func() { defer wg.Done(); r.producer(rctx, c) }()
	}
	for i := 0; i < cfg.Workers; i++ {
		c := client
		client++
		wg.Add(1)
		go func() { defer wg.Done(); r.worker(rctx, c, cfg.Seed+uint64(c)) }()
	}
	c := client
	wg.Add(2)
	go func() { defer wg.Done(); r.sweeper(rctx, c) }()
	go func() { defer wg.Done(); r.janitor(rctx, c+1, cfg.Seed) }()
	if !cfg.NoFlows {
		wg.Add(1)
		go func() { defer wg.Done(); r.flows(rctx, c+2, cfg.Seed) }()
	}
	faultDone := make(chan struct{})
	go func() { defer close(faultDone); r.faulter(rctx, c+3) }()
	<-faultDone
	wg.Wait()

	// The server runs (not paused) for the read-back.
	if r.cl == nil {
		r.procMu.Lock()
		if r.paused {
			_ = r.proc.Signal(syscall.SIGCONT)
			r.paused = false
		}
		r.procMu.Unlock()
	}
	caughtUp, err := r.stopSchedules(ctx)
	if err != nil {
		return nil, Stats{}, err
	}
	final, order, err := r.readBack(ctx)
	if err != nil {
		return nil, Stats{}, err
	}
	scheds, err := r.readSchedules(ctx, caughtUp)
	if err != nil {
		return nil, Stats{}, err
	}
	h := &History{Fsync: cfg.Fsync, Ops: r.ops, Final: final, PendingOrder: order, Faults: r.faults, MaxStalled: maxStalled, MaxAttempts: maxAttempts,
		Retain: !cfg.NoRetain, Schedules: scheds, Clock: r.clock}
	if len(scheds) > 0 {
		if h.EndMs, err = r.serverMs(ctx); err != nil {
			return nil, Stats{}, err
		}
	}
	if !cfg.NoLanes {
		h.LaneMax = laneMax
	}
	st := Stats{Faults: map[string]int{}, Epochs: len(r.epochs)}
	if r.ff != nil {
		st.FsyncEIO = int(r.ff.injected.Load())
	}
	for _, o := range h.Ops {
		st.Ops++
		switch o.Status {
		case Unknown:
			st.Unknown++
		case Refused:
			st.Refused++
		case OK:
			if o.Kind == Enqueue {
				st.Enqueued++
			}
			if o.Kind == Many {
				st.Enqueued += len(o.IDs)
			}
			switch {
			case o.Kind == Complete:
				st.Completed++
			case o.Kind == Remove && o.Removed == 1:
				st.Removed++
			case o.Kind == Revive:
				st.Revived++
				if o.Reset {
					st.Resets++
				}
			case o.Kind == Read:
				st.Reads++
			case o.Kind == Progress:
				st.Progress++
			case o.Kind == Flow:
				st.Flows++
				st.Enqueued += 1 + len(o.IDs)
			}
		}
	}
	for _, f := range h.Faults {
		st.Faults[f.Kind]++
	}
	parents := map[string]bool{}
	for _, o := range h.Ops {
		if o.Kind == Flow && o.Status == OK {
			parents[o.ID] = false
		}
	}
	for _, o := range h.Ops {
		for _, g := range o.Grants {
			if done, ok := parents[g.ID]; ok && !done && o.Status == OK {
				parents[g.ID] = true
				st.Released++
			}
		}
	}
	return h, st, nil
}

// CheckRun is Check with the figures of the linearizability search added
// to st.
func CheckRun(h *History, st *Stats) []Violation {
	v, cuts, rolled := powerFilter(h, checkAll(h))
	st.PowerCuts, st.RolledBack = cuts, rolled
	_, ls := linearizable(h)
	st.LinJobs, st.LinTimedOut = ls.Jobs, ls.TimedOut
	jobs, _, unknownSweeps := index(h)
	_, st.LanePeak, st.LaneLeases = laneLimits(h, jobs, unknownSweeps)
	_, st.Slots, st.Occurrences, st.Missed = schedChecks(h, jobs)
	for _, row := range h.Final {
		if h.Retain && row.State == "completed" {
			st.Results++
		}
	}
	for _, j := range jobs {
		for _, s := range j.sweeps {
			switch counted, sure := leaseCounted(j, s.op, unknownSweeps); {
			case !sure:
				st.Undecided++
			case counted:
				st.Counted++
			default:
				st.Exempt++
			}
		}
	}
	return v
}

// setup writes the queue's settings before the first client runs (they
// are data, so they survive the restarts): two capped lanes
// (docs/verbs.md §4.26.1), the retention of completed jobs (§4.21) and
// two schedules (§4.22), one catching up every late slot, one the latest.
func (r *run) setup(ctx context.Context) error {
	rdb := redis.NewClient(&redis.Options{Addr: r.addr.Load().(string), MaxRetries: 3, Protocol: 2, DisableIdentity: true})
	defer rdb.Close()
	do := func(hint string, args ...any) error {
		if r.cl != nil {
			args = fcall(args)
		}
		if err := rdb.Do(ctx, args...).Err(); err != nil {
			return fmt.Errorf("check: %v: %w (%s)", args, err, hint)
		}
		return nil
	}
	if !r.cfg.NoLanes {
		for name, n := range laneMax {
			if err := do("--no-lanes for a server without lanes", "EMQ.LANE", queue, name, "MAX_ACTIVE", n); err != nil {
				return err
			}
		}
	}
	if !r.cfg.NoRetain {
		if err := do("--no-retain for a server without retention", "EMQ.RETAIN", queue, "COMPLETED", retainMax, 0); err != nil {
			return err
		}
	}
	if !r.cfg.NoSchedules {
		for _, s := range schedules {
			if err := do("--no-schedules for a server without schedules", "EMQ.SCHEDULE", queue, s.name, "EVERY", s.every, "sched-"+s.name, "CATCHUP", s.catchup); err != nil {
				return err
			}
		}
	}
	return nil
}

// retainMax is the run's COMPLETED max_count: far above the jobs of any
// run, so no retained row is trimmed.
const retainMax = 1000000

// schedules are the run's EVERY schedules (docs/verbs.md §4.22.1): sa
// fires every late slot (CATCHUP all), so it must fire every slot of the
// run; so the latest late one (CATCHUP one), so it may miss slots only
// where a fault made them late (§4.22.5).
var schedules = []struct {
	name, catchup string
	every         int64
}{{"sa", "all", 1000}, {"so", "one", 1500}}

// serverMs reads the server clock (TIME, in ms: it follows EMQ.DEBUG
// CLOCK ADVANCE).
func (r *run) serverMs(ctx context.Context) (int64, error) {
	rdb := redis.NewClient(&redis.Options{Addr: r.addr.Load().(string), MaxRetries: 3, Protocol: 2, DisableIdentity: true})
	defer rdb.Close()
	t, err := rdb.Time(ctx).Result()
	if err != nil {
		return 0, fmt.Errorf("check: TIME: %w", err)
	}
	return t.UnixMilli(), nil
}

// sampleClock records where the server clock stands now (after a start
// or a clock jump); an error leaves the mapping as it was.
func (r *run) sampleClock() {
	if r.cl != nil || r.cfg.NoSchedules {
		return
	}
	at := r.now()
	ms, err := r.serverMs(context.Background())
	if err != nil {
		return
	}
	r.histMu.Lock()
	r.clock = append(r.clock, ClockSample{At: at, Ms: ms})
	r.histMu.Unlock()
}

// stopSchedules waits (up to 5 s) until no schedule has a slot due by
// the server clock, so the timer has caught up after the last fault, then
// pauses them (EMQ.SCHEDULE.PAUSE, docs/verbs.md §4.22.6), so the rows
// read back and the schedules' counts read after them describe the same
// slots. It says which schedules had caught up.
func (r *run) stopSchedules(ctx context.Context) (map[string]bool, error) {
	if r.cfg.NoSchedules {
		return nil, nil
	}
	rdb := redis.NewClient(&redis.Options{Addr: r.addr.Load().(string), MaxRetries: 3, Protocol: 2, DisableIdentity: true})
	defer rdb.Close()
	caughtUp := map[string]bool{}
	for try := 0; ; try++ {
		scheds, err := r.readSchedules(ctx, nil)
		if err != nil {
			return nil, err
		}
		now, err := r.serverMs(ctx)
		if err != nil {
			return nil, err
		}
		all := true
		for _, s := range scheds {
			caughtUp[s.Name] = s.State == "active" && s.NextMs > now
			all = all && caughtUp[s.Name]
		}
		if all || try == 50 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, sc := range schedules {
		if err := rdb.Do(ctx, "EMQ.SCHEDULE.PAUSE", queue, sc.name).Err(); err != nil {
			return nil, fmt.Errorf("check: EMQ.SCHEDULE.PAUSE %s: %w", sc.name, err)
		}
	}
	return caughtUp, nil
}

// readSchedules returns each schedule's hash (EMQ.SCHEDULE.GET,
// docs/verbs.md §4.22.6), with CaughtUp from caughtUp.
func (r *run) readSchedules(ctx context.Context, caughtUp map[string]bool) ([]Sched, error) {
	if r.cfg.NoSchedules {
		return nil, nil
	}
	rdb := redis.NewClient(&redis.Options{Addr: r.addr.Load().(string), MaxRetries: 3, Protocol: 2, DisableIdentity: true})
	defer rdb.Close()
	var out []Sched
	{
		for _, sc := range schedules {
			v, err := rdb.Do(ctx, "EMQ.SCHEDULE.GET", queue, sc.name).Result()
			if err != nil {
				return nil, fmt.Errorf("check: EMQ.SCHEDULE.GET %s: %w", sc.name, err)
			}
			arr, _ := v.([]any)
			m := map[string]string{}
			for i := 0; i+1 < len(arr); i += 2 {
				k, _ := arr[i].(string)
				m[k], _ = arr[i+1].(string)
			}
			s := Sched{Name: sc.name, Catchup: m["catchup"], State: m["state"], CaughtUp: caughtUp[sc.name]}
			for k, p := range map[string]*int64{"sid": &s.Sid, "every_ms": &s.EveryMs, "anchor_ms": &s.AnchorMs, "last_slot_ms": &s.LastSlotMs,
				"next_ms": &s.NextMs, "fired": &s.Fired, "missed": &s.Missed, "skipped": &s.Skipped} {
				fmt.Sscan(m[k], p)
			}
			out = append(out, s)
		}
	}
	return out, nil
}

// laneMax are the checker's lanes and their MAX_ACTIVE.
var laneMax = map[string]int{"l1": 2, "l2": 1}

const (
	maxStalled  = 3 // every sweep: EMQ.STALLED.CHECK q 3 100
	maxAttempts = 3 // every FAIL
)

func (r *run) startServer() error {
	l := testsupport.Launch{LogPath: filepath.Clean(r.cfg.Dir) + ".emqd.log", Ready: 30 * time.Second}
	if r.ns != nil {
		// Its own namespace has its own ports: the same one each time.
		l.Argv = append([]string{"ip", "netns", "exec", r.ns.name, r.cfg.Bin, "--port", "7400", "--bind", r.ns.ipA, r.ns.ipB, "--protected-mode", "no"}, r.args...)
		l.Addr = r.ns.ipA + ":7400"
	} else {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		l.Argv = append([]string{r.cfg.Bin, "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", ""}, r.args...)
		l.Addr = fmt.Sprintf("127.0.0.1:%d", port)
	}
	p, err := l.Start()
	if err != nil {
		return fmt.Errorf("check: %w", err)
	}
	r.addr.Store(p.Addr)
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr, MaxRetries: -1, Protocol: 2, DisableIdentity: true})
	defer rdb.Close()
	info, err := rdb.Info(context.Background(), "server").Result()
	if err != nil {
		p.Kill()
		return err
	}
	r.proc = p
	r.epochs = append(r.epochs, runID(info))
	r.sampleClock()
	return nil
}

func runID(info string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok {
			return v
		}
	}
	return ""
}

// conn is one client: a single connection (no retries: a lost reply is
// recorded as such), remembering the run_id of the process it reached.
type conn struct {
	r     *run
	id    int
	rdb   *redis.Client
	epoch atomic.Value // string
}

func (r *run) newConn(id int) *conn {
	c := &conn{r: r, id: id}
	c.epoch.Store("")
	c.rdb = c.client()
	return c
}

// reset replaces the connection: the next command dials the process
// serving the queue now.
func (c *conn) reset() {
	c.rdb.Close()
	c.epoch.Store("")
	c.rdb = c.client()
}

func (c *conn) client() *redis.Client {
	r, id := c.r, c.id
	return redis.NewClient(&redis.Options{
		Addr: r.addr.Load().(string), MaxRetries: -1, Protocol: 2, DisableIdentity: true, PoolSize: 1,
		DialTimeout: time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: time.Second,
		Dialer: func(ctx context.Context, network, _ string) (net.Conn, error) {
			// The process running now: a restart moves it to a new port.
			addr := r.addr.Load().(string)
			if r.ns != nil && r.partitionable(id) {
				if _, port, err := net.SplitHostPort(addr); err == nil && !strings.HasPrefix(addr, "127.0.0.1:") {
					addr = net.JoinHostPort(r.ns.ipB, port) // the partitionable path
				}
			}
			nc, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			r.connsMu.Lock()
			r.conns[nc] = struct{}{}
			r.connsMu.Unlock()
			if !r.partitionable(id) || r.ns != nil {
				return nc, nil
			}
			return r.relay(id, nc), nil
		},
		OnConnect: func(ctx context.Context, cn *redis.Conn) error {
			info, err := cn.Info(ctx, "server").Result()
			if err != nil {
				return err
			}
			c.epoch.Store(runID(info))
			return nil
		},
	})
}

// do sends one command and records it; fill reads a success reply into op.
func (c *conn) do(op Op, fill func(v any, op *Op), args ...any) Op {
	op.Client = c.id
	var v any
	var err error
	var notReplicated string
	if cl := c.r.cl; cl != nil {
		args = fcall(args)
		op.Call = c.r.now()
		if cl.cfg.Wait {
			// The call and WAIT on one connection: the reply is acknowledged
			// only once the replica has it.
			pipe := c.rdb.Pipeline()
			cmd := pipe.Do(context.Background(), args...)
			w := pipe.Do(context.Background(), "WAIT", 1, cl.cfg.WaitTimeout.Milliseconds())
			_, _ = pipe.Exec(context.Background())
			v, err = cmd.Result()
			if n, werr := w.Int64(); werr != nil || n < 1 {
				notReplicated = fmt.Sprintf("not replicated: WAIT 1 answered %d %v", n, werr)
			}
		} else {
			v, err = c.rdb.Do(context.Background(), args...).Result()
		}
	} else {
		op.Call = c.r.now()
		v, err = c.rdb.Do(context.Background(), args...).Result()
	}
	op.Return = c.r.now()
	op.Epoch = c.epoch.Load().(string)
	var re redis.Error
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		time.Sleep(50 * time.Millisecond) // never sent: not part of the history
		return op
	}
	switch {
	case err == nil || errors.Is(err, redis.Nil):
		op.Status = OK
		if fill != nil {
			fill(v, &op)
		}
	case errors.As(err, &re):
		op.Status = Refused
		op.Err = err.Error()
	default:
		op.Status = Unknown
		op.Err = err.Error()
	}
	if notReplicated != "" && op.Status != Unknown && !(op.Status == Refused && redirect(op.Err)) {
		// Applied (or judged) on the primary, not known to be on the
		// replica: a failover may or may not keep it.
		op.Status, op.Err, op.IDs, op.Grants = Unknown, notReplicated, nil, nil
	}
	if op.Status == Refused && c.r.cl != nil && redirect(op.Err) {
		// Not run: "not here" or "not now". Dial the slot's primary afresh.
		c.reset()
		time.Sleep(50 * time.Millisecond)
	}
	if op.Epoch == "" && op.Status != Unknown {
		op.Status = Unknown // cannot happen: a reply comes on a connection that was set up
	}
	c.r.histMu.Lock()
	c.r.ops = append(c.r.ops, op)
	c.r.histMu.Unlock()
	if op.Status == Unknown {
		time.Sleep(50 * time.Millisecond) // the server may be down: do not spin
	}
	if op.Status == Refused && strings.HasPrefix(op.Err, "MISCONF") {
		time.Sleep(20 * time.Millisecond) // a full disk refuses at once: do not spin
	}
	return op
}

func (r *run) producer(ctx context.Context, id int) {
	c := r.newConn(id)
	defer func() { c.rdb.Close() }()
	rng := rand.New(rand.NewPCG(uint64(id), 11))
	for n := 0; ctx.Err() == nil; n++ {
		payload := fmt.Sprintf("p%d-%d", id, n)
		switch x := rng.IntN(10); {
		case x < 2: // a batch of 2-5 jobs, all or nothing (docs/verbs.md §4.2.1)
			args := []any{"EMQ.ENQUEUE.MANY", queue, "JOBS"}
			var payloads []string
			for k := 0; k < 2+rng.IntN(4); k++ {
				payloads = append(payloads, fmt.Sprintf("%s.%d", payload, k))
				args = append(args, "*", payloads[k])
			}
			c.do(Op{Kind: Many, Payloads: payloads}, func(v any, op *Op) {
				arr, _ := v.([]any)
				for _, e := range arr {
					if s, ok := e.(string); ok {
						op.IDs = append(op.IDs, s)
					}
				}
			}, args...)
		case x < 3: // scheduled: the claim promotes it once due
			c.do(Op{Kind: Enqueue, Payloads: []string{payload}}, func(v any, op *Op) {
				op.ID, _ = v.(string)
			}, "EMQ.ENQUEUE", queue, "*", payload, "DELAY", 100)
		case x < 5: // with a priority, -2..2 (docs/verbs.md §4.2): the final pending listing is in its order
			p := int64(rng.IntN(5) - 2)
			c.do(Op{Kind: Enqueue, Payloads: []string{payload}, Priority: p}, func(v any, op *Op) {
				op.ID, _ = v.(string)
			}, "EMQ.ENQUEUE", queue, "*", payload, "PRIORITY", p)
		case x < 6 && !r.cfg.NoLanes: // in a capped lane (docs/verbs.md §4.26)
			lane := []string{"l1", "l2"}[rng.IntN(2)]
			c.do(Op{Kind: Enqueue, Payloads: []string{payload}, Lane: lane}, func(v any, op *Op) {
				op.ID, _ = v.(string)
			}, "EMQ.ENQUEUE", queue, "*", payload, "LANE", lane)
		default:
			c.do(Op{Kind: Enqueue, Payloads: []string{payload}}, func(v any, op *Op) {
				op.ID, _ = v.(string)
			}, "EMQ.ENQUEUE", queue, "*", payload)
		}
		time.Sleep(15 * time.Millisecond)
	}
}

func (r *run) worker(ctx context.Context, id int, seed uint64) {
	c := r.newConn(id)
	defer func() { c.rdb.Close() }()
	rng := rand.New(rand.NewPCG(seed, 26))
	type zombie struct {
		g  Grant
		at time.Time
	}
	var zombies []zombie
	leaseMs := r.cfg.Lease.Milliseconds()
	for ctx.Err() == nil {
		// A worker that gave up on a job comes back with its old token
		// once the lease has run out (a zombie holder).
		if len(zombies) > 0 && time.Since(zombies[0].at) > 2*r.cfg.Lease {
			z := zombies[0]
			zombies = zombies[1:]
			c.do(Op{Kind: Complete, ID: z.g.ID, Token: z.g.Token}, nil, "EMQ.COMPLETE", queue, z.g.ID, z.g.Token)
			continue
		}
		op := c.do(Op{Kind: Claim}, readGrants, "EMQ.CLAIM", queue, leaseMs, "COUNT", 1+rng.IntN(2), "BLOCK", 200)
		hand := op.Grants
		if len(hand) == 0 {
			continue
		}
		if until := r.freezeUntil.Load(); until > r.now() {
			time.Sleep(time.Duration(until - r.now())) // frozen with the jobs in hand: the leases run out
		}
		for len(hand) > 0 {
			g := hand[0]
			hand = hand[1:]
			if rng.IntN(4) == 0 {
				time.Sleep(time.Duration(rng.IntN(int(leaseMs/2))) * time.Millisecond)
			}
			base := Op{ID: g.ID, Token: g.Token}
			switch x := rng.IntN(100); {
			case x < 40:
				base.Kind = Complete
				args := []any{"EMQ.COMPLETE", queue, g.ID, g.Token}
				if rng.IntN(2) == 0 { // a result (docs/verbs.md §4.5), read back below or at the end
					base.Result, base.HasResult = fmt.Sprintf("r-%s-%d", g.ID, g.Token), true
					args = append(args, "RESULT", base.Result)
				}
				done := c.do(base, nil, args...)
				if done.Status == OK && done.HasResult && !r.cfg.NoRetain && rng.IntN(3) == 0 {
					c.do(Op{Kind: Read, ID: g.ID}, readJob, "EMQ.JOB", queue, g.ID)
				}
			case x < 55: // complete and claim the next job in one command (docs/verbs.md §4.5.1)
				base.Kind, base.Next = Complete, true
				args := []any{"EMQ.COMPLETE", queue, g.ID, g.Token}
				if rng.IntN(2) == 0 {
					base.Result, base.HasResult = fmt.Sprintf("r-%s-%d", g.ID, g.Token), true
					args = append(args, "RESULT", base.Result)
				}
				done := c.do(base, readGrants, append(args, "NEXT", leaseMs)...)
				hand = append(hand, done.Grants...)
			case x < 70:
				base.Kind, base.MaxAttempts = Fail, maxAttempts
				c.do(base, func(v any, op *Op) {
					arr, _ := v.([]any)
					if len(arr) == 2 {
						op.Verdict, _ = arr[0].(string)
						op.FailCount, _ = arr[1].(int64)
					}
				}, "EMQ.FAIL", queue, g.ID, g.Token, maxAttempts, 50, "boom")
			case x < 76:
				base.Kind = Requeue
				c.do(base, nil, "EMQ.REQUEUE", queue, g.ID, g.Token)
			case x < 80: // deferred without a failure (docs/verbs.md §4.9)
				base.Kind = Delay
				c.do(base, nil, "EMQ.DELAY", queue, g.ID, g.Token, "IN", 100)
			case x < 86:
				base.Kind = Extend
				c.do(base, nil, "EMQ.EXTEND", queue, g.ID, g.Token, leaseMs)
				base.Kind = Complete
				c.do(base, nil, "EMQ.COMPLETE", queue, g.ID, g.Token)
			case x < 92: // report progress, then complete (docs/verbs.md §4.10)
				base.Kind = Progress
				c.do(base, nil, "EMQ.PROGRESS", queue, g.ID, g.Token, "half")
				base.Kind = Complete
				c.do(base, nil, "EMQ.COMPLETE", queue, g.ID, g.Token)
			default:
				zombies = append(zombies, zombie{g, time.Now()}) // abandoned: its lease runs out
			}
		}
	}
}

// readJob reads an EMQ.JOB reply (nil, or the row's fields and values:
// docs/verbs.md §4.17) into op.
func readJob(v any, op *Op) {
	arr, ok := v.([]any)
	if !ok {
		return // nil: no row
	}
	op.Seen = true
	for i := 0; i+1 < len(arr); i += 2 {
		k, _ := arr[i].(string)
		val, _ := arr[i+1].(string)
		switch k {
		case "state":
			op.State = val
		case "result":
			op.Result, op.HasResult = val, true
		}
	}
}

// readGrants reads a claim reply ([id, payload, token, failures] per job,
// docs/verbs.md §4.3.2) into op.Grants.
func readGrants(v any, op *Op) {
	arr, _ := v.([]any)
	for _, e := range arr {
		f, _ := e.([]any)
		if len(f) < 4 {
			continue
		}
		id, _ := f[0].(string)
		tok, _ := f[2].(string)
		var t int64
		fmt.Sscan(tok, &t)
		fails, _ := f[3].(int64)
		op.Grants = append(op.Grants, Grant{ID: id, Token: t, Failures: fails})
	}
}

func (r *run) sweeper(ctx context.Context, id int) {
	c := r.newConn(id)
	defer func() { c.rdb.Close() }()
	for ctx.Err() == nil {
		c.do(Op{Kind: Sweep}, func(v any, op *Op) {
			arr, _ := v.([]any)
			if len(arr) != 2 {
				return
			}
			for _, x := range arr[0].([]any) {
				op.Recovered = append(op.Recovered, x.(string))
			}
			for _, x := range arr[1].([]any) {
				op.Dead = append(op.Dead, x.(string))
			}
		}, "EMQ.STALLED.CHECK", queue, maxStalled, 100)
		time.Sleep(150 * time.Millisecond)
	}
}

// flows sends an EMQ.FLOW every 400 ms: a parent and 2-4 children, all in
// the checker's queue, policy ignore (the parent is released once every
// child has ended, however: docs/verbs.md §4.25.2), client ids
// JOB0000<client><6 digits> (they sort before every minted id, so pending
// hands them out early). The children are claimed and ended by the
// workers like any job, and so is the parent once released.
func (r *run) flows(ctx context.Context, id int, seed uint64) {
	c := r.newConn(id)
	defer func() { c.rdb.Close() }()
	rng := rand.New(rand.NewPCG(seed, 24))
	next := 0
	newID := func() string { next++; return fmt.Sprintf("JOB0000%d%06d", id%10, next) } // before every minted id: claimed early
	for ctx.Err() == nil {
		time.Sleep(400 * time.Millisecond)
		parent := newID()
		args := []any{"EMQ.FLOW", queue, parent, "parent-" + parent, "ON_CHILD_FAIL", "ignore"}
		var kids, payloads []string
		payloads = append(payloads, "parent-"+parent)
		for k := 0; k < 2+rng.IntN(3); k++ {
			kid := newID()
			kids = append(kids, kid)
			payloads = append(payloads, "child-"+kid)
			args = append(args, "CHILD", queue, kid, "child-"+kid)
		}
		c.do(Op{Kind: Flow, ID: parent, IDs: kids, Payloads: payloads}, nil, args...)
	}
}

// janitor is the operator's client: every 300 ms it promotes due jobs
// (EMQ.PROMOTE), lists the dead jobs and brings one back (EMQ.REPROCESS,
// every other one with RESET: failures and stalled cleared, docs/verbs.md
// §4.13), and every third round lists pending jobs and removes one
// (EMQ.REMOVE). The listings are recorded too (reads that name no job).
func (r *run) janitor(ctx context.Context, id int, seed uint64) {
	c := r.newConn(id)
	defer func() { c.rdb.Close() }()
	rng := rand.New(rand.NewPCG(seed, 99))
	list := func(state string) []string {
		var ids []string
		c.do(Op{Kind: List}, func(v any, op *Op) {
			page, _ := v.([]any)
			for _, e := range page {
				if pair, _ := e.([]any); len(pair) == 2 {
					if s, ok := pair[0].(string); ok {
						ids = append(ids, s)
					}
				}
			}
		}, "EMQ.LIST", queue, state, 0, 20)
		return ids
	}
	for n := 0; ctx.Err() == nil; n++ {
		time.Sleep(300 * time.Millisecond)
		c.do(Op{Kind: Promote}, nil, "EMQ.PROMOTE", queue, 100)
		if dead := list("dead"); len(dead) > 0 {
			id := dead[rng.IntN(len(dead))]
			if rng.IntN(2) == 0 {
				c.do(Op{Kind: Revive, ID: id, Reset: true}, nil, "EMQ.REPROCESS", queue, id, "RESET")
			} else {
				c.do(Op{Kind: Revive, ID: id}, nil, "EMQ.REPROCESS", queue, id)
			}
		}
		if n%3 == 2 {
			if pend := list("pending"); len(pend) > 0 {
				id := pend[rng.IntN(len(pend))]
				c.do(Op{Kind: Remove, ID: id}, func(v any, op *Op) { op.Removed, _ = v.(int64) }, "EMQ.REMOVE", queue, id)
			}
		}
	}
}

// partitionable says whether client id is on the far side of a partition:
// the first half of the workers (at least one). Producers and the sweeper
// always reach the server, so the sweeper recovers the cut-off workers'
// leases while they cannot speak.
func (r *run) partitionable(id int) bool {
	return id >= r.firstWorker && id < r.firstWorker+max(1, r.cfg.Workers/2)
}

// relay puts a partition gate between client id and the server connection
// nc: the client talks to one end of a pipe, and two goroutines copy each
// way, holding the bytes (delivering nothing, dropping nothing) while
// the partition lasts. A client that times out meanwhile closes its end,
// which closes nc: the server sees the connection go when the client gives
// up, as after a real partition.
func (r *run) relay(id int, nc net.Conn) net.Conn {
	mine, theirs := net.Pipe()
	hold := func() {
		for r.partUntil.Load() > r.now() {
			time.Sleep(5 * time.Millisecond)
		}
	}
	copyGated := func(dst, src net.Conn) {
		defer dst.Close()
		defer src.Close()
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				hold()
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}
	go copyGated(nc, theirs)
	go copyGated(theirs, nc)
	return mine
}

func (r *run) fault(kind, note string) { r.faultFrom(kind, note, r.now()) }

// faultFrom records a fault that began at at (ns since the start) and is
// over now.
func (r *run) faultFrom(kind, note string, at int64) {
	r.histMu.Lock()
	r.faults = append(r.faults, Fault{Kind: kind, At: at, End: r.now(), Note: note})
	r.histMu.Unlock()
	r.logf("%.1fs fault %s %s", time.Since(r.start).Seconds(), kind, note)
}

func (r *run) faulter(ctx context.Context, id int) {
	if r.cfg.FaultEvery <= 0 {
		<-ctx.Done()
		return
	}
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-time.After(r.cfg.FaultEvery):
		}
		kind := r.cfg.Faults[i%len(r.cfg.Faults)]
		if r.cl != nil && (kind == "kill" || kind == "pause" || kind == "stale" || kind == "isolate") {
			r.clusterFault(ctx, kind, id)
			continue
		}
		at := r.now()
		switch kind {
		case "power":
			// A power loss: SIGKILL and, at the same instant, every file cut
			// back to its last good fsync (fsyncfault.go), then a restart.
			r.procMu.Lock()
			r.addr.Store("127.0.0.1:0")
			at = r.now()
			dropped, err := r.ff.powerCut(r.proc.Kill)
			if err == nil {
				err = r.startServer()
			}
			r.procMu.Unlock()
			if err != nil {
				r.fault("power", "restart failed: "+err.Error())
				return
			}
			r.faultFrom("power", fmt.Sprintf("power cut: SIGKILL, %d unsynced bytes dropped, restarted", dropped), at)
		case "kill":
			// One job held across the kill for certain: the faulter claims it
			// and never answers, so the new process's sweep must recover it
			// as exempt (docs/verbs.md §1.5).
			fc := r.newConn(id)
			fc.do(Op{Kind: Claim}, readGrants, "EMQ.CLAIM", queue, r.cfg.Lease.Milliseconds(), "COUNT", 1)
			fc.rdb.Close()
			r.procMu.Lock()
			r.addr.Store("127.0.0.1:0") // no dial reaches the old port (another process may take it)
			r.proc.Kill()
			err := r.startServer()
			r.procMu.Unlock()
			if err != nil {
				r.fault("kill", "restart failed: "+err.Error())
				return
			}
			r.faultFrom("kill", "SIGKILL, restarted", at)
		case "pause":
			d := 2*r.cfg.Lease + 500*time.Millisecond
			r.procMu.Lock()
			_ = r.proc.Signal(syscall.SIGSTOP)
			r.paused = true
			r.procMu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(d):
			}
			r.procMu.Lock()
			_ = r.proc.Signal(syscall.SIGCONT)
			r.paused = false
			r.procMu.Unlock()
			r.faultFrom("pause", fmt.Sprintf("SIGSTOP for %v", d), at)
		case "partition":
			d := 2*r.cfg.Lease + 500*time.Millisecond
			if r.ns != nil {
				err := r.ns.setB(false)
				cutAt := r.now()
				note := fmt.Sprintf("workers %d-%d cut off from the server for %v: link %s down (network namespace)", r.firstWorker, r.firstWorker+max(1, r.cfg.Workers/2)-1, d, r.ns.hostB)
				if err != nil {
					note += ": " + err.Error()
				}
				select {
				case <-ctx.Done(): // the run's end heals it early: End says when
				case <-time.After(d):
				}
				if err := r.ns.setB(true); err != nil {
					r.fault("partition", "heal failed: "+err.Error())
					return
				}
				r.faultFrom("partition", note, cutAt) // At: the link is down; End: it is up again
				continue
			}
			r.partUntil.Store(r.now() + int64(d))
			r.fault("partition", fmt.Sprintf("workers %d-%d cut off from the server for %v", r.firstWorker, r.firstWorker+max(1, r.cfg.Workers/2)-1, d))
			r.histMu.Lock()
			r.faults[len(r.faults)-1].End = r.faults[len(r.faults)-1].At + int64(d) // the relay holds the bytes until then
			r.histMu.Unlock()
		case "diskfull":
			d := 2*r.cfg.Lease + 500*time.Millisecond
			path := filepath.Join(r.cfg.Dir, "filler")
			n, err := fill(path)
			note := fmt.Sprintf("a %.1f MB filler took the AOF's disk for %v", float64(n)/(1<<20), d)
			if err != nil {
				note += ": " + err.Error()
			}
			select {
			case <-ctx.Done():
			case <-time.After(d):
			}
			_ = os.Remove(path)
			r.faultFrom("diskfull", note, at)
		case "fsync":
			d := 2*r.cfg.Lease + 500*time.Millisecond
			before := r.ff.injected.Load()
			r.ff.failing.Store(true)
			select {
			case <-ctx.Done():
			case <-time.After(d):
			}
			r.ff.failing.Store(false)
			answer := "EIO"
			if r.ff.lies {
				answer = "success (a disk that lies)"
			}
			r.faultFrom("fsync", fmt.Sprintf("every fsync answered %s for %v (%d of them), the bytes since each file's last good fsync dropped", answer, d, r.ff.injected.Load()-before), at)
		case "freeze":
			d := 2*r.cfg.Lease + 500*time.Millisecond
			r.freezeUntil.Store(r.now() + int64(d))
			r.fault("freeze", fmt.Sprintf("workers holding jobs frozen for %v", d))
		case "cut":
			r.connsMu.Lock()
			n := len(r.conns)
			for nc := range r.conns {
				_ = nc.Close()
				delete(r.conns, nc)
			}
			r.connsMu.Unlock()
			r.fault("cut", fmt.Sprintf("%d connections closed", n))
		case "clock":
			ms := 2 * r.cfg.Lease.Milliseconds()
			rdb := redis.NewClient(&redis.Options{Addr: r.addr.Load().(string), MaxRetries: -1, Protocol: 2, DisableIdentity: true})
			err := rdb.Do(context.Background(), "EMQ.DEBUG", "CLOCK", "ADVANCE", ms).Err()
			rdb.Close()
			note := fmt.Sprintf("EMQ.DEBUG CLOCK ADVANCE %d", ms)
			if err != nil {
				note += ": " + err.Error()
			}
			r.sampleClock()
			r.fault("clock", note)
		}
	}
}

// fill writes zeros to path until the file system is full (ENOSPC) and
// returns the bytes written.
func fill(path string) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, 256<<10)
	var n int64
	for {
		m, err := f.Write(buf)
		n += int64(m)
		if errors.Is(err, syscall.ENOSPC) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// readBack reads every row of the queue with EMQ.LIST, page by page.
func (r *run) readBack(ctx context.Context) (map[string]Row, []string, error) {
	list := func(state string, off int) (any, error) {
		args := []any{"EMQ.LIST", queue, state, off, 1000}
		if r.cl != nil {
			args = fcall(args)
		}
		var err error
		for try := 0; try < 100; try++ { // a cluster may still be settling: up to 20 s
			rdb := redis.NewClient(&redis.Options{Addr: r.addr.Load().(string), MaxRetries: 3, Protocol: 2, DisableIdentity: true})
			var v any
			v, err = rdb.Do(ctx, args...).Result()
			rdb.Close()
			if err == nil || r.cl == nil {
				return v, err
			}
			time.Sleep(200 * time.Millisecond)
		}
		return nil, err
	}
	final := map[string]Row{}
	var order []string
	states := []string{"pending", "active", "scheduled", "dead"}
	if !r.cfg.NoFlows {
		states = append(states, "waiting")
	}
	if !r.cfg.NoRetain {
		states = append(states, "completed")
	}
	for _, state := range states {
		for off := 0; ; {
			v, err := list(state, off)
			if err != nil {
				return nil, nil, fmt.Errorf("EMQ.LIST %s %d: %w", state, off, err)
			}
			page, _ := v.([]any)
			for _, e := range page {
				pair, _ := e.([]any)
				if len(pair) != 2 {
					return nil, nil, fmt.Errorf("EMQ.LIST entry %v", e)
				}
				id, _ := pair[0].(string)
				fields, _ := pair[1].([]any)
				m := map[string]string{}
				for i := 0; i+1 < len(fields); i += 2 {
					k, _ := fields[i].(string)
					m[k], _ = fields[i+1].(string)
				}
				final[id] = rowOf(m)
				if state == "pending" {
					order = append(order, id)
				}
			}
			off += len(page)
			if len(page) < 1000 {
				break
			}
		}
	}
	if !r.cfg.NoLanes {
		// EMQ.LIST pending shows the default lane only (docs/verbs.md
		// §4.26): the lanes' pending jobs are read from their sets.
		rdb := redis.NewClient(&redis.Options{Addr: r.addr.Load().(string), MaxRetries: 3, Protocol: 2, DisableIdentity: true})
		defer rdb.Close()
		for name := range laneMax {
			ids, err := rdb.ZRange(ctx, "emq:{"+queue+"}:lane:"+name+":pending", 0, -1).Result()
			if err != nil {
				return nil, nil, fmt.Errorf("lane %s: %w", name, err)
			}
			for _, id := range ids {
				m, err := rdb.HGetAll(ctx, "emq:{"+queue+"}:job:"+id).Result()
				if err != nil {
					return nil, nil, fmt.Errorf("lane %s job %s: %w", name, id, err)
				}
				if len(m) == 0 {
					continue // a ghost
				}
				final[id] = rowOf(m)
			}
		}
	}
	return final, order, nil
}

// rowOf reads a job row's fields (docs/verbs.md §1.3).
func rowOf(m map[string]string) Row {
	row := Row{State: m["state"], LeaseEpoch: m["lease_epoch"], Payload: m["payload"], Lane: m["lane"], Schedule: m["schedule"]}
	fmt.Sscan(m["attempts"], &row.Attempts)
	fmt.Sscan(m["failures"], &row.Failures)
	fmt.Sscan(m["stalled"], &row.Stalled)
	fmt.Sscan(m["priority"], &row.Priority)
	fmt.Sscan(m["slot_ms"], &row.SlotMs)
	row.Result, row.HasResult = m["result"]
	return row
}
