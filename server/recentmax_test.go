package server

import (
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/emqd/emqd/clock"
)

// clientsField is one field of INFO clients.
func clientsField(s *Server, field string) int64 {
	for _, l := range strings.Split(s.InfoText("clients"), "\r\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return -1
}

// TestRecentMaxClientBuffers: INFO's client_recent_max_input_buffer and
// client_recent_max_output_buffer are the biggest input and output buffer
// a client held in the last 8 s of the server clock, as Valkey's
// clientsCronTrackExpansiveClients (they were always 0). Valkey 8.0.1,
// given the same steps by hand, showed 0 and 0 idle, 114716 while half of
// a 100,000-byte argument had arrived, 37331704 while a client that does
// not read held 400 replies of 100 KB; emqd's own sizes differ (its
// buffers are its own), the shape is the same.
func TestRecentMaxClientBuffers(t *testing.T) {
	m := clock.NewManual(1_700_000_000_000)
	s := startServer(t, nil, m)
	tick := func(ms int64) {
		for i := int64(0); i < ms; i += 100 {
			m.Advance(100)
			time.Sleep(2 * time.Millisecond)
		}
	}
	if in, out := clientsField(s, "client_recent_max_input_buffer"), clientsField(s, "client_recent_max_output_buffer"); in != 0 || out != 0 {
		t.Fatalf("idle: %d %d", in, out)
	}
	// Half of a 100,000-byte argument.
	half, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer half.Close()
	half.Write([]byte("*3\r\n$3\r\nSET\r\n$1\r\nb\r\n$100000\r\n" + strings.Repeat("x", 50000)))
	eventually(t, func() bool { tick(100); return clientsField(s, "client_recent_max_input_buffer") >= 50000 })
	half.Write([]byte(strings.Repeat("x", 50000) + "\r\n"))
	// The SET has run before the GETs below are sent: without this wait
	// they could find no key and the output stayed small (1 run in 20
	// under -race).
	half.SetReadDeadline(time.Now().Add(10 * time.Second))
	okReply := make([]byte, 5)
	if _, err := io.ReadFull(half, okReply); err != nil || string(okReply) != "+OK\r\n" {
		t.Fatalf("SET reply %q: %v", okReply, err)
	}
	// 400 GETs of it from a client that does not read: most of 40 MB
	// waits in its output.
	slow, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	slow.(*net.TCPConn).SetReadBuffer(64 << 10)
	slow.Write([]byte(strings.Repeat("*2\r\n$3\r\nGET\r\n$1\r\nb\r\n", 400)))
	eventually(t, func() bool { tick(100); return clientsField(s, "client_recent_max_output_buffer") > 10<<20 })
	out := clientsField(s, "client_recent_max_output_buffer")
	if out > 401*100_000 {
		t.Fatalf("output peak %d above the 400 replies", out)
	}
	// Both clients go; 8 s later the peaks have aged out.
	slow.Close()
	half.Close()
	eventually(t, func() bool { return clientsField(s, "connected_clients") == 0 })
	tick(9000)
	if in, out := clientsField(s, "client_recent_max_input_buffer"), clientsField(s, "client_recent_max_output_buffer"); in != 0 || out != 0 {
		t.Fatalf("9 s after the clients went: %d %d", in, out)
	}
}
