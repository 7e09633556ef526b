package server

import (
	"context"
	"reflect"
	"testing"

	"github.com/emqd/emqd/clock"
)

// TestPriorityReplay: priorities survive the append-only file's replay and
// a rewrite: the pending scores and the claim order after a restart are
// those before it, including jobs that came back to pending (docs/verbs.md
// §4.3.1).
func TestPriorityReplay(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewManual(pt0)
	s := durable(t, dir, clk)
	c := rclient(t, s, 0)
	must(t, c, "EMQ.ENQUEUE", "q", "JOB00000000001", "a")
	must(t, c, "EMQ.ENQUEUE", "q", "JOB00000000002", "b", "PRIORITY", 4)
	must(t, c, "EMQ.ENQUEUE", "q", "JOB00000000003", "c", "PRIORITY", -2)
	must(t, c, "EMQ.ENQUEUE.MANY", "q", "PRIORITY", 1, "DELAY", 5, "JOBS", "JOB00000000004", "d")
	job := must(t, c, "EMQ.CLAIM", "q", 500).([]any)[0].([]any)
	if job[0] != "JOB00000000003" {
		t.Fatalf("claimed %v", job[0])
	}
	must(t, c, "EMQ.REQUEUE", "q", job[0], job[2])
	clk.Advance(10)
	must(t, c, "EMQ.PROMOTE", "q")
	want := keyspace(s)
	order := []any{"JOB00000000003", "-2", "JOB00000000001", "0", "JOB00000000004", "1", "JOB00000000002", "4"}
	if got := must(t, c, "ZRANGE", "emq:{q}:pending", 0, -1, "WITHSCORES"); !reflect.DeepEqual(got, order) {
		t.Fatalf("pending %v", got)
	}
	stop(t, s)
	s = durable(t, dir, clk)
	if got := keyspace(s); !reflect.DeepEqual(got, want) {
		t.Fatalf("after replay:\n%q\nwant\n%q", got, want)
	}
	c = rclient(t, s, 0)
	must(t, c, "BGREWRITEAOF")
	s.AOF().WaitRewrite()
	stop(t, s)
	s = durable(t, dir, clk)
	c = rclient(t, s, 0)
	if got := must(t, c, "ZRANGE", "emq:{q}:pending", 0, -1, "WITHSCORES"); !reflect.DeepEqual(got, order) {
		t.Fatalf("after rewrite: pending %v", got)
	}
	var ids []any
	for i := 0; i < 4; i++ {
		ids = append(ids, must(t, c, "EMQ.CLAIM", "q", 500).([]any)[0].([]any)[0])
	}
	if !reflect.DeepEqual(ids, []any{order[0], order[2], order[4], order[6]}) {
		t.Fatalf("claim order after restart %v", ids)
	}
	s.Close(context.Background())
}

// TestLanesReplay: a queue's lanes (settings, passes, slots held, the rate
// log, the selection sets) come back identical from the append-only file
// and after a rewrite, and the claims after the restart keep the limits
// (docs/verbs.md §4.26).
func TestLanesReplay(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewManual(pt0)
	s := durable(t, dir, clk)
	c := rclient(t, s, 0)
	must(t, c, "EMQ.LANE", "q", "a", "MAX_ACTIVE", 1, "WEIGHT", 2)
	must(t, c, "EMQ.LANE", "q", "r", "RATE", 2, 1000)
	for i := 0; i < 3; i++ {
		must(t, c, "EMQ.ENQUEUE", "q", "*", "a", "LANE", "a")
		must(t, c, "EMQ.ENQUEUE", "q", "*", "r", "LANE", "r")
		must(t, c, "EMQ.ENQUEUE", "q", "*", "d")
	}
	if n := len(must(t, c, "EMQ.CLAIM", "q", 60000, "COUNT", 9).([]any)); n != 6 {
		t.Fatalf("claimed %d, want 6 (a: 1 by MAX_ACTIVE, r: 2 by RATE, default: 3)", n)
	}
	must(t, c, "EMQ.ENQUEUE", "q", "*", "d")
	want := keyspace(s)
	lanes := must(t, c, "EMQ.LANES", "q")
	stop(t, s)
	s = durable(t, dir, clk)
	if got := keyspace(s); !reflect.DeepEqual(got, want) {
		t.Fatalf("after replay:\n%q\nwant\n%q", got, want)
	}
	c = rclient(t, s, 0)
	if got := must(t, c, "EMQ.LANES", "q"); !reflect.DeepEqual(got, lanes) {
		t.Fatalf("EMQ.LANES after replay %v, want %v", got, lanes)
	}
	must(t, c, "BGREWRITEAOF")
	s.AOF().WaitRewrite()
	stop(t, s)
	s = durable(t, dir, clk)
	if got := keyspace(s); !reflect.DeepEqual(got, want) {
		t.Fatalf("after rewrite:\n%q\nwant\n%q", got, want)
	}
	c = rclient(t, s, 0)
	// Still full and limited: only the default lane serves.
	got := must(t, c, "EMQ.CLAIM", "q", 60000, "COUNT", 9).([]any)
	if len(got) != 1 {
		t.Fatalf("after the restart claimed %v", got)
	}
	for _, j := range got {
		if p := j.([]any)[1]; p != "d" {
			t.Fatalf("after the restart a limited lane served %v", p)
		}
	}
	s.Close(context.Background())
}
