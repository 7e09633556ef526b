package server

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"

	"github.com/emqd/emqd/internal/dashboard"
	"github.com/emqd/emqd/internal/verbs"
)

// The web dashboard (docs/operations.md §2, docs/architecture.md §6.1): with
// metrics-addr set and the dashboard directive yes (its default), the
// metrics listener also serves the dashboard package's pages under
// /dashboard/. The dashboard is a RESP client of this server: every page
// and every action runs EMQ.* verbs over an in-process connection
// (dialInternal) that the normal connection code serves, so AUTH, NOAUTH,
// the verbs' refusals and the AOF commit are those of any client. This
// file is the whole mounting point.

// mountDashboard adds the dashboard's routes to mux and returns its closer
// (it stops the throughput sampler).
func (s *Server) mountDashboard(mux *http.ServeMux) func() error {
	d := dashboard.New(dashboard.Options{
		Dial:         s.dialInternal,
		AuthRequired: s.passwordSet,
		Queues:       s.dashboardQueues,
		Clock:        s.clock,
		Logger:       s.log,
		AllowedHosts: func() []string { return strings.Fields(s.Config("dashboard-allowed-hosts")) },
	})
	mux.Handle(dashboard.Prefix, d)
	mux.Handle("GET /{$}", http.RedirectHandler(dashboard.Prefix, http.StatusFound))
	return func() error { d.Close(); return nil }
}

// dashboardQueues lists the queues the server knows (verbs.Stats: seen by
// a verb since start, or present at boot) with their transition totals.
func (s *Server) dashboardQueues() []dashboard.Queue {
	st := s.EMQStats()
	if st == nil {
		return nil
	}
	qs := st.Queues()
	out := make([]dashboard.Queue, len(qs))
	for i, q := range qs {
		out[i] = dashboard.Queue{
			DB:        q.DB,
			Name:      q.Queue,
			Enqueued:  q.Count(verbs.Enqueued),
			Completed: q.Count(verbs.Completed),
			Failed:    q.Count(verbs.Failed),
			Died:      q.Count(verbs.FailedDead) + q.Count(verbs.StallDead),
		}
	}
	return out
}

// errServerClosed is dialInternal's error once Close has begun.
var errServerClosed = errors.New("emqd: server closed")

// dialInternal opens a connection to this server inside the process: one
// end of a Unix socket pair is served exactly like an accepted connection
// (its own client, CLIENT LIST shows it with addr dashboard:0), the other
// is returned. It does not count against maxclients, so the dashboard
// still answers when the clients are at their limit; it passes no TLS and
// no network. The signature is go-redis's Options.Dialer.
func (s *Server) dialInternal(ctx context.Context, _, _ string) (net.Conn, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		return nil, err
	}
	syscall.CloseOnExec(fds[0])
	syscall.CloseOnExec(fds[1])
	mine, err := fileConn(fds[0])
	if err != nil {
		syscall.Close(fds[1])
		return nil, err
	}
	theirs, err := fileConn(fds[1])
	if err != nil {
		mine.Close()
		return nil, err
	}
	s.statConns.Add(1)
	s.clientsMu.Lock()
	select {
	case <-s.stopping:
		s.clientsMu.Unlock()
		mine.Close()
		theirs.Close()
		return nil, errServerClosed
	default:
	}
	c := newClient(s, internalConn{mine})
	s.clients[c.id] = c
	s.conns.Add(1)
	s.clientsMu.Unlock()
	go c.serve()
	return theirs, nil
}

// fileConn turns a socket descriptor into a *net.UnixConn (the descriptor
// is closed; the connection holds its own duplicate).
func fileConn(fd int) (*net.UnixConn, error) {
	f := os.NewFile(uintptr(fd), "emqd-internal")
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		return nil, err
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, errors.New("emqd: socket pair is not a unix connection")
	}
	return uc, nil
}

// internalConn is the server's end of an in-process connection: a Unix
// socket (deadlines and the descriptor work as for TCP) whose addresses
// read dashboard:0.
type internalConn struct{ *net.UnixConn }

func (internalConn) RemoteAddr() net.Addr { return internalAddr{} }
func (internalConn) LocalAddr() net.Addr  { return internalAddr{} }

type internalAddr struct{}

func (internalAddr) Network() string { return "internal" }
func (internalAddr) String() string  { return "dashboard:0" }

// dashboardPrefix is where the dashboard's pages live on the metrics
// listener.
const dashboardPrefix = dashboard.Prefix

// isLoopback reports whether a listener address is a loopback one.
func isLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}
