package server

import (
	"strings"
	"testing"

	"github.com/emqd/emqd/clock"
)

// The blocking sorted-set pops (BZPOPMIN, BZPOPMAX, BZMPOP) on the
// blocked-client machinery (docs/architecture.md §3).

// popReply is BZPOPMIN's RESP2 reply [key, member, score].
func popReply(key, member, score string) string {
	return "*3\r\n" + bulkOf(key) + bulkOf(member) + bulkOf(score)
}

func bulkOf(s string) string { return "$" + itoa(int64(len(s))) + "\r\n" + s + "\r\n" }

// Clients blocked on a key are served in the order they blocked, across
// keys: the first to block on the key that fills first wins; a client
// blocked on several keys takes from the first of its keys that holds
// members when it is retried.
func TestBlockingPopArrivalOrderAcrossKeys(t *testing.T) {
	s := startServer(t, nil, nil)
	admin := dial(t, s)
	c1, c2, c3 := dial(t, s), dial(t, s), dial(t, s)
	c1.Write(encode("BZPOPMIN", "k1", "k2", "0"))
	waitBlocked(t, admin, 1)
	c2.Write(encode("BZPOPMIN", "k2", "0"))
	waitBlocked(t, admin, 2)
	c3.Write(encode("BZPOPMAX", "k1", "0"))
	waitBlocked(t, admin, 3)
	if r := admin.Do("ZADD", "k2", "1", "a", "2", "b", "3", "c"); r != ":3\r\n" {
		t.Fatal(r)
	}
	if r := c1.Read(); r != popReply("k2", "a", "1") {
		t.Fatalf("c1: %q", r)
	}
	if r := c2.Read(); r != popReply("k2", "b", "2") {
		t.Fatalf("c2: %q", r)
	}
	waitBlocked(t, admin, 1)
	if r := admin.Do("ZRANGE", "k2", "0", "-1"); r != "*1\r\n$1\r\nc\r\n" {
		t.Fatalf("left: %q", r)
	}
	// Both keys filled by one transaction: k3 is signalled first, and its
	// waiter c4 pops from k1, the first of its own keys that holds members;
	// then k1's first waiter c3 takes what is left.
	c4 := dial(t, s)
	c4.Write(encode("BZMPOP", "0", "2", "k1", "k3", "MIN", "COUNT", "1"))
	waitBlocked(t, admin, 2)
	expectSteps(t, admin, [][2]string{
		{"MULTI", "+OK\r\n"}, {"ZADD k3 9 z", "+QUEUED\r\n"}, {"ZADD k1 1 x 2 y", "+QUEUED\r\n"},
		{"EXEC", "*2\r\n:1\r\n:2\r\n"},
	})
	if r := c3.Read(); r != popReply("k1", "y", "2") {
		t.Fatalf("c3: %q", r)
	}
	if r := c4.Read(); r != "*2\r\n$2\r\nk1\r\n*1\r\n*2\r\n$1\r\nx\r\n$1\r\n1\r\n" {
		t.Fatalf("c4: %q", r)
	}
	waitBlocked(t, admin, 0)
	expectSteps(t, admin, [][2]string{{"ZCARD k3", ":1\r\n"}, {"EXISTS k1", ":0\r\n"}})
}

// The timeout is Valkey's float seconds, on the server clock: a client is
// still blocked one millisecond before it and gets a nil array (RESP3: a
// null) at it.
func TestBlockingPopTimeout(t *testing.T) {
	clk := clock.NewManual(et0)
	s := startServer(t, nil, clk)
	admin := dial(t, s)
	c := dial(t, s)
	c.Write(encode("BZPOPMIN", "k", "1.5"))
	waitBlocked(t, admin, 1)
	clk.Advance(1499)
	waitBlocked(t, admin, 1)
	clk.Advance(1)
	if r := c.Read(); r != "*-1\r\n" {
		t.Fatalf("timeout reply %q", r)
	}
	c.Do("HELLO", "3")
	c.Write(encode("BZMPOP", "0.001", "1", "k", "MAX"))
	waitBlocked(t, admin, 1)
	clk.Advance(1)
	if r := c.Read(); r != "_\r\n" {
		t.Fatalf("RESP3 timeout reply %q", r)
	}
	// Timeout 0 waits for ever; CLIENT UNBLOCK ends it as a timeout.
	cid := strings.TrimSpace(strings.TrimPrefix(c.Do("CLIENT", "ID"), ":"))
	c.Write(encode("BZPOPMAX", "k", "0"))
	waitBlocked(t, admin, 1)
	clk.Advance(1 << 40)
	waitBlocked(t, admin, 1)
	if r := admin.Do("CLIENT", "UNBLOCK", cid); r != ":1\r\n" {
		t.Fatalf("CLIENT UNBLOCK %s: %q", cid, r)
	}
	if r := c.Read(); r != "_\r\n" {
		t.Fatalf("unblocked reply %q", r)
	}
}

// A client that disconnects while blocked takes nothing: the member
// written after it left is still in the set.
func TestBlockingPopDisconnectTakesNothing(t *testing.T) {
	s := startServer(t, nil, nil)
	admin := dial(t, s)
	c := dial(t, s)
	c.Write(encode("BZPOPMIN", "k", "0"))
	waitBlocked(t, admin, 1)
	c.NC.Close()
	waitBlocked(t, admin, 0)
	expectSteps(t, admin, [][2]string{
		{"ZADD k 1 a", ":1\r\n"},
		{"ZRANGE k 0 -1 WITHSCORES", "*2\r\n$1\r\na\r\n$1\r\n1\r\n"},
	})
}

// A transaction that adds a member and removes it again wakes no one; the
// next write that leaves members does. A key that holds another type does
// not serve a blocked pop either.
func TestBlockingPopMultiAddRemove(t *testing.T) {
	s := startServer(t, nil, nil)
	admin := dial(t, s)
	c := dial(t, s)
	c.Write(encode("BZPOPMIN", "k", "0"))
	waitBlocked(t, admin, 1)
	expectSteps(t, admin, [][2]string{
		{"MULTI", "+OK\r\n"}, {"ZADD k 1 a", "+QUEUED\r\n"}, {"ZREM k a", "+QUEUED\r\n"},
		{"EXEC", "*2\r\n:1\r\n:1\r\n"},
		{"SET k str", "+OK\r\n"},
	})
	waitBlocked(t, admin, 1)
	expectSteps(t, admin, [][2]string{{"DEL k", ":1\r\n"}, {"ZADD k 2 b", ":1\r\n"}})
	if r := c.Read(); r != popReply("k", "b", "2") {
		t.Fatalf("got %q", r)
	}
	expectSteps(t, admin, [][2]string{{"EXISTS k", ":0\r\n"}})
}

// A pipelined pair: the second pop waits behind the first, then runs at
// once on what is left; a pipelined pair of writes serves two clients.
func TestBlockingPopPipelinedPair(t *testing.T) {
	s := startServer(t, nil, nil)
	admin := dial(t, s)
	c := dial(t, s)
	c.Write(append(encode("BZPOPMIN", "k", "0"), encode("BZPOPMIN", "k", "0")...))
	waitBlocked(t, admin, 1)
	if r := admin.Do("ZADD", "k", "1", "a", "2", "b"); r != ":2\r\n" {
		t.Fatal(r)
	}
	if r := c.Read(); r != popReply("k", "a", "1") {
		t.Fatalf("first %q", r)
	}
	if r := c.Read(); r != popReply("k", "b", "2") {
		t.Fatalf("second %q", r)
	}
	d1, d2 := dial(t, s), dial(t, s)
	d1.Write(encode("BZPOPMAX", "p", "0"))
	waitBlocked(t, admin, 1)
	d2.Write(encode("BZPOPMAX", "p", "0"))
	waitBlocked(t, admin, 2)
	admin.Write(append(encode("ZADD", "p", "1", "x"), encode("ZADD", "p", "2", "y")...))
	if r := admin.Read() + admin.Read(); r != ":1\r\n:1\r\n" {
		t.Fatal(r)
	}
	// One batch: both writes land before the waiters are served.
	if r := d1.Read(); r != popReply("p", "y", "2") {
		t.Fatalf("d1 %q", r)
	}
	if r := d2.Read(); r != popReply("p", "x", "1") {
		t.Fatalf("d2 %q", r)
	}
}

// A key whose TTL passed is absent to a blocking pop, which then waits; a
// write that replaces the expired key (of whatever type it held) wakes it.
func TestBlockingPopExpiredKeyReplaced(t *testing.T) {
	clk := clock.NewManual(et0)
	s := startServer(t, map[string]string{"hz": "1"}, clk)
	admin := dial(t, s)
	c := dial(t, s)
	expectSteps(t, admin, [][2]string{{"ZADD k 1 old", ":1\r\n"}, {"PEXPIRE k 100", ":1\r\n"}})
	clk.Advance(101)
	c.Write(encode("BZPOPMIN", "k", "0"))
	waitBlocked(t, admin, 1)
	expectSteps(t, admin, [][2]string{{"ZADD k 2 new", ":1\r\n"}})
	if r := c.Read(); r != popReply("k", "new", "2") {
		t.Fatalf("got %q", r)
	}
	// A string with a TTL on the key: no wake-up while it lives; once it
	// expired, the ZADD that replaces it does.
	c.Write(encode("BZPOPMIN", "k", "0"))
	waitBlocked(t, admin, 1)
	expectSteps(t, admin, [][2]string{{"SET k str PX 50", "+OK\r\n"}})
	waitBlocked(t, admin, 1)
	clk.Advance(51)
	expectSteps(t, admin, [][2]string{{"ZADD k 3 z", ":1\r\n"}})
	if r := c.Read(); r != popReply("k", "z", "3") {
		t.Fatalf("got %q", r)
	}
	// RENAME of a key with a TTL onto the awaited key serves the waiter.
	c.Write(encode("BZPOPMIN", "k", "0"))
	waitBlocked(t, admin, 1)
	expectSteps(t, admin, [][2]string{{"ZADD src 4 r", ":1\r\n"}, {"PEXPIRE src 1000", ":1\r\n"}, {"RENAME src k", "+OK\r\n"}})
	if r := c.Read(); r != popReply("k", "r", "4") {
		t.Fatalf("got %q", r)
	}
}

// MOVE and SWAPDB bring a sorted set into the database a client waits in.
func TestBlockingPopMoveAndSwapDB(t *testing.T) {
	s := startServer(t, nil, nil)
	admin := dial(t, s)
	c := dial(t, s)
	c.Write(encode("BZPOPMIN", "k", "0"))
	waitBlocked(t, admin, 1)
	expectSteps(t, admin, [][2]string{{"SELECT 1", "+OK\r\n"}, {"ZADD k 1 a", ":1\r\n"}, {"MOVE k 0", ":1\r\n"}})
	if r := c.Read(); r != popReply("k", "a", "1") {
		t.Fatalf("after MOVE %q", r)
	}
	c.Write(encode("BZPOPMIN", "k", "0"))
	waitBlocked(t, admin, 1)
	expectSteps(t, admin, [][2]string{{"ZADD k 2 b", ":1\r\n"}, {"SWAPDB 0 1", "+OK\r\n"}})
	if r := c.Read(); r != popReply("k", "b", "2") {
		t.Fatalf("after SWAPDB %q", r)
	}
}

// A served blocked pop is recorded as ZPOPMIN/ZPOPMAX: a restart replays it.
func TestBlockingPopRecordedInAOF(t *testing.T) {
	dir := t.TempDir()
	s := durable(t, dir, nil)
	admin := dial(t, s)
	c := dial(t, s)
	c.Write(encode("BZMPOP", "0", "1", "k", "MAX", "COUNT", "2"))
	waitBlocked(t, admin, 1)
	expectSteps(t, admin, [][2]string{{"ZADD k 1 a 2 b 3 c", ":3\r\n"}})
	if r := c.Read(); r != "*2\r\n$1\r\nk\r\n*2\r\n*2\r\n$1\r\nc\r\n$1\r\n3\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n" {
		t.Fatalf("got %q", r)
	}
	stop(t, s)
	s = durable(t, dir, nil)
	expectSteps(t, dial(t, s), [][2]string{{"ZRANGE k 0 -1", "*1\r\n$1\r\na\r\n"}})
}
