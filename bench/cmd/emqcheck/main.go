// Command emqcheck runs the history checker (package bench/check) by hand:
// producers and workers against a real emqd process started from --bin with
// appendfsync always, faults injected every --fault-every, then the history
// checked against the queue's model. It prints the run's figures and every
// violation with its history excerpt, and exits 1 when there is one.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/emqd/emqd/bench/check"
	"github.com/redis/go-redis/v9"
)

// quietLog drops go-redis's own log lines (a dial refused while the server
// is down is expected here and recorded in the history instead).
type quietLog struct{}

func (quietLog) Printf(context.Context, string, ...interface{}) {}

func main() {
	var c check.Config
	fs := flag.NewFlagSet("emqcheck", flag.ExitOnError)
	fs.StringVar(&c.Bin, "bin", "./emqd", "the emqd binary (go build -o emqd ./cmd/emqd)")
	fs.StringVar(&c.Dir, "dir", "", "data directory for emqd (default: a new temporary one)")
	fs.DurationVar(&c.Duration, "duration", time.Minute, "how long the clients run")
	fs.IntVar(&c.Producers, "producers", 2, "clients sending EMQ.ENQUEUE")
	fs.IntVar(&c.Workers, "workers", 4, "clients claiming and releasing jobs")
	fs.DurationVar(&c.Lease, "lease", 800*time.Millisecond, "lease_ms of every claim")
	fs.DurationVar(&c.FaultEvery, "fault-every", 4*time.Second, "time between two faults (0: none)")
	faults := fs.String("faults", "kill,pause,cut,clock,freeze,partition", "the faults, in turn: kill (SIGKILL and restart), pause (SIGSTOP for two leases), cut (close every client connection), clock (EMQ.DEBUG CLOCK ADVANCE two leases), freeze (workers holding jobs stop for two leases, then send their verbs), partition (half the workers' bytes held for two leases while the sweeper still reaches the server); on a cluster (--cluster-server) the default is kill,pause,cut,freeze,partition, where kill and pause act on the queue's primary and wait for its replica's failover, and stale (the replica stopped 1 s while the primary acknowledges writes, then the primary killed) is available; diskfull needs --tmpfs, fsync needs --fuse, power (SIGKILL and every file cut back to its last good fsync, then a restart) needs --fuse")
	fs.Uint64Var(&c.Seed, "seed", uint64(time.Now().UnixNano()), "seed of the workers' choices")
	fs.StringVar(&c.Fsync, "appendfsync", "always", "emqd's appendfsync: always or everysec (a SIGKILL loses nothing acknowledged under either; the power fault under everysec may lose what was acknowledged within check.PowerBound before each cut, and the run reports it; docs/durability.md §2.3)")
	server := fs.String("cluster-server", "", "run against a Valkey or Redis Cluster with the emq FUNCTION library instead of emqd: this valkey-server or redis-server binary (three primaries with a replica each on loopback ports; docs/cluster.md §8)")
	cli := fs.String("cluster-cli", "", "with --cluster-server: the valkey-cli or redis-cli binary (default: beside the server, or in PATH)")
	wait := fs.Bool("wait", false, "with --cluster-server: WAIT 1 after every call; a reply counts only when the replica has it")
	clusterNetns := fs.Bool("cluster-netns", false, "with --cluster-server: every node in a network namespace of its own behind a router (root, iproute2), for the isolate fault (the queue's primary cut off from the other nodes, not from the clients)")
	nodeTimeout := fs.Duration("node-timeout", time.Second, "with --cluster-server: cluster-node-timeout")
	fs.BoolVar(&c.Netns, "netns", false, "run emqd in a network namespace of its own (root, iproute2) and make the partition fault a link taken down and up")
	fs.IntVar(&c.TmpfsMB, "tmpfs", 0, "mount a tmpfs of this many MB on the data directory (root) so the diskfull fault can fill it (a filler file takes every free byte for two leases and a half)")
	fs.BoolVar(&c.FsyncFault, "fuse", false, "put the data directory on a FUSE loopback (root, /dev/fuse) so the fsync fault can make every fsync answer EIO for two leases and a half, and the power fault can drop the unsynced bytes")
	fs.BoolVar(&c.NoFlows, "no-flows", false, "leave out the flow producer (EMQ.FLOW), for a server without flows")
	fs.BoolVar(&c.NoLanes, "no-lanes", false, "leave out the two capped lanes (EMQ.LANE ... MAX_ACTIVE), for a server without lanes (always left out on a cluster)")
	fs.BoolVar(&c.NoRetain, "no-retain", false, "leave the queue at the default retention (completed rows deleted) instead of EMQ.RETAIN q COMPLETED 1000000 0 with every result checked")
	fs.BoolVar(&c.NoSchedules, "no-schedules", false, "leave out the two EVERY schedules (always left out on a cluster)")
	quiet := fs.Bool("quiet", false, "no progress lines")
	_ = fs.Parse(os.Args[1:])
	redis.SetLogger(quietLog{})
	for _, f := range strings.Split(*faults, ",") {
		switch f = strings.TrimSpace(f); f {
		case "kill", "pause", "cut", "clock", "freeze", "partition", "stale", "diskfull", "fsync", "power", "isolate":
			c.Faults = append(c.Faults, f)
		case "":
		default:
			fmt.Fprintf(os.Stderr, "emqcheck: unknown fault %q (kill, pause, cut, clock, freeze, partition, stale, diskfull, fsync, power, isolate)\n", f)
			os.Exit(2)
		}
	}
	if *server != "" {
		if *cli == "" {
			*cli = strings.Replace(*server, "server", "cli", 1)
		}
		c.Cluster = &check.ClusterConfig{Server: *server, CLI: *cli, Wait: *wait, NodeTimeout: *nodeTimeout, Netns: *clusterNetns}
		if *faults == fs.Lookup("faults").DefValue {
			c.Faults = nil // the cluster's defaults: no clock
		}
	}
	if c.Dir == "" {
		d, err := os.MkdirTemp("", "emqcheck-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "emqcheck:", err)
			os.Exit(2)
		}
		defer os.RemoveAll(d)
		c.Dir = d
	}
	if !*quiet {
		c.Log = func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	}
	fmt.Printf("seed %d\n", c.Seed)
	h, st, err := check.Run(context.Background(), c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "emqcheck:", err)
		os.Exit(2)
	}
	vs := check.CheckRun(h, &st)
	fmt.Println(st)
	fmt.Printf("%d violations %s\n", len(vs), check.Summary(vs))
	for _, v := range vs {
		fmt.Println(v)
	}
	if len(vs) > 0 {
		os.Exit(1)
	}
}
