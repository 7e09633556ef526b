package server

import (
	"context"
	"reflect"
	"testing"

	"github.com/emqd/emqd/clock"
)

// TestRetentionReplayAndRewrite: a queue with both retention settings,
// retained results, trimmed completions and trimmed deaths comes back
// identical from the append-only file, and again after BGREWRITEAOF
// (docs/verbs.md §4.21: the trims are ordinary writes of the verbs'
// plans, recorded with them).
func TestRetentionReplayAndRewrite(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewManual(pt0)
	s := durable(t, dir, clk)
	c := rclient(t, s, 0)
	must(t, c, "EMQ.RETAIN", "q", "COMPLETED", 3, 5000)
	must(t, c, "EMQ.RETAIN", "q", "DEAD", 2, 0)
	for i := 0; i < 6; i++ {
		clk.Advance(1000)
		id := must(t, c, "EMQ.ENQUEUE", "q", "*", "p").(string)
		job := must(t, c, "EMQ.CLAIM", "q", 500).([]any)[0].([]any)
		if i%2 == 0 {
			must(t, c, "EMQ.COMPLETE", "q", id, job[2], "RESULT", "r"+id)
		} else {
			must(t, c, "EMQ.FAIL", "q", id, job[2], 1, 0, "boom")
		}
	}
	clk.Advance(500)
	must(t, c, "EMQ.STALLED.CHECK", "q") // trims completions older than 5 s
	want := keyspace(s)
	done := must(t, c, "ZRANGE", "emq:{q}:completed", 0, -1).([]any)
	dead := must(t, c, "ZRANGE", "emq:{q}:dead", 0, -1).([]any)
	if len(done) != 2 || len(dead) != 2 {
		t.Fatalf("completed %v dead %v", done, dead)
	}
	if r := must(t, c, "HGET", "emq:{q}:job:"+done[0].(string), "result"); r != "r"+done[0].(string) {
		t.Fatalf("result %v", r)
	}
	stop(t, s)
	s = durable(t, dir, clk)
	if got := keyspace(s); !reflect.DeepEqual(got, want) {
		t.Fatalf("after replay:\n%q\nwant\n%q", got, want)
	}
	c = rclient(t, s, 0)
	if r := must(t, c, "BGREWRITEAOF"); r != "Background append only file rewriting started" {
		t.Fatalf("rewrite: %v", r)
	}
	s.AOF().WaitRewrite()
	stop(t, s)
	s = durable(t, dir, clk)
	if got := keyspace(s); !reflect.DeepEqual(got, want) {
		t.Fatalf("after rewrite:\n%q\nwant\n%q", got, want)
	}
	s.Close(context.Background())
}
