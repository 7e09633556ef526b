package verbs

import (
	"reflect"
	"strconv"
	"testing"
)

// TestSweepGuard is EMQ.STALLED.CHECK ... EVERY interval_ms
// (docs/verbs.md §4.11.1): a guarded sweep within interval_ms of the last
// one that ran answers [[], []] and writes nothing; the first one, and one
// interval_ms later, sweep and stamp meta's swept_at with the server time.
func TestSweepGuard(t *testing.T) {
	h := newTH(t)
	h.ok("EMQ.ENQUEUE", "q", tID, "p")
	h.ok("EMQ.ENQUEUE", "q", tID2, "p")
	claimOne(t, h, "100")
	h.clk.Advance(100)
	now := h.clk.NowMs()
	if got := h.ok("EMQ.STALLED.CHECK", "q", "2", "100", "EVERY", "1000"); !reflect.DeepEqual(got, []any{[]any{tID}, []any{}}) {
		t.Fatalf("first guarded sweep: %v", got)
	}
	if v := h.s.DB(0).Get(tk.Meta); v == nil {
		t.Fatal("no meta after a guarded sweep")
	} else if at, _ := v.Hash.Get("swept_at"); string(at) != strconv.FormatInt(now, 10) {
		t.Fatalf("swept_at %q, want %d", at, now)
	}
	// Within the interval: skipped, nothing written, even with a lease out.
	claimOne(t, h, "100")
	h.clk.Advance(500)
	feed, dirty := h.feed.n, h.s.DirtyCount
	before := digest(h.s)
	if got := h.ok("EMQ.STALLED.CHECK", "q", "2", "EVERY", "1000"); !reflect.DeepEqual(got, []any{[]any{}, []any{}}) {
		t.Fatalf("guarded sweep within the interval: %v", got)
	}
	if digest(h.s) != before || h.feed.n != feed || h.s.DirtyCount != dirty {
		t.Fatal("a skipped sweep wrote")
	}
	// An unguarded sweep is never held back (and does not move the guard).
	if got := h.ok("EMQ.STALLED.CHECK", "q", "5"); !reflect.DeepEqual(got, []any{[]any{tID}, []any{}}) {
		t.Fatalf("unguarded sweep: %v", got)
	}
	claimOne(t, h, "100")
	h.clk.Advance(499) // 999 ms after the first guarded sweep
	if got := h.ok("EMQ.STALLED.CHECK", "q", "2", "EVERY", "1000"); !reflect.DeepEqual(got, []any{[]any{}, []any{}}) {
		t.Fatalf("999 ms after: %v", got)
	}
	h.clk.Advance(1) // exactly the interval: sweeps
	if got := h.ok("EMQ.STALLED.CHECK", "q", "EVERY", "1000"); !reflect.DeepEqual(got, []any{[]any{}, []any{tID}}) {
		t.Fatalf("at the interval (max_stalled 1 by default): %v", got)
	}
	// A guarded sweep that finds nothing still stamps the guard.
	h.clk.Advance(5000)
	h.ok("EMQ.STALLED.CHECK", "q", "EVERY", "1000")
	if at, _ := h.s.DB(0).Get(tk.Meta).Hash.Get("swept_at"); string(at) != strconv.FormatInt(h.clk.NowMs(), 10) {
		t.Fatalf("empty guarded sweep: swept_at %q", at)
	}
	// A swept_at in the future (the clock stepped back) does not hold back.
	h.hset(tk.Meta, "swept_at", strconv.FormatInt(h.clk.NowMs()+60000, 10))
	h.ok("EMQ.STALLED.CHECK", "q", "EVERY", "1000")
	if at, _ := h.s.DB(0).Get(tk.Meta).Hash.Get("swept_at"); string(at) != strconv.FormatInt(h.clk.NowMs(), 10) {
		t.Fatalf("future guard: swept_at %q", at)
	}
	// PAUSE keeps working beside the guard field.
	h.ok("EMQ.PAUSE", "q")
	h.ok("EMQ.RESUME", "q")
	if _, ok := h.s.DB(0).Get(tk.Meta).Hash.Get("swept_at"); !ok {
		t.Fatal("RESUME dropped swept_at")
	}
}

// TestSweepGuardRefusals: the arguments (left to right) and the stored
// guard (docs/verbs.md §4.11.1, §2.11).
func TestSweepGuardRefusals(t *testing.T) {
	h := newTH(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"EMQ.STALLED.CHECK", "q", "EVERY", "0"}, "ERR interval_ms must be a positive integer"},
		{[]string{"EMQ.STALLED.CHECK", "q", "1", "EVERY", "-5"}, "ERR interval_ms must be a positive integer"},
		{[]string{"EMQ.STALLED.CHECK", "q", "1", "1", "every", "x"}, "ERR value is not an integer or out of range"},
		{[]string{"EMQ.STALLED.CHECK", "q", "0", "EVERY", "x"}, "ERR max_stalled must be a positive integer"},
		{[]string{"EMQ.STALLED.CHECK", "q", "EVERY"}, "ERR syntax error"},
		{[]string{"EMQ.STALLED.CHECK", "q", "EVERY", "5", "1"}, "ERR syntax error"},
		{[]string{"EMQ.STALLED.CHECK", "q", "EVERY", "5", "EVERY", "5"}, "ERR syntax error"},
		{[]string{"EMQ.STALLED.CHECK", "q", "1", "1", "1", "EVERY", "5"}, "ERR syntax error"},
	} {
		if got := h.do(c.args...); got != replyErr(c.want) {
			t.Errorf("%v: %v, want %q", c.args, got, c.want)
		}
	}
	h.hset(tk.Meta, "swept_at", "soon")
	before := digest(h.s)
	if got := h.do("EMQ.STALLED.CHECK", "q", "EVERY", "5"); got != replyErr("ERR hash value is not an integer") {
		t.Fatalf("bad swept_at: %v", got)
	}
	if h.v.BadRowRefusals() != 1 || digest(h.s) != before {
		t.Fatal("a bad swept_at is a counted bad-row refusal that writes nothing")
	}
	// Without EVERY the guard is not read.
	h.ok("EMQ.STALLED.CHECK", "q")
	h.s.DB(0).Remove(tk.Meta)
	h.setString(tk.Meta, "x")
	if got := h.do("EMQ.STALLED.CHECK", "q", "EVERY", "5"); got != replyErr("WRONGTYPE Operation against a key holding the wrong kind of value") {
		t.Fatalf("meta of another type: %v", got)
	}
}
