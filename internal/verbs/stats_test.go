package verbs

import (
	"fmt"
	"strings"
	"testing"

	"github.com/emqd/emqd/internal/resp"
	"github.com/emqd/emqd/internal/store"
)

// counted runs one verb on h's store with st as the accounting and
// returns the raw reply.
func counted(h *th, st *Stats, args ...string) string {
	h.t.Helper()
	argv := make([][]byte, len(args))
	for i, a := range args {
		argv[i] = []byte(a)
	}
	spec := h.specs[strings.ToLower(args[0])]
	if spec == nil || !arityOK(spec.Arity, len(argv)) {
		h.t.Fatalf("bad test command %v", args)
	}
	c := &store.Ctx{S: h.s, DB: h.s.DB(h.db), Argv: argv, W: &resp.Writer{Proto: 2},
		NowMs: h.clk.NowMs(), RunID: h.run}
	h.v.SetStats(st)
	spec.Handler(c)
	h.v.SetStats(nil)
	return string(c.W.Buf)
}

func wantCounts(t *testing.T, st *Stats, db int, q string, want map[Transition]int64) {
	t.Helper()
	var qs *QueueStats
	for _, x := range st.Queues() {
		if x.DB == db && x.Queue == q {
			qs = x
		}
	}
	if qs == nil {
		t.Fatalf("queue %d:%s not known (%d known)", db, q, st.NumQueues())
	}
	for tr := Transition(0); tr < NumTransitions; tr++ {
		if got := qs.Count(tr); got != want[tr] {
			t.Errorf("%d:%s %s = %d, want %d", db, q, tr, got, want[tr])
		}
	}
}

// TestStatsCountsAppliedTransitions: each verb counts what its plan did;
// refusals, duplicates and empty calls count nothing; EMQ.CLAIM counts the
// promotions it ran itself; FAIL's dead verdicts are a subset of failed.
func TestStatsCountsAppliedTransitions(t *testing.T) {
	h := newTH(t)
	st := NewStats()
	run := func(want string, args ...string) {
		t.Helper()
		if got := counted(h, st, args...); !strings.HasPrefix(got, want) {
			t.Fatalf("%v = %q, want prefix %q", args, got, want)
		}
	}
	run("$14", "EMQ.ENQUEUE", "q", "JOB0000000000A", "a")
	run("$-1", "EMQ.ENQUEUE", "q", "JOB0000000000A", "dup")                      // duplicate: nothing
	run("-ERR invalid queue", "EMQ.ENQUEUE", "bad queue", "JOB0000000000Z", "x") // refused: nothing
	run("$14", "EMQ.ENQUEUE", "q", "JOB0000000000B", "b", "DELAY", "1000")
	run("$14", "EMQ.ENQUEUE", "q", "JOB0000000000C", "c")
	run("*2\r\n", "EMQ.CLAIM", "q", "5000", "COUNT", "2") // A and C
	run("-EMQSTALE complete token mismatch", "EMQ.COMPLETE", "q", "JOB0000000000A", "9")
	run(":1", "EMQ.COMPLETE", "q", "JOB0000000000A", "1")
	run("*2\r\n$9\r\nscheduled", "EMQ.FAIL", "q", "JOB0000000000C", "1", "3", "0", "boom")
	h.clk.Advance(1000)
	// B (due at +1000) and C (retry due now) are promoted by the claim
	// itself, which takes B (both at score 0, B sorts first).
	run("*1\r\n*4\r\n$14\r\nJOB0000000000B", "EMQ.CLAIM", "q", "5000")
	run(":0", "EMQ.PROMOTE", "q") // nothing due any more
	run("*1\r\n*4\r\n$14\r\nJOB0000000000C", "EMQ.CLAIM", "q", "5000")
	h.clk.Advance(5000)
	run("*2\r\n*2\r\n", "EMQ.STALLED.CHECK", "q", "2") // B and C recovered
	run("*1\r\n*4\r\n$14\r\nJOB0000000000B", "EMQ.CLAIM", "q", "5000")
	run(":1", "EMQ.REQUEUE", "q", "JOB0000000000B", "2")
	run("*2\r\n", "EMQ.CLAIM", "q", "5000", "COUNT", "2") // B and C
	run(":1", "EMQ.DELAY", "q", "JOB0000000000C", "3", "IN", "60000")
	run("*2\r\n$4\r\ndead", "EMQ.FAIL", "q", "JOB0000000000B", "3", "1", "0", "boom")
	run(":1", "EMQ.REPROCESS", "q", "JOB0000000000B")
	run(":0", "EMQ.REMOVE", "q", "JOB000000000ZZ")
	run(":1", "EMQ.REMOVE", "q", "JOB0000000000B")

	wantCounts(t, st, 0, "q", map[Transition]int64{
		Enqueued: 3, Claimed: 7, Completed: 1, Failed: 2, FailedDead: 1,
		StallRecovered: 2, Promoted: 2, Requeued: 1, Delayed: 1, Reprocessed: 1, Removed: 1,
	})
	if st.Total(Claimed) != 7 || st.Total(Enqueued) != 3 || st.NumQueues() != 1 {
		t.Fatalf("totals claimed=%d enqueued=%d queues=%d", st.Total(Claimed), st.Total(Enqueued), st.NumQueues())
	}

	// Another database is another queue; a stall at max_stalled 1 is dead.
	h.db = 3
	run("$14", "EMQ.ENQUEUE", "q", "JOB0000000000D", "d")
	run("*1\r\n", "EMQ.CLAIM", "q", "100")
	h.clk.Advance(100)
	run("*2\r\n*0\r\n*1\r\n", "EMQ.STALLED.CHECK", "q")
	run("-EMQSTALE job gone", "EMQ.DELAY", "q", "JOB0000000000C", "3", "IN", "5") // C lives in db 0
	wantCounts(t, st, 3, "q", map[Transition]int64{Enqueued: 1, Claimed: 1, StallDead: 1})
	if st.Total(Enqueued) != 4 || st.NumQueues() != 2 {
		t.Fatalf("totals enqueued=%d queues=%d", st.Total(Enqueued), st.NumQueues())
	}
}

// TestStatsCacheFollowsPrune: the counters a queue's keys cache
// (Stats.knownFor) are the ones Known hands out, per database and per
// Stats; after a Prune that forgot the queue, the next count registers
// it anew and counts there (not into the forgotten counters), and a
// queue turned away while the table is full is counted once room is made.
func TestStatsCacheFollowsPrune(t *testing.T) {
	s := store.New(4)
	c := &store.Ctx{S: s, DB: s.DB(0)}
	vs := New(Config{})
	st := NewStats()
	vs.SetStats(st)
	k := vs.keysOf("q")
	vs.count(c, k, Claimed, 2)
	vs.count(c, k, Claimed, 3)
	first := st.Known(0, "q")
	if got := first.Count(Claimed); got != 5 {
		t.Fatalf("claimed %d, want 5", got)
	}
	c1 := &store.Ctx{S: s, DB: s.DB(1)}
	vs.count(c1, k, Claimed, 7)
	if got, got0 := st.Known(1, "q").Count(Claimed), first.Count(Claimed); got != 7 || got0 != 5 {
		t.Fatalf("db 1 claimed %d (want 7), db 0 %d (want 5)", got, got0)
	}
	vs.count(c, k, Claimed, 1) // db 0's counters cached again: 6
	if forgot, _ := st.Prune(func(db int, q string) bool { return db == 0 }); forgot != 1 {
		t.Fatalf("Prune forgot %d, want 1", forgot)
	}
	vs.count(c, k, Claimed, 1)
	if again := st.Known(0, "q"); again == first || again.Count(Claimed) != 1 || first.Count(Claimed) != 6 {
		t.Fatalf("after the Prune: claimed %d in the new counters (want 1), the forgotten ones %d (want 6), same %v",
			again.Count(Claimed), first.Count(Claimed), again == first)
	}
	other := NewStats()
	vs.SetStats(other)
	vs.count(c, k, Enqueued, 4)
	if got := other.Known(0, "q").Count(Enqueued); got != 4 || st.Known(0, "q").Count(Enqueued) != 0 {
		t.Fatalf("another Stats: enqueued %d there (want 4), %d in the old", got, st.Known(0, "q").Count(Enqueued))
	}
	full := NewStats()
	for i := range MaxTrackedQueues {
		full.Known(2, fmt.Sprint("f", i))
	}
	vs.SetStats(full)
	c2 := &store.Ctx{S: s, DB: s.DB(2)}
	vs.count(c2, k, Claimed, 1) // turned away: the table is full
	full.Prune(func(db int, q string) bool { return q == "f0" })
	vs.count(c2, k, Claimed, 1)
	if got := full.Known(2, "q"); got == nil || got.Count(Claimed) != 1 {
		t.Fatalf("after room was made: %v", got)
	}
}

// BenchmarkCount is the cost the accounting adds to one counted verb (a
// locked map lookup and two atomic adds).
func BenchmarkCount(b *testing.B) {
	s := store.New(1)
	c := &store.Ctx{S: s, DB: s.DB(0)}
	vs := New(Config{})
	vs.SetStats(NewStats())
	k := NewKeys("q")
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		vs.count(c, k, Claimed, 1)
	}
}
