package load

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/emqd/emqd/internal/testsupport"
)

// supervisor runs the server command of --restart-cmd: `sh -c "exec CMD"`
// started through testsupport.Launch (the launcher of the tests and the
// bench drivers), in its own process group, so SIGKILL reaches the server
// itself.
type supervisor struct {
	cmdline string
	addr    string
	log     io.Writer

	mu   sync.Mutex
	proc *testsupport.Proc
}

func (s *supervisor) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if testsupport.Ping(s.addr) == nil {
		return fmt.Errorf("load: something already answers on %s; --restart-cmd must start the server itself", s.addr)
	}
	p, err := testsupport.Launch{Argv: []string{"sh", "-c", "exec " + s.cmdline}, Addr: s.addr, Out: s.log, Ready: 60 * time.Second}.Start()
	if err != nil {
		return fmt.Errorf("load: %q: %w", s.cmdline, err)
	}
	s.proc = p
	return nil
}

func (s *supervisor) killLocked() {
	if s.proc == nil {
		return
	}
	s.proc.Kill()
	s.proc = nil
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
	if s.proc == nil {
		return
	}
	s.proc.StopWithin(10 * time.Second)
	s.proc = nil
}
