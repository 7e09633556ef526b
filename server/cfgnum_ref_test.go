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
