package server

import (
	"strings"
	"testing"

	"github.com/emqd/emqd/clock"
	"github.com/emqd/emqd/internal/testsupport"
)

// The blocking cases of Valkey's unit/type/zset.tcl (BZPOPMIN, BZPOPMAX,
// BZMPOP), under their Tcl names, against a server on the manual clock:
// "wait_for_blocked_client" is waitBlocked, "after" is clk.Advance.

// zmpopReply is BZMPOP's RESP2 reply [key, [[member, score] ...]].
func zmpopReply(key string, pairs ...string) string {
	out := "*2\r\n" + bulkOf(key) + "*" + itoa(int64(len(pairs)/2)) + "\r\n"
	for i := 0; i < len(pairs); i += 2 {
		out += "*2\r\n" + bulkOf(pairs[i]) + bulkOf(pairs[i+1])
	}
	return out
}

// TestTclBlockingPopsNonBlockingPath: "$popmin/$popmax with a single
// existing sorted set", "with multiple existing sorted sets", "second
// sorted set has members", and their RESP3 forms, for BZPOPMIN/BZPOPMAX
// and BZMPOP MIN/MAX, under both encodings ("- $encoding").
func TestTclBlockingPopsNonBlockingPath(t *testing.T) {
	for _, entries := range []string{"128", "0"} {
		s := startServer(t, map[string]string{"zset-max-listpack-entries": entries}, nil)
		c := dial(t, s)
		tclNonBlockingPops(t, c, entries)
	}
}

func tclNonBlockingPops(t *testing.T, c *testsupport.Conn, entries string) {
	if r := c.Do("ZADD", "enc", "1", "a"); r != ":1\r\n" {
		t.Fatal(r)
	}
	want := map[string]string{"128": "listpack", "0": "skiplist"}[entries]
	if r := c.Do("OBJECT", "ENCODING", "enc"); r != bulkOf(want) {
		t.Fatalf("encoding %q, want %s", r, want)
	}
	for _, proto := range []string{"2", "3"} {
		c.Do("HELLO", proto)
		score := func(v string) string {
			if proto == "3" {
				return "," + v + "\r\n"
			}
			return bulkOf(v)
		}
		pop := func(key, member, sc string) string { return "*3\r\n" + bulkOf(key) + bulkOf(member) + score(sc) }
		mpop := func(key, member, sc string) string {
			return "*2\r\n" + bulkOf(key) + "*1\r\n*2\r\n" + bulkOf(member) + score(sc)
		}
		for _, st := range []struct{ cmd, want string }{
			// with a single existing sorted set
			{"ZADD zset 0 a 1 b 2 c 3 d", ":4\r\n"},
			{"BZPOPMIN zset 5", pop("zset", "a", "0")},
			{"BZPOPMAX zset 5", pop("zset", "d", "3")},
			{"BZMPOP 5 1 zset MIN", mpop("zset", "b", "1")},
			{"BZMPOP 5 1 zset MAX", mpop("zset", "c", "2")},
			{"EXISTS zset", ":0\r\n"},
			// with multiple existing sorted sets
			{"ZADD z1 0 a 1 b 2 c", ":3\r\n"},
			{"ZADD z2 3 d 4 e 5 f", ":3\r\n"},
			{"BZPOPMIN z1 z2 5", pop("z1", "a", "0")},
			{"BZMPOP 5 2 z1 z2 MAX", mpop("z1", "c", "2")},
			{"ZCARD z1", ":1\r\n"},
			{"ZCARD z2", ":3\r\n"},
			{"BZPOPMAX z2 z1 5", pop("z2", "f", "5")},
			{"BZMPOP 5 2 z2 z1 MIN", mpop("z2", "d", "3")},
			{"ZCARD z1", ":1\r\n"},
			{"ZCARD z2", ":1\r\n"},
			// second sorted set has members
			{"DEL z1 z2", ":2\r\n"},
			{"ZADD z2 3 d 4 e 5 f", ":3\r\n"},
			{"BZPOPMAX z1 z2 5", pop("z2", "f", "5")},
			{"BZMPOP 5 2 z1 z2 MIN", mpop("z2", "d", "3")},
			{"ZCARD z1", ":0\r\n"},
			{"ZCARD z2", ":1\r\n"},
			{"DEL z2", ":1\r\n"},
		} {
			if got := c.Do(strings.Fields(st.cmd)...); got != st.want {
				t.Fatalf("%s RESP%s %s: %q, want %q", want, proto, st.cmd, got, st.want)
			}
		}
	}
}

// TestTclBlockingPopsReadraw: "BZPOPMIN/BZPOPMAX readraw in RESP2/3" and
// "BZMPOP readraw in RESP2/3": released on timeout, the non-blocking path
// and the blocking path (with COUNT for BZMPOP), byte for byte.
func TestTclBlockingPopsReadraw(t *testing.T) {
	clk := clock.NewManual(et0)
	s := startServer(t, nil, clk)
	admin, rd := dial(t, s), dial(t, s)
	for _, proto := range []string{"3", "2"} {
		rd.Do("HELLO", proto)
		nilArr, score := "*-1\r\n", func(v string) string { return bulkOf(v) }
		if proto == "3" {
			nilArr, score = "_\r\n", func(v string) string { return "," + v + "\r\n" }
		}
		admin.Do("DEL", "zset", "zset2")
		admin.Do("ZADD", "zset2", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e")
		for _, cmd := range [][]string{{"BZPOPMIN", "zset", "0.01"}, {"BZPOPMAX", "zset", "0.01"}, {"BZMPOP", "0.01", "1", "zset", "MIN"}, {"BZMPOP", "0.01", "2", "zset", "zset0", "MAX"}} {
			rd.Write(encode(cmd...))
			waitBlocked(t, admin, 1)
			clk.Advance(10)
			if r := rd.Read(); r != nilArr {
				t.Fatalf("RESP%s %v released on timeout: %q", proto, cmd, r)
			}
		}
		if r := rd.Do("BZPOPMIN", "zset1", "zset2", "0.1"); r != "*3\r\n"+bulkOf("zset2")+bulkOf("a")+score("1") {
			t.Fatalf("RESP%s BZPOPMIN non-blocking path: %q", proto, r)
		}
		rd.Write(encode("BZPOPMIN", "zset", "5"))
		waitBlocked(t, admin, 1)
		admin.Do("ZADD", "zset", "1", "a")
		if r := rd.Read(); r != "*3\r\n"+bulkOf("zset")+bulkOf("a")+score("1") {
			t.Fatalf("RESP%s BZPOPMIN blocking path: %q", proto, r)
		}
		if r := rd.Do("BZMPOP", "0.1", "2", "zset2", "zset4", "MIN"); r != "*2\r\n"+bulkOf("zset2")+"*1\r\n*2\r\n"+bulkOf("b")+score("2") {
			t.Fatalf("RESP%s BZMPOP non-blocking path: %q", proto, r)
		}
		rd.Write(encode("BZMPOP", "5", "2", "zset", "zset3", "MAX", "COUNT", "2"))
		waitBlocked(t, admin, 1)
		admin.Do("ZADD", "zset3", "1", "a", "2", "b", "3", "c")
		if r := rd.Read(); r != "*2\r\n"+bulkOf("zset3")+"*2\r\n*2\r\n"+bulkOf("c")+score("3")+"*2\r\n"+bulkOf("b")+score("2") {
			t.Fatalf("RESP%s BZMPOP blocking path with COUNT: %q", proto, r)
		}
		admin.Do("DEL", "zset3")
	}
}

// TestTclBlockingPopsWakeUps: "ZADD + DEL should not awake blocked
// client", "ZADD + DEL + SET should not awake blocked client", "MULTI/EXEC
// is isolated from the point of view of", "with variadic ZADD", "with zero
// timeout should block indefinitely" (for BZPOPMIN and BZMPOP MIN), and
// "BZPOPMIN with same key multiple times should work".
func TestTclBlockingPopsWakeUps(t *testing.T) {
	clk := clock.NewManual(et0)
	s := startServer(t, nil, clk)
	admin, rd := dial(t, s), dial(t, s)
	for _, pop := range []struct {
		cmd   []string
		reply func(key, member, score string) string
	}{
		{[]string{"BZPOPMIN", "zset", "0"}, popReply},
		{[]string{"BZMPOP", "0", "1", "zset", "MIN", "COUNT", "1"}, func(k, m, sc string) string { return zmpopReply(k, m, sc) }},
	} {
		for _, mid := range [][]string{{"ZADD zset 0 foo", "DEL zset"}, {"ZADD zset 0 foo", "DEL zset", "SET zset foo"}} {
			admin.Do("DEL", "zset")
			rd.Write(encode(pop.cmd...))
			waitBlocked(t, admin, 1)
			admin.Do("MULTI")
			for _, c := range mid {
				admin.Do(strings.Fields(c)...)
			}
			admin.Do("EXEC")
			waitBlocked(t, admin, 1)
			admin.Do("DEL", "zset")
			admin.Do("ZADD", "zset", "1", "bar")
			if r := rd.Read(); r != pop.reply("zset", "bar", "1") {
				t.Fatalf("%v after %v: %q", pop.cmd, mid, r)
			}
		}
		// MULTI/EXEC is isolated.
		admin.Do("DEL", "zset")
		rd.Write(encode(pop.cmd...))
		waitBlocked(t, admin, 1)
		expectSteps(t, admin, [][2]string{{"MULTI", "+OK\r\n"}, {"ZADD zset 0 a", "+QUEUED\r\n"}, {"ZADD zset 1 b", "+QUEUED\r\n"},
			{"ZADD zset 2 c", "+QUEUED\r\n"}, {"EXEC", "*3\r\n:1\r\n:1\r\n:1\r\n"}})
		if r := rd.Read(); r != pop.reply("zset", "a", "0") {
			t.Fatalf("%v MULTI/EXEC isolated: %q", pop.cmd, r)
		}
		// with variadic ZADD
		admin.Do("DEL", "zset")
		rd.Write(encode(pop.cmd...))
		waitBlocked(t, admin, 1)
		if r := admin.Do("ZADD", "zset", "-1", "foo", "1", "bar"); r != ":2\r\n" {
			t.Fatal(r)
		}
		if r := rd.Read(); r != pop.reply("zset", "foo", "-1") {
			t.Fatalf("%v variadic ZADD: %q", pop.cmd, r)
		}
		if r := admin.Do("ZRANGE", "zset", "0", "-1"); r != "*1\r\n"+bulkOf("bar") {
			t.Fatalf("left %q", r)
		}
		// with zero timeout should block indefinitely
		admin.Do("DEL", "zset")
		rd.Write(encode(pop.cmd...))
		waitBlocked(t, admin, 1)
		clk.Advance(1000)
		waitBlocked(t, admin, 1)
		admin.Do("ZADD", "zset", "0", "foo")
		if r := rd.Read(); r != pop.reply("zset", "foo", "0") {
			t.Fatalf("%v zero timeout: %q", pop.cmd, r)
		}
	}
	// BZPOPMIN with same key multiple times should work.
	admin.Do("DEL", "z1", "z2")
	rd.Write(encode("BZPOPMIN", "z1", "z2", "z2", "z1", "0"))
	waitBlocked(t, admin, 1)
	admin.Do("ZADD", "z1", "0", "a")
	if r := rd.Read(); r != popReply("z1", "a", "0") {
		t.Fatal(r)
	}
	rd.Write(encode("BZPOPMIN", "z1", "z2", "z2", "z1", "0"))
	waitBlocked(t, admin, 1)
	admin.Do("ZADD", "z2", "1", "b")
	if r := rd.Read(); r != popReply("z2", "b", "1") {
		t.Fatal(r)
	}
	admin.Do("ZADD", "z1", "0", "a")
	admin.Do("ZADD", "z2", "1", "b")
	if r := rd.Do("BZPOPMIN", "z1", "z2", "z2", "z1", "0"); r != popReply("z1", "a", "0") {
		t.Fatal(r)
	}
	if r := rd.Do("BZPOPMIN", "z1", "z2", "z2", "z1", "0"); r != popReply("z2", "b", "1") {
		t.Fatal(r)
	}
}

// TestTclBlockingPopsErrors: "BZPOP/BZMPOP against wrong type" and "BZMPOP
// with illegal argument".
func TestTclBlockingPopsErrors(t *testing.T) {
	s := startServer(t, nil, nil)
	c := dial(t, s)
	const wrongType = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
	wrongArgs := "-ERR wrong number of arguments for 'bzmpop' command\r\n"
	numkeys := "-ERR numkeys should be greater than 0\r\n"
	syntax := "-ERR syntax error\r\n"
	count := "-ERR count should be greater than 0\r\n"
	c.Do("SET", "foo", "bar")
	steps := [][2]string{
		{"BZPOPMIN foo 1", wrongType}, {"BZPOPMAX foo 1", wrongType},
		{"BZMPOP 1 1 foo min", wrongType}, {"BZMPOP 1 1 foo max", wrongType}, {"BZMPOP 1 1 foo min count 10", wrongType},
		{"DEL foo", ":1\r\n"}, {"SET foo2 bar", "+OK\r\n"},
		{"BZMPOP 1 2 foo foo2 min", wrongType}, {"BZMPOP 1 2 foo2 foo max count 1", wrongType},
		{"BZMPOP", wrongArgs}, {"BZMPOP 0 1", wrongArgs}, {"BZMPOP 0 1 myzset", wrongArgs},
		{"BZMPOP 1 0 myzset MIN", numkeys}, {"BZMPOP 1 a myzset MIN", numkeys}, {"BZMPOP 1 -1 myzset MAX", numkeys},
		{"BZMPOP 1 1 myzset bad_where", syntax}, {"BZMPOP 1 1 myzset MIN bar_arg", syntax}, {"BZMPOP 1 1 myzset MAX MIN", syntax},
		{"BZMPOP 1 1 myzset COUNT", syntax}, {"BZMPOP 1 1 myzset MIN COUNT 1 COUNT 2", syntax}, {"BZMPOP 1 2 myzset myzset2 bad_arg", syntax},
		{"BZMPOP 1 1 myzset MIN COUNT 0", count}, {"BZMPOP 1 1 myzset MAX COUNT a", count}, {"BZMPOP 1 1 myzset MIN COUNT -1", count},
		{"BZMPOP 1 2 myzset myzset2 MAX COUNT -1", count},
	}
	expectSteps(t, c, steps)
}

// TestTclBZMPOPMultipleClients: "BZMPOP with multiple blocked clients" and
// "BZMPOP should not blocks on non key arguments - #10762".
func TestTclBZMPOPMultipleClients(t *testing.T) {
	s := startServer(t, nil, nil)
	admin := dial(t, s)
	rd := []*testsupport.Conn{dial(t, s), dial(t, s), dial(t, s), dial(t, s)}
	for i, cmd := range [][]string{
		{"BZMPOP", "0", "2", "myzset", "myzset2", "min", "count", "1"},
		{"BZMPOP", "0", "2", "myzset", "myzset2", "max", "count", "10"},
		{"BZMPOP", "0", "2", "myzset", "myzset2", "min", "count", "10"},
		{"BZMPOP", "0", "2", "myzset", "myzset2", "max", "count", "1"},
	} {
		rd[i].Write(encode(cmd...))
		waitBlocked(t, admin, i+1)
	}
	expectSteps(t, admin, [][2]string{{"MULTI", "+OK\r\n"}, {"ZADD myzset 1 a 2 b 3 c 4 d 5 e", "+QUEUED\r\n"},
		{"ZADD myzset2 1 a 2 b 3 c 4 d 5 e", "+QUEUED\r\n"}, {"EXEC", "*2\r\n:5\r\n:5\r\n"}})
	for i, want := range []string{
		zmpopReply("myzset", "a", "1"),
		zmpopReply("myzset", "e", "5", "d", "4", "c", "3", "b", "2"),
		zmpopReply("myzset2", "a", "1", "b", "2", "c", "3", "d", "4", "e", "5"),
	} {
		if r := rd[i].Read(); r != want {
			t.Fatalf("rd%d: %q, want %q", i+1, r, want)
		}
	}
	admin.Do("ZADD", "myzset2", "1", "a", "2", "b", "3", "c")
	if r := rd[3].Read(); r != zmpopReply("myzset2", "c", "3") {
		t.Fatalf("rd4: %q", r)
	}
	// Non-key arguments (timeout, numkeys, MIN/MAX, COUNT and its value)
	// wake nobody.
	admin.Do("DEL", "myzset", "myzset2", "myzset3")
	rd[0].Write(encode("BZMPOP", "0", "1", "myzset", "min", "count", "10"))
	waitBlocked(t, admin, 1)
	rd[1].Write(encode("BZMPOP", "0", "2", "myzset2", "myzset3", "max", "count", "10"))
	waitBlocked(t, admin, 2)
	for _, kv := range [][3]string{{"0", "100", "timeout_value"}, {"1", "200", "numkeys_value"}, {"min", "300", "min_token"},
		{"max", "400", "max_token"}, {"count", "500", "count_token"}, {"10", "600", "count_value"}} {
		admin.Do("ZADD", kv[0], kv[1], kv[2])
	}
	waitBlocked(t, admin, 2)
	admin.Do("ZADD", "myzset", "1", "zset")
	admin.Do("ZADD", "myzset3", "1", "zset3")
	if r := rd[0].Read(); r != zmpopReply("myzset", "zset", "1") {
		t.Fatalf("rd1: %q", r)
	}
	if r := rd[1].Read(); r != zmpopReply("myzset3", "zset3", "1") {
		t.Fatalf("rd2: %q", r)
	}
}
