package store

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/emqd/emqd/internal/resp"
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
	out, _ := runCtx(t, s, db, proto, args...)
	return out
}

// runCtx is runDB that also returns the command's Ctx (nil when the
// dispatch checks refused the command), to inspect Changed/Propagated.
func runCtx(t testing.TB, s *Store, db, proto int, args ...string) (string, *Ctx) {
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
		return string(w.Buf), nil
	}
	if len(cs.Subcommands) > 0 {
		sub := harnessTable()[name+"|"+strings.ToLower(args[1])]
		if sub == nil {
			w.Error("ERR unknown subcommand '" + args[1] + "'. Try " + strings.ToUpper(name) + " HELP.")
			return string(w.Buf), nil
		}
		cs = sub
		if !arityOK(cs.Arity, len(argv)) {
			w.Error("ERR wrong number of arguments for '" + cs.Name + "' command")
			return string(w.Buf), nil
		}
	}
	if cs.Handler == nil {
		t.Fatalf("command %q has no handler", cs.Name)
	}
	// The command time: harnessNowMs unless a test moved the store's
	// (SetNow), as the server sets it before each command.
	now := s.Now()
	if now == 0 {
		now = harnessNowMs
		s.SetNow(now)
	}
	c := &Ctx{S: s, DB: s.DB(db), W: w, NowMs: now}
	c.ResetForCommand(argv)
	s.Lock()
	cs.Handler(c)
	s.Unlock()
	if len(w.Buf) == 0 && c.Block == nil {
		t.Fatalf("%q wrote no reply", args)
	}
	return string(w.Buf), c
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
			if at, ok := d.ExpireAt(k); ok {
				fmt.Fprintf(&b, " ttl@%d", at)
			}
			switch v.Kind {
			case KindString:
				fmt.Fprintf(&b, " %q", v.Str)
			case KindHash:
				v.Hash().Range(func(f string, val []byte) bool {
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

// goldenLine is one line of a Valkey transcript in server/testdata/valkey.
type goldenLine struct {
	Send    []string `json:"send"`
	Raw     string   `json:"raw"`
	Reply   string   `json:"reply"`
	Compare string   `json:"compare"`
}

// goldenDir is where the Valkey 8.0.1 transcripts live (docs/compat.md §6.1).
const goldenDir = "../../server/testdata/valkey/"

// loadGolden reads a transcript; JSON strings hold the reply bytes as
// latin-1 code points.
func loadGolden(t testing.TB, name string) []goldenLine {
	t.Helper()
	data, err := os.ReadFile(goldenDir + name)
	if err != nil {
		t.Fatalf("golden transcript not available: %v", err)
	}
	var out []goldenLine
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var g goldenLine
		if err := json.Unmarshal([]byte(l), &g); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		g.Reply = goldenBytes(g.Reply)
		for i, a := range g.Send {
			g.Send[i] = goldenBytes(a)
		}
		out = append(out, g)
	}
	return out
}

func goldenBytes(s string) string {
	b := make([]byte, 0, len(s))
	for _, r := range s {
		b = append(b, byte(r))
	}
	return string(b)
}

// replayGolden replays the lines of a transcript in RESP2 on DB 0 of a fresh
// store until stop reports true (commands the store does not own, such as
// SELECT), comparing each reply as the line's compare mode says. It returns
// the number of lines checked.
func replayGolden(t *testing.T, name string, stop func(args []string) bool) int {
	t.Helper()
	s := New(16)
	n := 0
	for i, g := range loadGolden(t, name) {
		if g.Send == nil || stop(g.Send) {
			break
		}
		got := run(t, s, 2, g.Send...)
		switch g.Compare {
		case "exact":
			if got != g.Reply {
				t.Errorf("%s:%d %q\n got %q\nwant %q", name, i+1, g.Send, got, g.Reply)
			}
		case "unordered":
			if canonRESP(t, got) != canonRESP(t, g.Reply) {
				t.Errorf("%s:%d %q (unordered)\n got %q\nwant %q", name, i+1, g.Send, got, g.Reply)
			}
		case "shape":
			if shapeRESP(t, got) != shapeRESP(t, g.Reply) {
				t.Errorf("%s:%d %q (shape)\n got %q\nwant %q", name, i+1, g.Send, got, g.Reply)
			}
		default:
			t.Fatalf("%s:%d unknown compare mode %q", name, i+1, g.Compare)
		}
		n++
	}
	return n
}

// respNode is a parsed reply: its type byte, scalar text, children.
type respNode struct {
	typ  byte
	text string
	kids []respNode
}

// parseRESP parses one RESP2/RESP3 frame from the front of b.
func parseRESP(t testing.TB, b string) (respNode, string) {
	t.Helper()
	i := strings.Index(b, "\r\n")
	if i < 1 {
		t.Fatalf("bad RESP frame %q", b)
	}
	typ, line, rest := b[0], b[1:i], b[i+2:]
	switch typ {
	case '+', '-', ':', ',', '_', '#', '(':
		return respNode{typ: typ, text: line}, rest
	case '$', '=', '!':
		n, _ := strconv.Atoi(line)
		if n < 0 {
			return respNode{typ: typ, text: "<nil>"}, rest
		}
		return respNode{typ: typ, text: rest[:n]}, rest[n+2:]
	case '*', '~', '>', '%':
		n, _ := strconv.Atoi(line)
		if typ == '%' {
			n *= 2
		}
		node := respNode{typ: typ}
		if n < 0 {
			node.text = "<nil>"
			return node, rest
		}
		for k := 0; k < n; k++ {
			var kid respNode
			kid, rest = parseRESP(t, rest)
			node.kids = append(node.kids, kid)
		}
		return node, rest
	}
	t.Fatalf("unknown RESP type %q in %q", typ, b)
	return respNode{}, ""
}

// canonRESP renders a reply with the elements of every aggregate sorted, to
// compare replies whose order is unspecified (KEYS, SCAN).
func canonRESP(t testing.TB, b string) string {
	n, rest := parseRESP(t, b)
	if rest != "" {
		t.Fatalf("trailing bytes after reply %q", b)
	}
	return canonNode(n)
}

func canonNode(n respNode) string {
	if n.kids == nil {
		return string(n.typ) + strconv.Quote(n.text)
	}
	parts := make([]string, len(n.kids))
	for i, k := range n.kids {
		parts[i] = canonNode(k)
	}
	sort.Strings(parts)
	return string(n.typ) + "[" + strings.Join(parts, ",") + "]"
}

// shapeRESP renders only the reply's types and structure.
func shapeRESP(t testing.TB, b string) string {
	n, _ := parseRESP(t, b)
	return shapeNode(n)
}

func shapeNode(n respNode) string {
	var sb strings.Builder
	sb.WriteByte(n.typ)
	if n.text == "<nil>" {
		sb.WriteString("nil")
	}
	if n.kids != nil {
		sb.WriteString("[")
		for _, k := range n.kids {
			sb.WriteString(shapeNode(k))
		}
		sb.WriteString("]")
	}
	return sb.String()
}
