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

// typedCase is one call of a job-core verb: its typed arguments (whose
// Argv is sent on the wire twin), the command line Argv must give, the
// typed call, and the wire reply its result must equal (parseReply's
// form).
type typedCase struct {
	name  string
	setup [][]string // commands run on both twins first
	argv  interface{ Argv() [][]byte }
	want  string // strings.Join(Argv, " ")
	call  func(vs *Verbs, c *store.Ctx) (reply any, err error)
}

// runTypedCase runs tc on a fresh pair of twins: the commands of setup and
// then tc.setup on both, both clocks advanced by advanceMs, then the
// command line of tc.argv.Argv() (which must read tc.want) on twin a and
// tc.call on twin b. The typed result must equal the parsed wire reply and
// the twins must end identical (keyspace, AOF records, wake-ups); with
// read, no AOF record at all, otherwise the same published events.
func runTypedCase(t *testing.T, tc typedCase, setup [][]string, advanceMs int64, read bool) {
	t.Helper()
	w := newTwins(t)
	w.a.listen, w.b.listen = !read, !read
	for _, s := range setup {
		w.both(s...)
	}
	for _, s := range tc.setup {
		w.both(s...)
	}
	if advanceMs > 0 {
		w.advance(advanceMs)
	}
	var parts []string
	for _, a := range tc.argv.Argv() {
		parts = append(parts, string(a))
	}
	if got := strings.Join(parts, " "); got != tc.want {
		t.Fatalf("Argv %q, want %q", got, tc.want)
	}
	fa, fb := *w.a.feed, *w.b.feed
	wire := w.a.do(parts...)
	if e, refused := wire.(replyErr); refused {
		t.Fatalf("wire %q refused: %s", tc.want, e)
	}
	got, err := tc.call(w.b.v, w.b.ctx(nil))
	if err != nil {
		t.Fatalf("typed: %v", err)
	}
	if !reflect.DeepEqual(got, wire) {
		t.Fatalf("typed result %#v, wire reply %#v", got, wire)
	}
	w.same(tc.name)
	if read {
		if *w.a.feed != fa || *w.b.feed != fb {
			t.Fatalf("a read verb wrote to the AOF")
		}
		return
	}
	if strings.Join(w.a.pub, "\n") != strings.Join(w.b.pub, "\n") {
		t.Fatalf("events %v by the command, %v by the typed call", w.a.pub, w.b.pub)
	}
}

// claimReply is a ClaimResult as the wire's parsed reply.
func claimReply(r ClaimResult) any {
	out := []any{}
	for _, j := range r.Jobs {
		out = append(out, []any{j.ID, string(j.Payload), string(j.Token), j.Failures})
	}
	return out
}

// requeueArgs gives a Lease the Argv of EMQ.REQUEUE.
type requeueArgs struct{ Lease }

func (a *requeueArgs) Argv() [][]byte { return RequeueArgv(&a.Lease) }

func TestTypedJobCore(t *testing.T) {
	enq := func(id string, more ...string) []string {
		return append([]string{"EMQ.ENQUEUE", "q", id, "p-" + id}, more...)
	}
	claim2 := []string{"EMQ.CLAIM", "q", "1000", "COUNT", "2"}
	lease := Lease{Queue: "q", ID: tID, Token: []byte("1")}
	cases := []typedCase{
		{name: "enqueue", argv: &EnqueueArgs{Queue: "q", ID: tID, Payload: []byte("x")}, want: "EMQ.ENQUEUE q " + tID + " x",
			call: func(vs *Verbs, c *store.Ctx) (any, error) {
				r, err := vs.Enqueue(c, &EnqueueArgs{Queue: "q", ID: tID, Payload: []byte("x")})
				return r.ID, err
			}},
		{name: "enqueue options", argv: &EnqueueArgs{Queue: "q", ID: tID, Payload: []byte("x"), JobOptions: JobOptions{HasDelay: true, DelayMs: 50, Priority: 3, Lane: "a"}},
			want: "EMQ.ENQUEUE q " + tID + " x DELAY 50 PRIORITY 3 LANE a",
			call: func(vs *Verbs, c *store.Ctx) (any, error) {
				r, err := vs.Enqueue(c, &EnqueueArgs{Queue: "q", ID: tID, Payload: []byte("x"), JobOptions: JobOptions{HasDelay: true, DelayMs: 50, Priority: 3, Lane: "a"}})
				return r.ID, err
			}},
		{name: "enqueue at", argv: &EnqueueArgs{Queue: "q", ID: tID, Payload: []byte("x"), JobOptions: JobOptions{HasAt: true, AtMs: tNow + 9}},
			want: "EMQ.ENQUEUE q " + tID + " x AT " + itoa(tNow+9),
			call: func(vs *Verbs, c *store.Ctx) (any, error) {
				r, err := vs.Enqueue(c, &EnqueueArgs{Queue: "q", ID: tID, Payload: []byte("x"), JobOptions: JobOptions{HasAt: true, AtMs: tNow + 9}})
				return r.ID, err
			}},
		{name: "enqueue mint", setup: [][]string{enq(tID)}, argv: &EnqueueArgs{Queue: "q", ID: "*", Payload: []byte("x")}, want: "EMQ.ENQUEUE q * x",
			call: func(vs *Verbs, c *store.Ctx) (any, error) {
				r, err := vs.Enqueue(c, &EnqueueArgs{Queue: "q", ID: "*", Payload: []byte("x")})
				if r.Duplicate || !ValidID([]byte(r.ID)) {
					t.Fatalf("minted %+v", r)
				}
				return r.ID, err
			}},
		{name: "enqueue duplicate", setup: [][]string{enq(tID)}, argv: &EnqueueArgs{Queue: "q", ID: tID, Payload: []byte("y")}, want: "EMQ.ENQUEUE q " + tID + " y",
			call: func(vs *Verbs, c *store.Ctx) (any, error) {
				r, err := vs.Enqueue(c, &EnqueueArgs{Queue: "q", ID: tID, Payload: []byte("y")})
				if !r.Duplicate {
					t.Fatalf("duplicate: %+v", r)
				}
				return nil, err
			}},
		{name: "enqueue many", setup: [][]string{enq(tID)},
			argv: &EnqueueManyArgs{Queue: "q", JobOptions: JobOptions{Priority: -2}, Jobs: []NewJob{{ID: tID, Payload: []byte("a")}, {ID: "*", Payload: []byte("b")}, {ID: tID2, Payload: []byte("c")}, {ID: tID2, Payload: []byte("d")}}},
			want: "EMQ.ENQUEUE.MANY q PRIORITY -2 JOBS " + tID + " a * b " + tID2 + " c " + tID2 + " d",
			call: func(vs *Verbs, c *store.Ctx) (any, error) {
				r, err := vs.EnqueueMany(c, &EnqueueManyArgs{Queue: "q", JobOptions: JobOptions{Priority: -2}, Jobs: []NewJob{{ID: tID, Payload: []byte("a")}, {ID: "*", Payload: []byte("b")}, {ID: tID2, Payload: []byte("c")}, {ID: tID2, Payload: []byte("d")}}})
				out := []any{}
				for _, id := range r.IDs {
					if id == "" {
						out = append(out, nil)
					} else {
						out = append(out, id)
					}
				}
				if len(r.IDs) != 4 || r.IDs[0] != "" || r.IDs[2] != tID2 || r.IDs[3] != "" {
					t.Fatalf("many: %q", r.IDs)
				}
				return out, err
			}},
		{name: "claim", setup: [][]string{enq(tID), enq(tID2)}, argv: &ClaimArgs{Queue: "q", LeaseMs: 500, Count: 2}, want: "EMQ.CLAIM q 500 COUNT 2",
			call: func(vs *Verbs, c *store.Ctx) (any, error) {
				r, err := vs.Claim(c, &ClaimArgs{Queue: "q", LeaseMs: 500, Count: 2})
				if len(r.Jobs) != 2 || r.Jobs[0].ID != tID || string(r.Jobs[1].Payload) != "p-"+tID2 {
					t.Fatalf("claim: %+v", r)
				}
				return claimReply(r), err
			}},
		{name: "claim empty", argv: &ClaimArgs{Queue: "q", LeaseMs: 500}, want: "EMQ.CLAIM q 500",
			call: func(vs *Verbs, c *store.Ctx) (any, error) {
				r, err := vs.Claim(c, &ClaimArgs{Queue: "q", LeaseMs: 500})
				return claimReply(r), err
			}},
		{name: "complete", setup: [][]string{enq(tID), claim2}, argv: &CompleteArgs{Lease: lease}, want: "EMQ.COMPLETE q " + tID + " 1",
			call: func(vs *Verbs, c *store.Ctx) (any, error) {
				_, err := vs.Complete(c, &CompleteArgs{Lease: lease})
				return int64(1), err
			}},
		{name: "complete result next", setup: [][]string{{"EMQ.RETAIN", "q", "COMPLETED", "10", "100000"}, enq(tID), enq(tID2), {"EMQ.CLAIM", "q", "1000"}},
			argv: &CompleteArgs{Lease: lease, Result: []byte("r"), HasResult: true, Next: ClaimArgs{Queue: "q", LeaseMs: 700}},
			want: "EMQ.COMPLETE q " + tID + " 1 RESULT r NEXT 700",
			call: func(vs *Verbs, c *store.Ctx) (any, error) {
				r, err := vs.Complete(c, &CompleteArgs{Lease: lease, Result: []byte("r"), HasResult: true, Next: ClaimArgs{Queue: "q", LeaseMs: 700}})
				if len(r.Next.Jobs) != 1 || r.Next.Jobs[0].ID != tID2 {
					t.Fatalf("next: %+v", r)
				}
				return claimReply(r.Next), err
			}},
		{name: "fail scheduled", setup: [][]string{enq(tID), claim2}, argv: &FailArgs{Lease: lease, MaxAttempts: 3, DelayMs: 10, Error: []byte("boom")},
			want: "EMQ.FAIL q " + tID + " 1 3 10 boom",
			call: func(vs *Verbs, c *store.Ctx) (any, error) {
				r, err := vs.Fail(c, &FailArgs{Lease: lease, MaxAttempts: 3, DelayMs: 10, Error: []byte("boom")})
				return []any{map[bool]string{true: "dead", false: "scheduled"}[r.Dead], r.Failures}, err
			}},
		{name: "fail dead next", setup: [][]string{enq(tID), enq(tID2), {"EMQ.CLAIM", "q", "1000"}},
			argv: &FailArgs{Lease: lease, MaxAttempts: 1, Error: []byte("e"), Next: ClaimArgs{Queue: "q", LeaseMs: 900, Count: 3}},
			want: "EMQ.FAIL q " + tID + " 1 1 0 e NEXT 900 COUNT 3",
			call: func(vs *Verbs, c *store.Ctx) (any, error) {
				r, err := vs.Fail(c, &FailArgs{Lease: lease, MaxAttempts: 1, Error: []byte("e"), Next: ClaimArgs{Queue: "q", LeaseMs: 900, Count: 3}})
				if !r.Dead || r.Failures != 1 {
					t.Fatalf("fail: %+v", r)
				}
				return []any{"dead", r.Failures, claimReply(r.Next)}, err
			}},
		{name: "requeue", setup: [][]string{enq(tID), claim2}, argv: &requeueArgs{lease}, want: "EMQ.REQUEUE q " + tID + " 1",
			call: func(vs *Verbs, c *store.Ctx) (any, error) { return int64(1), vs.Requeue(c, &lease) }},
		{name: "extend", setup: [][]string{enq(tID), claim2}, argv: &ExtendArgs{Lease: lease, LeaseMs: 5000}, want: "EMQ.EXTEND q " + tID + " 1 5000",
			call: func(vs *Verbs, c *store.Ctx) (any, error) {
				return int64(1), vs.Extend(c, &ExtendArgs{Lease: lease, LeaseMs: 5000})
			}},
		{name: "delay in", setup: [][]string{enq(tID), claim2}, argv: &DelayArgs{Lease: lease, Ms: 40}, want: "EMQ.DELAY q " + tID + " 1 IN 40",
			call: func(vs *Verbs, c *store.Ctx) (any, error) {
				return int64(1), vs.Delay(c, &DelayArgs{Lease: lease, Ms: 40})
			}},
		{name: "delay at", setup: [][]string{enq(tID), claim2}, argv: &DelayArgs{Lease: lease, At: true, Ms: tNow + 40}, want: "EMQ.DELAY q " + tID + " 1 AT " + itoa(tNow+40),
			call: func(vs *Verbs, c *store.Ctx) (any, error) {
				return int64(1), vs.Delay(c, &DelayArgs{Lease: lease, At: true, Ms: tNow + 40})
			}},
		{name: "progress", setup: [][]string{enq(tID), claim2}, argv: &ProgressArgs{Lease: lease, Value: []byte("50%")}, want: "EMQ.PROGRESS q " + tID + " 1 50%",
			call: func(vs *Verbs, c *store.Ctx) (any, error) {
				return int64(1), vs.Progress(c, &ProgressArgs{Lease: lease, Value: []byte("50%")})
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runTypedCase(t, tc, nil, 0, false) })
	}
}

// TestTypedJobCoreRefusals: each token verb's refusal is a *Refusal with
// the wire's text and writes nothing; a wrong token, a gone job, a lost
// lease, stored data of the wrong type.
func TestTypedJobCoreRefusals(t *testing.T) {
	h := newTH(t)
	h.ok("EMQ.ENQUEUE", "q", tID, "a")
	h.ok("EMQ.CLAIM", "q", "1000")
	bad := Lease{Queue: "q", ID: tID, Token: []byte("2")}
	gone := Lease{Queue: "q", ID: tID2, Token: []byte("1")}
	calls := []struct {
		text string
		f    func() error
		wire []string
	}{
		{errStale("complete"), func() error { _, err := h.v.Complete(h.ctx(nil), &CompleteArgs{Lease: bad}); return err }, []string{"EMQ.COMPLETE", "q", tID, "2"}},
		{errStale("fail"), func() error {
			_, err := h.v.Fail(h.ctx(nil), &FailArgs{Lease: bad, MaxAttempts: 1, Error: []byte("e")})
			return err
		}, []string{"EMQ.FAIL", "q", tID, "2", "1", "0", "e"}},
		{errStale("requeue"), func() error { return h.v.Requeue(h.ctx(nil), &bad) }, []string{"EMQ.REQUEUE", "q", tID, "2"}},
		{errStale("extend"), func() error { return h.v.Extend(h.ctx(nil), &ExtendArgs{Lease: bad, LeaseMs: 1}) }, []string{"EMQ.EXTEND", "q", tID, "2", "1"}},
		{errStale("delay"), func() error { return h.v.Delay(h.ctx(nil), &DelayArgs{Lease: bad, Ms: 1}) }, []string{"EMQ.DELAY", "q", tID, "2", "IN", "1"}},
		{errStale("progress"), func() error { return h.v.Progress(h.ctx(nil), &ProgressArgs{Lease: bad, Value: []byte("v")}) }, []string{"EMQ.PROGRESS", "q", tID, "2", "v"}},
		{ErrGone, func() error { _, err := h.v.Complete(h.ctx(nil), &CompleteArgs{Lease: gone}); return err }, []string{"EMQ.COMPLETE", "q", tID2, "1"}},
	}
	for _, c := range calls {
		untouched(t, h, c.text, c.f)
		if got := h.do(c.wire...); got != replyErr(c.text) {
			t.Fatalf("wire %v: %v, want %q", c.wire, got, c.text)
		}
	}
	// NEXT's claim refusing refuses the completion too.
	h.setString(tk.Pending, "x")
	untouched(t, h, store.ErrWrongType, func() error {
		_, err := h.v.Complete(h.ctx(nil), &CompleteArgs{Lease: Lease{Queue: "q", ID: tID, Token: []byte("1")}, Next: ClaimArgs{Queue: "q", LeaseMs: 10}})
		return err
	})
	untouched(t, h, store.ErrWrongType, func() error {
		_, err := h.v.Enqueue(h.ctx(nil), &EnqueueArgs{Queue: "q", ID: tID2, Payload: []byte("p")})
		return err
	})
	untouched(t, h, store.ErrWrongType, func() error {
		_, err := h.v.Claim(h.ctx(nil), &ClaimArgs{Queue: "q", LeaseMs: 10})
		return err
	})
	if h.field("q", tID, "state") != "active" {
		t.Fatalf("state %q after the refusals", h.field("q", tID, "state"))
	}
}

// argvFunc gives a literal command line an Argv method (the verbs whose
// typed arguments are a bare queue or JobRef).
type argvFunc func() [][]byte

func (f argvFunc) Argv() [][]byte { return f() }

func TestTypedAdmin(t *testing.T) {
	enq := func(id string, more ...string) []string {
		return append([]string{"EMQ.ENQUEUE", "q", id, "p-" + id}, more...)
	}
	line := func(args ...string) argvFunc {
		return func() [][]byte { return argvOf(args[0], args[1:]...) }
	}
	ref := JobRef{Queue: "q", ID: tID}
	deadBoth := [][]string{enq(tID), enq(tID2), {"EMQ.CLAIM", "q", "1000", "COUNT", "2"},
		{"EMQ.FAIL", "q", tID, "1", "1", "0", "e1"}, {"EMQ.FAIL", "q", tID2, "1", "1", "0", "e2"}}
	bulk := func(r BulkResult, err error) (any, error) { return []any{int64(len(r.Done)), int64(r.Left)}, err }
	cases := []typedCase{
		{name: "pause", argv: line("EMQ.PAUSE", "q"), want: "EMQ.PAUSE q",
			call: func(vs *Verbs, c *store.Ctx) (any, error) { return "OK", vs.Pause(c, "q") }},
		{name: "resume", setup: [][]string{{"EMQ.PAUSE", "q"}}, argv: line("EMQ.RESUME", "q"), want: "EMQ.RESUME q",
			call: func(vs *Verbs, c *store.Ctx) (any, error) { return "OK", vs.Resume(c, "q") }},
		{name: "remove", setup: [][]string{enq(tID)}, argv: line("EMQ.REMOVE", "q", tID), want: "EMQ.REMOVE q " + tID,
			call: func(vs *Verbs, c *store.Ctx) (any, error) {
				ok, err := vs.Remove(c, &ref)
				if !ok {
					t.Fatal("nothing removed")
				}
				return int64(1), err
			}},
		{name: "remove absent", argv: line("EMQ.REMOVE", "q", tID), want: "EMQ.REMOVE q " + tID,
			call: func(vs *Verbs, c *store.Ctx) (any, error) {
				ok, err := vs.Remove(c, &ref)
				if ok {
					t.Fatal("removed an absent job")
				}
				return int64(0), err
			}},
		{name: "reprocess reset", setup: deadBoth, argv: &ReprocessArgs{JobRef: ref, Reset: true}, want: "EMQ.REPROCESS q " + tID + " RESET",
			call: func(vs *Verbs, c *store.Ctx) (any, error) {
				return int64(1), vs.Reprocess(c, &ReprocessArgs{JobRef: ref, Reset: true})
			}},
		{name: "reprocess all", setup: deadBoth, argv: &ReprocessAllArgs{Queue: "q", Limit: 1}, want: "EMQ.REPROCESS.ALL q LIMIT 1",
			call: func(vs *Verbs, c *store.Ctx) (any, error) {
				r, err := vs.ReprocessAll(c, &ReprocessAllArgs{Queue: "q", Limit: 1})
				if len(r.Done) != 1 || r.Left != 1 {
					t.Fatalf("reprocess all: %+v", r)
				}
				return bulk(r, err)
			}},
		{name: "remove all", setup: deadBoth, argv: &RemoveAllArgs{Queue: "q", State: "DEAD"}, want: "EMQ.REMOVE.ALL q DEAD",
			call: func(vs *Verbs, c *store.Ctx) (any, error) {
				return bulk(vs.RemoveAll(c, &RemoveAllArgs{Queue: "q", State: "DEAD"}))
			}},
		{name: "remove all lane", setup: [][]string{enq(tID, "LANE", "a"), enq(tID2, "LANE", "b")},
			argv: &RemoveAllArgs{Queue: "q", State: "pending", Limit: 5, Lane: "b"}, want: "EMQ.REMOVE.ALL q pending LIMIT 5 LANE b",
			call: func(vs *Verbs, c *store.Ctx) (any, error) {
				r, err := vs.RemoveAll(c, &RemoveAllArgs{Queue: "q", State: "pending", Limit: 5, Lane: "b"})
				if !reflect.DeepEqual(r.Done, []string{tID2}) || r.Left != 0 {
					t.Fatalf("remove all LANE b: %+v", r)
				}
				return bulk(r, err)
			}},
		{name: "drain lanes", setup: [][]string{enq(tID, "LANE", "a"), enq(tID2)},
			argv: &RemoveAllArgs{Queue: "q", State: "pending", Limit: 1}, want: "EMQ.REMOVE.ALL q pending LIMIT 1",
			call: func(vs *Verbs, c *store.Ctx) (any, error) {
				r, err := vs.RemoveAll(c, &RemoveAllArgs{Queue: "q", State: "pending", Limit: 1})
				if !reflect.DeepEqual(r.Done, []string{tID2}) || r.Left != 1 {
					t.Fatalf("drain across lanes: %+v", r)
				}
				return bulk(r, err)
			}},
		{name: "promote all", setup: [][]string{enq(tID, "DELAY", "9000"), enq(tID2, "DELAY", "1")}, argv: &PromoteAllArgs{Queue: "q"}, want: "EMQ.PROMOTE.ALL q",
			call: func(vs *Verbs, c *store.Ctx) (any, error) {
				r, err := vs.PromoteAll(c, &PromoteAllArgs{Queue: "q"})
				if !reflect.DeepEqual(r.Done, []string{tID2, tID}) {
					t.Fatalf("promote all: %+v", r)
				}
				return bulk(r, err)
			}},
		{name: "schedule pause", setup: [][]string{{"EMQ.SCHEDULE", "q", "tick", "EVERY", "1000", "p"}}, argv: line("EMQ.SCHEDULE.PAUSE", "q", "tick"), want: "EMQ.SCHEDULE.PAUSE q tick",
			call: func(vs *Verbs, c *store.Ctx) (any, error) {
				return "OK", vs.SchedulePause(c, &ScheduleRef{Queue: "q", Name: "tick"})
			}},
		{name: "schedule resume", setup: [][]string{{"EMQ.SCHEDULE", "q", "tick", "EVERY", "1000", "p"}, {"EMQ.SCHEDULE.PAUSE", "q", "tick"}},
			argv: line("EMQ.SCHEDULE.RESUME", "q", "tick"), want: "EMQ.SCHEDULE.RESUME q tick",
			call: func(vs *Verbs, c *store.Ctx) (any, error) {
				return "OK", vs.ScheduleResume(c, &ScheduleRef{Queue: "q", Name: "tick"})
			}},
		{name: "schedule del", setup: [][]string{{"EMQ.SCHEDULE", "q", "tick", "EVERY", "1000", "p"}}, argv: line("EMQ.SCHEDULE.DEL", "q", "tick"), want: "EMQ.SCHEDULE.DEL q tick",
			call: func(vs *Verbs, c *store.Ctx) (any, error) {
				ok, err := vs.ScheduleDel(c, &ScheduleRef{Queue: "q", Name: "tick"})
				if !ok {
					t.Fatal("nothing deleted")
				}
				return int64(1), err
			}},
		{name: "retain", argv: &RetainArgs{Queue: "q", Dead: true, MaxCount: 5, MaxAgeMs: 60000}, want: "EMQ.RETAIN q DEAD 5 60000",
			call: func(vs *Verbs, c *store.Ctx) (any, error) {
				return "OK", vs.Retain(c, &RetainArgs{Queue: "q", Dead: true, MaxCount: 5, MaxAgeMs: 60000})
			}},
		{name: "retention", setup: [][]string{{"EMQ.RETAIN", "q", "COMPLETED", "7", "0"}}, argv: line("EMQ.RETAIN", "q"), want: "EMQ.RETAIN q",
			call: func(vs *Verbs, c *store.Ctx) (any, error) {
				r, err := vs.Retention(c, "q")
				if r != (RetainSettings{CompletedMaxCount: 7}) {
					t.Fatalf("retention %+v", r)
				}
				return []any{"completed_max_count", r.CompletedMaxCount, "completed_max_age_ms", r.CompletedMaxAgeMs,
					"dead_max_count", r.DeadMaxCount, "dead_max_age_ms", r.DeadMaxAgeMs}, err
			}},
		{name: "promote job", setup: [][]string{enq(tID, "DELAY", "9000")}, argv: line("EMQ.PROMOTE.JOB", "q", tID), want: "EMQ.PROMOTE.JOB q " + tID,
			call: func(vs *Verbs, c *store.Ctx) (any, error) { return int64(1), vs.PromoteJob(c, &ref) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runTypedCase(t, tc, nil, 0, false) })
	}
	// Refusals: the wire's texts, nothing written.
	h := newTH(t)
	h.ok("EMQ.ENQUEUE", "q", tID, "a")
	h.ok("EMQ.CLAIM", "q", "1000")
	untouched(t, h, ErrActive, func() error { _, err := h.v.Remove(h.ctx(nil), &ref); return err })
	untouched(t, h, ErrNotDead, func() error { return h.v.Reprocess(h.ctx(nil), &ReprocessArgs{JobRef: ref}) })
	untouched(t, h, ErrNotScheduled, func() error { return h.v.PromoteJob(h.ctx(nil), &ref) })
	untouched(t, h, ErrNoSchedule, func() error { return h.v.SchedulePause(h.ctx(nil), &ScheduleRef{Queue: "q", Name: "none"}) })
	untouched(t, h, ErrRemoveState, func() error {
		_, err := h.v.RemoveAll(h.ctx(nil), &RemoveAllArgs{Queue: "q", State: "active"})
		return err
	})
	h.setString(tk.Meta, "x")
	untouched(t, h, store.ErrWrongType, func() error { return h.v.Pause(h.ctx(nil), "q") })
	untouched(t, h, store.ErrWrongType, func() error { return h.v.Retain(h.ctx(nil), &RetainArgs{Queue: "q", MaxCount: 1}) })
	untouched(t, h, store.ErrWrongType, func() error { _, err := h.v.Retention(h.ctx(nil), "q"); return err })
	untouched(t, h, store.ErrWrongType, func() error { return h.v.Resume(h.ctx(nil), "q") })
	h.setString(tk.Sched, "x")
	untouched(t, h, store.ErrWrongType, func() error {
		_, err := h.v.ScheduleDel(h.ctx(nil), &ScheduleRef{Queue: "q", Name: "tick"})
		return err
	})
	h.setString(tk.Dead, "x")
	untouched(t, h, store.ErrWrongType, func() error {
		_, err := h.v.ReprocessAll(h.ctx(nil), &ReprocessAllArgs{Queue: "q"})
		return err
	})
	h.setString(tk.Schedule, "x")
	untouched(t, h, store.ErrWrongType, func() error {
		_, err := h.v.PromoteAll(h.ctx(nil), &PromoteAllArgs{Queue: "q"})
		return err
	})
}
