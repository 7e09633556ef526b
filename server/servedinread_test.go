package server

import (
	"bytes"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// blockingConn is a client socket in blocking mode, read and written with
// plain system calls (each read(2) one system call, waiting for bytes, at
// most 20 s; one the runtime's signals interrupt, EINTR, is made again).
type blockingConn struct {
	t     *testing.T
	fd    int
	reads int64
}

func dialBlocking(t *testing.T, addr string) *blockingConn {
	t.Helper()
	ta, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	sa := &syscall.SockaddrInet4{Port: ta.Port}
	copy(sa.Addr[:], ta.IP.To4())
	if err := syscall.Connect(fd, sa); err != nil {
		t.Fatal(err)
	}
	// No Nagle delay (Go's own sockets set it too): a request cut in two
	// writes would wait for the server's delayed ACK, 40 ms each.
	if err := syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1); err != nil {
		t.Fatal(err)
	}
	tv := syscall.Timeval{Sec: 20}
	if err := syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv); err != nil {
		t.Fatal(err)
	}
	return &blockingConn{t: t, fd: fd}
}

func (b *blockingConn) write(p string) {
	b.t.Helper()
	for {
		n, err := syscall.Write(b.fd, []byte(p))
		if err == syscall.EINTR {
			continue // the runtime's preemption signal
		}
		if err != nil || n != len(p) {
			b.t.Fatalf("write: %d, %v", n, err)
		}
		return
	}
}

// expect reads until want has arrived (the bytes must be exactly want).
func (b *blockingConn) expect(want string) {
	b.t.Helper()
	buf := make([]byte, len(want))
	got := 0
	for got < len(want) {
		n, err := syscall.Read(b.fd, buf[got:])
		b.reads++ // an interrupted read is a system call too
		if err == syscall.EINTR {
			continue // the runtime's preemption signal
		}
		if err != nil || n <= 0 {
			b.t.Fatalf("read after %q of %q: %d, %v", buf[:got], want, n, err)
		}
		got += n
	}
	if !bytes.Equal(buf, []byte(want)) {
		b.t.Fatalf("got %q, want %q", buf, want)
	}
}

// processReads is the read system calls this process made so far
// (/proc/self/io syscr).
func processReads(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "syscr: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no syscr in /proc/self/io:\n%s", b)
	return 0
}

// TestServedInReadOneReadPerRoundTrip: a request-reply client costs the
// server one read(2) per round trip, not two (the commands run inside the
// read, and the read that would find nothing is not made: rawReadOnce).
// Counted from the process's read system calls less the client's own; the
// server made 2 per round trip before. Then requests cut in two writes,
// and two in one write, are all answered (a wait that missed the bytes
// sent after a short read would leave the client without its reply: the
// read fails at its 20 s timeout).
func TestServedInReadOneReadPerRoundTrip(t *testing.T) {
	s := startServer(t, nil, nil)
	b := dialBlocking(t, s.Addr())
	ping := "*1\r\n$4\r\nPING\r\n"
	for range 10 {
		b.write(ping)
		b.expect("+PONG\r\n")
	}
	const n = 1000
	before, clientBefore := processReads(t), b.reads
	for range n {
		b.write(ping)
		b.expect("+PONG\r\n")
	}
	server := processReads(t) - before - (b.reads - clientBefore) // and the few reads of /proc/self/io
	if server > n*5/4 {
		t.Fatalf("the server made %d read system calls for %d round trips, want about one each", server, n)
	}
	if server < n {
		t.Fatalf("the server made %d read system calls for %d round trips: fewer than one each, the count is wrong", server, n)
	}

	for i := range 300 {
		cut := 1 + i%(len(ping)-1)
		b.write(ping[:cut])
		b.write(ping[cut:])
		b.expect("+PONG\r\n")
		b.write(ping + "*2\r\n$4\r\nECHO\r\n$1\r\nx\r\n")
		b.expect("+PONG\r\n$1\r\nx\r\n")
	}
}
