package verbs

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"testing"

	"github.com/emqd/emqd/internal/plan"
	"github.com/emqd/emqd/internal/resp"
	"github.com/emqd/emqd/internal/store"
)

// plainCycleAllocsBase is the allocations of one plain job cycle
// (plainCycle: ENQUEUE *, CLAIM, COMPLETE through the handlers, a queue
// without lanes or priorities) measured with this test at commit 4e7ab5a,
// before lanes (docs/verbs.md §4.26). Lanes added three (a laneTx per
// verb) until the hot verbs read lanes into Verbs' scratch
// (readLanesInto; bench/README.md, "Measured design decisions").
const plainCycleAllocsBase = 37

// plainCycleAllocs is the plain cycle's allocations now: 36 once ENQUEUE
// read the mint's last id with a peek (the mint's listpack rewritten in
// place, internal/store/listpack.go), 27 once ApplyPlan rendered each plan
// for the feed into the store's reused scratch (plan.ArgvsInto: three
// allocations per plan, three plans per cycle), 23 once the run id's bytes
// and the time in decimal were made once (Verbs.runIDBytes, Verbs.msNow:
// ENQUEUE's enqueued_at and CLAIM's claimed_at share one slice within a
// ms), the minted id's plan value viewed its string (strBytes), and the
// claim built a candidate's row key and id in one allocation
// (store.ZSet.AtView, Keys.rowOf), 21 once a claimed job's reply size was
// counted without rendering its failures (decimalLen) and a small token
// was a shared slice (tokenBytes), 20 once a small sorted set's front
// removals were in place (round 6), 19 once the claim's HINCRBY of
// attempts was folded into the row's HSET (one copy of the row instead of
// two: store's planKeys.foldIncr, round 7), 16 once a plan's HSET pairs
// were copied into the plan's own pooled backing (plan.HSetBytes: the new
// row's list and the mint's) and ENQUEUE's payload was borrowed, not
// cloned (plan.Op.Borrow: the row's listpack copies it), 15 once the
// claim's candidates were Verbs' scratch (candScratch: a 352-byte object
// per claim), 14 once the wire adapters' claims filled Verbs' list of
// claimed jobs (jobScratch: a 96-byte list per claim; a typed caller
// still gets its own), 12 once the claim's candidate and COMPLETE's lease
// took the keyspace's own row key string instead of building one for the
// lookup (Keys.rowIn, round 8).
const plainCycleAllocs = 12

// nextCycleAllocs is the allocations of one job of the NEXT form's cycle
// (nextCycle: ENQUEUE *, COMPLETE ... NEXT), measured with
// TestNextCycleAllocs: 28 before the cuts of plainCycleAllocs (27 -> 21)
// and NEXT's overlay in Verbs' scratch (Verbs.nextOv), 21 after, 20 with
// the in-place set removals, 19 with the claim's row copied once
// (plainCycleAllocs), 16 with the pooled HSET lists and the borrowed
// payload, 15 with NEXT's claim's candidates in Verbs' scratch, 14 with
// its claimed jobs' list there too (jobScratch), 12 with the row keys
// taken from the keyspace (Keys.rowIn).
const nextCycleAllocs = 12

// TestNextCycleAllocs guards nextCycleAllocs; under -race only from below,
// as TestPlainCycleAllocs.
func TestNextCycleAllocs(t *testing.T) {
	s := store.New(16)
	s.SetFeed(nopFeed{})
	c := &store.Ctx{S: s, DB: s.DB(0), W: &resp.Writer{Proto: 2}, RunID: tRun, NowMs: tNow}
	cycle := nextCycle(t, New(Config{}), c)
	for i := 0; i < 100; i++ {
		cycle()
	}
	got := testing.AllocsPerRun(2000, cycle)
	if raceEnabled {
		if got < nextCycleAllocs {
			t.Fatalf("NEXT job cycle under -race: %v allocations, below the %d measured without it", got, nextCycleAllocs)
		}
	} else if got != nextCycleAllocs {
		t.Fatalf("NEXT job cycle: %v allocations, want %d", got, nextCycleAllocs)
	}
	// The cycle leaves one job held (active) and nothing pending.
	k := NewKeys("q")
	if act, _ := zsetKind(s.DB(0), k.Active); act == nil || act.Len() != 1 {
		t.Fatalf("active after the NEXT cycles: %v, want the one held job", act)
	}
	if pend, _ := zsetKind(s.DB(0), k.Pending); pend != nil {
		t.Fatalf("pending after the NEXT cycles holds %d", pend.Len())
	}
}

// The rows written within one ms share the bytes of their enqueued_at and
// claimed_at (Verbs.msNow), and a row in the hashtable encoding (a payload
// over hash-max-listpack-value) keeps a view of them: a later write to one
// row's field must leave the other's alone. Both through a plan
// (HINCRBY, HSET) and through the hash's own setter.
func TestSharedTimeBytesStayPut(t *testing.T) {
	s := store.New(16)
	c := &store.Ctx{S: s, DB: s.DB(0), W: &resp.Writer{Proto: 2}, RunID: tRun, NowMs: tNow}
	vs := New(Config{})
	payload := bytes.Repeat([]byte("x"), 100)
	ids := []string{tID, tID2, tID3}
	for _, id := range ids {
		c.W.Reset()
		c.ResetForCommand([][]byte{[]byte("EMQ.ENQUEUE"), []byte("q"), []byte(id), payload})
		vs.cmdEnqueue(c)
		if string(c.W.Buf) != "$14\r\n"+id+"\r\n" {
			t.Fatalf("enqueue %s: %q", id, c.W.Buf)
		}
	}
	c.W.Reset()
	c.ResetForCommand([][]byte{[]byte("EMQ.CLAIM"), []byte("q"), []byte("30000"), []byte("COUNT"), []byte("3")})
	vs.cmdClaim(c)
	k := NewKeys("q")
	field := func(id, f string) []byte {
		h, _ := hashKind(s.DB(0), k.Row(id))
		if h == nil {
			t.Fatalf("row %s is gone", id)
		}
		v, ok := h.Get(f)
		if !ok {
			t.Fatalf("row %s has no %s", id, f)
		}
		return v
	}
	want := strconv.FormatInt(tNow, 10)
	for _, f := range []string{"enqueued_at", "claimed_at"} {
		a, b := field(tID, f), field(tID2, f)
		if string(a) != want || string(b) != want {
			t.Fatalf("%s: %q and %q, want %s", f, a, b, want)
		}
		if &a[0] != &b[0] {
			t.Fatalf("%s: the rows do not share the bytes (the test would prove nothing)", f)
		}
	}
	p := plan.Get(2)
	p.HIncrBy(k.Row(tID), "enqueued_at", 5)
	p.HSetBytes(k.Row(tID2), []byte("claimed_at"), []byte("7"))
	c.ApplyPlan(p)
	plan.Put(p)
	h3, _ := hashKind(s.DB(0), k.Row(tID3))
	h3.Set("enqueued_at", []byte("8"))
	got := []string{string(field(tID, "enqueued_at")), string(field(tID2, "enqueued_at")), string(field(tID3, "enqueued_at")),
		string(field(tID, "claimed_at")), string(field(tID2, "claimed_at")), string(field(tID3, "claimed_at"))}
	wantAll := []string{strconv.FormatInt(tNow+5, 10), want, "8", want, "7", want}
	if !slices.Equal(got, wantAll) {
		t.Fatalf("after the writes: %v, want %v", got, wantAll)
	}
}

// sameMsCycleAllocs is plainCycleAllocs with the clock held within one ms,
// as at the job cycle's 22 jobs per ms: what is made once per ms
// (Verbs.msNow's time, Verbs.activeFields' claimed-row HSET) is made once
// for all the cycles.
const sameMsCycleAllocs = 10

// TestSameMsCycleAllocs guards sameMsCycleAllocs (under -race only from
// below, as TestPlainCycleAllocs), and that the rows of that ms share one
// claimed_at.
func TestSameMsCycleAllocs(t *testing.T) {
	s := store.New(16)
	s.SetFeed(nopFeed{})
	c := &store.Ctx{S: s, DB: s.DB(0), W: &resp.Writer{Proto: 2}, RunID: tRun, NowMs: tNow}
	vs := New(Config{})
	inner := plainCycle(t, vs, c)
	cycle := func() {
		c.NowMs = tNow // plainCycle moves it to tNow+1: every cycle runs in one ms
		inner()
	}
	for i := 0; i < 100; i++ {
		cycle()
	}
	got := testing.AllocsPerRun(2000, cycle)
	if raceEnabled {
		if got < sameMsCycleAllocs {
			t.Fatalf("job cycle within one ms under -race: %v allocations, below the %d measured without it", got, sameMsCycleAllocs)
		}
	} else if got != sameMsCycleAllocs {
		t.Fatalf("job cycle within one ms: %v allocations, want %d (%d when the ms moves every cycle)", got, sameMsCycleAllocs, plainCycleAllocs)
	}
	if fv := vs.activeFields(tNow+1, tRun); &fv[5][0] != &vs.msNow(tNow + 1)[0] || string(fv[3]) != tRun {
		t.Fatalf("the claimed rows' HSET does not share the ms's time and the run id: %q", fv)
	}
}

// plainCycle returns one job cycle on queue q of vs: ENQUEUE q * payload
// [extra...], CLAIM q 30000, COMPLETE q id token, reusing its argv and
// writer, failing t unless COMPLETE answers :1.
func plainCycle(t testing.TB, vs *Verbs, c *store.Ctx, extra ...[]byte) func() {
	enq := append([][]byte{[]byte("EMQ.ENQUEUE"), []byte("q"), []byte("*"), []byte("payload-bytes")}, extra...)
	claim := [][]byte{[]byte("EMQ.CLAIM"), []byte("q"), []byte("30000")}
	complete := [][]byte{[]byte("EMQ.COMPLETE"), []byte("q"), make([]byte, 0, 32), []byte("1")}
	return func() {
		c.NowMs++
		c.W.Reset()
		c.ResetForCommand(enq)
		vs.cmdEnqueue(c)
		c.W.Reset()
		c.ResetForCommand(claim)
		vs.cmdClaim(c)
		// *1 *4 $14 <id> ...
		buf := c.W.Buf
		if len(buf) < 13+14 {
			t.Fatalf("claim: %q", buf)
		}
		complete[2] = append(complete[2][:0], buf[13:13+14]...)
		c.W.Reset()
		c.ResetForCommand(complete)
		vs.cmdComplete(c)
		if string(c.W.Buf) != ":1\r\n" {
			t.Fatalf("complete: %q (claim %q)", c.W.Buf, buf)
		}
	}
}

// TestPlainCycleAllocs: a queue without lanes pays no allocation for them:
// its job cycle allocates no more than before lanes existed
// (plainCycleAllocsBase), exactly plainCycleAllocs. The race detector's sync.Pool drops pooled
// plans at random, so under -race the count may only be higher by those.
func TestPlainCycleAllocs(t *testing.T) {
	s := store.New(16)
	s.SetFeed(nopFeed{})
	c := &store.Ctx{S: s, DB: s.DB(0), W: &resp.Writer{Proto: 2}, RunID: tRun, NowMs: tNow}
	vs := New(Config{})
	cycle := plainCycle(t, vs, c)
	for i := 0; i < 100; i++ { // warm the caches and the plan pool
		cycle()
	}
	got := testing.AllocsPerRun(2000, cycle)
	if raceEnabled {
		if got < plainCycleAllocs {
			t.Fatalf("plain job cycle under -race: %v allocations, below the %d measured without it", got, plainCycleAllocs)
		}
	} else if got != plainCycleAllocs {
		t.Fatalf("plain job cycle: %v allocations, want %d (%d at 4e7ab5a, before lanes)", got, plainCycleAllocs, plainCycleAllocsBase)
	}
	if k := NewKeys("q"); func() bool { _, kind := zsetKind(s.DB(0), k.LanesKnown); return kind != keyAbsent }() {
		t.Fatalf("a plain cycle created %s", k.LanesKnown)
	}
}

// laneCycleAllocs is the allocations of one job cycle with lanes on
// (laneCycle), measured with TestLaneCycleAllocs: 84 before the lane state
// stopped costing allocations of its own (a laneTx's first lanes inline,
// lane key names cached per queue, the lane and lane_vt HSETs built
// without strings, the claim's and the added jobs' bookkeeping without
// maps), 48 after, 47 once the mint's last id is read with a peek (its
// listpack rewritten in place), 38 with the plans' render reused, 33 with
// the run id's bytes, the time and small tokens made once and the reply
// size counted (plainCycleAllocs), 32 once a small sorted set's removals
// are in place (the lanes registry's ZREM at COMPLETE no longer copies it,
// internal/store/listpack.go); the plain cycle is plainCycleAllocs. What is left
// above the plain cycle is the lane's own keys: every cycle creates the
// lane's hash, pending set and registry entry at ENQUEUE and removes them
// at COMPLETE (an empty, idle lane is garbage, docs/verbs.md §4.26.4).
// 30 with the claim's row copied once (plainCycleAllocs), 26 with the
// pooled HSET lists (the lane row's list of extra fields too) and the
// borrowed payload, 25 with the claimed jobs' list in Verbs' scratch, 24
// with COMPLETE's row key taken from the keyspace (Keys.rowIn; a lane's
// claim reads its candidates elsewhere).
const laneCycleAllocs = 24

// laneCycle is plainCycle with every job in lane x of a queue with one
// other, idle, configured lane (BenchmarkJobCycleLanes' lanes=true).
func laneCycle(t testing.TB, vs *Verbs, c *store.Ctx) func() {
	c.ResetForCommand([][]byte{[]byte("EMQ.LANE"), []byte("q"), []byte("y"), []byte("WEIGHT"), []byte("2")})
	vs.cmdLane(c)
	if string(c.W.Buf) != "+OK\r\n" {
		t.Fatalf("EMQ.LANE: %q", c.W.Buf)
	}
	return plainCycle(t, vs, c, []byte("LANE"), []byte("x"))
}

// TestLaneCycleAllocs guards the lane cycle's allocations
// (laneCycleAllocs); under -race only from below, as TestPlainCycleAllocs.
func TestLaneCycleAllocs(t *testing.T) {
	s := store.New(16)
	s.SetFeed(nopFeed{})
	c := &store.Ctx{S: s, DB: s.DB(0), W: &resp.Writer{Proto: 2}, RunID: tRun, NowMs: tNow}
	vs := New(Config{})
	cycle := laneCycle(t, vs, c)
	for i := 0; i < 100; i++ {
		cycle()
	}
	got := testing.AllocsPerRun(2000, cycle)
	if raceEnabled {
		if got < laneCycleAllocs {
			t.Fatalf("lane job cycle under -race: %v allocations, below the %d measured without it", got, laneCycleAllocs)
		}
	} else if got != laneCycleAllocs {
		t.Fatalf("lane job cycle: %v allocations, want %d", got, laneCycleAllocs)
	}
	// The cycle ran with lanes on: lane y stays registered, lane x is
	// garbage again after each COMPLETE.
	k := NewKeys("q")
	known, _ := zsetKind(s.DB(0), k.LanesKnown)
	if known == nil || known.Len() != 1 {
		t.Fatalf("%s after the cycles: %v, want lane y alone", k.LanesKnown, known)
	}
	if _, ok := known.Score("y"); !ok {
		t.Fatalf("%s lost lane y", k.LanesKnown)
	}
	if _, kind := hashKind(s.DB(0), k.LanePrefix+"x"); kind != keyAbsent {
		t.Fatalf("lane x's hash is left after the last COMPLETE")
	}
}

// decimalLen and tokenBytes render as strconv does, at the edges too.
func TestDecimalLenAndTokenBytes(t *testing.T) {
	for _, n := range []int64{0, 1, 9, 10, 99, 100, 255, 256, 1 << 40, -1, -9, -10, -255, math.MaxInt64, math.MinInt64} {
		want := strconv.FormatInt(n, 10)
		if got := decimalLen(n); got != len(want) {
			t.Fatalf("decimalLen(%d) = %d, want %d", n, got, len(want))
		}
		if got := string(tokenBytes(n)); got != want {
			t.Fatalf("tokenBytes(%d) = %q, want %q", n, got, want)
		}
	}
	if &tokenBytes(7)[0] != &tokenBytes(7)[0] {
		t.Fatal("a small token is not shared")
	}
}
