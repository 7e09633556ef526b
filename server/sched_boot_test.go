package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/emqd/emqd/clock"
	"github.com/emqd/emqd/internal/testsupport"
)

// TestSchedulesFireAfterRDBLoad: schedules restored from a file that is not
// replayed command by command (dump.rdb, and the AOF's RDB preamble after a
// rewrite) fire after a restart. The boot scans every database for
// schedules instead of trusting write notifications, which an RDB load does
// not send.
func TestSchedulesFireAfterRDBLoad(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  map[string]string
		prep func(c *testsupport.Conn)
	}{
		{"dump.rdb", map[string]string{"appendonly": "no", "save": "3600 1"}, func(*testsupport.Conn) {}},
		{"aof preamble", map[string]string{"appendonly": "yes", "aof-use-rdb-preamble": "yes", "save": ""}, func(c *testsupport.Conn) {
			if r := c.Do("BGREWRITEAOF"); !strings.HasPrefix(r, "+") {
				t.Fatalf("BGREWRITEAOF: %q", r)
			}
			deadline := time.Now().Add(20 * time.Second)
			for !strings.Contains(c.Do("INFO", "persistence"), "aof_rewrite_in_progress:0") {
				if time.Now().After(deadline) {
					t.Fatal("rewrite did not finish")
				}
				time.Sleep(20 * time.Millisecond)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := map[string]string{"dir": t.TempDir()}
			for k, v := range tc.cfg {
				cfg[k] = v
			}
			clk := clock.NewManual(1_800_000_000_000)
			s, err := Start(Options{Config: cfg, Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			c := dial(t, s)
			if r := c.Do("EMQ.SCHEDULE", "q", "tick", "EVERY", "1000", "p"); r != "+OK\r\n" {
				t.Fatalf("EMQ.SCHEDULE: %q", r)
			}
			tc.prep(c)
			s.Close(context.Background())

			s2, err := Start(Options{Config: cfg, Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			defer s2.Close(context.Background())
			c2 := dial(t, s2)
			if r := c2.Do("ZCARD", "emq:{q}:sched"); r != ":1\r\n" {
				t.Fatalf("schedule not loaded: ZCARD %q", r)
			}
			clk.Advance(1500)
			deadline := time.Now().Add(20 * time.Second)
			for c2.Do("ZCARD", "emq:{q}:pending") != ":1\r\n" {
				if time.Now().After(deadline) {
					t.Fatalf("the loaded schedule never fired: pending %q, sched %q",
						c2.Do("ZCARD", "emq:{q}:pending"), c2.Do("EMQ.SCHEDULE.GET", "q", "tick"))
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}
