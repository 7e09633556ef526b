package verbs

import (
	"reflect"
	"testing"
)

// TestEventsOnePerTransition walks one job through every transition and
// checks the messages on emq:{q}:events (docs/verbs.md §1.6): exactly one
// per transition, in order, "<event> <id> <db>"; nothing for EXTEND (not a
// transition), a refusal or a duplicate enqueue; nothing at all when
// nobody listens.
func TestEventsOnePerTransition(t *testing.T) {
	h := newTH(t)
	h.listen = true
	h.db = 3
	id := h.ok("EMQ.ENQUEUE", "q", "*", "pay").(string)
	h.do("EMQ.ENQUEUE", "q", id, "again") // duplicate: no transition
	_, tok, _ := claimOne(t, h, "1000")
	h.ok("EMQ.EXTEND", "q", id, tok, "1000")
	h.ok("EMQ.PROGRESS", "q", id, tok, "50%")
	h.ok("EMQ.FAIL", "q", id, tok, "5", "100", "oops")
	h.clk.Advance(100)
	_, tok, _ = claimOne(t, h, "1000") // promotes, then claims
	h.ok("EMQ.REQUEUE", "q", id, tok)
	_, tok, _ = claimOne(t, h, "1000")
	h.ok("EMQ.DELAY", "q", id, tok, "IN", "50")
	h.clk.Advance(50)
	if h.ok("EMQ.PROMOTE", "q") != int64(1) {
		t.Fatal("not promoted")
	}
	_, tok, _ = claimOne(t, h, "1000")
	h.clk.Advance(1000)
	h.ok("EMQ.STALLED.CHECK", "q", "3")
	_, tok, _ = claimOne(t, h, "1000")
	if out := h.raw("EMQ.COMPLETE", "q", id, "1"); out[0] != '-' {
		t.Fatalf("stale complete accepted: %q", out)
	}
	h.ok("EMQ.FAIL", "q", id, tok, "1", "0", "fatal")
	h.ok("EMQ.REPROCESS", "q", id)
	_, tok, _ = claimOne(t, h, "1000")
	h.ok("EMQ.COMPLETE", "q", id, tok)
	id2 := h.ok("EMQ.ENQUEUE", "q", "*", "p2", "DELAY", "10").(string)
	h.clk.Advance(1000)
	h.ok("EMQ.STALLED.CHECK", "q") // nothing expired: no event
	h.ok("EMQ.REMOVE", "q", id2)
	ch := "emq:{q}:events "
	want := []string{}
	for _, ev := range []string{"enqueued", "claimed", "progress", "failed", "promoted", "claimed", "requeued", "claimed",
		"delayed", "promoted", "claimed", "stalled", "claimed", "dead", "reprocessed", "claimed", "completed"} {
		want = append(want, ch+ev+" "+id+" 3")
	}
	want = append(want, ch+"enqueued "+id2+" 3", ch+"removed "+id2+" 3")
	if !reflect.DeepEqual(h.pub, want) {
		t.Fatalf("events\n got %q\nwant %q", h.pub, want)
	}

	// The sweep's death and the claim of several jobs: one message each.
	h.pub = nil
	a := h.ok("EMQ.ENQUEUE", "q", "*", "a").(string)
	b := h.ok("EMQ.ENQUEUE", "q", "*", "b").(string)
	h.ok("EMQ.CLAIM", "q", "100", "COUNT", "5")
	h.clk.Advance(100)
	h.ok("EMQ.STALLED.CHECK", "q", "1")
	want = []string{ch + "enqueued " + a + " 3", ch + "enqueued " + b + " 3", ch + "claimed " + a + " 3", ch + "claimed " + b + " 3",
		ch + "dead " + a + " 3", ch + "dead " + b + " 3"}
	if !reflect.DeepEqual(h.pub, want) {
		t.Fatalf("events\n got %q\nwant %q", h.pub, want)
	}

	// Nobody listening: nothing is built or published.
	h.pub, h.listen = nil, false
	c := h.ok("EMQ.ENQUEUE", "q", "*", "c").(string)
	_, tok, _ = claimOne(t, h, "1000")
	h.ok("EMQ.COMPLETE", "q", c, tok)
	if len(h.pub) != 0 {
		t.Fatalf("published without a listener: %q", h.pub)
	}
}

func TestEventMessage(t *testing.T) {
	if got := string(EventMessage(EvCompleted, "JOB0000000000A", 12)); got != "completed JOB0000000000A 12" {
		t.Fatal(got)
	}
	for e := Event(0); e < numEvents; e++ {
		if e.String() == "" || e.String() == "unknown" {
			t.Fatalf("event %d has no name", e)
		}
	}
	if Event(200).String() != "unknown" {
		t.Fatal("out of range name")
	}
}
