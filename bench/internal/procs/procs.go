// Package procs starts and stops the server processes the benchmarks drive
// (emqd and redis-server) on free loopback ports, and waits until they
// answer PING.
package procs

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/emqd/emqd/internal/testsupport"
)

// FreePort returns a loopback TCP port that was free a moment ago (the
// kernel picks it; another process may still take it before it is used).
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Proc is a started server process.
type Proc struct {
	Name string
	Addr string // host:port
	Cmd  *exec.Cmd
	done chan struct{}
	tmp  string // removed once the process has exited
}

// startCPU runs bin with args (its output goes to logPath, or is discarded
// when logPath is ""), under `taskset -c cpu` when cpu is not "" (taskset
// execs the server, so the process is the server itself), through
// testsupport.Launch (the one launcher of the tests and the bench
// drivers), waiting up to 10 s for addr to answer PING.
func startCPU(cpu, name, bin string, args []string, addr, logPath, tmp string) (*Proc, error) {
	argv := append([]string{bin}, args...)
	if cpu != "" {
		argv = append([]string{"taskset", "-c", cpu}, argv...)
	}
	if logPath != "" {
		f, err := os.Create(logPath) // a fresh log, as before
		if err != nil {
			return nil, err
		}
		f.Close()
	}
	lp, err := testsupport.Launch{Argv: argv, Addr: addr, LogPath: logPath, Ready: 10 * time.Second}.Start()
	if err != nil {
		if tmp != "" {
			_ = os.RemoveAll(tmp)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p := &Proc{Name: name, Addr: addr, Cmd: lp.Cmd, done: make(chan struct{}), tmp: tmp}
	go func() {
		<-lp.Exited
		if p.tmp != "" {
			_ = os.RemoveAll(p.tmp)
		}
		close(p.done)
	}()
	return p, nil
}

// WaitPing polls addr with an inline PING until it answers +PONG, the
// timeout passes, or exited is closed (the process died).
func WaitPing(addr string, timeout time.Duration, exited <-chan struct{}) error {
	deadline := time.Now().Add(timeout)
	for {
		if Ping(addr) == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("process exited before answering PING on %s", addr)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no PONG from %s within %v", addr, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Ping sends one RESP PING to addr and checks for +PONG (or NOAUTH: the
// server is up and wants a password).
func Ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" && !strings.HasPrefix(line, "-NOAUTH") {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Kill sends SIGKILL to the process group and waits for the exit.
func (p *Proc) Kill() {
	if p == nil || p.Cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// Stop sends SIGTERM and waits up to grace for the exit, then SIGKILL.
func (p *Proc) Stop(grace time.Duration) {
	if p == nil || p.Cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.Kill()
	}
}

// Pid is the server's process id.
func (p *Proc) Pid() int { return p.Cmd.Process.Pid }

// StartEmqdCPU starts the emqd binary on a free port with persistence off
// and the extra directives given (valkey style, e.g.
// "--enable-debug-command", "yes"), pinned to the CPUs cpu names (taskset
// -c list; "" leaves it unpinned). Later directives in extra override earlier ones,
// so extra may turn persistence on ("--appendonly", "yes", "--dir", d).
func StartEmqdCPU(cpu, bin string, extra ...string) (*Proc, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	args := append([]string{"--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--appendonly", "no", "--save", ""}, extra...)
	return startCPU(cpu, "emqd", bin, args, fmt.Sprintf("127.0.0.1:%d", port), "", "")
}

// StartRedis starts redis-server on a free port with persistence off (no
// RDB, no AOF), working in a temporary directory removed at exit.
func StartRedis(bin string) (*Proc, error) { return StartRedisCPU("", bin) }

// StartRedisCPU is StartRedis pinned to the CPUs cpu names ("" leaves it
// unpinned), with extra directives after the defaults (they override them).
func StartRedisCPU(cpu, bin string, extra ...string) (*Proc, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "bench-redis-")
	if err != nil {
		return nil, err
	}
	args := append([]string{"--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--daemonize", "no", "--loglevel", "warning"}, extra...)
	return startCPU(cpu, "redis-server", bin, args, fmt.Sprintf("127.0.0.1:%d", port), "", dir)
}

// Status returns the fields of /proc/<pid>/status in kB for the names asked
// (VmRSS: resident now; VmHWM: the peak resident set).
func Status(pid int, names ...string) (map[string]int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(names))
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		for _, n := range names {
			if k == n {
				var kb int64
				fmt.Sscanf(strings.TrimSpace(v), "%d", &kb)
				out[n] = kb
			}
		}
	}
	for _, n := range names {
		if _, ok := out[n]; !ok {
			return nil, fmt.Errorf("/proc/%d/status has no %s", pid, n)
		}
	}
	return out, nil
}

// StartRedisNode starts redis-server on a free port (with port+10000, the
// cluster bus, free too) with persistence off, working in a temporary
// directory removed at exit, with the extra arguments given.
func StartRedisNode(bin string, extra ...string) (*Proc, error) {
	var port int
	for i := 0; ; i++ {
		p, err := FreePort()
		if err != nil {
			return nil, err
		}
		if p+10000 <= 65535 {
			if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p+10000)); err == nil {
				l.Close()
				port = p
				break
			}
		}
		if i == 50 {
			return nil, fmt.Errorf("no free port pair")
		}
	}
	dir, err := os.MkdirTemp("", "bench-redis-")
	if err != nil {
		return nil, err
	}
	args := append([]string{"--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--daemonize", "no", "--loglevel", "warning"}, extra...)
	return startCPU("", "redis-server", bin, args, fmt.Sprintf("127.0.0.1:%d", port), "", dir)
}

// StartRedisCluster starts n redis-server primaries with cluster-enabled
// (persistence off), joins them with `redis-cli --cluster create ...
// --cluster-replicas 0 --cluster-yes` (the slots split evenly) and waits
// until every node reports cluster_state:ok. On error the nodes already
// started are killed.
func StartRedisCluster(bin, cli string, n int) ([]*Proc, error) {
	var nodes []*Proc
	fail := func(err error) ([]*Proc, error) {
		for _, p := range nodes {
			p.Kill()
		}
		return nil, err
	}
	for i := 0; i < n; i++ {
		p, err := StartRedisNode(bin, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
		if err != nil {
			return fail(err)
		}
		nodes = append(nodes, p)
	}
	args := []string{"--cluster", "create"}
	for _, p := range nodes {
		args = append(args, p.Addr)
	}
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		return fail(fmt.Errorf("redis-cli %s: %v: %s", strings.Join(args, " "), err, out))
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, p := range nodes {
		for {
			out, err := exec.Command(cli, "-h", "127.0.0.1", "-p", p.Addr[strings.LastIndexByte(p.Addr, ':')+1:], "CLUSTER", "INFO").Output()
			if err == nil && strings.Contains(string(out), "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				return fail(fmt.Errorf("%s: no cluster_state:ok within 30 s", p.Addr))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nodes, nil
}

// CPUNanos is the CPU time (ns) process pid has run so far, all its
// threads: the sum of the first field of each
// /proc/PID/task/TID/schedstat (a thread that ends meanwhile is skipped).
// bench/cmd/jobcycle and bench/cmd/compare read the servers' CPU with it.
func CPUNanos(pid int) (int64, error) {
	cpu, _, err := SchedNanos(pid)
	return cpu, err
}

// SchedNanos is the CPU time (ns) process pid has run so far and the time
// (ns) its threads have waited in a run queue, runnable but not running:
// the sums of the first and the second field of each
// /proc/PID/task/TID/schedstat (a thread that ends meanwhile is skipped).
// On a shared core the wait is the share of it other processes (or the
// process's own other threads) took: bench/cmd/compare prints it beside
// the rates, which follow it (bench/README.md, "`-P 32` and `-P 1` (issue
// 25, round 6)").
func SchedNanos(pid int) (cpu, wait int64, err error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
		if err != nil {
			continue // the thread ended
		}
		f := strings.Fields(string(b))
		if len(f) < 2 {
			continue
		}
		v, err1 := strconv.ParseInt(f[0], 10, 64)
		w, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			return 0, 0, fmt.Errorf("schedstat of %d/%s: %q", pid, t.Name(), b)
		}
		cpu += v
		wait += w
	}
	return cpu, wait, nil
}
