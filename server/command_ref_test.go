package server

import (
	"bytes"
	"errors"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/emqd/emqd/internal/cmdmeta"
	"github.com/emqd/emqd/internal/store"
	"github.com/emqd/emqd/internal/valkeyref"
)

// The COMMAND replies compared byte for byte with a real Valkey 8.0.1
// (EMQD_VALKEY_DIR; docs/compat.md §1.5): COMMAND INFO, COMMAND DOCS,
// COMMAND GETKEYS, COMMAND GETKEYSANDFLAGS and COMMAND LIST (with every
// FILTERBY) of every command and subcommand both servers have, in RESP2
// and RESP3. Two things are not byte-equal by design and are normalised on
// both sides: the subcommands of a container are only those emqd has, and
// their order (Valkey's is its dict's hash order, emqd's by name).

// rawNode is one RESP value with its exact bytes.
type rawNode struct {
	typ  byte
	raw  string // the value's bytes, header and children included
	text string // a scalar's payload
	kids []*rawNode
}

var errShort = errors.New("incomplete reply")

func parseRaw(b string) (*rawNode, int, error) {
	i := strings.Index(b, "\r\n")
	if i < 0 {
		return nil, 0, errShort
	}
	typ, body, pos := b[0], b[1:i], i+2
	n := &rawNode{typ: typ}
	switch typ {
	case '+', '-', ':', '_', ',', '#', '(':
		n.text = body
	case '$', '=', '!':
		l, err := strconv.Atoi(body)
		if err != nil {
			return nil, 0, err
		}
		if l >= 0 {
			if len(b) < pos+l+2 {
				return nil, 0, errShort
			}
			n.text = b[pos : pos+l]
			pos += l + 2
		}
	case '*', '~', '>', '%', '|':
		l, err := strconv.Atoi(body)
		if err != nil {
			return nil, 0, err
		}
		if typ == '%' || typ == '|' {
			l *= 2
		}
		for k := 0; k < l; k++ {
			kid, used, err := parseRaw(b[pos:])
			if err != nil {
				return nil, 0, err
			}
			n.kids = append(n.kids, kid)
			pos += used
		}
	default:
		return nil, 0, errors.New("bad RESP type " + strconv.Quote(string(typ)))
	}
	n.raw = b[:pos]
	return n, pos, nil
}

// refConn is a raw RESP connection that returns whole parsed replies.
type refConn struct {
	t   *testing.T
	nc  net.Conn
	buf []byte
}

func dialRef(t *testing.T, addr string) *refConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &refConn{t: t, nc: nc}
}

func (c *refConn) do(args ...string) *rawNode {
	c.t.Helper()
	if _, err := c.nc.Write(encode(args...)); err != nil {
		c.t.Fatal(err)
	}
	chunk := make([]byte, 1<<16)
	for {
		if len(c.buf) > 0 {
			n, used, err := parseRaw(string(c.buf))
			if err == nil {
				c.buf = c.buf[used:]
				return n
			}
			if err != errShort {
				c.t.Fatalf("%q: %v", args, err)
			}
		}
		c.nc.SetReadDeadline(time.Now().Add(60 * time.Second))
		k, err := c.nc.Read(chunk)
		if err != nil {
			c.t.Fatalf("%q: %v", args, err)
		}
		c.buf = append(c.buf, chunk[:k]...)
	}
}

// canonInfo renders a COMMAND INFO entry with its subcommands kept to
// those in keep (all when keep is nil) and sorted by their bytes.
func canonInfo(n *rawNode, keep map[string]bool) string {
	if n.typ != '*' || len(n.kids) != 10 {
		return n.raw
	}
	var b strings.Builder
	b.WriteString("*10\r\n")
	for _, k := range n.kids[:9] {
		b.WriteString(k.raw)
	}
	subs := n.kids[9]
	if len(subs.kids) == 0 {
		b.WriteString(subs.raw)
		return b.String()
	}
	var parts []string
	for _, s := range subs.kids {
		if keep == nil || keep[s.kids[0].text] {
			parts = append(parts, canonInfo(s, nil))
		}
	}
	sort.Strings(parts)
	b.WriteString("*" + strconv.Itoa(len(parts)) + "\r\n")
	b.WriteString(strings.Join(parts, ""))
	return b.String()
}

// canonDocs renders a COMMAND DOCS map of one command likewise: its
// "subcommands" map kept to keep and sorted.
func canonDocs(n *rawNode, keep map[string]bool) string {
	var b strings.Builder
	b.WriteString(n.raw[:strings.Index(n.raw, "\r\n")+2])
	for i := 0; i+1 < len(n.kids); i += 2 {
		k, v := n.kids[i], n.kids[i+1]
		b.WriteString(k.raw)
		if k.text != "subcommands" {
			b.WriteString(v.raw)
			continue
		}
		var parts []string
		for j := 0; j+1 < len(v.kids); j += 2 {
			if keep == nil || keep[v.kids[j].text] {
				parts = append(parts, v.kids[j].raw+canonDocs(v.kids[j+1], nil))
			}
		}
		sort.Strings(parts)
		hdr := "%"
		if v.typ == '*' {
			hdr = "*"
		}
		n := len(parts)
		if v.typ == '*' {
			n *= 2
		}
		b.WriteString(hdr + strconv.Itoa(n) + "\r\n" + strings.Join(parts, ""))
	}
	return b.String()
}

func names(n *rawNode) []string {
	var out []string
	for _, k := range n.kids {
		out = append(out, k.text)
	}
	sort.Strings(out)
	return out
}

func TestCommandRepliesMatchValkey(t *testing.T) {
	ref := valkeyref.Start(t)
	s := startServer(t, nil, nil)
	for _, proto := range []string{"2", "3"} {
		t.Run("RESP"+proto, func(t *testing.T) {
			e, v := dialRef(t, s.Addr()), dialRef(t, ref.Addr)
			e.do("HELLO", proto)
			v.do("HELLO", proto)
			valkeyHas := map[string]bool{}
			for _, n := range names(v.do("COMMAND", "LIST")) {
				valkeyHas[n] = true
			}
			ours := names(e.do("COMMAND", "LIST"))
			emqdHas := map[string]bool{}
			var shared []string
			for _, n := range ours {
				emqdHas[n] = true
				if valkeyHas[n] {
					shared = append(shared, n)
				}
			}
			if len(shared) < 150 {
				t.Fatalf("only %d shared commands: %v", len(shared), shared)
			}
			subsOf := func(name string) map[string]bool {
				keep := map[string]bool{}
				for _, n := range shared {
					if strings.HasPrefix(n, name+"|") {
						keep[n] = true
					}
				}
				return keep
			}
			for _, name := range shared {
				got, want := e.do("COMMAND", "INFO", name), v.do("COMMAND", "INFO", name)
				if g, w := canonInfo(got.kids[0], subsOf(name)), canonInfo(want.kids[0], subsOf(name)); g != w {
					t.Errorf("COMMAND INFO %s\n emqd   %q\n valkey %q", name, g, w)
				}
				got, want = e.do("COMMAND", "DOCS", name), v.do("COMMAND", "DOCS", name)
				if len(got.kids) != 2 || len(want.kids) != 2 {
					t.Errorf("COMMAND DOCS %s: emqd %q valkey %q", name, got.raw, want.raw)
					continue
				}
				if g, w := got.kids[0].raw+canonDocs(got.kids[1], subsOf(name)), want.kids[0].raw+canonDocs(want.kids[1], subsOf(name)); g != w {
					t.Errorf("COMMAND DOCS %s\n emqd   %q\n valkey %q", name, g, w)
				}
			}
			// COMMAND LIST FILTERBY: the same shared names.
			filters := [][2]string{{"PATTERN", "*"}, {"PATTERN", "z*"}, {"PATTERN", "client|*"}, {"PATTERN", "*|*"},
				{"PATTERN", "[hz]?et"}, {"ACLCAT", "nosuch"}, {"ACLCAT", "READ"}, {"MODULE", "nosuch"}}
			for _, c := range []string{"keyspace", "read", "write", "set", "sortedset", "list", "hash", "string",
				"bitmap", "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow", "blocking",
				"dangerous", "connection", "transaction", "scripting"} {
				filters = append(filters, [2]string{"ACLCAT", c})
			}
			for _, f := range filters {
				g := names(e.do("COMMAND", "LIST", "FILTERBY", f[0], f[1]))
				w := names(v.do("COMMAND", "LIST", "FILTERBY", f[0], f[1]))
				g = slices.DeleteFunc(g, func(n string) bool { return !valkeyHas[n] })
				w = slices.DeleteFunc(w, func(n string) bool { return !emqdHas[n] })
				if !slices.Equal(g, w) {
					t.Errorf("COMMAND LIST FILTERBY %s %s\n emqd   %v\n valkey %v", f[0], f[1], g, w)
				}
			}
			// Whole replies that must be equal.
			for _, args := range [][]string{
				{"COMMAND", "INFO", "nosuch", "get", "client|nosuch", "nosuch|x", "GET"},
				{"COMMAND", "DOCS", "nosuch"}, {"COMMAND", "DOCS", "nosuch", "get", "SET"},
				{"COMMAND", "LIST", "FILTERBY", "bogus", "x"}, {"COMMAND", "LIST", "x"},
				{"COMMAND", "LIST", "FILTERBY", "pattern"}, {"COMMAND", "HELP"},
				{"COMMAND", "GETKEYS"}, {"COMMAND", "GETKEYS", "nosuch", "x"}, {"COMMAND", "GETKEYS", "ping"},
				{"COMMAND", "GETKEYS", "get"}, {"COMMAND", "GETKEYS", "client", "nosuch"},
				{"COMMAND", "GETKEYS", "config", "get", "x"},
				{"CLUSTER", "FOO"}, {"CLUSTER", "INFO", "x"}, {"CLUSTER", "HELP"}, {"CLUSTER", "KEYSLOT", "a"},
				{"CLUSTER", "SLOTS"}, {"CLUSTER"}, {"COMMAND", "GETKEYS", "CLUSTER", "INFO"}, {"COMMAND", "GETKEYS", "CLUSTER", "COUNTKEYSINSLOT", "1"},
			} {
				if g, w := e.do(args...).raw, v.do(args...).raw; g != w {
					t.Errorf("%q\n emqd   %q\n valkey %q", args, g, w)
				}
			}
			// GETKEYS and GETKEYSANDFLAGS of sample lines of every shared
			// command: its arity's worth of arguments and up to three
			// more, as names, as numbers, and mixed (numkeys at 2).
			samples := 0
			for _, name := range shared {
				m := cmdmeta.Valkey(name)
				argv0 := strings.Split(name, "|")
				lo, hi := m.Arity, m.Arity
				if m.Arity < 0 {
					lo, hi = -m.Arity, -m.Arity+3
				}
				for argc := max(lo, len(argv0)); argc <= hi; argc++ {
					for variant := 0; variant < 3; variant++ {
						line := append([]string(nil), argv0...)
						for i := len(argv0); i < argc; i++ {
							switch {
							case variant == 1, variant == 2 && i == 2:
								line = append(line, strconv.Itoa(min(i, 2)))
							case i%3 == 0 && variant == 2:
								line = append(line, "GET")
							default:
								line = append(line, "k"+strconv.Itoa(i))
							}
						}
						for _, sub := range []string{"GETKEYS", "GETKEYSANDFLAGS"} {
							args := append([]string{"COMMAND", sub}, line...)
							if g, w := e.do(args...).raw, v.do(args...).raw; g != w {
								t.Errorf("%q\n emqd   %q\n valkey %q", args, g, w)
							}
							samples++
						}
					}
				}
			}
			extra := [][]string{
				{"ZUNIONSTORE", "dst", "2", "a", "b"}, {"ZUNIONSTORE", "dst", "x", "a", "b"},
				{"ZUNIONSTORE", "dst", "5", "a", "b"}, {"ZUNIONSTORE", "dst", "-1", "a", "b"},
				{"ZUNIONSTORE", "dst", "0", "a"}, {"ZUNIONSTORE", "dst", "2x", "a", "b"},
				{"ZINTER", "2", "a", "b", "WITHSCORES"}, {"ZDIFF", "3", "a", "b"}, {"ZINTERCARD", "2", "a", "b", "LIMIT", "1"},
				{"ZMPOP", "2", "a", "b", "MIN"}, {"BZMPOP", "0", "2", "a", "b", "MAX"}, {"BZMPOP", "0", "9", "a", "b", "MAX"},
				{"SET", "k", "v"}, {"SET", "k", "v", "GET"}, {"SET", "k", "v", "EX", "10", "get"}, {"SET", "k", "v", "NX"},
				{"MSET", "a", "1", "b", "2"}, {"MSET", "a", "1", "b"}, {"DEL", "a", "b", "c"}, {"RENAME", "a", "b"},
				{"COPY", "a", "b", "DB", "1"}, {"ZRANGESTORE", "d", "s", "0", "-1"}, {"MEMORY", "USAGE", "k"},
				{"OBJECT", "ENCODING", "k"}, {"WATCH", "a", "b"}, {"GETEX", "k", "PERSIST"}, {"LCS", "a", "b", "LEN"},
				{"BZPOPMIN", "a", "b", "0"}, {"EXISTS", "a"}, {"HSET", "h", "f", "v", "f2", "v2"},
			}
			for _, line := range extra {
				for _, sub := range []string{"GETKEYS", "GETKEYSANDFLAGS"} {
					args := append([]string{"COMMAND", sub}, line...)
					if g, w := e.do(args...).raw, v.do(args...).raw; g != w {
						t.Errorf("%q\n emqd   %q\n valkey %q", args, g, w)
					}
				}
			}
			t.Logf("RESP%s: %d shared commands, %d sample GETKEYS lines, %d fixed ones", proto, len(shared), samples, len(extra)*2)
			if bytes.Contains([]byte(e.do("COMMAND", "INFO", "get").raw), []byte("@keyspace")) {
				t.Error("GET still reports @keyspace")
			}
		})
	}
}

// TestCommandMetadataComplete: every command and subcommand of the
// registry has an entry in the metadata table, and the entry's arity is
// the one the spec declares (the dispatcher checks the spec's; COMMAND
// INFO shows the entry's).
func TestCommandMetadataComplete(t *testing.T) {
	s := startServer(t, nil, nil)
	fake := map[string]bool{}
	for _, cs := range fakeCommands(nil) {
		fake[cs.Name] = true
	}
	n := 0
	for _, e := range s.reg.allCommands() {
		if fake[e.name] {
			continue
		}
		n++
		if e.synthMeta {
			t.Errorf("%s has no command metadata: a Valkey command takes its entry from internal/cmdmeta/valkey_gen.go by name (is the name Valkey's?); any other command needs an entry in internal/cmdmeta/emq.go (docs/architecture.md, \"Command metadata\")", e.name)
			continue
		}
		if e.meta.Arity != e.spec.Arity {
			t.Errorf("%s: arity %d in its spec, %d in its metadata entry (internal/cmdmeta)", e.name, e.spec.Arity, e.meta.Arity)
		}
		// emqd's own entries must say what their specs say (for a Valkey
		// command the table wins: docs/compat.md §2.6).
		if cmdmeta.Own(e.name) != nil && e.flags != e.spec.FlagSet() {
			t.Errorf("%s: flags %v in its spec, %v in internal/cmdmeta/emq.go: make them agree", e.name, flagNames(e.spec.FlagSet()), flagNames(e.flags))
		}
	}
	if n < 140 {
		t.Fatalf("only %d commands checked", n)
	}
	c := dialRef(t, s.Addr())
	var verbs []string
	for _, e := range s.reg.allCommands() {
		if strings.HasPrefix(e.name, "emq.") && !strings.HasPrefix(e.name, "emq.debug") {
			verbs = append(verbs, e.name)
		}
	}
	sort.Strings(verbs)
	if got := names(c.do("COMMAND", "LIST", "FILTERBY", "ACLCAT", "emq")); !slices.Equal(got, verbs) || len(got) < 17 {
		t.Errorf("COMMAND LIST FILTERBY ACLCAT emq: %v, want the verbs %v", got, verbs)
	}
	for _, name := range cmdmeta.OwnNames() {
		if cmdmeta.Valkey(name) != nil {
			t.Errorf("internal/cmdmeta/emq.go: %s is a Valkey command (its entry is generated)", name)
		}
		if s.reg.lookupFullName(name) == nil {
			t.Errorf("internal/cmdmeta/emq.go: %s is not a command of emqd", name)
		}
	}
}

func flagNames(f store.Flag) []string {
	var out []string
	for b := store.Flag(1); b != 0; b <<= 1 {
		if f&b != 0 {
			out = append(out, b.String())
		}
	}
	return out
}

// TestDispatchFlagsFromTable: the dispatcher's flags are the table's, with
// emqd's three extras (dispatchExtras), and the test commands keep their
// spec's.
func TestDispatchFlagsFromTable(t *testing.T) {
	s := startServer(t, nil, nil)
	for name, want := range map[string][]string{
		"get":          {"readonly", "fast"},
		"echo":         {"loading", "stale", "fast"},
		"auth":         {"noscript", "loading", "stale", "skip_slowlog", "fast", "no_auth", "sentinel", "allow_busy"},
		"client|reply": {"noscript", "loading", "stale", "sentinel", "no_multi"},
		"emq.claim":    {"write", "blocking"},
		"test.put":     {"write"},
	} {
		e := s.reg.lookupFullName(name)
		var got []string
		for b := uint32(1); b != 0; b <<= 1 {
			if f := e.flags & store.Flag(b); f != 0 {
				got = append(got, f.String())
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: dispatch flags %v, want %v", name, got, want)
		}
	}
}

// TestGetKeysFunctionsMatchValkey runs the key finder of Valkey commands
// emqd has not (SORT, MIGRATE, GEORADIUS, XREAD, BITFIELD, EVAL, FCALL,
// LMPOP, ...: the table has them, so a command added later answers
// COMMAND GETKEYSANDFLAGS right) on sample lines and compares the keys and
// flags with a real Valkey 8.0.1's answer.
func TestGetKeysFunctionsMatchValkey(t *testing.T) {
	ref := valkeyref.Start(t)
	v := dialRef(t, ref.Addr)
	lines := [][]string{
		{"SORT", "k"}, {"SORT", "k", "STORE", "d"}, {"SORT", "k", "BY", "store", "STORE", "d", "store", "d2"},
		{"SORT", "k", "LIMIT", "0", "store", "STORE", "d"}, {"SORT", "k", "GET", "STORE", "x"}, {"SORT", "k", "STORE"},
		{"SORT_RO", "k", "BY", "x"},
		{"MIGRATE", "h", "1", "k", "0", "10"}, {"MIGRATE", "h", "1", "", "0", "10", "KEYS", "a", "b"},
		{"MIGRATE", "h", "1", "k", "0", "10", "KEYS", "a", "b"}, {"MIGRATE", "h", "1", "", "0", "10", "AUTH", "keys", "KEYS", "a"},
		{"MIGRATE", "h", "1", "", "0", "10", "COPY", "AUTH2", "u", "keys", "KEYS", "a", "b", "c"},
		{"GEORADIUS", "k", "1", "2", "3", "m"}, {"GEORADIUS", "k", "1", "2", "3", "m", "STORE", "d"},
		{"GEORADIUS", "k", "1", "2", "3", "m", "STORE", "d", "STOREDIST", "e"}, {"GEORADIUS", "k", "1", "2", "3", "m", "STORE"},
		{"GEORADIUSBYMEMBER", "k", "m", "3", "km", "STOREDIST", "d"},
		{"XREAD", "STREAMS", "a", "b", "0", "0"}, {"XREAD", "COUNT", "2", "BLOCK", "0", "STREAMS", "a", "0"},
		{"XREAD", "STREAMS", "a", "b", "0"}, {"XREAD", "x", "STREAMS", "a", "0"},
		{"XREADGROUP", "GROUP", "g", "c", "NOACK", "STREAMS", "a", "b", ">", ">"}, {"XREADGROUP", "GROUP", "g", "c", "STREAMS", "a", ">", ">"},
		{"BITFIELD", "k"}, {"BITFIELD", "k", "GET", "u8", "0"}, {"BITFIELD", "k", "GET", "u8", "0", "SET", "u8", "0", "1"},
		{"BITFIELD", "k", "OVERFLOW", "SAT", "GET", "u8", "0"}, {"BITFIELD", "k", "INCRBY", "u8", "0", "1"}, {"BITFIELD", "k", "bogus"},
		{"BITFIELD_RO", "k", "GET", "u8", "0"},
		{"EVAL", "s", "2", "a", "b", "c"}, {"EVAL", "s", "0"}, {"EVAL", "s", "3", "a"}, {"EVALSHA", "s", "1", "a"},
		{"EVAL_RO", "s", "1", "a"}, {"FCALL", "f", "2", "a", "b"}, {"FCALL_RO", "f", "1", "a"}, {"FCALL", "f", "x"},
		{"LMPOP", "2", "a", "b", "LEFT"}, {"BLMPOP", "0", "1", "a", "RIGHT"}, {"SINTERCARD", "2", "a", "b"},
		{"SINTERCARD", "0", "a"}, {"LMPOP", "x", "a", "LEFT"},
		{"SET", "k", "v", "get\x00x"}, {"SET", "k", "v", "GETX"},
		{"SUNSUBSCRIBE"}, {"SPUBLISH", "c", "m"}, {"SSUBSCRIBE", "c"},
		{"GEOSEARCHSTORE", "d", "s", "FROMMEMBER", "m", "BYRADIUS", "1", "m"}, {"LMOVE", "a", "b", "LEFT", "RIGHT"},
		{"OBJECT", "FREQ", "k"}, {"XINFO", "STREAM", "k"}, {"PFMERGE", "d", "a", "b"}, {"BLPOP", "a", "b", "0"},
	}
	render := func(args []string) string {
		m := cmdmeta.Valkey(strings.ToLower(args[0]))
		if m == nil {
			t.Fatalf("no entry for %s", args[0])
		}
		if len(args) > 1 {
			if sub := cmdmeta.Valkey(strings.ToLower(args[0] + "|" + args[1])); sub != nil {
				m = sub
			}
		}
		argv := make([][]byte, len(args))
		for i, a := range args {
			argv[i] = []byte(a)
		}
		switch {
		case !hasKeys(m):
			return "-ERR The command has no key arguments"
		case (m.Arity > 0 && m.Arity != len(argv)) || len(argv) < -m.Arity:
			return "-ERR Invalid number of arguments specified for command"
		}
		keys := commandKeys(m, argv)
		if len(keys) == 0 {
			if m.Derive().Flags&cmdmeta.FlagNoMandatoryKeys != 0 {
				return ""
			}
			return "-ERR Invalid arguments specified for command"
		}
		var parts []string
		for _, k := range keys {
			parts = append(parts, args[k.pos]+"="+strings.Join(k.flags.ReplyNames(), ","))
		}
		return strings.Join(parts, " ")
	}
	for _, args := range lines {
		r := v.do(append([]string{"COMMAND", "GETKEYSANDFLAGS"}, args...)...)
		var want string
		if r.typ == '-' {
			want = "-" + r.text
		} else {
			var parts []string
			for _, k := range r.kids {
				var fl []string
				for _, f := range k.kids[1].kids {
					fl = append(fl, f.text)
				}
				parts = append(parts, k.kids[0].text+"="+strings.Join(fl, ","))
			}
			want = strings.Join(parts, " ")
		}
		if got := render(args); got != want {
			t.Errorf("%q: emqd %q, valkey %q", args, got, want)
		}
	}
}

// TestEMQCommandInfo: the verbs' hand-written entries answer in Valkey's
// shapes (RESP2 and RESP3).
func TestEMQCommandInfo(t *testing.T) {
	s := startServer(t, nil, nil)
	c := dialRef(t, s.Addr())
	keySpec := func(m, set string) string {
		h := func(n int) string { // a map of n entries
			if m == "*" {
				n *= 2
			}
			return m + strconv.Itoa(n) + "\r\n"
		}
		return h(3) + "$5\r\nflags\r\n" + set + "2\r\n+RW\r\n+delete\r\n$12\r\nbegin_search\r\n" + h(2) + "$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n" +
			h(1) + "$5\r\nindex\r\n:1\r\n$9\r\nfind_keys\r\n" + h(2) + "$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n" +
			h(3) + "$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n"
	}
	info := func(m, set string) string {
		return "*1\r\n*10\r\n$12\r\nemq.complete\r\n:-4\r\n" + set + "2\r\n+write\r\n+fast\r\n:1\r\n:1\r\n:1\r\n" +
			set + "3\r\n+@write\r\n+@fast\r\n+@emq\r\n" + set + "0\r\n" + set + "1\r\n" + keySpec(m, set) + set + "0\r\n"
	}
	if got, want := c.do("COMMAND", "INFO", "EMQ.COMPLETE").raw, info("*", "*"); got != want {
		t.Errorf("RESP2 COMMAND INFO emq.complete\n got  %q\n want %q", got, want)
	}
	if got, want := c.do("COMMAND", "GETKEYSANDFLAGS", "EMQ.COMPLETE", "q", "id", "tok").raw, "*1\r\n*2\r\n$1\r\nq\r\n*2\r\n+RW\r\n+delete\r\n"; got != want {
		t.Errorf("GETKEYSANDFLAGS %q", got)
	}
	docs := c.do("COMMAND", "DOCS", "emq.delay").raw
	for _, part := range []string{"$7\r\nsummary\r\n$68\r\nMoves a leased job to the schedule, due in delay_ms or at run_at_ms.\r\n",
		"$5\r\ngroup\r\n$3\r\nemq\r\n", "$4\r\nname\r\n$4\r\nwhen\r\n$4\r\ntype\r\n$5\r\noneof\r\n",
		"$5\r\ntoken\r\n$2\r\nIN\r\n", "$14\r\nkey_spec_index\r\n:0\r\n"} {
		if !strings.Contains(docs, part) {
			t.Errorf("COMMAND DOCS emq.delay lacks %q: %q", part, docs)
		}
	}
	c.do("HELLO", "3")
	if got, want := c.do("COMMAND", "INFO", "emq.complete").raw, info("%", "~"); got != want {
		t.Errorf("RESP3 COMMAND INFO emq.complete\n got  %q\n want %q", got, want)
	}
}
