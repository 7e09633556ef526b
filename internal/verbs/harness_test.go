package verbs

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/emqd/emqd/clock"
	"github.com/emqd/emqd/internal/num"
	"github.com/emqd/emqd/internal/resp"
	"github.com/emqd/emqd/internal/store"
)

// th drives the verb handlers directly over a store, as the server does
// (arity check, one Ctx per command), without a network: the property
// tests and the argument tables run here.
type th struct {
	t     testing.TB
	s     *store.Store
	db    int
	clk   *clock.Manual
	run   string
	feed  *recFeed
	ready []string
	debug bool
	multi bool
	block *store.BlockSpec
	proto int
	// outLimit is the client's output limit the commands run with
	// (store.Ctx.OutLimit; 0: none).
	outLimit int64
	v        *Verbs                        // the verbs under test, bound to h
	specs    map[string]*store.CommandSpec // v's commands by name ("emq.debug|clock" too)
	pub      []string                      // published events, "<channel> <message>" (when listen)
	// listen: a subscriber listens on every channel (Config.Listening).
	listen bool
}

// recFeed records every Append (the AOF's view of the writes).
type recFeed struct{ n, ops int }

func (f *recFeed) Append(db int, cmds [][][]byte) { f.n++; f.ops += len(cmds) }

func newTH(t testing.TB) *th {
	h := &th{t: t, s: store.New(16), clk: clock.NewManual(tNow), run: tRun, feed: &recFeed{}, proto: 2}
	h.s.SetFeed(h.feed)
	h.bind(nil)
	return h
}

// bind gives h fresh verbs logging to log (nil: nowhere) that record every
// wake-up in h.ready.
func (h *th) bind(log *slog.Logger) {
	h.v = New(Config{
		Ready:     func(db int, q string) { h.ready = append(h.ready, fmt.Sprintf("%d:%s", db, q)) },
		Logger:    log,
		Publish:   func(ch string, msg []byte) { h.pub = append(h.pub, ch+" "+string(msg)) },
		Listening: func(string) bool { return h.listen },
		Clock:     h.clk,
	})
	h.specs = map[string]*store.CommandSpec{}
	for _, c := range h.v.Commands() {
		h.specs[c.Name] = c
		for _, s := range c.Subcommands {
			h.specs[s.Name] = s
		}
	}
}

func arityOK(a, n int) bool { return (a >= 0 && n == a) || (a < 0 && n >= -a) }

// ctx returns a Ctx for argv on h's store.
func (h *th) ctx(argv [][]byte) *store.Ctx {
	return &store.Ctx{S: h.s, DB: h.s.DB(h.db), Argv: argv, W: &resp.Writer{Proto: h.proto},
		NowMs: h.clk.NowMs(), RunID: h.run, DebugEnabled: h.debug, InMulti: h.multi,
		OutLimit: h.outLimit}
}

// raw runs one command and returns the raw reply ("" when it blocked).
func (h *th) raw(args ...string) string {
	h.t.Helper()
	argv := make([][]byte, len(args))
	for i, a := range args {
		argv[i] = []byte(a)
	}
	name := strings.ToLower(args[0])
	spec := h.specs[name]
	if spec == nil {
		return "-ERR unknown command\r\n"
	}
	if !arityOK(spec.Arity, len(argv)) {
		return "-" + errArity(name) + "\r\n"
	}
	if len(spec.Subcommands) > 0 && len(argv) > 1 {
		if sub := h.specs[name+"|"+strings.ToLower(args[1])]; sub != nil {
			if !arityOK(sub.Arity, len(argv)) {
				return "-" + errArity(sub.Name) + "\r\n"
			}
			spec = sub
		}
	}
	c := h.ctx(argv)
	spec.Handler(c)
	h.block = c.Block
	if c.Block == nil && c.W.Len() == 0 {
		h.t.Fatalf("%v wrote no reply", args)
	}
	return string(c.W.Buf)
}

// do runs one command and returns the parsed reply (see parseReply).
func (h *th) do(args ...string) any {
	h.t.Helper()
	return parseReply(h.t, h.raw(args...))
}

// ok runs a command that must not be refused.
func (h *th) ok(args ...string) any {
	h.t.Helper()
	v := h.do(args...)
	if e, isErr := v.(replyErr); isErr {
		h.t.Fatalf("%v: %s", args, e)
	}
	return v
}

type replyErr string

// parseReply decodes one RESP2/RESP3 reply: bulk and simple strings as
// string, integers as int64, arrays and maps as []any, nil as nil, errors
// as replyErr.
func parseReply(t testing.TB, s string) any {
	t.Helper()
	r := bufio.NewReader(strings.NewReader(s))
	v, err := readReply(r)
	if err != nil {
		t.Fatalf("parse %q: %v", s, err)
	}
	if _, err := r.ReadByte(); err == nil {
		t.Fatalf("trailing bytes in %q", s)
	}
	return v
}

func readReply(r *bufio.Reader) (any, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return nil, fmt.Errorf("empty line")
	}
	body := line[1:]
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		return replyErr(body), nil
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '_':
		return nil, nil
	case '$':
		n, _ := strconv.Atoi(body)
		if n < 0 {
			return nil, nil
		}
		b := make([]byte, n+2)
		if _, err := ioReadFull(r, b); err != nil {
			return nil, err
		}
		return string(b[:n]), nil
	case '*', '%':
		n, _ := strconv.Atoi(body)
		if n < 0 {
			return nil, nil
		}
		if line[0] == '%' {
			n *= 2
		}
		out := make([]any, 0, n)
		for i := 0; i < n; i++ {
			v, err := readReply(r)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	return nil, fmt.Errorf("bad type %q", line)
}

func ioReadFull(r *bufio.Reader, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := r.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// Store set-up helpers (plain writes, as HSET/ZADD/SET would make them).

func (h *th) hset(key string, fv ...string) {
	hh, e := h.s.DB(h.db).HashForWrite(key)
	if e != "" {
		h.t.Fatalf("hset %s: %s", key, e)
	}
	for i := 0; i+1 < len(fv); i += 2 {
		hh.Set(fv[i], []byte(fv[i+1]))
	}
}

func (h *th) zadd(key string, score float64, member string) {
	z, e := h.s.DB(h.db).ZSetForWrite(key)
	if e != "" {
		h.t.Fatalf("zadd %s: %s", key, e)
	}
	z.Add(member, score)
}

func (h *th) setString(key, v string) {
	h.s.DB(h.db).Put(key, &store.Value{Kind: store.KindString, Str: []byte(v)})
}

// row returns the row of id in queue q as "f=v ..." in field order, or "".
func (h *th) row(q, id string) string {
	v := h.s.DB(h.db).Get(NewKeys(q).Row(id))
	if v == nil {
		return ""
	}
	var parts []string
	v.Hash().Range(func(f string, b []byte) bool {
		parts = append(parts, f+"="+string(b))
		return true
	})
	return strings.Join(parts, " ")
}

// field returns one field of a row ("<absent>" when missing).
func (h *th) field(q, id, f string) string {
	v := h.s.DB(h.db).Get(NewKeys(q).Row(id))
	if v == nil {
		return "<absent>"
	}
	b, ok := v.Hash().Get(f)
	if !ok {
		return "<absent>"
	}
	return string(b)
}

// members lists a zset's members ascending as "member@score".
func (h *th) members(key string) []string {
	v := h.s.DB(h.db).Get(key)
	if v == nil {
		return nil
	}
	var out []string
	v.ZSet.AscendAll(func(it store.ZItem) bool {
		out = append(out, it.Member+"@"+num.FormatScore(it.Score))
		return true
	})
	return out
}

// digest is a hash of the whole keyspace: every database, key, type,
// string, hash field and value (in order), sorted-set member and score.
func digest(s *store.Store) string {
	hsh := sha256.New()
	for i := 0; i < s.NumDBs(); i++ {
		d := s.DB(i)
		var keys []string
		d.Keys(func(k string, _ *store.Value) bool { keys = append(keys, k); return true })
		sort.Strings(keys)
		for _, k := range keys {
			v := d.Get(k)
			fmt.Fprintf(hsh, "db%d %q %d\n", i, k, v.Kind)
			switch v.Kind {
			case store.KindString:
				fmt.Fprintf(hsh, "s %q\n", v.Str)
			case store.KindHash:
				fmt.Fprintf(hsh, "h %d\n", v.Hash().Len())
				v.Hash().Range(func(f string, b []byte) bool {
					fmt.Fprintf(hsh, " %q=%q\n", f, b)
					return true
				})
			case store.KindZSet:
				fmt.Fprintf(hsh, "z %d\n", v.ZSet.Len())
				v.ZSet.AscendAll(func(it store.ZItem) bool {
					fmt.Fprintf(hsh, " %q@%v\n", it.Member, it.Score)
					return true
				})
			}
		}
	}
	return hex.EncodeToString(hsh.Sum(nil))
}
