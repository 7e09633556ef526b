package server

import (
	"strconv"
	"time"

	"github.com/emqd/emqd/internal/num"
	"github.com/emqd/emqd/internal/store"
)

// SLOWLOG (Valkey 8 slowlog.c): commands that ran at least
// slowlog-log-slower-than microseconds (negative: never; 0: every
// command), newest first, at most slowlog-max-len entries. An entry keeps
// at most 32 arguments (the last one then says how many more there were)
// and at most 128 bytes of each argument.

const (
	slowlogMaxArgc   = 32
	slowlogMaxString = 128
)

type slowEntry struct {
	id, ts, usec int64
	argv         [][]byte
	addr, name   string
}

type slowlog struct {
	entries []slowEntry // newest first
	nextID  int64
}

// slowlogRecord adds the command to the slowlog when it was slow enough
// (store lock).
func (s *Server) slowlogRecord(c *client, argv [][]byte, dur time.Duration) {
	th := s.slowlogSlower.Load()
	if th < 0 || dur.Microseconds() < th {
		return
	}
	max := int(s.slowlogMax.Load())
	if max <= 0 {
		s.slowlog.entries = s.slowlog.entries[:0]
		return
	}
	n := len(argv)
	if n > slowlogMaxArgc {
		n = slowlogMaxArgc
	}
	e := slowEntry{id: s.slowlog.nextID, ts: time.Now().Unix(), usec: dur.Microseconds(), addr: c.addr, name: c.name}
	s.slowlog.nextID++
	e.argv = make([][]byte, n)
	for j := 0; j < n; j++ {
		if j == n-1 && n < len(argv) {
			e.argv[j] = []byte("... (" + strconv.Itoa(len(argv)-slowlogMaxArgc+1) + " more arguments)")
			break
		}
		a := argv[j]
		if len(a) > slowlogMaxString {
			b := make([]byte, 0, slowlogMaxString+32)
			b = append(b, a[:slowlogMaxString]...)
			b = append(b, "... ("+strconv.Itoa(len(a)-slowlogMaxString)+" more bytes)"...)
			e.argv[j] = b
		} else {
			e.argv[j] = append([]byte(nil), a...)
		}
	}
	l := &s.slowlog.entries
	*l = append(*l, slowEntry{})
	copy((*l)[1:], *l)
	(*l)[0] = e
	if len(*l) > max {
		*l = (*l)[:max]
	}
}

func slowlogSubcommands() []serverCmd {
	return []serverCmd{
		{spec: store.NewCommand("slowlog|get", -2, nil, store.FlagAdmin, store.FlagLoading, store.FlagStale), run: cmdSlowlogGet},
		{spec: store.NewCommand("slowlog|len", 2, nil, store.FlagAdmin, store.FlagLoading, store.FlagStale), run: cmdSlowlogLen},
		{spec: store.NewCommand("slowlog|reset", 2, nil, store.FlagAdmin, store.FlagLoading, store.FlagStale), run: cmdSlowlogReset},
		{spec: store.NewCommand("slowlog|help", 2, nil, store.FlagLoading, store.FlagStale), run: helpReply("SLOWLOG",
			"GET [<count>]", "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
			"    Entries are made of:",
			"    id, timestamp, time in microseconds, arguments array, client IP and port,",
			"    client name",
			"LEN", "    Return the length of the slowlog.",
			"RESET", "    Reset the slowlog.")},
	}
}

func cmdSlowlogGet(c *client, x *store.Ctx) {
	count := int64(10)
	if len(x.Argv) > 3 {
		x.W.Error(arityError("slowlog|get"))
		return
	}
	if len(x.Argv) == 3 {
		n, ok := num.ParseInt(x.Argv[2])
		if !ok || n < -1 {
			x.W.Error("ERR count should be greater than or equal to -1")
			return
		}
		count = n
	}
	l := c.s.slowlog.entries
	if count == -1 || count > int64(len(l)) {
		count = int64(len(l))
	}
	w := x.W
	w.Array(int(count))
	for _, e := range l[:count] {
		w.Array(6)
		w.Int(e.id)
		w.Int(e.ts)
		w.Int(e.usec)
		w.Array(len(e.argv))
		for _, a := range e.argv {
			w.Bulk(a)
		}
		w.BulkString(e.addr)
		w.BulkString(e.name)
	}
}

func cmdSlowlogLen(c *client, x *store.Ctx) { x.W.Int(int64(len(c.s.slowlog.entries))) }

func cmdSlowlogReset(c *client, x *store.Ctx) {
	c.s.slowlog.entries = c.s.slowlog.entries[:0]
	x.W.OK()
}
