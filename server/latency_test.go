package server

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/emqd/emqd/internal/valkeyref"
)

// TestLatencyAsValkey: with latency-monitor-threshold 500, a 600 ms command
// (DEBUG SLEEP 0.6) is a "command" sample; LATENCY LATEST and HISTORY
// answer Valkey 8.0.1's shapes (its times and milliseconds masked, emqd's
// checked), RESET and the errors its bytes; below the threshold nothing is
// recorded; DOCTOR is a report naming the event. The threshold is far above
// any stall of a loaded machine: at 5 ms the reference itself recorded a
// PING descheduled under -race at a load of 15 (2 runs in 3), and the
// "nothing recorded yet" steps differed.
func TestLatencyAsValkey(t *testing.T) {
	script := [][]string{
		{"LATENCY", "LATEST"}, {"LATENCY", "HISTORY", "command"}, {"PING"},
		{"DEBUG", "SLEEP", "0.6"}, {"LATENCY", "LATEST"}, {"LATENCY", "HISTORY", "command"},
		{"LATENCY", "HISTORY", "nosuch"}, {"LATENCY", "RESET", "nosuch"}, {"LATENCY", "RESET"},
		{"LATENCY", "LATEST"}, {"LATENCY", "FOO"}, {"LATENCY"},
	}
	ints := regexp.MustCompile(`:\d+\r\n`)
	run := func(addr string) []string {
		c := dialAddr(t, addr)
		var out []string
		for _, cmd := range script {
			out = append(out, ints.ReplaceAllString(c.Do(cmd...), ":N\r\n"))
		}
		return out
	}
	ref := valkeyref.Start(t, "--enable-debug-command", "yes", "--latency-monitor-threshold", "500")
	s := startServer(t, map[string]string{"enable-debug-command": "yes", "latency-monitor-threshold": "500"}, nil)
	want, got := run(ref.Addr), run(s.Addr())
	for i := range script {
		if got[i] != want[i] {
			t.Errorf("%q: emqd %q, Valkey %q", script[i], got[i], want[i])
		}
	}
	if want[4] != "*1\r\n*4\r\n$7\r\ncommand\r\n:N\r\n:N\r\n:N\r\n" {
		t.Fatalf("reference LATEST %q", want[4])
	}
	c := dial(t, s)
	c.Do("DEBUG", "SLEEP", "0.6")
	nodes, err := parseFrames(c.Do("LATENCY", "HISTORY", "command"))
	if err != nil || len(nodes) != 1 || len(nodes[0].kids) != 1 {
		t.Fatalf("HISTORY: %v %v", nodes, err)
	}
	if ms, _ := strconv.Atoi(nodes[0].kids[0].kids[1].text); ms < 600 {
		t.Fatalf("sample of %d ms, want >= 600", ms)
	}
	if r := c.Do("LATENCY", "DOCTOR"); !strings.Contains(r, "- command: 1 spikes") {
		t.Fatalf("DOCTOR %q", r)
	}
}
