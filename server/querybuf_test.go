package server

import (
	"bytes"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/emqd/emqd/internal/testsupport"
)

// clientListField returns field's value for every connection of CLIENT
// LIST but the caller's own.
func clientListField(c *testsupport.Conn, field string) []string {
	r := c.Do("CLIENT", "LIST")
	var out []string
	for _, line := range strings.Split(r, "\n") {
		if strings.Contains(line, " cmd=client|list ") {
			continue
		}
		for _, kv := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(kv, field+"="); ok {
				out = append(out, v)
			}
		}
	}
	return out
}

// waitField waits until every other connection shows field=want (n of
// them).
func waitField(t *testing.T, c *testsupport.Conn, field, want string, n int) {
	t.Helper()
	deadline := time.Now().Add(testsupport.ClientTimeout)
	for {
		got := clientListField(c, field)
		ok := len(got) == n
		for _, v := range got {
			ok = ok && v == want
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("CLIENT LIST %s: %v, want %d of %s", field, got, n, want)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestBulkHeaderAllocatesAsBytesArrive: four connections that each announce
// a 512 MiB argument and disconnect, four times over, make the server
// allocate what they sent, not what they announced (the reader grows a big
// argument as its bytes arrive).
func TestBulkHeaderAllocatesAsBytesArrive(t *testing.T) {
	s := startServer(t, nil, nil)
	admin := dial(t, s)
	header := []byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$536870912\r\n")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range 4 {
		var conns []net.Conn
		for range 4 {
			nc, err := net.Dial("tcp", s.Addr())
			if err != nil {
				t.Fatal(err)
			}
			nc.Write(header)
			conns = append(conns, nc)
		}
		// The server has parsed every header: SET and k are its arguments.
		waitField(t, admin, "argv-mem", "4", 4)
		for _, nc := range conns {
			nc.Close()
		}
		waitField(t, admin, "argv-mem", "4", 0)
	}
	runtime.ReadMemStats(&after)
	// 16 connections, each with its reader, goroutine and one 64 KiB start
	// for the announced argument; CLIENT LIST polling allocates too.
	if n := after.TotalAlloc - before.TotalAlloc; n > 16<<20 {
		t.Fatalf("16 headers announcing 512 MiB allocated %d MiB", n>>20)
	}
	if v := admin.Do("EXISTS", "k"); v != ":0\r\n" {
		t.Fatalf("EXISTS k %q", v)
	}
}

// TestQueryLimitCountsArgvMemory: *2147483647 followed by empty arguments
// holds the argv, not the bytes sent; client-query-buffer-limit counts it
// and closes the client (INFO counts the disconnection).
func TestQueryLimitCountsArgvMemory(t *testing.T) {
	s := startServer(t, map[string]string{"client-query-buffer-limit": "1mb"}, nil)
	admin := dial(t, s)
	c := dial(t, s)
	// 60000 empty arguments are 360 KB on the wire and at least 1.4 MB of
	// argv.
	c.Write([]byte("*2147483647\r\n"))
	empty := bytes.Repeat([]byte("$0\r\n\r\n"), 1000)
	for range 60 {
		if _, err := c.NC.Write(empty); err != nil {
			break // closed already
		}
	}
	c.ExpectClosed()
	if r := admin.Do("INFO", "stats"); !strings.Contains(r, "\r\nclient_query_buffer_limit_disconnections:1\r\n") {
		t.Fatalf("INFO stats: %s", r)
	}
	// A frame below the limit is fine.
	d := dial(t, s)
	var b []byte
	b = append(b, "*10002\r\n$4\r\nECHO\r\n$1\r\nx\r\n"...)
	b = append(b, bytes.Repeat([]byte("$0\r\n\r\n"), 10000)...)
	d.Write(b)
	if r := d.Read(); r != "-ERR wrong number of arguments for 'echo' command\r\n" {
		t.Fatalf("reply %q", r)
	}
}
