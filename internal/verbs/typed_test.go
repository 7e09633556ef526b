package verbs

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/emqd/emqd/internal/store"
)

// The typed verb core (docs/architecture.md §2.5.1): a typed method
// called directly does what the RESP command does (same keyspace, same
// AOF records, the wire reply is its result), and a refusal is a *Refusal
// with the wire's text that wrote nothing.

// twins are two harnesses driven through the same commands: a runs the
// verb through its wire handler, b through its typed method.
type twins struct{ a, b *th }

func newTwins(t *testing.T) *twins { return &twins{a: newTH(t), b: newTH(t)} }

// both runs a command on both harnesses (it must not be refused).
func (w *twins) both(args ...string) {
	w.a.t.Helper()
	w.a.ok(args...)
	w.b.ok(args...)
}

func (w *twins) advance(ms int64) { w.a.clk.Advance(ms); w.b.clk.Advance(ms) }

// same fails unless the keyspaces and the AOF records of a and b agree.
func (w *twins) same(what string) {
	w.a.t.Helper()
	if da, db := digest(w.a.s), digest(w.b.s); da != db {
		w.a.t.Fatalf("%s: the typed call left another keyspace than the command", what)
	}
	if *w.a.feed != *w.b.feed {
		w.a.t.Fatalf("%s: AOF records %+v by the command, %+v by the typed call", what, *w.a.feed, *w.b.feed)
	}
	if strings.Join(w.a.ready, ",") != strings.Join(w.b.ready, ",") {
		w.a.t.Fatalf("%s: wake-ups %v by the command, %v by the typed call", what, w.a.ready, w.b.ready)
	}
}

// strs converts a parsed array reply of bulk strings.
func strs(t *testing.T, v any) []string {
	t.Helper()
	xs, ok := v.([]any)
	if !ok {
		t.Fatalf("not an array: %#v", v)
	}
	out := []string{}
	for _, x := range xs {
		out = append(out, x.(string))
	}
	return out
}

// nonNil maps a nil slice to an empty one (a reply has no nil arrays here).
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// untouched runs f, which must refuse with text, and fails unless the
// keyspace, the AOF records and the wake-ups are what they were.
func untouched(t *testing.T, h *th, text string, f func() error) {
	t.Helper()
	d0, f0, r0 := digest(h.s), *h.feed, len(h.ready)
	err := f()
	var ref *Refusal
	if !errors.As(err, &ref) {
		t.Fatalf("want the refusal %q, got %v", text, err)
	}
	if ref.Error() != text {
		t.Fatalf("refusal %q, want %q", ref.Error(), text)
	}
	if digest(h.s) != d0 || *h.feed != f0 || len(h.ready) != r0 {
		t.Fatalf("the refusal %q wrote: feed %+v -> %+v, wake-ups %d -> %d", text, f0, *h.feed, r0, len(h.ready))
	}
}

func TestTypedStalledCheck(t *testing.T) {
	w := newTwins(t)
	w.both("EMQ.ENQUEUE", "q", tID, "a")
	w.both("EMQ.ENQUEUE", "q", tID2, "b")
	w.both("EMQ.CLAIM", "q", "1000", "COUNT", "2")
	w.advance(1001)
	// First sweep: both recovered (stalled 1 < 2).
	got := w.a.ok("EMQ.STALLED.CHECK", "q", "2").([]any)
	res, err := w.b.v.StalledCheck(w.b.ctx(nil), &StalledCheckArgs{Queue: "q", MaxStalled: 2})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{tID, tID2}; !reflect.DeepEqual(res.Recovered, want) || len(res.Dead) != 0 {
		t.Fatalf("typed sweep: %+v, want recovered %v", res, want)
	}
	if !reflect.DeepEqual(strs(t, got[0]), res.Recovered) || !reflect.DeepEqual(strs(t, got[1]), nonNil(res.Dead)) {
		t.Fatalf("wire %v, typed %+v", got, res)
	}
	w.same("recovered")
	// Second: both dead (stalled 2 >= 2).
	w.both("EMQ.CLAIM", "q", "1000", "COUNT", "2")
	w.advance(1001)
	got = w.a.ok("EMQ.STALLED.CHECK", "q", "2").([]any)
	res, err = w.b.v.StalledCheck(w.b.ctx(nil), &StalledCheckArgs{Queue: "q", MaxStalled: 2})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{tID, tID2}; !reflect.DeepEqual(res.Dead, want) || len(res.Recovered) != 0 {
		t.Fatalf("typed sweep: %+v, want dead %v", res, want)
	}
	if !reflect.DeepEqual(strs(t, got[1]), res.Dead) || len(strs(t, got[0])) != 0 {
		t.Fatalf("wire %v, typed %+v", got, res)
	}
	if w.b.field("q", tID, "state") != "dead" {
		t.Fatalf("state %q after the typed sweep", w.b.field("q", tID, "state"))
	}
	w.same("dead")
	// The guard: EVERY writes swept_at, a second call inside it skips.
	for i := 0; i < 2; i++ {
		w.a.ok("EMQ.STALLED.CHECK", "q", "2", "EVERY", "5000")
		res, err = w.b.v.StalledCheck(w.b.ctx(nil), &StalledCheckArgs{Queue: "q", MaxStalled: 2, Every: 5000})
		if err != nil || len(res.Recovered)+len(res.Dead) != 0 {
			t.Fatalf("guarded sweep %d: %+v %v", i, res, err)
		}
		w.same("guarded")
	}
	if w.b.feed.n != w.a.feed.n || w.b.feed.n == 0 {
		t.Fatalf("feed %d/%d", w.a.feed.n, w.b.feed.n)
	}
}

func TestTypedStalledCheckRefusal(t *testing.T) {
	h := newTH(t)
	h.ok("EMQ.ENQUEUE", "q", tID, "a")
	h.ok("EMQ.CLAIM", "q", "1000")
	h.clk.Advance(1001)
	h.setString(tk.Pending, "not a zset")
	bad0 := h.v.BadRowRefusals()
	untouched(t, h, store.ErrWrongType, func() error {
		_, err := h.v.StalledCheck(h.ctx(nil), &StalledCheckArgs{Queue: "q", MaxStalled: 2})
		return err
	})
	if h.v.BadRowRefusals() != bad0+1 {
		t.Fatalf("bad-row refusals %d, want %d (a refusal by stored data is counted)", h.v.BadRowRefusals(), bad0+1)
	}
	// The same refusal on the wire, same text.
	if got := h.do("EMQ.STALLED.CHECK", "q", "2"); got != replyErr(store.ErrWrongType) {
		t.Fatalf("wire: %v", got)
	}
	// A bad swept_at refuses the guard.
	h.hset(tk.Meta, "swept_at", "x")
	untouched(t, h, store.ErrHashNotInt, func() error {
		_, err := h.v.StalledCheck(h.ctx(nil), &StalledCheckArgs{Queue: "q", Every: 10})
		return err
	})
}

func TestTypedPromote(t *testing.T) {
	w := newTwins(t)
	w.both("EMQ.ENQUEUE", "q", tID, "a", "DELAY", "500")
	w.both("EMQ.ENQUEUE", "q", tID2, "b", "DELAY", "500")
	w.advance(500)
	n := w.a.ok("EMQ.PROMOTE", "q", "1").(int64)
	res, err := w.b.v.Promote(w.b.ctx(nil), &PromoteArgs{Queue: "q", Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 || !reflect.DeepEqual(res.Promoted, []string{tID}) {
		t.Fatalf("wire %d, typed %+v", n, res)
	}
	w.same("promote 1")
	n = w.a.ok("EMQ.PROMOTE", "q").(int64)
	res, err = w.b.v.Promote(w.b.ctx(nil), &PromoteArgs{Queue: "q"})
	if err != nil || n != 1 || !reflect.DeepEqual(res.Promoted, []string{tID2}) {
		t.Fatalf("wire %d, typed %+v %v", n, res, err)
	}
	w.same("promote the rest")

	h := newTH(t)
	h.ok("EMQ.ENQUEUE", "q", tID, "a", "DELAY", "500")
	h.clk.Advance(500)
	h.setString(tk.Pending, "x")
	untouched(t, h, store.ErrWrongType, func() error {
		_, err := h.v.Promote(h.ctx(nil), &PromoteArgs{Queue: "q"})
		return err
	})
}

func TestTypedScheduleFire(t *testing.T) {
	w := newTwins(t)
	w.both("EMQ.SCHEDULE", "q", "tick", "EVERY", "1000", "p")
	w.advance(3000)
	n := w.a.ok("EMQ.SCHEDULE.FIRE", "q").(int64)
	res, err := w.b.v.ScheduleFire(w.b.ctx(nil), &ScheduleFireArgs{Queue: "q"})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 || int64(res.Fired) != n {
		t.Fatalf("wire fired %d, typed %+v", n, res)
	}
	w.same("fire")

	h := newTH(t)
	h.setString(tk.Sched, "x")
	untouched(t, h, store.ErrWrongType, func() error {
		_, err := h.v.ScheduleFire(h.ctx(nil), &ScheduleFireArgs{Queue: "q"})
		return err
	})
}

// TestTypedArgv: the canonical command lines the server records for its
// in-process calls, replayed through the wire, give the typed call's
// effect (they parse, and the zero options are the arguments left out).
func TestTypedArgv(t *testing.T) {
	cases := []struct {
		argv [][]byte
		want string
	}{
		{(&StalledCheckArgs{Queue: "q"}).Argv(), "EMQ.STALLED.CHECK q"},
		{(&StalledCheckArgs{Queue: "q", MaxStalled: 3}).Argv(), "EMQ.STALLED.CHECK q 3"},
		{(&StalledCheckArgs{Queue: "q", Limit: 7}).Argv(), "EMQ.STALLED.CHECK q 1 7"},
		{(&StalledCheckArgs{Queue: "q", MaxStalled: 2, Limit: 7, Every: 50}).Argv(), "EMQ.STALLED.CHECK q 2 7 EVERY 50"},
		{(&StalledCheckArgs{Queue: "q", Every: 50}).Argv(), "EMQ.STALLED.CHECK q EVERY 50"},
		{(&PromoteArgs{Queue: "q"}).Argv(), "EMQ.PROMOTE q"},
		{(&PromoteArgs{Queue: "q", Limit: 9}).Argv(), "EMQ.PROMOTE q 9"},
		{(&ScheduleFireArgs{Queue: "q"}).Argv(), "EMQ.SCHEDULE.FIRE q"},
		{(&ScheduleFireArgs{Queue: "q", Limit: 4}).Argv(), "EMQ.SCHEDULE.FIRE q 4"},
	}
	h := newTH(t)
	for _, c := range cases {
		var parts []string
		for _, a := range c.argv {
			parts = append(parts, string(a))
		}
		if got := strings.Join(parts, " "); got != c.want {
			t.Fatalf("argv %q, want %q", got, c.want)
		}
		if _, refused := h.do(parts...).(replyErr); refused {
			t.Fatalf("%q is refused on the wire", c.want)
		}
	}
}

// TestTypedDebugClockAdvance: the step moves Config.Clock, the range
// refusal moves nothing, and verbs without a clock refuse as with debug
// off.
func TestTypedDebugClockAdvance(t *testing.T) {
	h := newTH(t)
	if err := h.v.DebugClockAdvance(250); err != nil || h.clk.NowMs() != tNow+250 {
		t.Fatalf("advance: %v, clock %d", err, h.clk.NowMs())
	}
	untouched(t, h, ErrClockRange, func() error { return h.v.DebugClockAdvance(MaxScoreMs) })
	if h.clk.NowMs() != tNow+250 {
		t.Fatalf("a refused step moved the clock to %d", h.clk.NowMs())
	}
	bare := New(Config{})
	if err := bare.DebugClockAdvance(1); err == nil || err.Error() != ErrDebugDisabled {
		t.Fatalf("no clock: %v", err)
	}
}
