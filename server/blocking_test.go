package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/emqd/emqd/clock"
	"github.com/emqd/emqd/internal/num"
	"github.com/emqd/emqd/internal/store"
	"github.com/emqd/emqd/internal/testsupport"
)

// A fake blocking command pair, registered only in this package's tests:
//
//	TEST.PUT q n                  adds n items to q and wakes q's waiters
//	TEST.TAKE q timeout_ms [due]  takes an item ("$4 item"), or parks; with
//	                              due, the wait ends with "$3 due" once the
//	                              clock reaches park time + due ms
//	TEST.ITEMS q                  the number of items left
//
// The items live in a map per store, touched only under the store lock.
var fakeItems = map[*store.Store]map[string]int{}

// fakeCommands are the TEST.* commands (Options.testCommands: startServer
// adds them to every server it starts); ready is the server's wake-up.
func fakeCommands(ready func(db int, queue string)) []*store.CommandSpec {
	return []*store.CommandSpec{
		store.NewCommand("test.put", 3, func(c *store.Ctx) { fakePut(c, ready) }, store.FlagWrite).WithKeys(1, 1, 1),
		store.NewCommand("test.take", -3, fakeTake, store.FlagWrite, store.FlagBlocking).WithKeys(1, 1, 1),
		store.NewCommand("test.items", 2, fakeCount, store.FlagReadonly).WithKeys(1, 1, 1),
	}
}

func items(c *store.Ctx) map[string]int {
	m := fakeItems[c.S]
	if m == nil {
		m = map[string]int{}
		fakeItems[c.S] = m
	}
	return m
}

func fakePut(c *store.Ctx, ready func(db int, queue string)) {
	n, _ := num.ParseInt(c.Argv[2])
	q := string(c.Argv[1])
	items(c)[q] += int(n)
	ready(c.DB.Index, q)
	c.W.Int(int64(items(c)[q]))
}

func fakeCount(c *store.Ctx) { c.W.Int(int64(items(c)[string(c.Argv[1])])) }

func fakeTake(c *store.Ctx) {
	q := string(c.Argv[1])
	timeout, _ := num.ParseInt(c.Argv[2])
	var dueAt int64
	if len(c.Argv) > 3 {
		d, _ := num.ParseInt(c.Argv[3])
		dueAt = c.NowMs + d
	}
	take := func(x *store.Ctx) bool {
		if items(x)[q] > 0 {
			items(x)[q]--
			x.W.BulkString("item")
			return true
		}
		if dueAt != 0 && x.NowMs >= dueAt {
			x.W.BulkString("due")
			return true
		}
		return false
	}
	if take(c) {
		return
	}
	if c.InMulti {
		c.W.NilArray()
		return
	}
	spec := &store.BlockSpec{DB: c.DB.Index, Queue: q, TimeoutMs: timeout, Retry: take}
	if dueAt != 0 {
		spec.Due = func(*store.Ctx) (int64, bool) { return dueAt, true }
	}
	c.Block = spec
}

// waitBlocked waits until INFO reports n blocked clients.
func waitBlocked(t *testing.T, c *testsupport.Conn, n int) {
	t.Helper()
	want := "blocked_clients:" + itoa(int64(n)) + "\r\n"
	deadline := time.Now().Add(testsupport.ClientTimeout)
	for {
		r := c.Do("INFO", "clients")
		if strings.Contains(r, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("want %q in %q", want, r)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestBlockedClientPipelineWaits(t *testing.T) {
	s := startServer(t, nil, nil)
	c := dial(t, s)
	admin := dial(t, s)
	c.Write(append(append(encode("TEST.TAKE", "q", "0"), encode("PING", "after")...), encode("TEST.ITEMS", "q")...))
	waitBlocked(t, admin, 1)
	c.ExpectNothing(50 * time.Millisecond)
	if r := admin.Do("CLIENT", "LIST"); !strings.Contains(r, "flags=b ") || !strings.Contains(r, "cmd=test.take") {
		t.Fatalf("CLIENT LIST %q", r)
	}
	if r := admin.Do("TEST.PUT", "q", "1"); r != ":1\r\n" {
		t.Fatal(r)
	}
	for _, want := range []string{"$4\r\nitem\r\n", "$5\r\nafter\r\n", ":0\r\n"} {
		if r := c.Read(); r != want {
			t.Fatalf("got %q want %q", r, want)
		}
	}
	waitBlocked(t, admin, 0)
	// Another database's queue of the same name is another queue.
	c.Do("SELECT", "1")
	c.Write(encode("TEST.TAKE", "q", "0"))
	waitBlocked(t, admin, 1)
	admin.Do("TEST.PUT", "q", "1") // db 0
	c.ExpectNothing(30 * time.Millisecond)
	admin.Do("SELECT", "1")
	admin.Do("TEST.PUT", "q", "1")
	if r := c.Read(); r != "$4\r\nitem\r\n" {
		t.Fatal(r)
	}
}

// TestBlockedFIFO: waiters are served in arrival order, and a wake-up
// stops at the first waiter its Retry cannot serve.
func TestBlockedFIFO(t *testing.T) {
	s := startServer(t, nil, nil)
	admin := dial(t, s)
	var cs []*testsupport.Conn
	for i := 0; i < 3; i++ {
		c := dial(t, s)
		c.Do("CLIENT", "SETNAME", "w"+itoa(int64(i)))
		c.Write(encode("TEST.TAKE", "q", "0"))
		waitBlocked(t, admin, i+1)
		cs = append(cs, c)
	}
	admin.Do("TEST.PUT", "q", "1")
	if r := cs[0].Read(); r != "$4\r\nitem\r\n" {
		t.Fatal(r)
	}
	cs[1].ExpectNothing(30 * time.Millisecond)
	cs[2].ExpectNothing(10 * time.Millisecond)
	waitBlocked(t, admin, 2)
	// Two items in one pipeline batch: both remaining waiters, in order.
	admin.Write(append(encode("TEST.PUT", "q", "1"), encode("TEST.PUT", "q", "1")...))
	admin.Read()
	admin.Read()
	for _, c := range cs[1:] {
		if r := c.Read(); r != "$4\r\nitem\r\n" {
			t.Fatal(r)
		}
	}
	if r := admin.Do("TEST.ITEMS", "q"); r != ":0\r\n" {
		t.Fatalf("items left %q", r)
	}
}

func TestBlockedTimeout(t *testing.T) {
	clk := clock.NewManual(1_000_000)
	s := startServer(t, nil, clk)
	admin := dial(t, s)
	c := dial(t, s)
	c.Write(encode("TEST.TAKE", "q", "1000"))
	waitBlocked(t, admin, 1)
	clk.Advance(999)
	c.ExpectNothing(30 * time.Millisecond)
	clk.Advance(1)
	if r := c.Read(); r != "*-1\r\n" {
		t.Fatalf("timeout reply %q", r)
	}
	waitBlocked(t, admin, 0)
	// RESP3: the nil array is _.
	c.Do("HELLO", "3")
	c.Write(encode("TEST.TAKE", "q", "10"))
	waitBlocked(t, admin, 1)
	clk.Advance(10)
	if r := c.Read(); r != "_\r\n" {
		t.Fatalf("RESP3 timeout reply %q", r)
	}
	// Served before the timeout: the timer is stopped, no second reply.
	c.Write(encode("TEST.TAKE", "q", "100"))
	waitBlocked(t, admin, 1)
	admin.Do("TEST.PUT", "q", "1")
	if r := c.Read(); r != "$4\r\nitem\r\n" {
		t.Fatal(r)
	}
	clk.Advance(200)
	c.ExpectNothing(30 * time.Millisecond)
}

// TestBlockedDue: the server retries at the earliest Due time.
func TestBlockedDue(t *testing.T) {
	clk := clock.NewManual(5_000)
	s := startServer(t, nil, clk)
	admin := dial(t, s)
	c := dial(t, s)
	c.Write(encode("TEST.TAKE", "q", "0", "500"))
	waitBlocked(t, admin, 1)
	clk.Advance(499)
	c.ExpectNothing(30 * time.Millisecond)
	clk.Advance(1)
	if r := c.Read(); r != "$3\r\ndue\r\n" {
		t.Fatalf("due reply %q", r)
	}
}

// TestBlockedDisconnectTakesNothing: a waiter that disconnects is removed
// and an item put later stays.
func TestBlockedDisconnectTakesNothing(t *testing.T) {
	s := startServer(t, nil, nil)
	admin := dial(t, s)
	c := dial(t, s)
	c.Write(encode("TEST.TAKE", "q", "0"))
	waitBlocked(t, admin, 1)
	c.NC.Close()
	waitBlocked(t, admin, 0)
	admin.Do("TEST.PUT", "q", "1")
	if r := admin.Do("TEST.ITEMS", "q"); r != ":1\r\n" {
		t.Fatalf("items %q", r)
	}
}

func TestBlockingInsideMultiDoesNotBlock(t *testing.T) {
	s := startServer(t, nil, nil)
	c := dial(t, s)
	expectReplies(t, c, [][2]any{
		{a("MULTI"), "+OK\r\n"},
		{a("TEST.TAKE", "q", "0"), "+QUEUED\r\n"},
		{a("PING"), "+QUEUED\r\n"},
		{a("EXEC"), "*2\r\n*-1\r\n+PONG\r\n"},
	})
}

// TestCloseWithParkedClient: Close ends parked connections promptly.
func TestCloseWithParkedClient(t *testing.T) {
	s, err := Start(Options{testCommands: fakeCommands})
	if err != nil {
		t.Fatal(err)
	}
	admin := dial(t, s)
	c := dial(t, s)
	c.Write(encode("TEST.TAKE", "q", "0"))
	waitBlocked(t, admin, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Close returns an error if connections are still open at the
	// deadline, so a parked client that Close cannot end fails here.
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	c.ExpectClosed()
}

// TestClientUnblock is CLIENT UNBLOCK id [TIMEOUT|ERROR] (Valkey's
// networking.c): a parked client gets its timeout reply (nil array) or the
// UNBLOCKED error and takes nothing; the caller gets 1, or 0 for a client
// that is not blocked; argument errors are Valkey's (checked against
// redis-server 7.0).
func TestClientUnblock(t *testing.T) {
	s := startServer(t, nil, clock.NewManual(1_000_000))
	admin := dial(t, s)
	c := dial(t, s)
	id := strings.TrimSuffix(strings.TrimPrefix(c.Do("CLIENT", "ID"), ":"), "\r\n")
	expectReplies(t, admin, [][2]any{
		{a("CLIENT", "UNBLOCK", id), ":0\r\n"},
		{a("CLIENT", "UNBLOCK", "999999"), ":0\r\n"},
		{a("CLIENT", "UNBLOCK", "x"), "-ERR value is not an integer or out of range\r\n"},
		{a("CLIENT", "UNBLOCK", id, "soon"), "-ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR\r\n"},
		{a("CLIENT", "UNBLOCK", id, "timeout", "x"), "-ERR unknown subcommand or wrong number of arguments for 'UNBLOCK'. Try CLIENT HELP.\r\n"},
		{a("CLIENT", "UNBLOCK"), "-ERR wrong number of arguments for 'client|unblock' command\r\n"},
	})
	c.Write(encode("TEST.TAKE", "q", "0"))
	waitBlocked(t, admin, 1)
	if r := admin.Do("CLIENT", "UNBLOCK", id); r != ":1\r\n" {
		t.Fatalf("unblock %q", r)
	}
	if r := c.Read(); r != "*-1\r\n" {
		t.Fatalf("unblocked reply %q", r)
	}
	waitBlocked(t, admin, 0)
	c.Write(encode("TEST.TAKE", "q", "0"))
	waitBlocked(t, admin, 1)
	if r := admin.Do("CLIENT", "UNBLOCK", id, "ERROR"); r != ":1\r\n" {
		t.Fatalf("unblock error %q", r)
	}
	if r := c.Read(); r != "-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n" {
		t.Fatalf("unblocked error reply %q", r)
	}
	// An item put now stays: the unblocked client took nothing, and its
	// connection serves the next command.
	admin.Do("TEST.PUT", "q", "1")
	if r := c.Do("TEST.ITEMS", "q"); r != ":1\r\n" {
		t.Fatalf("items %q", r)
	}
	if r := c.Do("CLIENT", "UNBLOCK", id); r != ":0\r\n" {
		t.Fatalf("self unblock %q", r)
	}
}
