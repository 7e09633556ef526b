package server

import (
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// Structured logs (docs/architecture.md §6): emqd logs through log/slog.
// At the default level (loglevel notice = slog.LevelInfo) it logs start-up
// (version, port, run_id, dir, appendonly), shutdown, persistence events,
// the metrics endpoint, the opt-in sweeper's recoveries, refused
// connections and protocol errors, never one line per command. Lines that
// a client can provoke at will (refused connections, protocol errors) are
// rate-limited: at most one per logEvery, carrying how many were left out.

// NewLogger returns the binary's logger: format "json" writes one JSON
// object per line (slog.JSONHandler), anything else slog's text format
// (key=value), at level (see LogLevel) on w.
func NewLogger(w io.Writer, format string, level slog.Leveler) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if strings.EqualFold(format, "json") {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// logEvery is the shortest interval between two rate-limited lines of one
// kind.
const logEvery = time.Second

// rateLog lets one line through per logEvery and counts the rest.
type rateLog struct {
	mu         sync.Mutex
	last       time.Time
	suppressed int64
}

// allow reports whether to log now, and how many lines were left out
// since the last one logged.
func (r *rateLog) allow(now time.Time) (bool, int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.last.IsZero() && now.Sub(r.last) < logEvery {
		r.suppressed++
		return false, 0
	}
	n := r.suppressed
	r.last, r.suppressed = now, 0
	return true, n
}

// logRefused logs a connection refused because maxclients was reached.
func (s *Server) logRefused(addr string) {
	if s.obs == nil {
		return
	}
	if ok, n := s.obs.refusedLog.allow(time.Now()); ok {
		s.log.Warn("Refused connection: max number of clients reached",
			"addr", addr, "maxclients", s.maxClients.Load(), "suppressed", n)
	}
}

// logProtocolError logs a client's protocol error (the connection is
// closed after the error reply, as Valkey's setProtocolError).
func (s *Server) logProtocolError(id int64, addr string, err error) {
	if s.obs == nil {
		s.log.Debug("Protocol error from client", "id", id, "addr", addr, "err", err.Error())
		return
	}
	if ok, n := s.obs.protoLog.allow(time.Now()); ok {
		s.log.Info("Protocol error from client", "id", id, "addr", addr, "err", err.Error(), "suppressed", n)
	}
}
