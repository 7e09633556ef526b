package verbs

import (
	"reflect"
	"testing"

	"github.com/emqd/emqd/internal/store"
)

// claimIDs claims one job at a time until none is left and returns the ids
// in claim order.
func claimIDs(h *th, q string, lease string) []string {
	h.t.Helper()
	var out []string
	for {
		r := h.ok("EMQ.CLAIM", q, lease).([]any)
		if len(r) == 0 {
			return out
		}
		out = append(out, r[0].([]any)[0].(string))
	}
}

// TestPriorityOrder: pending is served by priority (lower first), then by
// id (docs/verbs.md §4.3.1); a job without PRIORITY is priority 0.
func TestPriorityOrder(t *testing.T) {
	h := newTH(t)
	h.ok("EMQ.ENQUEUE", "q", "JOB00000000005", "a")
	h.ok("EMQ.ENQUEUE", "q", "JOB00000000004", "b", "PRIORITY", "10")
	h.ok("EMQ.ENQUEUE", "q", "JOB00000000003", "c", "PRIORITY", "-3")
	h.ok("EMQ.ENQUEUE", "q", "JOB00000000002", "d", "PRIORITY", "10")
	h.ok("EMQ.ENQUEUE", "q", "JOB00000000001", "e")
	h.ok("EMQ.ENQUEUE", "q", "JOB00000000009", "f", "PRIORITY", "-9007199254740991")
	h.ok("EMQ.ENQUEUE.MANY", "q", "PRIORITY", "5", "JOBS", "JOB00000000007", "g", "JOB00000000006", "h")
	if got := h.field("q", "JOB00000000004", "priority"); got != "10" {
		t.Fatalf("priority field %q", got)
	}
	if h.field("q", "JOB00000000001", "priority") != "<absent>" || h.field("q", "JOB00000000006", "priority") != "5" {
		t.Fatalf("priority fields: %s / %s", h.row("q", "JOB00000000001"), h.row("q", "JOB00000000006"))
	}
	got := claimIDs(h, "q", "1000")
	want := []string{"JOB00000000009", "JOB00000000003", "JOB00000000001", "JOB00000000005",
		"JOB00000000006", "JOB00000000007", "JOB00000000002", "JOB00000000004"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("claim order %v, want %v", got, want)
	}
}

// TestPriorityZeroWritesNothing: PRIORITY 0 is the default and writes no
// field, so its row and records are those of a job without the option.
func TestPriorityZeroWritesNothing(t *testing.T) {
	a, b := newTH(t), newTH(t)
	fa, fb := &byteFeed{}, &byteFeed{}
	a.s.SetFeed(fa)
	b.s.SetFeed(fb)
	a.ok("EMQ.ENQUEUE", "q", "JOB00000000001", "x")
	b.ok("EMQ.ENQUEUE", "q", "JOB00000000001", "x", "PRIORITY", "0")
	if fa.buf.String() != fb.buf.String() || fa.buf.Len() == 0 {
		t.Fatalf("PRIORITY 0 wrote %q, no option %q", fb.buf.String(), fa.buf.String())
	}
}

// TestPriorityArgs: a bad PRIORITY is refused before any key is read and
// writes nothing.
func TestPriorityArgs(t *testing.T) {
	h := newTH(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"EMQ.ENQUEUE", "q", "*", "p", "PRIORITY", "x"}, store.ErrNotInteger},
		{[]string{"EMQ.ENQUEUE", "q", "*", "p", "PRIORITY", "9007199254740992"}, ErrPriorityRange},
		{[]string{"EMQ.ENQUEUE", "q", "*", "p", "PRIORITY", "-9007199254740992"}, ErrPriorityRange},
		{[]string{"EMQ.ENQUEUE", "q", "*", "p", "PRIORITY", "1", "PRIORITY", "2"}, store.ErrSyntax},
		{[]string{"EMQ.ENQUEUE", "q", "*", "p", "PRIORITY"}, store.ErrSyntax},
		{[]string{"EMQ.ENQUEUE.MANY", "q", "PRIORITY", "1.5", "JOBS", "*", "p"}, store.ErrNotInteger},
		{[]string{"EMQ.ENQUEUE.MANY", "q", "PRIORITY", "1", "PRIORITY", "1", "JOBS", "*", "p"}, store.ErrSyntax},
	} {
		if got := h.do(c.args...); got != replyErr(c.want) {
			t.Errorf("%v: %v, want %s", c.args, got, c.want)
		}
	}
	if h.feed.n != 0 || h.s.DB(0).Len() != 0 {
		t.Fatalf("a refusal wrote: %d records, %d keys", h.feed.n, h.s.DB(0).Len())
	}
	// With DELAY, in either order.
	h.ok("EMQ.ENQUEUE", "q", "JOB00000000001", "p", "PRIORITY", "3", "DELAY", "5")
	h.ok("EMQ.ENQUEUE", "q", "JOB00000000002", "p", "AT", "1", "PRIORITY", "-3")
	if h.field("q", "JOB00000000001", "state") != "scheduled" || h.field("q", "JOB00000000002", "priority") != "-3" {
		t.Fatal(h.row("q", "JOB00000000001"), h.row("q", "JOB00000000002"))
	}
}

// pendingScore is id's score in q's pending set ("" when not a member).
func pendingScore(h *th, q, id string) any {
	h.t.Helper()
	z := h.s.DB(h.db).Get("emq:{" + q + "}:pending")
	if z == nil || z.ZSet == nil {
		return nil
	}
	s, ok := z.ZSet.Score(id)
	if !ok {
		return nil
	}
	return s
}

// TestPriorityKeptOnReturn: every way back to pending (REQUEUE, the sweep's
// counted recovery and the restart exemption, FAIL's retry through the
// claim's promotion and through EMQ.PROMOTE, DELAY, REPROCESS) restores the
// job's priority (seam 1, docs/verbs.md §1.3).
func TestPriorityKeptOnReturn(t *testing.T) {
	h := newTH(t)
	h.ok("EMQ.ENQUEUE", "q", "JOB00000000009", "urgent", "PRIORITY", "-5")
	h.ok("EMQ.ENQUEUE", "q", "JOB00000000001", "plain")
	h.ok("EMQ.ENQUEUE", "q", "JOB00000000005", "late", "PRIORITY", "7")
	const u = "JOB00000000009"
	claim := func() (string, string) {
		r := h.ok("EMQ.CLAIM", "q", "100").([]any)[0].([]any)
		return r[0].(string), r[2].(string)
	}
	var cur string
	check := func(step string) {
		t.Helper()
		if s := pendingScore(h, "q", u); s != float64(-5) && h.field("q", u, "state") == "pending" {
			t.Fatalf("%s: pending score %v", step, s)
		}
		if id, tok := claim(); id != u {
			t.Fatalf("%s: claimed %s first", step, id)
		} else {
			cur = tok
		}
	}
	id, tok := claim()
	if id != u {
		t.Fatalf("first claim %s", id)
	}
	h.ok("EMQ.REQUEUE", "q", u, tok)
	check("requeue")
	h.clk.Advance(200)
	h.ok("EMQ.STALLED.CHECK", "q", "5")
	check("recovery")
	h.run = "another-run-00000000000000000000000000000"
	h.clk.Advance(200)
	h.ok("EMQ.STALLED.CHECK", "q", "5")
	check("restart exemption")
	h.ok("EMQ.FAIL", "q", u, cur, "10", "0", "e")
	check("fail retry, claim's promotion")
	h.ok("EMQ.FAIL", "q", u, cur, "10", "0", "e")
	if n := h.ok("EMQ.PROMOTE", "q"); n != int64(1) {
		t.Fatalf("promote %v", n)
	}
	check("promote")
	h.ok("EMQ.DELAY", "q", u, cur, "IN", "0")
	check("delay")
	h.ok("EMQ.FAIL", "q", u, cur, "1", "0", "e")
	h.ok("EMQ.REPROCESS", "q", u)
	check("reprocess")
	h.ok("EMQ.FAIL", "q", u, cur, "1", "0", "e")
	h.ok("EMQ.REPROCESS", "q", u, "RESET")
	check("reprocess reset")
}

// TestPriorityPromotionMerge: jobs the claim promotes take their place by
// (priority, id) among pending ones in the same call.
func TestPriorityPromotionMerge(t *testing.T) {
	h := newTH(t)
	h.ok("EMQ.ENQUEUE", "q", "JOB00000000001", "p0")
	h.ok("EMQ.ENQUEUE", "q", "JOB00000000002", "p2", "PRIORITY", "2")
	h.ok("EMQ.ENQUEUE", "q", "JOB00000000008", "d1", "PRIORITY", "1", "DELAY", "10")
	h.ok("EMQ.ENQUEUE", "q", "JOB00000000009", "dm", "PRIORITY", "-1", "DELAY", "10")
	h.ok("EMQ.ENQUEUE", "q", "JOB00000000007", "d3", "PRIORITY", "3", "DELAY", "10")
	h.clk.Advance(10)
	r := h.ok("EMQ.CLAIM", "q", "100", "COUNT", "5").([]any)
	var got []string
	for _, j := range r {
		got = append(got, j.([]any)[0].(string))
	}
	want := []string{"JOB00000000009", "JOB00000000001", "JOB00000000008", "JOB00000000002", "JOB00000000007"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("claim %v, want %v", got, want)
	}
	// COUNT 1 after a promotion of three: the best of all is taken.
	h2 := newTH(t)
	h2.ok("EMQ.ENQUEUE", "q", "JOB00000000001", "p0")
	h2.ok("EMQ.ENQUEUE", "q", "JOB00000000009", "dm", "PRIORITY", "-1", "DELAY", "10")
	h2.clk.Advance(10)
	if id := h2.ok("EMQ.CLAIM", "q", "100").([]any)[0].([]any)[0]; id != "JOB00000000009" {
		t.Fatalf("COUNT 1 took %v", id)
	}
}

// TestPriorityBadRowRefused: a priority field written by hand that is not
// an integer within ±2^53-1 refuses every verb that would put the job into
// pending, writing nothing (docs/verbs.md §2.11).
func TestPriorityBadRowRefused(t *testing.T) {
	h := newTH(t)
	h.ok("EMQ.ENQUEUE", "q", "JOB00000000001", "p")
	tok := h.ok("EMQ.CLAIM", "q", "100").([]any)[0].([]any)[2].(string)
	h.hset("emq:{q}:job:JOB00000000001", "priority", "soon")
	before := digest(h.s)
	n := h.feed.n
	if got := h.do("EMQ.REQUEUE", "q", "JOB00000000001", tok); got != replyErr(store.ErrHashNotInt) {
		t.Fatalf("requeue %v", got)
	}
	h.clk.Advance(500)
	if got := h.do("EMQ.STALLED.CHECK", "q", "5"); got != replyErr(store.ErrHashNotInt) {
		t.Fatalf("sweep %v", got)
	}
	if digest(h.s) != before || h.feed.n != n {
		t.Fatal("a refusal wrote")
	}
}
