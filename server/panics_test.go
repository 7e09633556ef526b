package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emqd/emqd/internal/store"
	"github.com/emqd/emqd/internal/testsupport"
)

// Injected panics (panics.go), through Options.testCommands:
//
//	TEST.PANIC            a write command that panics before touching the keyspace
//	TEST.PANICREAD key    a read-only command that reads key, then panics
//	TEST.HALFWRITE key    writes field a of hash key, then panics (mid-write)
//	TEST.TAKEPANIC q      parks like TEST.TAKE; its retry panics before writing
func panicCommands(ready func(db int, queue string)) []*store.CommandSpec {
	return append(fakeCommands(ready),
		store.NewCommand("test.panic", 1, func(*store.Ctx) { panic("injected before writing") }, store.FlagWrite),
		store.NewCommand("test.panicread", 2, func(c *store.Ctx) {
			c.DB.Get(string(c.Argv[1]))
			panic("injected after reading")
		}, store.FlagReadonly).WithKeys(1, 1, 1),
		store.NewCommand("test.halfwrite", 2, func(c *store.Ctx) {
			h, _ := c.DB.HashForWrite(string(c.Argv[1]))
			h.Set("a", []byte("1"))
			panic("injected mid-write")
		}, store.FlagWrite).WithKeys(1, 1, 1),
		store.NewCommand("test.takepanic", 2, func(c *store.Ctx) {
			c.Block = &store.BlockSpec{DB: c.DB.Index, Queue: string(c.Argv[1]), Retry: func(*store.Ctx) bool {
				panic("injected in a retry")
			}}
		}, store.FlagWrite, store.FlagBlocking).WithKeys(1, 1, 1),
	)
}

// crashes records onCrash calls.
type crashes struct {
	mu   sync.Mutex
	seen []string
}

func (c *crashes) note(p string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen = append(c.seen, p)
}

func (c *crashes) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.seen...)
}

func startPanicServer(t *testing.T, cfg map[string]string) (*Server, *lockedBuf, *crashes) {
	t.Helper()
	logs := &lockedBuf{}
	cr := &crashes{}
	s, err := Start(Options{Config: cfg, testCommands: panicCommands, onCrash: cr.note,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Close(ctx)
	})
	return s, logs, cr
}

// TestPanicBeforeWritingIsContained: a panic while parsing, reading or
// judging ends that command with an error, logs the stack, counts it, and
// the pipeline, the transaction and the other clients carry on.
func TestPanicBeforeWritingIsContained(t *testing.T) {
	s, logs, cr := startPanicServer(t, nil)
	other := dial(t, s)
	other.Write(encode("TEST.TAKE", "q", "0")) // parked through it all
	c := dial(t, s)
	var b []byte
	for _, cmd := range [][]string{{"SET", "a", "1"}, {"TEST.PANIC"}, {"GET", "a"}, {"TEST.PANICREAD", "a"}, {"PING"}} {
		b = append(b, encode(cmd...)...)
	}
	c.Write(b)
	want := []string{"+OK\r\n", "-" + errPanicked("TEST.PANIC") + "\r\n", "$1\r\n1\r\n", "-" + errPanicked("TEST.PANICREAD") + "\r\n", "+PONG\r\n"}
	for _, w := range want {
		if got := c.Read(); got != w {
			t.Fatalf("reply %q, want %q", got, w)
		}
	}
	// A transaction whose first command panics: nothing was written, EXEC
	// answers the error, the write queued after it does not happen.
	expectReplies(t, c, [][2]any{
		{a("MULTI"), "+OK\r\n"},
		{a("TEST.PANIC"), "+QUEUED\r\n"},
		{a("SET", "b", "2"), "+QUEUED\r\n"},
		{a("EXEC"), "-" + errPanicked("EXEC") + "\r\n"},
		{a("EXISTS", "b"), ":0\r\n"},
		{a("SET", "c", "3"), "+OK\r\n"},
	})
	if r := c.Do("INFO", "emq"); !strings.Contains(r, "\r\nemq_contained_panics:3\r\n") {
		t.Fatalf("INFO emq: %s", r)
	}
	if r := c.Do("INFO", "errorstats"); !strings.Contains(r, "errorstat_ERR:count=3") {
		t.Fatalf("INFO errorstats: %s", r)
	}
	other2 := dial(t, s)
	other2.Do("TEST.PUT", "q", "1")
	if r := other.Read(); r != "$4\r\nitem\r\n" {
		t.Fatalf("the parked client got %q", r)
	}
	if n := strings.Count(logs.String(), "panicked before writing anything"); n != 3 {
		t.Fatalf("%d contained panics logged:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "panics_test.go") {
		t.Fatalf("no stack in the log:\n%s", logs.String())
	}
	if len(cr.list()) != 0 {
		t.Fatalf("crashed: %v", cr.list())
	}
}

// TestPanicInARetryIsContained: a parked command whose retry panics before
// writing gets the error and its wait ends; the other waiters are served.
func TestPanicInARetryIsContained(t *testing.T) {
	s, _, cr := startPanicServer(t, nil)
	admin := dial(t, s)
	p := dial(t, s)
	p.Write(encode("TEST.TAKEPANIC", "q"))
	waitBlocked(t, admin, 1)
	w := dial(t, s)
	w.Write(encode("TEST.TAKE", "q", "0"))
	waitBlocked(t, admin, 2)
	admin.Do("TEST.PUT", "q", "1")
	if r := p.Read(); r != "-"+errPanicked("TEST.TAKEPANIC")+"\r\n" {
		t.Fatalf("the panicking waiter got %q", r)
	}
	if r := w.Read(); r != "$4\r\nitem\r\n" {
		t.Fatalf("the next waiter got %q", r)
	}
	if r := p.Do("PING"); r != "+PONG\r\n" {
		t.Fatalf("PING after the error: %q", r)
	}
	if len(cr.list()) != 0 {
		t.Fatalf("crashed: %v", cr.list())
	}
}

// TestPanicMidWriteStops: a panic after the keyspace began to change stops
// the server (here the test's onCrash stands for the exit): the stack is
// logged, the command gets no reply. So does a transaction that panics
// after one of its commands wrote.
func TestPanicMidWriteStops(t *testing.T) {
	for _, cmds := range [][][]string{
		{{"TEST.HALFWRITE", "h"}},
		{{"MULTI"}, {"SET", "b", "2"}, {"TEST.PANIC"}, {"EXEC"}},
	} {
		s, logs, cr := startPanicServer(t, nil)
		c := dial(t, s)
		var b []byte
		for _, cmd := range cmds {
			b = append(b, encode(cmd...)...)
		}
		c.Write(b)
		for range len(cmds) - 1 {
			c.Read() // +OK, +QUEUED
		}
		c.ExpectClosed()
		if got := cr.list(); len(got) != 1 {
			t.Fatalf("%v: crashes %v", cmds, got)
		}
		if !strings.Contains(logs.String(), "EMQD BUG REPORT") || !strings.Contains(logs.String(), "panics_test.go") {
			t.Fatalf("%v: log:\n%s", cmds, logs.String())
		}
	}
}

// TestPanicMidWriteExitsAndRestartIsConsistent runs a real server in a
// child process (this test binary): a panic mid-write exits with status 2
// and the stack on its log; the restarted server replays the append-only
// file to the keyspace before the command, which was never acknowledged.
func TestPanicMidWriteExitsAndRestartIsConsistent(t *testing.T) {
	if dir := os.Getenv("EMQD_PANIC_CHILD_DIR"); dir != "" {
		panicChild(dir)
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestPanicMidWriteExitsAndRestartIsConsistent$")
	cmd.Env = append(os.Environ(), "EMQD_PANIC_CHILD_DIR="+dir)
	var stderr lockedBuf
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("child: %v\n%s", err, stderr.String())
	}
	addr := strings.TrimSpace(strings.TrimPrefix(line, "addr "))
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c := testsupport.NewConn(t, nc)
	if r := c.Do("SET", "a", "1"); r != "+OK\r\n" {
		t.Fatalf("SET %q", r)
	}
	c.Write(encode("TEST.HALFWRITE", "h"))
	c.ExpectClosed()
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != crashExitStatus {
		t.Fatalf("child exit: %v\n%s", err, stderr.String())
	}
	for _, want := range []string{"EMQD BUG REPORT", "injected mid-write", "panics_test.go"} {
		if !strings.Contains(stderr.String(), want) {
			t.Fatalf("child log lacks %q:\n%s", want, stderr.String())
		}
	}
	s := durable(t, dir, nil)
	r := dial(t, s)
	if got := r.Do("GET", "a"); got != "$1\r\n1\r\n" {
		t.Fatalf("GET a after the restart: %q", got)
	}
	if got := r.Do("EXISTS", "h"); got != ":0\r\n" {
		t.Fatalf("EXISTS h after the restart: %q (the half-applied command is back)", got)
	}
}

// panicChild is the child process: a durable server with the panic
// commands and no onCrash, its address on stdout.
func panicChild(dir string) {
	s, err := Start(Options{Config: map[string]string{"appendonly": "yes", "dir": dir, "appendfsync": "always"},
		testCommands: panicCommands, Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("addr %s\n", s.Addr())
	time.Sleep(time.Minute) // the parent's command ends the process
	os.Exit(3)
}

// TestPanicInTheConnectionCloses: a panic in a connection's own code (not
// in a command) closes that connection with an error reply.
func TestPanicInTheConnectionCloses(t *testing.T) {
	s, logs, _ := startPanicServer(t, nil)
	a, b := net.Pipe()
	defer b.Close()
	c := newClient(s, a)
	go func() {
		defer c.recoverConn()
		panic("injected in the connection")
	}()
	r := bufio.NewReader(b)
	line, _ := r.ReadString('\n')
	if !strings.HasPrefix(line, "-ERR internal error while serving this connection") {
		t.Fatalf("reply %q", line)
	}
	if _, err := r.ReadByte(); err == nil {
		t.Fatal("connection still open")
	}
	if !strings.Contains(logs.String(), "injected in the connection") {
		t.Fatalf("log:\n%s", logs.String())
	}
	if r := dial(t, s).Do("PING"); r != "+PONG\r\n" {
		t.Fatalf("PING %q", r)
	}
}
