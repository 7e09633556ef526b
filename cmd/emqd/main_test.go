package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/emqd/emqd/internal/testsupport"
)

func TestParseArgs(t *testing.T) {
	d, err := parseArgs([]string{"--port", "7000", "--save", "--save2", "900", "1", "--requirepass", "a b"})
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%s %q %s %q %s %q %s %q", d[0].name, d[0].args, d[1].name, d[1].args, d[2].name, d[2].args, d[3].name, d[3].args)
	if got != `port ["7000"] save [""] save2 ["900" "1"] requirepass ["a b"]` {
		t.Fatalf("got %s", got)
	}
	if _, err := parseArgs([]string{"7000"}); err == nil {
		t.Fatal("a bare value was accepted")
	}
}

func TestParseConfigFile(t *testing.T) {
	d, err := parseConfigFile(strings.NewReader("# comment\n\nport 7001\nsave \"\"\nrequirepass \"p w\"\nclient-output-buffer-limit normal 0 0 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(d) != 4 || d[0].args[0] != "7001" || d[1].args[0] != "" || d[2].args[0] != "p w" || len(d[3].args) != 4 {
		t.Fatalf("got %+v", d)
	}
	if _, err := parseConfigFile(strings.NewReader("port\n")); err == nil || !strings.Contains(err.Error(), "at line 1") {
		t.Fatalf("missing value: %v", err)
	}
	if _, err := parseConfigFile(strings.NewReader("requirepass \"open\n")); err == nil {
		t.Fatal("unbalanced quotes accepted")
	}
	// A line is read up to its first NUL, as Valkey 8.0.1 reads it (the
	// newcomer run: a line of binary junk starting with NUL stopped emqd
	// with FATAL CONFIG FILE ERROR where Valkey starts): such a line is
	// blank, and what follows a NUL elsewhere is not there.
	d, err = parseConfigFile(strings.NewReader("\x00\xff\xfe binary\nport 7002\x00 junk\n"))
	if err != nil || len(d) != 1 || d[0].name != "port" || len(d[0].args) != 1 || d[0].args[0] != "7002" {
		t.Fatalf("NUL lines: %+v, %v", d, err)
	}
	if _, err := parseConfigFile(strings.NewReader("port\x00 7003\n")); err == nil || !strings.Contains(err.Error(), "at line 1") {
		t.Fatalf("a value behind a NUL was read: %v", err)
	}
	// Lines of any length, as Valkey reads them (a 1 MiB scanner buffer
	// refused a 2 MB line with "bufio.Scanner: token too long"); CRLF ends
	// a line as LF does.
	long := "requirepass " + strings.Repeat("x", 2<<20)
	d, err = parseConfigFile(strings.NewReader("# " + strings.Repeat("c", 2<<20) + "\r\n" + long + "\r\nport 7004\n"))
	if err != nil || len(d) != 2 || len(d[0].args) != 1 || len(d[0].args[0]) != 2<<20 || d[1].line != 3 || d[1].args[0] != "7004" {
		t.Fatalf("long lines: %d directives, %v", len(d), err)
	}
}

func TestVersionAndBadDirective(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"--version"}, nil, &out, &errOut); code != 0 || !strings.HasPrefix(out.String(), "emqd server v=") {
		t.Fatalf("--version: %d %q", code, out.String())
	}
	out.Reset()
	if code := run([]string{"--nosuch", "1", "--appendonly", "no"}, nil, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "nosuch") {
		t.Fatalf("bad directive: %d %q", code, errOut.String())
	}
}

// TestRunServesAndShutsDown runs the binary's main path with a config
// file plus an overriding flag, talks to it, and stops it with SHUTDOWN.
func TestRunServesAndShutsDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir := t.TempDir()
	conf := filepath.Join(dir, "emqd.conf")
	os.WriteFile(conf, []byte("port 1\nappendonly no\nrequirepass secret\ndatabases 4\n"), 0o644)
	var out, errOut bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- run([]string{conf, "--port", fmt.Sprint(port), "--dir", dir}, nil, &out, &errOut) }()
	var nc net.Conn
	for i := 0; ; i++ {
		nc, err = net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			break
		}
		if i > 200 {
			t.Fatalf("emqd did not start: %v %s", err, errOut.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(testsupport.ClientTimeout))
	nc.Write([]byte("PING\r\nAUTH secret\r\nCONFIG GET databases\r\nSHUTDOWN NOSAVE\r\n"))
	var buf bytes.Buffer
	tmp := make([]byte, 4096)
	for {
		n, err := nc.Read(tmp)
		buf.Write(tmp[:n])
		if err != nil {
			break
		}
	}
	want := "-NOAUTH Authentication required.\r\n+OK\r\n*2\r\n$9\r\ndatabases\r\n$1\r\n4\r\n"
	if buf.String() != want {
		t.Fatalf("got %q want %q", buf.String(), want)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("emqd did not exit after SHUTDOWN")
	}
}

// TestPortInUseIsNotAConfigError: a port already taken stops the start
// with Valkey's two lines for a failed listen, not the FATAL CONFIG FILE
// banner (nothing in the configuration is wrong).
func TestPortInUseIsNotAConfigError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	var out, errOut bytes.Buffer
	code := run([]string{"--port", fmt.Sprint(port), "--dir", t.TempDir()}, nil, &out, &errOut)
	want := fmt.Sprintf("Warning: Could not create server TCP listening socket 127.0.0.1:%d: bind: Address already in use\nFailed listening on port %d (tcp), aborting.\n", port, port)
	if code != 1 || !strings.Contains(errOut.String(), "\n"+want) || strings.Contains(errOut.String(), "FATAL CONFIG FILE ERROR") {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut.String())
	}
	// A path for appendfilename is a configuration error: Valkey's banner
	// naming the directive, with its text.
	errOut.Reset()
	code = run([]string{"--port", "0", "--dir", t.TempDir(), "--appendfilename", "../x.aof"}, nil, &out, &errOut)
	if code != 1 || !strings.Contains(errOut.String(), "*** FATAL CONFIG FILE ERROR") ||
		!strings.Contains(errOut.String(), ">>> 'appendfilename \"../x.aof\"'\nappendfilename can't be a path, just a filename") {
		t.Fatalf("appendfilename: exit %d, stderr:\n%s", code, errOut.String())
	}
}
