package store

import (
	"strings"
	"testing"

	"github.com/emqd/emqd/internal/resp"
)

func TestStringGetSet(t *testing.T) {
	s := New(16)
	run(t, s, 2, "HSET", "h", "f", "v")
	runExpect(t, s, 2, []expectStep{
		ex(nilBulk, "GET", "k"),
		ex(okReply, "SET", "k", "v1"),
		ex(bulk("v1"), "GET", "k"),
		ex(nilBulk, "SET", "k", "v2", "NX"),
		ex(bulk("v1"), "GET", "k"),
		ex(okReply, "SET", "k", "v2", "xx"),
		ex(nilBulk, "SET", "nokey", "v", "XX"),
		ex(":0\r\n", "EXISTS", "nokey"),
		ex(okReply, "SET", "k2", "v", "NX", "nx"), // a repeated option is fine
		ex(bulk("v2"), "SET", "k", "v3", "GET"),
		ex(nilBulk, "SET", "new", "x", "GET"),
		ex(bulk("x"), "GET", "new"),
		ex(bulk("v3"), "SET", "k", "v4", "NX", "GET"), // NX stops it; GET still replies
		ex(bulk("v3"), "GET", "k"),
		ex(nilBulk, "SET", "nokey", "v", "XX", "GET"),
		ex(":0\r\n", "EXISTS", "nokey"),
		ex(okReply, "SET", "k", "v5", "KEEPTTL"),
		ex(nilBulk, "SET", "h2", "", "GET", "get"),
		ex(bulk(""), "GET", "h2"),
		ex(okReply, "SET", "h", "now a string"), // overwrites any type without GET
		ex("+string\r\n", "TYPE", "h"),
		ex(nilBulk, "SET", "h", "x", "NX"), // NX sees a key of any type
	})
	run(t, s, 2, "HSET", "hash", "f", "v")
	runExpect(t, s, 3, []expectStep{
		ex(nilResp3, "GET", "nokey"),
		ex(nilResp3, "SET", "hash", "x", "NX"),
		ex(nilResp3, "SET", "nokey", "x", "XX", "GET"),
	})
	for _, c := range []struct {
		want string
		args []string
	}{
		{ErrWrongType, []string{"GET", "hash"}},
		{ErrWrongType, []string{"SET", "hash", "x", "GET"}},
		{ErrWrongType, []string{"SET", "hash", "x", "XX", "GET"}},
		{ErrSyntax, []string{"SET", "k", "v", "NX", "XX"}},
		{ErrSyntax, []string{"SET", "k", "v", "XX", "NX"}},
		{ErrSyntax, []string{"SET", "k", "v", "foo"}},
		{ErrSyntax, []string{"SET", "k", "v", "EX"}},
		{ErrSyntax, []string{"SET", "k", "v", "EX", "10", "PX", "10"}},
		{ErrSyntax, []string{"SET", "k", "v", "PX", "10", "EXAT", "10"}},
		{ErrSyntax, []string{"SET", "k", "v", "KEEPTTL", "EX", "10"}},
		{ErrSyntax, []string{"SET", "k", "v", "PXAT", "10", "KEEPTTL"}},
		{ErrSyntax, []string{"SET", "hash", "v", "NX", "XX", "GET"}}, // options before the type
		{ErrNotInteger, []string{"SET", "k", "v", "EX", "x"}},
		{ErrNotInteger, []string{"SET", "hash", "v", "PX", "1.5", "GET"}}, // expire before the type
		{ErrSyntax, []string{"SET", "k", "v", "EX", "x", "foo"}},          // every option before the expire value
		{"ERR invalid expire time in 'set' command", []string{"SET", "k", "v", "EX", "0"}},
		{"ERR invalid expire time in 'set' command", []string{"SET", "k", "v", "PX", "-1"}},
		{"ERR invalid expire time in 'set' command", []string{"SET", "k", "v", "EX", "9223372036854776"}},
		{"ERR invalid expire time in 'set' command", []string{"SET", "k", "v", "EXAT", "9223372036854776"}},
		{"ERR invalid expire time in 'set' command", []string{"SET", "k", "v", "PX", "9223372036854775807"}},
		{"ERR invalid expire time in 'set' command", []string{"SET", "k", "v", "EX", "10", "EX", "0"}}, // the last EX counts
	} {
		refuse(t, s, 2, errReply(c.want), c.args...)
	}
	// An option with a NUL byte reads as its C string: "NX\x00y" is NX.
	runExpect(t, s, 2, []expectStep{ex(nilBulk, "SET", "k", "v", "NX\x00y")})
}

// SET ... GET is propagated without its GET arguments (t_string.c).
func TestStringSetGetPropagation(t *testing.T) {
	s := New(16)
	f := &captureFeed{}
	s.SetFeed(f)
	run(t, s, 2, "SET", "k", "v", "GET", "get")
	_, c := runCtx(t, s, 0, 2, "SET", "k", "w")
	if c.Propagated() || !c.Changed() {
		t.Fatal("plain SET must be recorded by the server from its argv")
	}
	if got := f.String(); got != "SET k v" {
		t.Fatalf("feed = %q", got)
	}
}

func TestStringIncrDecr(t *testing.T) {
	s := New(16)
	runExpect(t, s, 2, []expectStep{
		ex(":1\r\n", "INCR", "n"),
		ex(":0\r\n", "DECR", "n"),
		ex(":-1\r\n", "DECR", "n"),
		ex(":9\r\n", "INCRBY", "n", "10"),
		ex(":-9223372036854775808\r\n", "INCRBY", "m", "-9223372036854775808"),
		ex(":9223372036854775807\r\n", "DECRBY", "p", "-9223372036854775807"),
		ex(":-5\r\n", "DECRBY", "q", "5"),
		ex(bulk("-5"), "GET", "q"),
		ex(okReply, "SET", "max", "9223372036854775807"),
		ex(okReply, "SET", "min", "-9223372036854775808"),
		ex(":9223372036854775806\r\n", "DECR", "max"),
		ex(":9223372036854775807\r\n", "INCR", "max"),
	})
	run(t, s, 2, "HSET", "h", "f", "v")
	for _, c := range []struct {
		want string
		args []string
	}{
		{ErrOverflow, []string{"INCR", "max"}},
		{ErrOverflow, []string{"INCRBY", "max", "1"}},
		{ErrOverflow, []string{"DECR", "min"}},
		{ErrOverflow, []string{"DECRBY", "min", "1"}},
		{ErrOverflow, []string{"INCRBY", "min", "-1"}},
		{"ERR decrement would overflow", []string{"DECRBY", "n", "-9223372036854775808"}},
		{"ERR decrement would overflow", []string{"DECRBY", "h", "-9223372036854775808"}}, // before the type
		{ErrNotInteger, []string{"INCRBY", "h", "x"}},                                     // argument before the type
		{ErrNotInteger, []string{"DECRBY", "n", "1.5"}},
		{ErrNotInteger, []string{"INCRBY", "n", "9223372036854775808"}},
		{ErrWrongType, []string{"INCR", "h"}},
		{ErrWrongType, []string{"DECRBY", "h", "1"}},
	} {
		refuse(t, s, 2, errReply(c.want), c.args...)
	}
	// Stored strings that string2ll refuses.
	for _, v := range []string{" 1", "1 ", "01", "+1", "-0", "1.0", "", "abc", "12345678901234567890123"} {
		run(t, s, 2, "SET", "bad", v)
		refuse(t, s, 2, errReply(ErrNotInteger), "INCR", "bad")
		refuse(t, s, 2, errReply(ErrNotInteger), "DECRBY", "bad", "1")
	}
}

func TestStringMultiAndLength(t *testing.T) {
	s := New(16)
	run(t, s, 2, "HSET", "h", "f", "v")
	runExpect(t, s, 2, []expectStep{
		ex(okReply, "MSET", "a", "1", "b", "2", "a", "3"),
		ex("*4\r\n"+bulk("3")+bulk("2")+nilBulk+nilBulk, "MGET", "a", "b", "nokey", "h"),
		ex(":1\r\n", "STRLEN", "a"),
		ex(":0\r\n", "STRLEN", "nokey"),
		ex(":3\r\n", "APPEND", "a", "xy"),
		ex(bulk("3xy"), "GET", "a"),
		ex(":0\r\n", "APPEND", "e", ""), // creates an empty string
		ex(":1\r\n", "EXISTS", "e"),
		ex(":0\r\n", "STRLEN", "e"),
		ex(":2\r\n", "APPEND", "i", "12"),
		ex(":13\r\n", "INCR", "i"),
		ex(":4\r\n", "APPEND", "i", "0x"),
		ex(bulk("130x"), "GET", "i"),
		ex(okReply, "MSET", "h", "now a string"),
		ex(bulk("now a string"), "GET", "h"),
	})
	run(t, s, 2, "HSET", "h2", "f", "v")
	runExpect(t, s, 3, []expectStep{
		ex("*2\r\n_\r\n_\r\n", "MGET", "nokey", "h2"),
	})
	refuse(t, s, 2, "-ERR wrong number of arguments for 'mset' command\r\n", "MSET", "a", "1", "b")
	refuse(t, s, 2, errReply(ErrWrongType), "STRLEN", "h2")
	refuse(t, s, 2, errReply(ErrWrongType), "APPEND", "h2", "x")
	// APPEND never modifies bytes a reader already holds.
	run(t, s, 2, "SET", "buf", "abc")
	held := s.DB(0).Get("buf").Str
	run(t, s, 2, "APPEND", "buf", "def")
	run(t, s, 2, "APPEND", "buf", "ghi")
	if string(held) != "abc" || run(t, s, 2, "GET", "buf") != bulk("abcdefghi") {
		t.Fatalf("held %q", held)
	}
	// SET stores a copy of the argument, not the request buffer.
	argv := [][]byte{[]byte("SET"), []byte("copy"), []byte("orig")}
	c := &Ctx{S: s, DB: s.DB(0), W: resp.NewWriter()}
	c.ResetForCommand(argv)
	cmdSet(c)
	argv[2][0] = 'X'
	if got := string(s.DB(0).Get("copy").Str); got != "orig" {
		t.Fatalf("stored value follows the request buffer: %q", got)
	}
	if strings.Contains(dump(s), "Xrig") {
		t.Fatal("request buffer aliased")
	}
}
