package server

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/emqd/emqd/clock"
)

// TestLaneDrainReplay: EMQ.REMOVE.ALL q pending across lanes and with
// LANE name reaches the append-only file as the keyspace it left: after a
// restart, and after a rewrite, the keyspace is the one before, EMQ.LIST
// pending and EMQ.COUNTS agree, and the drained lanes have no key
// (docs/verbs.md §4.26.6).
func TestLaneDrainReplay(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewManual(pt0)
	s := durable(t, dir, clk)
	c := rclient(t, s, 0)
	must(t, c, "EMQ.LANE", "q", "cfg", "WEIGHT", 2)
	for i := 0; i < 3; i++ {
		must(t, c, "EMQ.ENQUEUE", "q", "*", "a", "LANE", "a")
		must(t, c, "EMQ.ENQUEUE", "q", "*", "b", "LANE", "b")
		must(t, c, "EMQ.ENQUEUE", "q", "*", "c", "LANE", "cfg")
		must(t, c, "EMQ.ENQUEUE", "q", "*", "d")
	}
	if got := must(t, c, "EMQ.REMOVE.ALL", "q", "pending", "LANE", "a"); !reflect.DeepEqual(got, []any{int64(3), int64(0)}) {
		t.Fatalf("LANE a: %v", got)
	}
	if got := must(t, c, "EMQ.REMOVE.ALL", "q", "pending", "LIMIT", 5); !reflect.DeepEqual(got, []any{int64(5), int64(4)}) {
		t.Fatalf("LIMIT 5: %v", got) // the default lane's 3, then b's first 2
	}
	left := must(t, c, "EMQ.LIST", "q", "pending").([]any)
	if len(left) != 4 {
		t.Fatalf("left %v", left)
	}
	want := keyspace(s)
	for _, line := range want {
		for _, k := range []string{`"emq:{q}:lane:a"`, `"emq:{q}:lane:a:pending"`, `"emq:{q}:lane:default"`, `"emq:{q}:pending"`} {
			if strings.HasPrefix(line, "db0 "+k+" ") {
				t.Fatalf("a drained lane left %s", line)
			}
		}
	}
	stop(t, s)
	s = durable(t, dir, clk)
	if got := keyspace(s); !reflect.DeepEqual(got, want) {
		t.Fatalf("after replay:\n%q\nwant\n%q", got, want)
	}
	c = rclient(t, s, 0)
	if got := must(t, c, "EMQ.LIST", "q", "pending"); !reflect.DeepEqual(got, left) {
		t.Fatalf("EMQ.LIST after replay %v, want %v", got, left)
	}
	must(t, c, "BGREWRITEAOF")
	s.AOF().WaitRewrite()
	stop(t, s)
	s = durable(t, dir, clk)
	if got := keyspace(s); !reflect.DeepEqual(got, want) {
		t.Fatalf("after rewrite:\n%q\nwant\n%q", got, want)
	}
	c = rclient(t, s, 0)
	if got := must(t, c, "EMQ.REMOVE.ALL", "q", "pending"); !reflect.DeepEqual(got, []any{int64(4), int64(0)}) {
		t.Fatalf("the rest: %v", got)
	}
	counts := must(t, c, "EMQ.COUNTS", "q").([]any)
	if counts[0] != "pending" || counts[1] != int64(0) {
		t.Fatalf("COUNTS after the drain %v", counts)
	}
	s.Close(context.Background())
}
