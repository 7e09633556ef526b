package verbs

import (
	"bytes"
	"testing"

	"github.com/emqd/emqd/internal/resp"
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

// TestEnqueueKeepsItsPayload: ENQUEUE does not copy its payload argument
// (the row's HSET borrows it, plan.Op.Borrow): a row that stays a listpack
// copies it into the listpack, and one in the hashtable encoding (a
// payload past hash-max-listpack-value, or more fields than
// hash-max-listpack-entries) keeps a copy. The argument's bytes changed
// after the command leave the stored payload as sent, with and without a
// feed, for a minted and a given id, and so does the claim's reply.
func TestEnqueueKeepsItsPayload(t *testing.T) {
	for _, tc := range []struct {
		name    string
		payload int
		entries int64
		big     bool
	}{
		{"listpack", 64, 128, false},
		{"long value", 65, 128, true},
		{"many fields", 10, 3, true},
	} {
		for _, feed := range []bool{false, true} {
			s := store.New(16)
			if feed {
				s.SetFeed(nopFeed{})
			}
			lim := store.DefaultLimits
			lim.HashEntries = tc.entries
			s.SetLimits(lim)
			c := &store.Ctx{S: s, DB: s.DB(0), W: &resp.Writer{Proto: 2}, RunID: tRun, NowMs: tNow}
			vs := New(Config{})
			want := bytes.Repeat([]byte("p"), tc.payload)
			for _, id := range []string{"*", tID} {
				arg := bytes.Clone(want)
				c.W.Reset()
				c.ResetForCommand([][]byte{[]byte("EMQ.ENQUEUE"), []byte("q"), []byte(id), arg})
				vs.cmdEnqueue(c)
				got := string(c.W.Buf)
				if len(got) != 21 || got[:5] != "$14\r\n" {
					t.Fatalf("%s: enqueue %s: %q", tc.name, id, got)
				}
				rowID := got[5:19]
				for i := range arg {
					arg[i] = '#' // the argument's memory is reused (or the caller's)
				}
				h, _ := hashKind(s.DB(0), NewKeys("q").Row(rowID))
				if h == nil || h.Big() != tc.big {
					t.Fatalf("%s: row %s: %v, want big=%v", tc.name, rowID, h, tc.big)
				}
				if v, _ := h.Get("payload"); !bytes.Equal(v, want) {
					t.Fatalf("%s, feed %v: stored payload %q after the argument changed, want %q", tc.name, feed, v, want)
				}
			}
			c.W.Reset()
			c.ResetForCommand([][]byte{[]byte("EMQ.CLAIM"), []byte("q"), []byte("1000"), []byte("COUNT"), []byte("2")})
			vs.cmdClaim(c)
			if n := bytes.Count(c.W.Buf, want); n != 2 {
				t.Fatalf("%s: claim reply %q holds the payload %d times, want 2", tc.name, c.W.Buf, n)
			}
		}
	}
}
