package server

import (
	"bytes"
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/emqd/emqd/internal/testsupport"
)

// Real clients from Debian's redis-tools against an in-process emqd. They
// are skipped when the binaries are missing, unless
// EMQD_REQUIRE_REFERENCE=1 (CI), where a missing binary fails.

func needTool(t *testing.T, name string) string {
	t.Helper()
	return testsupport.LookPath(t, name, "redis-tools")
}

func runTool(t *testing.T, stdin []byte, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, needTool(t, name), args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %v: %v\nstdout: %s\nstderr: %s", name, args, err, out.String(), errOut.String())
	}
	return out.String()
}

func portOf(s *Server) string { return strconv.Itoa(s.port) }

func TestRedisCLI(t *testing.T) {
	needTool(t, "redis-cli")
	s := startServer(t, nil, nil)
	p := portOf(s)
	cli := func(args ...string) string {
		return runTool(t, nil, "redis-cli", append([]string{"-p", p}, args...)...)
	}
	if out := cli("PING"); out != "PONG\n" {
		t.Fatalf("PING %q", out)
	}
	if out := cli("HSET", "h", "f1", "v1", "f2", "v2"); out != "2\n" {
		t.Fatalf("HSET %q", out)
	}
	if out := cli("HGETALL", "h"); out != "f1\nv1\nf2\nv2\n" {
		t.Fatalf("HGETALL %q", out)
	}
	if out := cli("-3", "HGETALL", "h"); out != "f1 v1\nf2 v2\n" { // a RESP3 map
		t.Fatalf("RESP3 HGETALL %q", out)
	}
	if out := cli("ZADD", "z", "1.5", "a"); out != "1\n" {
		t.Fatalf("ZADD %q", out)
	}
	if out := cli("ZSCORE", "z", "a"); out != "1.5\n" {
		t.Fatalf("ZSCORE %q", out)
	}
	if out := cli("-n", "2", "SET", "k", "v"); out != "OK\n" {
		t.Fatalf("SET in db 2 %q", out)
	}
	if out := cli("FOO", "bar"); !strings.Contains(out, "ERR unknown command 'FOO', with args beginning with: 'bar'") {
		t.Fatalf("unknown command %q", out)
	}
	if out := cli("INFO", "server"); !strings.Contains(out, "server_name:emqd") {
		t.Fatalf("INFO %q", out)
	}
	if out := cli("--scan"); !strings.Contains(out, "h\n") || !strings.Contains(out, "z\n") {
		t.Fatalf("--scan %q", out)
	}
	// With a password.
	s2 := startServer(t, map[string]string{"requirepass": "pw"}, nil)
	out := runTool(t, nil, "redis-cli", "-p", portOf(s2), "--no-auth-warning", "-a", "pw", "PING")
	if out != "PONG\n" {
		t.Fatalf("-a PING %q", out)
	}
}

// TestRedisCLIPipe: redis-cli --pipe sends a mass-insert stream and ends with
// a binary ECHO it waits for.
func TestRedisCLIPipe(t *testing.T) {
	needTool(t, "redis-cli")
	s := startServer(t, nil, nil)
	var in []byte
	const n = 5000
	for i := 0; i < n; i++ {
		in = append(in, encode("HSET", "bulk", "f"+strconv.Itoa(i), "v\r\n"+strconv.Itoa(i))...)
	}
	in = append(in, "ZADD inline 1 one\r\n"...)
	out := runTool(t, in, "redis-cli", "-p", portOf(s), "--pipe")
	if !strings.Contains(out, "errors: 0, replies: "+strconv.Itoa(n+1)) {
		t.Fatalf("--pipe output %q", out)
	}
	c := dial(t, s)
	if r := c.Do("HLEN", "bulk"); r != ":5000\r\n" {
		t.Fatalf("HLEN %q", r)
	}
	if r := c.Do("HGET", "bulk", "f4999"); r != "$7\r\nv\r\n4999\r\n" {
		t.Fatalf("HGET %q", r)
	}
}

// TestRedisBenchmark runs redis-benchmark's ping, hset, zadd and zpopmin
// tests: any error reply would abort it.
func TestRedisBenchmark(t *testing.T) {
	needTool(t, "redis-benchmark")
	s := startServer(t, nil, nil)
	out := runTool(t, nil, "redis-benchmark", "-p", portOf(s), "-q", "-t", "ping,hset,zadd,zpopmin", "-n", "2000")
	out = strings.ReplaceAll(out, "\r", "\n")
	for _, test := range []string{"PING_INLINE", "PING_MBULK", "HSET", "ZADD", "ZPOPMIN"} {
		if !strings.Contains(out, test+": ") || !strings.Contains(out, "requests per second") {
			t.Errorf("no result for %s in %q", test, out)
		}
	}
	if strings.Contains(out, "Error") || strings.Contains(out, "WARNING") {
		t.Fatalf("benchmark output %q", out)
	}
	// Pipelined too (-P 16).
	out = runTool(t, nil, "redis-benchmark", "-p", portOf(s), "-q", "-t", "hset,zadd", "-n", "2000", "-P", "16")
	if strings.Contains(out, "Error") || !strings.Contains(out, "ZADD: ") {
		t.Fatalf("pipelined benchmark output %q", out)
	}
}
