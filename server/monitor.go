package server

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/emqd/emqd/internal/store"
	"github.com/emqd/emqd/internal/store/rdb"
)

// The server commands tools reach (docs/compat.md §2.7): MONITOR, ROLE,
// MODULE LIST, DEBUG SET-ACTIVE-EXPIRE. Replies and texts are Valkey
// 8.0.1's.

func monitorCommands() []serverCmd {
	return []serverCmd{
		{spec: store.NewCommand("monitor", 1, nil, store.FlagAdmin, store.FlagNoScript, store.FlagLoading, store.FlagStale), run: cmdMonitor},
		{spec: store.NewCommand("role", 1, nil, store.FlagNoScript, store.FlagLoading, store.FlagStale, store.FlagFast, store.FlagSentinel), run: cmdRole},
		{spec: store.NewCommand("module", -2, nil), subs: []serverCmd{
			{spec: store.NewCommand("module|list", 2, nil, store.FlagAdmin, store.FlagNoScript), run: cmdModuleList},
			{spec: store.NewCommand("module|help", 2, nil, store.FlagLoading, store.FlagStale), run: helpReply("MODULE",
				"LIST", "    Return a list of loaded modules.")},
		}},
		latencyCommands(),
		{spec: store.NewCommand("lolwut", -1, nil, store.FlagReadonly, store.FlagFast), run: cmdLolwut},
		{spec: store.NewCommand("debug", -2, nil, store.FlagAdmin, store.FlagNoScript, store.FlagLoading, store.FlagStale), run: cmdDebug},
	}
}

// cmdMonitor is Valkey's monitorCommand: the client receives every command
// run from then on, in feedMonitors' format, until RESET or it goes. Inside
// MULTI (a client expecting one reply per command) it is refused; a second
// MONITOR answers nothing.
func cmdMonitor(c *client, x *store.Ctx) {
	if c.execing {
		x.W.Error("ERR MONITOR isn't allowed for DENY BLOCKING client")
		return
	}
	if c.monitor {
		return
	}
	c.monitor = true
	c.s.monitors = append(c.s.monitors, c)
	x.W.OK()
}

// stopMonitor takes c out of MONITOR mode (RESET, a disconnect; store
// lock held).
func (c *client) stopMonitor() {
	if !c.monitor {
		return
	}
	c.monitor = false
	ms := c.s.monitors
	for i, m := range ms {
		if m == c {
			c.s.monitors = append(ms[:i:i], ms[i+1:]...)
			break
		}
	}
}

// feedMonitors sends a command that ran to every monitor, as Valkey's
// replicationFeedMonitors: "+<sec>.<usec> [<db> <addr>] "arg" ...", each
// argument escaped as sdscatrepr does, unix-socket clients shown as
// "unix:<path>", AUTH's arguments and HELLO's AUTH pair as "(redacted)".
// Admin commands (CONFIG, DEBUG, MONITOR, ...) are not shown, as in Valkey.
// Store lock held.
func (s *Server) feedMonitors(c *client, cmd *command, argv [][]byte) {
	if cmd.flags&store.FlagAdmin != 0 || (cmd.parent != nil && cmd.parent.flags&store.FlagAdmin != 0) {
		return
	}
	now := time.Now()
	b := make([]byte, 0, 64)
	b = append(b, '+')
	b = strconv.AppendInt(b, now.Unix(), 10)
	b = append(b, '.')
	us := strconv.Itoa(now.Nanosecond() / 1000)
	b = append(b, "000000"[len(us):]...)
	b = append(b, us...)
	b = append(b, " ["...)
	b = strconv.AppendInt(b, int64(c.db), 10)
	b = append(b, ' ')
	if u, ok := c.nc.LocalAddr().(*net.UnixAddr); ok {
		b = append(b, "unix:"...)
		b = append(b, u.Name...)
	} else {
		b = append(b, c.addr...)
	}
	b = append(b, "] "...)
	base := cmd.name
	if cmd.parent != nil {
		base = cmd.parent.name
	}
	for i, a := range argv {
		if i > 0 {
			b = append(b, ' ')
		}
		if redacted(base, argv, i) {
			b = append(b, `"(redacted)"`...)
			continue
		}
		b = appendRepr(b, a)
	}
	b = append(b, "\r\n"...)
	t := &s.frames
	for _, m := range s.monitors {
		out := t.sink(m)
		out.Raw(b)
		t.deliver(m, out)
	}
}

// redacted reports whether argument i of a command is hidden from MONITOR:
// every argument of AUTH, and the username and password after HELLO's
// AUTH (Valkey's redactClientCommandArgument).
func redacted(base string, argv [][]byte, i int) bool {
	switch base {
	case "auth":
		return i > 0
	case "hello":
		for j := 2; j+2 < len(argv); j++ {
			if strings.EqualFold(string(argv[j]), "auth") {
				return i == j+1 || i == j+2
			}
		}
	}
	return false
}

// appendRepr is Valkey's sdscatrepr: the bytes in double quotes, with \\,
// \", \n, \r, \t, \a, \b escaped and other unprintable bytes as \xhh.
func appendRepr(b, s []byte) []byte {
	b = append(b, '"')
	for _, ch := range s {
		switch ch {
		case '\\', '"':
			b = append(b, '\\', ch)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\a':
			b = append(b, '\\', 'a')
		case '\b':
			b = append(b, '\\', 'b')
		default:
			if ch >= 0x20 && ch < 0x7f {
				b = append(b, ch)
			} else {
				const hex = "0123456789abcdef"
				b = append(b, '\\', 'x', hex[ch>>4], hex[ch&15])
			}
		}
	}
	return append(b, '"')
}

// cmdRole is ROLE for a primary without replicas, as Valkey answers it:
// ["master", 0, []] (the replication offset: emqd has no replication).
func cmdRole(c *client, x *store.Ctx) {
	x.W.Array(3)
	x.W.BulkString("master")
	x.W.Int(0)
	x.W.Array(0)
}

// cmdModuleList is MODULE LIST: emqd loads no modules.
func cmdModuleList(c *client, x *store.Ctx) { x.W.Array(0) }

// errDebugNotAllowed is Valkey's refusal of DEBUG while
// enable-debug-command does not allow the client.
const errDebugNotAllowed = "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", " +
	"you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server."

// cmdDebug is DEBUG, allowed as enable-debug-command says (Valkey's
// protected command): SET-ACTIVE-EXPIRE 0|1 holds or resumes the active
// expiry cycle (keys then expire only when touched), HELP. Other
// subcommands are Valkey's unknown-subcommand error.
func cmdDebug(c *client, x *store.Ctx) {
	if !c.ctx.DebugEnabled {
		x.W.Error(errDebugNotAllowed)
		return
	}
	sub := strings.ToLower(string(x.Argv[1]))
	switch {
	case sub == "help" && len(x.Argv) == 2:
		helpReply("DEBUG",
			"OBJECT <key>", "    Show low level info about the key and associated value.",
			"SLEEP <seconds>", "    Stop the server for <seconds> (a decimal number).",
			"SET-ACTIVE-EXPIRE <0|1>",
			"    Setting it to 0 disables expiring keys in background when they are not accessed (otherwise the Redis behavior). Setting it to 1 reenables back the default.")(c, x)
	case sub == "object" && len(x.Argv) == 3:
		// DEBUG OBJECT <key>: Valkey's line; serializedlength is the
		// RDB encoding's length (the DUMP payload less its type byte and
		// footer), lru the LRU clock (seconds, 24 bits) at the last access;
		// Valkey 8.0.1 adds the LFU fields (emqd keeps no LFU counter).
		v := x.DB.Peek(string(x.Argv[2]))
		if v == nil {
			x.W.Error("ERR no such key")
			return
		}
		idle := c.s.store.IdleMs(v) / 1000
		dump := rdb.Dump(rdb.Capture(v), c.s.dumpCompress.Load())
		last := x.NowMs/1000 - idle
		x.W.Simple(fmt.Sprintf("Value at:%p refcount:1 encoding:%s serializedlength:%d lru:%d lru_seconds_idle:%d lfu_freq:0 lfu_access_time_minutes:%d",
			v, v.Encoding(), len(dump)-11, last&(1<<24-1), idle, (last/60)&(1<<16-1)))
	case sub == "sleep" && len(x.Argv) == 3:
		// DEBUG SLEEP <seconds>: a float, as Valkey's strtod; the server
		// does nothing else meanwhile (the store lock is held).
		secs, err := strconv.ParseFloat(string(x.Argv[2]), 64)
		if err == nil && secs > 0 {
			time.Sleep(time.Duration(min(secs, 3600) * float64(time.Second)))
		}
		x.W.OK()
	case sub == "set-active-expire" && len(x.Argv) == 3:
		// Valkey reads the flag with atoi: anything but a non-zero
		// number holds the cycle.
		c.s.exp.held.Store(cAtoi(x.Argv[2]) == 0)
		x.W.OK()
	default:
		x.W.Error("ERR unknown subcommand or wrong number of arguments for '" + string(cPrefix(x.Argv[1], 128)) + "'. Try DEBUG HELP.")
	}
}
