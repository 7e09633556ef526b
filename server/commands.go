package server

import (
	"crypto/subtle"
	"strings"
	"time"

	"github.com/emqd/emqd/clock"
	"github.com/emqd/emqd/internal/num"
	"github.com/emqd/emqd/internal/store"
)

// Connection and server commands (docs/compat.md §1.5).

// serverCommands is the server's part of the registry.
func serverCommands() []serverCmd {
	return []serverCmd{
		{spec: store.NewCommand("ping", -1, nil, store.FlagFast, store.FlagSentinel), run: cmdPing},
		{spec: store.NewCommand("echo", 2, nil, store.FlagFast), run: cmdEcho},
		{spec: store.NewCommand("quit", -1, nil, store.FlagAllowBusy, store.FlagNoAuth, store.FlagFast, store.FlagLoading, store.FlagStale), run: cmdQuit},
		{spec: store.NewCommand("reset", 1, nil, store.FlagNoScript, store.FlagLoading, store.FlagStale, store.FlagNoAuth, store.FlagAllowBusy, store.FlagFast), run: cmdReset},
		{spec: store.NewCommand("select", 2, nil, store.FlagLoading, store.FlagStale, store.FlagFast), run: cmdSelect},
		{spec: store.NewCommand("time", 1, nil, store.FlagLoading, store.FlagStale, store.FlagFast), run: cmdTime},
		{spec: store.NewCommand("auth", -2, nil, store.FlagNoScript, store.FlagLoading, store.FlagStale, store.FlagFast, store.FlagNoAuth, store.FlagAllowBusy, store.FlagSkipSlowlog), run: cmdAuth},
		{spec: store.NewCommand("hello", -1, nil, store.FlagNoScript, store.FlagLoading, store.FlagStale, store.FlagFast, store.FlagNoAuth, store.FlagAllowBusy, store.FlagSkipSlowlog), run: cmdHello},
		{spec: store.NewCommand("client", -2, nil, store.FlagSentinel), subs: clientSubcommands()},
		{spec: store.NewCommand("multi", 1, nil, store.FlagNoScript, store.FlagLoading, store.FlagStale, store.FlagFast, store.FlagNoMulti, store.FlagAllowBusy), run: cmdMulti},
		{spec: store.NewCommand("exec", 1, nil, store.FlagNoScript, store.FlagLoading, store.FlagStale, store.FlagSkipSlowlog), run: cmdExec},
		{spec: store.NewCommand("discard", 1, nil, store.FlagNoScript, store.FlagLoading, store.FlagStale, store.FlagFast, store.FlagAllowBusy), run: cmdDiscard},
		{spec: store.NewCommand("watch", -2, nil, store.FlagNoScript, store.FlagLoading, store.FlagStale, store.FlagFast, store.FlagNoMulti, store.FlagAllowBusy).WithKeys(1, -1, 1), run: cmdWatch},
		{spec: store.NewCommand("unwatch", 1, nil, store.FlagNoScript, store.FlagLoading, store.FlagStale, store.FlagFast, store.FlagAllowBusy), run: cmdUnwatch},
		{spec: store.NewCommand("info", -1, nil, store.FlagLoading, store.FlagStale, store.FlagSentinel), run: cmdInfo},
		{spec: store.NewCommand("config", -2, nil), subs: configSubcommands()},
		{spec: store.NewCommand("command", -1, nil, store.FlagLoading, store.FlagStale, store.FlagSentinel), run: cmdCommand, subs: commandSubcommands()},
		{spec: store.NewCommand("slowlog", -2, nil), subs: slowlogSubcommands()},
		{spec: store.NewCommand("function", -2, nil), subs: []serverCmd{
			{spec: store.NewCommand("function|flush", -2, nil, store.FlagWrite, store.FlagNoScript), run: cmdFunctionFlush},
			{spec: store.NewCommand("function|help", 2, nil, store.FlagLoading, store.FlagStale), run: helpReply("FUNCTION",
				"FLUSH [ASYNC|SYNC]", "    Delete all libraries (emqd has none).")},
		}},
		{spec: store.NewCommand("shutdown", -1, nil, store.FlagAdmin, store.FlagNoScript, store.FlagLoading, store.FlagStale, store.FlagNoMulti, store.FlagSentinel, store.FlagAllowBusy), run: cmdShutdown},
		{spec: store.NewCommand("cluster", -2, nil), subs: clusterSubcommands()},
		{spec: store.NewCommand("subscribe", -2, nil, store.FlagPubSub, store.FlagNoScript, store.FlagLoading, store.FlagStale), run: cmdSubscribe},
		{spec: store.NewCommand("unsubscribe", -1, nil, store.FlagPubSub, store.FlagNoScript, store.FlagLoading, store.FlagStale), run: cmdUnsubscribe},
		{spec: store.NewCommand("psubscribe", -2, nil, store.FlagPubSub, store.FlagNoScript, store.FlagLoading, store.FlagStale), run: cmdPSubscribe},
		{spec: store.NewCommand("punsubscribe", -1, nil, store.FlagPubSub, store.FlagNoScript, store.FlagLoading, store.FlagStale), run: cmdPUnsubscribe},
		{spec: store.NewCommand("publish", 3, nil, store.FlagPubSub, store.FlagLoading, store.FlagStale, store.FlagFast, store.FlagMayReplicate), run: cmdPublish},
		{spec: store.NewCommand("pubsub", -2, nil), subs: pubsubSubcommands()},
		{spec: store.NewCommand("save", 1, nil, store.FlagNoAsyncLoading, store.FlagAdmin, store.FlagNoScript, store.FlagNoMulti), run: cmdSave},
		{spec: store.NewCommand("bgsave", -1, nil, store.FlagNoAsyncLoading, store.FlagAdmin, store.FlagNoScript), run: cmdBGSave},
		{spec: store.NewCommand("lastsave", 1, nil, store.FlagLoading, store.FlagStale, store.FlagFast), run: cmdLastSave},
		{spec: store.NewCommand("bgrewriteaof", 1, nil, store.FlagAdmin, store.FlagNoScript, store.FlagNoAsyncLoading), run: cmdBGRewriteAOF},
	}
}

func cmdPing(c *client, x *store.Ctx) {
	if len(x.Argv) > 2 {
		x.W.Error(arityError("ping"))
		return
	}
	if x.W.Proto == 2 && c.subscriptions() > 0 {
		// Subscribed RESP2: a two-element array (Valkey's pingCommand).
		x.W.Array(2)
		x.W.BulkString("pong")
		if len(x.Argv) == 2 {
			x.W.Bulk(x.Argv[1])
		} else {
			x.W.BulkString("")
		}
		return
	}
	if len(x.Argv) == 2 {
		x.W.Bulk(x.Argv[1])
		return
	}
	x.W.Simple("PONG")
}

func cmdEcho(c *client, x *store.Ctx) { x.W.Bulk(x.Argv[1]) }

func cmdQuit(c *client, x *store.Ctx) {
	x.W.OK()
	c.closeAfter = true
}

// cmdReset is Valkey's RESET (clearClientConnectionState): tracking off,
// discard MULTI, unwatch, no subscription (no frames), SELECT 0, RESP2, no
// name, CLIENT REPLY ON, and back to the default user's authentication.
func cmdReset(c *client, x *store.Ctx) {
	c.disableTracking()
	c.stopMonitor()
	c.discardTransaction()
	c.unsubscribeAll(false)
	c.db = 0
	c.w.Proto = 2
	c.name = ""
	c.replyMode = replyOn
	c.authed = !c.s.passwordSet()
	x.W.Simple("RESET")
}

func cmdSelect(c *client, x *store.Ctx) {
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

// cmdTime replies [unix seconds, microseconds] of the server clock
// (the wall clock's microseconds below the clock's milliseconds).
func cmdTime(c *client, x *store.Ctx) {
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

func cmdAuth(c *client, x *store.Ctx) {
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
		c.authFailed("auth")
		x.W.Error(errWrongPass)
		return
	}
	c.authed = true
	c.authFails = 0
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

// cmdHello is Valkey 8's HELLO [protover [AUTH user pass] [SETNAME
// name]], answering server "emqd", version "8.0.1" (docs/compat.md §4).
func cmdHello(c *client, x *store.Ctx) {
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
			// Checked where it is read, before AUTH and NOAUTH, as
			// Valkey's helloCommand: a bad name fails the whole HELLO,
			// its AUTH included.
			name = argv[j+1]
			if !validName(name) {
				x.W.Error(errBadName)
				return
			}
			j++
		default:
			x.W.Error("ERR Syntax error in HELLO option '" + string(cPrefix(opt, -1)) + "'")
			return
		}
	}
	if user != nil {
		if !c.checkPassword(user, pass) {
			c.authFailed("hello")
			x.W.Error(errWrongPass)
			return
		}
		c.authed = true
		c.authFails = 0
	}
	if c.authRequired() {
		x.W.Error("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
		return
	}
	if name != nil {
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
	w.BulkString(valkeyVersion)
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

func cmdFunctionFlush(c *client, x *store.Ctx) {
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

// cmdShutdown closes the server (SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE]
// [ABORT]): no reply, the connection closes, Close runs the close hooks
// (the append-only file is flushed there).
func cmdShutdown(c *client, x *store.Ctx) {
	abort, force := false, false
	nosave, save := false, false
	mode := int32(0)
	for _, a := range x.Argv[1:] {
		switch strings.ToLower(string(a)) {
		case "nosave":
			mode, nosave = -1, true
		case "save":
			mode, save = 1, true
		case "now":
		case "force":
			force = true
		case "abort":
			abort = true
		default:
			x.W.Error(store.ErrSyntax)
			return
		}
	}
	// NOSAVE with SAVE is refused and the server goes on, as Valkey's
	// shutdownCommand does (the last word does not win).
	if nosave && save {
		x.W.Error(store.ErrSyntax)
		return
	}
	if abort {
		if len(x.Argv) != 2 {
			x.W.Error(store.ErrSyntax)
			return
		}
		x.W.Error("ERR No shutdown in progress.")
		return
	}
	// The final save comes first, as in Valkey's prepareForShutdown: when
	// it fails (without FORCE) the server goes on and SHUTDOWN answers
	// Valkey's error.
	if r := c.s.rdb; r != nil {
		if err := r.finalSaveLocked(mode, force); err != nil {
			x.W.Error("ERR Errors trying to SHUTDOWN. Check logs.")
			return
		}
	}
	c.s.shutdownSave.Store(mode)
	c.closeAfter = true
	c.shutdownAfter = true // once the batch's earlier replies are written
}

// cmdCluster answers every CLUSTER subcommand with Valkey's text for a
// server without cluster support (cluster-probing clients fall back to a
// single node when the text contains CLUSTER, docs/compat.md §2.3).
func cmdCluster(c *client, x *store.Ctx) {
	x.W.Error("ERR This instance has cluster support disabled")
}

func cmdBGRewriteAOF(c *client, x *store.Ctx) {
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
