package server

import (
	"strings"
	"testing"

	"github.com/emqd/emqd/internal/testsupport"
	"github.com/emqd/emqd/internal/valkeyref"
)

// TestConfigNumericAsValkey: CONFIG SET of every integer and memory
// directive Valkey 8.0.1 also has, with values at and past the edges of
// its parse and its bounds, answers as valkey-server 8.0.1 does and leaves
// the same CONFIG GET value: memtoull's units, its wrap on overflow
// (maxmemory 17179869184gb is 0) and its empty digits (0); string2ll for
// the integer ones (hash-max-listpack-entries 1kb is refused); unsigned
// bounds for the directives Valkey keeps unsigned (maxmemory up to
// 18446744073709551615, hash-max-listpack-entries -1 out of range);
// maxmemory-clients' percent. Before, emqd capped most at 2^62, read the
// listpack counts as memory values and refused maxmemory above 2^62.
// port and tls-port are left out: setting them moves the listener (port 0
// closes it); TestConfigSetPortAsValkey compares them.
func TestConfigNumericAsValkey(t *testing.T) {
	ref := valkeyref.Start(t)
	s := startServer(t, nil, nil)
	rc := testsupport.Dial(t, ref.Addr)
	ec := dial(t, s)
	probes := []string{"0", "-1", "-0", "05", "+5", "", "kb", "1KB", "1Kb", "1g", "10%", "0%", "100%", "101%", "-5%",
		"9223372036854775807", "9223372036854775808", "4611686018427387905", "18446744073709551615",
		"18446744073709551616", "17179869184gb", "99999999999999999999999999kb", "-2147483649", "4294967296"}
	checked := 0
	for _, p := range s.cfg.params {
		if (p.kind != kindInt && p.kind != kindMem) || p.name == "port" || p.name == "tls-port" {
			continue
		}
		if g := rc.Do("CONFIG", "GET", p.name); g == "*0\r\n" {
			continue // emqd's own (emq-*)
		}
		checked++
		for _, v := range probes {
			refBefore, ourBefore := rc.Do("CONFIG", "GET", p.name), ec.Do("CONFIG", "GET", p.name)
			r1, r2 := rc.Do("CONFIG", "SET", p.name, v), ec.Do("CONFIG", "SET", p.name, v)
			g1, g2 := rc.Do("CONFIG", "GET", p.name), ec.Do("CONFIG", "GET", p.name)
			if r1 != r2 || g1 != g2 {
				t.Errorf("CONFIG SET %s %q: valkey %q then %q; emqd %q then %q", p.name, v, r1, g1, r2, g2)
			}
			restoreConfig(t, rc, refBefore)
			restoreConfig(t, ec, ourBefore)
		}
	}
	if checked < 35 {
		t.Fatalf("only %d directives checked", checked)
	}
	// INFO memory shows maxmemory unsigned, as Valkey does.
	for _, c := range []*testsupport.Conn{rc, ec} {
		if r := c.Do("CONFIG", "SET", "maxmemory", "18446744073709551615"); r != "+OK\r\n" {
			t.Fatalf("CONFIG SET maxmemory: %q", r)
		}
	}
	field := func(c *testsupport.Conn, name string) string {
		for _, l := range strings.Split(c.Do("INFO", "memory"), "\r\n") {
			if v, ok := strings.CutPrefix(l, name+":"); ok {
				return v
			}
		}
		return "(none)"
	}
	for _, f := range []string{"maxmemory", "maxmemory_human"} {
		if a, b := field(rc, f), field(ec, f); a != b {
			t.Errorf("INFO %s: valkey %s, emqd %s", f, a, b)
		}
	}
	if r := ec.Do("SET", "k", "v"); r != "+OK\r\n" {
		t.Fatalf("SET under maxmemory 2^64-1: %q", r)
	}
}

// restoreConfig sets back the value a CONFIG GET of one directive gave.
func restoreConfig(t *testing.T, c *testsupport.Conn, get string) {
	t.Helper()
	n, err := diffParse(get)
	if err != nil || len(n.kids) != 2 {
		t.Fatalf("CONFIG GET reply %q", get)
	}
	r := c.Do("CONFIG", "SET", n.kids[0].text, n.kids[1].text)
	if r != "+OK\r\n" && !strings.Contains(r, "immutable config") {
		t.Fatalf("restoring %s %s: %q", n.kids[0].text, n.kids[1].text, r)
	}
}

// TestConfigSetOrderAsValkey: CONFIG SET's checks in Valkey 8.0.1's order
// (configSetCommand): an odd count of arguments past the arity is a syntax
// error; every name is looked up and checked (unknown, immutable,
// duplicate) before any value is; then the values, in order. And
// client-output-buffer-limit's numbers as updateClientOutputBufferLimit
// reads them: the byte limits by memtoull (past 2^63, and wrapping with a
// unit), soft_seconds by strtoll into an int (its low 32 bits, refused when
// negative). Each command is sent to both servers, the replies compared
// byte for byte, then CONFIG GET of what it touched.
func TestConfigSetOrderAsValkey(t *testing.T) {
	ref := valkeyref.Start(t)
	s := startServer(t, nil, nil)
	rc := testsupport.Dial(t, ref.Addr)
	ec := dial(t, s)
	cases := [][]string{
		{"CONFIG", "SET", "maxmemory", "0", "extra"},
		{"CONFIG", "SET", "maxmemory", "0", "hz", "10", "extra"},
		{"CONFIG", "SET", "maxclients"},
		{"CONFIG", "SET", "proto-max-bulk-len", "1", "proto-max-bulk-len", "2"},
		{"CONFIG", "SET", "client-output-buffer-limit", "1", "client-output-buffer-limit", "2"},
		{"CONFIG", "SET", "maxmemory", "abc", "databases", "1"},
		{"CONFIG", "SET", "maxmemory", "abc", "nosuch", "1"},
		{"CONFIG", "SET", "nosuch", "1", "maxmemory", "abc"},
		{"CONFIG", "SET", "hz", "abc", "maxmemory", "abc"},
		{"CONFIG", "SET", "hz", "10", "maxmemory", "abc"},
		{"CONFIG", "SET", "HZ", "abc"},
		{"CONFIG", "SET", "hash-max-ziplist-entries", "abc"},
		{"CONFIG", "SET", "hash-max-ziplist-entries", "1", "hash-max-listpack-entries", "2"},
	}
	for _, v := range []string{
		"normal 9223372036854775808 0 0", "normal 18446744073709551615 1 0", "normal 99999999999999999999999 0 0",
		"normal 17179869184gb 0 0", "normal 1kb 2KB 3", "normal 0 0 2147483647", "normal 0 0 2147483648",
		"normal 0 0 4294967297", "normal 0 0 9223372036854775807", "normal 0 0 99999999999999999999",
		"normal 0 0 -1", "normal 0 0 -0", "normal 0 0 +5", "normal 0 0 5s", "normal 0 0 +", "normal -1 0 0",
		"normal +1 0 0", "pubsub 1mb 1mb 60", "normal 0 0 0",
	} {
		cases = append(cases, []string{"CONFIG", "SET", "client-output-buffer-limit", v})
	}
	for _, args := range cases {
		want := rc.Do(args...)
		if got := ec.Do(args...); got != want {
			t.Errorf("%q: emqd %q, Valkey %q", args, got, want)
		}
		for i := 2; i+1 < len(args); i += 2 {
			g := []string{"CONFIG", "GET", args[i]}
			if want, got := rc.Do(g...), ec.Do(g...); got != want {
				t.Errorf("after %q, CONFIG GET %s: emqd %q, Valkey %q", args, args[i], got, want)
			}
		}
	}
}
