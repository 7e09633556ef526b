package server

import (
	"strings"
	"testing"
	"time"

	"github.com/emqd/emqd/clock"
	"github.com/emqd/emqd/internal/testsupport"
)

// TestSweeper: with emq-sweep-interval-ms set, the server runs
// EMQ.STALLED.CHECK q <emq-max-stalled> on its clock; an expired lease of
// this boot is counted and (max_stalled 1) dead-lettered.
func TestSweeper(t *testing.T) {
	clk := clock.NewManual(1_700_000_000_000)
	s := startServer(t, map[string]string{"emq-sweep-interval-ms": "100"}, clk)
	c := dial(t, s)
	if r := c.Do("EMQ.ENQUEUE", "q", "JOB00000000001", "p"); r != "$14\r\nJOB00000000001\r\n" {
		t.Fatalf("enqueue %q", r)
	}
	if r := c.Do("EMQ.CLAIM", "q", "50"); !strings.HasPrefix(r, "*1\r\n") {
		t.Fatalf("claim %q", r)
	}
	clk.Advance(100)
	deadline := time.Now().Add(testsupport.ClientTimeout)
	for {
		r := c.Do("EMQ.JOB", "q", "JOB00000000001")
		if strings.Contains(r, "$5\r\nstate\r\n$4\r\ndead\r\n") {
			if !strings.Contains(r, "$10\r\nlast_error\r\n$7\r\nstalled\r\n") {
				t.Fatalf("dead row %q", r)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not swept: %q", r)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if r := c.Do("INFO", "commandstats"); !strings.Contains(r, "cmdstat_emq.stalled.check:calls=") {
		t.Fatalf("sweep not counted: %q", r)
	}
}

// TestSweeperOff: by default nothing is swept.
func TestSweeperOff(t *testing.T) {
	clk := clock.NewManual(1_700_000_000_000)
	s := startServer(t, nil, clk)
	c := dial(t, s)
	c.Do("EMQ.ENQUEUE", "q", "JOB00000000001", "p")
	c.Do("EMQ.CLAIM", "q", "50")
	clk.Advance(5000)
	clk.Wait() // the sweeper's timers due by now have run
	if r := c.Do("EMQ.JOB", "q", "JOB00000000001"); !strings.Contains(r, "$5\r\nstate\r\n$6\r\nactive\r\n") {
		t.Fatalf("swept while off: %q", r)
	}
}
