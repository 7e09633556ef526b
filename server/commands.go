package server

import (
	"crypto/subtle"
	"strings"
	"time"

	"github.com/emqd/emqd/clock"
	"github.com/emqd/emqd/num"
	"github.com/emqd/emqd/store"
)

// Connection and server commands (valkey-subset.md 3.7).

func spec(name string, arity int, flags ...string) *store.CommandSpec {
	return &store.CommandSpec{Name: name, Arity: arity, Flags: flags}
}

func keyed(cs *store.CommandSpec, first, last, step int) *store.CommandSpec {
	cs.FirstKey, cs.LastKey, cs.Step = first, last, step
	return cs
}

// serverCommands is the server's part of the registry.
func serverCommands() []serverCmd {
	return []serverCmd{
		{spec: spec("ping", -1, "fast", "sentinel"), run: pingCommand},
		{spec: spec("echo", 2, "fast"), run: echoCommand},
		{spec: spec("quit", -1, "allow_busy", "no_auth", "fast", "loading", "stale"), run: quitCommand},
		{spec: spec("reset", 1, "noscript", "loading", "stale", "no_auth", "allow_busy", "fast"), run: resetCommand},
		{spec: spec("select", 2, "loading", "stale", "fast"), run: selectCommand},
		{spec: spec("time", 1, "loading", "stale", "fast"), run: timeCommand},
		{spec: spec("auth", -2, "noscript", "loading", "stale", "fast", "no_auth", "allow_busy", "skip_slowlog"), run: authCommand},
		{spec: spec("hello", -1, "noscript", "loading", "stale", "fast", "no_auth", "allow_busy", "skip_slowlog"), run: helloCommand},
		{spec: spec("client", -2, "sentinel"), subs: clientSubcommands()},
		{spec: spec("multi", 1, "noscript", "loading", "stale", "fast", "no_multi", "allow_busy"), run: multiCommand},
		{spec: spec("exec", 1, "noscript", "loading", "stale", "skip_slowlog"), run: execCommand},
		{spec: spec("discard", 1, "noscript", "loading", "stale", "fast", "allow_busy"), run: discardCommand},
		{spec: keyed(spec("watch", -2, "noscript", "loading", "stale", "fast", "no_multi", "allow_busy"), 1, -1, 1), run: watchCommand},
		{spec: spec("unwatch", 1, "noscript", "loading", "stale", "fast", "allow_busy"), run: unwatchCommand},
		{spec: spec("info", -1, "loading", "stale", "sentinel"), run: infoCommand},
		{spec: spec("config", -2), subs: configSubcommands()},
		{spec: spec("command", -1, "loading", "stale", "sentinel"), run: commandCommand, subs: commandSubcommands()},
		{spec: spec("slowlog", -2), subs: slowlogSubcommands()},
		{spec: spec("function", -2), subs: []serverCmd{
			{spec: spec("function|flush", -2, "write", "noscript"), run: functionFlushCommand},
			{spec: spec("function|help", 2, "loading", "stale"), run: helpReply("FUNCTION",
				"FLUSH [ASYNC|SYNC]", "    Delete all libraries (emqd has none).")},
		}},
		{spec: spec("shutdown", -1, "admin", "noscript", "loading", "stale", "no_multi", "sentinel", "allow_busy"), run: shutdownCommand},
		{spec: spec("cluster", -2), run: clusterCommand},
		{spec: spec("bgrewriteaof", 1, "admin", "noscript", "no_async_loading"), run: bgrewriteaofCommand},
	}
}

func pingCommand(c *client, x *store.Ctx) {
	if len(x.Argv) > 2 {
		x.W.Error(arityError("ping"))
		return
	}
	if len(x.Argv) == 2 {
		x.W.Bulk(x.Argv[1])
		return
	}
	x.W.Simple("PONG")
}

func echoCommand(c *client, x *store.Ctx) { x.W.Bulk(x.Argv[1]) }

func quitCommand(c *client, x *store.Ctx) {
	x.W.OK()
	c.closeAfter = true
}

// resetCommand is Valkey's RESET (clearClientConnectionState): discard
// MULTI, unwatch, SELECT 0, RESP2, no name, CLIENT REPLY ON, and back to the
// default user's authentication.
func resetCommand(c *client, x *store.Ctx) {
	c.discardTransaction()
	c.db = 0
	c.w.Proto = 2
	c.name = ""
	c.replyMode = replyOn
	c.authed = !c.s.passwordSet()
	x.W.Simple("RESET")
}

func selectCommand(c *client, x *store.Ctx) {
	n, ok := num.ParseInt(x.Argv[1])
	if !ok {
		x.W.Error(store.ErrNotInteger)
		return
	}
	if n < -1<<31 || n > 1<<31-1 {
		x.W.Error("ERR value is out of range, value must between -2147483648 and 2147483647")
		return
	}
	if n < 0 || n >= int64(c.s.store.NumDBs()) {
		x.W.Error("ERR DB index is out of range")
		return
	}
	c.db = int(n)
	x.W.OK()
}

// timeCommand replies [unix seconds, microseconds] of the server clock
// (the wall clock's microseconds below the clock's milliseconds).
func timeCommand(c *client, x *store.Ctx) {
	var us int64
	if _, wall := c.s.clock.(clock.Wall); wall {
		us = time.Now().UnixMicro()
	} else {
		us = x.NowMs*1000 + time.Now().UnixMicro()%1000
	}
	x.W.Array(2)
	x.W.BulkInt(us / 1e6)
	x.W.BulkInt(us % 1e6)
}

const (
	errWrongPass = "WRONGPASS invalid username-password pair or user is disabled."
	errNoPassCfg = "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"
	errBadName   = "ERR Client names cannot contain spaces, newlines or special characters."
)

// checkPassword is ACLAuthenticateUser for emqd's one user, "default":
// without requirepass any password works; with it, only that one.
func (c *client) checkPassword(user, pass []byte) bool {
	if string(user) != "default" {
		return false
	}
	p := c.s.requirepass.Load()
	if p == nil || *p == "" {
		return true
	}
	return subtle.ConstantTimeCompare([]byte(*p), pass) == 1
}

func authCommand(c *client, x *store.Ctx) {
	argv := x.Argv
	if len(argv) > 3 {
		x.W.Error(store.ErrSyntax)
		return
	}
	user, pass := []byte("default"), argv[1]
	if len(argv) == 2 {
		if !c.s.passwordSet() {
			x.W.Error(errNoPassCfg)
			return
		}
	} else {
		user, pass = argv[1], argv[2]
	}
	if !c.checkPassword(user, pass) {
		c.s.log.Debug("Authentication failed", "id", c.id, "addr", c.addr)
		x.W.Error(errWrongPass)
		return
	}
	c.authed = true
	x.W.OK()
}

// validName reports whether every byte is in '!'..'~' (Valkey's
// validateClientAttr).
func validName(b []byte) bool {
	for _, ch := range b {
		if ch < '!' || ch > '~' {
			return false
		}
	}
	return true
}

// helloCommand is Valkey 8's HELLO [protover [AUTH user pass] [SETNAME
// name]], answering server "emqd", version "8.0.1" (compat.md "Choices").
func helloCommand(c *client, x *store.Ctx) {
	argv := x.Argv
	ver := int64(0)
	next := 1
	if len(argv) >= 2 {
		v, ok := num.ParseInt(argv[1])
		if !ok {
			x.W.Error("ERR Protocol version is not an integer or out of range")
			return
		}
		next = 2
		if v < 2 || v > 3 {
			x.W.Error("NOPROTO unsupported protocol version")
			return
		}
		ver = v
	}
	var user, pass, name []byte
	for j := next; j < len(argv); j++ {
		more := len(argv) - 1 - j
		opt := argv[j]
		switch {
		case strings.EqualFold(string(opt), "AUTH") && more >= 2:
			user, pass = argv[j+1], argv[j+2]
			j += 2
		case strings.EqualFold(string(opt), "SETNAME") && more >= 1:
			name = argv[j+1]
			j++
		default:
			x.W.Error("ERR Syntax error in HELLO option '" + string(cPrefix(opt, -1)) + "'")
			return
		}
	}
	if user != nil {
		if !c.checkPassword(user, pass) {
			x.W.Error(errWrongPass)
			return
		}
		c.authed = true
	}
	if c.authRequired() {
		x.W.Error("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
		return
	}
	if name != nil {
		if !validName(name) {
			x.W.Error(errBadName)
			return
		}
		c.name = string(name)
	}
	if ver != 0 {
		c.w.Proto = int(ver)
	}
	w := x.W
	w.Map(7)
	w.BulkString("server")
	w.BulkString("emqd")
	w.BulkString("version")
	w.BulkString("8.0.1")
	w.BulkString("proto")
	w.Int(int64(c.w.Proto))
	w.BulkString("id")
	w.Int(c.id)
	w.BulkString("mode")
	w.BulkString("standalone")
	w.BulkString("role")
	w.BulkString("master")
	w.BulkString("modules")
	w.Array(0)
}

// helpReply answers CONTAINER HELP with Valkey's layout.
func helpReply(container string, lines ...string) func(c *client, x *store.Ctx) {
	return func(c *client, x *store.Ctx) {
		all := append([]string{container + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"}, lines...)
		all = append(all, "HELP", "    Print this help.")
		x.W.Array(len(all))
		for _, l := range all {
			x.W.Simple(l)
		}
	}
}

func functionFlushCommand(c *client, x *store.Ctx) {
	if len(x.Argv) > 3 {
		x.W.Error(store.ErrSyntax)
		return
	}
	if len(x.Argv) == 3 {
		m := strings.ToUpper(string(x.Argv[2]))
		if m != "ASYNC" && m != "SYNC" {
			x.W.Error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
			return
		}
	}
	x.W.OK()
}

// shutdownCommand closes the server (SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE]
// [ABORT]): no reply, the connection closes, Close runs the close hooks
// (the append-only file is flushed there).
func shutdownCommand(c *client, x *store.Ctx) {
	abort := false
	for _, a := range x.Argv[1:] {
		switch strings.ToLower(string(a)) {
		case "nosave", "save", "now", "force":
		case "abort":
			abort = true
		default:
			x.W.Error(store.ErrSyntax)
			return
		}
	}
	if abort {
		if len(x.Argv) != 2 {
			x.W.Error(store.ErrSyntax)
			return
		}
		x.W.Error("ERR No shutdown in progress.")
		return
	}
	c.closeAfter = true
	c.shutdownAfter = true // once the batch's earlier replies are written
}

// clusterCommand answers every CLUSTER subcommand with Valkey's text for a
// server without cluster support (cluster-probing clients fall back to a
// single node when the text contains CLUSTER, valkey-subset.md 4.3).
func clusterCommand(c *client, x *store.Ctx) {
	x.W.Error("ERR This instance has cluster support disabled")
}

func bgrewriteaofCommand(c *client, x *store.Ctx) {
	c.s.mu.Lock()
	f := c.s.rewrite
	c.s.mu.Unlock()
	if f == nil {
		x.W.Error("ERR Background append only file rewriting is not available: appendonly is off")
		return
	}
	if err := f(); err != nil {
		msg := err.Error()
		if !strings.HasPrefix(msg, "ERR ") && !isErrorCode(msg) {
			msg = "ERR " + msg
		}
		x.W.Error(msg)
		return
	}
	x.W.Simple("Background append only file rewriting started")
}

// isErrorCode reports whether msg starts with an upper-case error code.
func isErrorCode(msg string) bool {
	i := strings.IndexByte(msg, ' ')
	if i <= 0 {
		return false
	}
	return strings.ToUpper(msg[:i]) == msg[:i]
}
