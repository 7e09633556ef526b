package verbs

import (
	"testing"

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
// allocations per plan, three plans per cycle).
const plainCycleAllocs = 27

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
// listpack rewritten in place), 38 with the plans' render reused
// (plainCycleAllocs); the plain cycle is plainCycleAllocs. What is left
// above the plain cycle is the lane's own keys: every cycle creates the
// lane's hash, pending set and registry entry at ENQUEUE and removes them
// at COMPLETE (an empty, idle lane is garbage, docs/verbs.md §4.26.4).
const laneCycleAllocs = 38

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
