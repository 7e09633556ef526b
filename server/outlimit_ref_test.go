package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/emqd/emqd/internal/valkeyref"
)

// TestOutputLimitSparesTheReplyBuffer: a hard limit of client-output-
// buffer-limit counts the replies beyond the 16 KiB a client's reply
// buffer holds, as Valkey 8.0.1's getClientOutputBufferMemoryUsage does
// (docs/operations.md §4): under `normal 100 0 0` a 200-byte or 10,000-byte
// value is read on both servers, a 17,000-byte or 40,000-byte one closes
// the client on both, and so does a second reply after the first fits.
// Before, emqd closed a client reading a 200-byte value, and one whose
// CONFIG SET replies were longer than the limit.
func TestOutputLimitSparesTheReplyBuffer(t *testing.T) {
	ref := valkeyref.Start(t)
	s := startServer(t, nil, nil)
	sizes := []int{200, 10000, 17000, 40000}
	want := []bool{true, true, false, false}
	for _, tg := range []struct{ name, addr string }{{"Valkey", ref.Addr}, {"emqd", s.Addr()}} {
		w := dialAddr(t, tg.addr)
		for _, n := range sizes {
			if r := w.Do("SET", fmt.Sprintf("v%d", n), strings.Repeat("x", n)); r != "+OK\r\n" {
				t.Fatalf("%s: SET %q", tg.name, r)
			}
		}
		if r := w.Do("CONFIG", "SET", "client-output-buffer-limit", "normal 100 0 0"); r != "+OK\r\n" {
			t.Fatalf("%s: CONFIG SET %q", tg.name, r)
		}
		for i, n := range sizes {
			if got := readsWhole(t, tg.addr, fmt.Sprintf("v%d", n), n); got != want[i] {
				t.Errorf("%s: GET of %d bytes under normal 100 0 0: read %v, want %v", tg.name, n, got, want[i])
			}
		}
		// The config's own reply, longer than 100 bytes, is read too.
		if r := w.Do("CONFIG", "GET", "client-output-buffer-limit"); !strings.Contains(r, "normal 100 0 0") {
			t.Errorf("%s: CONFIG GET %q", tg.name, r)
		}
		w.Do("CONFIG", "SET", "client-output-buffer-limit", "normal 0 0 0")
	}
}

// readsWhole sends GET key on a new connection to addr and reports whether
// the whole n-byte bulk reply arrived (false: the server closed first).
func readsWhole(t *testing.T, addr, key string, n int) bool {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(time.Minute))
	fmt.Fprintf(nc, "GET %s\r\n", key)
	want := fmt.Sprintf("$%d\r\n%s\r\n", n, strings.Repeat("x", n))
	got, err := io.ReadAll(io.LimitReader(bufio.NewReader(nc), int64(len(want))))
	if err != nil && err != io.EOF {
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("GET %s: no reply and no close in a minute", key)
		}
	}
	return string(got) == want
}
