package server

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/emqd/emqd/clock"
)

// TestMalformedScheduleLoggedOnce: a schedule hash broken by hand is
// refused at every tick of the schedule timer (counted each time), but
// logged once per key per minute by the verbs' bad-row log (docs/verbs.md
// §2.11), not once a second by the timer as well (the newcomer's finding:
// a WARN every second for ever).
func TestMalformedScheduleLoggedOnce(t *testing.T) {
	logs := &syncBuffer{}
	clk := clock.NewManual(1_700_000_000_000)
	s, err := Start(Options{Clock: clk, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	c := dial(t, s)
	if r := c.Do("EMQ.SCHEDULE", "bq", "s", "EVERY", "1000", "p"); r != "+OK\r\n" {
		t.Fatalf("EMQ.SCHEDULE: %q", r)
	}
	if r := c.Do("HSET", "emq:{bq}:sched:s", "every_ms", "-5"); r != ":0\r\n" {
		t.Fatalf("HSET: %q", r)
	}
	for i := 0; i < 6; i++ {
		clk.Advance(1500)
		clk.Wait()
		c.Do("PING") // the timer's tick has run once PING is answered after it
	}
	eventually(t, func() bool { return badRows(t, c) >= 3 })
	out := logs.String()
	if n := strings.Count(out, "schedule fire refused"); n != 0 {
		t.Errorf("the timer logged the bad-row refusal %d times:\n%s", n, out)
	}
	if n := strings.Count(out, "refused a verb because of stored data"); n != 1 {
		t.Errorf("bad-row log lines: %d, want 1:\n%s", n, out)
	}
}

// badRows reads INFO's emq_bad_row_refusals.
func badRows(t *testing.T, c interface{ Do(...string) string }) int {
	t.Helper()
	info := c.Do("INFO", "emq")
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "emq_bad_row_refusals:"); ok {
			n := 0
			for _, ch := range v {
				n = n*10 + int(ch-'0')
			}
			return n
		}
	}
	t.Fatalf("no emq_bad_row_refusals in %q", info)
	return 0
}
