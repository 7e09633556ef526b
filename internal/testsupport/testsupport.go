// Package testsupport is what emqd's tests share (the tests and the bench
// drivers bench/check and bench/load; product code never imports it): the
// EMQD_REQUIRE_REFERENCE gate for a missing reference tool, building,
// starting and SIGKILLing the emqd binary (Launch: the one launcher), a
// raw RESP connection that reads whole reply frames, and a keyspace dump
// that reads the same on emqd and on valkey-server.
package testsupport

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// ClientTimeout is the read and write timeout of a test's client (Conn's
// Read, ExpectClosed; the go-redis clients of tests that assert values, not
// time): a liveness bound, reached only by a hang, far above any stall a
// loaded 2-core CI machine under -race causes (go-redis's 3 s default
// tripped at a load of 20 under appendfsync always: TestFlowRandomFaults;
// docs/architecture.md §9). A test that asserts a time sets its own.
const ClientTimeout = time.Minute

// RequireEnv is the variable that turns a missing reference tool from a
// skip into a failure; CI (.ci/run) sets it to 1.
const RequireEnv = "EMQD_REQUIRE_REFERENCE"

// TB is the part of testing.TB the gate needs.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
}

// Missing reports that something a test needs (a reference server, a
// Debian package's binary, a browser) is not there: the test is skipped,
// or fails when EMQD_REQUIRE_REFERENCE=1, so CI never counts a skip as a
// pass.
func Missing(t TB, msg string) {
	t.Helper()
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("%s (%s=1)", msg, RequireEnv)
	}
	t.Skipf("%s", msg)
}

// LookPath is exec.LookPath of name, or Missing naming the Debian package
// that installs it.
func LookPath(t TB, name, debianPackage string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Missing(t, fmt.Sprintf("%s not found: install the Debian package %s", name, debianPackage))
	}
	return p
}

// FreePort is a TCP port of 127.0.0.1 nothing listened on a moment ago.
func FreePort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// BuildEmqd builds the emqd binary (cmd/emqd) into a temporary directory of
// t and returns its path.
func BuildEmqd(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "emqd")
	if err := Build(bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// Build builds cmd/emqd into the file bin (go build, from the module the
// caller runs in).
func Build(bin string) error {
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/emqd/emqd/cmd/emqd").CombinedOutput(); err != nil {
		return fmt.Errorf("go build emqd: %v\n%s", err, out)
	}
	return nil
}

// Proc is one running server process (Launch, StartEmqd).
type Proc struct {
	Cmd  *exec.Cmd
	Addr string // host:port it answers PING on
	// Exited is closed once the process has exited (and been waited for).
	Exited  <-chan struct{}
	logPath string
}

// Launch is how a process under test is started: the one launcher of the
// tests and of the bench drivers (bench/check, bench/load), which run
// outside `go test` too.
type Launch struct {
	// Argv is the command: the emqd binary and its arguments, or a wrapper
	// that execs it (`ip netns exec NAME emqd ...`, `sh -c "exec ..."`), so
	// that the process started is the server itself.
	Argv []string
	// Addr is the host:port the server answers PING on once it is ready.
	Addr string
	// LogPath receives its stdout and stderr, appended ("": Out).
	LogPath string
	// Out receives them when LogPath is "" (nil: discarded).
	Out io.Writer
	// Ready bounds the wait for the first PONG (0: 30 s).
	Ready time.Duration
}

// Start starts the process in a process group of its own (so a SIGKILL
// of the group reaches the server behind a wrapper) and waits until Addr
// answers PING (or NOAUTH). A process that exits first, or is not ready in
// time, is killed and reported with its log.
func (l Launch) Start() (*Proc, error) {
	if len(l.Argv) == 0 {
		return nil, fmt.Errorf("testsupport: Launch without a command")
	}
	cmd := exec.Command(l.Argv[0], l.Argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	DieWithParent(cmd)
	if l.LogPath != "" {
		logf, err := os.OpenFile(l.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, err
		}
		defer logf.Close() // the child has its own descriptor
		cmd.Stdout, cmd.Stderr = logf, logf
	} else if l.Out != nil {
		cmd.Stdout, cmd.Stderr = l.Out, l.Out
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", l.Argv[0], err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	p := &Proc{Cmd: cmd, Addr: l.Addr, Exited: exited, logPath: l.LogPath}
	ready := l.Ready
	if ready == 0 {
		ready = 30 * time.Second
	}
	deadline := time.Now().Add(ready)
	for {
		err := Ping(p.Addr)
		if err == nil {
			return p, nil
		}
		select {
		case <-exited:
			return nil, fmt.Errorf("%s exited before answering PING on %s:\n%s", strings.Join(l.Argv, " "), p.Addr, p.Log())
		default:
		}
		if time.Now().After(deadline) {
			p.Kill()
			return nil, fmt.Errorf("%s not ready after %v: %v\n%s", strings.Join(l.Argv, " "), ready, err, p.Log())
		}
		time.Sleep(10 * time.Millisecond)
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
	if _, err := c.Write(Encode("PING")); err != nil {
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

// StartEmqd starts bin with args plus --port, its output appended to
// logPath, and waits (up to 30 s) until it answers PING on 127.0.0.1:port
// (Launch). It fails t, with the log, when the process exits at boot. The
// process is killed when t ends if it still runs.
func StartEmqd(t testing.TB, bin, port, logPath string, args ...string) *Proc {
	t.Helper()
	p, err := Launch{Argv: append([]string{bin, "--port", port}, args...), Addr: "127.0.0.1:" + port, LogPath: logPath}.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	return p
}

// Log is what the process (and the ones before it on the same log file)
// wrote.
func (p *Proc) Log() string {
	if p.logPath == "" {
		return ""
	}
	b, _ := os.ReadFile(p.logPath)
	return string(b)
}

// Kill sends SIGKILL to the process group and waits until the process has
// exited (nothing when it has already).
func (p *Proc) Kill() {
	_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGKILL)
	<-p.Exited
}

// Signal sends sig to the process itself (SIGSTOP, SIGCONT).
func (p *Proc) Signal(sig syscall.Signal) error { return p.Cmd.Process.Signal(sig) }

// Stop sends SIGTERM (a clean shutdown) and returns the exit code.
func (p *Proc) Stop() int {
	p.Cmd.Process.Signal(syscall.SIGTERM)
	<-p.Exited
	return p.Cmd.ProcessState.ExitCode()
}

// StopWithin sends SIGTERM to the process group and waits up to grace for
// the exit, then SIGKILLs it; it returns the exit code (-1 when killed).
func (p *Proc) StopWithin(grace time.Duration) int {
	_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.Exited:
	case <-time.After(grace):
		p.Kill()
	}
	return p.Cmd.ProcessState.ExitCode()
}

// Encode renders args as a RESP multibulk request.
func Encode(args ...string) []byte {
	bs := make([][]byte, len(args))
	for i, a := range args {
		bs[i] = []byte(a)
	}
	return AppendCommand(nil, bs...)
}

// AppendCommand appends the RESP multibulk request of args to b (no
// allocation beyond b's growth: the allocation benchmarks build their
// requests with it).
func AppendCommand(b []byte, args ...[]byte) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, "\r\n"...)
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, "\r\n"...)
		b = append(b, a...)
		b = append(b, "\r\n"...)
	}
	return b
}

// ReadFrame appends one complete RESP2 or RESP3 reply frame, as raw
// bytes, from r to out.
func ReadFrame(r *bufio.Reader, out *bytes.Buffer) error {
	line, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	out.WriteString(line)
	if len(line) < 3 {
		return fmt.Errorf("short line %q", line)
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+', '-', ':', '_', ',', '#', '(':
		return nil
	case '$', '=', '!':
		n, err := strconv.Atoi(body)
		if err != nil {
			return err
		}
		if n < 0 {
			return nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return err
		}
		out.Write(buf)
		return nil
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(body)
		if err != nil {
			return err
		}
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		for i := 0; i < n; i++ {
			if err := ReadFrame(r, out); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("bad frame %q", line)
}

// Conn is a raw RESP connection: it writes bytes and reads whole reply
// frames, failing the test on an error or after ClientTimeout.
type Conn struct {
	t  testing.TB
	NC net.Conn
	BR *bufio.Reader
}

// Dial connects to addr; the connection is closed when t ends.
func Dial(t testing.TB, addr string) *Conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &Conn{t: t, NC: nc, BR: bufio.NewReader(nc)}
}

// NewConn wraps nc, a connection the caller made (and closes), as a Conn.
func NewConn(t testing.TB, nc net.Conn) *Conn {
	return &Conn{t: t, NC: nc, BR: bufio.NewReader(nc)}
}

// Write sends b as it is.
func (c *Conn) Write(b []byte) {
	c.t.Helper()
	if _, err := c.NC.Write(b); err != nil {
		c.t.Fatal(err)
	}
}

// Do sends one command and returns its reply frame.
func (c *Conn) Do(args ...string) string {
	c.t.Helper()
	c.Write(Encode(args...))
	return c.Read()
}

// Read returns the next reply frame.
func (c *Conn) Read() string {
	c.t.Helper()
	s, err := c.ReadTimeout(ClientTimeout)
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	return s
}

// ReadTimeout returns the next reply frame, or the error (a timeout after
// d).
func (c *Conn) ReadTimeout(d time.Duration) (string, error) {
	c.NC.SetReadDeadline(time.Now().Add(d))
	defer c.NC.SetReadDeadline(time.Time{})
	var buf bytes.Buffer
	err := ReadFrame(c.BR, &buf)
	return buf.String(), err
}

// ExpectNothing fails the test if a reply frame arrives within d.
func (c *Conn) ExpectNothing(d time.Duration) {
	c.t.Helper()
	if s, err := c.ReadTimeout(d); err == nil {
		c.t.Fatalf("unexpected reply %q", s)
	}
}

// ExpectClosed fails the test unless the peer closes the connection within
// ClientTimeout (a byte read, or a timeout, fails it).
func (c *Conn) ExpectClosed() {
	c.t.Helper()
	c.NC.SetReadDeadline(time.Now().Add(ClientTimeout))
	b, err := c.BR.ReadByte()
	if err == nil {
		c.t.Fatalf("connection still open, got %q", b)
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		c.t.Fatal("connection not closed")
	}
}

// Keyspace renders databases 0..dbs-1 of the server at addr as sorted
// lines (db, key, type, PEXPIRETIME, value: a hash's fields and a sorted
// set's members sorted), read through commands both emqd and valkey-server
// answer, so two servers' keyspaces compare as strings.
func Keyspace(t testing.TB, addr string, dbs int) string {
	t.Helper()
	ctx := context.Background()
	var lines []string
	for db := 0; db < dbs; db++ {
		c := redis.NewClient(&redis.Options{Addr: addr, DB: db, Protocol: 2, ReadTimeout: ClientTimeout, WriteTimeout: ClientTimeout})
		keys, err := c.Keys(ctx, "*").Result()
		if err != nil {
			c.Close()
			t.Fatalf("KEYS on %s: %v", addr, err)
		}
		for _, k := range keys {
			typ := c.Type(ctx, k).Val()
			var val string
			switch typ {
			case "string":
				val = c.Get(ctx, k).Val()
			case "hash":
				var fs []string
				for f, v := range c.HGetAll(ctx, k).Val() {
					fs = append(fs, f+"="+v)
				}
				sort.Strings(fs)
				val = strings.Join(fs, ",")
			case "zset":
				for _, z := range c.ZRangeWithScores(ctx, k, 0, -1).Val() {
					val += fmt.Sprintf("%v:%v,", z.Member, z.Score)
				}
			}
			lines = append(lines, fmt.Sprintf("%d %q %s %d %q", db, k, typ, c.PExpireTime(ctx, k).Val(), val))
		}
		c.Close()
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
