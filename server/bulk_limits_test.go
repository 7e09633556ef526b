package server

import (
	"bytes"
	"testing"
)

// proto-max-bulk-len and client-query-buffer-limit range from 1 MiB to
// LONG_MAX (Valkey 8.0 and Redis 7.0, config.c): the refusal names that
// range, and the maximum is accepted. Compared byte for byte with the real
// redis-server; its defaults are put back at the end.
func TestDiffBulkLimitsRange(t *testing.T) {
	diffScript(t, 1, []dstep{
		send(0, "CONFIG SET proto-max-bulk-len 1", 1),
		send(0, "CONFIG SET client-query-buffer-limit 1", 1),
		send(0, "CONFIG SET proto-max-bulk-len 9223372036854775808", 1),
		send(0, "CONFIG SET proto-max-bulk-len 99999999999999999999999", 1),
		send(0, "CONFIG SET client-query-buffer-limit 8589934592gb", 1),
		send(0, "CONFIG SET proto-max-bulk-len -1", 1),
		send(0, "CONFIG SET proto-max-bulk-len 1.5mb", 1),
		send(0, "CONFIG SET proto-max-bulk-len 8589934591gb", 1),
		send(0, "CONFIG GET proto-max-bulk-len", 1),
		send(0, "CONFIG SET proto-max-bulk-len 9223372036854775807", 1),
		send(0, "CONFIG SET client-query-buffer-limit 9223372036854775807", 1),
		send(0, "CONFIG GET proto-max-bulk-len", 1),
		send(0, "CONFIG GET client-query-buffer-limit", 1),
		send(0, "SET k v", 1),
		send(0, "GET k", 1),
		send(0, "CONFIG SET proto-max-bulk-len 512mb", 1),
		send(0, "CONFIG SET client-query-buffer-limit 1gb", 1),
	})
}

// With both limits at LONG_MAX, a bulk announced at or near 2^63 bytes
// does not overflow the reader (it waits for its bytes, growing its
// buffer as they arrive) and the server keeps serving: the client itself
// and the others run normal commands.
func TestHugeBulkLimits(t *testing.T) {
	s := startServer(t, map[string]string{"proto-max-bulk-len": "9223372036854775807"}, nil)
	other := dial(t, s)
	expectReplies(t, other, [][2]any{
		{a("CONFIG", "SET", "client-query-buffer-limit", "9223372036854775807"), "+OK\r\n"},
		{a("CONFIG", "GET", "proto-max-bulk-len"), "*2\r\n$18\r\nproto-max-bulk-len\r\n$19\r\n9223372036854775807\r\n"},
		{a("SET", "k", "v"), "+OK\r\n"},
		{a("GET", "k"), "$1\r\nv\r\n"},
	})
	for _, n := range []string{"9223372036854775807", "9223372036854775806", "9223372036854775805"} {
		c := dial(t, s)
		// One write: the server parses the huge header in the same pass
		// as ECHO hi, before that reply goes out.
		c.Write(append(encode("ECHO", "hi"), "*2\r\n$4\r\nECHO\r\n$"+n+"\r\n"...))
		if r := c.Read(); r != "$2\r\nhi\r\n" {
			t.Fatalf("ECHO before $%s: %q", n, r)
		}
		c.Write(bytes.Repeat([]byte("a"), 200<<10))
		expectReplies(t, other, [][2]any{
			{a("PING"), "+PONG\r\n"},
			{a("GET", "k"), "$1\r\nv\r\n"},
		})
	}
}
