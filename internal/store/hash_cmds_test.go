package store

import (
	"math/big"
	"strconv"
	"strings"
	"testing"

	"github.com/emqd/emqd/internal/num"
)

// expectStep is one command and its exact expected reply.
type expectStep struct {
	args []string
	want string
}

func ex(want string, args ...string) expectStep { return expectStep{args, want} }

// runExpect runs steps in order on s in protocol proto, comparing replies
// byte for byte.
func runExpect(t *testing.T, s *Store, proto int, steps []expectStep) {
	t.Helper()
	for _, st := range steps {
		if got := run(t, s, proto, st.args...); got != st.want {
			t.Errorf("RESP%d %q\n got %q\nwant %q", proto, st.args, got, st.want)
		}
	}
}

// refuse runs a command that must be refused with want and checks it left
// every database as it was.
func refuse(t *testing.T, s *Store, proto int, want string, args ...string) {
	t.Helper()
	before := dump(s)
	got, c := runCtx(t, s, 0, proto, args...)
	if got != want {
		t.Errorf("RESP%d %q\n got %q\nwant %q", proto, args, got, want)
	}
	if after := dump(s); after != before {
		t.Errorf("%q changed the store:\nbefore %s\nafter  %s", args, before, after)
	}
	if c != nil && c.Changed() {
		t.Errorf("%q refused but recorded a change", args)
	}
}

func TestHashGoldenTranscript(t *testing.T) {
	if n := replayGolden(t, "hash.jsonl", func([]string) bool { return false }); n != 81 {
		t.Fatalf("replayed %d lines of hash.jsonl, want 81", n)
	}
}

func TestHashBasicsRESP3(t *testing.T) {
	s := New(16)
	runExpect(t, s, 3, []expectStep{
		ex(":2\r\n", "HSET", "h", "f1", "v1", "f2", "v2"),
		ex(bulk("v1"), "HGET", "h", "f1"),
		ex("_\r\n", "HGET", "h", "nofield"),
		ex("_\r\n", "HGET", "nokey", "f"),
		ex("*3\r\n"+bulk("v1")+"_\r\n"+bulk("v2"), "HMGET", "h", "f1", "x", "f2"),
		ex("*2\r\n_\r\n_\r\n", "HMGET", "nokey", "a", "b"),
		ex("%2\r\n"+bulk("f1")+bulk("v1")+bulk("f2")+bulk("v2"), "HGETALL", "h"),
		ex("%0\r\n", "HGETALL", "nokey"),
		ex(bulks("f1", "f2"), "HKEYS", "h"),
		ex(bulks("v1", "v2"), "HVALS", "h"),
		ex(emptyArray, "HKEYS", "nokey"),
		ex(emptyArray, "HVALS", "nokey"),
		ex(bulk("0.5"), "HINCRBYFLOAT", "h", "fl", "0.5"), // a bulk in RESP3 too
		ex("*2\r\n"+bulk("0")+bulks("f1", "v1", "f2", "v2", "fl", "0.5"), "HSCAN", "h", "0"),
		ex(emptyScanReply, "HSCAN", "nokey", "0"),
		ex(okReply, "HMSET", "h", "f3", "v3"),
		ex(":2\r\n", "HSTRLEN", "h", "f3"),
		ex(":0\r\n", "HSTRLEN", "h", "nofield"),
		ex(":0\r\n", "HSTRLEN", "nokey", "f"),
	})
}

// Fields keep their first insertion position; a deleted and re-added field
// goes to the end (listpack order, docs/compat.md §3.1).
func TestHashInsertionOrder(t *testing.T) {
	s := New(16)
	runExpect(t, s, 2, []expectStep{
		ex(":3\r\n", "HSET", "h", "c", "1", "a", "2", "b", "3"),
		ex(":0\r\n", "HSET", "h", "a", "9"),
		ex(bulks("c", "1", "a", "9", "b", "3"), "HGETALL", "h"),
		ex(":1\r\n", "HDEL", "h", "c"),
		ex(":1\r\n", "HSET", "h", "c", "4"),
		ex(bulks("a", "b", "c"), "HKEYS", "h"),
		ex(":1\r\n", "HSETNX", "h", "d", "5"),
		ex(":0\r\n", "HSETNX", "h", "d", "6"),
		ex(bulks("9", "3", "4", "5"), "HVALS", "h"),
	})
}

// The last HDEL removes the key; HINCRBY/HINCRBYFLOAT/HSETNX create it.
func TestHashEmptyKeyDeleted(t *testing.T) {
	s := New(16)
	runExpect(t, s, 2, []expectStep{
		ex(":2\r\n", "HSET", "h", "a", "1", "b", "2"),
		ex(":2\r\n", "HDEL", "h", "a", "b", "a", "zz"),
		ex(":0\r\n", "HLEN", "h"),
		ex(emptyArray, "HGETALL", "h"),
		ex(":0\r\n", "HDEL", "h", "a"),
		ex(":5\r\n", "HINCRBY", "n1", "f", "5"),
		ex(bulk("1.5"), "HINCRBYFLOAT", "n2", "f", "1.5"),
		ex(":1\r\n", "HSETNX", "n3", "f", "v"),
		ex(":1\r\n", "HSET", "e", "", ""),
		ex(":1\r\n", "HDEL", "e", ""),
	})
	if got := dump(s); got != "db0 \"n1\" hash: \"f\"=\"5\"\ndb0 \"n2\" hash: \"f\"=\"1.5\"\ndb0 \"n3\" hash: \"f\"=\"v\"\n" {
		t.Fatalf("store after deletions:\n%s", got)
	}
}

func TestHashIncrBy(t *testing.T) {
	s := New(16)
	runExpect(t, s, 2, []expectStep{
		ex(":5\r\n", "HSET", "h", "max", "9223372036854775807", "min", "-9223372036854775808", "one", "1", "neg", "-1", "zero", "0"),
		ex(":9223372036854775807\r\n", "HINCRBY", "h", "max", "0"),
		ex(":9223372036854775806\r\n", "HINCRBY", "h", "max", "-1"),
		ex(":9223372036854775807\r\n", "HINCRBY", "h", "max", "1"),
		ex(":-9223372036854775807\r\n", "HINCRBY", "h", "min", "1"),
		ex(":-9223372036854775808\r\n", "HINCRBY", "h", "min", "-1"),
		ex(":-9223372036854775808\r\n", "HINCRBY", "h", "zero", "-9223372036854775808"),
		ex(":9223372036854775806\r\n", "HINCRBY", "h", "neg", "9223372036854775807"),
		ex(":-9223372036854775808\r\n", "HINCRBY", "h", "new", "-9223372036854775808"),
	})
	// Overflow refusals leave the field as it was.
	for _, c := range [][]string{
		{"HINCRBY", "h", "max", "1"},
		{"HINCRBY", "h", "min", "-1"},
		{"HINCRBY", "h", "one", "9223372036854775807"},
		{"HINCRBY", "h", "zero", "-9223372036854775808"}, // zero is now LLONG_MIN
	} {
		refuse(t, s, 2, errReply(ErrOverflow), c...)
	}
	s2 := New(16)
	run(t, s2, 2, "HSET", "h", "neg", "-1")
	refuse(t, s2, 2, errReply(ErrOverflow), "HINCRBY", "h", "neg", "-9223372036854775808")
	// Stored values that string2ll refuses.
	for _, v := range []string{" 1", "1 ", "1.0", "01", "", "+1", "-0", "123456789012345678901", "9223372036854775808", "0x1", "1e3"} {
		s := New(16)
		run(t, s, 2, "HSET", "h", "f", v)
		refuse(t, s, 2, errReply(ErrHashNotInt), "HINCRBY", "h", "f", "1")
	}
	// The increment is parsed before the key type and the stored value.
	run(t, s, 2, "SET", "str", "x")
	run(t, s, 2, "HSET", "h", "bad", "x")
	for _, inc := range []string{"1.5", "abc", "", "+1", "01", "-0", "9223372036854775808", "-9223372036854775809", " 1"} {
		refuse(t, s, 2, errReply(ErrNotInteger), "HINCRBY", "str", "f", inc)
		refuse(t, s, 2, errReply(ErrNotInteger), "HINCRBY", "h", "bad", inc)
	}
	refuse(t, s, 2, wrongTypeRe, "HINCRBY", "str", "f", "1")
	refuse(t, s, 2, errReply(ErrHashNotInt), "HINCRBY", "h", "bad", "1")
}

func TestHashIncrByFloat(t *testing.T) {
	s := New(16)
	runExpect(t, s, 2, []expectStep{
		ex(bulk("0.1"), "HINCRBYFLOAT", "h", "f", "0.1"),
		ex(bulk("0.3"), "HINCRBYFLOAT", "h", "f", "0.2"),
		ex(bulk("0.3"), "HGET", "h", "f"),
		ex(bulk("1000.29999999999999999"), "HINCRBYFLOAT", "h", "f", "1e3"),
		ex(bulk("10.5"), "HINCRBYFLOAT", "h", "g", "10.5"),
		ex(bulk("10.6"), "HINCRBYFLOAT", "h", "g", "0.1"),
		ex(bulk("-0.1"), "HINCRBYFLOAT", "h", "z", "-0.1"),
		ex(bulk("0"), "HINCRBYFLOAT", "h", "z", "0.1"),
		ex(bulk("100000000000000000000"), "HINCRBYFLOAT", "h", "big", "1e20"),
		ex(bulk("0"), "HINCRBYFLOAT", "h", "tiny", "5e-324"),
		ex(bulk("3.14159265358979324"), "HINCRBYFLOAT", "h", "pi", "3.14159265358979323846"),
		ex(bulk("123456789.12345678899873747"), "HINCRBYFLOAT", "h", "n", "123456789.123456789"),
		ex(":1\r\n", "HSET", "h", "int", "9223372036854775805"),
		ex(bulk("9223372036854775807.5"), "HINCRBYFLOAT", "h", "int", "2.5"),
		ex(bulk("16"), "HINCRBYFLOAT", "h", "hex", "0x10"),
		ex(":1\r\n", "HSET", "h", "inf", "inf"),
		ex(":1\r\n", "HSET", "h", "sp", " 1"),
		ex(":1\r\n", "HSET", "h", "nan", "nan"),
		ex(":1\r\n", "HSET", "h", "huge", "1e4932"),
	})
	run(t, s, 2, "SET", "str", "x")
	// Order: increment parse, infinite increment, type, stored value, sum.
	refuse(t, s, 2, errReply(ErrNotFloat), "HINCRBYFLOAT", "str", "f", "abc")
	refuse(t, s, 2, errReply(ErrNotFloat), "HINCRBYFLOAT", "h", "f", "nan")
	refuse(t, s, 2, errReply(ErrNotFloat), "HINCRBYFLOAT", "h", "f", "1e4933")
	refuse(t, s, 2, errReply(ErrNotFloat), "HINCRBYFLOAT", "h", "f", "1e-5000")
	refuse(t, s, 2, errReply(ErrNotFloat), "HINCRBYFLOAT", "h", "f", " 1")
	refuse(t, s, 2, "-ERR value is NaN or Infinity\r\n", "HINCRBYFLOAT", "str", "f", "inf")
	refuse(t, s, 2, "-ERR value is NaN or Infinity\r\n", "HINCRBYFLOAT", "nokey", "f", "-Infinity")
	refuse(t, s, 2, wrongTypeRe, "HINCRBYFLOAT", "str", "f", "1")
	refuse(t, s, 2, "-ERR hash value is not a float\r\n", "HINCRBYFLOAT", "h", "sp", "1")
	refuse(t, s, 2, "-ERR hash value is not a float\r\n", "HINCRBYFLOAT", "h", "nan", "1")
	refuse(t, s, 2, "-ERR increment would produce NaN or Infinity\r\n", "HINCRBYFLOAT", "h", "inf", "1")
	refuse(t, s, 2, "-ERR increment would produce NaN or Infinity\r\n", "HINCRBYFLOAT", "h", "huge", "1.1e4932")
}

type captureFeed struct{ recs [][][][]byte }

func (f *captureFeed) Append(db int, cmds [][][]byte) {
	cp := make([][][]byte, len(cmds))
	for i, c := range cmds {
		for _, a := range c {
			cp[i] = append(cp[i], append([]byte(nil), a...))
		}
	}
	f.recs = append(f.recs, cp)
}

func (f *captureFeed) String() string {
	var parts []string
	for _, r := range f.recs {
		for _, c := range r {
			var ws []string
			for _, a := range c {
				ws = append(ws, string(a))
			}
			parts = append(parts, strings.Join(ws, " "))
		}
	}
	return strings.Join(parts, "; ")
}

// HINCRBYFLOAT is propagated as HSET with the final value (t_hash.c).
func TestHashIncrByFloatPropagatesHSet(t *testing.T) {
	s := New(16)
	f := &captureFeed{}
	s.SetFeed(f)
	_, c := runCtx(t, s, 0, 2, "HINCRBYFLOAT", "h", "f", "0.1")
	_, c2 := runCtx(t, s, 0, 2, "hincrbyfloat", "h", "f", "0.2")
	if !c.Changed() || !c.Propagated() || !c2.Propagated() {
		t.Fatal("HINCRBYFLOAT did not record its change")
	}
	if got := f.String(); got != "HSET h f 0.1; HSET h f 0.3" {
		t.Fatalf("feed = %q", got)
	}
}

func TestHashWrongTypeAndArity(t *testing.T) {
	s := New(16)
	run(t, s, 2, "SET", "str", "v")
	run(t, s, 2, "HSET", "h", "f", "v")
	for _, c := range [][]string{
		{"HSET", "str", "f", "v"}, {"HMSET", "str", "f", "v"}, {"HSETNX", "str", "f", "v"},
		{"HGET", "str", "f"}, {"HMGET", "str", "f"}, {"HGETALL", "str"}, {"HKEYS", "str"},
		{"HVALS", "str"}, {"HDEL", "str", "f"}, {"HEXISTS", "str", "f"}, {"HLEN", "str"},
		{"HSTRLEN", "str", "f"}, {"HINCRBY", "str", "f", "1"}, {"HINCRBYFLOAT", "str", "f", "1"},
		{"HSCAN", "str", "0"}, {"HSCAN", "str", "0", "COUNT", "0"}, {"HRANDFIELD", "str"},
		{"HRANDFIELD", "str", "0"}, {"HRANDFIELD", "str", "-3", "WITHVALUES"},
	} {
		refuse(t, s, 2, wrongTypeRe, c...)
		refuse(t, s, 3, wrongTypeRe, c...)
	}
	refuse(t, s, 2, "-ERR wrong number of arguments for 'hset' command\r\n", "HSET", "h", "a", "1", "b")
	refuse(t, s, 2, "-ERR wrong number of arguments for 'hmset' command\r\n", "HMSET", "h", "a", "1", "b")
	refuse(t, s, 2, "-ERR wrong number of arguments for 'hmset' command\r\n", "hmset", "str", "a", "1", "b")
	refuse(t, s, 2, "-ERR wrong number of arguments for 'hset' command\r\n", "HSET", "new", "a", "1", "b")
}

func TestHashScanOptions(t *testing.T) {
	s := New(16)
	run(t, s, 2, "HSET", "h", "a", "1", "b", "2", "ab", "3")
	run(t, s, 2, "SET", "str", "v")
	runExpect(t, s, 2, []expectStep{
		ex("*2\r\n"+bulk("0")+bulks("a", "1", "ab", "3"), "HSCAN", "h", "0", "MATCH", "a*"),
		ex("*2\r\n"+bulk("0")+bulks("a", "b", "ab"), "HSCAN", "h", "0", "novalues"),
		ex("*2\r\n"+bulk("0")+bulks("a", "ab"), "HSCAN", "h", "0", "COUNT", "1", "MATCH", "a*", "NOVALUES"),
		ex("*2\r\n"+bulk("0")+bulks("a", "1", "b", "2", "ab", "3"), "HSCAN", "h", "12345"), // small: cursor ignored
		ex("*2\r\n"+bulk("0")+bulks("a", "1", "b", "2", "ab", "3"), "HSCAN", "h", "01"),
		ex("*2\r\n"+bulk("0")+bulks("a", "1", "b", "2", "ab", "3"), "HSCAN", "h", " 7"),
		ex("*2\r\n"+bulk("0")+bulks("a", "1", "b", "2", "ab", "3"), "HSCAN", "h", "0", "MATCH", "*"),
		ex(emptyScanReply, "HSCAN", "nokey", "0", "COUNT", "0"), // options unread on a missing key
		ex(emptyScanReply, "HSCAN", "nokey", "0", "bogus"),
	})
	for _, c := range []struct {
		want string
		args []string
	}{
		{ErrInvalidCur, []string{"HSCAN", "h", "x"}},
		{ErrInvalidCur, []string{"HSCAN", "str", "x"}}, // cursor before the type
		{ErrInvalidCur, []string{"HSCAN", "nokey", "-1"}},
		{ErrInvalidCur, []string{"HSCAN", "h", "18446744073709551616"}},
		{ErrInvalidCur, []string{"HSCAN", "h", ""}},
		{ErrInvalidCur, []string{"HSCAN", "h", "1 "}},
		{ErrSyntax, []string{"HSCAN", "h", "0", "COUNT", "0"}},
		{ErrSyntax, []string{"HSCAN", "h", "0", "COUNT", "-1"}},
		{ErrNotInteger, []string{"HSCAN", "h", "0", "COUNT", "x"}},
		{ErrSyntax, []string{"HSCAN", "h", "0", "COUNT"}},
		{ErrSyntax, []string{"HSCAN", "h", "0", "MATCH"}},
		{ErrSyntax, []string{"HSCAN", "h", "0", "TYPE", "hash"}},
		{ErrSyntax, []string{"HSCAN", "h", "0", "bogus"}},
		{"ERR NOSCORES option can only be used in ZSCAN", []string{"HSCAN", "h", "0", "NOSCORES"}},
		{ErrSyntax, []string{"HSCAN", "h", "0", "COUNT", "0", "NOSCORES"}}, // first bad option wins
		{"ERR NOSCORES option can only be used in ZSCAN", []string{"HSCAN", "h", "0", "noscores", "COUNT", "0"}},
		{ErrNotInteger, []string{"HSCAN", "h", "0", "MATCH", "a", "COUNT", "1.5"}},
	} {
		refuse(t, s, 2, errReply(c.want), c.args...)
	}
}

// A hash bigger than HashScanAllMax is paged; every field present for the
// whole scan is returned, whatever happens to the others meanwhile.
func TestHashScanLarge(t *testing.T) {
	s := New(16)
	const n = 2000
	args := []string{"HSET", "big"}
	for i := 0; i < n; i++ {
		args = append(args, "f"+strconv.Itoa(i), strconv.Itoa(i))
	}
	run(t, s, 2, args...)
	seen := map[string]int{}
	cursor := "0"
	pages := 0
	for {
		node, _ := parseRESP(t, run(t, s, 2, "HSCAN", "big", cursor, "COUNT", "25"))
		cursor = node.kids[0].text
		items := node.kids[1].kids
		if len(items)%2 != 0 {
			t.Fatalf("odd HSCAN page")
		}
		for i := 0; i < len(items); i += 2 {
			f, v := items[i].text, items[i+1].text
			if "f"+v != f && !strings.HasPrefix(f, "new") {
				t.Fatalf("field %s has value %s", f, v)
			}
			seen[f]++
		}
		pages++
		if pages == 10 {
			// Mid-scan: delete fields 0..99, add new ones.
			del := []string{"HDEL", "big"}
			for i := 0; i < 100; i++ {
				del = append(del, "f"+strconv.Itoa(i))
			}
			run(t, s, 2, del...)
			run(t, s, 2, "HSET", "big", "new1", "x", "new2", "y")
		}
		if cursor == "0" {
			break
		}
		if pages > n {
			t.Fatal("HSCAN did not terminate")
		}
	}
	if pages < (n-100)/25 { // 100 fields deleted mid-scan
		t.Errorf("a %d-field hash was scanned in %d pages", n, pages)
	}
	for i := 100; i < n; i++ {
		if seen["f"+strconv.Itoa(i)] == 0 {
			t.Fatalf("field f%d was never returned", i)
		}
	}
	for f, k := range seen {
		if k > 1 {
			t.Errorf("field %s returned %d times", f, k)
		}
	}
	// NOVALUES on a paged hash returns fields only.
	node, _ := parseRESP(t, run(t, s, 2, "HSCAN", "big", "0", "COUNT", "5", "NOVALUES"))
	for _, it := range node.kids[1].kids {
		if !strings.HasPrefix(it.text, "f") && !strings.HasPrefix(it.text, "new") {
			t.Fatalf("NOVALUES returned %q", it.text)
		}
	}
}

func TestHashRandField(t *testing.T) {
	s := New(16)
	run(t, s, 2, "HSET", "h", "a", "1", "b", "2", "c", "3", "d", "4", "e", "5")
	run(t, s, 2, "SET", "str", "v")
	runExpect(t, s, 2, []expectStep{
		ex(nilBulk, "HRANDFIELD", "nokey"),
		ex(emptyArray, "HRANDFIELD", "nokey", "5"),
		ex(emptyArray, "HRANDFIELD", "nokey", "-5", "WITHVALUES"),
		ex(emptyArray, "HRANDFIELD", "h", "0"),
		ex(emptyArray, "HRANDFIELD", "h", "0", "withvalues"),
		ex(bulks("a", "b", "c", "d", "e"), "HRANDFIELD", "h", "5"),
		ex(bulks("a", "b", "c", "d", "e"), "HRANDFIELD", "h", "100"),
		ex(bulks("a", "1", "b", "2", "c", "3", "d", "4", "e", "5"), "HRANDFIELD", "h", "4611686018427387903", "WITHVALUES"),
	})
	runExpect(t, s, 3, []expectStep{
		ex(nilResp3, "HRANDFIELD", "nokey"),
		ex(emptyArray, "HRANDFIELD", "nokey", "1"),
		ex("*5\r\n*2\r\n"+bulk("a")+bulk("1")+"*2\r\n"+bulk("b")+bulk("2")+"*2\r\n"+bulk("c")+bulk("3")+
			"*2\r\n"+bulk("d")+bulk("4")+"*2\r\n"+bulk("e")+bulk("5"), "HRANDFIELD", "h", "5", "WITHVALUES"),
		ex(bulks("a", "b", "c", "d", "e"), "HRANDFIELD", "h", "9"),
	})
	// Error texts, in order.
	for _, c := range []struct {
		want string
		args []string
	}{
		{ErrNotInteger, []string{"HRANDFIELD", "h", "x"}},
		{ErrNotInteger, []string{"HRANDFIELD", "str", "1.5"}},
		{ErrNotInteger, []string{"HRANDFIELD", "h", "x", "a", "b"}}, // count before the argument count
		{"ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807", []string{"HRANDFIELD", "h", "-9223372036854775808"}},
		{"ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807", []string{"HRANDFIELD", "h", "-9223372036854775808", "WITHVALUES"}},
		{ErrSyntax, []string{"HRANDFIELD", "h", "1", "foo"}},
		{ErrSyntax, []string{"HRANDFIELD", "h", "1", "WITHVALUES", "x"}},
		{ErrSyntax, []string{"HRANDFIELD", "str", "1", "foo"}},
		{"ERR value is out of range", []string{"HRANDFIELD", "h", "-9223372036854770000", "WITHVALUES"}},
		{"ERR value is out of range", []string{"HRANDFIELD", "h", "4611686018427387904", "withvalues"}},
		{"ERR value is out of range", []string{"HRANDFIELD", "str", "-4611686018427387904", "withvalues"}},
		{"ERR value is out of range", []string{"HRANDFIELD", "h", "-100000000"}}, // emqd's reply-size bound
	} {
		refuse(t, s, 2, errReply(c.want), c.args...)
	}
	values := map[string]string{"a": "1", "b": "2", "c": "3", "d": "4", "e": "5"}
	for i := 0; i < 50; i++ {
		// One field.
		node, _ := parseRESP(t, run(t, s, 2, "HRANDFIELD", "h"))
		if _, ok := values[node.text]; !ok || node.typ != '$' {
			t.Fatalf("HRANDFIELD h = %+v", node)
		}
		// Distinct fields, in insertion order.
		node, _ = parseRESP(t, run(t, s, 2, "HRANDFIELD", "h", "3"))
		if len(node.kids) != 3 || !(node.kids[0].text < node.kids[1].text && node.kids[1].text < node.kids[2].text) {
			t.Fatalf("HRANDFIELD h 3 = %+v", node.kids)
		}
		node, _ = parseRESP(t, run(t, s, 2, "HRANDFIELD", "h", "1", "WITHVALUES"))
		if len(node.kids) != 2 || values[node.kids[0].text] != node.kids[1].text {
			t.Fatalf("HRANDFIELD h 1 WITHVALUES = %+v", node.kids)
		}
		// Negative count: repeats allowed, exact length, pairs in RESP3.
		node, _ = parseRESP(t, run(t, s, 3, "HRANDFIELD", "h", "-20", "WITHVALUES"))
		if len(node.kids) != 20 {
			t.Fatalf("HRANDFIELD h -20 WITHVALUES (RESP3) has %d items", len(node.kids))
		}
		for _, p := range node.kids {
			if p.typ != '*' || len(p.kids) != 2 || values[p.kids[0].text] != p.kids[1].text {
				t.Fatalf("RESP3 pair %+v", p)
			}
		}
		node, _ = parseRESP(t, run(t, s, 2, "HRANDFIELD", "h", "-7", "WITHVALUES"))
		if len(node.kids) != 14 {
			t.Fatalf("HRANDFIELD h -7 WITHVALUES (RESP2) has %d items", len(node.kids))
		}
		node, _ = parseRESP(t, run(t, s, 3, "HRANDFIELD", "h", "2", "WITHVALUES"))
		if len(node.kids) != 2 || len(node.kids[0].kids) != 2 || len(node.kids[1].kids) != 2 {
			t.Fatalf("RESP3 HRANDFIELD h 2 WITHVALUES = %+v", node)
		}
	}
	// Over many draws every field shows up (a failure here is a broken
	// sampler, at odds of about 5*(4/5)^500).
	counts := map[string]int{}
	node, _ := parseRESP(t, run(t, s, 2, "HRANDFIELD", "h", "-500"))
	for _, it := range node.kids {
		counts[it.text]++
	}
	if len(counts) != 5 {
		t.Fatalf("500 draws hit %d of 5 fields", len(counts))
	}
}

// HINCRBYFLOAT stores the printed text, which the next increment parses.
func TestHashLongDoubleValueStoredAsText(t *testing.T) {
	s := New(16)
	run(t, s, 2, "HINCRBYFLOAT", "h", "f", "1.5")
	v, _ := s.DB(0).Get("h").Hash().Get("f")
	want, _ := new(big.Float).SetString("1.5")
	got, ok := num.ParseLongDouble(v)
	if !ok || got.Cmp(want) != 0 || string(v) != "1.5" {
		t.Fatalf("stored %q", v)
	}
}
