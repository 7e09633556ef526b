package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/emqd/emqd/clock"
	"github.com/emqd/emqd/internal/store"
	"github.com/emqd/emqd/internal/store/aof"
	"github.com/emqd/emqd/internal/store/rdb"
	"github.com/emqd/emqd/internal/verbs"
)

// Version is emqd's own version (INFO emqd_version, emqd --version).
const Version = "0.1.0"

// Options configure an embedded server (and the binary, which uses the same
// path).
type Options struct {
	// Addr is the listen address. Empty: "127.0.0.1:0" (a free loopback
	// port), unless Config names port or bind, then bind:port.
	Addr string
	// Clock is the server clock; nil means the wall clock. With
	// Config["enable-debug-command"] "yes" or "local" it is wrapped in
	// clock.NewShifted so EMQ.DEBUG CLOCK ADVANCE can move it.
	Clock clock.Clock
	// Config holds valkey.conf directives (names as in valkey.conf, values
	// as on the command line), e.g. {"requirepass": "pw", "databases": "4"}.
	Config map[string]string
	// Directives are valkey.conf lines applied in order after Config (the
	// binary passes its file and command line here): the first error is
	// the first line in error, and repeatable lines (rename-command,
	// client-output-buffer-limit) act one by one.
	Directives []Directive
	// Logger receives the server's log; nil discards it.
	Logger *slog.Logger

	// What this package's tests inject. aofFS is the file system of the
	// append-only file (nil: the OS's); testCommands adds commands to the
	// registry, given the server's wake-up of blocked claims.
	aofFS        aof.FS
	testCommands func(ready func(db int, queue string)) []*store.CommandSpec
	// onCrash, when set, is called instead of exiting after a panic in
	// the middle of a write (panics.go).
	onCrash func(panic string)
	// authDelayed, when set, is told each delay a failed authentication
	// holds a connection for, once its timer is set (auth.go).
	authDelayed func(id, ms int64)
	// writerEnding, when set, runs in each writer goroutine as it ends
	// (Server.writerEnding).
	writerEnding func()
}

// Start configures, loads and starts a server listening on opts.Addr. The
// returned server is serving; stop it with Close.
func Start(opts Options) (*Server, error) {
	s := newServer(opts)
	// The command table first: rename-command lines act on it in file order.
	s.verbs = verbs.New(verbs.Config{
		Ready: s.onReady, Logger: s.log,
		Publish:   func(ch string, msg []byte) { s.publish(ch, msg) },
		Listening: s.listening,
		Clock:     debugClock{s},
	})
	storeCmds := append(store.Commands(), rdb.Commands(&s.dumpCompress)...)
	if opts.testCommands != nil {
		storeCmds = append(storeCmds, opts.testCommands(s.onReady)...)
	}
	s.reg = newRegistry(storeCmds, s.verbs.Commands(), append(append(serverCommands(), monitorCommands()...), memoryCommand(storeCmds)))
	s.wrapFlushAll()
	s.wrapFlushPurge()
	names := make([]string, 0, len(opts.Config))
	for k := range opts.Config {
		names = append(names, k)
	}
	sort.Strings(names)
	given := map[string]Directive{}
	for _, k := range names {
		if err := s.applyDirective(Directive{Name: k, Args: []string{opts.Config[k]}}, given); err != nil {
			return nil, err
		}
	}
	for _, d := range opts.Directives {
		if err := s.applyDirective(d, given); err != nil {
			return nil, err
		}
	}
	s.logNoEffect(given)
	for _, p := range s.cfg.params {
		if p.apply != nil {
			p.apply(s, p.value)
		}
	}
	s.clock = opts.Clock
	if s.clock == nil {
		s.clock = clock.Wall{}
	}
	if dbg := s.Config("enable-debug-command"); dbg != "no" {
		s.debug = dbg == "yes"
		s.debugLocal = dbg == "local"
		sh, ok := s.clock.(*clock.Shifted)
		if !ok {
			sh = clock.NewShifted(s.clock)
		}
		s.clock, s.shifted = sh, sh
	}
	// Only a bare wall clock may be read as time.Now: a shifted one (debug
	// on) must be read through NowMs so EMQ.DEBUG CLOCK ADVANCE moves it.
	_, s.wall = s.clock.(clock.Wall)
	s.store = store.New(int(s.configInt("databases")), store.WithObserver(storeObserver{s}))
	// The directives the store follows (encoding thresholds, ...) before the
	// replay builds any key; the active expire cycle.
	s.startExpiry()
	// The idle-client timeout (clients_cron.go).
	s.startClientsCron()
	// The collector's target and the idle purge (memcron.go).
	s.startMemCron()
	// maxclients must fit the open-file limit (nofile.go), beside one
	// descriptor per listener.
	s.listeners = max(len(parseBind(s.Config("bind"))), 1)
	if s.configInt("tls-port") != 0 {
		s.listeners *= 2
	}
	if s.Config("metrics-addr") != "" {
		s.listeners++
	}
	if err := s.fitMaxclients(s.listeners); err != nil {
		s.runCloseHooks()
		return nil, err
	}
	s.OnConfigSet("maxclients", s.checkMaxclients)
	// Persistence replays the append-only file before the listener opens.
	if err := s.startPersistence(opts.aofFS); err != nil {
		s.runCloseHooks()
		return nil, err
	}
	if err := s.startObservability(); err != nil {
		s.runCloseHooks()
		return nil, err
	}
	if err := s.startTLS(); err != nil {
		s.runCloseHooks()
		return nil, err
	}
	_, hasPort := opts.Config["port"]
	_, hasBind := opts.Config["bind"]
	for _, d := range opts.Directives {
		switch strings.ToLower(d.Name) {
		case "port":
			hasPort = true
		case "bind":
			hasBind = true
		}
	}
	if err := s.openListeners(opts.Addr, hasPort || hasBind); err != nil {
		s.runCloseHooks()
		return nil, err
	}
	s.watchListenConfig()
	s.startSweeper()
	s.startScheduler()
	for _, l := range s.lns {
		s.log.Info("Ready to accept connections "+l.name, "addr", l.ln.Addr().String(), "run_id", s.runID, "version", Version,
			"port", s.port, "dir", s.Config("dir"), "appendonly", s.Config("appendonly"), "pid", os.Getpid())
	}
	for _, l := range s.lns {
		go s.acceptLoop(l)
	}
	return s, nil
}

func newServer(opts Options) *Server {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Server{
		log:         log,
		cfg:         newConfig(),
		runID:       newRunID(),
		replID:      newRunID(),
		started:     time.Now(),
		startupMem:  usedMemory(),
		clients:     make(map[int64]*client),
		done:        make(chan struct{}),
		stopping:    make(chan struct{}),
		blk:         newBlocking(),
		sched:       newScheduler(),
		info:        make(map[string]func(add func(field, value string))),
		errStats:    make(map[string]int64),
		onCrash:     opts.onCrash,
		authDelayed: opts.authDelayed,
	}
	s.writerEnding = opts.writerEnding
	s.latencyTracking.Store(true)
	return s
}

// newRunID draws 40 random hex characters (Valkey's run_id; never persisted,
// docs/verbs.md §1.5: the lease epoch).
func newRunID() string {
	var b [20]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
}

// Addr is the address the server listens on ("127.0.0.1:port").
func (s *Server) Addr() string {
	s.lnMu.Lock()
	defer s.lnMu.Unlock()
	for _, l := range s.lns {
		if l.name == "tcp" {
			return l.ln.Addr().String()
		}
	}
	if len(s.lns) == 0 {
		return "" // CONFIG SET port 0 and no other listener
	}
	return s.lns[0].ln.Addr().String()
}

// Clock is the server clock (a *clock.Shifted when enable-debug-command is
// yes or local).
func (s *Server) Clock() clock.Clock { return s.clock }

// Store is the keyspace. Take Store().Lock() around any direct access.
func (s *Server) Store() *store.Store { return s.store }

// RunID is this boot's run_id (40 hex characters).
func (s *Server) RunID() string { return s.runID }

// Logger is the server's logger.
func (s *Server) Logger() *slog.Logger { return s.log }

// Config returns the current value of a directive ("" when unknown).
func (s *Server) Config(name string) string {
	v, _ := s.cfg.get(name)
	return v
}

// configInt is the current value of the integer directive name (lower
// case; memory values in bytes), as parsed when it was set.
func (s *Server) configInt(name string) int64 { return s.cfg.int(name) }

// OnConfigSet registers f to run when CONFIG SET changes name; an error
// from f refuses the change (CONFIG SET replies "ERR CONFIG SET failed
// (possibly related to argument 'name') - <err>"). Registering a hook
// makes an otherwise boot-only directive (appendonly, dir, ...) settable.
// f runs under the store lock (CONFIG SET is a command), with the new
// value already parsed to its canonical form (memory values in bytes).
func (s *Server) OnConfigSet(name string, f func(value string) error) {
	s.cfg.mu.Lock()
	defer s.cfg.mu.Unlock()
	p := s.cfg.byName[strings.ToLower(name)]
	if p == nil {
		return
	}
	s.cfg.hooks[p.name] = append(s.cfg.hooks[p.name], f)
}

// OnClose registers f to run when the server stops, after every connection
// is closed (persistence flushes and closes its file here).
func (s *Server) OnClose(f func() error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeHooks = append(s.closeHooks, f)
}

// SetRewriteHook sets what BGREWRITEAOF runs. f is called under the store
// lock and must start the rewrite and return (nil: "+Background append
// only file rewriting started"; an error: its text as the error reply).
func (s *Server) SetRewriteHook(f func() error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rewrite = f
}

// SetInfoSection replaces the generator of an INFO section ("persistence",
// ...): gen calls add for every field, in order. It runs under the store
// lock.
func (s *Server) SetInfoSection(name string, gen func(add func(field, value string))) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.info[strings.ToLower(name)] = gen
}

// Close stops accepting, closes every connection (parked clients included),
// waits for their goroutines until ctx is done, then runs the close hooks.
// It is safe to call more than once; later calls wait for the first.
func (s *Server) Close(ctx context.Context) error {
	s.closeOnce.Do(func() {
		close(s.stopping)
		s.lnMu.Lock()
		for _, l := range s.lns {
			l.ln.Close()
		}
		s.lnMu.Unlock()
		s.stopSweeper()
		s.stopScheduler()
		s.clientsMu.Lock()
		for _, c := range s.clients {
			c.closeConn()
		}
		s.clientsMu.Unlock()
		waited := make(chan struct{})
		go func() { s.conns.Wait(); close(waited) }()
		select {
		case <-waited:
		case <-ctx.Done():
			s.closeErr = ctx.Err()
		}
		s.idle.close()
		s.store.Lock()
		s.blk.stopAll()
		s.store.Unlock()
		if s.maxMemory.Load() > 0 {
			s.setMaxmemory(0) // lift the runtime's soft limit this server set
		}
		if err := s.runCloseHooks(); err != nil && s.closeErr == nil {
			s.closeErr = err
		}
		s.log.Info("emqd is now ready to exit, bye bye...")
		close(s.done)
	})
	select {
	case <-s.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.closeErr
}

func (s *Server) runCloseHooks() error {
	s.mu.Lock()
	hooks := s.closeHooks
	s.closeHooks = nil
	s.mu.Unlock()
	var first error
	for _, h := range hooks {
		if err := h(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Wait blocks until the server has stopped (Close, or SHUTDOWN).
func (s *Server) Wait() { <-s.done }

// Done is closed when the server has stopped.
func (s *Server) Done() <-chan struct{} { return s.done }

// LogLevel maps a loglevel directive (debug verbose notice warning nothing)
// to a slog level.
func LogLevel(name string) slog.Level {
	switch strings.ToLower(name) {
	case "debug":
		return slog.LevelDebug
	case "verbose":
		return slog.LevelDebug + 2
	case "warning":
		return slog.LevelWarn
	case "nothing":
		return slog.LevelError + 100
	default:
		return slog.LevelInfo
	}
}

// SetConfigFile records the config file path the server was started with
// (INFO config_file).
func (s *Server) SetConfigFile(path string) { s.configFile = path }

// SetCommitHook sets what runs after a batch that wrote, once the store
// lock is released and before the batch's replies are sent (the
// append-only file's Commit). An error means the writes are not durable:
// the connection is closed without its replies.
func (s *Server) SetCommitHook(f func() error) {
	if f == nil {
		s.commit.Store(nil)
		return
	}
	s.commit.Store(&f)
}

// SetWriteGate sets a check run before every write command (under the
// store lock): a non-empty result is the error reply, e.g. "MISCONF Errors
// writing to the AOF file: ..." (Valkey's writeCommandsDeniedByDiskError).
func (s *Server) SetWriteGate(f func() string) {
	if f == nil {
		s.writeGate.Store(nil)
		return
	}
	s.writeGate.Store(&f)
}

// debugClock is the server clock as EMQ.DEBUG CLOCK ADVANCE moves it
// (verbs.Config.Clock). The verbs are built before the directives decide
// the clock, so it reads s.clock and steps s.shifted at call time; the
// verb is refused before it gets here when enable-debug-command is no
// (s.shifted nil, the step does nothing).
type debugClock struct{ s *Server }

func (d debugClock) NowMs() int64 { return d.s.clock.NowMs() }

func (d debugClock) Advance(ms int64) {
	if d.s.shifted != nil {
		d.s.shifted.Advance(ms)
	}
}
