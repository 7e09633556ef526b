package server

import (
	"strings"
	"testing"
	"time"
)

// TestArgvsHeldAcrossBatchesSurviveRecycle: the reader reuses a batch's
// argvs only when the batch left none held (docs/architecture.md §2.1).
// Commands queued in MULTI and commands pending behind a parked one are
// held across batches; the batches sent in between must not overwrite
// them.
func TestArgvsHeldAcrossBatchesSurviveRecycle(t *testing.T) {
	s := startServer(t, nil, nil)
	c := dial(t, s)

	// MULTI queued over two batches, many batches, then EXEC.
	c.Write(append(append(encode("MULTI"), encode("SET", "a", "first")...), encode("HSET", "h", "f1", "v1", "f2", "v2")...))
	for _, want := range []string{"+OK\r\n", "+QUEUED\r\n", "+QUEUED\r\n"} {
		if got := c.Read(); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	c.Write(encode("SET", "b", "second"))
	if got := c.Read(); got != "+QUEUED\r\n" {
		t.Fatalf("got %q", got)
	}
	// (Had the second batch reused the first one's argvs, the queued SET a
	// would now read SET b.)
	c.Write(encode("EXEC"))
	if got, want := c.Read(), "*3\r\n+OK\r\n:2\r\n+OK\r\n"; got != want {
		t.Fatalf("EXEC: %q, want %q", got, want)
	}
	for _, q := range [][]string{{"GET", "a"}, {"GET", "b"}, {"HGET", "h", "f2"}} {
		want := map[string]string{"a": "$5\r\nfirst\r\n", "b": "$6\r\nsecond\r\n", "h": "$2\r\nv2\r\n"}[q[1]]
		if got := c.Do(q...); got != want {
			t.Fatalf("%v: %q, want %q", q, got, want)
		}
	}
	// After EXEC the connection's batches are recycled again: a long run
	// of pipelined batches of different shapes answers right.
	for i := 0; i < 30; i++ {
		var batch []byte
		for j := 0; j <= i%7; j++ {
			batch = append(batch, encode("HGET", "h", "f1")...)
			batch = append(batch, encode("ECHO", strings.Repeat("y", i))...)
		}
		c.Write(batch)
		for j := 0; j <= i%7; j++ {
			if got := c.Read(); got != "$2\r\nv1\r\n" {
				t.Fatalf("batch %d: HGET %q", i, got)
			}
			if got, want := c.Read(), "$"+itoa(int64(i))+"\r\n"+strings.Repeat("y", i)+"\r\n"; got != want {
				t.Fatalf("batch %d: ECHO %q, want %q", i, got, want)
			}
		}
	}

	// A blocking command parks with commands pending behind it, sent in
	// the same batch.
	c.Write(append(append(encode("BZPOPMIN", "z", "0"), encode("ECHO", "after-1")...), encode("HGET", "h", "f2")...))
	// While parked, the connection sends another batch: it is read but not
	// run before the wake-up.
	c.Write(encode("ECHO", "after-2"))
	c.ExpectNothing(50 * time.Millisecond)
	f := dial(t, s)
	if got := f.Do("ZADD", "z", "1", "m"); got != ":1\r\n" {
		t.Fatalf("ZADD: %q", got)
	}
	for _, want := range []string{"*3\r\n$1\r\nz\r\n$1\r\nm\r\n$1\r\n1\r\n", "$7\r\nafter-1\r\n", "$2\r\nv2\r\n", "$7\r\nafter-2\r\n"} {
		if got := c.Read(); got != want {
			t.Fatalf("after the wake-up: %q, want %q", got, want)
		}
	}
}

// TestCommandNameCaseAndCache: a connection remembers its last command
// name as sent (client.lookup); every spelling still resolves as Valkey
// resolves it, and an unknown name is never taken for the last known one.
func TestCommandNameCaseAndCache(t *testing.T) {
	s := startServer(t, nil, nil)
	c := dial(t, s)
	long := strings.Repeat("x", 30)
	var batch []byte
	for _, cmd := range [][]string{
		{"hset", "h", "f", "v"}, {"HGET", "h", "f"}, {"HGET", "h", "f"}, {"hget", "h", "f"},
		{"HgEt", "h", "f"}, {"HLEN", "h"}, {"HGETX", "h", "f"}, {"HGET", "h", "f"}, {long}, {long}, {"HGE", "h"},
		{"CLIENT", "GETNAME"}, {"CLIENT", "NOSUCH"}, {"client", "getname"},
	} {
		batch = append(batch, encode(cmd...)...)
	}
	c.Write(batch)
	for i, want := range []string{
		":1\r\n", "$1\r\nv\r\n", "$1\r\nv\r\n", "$1\r\nv\r\n",
		"$1\r\nv\r\n", ":1\r\n", "-ERR unknown command 'HGETX', with args beginning with: 'h' 'f' \r\n", "$1\r\nv\r\n",
		"-ERR unknown command '" + long + "', with args beginning with: \r\n",
		"-ERR unknown command '" + long + "', with args beginning with: \r\n",
		"-ERR unknown command 'HGE', with args beginning with: 'h' \r\n",
		"$-1\r\n", "-ERR unknown subcommand 'NOSUCH'. Try CLIENT HELP.\r\n", "$-1\r\n",
	} {
		if got := c.Read(); got != want {
			t.Fatalf("reply %d: %q, want %q", i, got, want)
		}
	}
}
