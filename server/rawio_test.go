package server

import (
	"bufio"
	"bytes"
	"io"
	"math/rand"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/emqd/emqd/internal/testsupport"
)

// waitOutputQueued waits until the one connection of CLIENT LIST other than
// admin's holds output the kernel has not taken (omem > 0): its reply did
// not fit in the socket buffers and the server's write waits for the peer.
func waitOutputQueued(t *testing.T, admin *testsupport.Conn) {
	t.Helper()
	deadline := time.Now().Add(testsupport.ClientTimeout)
	for {
		got := clientListField(admin, "omem")
		if len(got) == 1 {
			if n, _ := strconv.Atoi(got[0]); n > 0 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("CLIENT LIST omem: %v, want one connection with output waiting", got)
		}
		time.Sleep(time.Millisecond)
	}
}

// slowReader dials s and sends GET big and PING without reading.
func slowReader(t *testing.T, s *Server) *net.TCPConn {
	t.Helper()
	nc, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	tc := nc.(*net.TCPConn)
	if _, err := tc.Write(append(encode("GET", "big"), encode("PING")...)); err != nil {
		t.Fatal(err)
	}
	return tc
}

// TestRawWriteWaitsForSlowReader: a reply far bigger than the socket
// buffers, to a client that does not read yet, is written through the raw
// write (rawio.go) in pieces: the write finds the buffer full (EAGAIN),
// waits in the netpoller, and the client gets every byte, then the next
// reply. A client that resets the connection while the write waits is
// closed (the failed write ends it), and the server keeps serving.
func TestRawWriteWaitsForSlowReader(t *testing.T) {
	s := startServer(t, nil, nil)
	admin := dial(t, s)
	// 64 MiB: more than a loopback connection's two socket buffers hold
	// at their largest (Linux's tcp_rmem and tcp_wmem maxima: 6 MiB and 4
	// MiB by default, 32 MiB and 4 MiB on the CI machine), so the write
	// cannot finish before the client reads.
	value := make([]byte, 64<<20)
	rand.New(rand.NewSource(25)).Read(value)
	if r := admin.Do("SET", "big", string(value)); r != "+OK\r\n" {
		t.Fatalf("SET: %q", r)
	}

	tc := slowReader(t, s)
	waitOutputQueued(t, admin)
	tc.SetReadDeadline(time.Now().Add(testsupport.ClientTimeout))
	br := bufio.NewReaderSize(tc, 64<<10)
	head, err := br.ReadString('\n')
	if err != nil || head != "$67108864\r\n" {
		t.Fatalf("reply header %q, %v", head, err)
	}
	got := make([]byte, len(value)+2)
	if _, err := io.ReadFull(br, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got[:len(value)], value) || string(got[len(value):]) != "\r\n" {
		t.Fatal("GET big: the bytes read differ from the value set")
	}
	if pong, err := br.ReadString('\n'); err != nil || pong != "+PONG\r\n" {
		t.Fatalf("after the big reply: %q, %v", pong, err)
	}
	tc.Close()

	tc = slowReader(t, s)
	waitOutputQueued(t, admin)
	tc.SetLinger(0) // close sends a reset
	tc.Close()
	deadline := time.Now().Add(testsupport.ClientTimeout)
	for {
		info := admin.Do("INFO", "clients")
		if strings.Contains(info, "\r\nconnected_clients:1\r\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the reset client is still connected:\n%s", info)
		}
		time.Sleep(time.Millisecond)
	}
	if r := admin.Do("PING"); r != "+PONG\r\n" {
		t.Fatalf("PING after the reset: %q", r)
	}
}
