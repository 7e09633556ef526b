package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emqd/emqd/internal/testsupport"
	"github.com/emqd/emqd/internal/valkeyref"
)

// waitPort dials addr until it answers or the deadline passes.
func waitPort(t *testing.T, addr string, errOut func() string) net.Conn {
	t.Helper()
	for i := 0; ; i++ {
		nc, err := net.Dial("tcp", addr)
		if err == nil {
			nc.SetDeadline(time.Now().Add(10 * time.Second))
			return nc
		}
		if i > 1000 {
			t.Fatalf("emqd did not start: %v %s", err, errOut())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestStockConfOneStart: the binary starts in one start from Valkey
// 8.0.1's own valkey.conf (the reference folder's file) with port, dir and
// pidfile changed (the stock pid file is /var/run/valkey_6379.pid), writes
// the pid file, serves with the file's values (appendonly no), names the
// no-effect lines once each in its log, and removes the pid file at exit.
func TestStockConfOneStart(t *testing.T) {
	stock, err := os.ReadFile(valkeyref.File(t, "valkey.conf"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	port := testsupport.FreePort(t)
	pid := filepath.Join(dir, "emqd.pid")
	var conf []string
	changed := 0
	for _, line := range strings.Split(string(stock), "\n") {
		switch {
		case strings.HasPrefix(line, "port "):
			line, changed = "port "+port, changed+1
		case strings.HasPrefix(line, "dir "):
			line, changed = "dir "+dir, changed+1
		case strings.HasPrefix(line, "pidfile "):
			line, changed = "pidfile "+pid, changed+1
		}
		conf = append(conf, line)
	}
	if changed != 3 {
		t.Fatalf("changed %d lines", changed)
	}
	path := filepath.Join(dir, "valkey.conf")
	os.WriteFile(path, []byte(strings.Join(conf, "\n")), 0o644)
	var out, errOut syncBuf
	done := make(chan int, 1)
	go func() { done <- run([]string{path}, nil, &out, &errOut) }()
	nc := waitPort(t, "127.0.0.1:"+port, errOut.String)
	defer nc.Close()
	br := bufio.NewReader(nc)
	nc.Write([]byte("SET k v\r\nCONFIG GET appendonly\r\n"))
	for _, want := range []string{"+OK", "*2", "$10", "appendonly", "$2", "no"} {
		line, _ := br.ReadString('\n')
		if strings.TrimSpace(line) != want {
			t.Fatalf("got %q want %q; log:\n%s", line, want, errOut.String())
		}
	}
	b, err := os.ReadFile(pid)
	if err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
		t.Fatalf("pid file: %q %v", b, err)
	}
	log := errOut.String()
	if strings.Contains(log, "# directive io-threads") {
		t.Errorf("io-threads is commented out in the stock file but was logged")
	}
	for _, want := range []string{"# directive lazyfree-lazy-eviction yes has no effect in emqd: ", "# directive tcp-backlog 511 has no effect"} {
		if strings.Count(log, want) != 1 {
			t.Errorf("log has %d lines %q:\n%s", strings.Count(log, want), want, log)
		}
	}
	nc.Write([]byte("SHUTDOWN NOSAVE\r\n"))
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no exit after SHUTDOWN")
	}
	if _, err := os.Stat(pid); !os.IsNotExist(err) {
		t.Fatalf("pid file left behind: %v", err)
	}
}

// TestConfigErrorLineAndInclude: the first bad line in the file is the one
// reported, with its number, even when a later line (and the command
// line) is bad too; include reads another file in place, and an error
// there names the included file's line.
func TestConfigErrorLineAndInclude(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.conf")
	os.WriteFile(path, []byte("timeout 0\nreplicaof 10.0.0.1 6379\nmaxmemory-policy allkeys-lru\nnosuch 1\n"), 0o644)
	var out, errOut bytes.Buffer
	code := run([]string{path, "--port", "0", "--appendonly", "no", "--hz", "x"}, nil, &out, &errOut)
	want := "Reading the configuration file, at line 2\n>>> 'replicaof 10.0.0.1 6379'\nemqd does not support replicaof: emqd has no replication"
	if code != 1 || !strings.Contains(errOut.String(), want) {
		t.Fatalf("exit %d:\n%s", code, errOut.String())
	}
	inc := filepath.Join(dir, "inc.conf")
	os.WriteFile(inc, []byte("# included\nhz 20\nzset-max-listpack-entries nope\n"), 0o644)
	os.WriteFile(path, []byte("timeout 0\ninclude "+inc+"\n"), 0o644)
	errOut.Reset()
	code = run([]string{path, "--port", "0", "--appendonly", "no"}, nil, &out, &errOut)
	want = "at line 3\n>>> 'zset-max-listpack-entries nope'\nargument couldn't be parsed into an integer"
	if code != 1 || !strings.Contains(errOut.String(), want) {
		t.Fatalf("include: exit %d:\n%s", code, errOut.String())
	}
	d, err := parseConfigPath(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(d) != 3 || d[1].name != "hz" || d[1].line != 2 {
		t.Fatalf("include: %+v", d)
	}
	os.WriteFile(path, []byte("include "+path+"\n"), 0o644)
	if _, err := parseConfigPath(path, 0); err == nil || !strings.Contains(err.Error(), "include nested too deep") {
		t.Fatalf("self include: %v", err)
	}
}

// TestDaemonize: daemonize yes returns once the daemon (its own session,
// the pid in pidfile) is serving; SHUTDOWN removes the pid file; a daemon
// that cannot start makes the command fail with the daemon's error.
func TestDaemonize(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := testsupport.BuildEmqd(t)
	dir := t.TempDir()
	port := testsupport.FreePort(t)
	pid := filepath.Join(dir, "emqd.pid")
	cmd := exec.Command(bin, "--port", port, "--dir", dir, "--daemonize", "yes", "--pidfile", pid, "--logfile", filepath.Join(dir, "log"))
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("daemonize: %v %s", err, out)
	}
	b, err := os.ReadFile(pid)
	if err != nil {
		t.Fatalf("no pid file once the command returned (%v): %v", time.Since(start), err)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if n <= 0 || n == cmd.Process.Pid {
		t.Fatalf("pid file %q (parent %d)", b, cmd.Process.Pid)
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", n))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
	if f[3] != strconv.Itoa(n) { // session id = its own pid: setsid
		t.Fatalf("session %s, pid %d", f[3], n)
	}
	nc, err := net.Dial("tcp", "127.0.0.1:"+port) // serving already: no retry
	if err != nil {
		t.Fatal(err)
	}
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	nc.Write([]byte("PING\r\nSHUTDOWN NOSAVE\r\n"))
	line, _ := bufio.NewReader(nc).ReadString('\n')
	nc.Close()
	if line != "+PONG\r\n" {
		t.Fatalf("PING: %q", line)
	}
	for i := 0; ; i++ {
		if _, err := os.Stat(pid); os.IsNotExist(err) {
			break
		}
		if i > 1000 {
			t.Fatal("pid file not removed at exit")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The daemon's failure is the command's.
	out, err = exec.Command(bin, "--port", port, "--dir", dir, "--daemonize", "yes", "--pidfile", pid, "--maxmemory-policy", "allkeys-lru").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "FATAL CONFIG FILE ERROR") || !strings.Contains(string(out), "emqd supports only the noeviction policy") {
		t.Fatalf("a bad directive: %v %s", err, out)
	}
}

// syncBuf is a buffer safe for the server's goroutines.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestConfigFileNulAsValkey: a config file with NUL bytes is read as
// valkey-server 8.0.1 reads it (cNulText): each file is run through both
// and the fatal report after its first line (the line number, the line as
// read, the reason) is the same. Each file ends in a bad line, so neither
// server starts.
func TestConfigFileNulAsValkey(t *testing.T) {
	bin := valkeyref.File(t, "valkey-server")
	dir := t.TempDir()
	for i, text := range []string{
		"\x00\xff\xfe binary\nhz 20\nnosuch 1\n",       // a line that starts with NUL is gone
		"port 1\x00x\nsave \"\"\n",                     // a NUL inside joins the next line
		"hz 20\n\x00\nport\x00 7003\nhz 21\n",          // 'porthz 21'
		strings.Repeat("a", 1030) + "\x00tail\nport\n", // a NUL past the first 1024-byte chunk
	} {
		path := filepath.Join(dir, fmt.Sprintf("c%d.conf", i))
		os.WriteFile(path, []byte(text), 0o644)
		// A file the reference accepts would start a server: the context
		// ends it (and the comparison then fails on its output).
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		vout, _ := exec.CommandContext(ctx, bin, path, "--port", "0").CombinedOutput()
		cancel()
		var out, errOut bytes.Buffer
		if code := run([]string{path, "--port", "0", "--appendonly", "no"}, nil, &out, &errOut); code != 1 {
			t.Fatalf("file %d: exit %d, want the fatal report", i, code)
		}
		report := func(s string) string { // the three lines after the banner
			s = s[strings.Index(s, "***\n")+4:]
			return strings.Join(strings.SplitN(strings.TrimSpace(s), "\n", 4)[:3], "\n")
		}
		if v, e := report(string(vout)), report(errOut.String()); v != e {
			t.Errorf("file %d %q:\nvalkey: %s\nemqd:   %s", i, text, v, e)
		}
	}
}
