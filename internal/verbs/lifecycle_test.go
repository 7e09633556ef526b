package verbs

import (
	"reflect"
	"testing"
)

func claimOne(t *testing.T, h *th, lease string) (id, token string, failures int64) {
	t.Helper()
	v := h.ok("EMQ.CLAIM", "q", lease).([]any)
	if len(v) != 1 {
		t.Fatalf("claim: %v", v)
	}
	j := v[0].([]any)
	return j[0].(string), j[2].(string), j[3].(int64)
}

// TestCountersTable walks one job through every verb of docs/verbs.md §3
// and reads the row after each: which of attempts, failures, stalled and
// lease_epoch each verb wrote.
func TestCountersTable(t *testing.T) {
	h := newTH(t)
	id := h.ok("EMQ.ENQUEUE", "q", "*", "pay").(string)
	if h.row("q", id) != "state=pending attempts=0 payload=pay enqueued_at=1700000000000" {
		t.Fatalf("enqueue row: %s", h.row("q", id))
	}
	_, tok, f := claimOne(t, h, "1000")
	if tok != "1" || f != 0 || h.row("q", id) != "state=active attempts=1 payload=pay enqueued_at=1700000000000 lease_epoch="+tRun+" claimed_at=1700000000000" {
		t.Fatalf("claim: %s %d %s", tok, f, h.row("q", id))
	}
	for _, args := range [][]string{{"EMQ.PROGRESS", "q", id, "1", "10%"}, {"EMQ.EXTEND", "q", id, "1", "5000"}} {
		before := h.field("q", id, "attempts") + h.field("q", id, "failures") + h.field("q", id, "stalled")
		h.ok(args...)
		if after := h.field("q", id, "attempts") + h.field("q", id, "failures") + h.field("q", id, "stalled"); after != before {
			t.Fatalf("%v touched a counter", args)
		}
	}
	h.run = "2222222222222222222222222222222222222222" // a restart: EXTEND stamps the new run
	h.ok("EMQ.EXTEND", "q", id, "1", "5000")
	if h.field("q", id, "lease_epoch") != h.run {
		t.Fatal("EXTEND did not stamp the run_id")
	}
	if got := h.ok("EMQ.FAIL", "q", id, "1", "3", "100", "oops"); !reflect.DeepEqual(got, []any{"scheduled", int64(1)}) {
		t.Fatalf("fail: %v", got)
	}
	if h.row("q", id) != "state=scheduled attempts=1 payload=pay enqueued_at=1700000000000 lease_epoch="+h.run+" claimed_at=1700000000000 progress=10% last_error=oops failures=1" {
		t.Fatalf("after fail: %s", h.row("q", id))
	}
	if h.ok("EMQ.PROMOTE", "q") != int64(0) {
		t.Fatal("promoted before due")
	}
	h.clk.Advance(100)
	if h.ok("EMQ.PROMOTE", "q") != int64(1) || h.field("q", id, "state") != "pending" || h.field("q", id, "failures") != "1" {
		t.Fatalf("promote: %s", h.row("q", id))
	}
	_, tok, f = claimOne(t, h, "1000")
	if tok != "2" || f != 1 {
		t.Fatalf("second claim: token %s failures %d", tok, f)
	}
	h.ok("EMQ.REQUEUE", "q", id, "2")
	if h.field("q", id, "attempts") != "2" || h.field("q", id, "state") != "pending" || h.field("q", id, "failures") != "1" {
		t.Fatalf("requeue: %s", h.row("q", id))
	}
	_, tok, _ = claimOne(t, h, "1000")
	h.ok("EMQ.DELAY", "q", id, tok, "IN", "0")
	if h.field("q", id, "attempts") != "3" || h.field("q", id, "state") != "scheduled" {
		t.Fatalf("delay: %s", h.row("q", id))
	}
	_, tok, _ = claimOne(t, h, "1000") // CLAIM promotes the due job itself
	if tok != "4" {
		t.Fatalf("claim after delay: token %s", tok)
	}
	h.clk.Advance(1000)
	sweep := h.ok("EMQ.STALLED.CHECK", "q", "3")
	if !reflect.DeepEqual(sweep, []any{[]any{id}, []any{}}) || h.field("q", id, "stalled") != "1" || h.field("q", id, "attempts") != "4" {
		t.Fatalf("sweep: %v %s", sweep, h.row("q", id))
	}
	_, tok, _ = claimOne(t, h, "1000")
	if got := h.ok("EMQ.FAIL", "q", id, tok, "2", "0", "again"); !reflect.DeepEqual(got, []any{"dead", int64(2)}) {
		t.Fatalf("fail to dead: %v", got)
	}
	h.ok("EMQ.REPROCESS", "q", id, "RESET")
	if h.field("q", id, "failures")+h.field("q", id, "stalled")+h.field("q", id, "last_error") != "<absent><absent><absent>" || h.field("q", id, "attempts") != "5" {
		t.Fatalf("reprocess reset: %s", h.row("q", id))
	}
	_, tok, _ = claimOne(t, h, "1000")
	if tok != "6" {
		t.Fatalf("tokens only grow: %s", tok)
	}
	h.ok("EMQ.COMPLETE", "q", id, tok)
	if h.row("q", id) != "" {
		t.Fatal("row kept after complete")
	}
	counts := h.ok("EMQ.COUNTS", "q")
	if !reflect.DeepEqual(counts, []any{"pending", int64(0), "active", int64(0), "scheduled", int64(0), "dead", int64(0), "completed", int64(1), "failed", int64(1), "retained", int64(0), "latency_ms", int64(0), "waiting", int64(0)}) {
		t.Fatalf("counts: %v", counts)
	}
}
