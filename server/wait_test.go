package server

import (
	"strings"
	"testing"
	"time"

	"github.com/emqd/emqd/clock"
	"github.com/emqd/emqd/internal/testsupport"
)

// EMQ.WAIT (docs/verbs.md §4.23) end to end: parks on the job row, wakes
// on completion and on death, times out on the server clock, never blocks
// in MULTI, answers a missing row at once.

const waitID = "JOB00000000001"

// claimToken enqueues waitID on q and claims it, returning its token.
func claimToken(t *testing.T, c *testsupport.Conn, q string) string {
	t.Helper()
	if r := c.Do("EMQ.ENQUEUE", q, waitID, "p"); strings.HasPrefix(r, "-") {
		t.Fatal(r)
	}
	r := c.Do("EMQ.CLAIM", q, "60000")
	// *1 *4 $14 id $1 p $n token :0
	parts := strings.Split(r, "\r\n")
	if len(parts) < 8 {
		t.Fatalf("claim reply %q", r)
	}
	return parts[7]
}

func TestWaitWakesOnCompletion(t *testing.T) {
	s := startServer(t, nil, clock.NewManual(1_700_000_000_000))
	admin := dial(t, s)
	admin.Do("EMQ.RETAIN", "q", "COMPLETED", "10", "0")
	tok := claimToken(t, admin, "q")
	w := dial(t, s)
	w.Write(encode("EMQ.WAIT", "q", waitID, "0"))
	waitBlocked(t, admin, 1)
	w.ExpectNothing(30 * time.Millisecond)
	// A write of the row that does not finish it does not answer.
	admin.Do("EMQ.PROGRESS", "q", waitID, tok, "half")
	w.ExpectNothing(30 * time.Millisecond)
	if r := admin.Do("EMQ.COMPLETE", "q", waitID, tok, "RESULT", "42"); r != ":1\r\n" {
		t.Fatal(r)
	}
	want := "*8\r\n$5\r\nstate\r\n$9\r\ncompleted\r\n$6\r\nresult\r\n$2\r\n42\r\n$5\r\nerror\r\n$-1\r\n$11\r\nfinished_at\r\n$13\r\n1700000000000\r\n"
	if r := w.Read(); r != want {
		t.Fatalf("wake reply %q, want %q", r, want)
	}
	waitBlocked(t, admin, 0)
	// Finished and retained: answers at once, RESP3 as a map.
	w.Do("HELLO", "3")
	want3 := "%4\r\n$5\r\nstate\r\n$9\r\ncompleted\r\n$6\r\nresult\r\n$2\r\n42\r\n$5\r\nerror\r\n_\r\n$11\r\nfinished_at\r\n$13\r\n1700000000000\r\n"
	if r := w.Do("EMQ.WAIT", "q", waitID, "0"); r != want3 {
		t.Fatalf("retained reply %q, want %q", r, want3)
	}
}

func TestWaitCompletionWithoutRetentionAnswersGone(t *testing.T) {
	s := startServer(t, nil, nil)
	admin := dial(t, s)
	tok := claimToken(t, admin, "q")
	w := dial(t, s)
	w.Write(encode("EMQ.WAIT", "q", waitID, "0"))
	waitBlocked(t, admin, 1)
	admin.Do("EMQ.COMPLETE", "q", waitID, tok)
	if r := w.Read(); r != "-EMQSTALE job gone\r\n" {
		t.Fatalf("reply %q", r)
	}
	if r := w.Do("EMQ.WAIT", "q", "JOB0000000000Z", "100"); r != "-EMQSTALE job gone\r\n" {
		t.Fatalf("no row: %q", r)
	}
}

func TestWaitWakesOnDeath(t *testing.T) {
	s := startServer(t, nil, clock.NewManual(1_700_000_000_000))
	admin := dial(t, s)
	tok := claimToken(t, admin, "q")
	w1, w2 := dial(t, s), dial(t, s)
	w1.Write(encode("EMQ.WAIT", "q", waitID, "0"))
	w2.Write(encode("EMQ.WAIT", "q", waitID, "5000"))
	waitBlocked(t, admin, 2)
	if r := admin.Do("EMQ.FAIL", "q", waitID, tok, "1", "0", "boom"); strings.HasPrefix(r, "-") {
		t.Fatal(r)
	}
	want := "*8\r\n$5\r\nstate\r\n$4\r\ndead\r\n$6\r\nresult\r\n$-1\r\n$5\r\nerror\r\n$4\r\nboom\r\n$11\r\nfinished_at\r\n$13\r\n1700000000000\r\n"
	for i, w := range []*testsupport.Conn{w1, w2} {
		if r := w.Read(); r != want {
			t.Fatalf("waiter %d: %q, want %q", i, r, want)
		}
	}
	waitBlocked(t, admin, 0)
}

func TestWaitTimesOut(t *testing.T) {
	clk := clock.NewManual(1_000_000)
	s := startServer(t, nil, clk)
	admin := dial(t, s)
	admin.Do("EMQ.ENQUEUE", "q", waitID, "p")
	w := dial(t, s)
	w.Write(encode("EMQ.WAIT", "q", waitID, "1000"))
	waitBlocked(t, admin, 1)
	clk.Advance(999)
	w.ExpectNothing(30 * time.Millisecond)
	clk.Advance(1)
	if r := w.Read(); r != "*-1\r\n" {
		t.Fatalf("timeout reply %q", r)
	}
	w.Do("HELLO", "3")
	w.Write(encode("EMQ.WAIT", "q", waitID, "10"))
	waitBlocked(t, admin, 1)
	clk.Advance(10)
	if r := w.Read(); r != "_\r\n" {
		t.Fatalf("RESP3 timeout reply %q", r)
	}
}

func TestWaitInsideMultiDoesNotBlock(t *testing.T) {
	s := startServer(t, nil, nil)
	c := dial(t, s)
	c.Do("EMQ.ENQUEUE", "q", waitID, "p")
	c.Do("MULTI")
	c.Do("EMQ.WAIT", "q", waitID, "0")
	c.Do("EMQ.WAIT", "q", "JOB0000000000Z", "0")
	if r := c.Do("EXEC"); r != "*2\r\n*-1\r\n-EMQSTALE job gone\r\n" {
		t.Fatalf("EXEC %q", r)
	}
}

func TestWaitRefusals(t *testing.T) {
	s := startServer(t, nil, nil)
	c := dial(t, s)
	c.Do("SET", "emq:{q}:job:"+waitID, "x")
	for _, tc := range [][2]string{
		{"EMQ.WAIT q " + waitID + " -1", "-ERR timeout_ms must be a non-negative integer\r\n"},
		{"EMQ.WAIT q " + waitID + " x", "-ERR value is not an integer or out of range\r\n"},
		{"EMQ.WAIT q " + waitID + " 0", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
		{"EMQ.WAIT q " + waitID, "-ERR wrong number of arguments for 'emq.wait' command\r\n"},
	} {
		if r := c.Do(strings.Fields(tc[0])...); r != tc[1] {
			t.Errorf("%s: %q, want %q", tc[0], r, tc[1])
		}
	}
}

// TestWaitFlushAnswersGone: FLUSHDB and FLUSHALL delete the row without a
// write of its key; the waiter is retried and answers EMQSTALE job gone.
func TestWaitFlushAnswersGone(t *testing.T) {
	for _, flush := range []string{"FLUSHDB", "FLUSHALL"} {
		s := startServer(t, nil, nil)
		admin := dial(t, s)
		admin.Do("EMQ.ENQUEUE", "q", waitID, "p")
		w := dial(t, s)
		w.Write(encode("EMQ.WAIT", "q", waitID, "0"))
		waitBlocked(t, admin, 1)
		admin.Do(flush)
		if r := w.Read(); r != "-EMQSTALE job gone\r\n" {
			t.Fatalf("%s: %q", flush, r)
		}
		waitBlocked(t, admin, 0)
	}
}
