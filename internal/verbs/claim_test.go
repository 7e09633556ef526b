package verbs

import (
	"reflect"
	"strings"
	"testing"

	"github.com/emqd/emqd/internal/resp"
	"github.com/emqd/emqd/internal/store"
)

func pendingRow(attempts, failures string) jobRow {
	r := jobRow{Kind: keyOK, State: fieldOf("pending"), Payload: fieldOf("pay")}
	if attempts != "" {
		r.Attempts = fieldOf(attempts)
	}
	if failures != "" {
		r.Failures = fieldOf(failures)
	}
	return r
}

func TestClaim(t *testing.T) {
	a := &claimArgs{K: tk, LeaseMs: 1000, Count: 2}
	base := func() *claimRead {
		return &claimRead{Meta: keyAbsent, Schedule: keyOK, Pending: keyOK, Active: keyOK}
	}
	// A ghost is dropped and does not use up count.
	r := base()
	r.Cands = []dueJob{{ID: tID, Row: jobRow{Kind: keyAbsent}}, {ID: tID2, Row: pendingRow("0", "")}, {ID: tID3, Row: pendingRow("4", "2")}}
	v, p, ref := judgeClaim(r, tNow, []byte(tRun), a)
	if ref.Refused() || len(v.Jobs) != 2 {
		t.Fatal(v, ref)
	}
	if j := v.Jobs[0]; j.ID != tID2 || string(j.Token) != "1" || j.Failures != 0 || string(j.Payload) != "pay" {
		t.Fatalf("%+v", j)
	}
	if j := v.Jobs[1]; j.ID != tID3 || string(j.Token) != "5" || j.Failures != 2 {
		t.Fatalf("%+v", j)
	}
	eqLines(t, render(p), []string{
		"ZREM emq:{q}:pending " + tID,
		"ZREM emq:{q}:pending " + tID2, "HINCRBY " + tRowQ + tID2 + " attempts 1",
		"HSET " + tRowQ + tID2 + " state active lease_epoch " + tRun + " claimed_at 1700000000000", "ZADD emq:{q}:active 1700000001000 " + tID2,
		"ZREM emq:{q}:pending " + tID3, "HINCRBY " + tRowQ + tID3 + " attempts 1",
		"HSET " + tRowQ + tID3 + " state active lease_epoch " + tRun + " claimed_at 1700000000000", "ZADD emq:{q}:active 1700000001000 " + tID3,
	})
	// Refusals of the whole call: lane, wrong type, attempts and failures.
	for _, c := range []struct {
		row  jobRow
		want string
	}{
		{jobRow{Kind: keyWrong}, store.ErrWrongType},
		{func() jobRow { x := pendingRow("0", ""); x.Lane = true; return x }(), ErrLane},
		{pendingRow("x", ""), store.ErrHashNotInt},
		{pendingRow("9223372036854775807", ""), store.ErrOverflow},
		{pendingRow("1", "1e3"), store.ErrHashNotInt},
	} {
		r := base()
		r.Cands = []dueJob{{ID: tID, Row: jobRow{Kind: keyAbsent}}, {ID: tID2, Row: pendingRow("0", "")}, {ID: tID3, Row: c.row}}
		if _, p, ref := judgeClaim(r, tNow, []byte(tRun), a); ref.Text != c.want || p != nil || ref.Key != tk.Row(tID3) {
			t.Errorf("%+v: got %+v", c.row, ref)
		}
	}
	// Paused: nothing, not even a look at the other keys.
	r = base()
	r.Paused, r.Meta, r.Pending = true, keyOK, keyWrong
	if v, p, ref := judgeClaim(r, tNow, []byte(tRun), a); ref.Refused() || p != nil || len(v.Jobs) != 0 {
		t.Fatal("paused queue handed out")
	}
	r = base()
	r.Meta = keyWrong
	if _, _, ref := judgeClaim(r, tNow, []byte(tRun), a); ref.Key != tk.Meta {
		t.Fatal(ref)
	}
	// Empty: an empty verdict and no plan.
	if v, p, ref := judgeClaim(base(), tNow, []byte(tRun), a); ref.Refused() || p != nil || len(v.Jobs) != 0 {
		t.Fatal("empty claim")
	}
}

// TestClaimPromotesFirst: due scheduled jobs join pending at score 0, in id
// order among the pending ones; promoted jobs not taken wake others.
func TestClaimPromotesFirst(t *testing.T) {
	a := &claimArgs{K: tk, LeaseMs: 10, Count: 2}
	r := &claimRead{Meta: keyAbsent, Schedule: keyOK, Pending: keyOK, Active: keyOK,
		Due:   []dueJob{{ID: tID3, Score: 5, Row: pendingRow("1", "1")}, {ID: tID, Score: 7, Row: pendingRow("0", "")}},
		Cands: []dueJob{{ID: tID2, Row: pendingRow("0", "")}}}
	v, p, ref := judgeClaim(r, tNow, []byte(tRun), a)
	if ref.Refused() || len(v.Jobs) != 2 || v.Jobs[0].ID != tID || v.Jobs[1].ID != tID2 {
		t.Fatalf("%+v %+v", v, ref)
	}
	if len(v.Woken) != 1 || v.Woken[0] != tID3 {
		t.Fatalf("woken %v", v.Woken)
	}
	got := render(p)
	eqLines(t, got[:6], []string{
		"ZREM emq:{q}:schedule " + tID3, "HSET " + tRowQ + tID3 + " state pending", "ZADD emq:{q}:pending 0 " + tID3,
		"ZREM emq:{q}:schedule " + tID, "HSET " + tRowQ + tID + " state pending", "ZADD emq:{q}:pending 0 " + tID,
	})
	if len(got) != 6+8 {
		t.Fatalf("plan %q", got)
	}
	// A lane row among the due refuses the claim.
	r.Due[1].Row.Lane = true
	if _, p, ref := judgeClaim(r, tNow, []byte(tRun), a); ref.Text != ErrLane || p != nil {
		t.Fatal(ref)
	}
}

// TestClaimBlockSpec covers what EMQ.CLAIM BLOCK hands the server.
func TestClaimBlockSpec(t *testing.T) {
	h := newTH(t)
	if out := h.raw("EMQ.CLAIM", "q", "1000", "BLOCK", "250"); out != "" || h.block == nil {
		t.Fatalf("BLOCK on an empty queue replied %q", out)
	}
	b := h.block
	if b.DB != 0 || b.Queue != "q" || b.TimeoutMs != 250 {
		t.Fatalf("spec %+v", b)
	}
	if _, ok := b.Due(h.ctx(nil)); ok {
		t.Fatal("due with no schedule")
	}
	c := h.ctx(nil)
	if b.Retry(c) || c.W.Len() != 0 {
		t.Fatal("retry served an empty queue")
	}
	h.ok("EMQ.ENQUEUE", "q", tID2, "later", "AT", "1700000005000")
	if at, ok := b.Due(h.ctx(nil)); !ok || at != 1700000005000 {
		t.Fatalf("due %d %v", at, ok)
	}
	h.ok("EMQ.PAUSE", "q")
	if _, ok := b.Due(h.ctx(nil)); ok {
		t.Fatal("due while paused")
	}
	h.ready = nil
	h.ok("EMQ.ENQUEUE", "q", tID, "now")
	if len(h.ready) != 1 || h.ready[0] != "0:q" {
		t.Fatalf("enqueue woke %v", h.ready)
	}
	c = h.ctx(nil)
	if b.Retry(c) {
		t.Fatal("retry served a paused queue")
	}
	h.ok("EMQ.RESUME", "q")
	if len(h.ready) != 2 {
		t.Fatalf("resume woke %v", h.ready)
	}
	c = h.ctx(nil)
	if !b.Retry(c) {
		t.Fatal("retry did not serve")
	}
	got := parseReply(t, string(c.W.Buf))
	if !reflect.DeepEqual(got, []any{[]any{tID, "now", "1", int64(0)}}) {
		t.Fatalf("retry reply %v", got)
	}
	// The delayed job comes due: Retry promotes and serves it.
	h.clk.Set(1700000005000)
	c = h.ctx(nil)
	if !b.Retry(c) || !strings.Contains(string(c.W.Buf), tID2) {
		t.Fatalf("retry at due time: %q", c.W.Buf)
	}
	// Inside MULTI, BLOCK does not block.
	h.multi = true
	if out := h.raw("EMQ.CLAIM", "q", "1000", "BLOCK", "0"); out != "*-1\r\n" || h.block != nil {
		t.Fatalf("BLOCK in MULTI: %q", out)
	}
	h.multi = false
	// A refusal met while retrying ends the wait with the error.
	h.raw("EMQ.CLAIM", "q", "1000", "BLOCK", "0")
	b = h.block
	h.setString(NewKeys("q").Row(tID3), "x")
	h.zadd(NewKeys("q").Pending, 0, tID3)
	c = h.ctx(nil)
	if !b.Retry(c) || !strings.HasPrefix(string(c.W.Buf), "-WRONGTYPE") {
		t.Fatalf("retry on a bad row: %q", c.W.Buf)
	}
}

// TestClaimWakesForUntakenPromotions: CLAIM COUNT 1 that promotes three due
// jobs takes one and wakes a claimer per other one.
func TestClaimWakesForUntakenPromotions(t *testing.T) {
	h := newTH(t)
	for _, id := range []string{tID3, tID, tID2} {
		h.ok("EMQ.ENQUEUE", "q", id, "p-"+id, "DELAY", "10")
	}
	if len(h.ready) != 3 {
		t.Fatalf("a scheduled enqueue wakes (the due time changed): %v", h.ready)
	}
	h.ready = nil
	h.clk.Advance(10)
	id, _, _ := claimOne(t, h, "1000")
	if id != tID {
		t.Fatalf("claimed %s, want the lowest id", id)
	}
	if len(h.ready) != 2 {
		t.Fatalf("wakes %v", h.ready)
	}
	if got := h.members(NewKeys("q").Pending); !reflect.DeepEqual(got, []string{tID2 + "@0", tID3 + "@0"}) {
		t.Fatalf("pending %v", got)
	}
}

// TestClaimJobListsAreTheCallers: the wire adapters' claims (EMQ.CLAIM,
// COMPLETE ... NEXT) fill one list of Verbs' scratch (jobScratch), written
// out before the next claim; a typed Claim's result is the caller's own
// and stays as it was across the adapters' later claims.
func TestClaimJobListsAreTheCallers(t *testing.T) {
	s := store.New(16)
	c := &store.Ctx{S: s, DB: s.DB(0), W: &resp.Writer{Proto: 2}, RunID: tRun, NowMs: tNow}
	vs := New(Config{})
	ids := []string{"JOB0000000000A", "JOB0000000000B", "JOB0000000000C", "JOB0000000000D"}
	for _, id := range ids {
		c.W.Reset()
		c.ResetForCommand([][]byte{[]byte("EMQ.ENQUEUE"), []byte("q"), []byte(id), []byte("p-" + id)})
		vs.cmdEnqueue(c)
	}
	wire := func(argv ...string) string {
		b := make([][]byte, len(argv))
		for i, a := range argv {
			b[i] = []byte(a)
		}
		c.W.Reset()
		c.ResetForCommand(b)
		switch argv[0] {
		case "EMQ.CLAIM":
			vs.cmdClaim(c)
		default:
			vs.cmdComplete(c)
		}
		return string(c.W.Buf)
	}
	if got := wire("EMQ.CLAIM", "q", "1000"); got != "*1\r\n*4\r\n$14\r\nJOB0000000000A\r\n$16\r\np-JOB0000000000A\r\n$1\r\n1\r\n:0\r\n" {
		t.Fatalf("claim: %q", got)
	}
	res, err := vs.Claim(c, &ClaimArgs{Queue: "q", LeaseMs: 1000})
	if err != nil || len(res.Jobs) != 1 || res.Jobs[0].ID != "JOB0000000000B" {
		t.Fatalf("typed claim: %+v %v", res, err)
	}
	typed := res.Jobs[0]
	if got := wire("EMQ.COMPLETE", "q", "JOB0000000000A", "1", "NEXT", "1000"); got != "*1\r\n*4\r\n$14\r\nJOB0000000000C\r\n$16\r\np-JOB0000000000C\r\n$1\r\n1\r\n:0\r\n" {
		t.Fatalf("complete NEXT: %q", got)
	}
	if got := wire("EMQ.CLAIM", "q", "1000"); got != "*1\r\n*4\r\n$14\r\nJOB0000000000D\r\n$16\r\np-JOB0000000000D\r\n$1\r\n1\r\n:0\r\n" {
		t.Fatalf("claim: %q", got)
	}
	if j := res.Jobs[0]; j.ID != "JOB0000000000B" || j.Key != typed.Key || string(j.Token) != "1" || string(j.Payload) != "p-JOB0000000000B" {
		t.Fatalf("the typed claim's list changed to %+v (was %+v)", res.Jobs[0], typed)
	}
	if cap(vs.jobs) == 0 || vs.jobs[:1][0].ID != "" {
		t.Fatalf("the adapters' list is not Verbs' scratch, or kept a job: cap %d", cap(vs.jobs))
	}
}
