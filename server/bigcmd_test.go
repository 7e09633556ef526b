package server

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
)

// Memory of big commands (docs/architecture.md §2.9):
// a big value is received into one buffer of its own, kept by the store
// as it is, and encoded once into the AOF, whose unsynced copy takes the
// written buffer over instead of copying it.

// TestBigValueAllocatedOnceInStore: one HSET and one SET of a 16 MiB value
// with appendonly yes allocate (runtime TotalAlloc, the server's own
// accounting of the heap) at most 3.25 times the value: the reader's buffer
// grown as the bytes arrive (about twice the value in all) and the AOF
// record; the store's copy, the unsynced copy and the reader's extra copy
// for a value's CRLF (6 times the value before) are gone.
func TestBigValueAllocatedOnceInStore(t *testing.T) {
	s := startServer(t, map[string]string{"appendonly": "yes", "appendfsync": "always", "dir": t.TempDir()}, nil)
	c := dial(t, s)
	const n = 16 << 20
	value := strings.Repeat("v", n)
	for _, cmd := range [][]string{{"HSET", "h", "f", value}, {"SET", "s", value}} {
		req := encode(cmd...)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		c.Write(req)
		got := c.Read()
		runtime.ReadMemStats(&after)
		if got != ":1\r\n" && got != "+OK\r\n" {
			t.Fatalf("%s: %q", cmd[0], got)
		}
		a := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s of a %d-byte value: %d bytes allocated (%.2fx)", cmd[0], n, a, float64(a)/n)
		if a > 13*n/4 {
			t.Errorf("%s of a %d-byte value allocated %d bytes (%.2fx), want <= 3.25x", cmd[0], n, a, float64(a)/n)
		}
	}
	if got := c.Do("HSTRLEN", "h", "f"); got != ":16777216\r\n" {
		t.Fatalf("HSTRLEN %q", got)
	}
	if got := c.Do("STRLEN", "s"); got != ":16777216\r\n" {
		t.Fatalf("STRLEN %q", got)
	}
}

// TestKeptBigValueChangedLater: a big value the store kept without a copy
// is changed in place by a later command of the same pipeline (SETRANGE),
// inside MULTI (where the AOF record is encoded only at EXEC, so the value
// is copied) and by HSET of the same field; the replies and the AOF replay
// give the values each command wrote.
func TestKeptBigValueChangedLater(t *testing.T) {
	dir := t.TempDir()
	s := durable(t, dir, nil)
	c := dial(t, s)
	big := strings.Repeat("a", 64<<10)
	big2 := strings.Repeat("b", 40<<10)
	var req bytes.Buffer
	req.Write(encode("SET", "p", big))
	req.Write(encode("SETRANGE", "p", "0", "XY"))
	req.Write(encode("APPEND", "p", "Z"))
	req.Write(encode("MULTI"))
	req.Write(encode("SET", "m", big))
	req.Write(encode("SETRANGE", "m", "1", "Q"))
	req.Write(encode("HSET", "h", "f", big2))
	req.Write(encode("EXEC"))
	req.Write(encode("HSET", "h", "f", big))
	req.Write(encode("SETRANGE", "p", "5", "W"))
	c.Write(req.Bytes())
	var replies []string
	for range 10 {
		replies = append(replies, c.Read())
	}
	want := []string{"+OK\r\n", ":65536\r\n", ":65537\r\n", "+OK\r\n", "+QUEUED\r\n", "+QUEUED\r\n", "+QUEUED\r\n",
		"*3\r\n+OK\r\n:65536\r\n:1\r\n", ":0\r\n", ":65537\r\n"}
	for i := range want {
		if replies[i] != want[i] {
			t.Fatalf("reply %d: %q, want %q", i, replies[i], want[i])
		}
	}
	wantP := "XY" + big[2:5] + "W" + big[6:] + "Z"
	wantM := "a" + "Q" + big[2:]
	check := func(s *Server, when string) {
		c := dial(t, s)
		for _, kv := range [][3]string{{"GET", "p", wantP}, {"GET", "m", wantM}} {
			if got := c.Do(kv[0], kv[1]); got != bulkOf(kv[2]) {
				t.Fatalf("%s: %s %s: %d bytes, want %d", when, kv[0], kv[1], len(got), len(bulkOf(kv[2])))
			}
		}
		if got := c.Do("HGET", "h", "f"); got != bulkOf(big) {
			t.Fatalf("%s: HGET h f: %d bytes", when, len(got))
		}
	}
	check(s, "before restart")
	stop(t, s)
	check(durable(t, dir, nil), "after the AOF replay")
}
