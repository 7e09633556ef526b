package server

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/emqd/emqd/internal/num"
	"github.com/emqd/emqd/internal/store"
)

// CLIENT subcommands (docs/compat.md §1.5; TRACKING, CACHING, GETREDIR and
// TRACKINGINFO: §1.9). NO-EVICT, NO-TOUCH, CAPA and MAINT_NOTIFICATIONS are
// absent: they get "unknown subcommand".
func clientSubcommands() []serverCmd {
	return append(clientPauseCommands(), []serverCmd{
		{spec: store.NewCommand("client|id", 2, nil, store.FlagNoScript, store.FlagLoading, store.FlagStale), run: cmdClientID},
		{spec: store.NewCommand("client|getname", 2, nil, store.FlagNoScript, store.FlagLoading, store.FlagStale), run: cmdClientGetName},
		{spec: store.NewCommand("client|setname", 3, nil, store.FlagNoScript, store.FlagLoading, store.FlagStale), run: cmdClientSetName},
		{spec: store.NewCommand("client|info", 2, nil, store.FlagNoScript, store.FlagLoading, store.FlagStale), run: cmdClientInfo},
		{spec: store.NewCommand("client|list", -2, nil, store.FlagAdmin, store.FlagNoScript, store.FlagLoading, store.FlagStale), run: cmdClientList},
		{spec: store.NewCommand("client|setinfo", 4, nil, store.FlagNoScript, store.FlagLoading, store.FlagStale), run: cmdClientSetInfo},
		// NO_MULTI as in Valkey 9.0 (docs/compat.md §2.6): inside MULTI,
		// Valkey 8.0 queues it and EXEC's array then announces more
		// replies than it sends.
		{spec: store.NewCommand("client|reply", 3, nil, store.FlagNoScript, store.FlagLoading, store.FlagStale, store.FlagNoMulti), run: cmdClientReply},
		{spec: store.NewCommand("client|kill", -3, nil, store.FlagAdmin, store.FlagNoScript, store.FlagLoading, store.FlagStale), run: cmdClientKill},
		{spec: store.NewCommand("client|unblock", -3, nil, store.FlagAdmin, store.FlagNoScript, store.FlagLoading, store.FlagStale), run: cmdClientUnblock},
		{spec: store.NewCommand("client|tracking", -3, nil, store.FlagNoScript, store.FlagLoading, store.FlagStale), run: cmdClientTracking},
		{spec: store.NewCommand("client|caching", 3, nil, store.FlagNoScript, store.FlagLoading, store.FlagStale), run: cmdClientCaching},
		{spec: store.NewCommand("client|getredir", 2, nil, store.FlagNoScript, store.FlagLoading, store.FlagStale), run: cmdClientGetRedir},
		{spec: store.NewCommand("client|trackinginfo", 2, nil, store.FlagNoScript, store.FlagLoading, store.FlagStale), run: cmdClientTrackingInfo},
		{spec: store.NewCommand("client|help", 2, nil, store.FlagLoading, store.FlagStale), run: helpReply("CLIENT",
			"CACHING (YES|NO)", "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
			"GETREDIR", "    Return the client ID we are redirecting to when tracking is enabled.",
			"GETNAME", "    Return the name of the current connection.",
			"ID", "    Return the ID of the current connection.",
			"INFO", "    Return information about the current client connection.",
			"KILL <ip:port>", "    Kill connection made from <ip:port>.",
			"KILL <option> <value> [<option> <value> [...]]", "    Kill connections. Options are: ID <client-id>, ADDR <ip:port>, LADDR <ip:port>, SKIPME (YES|NO).",
			"LIST [TYPE (NORMAL|MASTER|REPLICA|PUBSUB)] [ID <client-id> [<client-id> ...]]", "    Return information about client connections.",
			"REPLY (ON|OFF|SKIP)", "    Control the replies sent to the current connection.",
			"SETNAME <name>", "    Assign the name <name> to the current connection.",
			"SETINFO <option> <value>", "    Set client meta attr. Options are: LIB-NAME, LIB-VER.",
			"UNBLOCK <clientid> [TIMEOUT|ERROR]", "    Unblock the specified blocked client.",
			"TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
			"         [OPTIN] [OPTOUT] [NOLOOP]",
			"    Control server assisted client side caching.",
			"TRACKINGINFO", "    Report tracking status for the current connection.",
			"PAUSE <timeout> [WRITE|ALL]", "    Suspend all, or just write, clients for <timeout> milliseconds.",
			"UNPAUSE", "    Stop the current client pause, resuming traffic.",
			"NO-EVICT (ON|OFF)", "    Protect current client connection from eviction.",
			"NO-TOUCH (ON|OFF)", "    Will not touch LRU/LFU stats when this mode is on.")},
	}...)
}

func cmdClientID(c *client, x *store.Ctx) { x.W.Int(c.id) }

func cmdClientGetName(c *client, x *store.Ctx) {
	if c.name == "" {
		x.W.Nil()
		return
	}
	x.W.BulkString(c.name)
}

func cmdClientSetName(c *client, x *store.Ctx) {
	name := x.Argv[2]
	if !validName(name) {
		x.W.Error(errBadName)
		return
	}
	c.name = string(name)
	x.W.OK()
}

func cmdClientSetInfo(c *client, x *store.Ctx) {
	attr, val := x.Argv[2], x.Argv[3]
	var dest *string
	switch strings.ToLower(string(attr)) {
	case "lib-name":
		dest = &c.libName
	case "lib-ver":
		dest = &c.libVer
	default:
		x.W.Error("ERR Unrecognized option '" + string(cPrefix(attr, -1)) + "'")
		return
	}
	if !validName(val) {
		x.W.Error("ERR " + string(cPrefix(attr, -1)) + " cannot contain spaces, newlines or special characters.")
		return
	}
	*dest = string(val)
	x.W.OK()
}

func cmdClientReply(c *client, x *store.Ctx) {
	switch strings.ToLower(string(x.Argv[2])) {
	case "on":
		c.replyMode = replyOn
		x.W.OK()
	case "off":
		c.replyMode = replyOff
	case "skip":
		if c.replyMode != replyOff {
			c.replyMode = replySkipNext
		}
	default:
		x.W.Error(store.ErrSyntax)
	}
}

func cmdClientInfo(c *client, x *store.Ctx) {
	x.W.Verbatim(c.infoLine() + "\n")
}

// cmdClientList is CLIENT LIST [TYPE type] [ID id ...].
func cmdClientList(c *client, x *store.Ctx) {
	argv := x.Argv
	var out strings.Builder
	switch {
	case len(argv) == 2:
		for _, cl := range c.s.sortedClients() {
			out.WriteString(cl.infoLine())
			out.WriteByte('\n')
		}
	case len(argv) > 3 && strings.EqualFold(string(argv[2]), "type"):
		switch strings.ToLower(string(argv[3])) {
		case "normal", "pubsub":
			pubsub := strings.EqualFold(string(argv[3]), "pubsub")
			for _, cl := range c.s.sortedClients() {
				if (cl.subscriptions() > 0) != pubsub {
					continue
				}
				out.WriteString(cl.infoLine())
				out.WriteByte('\n')
			}
		case "master", "replica", "slave":
		default:
			x.W.Error("ERR Unknown client type '" + string(cPrefix(argv[3], -1)) + "'")
			return
		}
	case len(argv) > 3 && strings.EqualFold(string(argv[2]), "id"):
		var ids []int64
		for _, a := range argv[3:] {
			id, ok := num.ParseInt(a)
			if !ok {
				x.W.Error("ERR Invalid client ID")
				return
			}
			ids = append(ids, id)
		}
		c.s.clientsMu.Lock()
		var sel []*client
		for _, id := range ids {
			if cl := c.s.clients[id]; cl != nil {
				sel = append(sel, cl)
			}
		}
		c.s.clientsMu.Unlock()
		for _, cl := range sel {
			out.WriteString(cl.infoLine())
			out.WriteByte('\n')
		}
	default:
		x.W.Error(store.ErrSyntax)
		return
	}
	x.W.Verbatim(out.String())
}

// cmdClientKill is CLIENT KILL addr | CLIENT KILL [ID id] [ADDR addr]
// [LADDR addr] [TYPE type] [USER name] [SKIPME yes|no] [MAXAGE seconds]...
// (Valkey's networking.c, CLIENT KILL page): every filter is parsed, left
// to right, before any client is looked at, so a bad filter anywhere is
// refused (ERR syntax error, or the first bad value's error) and kills
// nothing. MAXAGE s keeps the clients connected for at least s whole
// seconds on the server clock (age as in CLIENT LIST); s must be > 0.
// TYPE master|replica|slave matches no client (emqd has no
// replication): the reply is :0 once the rest has parsed.
func cmdClientKill(c *client, x *store.Ctx) {
	argv := x.Argv
	if len(argv) == 3 {
		addr := string(argv[2])
		for _, cl := range c.s.sortedClients() {
			if cl.addr == addr {
				cl.kill()
				x.W.OK()
				return
			}
		}
		x.W.Error("ERR No such client")
		return
	}
	var id, maxAge int64
	var addr, laddr, ktype string
	skipme := true
	for i := 2; i < len(argv); i += 2 {
		if i+1 >= len(argv) {
			x.W.Error(store.ErrSyntax)
			return
		}
		v := argv[i+1]
		switch strings.ToLower(string(argv[i])) {
		case "id":
			n, ok := num.ParseInt(v)
			if !ok || n <= 0 {
				x.W.Error("ERR client-id should be greater than 0")
				return
			}
			id = n
		case "maxage":
			n, ok := num.ParseInt(v)
			if !ok {
				x.W.Error("ERR maxage is not an integer or out of range")
				return
			}
			if n <= 0 {
				x.W.Error("ERR maxage should be greater than 0")
				return
			}
			maxAge = n
		case "addr":
			addr = string(v)
		case "laddr":
			laddr = string(v)
		case "user":
			// Every client is the default user (no ACL users): it filters
			// nothing; any other name is Valkey's unknown-user refusal.
			if string(v) != "default" {
				x.W.Error("ERR No such user '" + string(cPrefix(v, -1)) + "'")
				return
			}
		case "skipme":
			switch strings.ToLower(string(v)) {
			case "yes":
				skipme = true
			case "no":
				skipme = false
			default:
				x.W.Error(store.ErrSyntax)
				return
			}
		case "type":
			t := strings.ToLower(string(v))
			switch t {
			case "normal", "pubsub", "master", "replica", "slave":
			default:
				x.W.Error("ERR Unknown client type '" + string(v) + "'")
				return
			}
			ktype = t
		default:
			x.W.Error(store.ErrSyntax)
			return
		}
	}
	if ktype != "" && ktype != "normal" && ktype != "pubsub" {
		x.W.Int(0)
		return
	}
	nowSec := c.s.clock.NowMs() / 1000
	killed := int64(0)
	for _, cl := range c.s.sortedClients() {
		if (id != 0 && cl.id != id) || (addr != "" && cl.addr != addr) || (laddr != "" && cl.laddr != laddr) {
			continue
		}
		// A client an earlier kill closed is gone, as in Valkey (which
		// frees it at once), even while its goroutine has not yet left
		// the table: an asleep connection's cleanup starts on a new
		// goroutine (client.resume), so a second CLIENT KILL counted it
		// again (TestClientKillMaxAge, 1 in a clean-clone CI run).
		if cl != c && cl.killed.Load() {
			continue
		}
		if ktype != "" && (cl.subscriptions() > 0) != (ktype == "pubsub") {
			continue
		}
		if cl == c && skipme {
			continue
		}
		if maxAge != 0 && nowSec-cl.createdMs/1000 < maxAge {
			continue
		}
		if cl == c {
			c.closeAfter = true
		} else {
			cl.kill()
		}
		killed++
	}
	x.W.Int(killed)
}

// cmdClientUnblock is CLIENT UNBLOCK client-id [TIMEOUT|ERROR]
// (Valkey's networking.c): a client parked by EMQ.CLAIM ... BLOCK gets its
// timeout reply (a nil array; it took no job) or, with ERROR, the error
// `UNBLOCKED client unblocked via CLIENT UNBLOCK`. Reply 1 when the client
// was blocked, else 0. It runs under the store lock, so a parked claim is
// either served or unblocked, never both.
func cmdClientUnblock(c *client, x *store.Ctx) {
	argv := x.Argv
	if len(argv) > 4 {
		x.W.Error("ERR unknown subcommand or wrong number of arguments for '" + string(argv[1]) + "'. Try CLIENT HELP.")
		return
	}
	withError := false
	if len(argv) == 4 {
		switch strings.ToLower(string(argv[3])) {
		case "timeout":
		case "error":
			withError = true
		default:
			x.W.Error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
			return
		}
	}
	id, ok := num.ParseInt(argv[2])
	if !ok {
		x.W.Error(store.ErrNotInteger)
		return
	}
	c.s.clientsMu.Lock()
	target := c.s.clients[id]
	c.s.clientsMu.Unlock()
	if target == nil || target.park == nil || target.park.elems == nil {
		x.W.Int(0)
		return
	}
	p := target.park
	c.s.blk.remove(p)
	if withError {
		target.aw.Error("UNBLOCKED client unblocked via CLIENT UNBLOCK")
	} else {
		target.aw.NilArray()
	}
	target.unpark()
	x.W.Int(1)
}

// kill closes another client's connection (its goroutine cleans up).
func (c *client) kill() {
	c.killed.Store(true)
	c.closeConn()
}

// sortedClients lists the connected clients by id.
func (s *Server) sortedClients() []*client {
	s.clientsMu.Lock()
	out := make([]*client, 0, len(s.clients))
	for _, c := range s.clients {
		out = append(out, c)
	}
	s.clientsMu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// infoLine is one CLIENT LIST line in Valkey 8's field order (networking.c
// catClientInfoString). Called under the store lock.
func (c *client) infoLine() string {
	now := time.Now()
	flags := ""
	if c.subscriptions() > 0 {
		flags += "P"
	}
	if c.inMulti {
		flags += "x"
	}
	if c.park != nil {
		flags += "b"
	}
	redir := int64(-1)
	if ct := c.trk; ct != nil && ct.on {
		flags += "t"
		if ct.brokenRedir {
			flags += "R"
		}
		if ct.bcast {
			flags += "B"
		}
		redir = ct.redirect
	}
	var nsub, npsub int64
	if c.sub != nil {
		nsub, npsub = int64(len(c.sub.channels)), int64(len(c.sub.patterns))
	}
	if flags == "" {
		flags = "N"
	}
	multi := -1
	if c.inMulti {
		multi = len(c.queue)
	}
	cmd := c.cmdName
	if cmd == "" {
		cmd = "NULL"
	}
	var b strings.Builder
	f := func(k, v string) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(v)
	}
	i := func(k string, v int64) { f(k, strconv.FormatInt(v, 10)) }
	i("id", c.id)
	f("addr", c.addr)
	f("laddr", c.laddr)
	i("fd", int64(c.fd))
	f("name", c.name)
	i("age", int64(now.Sub(c.created)/time.Second))
	i("idle", int64(now.Sub(c.lastCmd)/time.Second))
	f("flags", flags)
	i("db", int64(c.db))
	i("sub", nsub)
	i("psub", npsub)
	i("ssub", 0)
	i("multi", int64(multi))
	i("watch", int64(c.watcher.WatchCount()))
	i("qbuf", c.qbuf.Load())
	i("qbuf-free", 0)
	i("argv-mem", c.argvMem.Load())
	i("multi-mem", int64(c.queueBytes))
	// Output: omem is the replies not yet taken by the kernel; oll counts
	// them in Valkey's 16 KiB reply blocks (PROTO_REPLY_CHUNK_BYTES), obl
	// (Valkey's fixed buffer) stays 0. rbs is the read buffer held (16 KiB
	// while reading, 0 idle). tot-mem is the client's memory
	// (client.memoryUsage: its state, rbs, qbuf, argv-mem, multi-mem and
	// omem).
	omem := c.outputMemory()
	i("rbs", c.rbuf.Load())
	i("rbp", 0)
	i("obl", 0)
	i("oll", (omem+16383)/16384)
	i("omem", omem)
	i("tot-mem", c.memoryUsage())
	f("events", "r")
	f("cmd", cmd)
	f("user", "default")
	i("redir", redir)
	i("resp", int64(c.w.Proto))
	f("lib-name", c.libName)
	f("lib-ver", c.libVer)
	i("tot-net-in", c.netIn.Load())
	i("tot-net-out", c.netOut.Load())
	i("tot-cmds", c.totCmds)
	return b.String()
}
