package verbs

import (
	"testing"

	"github.com/emqd/emqd/internal/store"
)

func TestEnqueue(t *testing.T) {
	a := &enqueueArgs{K: tk, ID: tID, Payload: []byte("pay")}
	v, p, ref := judgeEnqueue(&enqueueRead{ID: tID, Row: keyAbsent, Dest: keyAbsent}, tNow, a)
	if ref.Refused() || v.Dup || !v.Pending || v.ID != tID {
		t.Fatalf("%+v %+v", v, ref)
	}
	eqLines(t, render(p), []string{
		"HSET " + tRowQ + tID + " state pending attempts 0 payload pay enqueued_at 1700000000000",
		"ZADD emq:{q}:pending 0 " + tID,
	})
	if v, p, _ := judgeEnqueue(&enqueueRead{ID: tID, Row: keyOK, Dest: keyWrong}, tNow, a); !v.Dup || p != nil {
		t.Fatalf("duplicate: %+v %v", v, p)
	}
	if _, _, ref := judgeEnqueue(&enqueueRead{ID: tID, Row: keyWrong}, tNow, a); ref.Text != store.ErrWrongType {
		t.Fatal(ref)
	}
	if _, _, ref := judgeEnqueue(&enqueueRead{ID: tID, Row: keyAbsent, Dest: keyWrong}, tNow, a); ref.Key != tk.Pending {
		t.Fatal(ref)
	}
	d := &enqueueArgs{K: tk, Mint: true, Payload: []byte("x"), jobOpts: jobOpts{Sched: schedDelay, Ms: 250}}
	v, p, _ = judgeEnqueue(&enqueueRead{ID: tID2}, tNow, d)
	if v.Pending {
		t.Fatal("delayed job reported pending")
	}
	eqLines(t, render(p), []string{
		"HSET " + tRowQ + tID2 + " state scheduled attempts 0 payload x enqueued_at 1700000000000",
		"ZADD emq:{q}:schedule 1700000000250 " + tID2,
		"HSET {emq}:mint last " + tID2,
	})
	d.Sched, d.Ms = schedAt, 5
	_, p, _ = judgeEnqueue(&enqueueRead{ID: tID2}, tNow, d)
	eqLines(t, render(p)[1:2], []string{"ZADD emq:{q}:schedule 5 " + tID2})
}

func TestMint(t *testing.T) {
	// max(now, last+1): the clock, then a clock that stepped back.
	n, ref := judgeMint(mintRead{}, 1000)
	if ref.Refused() || n != 1000 {
		t.Fatal(n, ref)
	}
	n, _ = judgeMint(mintRead{Kind: keyOK, Last: fieldOf(EncodeID(5000))}, 1000)
	if n != 5001 {
		t.Fatal(n)
	}
	n, _ = judgeMint(mintRead{Kind: keyOK, Last: fieldOf(EncodeID(5000))}, 9000)
	if n != 9000 {
		t.Fatal(n)
	}
	if _, ref := judgeMint(mintRead{Kind: keyWrong}, 1); ref.Text != store.ErrWrongType || ref.Key != MintKey {
		t.Fatal(ref)
	}
	if _, ref := judgeMint(mintRead{Kind: keyOK, Last: fieldOf("nope")}, 1); ref.Text != ErrMintNotID || !ref.Bad {
		t.Fatal(ref)
	}
	if _, ref := judgeMint(mintRead{Kind: keyOK, Last: fieldOf(EncodeID(maxMintNum))}, 1); ref.Text != ErrMintExhausted {
		t.Fatal(ref)
	}
	// Byte order is mint order.
	prev := ""
	for _, x := range []int64{0, 1, 9, 10, 61, 62, 3843, 3844, 1 << 40, tNow, tNow + 1, maxMintNum} {
		id := EncodeID(x)
		if !ValidID([]byte(id)) || id <= prev {
			t.Fatalf("EncodeID(%d)=%q after %q", x, id, prev)
		}
		if back, ok := DecodeID([]byte(id)); !ok || back != x {
			t.Fatalf("DecodeID(%q)=%d", id, back)
		}
		prev = id
	}
	for _, bad := range []string{"", "JOB", "JOB0000000000", "JOB000000000000", "job00000000001", "JOB0000000000-", "XYZ00000000001"} {
		if ValidID([]byte(bad)) {
			t.Errorf("ValidID(%q)", bad)
		}
	}
	if _, ok := DecodeID([]byte("JOBzzzzzzzzzzz")); ok {
		t.Error("62^11-1 decoded into int64")
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
