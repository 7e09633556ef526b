// Package valkeyref finds and starts the reference server, a real Valkey
// 8.0.1 (valkey-server, valkey-cli, its stock valkey.conf and its command
// table commands/*.json), for tests that compare emqd's bytes with it.
//
// The folder comes from the environment variable EMQD_VALKEY_DIR, which
// .ci/run sets; a test never names a path outside the repository. Without
// the variable (or with a folder lacking the file asked for) a test skips,
// or fails when EMQD_REQUIRE_REFERENCE=1 (CI sets it).
//
// The package imports only the standard library and internal/testsupport
// (the gate), so tests of every layer above 1 may use it
// (layering_test.go: layer 1).
package valkeyref

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/emqd/emqd/internal/testsupport"
)

// EnvDir names the environment variable holding the reference folder.
const EnvDir = "EMQD_VALKEY_DIR"

// TB is the part of testing.TB this package uses.
type TB interface {
	Helper()
	Cleanup(func())
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
	TempDir() string
	Logf(format string, args ...any)
}

// Dir returns the reference folder, skipping the test when EMQD_VALKEY_DIR
// is unset or empty, or failing it when EMQD_REQUIRE_REFERENCE=1.
func Dir(t TB) string {
	t.Helper()
	d := os.Getenv(EnvDir)
	if d == "" {
		missing(t, EnvDir+" is not set: point it at the Valkey 8.0.1 reference folder (valkey-server, valkey.conf, commands/) to compare with the reference server")
	}
	return d
}

// File returns the path of name inside the reference folder (for example
// "valkey-server", "valkey.conf", "commands"), skipping or failing as Dir
// when it is not there.
func File(t TB, name string) string {
	t.Helper()
	p := filepath.Join(Dir(t), name)
	if _, err := os.Stat(p); err != nil {
		missing(t, fmt.Sprintf("%s: %v", p, err))
	}
	return p
}

// missing is the gate of every reference tool (testsupport.Missing).
func missing(t TB, msg string) { testsupport.Missing(t, msg) }

// Server is one valkey-server process started for a test.
type Server struct {
	Addr string // 127.0.0.1:port
	Port int
	Dir  string // its working directory (dump.rdb, the AOF folder)

	bin    string
	args   []string
	mu     sync.Mutex // guards cmd and exited
	cmd    *exec.Cmd
	exited chan struct{}
	log    syncBuffer
}

// Start starts a valkey-server on a free loopback port in a fresh temporary
// directory with no persistence (--save "" --appendonly no) unless args
// override it; extra args are valkey-server command-line directives
// ("--hash-max-listpack-entries", "128"). The server is killed when the
// test ends.
func Start(t TB, args ...string) *Server {
	t.Helper()
	return StartIn(t, t.TempDir(), args...)
}

// StartIn is Start with the working directory given (to load a dump.rdb
// placed there beforehand).
func StartIn(t TB, dir string, args ...string) *Server {
	t.Helper()
	s := &Server{Dir: dir, bin: File(t, "valkey-server"), args: args}
	t.Cleanup(s.Kill)
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatalf("valkeyref: %v", err)
		}
		s.Port, s.Addr = port, "127.0.0.1:"+strconv.Itoa(port)
		if lastErr = s.start(); lastErr == nil {
			return s
		}
	}
	t.Fatalf("valkeyref: valkey-server did not start: %v", lastErr)
	return nil
}

// Restart kills the server (SIGKILL: no save on exit) and starts it again
// on the same port and directory with the same arguments.
func (s *Server) Restart() error {
	s.Kill()
	return s.start()
}

func (s *Server) start() error {
	argv := []string{"--port", strconv.Itoa(s.Port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", s.Dir, "--protected-mode", "no",
		"--daemonize", "no", "--loglevel", "warning"}
	argv = append(argv, s.args...)
	cmd := exec.Command(s.bin, argv...)
	testsupport.DieWithParent(cmd)
	cmd.Dir = s.Dir
	cmd.Stdout, cmd.Stderr = &s.log, &s.log
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return fmt.Errorf("valkey-server exited at start: %s", s.log.String())
		default:
		}
		if c, err := net.DialTimeout("tcp", s.Addr, 200*time.Millisecond); err == nil {
			_, werr := c.Write([]byte("PING\r\n"))
			buf := make([]byte, 64)
			c.SetReadDeadline(time.Now().Add(time.Second))
			n, _ := c.Read(buf)
			c.Close()
			if werr == nil && strings.HasPrefix(string(buf[:n]), "+PONG") {
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.Kill()
	return fmt.Errorf("valkey-server did not answer PING on %s: %s", s.Addr, s.log.String())
}

// Kill stops the process with SIGKILL (no save on exit) and waits for it.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd, s.exited = nil, nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Kill()
	<-exited
}

// Log returns what the server printed so far.
func (s *Server) Log() string { return s.log.String() }

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
