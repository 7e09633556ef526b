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
// its job cycle allocates exactly what it did before lanes existed
// (plainCycleAllocsBase). The race detector's sync.Pool drops pooled
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
		if got < plainCycleAllocsBase {
			t.Fatalf("plain job cycle under -race: %v allocations, below the %d measured without it", got, plainCycleAllocsBase)
		}
	} else if got != plainCycleAllocsBase {
		t.Fatalf("plain job cycle: %v allocations, want %d (as at 4e7ab5a, before lanes)", got, plainCycleAllocsBase)
	}
	if k := NewKeys("q"); func() bool { _, kind := zsetKind(s.DB(0), k.LanesKnown); return kind != keyAbsent }() {
		t.Fatalf("a plain cycle created %s", k.LanesKnown)
	}
}
