package verbs

import (
	"reflect"
	"strings"
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

// TestCountersTable walks one job through every verb of verbs.md section 3
// and reads the row after each: which of attempts, failures, stalled and
// lease_epoch each verb wrote.
func TestCountersTable(t *testing.T) {
	h := newTH(t)
	id := h.ok("EMQ.ENQUEUE", "q", "*", "pay").(string)
	if h.row("q", id) != "state=pending attempts=0 payload=pay" {
		t.Fatalf("enqueue row: %s", h.row("q", id))
	}
	_, tok, f := claimOne(t, h, "1000")
	if tok != "1" || f != 0 || h.row("q", id) != "state=active attempts=1 payload=pay lease_epoch="+tRun {
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
	if h.row("q", id) != "state=scheduled attempts=1 payload=pay lease_epoch="+h.run+" progress=10% last_error=oops failures=1" {
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
	if !reflect.DeepEqual(counts, []any{"pending", int64(0), "active", int64(0), "scheduled", int64(0), "dead", int64(0), "completed", int64(1), "failed", int64(1)}) {
		t.Fatalf("counts: %v", counts)
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
	if out := h.raw("EMQ.CLAIM", "q", "1000", "BLOCK", "0"); out != "*0\r\n" || h.block != nil {
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

func TestMintedIDs(t *testing.T) {
	h := newTH(t)
	a := h.ok("EMQ.ENQUEUE", "q", "*", "1").(string)
	b := h.ok("EMQ.ENQUEUE", "q", "*", "2").(string)
	if a != EncodeID(tNow) || b != EncodeID(tNow+1) {
		t.Fatalf("minted %s %s", a, b)
	}
	h.clk.Advance(-60000) // the clock steps back
	c := h.ok("EMQ.ENQUEUE", "other", "*", "3").(string)
	if c <= b {
		t.Fatalf("minted %s after %s", c, b)
	}
	// A completion that deletes the newest row does not make its id reusable.
	_, tok, _ := claimOne(t, h, "10")
	h.ok("EMQ.COMPLETE", "q", a, tok)
	if d := h.ok("EMQ.ENQUEUE", "q", "*", "4").(string); d <= c {
		t.Fatalf("minted %s after %s", d, c)
	}
	// A client that took the next id itself is skipped over.
	next := EncodeID(tNow + 4)
	if h.ok("EMQ.ENQUEUE", "q", next, "mine") != next {
		t.Fatal("explicit id")
	}
	if e := h.ok("EMQ.ENQUEUE", "q", "*", "5").(string); e != EncodeID(tNow+5) {
		t.Fatalf("minted %s, want to skip %s", e, next)
	}
	// A duplicate is nil and never overwrites.
	if h.do("EMQ.ENQUEUE", "q", next, "other") != nil || h.field("q", next, "payload") != "mine" {
		t.Fatal("duplicate")
	}
}

func TestJobAndCountsReplies(t *testing.T) {
	h := newTH(t)
	h.ok("EMQ.ENQUEUE", "q", tID, "pay")
	if h.do("EMQ.JOB", "q", tID2) != nil {
		t.Fatal("missing job not nil")
	}
	claimOne(t, h, "1500")
	got := h.ok("EMQ.JOB", "q", tID)
	want := []any{"state", "active", "attempts", "1", "payload", "pay", "lease_epoch", tRun, "lease_deadline_ms", "1700000001500"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("job %v", got)
	}
	h.proto = 3
	if out := h.raw("EMQ.JOB", "q", tID2); out != "_\r\n" {
		t.Fatalf("RESP3 nil %q", out)
	}
	if out := h.raw("EMQ.COUNTS", "q"); !strings.HasPrefix(out, "%6\r\n$7\r\npending\r\n:0\r\n$6\r\nactive\r\n:1\r\n") {
		t.Fatalf("RESP3 counts %q", out)
	}
	if out := h.raw("EMQ.JOB", "q", tID); !strings.HasPrefix(out, "%5\r\n") {
		t.Fatalf("RESP3 job %q", out)
	}
	h.ok("EMQ.DELAY", "q", tID, "1", "AT", "1700000009000")
	if got := h.ok("EMQ.JOB", "q", tID).([]any); got[len(got)-2] != "run_at_ms" || got[len(got)-1] != "1700000009000" {
		t.Fatalf("job %v", got)
	}
}

func TestRemovePauseResume(t *testing.T) {
	h := newTH(t)
	h.ok("EMQ.ENQUEUE", "q", tID, "a")
	h.ok("EMQ.ENQUEUE", "q", tID2, "b", "DELAY", "100")
	h.ok("EMQ.PAUSE", "q")
	if v := h.ok("EMQ.CLAIM", "q", "100"); !reflect.DeepEqual(v, []any{}) {
		t.Fatalf("paused queue handed out %v", v)
	}
	h.ok("EMQ.RESUME", "q")
	claimOne(t, h, "100")
	if h.do("EMQ.REMOVE", "q", tID) != replyErr(ErrActive) {
		t.Fatal("removed a held job")
	}
	if h.ok("EMQ.REMOVE", "q", tID2) != int64(1) || h.row("q", tID2) != "" || h.members(NewKeys("q").Schedule) != nil {
		t.Fatal("remove scheduled")
	}
	if h.ok("EMQ.REMOVE", "q", tID2) != int64(0) {
		t.Fatal("remove twice")
	}
}
