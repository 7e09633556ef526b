package load

import (
	"fmt"
	"io"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/emqd/emqd/bench/internal/procs"
)

// supervisor runs the server command of --restart-cmd: `sh -c "exec CMD"`
// in its own process group, so SIGKILL reaches the server itself.
type supervisor struct {
	cmdline string
	addr    string
	log     io.Writer

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

func (s *supervisor) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if procs.Ping(s.addr) == nil {
		return fmt.Errorf("load: something already answers on %s; --restart-cmd must start the server itself", s.addr)
	}
	cmd := exec.Command("sh", "-c", "exec "+s.cmdline)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stdout, cmd.Stderr = s.log, s.log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("load: start %q: %w", s.cmdline, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.cmd, s.done = cmd, done
	if err := procs.WaitPing(s.addr, 60*time.Second, done); err != nil {
		s.killLocked()
		return fmt.Errorf("load: %q: %w", s.cmdline, err)
	}
	return nil
}

func (s *supervisor) killLocked() {
	if s.cmd == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.done
	s.cmd = nil
}

// restart kills the server with SIGKILL, waits for it to exit, and starts
// the command again (waiting until it answers PING).
func (s *supervisor) restart() error {
	s.mu.Lock()
	s.killLocked()
	s.mu.Unlock()
	return s.start()
}

// stop ends the server with SIGTERM (a clean shutdown), SIGKILL after 10 s.
func (s *supervisor) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-s.done:
		s.cmd = nil
	case <-time.After(10 * time.Second):
		s.killLocked()
	}
}
