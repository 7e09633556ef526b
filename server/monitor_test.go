package server

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/emqd/emqd/clock"
	"github.com/emqd/emqd/internal/valkeyref"
)

// monitorScript is what TestMonitorAsValkey sends on the watched
// connection.
var monitorScript = [][]string{
	{"SET", "k", "a b\x01\"\\\n"}, {"SET", "n", "12"}, {"GET", "k"},
	{"AUTH", "foo"}, {"AUTH", "a", "b"}, {"HELLO", "2", "AUTH", "default", "pw"}, {"HELLO", "2"},
	{"CONFIG", "GET", "timeout"}, {"NOSUCH", "x"}, {"GET"},
	{"MULTI"}, {"INCR", "n"}, {"EXEC"}, {"SELECT", "3"}, {"PING"}, {"ROLE"}, {"MODULE", "LIST"},
	{"DEBUG", "SET-ACTIVE-EXPIRE", "1"}, {"CLIENT", "ID"},
}

// runMonitor runs monitorScript on addr with a MONITOR client watching and
// returns the watched connection's replies, the monitor's lines (time and
// port masked) and what the monitor answers to a GET and to RESET.
func runMonitor(t *testing.T, addr string) (replies []string, lines []string, after string) {
	m := dialAddr(t, addr)
	if got := m.Do("MONITOR"); got != "+OK\r\n" {
		t.Fatalf("MONITOR: %q", got)
	}
	c := dialAddr(t, addr)
	for _, cmd := range monitorScript {
		r := c.Do(cmd...)
		if cmd[0] == "HELLO" || cmd[0] == "CLIENT" {
			r = "(not compared)"
		}
		replies = append(replies, r)
	}
	mask := regexp.MustCompile(`^\+\d{10}\.\d{6} \[(\d+) 127\.0\.0\.1:\d+\] `)
	for i := 0; i < 14; i++ {
		l := m.Read()
		if !mask.MatchString(l) {
			t.Fatalf("monitor line %q", l)
		}
		lines = append(lines, mask.ReplaceAllString(l, "+T [$1 ADDR] "))
	}
	after = m.Do("GET", "x") + m.Do("RESET") + m.Do("GET", "y")
	return
}

// TestMonitorAsValkey: MONITOR's lines are Valkey 8.0.1's, command by
// command (time and client port masked): each command that ran, after it
// ran (MULTI, the queued INCR at EXEC, then EXEC; the database after
// SELECT), arguments escaped as sdscatrepr, AUTH and HELLO's AUTH pair
// redacted, admin commands (CONFIG, DEBUG, MODULE) and rejected ones
// (unknown, arity) left out; a monitor may not touch the keyspace; RESET
// ends it. ROLE, MODULE LIST and the DEBUG refusal are byte for byte
// Valkey's.
func TestMonitorAsValkey(t *testing.T) {
	ref := valkeyref.Start(t)
	s := startServer(t, nil, nil)
	wr, wl, wa := runMonitor(t, ref.Addr)
	gr, gl, ga := runMonitor(t, s.Addr())
	for i := range wr {
		if gr[i] != wr[i] {
			t.Errorf("%q: emqd %q, Valkey %q", monitorScript[i], gr[i], wr[i])
		}
	}
	for i := range wl {
		if gl[i] != wl[i] {
			t.Errorf("monitor line %d: emqd %q, Valkey %q", i, gl[i], wl[i])
		}
	}
	if ga != wa {
		t.Errorf("monitor after: emqd %q, Valkey %q", ga, wa)
	}
	if wl[0] != `+T [0 ADDR] "SET" "k" "a b\x01\"\\\n"`+"\r\n" || wl[3] != `+T [0 ADDR] "AUTH" "(redacted)"`+"\r\n" {
		t.Fatalf("reference lines %q", wl)
	}
}

// TestDebugSetActiveExpire: DEBUG SET-ACTIVE-EXPIRE 0 holds the active
// expiry cycle (an expired key stays until touched, however far the clock
// moves), 1 lets it reclaim again; DEBUG needs enable-debug-command, with
// Valkey's refusal text otherwise.
func TestDebugSetActiveExpire(t *testing.T) {
	off := dial(t, startServer(t, nil, nil))
	if got := off.Do("DEBUG", "SET-ACTIVE-EXPIRE", "0"); got != "-"+errDebugNotAllowed+"\r\n" {
		t.Fatalf("DEBUG without enable-debug-command: %q", got)
	}
	clk := clock.NewManual(pt0)
	s := startServer(t, map[string]string{"enable-debug-command": "yes"}, clk)
	c := dial(t, s)
	steps(t, c,
		"DEBUG SET-ACTIVE-EXPIRE 0", "+OK\r\n",
		"SET a 1 PX 100", "+OK\r\n",
		"SET b 1 PX 100", "+OK\r\n",
		"DEBUG NOSUCH", "-ERR unknown subcommand or wrong number of arguments for 'NOSUCH'. Try DEBUG HELP.\r\n",
	)
	for i := 0; i < 5; i++ {
		clk.Advance(1000)
		clk.Wait()
	}
	if got := c.Do("DBSIZE"); got != ":2\r\n" {
		t.Fatalf("held: DBSIZE %q, want both expired keys still there", got)
	}
	if got := c.Do("GET", "a"); got != "$-1\r\n" {
		t.Fatalf("GET of an expired key: %q", got)
	}
	if got := c.Do("DBSIZE"); got != ":1\r\n" {
		t.Fatalf("touched: DBSIZE %q", got)
	}
	c.Do("DEBUG", "SET-ACTIVE-EXPIRE", "1")
	deadline := time.Now().Add(30 * time.Second)
	for c.Do("DBSIZE") != ":0\r\n" {
		if time.Now().After(deadline) {
			t.Fatal("the cycle did not reclaim after SET-ACTIVE-EXPIRE 1")
		}
		clk.Advance(100)
		clk.Wait()
	}
	if !strings.Contains(c.Do("DEBUG", "HELP"), "SET-ACTIVE-EXPIRE <0|1>") {
		t.Fatal("DEBUG HELP")
	}
}

// TestDebugObjectAsValkey: DEBUG OBJECT has Valkey 8.0.1's line for every
// encoding (the address and LRU clock masked; the encoding and the
// serializedlength, the RDB encoding's length, compared), and Valkey's
// error for a missing key.
func TestDebugObjectAsValkey(t *testing.T) {
	setup := [][]string{
		{"SET", "i", "12345"}, {"SET", "e", "short"}, {"SET", "r", strings.Repeat("x", 100)},
		{"HSET", "h", "f", "v", "g", "w"}, {"ZADD", "z", "1", "a", "2.5", "b"},
		{"CONFIG", "SET", "rdbcompression", "no"},
	}
	mask := regexp.MustCompile(`^\+Value at:0x[0-9a-f]+ refcount:\d+ (encoding:\S+ serializedlength:\d+) lru:\d+ lru_seconds_idle:\d+ lfu_freq:\d+ lfu_access_time_minutes:\d+\r\n$`)
	run := func(addr string) []string {
		c := dialAddr(t, addr)
		for _, cmd := range setup {
			c.Do(cmd...)
		}
		var out []string
		for _, k := range []string{"i", "e", "r", "h", "z"} {
			r := c.Do("DEBUG", "OBJECT", k)
			if !mask.MatchString(r) {
				t.Fatalf("DEBUG OBJECT %s: %q", k, r)
			}
			out = append(out, mask.FindStringSubmatch(r)[1])
		}
		return append(out, c.Do("DEBUG", "OBJECT", "nosuch"))
	}
	want := run(valkeyref.Start(t, "--enable-debug-command", "yes").Addr)
	got := run(startServer(t, map[string]string{"enable-debug-command": "yes"}, nil).Addr())
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%d: emqd %q, Valkey %q", i, got[i], want[i])
		}
	}
}
