package server

import (
	"strings"
	"time"
	_ "unsafe" // go:linkname nanotime

	"github.com/emqd/emqd/internal/resp"
	"github.com/emqd/emqd/internal/store"
)

// exec runs one command the way Valkey's processCommand does: unknown
// command, arity, NOAUTH, not allowed in a transaction, then queueing
// inside MULTI or the call. It runs under the store lock.
func (c *client) exec(argv [][]byte) {
	if t := c.s.trk; t != nil {
		t.beforeCommand(c)
	}
	mark := c.w.Len()
	outer := !c.executing
	c.executing = true
	c.dispatch(argv)
	// CLIENT REPLY OFF / SKIP (networking.c prepareClientToWrite, resetClient).
	switch c.replyMode {
	case replyOff:
		c.w.Buf = c.w.Buf[:mark]
	case replySkip:
		c.w.Buf = c.w.Buf[:mark]
		c.replyMode = replyOn
	case replySkipNext:
		c.replyMode = replySkip
	}
	if t := c.s.trk; t != nil {
		t.afterCommand(c, c.curCmd)
	}
	if outer {
		c.executing = false
		if len(c.pushes.Buf) > 0 {
			c.w.Raw(c.pushes.Buf)
			c.pushes.Reset()
		}
	}
}

// lookup is registry.lookup with the connection's last command name
// remembered as sent: a pipeline of one command resolves its name with a
// byte comparison instead of a lower-casing and a map lookup. The registry
// never changes after start, so the remembered command stays right.
func (c *client) lookup(argv [][]byte) (*command, bool) {
	name := argv[0]
	if c.nameCmd != nil && len(name) == c.nameLen && string(name) == string(c.nameBuf[:c.nameLen]) {
		return resolveSub(c.nameCmd, argv)
	}
	base := c.s.reg.lookupName(name)
	if base != nil && len(name) <= len(c.nameBuf) {
		c.nameLen = copy(c.nameBuf[:], name)
		c.nameCmd = base
	}
	return resolveSub(base, argv)
}

func (c *client) dispatch(argv [][]byte) {
	s := c.s
	if isCrossProtocol(argv[0]) {
		c.securityWarning()
		return
	}
	cmd, badSub := c.lookup(argv)
	c.curCmd = cmd
	if cmd == nil {
		if badSub {
			c.reject(unknownSubcommandError(argv))
		} else {
			c.reject(unknownCommandError(argv))
		}
		return
	}
	if !cmd.arityOK(len(argv)) {
		c.rejectCmd(cmd, arityError(cmd.name))
		return
	}
	if !c.authed && cmd.flags&store.FlagNoAuth == 0 && s.passwordSet() {
		c.rejectCmd(cmd, "NOAUTH Authentication required.")
		return
	}
	if s.maxMemory.Load() > 0 && c.rejectOnOOM(cmd) && s.overMaxmemory(c.tick, argBytes(argv)) {
		c.rejectCmd(cmd, errOOM)
		return
	}
	if cmd.flags&store.FlagWrite != 0 {
		if gate := s.writeGate.Load(); gate != nil {
			if msg := (*gate)(); msg != "" {
				c.rejectCmd(cmd, msg)
				return
			}
		}
	}
	if c.monitor && cmd.flags&(store.FlagWrite|store.FlagReadonly|store.FlagMayReplicate) != 0 {
		// A MONITOR client is a replica in Valkey's eyes.
		c.rejectCmd(cmd, "ERR Replica can't interact with the keyspace")
		return
	}
	if c.inMulti && cmd.flags&store.FlagNoMulti != 0 {
		c.rejectCmd(cmd, "ERR Command not allowed inside a transaction")
		return
	}
	if c.sub != nil || cmd.flags&store.FlagPubSub != 0 {
		if msg := c.pubsubContextError(cmd); msg != "" {
			c.rejectCmd(cmd, msg)
			return
		}
	}
	if s.paused.Load() && c.heldByPause(cmd) {
		// Held until the pause ends (pause.go): runLocked keeps this
		// command and the ones behind it for later.
		c.heldDone = s.pause.done
		return
	}
	if c.inMulti {
		switch cmd.name {
		case "exec", "discard", "multi", "watch", "quit", "reset":
		default:
			c.queue = append(c.queue, queued{cmd: cmd, argv: argv})
			for _, a := range argv {
				c.queueBytes += len(a) + resp.ArgvHeaderBytes
			}
			c.w.Simple("QUEUED")
			return
		}
	}
	c.call(cmd, argv, &c.ctx)
}

// rejectOnOOM is Valkey 8.0.1's processCommand rule for maxmemory: a
// denyoom command, and EXEC of a transaction that queued one, are refused
// while memory is over the limit. Inside MULTI the other commands are
// queued and EXEC runs them, as Valkey 8.0.1 does (Redis 7.0 refused
// anything queued; docs/operations.md §5).
func (c *client) rejectOnOOM(cmd *command) bool {
	if cmd.flags&store.FlagDenyOOM != 0 {
		return true
	}
	name := cmd.name
	if cmd.parent != nil {
		name = cmd.parent.name
	}
	if name == "exec" {
		for _, q := range c.queue {
			if q.cmd.flags&store.FlagDenyOOM != 0 {
				return true
			}
		}
	}
	return false
}

// pubsubContextError is the Pub/Sub checks of Valkey's processCommand: a
// RESP2 client with subscriptions may only run (P)SUBSCRIBE,
// (P)UNSUBSCRIBE, PING, QUIT and RESET; UNSUBSCRIBE and PUNSUBSCRIBE need a
// subscription (NOSUB).
func (c *client) pubsubContextError(cmd *command) string {
	n := c.subscriptions()
	if n > 0 && c.w.Proto == 2 {
		switch cmd.name {
		case "ping", "subscribe", "unsubscribe", "psubscribe", "punsubscribe", "quit", "reset":
		default:
			return "ERR Can't execute '" + cmd.name + "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
		}
	}
	if n == 0 && (cmd.name == "unsubscribe" || cmd.name == "punsubscribe") {
		return "NOSUB '" + cmd.name + "' command executed not in subscribed mode"
	}
	return ""
}

// reject answers a dispatch-level error and, inside MULTI, marks the
// transaction so EXEC aborts (Valkey's rejectCommand / flagTransaction).
func (c *client) reject(msg string) {
	c.w.Error(msg)
	c.countError(msg)
	if c.inMulti {
		c.multiDirty = true
	}
}

func (c *client) rejectCmd(cmd *command, msg string) {
	cmd.rejected++
	if cmd.name == "exec" {
		// Valkey's rejectCommand: a refused EXEC (arity, NOAUTH) ends the
		// transaction, in MULTI or not (execCommandAbort), and names the
		// reason without the generic ERR code.
		c.discardTransaction()
		if len(msg) > 4 && msg[:4] == "ERR " {
			msg = msg[4:]
		}
		msg = "EXECABORT Transaction discarded because of: " + msg
		c.w.Error(msg)
		c.countError(msg)
		return
	}
	c.reject(msg)
}

// countError counts an error reply by its code (INFO errorstats).
func (c *client) countError(msg string) {
	s := c.s
	s.statErrs++
	code := msg
	for i := 0; i < len(msg); i++ {
		if msg[i] == ' ' {
			code = msg[:i]
			break
		}
	}
	if len(code) > 0 && code[0] == '-' {
		code = code[1:]
	}
	if _, ok := s.errStats[code]; !ok && len(s.errStats) >= 128 {
		return
	}
	s.errStats[code]++
}

// call runs cmd with the context x: sets the per-command fields, runs the
// handler, parks the client when the handler asked to block, propagates
// the command to the Feed when it changed something, and records stats
// and the slowlog.
func (c *client) call(cmd *command, argv [][]byte, x *store.Ctx) {
	s := c.s
	x.ResetForCommand(argv)
	x.DB = s.store.DB(c.db)
	x.InMulti = c.execing
	mark := c.w.Len()
	c.cmdName = cmd.name
	// One clock read per command: a command starts when the previous one
	// of the batch ended (runBatch reads the clock at the batch start).
	start := c.tick
	switch {
	case c.execing:
		// Inside EXEC every command sees the time EXEC started (Valkey's
		// command time snapshot): no key expires halfway through.
		x.NowMs = c.ctx.NowMs
	case s.wall:
		x.NowMs = (c.batchWall + (start - c.batchMono)) / 1e6
	default:
		x.NowMs = s.clock.NowMs()
	}
	s.store.SetNow(x.NowMs)
	tracked := c.trk != nil && cmd.flags&store.FlagReadonly != 0 && c.trk.wantsKeys()
	if tracked {
		c.noteReads(cmd)
	}
	if cmd.run != nil {
		cmd.run(c, x)
	} else if cmd.handler != nil {
		cmd.handler(x)
	} else {
		// A container called without a subcommand it knows; arity already
		// passed, so this is "CONTAINER" alone with arity -1: nothing to do.
		x.W.Error(unknownSubcommandError(append(argv[:1:1], []byte(""))))
	}
	if tracked {
		s.readNote = nil
		c.trackRead(cmd, argv)
	}
	end := nanotime()
	c.tick = end
	dur := time.Duration(end - start)
	c.totCmds++
	cmd.calls++
	cmd.usec += dur.Microseconds()
	s.statCmds++
	if cmd.hist != nil {
		cmd.hist.observe(dur)
	}
	if s.latencyTracking.Load() {
		cmd.recordLatency(dur)
	}
	if x.Block != nil && !c.execing {
		s.blk.park(c, cmd, argv, x.Block, x.NowMs)
	}
	if x.Changed() && !x.Propagated() && s.store.Persisting() {
		s.store.Record(x.DB.Index, [][][]byte{argv})
	}
	if c.w.Len() > mark && c.w.Buf[mark] == '-' {
		cmd.failed++
		c.countReplyError(c.w.Buf[mark:])
	}
	if cmd.flags&store.FlagSkipSlowlog == 0 {
		s.slowlogRecord(c, argv, dur)
	}
	if len(s.monitors) > 0 {
		s.feedMonitors(c, cmd, argv)
	}
	if s.latencyThreshold.Load() > 0 {
		ev := "command"
		if cmd.flags&store.FlagFast != 0 {
			ev = "fast-command"
		}
		s.latencySample(ev, dur.Milliseconds())
	}
}

// countReplyError counts an error a handler wrote (INFO errorstats).
func (c *client) countReplyError(reply []byte) {
	end := len(reply)
	for i := 1; i < len(reply); i++ {
		if reply[i] == ' ' || reply[i] == '\r' {
			end = i
			break
		}
	}
	s := c.s
	s.statErrs++
	code := string(reply[1:end])
	if _, ok := s.errStats[code]; !ok && len(s.errStats) >= 128 {
		return
	}
	s.errStats[code]++
}

// nanotime is the runtime's monotonic clock in nanoseconds (one vDSO read;
// time.Now reads the wall clock too). The runtime keeps this linkname for
// outside packages (go.dev/issue/67401). With the batch's wall/monotonic
// pair (client.tick) it makes a command cost one clock read instead of
// two time.Now reads (the measurement: bench/README.md, "Measured design decisions").
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// timeNow is the runtime's time.now: the wall clock (Unix seconds and
// nanoseconds) and the monotonic clock on nanotime's scale, read together
// (two vDSO reads, where time.Now followed by nanotime makes three: about
// 95 + 48 ns against 80 on the benchmark machine, bench/README.md "`-P 32`
// and `-P 1` (issue 25, round 6)"). The runtime keeps this linkname for
// outside packages (go.dev/issue/67401).
//
//go:linkname timeNow time.now
func timeNow() (sec int64, nsec int32, mono int64)

// isCrossProtocol reports whether name is POST or Host: (any case), the
// first words of an HTTP request's lines: Valkey's processCommand closes
// such a connection before anything else is checked, since a browser tricked
// into posting to the port would otherwise have the request's body run
// as commands (cross-protocol scripting).
func isCrossProtocol(name []byte) bool {
	return (len(name) == 4 && strings.EqualFold(string(name), "post")) ||
		(len(name) == 5 && strings.EqualFold(string(name), "host:"))
}

// securityWarning is Valkey's securityWarningCommand: the connection is
// closed at once, the replies of the commands before it in the batch are
// not sent, and a warning is logged at most once a minute (server clock).
func (c *client) securityWarning() {
	s := c.s
	now := s.clock.NowMs()
	if last := s.xprotoLogged.Load(); last == 0 || now-last > 60_000 || last-now > 60_000 {
		s.xprotoLogged.Store(now)
		s.log.Warn("Possible SECURITY ATTACK detected. It looks like somebody is sending POST or Host: commands to emqd. "+
			"This is likely due to an attacker attempting to use Cross Protocol Scripting to compromise your emqd instance. Connection aborted.",
			"id", c.id, "addr", c.addr)
	}
	c.w.Buf = c.w.Buf[:0]
	c.outMu.Lock()
	c.out = c.out[:0]
	c.outMu.Unlock()
	c.closeAfter = true
	c.killed.Store(true)
	c.hangUp()
}
