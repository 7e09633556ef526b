package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/emqd/emqd/internal/testsupport"
	"github.com/emqd/emqd/internal/valkeyref"
)

// rawDo sends one inline command and returns what arrives within a moment.
func rawDo(t *testing.T, addr, cmd string) string {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(testsupport.ClientTimeout))
	nc.Write([]byte(cmd + "\r\n"))
	b := make([]byte, 4096)
	n, _ := nc.Read(b)
	return string(b[:n])
}

// TestFailedFinalSaveKeepsServing (docs/durability.md §9.1): with save
// points set and a dir that cannot be written, SIGTERM's final save fails
// and the server goes on serving, as valkey-server 8.0.1 does ("Error
// trying to save the DB, can't exit."), SHUTDOWN answers Valkey's "Errors
// trying to SHUTDOWN. Check logs." (both compared with the reference
// server); once the dir is writable again SIGTERM saves and exits 0, and
// the data is in dump.rdb.
func TestFailedFinalSaveKeepsServing(t *testing.T) {
	ref := valkeyref.Start(t, "--save", "3600 1")
	refOK := rawDo(t, ref.Addr, "SET k v")
	if err := os.RemoveAll(ref.Dir); err != nil {
		t.Fatal(err)
	}
	refShutdown := rawDo(t, ref.Addr, "SHUTDOWN")
	var pid int
	for _, l := range strings.Split(rawDo(t, ref.Addr, "INFO server"), "\r\n") {
		if v, ok := strings.CutPrefix(l, "process_id:"); ok {
			pid, _ = strconv.Atoi(v)
		}
	}
	if pid == 0 {
		t.Fatal("no process_id from the reference server")
	}
	syscall.Kill(pid, syscall.SIGTERM)
	time.Sleep(300 * time.Millisecond)
	if refOK != "+OK\r\n" || refShutdown != "-ERR Errors trying to SHUTDOWN. Check logs.\r\n" || rawDo(t, ref.Addr, "PING") != "+PONG\r\n" ||
		!strings.Contains(ref.Log(), "Error trying to save the DB, can't exit.") {
		t.Fatalf("reference server: SET %q SHUTDOWN %q, log:\n%s", refOK, refShutdown, ref.Log())
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	dir := filepath.Join(t.TempDir(), "data")
	ready := make(chan struct{})
	signalsReady = func() { close(ready) }
	defer func() { signalsReady = nil }()
	var out, errOut lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"--port", fmt.Sprint(port), "--appendonly", "no", "--save", "3600 1", "--dir", dir}, nil, &out, &errOut)
	}()
	select {
	case <-ready:
	case code := <-done:
		t.Fatalf("run ended with %d: %s %s", code, out.String(), errOut.String())
	}
	if r := rawDo(t, addr, "SET k v"); r != "+OK\r\n" {
		t.Fatalf("SET %q", r)
	}
	// The dir becomes a file: neither it nor a temp file in it can be made.
	os.RemoveAll(dir)
	if err := os.WriteFile(dir, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := rawDo(t, addr, "SHUTDOWN"); r != refShutdown {
		t.Fatalf("SHUTDOWN %q, Valkey %q", r, refShutdown)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	select {
	case code := <-done:
		t.Fatalf("exited with %d after a failed final save: %s", code, errOut.String())
	default:
	}
	if r := rawDo(t, addr, "GET k"); r != "$1\r\nv\r\n" {
		t.Fatalf("GET after the failed shutdown %q", r)
	}
	if !strings.Contains(errOut.String(), "Error trying to save the DB, can't exit.") {
		t.Fatalf("log: %s", errOut.String())
	}
	os.Remove(dir)
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("no shutdown after the second SIGTERM: %s", errOut.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, "dump.rdb"))
	if err != nil || !strings.Contains(string(b), "k") {
		t.Fatalf("dump.rdb after the shutdown: %v", err)
	}
}
