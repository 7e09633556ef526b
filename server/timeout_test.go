package server

import (
	"strings"
	"testing"
	"time"

	"github.com/emqd/emqd/clock"
	"github.com/emqd/emqd/internal/testsupport"
)

// TestIdleTimeout: with timeout 2 and maxclients 50, 60 clients that send
// half a command and stall are closed once 2 s of the server clock pass
// without a byte from them, which frees the slots; a client blocked in a
// claim (or any blocking command) stays, and so does one that keeps
// talking. All on the manual clock: nothing sleeps.
func TestIdleTimeout(t *testing.T) {
	clk := clock.NewManual(pt0)
	s := startServer(t, map[string]string{"timeout": "2", "maxclients": "50"}, clk)
	admin := dial(t, s)
	blocked := dial(t, s)
	blocked.Write(encode("EMQ.CLAIM", "q", "1000", "BLOCK", "0"))
	waitInfoClients(t, admin, "connected_clients:2 blocked_clients:1")
	var stalled []*testsupport.Conn
	for i := 0; i < 60; i++ {
		c := dial(t, s)
		c.Write([]byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n")) // half a SET
		stalled = append(stalled, c)
	}
	// 48 of them got a slot (2 are taken); the rest were refused.
	refused := 0
	for _, c := range stalled[48:] {
		if r, err := c.ReadTimeout(5e9); err == nil && r == "-ERR max number of clients reached\r\n" {
			refused++
		}
	}
	if refused != 12 {
		t.Fatalf("%d refused past maxclients, want 12", refused)
	}
	waitInfoClients(t, admin, "connected_clients:50 blocked_clients:1")
	// The idle clock of each stalled client starts at its last byte read:
	// wait until the server has read every half SET (20 bytes each, in
	// CLIENT LIST's tot-net-in), else a read that a loaded machine delays
	// past the first Advance restarts that client's idle time.
	for deadline := time.Now().Add(60 * time.Second); ; {
		if n := strings.Count(admin.Do("CLIENT", "LIST"), " tot-net-in=20 "); n == 48 {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("%d of 48 half SETs read", n)
		}
		time.Sleep(time.Millisecond)
	}
	clk.Advance(1500)
	// The tick this fired re-arms the next one 100 ms on from the clock it
	// finds: let it finish first, or a tick still running when the next
	// Advance lands re-arms past it and no tick sees 2.1 s (1 run in 20
	// under -race).
	clk.Wait()
	admin.Do("PING") // the admin keeps talking
	clk.Advance(600) // 2.1 s since the stalled clients' last byte
	clk.Wait()
	for _, c := range stalled[:48] {
		c.ExpectClosed()
	}
	waitInfoClients(t, admin, "connected_clients:2 blocked_clients:1")
	// The freed slots take clients again; the blocked claim still waits.
	late := dial(t, s)
	if r := late.Do("EMQ.ENQUEUE", "q", "JOB00000000001", "p"); r != "$14\r\nJOB00000000001\r\n" {
		t.Fatalf("ENQUEUE %q", r)
	}
	if r := blocked.Read(); r[:3] != "*1\r" {
		t.Fatalf("blocked claim got %q", r)
	}
	// timeout 0 (CONFIG SET) closes nobody.
	admin.Do("CONFIG", "SET", "timeout", "0")
	clk.Advance(10_000)
	clk.Wait()
	if r := late.Do("PING"); r != "+PONG\r\n" {
		t.Fatalf("PING after 10 s with timeout 0: %q", r)
	}
}

// TestIdleSubscribersStay: timeout never closes a client with a
// subscription (SUBSCRIBE or PSUBSCRIBE, RESP2 or RESP3), as in Valkey,
// and it keeps receiving messages; an idle client without one is closed,
// and so is a former subscriber once it unsubscribed and went idle.
func TestIdleSubscribersStay(t *testing.T) {
	clk := clock.NewManual(pt0)
	s := startServer(t, map[string]string{"timeout": "1"}, clk)
	sub2, psub2, sub3, psub3, idle := dial(t, s), dial(t, s), dial(t, s), dial(t, s), dial(t, s)
	sub3.Do("HELLO", "3")
	psub3.Do("HELLO", "3")
	if r := sub2.Do("SUBSCRIBE", "ch"); r != "*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n" {
		t.Fatalf("SUBSCRIBE: %q", r)
	}
	psub2.Do("PSUBSCRIBE", "c*")
	sub3.Do("SUBSCRIBE", "ch")
	psub3.Do("PSUBSCRIBE", "c*")
	left := dial(t, s)
	left.Do("SUBSCRIBE", "x")
	left.Do("UNSUBSCRIBE", "x")
	idle.Do("PING")
	clk.Advance(5000)
	clk.Wait()
	idle.ExpectClosed()
	left.ExpectClosed()
	pub := dial(t, s)
	if r := pub.Do("PUBLISH", "ch", "hi"); r != ":4\r\n" {
		t.Fatalf("PUBLISH reached %q subscribers, want 4", r)
	}
	for _, want := range []struct {
		c *testsupport.Conn
		f string
	}{
		{sub2, "*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n"},
		{psub2, "*4\r\n$8\r\npmessage\r\n$2\r\nc*\r\n$2\r\nch\r\n$2\r\nhi\r\n"},
		{sub3, ">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n"},
		{psub3, ">4\r\n$8\r\npmessage\r\n$2\r\nc*\r\n$2\r\nch\r\n$2\r\nhi\r\n"},
	} {
		if f := want.c.Read(); f != want.f {
			t.Fatalf("got %q want %q", f, want.f)
		}
	}
}

// TestIdleTimeoutCountsFromEveryRead: a read that completes a command is
// stamped with its batch's clock reading and one that completes none with
// a reading of its own (client.stampRead), so with timeout 2 a client
// whose only traffic is a command with no reply (CLIENT REPLY OFF) or half
// a command stays 1.5 s later, and is closed 2.1 s after its last byte.
// Before the read read the clock itself; a stamp missing from either path
// would close the client at the second or third step (3 s and 4.5 s after
// its last reply).
func TestIdleTimeoutCountsFromEveryRead(t *testing.T) {
	clk := clock.NewManual(pt0)
	s := startServer(t, map[string]string{"timeout": "2"}, clk)
	admin, c := dial(t, s), dial(t, s)
	id := strings.TrimSpace(strings.TrimPrefix(c.Do("CLIENT", "ID"), ":"))
	// netIn waits until the server has read n bytes from c in all.
	netIn := func(n int) {
		t.Helper()
		want := " tot-net-in=" + itoa(int64(n)) + " "
		for deadline := time.Now().Add(60 * time.Second); ; {
			list := admin.Do("CLIENT", "LIST", "ID", id)
			if !strings.Contains(list, "id="+id+" ") {
				t.Fatalf("client %s was closed before the server read %d bytes from it", id, n)
			}
			if strings.Contains(list, want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the server never read %d bytes from client %s", n, id)
			}
			time.Sleep(time.Millisecond)
		}
	}
	sent := len(encode("CLIENT", "ID"))
	step := func(b []byte) {
		t.Helper()
		c.Write(b)
		sent += len(b)
		netIn(sent)
		clk.Advance(1500)
		clk.Wait()
	}
	step(encode("CLIENT", "REPLY", "OFF")) // t = 1.5 s
	step(encode("PING"))                   // no reply: stamped by its batch; t = 3.0 s
	step([]byte("*1\r\n$4\r\nPIN"))        // half a command: stampRead; t = 4.5 s
	c.Write(append([]byte("G\r\n"), encode("CLIENT", "REPLY", "ON")...))
	if r := c.Read(); r != "+OK\r\n" {
		t.Fatalf("CLIENT REPLY ON after 4.5 s: %q, want +OK (closed early?)", r)
	}
	clk.Advance(2100)
	clk.Wait()
	c.ExpectClosed()
}
