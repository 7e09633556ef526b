package store

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/emqd/emqd/internal/num"
)

// Fuzz targets for the argument parsing of the hash and sorted set
// commands. Each input picks a command from a fixed list (and the
// protocol), a key of a prepared keyspace, and arbitrary arguments, runs
// the command through the store harness (arity checks as the server's) and
// checks the invariants every handler must keep:
//   - no panic, and exactly one well-formed RESP frame of the connection's
//     protocol (no RESP3 type in RESP2, no RESP2 null in RESP3);
//   - a refusal (error reply) leaves the keyspace unchanged;
//   - a read-only command changes nothing and records no change;
//   - every key whose content changed was reported with Ctx.Dirty (its
//     watcher is touched), so WATCH and the AOF see the change;
//   - the same input run in the other protocol leaves the same keyspace,
//     and a refusal is the same error text in both;
//   - no empty hash or sorted set is stored, no sorted set holds a NaN or a
//     -0 score, a sorted set's tree and member index agree in size, order
//     and scores, and a hash's index agrees with its entries.
//
// The seed corpus is in testdata/fuzz/<FuzzName>. Run one with e.g.
// `go test -run=^$ -fuzz=FuzzZSetArgs -fuzztime=3m ./store/`.

// fuzzArgSep separates the arguments in the fuzz input's args string (any
// other byte, NUL included, may appear inside an argument). An empty args
// string means no arguments.
const fuzzArgSep = "\x1e"

// fuzzMaxArgs bounds the argument count of one input.
const fuzzMaxArgs = 64

var fuzzHashCmds = []string{"hset", "hmset", "hsetnx", "hget", "hmget", "hgetall", "hkeys", "hvals",
	"hdel", "hexists", "hlen", "hstrlen", "hincrby", "hincrbyfloat", "hscan", "hrandfield"}

var fuzzZSetCmds = []string{"zadd", "zincrby", "zrem", "zscore", "zmscore", "zcard", "zcount",
	"zlexcount", "zrank", "zrevrank", "zrange", "zrangebyscore", "zrevrangebyscore", "zrangebylex",
	"zrevrangebylex", "zrevrange", "zpopmin", "zpopmax", "zremrangebyscore", "zremrangebyrank",
	"zremrangebylex", "zscan", "zrandmember"}

// fuzzKeys are the prepared keys (fuzzKeyspace) an input may name; "nokey"
// is missing.
var fuzzKeys = []string{"h", "hbig", "z", "zlex", "zbig", "s", "nokey", "zone"}

// fuzzKeyspace builds the store each input runs against: small and big
// hashes (big: more than HashScanAllMax fields, so HSCAN pages) and sorted
// sets (big: more than ZSetScanAllMax members), a same-score set for the lex
// ranges, and a string.
func fuzzKeyspace() *Store {
	s := New(16)
	d := s.DB(0)
	h := NewHash()
	for i, v := range []string{"1", "9223372036854775807", "-9223372036854775808", "1.5", "abc", "",
		" 1", "1e308", "inf", "0x10", "-0", "01", "3.0", "1e4000"} {
		h.Set("f"+strconv.Itoa(i), []byte(v))
	}
	h.Set("", []byte("empty field"))
	h.Set("\x00", []byte("nul"))
	d.Put("h", h.val())
	hb := NewHash()
	for i := 0; i < HashScanAllMax+20; i++ {
		hb.Set("field:"+strconv.Itoa(i), []byte(strconv.Itoa(i*7)))
	}
	d.Put("hbig", hb.val())
	z := NewZSet()
	for i, sc := range []float64{math.Inf(-1), -1e308, -1.5, 0, 0, 5e-324, 1, 1, 1.5, 1e308, math.Inf(1)} {
		z.Add("m"+strconv.Itoa(i), sc)
	}
	z.Add("", 2)
	z.Add("\x00", 2)
	d.Put("z", &Value{Kind: KindZSet, ZSet: z})
	zl := NewZSet()
	for _, m := range []string{"", "a", "aa", "ab", "b", "c", "d", "e", "\xff"} {
		zl.Add(m, 0)
	}
	d.Put("zlex", &Value{Kind: KindZSet, ZSet: zl})
	zb := NewZSet()
	for i := 0; i < ZSetScanAllMax+40; i++ {
		zb.Add("member:"+strconv.Itoa(i), float64(i%50)/4)
	}
	d.Put("zbig", &Value{Kind: KindZSet, ZSet: zb})
	// A big set at one score keeps no member index (zset.go).
	zo := NewZSet()
	for i := 0; i < ZSetScanAllMax+40; i++ {
		zo.Add("job:"+strconv.Itoa(i), 5)
	}
	d.Put("zone", &Value{Kind: KindZSet, ZSet: zo})
	d.Put("s", &Value{Kind: KindString, Str: []byte("12")})
	return s
}

// fuzzSplit turns the fuzz input's args string into arguments.
func fuzzSplit(args string) []string {
	if args == "" {
		return nil
	}
	out := strings.Split(args, fuzzArgSep)
	if len(out) > fuzzMaxArgs {
		out = out[:fuzzMaxArgs]
	}
	return out
}

// fuzzCommand runs one fuzz input (see the top of the file) in the
// input's protocol and then, on a second fresh keyspace, in the other one:
// the keyspaces must end the same and a refusal must be the same error in
// both protocols.
func fuzzCommand(t *testing.T, cmds []string, cmd, key uint8, args string) {
	proto := 2
	if cmd&0x80 != 0 {
		proto = 3
	}
	name := cmds[int(cmd&0x7f)%len(cmds)]
	argv := append([]string{name, fuzzKeys[int(key)%len(fuzzKeys)]}, fuzzSplit(args)...)
	if strings.Contains(name, "rand") {
		// A huge negative count builds a reply of up to hrandMaxReply
		// bytes by design: too slow for a fuzz execution.
		if len(argv) >= 3 {
			if n, ok := num.ParseInt([]byte(argv[2])); ok && (n < -10000 || n > 10000) && n != math.MinInt64 {
				argv[2] = strconv.FormatInt(n%10000, 10)
			}
		}
	}
	out, dumps := fuzzRun(t, name, argv, proto)
	other, otherDumps := fuzzRun(t, name, argv, 5-proto)
	if (out[0] == '-' || other[0] == '-') && out != other {
		t.Fatalf("%q: RESP%d replies %q, RESP%d %q", argv, proto, out, 5-proto, other)
	}
	for _, k := range fuzzKeys {
		if dumps[k] != otherDumps[k] {
			t.Fatalf("%q: key %q ends differently in RESP%d and RESP%d\n%s\n%s", argv, k, proto, 5-proto, dumps[k], otherDumps[k])
		}
	}
}

// fuzzRun runs argv on a fresh prepared keyspace in proto, checks the
// invariants, and returns the reply and the prepared keys' final dumps.
func fuzzRun(t *testing.T, name string, argv []string, proto int) (string, map[string]string) {
	s := fuzzKeyspace()
	watchers := make(map[string]*Watcher, len(fuzzKeys))
	s.Lock()
	for _, k := range fuzzKeys {
		watchers[k] = &Watcher{}
		s.Watch(watchers[k], 0, k)
	}
	before := fuzzKeyDumps(s)
	s.Unlock()

	out, c := runCtx(t, s, 0, proto, argv...)

	if err := checkFrame(out, proto); err != nil {
		t.Fatalf("%q (RESP%d): bad reply %q: %v", argv, proto, out, err)
	}
	s.Lock()
	defer s.Unlock()
	after := fuzzKeyDumps(s)
	changed := false
	for _, k := range fuzzKeys {
		if before[k] == after[k] {
			continue
		}
		changed = true
		if out[0] == '-' {
			t.Fatalf("%q (RESP%d): refused with %q but changed key %q\nbefore %s\nafter  %s", argv, proto, out, k, before[k], after[k])
		}
		if !watchers[k].Touched {
			t.Fatalf("%q (RESP%d): changed key %q without Dirty (no watcher touched)", argv, proto, k)
		}
	}
	if c != nil {
		spec := harnessTable()[name]
		if spec.FlagSet()&FlagReadonly != 0 && (changed || c.Changed()) {
			t.Fatalf("%q: read-only command changed the store (changed=%v, Changed()=%v)", argv, changed, c.Changed())
		}
		if out[0] == '-' && c.Changed() {
			t.Fatalf("%q: refused with %q but recorded a change", argv, out)
		}
	}
	if err := checkStoreInvariants(s); err != nil {
		t.Fatalf("%q (RESP%d) -> %q: %v", argv, proto, out, err)
	}
	return out, after
}

// fuzzKeyDumps renders every prepared key's type and content.
func fuzzKeyDumps(s *Store) map[string]string {
	d := s.DB(0)
	out := make(map[string]string, len(fuzzKeys))
	for _, k := range fuzzKeys {
		v := d.Get(k)
		if v == nil {
			out[k] = "none"
			continue
		}
		var b strings.Builder
		b.WriteString(v.Kind.TypeName())
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
				fmt.Fprintf(&b, " %q=%x", it.Member, math.Float64bits(it.Score))
				return true
			})
		}
		out[k] = b.String()
	}
	return out
}

// checkStoreInvariants checks the structures of every key of every
// database (see the top of the file).
func checkStoreInvariants(s *Store) error {
	for i := 0; i < s.NumDBs(); i++ {
		var err error
		s.DB(i).Keys(func(k string, v *Value) bool {
			switch v.Kind {
			case KindString:
				if v.tab != nil || v.ZSet != nil {
					err = fmt.Errorf("string %q carries a collection", k)
				}
			case KindHash:
				err = checkHash(v.Hash())
			case KindZSet:
				err = checkZSet(v.ZSet)
			default:
				err = fmt.Errorf("kind %d", v.Kind)
			}
			if err != nil {
				err = fmt.Errorf("db %d key %q: %w", i, k, err)
				return false
			}
			return true
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func checkHash(h *Hash) error {
	if h == nil || h.Len() == 0 {
		return fmt.Errorf("empty hash stored")
	}
	if !h.big() {
		if h.lpTooMany(h.Len()) {
			return fmt.Errorf("listpack hash of %d fields", h.Len())
		}
		n := 0
		seen := map[string]bool{}
		var err error
		h.lpRange(func(f, v []byte) bool {
			n++
			if seen[string(f)] {
				err = fmt.Errorf("listpack field %q twice", f)
			}
			seen[string(f)] = true
			return err == nil
		})
		if err == nil && n != h.Len() {
			err = fmt.Errorf("listpack holds %d fields, count says %d", n, h.Len())
		}
		return err
	}
	t := h.tab
	if len(t.idx) != t.live {
		return fmt.Errorf("hash index has %d fields, live count %d", len(t.idx), t.live)
	}
	live := 0
	for i, e := range t.entries {
		if e.value == nil {
			continue
		}
		live++
		if j, ok := t.idx[e.field]; !ok || j != i {
			return fmt.Errorf("hash entry %d (%q) not indexed at its position (%d, %v)", i, e.field, j, ok)
		}
	}
	if live != t.live {
		return fmt.Errorf("hash has %d live entries, count says %d", live, t.live)
	}
	return nil
}

func checkZSet(z *ZSet) error {
	if z == nil || z.Len() == 0 {
		return fmt.Errorf("empty sorted set stored")
	}
	check := func(n int, prev, it ZItem) error {
		switch {
		case math.IsNaN(it.Score):
			return fmt.Errorf("member %q has a NaN score", it.Member)
		case it.Score == 0 && math.Signbit(it.Score):
			return fmt.Errorf("member %q has a -0 score", it.Member)
		case n > 0 && !zless(prev, it):
			return fmt.Errorf("out of order: %v then %v", prev, it)
		}
		return nil
	}
	var prev ZItem
	n := 0
	var err error
	if z.tree == nil {
		if z.lpTooMany(z.Len()) {
			return fmt.Errorf("listpack set of %d members", z.Len())
		}
		z.AscendAll(func(it ZItem) bool {
			err = check(n, prev, it)
			prev = it
			n++
			return err == nil
		})
		if err == nil && n != z.Len() {
			err = fmt.Errorf("listpack holds %d members, count says %d", n, z.Len())
		}
		return err
	}
	if z.dict == nil {
		// No member index: every member has the score uni (zset.go).
		z.tree.Scan(func(it ZItem) bool {
			if math.Float64bits(it.Score) != math.Float64bits(z.uni) {
				err = fmt.Errorf("member %q scored %v in a set without an index (uni %v)", it.Member, it.Score, z.uni)
			} else {
				err = check(n, prev, it)
			}
			prev = it
			n++
			return err == nil
		})
		if err == nil && n != z.Len() {
			err = fmt.Errorf("tree holds %d members, Len says %d", n, z.Len())
		}
		return err
	}
	if z.tree.Len() != z.dict.len() {
		return fmt.Errorf("tree has %d items, dict %d", z.tree.Len(), z.dict.len())
	}
	z.tree.Scan(func(it ZItem) bool {
		switch sc, ok := z.dict.lookup(it.Member); {
		case !ok:
			err = fmt.Errorf("tree member %q not in dict", it.Member)
		case math.Float64bits(sc) != math.Float64bits(it.Score):
			err = fmt.Errorf("member %q: tree score %v, dict %v", it.Member, it.Score, sc)
		default:
			err = check(n, prev, it)
		}
		prev = it
		n++
		return err == nil
	})
	return err
}

// checkFrame checks that b is exactly one well-formed RESP frame of proto.
func checkFrame(b string, proto int) error {
	rest, err := checkFrameAt(b, proto, 0)
	if err != nil {
		return err
	}
	if rest != "" {
		return fmt.Errorf("%d bytes after the reply", len(rest))
	}
	return nil
}

func checkFrameAt(b string, proto, depth int) (string, error) {
	if depth > 8 {
		return "", fmt.Errorf("nested too deep")
	}
	i := strings.Index(b, "\r\n")
	if i < 1 {
		return "", fmt.Errorf("no frame")
	}
	typ, line, rest := b[0], b[1:i], b[i+2:]
	if strings.ContainsAny(line, "\r\n") {
		return "", fmt.Errorf("CR or LF inside a line")
	}
	resp3Only := strings.IndexByte("_,#(=%~>|!", typ) >= 0
	if resp3Only && proto == 2 {
		return "", fmt.Errorf("RESP3 type %q in a RESP2 reply", typ)
	}
	switch typ {
	case '+', '-':
		if typ == '-' && (line == "" || strings.IndexByte(line, ' ') <= 0) {
			return "", fmt.Errorf("error %q without a code and text", line)
		}
		return rest, nil
	case ':':
		if _, err := strconv.ParseInt(line, 10, 64); err != nil {
			return "", fmt.Errorf("integer %q", line)
		}
		return rest, nil
	case '_':
		if line != "" {
			return "", fmt.Errorf("null with %q", line)
		}
		return rest, nil
	case ',':
		if _, err := strconv.ParseFloat(line, 64); err != nil && line != "nan" && line != "-nan" {
			return "", fmt.Errorf("double %q", line)
		}
		return rest, nil
	case '$', '=', '!':
		n, err := strconv.Atoi(line)
		if err != nil || n < -1 || (n == -1 && (typ != '$' || proto == 3)) {
			return "", fmt.Errorf("bulk length %q in RESP%d", line, proto)
		}
		if n == -1 {
			return rest, nil
		}
		if len(rest) < n+2 || rest[n:n+2] != "\r\n" {
			return "", fmt.Errorf("bulk of %d bytes not terminated", n)
		}
		return rest[n+2:], nil
	case '*', '%', '~', '>':
		n, err := strconv.Atoi(line)
		if err != nil || n < -1 || (n == -1 && (typ != '*' || proto == 3)) {
			return "", fmt.Errorf("aggregate length %q in RESP%d", line, proto)
		}
		if typ == '%' {
			n *= 2
		}
		for k := 0; k < n; k++ {
			if rest, err = checkFrameAt(rest, proto, depth+1); err != nil {
				return "", err
			}
		}
		return rest, nil
	}
	return "", fmt.Errorf("unknown type %q", typ)
}

// FuzzHashArgs fuzzes the arguments of the hash commands.
func FuzzHashArgs(f *testing.F) {
	// More seeds are in testdata/fuzz/FuzzHashArgs.
	f.Add(uint8(0), uint8(0), "f\x1ev")
	f.Add(uint8(0x80|12), uint8(0), "f0\x1e9223372036854775807")
	f.Add(uint8(14), uint8(1), "0\x1eCOUNT\x1e5\x1eMATCH\x1efield:1*\x1eNOVALUES")
	f.Fuzz(func(t *testing.T, cmd, key uint8, args string) {
		fuzzCommand(t, fuzzHashCmds, cmd, key, args)
	})
}

// FuzzZSetArgs fuzzes the arguments of the sorted set commands.
func FuzzZSetArgs(f *testing.F) {
	// More seeds are in testdata/fuzz/FuzzZSetArgs.
	f.Add(uint8(0), uint8(2), "GT\x1eCH\x1e1\x1em1")
	f.Add(uint8(0x80|10), uint8(2), "(1\x1e+inf\x1eBYSCORE\x1eREV\x1eLIMIT\x1e1\x1e2\x1eWITHSCORES")
	f.Add(uint8(13), uint8(3), "[a\x1e(c")
	f.Fuzz(func(t *testing.T, cmd, key uint8, args string) {
		fuzzCommand(t, fuzzZSetCmds, cmd, key, args)
	})
}

// TestFuzzInvariantsCatch checks that the invariant checks of the fuzz
// targets do fail on broken structures (so a passing fuzz run means
// something).
func TestFuzzInvariantsCatch(t *testing.T) {
	s := fuzzKeyspace()
	if err := checkStoreInvariants(s); err != nil {
		t.Fatalf("prepared keyspace: %v", err)
	}
	z := s.DB(0).Get("zbig").ZSet
	z.dict.put("member:1", 42) // the index disagrees with the tree
	if err := checkStoreInvariants(s); err == nil || !strings.Contains(err.Error(), "tree score") {
		t.Errorf("dict/tree disagreement not caught: %v", err)
	}
	s = fuzzKeyspace()
	s.DB(0).Put("e", NewHash().val())
	if err := checkStoreInvariants(s); err == nil || !strings.Contains(err.Error(), "empty hash") {
		t.Errorf("empty hash not caught: %v", err)
	}
	s = fuzzKeyspace()
	if zo := s.DB(0).Get("zone").ZSet; zo.dict != nil {
		t.Error("the one-score set holds a member index")
	} else {
		zo.tree.Insert(ZItem{9, "other"}) // another score, and still no index
	}
	if err := checkStoreInvariants(s); err == nil || !strings.Contains(err.Error(), "without an index") {
		t.Errorf("a second score without an index not caught: %v", err)
	}
	s = fuzzKeyspace()
	s.DB(0).Get("zbig").ZSet.tree.Insert(ZItem{math.NaN(), "nan"})
	if err := checkStoreInvariants(s); err == nil {
		t.Error("tree item missing from dict not caught")
	}
	s = fuzzKeyspace()
	zl := s.DB(0).Get("zlex").ZSet
	zl.lp = lpAppendScore(lpAppendStr(zl.lp, "0"), -1) // after "\xff", with a lower score
	lpSetCount(zl.lp, lpCount(zl.lp)+1)
	if err := checkStoreInvariants(s); err == nil || !strings.Contains(err.Error(), "out of order") {
		t.Errorf("listpack out of order not caught: %v", err)
	}
	s = fuzzKeyspace()
	h := s.DB(0).Get("h").Hash()
	h.Str = lpAppendStr(lpAppendStr(h.Str, "f1"), "again")
	lpSetCount(h.Str, lpCount(h.Str)+1)
	if err := checkStoreInvariants(s); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("listpack field twice not caught: %v", err)
	}
	for _, c := range []struct {
		frame string
		proto int
		ok    bool
	}{
		{"+OK\r\n", 2, true},
		{"$-1\r\n", 2, true},
		{"$-1\r\n", 3, false},
		{"_\r\n", 2, false},
		{"*2\r\n$1\r\na\r\n,1.5\r\n", 3, true},
		{"*2\r\n$1\r\na\r\n", 2, false},
		{":1\r\n:2\r\n", 2, false},
		{"$3\r\nab\r\n", 2, false},
		{"-ERR\r\n", 2, false},
		{"%1\r\n$1\r\na\r\n:1\r\n", 3, true},
	} {
		if err := checkFrame(c.frame, c.proto); (err == nil) != c.ok {
			t.Errorf("checkFrame(%q, %d) = %v", c.frame, c.proto, err)
		}
	}
}
