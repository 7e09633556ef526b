package server

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/emqd/emqd/internal/valkeyref"
)

// refDial connects to a reference server (valkeyref) with the test
// connection type.
func refDial(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc, br: bufio.NewReader(nc)}
}

// TestOutputLimitDefaultsAsValkey (issue 27 item 1): CONFIG GET
// client-output-buffer-limit answers Valkey 8.0.1's bytes, class names
// included (normal without limit, "slave", pubsub 32 MiB / 8 MiB 60 s), and
// CONFIG SET with "replica" reads back as "slave" on both.
func TestOutputLimitDefaultsAsValkey(t *testing.T) {
	ref := valkeyref.Start(t)
	s := startServer(t, nil, nil)
	e, v := dial(t, s), refDial(t, ref.Addr)
	for _, cmd := range [][]string{
		{"CONFIG", "GET", "client-output-buffer-limit"},
		{"CONFIG", "SET", "client-output-buffer-limit", "replica 1mb 2mb 3"},
		{"CONFIG", "GET", "client-output-buffer-limit"},
		{"CONFIG", "SET", "client-output-buffer-limit", "master 1mb 2mb 3"},
	} {
		got, want := e.do(cmd...), v.do(cmd...)
		if got != want {
			t.Errorf("%q: emqd %q, valkey %q", cmd, got, want)
		}
	}
	if got := e.do("CONFIG", "GET", "client-output-buffer-limit"); !strings.Contains(got, "normal 0 0 0 slave 1048576 2097152 3 pubsub 33554432 8388608 60") {
		t.Fatalf("after SET: %q", got)
	}
}

// claimReply parses an EMQ.CLAIM reply read from c and returns the ids.
func claimIDs(t *testing.T, raw string) []string {
	t.Helper()
	n, err := diffParse(raw)
	if err != nil {
		t.Fatalf("parse %.200q: %v", raw, err)
	}
	var ids []string
	for _, j := range n.kids {
		ids = append(ids, j.kids[0].text)
	}
	return ids
}

// TestClaimPastOutputLimitKeepsJobs (issue 27 item 1, scaled to the test
// machine: 300 jobs of 64 KiB and a 1 MiB limit instead of 1 MiB jobs and
// 256 MiB): the claim hands out only what the client's limit lets it read,
// the connection stays open, the jobs not handed out stay pending, and a
// sweep past the lease recovers exactly the ones handed out; a parked
// claimer's retry is held to the same budget.
func TestClaimPastOutputLimitKeepsJobs(t *testing.T) {
	s := startServer(t, map[string]string{"client-output-buffer-limit": "normal 1mb 0 0"}, nil)
	c := dial(t, s)
	payload := strings.Repeat("p", 64<<10)
	for i := 0; i < 300; i++ {
		if r := c.do("EMQ.ENQUEUE", "bq", fmt.Sprintf("JOB%011d", i+1), payload); !strings.HasPrefix(r, "$14") {
			t.Fatal(r)
		}
	}
	raw := c.do("EMQ.CLAIM", "bq", "1000", "COUNT", "300")
	if len(raw) > 1<<20 {
		t.Fatalf("reply of %d bytes", len(raw))
	}
	if ids := claimIDs(t, raw); len(ids) != 15 || ids[14] != "JOB00000000015" {
		t.Fatalf("claimed %d: %v", len(ids), ids)
	}
	if r := c.do("PING"); r != "+PONG\r\n" {
		t.Fatalf("connection: %q", r)
	}
	if r := c.do("ZCARD", "emq:{bq}:pending"); r != ":285\r\n" {
		t.Fatalf("pending %q", r)
	}
	if r := c.do("ZCARD", "emq:{bq}:active"); r != ":15\r\n" {
		t.Fatalf("active %q", r)
	}
	if r := c.do("INFO", "stats"); !strings.Contains(r, "client_output_buffer_limit_disconnections:0\r\n") {
		t.Fatal("a client was disconnected")
	}

	// A parked claimer: its retry (another client's enqueue wakes it) is
	// held to the budget too.
	p := dial(t, s)
	if r := p.do("EMQ.CLAIM", "empty", "1000", "COUNT", "100", "BLOCK", "0", "X"); !strings.HasPrefix(r, "-ERR syntax") {
		t.Fatal(r)
	}
	p.write(encode("EMQ.CLAIM", "wq", "1000", "COUNT", "100", "BLOCK", "0"))
	eventually(t, func() bool { return strings.Contains(c.do("INFO", "clients"), "blocked_clients:1\r\n") })
	var tx []byte
	tx = append(tx, encode("MULTI")...)
	for i := 0; i < 30; i++ {
		tx = append(tx, encode("EMQ.ENQUEUE", "wq", fmt.Sprintf("JOB%011d", i+1), payload)...)
	}
	tx = append(tx, encode("EXEC")...)
	c.write(tx)
	for i := 0; i < 32; i++ {
		c.read()
	}
	if ids := claimIDs(t, p.read()); len(ids) != 15 {
		t.Fatalf("parked claimer got %d jobs", len(ids))
	}
	if r := c.do("ZCARD", "emq:{wq}:pending"); r != ":15\r\n" {
		t.Fatalf("wq pending %q", r)
	}
	if r := p.do("PING"); r != "+PONG\r\n" {
		t.Fatalf("parked claimer's connection: %q", r)
	}
}

// eventually polls cond; it fails only after 10 s, so nothing timed is
// asserted.
func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not met in 10 s")
}
