package server

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/emqd/emqd/internal/resp"
	"github.com/emqd/emqd/internal/store"
	"golang.org/x/sys/unix"
)

// Reply modes (CLIENT REPLY).
const (
	replyOn = iota
	replyOff
	replySkip     // suppress the reply of the current command
	replySkipNext // CLIENT REPLY SKIP was just run: suppress the next one
)

// queued is a command queued inside MULTI.
type queued struct {
	cmd  *command
	argv [][]byte
}

// client is one connection. Fields without a note belong to the connection's
// goroutine and to commands it runs under the store lock; other
// connections' commands (CLIENT LIST, INFO) read them under the store lock.
type client struct {
	s   *Server
	id  int64
	nc  net.Conn
	raw syscall.RawConn // the socket under nc (nil when nc is not a socket)
	// rawRead: nc is a plain TCP connection, read through raw so an idle
	// connection holds no read buffer (read).
	rawRead bool
	// The raw read's callback and results (read): one goroutine of the
	// connection at a time uses them.
	readFn func(uintptr) bool
	rn     int
	rerr   error
	// readFd is the socket's descriptor while rawReadOnce runs (-1
	// otherwise): the read in progress holds it, so a reply written by a
	// turn run inside the read goes straight to write(2) (rawio.go,
	// client.write).
	readFd int
	// The raw write's callback, the bytes being written and its results
	// (rawio.go): the goroutine that set writing uses them.
	writeFn func(uintptr) bool
	// tryWriteFn is rawTryWrite as a method value, made once.
	tryWriteFn func(uintptr) bool
	wdata      []byte
	wn         int
	werr       error
	// inLoop: the event loop (loop.go) is serving the connection inline,
	// as its goroutine would (io-model loop); nothing it runs may wait.
	// loopDefer: a batch run there must wait (a delayed authentication
	// reply, CLIENT PAUSE) and left the rest of runBatch (finishBatch, at
	// loopAt) to the goroutine the loop hands the connection to.
	// loopBlocked: a reply written there did not fit the socket; the rest
	// is back in out. Connection only.
	inLoop, loopDefer, loopBlocked bool
	loopAt                         int64
	// stayAwake: the goroutine could not sleep; its next read waits in
	// the goroutine even under io-model loop (read). Connection only.
	stayAwake bool
	// armedET: the socket was last armed in the poller edge-triggered
	// (io-model loop), not one-shot (client.sleep). Connection only.
	armedET bool
	// The loop's callback and its result (loop.go).
	loopFn   func(uintptr)
	loopWait bool
	// demote: the clients cron asks the connection's goroutine, idle in
	// read, to give it up (client.sleep); asleep: no goroutine serves the
	// connection, the idle poller watches its socket (set under wakeMu).
	demote, asleep atomic.Bool
	addr           string
	laddr          string
	fd             int
	// readEnded is set when a read from the peer failed (EOF, reset):
	// the connection is ending even before cleanup has run.
	readEnded atomic.Bool
	// ended: a turn run inside the read (rawReadOnce) ended the
	// connection; serveLoop returns (connection goroutine only).
	ended bool

	created time.Time
	// createdMs is the connection time on the server clock (ms): CLIENT
	// KILL MAXAGE measures age with it.
	createdMs int64
	lastCmd   time.Time
	// tick is when the running command started, monotonic nanoseconds
	// (nanotime); batchMono is tick at the start of the batch, when
	// lastCmd was read, and batchWall lastCmd in Unix nanoseconds: a
	// command's wall time is batchWall + (tick - batchMono), so a command
	// costs one clock read (store lock).
	tick, batchMono, batchWall int64

	rd  resp.Reader
	w   resp.Writer // replies of the running batch
	ctx store.Ctx   // reused for every command
	xc  store.Ctx   // commands run by EXEC

	db      int
	name    string
	libName string
	libVer  string
	authed  bool
	// authFails counts consecutive failed authentications; authDelay is
	// the delay (ms) the last one scheduled for this batch's replies
	// (auth.go). Store lock.
	authFails int
	authDelay int64
	replyMode int
	cmdName   string // full name of the last command (CLIENT LIST cmd=)
	// nameBuf[:nameLen] is argv[0] of the last command looked up, as
	// sent, and nameCmd what it named (client.lookup); connection only.
	nameBuf [24]byte
	nameLen int
	nameCmd *command
	curCmd  *command // the command exec is running (nil: unknown)
	totCmds int64

	// trk is the CLIENT TRACKING state (nil until tracking is first turned
	// on; tracking.go); sub the Pub/Sub subscriptions (pubsub.go).
	trk *clientTracking
	sub *clientPubSub
	// inPubSub: the client has a subscription, so it is held to the
	// pubsub class of client-output-buffer-limit (set under the store
	// lock, read by enqueueLocked from any goroutine).
	inPubSub atomic.Bool
	// inBatch is true while the connection's own batch runs under the
	// store lock: frames for it (invalidations) then go to w, after the
	// replies written so far.
	inBatch bool
	// executing is true while exec runs one of the connection's commands
	// (EXEC with the commands it runs is one); pushes then holds the
	// frames (Pub/Sub messages, EMQ events) the command sends to this
	// same connection, which exec appends after the command's reply and
	// its tracking invalidations (Valkey's server.pending_push_messages,
	// networking.c _addReplyProtoToList, server.c afterCommand): a RESP3
	// PUBLISH to a channel the publisher listens on answers `:n` before
	// the push, and inside MULTI the messages follow EXEC's array.
	executing bool
	pushes    resp.Writer
	// heldDone, set when CLIENT PAUSE holds the running command, is the
	// pause's end (pause.go).
	heldDone chan struct{}
	// monitor: the client ran MONITOR (store lock; monitor.go).
	monitor bool

	inMulti    bool
	multiDirty bool
	execing    bool
	queue      []queued
	queueBytes int
	watcher    store.Watcher

	closeAfter    bool // QUIT, SHUTDOWN, a protocol error: close once replies are written
	shutdownAfter bool // SHUTDOWN: stop the server once replies are written

	// Blocking (store lock): park is the parked command, if any.
	park *parked
	aw   resp.Writer // replies written by wake-ups and timeouts
	// pending are the commands that arrived behind a parked one; perr a
	// protocol error found after them (connection goroutine only).
	pending [][][]byte
	perr    error
	// recycle: the last batch left none of its argvs held (nothing queued
	// in MULTI, parked or pending), so the reader may reuse them
	// (resp.Reader.Recycle). Set under the store lock by the connection's
	// own batch, read by its goroutine.
	recycle bool

	wakeMu sync.Mutex
	// parked: the goroutine must not run commands. Set and cleared under
	// wakeMu (with woken and the read deadline); turn reads it without
	// the lock, one load per turn instead of a lock and an unlock.
	parked atomic.Bool
	// woken: a wake-up set a read deadline the goroutine has not seen yet
	// (wakeMu): the goroutine must not go to sleep before it looks.
	woken bool

	// Output (outMu): bytes waiting to be written, and whether a write is
	// in progress.
	outMu   sync.Mutex
	out     []byte
	spare   []byte
	writing bool
	// behind: the write in progress is a writer goroutine's
	// (writeBehind), started when the socket did not take a reply at
	// once; wq is what flushAt handed it since (bytes cleared to go, in
	// order after the buffer it writes), behindDone is closed when it
	// ends. outMu.
	behind     bool
	wq         []byte
	behindDone chan struct{}
	// inWrite is what the kernel has not yet taken of the buffer being
	// written (outMu; client.sent counts it down as the write goes): with
	// out it is the output not yet taken (CLIENT LIST omem).
	inWrite int
	// softSince is when the output went past its class's soft limit
	// (server clock ms; 0: it is under it). outMu.
	softSince int64
	killed    atomic.Bool
	// commitPending: a wake-up served this client with a command that wrote.
	commitPending atomic.Bool

	// lastIO is when a byte was last read from or written to the client,
	// server clock ms (the idle timeout, clients_cron.go). readUnstamped:
	// bytes were read since lastIO was last set for a read (connection
	// goroutine only): the batch they complete sets it from its own clock
	// reading (runLocked), a turn that runs none reads the clock
	// (stampRead), so a round trip reads no clock for it.
	lastIO        atomic.Int64
	readUnstamped bool
	qbuf          atomic.Int64 // bytes buffered unparsed (CLIENT LIST qbuf=)
	rbuf          atomic.Int64 // capacity of the read buffer held, 0 when none (CLIENT LIST rbs=)
	argvMem       atomic.Int64 // bytes of a frame's arguments so far (CLIENT LIST argv-mem=)
	netIn, netOut atomic.Int64
}

func newClient(s *Server, nc net.Conn) *client {
	now := time.Now()
	c := &client{
		s:       s,
		id:      s.nextID.Add(1),
		nc:      nc,
		addr:    connAddr(nc.RemoteAddr(), nc.LocalAddr()),
		laddr:   connAddr(nc.LocalAddr(), nc.LocalAddr()),
		fd:      -1,
		readFd:  -1,
		created: now,
		lastCmd: now,
		authed:  !s.passwordSet(),
	}
	c.w.Proto = 2
	c.aw.Proto = 2
	c.createdMs = s.clock.NowMs()
	c.lastIO.Store(c.createdMs)
	under := nc
	if tc, ok := nc.(*tls.Conn); ok {
		under = tc.NetConn()
	}
	if sc, ok := under.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			c.raw = rc
			rc.Control(func(fd uintptr) { c.fd = int(fd) })
			_, isTLS := nc.(*tls.Conn)
			c.rawRead = !isTLS
			if !isTLS {
				if _, ok := nc.(*net.TCPConn); !ok {
					c.rawRead = false
				}
			}
		}
	}
	c.ctx = s.newCtx(&c.w)
	c.ctx.DebugEnabled = s.debugAllowed(nc.RemoteAddr())
	c.xc = c.ctx
	// The reader hands a big argument out as an allocation of its own
	// (resp.BigArg): the store may keep it (store.Ctx.KeepArg).
	c.ctx.BigArgsOwned = true
	return c
}

// authRequired is Valkey's authRequired: a password is set and the client
// has not authenticated.
func (c *client) authRequired() bool { return !c.authed && c.s.passwordSet() }

// errIdle is read's answer when the clients cron asked an idle plain TCP
// connection to give up its goroutine (demote): its socket goes to the
// idle poller and the goroutine ends (client.sleep).
var errIdle = errors.New("idle")

// read reads the next bytes from the connection into the reader. A plain
// TCP connection with nothing left unparsed waits for them without a
// buffer (syscall.RawConn.Read: the netpoller's wait, then read(2) into a
// buffer taken from the shared pool only then), so an idle connection
// holds no read buffer (issue 27 item 9: 16 KiB each); asked to demote,
// it answers errIdle instead of waiting. TLS and in-process connections
// read through net.Conn as before.
func (c *client) read() (int, error) {
	if !c.rawRead || !c.rd.Release() {
		n, err := c.nc.Read(c.rd.Space())
		c.rbuf.Store(int64(c.rd.Held()))
		return n, err
	}
	c.rbuf.Store(0)
	if c.demote.Load() || (c.s.ioLoop.Load() && !c.stayAwake) {
		// Demoted, or under io-model loop, where a connection with
		// nothing unparsed always waits in the event loop (loop.go).
		return 0, errIdle
	}
	c.stayAwake = false
	c.rn, c.rerr = 0, nil
	if c.readFn == nil {
		c.readFn = c.rawReadOnce
	}
	err := c.raw.Read(c.readFn)
	n, rerr := c.rn, c.rerr
	if n > 0 {
		c.rbuf.Store(int64(c.rd.Held()))
	}
	if err != nil {
		c.rd.Release()
		return 0, err
	}
	if rerr != nil {
		c.rd.Release()
	}
	return n, rerr
}

// rawReadOnce is read's callback for syscall.RawConn.Read: one read(2)
// (rawRead: a raw system call, rawio.go); false (the runtime waits for the
// socket) when nothing is there. Its results go in fields, so the callback
// is one method value made once per connection, not a closure allocated
// per read.
//
// Served in the read: when the read(2) was short (it emptied the socket's
// receive queue), the bytes are taken and the connection's turns run here,
// inside the read, until the next read would come; then the callback
// answers false and the runtime waits for the socket without another
// read(2). That read would find nothing (EAGAIN) in a request-reply
// exchange, one system call per round trip. Waiting without it is safe
// only here: syscall.RawConn.Read clears the socket's readiness once,
// before the first read(2) of the call, so bytes that arrived after the
// short read have marked the socket ready again and the wait returns at
// once; a new RawConn.Read would clear that mark and wait for an event
// that already came. The callback answers true (back to serveLoop, which
// reads afresh) whenever the state is anything but plain: the connection
// ended (c.ended), is parked, holds bytes of a command not yet complete,
// or was asked to demote.
func (c *client) rawReadOnce(fd uintptr) bool {
	c.readFd = int(fd)
	defer func() { c.readFd = -1 }()
	for {
		space := c.rd.Space()
		m, e := rawRead(int(fd), space)
		switch e {
		case 0:
			if m == 0 {
				c.rerr = io.EOF
				return true
			}
			if m == len(space) {
				c.rn = m // more may be waiting: serveLoop reads again
				return true
			}
			c.rbuf.Store(int64(c.rd.Held()))
			if !c.received(m) {
				c.ended = true
				return true
			}
			for {
				switch c.turn() {
				case turnEnd:
					c.ended = true
					return true
				case turnAgain:
					continue
				case turnReadParked:
					return true
				}
				break
			}
			if c.demote.Load() || !c.rd.Release() {
				return true
			}
			c.rbuf.Store(0)
			return false
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			c.rd.Release()
			return false
		default:
			c.rerr = &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", e)}
		}
		return true
	}
}

// idleShrinkMs is how long (server clock) a plain TCP connection waits
// for its next command before the clients cron demotes it
// (demoteIdleClients): its goroutine then ends and the idle poller watches
// its socket (idlepoll.go).
const idleShrinkMs = 100

// serve is the connection's first goroutine: the TLS handshake, then
// serveLoop.
func (c *client) serve() {
	if tc, ok := c.nc.(*tls.Conn); ok && !c.tlsAccept(tc) {
		c.cleanup()
		return
	}
	c.serveLoop()
}

// serveLoop reads, parses every complete command, runs them as one batch
// under one store lock acquisition and writes the replies, until the
// connection ends (cleanup) or, for a plain TCP connection the clients
// cron found idle, until it goes to sleep (client.sleep): the goroutine
// ends, and client.resume starts a new one running serveLoop. A plain TCP
// connection usually runs its turns inside the read (rawReadOnce: served
// in the read).
func (c *client) serveLoop() { c.serveFrom(false, 0, nil) }

// serveFrom is serveLoop; with read set it starts after a read whose
// results are n and err (the event loop hands over a connection whose
// read or batch was not plain: loop.go), and first finishes a batch the
// loop left to it (loopDefer).
func (c *client) serveFrom(read bool, n int, err error) {
	idle := false
	defer func() {
		if !idle {
			c.cleanup()
		}
	}()
	defer c.recoverConn()
	if c.loopDefer {
		c.loopDefer = false
		if !c.finishBatch(c.loopAt) {
			return
		}
	}
	for {
		if !read {
			switch c.turn() {
			case turnEnd:
				return
			case turnAgain:
				continue
			}
			n, err = c.read()
		}
		read = false
		if c.ended {
			return // the connection ended in a turn run inside the read
		}
		if n > 0 && !c.received(n) {
			return
		}
		if err == errIdle {
			// Demoted while idle: the idle poller watches the socket
			// and this goroutine ends; nothing here touches c once
			// sleep said so (another goroutine may be serving it).
			c.demote.Store(false)
			c.stayAwake = false
			if c.sleep() {
				idle = true
				return
			}
			// Refused (killed, the poller off): the next read waits
			// here, so a killed connection's read fails and it ends.
			c.stayAwake = true
			continue
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() && !c.killed.Load() {
				// A wake-up (see unpark): clear the deadline and look again.
				c.wakeMu.Lock()
				c.woken = false
				c.nc.SetReadDeadline(time.Time{})
				c.wakeMu.Unlock()
				continue
			}
			c.readEnded.Store(true)
			return
		}
	}
}

// What serveLoop does after a turn (client.turn).
const (
	turnRead       = iota // read the next bytes
	turnReadParked        // read the next bytes; the client is parked
	turnAgain             // run another turn
	turnEnd               // the connection ends
)

// turn is one pass of serveLoop before it reads: the output is written,
// then commands pending behind a parked one, a protocol error found
// earlier, or the complete commands parsed from the bytes read run as one
// batch (runBatch). It says what comes next (turnRead ...).
func (c *client) turn() int {
	if c.loopDefer {
		return turnReadParked // the event loop hands the connection over
	}
	if c.parked.Load() {
		c.stampRead()
		// Frames for a parked client (invalidations, messages) go out
		// while it waits.
		c.flushParked()
		return turnReadParked
	}
	if c.commitPending.Load() && !c.commit() {
		return turnEnd
	}
	c.flushOut()
	if c.killed.Load() {
		return turnEnd
	}
	if len(c.pending) > 0 {
		cmds := c.pending
		c.pending = nil
		if !c.runBatch(cmds) {
			return turnEnd
		}
		return turnAgain
	}
	if c.perr != nil {
		if c.inLoop {
			// The error's reply waits for the writer goroutine
			// (waitWriter): the connection's goroutine replies.
			return turnReadParked
		}
		c.protocolError(c.perr)
		return turnEnd
	}
	max := 0
	if c.authRequired() {
		max = 1 // AUTH must run before the next command is parsed
	}
	c.rd.MaxBulkLen = c.s.maxBulk.Load()
	if c.recycle {
		c.rd.Recycle()
		c.recycle = false
	}
	cmds, perr := c.rd.Parse(max, c.authRequired())
	setGauge(&c.qbuf, int64(c.rd.Buffered()))
	setGauge(&c.argvMem, int64(c.rd.ArgvBytes()))
	if len(cmds) > 0 || perr != nil {
		c.perr = perr
		if len(cmds) > 0 && !c.runBatch(cmds) {
			return turnEnd
		}
		return turnAgain
	}
	c.stampRead()
	return turnRead
}

// stampRead sets lastIO to the server clock if bytes were read since it
// was last set for a read and no batch took them (readUnstamped).
func (c *client) stampRead() {
	if c.readUnstamped {
		c.readUnstamped = false
		c.lastIO.Store(c.s.clock.NowMs())
	}
}

// setGauge stores v in g unless g already holds it: a load instead of an
// atomic store (an exchange) in the common case of a turn that leaves the
// gauge as it was (qbuf and argv-mem are 0 after every complete command).
func setGauge(g *atomic.Int64, v int64) {
	if g.Load() != v {
		g.Store(v)
	}
}

// received takes n bytes just read into the reader and counts them; false
// when the client's requests now pass the query buffer limit (the
// connection ends).
func (c *client) received(n int) bool {
	c.readUnstamped = true // lastIO: the batch's clock, or stampRead
	c.rd.Commit(n)
	c.netIn.Add(int64(n))
	c.s.statNetIn.Add(int64(n))
	if used, lim := c.queryMemory(); used > lim {
		c.s.statQbufClosed.Add(1)
		c.s.log.Warn("Closing client that reached max query buffer length", "id", c.id, "addr", c.addr,
			"qbuf", c.rd.Buffered(), "argv_mem", c.rd.ArgvBytes(), "used", used, "limit", lim)
		return false
	}
	return true
}

// tlsAccept completes a TLS client's handshake (bounded) and then applies
// protected mode, as Valkey's clientAcceptHandler does after connAccept.
func (c *client) tlsAccept(tc *tls.Conn) bool {
	s := c.s
	tc.SetDeadline(time.Now().Add(tlsHandshakeTimeout))
	err := tc.Handshake()
	tc.SetDeadline(time.Time{})
	if err != nil {
		s.log.Debug("Error accepting a client connection", "err", err, "addr", c.addr, "laddr", c.laddr)
		return false
	}
	if s.protectedMode.Load() && !s.passwordSet() && !isLocalPeer(c.nc.RemoteAddr()) {
		s.statRejected.Add(1)
		tc.SetWriteDeadline(time.Now().Add(time.Second))
		tc.Write([]byte(errProtected))
		return false
	}
	return true
}

// unauthQueryLimit is the query memory a client that has not authenticated
// may hold (Valkey: 1 MiB, whatever client-query-buffer-limit says).
const unauthQueryLimit = 1 << 20

// queryMemory is what the client holds in requests not yet run (the
// reader's Pending: unparsed bytes, the arguments and argv of a frame being
// received, a big bulk's buffer; plus the commands queued in MULTI) and the
// limit it is held to: client-query-buffer-limit, or 1 MiB before AUTH.
// Used from the connection's goroutine only.
func (c *client) queryMemory() (used, limit int64) {
	used = c.rd.Pending() + int64(c.queueBytes)
	limit = c.s.maxQuery.Load()
	if limit <= 0 {
		limit = 1<<63 - 1
	}
	if c.authRequired() && limit > unauthQueryLimit {
		limit = unauthQueryLimit
	}
	return used, limit
}

// runBatch runs cmds under one store lock acquisition and writes their
// replies. It reports whether the connection stays open.
func (c *client) runBatch(cmds [][][]byte) bool {
	wrote := c.runLocked(cmds)
	if wrote && !c.commit() {
		return false
	}
	// The replies go out stamped with the batch's own clock reading, the
	// end of its last command, with no clock read of the write's own; a
	// delayed authentication reply waited since, so it reads the clock.
	at := c.batchEndMs()
	if c.authDelay > 0 {
		at = 0
	}
	if c.inLoop && (c.authDelay > 0 || c.heldDone != nil || c.closeAfter) {
		// The event loop waits for no one: the connection's goroutine
		// finishes the batch (serveFrom); QUIT's close waits for the
		// writer goroutine (waitWriter, TestLoopNotHeldByWriter).
		c.loopDefer, c.loopAt = true, at
		return true
	}
	return c.finishBatch(at)
}

// finishBatch is runBatch after the batch ran: the delayed authentication
// reply's wait, the replies written (the first stamped at at, server clock
// ms; 0: read it), CLIENT PAUSE's hold, SHUTDOWN and the close after QUIT
// or a kill. It reports whether the connection stays open.
func (c *client) finishBatch(at int64) bool {
	s := c.s
	c.waitAuthDelay()
	c.flushAt(false, at)
	if done := c.heldDone; done != nil {
		c.heldDone = nil
		c.waitUnpause(done)
		if c.gone() {
			// The peer left while held by CLIENT PAUSE: its held
			// commands are dropped, not run (pause.go).
			c.pending = nil
			return false
		}
	}
	if c.shutdownAfter {
		s.shutdown("SHUTDOWN from client id=" + itoa(c.id) + " addr=" + c.addr)
	}
	if c.killed.Load() {
		return false
	}
	if c.closeAfter {
		c.waitWriter()
		return false
	}
	return true
}

// runLocked is runBatch's part under the store lock (released even if
// something panics): it runs the commands, each as a unit (panics.go),
// serves the parked clients they made ready and queues the replies. It
// reports whether the batch wrote.
func (c *client) runLocked(cmds [][][]byte) bool {
	s := c.s
	st := s.store
	st.Lock()
	defer st.Unlock()
	sec, nsec, mono := timeNow() // one wall/monotonic pair (time.Now and nanotime read both clocks again)
	c.lastCmd = time.Unix(sec, int64(nsec))
	c.batchWall = sec*1e9 + int64(nsec)
	c.batchMono = mono
	c.tick = c.batchMono
	if c.readUnstamped {
		// The bytes this batch runs were read just now: lastIO from the
		// batch's own clock reading, not one of the read's.
		c.readUnstamped = false
		ms := c.batchWall / 1e6
		if !s.wall {
			ms = s.clock.NowMs()
		}
		c.lastIO.Store(ms)
	}
	dirty := st.DirtyCount
	lim := c.hardLimit()
	c.setReplyRoom(&c.ctx, lim)
	c.xc.OutLimit, c.xc.OutQueued = c.ctx.OutLimit, c.ctx.OutQueued
	c.inBatch = true
	for i, argv := range cmds {
		c.execUnit(argv)
		if c.heldDone != nil {
			// Held by CLIENT PAUSE: this command and those behind it run
			// once the pause ends (runBatch waits).
			c.pending = append([][][]byte(nil), cmds[i:]...)
			break
		}
		if c.park != nil || c.authDelay > 0 {
			// A parked command, or a failed authentication whose reply
			// is delayed: the commands behind it wait (auth.go).
			c.pending = append([][][]byte(nil), cmds[i+1:]...)
			break
		}
		if c.closeAfter {
			break
		}
		if lim > 0 && int64(c.w.Len()) > lim {
			c.outputOverLimit()
			break
		}
	}
	if s.exp != nil && s.exp.fastDue.Load() {
		s.fastExpireLocked(c.batchMono)
	}
	s.blk.serveReady(s)
	c.enqueueLocked(&c.w)
	c.inBatch = false
	c.recycle = c.park == nil && len(c.pending) == 0 && len(c.queue) == 0
	return st.DirtyCount != dirty
}

// commit runs the commit hook (see SetCommitHook) and reports whether the
// replies may go out.
func (c *client) commit() bool {
	c.commitPending.Store(false)
	s := c.s
	f := s.commit.Load()
	if f == nil {
		return true
	}
	if err := (*f)(); err != nil {
		s.log.Warn("Closing client: its writes could not be made durable", "id", c.id, "addr", c.addr, "err", err)
		c.kill()
		return false
	}
	return true
}

// classLimit is the client-output-buffer-limit class the client is held to:
// pubsub while it has a subscription, else normal (Valkey's getClientType;
// emqd has no replicas).
func (c *client) classLimit() classLimit {
	l := c.s.outLimits.Load()
	if c.inPubSub.Load() {
		return l.pubsub
	}
	return l.normal
}

// replyBufBytes is the reply bytes a client holds that no output limit
// counts: Valkey's fixed per-client reply buffer (PROTO_REPLY_CHUNK_BYTES,
// 16 KiB), which its getClientOutputBufferMemoryUsage leaves out, so a
// client under `normal 100 0 0` still reads a 200-byte value
// (docs/operations.md §4).
const replyBufBytes = 16 << 10

// hardLimit is the hard limit of the client's class in bytes of output
// (0: none), with the uncounted reply buffer (replyBufBytes) added: what
// the unsent output is compared with.
func (c *client) hardLimit() int64 {
	if h := c.classLimit().hard; h > 0 {
		return h + replyBufBytes
	}
	return 0
}

// setReplyRoom tells x how many reply bytes the client can still take
// before its output passes lim (store.Ctx.ReplyRoom): the replies already
// queued and not yet written count. Without a limit (lim 0, the default
// normal class) there is no room to count and no lock is taken.
func (c *client) setReplyRoom(x *store.Ctx, lim int64) {
	x.OutLimit = lim
	if lim <= 0 {
		x.OutQueued = 0
		return
	}
	c.outMu.Lock()
	x.OutQueued = int64(len(c.out) + len(c.wq))
	c.outMu.Unlock()
}

// overOutputLimit is Valkey's checkClientOutputBufferLimits for a client
// holding n bytes of output, of which the first replyBufBytes do not count: past the hard limit of its class, or past the
// soft limit for more than its seconds (server clock) without dropping
// back under it; a client back under the soft limit starts afresh.
// Called whenever its output grows (outMu held).
func (c *client) overOutputLimit(n int64) bool {
	cl := c.classLimit()
	n -= replyBufBytes // not counted (replyBufBytes)
	if cl.hard > 0 && n > cl.hard {
		return true
	}
	if cl.soft <= 0 || n <= cl.soft {
		c.softSince = 0
		return false
	}
	now := c.s.clock.NowMs()
	if c.softSince == 0 {
		c.softSince = now
		return false
	}
	return now-c.softSince > cl.softSecs*1000
}

// clientStructBytes is the size of a client's own state (the client struct,
// Valkey's zmalloc_size(c)): counted once per client in its memory.
const clientStructBytes = int64(unsafe.Sizeof(client{}))

// memoryUsage is the memory the client holds, in bytes, as Valkey's
// getClientMemoryUsage counts it: its state (clientStructBytes), the read
// buffer it holds (0 while idle), the request bytes not yet run (qbuf,
// argv-mem, multi-mem) and its output not yet taken by the kernel (omem).
// CLIENT LIST's tot-mem; MEMORY STATS clients.normal and INFO memory's
// mem_clients_normal add it up (docs/operations.md §4). Store lock (for
// multi-mem).
func (c *client) memoryUsage() int64 {
	return clientStructBytes + c.rbuf.Load() + c.qbuf.Load() + c.argvMem.Load() + int64(c.queueBytes) + c.outputMemory()
}

// outputMemory is the client's output not yet taken by the kernel, in
// bytes: the queue and the buffer being written (CLIENT LIST omem).
func (c *client) outputMemory() int64 {
	c.outMu.Lock()
	defer c.outMu.Unlock()
	return int64(len(c.out) + len(c.wq) + c.inWrite)
}

// outputOverLimit disconnects a client whose output passed its class's
// hard limit (client-output-buffer-limit).
func (c *client) outputOverLimit() {
	if c.killed.Swap(true) {
		return
	}
	c.s.statObufClosed.Add(1)
	cl := c.classLimit()
	c.s.log.Warn("Client scheduled to be closed ASAP for overcoming of output buffer limits.",
		"id", c.id, "addr", c.addr, "name", c.name, "hard_limit", cl.hard, "soft_limit", cl.soft, "soft_seconds", cl.softSecs)
	c.closeConn()
}

// enqueueLocked moves the bytes of w to the output queue. Any goroutine may
// call it (wake-ups do, under the store lock); no I/O happens here.
func (c *client) enqueueLocked(w *resp.Writer) {
	if len(w.Buf) == 0 {
		return
	}
	c.outMu.Lock()
	if len(c.out) == 0 {
		c.out, w.Buf = w.Buf, c.out[:0]
	} else {
		c.out = append(c.out, w.Buf...)
		w.Buf = w.Buf[:0]
	}
	over := c.overOutputLimit(int64(len(c.out) + len(c.wq) + c.inWrite))
	c.outMu.Unlock()
	if over {
		c.outputOverLimit()
	}
}

// flushOut writes the output queue unless another goroutine is writing.
// Only the connection's goroutine calls it, so writes never happen under
// the store lock.
func (c *client) flushOut() { c.flushAt(false, 0) }

// flushParked is flushOut for a parked client: frames queued for it while
// it waits (invalidations, messages) go out, but not a reply that a
// wake-up queued behind a write that is not yet durable (commitPending is
// set before that reply is queued, and checked under outMu before each
// write).
func (c *client) flushParked() { c.flushAt(true, 0) }

// batchEndMs is the server clock (ms) when the batch just run ended,
// without a clock read where the clock is the wall clock: the batch's
// wall/monotonic pair plus the monotonic time of its last command's end
// (client.tick). With any other clock (clock.Manual in tests) it reads it.
func (c *client) batchEndMs() int64 {
	if c.s.wall {
		return (c.batchWall + (c.tick - c.batchMono)) / 1e6
	}
	return c.s.clock.NowMs()
}

// flushAt is flushOut (parked: flushParked) with at the server clock (ms)
// the first write is stamped with in lastIO, read before the write; 0:
// read the clock there. Later writes of the same call read it.
func (c *client) flushAt(parked bool, at int64) {
	c.outMu.Lock()
	if c.writing {
		if c.behind && len(c.out) > 0 && !(parked && c.commitPending.Load()) {
			// The writer goroutine writes it after what it holds.
			c.wq = append(c.wq, c.out...)
			c.out = c.out[:0]
		}
		c.outMu.Unlock()
		return
	}
	for len(c.out) > 0 {
		if parked && c.commitPending.Load() {
			break
		}
		data := c.out
		c.out = c.spare[:0]
		c.writing = true
		c.inWrite = len(data)
		c.outMu.Unlock()
		// The time is read before the write: a clock moved while the
		// reply was on its way (clock.Manual in tests) must not make the
		// client look active after the moment its last reply went out
		// (TestIdleSubscribersStay failed 1 in 5 under -race when the
		// test's clock jump landed between the reply and this store).
		wrote := at
		if wrote == 0 {
			wrote = c.s.clock.NowMs()
		}
		at = 0
		n, err := c.write(data) // counts the bytes sent (client.sent)
		if n > 0 {
			c.lastIO.Store(wrote)
		}
		c.outMu.Lock()
		c.writing = false
		c.inWrite = 0
		if err == errLoopBlocked {
			// The event loop's write found the socket full: what is left
			// goes back in front of the queue for the connection's
			// goroutine, which waits for the socket (loop.go).
			c.out = append(append(make([]byte, 0, len(data)-n+len(c.out)), data[n:]...), c.out...)
			c.loopBlocked = true
			c.spare = data[:0]
			break
		}
		if err == errWriteBlocked {
			// The socket did not take it all: a writer goroutine waits
			// for it with the rest, and this one goes back to reading
			// (writeBehind). data is the writer's now and c.out
			// the old spare: no spare until the writer gives its
			// buffer back (TestWriterBufferNotReused).
			c.spare = nil
			c.startBehindLocked(data, n)
			break
		}
		if cap(data) > 1<<20 {
			data = nil // do not keep a huge buffer
		}
		c.spare = data[:0]
		if err != nil {
			c.out = c.out[:0]
			c.killed.Store(true)
			break
		}
	}
	c.outMu.Unlock()
}

// errWriteBlocked is client.write's answer when the socket did not take the
// whole buffer at once (for a connection that is not plain TCP: before it
// tried): flushAt hands the rest to a writer goroutine (writeBehind).
var errWriteBlocked = errors.New("reply left for the writer goroutine")

// startBehindLocked starts the writer goroutine with buf, of which the
// first off bytes were written (outMu held). Until it ends, the write in
// progress is its own (writing, behind) and flushAt hands it the output.
//
// The connection's goroutine never waits for a client to read: it reads
// and runs the commands behind, as Valkey keeps reading a client whose
// replies pile up in its output buffer. Before, a client that wrote a big
// pipeline before reading any reply (go-redis Pipeline of 100k commands,
// 200k HGETALLs: 5.2 MB of replies) hung for good: emqd waited for it to
// read, it waited for emqd to read (TestBigPipelineBeforeReading;
// docs/architecture.md §2.8).
func (c *client) startBehindLocked(buf []byte, off int) {
	c.writing, c.behind = true, true
	c.inWrite = len(buf) - off
	c.behindDone = make(chan struct{})
	go c.writeBehind(buf, off, c.behindDone)
}

// writeBehind is the writer goroutine: it writes buf[off:], waiting for the
// socket, then what flushAt handed it meanwhile (wq), until nothing is
// left; then the write in progress ends and flushAt writes again itself.
// A write error ends the connection (kill), as flushAt's does.
func (c *client) writeBehind(buf []byte, off int, done chan struct{}) {
	defer func() {
		if h := c.s.writerEnding; h != nil {
			h()
		}
		close(done)
	}()
	for {
		n, err := c.writeWait(buf[off:])
		if n > 0 {
			c.lastIO.Store(c.s.clock.NowMs())
		}
		c.outMu.Lock()
		c.inWrite = 0
		if err != nil {
			c.out, c.wq = c.out[:0], nil
			c.writing, c.behind = false, false
			c.outMu.Unlock()
			c.kill()
			return
		}
		if len(c.wq) == 0 {
			c.writing, c.behind = false, false
			if cap(buf) <= 1<<20 {
				c.spare = buf[:0] // flushAt left it nil
			}
			c.outMu.Unlock()
			return
		}
		buf, c.wq, off = c.wq, buf[:0], 0
		if cap(c.wq) > 1<<20 {
			c.wq = nil // do not keep a huge buffer
		}
		c.inWrite = len(buf)
		c.outMu.Unlock()
	}
}

// waitWriter waits until the writer goroutine, if one runs, has written
// all it holds (or failed): the reply to QUIT or a protocol error goes out
// before the connection closes.
func (c *client) waitWriter() {
	c.outMu.Lock()
	// The last writer's channel, even once behind is false: the writer
	// clears behind before it returns (and, after a failed write, kills
	// the connection), and its goroutine has not ended until done closes.
	// A closed channel returns at once.
	done := c.behindDone
	c.outMu.Unlock()
	if done != nil {
		<-done
	}
}

// protocolError replies the error text and closes (networking.c
// setProtocolError).
func (c *client) protocolError(err error) {
	c.s.logProtocolError(c.id, c.addr, err)
	var pe *resp.ProtocolError
	if errors.As(err, &pe) && c.replyMode == replyOn {
		c.w.Error(pe.Msg)
	}
	c.outMu.Lock()
	c.out = append(c.out, c.w.Buf...)
	c.outMu.Unlock()
	c.w.Reset()
	c.flushOut()
	c.waitWriter()
}

// cleanup runs when the connection ends: the parked command takes nothing,
// watches and the MULTI state go. A writer goroutine still writing ends
// with the socket's close (its write fails at once) and is waited for, so
// none outlives the connection's goroutine, nor Server.Close, which waits
// for those (TestCloseWaitsForWriter).
func (c *client) cleanup() {
	c.nc.Close()
	c.waitWriter()
	st := c.s.store
	st.Lock()
	if c.park != nil {
		c.s.blk.remove(c.park)
		c.park = nil
	}
	st.Unwatch(&c.watcher)
	c.queue = nil
	c.disableTracking()
	c.stopMonitor()
	c.unsubscribeAll(false)
	st.Unlock()
	c.s.removeClient(c)
	c.s.conns.Done()
}

// gone reports whether the peer has gone away: the connection's goroutine
// saw its read end, or the kernel already holds the end of the stream (or
// an error) that the goroutine has not read yet. A parked client is checked
// before it is served (blocking.serveReady), so a job is never handed to a
// connection that closed while it waited, whichever command it waits in
// (Valkey notices because it keeps reading a blocked client's socket).
func (c *client) gone() bool {
	if c.readEnded.Load() || c.killed.Load() {
		return true
	}
	return c.raw != nil && peerClosed(c.raw)
}

// peerClosed looks at the socket without blocking or consuming: true when
// the peer closed it or shut down its writing half (POLLRDHUP, which Linux
// reports even while the peer's last bytes still wait unread), when it
// failed (ECONNRESET: POLLERR, POLLHUP), or when it is already closed here;
// false while the peer can still send. A peek (recv MSG_PEEK) cannot tell:
// it returns the waiting bytes and hides the end behind them, so a client
// held by CLIENT PAUSE that had sent a second command before hanging up
// stayed connected until the pause ended (TestPeerClosedBehindData;
// Valkey, which keeps reading a paused client, frees it at once).
func peerClosed(rc syscall.RawConn) bool {
	closed := false
	err := rc.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN | unix.POLLRDHUP}}
		for {
			n, err := unix.Poll(fds, 0)
			if err == unix.EINTR {
				continue
			}
			closed = err != nil || (n > 0 && fds[0].Revents&(unix.POLLRDHUP|unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0)
			return
		}
	})
	return closed || err != nil
}

// drop ends c's connection after its parked command was dropped (the peer
// is gone): its goroutine's read fails and cleanup runs.
func (c *client) drop() {
	c.park = nil
	c.killed.Store(true)
	c.closeConn()
}

// unpark lets the connection's goroutine run again after its parked command
// was answered (the reply is already in the output queue). Called under the
// store lock.
func (c *client) unpark() {
	c.park = nil
	c.enqueueLocked(&c.aw)
	c.wakeMu.Lock()
	c.parked.Store(false)
	if !c.resumeLocked() {
		c.woken = true
		c.nc.SetReadDeadline(time.Unix(1, 0)) // interrupt the blocked Read
	}
	c.wakeMu.Unlock()
}

// wake makes the connection's goroutine look at its output queue (frames
// queued by another client's command: invalidations, messages): it
// interrupts a blocked Read as unpark does, or resumes an asleep client.
// Called under the store lock.
func (c *client) wake() {
	c.wakeMu.Lock()
	if !c.resumeLocked() {
		c.woken = true
		c.nc.SetReadDeadline(time.Unix(1, 0))
	}
	c.wakeMu.Unlock()
}

// setParked marks the goroutine as parked (under the store lock).
func (c *client) setParked() {
	c.wakeMu.Lock()
	c.parked.Store(true)
	c.wakeMu.Unlock()
}

func contextWithTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

// itoa formats n in decimal.
func itoa(n int64) string { return strconv.FormatInt(n, 10) }
