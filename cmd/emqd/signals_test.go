package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/emqd/emqd/internal/testsupport"
)

// lockedBuffer is a log sink safe to read while run writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *lockedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestSignalsAsValkey (issue 27 item 6): SIGHUP, sent to this very process
// while run serves, is ignored as valkey-server ignores it (the process
// lives, the server still answers, nothing is logged), and SIGTERM then
// shuts down cleanly with Valkey's log line and exit status 0.
func TestSignalsAsValkey(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	ready := make(chan struct{})
	signalsReady = func() { close(ready) }
	defer func() { signalsReady = nil }()
	var out, errOut lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"--port", fmt.Sprint(port), "--appendonly", "no", "--dir", t.TempDir()}, nil, &out, &errOut)
	}()
	select {
	case <-ready:
	case code := <-done:
		t.Fatalf("run ended with %d: %s %s", code, out.String(), errOut.String())
	}
	ping := func() string {
		nc, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(testsupport.ClientTimeout))
		nc.Write([]byte("PING\r\n"))
		b := make([]byte, 16)
		n, _ := nc.Read(b)
		return string(b[:n])
	}
	logBefore := errOut.String()
	for range 3 {
		if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	if r := ping(); r != "+PONG\r\n" {
		t.Fatalf("after SIGHUP: %q", r)
	}
	select {
	case code := <-done:
		t.Fatalf("SIGHUP ended run with %d", code)
	default:
	}
	if errOut.String() != logBefore {
		t.Fatalf("SIGHUP logged: %q", strings.TrimPrefix(errOut.String(), logBefore))
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d after SIGTERM: %s", code, errOut.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no shutdown after SIGTERM")
	}
	if !strings.Contains(errOut.String(), "Received SIGTERM scheduling shutdown...") {
		t.Fatalf("log: %q", errOut.String())
	}
}
