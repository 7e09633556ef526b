// Command aofboot measures what the append-only file costs at boot (issue
// 4): it fills emqd (appendonly yes, appendfsync no) with --jobs jobs
// through EMQ.ENQUEUE (a quarter of them then claimed, so rows are pending
// and active), stops it, and times boots that replay that file: emqd, then
// redis-server (appendonly yes) loading the very same file. It then runs
// BGREWRITEAOF while a client PINGs (the longest PING is the snapshot
// pause) and times both servers again on the rewritten, compact file.
//
// Boot time is measured from the exec of the server to its first +PONG
// (redis-server answers -LOADING until it has loaded).
//
//	go build -o bench/bin/emqd ./cmd/emqd && go run ./bench/cmd/aofboot --jobs 1000000
package main

import (
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
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/emqd/emqd/bench/internal/procs"
	"github.com/redis/go-redis/v9"
)

func main() {
	jobs := flag.Int("jobs", 1000000, "jobs in the AOF")
	emqdBin := flag.String("emqd-bin", "bench/bin/emqd", "emqd binary")
	redisBin := flag.String("redis-bin", "redis-server", "redis-server binary")
	runs := flag.Int("runs", 3, "boots per cell (the median is printed)")
	keep := flag.Bool("keep", false, "keep the working directory")
	flag.StringVar(&serverCPU, "server-cpu", "", "run the servers under taskset -c LIST (e.g. 0; pin the driver itself elsewhere)")
	flag.BoolVar(&skipRewrite, "skip-rewrite", false, "time the boots of the file as written only (no BGREWRITEAOF, no second table row)")
	flag.BoolVar(&tsv, "tsv", false, "print the medians as one tab-separated line: boot, jobs, MB, emqd s, redis s (as written)")
	flag.Parse()
	if err := run(*jobs, *emqdBin, *redisBin, *runs, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "aofboot:", err)
		os.Exit(1)
	}
}

// Set by flags.
var (
	serverCPU   string
	skipRewrite bool
	tsv         bool
)

type server struct {
	cmd  *exec.Cmd
	addr string
	done chan struct{}
}

// boot starts bin and returns once it answers PING, with the elapsed time.
func boot(bin string, args []string, dir string) (*server, time.Duration, error) {
	port, err := procs.FreePort()
	if err != nil {
		return nil, 0, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	args = append([]string{"--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--dir", dir}, args...)
	cmd := exec.Command(bin, args...)
	if serverCPU != "" {
		cmd = exec.Command("taskset", append([]string{"-c", serverCPU, bin}, args...)...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	logf, err := os.OpenFile(filepath.Join(dir, "..", filepath.Base(dir)+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, 0, err
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, 0, err
	}
	s := &server{cmd: cmd, addr: addr, done: make(chan struct{})}
	go func() { cmd.Wait(); close(s.done) }()
	if err := procs.WaitPing(addr, 10*time.Minute, s.done); err != nil {
		s.kill()
		return nil, 0, fmt.Errorf("%s: %w", bin, err)
	}
	return s, time.Since(t0), nil
}

func (s *server) kill() {
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.done
}

// shutdown sends SHUTDOWN (emqd fsyncs its AOF) and waits for the exit.
func (s *server) shutdown() {
	if nc, err := net.DialTimeout("tcp", s.addr, time.Second); err == nil {
		nc.Write([]byte("*2\r\n$8\r\nSHUTDOWN\r\n$6\r\nNOSAVE\r\n"))
		defer nc.Close()
	}
	select {
	case <-s.done:
	case <-time.After(60 * time.Second):
		s.kill()
	}
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// timeBoots boots emqd (on the file in emqdDir) and redis-server (on a
// fresh copy each time) runs times and returns the medians.
func timeBoots(emqdBin, redisBin, emqdDir, work string, runs int) (time.Duration, time.Duration, error) {
	var e, r []time.Duration
	for i := range runs {
		s, d, err := boot(emqdBin, []string{"--appendonly", "yes", "--appendfsync", "no"}, emqdDir)
		if err != nil {
			return 0, 0, err
		}
		s.shutdown()
		e = append(e, d)
		rdir := filepath.Join(work, fmt.Sprintf("redis-%d", i))
		os.RemoveAll(rdir)
		if err := os.MkdirAll(rdir, 0o755); err != nil {
			return 0, 0, err
		}
		if err := copyFile(filepath.Join(emqdDir, "appendonly.aof"), filepath.Join(rdir, "appendonly.aof")); err != nil {
			return 0, 0, err
		}
		rs, d, err := boot(redisBin, []string{"--appendonly", "yes", "--appendfsync", "no", "--save", "", "--daemonize", "no",
			"--auto-aof-rewrite-percentage", "0"}, rdir)
		if err != nil {
			return 0, 0, err
		}
		rs.shutdown()
		os.RemoveAll(rdir)
		r = append(r, d)
	}
	return median(e), median(r), nil
}

func median(d []time.Duration) time.Duration {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2]
}

func run(jobs int, emqdBin, redisBin string, runs int, keep bool) error {
	work, err := os.MkdirTemp("", "aofboot-")
	if err != nil {
		return err
	}
	if !keep {
		defer os.RemoveAll(work)
	} else {
		fmt.Println("working directory:", work)
	}
	edir := filepath.Join(work, "emqd")
	if err := os.MkdirAll(edir, 0o755); err != nil {
		return err
	}
	s, _, err := boot(emqdBin, []string{"--appendonly", "yes", "--appendfsync", "no"}, edir)
	if err != nil {
		return err
	}
	ctx := context.Background()
	t0 := time.Now()
	if err := fill(ctx, s.addr, jobs); err != nil {
		s.kill()
		return err
	}
	fillDur := time.Since(t0)
	s.shutdown()
	st, err := os.Stat(filepath.Join(edir, "appendonly.aof"))
	if err != nil {
		return err
	}
	written := st.Size()
	logf := fmt.Printf
	if tsv {
		logf = func(f string, a ...any) (int, error) { return fmt.Fprintf(os.Stderr, f, a...) }
	}
	logf("AOF of %d jobs (%d pending, %d active, 64-byte payloads): %.1f MB as written (filled in %.1f s)\n",
		jobs, jobs-jobs/4, jobs/4, float64(written)/1e6, fillDur.Seconds())

	e1, r1, err := timeBoots(emqdBin, redisBin, edir, work, runs)
	if err != nil {
		return err
	}
	if tsv {
		fmt.Printf("boot\t%d\t%.1f\t%.4f\t%.4f\n", jobs, float64(written)/1e6, e1.Seconds(), r1.Seconds())
	}
	if skipRewrite {
		if !tsv {
			fmt.Printf("\nboot to first PONG, median of %d: emqd %.2fs, redis-server %.2fs, ratio (emqd time / redis time) %.2fx\n",
				runs, e1.Seconds(), r1.Seconds(), e1.Seconds()/r1.Seconds())
		}
		return nil
	}

	// Rewrite while a client PINGs: the longest PING is the pause.
	s, _, err = boot(emqdBin, []string{"--appendonly", "yes", "--appendfsync", "no"}, edir)
	if err != nil {
		return err
	}
	c := redis.NewClient(&redis.Options{Addr: s.addr, Protocol: 2, PoolSize: 2})
	stop := make(chan struct{})
	var maxPing time.Duration // written by the pinger; read after the barrier below
	var mu sync.Mutex
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			p0 := time.Now()
			if c.Ping(ctx).Err() != nil {
				return
			}
			mu.Lock()
			maxPing = max(maxPing, time.Since(p0))
			mu.Unlock()
		}
	})
	time.Sleep(1000 * time.Millisecond)
	mu.Lock()
	idlePing := maxPing
	maxPing = 0
	mu.Unlock()
	rw0 := time.Now()
	if err := c.Do(ctx, "BGREWRITEAOF").Err(); err != nil {
		return err
	}
	for {
		info := c.Info(ctx, "persistence").Val()
		if strings.Contains(info, "aof_rewrite_in_progress:0") {
			if !strings.Contains(info, "aof_last_bgrewrite_status:ok") {
				return errors.New("rewrite failed")
			}
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	rwDur := time.Since(rw0)
	close(stop)
	wg.Wait()
	c.Close()
	s.shutdown()
	st, err = os.Stat(filepath.Join(edir, "appendonly.aof"))
	if err != nil {
		return err
	}
	fmt.Printf("BGREWRITEAOF: %.1f s, file %.1f MB; longest PING during it %.1f ms (idle, the second before: %.1f ms)\n",
		rwDur.Seconds(), float64(st.Size())/1e6, float64(maxPing.Microseconds())/1000, float64(idlePing.Microseconds())/1000)
	e2, r2, err := timeBoots(emqdBin, redisBin, edir, work, runs)
	if err != nil {
		return err
	}
	fmt.Printf("\nboot to first PONG, median of %d          %10s %14s %8s\n", runs, "emqd", "redis-server", "ratio")
	fmt.Printf("%-40s %9.2fs %13.2fs %7.2fx\n", fmt.Sprintf("as written (%.0f MB, MULTI per verb)", float64(written)/1e6), e1.Seconds(), r1.Seconds(), r1.Seconds()/e1.Seconds())
	fmt.Printf("%-40s %9.2fs %13.2fs %7.2fx\n", fmt.Sprintf("rewritten (%.0f MB)", float64(st.Size())/1e6), e2.Seconds(), r2.Seconds(), r2.Seconds()/e2.Seconds())
	fmt.Println("(ratio: redis-server time / emqd time; above 1 means emqd boots faster)")
	return nil
}

// fill enqueues jobs pipelined over 8 connections, then claims a quarter.
func fill(ctx context.Context, addr string, jobs int) error {
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, PoolSize: 8, ReadTimeout: time.Minute})
	defer c.Close()
	payload := strings.Repeat("p", 64)
	const batch = 1000
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	next := make(chan int, 16)
	go func() {
		for i := 0; i < jobs; i += batch {
			next <- min(batch, jobs-i)
		}
		close(next)
	}()
	for range 8 {
		wg.Go(func() {
			for n := range next {
				p := c.Pipeline()
				for range n {
					p.Do(ctx, "EMQ.ENQUEUE", "bench", "*", payload)
				}
				if _, err := p.Exec(ctx); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
	}
	for claimed := 0; claimed < jobs/4; {
		n := min(100, jobs/4-claimed)
		v, err := c.Do(ctx, "EMQ.CLAIM", "bench", 3600000, "COUNT", n).Slice()
		if err != nil {
			return err
		}
		if len(v) == 0 {
			return errors.New("nothing to claim")
		}
		claimed += len(v)
	}
	return nil
}
