// Package server is emqd's RESP server: the listener and connections, the
// command registry and dispatch (Valkey's checks and texts), MULTI/EXEC,
// blocked clients, HELLO/RESP3, AUTH, INFO, CONFIG, COMMAND, SLOWLOG, and
// the embedding API used by every test (Start, Close).
//
// Specs: docs/architecture.md §2; docs/compat.md §1.5, §1.6, §2 and §3.
package server

import (
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emqd/emqd/clock"
	"github.com/emqd/emqd/internal/resp"
	"github.com/emqd/emqd/internal/store"
	"github.com/emqd/emqd/internal/verbs"
)

// Server is one running emqd.
type Server struct {
	log   *slog.Logger
	cfg   *config
	clock clock.Clock
	// shifted is the server clock when enable-debug-command is not no
	// (Start wraps it in clock.Shifted): what EMQ.DEBUG CLOCK ADVANCE
	// moves (debugClock). Nil otherwise.
	shifted *clock.Shifted
	store   *store.Store
	reg     *registry
	// pause is CLIENT PAUSE's state (store lock); paused mirrors
	// pause.mode != pauseNone for the expiry cycle and the dispatch check.
	pause  pauseState
	paused atomic.Bool
	// latency holds the latency monitor's events (store lock; latency.go)
	// and latencyThreshold latency-monitor-threshold in ms.
	latency          map[string]*latencyEvent
	latencyThreshold atomic.Int64
	// latencyTracking is latency-tracking (LATENCY HISTOGRAM, latency_hist.go).
	latencyTracking atomic.Bool
	// ioLoop: io-model loop (loop.go): plain TCP connections wait in
	// the event loop, which serves them inline.
	ioLoop atomic.Bool
	// monitors are the clients in MONITOR mode, in order (store lock).
	monitors []*client
	// noEffectOrder lists the no-effect directives given at start, in
	// the order first given (directives.go).
	noEffectOrder []string
	verbs         *verbs.Verbs // the EMQ.* verbs, bound to this server
	// onCrash replaces the exit after a panic mid-write (tests; panics.go).
	onCrash func(panic string)
	runID   string
	replID  string
	// debug: enable-debug-command yes (every client may run EMQ.DEBUG);
	// debugLocal: local (loopback and unix-socket clients only, Valkey's
	// islocalClient; docs/verbs.md §4.19).
	debug      bool
	debugLocal bool
	lns        []listener // the RESP listeners (listeners.go)
	port       int

	started    time.Time
	startupMem int64 // used_memory when the server was made (MEMORY STATS startup.allocated)
	configFile string

	// Hot configuration, read outside the store lock.
	requirepass   atomic.Pointer[string]
	maxClients    atomic.Int64
	maxMemory     atomic.Int64 // maxmemory in bytes (0: none)
	idleTimeout   atomic.Int64 // timeout in seconds (0: none)
	listeners     int          // listening sockets (descriptors kept beside the clients')
	protectedMode atomic.Bool
	tls           tlsState
	maxBulk       atomic.Int64
	maxQuery      atomic.Int64
	outLimits     atomic.Pointer[outputLimits] // client-output-buffer-limit
	xprotoLogged  atomic.Int64                 // server clock ms of the last cross-protocol warning (dispatch.go)
	slowlogSlower atomic.Int64
	slowlogMax    atomic.Int64
	trkMaxKeys    atomic.Int64 // tracking-table-max-keys

	clientsMu sync.Mutex
	clients   map[int64]*client
	nextID    atomic.Int64
	conns     sync.WaitGroup

	// Counters (atomic: updated outside the store lock).
	statConns    atomic.Int64 // total_connections_received
	statRejected atomic.Int64 // rejected_connections
	// acl_access_denied_auth: failed AUTH and HELLO AUTH (auth.go)
	statAuthDenied atomic.Int64
	// authDelayed, when set (tests), is told each delay a failed
	// authentication holds a connection for, once its timer is set.
	authDelayed func(id, ms int64)
	// client_query_buffer_limit_disconnections, client_output_buffer_limit_disconnections
	statQbufClosed, statObufClosed atomic.Int64
	statNetIn                      atomic.Int64
	statNetOut                     atomic.Int64

	// Guarded by the store lock.
	statCmds   int64 // total_commands_processed
	statPanics int64 // panics contained (INFO emq contained_panics)
	// lastQueuePrune is when (server clock, ms) the clients cron last
	// forgot the known queues with no key left (pruneQueuesLocked).
	lastQueuePrune int64
	mem            memGuard
	statErrs       int64            // total_error_replies
	errStats       map[string]int64 // errorstats by code
	blk            *blocking
	sched          *scheduler
	slowlog        slowlog
	sweep          periodic // the opt-in sweeper (sweeper.go)
	exp            *expiry  // the active expire cycle (expiry.go)
	ccron          clientsCron
	idle           idlePoller // idle connections' sockets (idlepoll.go)
	// trk is the client-side caching table while some client tracks
	// (tracking.go); pubsub the channel subscriptions (pubsub.go).
	trk *tracker
	// readNote, while an EMQ verb of a tracking client runs, remembers the
	// keys it reads (DB.NoteRead, through the store observer).
	readNote func(key string)
	pubsub   pubsubState
	frames   frameWriter

	// persist is the append-only file wiring (persistence.go); set in Start.
	persist *persistence
	// rdb is the RDB snapshot state (rdb.go); set in Start.
	rdb *saver
	// saveLines counts the save lines given at start (directives.go).
	saveLines int
	// dumpCompress is rdbcompression, for DUMP.
	dumpCompress atomic.Bool
	// shutdownSave is SHUTDOWN's choice: 1 SAVE, -1 NOSAVE, 0 as the save
	// points say.
	shutdownSave atomic.Int32

	// obs is the transition accounting, the metrics endpoint and the
	// rate-limited logs (emqstats.go); set once in Start.
	obs *observability

	mu         sync.Mutex // hooks
	closeHooks []func() error
	rewrite    func() error
	commit     atomic.Pointer[func() error]
	writeGate  atomic.Pointer[func() string]
	wall       bool // the clock is clock.Wall: NowMs comes from the command's start time
	info       map[string]func(add func(field, value string))

	closeOnce sync.Once
	closeErr  error
	stopping  chan struct{}
	done      chan struct{}
	// lnMu guards lns, which CONFIG SET port, tls-port and bind replace
	// at run time (listeners.go); lnAddrs are the addresses the TCP and
	// TLS listeners are on and tlsPort the TLS port (0: none), both
	// changed only under the store lock (CONFIG SET) after Start.
	lnMu    sync.Mutex
	lnAddrs []listenAddr
	tlsPort int
	// tcpShown and tlsShown: INFO lists the kind's listener line
	// (listenerInfo). Changed with lnAddrs.
	tcpShown, tlsShown bool
	// writerEnding, when set (tests only), runs in a writer goroutine
	// (writeBehind) as it ends, before it reports that it has.
	writerEnding func()
}

// passwordSet reports whether requirepass is set (authentication required).
func (s *Server) passwordSet() bool {
	p := s.requirepass.Load()
	return p != nil && *p != ""
}

// acceptLoop accepts l's connections: the maxclients check, then protected
// mode (Valkey's acceptCommonHandler and clientAcceptHandler, in that
// order), then a client.
func (s *Server) acceptLoop(l listener) {
	var delay time.Duration
	for {
		nc, err := l.ln.Accept()
		if err != nil {
			select {
			case <-s.stopping:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return // CONFIG SET port, tls-port or bind closed it (listeners.go)
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			// Temporary failures (EMFILE...): back off as net/http does.
			if delay == 0 {
				delay = 5 * time.Millisecond
			} else if delay *= 2; delay > time.Second {
				delay = time.Second
			}
			s.log.Warn("Accepting client connection", "err", err)
			select {
			case <-time.After(delay):
			case <-s.stopping:
				return
			}
			continue
		}
		delay = 0
		s.statConns.Add(1)
		s.clientsMu.Lock()
		n := int64(len(s.clients))
		if n >= s.maxClients.Load() {
			s.clientsMu.Unlock()
			s.statRejected.Add(1)
			s.logRefused(nc.RemoteAddr().String())
			if l.name == "tls" {
				nc.Close() // no handshake yet: nothing can be said (Valkey too)
			} else {
				refuse(nc, "-ERR max number of clients reached\r\n")
			}
			continue
		}
		if l.name == "tls" {
			// Protected mode is checked after the handshake (serve), so the
			// refusal travels over TLS, as Valkey's.
			nc = tls.Server(nc, s.serverTLSConfig())
		} else if s.protectedMode.Load() && !s.passwordSet() && !isLocalPeer(nc.RemoteAddr()) {
			s.clientsMu.Unlock()
			s.statRejected.Add(1)
			refuse(nc, errProtected)
			continue
		}
		select {
		case <-s.stopping:
			s.clientsMu.Unlock()
			nc.Close()
			return
		default:
		}
		c := newClient(s, nc)
		s.clients[c.id] = c
		s.conns.Add(1)
		s.clientsMu.Unlock()
		go c.serve()
	}
}

// removeClient forgets c (its connection is closed).
func (s *Server) removeClient(c *client) {
	s.clientsMu.Lock()
	delete(s.clients, c.id)
	s.clientsMu.Unlock()
}

// shutdown stops the server from a command (SHUTDOWN): in its own
// goroutine, since Close waits for the calling connection.
func (s *Server) shutdown(reason string) {
	s.log.Warn("User requested shutdown...", "reason", reason)
	go func() {
		ctx, cancel := contextWithTimeout(10 * time.Second)
		defer cancel()
		s.Close(ctx)
	}()
}

// debugAllowed reports whether a client from peer may run EMQ.DEBUG:
// enable-debug-command yes, or local and a loopback or unix-socket peer
// (Valkey's islocalClient; docs/verbs.md §4.19).
func (s *Server) debugAllowed(peer net.Addr) bool {
	return s.debug || (s.debugLocal && isLocalPeer(peer))
}

// newCtx is the one constructor of the per-command context: the store, the
// reply writer w, this boot's run_id and enable-debug-command.
// Callers set DB and NowMs (and Argv through ResetForCommand) per command.
func (s *Server) newCtx(w *resp.Writer) store.Ctx {
	return store.Ctx{S: s.store, W: w, RunID: s.runID, DebugEnabled: s.debug, AtMemoryLimit: s.atMemoryLimit}
}
