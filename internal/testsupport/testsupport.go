// Package testsupport is what emqd's tests share (tests only; product code
// never imports it): the EMQD_REQUIRE_REFERENCE gate for a missing
// reference tool, building, starting and SIGKILLing the emqd binary, a
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
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/emqd/emqd/cmd/emqd").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// Proc is one running emqd process (StartEmqd).
type Proc struct {
	Cmd  *exec.Cmd
	Addr string // 127.0.0.1:port
	// Exited is closed once the process has exited (and been waited for).
	Exited  <-chan struct{}
	logPath string
}

// StartEmqd starts bin with args plus --port, its output appended to
// logPath, and waits (up to 30 s) until it answers PING on 127.0.0.1:port.
// It fails t, with the log, when the process exits at boot. The process is
// killed when t ends if it still runs.
func StartEmqd(t testing.TB, bin, port, logPath string, args ...string) *Proc {
	t.Helper()
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, append([]string{"--port", port}, args...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	p := &Proc{Cmd: cmd, Addr: "127.0.0.1:" + port, Exited: exited, logPath: logPath}
	t.Cleanup(func() {
		cmd.Process.Kill() // an error when it has exited already
		<-exited
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		c := redis.NewClient(&redis.Options{Addr: p.Addr, Protocol: 2, MaxRetries: -1})
		err := c.Ping(context.Background()).Err()
		c.Close()
		if err == nil {
			return p
		}
		select {
		case <-exited:
			t.Fatalf("emqd exited at boot:\n%s", p.Log())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("emqd not ready after 30 s: %v\n%s", err, p.Log())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Log is what the process (and the ones before it on the same log file)
// wrote.
func (p *Proc) Log() string {
	b, _ := os.ReadFile(p.logPath)
	return string(b)
}

// Kill sends SIGKILL and waits until the process has exited.
func (p *Proc) Kill() {
	p.Cmd.Process.Signal(syscall.SIGKILL)
	<-p.Exited
}

// Stop sends SIGTERM (a clean shutdown) and returns the exit code.
func (p *Proc) Stop() int {
	p.Cmd.Process.Signal(syscall.SIGTERM)
	<-p.Exited
	return p.Cmd.ProcessState.ExitCode()
}

// Encode renders args as a RESP multibulk request.
func Encode(args ...string) []byte {
	var b []byte
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
// frames, failing the test on an error or after 5 seconds.
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
	s, err := c.ReadTimeout(5 * time.Second)
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

// Keyspace renders databases 0..dbs-1 of the server at addr as sorted
// lines (db, key, type, PEXPIRETIME, value: a hash's fields and a sorted
// set's members sorted), read through commands both emqd and valkey-server
// answer, so two servers' keyspaces compare as strings.
func Keyspace(t testing.TB, addr string, dbs int) string {
	t.Helper()
	ctx := context.Background()
	var lines []string
	for db := 0; db < dbs; db++ {
		c := redis.NewClient(&redis.Options{Addr: addr, DB: db, Protocol: 2})
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
