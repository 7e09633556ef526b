package server

import (
	"testing"

	"github.com/emqd/emqd/clock"
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
		"EMQ.COUNTS q", "*16\r\n$7\r\npending\r\n:0\r\n$6\r\nactive\r\n:0\r\n$9\r\nscheduled\r\n:0\r\n$4\r\ndead\r\n:0\r\n$9\r\ncompleted\r\n:0\r\n$6\r\nfailed\r\n:0\r\n$8\r\nretained\r\n:0\r\n$10\r\nlatency_ms\r\n:0\r\n",
		"CLIENT NO-EVICT on", "+OK\r\n",
		"CLIENT NO-TOUCH OFF", "+OK\r\n",
	)
	w.write(encode("SET", "k", "1"))
	w.write(encode("GET", "k"))
	w.expectNothing(300e6)
	if got := c.do("EXISTS", "k"); got != ":0\r\n" {
		t.Fatalf("the held SET ran: %q", got)
	}
	steps(t, admin, "CLIENT UNPAUSE", "+OK\r\n")
	expectFrames(t, w, "+OK\r\n", "$1\r\n1\r\n")

	steps(t, admin, "CLIENT PAUSE 1000", "+OK\r\n")
	c.write(encode("PING"))
	c.expectNothing(300e6)
	clk.Advance(1000)
	clk.Wait()
	expectFrames(t, c, "+PONG\r\n")
	steps(t, admin, "CLIENT UNPAUSE", "+OK\r\n") // no pause: still OK

	errs := [][]string{
		{"CLIENT", "PAUSE", "x"}, {"CLIENT", "PAUSE", "-1"}, {"CLIENT", "PAUSE", "100", "FOO"},
		{"CLIENT", "PAUSE", "1", "2", "3"}, {"CLIENT", "UNPAUSE", "x"}, {"CLIENT", "NO-EVICT", "maybe"},
	}
	ref := dialAddr(t, valkeyref.Start(t).Addr)
	for _, e := range errs {
		if got, want := admin.do(e...), ref.do(e...); got != want {
			t.Errorf("%q: emqd %q, Valkey %q", e, got, want)
		}
	}
}
