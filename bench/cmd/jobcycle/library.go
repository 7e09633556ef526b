package main

// The cluster library's sides (docs/cluster.md): the same cycle through the
// emq FUNCTION library (`FCALL emq_x 1 q ...`) on one redis-server, and on
// a 3-primary Redis Cluster with the workers' queues spread over the three
// primaries or all on one. On the cluster each lean-client worker connects
// to the primary that serves its queue's slot (as a cluster-aware client
// does), so no call is redirected.

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"

	"github.com/emqd/emqd/bench/internal/procs"
	"github.com/emqd/emqd/cluster"
	"github.com/redis/go-redis/v9"
)

// rawFunctions sends the verbs as FCALL emq_x 1 q ....
type rawFunctions struct{}

func (rawFunctions) enqueue(e *enc, k *qkeys, id, payload string) {
	e.cmd("FCALL", "emq_enqueue", "1", k.q, id, payload)
}
func (rawFunctions) claim(e *enc, k *qkeys) {
	e.cmd("FCALL", "emq_claim", "1", k.q, k.leaseMs)
}
func (rawFunctions) complete(e *enc, k *qkeys, id, token string) {
	e.cmd("FCALL", "emq_complete", "1", k.q, id, token)
}
func (rawFunctions) fail(e *enc, k *qkeys, id, token string) {
	e.cmd("FCALL", "emq_fail", "1", k.q, id, token, "3", "0", "boom")
}

func (rawFunctions) hasNext() bool { return true }
func (rawFunctions) completeNext(e *enc, k *qkeys, id, token string) {
	e.cmd("FCALL", "emq_complete", "1", k.q, id, token, "NEXT", k.leaseMs)
}
func (rawFunctions) failNext(e *enc, k *qkeys, id, token string) {
	e.cmd("FCALL", "emq_fail", "1", k.q, id, token, "3", "0", "boom", "NEXT", k.leaseMs)
}

// functionsExec is the go-redis executor of the library.
type functionsExec struct {
	rdb redis.UniversalClient
}

func fcall(ctx context.Context, fn, q string, args ...any) *redis.Cmd {
	return redis.NewCmd(ctx, append([]any{"FCALL", fn, 1, q}, args...)...)
}

func (e *functionsExec) client() redis.UniversalClient { return e.rdb }
func (e *functionsExec) enqueue(ctx context.Context, q, id, payload string) *redis.Cmd {
	return fcall(ctx, "emq_enqueue", q, id, payload)
}
func (e *functionsExec) claim(ctx context.Context, q string, leaseMs int) *redis.Cmd {
	return fcall(ctx, "emq_claim", q, leaseMs)
}
func (e *functionsExec) complete(ctx context.Context, q, id, token string) *redis.Cmd {
	return fcall(ctx, "emq_complete", q, id, token)
}
func (e *functionsExec) fail(ctx context.Context, q, id, token string, maxAttempts, delayMs int, msg string) *redis.Cmd {
	return fcall(ctx, "emq_fail", q, id, token, maxAttempts, delayMs, msg)
}
func (e *functionsExec) sweep(ctx context.Context, q string, maxStalled, limit int) *redis.Cmd {
	return fcall(ctx, "emq_stalled_check", q, maxStalled, limit)
}
func (e *functionsExec) claimMany(ctx context.Context, q string, leaseMs, n int) *redis.Cmd {
	return fcall(ctx, "emq_claim", q, leaseMs, "COUNT", n)
}

// env is a side's servers as the cycle sees them.
type env struct {
	addr  string                // shown in the header
	ex    executor              // go-redis driver, checks, the sweep
	raw   rawSide               // lean-client encoder
	route func(q string) string // the address serving queue q
	place func(q string) string // the queue name for a worker's name (cluster placement)
	stop  func()                // stops what the side started
	sweep bool                  // the side runs the sweep timing
	nodes int                   // primaries holding the workers' queues (0: not a cluster)
	pid   int                   // the server the driver started (0: none, or a cluster): its CPU is read per cell
	addrs []string              // the cluster's primaries
}

// startLibrary starts a redis-server (or uses addr) and loads the library.
func startLibrary(c config) (*env, error) {
	addr, stop, pid := c.libraryAddr, func() {}, 0
	if addr == "" {
		p, err := procs.StartRedisCPU(c.serverCPU, c.redisBin)
		if err != nil {
			return nil, err
		}
		addr, stop, pid = p.Addr, func() { p.Stop(5e9) }, p.Pid()
	}
	rdb := newClient(addr, c.workers1+4)
	if err := cluster.Load(context.Background(), rdb); err != nil {
		stop()
		rdb.Close()
		return nil, err
	}
	return &env{addr: addr, pid: pid, ex: &functionsExec{rdb: rdb}, raw: rawFunctions{},
		route: func(string) string { return addr }, stop: func() { rdb.Close(); stop() }, sweep: true}, nil
}

// startCluster starts a 3-primary cluster, loads the library, and places
// the workers' queues on `spread` primaries (1: all on the first; 3: worker
// w's queue on primary w%3).
func startCluster(c config, spread int) (*env, error) {
	var addrs []string
	stopNodes := func() {}
	if len(c.clusterAddrs) > 0 {
		addrs = c.clusterAddrs // a running cluster: its primaries, in this order
	} else {
		cli, err := exec.LookPath(c.redisCli)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.redisCli, err)
		}
		nodes, err := procs.StartRedisCluster(c.redisBin, cli, 3)
		if err != nil {
			return nil, err
		}
		for _, p := range nodes {
			addrs = append(addrs, p.Addr)
		}
		stopNodes = func() {
			for _, p := range nodes {
				p.Stop(5e9)
			}
		}
	}
	if spread > len(addrs) {
		stopNodes()
		return nil, fmt.Errorf("%d primaries, cannot spread over %d", len(addrs), spread)
	}
	ctx := context.Background()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, PoolSize: c.workers1 + 4, MaxRetries: -1})
	if err := cluster.Load(ctx, rdb); err != nil {
		rdb.Close()
		stopNodes()
		return nil, err
	}
	slots, err := rdb.ClusterSlots(ctx).Result()
	if err != nil {
		rdb.Close()
		stopNodes()
		return nil, err
	}
	owner := make([]string, 16384)
	for _, s := range slots {
		for i := s.Start; i <= s.End; i++ {
			owner[i] = s.Nodes[0].Addr
		}
	}
	route := func(q string) string { return owner[cluster.Slot(q)] }
	return &env{addr: fmt.Sprintf("%d primaries", len(addrs)), ex: &functionsExec{rdb: rdb},
		raw: rawFunctions{}, route: route, place: placer(addrs, route, spread), stop: func() { rdb.Close(); stopNodes() },
		nodes: spread, addrs: addrs}, nil
}

// placer puts the queue of worker w ("<q>.<w>") on primary addrs[w%spread]:
// the name gets a suffix ".<salt>", the first that hashes to a slot of that
// primary.
func placer(addrs []string, route func(string) string, spread int) func(string) string {
	return func(name string) string {
		want := addrs[workerOf(name)%spread]
		for salt := 0; ; salt++ {
			q := name + "." + strconv.Itoa(salt)
			if route(q) == want {
				return q
			}
		}
	}
}

// workerOf reads the worker number from a queue name "<base>.<w>".
func workerOf(name string) int {
	i := len(name)
	for i > 0 && name[i-1] >= '0' && name[i-1] <= '9' {
		i--
	}
	w, _ := strconv.Atoi(name[i:])
	return w
}
