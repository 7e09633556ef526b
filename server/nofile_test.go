package server

import (
	"bufio"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/emqd/emqd/internal/testsupport"
)

// TestMaxclientsFitsTheOpenFileLimit runs a server in a child process (this
// test binary) whose RLIMIT_NOFILE is 64: maxclients (10000) is lowered to
// 64 - 32 reserved - 1 listener = 31 at start with Valkey's log lines; 31
// clients are served, the 32nd gets the max-clients error at once (no hang),
// BGREWRITEAOF still has its descriptors, and CONFIG SET maxclients above
// what fits is refused. With a limit of 30 the server refuses to start.
func TestMaxclientsFitsTheOpenFileLimit(t *testing.T) {
	if mode := os.Getenv("EMQD_NOFILE_CHILD"); mode != "" {
		nofileChild(mode)
		return
	}
	stderr, addr, cmd := startNofileChild(t, "64")
	defer cmd.Process.Kill()
	var conns []*testsupport.Conn
	for i := 0; i < 31; i++ {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c := testsupport.NewConn(t, nc)
		if r := c.Do("PING"); r != "+PONG\r\n" {
			t.Fatalf("client %d: %q\n%s", i, r, stderr.String())
		}
		conns = append(conns, c)
	}
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	extra := testsupport.NewConn(t, nc)
	if r := extra.Read(); r != "-ERR max number of clients reached\r\n" {
		t.Fatalf("client 32: %q", r)
	}
	c := conns[0]
	if r := c.Do("INFO", "clients"); !strings.Contains(r, "\r\nmaxclients:31\r\n") {
		t.Fatalf("INFO clients: %s", r)
	}
	if r := c.Do("CONFIG", "SET", "maxclients", "100"); r != "-ERR CONFIG SET failed (possibly related to argument 'maxclients') - The operating system is not able to handle the specified number of clients, try with 31\r\n" {
		t.Fatalf("CONFIG SET maxclients 100: %q", r)
	}
	for i := 0; i < 50; i++ {
		c.Do("HSET", fmt.Sprintf("h%d", i), "f", "v")
	}
	if r := c.Do("BGREWRITEAOF"); r != "+Background append only file rewriting started\r\n" {
		t.Fatalf("BGREWRITEAOF: %q", r)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := c.Do("INFO", "persistence")
		if strings.Contains(r, "\r\naof_rewrite_in_progress:0\r\n") {
			if !strings.Contains(r, "\r\naof_last_bgrewrite_status:ok\r\n") {
				t.Fatalf("rewrite failed:\n%s\n%s", r, stderr.String())
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("rewrite did not finish")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, want := range []string{
		"You requested maxclients of 10000 requiring at least 10033 max file descriptors.",
		"Current maximum open files is 64. maxclients has been reduced to 31 to compensate for low ulimit. If you need higher maxclients increase 'ulimit -n'.",
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Fatalf("log lacks %q:\n%s", want, stderr.String())
		}
	}

	// Too low to serve even one client.
	cmd2 := exec.Command(os.Args[0], "-test.run=^TestMaxclientsFitsTheOpenFileLimit$")
	cmd2.Env = append(os.Environ(), "EMQD_NOFILE_CHILD=30")
	out, err := cmd2.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "Your current 'ulimit -n' of 30 is not enough for the server to start. Please increase your open file limit to at least 34. Exiting.") {
		t.Fatalf("start under ulimit -n 30: %v\n%s", err, out)
	}
}

// startNofileChild starts the child with the given limit and returns its
// log, its address and the process.
func startNofileChild(t *testing.T, limit string) (*lockedBuf, string, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestMaxclientsFitsTheOpenFileLimit$")
	cmd.Env = append(os.Environ(), "EMQD_NOFILE_CHILD="+limit, "EMQD_NOFILE_DIR="+t.TempDir())
	stderr := &lockedBuf{}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		t.Fatalf("child: %v\n%s", err, stderr.String())
	}
	return stderr, strings.TrimSpace(strings.TrimPrefix(line, "addr ")), cmd
}

// nofileChild lowers RLIMIT_NOFILE to limit, starts a durable server and
// prints its address (or the start error, exiting 1).
func nofileChild(limit string) {
	n, _ := parseLL(limit)
	rl := syscall.Rlimit{Cur: uint64(n), Max: uint64(n)}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	dir := os.Getenv("EMQD_NOFILE_DIR")
	if dir == "" {
		dir = os.TempDir() // Start fails before it uses it
	}
	s, err := Start(Options{Config: map[string]string{"appendonly": "yes", "dir": dir},
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("addr %s\n", s.Addr())
	time.Sleep(time.Minute) // killed by the parent
	os.Exit(3)
}
