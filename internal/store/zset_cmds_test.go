package store

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/emqd/emqd/internal/num"
	"github.com/emqd/emqd/internal/resp"
)

// latin1 turns a transcript string (bytes stored as latin-1 code points)
// back into bytes.
func latin1(s string) string {
	b := make([]byte, 0, len(s))
	for _, r := range s {
		b = append(b, byte(r))
	}
	return string(b)
}

type transcriptLine struct {
	Send    []string `json:"send"`
	Raw     string   `json:"raw"`
	Reply   string   `json:"reply"`
	Compare string   `json:"compare"`
}

// replayZSetTranscript replays a golden transcript recorded from Valkey
// 8.0.1 (shared/compat) on a fresh store, comparing every sorted set
// reply byte for byte. Commands of other families run when registered;
// SET and EXISTS fall back to direct store access when they are not, so
// the WRONGTYPE lines still run.
func replayZSetTranscript(t *testing.T, file string) (checked int) {
	t.Helper()
	f, err := os.Open(goldenDir + file)
	if err != nil {
		t.Fatalf("transcript not available: %v", err)
	}
	defer f.Close()
	s := New(16)
	proto := 2
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l transcriptLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if len(l.Send) == 0 {
			continue
		}
		args := make([]string, len(l.Send))
		for i, a := range l.Send {
			args[i] = latin1(a)
		}
		want := latin1(l.Reply)
		name := strings.ToLower(args[0])
		switch {
		case name == "hello" && !has("hello"):
			proto, _ = strconv.Atoi(args[1])
			continue
		case name == "set" && !has("set"):
			s.DB(0).Put(args[1], &Value{Kind: KindString, Str: []byte(args[2])})
			continue
		case name == "exists" && !has("exists"):
			if got := integer(boolInt(s.DB(0).Get(args[1]) != nil)); got != want {
				t.Errorf("%s %q: got %q want %q", file, args, got, want)
			}
			continue
		case !has(name):
			continue
		}
		got := run(t, s, proto, args...)
		switch l.Compare {
		case "exact":
			if got != want {
				t.Errorf("%s %q:\n got  %q\n want %q", file, args, got, want)
			}
			checked++
		case "shape":
			if name == "zrandmember" && got != want {
				t.Errorf("%s %q:\n got  %q\n want %q", file, args, got, want)
			}
		}
	}
	return checked
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func TestZSetTranscript(t *testing.T) {
	n := replayZSetTranscript(t, "zset.jsonl")
	t.Logf("%d lines compared", n)
	if n < 100 {
		t.Errorf("only %d lines compared", n)
	}
}

func TestZSetResp3Transcript(t *testing.T) {
	n := replayZSetTranscript(t, "resp3.jsonl")
	t.Logf("%d lines compared", n)
	if n < 7 {
		t.Errorf("only %d lines compared", n)
	}
}

// step is one command and its exact expected reply.
type step struct {
	args  []string
	want  string
	proto int
}

func runSteps(t *testing.T, s *Store, steps []step) {
	t.Helper()
	for _, st := range steps {
		p := st.proto
		if p == 0 {
			p = 2
		}
		if got := run(t, s, p, st.args...); got != st.want {
			t.Errorf("%q (RESP%d):\n got  %q\n want %q", st.args, p, got, st.want)
		}
	}
}

func a(args ...string) []string { return args }

func dbl(s string) string { return "," + s + "\r\n" }

func TestZAddOptionsAndErrors(t *testing.T) {
	s := New(16)
	runSteps(t, s, []step{
		{a("ZADD", "z", "1", "a", "nx", "2"), errReply(ErrNotFloat), 0}, // options only before the first score
		{a("ZADD", "z", "nx"), errReply("ERR wrong number of arguments for 'zadd' command"), 0},
		{a("ZADD", "z", "nx", "xx"), errReply(ErrSyntax), 0},
		{a("ZADD", "z", "NX", "xx", "incr", "1", "a"), errReply(errZAddXXNX), 0},
		{a("ZADD", "z", "lt", "gt", "1", "a", "2"), errReply(ErrSyntax), 0}, // odd count first
		{a("ZADD", "z", "Gt", "Lt", "1", "a"), errReply(errZAddGTLTNX), 0},
		{a("ZADD", "z", "lt", "nx", "1", "a"), errReply(errZAddGTLTNX), 0},
		{a("ZADD", "z", "xx", "nx", "gt", "1", "a"), errReply(errZAddXXNX), 0},
		{a("ZADD", "z", "incr", "gt", "lt", "1", "a", "2", "b"), errReply(errZAddGTLTNX), 0},
		{a("ZADD", "z", "incr", "1", "a", "x", "b"), errReply(errZAddIncrPair), 0},
		{a("ZADD", "z", "1", "a", "2", "b", "x", "c"), errReply(ErrNotFloat), 0},
	})
	if d := dump(s); d != "" {
		t.Fatalf("refused ZADDs left %q", d)
	}
	runSteps(t, s, []step{
		{a("ZADD", "z", "xx", "1", "a"), integer(0), 0},
		{a("ZADD", "z", "xx", "incr", "1", "a"), nilBulk, 0},
		{a("ZADD", "z", "xx", "incr", "1", "a"), nilResp3, 3},
	})
	if d := dump(s); d != "" {
		t.Fatalf("ZADD XX on a missing key created %q", d)
	}
	runSteps(t, s, []step{
		{a("ZADD", "z", "1", "a", "2", "b", "1", "a"), integer(2), 0},
		{a("ZADD", "z", "ch", "1", "a", "3", "b", "4", "c"), integer(2), 0},
		{a("ZADD", "z", "gt", "ch", "0", "a", "5", "b", "1", "new"), integer(2), 0}, // b raised, new added
		{a("ZADD", "z", "lt", "ch", "0", "a", "9", "b"), integer(1), 0},
		{a("ZADD", "z", "gt", "xx", "ch", "9", "a", "9", "nosuch"), integer(1), 0},
		{a("ZSCORE", "z", "nosuch"), nilBulk, 0},
		{a("ZADD", "z", "gt", "incr", "-1", "a"), nilBulk, 0},
		{a("ZADD", "z", "lt", "incr", "-1", "a"), bulk("8"), 0},
		{a("ZADD", "z", "nx", "incr", "5", "fresh"), bulk("5"), 0},
		{a("ZADD", "z", "incr", "0.5", "fresh"), dbl("5.5"), 3},
		{a("ZADD", "z", "ch", "0", "a", "-0", "a"), integer(1), 0},
		{a("ZADD", "z", "ch", "-0", "a"), integer(0), 0},
		{a("ZSCORE", "z", "a"), bulk("0"), 0},
		{a("ZADD", "z", "+inf", "a"), integer(0), 0},
		{a("ZADD", "z", "incr", "-inf", "a"), errReply(errZNaN), 0},
		{a("ZSCORE", "z", "a"), bulk("inf"), 0},
		{a("ZINCRBY", "z", "-inf", "a"), errReply(errZNaN), 0},
		{a("ZINCRBY", "z", "nx", "a"), errReply(ErrSyntax), 0}, // ZINCRBY runs ZADD's option loop
		{a("ZINCRBY", "z", "1e400", "a"), errReply(ErrNotFloat), 0},
		{a("ZINCRBY", "z", "0x1p-2", "b"), bulk("5.25"), 0},
		{a("ZINCRBY", "z", "-0", "neg0"), bulk("-0"), 0}, // the reply is the computed score
		{a("ZSCORE", "z", "neg0"), bulk("0"), 0},
		{a("ZADD", "z", "0x1.8", "hex", "1e-400", "x"), errReply(ErrNotFloat), 0},
		{a("ZSCORE", "z", "hex"), nilBulk, 0},
		{a("ZADD", "z", "INF", "i1", "-Infinity", "i2", "5.", "i3", ".5", "i4", "01", "i5"), integer(5), 0},
		{a("ZMSCORE", "z", "i1", "i2", "i3", "i4", "i5", "zz"), arr(bulk("inf"), bulk("-inf"), bulk("5"), bulk("0.5"), bulk("1"), nilBulk), 0},
		{a("ZMSCORE", "z", "i1", "zz"), arr(dbl("inf"), nilResp3), 3},
		{a("ZMSCORE", "nokey", "x", "y"), arr(nilResp3, nilResp3), 3},
	})
	s.DB(0).Put("str", &Value{Kind: KindString, Str: []byte("v")})
	before := dump(s)
	runSteps(t, s, []step{
		{a("ZADD", "str", "x", "a"), errReply(ErrNotFloat), 0},
		{a("ZADD", "str", "1", "a"), wrongTypeRe, 0},
		{a("ZADD", "str", "xx", "1", "a"), wrongTypeRe, 0},
		{a("ZINCRBY", "str", "x", "a"), errReply(ErrNotFloat), 0},
		{a("ZINCRBY", "str", "1", "a"), wrongTypeRe, 0},
		{a("ZREM", "str", "a"), wrongTypeRe, 0},
		{a("ZSCORE", "str", "a"), wrongTypeRe, 0},
		{a("ZMSCORE", "str", "a"), wrongTypeRe, 0},
		{a("ZCARD", "str"), wrongTypeRe, 0},
		{a("ZCOUNT", "str", "x", "1"), errReply(ErrMinMaxFloat), 0},
		{a("ZCOUNT", "str", "0", "1"), wrongTypeRe, 0},
		{a("ZLEXCOUNT", "str", "a", "+"), errReply(ErrMinMaxLex), 0},
		{a("ZLEXCOUNT", "str", "-", "+"), wrongTypeRe, 0},
		{a("ZRANGE", "str", "x", "y"), errReply(ErrNotInteger), 0},
		{a("ZRANGE", "str", "0", "1"), wrongTypeRe, 0},
		{a("ZRANK", "str", "a", "bogus"), errReply(ErrSyntax), 0},
		{a("ZRANK", "str", "a"), wrongTypeRe, 0},
		{a("ZPOPMIN", "str", "x"), errReply(ErrPositive), 0},
		{a("ZPOPMIN", "str"), wrongTypeRe, 0},
		{a("ZPOPMAX", "str", "1"), wrongTypeRe, 0},
		{a("ZREMRANGEBYRANK", "str", "x", "1"), errReply(ErrNotInteger), 0},
		{a("ZREMRANGEBYRANK", "str", "0", "1"), wrongTypeRe, 0},
		{a("ZREMRANGEBYSCORE", "str", "0", "1"), wrongTypeRe, 0},
		{a("ZREMRANGEBYLEX", "str", "-", "+"), wrongTypeRe, 0},
		{a("ZSCAN", "str", "x"), errReply(ErrInvalidCur), 0},
		{a("ZSCAN", "str", "0", "bogus"), wrongTypeRe, 0},
		{a("ZRANDMEMBER", "str", "x"), errReply(ErrNotInteger), 0},
		{a("ZRANDMEMBER", "str", "1"), wrongTypeRe, 0},
		{a("ZRANDMEMBER", "str"), wrongTypeRe, 0},
	})
	if after := dump(s); after != before {
		t.Errorf("refusals changed the store:\n%s\n%s", before, after)
	}
}

func TestZRangeOptionLoop(t *testing.T) {
	s := New(16)
	run(t, s, 2, "ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d")
	run(t, s, 2, "ZADD", "lex", "0", "a", "0", "b", "0", "c")
	lim := errReply(errZLimitNeedsBy)
	runSteps(t, s, []step{
		{a("ZRANGE", "z", "0", "-1", "BYSCORE", "BYSCORE"), errReply(ErrSyntax), 0},
		{a("ZRANGE", "z", "0", "-1", "BYSCORE", "BYLEX"), errReply(ErrSyntax), 0},
		{a("ZRANGE", "z", "0", "-1", "REV", "REV"), errReply(ErrSyntax), 0},
		{a("ZRANGE", "z", "0", "-1", "LIMIT", "1"), errReply(ErrSyntax), 0},
		{a("ZRANGE", "z", "0", "-1", "LIMIT", "x", "1", "FOO"), errReply(ErrNotInteger), 0},
		{a("ZRANGE", "z", "0", "-1", "LIMIT", "0", "1", "FOO"), errReply(ErrSyntax), 0},
		{a("ZRANGE", "z", "0", "-1", "LIMIT", "0", "1"), lim, 0},
		{a("ZRANGE", "z", "0", "-1", "LIMIT", "0", "-1"), bulks("a", "b", "c", "d"), 0}, // LIMIT x -1 is "no LIMIT"
		{a("ZRANGE", "z", "x", "y", "LIMIT", "0", "1", "WITHSCORES", "BYLEX"), errReply(errZScoresBylex), 0},
		{a("ZRANGE", "z", "x", "y", "LIMIT", "0", "1"), lim, 0},
		{a("ZRANGE", "z", "x", "y", "WITHSCORES", "BYLEX"), errReply(errZScoresBylex), 0},
		{a("ZRANGE", "z", "x", "y", "BYSCORE"), errReply(ErrMinMaxFloat), 0},
		{a("ZRANGE", "z", "x", "y", "BYLEX"), errReply(ErrMinMaxLex), 0},
		{a("ZRANGE", "z", "0", "9223372036854775808"), errReply(ErrNotInteger), 0},
		{a("ZRANGE", "nokey", "0", "-1", "WITHSCORES"), emptyArray, 3},
		{a("ZRANGEBYSCORE", "z", "0", "5", "REV"), errReply(ErrSyntax), 0},
		{a("ZRANGEBYSCORE", "z", "0", "5", "BYSCORE"), errReply(ErrSyntax), 0},
		{a("ZRANGEBYSCORE", "z", "0", "5", "withscores", "limit", "1", "2"), bulks("b", "2", "c", "3"), 0},
		{a("ZRANGEBYLEX", "lex", "-", "+", "WITHSCORES"), errReply(errZScoresBylex), 0},
		{a("ZRANGEBYLEX", "lex", "-", "+", "LIMIT", "1", "1"), bulks("b"), 0},
		{a("ZREVRANGEBYLEX", "lex", "+", "-", "LIMIT", "1", "5"), bulks("b", "a"), 0},
		{a("ZREVRANGEBYLEX", "lex", "-", "+"), emptyArray, 0},
		{a("ZREVRANGE", "z", "0", "1", "LIMIT", "0", "1"), lim, 0},
		{a("ZREVRANGE", "z", "0", "1", "BYSCORE"), errReply(ErrSyntax), 0},
		{a("ZREVRANGE", "z", "0", "1", "REV"), errReply(ErrSyntax), 0},
		{a("ZREVRANGE", "z", "0", "1", "WITHSCORES"), bulks("d", "4", "c", "3"), 0},
		{a("ZREVRANGE", "z", "-1", "100"), bulks("a"), 0},
		{a("ZREVRANGE", "z", "0", "1", "WITHSCORES"), arr(arr(bulk("d"), dbl("4")), arr(bulk("c"), dbl("3"))), 3},
		{a("ZRANGE", "z", "(1", "+inf", "BYSCORE", "WITHSCORES", "LIMIT", "1", "1"), arr(arr(bulk("c"), dbl("3"))), 3},
		{a("ZRANGE", "z", "+inf", "(1", "BYSCORE", "REV", "LIMIT", "0", "2"), bulks("d", "c"), 0},
		{a("ZRANGE", "z", "-100", "-3"), bulks("a", "b"), 0},
		{a("ZRANGE", "z", "2", "100"), bulks("c", "d"), 0},
		{a("ZRANGE", "z", "4", "5"), emptyArray, 0},
		{a("ZRANGE", "z", "-1", "-2"), emptyArray, 0},
		{a("ZRANGE", "z", "0", "-5"), emptyArray, 0},
		{a("ZRANGE", "z", "0", "-4"), bulks("a"), 0},
		{a("ZRANGE", "z", "0", "0", "rev"), bulks("d"), 0},
		{a("ZRANGE", "z", "-9223372036854775808", "9223372036854775807"), bulks("a", "b", "c", "d"), 0},
	})
}

func TestZScoreRanges(t *testing.T) {
	s := New(16)
	run(t, s, 2, "ZADD", "z", "-inf", "ninf", "1", "a", "2", "b", "2", "bb", "3", "c", "inf", "pinf")
	runSteps(t, s, []step{
		{a("ZCOUNT", "z", "-inf", "+inf"), integer(6), 0},
		{a("ZCOUNT", "z", "(-inf", "(+inf"), integer(4), 0},
		{a("ZCOUNT", "z", "(2", "(2"), integer(0), 0},
		{a("ZCOUNT", "z", "2", "2"), integer(2), 0},
		{a("ZCOUNT", "z", "(2", "2"), integer(0), 0},
		{a("ZCOUNT", "z", "3", "1"), integer(0), 0},
		{a("ZCOUNT", "z", "", "(2"), integer(1), 0}, // "" is 0
		{a("ZCOUNT", "z", "(", "1e400"), integer(5), 0},
		{a("ZCOUNT", "z", "  1", "0x2"), integer(3), 0},
		{a("ZCOUNT", "z", "1", "2 "), errReply(ErrMinMaxFloat), 0},
		{a("ZCOUNT", "z", "((1", "2"), errReply(ErrMinMaxFloat), 0},
		{a("ZCOUNT", "z", "1", "nan"), errReply(ErrMinMaxFloat), 0},
		{a("ZCOUNT", "nokey", "1", "2"), integer(0), 0},
		{a("ZRANGEBYSCORE", "z", "(1", "(3"), bulks("b", "bb"), 0},
		{a("ZRANGEBYSCORE", "z", "(inf", "inf"), emptyArray, 0},
		{a("ZRANGEBYSCORE", "z", "inf", "inf"), bulks("pinf"), 0},
		{a("ZRANGEBYSCORE", "z", "-inf", "(-inf"), emptyArray, 0},
		{a("ZRANGEBYSCORE", "z", "-inf", "-inf"), bulks("ninf"), 0},
		{a("ZREVRANGEBYSCORE", "z", "inf", "inf"), bulks("pinf"), 0},
		{a("ZREVRANGEBYSCORE", "z", "(inf", "-inf"), bulks("c", "bb", "b", "a", "ninf"), 0},
		{a("ZREVRANGEBYSCORE", "z", "2", "2"), bulks("bb", "b"), 0},
		{a("ZREVRANGEBYSCORE", "z", "(2", "-inf", "LIMIT", "1", "1"), bulks("ninf"), 0},
		{a("ZREVRANGEBYSCORE", "z", "+inf", "-inf", "LIMIT", "2", "-5"), bulks("bb", "b", "a", "ninf"), 0},
		{a("ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "-1", "2"), emptyArray, 0},
		{a("ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "6", "2"), emptyArray, 0},
		{a("ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "5", "2"), bulks("pinf"), 0},
		{a("ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "0", "0"), emptyArray, 0},
		{a("ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "2", "-1"), bulks("b", "bb", "c", "pinf"), 0},
		{a("ZRANGEBYSCORE", "z", "2", "3", "WITHSCORES"), arr(arr(bulk("b"), dbl("2")), arr(bulk("bb"), dbl("2")), arr(bulk("c"), dbl("3"))), 3},
		{a("ZRANGEBYSCORE", "z", "5", "6", "WITHSCORES"), emptyArray, 3},
	})
}

func TestZLex(t *testing.T) {
	s := New(16)
	run(t, s, 2, "ZADD", "z", "0", "", "0", "B", "0", "a", "0", "aa", "0", "b", "0", "c")
	runSteps(t, s, []step{
		{a("ZRANGE", "z", "0", "-1"), bulks("", "B", "a", "aa", "b", "c"), 0},
		{a("ZRANGEBYLEX", "z", "[", "(a"), bulks("", "B"), 0},
		{a("ZRANGEBYLEX", "z", "(", "[a"), bulks("B", "a"), 0},
		{a("ZRANGEBYLEX", "z", "(a", "[b"), bulks("aa", "b"), 0},
		{a("ZRANGEBYLEX", "z", "[a", "[a"), bulks("a"), 0},
		{a("ZRANGEBYLEX", "z", "(a", "[a"), emptyArray, 0},
		{a("ZRANGEBYLEX", "z", "[b", "[a"), emptyArray, 0},
		{a("ZRANGEBYLEX", "z", "+", "-"), emptyArray, 0},
		{a("ZRANGEBYLEX", "z", "-", "-"), emptyArray, 0},
		{a("ZRANGEBYLEX", "z", "+", "+"), emptyArray, 0},
		{a("ZRANGEBYLEX", "z", "[ab", "+"), bulks("b", "c"), 0},
		{a("ZRANGEBYLEX", "z", "-", "(B"), bulks(""), 0},
		{a("ZREVRANGEBYLEX", "z", "(b", "(", "LIMIT", "1", "2"), bulks("a", "B"), 0},
		{a("ZRANGEBYLEX", "z", "++", "+"), errReply(ErrMinMaxLex), 0},
		{a("ZRANGEBYLEX", "z", "-", "a"), errReply(ErrMinMaxLex), 0},
		{a("ZRANGEBYLEX", "z", "", "+"), errReply(ErrMinMaxLex), 0},
		{a("ZRANGEBYLEX", "z", "-", "+", "LIMIT", "-1", "1"), emptyArray, 0},
		{a("ZRANGEBYLEX", "z", "-", "+", "LIMIT", "4", "-1"), bulks("b", "c"), 0},
		{a("ZLEXCOUNT", "z", "-", "+"), integer(6), 0},
		{a("ZLEXCOUNT", "z", "(", "+"), integer(5), 0},
		{a("ZLEXCOUNT", "z", "[aa", "(c"), integer(2), 0},
		{a("ZLEXCOUNT", "z", "[zz", "+"), integer(0), 0},
		{a("ZLEXCOUNT", "nokey", "-", "+"), integer(0), 0},
		{a("ZREMRANGEBYLEX", "z", "(a", "[b"), integer(2), 0},
		{a("ZRANGE", "z", "0", "-1"), bulks("", "B", "a", "c"), 0},
		{a("ZREMRANGEBYLEX", "z", "-", "+"), integer(4), 0},
		{a("ZCARD", "z"), integer(0), 0},
	})
	if d := dump(s); d != "" {
		t.Fatalf("empty zset kept: %q", d)
	}
	// Mixed scores: the listpack walk (undefined by the docs, deterministic
	// in Valkey): the first member at or after min, then on while <= max.
	run(t, s, 2, "ZADD", "m", "1", "a", "2", "c", "3", "b", "4", "d")
	runSteps(t, s, []step{
		{a("ZRANGEBYLEX", "m", "[a", "[b"), bulks("a"), 0},
		{a("ZRANGEBYLEX", "m", "[b", "+"), bulks("c", "b", "d"), 0},
		{a("ZRANGEBYLEX", "m", "[a", "[b", "LIMIT", "2", "5"), bulks("b"), 0},
		{a("ZREVRANGEBYLEX", "m", "[c", "-"), bulks("b", "c", "a"), 0},
		{a("ZLEXCOUNT", "m", "[b", "[c"), integer(2), 0},
		{a("ZLEXCOUNT", "m", "(a", "+"), integer(3), 0},
		{a("ZREMRANGEBYLEX", "m", "[b", "[c"), integer(2), 0},
		{a("ZRANGE", "m", "0", "-1"), bulks("a", "d"), 0},
	})
}

func TestZRankPopRem(t *testing.T) {
	s := New(16)
	run(t, s, 2, "ZADD", "z", "1", "a", "2", "b", "3", "c")
	runSteps(t, s, []step{
		{a("ZRANK", "z", "a", "withscore", "x"), errReply("ERR wrong number of arguments for 'zrank' command"), 0},
		{a("ZREVRANK", "z", "a", "withscore", "x"), errReply("ERR wrong number of arguments for 'zrevrank' command"), 0},
		{a("ZRANK", "z", "c"), integer(2), 0},
		{a("ZREVRANK", "z", "c", "WITHSCORE"), arr(integer(0), bulk("3")), 0},
		{a("ZREVRANK", "z", "c", "WITHSCORE"), arr(integer(0), dbl("3")), 3},
		{a("ZRANK", "z", "x", "WITHSCORE"), "*-1\r\n", 0},
		{a("ZRANK", "z", "x", "WITHSCORE"), nilResp3, 3},
		{a("ZRANK", "nokey", "x"), nilBulk, 0},
		{a("ZRANK", "nokey", "x", "withscore"), "*-1\r\n", 0},
		{a("ZPOPMIN", "z", "1", "2"), errReply(ErrSyntax), 0},
		{a("ZPOPMIN", "z", "-1"), errReply(ErrPositive), 0},
		{a("ZPOPMIN", "z", "1.5"), errReply(ErrPositive), 0},
		{a("ZPOPMIN", "z", "0"), emptyArray, 0},
		{a("ZPOPMIN", "nokey", "0"), emptyArray, 0},
		{a("ZPOPMAX", "z"), arr(bulk("c"), dbl("3")), 3},
		{a("ZPOPMIN", "z", "1"), arr(arr(bulk("a"), dbl("1"))), 3},
		{a("ZPOPMIN", "z", "10"), arr(bulk("b"), bulk("2")), 0},
	})
	if d := dump(s); d != "" {
		t.Fatalf("ZPOPMIN left %q", d)
	}
	run(t, s, 2, "ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e")
	runSteps(t, s, []step{
		{a("ZREM", "z", "a", "a", "x"), integer(1), 0},
		{a("ZREMRANGEBYRANK", "z", "-1", "-1"), integer(1), 0},
		{a("ZREMRANGEBYRANK", "z", "5", "10"), integer(0), 0},
		{a("ZREMRANGEBYRANK", "z", "1", "0"), integer(0), 0},
		{a("ZREMRANGEBYRANK", "nokey", "0", "-1"), integer(0), 0},
		{a("ZREMRANGEBYSCORE", "z", "(2", "+inf"), integer(2), 0},
		{a("ZREMRANGEBYSCORE", "z", "(2", "x"), errReply(ErrMinMaxFloat), 0},
		{a("ZREMRANGEBYSCORE", "nokey", "-inf", "+inf"), integer(0), 0},
		{a("ZRANGE", "z", "0", "-1", "WITHSCORES"), bulks("b", "2"), 0},
		{a("ZREM", "z", "b", "x"), integer(1), 0},
	})
	if d := dump(s); d != "" {
		t.Fatalf("ZREM left %q", d)
	}
}

func TestZScan(t *testing.T) {
	s := New(16)
	run(t, s, 2, "ZADD", "z", "1.5", "a", "0.1", "ab", "1e-7", "b")
	all := arr(bulk("0"), bulks("b", "1e-7", "ab", "0.1", "a", "1.5"))
	runSteps(t, s, []step{
		{a("ZSCAN", "z", "0"), all, 0},
		{a("ZSCAN", "z", "0"), all, 3},
		{a("ZSCAN", "z", "17", "COUNT", "1"), all, 0},
		{a("ZSCAN", "z", " 1"), all, 0},
		{a("ZSCAN", "z", "+1"), all, 0},
		{a("ZSCAN", "z", "18446744073709551615"), all, 0},
		{a("ZSCAN", "z", "18446744073709551616"), errReply(ErrInvalidCur), 0},
		{a("ZSCAN", "z", "-1"), errReply(ErrInvalidCur), 0},
		{a("ZSCAN", "z", ""), errReply(ErrInvalidCur), 0},
		{a("ZSCAN", "z", "0", "MATCH", "a*"), arr(bulk("0"), bulks("ab", "0.1", "a", "1.5")), 0},
		{a("ZSCAN", "z", "0", "MATCH", "a*", "NOSCORES"), arr(bulk("0"), bulks("ab", "a")), 0},
		{a("ZSCAN", "z", "0", "match", "*", "count", "100", "match", "?"), arr(bulk("0"), bulks("b", "1e-7", "a", "1.5")), 0},
		{a("ZSCAN", "z", "0", "COUNT", "0"), errReply(ErrSyntax), 0},
		{a("ZSCAN", "z", "0", "COUNT", "x"), errReply(ErrNotInteger), 0},
		{a("ZSCAN", "z", "0", "COUNT"), errReply(ErrSyntax), 0},
		{a("ZSCAN", "z", "0", "MATCH"), errReply(ErrSyntax), 0},
		{a("ZSCAN", "z", "0", "NOVALUES"), errReply("ERR NOVALUES option can only be used in HSCAN"), 0},
		{a("ZSCAN", "z", "0", "TYPE", "zset"), errReply(ErrSyntax), 0},
		{a("ZSCAN", "nokey", "0", "COUNT", "0"), arr(bulk("0"), emptyArray), 0},
		{a("ZSCAN", "nokey", "x"), errReply(ErrInvalidCur), 0},
	})
}

// A set bigger than ZSetScanAllMax is paged: following the cursor returns
// every member exactly once with its score, members present throughout a
// scan are returned even while others are added and removed.
func TestZScanBig(t *testing.T) {
	s := New(1)
	const n = 1000
	for i := 0; i < n; i++ {
		run(t, s, 2, "ZADD", "z", strconv.Itoa(i)+".5", "m"+strconv.Itoa(i))
	}
	seen := map[string]int{}
	cursor, pages := "0", 0
	for {
		reply := parseReply(t, run(t, s, 3, "ZSCAN", "z", cursor, "COUNT", "50")).([]any)
		cursor = reply[0].(string)
		items := reply[1].([]any)
		for i := 0; i < len(items); i += 2 {
			m, sc := items[i].(string), items[i+1].(string)
			if want := m[1:] + ".5"; sc != want {
				t.Fatalf("ZSCAN score of %s = %q want %q", m, sc, want)
			}
			seen[m]++
		}
		pages++
		// Churn between pages: new members come and go, m0..m99 go away.
		run(t, s, 2, "ZADD", "z", "1", "new"+strconv.Itoa(pages))
		run(t, s, 2, "ZREM", "z", "m"+strconv.Itoa(pages%100))
		if cursor == "0" {
			break
		}
		if pages > 1000 {
			t.Fatal("ZSCAN does not terminate")
		}
	}
	if pages < 10 {
		t.Errorf("ZSCAN of %d members took %d pages with COUNT 50", n, pages)
	}
	for i := 100; i < n; i++ {
		if seen["m"+strconv.Itoa(i)] == 0 {
			t.Fatalf("m%d (present throughout) not returned", i)
		}
	}
	reply := parseReply(t, run(t, s, 2, "ZSCAN", "z", "0", "COUNT", "5000", "MATCH", "m99*", "NOSCORES")).([]any)
	got := reply[1].([]any)
	if reply[0].(string) != "0" || len(got) != 11 {
		t.Fatalf("ZSCAN MATCH m99* NOSCORES = %v", reply)
	}
}

func TestZRandMember(t *testing.T) {
	s := New(16)
	runSteps(t, s, []step{
		{a("ZRANDMEMBER", "nokey"), nilBulk, 0},
		{a("ZRANDMEMBER", "nokey"), nilResp3, 3},
		{a("ZRANDMEMBER", "nokey", "5"), emptyArray, 0},
		{a("ZRANDMEMBER", "nokey", "x"), errReply(ErrNotInteger), 0},
		{a("ZRANDMEMBER", "nokey", "-9223372036854775808"), errReply(errCountRange), 0},
		{a("ZRANDMEMBER", "nokey", "1", "bogus"), errReply(ErrSyntax), 0},
		{a("ZRANDMEMBER", "nokey", "1", "withscores", "x"), errReply(ErrSyntax), 0},
		{a("ZRANDMEMBER", "nokey", "-9223372036854770000", "withscores"), errReply(errOutOfRange), 0},
		{a("ZRANDMEMBER", "nokey", "4611686018427387904", "withscores"), errReply(errOutOfRange), 0},
	})
	run(t, s, 2, "ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e", "6", "f", "7", "g", "8", "h", "9", "i", "10", "j")
	runSteps(t, s, []step{
		{a("ZRANDMEMBER", "z", "0"), emptyArray, 0},
		{a("ZRANDMEMBER", "z", "100"), bulks("j", "i", "h", "g", "f", "e", "d", "c", "b", "a"), 0},
		{a("ZRANDMEMBER", "z", "10", "WITHSCORES"), bulks("j", "10", "i", "9", "h", "8", "g", "7", "f", "6", "e", "5", "d", "4", "c", "3", "b", "2", "a", "1"), 0},
	})
	scoreOf := map[string]string{}
	for i, m := range "abcdefghij" {
		scoreOf[string(m)] = strconv.Itoa(i + 1)
	}
	for _, n := range []int{1, 2, 3, 4, 9} {
		for _, proto := range []int{2, 3} {
			got := parseReply(t, run(t, s, proto, "ZRANDMEMBER", "z", strconv.Itoa(n), "WITHSCORES"))
			items := got.([]any)
			if proto == 2 && len(items) != 2*n || proto == 3 && len(items) != n {
				t.Fatalf("ZRANDMEMBER %d WITHSCORES RESP%d: %d items", n, proto, len(items))
			}
			seen := map[string]bool{}
			for i := 0; i < n; i++ {
				var m, sc string
				if proto == 2 {
					m, sc = items[2*i].(string), items[2*i+1].(string)
				} else {
					pair := items[i].([]any)
					m, sc = pair[0].(string), pair[1].(string)
				}
				if seen[m] || scoreOf[m] != sc {
					t.Fatalf("ZRANDMEMBER %d: member %q score %q (dup %v)", n, m, sc, seen[m])
				}
				seen[m] = true
			}
		}
	}
	got := parseReply(t, run(t, s, 2, "ZRANDMEMBER", "z", "-30")).([]any)
	if len(got) != 30 {
		t.Fatalf("ZRANDMEMBER -30: %d items", len(got))
	}
	for _, m := range got {
		if scoreOf[m.(string)] == "" {
			t.Fatalf("ZRANDMEMBER -30 returned %q", m)
		}
	}
	if got := run(t, s, 2, "ZRANDMEMBER", "z", "-9223372036854775807"); got != errReply(errOutOfRange) {
		t.Fatalf("ZRANDMEMBER huge negative count = %q", got)
	}
	if m := run(t, s, 2, "ZRANDMEMBER", "z"); len(m) != len(bulk("a")) || scoreOf[m[4:5]] == "" {
		t.Fatalf("ZRANDMEMBER z = %q", m)
	}
}

// parseReply decodes a RESP2/RESP3 reply into string / int64 / nil /
// []any (doubles come back as their text).
func parseReply(t *testing.T, s string) any {
	t.Helper()
	v, rest := parseOne(t, s)
	if rest != "" {
		t.Fatalf("trailing bytes after reply: %q", rest)
	}
	return v
}

func parseOne(t *testing.T, s string) (any, string) {
	t.Helper()
	i := strings.Index(s, "\r\n")
	if i < 1 {
		t.Fatalf("bad reply %q", s)
	}
	head, rest := s[1:i], s[i+2:]
	switch s[0] {
	case '$':
		n, _ := strconv.Atoi(head)
		if n < 0 {
			return nil, rest
		}
		return rest[:n], rest[n+2:]
	case ',', '+':
		return head, rest
	case ':':
		n, _ := strconv.ParseInt(head, 10, 64)
		return n, rest
	case '_':
		return nil, rest
	case '*':
		n, _ := strconv.Atoi(head)
		if n < 0 {
			return nil, rest
		}
		out := make([]any, n)
		for k := range out {
			out[k], rest = parseOne(t, rest)
		}
		return out, rest
	}
	t.Fatalf("unexpected reply type in %q", s)
	return nil, ""
}

// TestZRangeModel checks the range commands against a plain sorted slice
// on random sets (duplicate scores, ±inf, exclusive bounds, LIMIT offsets
// on both sides of the walk/rank switch).
func TestZRangeModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	scores := []string{"-inf", "inf", "0", "1", "1.5", "2", "3", "-1", "7", "10"}
	for round := 0; round < 30; round++ {
		s := New(1)
		model := map[string]float64{}
		n := 1 + rng.IntN(150)
		for i := 0; i < n; i++ {
			m := fmt.Sprintf("m%03d", rng.IntN(200))
			sc := scores[rng.IntN(len(scores))]
			run(t, s, 2, "ZADD", "z", sc, m)
			v, _ := num.ParseDouble([]byte(sc))
			model[m] = v
		}
		items := make([]ZItem, 0, len(model))
		for m, v := range model {
			items = append(items, ZItem{v, m})
		}
		sort.Slice(items, func(i, j int) bool { return zless(items[i], items[j]) })
		if got := run(t, s, 2, "ZCARD", "z"); got != integer(int64(len(items))) {
			t.Fatalf("ZCARD %q want %d", got, len(items))
		}
		bounds := []string{"-inf", "(-inf", "0", "(0", "1", "(1", "1.5", "(2", "2", "5", "(7", "inf", "(inf"}
		for q := 0; q < 40; q++ {
			minS, maxS := bounds[rng.IntN(len(bounds))], bounds[rng.IntN(len(bounds))]
			r, _ := parseScoreRange([]byte(minS), []byte(maxS))
			var in []ZItem
			for _, it := range items {
				if r.gteMin(it.Score) && r.lteMax(it.Score) {
					in = append(in, it)
				}
			}
			if got := run(t, s, 2, "ZCOUNT", "z", minS, maxS); got != integer(int64(len(in))) {
				t.Fatalf("ZCOUNT %s %s = %q want %d", minS, maxS, got, len(in))
			}
			offset := []int{0, 1, 5, 31, 32, 33, 40, 100, 200}[rng.IntN(9)]
			limit := []int{-1, 0, 1, 3, 50}[rng.IntN(5)]
			for _, rev := range []bool{false, true} {
				seq := append([]ZItem(nil), in...)
				cmd := a("ZRANGEBYSCORE", "z", minS, maxS)
				if rev {
					for i, j := 0, len(seq)-1; i < j; i, j = i+1, j-1 {
						seq[i], seq[j] = seq[j], seq[i]
					}
					cmd = a("ZREVRANGEBYSCORE", "z", maxS, minS)
				}
				var want []string
				for i := offset; i < len(seq) && (limit < 0 || i < offset+limit); i++ {
					want = append(want, seq[i].Member, num.FormatScore(seq[i].Score))
				}
				cmd = append(cmd, "WITHSCORES", "LIMIT", strconv.Itoa(offset), strconv.Itoa(limit))
				if got := run(t, s, 2, cmd...); got != bulks(want...) {
					t.Fatalf("%q:\n got  %q\n want %q", cmd, got, bulks(want...))
				}
			}
		}
		for q := 0; q < 20; q++ {
			start, stop := rng.IntN(2*len(items)+2)-len(items)-1, rng.IntN(2*len(items)+2)-len(items)-1
			var want []string
			st, en, ok := clampRanks(int64(start), int64(stop), len(items))
			for i := st; ok && i <= en; i++ {
				want = append(want, items[i].Member)
			}
			if got := run(t, s, 2, "ZRANGE", "z", strconv.Itoa(start), strconv.Itoa(stop)); got != bulks(want...) {
				t.Fatalf("ZRANGE %d %d:\n got  %q\n want %q", start, stop, got, bulks(want...))
			}
			for i := range want {
				want[i] = items[len(items)-1-(st+i)].Member
			}
			if got := run(t, s, 2, "ZREVRANGE", "z", strconv.Itoa(start), strconv.Itoa(stop)); got != bulks(want...) {
				t.Fatalf("ZREVRANGE %d %d:\n got  %q\n want %q", start, stop, got, bulks(want...))
			}
		}
		for _, it := range items[:min(len(items), 10)] {
			rank := sort.Search(len(items), func(i int) bool { return !zless(items[i], it) })
			if got := run(t, s, 2, "ZRANK", "z", it.Member); got != integer(int64(rank)) {
				t.Fatalf("ZRANK %s = %q want %d", it.Member, got, rank)
			}
			if got := run(t, s, 2, "ZREVRANK", "z", it.Member); got != integer(int64(len(items)-1-rank)) {
				t.Fatalf("ZREVRANK %s = %q want %d", it.Member, got, len(items)-1-rank)
			}
		}
	}
}

// Lex ranges on a large same-score set (rank path) against a model.
func TestZLexModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	s := New(1)
	var members []string
	for i := 0; i < 300; i++ {
		m := strconv.Itoa(rng.IntN(1000))
		if run(t, s, 2, "ZADD", "z", "0", m) == integer(1) {
			members = append(members, m)
		}
	}
	sort.Strings(members)
	bound := func() string {
		switch rng.IntN(6) {
		case 0:
			return "-"
		case 1:
			return "+"
		case 2:
			return "(" + strconv.Itoa(rng.IntN(1000))
		}
		return "[" + strconv.Itoa(rng.IntN(1000))
	}
	for q := 0; q < 300; q++ {
		minS, maxS := bound(), bound()
		r, _ := parseLexRange([]byte(minS), []byte(maxS))
		var in []string
		for _, m := range members {
			if !r.empty() && r.gteMin(m) && r.lteMax(m) {
				in = append(in, m)
			}
		}
		if got := run(t, s, 2, "ZLEXCOUNT", "z", minS, maxS); got != integer(int64(len(in))) {
			t.Fatalf("ZLEXCOUNT %s %s = %q want %d", minS, maxS, got, len(in))
		}
		offset, limit := rng.IntN(60), rng.IntN(40)-5
		var want []string
		for i := offset; i < len(in) && (limit < 0 || i < offset+limit); i++ {
			want = append(want, in[i])
		}
		cmd := a("ZRANGEBYLEX", "z", minS, maxS, "LIMIT", strconv.Itoa(offset), strconv.Itoa(limit))
		if got := run(t, s, 2, cmd...); got != bulks(want...) {
			t.Fatalf("%q:\n got  %q\n want %q", cmd, got, bulks(want...))
		}
	}
}

// The hot paths allocate nothing beyond the reply buffer (and the member
// string of a new member).
func TestZSetHotPathAllocs(t *testing.T) {
	s := New(1)
	for i := 0; i < 1000; i++ {
		run(t, s, 2, "ZADD", "z", strconv.Itoa(i), "m"+strconv.Itoa(i))
	}
	c := &Ctx{S: s, DB: s.DB(0), W: resp.NewWriter()}
	cases := [][][]byte{
		bargs("ZADD", "z", "5", "m7"),
		bargs("ZSCORE", "z", "m7"),
		bargs("ZRANGEBYSCORE", "z", "10", "+inf", "WITHSCORES", "LIMIT", "0", "10"),
		bargs("ZREVRANGEBYSCORE", "z", "(500", "-inf", "LIMIT", "3", "10"),
		bargs("ZRANGE", "z", "0", "9", "WITHSCORES"),
		bargs("ZCOUNT", "z", "10", "(20"),
		bargs("ZRANK", "z", "m7"),
	}
	h := harnessTable()
	for _, argv := range cases {
		cs := h[strings.ToLower(string(argv[0]))]
		allocs := testing.AllocsPerRun(200, func() {
			c.W.Reset()
			c.ResetForCommand(argv)
			cs.Handler(c)
		})
		t.Logf("%s: %v allocs", argv[0], allocs)
		if allocs > 1 { // the key string of the lookup may allocate once
			t.Errorf("%s allocates %v times per call", argv[0], allocs)
		}
	}
	pop := bargs("ZPOPMIN", "z")
	cs := h["zpopmin"]
	allocs := testing.AllocsPerRun(200, func() {
		c.W.Reset()
		c.ResetForCommand(pop)
		cs.Handler(c)
	})
	if allocs > 1 {
		t.Errorf("ZPOPMIN allocates %v times per call", allocs)
	}
}

func bargs(args ...string) [][]byte {
	out := make([][]byte, len(args))
	for i, s := range args {
		out[i] = []byte(s)
	}
	return out
}

func BenchmarkZAddNew(b *testing.B) {
	s := New(1)
	c := &Ctx{S: s, DB: s.DB(0), W: resp.NewWriter()}
	members := make([][]byte, 1<<16)
	for i := range members {
		members[i] = []byte("element:" + strconv.Itoa(i))
	}
	argv := [][]byte{[]byte("zadd"), []byte("myzset"), []byte("0"), nil}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.W.Reset()
		argv[3] = members[i&(len(members)-1)]
		c.ResetForCommand(argv)
		cmdZAdd(c)
	}
}

func BenchmarkZRangeByScoreLimit(b *testing.B) {
	s := New(1)
	c := &Ctx{S: s, DB: s.DB(0), W: resp.NewWriter()}
	for i := 0; i < 100000; i++ {
		c.W.Reset()
		c.ResetForCommand(bargs("ZADD", "z", strconv.Itoa(i%1000), "m"+strconv.Itoa(i)))
		cmdZAdd(c)
	}
	argv := bargs("ZRANGEBYSCORE", "z", "(500", "+inf", "WITHSCORES", "LIMIT", "0", "10")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.W.Reset()
		c.ResetForCommand(argv)
		zrangeGeneric(c, zrangeScore, dirForward)
	}
}

func BenchmarkZPopMin(b *testing.B) {
	s := New(1)
	c := &Ctx{S: s, DB: s.DB(0), W: resp.NewWriter()}
	add := [][]byte{[]byte("zadd"), []byte("z"), nil, nil}
	pop := bargs("ZPOPMIN", "z")
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if i%100000 == 0 {
			b.StopTimer()
			for j := 0; j < 100000; j++ {
				c.W.Reset()
				add[2] = []byte(strconv.Itoa(j))
				add[3] = []byte("m" + strconv.Itoa(j))
				c.ResetForCommand(add)
				cmdZAdd(c)
			}
			b.StartTimer()
		}
		c.W.Reset()
		c.ResetForCommand(pop)
		zpopGeneric(c, false)
	}
}

func TestZSetRefusalsKeepStore(t *testing.T) {
	s := New(16)
	run(t, s, 2, "ZADD", "z", "1", "a", "2", "b")
	before := dump(s)
	for _, args := range [][]string{
		a("ZADD", "z", "1", "c", "x", "d"),
		a("ZADD", "z", "incr", "1", "c", "2", "d"),
		a("ZADD", "z", "xx", "nx", "1", "c"),
		a("ZADD", "new", "1", "c", "nan", "d"),
		a("ZINCRBY", "new", "x", "c"),
		a("ZREMRANGEBYSCORE", "z", "x", "1"),
		a("ZREMRANGEBYRANK", "z", "0", "x"),
		a("ZREMRANGEBYLEX", "z", "a", "+"),
		a("ZPOPMIN", "z", "-1"),
		a("ZPOPMAX", "z", "1", "2"),
		a("ZREMRANGEBYRANK", "z", "5", "6"),
		a("ZREMRANGEBYSCORE", "z", "(2", "+inf"),
		a("ZREM", "z", "x"),
		a("ZADD", "z", "nx", "5", "a"),
		a("ZADD", "z", "gt", "0", "a"),
		a("ZADD", "z", "xx", "1", "zz"),
	} {
		out := run(t, s, 2, args...)
		if after := dump(s); after != before {
			t.Fatalf("%q (reply %q) changed the store:\n%s\n%s", args, out, before, after)
		}
	}
}

// inf arithmetic and -0 through ZINCRBY.
func TestZIncrByEdges(t *testing.T) {
	s := New(1)
	runSteps(t, s, []step{
		{a("ZINCRBY", "z", "1e308", "m"), bulk("1e+308"), 0},
		{a("ZINCRBY", "z", "1e308", "m"), bulk("inf"), 0}, // overflow to inf is allowed
		{a("ZINCRBY", "z", "-1e308", "m"), bulk("inf"), 0},
		{a("ZINCRBY", "z", "0.1", "t"), bulk("0.1"), 0},
		{a("ZINCRBY", "z", "0.2", "t"), bulk("0.30000000000000004"), 0},
		{a("ZINCRBY", "z", "-0.30000000000000004", "t"), bulk("0"), 0},
		{a("ZSCORE", "z", "t"), dbl("0"), 3},
	})
	if v, _ := s.DB(0).Get("z").ZSet.Score("t"); math.Signbit(v) {
		t.Fatalf("-0 stored")
	}
}
