package store

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/emqd/emqd/clock"
	"github.com/emqd/emqd/server/resp"
)

// Test harness shared by the store's command tests: it runs one command the
// way the server would (command lookup, arity, container subcommands, with
// Valkey's texts for those dispatch errors) against DB 0 of a store, under the
// store lock, and returns the reply bytes.

var (
	harnessOnce sync.Once
	harnessCmds map[string]*CommandSpec
)

func harnessTable() map[string]*CommandSpec {
	harnessOnce.Do(func() {
		harnessCmds = make(map[string]*CommandSpec)
		for _, cs := range Commands() {
			harnessCmds[cs.Name] = cs
			for _, sub := range cs.Subcommands {
				harnessCmds[sub.Name] = sub
			}
		}
	})
	return harnessCmds
}

// harnessNowMs is the clock reading every harness command runs at.
const harnessNowMs = 1_700_000_000_000

// run executes args (args[0] is the command name, any case) on DB 0 of s in
// protocol proto (2 or 3) and returns the reply bytes. An unregistered
// command fails the test: use has(name) to skip.
func run(t testing.TB, s *Store, proto int, args ...string) string {
	t.Helper()
	return runDB(t, s, 0, proto, args...)
}

// runDB is run on database db.
func runDB(t testing.TB, s *Store, db, proto int, args ...string) string {
	t.Helper()
	argv := make([][]byte, len(args))
	for i, a := range args {
		argv[i] = []byte(a)
	}
	name := strings.ToLower(args[0])
	cs := harnessTable()[name]
	if cs == nil {
		t.Fatalf("command %q is not registered", args[0])
	}
	w := &resp.Writer{Proto: proto}
	if !arityOK(cs.Arity, len(argv)) {
		w.Error("ERR wrong number of arguments for '" + cs.Name + "' command")
		return string(w.Buf)
	}
	if len(cs.Subcommands) > 0 {
		sub := harnessTable()[name+"|"+strings.ToLower(args[1])]
		if sub == nil {
			w.Error("ERR unknown subcommand '" + args[1] + "'. Try " + strings.ToUpper(name) + " HELP.")
			return string(w.Buf)
		}
		cs = sub
		if !arityOK(cs.Arity, len(argv)) {
			w.Error("ERR wrong number of arguments for '" + cs.Name + "' command")
			return string(w.Buf)
		}
	}
	if cs.Handler == nil {
		t.Fatalf("command %q has no handler", cs.Name)
	}
	m := clock.NewManual(harnessNowMs)
	c := &Ctx{S: s, DB: s.DB(db), W: w, NowMs: m.NowMs(), Clock: m}
	c.ResetForCommand(argv)
	s.Lock()
	cs.Handler(c)
	s.Unlock()
	if len(w.Buf) == 0 && c.Block == nil {
		t.Fatalf("%q wrote no reply", args)
	}
	return string(w.Buf)
}

func arityOK(arity, argc int) bool {
	if arity > 0 {
		return argc == arity
	}
	return argc >= -arity
}

// has reports whether command name (lower case, "a|b" for a subcommand) is
// registered.
func has(name string) bool { return harnessTable()[name] != nil }

// dump renders every key of every database of s with its type and content in
// a canonical order (hash fields in iteration order, zset in rank order), so
// tests can assert that a refused command changed nothing.
func dump(s *Store) string {
	var b strings.Builder
	for i := 0; i < s.NumDBs(); i++ {
		d := s.DB(i)
		var keys []string
		d.Keys(func(k string, _ *Value) bool { keys = append(keys, k); return true })
		sort.Strings(keys)
		for _, k := range keys {
			v := d.Get(k)
			fmt.Fprintf(&b, "db%d %q %s:", i, k, v.Kind.TypeName())
			switch v.Kind {
			case KindString:
				fmt.Fprintf(&b, " %q", v.Str)
			case KindHash:
				v.Hash.Range(func(f string, val []byte) bool {
					fmt.Fprintf(&b, " %q=%q", f, val)
					return true
				})
			case KindZSet:
				v.ZSet.AscendAll(func(it ZItem) bool {
					fmt.Fprintf(&b, " %q=%s", it.Member, strconv.FormatFloat(it.Score, 'g', -1, 64))
					return true
				})
			}
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// bulk, ints and arr build expected RESP frames for table tests.
func bulk(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }

func integer(n int64) string { return ":" + strconv.FormatInt(n, 10) + "\r\n" }

func arr(items ...string) string {
	return "*" + strconv.Itoa(len(items)) + "\r\n" + strings.Join(items, "")
}

func bulks(items ...string) string {
	out := make([]string, len(items))
	for i, s := range items {
		out[i] = bulk(s)
	}
	return arr(out...)
}

func errReply(text string) string { return "-" + text + "\r\n" }

const (
	okReply     = "+OK\r\n"
	nilBulk     = "$-1\r\n"
	nilResp3    = "_\r\n"
	emptyArray  = "*0\r\n"
	wrongTypeRe = "-" + ErrWrongType + "\r\n"
)
