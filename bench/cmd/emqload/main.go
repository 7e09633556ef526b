// Command emqload is the emqd load driver: producers and workers against a
// real emqd, with failures, worker crashes and optional SIGKILL restarts of
// the server, verifying at the end that no job was lost or completed twice.
// The core is package bench/load; its doc defines "completed exactly once".
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/emqd/emqd/bench/load"
)

func main() {
	var c load.Config
	var logPath string
	var progressEvery time.Duration
	var quiet bool
	fs := flag.NewFlagSet("emqload", flag.ExitOnError)
	fs.StringVar(&c.Addr, "addr", "127.0.0.1:6379", "emqd host:port")
	fs.StringVar(&c.Password, "password", "", "password (requirepass)")
	fs.StringVar(&c.Queue, "queue", "", "queue name (default: load-<random>; must be empty)")
	cluster := fs.String("cluster", "", "nodes of a Valkey/Redis Cluster with the emq library loaded (host:port,...), instead of --addr: FCALL emq_* through a cluster client (docs/cluster.md)")
	fs.IntVar(&c.Queues, "queues", 1, "spread the jobs over this many queues (<queue>.0 ...), on a cluster over the slots")
	fs.DurationVar(&c.PollInterval, "poll-interval", 100*time.Millisecond, "longest wait of an idle worker between claims on a cluster (a function cannot block)")
	fs.IntVar(&c.Jobs, "jobs", 100000, "jobs to produce (0: produce for --duration)")
	fs.DurationVar(&c.Duration, "duration", 0, "produce for this long (with --jobs 0)")
	fs.IntVar(&c.Producers, "producers", 8, "producer goroutines")
	fs.IntVar(&c.Workers, "workers", 32, "jobs run at once (the emq worker's Concurrency)")
	fs.IntVar(&c.PayloadBytes, "payload-bytes", 64, "payload size")
	fs.DurationVar(&c.Work, "work", 0, "mean simulated work per job (uniform in [0, 2*work]); heartbeats while working")
	fs.IntVar(&c.LeaseMs, "lease-ms", 2000, "lease_ms of EMQ.CLAIM and EMQ.EXTEND")
	fs.DurationVar(&c.Heartbeat, "heartbeat", 0, "EMQ.EXTEND interval while working (default lease/3)")
	fs.IntVar(&c.BlockMs, "block-ms", 500, "EMQ.CLAIM BLOCK block_ms")
	fs.Float64Var(&c.FailRate, "fail-rate", 0, "probability a worker fails a job (EMQ.FAIL)")
	fs.Float64Var(&c.CrashRate, "crash-rate", 0, "probability a worker drops a job mid-work without a word")
	fs.IntVar(&c.MaxAttempts, "max-attempts", 5, "EMQ.FAIL max_attempts (the cap on failures)")
	fs.DurationVar(&c.BackoffBase, "backoff", 10*time.Millisecond, "retry delay after f failures: min(backoff << f, --backoff-max)")
	fs.DurationVar(&c.BackoffMax, "backoff-max", time.Second, "cap of the retry delay")
	fs.DurationVar(&c.SweepEvery, "sweep-every", 250*time.Millisecond, "interval of EMQ.STALLED.CHECK")
	fs.IntVar(&c.MaxStalled, "max-stalled", 1000, "EMQ.STALLED.CHECK max_stalled (large: crashed jobs are recovered, not dead-lettered)")
	fs.IntVar(&c.SweepLimit, "sweep-limit", 100, "limit of EMQ.STALLED.CHECK")
	fs.IntVar(&c.MaxBacklog, "max-backlog", 0, "admitted but unfinished jobs above which producers wait (default 20 per worker)")
	fs.DurationVar(&c.DrainTimeout, "drain-timeout", 0, "how long to wait for the last jobs (default 30s + 3 leases)")
	fs.StringVar(&c.RestartCmd, "restart-cmd", "", "shell command that starts emqd on --addr (with a fixed --dir); the driver runs it")
	fs.DurationVar(&c.RestartEvery, "restart-every", 0, "with --restart-cmd: SIGKILL emqd at this interval and start it again")
	fs.IntVar(&c.RestartAfter, "restart-after", 0, "with --restart-cmd: SIGKILL emqd each time this many more jobs completed or died, and start it again (excludes --restart-every)")
	fs.StringVar(&logPath, "server-log", "", "file for the output of --restart-cmd (default: discarded)")
	fs.DurationVar(&progressEvery, "progress-every", 0, "progress interval (default 250ms on a terminal, 5s otherwise)")
	fs.BoolVar(&quiet, "quiet", false, "no progress output")
	fs.Uint64Var(&c.Seed, "seed", 0, "seed of the workers' random choices (0: random)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: emqload [flags]

Producers enqueue jobs (client-supplied ids); the workers (the emq
library's Worker) claim with BLOCK, heartbeat with EMQ.EXTEND, and
complete, fail (--fail-rate, backoff from the failures count) or crash
(--crash-rate: drop the job without a word); the library's sweeper sends
EMQ.STALLED.CHECK every --sweep-every.
At the end every job must be completed exactly once or dead with a reason,
nothing left pending, active or scheduled, and EMQ.COUNTS must agree.
Prints throughput and enqueue-to-complete latency (p50 p99 p999); exits 1
if the verification fails, 2 if the run could not be carried out.

Examples:
  emqload --addr 127.0.0.1:6379 --jobs 1000000 --producers 8 --workers 32
  emqload --jobs 1000000 --fail-rate 0.05 --crash-rate 0.01 --lease-ms 1000
  emqload --addr 127.0.0.1:7000 --jobs 200000 --fail-rate 0.05 --crash-rate 0.01 \
    --restart-every 3s --restart-cmd "bench/bin/emqd --port 7000 --dir /tmp/emq \
      --appendonly yes --appendfsync always"
  emqload --cluster 10.0.0.1:6379,10.0.0.2:6379 --queues 64 --jobs 200000 --fail-rate 0.05

With --restart-every, answered writes must survive SIGKILL (appendfsync
always), or the verification reports what the kill undid.

Flags:
`)
		fs.PrintDefaults()
	}
	_ = fs.Parse(os.Args[1:])
	if *cluster != "" {
		c.Cluster, c.Addr = strings.Split(*cluster, ","), ""
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "emqload: unexpected argument %q\n", fs.Arg(0))
		os.Exit(2)
	}
	if !quiet {
		c.Progress = os.Stdout
		if st, err := os.Stdout.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			c.ProgressTTY = true
		}
		c.ProgressEvery = progressEvery
	}
	if logPath != "" {
		f, err := os.Create(logPath)
		if err != nil {
			fmt.Fprintln(os.Stderr, "emqload:", err)
			os.Exit(2)
		}
		defer f.Close()
		c.ServerLog = f
	}
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		fmt.Fprintln(os.Stderr, "\nemqload: stopping producers, draining (again to quit at once)")
		cancel()
		<-sigs
		os.Exit(130)
	}()
	res, err := load.Run(ctx, c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "emqload:", err)
		os.Exit(2)
	}
	fmt.Print(res.Summary())
	if !res.OK() {
		os.Exit(1)
	}
}
