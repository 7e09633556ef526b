package server

import (
	"testing"

	"github.com/emqd/emqd/clock"
)

// CLIENT KILL parses every filter before it looks at a client (Valkey 8.0
// and Redis 7.0 alike): a bad filter after TYPE master is refused, not
// answered :0, and a refused KILL kills nothing. Compared byte for byte
// with the real redis-server.
func TestDiffClientKillParseOrder(t *testing.T) {
	diffScript(t, 2, []dstep{
		send(0, "CLIENT KILL TYPE master FOO bar", 1),
		send(0, "CLIENT KILL TYPE replica SKIPME maybe", 1),
		send(0, "CLIENT KILL TYPE slave ID 0", 1),
		send(0, "CLIENT KILL TYPE master ID $ID1 FOO", 1),
		send(0, "CLIENT KILL TYPE foo ID 0", 1),
		send(0, "CLIENT KILL ID 0 SKIPME", 1),
		send(0, "CLIENT KILL ID $ID1 SKIPME", 1),
		send(0, "CLIENT KILL ID $ID1 TYPE normal FOO", 1),
		send(0, "CLIENT KILL ID $ID1 TYPE normal SKIPME no USER nobody", 1),
		send(1, "PING", 1), // none of the above killed it
		send(0, "CLIENT KILL TYPE master ID $ID1", 1),
		send(0, "CLIENT KILL TYPE slave ID $ID1", 1),
		send(1, "PING", 1),
		send(0, "CLIENT KILL ID $ID1 TYPE normal", 1),
	})
}

// CLIENT KILL MAXAGE s (Valkey 8.0; not in Redis 7.0) kills the clients
// connected for at least s whole seconds on the server clock, with the
// other filters and SKIPME; its value must be an integer > 0.
func TestClientKillMaxAge(t *testing.T) {
	clk := clock.NewManual(1_000_000_000)
	s := startServer(t, nil, clk)
	c0, c1 := dial(t, s), dial(t, s)
	id1 := clientID(t, c1)
	expectReplies(t, c0, [][2]any{
		{a("CLIENT", "KILL", "MAXAGE", "0"), errReply("ERR maxage should be greater than 0")},
		{a("CLIENT", "KILL", "MAXAGE", "-5"), errReply("ERR maxage should be greater than 0")},
		{a("CLIENT", "KILL", "MAXAGE", "x"), errReply("ERR maxage is not an integer or out of range")},
		{a("CLIENT", "KILL", "MAXAGE", "99999999999999999999"), errReply("ERR maxage is not an integer or out of range")},
		{a("CLIENT", "KILL", "maxage", "1", "FOO", "bar"), errReply("ERR syntax error")},
		{a("CLIENT", "KILL", "MAXAGE", "1", "SKIPME"), errReply("ERR syntax error")},
	})
	clk.Advance(9_999) // age 9 s
	expectReplies(t, c0, [][2]any{
		{a("CLIENT", "KILL", "MAXAGE", "10", "SKIPME", "no"), ":0\r\n"},
	})
	if r := c1.Do("PING"); r != "+PONG\r\n" {
		t.Fatalf("c1 PING %q", r)
	}
	clk.Advance(1) // age 10 s
	expectReplies(t, c0, [][2]any{
		{a("CLIENT", "KILL", "MAXAGE", "10", "TYPE", "pubsub"), ":0\r\n"},
		{a("CLIENT", "KILL", "MAXAGE", "10", "TYPE", "master"), ":0\r\n"},
		{a("CLIENT", "KILL", "MAXAGE", "11"), ":0\r\n"},
		{a("CLIENT", "KILL", "MAXAGE", "10", "ID", id1), ":1\r\n"},
	})
	c1.ExpectClosed()
	c2 := dial(t, s) // age 0
	if r := c2.Do("PING"); r != "+PONG\r\n" {
		t.Fatalf("c2 PING %q", r)
	}
	// SKIPME no: c0 (age 10) kills itself after the reply; c2 stays.
	expectReplies(t, c0, [][2]any{
		{a("CLIENT", "KILL", "MAXAGE", "1", "SKIPME", "no"), ":1\r\n"},
	})
	c0.ExpectClosed()
	if r := c2.Do("PING"); r != "+PONG\r\n" {
		t.Fatalf("c2 PING %q", r)
	}
}
