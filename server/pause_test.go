package server

import (
	"strings"
	"testing"
	"time"

	"github.com/emqd/emqd/clock"
	"github.com/emqd/emqd/internal/testsupport"
	"github.com/emqd/emqd/internal/valkeyref"
)

// TestClientPause: CLIENT PAUSE WRITE lets reads and the EMQ read verbs
// through and holds writes (and what follows them on that connection)
// until CLIENT UNPAUSE; ALL holds every command until the timeout passes
// on the server clock; the errors are Valkey 8.0.1's (compared with the
// reference server).
func TestClientPause(t *testing.T) {
	clk := clock.NewManual(pt0)
	s := startServer(t, nil, clk)
	admin, c, w := dial(t, s), dial(t, s), dial(t, s)
	steps(t, admin, "CLIENT PAUSE 10000 WRITE", "+OK\r\n")
	steps(t, c,
		"GET k", "$-1\r\n",
		"EMQ.COUNTS q", "*18\r\n$7\r\npending\r\n:0\r\n$6\r\nactive\r\n:0\r\n$9\r\nscheduled\r\n:0\r\n$4\r\ndead\r\n:0\r\n$9\r\ncompleted\r\n:0\r\n$6\r\nfailed\r\n:0\r\n$8\r\nretained\r\n:0\r\n$10\r\nlatency_ms\r\n:0\r\n$7\r\nwaiting\r\n:0\r\n",
		"CLIENT NO-EVICT on", "+OK\r\n",
		"CLIENT NO-TOUCH OFF", "+OK\r\n",
	)
	w.Write(encode("SET", "k", "1"))
	w.Write(encode("GET", "k"))
	w.ExpectNothing(300e6)
	if got := c.Do("EXISTS", "k"); got != ":0\r\n" {
		t.Fatalf("the held SET ran: %q", got)
	}
	steps(t, admin, "CLIENT UNPAUSE", "+OK\r\n")
	expectFrames(t, w, "+OK\r\n", "$1\r\n1\r\n")

	steps(t, admin, "CLIENT PAUSE 1000", "+OK\r\n")
	c.Write(encode("PING"))
	c.ExpectNothing(300e6)
	clk.Advance(1000)
	clk.Wait()
	expectFrames(t, c, "+PONG\r\n")
	steps(t, admin, "CLIENT UNPAUSE", "+OK\r\n") // no pause: still OK

	errs := [][]string{
		{"CLIENT", "PAUSE", "x"}, {"CLIENT", "PAUSE", "-1"}, {"CLIENT", "PAUSE", "100", "FOO"},
		{"CLIENT", "PAUSE", "1", "2", "3"}, {"CLIENT", "UNPAUSE", "x"}, {"CLIENT", "NO-EVICT", "maybe"},
		// now + timeout would overflow: `ERR timeout is out of range`.
		{"CLIENT", "PAUSE", "9223372036854775807", "WRITE"}, {"CLIENT", "PAUSE", "9223372036854775807"},
		{"CLIENT", "PAUSE", "9223372036854775000", "ALL"},
	}
	ref := dialAddr(t, valkeyref.Start(t).Addr)
	for _, e := range errs {
		if got, want := admin.Do(e...), ref.Do(e...); got != want {
			t.Errorf("%q: emqd %q, Valkey %q", e, got, want)
		}
	}
}

// TestClientPauseDropsGoneClient: a write held by CLIENT PAUSE WRITE whose
// client disconnects while held never runs, on emqd as on Valkey 8.0.1
// (same steps against both servers): GET k answers the value before the
// pause, and the pause ends with one client left.
func TestClientPauseDropsGoneClient(t *testing.T) {
	s := startServer(t, nil, clock.NewManual(pt0))
	for _, srv := range []struct{ name, addr string }{
		{"emqd", s.Addr()},
		{"valkey", valkeyref.Start(t).Addr},
	} {
		admin := dialAddr(t, srv.addr)
		steps(t, admin, "SET k v", "+OK\r\n", "CLIENT PAUSE 100000 WRITE", "+OK\r\n")
		held := dialAddr(t, srv.addr)
		held.Write(encode("SET", "k", "v3"))
		held.Write(encode("SET", "k2", "x"))
		held.ExpectNothing(300e6)
		held.NC.Close()
		// Wait until the server has seen the close (Valkey frees the
		// client at once; emqd's held connection notices it while it
		// waits), so UNPAUSE comes after it on both.
		deadline := time.Now().Add(10 * time.Second)
		for connectedClients(t, admin) != "1" {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the closed held client is still connected", srv.name)
			}
			time.Sleep(20 * time.Millisecond)
		}
		steps(t, admin, "CLIENT UNPAUSE", "+OK\r\n")
		if got := admin.Do("GET", "k"); got != "$1\r\nv\r\n" {
			t.Errorf("%s: GET k = %q after the held SET's client left, want v", srv.name, got)
		}
		if got := admin.Do("EXISTS", "k2"); got != ":0\r\n" {
			t.Errorf("%s: EXISTS k2 = %q: a command behind the held one ran", srv.name, got)
		}
	}
}

// connectedClients is INFO clients' connected_clients as c sees it.
func connectedClients(t *testing.T, c *testsupport.Conn) string {
	t.Helper()
	info := c.Do("INFO", "clients")
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, "connected_clients:"); ok {
			return v
		}
	}
	t.Fatalf("no connected_clients in %q", info)
	return ""
}

// TestClientPauseHoldsEmqdsWriters: a lease that runs out and a schedule
// that comes due during CLIENT PAUSE WRITE change nothing until the pause
// ends (the sweep and the schedule timer wait, as Valkey's active expiry
// does: pause.go); then both happen.
func TestClientPauseHoldsEmqdsWriters(t *testing.T) {
	clk := clock.NewManual(1_700_000_000_000)
	s := startServer(t, map[string]string{"emq-sweep-interval-ms": "100"}, clk)
	c := dial(t, s)
	if r := c.Do("EMQ.ENQUEUE", "q", "JOB00000000001", "p"); r != "$14\r\nJOB00000000001\r\n" {
		t.Fatalf("enqueue %q", r)
	}
	if r := c.Do("EMQ.CLAIM", "q", "50"); !strings.HasPrefix(r, "*1\r\n") {
		t.Fatalf("claim %q", r)
	}
	if r := c.Do("EMQ.SCHEDULE", "s", "tick", "EVERY", "1000", "p"); r != "+OK\r\n" {
		t.Fatalf("EMQ.SCHEDULE: %q", r)
	}
	if r := c.Do("CLIENT", "PAUSE", "60000", "WRITE"); r != "+OK\r\n" {
		t.Fatalf("pause %q", r)
	}
	for range 3 {
		clk.Advance(1000)
		clk.Wait() // the sweeper's and the schedule's timers due by now have run
	}
	if r := c.Do("EMQ.JOB", "q", "JOB00000000001"); !strings.Contains(r, "$5\r\nstate\r\n$6\r\nactive\r\n") {
		t.Fatalf("swept during the pause: %q", r)
	}
	if r := c.Do("ZCARD", "emq:{s}:pending"); r != ":0\r\n" {
		t.Fatalf("a schedule fired during the pause: ZCARD %q", r)
	}
	if r := c.Do("CLIENT", "UNPAUSE"); r != "+OK\r\n" {
		t.Fatalf("unpause %q", r)
	}
	clk.Advance(100)
	deadline := time.Now().Add(testsupport.ClientTimeout)
	for {
		job := c.Do("EMQ.JOB", "q", "JOB00000000001")
		fired := c.Do("ZCARD", "emq:{s}:pending")
		if strings.Contains(job, "$5\r\nstate\r\n$4\r\ndead\r\n") && fired != ":0\r\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the pause: job %q, schedule's pending %q", job, fired)
		}
		clk.Advance(10)
		time.Sleep(5 * time.Millisecond)
	}
}
