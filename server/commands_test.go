package server

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emqd/emqd/clock"
	"github.com/emqd/emqd/internal/testsupport"
)

// expectReplies runs each {args..., want} pair on c and compares bytes.
func expectReplies(t *testing.T, c *testsupport.Conn, cases [][2]any) {
	t.Helper()
	for _, cs := range cases {
		args := cs[0].([]string)
		want := cs[1].(string)
		if got := c.Do(args...); got != want {
			t.Errorf("%q:\n got  %q\n want %q", args, got, want)
		}
	}
}

func a(s ...string) []string { return s }

func errReply(s string) string { return "-" + s + "\r\n" }

func TestUnknownCommandPreview(t *testing.T) {
	s := startServer(t, nil, nil)
	c := dial(t, s)
	a70, b100 := strings.Repeat("a", 70), strings.Repeat("b", 100)
	long := strings.Repeat("N", 200)
	expectReplies(t, c, [][2]any{
		{a("FOO"), errReply("ERR unknown command 'FOO', with args beginning with: ")},
		{a("foo", "a b", "c"), errReply("ERR unknown command 'foo', with args beginning with: 'a b' 'c' ")},
		{a("FOO", a70, b100, "c"), errReply("ERR unknown command 'FOO', with args beginning with: '" + a70 + "' '" + strings.Repeat("b", 55) + "' ")},
		{a(long), errReply("ERR unknown command '" + long[:128] + "', with args beginning with: ")},
		{a("FOO", "x\r\ny"), errReply("ERR unknown command 'FOO', with args beginning with: 'x  y' ")},
		{a("FOO", "ab\x00cd"), errReply("ERR unknown command 'FOO', with args beginning with: 'ab' ")},
		{a("EMQ.REAP", "q"), errReply("ERR unknown command 'EMQ.REAP', with args beginning with: 'q' ")},
	})
}

func TestContainerErrors(t *testing.T) {
	s := startServer(t, nil, nil)
	c := dial(t, s)
	expectReplies(t, c, [][2]any{
		{a("CLIENT"), errReply("ERR wrong number of arguments for 'client' command")},
		{a("client", "setname"), errReply("ERR wrong number of arguments for 'client|setname' command")},
		{a("CONFIG", "GET"), errReply("ERR wrong number of arguments for 'config|get' command")},
		{a("COMMAND", "COUNT", "x"), errReply("ERR wrong number of arguments for 'command|count' command")},
		{a("client", "nosuch"), errReply("ERR unknown subcommand 'nosuch'. Try CLIENT HELP.")},
		{a("Config", "foo"), errReply("ERR unknown subcommand 'foo'. Try CONFIG HELP.")},
		{a("CLIENT", "NO-SUCH", "on"), errReply("ERR unknown subcommand 'NO-SUCH'. Try CLIENT HELP.")},
		{a("COMMAND", "FOO"), errReply("ERR unknown subcommand 'FOO'. Try COMMAND HELP.")},
		{a("FUNCTION", "LIST"), errReply("ERR unknown subcommand 'LIST'. Try FUNCTION HELP.")},
		{a("FUNCTION", "FLUSH"), "+OK\r\n"},
		{a("FUNCTION", "FLUSH", "SYNC"), "+OK\r\n"},
		{a("PING", "a", "b"), errReply("ERR wrong number of arguments for 'ping' command")},
	})
	if r := c.Do("CLUSTER", "SHARDS"); !strings.HasPrefix(r, "-") || !strings.Contains(strings.ToUpper(r), "CLUSTER") {
		t.Fatalf("CLUSTER: %q", r)
	}
}

// TestNoAuthOrder: unknown command, then arity, then NOAUTH; AUTH HELLO
// QUIT RESET are exempt.
func TestNoAuthOrder(t *testing.T) {
	s := startServer(t, map[string]string{"requirepass": "pw"}, nil)
	c := dial(t, s)
	expectReplies(t, c, [][2]any{
		{a("NOSUCH", "x"), errReply("ERR unknown command 'NOSUCH', with args beginning with: 'x' ")},
		{a("HGET", "k"), errReply("ERR wrong number of arguments for 'hget' command")},
		{a("HGET", "k", "f"), errReply("NOAUTH Authentication required.")},
		{a("PING"), errReply("NOAUTH Authentication required.")},
		{a("CLIENT", "ID"), errReply("NOAUTH Authentication required.")},
		{a("HELLO", "3"), errReply("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")},
		{a("RESET"), "+RESET\r\n"},
		{a("AUTH", "wrong"), errReply("WRONGPASS invalid username-password pair or user is disabled.")},
		{a("AUTH", "bob", "pw"), errReply("WRONGPASS invalid username-password pair or user is disabled.")},
		{a("AUTH", "default", "pw"), "+OK\r\n"},
		{a("PING"), "+PONG\r\n"},
		{a("RESET"), "+RESET\r\n"},
		{a("PING"), errReply("NOAUTH Authentication required.")},
		{a("AUTH", "pw"), "+OK\r\n"},
		{a("AUTH", "a", "b", "c"), errReply("ERR syntax error")},
	})
	c2 := dial(t, s)
	if r := c2.Do("HELLO", "2", "AUTH", "default", "pw", "SETNAME", "n1"); !strings.HasPrefix(r, "*14\r\n$6\r\nserver\r\n$4\r\nemqd\r\n") {
		t.Fatalf("HELLO AUTH: %q", r)
	}
	if r := c2.Do("CLIENT", "GETNAME"); r != "$2\r\nn1\r\n" {
		t.Fatalf("GETNAME: %q", r)
	}
	c3 := dial(t, s)
	c3.Write([]byte("QUIT\r\n"))
	if r := c3.Read(); r != "+OK\r\n" {
		t.Fatalf("QUIT: %q", r)
	}
	c3.ExpectClosed()
}

func TestAuthWithoutPassword(t *testing.T) {
	s := startServer(t, nil, nil)
	c := dial(t, s)
	expectReplies(t, c, [][2]any{
		{a("AUTH", "pw"), errReply("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")},
		{a("AUTH", "default", "anything"), "+OK\r\n"},
		{a("AUTH", "other", "x"), errReply("WRONGPASS invalid username-password pair or user is disabled.")},
		{a("AUTH"), errReply("ERR wrong number of arguments for 'auth' command")},
	})
}

func TestHello(t *testing.T) {
	s := startServer(t, nil, nil)
	c := dial(t, s)
	id := strings.TrimSuffix(strings.TrimPrefix(c.Do("CLIENT", "ID"), ":"), "\r\n")
	hello3 := "%7\r\n$6\r\nserver\r\n$4\r\nemqd\r\n$7\r\nversion\r\n$5\r\n8.0.1\r\n$5\r\nproto\r\n:3\r\n$2\r\nid\r\n:" + id +
		"\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n"
	expectReplies(t, c, [][2]any{
		{a("HELLO", "x"), errReply("ERR Protocol version is not an integer or out of range")},
		{a("HELLO", "1"), errReply("NOPROTO unsupported protocol version")},
		{a("HELLO", "4"), errReply("NOPROTO unsupported protocol version")},
		{a("HELLO", "3", "foo"), errReply("ERR Syntax error in HELLO option 'foo'")},
		{a("HELLO", "3", "AUTH", "default"), errReply("ERR Syntax error in HELLO option 'AUTH'")},
		{a("HELLO", "3", "SETNAME"), errReply("ERR Syntax error in HELLO option 'SETNAME'")},
		{a("HELLO", "3", "SETNAME", "a b"), errReply("ERR Client names cannot contain spaces, newlines or special characters.")},
		{a("HELLO", "3", "AUTH", "nobody", "x"), errReply("WRONGPASS invalid username-password pair or user is disabled.")},
		{a("HGET", "nokey", "f"), "$-1\r\n"}, // still RESP2 after the failed HELLOs
		{a("HELLO", "3"), hello3},
		{a("HGET", "nokey", "f"), "_\r\n"},
		{a("HELLO"), hello3},
		{a("CLIENT", "GETNAME"), "_\r\n"},
		{a("RESET"), "+RESET\r\n"},
		{a("HGET", "nokey", "f"), "$-1\r\n"},
	})
}

func TestSelectErrors(t *testing.T) {
	s := startServer(t, map[string]string{"databases": "4"}, nil)
	c := dial(t, s)
	expectReplies(t, c, [][2]any{
		{a("SELECT", "x"), errReply("ERR value is not an integer or out of range")},
		{a("SELECT", "2147483648"), errReply("ERR value is out of range, value must between -2147483648 and 2147483647")},
		{a("SELECT", "-1"), errReply("ERR DB index is out of range")},
		{a("SELECT", "4"), errReply("ERR DB index is out of range")},
		{a("SELECT", "3"), "+OK\r\n"},
		{a("SET", "k", "v"), "+OK\r\n"},
		{a("SELECT", "0"), "+OK\r\n"},
		{a("EXISTS", "k"), ":0\r\n"},
		{a("CONFIG", "GET", "databases"), "*2\r\n$9\r\ndatabases\r\n$1\r\n4\r\n"},
	})
}

func TestMultiExec(t *testing.T) {
	s := startServer(t, nil, nil)
	c := dial(t, s)
	other := dial(t, s)
	expectReplies(t, c, [][2]any{
		{a("EXEC"), errReply("ERR EXEC without MULTI")},
		{a("DISCARD"), errReply("ERR DISCARD without MULTI")},
		{a("MULTI"), "+OK\r\n"},
		{a("EXEC"), "*0\r\n"},
		// A queued unknown command aborts the transaction.
		{a("MULTI"), "+OK\r\n"},
		{a("HSET", "h", "f", "v"), "+QUEUED\r\n"},
		{a("NOSUCH"), errReply("ERR unknown command 'NOSUCH', with args beginning with: ")},
		{a("EXEC"), errReply("EXECABORT Transaction discarded because of previous errors.")},
		{a("EXISTS", "h"), ":0\r\n"},
		// WATCH inside MULTI: refused, and EXEC aborts (Valkey 8).
		{a("MULTI"), "+OK\r\n"},
		{a("WATCH", "x"), errReply("ERR Command not allowed inside a transaction")},
		{a("EXEC"), errReply("EXECABORT Transaction discarded because of previous errors.")},
		// Runtime errors stay inside the EXEC array.
		{a("SET", "s", "x"), "+OK\r\n"},
		{a("MULTI"), "+OK\r\n"},
		{a("HSET", "h", "f", "1"), "+QUEUED\r\n"},
		{a("HINCRBY", "s", "f", "1"), "+QUEUED\r\n"},
		{a("SELECT", "1"), "+QUEUED\r\n"},
		{a("HSET", "h1", "f", "1"), "+QUEUED\r\n"},
		{a("EXEC"), "*4\r\n:1\r\n" + errReply("WRONGTYPE Operation against a key holding the wrong kind of value") + "+OK\r\n:1\r\n"},
		{a("EXISTS", "h1"), ":1\r\n"}, // SELECT inside EXEC stays
		{a("SELECT", "0"), "+OK\r\n"},
		// DISCARD.
		{a("MULTI"), "+OK\r\n"},
		{a("DEL", "h"), "+QUEUED\r\n"},
		{a("DISCARD"), "+OK\r\n"},
		{a("EXISTS", "h"), ":1\r\n"},
	})
	// WATCH: a write by another client makes EXEC return a nil array.
	expectReplies(t, c, [][2]any{
		{a("WATCH", "h"), "+OK\r\n"},
		{a("MULTI"), "+OK\r\n"},
		{a("HSET", "h", "g", "1"), "+QUEUED\r\n"},
	})
	if r := other.Do("HSET", "h", "z", "1"); r != ":1\r\n" {
		t.Fatal(r)
	}
	expectReplies(t, c, [][2]any{
		{a("EXEC"), "*-1\r\n"},
		{a("HEXISTS", "h", "g"), ":0\r\n"},
		// UNWATCH forgets; the next transaction runs.
		{a("WATCH", "h"), "+OK\r\n"},
		{a("UNWATCH"), "+OK\r\n"},
	})
	other.Do("HSET", "h", "y", "1")
	expectReplies(t, c, [][2]any{
		{a("MULTI"), "+OK\r\n"},
		{a("HSET", "h", "g", "1"), "+QUEUED\r\n"},
		{a("EXEC"), "*1\r\n:1\r\n"},
		// RESP3: a touched WATCH gives _.
		{a("HELLO", "3"), c.Do("HELLO", "3")},
		{a("WATCH", "h"), "+OK\r\n"},
	})
	other.Do("DEL", "h")
	expectReplies(t, c, [][2]any{
		{a("MULTI"), "+OK\r\n"},
		{a("PING"), "+QUEUED\r\n"},
		{a("EXEC"), "_\r\n"},
	})
}

// TestQuitAndResetInsideMulti: QUIT and RESET run at once inside MULTI.
func TestQuitAndResetInsideMulti(t *testing.T) {
	s := startServer(t, nil, nil)
	c := dial(t, s)
	expectReplies(t, c, [][2]any{
		{a("MULTI"), "+OK\r\n"},
		{a("SET", "k", "v"), "+QUEUED\r\n"},
		{a("RESET"), "+RESET\r\n"},
		{a("EXEC"), errReply("ERR EXEC without MULTI")},
		{a("MULTI"), "+OK\r\n"},
	})
	c.Write(encode("QUIT"))
	if r := c.Read(); r != "+OK\r\n" {
		t.Fatal(r)
	}
	c.ExpectClosed()
}

func TestClientCommands(t *testing.T) {
	s := startServer(t, nil, nil)
	c := dial(t, s)
	id := c.Do("CLIENT", "ID")
	if !regexp.MustCompile(`^:\d+\r\n$`).MatchString(id) {
		t.Fatalf("CLIENT ID %q", id)
	}
	expectReplies(t, c, [][2]any{
		{a("CLIENT", "GETNAME"), "$-1\r\n"},
		{a("CLIENT", "SETNAME", "w1"), "+OK\r\n"},
		{a("CLIENT", "GETNAME"), "$2\r\nw1\r\n"},
		{a("CLIENT", "SETNAME", "bad\nname"), errReply("ERR Client names cannot contain spaces, newlines or special characters.")},
		{a("CLIENT", "SETNAME", ""), "+OK\r\n"},
		{a("CLIENT", "GETNAME"), "$-1\r\n"},
		{a("CLIENT", "SETINFO", "lib-name", "a b"), errReply("ERR lib-name cannot contain spaces, newlines or special characters.")},
		{a("CLIENT", "SETINFO", "LIB-NAME", "mylib"), "+OK\r\n"},
		{a("CLIENT", "SETINFO", "LIB-VER", "1.2"), "+OK\r\n"},
		{a("CLIENT", "SETINFO", "x", "y"), errReply("ERR Unrecognized option 'x'")},
		{a("CLIENT", "LIST", "TYPE", "foo"), errReply("ERR Unknown client type 'foo'")},
		{a("CLIENT", "LIST", "ID", "x"), errReply("ERR Invalid client ID")},
		{a("CLIENT", "LIST", "bar"), errReply("ERR syntax error")},
		{a("CLIENT", "REPLY", "maybe"), errReply("ERR syntax error")},
		// Every client is the default user; ACL user names are case-sensitive.
		{a("CLIENT", "KILL", "USER", "nobody"), errReply("ERR No such user 'nobody'")},
		{a("CLIENT", "KILL", "USER", "Default"), errReply("ERR No such user 'Default'")},
		{a("CLIENT", "KILL", "USER", "default", "ID", "999999"), ":0\r\n"},
	})
	info := c.Do("CLIENT", "INFO")
	re := regexp.MustCompile(`^\$\d+\r\nid=\d+ addr=127\.0\.0\.1:\d+ laddr=127\.0\.0\.1:\d+ fd=\d+ name= age=\d+ idle=\d+ flags=N db=0 sub=0 psub=0 ssub=0 multi=-1 watch=0 qbuf=\d+ qbuf-free=\d+ argv-mem=\d+ multi-mem=0 rbs=\d+ rbp=\d+ obl=\d+ oll=\d+ omem=\d+ tot-mem=\d+ events=r cmd=client\|info user=default redir=-1 resp=2 lib-name=mylib lib-ver=1\.2 tot-net-in=\d+ tot-net-out=\d+ tot-cmds=\d+\n\r\n$`)
	if !re.MatchString(info) {
		t.Fatalf("CLIENT INFO %q", info)
	}
	c2 := dial(t, s)
	c2.Do("CLIENT", "SETNAME", "other")
	list := c.Do("CLIENT", "LIST")
	if strings.Count(list, " laddr=") != 2 || !strings.Contains(list, "name=other") || !strings.Contains(list, "cmd=client|list") {
		t.Fatalf("CLIENT LIST %q", list)
	}
	byID := c.Do("CLIENT", "LIST", "ID", strings.Trim(id, ":\r\n"))
	if strings.Count(byID, " laddr=") != 1 || !strings.Contains(byID, "id="+strings.Trim(id, ":\r\n")+" ") {
		t.Fatalf("CLIENT LIST ID %q", byID)
	}
	c.Do("HELLO", "3")
	if r := c.Do("CLIENT", "INFO"); !strings.HasPrefix(r, "=") || !strings.Contains(r, "\r\ntxt:id=") || !strings.Contains(r, " resp=3 ") {
		t.Fatalf("RESP3 CLIENT INFO %q", r)
	}
}

func TestClientReply(t *testing.T) {
	s := startServer(t, nil, nil)
	c := dial(t, s)
	var p []byte
	for _, cmd := range [][]string{
		{"CLIENT", "REPLY", "OFF"}, {"PING", "1"}, {"NOSUCH"}, {"CLIENT", "REPLY", "ON"}, {"PING", "2"},
		{"CLIENT", "REPLY", "SKIP"}, {"PING", "3"}, {"PING", "4"},
	} {
		p = append(p, encode(cmd...)...)
	}
	c.Write(p)
	for _, want := range []string{"+OK\r\n", "$1\r\n2\r\n", "$1\r\n4\r\n"} {
		if r := c.Read(); r != want {
			t.Fatalf("got %q want %q", r, want)
		}
	}
	c.ExpectNothing(50 * time.Millisecond)
}

// TestClientReplyInMulti: CLIENT REPLY is refused inside MULTI and aborts
// the transaction, as Valkey 9.0 does (docs/compat.md §2.6); Valkey 8.0
// queued it and EXEC's array then announced more replies than it sent.
// Nothing of the transaction runs, and replies stay on.
func TestClientReplyInMulti(t *testing.T) {
	s := startServer(t, nil, nil)
	c := dial(t, s)
	var p []byte
	for _, cmd := range [][]string{
		{"MULTI"}, {"SET", "k", "v"}, {"CLIENT", "REPLY", "OFF"}, {"EXEC"}, {"EXISTS", "k"},
		{"MULTI"}, {"CLIENT", "REPLY", "skip"}, {"DISCARD"}, {"PING"},
	} {
		p = append(p, encode(cmd...)...)
	}
	c.Write(p)
	for _, want := range []string{
		"+OK\r\n", "+QUEUED\r\n", "-ERR Command not allowed inside a transaction\r\n",
		"-EXECABORT Transaction discarded because of previous errors.\r\n", ":0\r\n",
		"+OK\r\n", "-ERR Command not allowed inside a transaction\r\n", "+OK\r\n", "+PONG\r\n",
	} {
		if r := c.Read(); r != want {
			t.Fatalf("got %q want %q", r, want)
		}
	}
}

func TestResetCommand(t *testing.T) {
	s := startServer(t, nil, nil)
	c := dial(t, s)
	c.Do("HELLO", "3")
	c.Do("SELECT", "5")
	c.Do("CLIENT", "SETNAME", "x")
	c.Do("WATCH", "k")
	c.Do("MULTI")
	if r := c.Do("RESET"); r != "+RESET\r\n" {
		t.Fatal(r)
	}
	info := c.Do("CLIENT", "INFO")
	for _, want := range []string{" name= ", " db=0 ", " multi=-1 ", " watch=0 ", " resp=2 "} {
		if !strings.Contains(info, want) {
			t.Errorf("after RESET %q lacks %q", info, want)
		}
	}
}

func TestTime(t *testing.T) {
	clk := clock.NewManual(1_700_000_123_456)
	s := startServer(t, nil, clk)
	c := dial(t, s)
	r := c.Do("TIME")
	m := regexp.MustCompile(`^\*2\r\n\$10\r\n1700000123\r\n\$\d+\r\n(\d+)\r\n$`).FindStringSubmatch(r)
	if m == nil || atoi(m[1])/1000 != 456 {
		t.Fatalf("TIME %q", r)
	}
	s2 := startServer(t, nil, nil)
	r = dial(t, s2).Do("TIME")
	m = regexp.MustCompile(`^\*2\r\n\$10\r\n(\d+)\r\n\$\d+\r\n\d+\r\n$`).FindStringSubmatch(r)
	if m == nil || absDiff(atoi(m[1]), time.Now().Unix()) > 2 {
		t.Fatalf("wall TIME %q", r)
	}
}

func absDiff(x, y int64) int64 {
	if x > y {
		return x - y
	}
	return y - x
}

func TestConfigGetSet(t *testing.T) {
	s := startServer(t, nil, nil)
	c := dial(t, s)
	expectReplies(t, c, [][2]any{
		{a("CONFIG", "GET", "SAVE"), "*2\r\n$4\r\nSAVE\r\n$0\r\n\r\n"},
		{a("CONFIG", "GET", "appendonly"), "*2\r\n$10\r\nappendonly\r\n$2\r\nno\r\n"},
		{a("CONFIG", "GET", "nosuch"), "*0\r\n"},
		{a("CONFIG", "GET", "maxmemory", "MAXMEMORY"), "*2\r\n$9\r\nmaxmemory\r\n$1\r\n0\r\n"},
		// A pattern lists the older alias too, as Valkey 8.0.1 does.
		{a("CONFIG", "GET", "zset-max-*-entries"), "*4\r\n$25\r\nzset-max-listpack-entries\r\n$3\r\n128\r\n$24\r\nzset-max-ziplist-entries\r\n$3\r\n128\r\n"},
		{a("CONFIG", "SET", "hash-max-ziplist-entries", "2"), "+OK\r\n"},
		{a("CONFIG", "GET", "hash-max-listpack-entries"), "*2\r\n$25\r\nhash-max-listpack-entries\r\n$1\r\n2\r\n"},
		{a("CONFIG", "GET", "hash-max-ziplist-entries"), "*2\r\n$24\r\nhash-max-ziplist-entries\r\n$1\r\n2\r\n"},
		{a("CONFIG", "SET", "zset-max-ziplist-value", "10", "zset-max-listpack-entries", "0"), "+OK\r\n"},
		{a("CONFIG", "SET", "foo", "bar"), errReply("ERR Unknown option or number of arguments for CONFIG SET - 'foo'")},
		{a("CONFIG", "SET", "maxclients"), errReply("ERR wrong number of arguments for 'config|set' command")},
		{a("CONFIG", "SET", "maxclients", "10", "x"), errReply("ERR syntax error")},
		{a("CONFIG", "SET", "maxclients", "x"), errReply("ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument couldn't be parsed into an integer")},
		{a("CONFIG", "SET", "maxclients", "0"), errReply("ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument must be between 1 and 4294967295 inclusive")},
		{a("CONFIG", "SET", "databases", "1"), errReply("ERR CONFIG SET failed (possibly related to argument 'databases') - can't set immutable config")},
		{a("CONFIG", "SET", "port", "-1"), errReply("ERR CONFIG SET failed (possibly related to argument 'port') - argument must be between 0 and 65535 inclusive")},
		// hz: Valkey's range 0..INT_MAX, stored clamped to 1..500 (updateHZ).
		{a("CONFIG", "SET", "hz", "0"), "+OK\r\n"},
		{a("CONFIG", "GET", "hz"), "*2\r\n$2\r\nhz\r\n$1\r\n1\r\n"},
		{a("CONFIG", "SET", "hz", "501"), "+OK\r\n"},
		{a("CONFIG", "GET", "hz"), "*2\r\n$2\r\nhz\r\n$3\r\n500\r\n"},
		{a("CONFIG", "SET", "hz", "-1"), errReply("ERR CONFIG SET failed (possibly related to argument 'hz') - argument must be between 0 and 2147483647 inclusive")},
		{a("CONFIG", "SET", "hz", "10"), "+OK\r\n"},
		{a("CONFIG", "SET", "appendfsync", "sometimes"), errReply("ERR CONFIG SET failed (possibly related to argument 'appendfsync') - argument(s) must be one of the following: always, everysec, no")},
		{a("CONFIG", "SET", "maxclients", "50", "maxclients", "60"), errReply("ERR CONFIG SET failed (possibly related to argument 'maxclients') - duplicate parameter")},
		{a("CONFIG", "SET", "maxmemory", "1gb", "appendfsync", "ALWAYS"), "+OK\r\n"},
		{a("CONFIG", "GET", "maxmemory"), "*2\r\n$9\r\nmaxmemory\r\n$10\r\n1073741824\r\n"},
		{a("CONFIG", "GET", "appendfsync"), "*2\r\n$11\r\nappendfsync\r\n$6\r\nalways\r\n"},
		{a("CONFIG", "SET", "save", "900 1"), "+OK\r\n"},
		{a("CONFIG", "GET", "save"), "*2\r\n$4\r\nsave\r\n$5\r\n900 1\r\n"},
		{a("CONFIG", "SET", "save", "900"), errReply("ERR CONFIG SET failed (possibly related to argument 'save') - Invalid save parameters")},
		{a("CONFIG", "SET", "client-output-buffer-limit", "pubsub 1mb 1k 5"), "+OK\r\n"},
		{a("CONFIG", "GET", "client-output-buffer-limit"), "*2\r\n$26\r\nclient-output-buffer-limit\r\n$62\r\nnormal 0 0 0 slave 268435456 67108864 60 pubsub 1048576 1000 5\r\n"},
		{a("CONFIG", "SET", "client-output-buffer-limit", "foo 1 2 3"), errReply("ERR CONFIG SET failed (possibly related to argument 'client-output-buffer-limit') - Invalid client class specified in buffer limit configuration.")},
	})
	// The port reported is the one listened on.
	r := c.Do("CONFIG", "GET", "port")
	if r != fmt.Sprintf("*2\r\n$4\r\nport\r\n$%d\r\n%d\r\n", len(itoa(int64(s.port))), s.port) {
		t.Fatalf("port %q", r)
	}
	// Glob patterns, RESP3 map.
	c.Do("HELLO", "3")
	if r := c.Do("CONFIG", "GET", "appendf*"); r != "%2\r\n$11\r\nappendfsync\r\n$6\r\nalways\r\n$14\r\nappendfilename\r\n$14\r\nappendonly.aof\r\n" {
		t.Fatalf("glob %q", r)
	}
	// CONFIG SET maxclients takes effect.
	if r := c.Do("CONFIG", "SET", "maxclients", "2"); r != "+OK\r\n" {
		t.Fatal(r)
	}
	dial(t, s).Do("PING")
	extra := dial(t, s)
	if r := extra.Read(); r != "-ERR max number of clients reached\r\n" {
		t.Fatalf("maxclients: %q", r)
	}
}

func TestConfigHooks(t *testing.T) {
	// Persistence's own hook runs before the test's and starts a file in
	// dir: keep it out of the source tree.
	s := startServer(t, map[string]string{"dir": t.TempDir()}, nil)
	var got []string
	s.OnConfigSet("appendonly", func(v string) error {
		got = append(got, v)
		if v == "yes" {
			return errors.New("no disk")
		}
		return nil
	})
	c := dial(t, s)
	expectReplies(t, c, [][2]any{
		{a("CONFIG", "SET", "appendonly", "yes"), errReply("ERR CONFIG SET failed (possibly related to argument 'appendonly') - no disk")},
		{a("CONFIG", "GET", "appendonly"), "*2\r\n$10\r\nappendonly\r\n$2\r\nno\r\n"},
		{a("CONFIG", "SET", "appendonly", "no"), "+OK\r\n"},
	})
	if fmt.Sprint(got) != "[yes no]" {
		t.Fatalf("hook saw %v", got)
	}
}

func TestStartRejectsBadConfig(t *testing.T) {
	if _, err := Start(Options{Config: map[string]string{"nosuch": "1"}}); err == nil {
		t.Fatal("unknown directive accepted")
	}
	if _, err := Start(Options{Config: map[string]string{"databases": "x"}}); err == nil {
		t.Fatal("bad databases accepted")
	}
}

func TestInfo(t *testing.T) {
	s := startServer(t, nil, nil)
	c := dial(t, s)
	c.Do("HSET", "h", "f", "v")
	c.Do("SET", "s", "v")
	c.Do("HGET", "s", "f")
	r := c.Do("INFO")
	for _, want := range []string{
		"# Server\r\nredis_version:7.2.4\r\nserver_name:emqd\r\nemqd_version:" + Version + "\r\n",
		"\r\nrun_id:" + s.RunID() + "\r\n",
		"\r\ntcp_port:" + itoa(int64(s.port)) + "\r\n",
		"\r\n\r\n# Clients\r\nconnected_clients:1\r\n",
		"\r\nblocked_clients:0\r\n", "\r\nmaxclients:10000\r\n",
		"\r\n# Memory\r\nused_memory:", "\r\nmem_allocator:go\r\n",
		"\r\n# Persistence\r\n", "\r\naof_enabled:0\r\n",
		"\r\n# Stats\r\ntotal_connections_received:1\r\ntotal_commands_processed:3\r\n",
		"\r\nrejected_connections:0\r\n",
		"\r\n# Replication\r\nrole:master\r\n", "\r\nmaster_repl_offset:0\r\n",
		"\r\n# CPU\r\nused_cpu_sys:", "\r\nused_cpu_user:",
		"\r\n# Errorstats\r\nerrorstat_WRONGTYPE:count=1\r\n",
		"\r\n# Keyspace\r\ndb0:keys=2,expires=0,avg_ttl=0\r\n",
	} {
		if !strings.Contains(r, want) {
			t.Errorf("INFO lacks %q", want)
		}
	}
	if strings.Contains(r, "# Commandstats") || strings.Contains(r, "rejected_calls") {
		t.Error("commandstats in default INFO")
	}
	if !regexp.MustCompile(`^[0-9a-f]{40}$`).MatchString(s.RunID()) {
		t.Fatalf("run_id %q", s.RunID())
	}
	if r := c.Do("INFO", "nosuch"); r != "$0\r\n\r\n" {
		t.Fatalf("unknown section %q", r)
	}
	if r := c.Do("INFO", "KEYSPACE"); r != "$44\r\n# Keyspace\r\ndb0:keys=2,expires=0,avg_ttl=0\r\n\r\n" {
		t.Fatalf("keyspace %q", r)
	}
	if r := c.Do("INFO", "commandstats"); !strings.Contains(r, "cmdstat_hset:calls=1,usec=") || !strings.Contains(r, "rejected_calls=0,failed_calls=0") {
		t.Fatalf("commandstats %q", r)
	}
	if r := c.Do("INFO", "all"); !strings.Contains(r, "# Commandstats\r\n") || !strings.Contains(r, "# Keyspace\r\n") {
		t.Fatalf("INFO all %q", r)
	}
	c.Do("HELLO", "3")
	if r := c.Do("INFO", "server"); !strings.HasPrefix(r, "=") || !strings.Contains(r, "\r\ntxt:# Server\r\n") {
		t.Fatalf("RESP3 INFO %.60q", r)
	}
	// A fresh boot draws a fresh run_id.
	if s2 := startServer(t, nil, nil); s2.RunID() == s.RunID() {
		t.Fatal("run_id repeated")
	}
	s.SetInfoSection("persistence", func(add func(k, v string)) { add("aof_enabled", "1"); add("custom", "x") })
	if r := c.Do("INFO", "persistence"); !strings.Contains(r, "# Persistence\r\naof_enabled:1\r\ncustom:x\r\n") {
		t.Fatalf("custom section %q", r)
	}
}

func TestCommandCommand(t *testing.T) {
	s := startServer(t, nil, nil)
	c := dial(t, s)
	n := len(s.reg.list)
	if n < 60 {
		t.Fatalf("only %d commands", n)
	}
	expectReplies(t, c, [][2]any{
		{a("COMMAND", "COUNT"), ":" + itoa(int64(n)) + "\r\n"},
		{a("COMMAND", "GETKEYS", "HSET", "h", "f", "v"), "*1\r\n$1\r\nh\r\n"},
		{a("COMMAND", "GETKEYS", "MSET", "a", "1", "b", "2"), "*2\r\n$1\r\na\r\n$1\r\nb\r\n"},
		{a("COMMAND", "GETKEYS", "HSET"), errReply("ERR Invalid number of arguments specified for command")},
		{a("COMMAND", "GETKEYS", "HGET", "h"), errReply("ERR Invalid number of arguments specified for command")},
		{a("COMMAND", "GETKEYS", "NOSUCH", "x"), errReply("ERR Invalid command specified")},
		{a("COMMAND", "GETKEYS", "PING", "x"), errReply("ERR The command has no key arguments")},
		{a("COMMAND", "GETKEYS"), errReply("ERR wrong number of arguments for 'command|getkeys' command")},
		{a("COMMAND", "DOCS", "nosuch"), "*0\r\n"},
		{a("COMMAND", "DOCS", "get", "nosuch"), "*2\r\n$3\r\nget\r\n*10\r\n$7\r\nsummary\r\n$34\r\nReturns the string value of a key.\r\n$5\r\nsince\r\n$5\r\n1.0.0\r\n$5\r\ngroup\r\n$6\r\nstring\r\n$10\r\ncomplexity\r\n$4\r\nO(1)\r\n$9\r\narguments\r\n*1\r\n*8\r\n$4\r\nname\r\n$3\r\nkey\r\n$4\r\ntype\r\n$3\r\nkey\r\n$12\r\ndisplay_text\r\n$3\r\nkey\r\n$14\r\nkey_spec_index\r\n:0\r\n"},
		{a("COMMAND", "INFO", "nosuch"), "*1\r\n$-1\r\n"},
		{a("COMMAND", "INFO", "nosuch", "client|nosuch", "nosuch|x"), "*3\r\n$-1\r\n$-1\r\n$-1\r\n"},
	})
	r := c.Do("COMMAND", "INFO", "hget")
	want := "*1\r\n*10\r\n$4\r\nhget\r\n:3\r\n*2\r\n+readonly\r\n+fast\r\n:1\r\n:1\r\n:1\r\n"
	if !strings.HasPrefix(r, want) {
		t.Fatalf("COMMAND INFO hget %q", r)
	}
	nodes, err := parseFrames(r)
	if err != nil || len(nodes[0].kids[0].kids) != 10 {
		t.Fatalf("shape %v", err)
	}
	r = c.Do("COMMAND", "INFO", "client")
	nodes, _ = parseFrames(r)
	subs := nodes[0].kids[0].kids[9]
	if len(subs.kids) < 8 || subs.kids[0].kids[0].text != "client|caching" {
		t.Fatalf("client subcommands %q", r)
	}
	list := c.Do("COMMAND", "LIST")
	for _, name := range []string{"$4\r\nhget\r\n", "$14\r\nclient|setname\r\n", "$4\r\nexec\r\n"} {
		if !strings.Contains(list, name) {
			t.Errorf("COMMAND LIST lacks %q", name)
		}
	}
	if r := c.Do("COMMAND", "LIST", "FILTERBY", "PATTERN", "zpop*"); r != "*2\r\n$7\r\nzpopmax\r\n$7\r\nzpopmin\r\n" {
		t.Fatalf("FILTERBY %q", r)
	}
	all, _ := parseFrames(c.Do("COMMAND"))
	if len(all[0].kids) != n {
		t.Fatalf("COMMAND gave %d entries", len(all[0].kids))
	}
	c.Do("HELLO", "3")
	if r := c.Do("COMMAND", "DOCS", "nosuch"); r != "%0\r\n" {
		t.Fatalf("RESP3 DOCS %q", r)
	}
	if r := c.Do("COMMAND", "INFO", "nosuch"); r != "*1\r\n_\r\n" {
		t.Fatalf("RESP3 unknown %q", r)
	}
}

func TestSlowlog(t *testing.T) {
	s := startServer(t, map[string]string{"slowlog-log-slower-than": "0", "slowlog-max-len": "3"}, nil)
	c := dial(t, s)
	c.Do("CLIENT", "SETNAME", "slowpoke")
	c.Do("SLOWLOG", "RESET")
	long := strings.Repeat("x", 200)
	c.Do("ECHO", long)
	args := []string{"HSET", "h"}
	for i := 0; i < 40; i++ {
		args = append(args, "f"+itoa(int64(i)), "v")
	}
	c.Do(args...)
	if r := c.Do("SLOWLOG", "LEN"); r != ":3\r\n" { // RESET, ECHO, HSET
		t.Fatalf("LEN %q", r)
	}
	// The newest entry is SLOWLOG LEN itself; RESET fell off (max 3).
	nodes, err := parseFrames(c.Do("SLOWLOG", "GET", "-1"))
	if err != nil || len(nodes[0].kids) != 3 || nodes[0].kids[0].kids[3].kids[1].text != "LEN" {
		t.Fatalf("GET -1: %v", err)
	}
	hset, echo := nodes[0].kids[1], nodes[0].kids[2]
	if len(hset.kids) != 6 || hset.kids[5].text != "slowpoke" || !strings.HasPrefix(hset.kids[4].text, "127.0.0.1:") {
		t.Fatalf("entry %+v", hset)
	}
	if argv := hset.kids[3].kids; len(argv) != 32 || argv[31].text != "... (51 more arguments)" {
		t.Fatalf("argv %d last %q", len(argv), argv[len(argv)-1].text)
	}
	if arg := echo.kids[3].kids[1].text; arg != strings.Repeat("x", 128)+"... (72 more bytes)" {
		t.Fatalf("long arg %q", arg)
	}
	if hset.kids[0].text == echo.kids[0].text {
		t.Fatal("ids not distinct")
	}
	expectReplies(t, c, [][2]any{
		{a("SLOWLOG", "GET", "-2"), errReply("ERR count should be greater than or equal to -1")},
		{a("SLOWLOG", "GET", "x"), errReply("ERR count should be greater than or equal to -1")},
		{a("SLOWLOG", "RESET"), "+OK\r\n"},
		{a("CONFIG", "SET", "slowlog-log-slower-than", "-1"), "+OK\r\n"},
		{a("PING"), "+PONG\r\n"},
		{a("SLOWLOG", "LEN"), ":1\r\n"}, // the RESET itself
	})
}

// recFeed records what reaches the store's Feed.
type recFeed struct {
	mu   sync.Mutex
	recs []string
}

func (f *recFeed) Append(db int, cmds [][][]byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var parts []string
	for _, c := range cmds {
		var as []string
		for _, x := range c {
			as = append(as, string(x))
		}
		parts = append(parts, strings.Join(as, " "))
	}
	f.recs = append(f.recs, fmt.Sprintf("%d:%s", db, strings.Join(parts, "|")))
}

func (f *recFeed) take() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := strings.Join(f.recs, ";")
	f.recs = nil
	return s
}

// TestFeedPropagation: a command whose handler called Dirty reaches the
// Feed as its argv; read-only and refused commands do not; EXEC sends one
// group.
func TestFeedPropagation(t *testing.T) {
	s := startServer(t, nil, nil)
	f := &recFeed{}
	s.Store().Lock()
	s.Store().SetFeed(f)
	s.Store().Unlock()
	c := dial(t, s)
	steps := []struct {
		cmd  []string
		want string
	}{
		{a("HSET", "h", "f", "v"), "0:HSET h f v"},
		{a("HGET", "h", "f"), ""},
		{a("HSET", "h"), ""},
		{a("HINCRBY", "h", "f", "1"), ""}, // refused: not an integer
		{a("SELECT", "2"), ""},
		{a("SET", "k", "v"), "2:SET k v"},
		{a("MULTI"), ""},
		{a("SET", "a", "1"), ""},
		{a("GET", "a"), ""},
		{a("HSET", "h2", "x", "y"), ""},
		{a("EXEC"), "2:SET a 1|HSET h2 x y"},
	}
	for _, st := range steps {
		c.Do(st.cmd...)
		if got := f.take(); got != st.want {
			t.Errorf("%q: feed %q want %q", st.cmd, got, st.want)
		}
	}
}

func TestWriteGateAndCommitHook(t *testing.T) {
	s := startServer(t, nil, nil)
	var mu sync.Mutex
	gate := ""
	commits := 0
	s.SetWriteGate(func() string { mu.Lock(); defer mu.Unlock(); return gate })
	s.SetCommitHook(func() error { mu.Lock(); defer mu.Unlock(); commits++; return nil })
	c := dial(t, s)
	c.Do("SET", "k", "v")
	c.Do("GET", "k")
	mu.Lock()
	if commits != 1 {
		t.Fatalf("commits %d", commits)
	}
	gate = "MISCONF Errors writing to the AOF file: No space left on device"
	mu.Unlock()
	expectReplies(t, c, [][2]any{
		{a("SET", "k", "w"), errReply("MISCONF Errors writing to the AOF file: No space left on device")},
		{a("GET", "k"), "$1\r\nv\r\n"},
	})
	s.SetCommitHook(func() error { return errors.New("disk gone") })
	mu.Lock()
	gate = ""
	mu.Unlock()
	c.Write(encode("SET", "k", "x"))
	c.ExpectClosed()
}

func TestBgrewriteaofHook(t *testing.T) {
	s := startServer(t, nil, nil)
	c := dial(t, s)
	if r := c.Do("BGREWRITEAOF"); !strings.HasPrefix(r, "-ERR ") {
		t.Fatalf("without AOF %q", r)
	}
	n := 0
	s.SetRewriteHook(func() error { n++; return nil })
	if r := c.Do("BGREWRITEAOF"); r != "+Background append only file rewriting started\r\n" || n != 1 {
		t.Fatalf("%q %d", r, n)
	}
	s.SetRewriteHook(func() error { return errors.New("Background append only file rewriting already in progress") })
	if r := c.Do("BGREWRITEAOF"); r != "-ERR Background append only file rewriting already in progress\r\n" {
		t.Fatalf("%q", r)
	}
}

func TestShutdown(t *testing.T) {
	s, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	s.OnClose(func() error { closed = true; return nil })
	c := dial(t, s)
	other := dial(t, s)
	other.Do("PING")
	expectReplies(t, c, [][2]any{
		{a("SHUTDOWN", "BOGUS"), errReply("ERR syntax error")},
		{a("SHUTDOWN", "ABORT"), errReply("ERR No shutdown in progress.")},
		// Valkey 8.0.1 refuses both words and goes on (the newcomer's
		// finding: emqd stopped, the last word winning).
		{a("SHUTDOWN", "NOSAVE", "SAVE"), errReply("ERR syntax error")},
		{a("SHUTDOWN", "SAVE", "NOSAVE"), errReply("ERR syntax error")},
		{a("PING"), "+PONG\r\n"},
	})
	c.Write(encode("SHUTDOWN", "NOSAVE"))
	c.ExpectClosed()
	other.ExpectClosed()
	done := make(chan struct{})
	go func() { s.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("server did not stop")
	}
	if !closed {
		t.Fatal("close hooks did not run")
	}
}
