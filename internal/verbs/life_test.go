package verbs

import (
	"math/rand"
	"reflect"
	"strconv"
	"testing"

	"github.com/emqd/emqd/internal/store"
)

// TestSweepGuard is EMQ.STALLED.CHECK ... EVERY interval_ms
// (docs/verbs.md §4.11.1): a guarded sweep within interval_ms of the last
// one that ran answers [[], []] and writes nothing; the first one, and one
// interval_ms later, sweep and stamp meta's swept_at with the server time.
func TestSweepGuard(t *testing.T) {
	h := newTH(t)
	h.ok("EMQ.ENQUEUE", "q", tID, "p")
	h.ok("EMQ.ENQUEUE", "q", tID2, "p")
	claimOne(t, h, "100")
	h.clk.Advance(100)
	now := h.clk.NowMs()
	if got := h.ok("EMQ.STALLED.CHECK", "q", "2", "100", "EVERY", "1000"); !reflect.DeepEqual(got, []any{[]any{tID}, []any{}}) {
		t.Fatalf("first guarded sweep: %v", got)
	}
	if v := h.s.DB(0).Get(tk.Meta); v == nil {
		t.Fatal("no meta after a guarded sweep")
	} else if at, _ := v.Hash().Get("swept_at"); string(at) != strconv.FormatInt(now, 10) {
		t.Fatalf("swept_at %q, want %d", at, now)
	}
	// Within the interval: skipped, nothing written, even with a lease out.
	claimOne(t, h, "100")
	h.clk.Advance(500)
	feed, dirty := h.feed.n, h.s.DirtyCount
	before := digest(h.s)
	if got := h.ok("EMQ.STALLED.CHECK", "q", "2", "EVERY", "1000"); !reflect.DeepEqual(got, []any{[]any{}, []any{}}) {
		t.Fatalf("guarded sweep within the interval: %v", got)
	}
	if digest(h.s) != before || h.feed.n != feed || h.s.DirtyCount != dirty {
		t.Fatal("a skipped sweep wrote")
	}
	// An unguarded sweep is never held back (and does not move the guard).
	if got := h.ok("EMQ.STALLED.CHECK", "q", "5"); !reflect.DeepEqual(got, []any{[]any{tID}, []any{}}) {
		t.Fatalf("unguarded sweep: %v", got)
	}
	claimOne(t, h, "100")
	h.clk.Advance(499) // 999 ms after the first guarded sweep
	if got := h.ok("EMQ.STALLED.CHECK", "q", "2", "EVERY", "1000"); !reflect.DeepEqual(got, []any{[]any{}, []any{}}) {
		t.Fatalf("999 ms after: %v", got)
	}
	h.clk.Advance(1) // exactly the interval: sweeps
	if got := h.ok("EMQ.STALLED.CHECK", "q", "EVERY", "1000"); !reflect.DeepEqual(got, []any{[]any{}, []any{tID}}) {
		t.Fatalf("at the interval (max_stalled 1 by default): %v", got)
	}
	// A guarded sweep that finds nothing still stamps the guard.
	h.clk.Advance(5000)
	h.ok("EMQ.STALLED.CHECK", "q", "EVERY", "1000")
	if at, _ := h.s.DB(0).Get(tk.Meta).Hash().Get("swept_at"); string(at) != strconv.FormatInt(h.clk.NowMs(), 10) {
		t.Fatalf("empty guarded sweep: swept_at %q", at)
	}
	// A swept_at in the future (the clock stepped back) does not hold back.
	h.hset(tk.Meta, "swept_at", strconv.FormatInt(h.clk.NowMs()+60000, 10))
	h.ok("EMQ.STALLED.CHECK", "q", "EVERY", "1000")
	if at, _ := h.s.DB(0).Get(tk.Meta).Hash().Get("swept_at"); string(at) != strconv.FormatInt(h.clk.NowMs(), 10) {
		t.Fatalf("future guard: swept_at %q", at)
	}
	// PAUSE keeps working beside the guard field.
	h.ok("EMQ.PAUSE", "q")
	h.ok("EMQ.RESUME", "q")
	if _, ok := h.s.DB(0).Get(tk.Meta).Hash().Get("swept_at"); !ok {
		t.Fatal("RESUME dropped swept_at")
	}
}

// TestSweepGuardRefusals: the arguments (left to right) and the stored
// guard (docs/verbs.md §4.11.1, §2.11).
func TestSweepGuardRefusals(t *testing.T) {
	h := newTH(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"EMQ.STALLED.CHECK", "q", "EVERY", "0"}, "ERR interval_ms must be a positive integer"},
		{[]string{"EMQ.STALLED.CHECK", "q", "1", "EVERY", "-5"}, "ERR interval_ms must be a positive integer"},
		{[]string{"EMQ.STALLED.CHECK", "q", "1", "1", "every", "x"}, "ERR value is not an integer or out of range"},
		{[]string{"EMQ.STALLED.CHECK", "q", "0", "EVERY", "x"}, "ERR max_stalled must be a positive integer"},
		{[]string{"EMQ.STALLED.CHECK", "q", "EVERY"}, "ERR syntax error"},
		{[]string{"EMQ.STALLED.CHECK", "q", "EVERY", "5", "1"}, "ERR syntax error"},
		{[]string{"EMQ.STALLED.CHECK", "q", "EVERY", "5", "EVERY", "5"}, "ERR syntax error"},
		{[]string{"EMQ.STALLED.CHECK", "q", "1", "1", "1", "EVERY", "5"}, "ERR syntax error"},
	} {
		if got := h.do(c.args...); got != replyErr(c.want) {
			t.Errorf("%v: %v, want %q", c.args, got, c.want)
		}
	}
	h.hset(tk.Meta, "swept_at", "soon")
	before := digest(h.s)
	if got := h.do("EMQ.STALLED.CHECK", "q", "EVERY", "5"); got != replyErr("ERR hash value is not an integer") {
		t.Fatalf("bad swept_at: %v", got)
	}
	if h.v.BadRowRefusals() != 1 || digest(h.s) != before {
		t.Fatal("a bad swept_at is a counted bad-row refusal that writes nothing")
	}
	// Without EVERY the guard is not read.
	h.ok("EMQ.STALLED.CHECK", "q")
	h.s.DB(0).Remove(tk.Meta)
	h.setString(tk.Meta, "x")
	if got := h.do("EMQ.STALLED.CHECK", "q", "EVERY", "5"); got != replyErr("WRONGTYPE Operation against a key holding the wrong kind of value") {
		t.Fatalf("meta of another type: %v", got)
	}
}

// TestEnqueueManyTenThousand: 10,000 jobs in one call, one plan, one Feed
// record; then the same batch with one bad id in the middle writes nothing
// (docs/verbs.md §4.2.1).
func TestEnqueueManyTenThousand(t *testing.T) {
	h := newTH(t)
	const n = 10000
	args := []string{"EMQ.ENQUEUE.MANY", "q", "JOBS"}
	for i := 0; i < n; i++ {
		args = append(args, "*", "p"+strconv.Itoa(i))
	}
	feed := h.feed.n
	got := h.ok(args...).([]any)
	if len(got) != n || h.feed.n != feed+1 {
		t.Fatalf("%d replies, %d feed records, want %d and 1", len(got), h.feed.n-feed, n)
	}
	first, _ := DecodeID([]byte(got[0].(string)))
	for i, x := range got {
		id := x.(string)
		if m, _ := DecodeID([]byte(id)); m != first+int64(i) {
			t.Fatalf("reply %d: %s, want the minted number %d", i, id, first+int64(i))
		}
	}
	if first != tNow {
		t.Fatalf("first minted number %d, want the clock %d", first, tNow)
	}
	if c := h.ok("EMQ.COUNTS", "q").([]any); c[1] != int64(n) {
		t.Fatalf("counts %v", c)
	}
	if h.field("q", got[4321].(string), "payload") != "p4321" || h.field("q", got[4321].(string), "state") != "pending" || h.field("q", got[4321].(string), "attempts") != "0" {
		t.Fatalf("row %s", h.row("q", got[4321].(string)))
	}
	if last, _ := h.s.DB(0).Get(MintKey).Hash().Get("last"); string(last) != got[n-1].(string) {
		t.Fatalf("{emq}:mint last %q, want %s", last, got[n-1])
	}
	// One bad id in the middle: nothing written.
	bad := []string{"EMQ.ENQUEUE.MANY", "other", "JOBS"}
	for i := 0; i < n; i++ {
		id := EncodeID(int64(i + 1))
		if i == n/2 {
			id = "JOB-bad"
		}
		bad = append(bad, id, "x")
	}
	before, feed := digest(h.s), h.feed.n
	if r := h.do(bad...); r != replyErr(ErrKind) {
		t.Fatalf("bad id in the middle: %v", r)
	}
	if digest(h.s) != before || h.feed.n != feed {
		t.Fatal("a refused batch wrote")
	}
}

// TestEnqueueManyIsSequentialEnqueues: over random states and batches, a
// batch that is not refused answers and leaves the keyspace exactly as the
// same pairs sent one by one with EMQ.ENQUEUE and the same options; a
// refused one writes nothing.
func TestEnqueueManyIsSequentialEnqueues(t *testing.T) {
	rng := rand.New(rand.NewSource(21))
	ids := append([]string{"*", "*", "*"}, propIDs...)
	ids = append(ids, EncodeID(tNow), EncodeID(tNow+1), EncodeID(tNow+2))
	refused := 0
	for s := 0; s < 400; s++ {
		seed := rng.Int63()
		mk := func() *th {
			h := newTH(t)
			randomState(h, rand.New(rand.NewSource(seed)))
			return h
		}
		a, b := mk(), mk()
		var opts []string
		switch rng.Intn(3) {
		case 1:
			opts = []string{"DELAY", strconv.Itoa(rng.Intn(3000))}
		case 2:
			opts = []string{"AT", strconv.Itoa(int(tNow) + rng.Intn(3000) - 1500)}
		}
		batch := append(append([]string{"EMQ.ENQUEUE.MANY", "q"}, opts...), "JOBS")
		var singles [][]string
		for j, m := 0, 1+rng.Intn(8); j < m; j++ {
			id, pay := pick(rng, ids...), "p"+strconv.Itoa(j)
			batch = append(batch, id, pay)
			singles = append(singles, append([]string{"EMQ.ENQUEUE", "q", id, pay}, opts...))
		}
		before := digest(a.s)
		got := a.do(batch...)
		if e, isErr := got.(replyErr); isErr {
			refused++
			if digest(a.s) != before {
				t.Fatalf("%q refused with %s but wrote", batch, e)
			}
			continue
		}
		var want []any
		for _, one := range singles {
			r := b.do(one...)
			if e, isErr := r.(replyErr); isErr {
				t.Fatalf("batch %q admitted, but %q alone refused: %s", batch, one, e)
			}
			want = append(want, r)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: %v, one by one %v", batch, got, want)
		}
		if digest(a.s) != digest(b.s) {
			t.Fatalf("%q: the keyspace differs from the one-by-one enqueues", batch)
		}
	}
	if refused == 0 || refused > 300 {
		t.Fatalf("%d of 400 batches refused", refused)
	}
}

// TestEnqueueManyArguments: options before JOBS, checked left to right,
// then every id's shape, before any key is read.
func TestEnqueueManyArguments(t *testing.T) {
	h := newTH(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"EMQ.ENQUEUE.MANY", "q", "JOBS", "*"}, "ERR wrong number of arguments for 'emq.enqueue.many' command"},
		{[]string{"EMQ.ENQUEUE.MANY", "q", "JOBS", "*", "p", "*"}, "ERR syntax error"},
		{[]string{"EMQ.ENQUEUE.MANY", "q", "*", "p", "*", "p"}, "ERR syntax error"},
		{[]string{"EMQ.ENQUEUE.MANY", "q", "DELAY", "5", "AT", "5", "JOBS", "*", "p"}, "ERR syntax error"},
		{[]string{"EMQ.ENQUEUE.MANY", "q", "DELAY", "-1", "JOBS", "*", "p"}, "ERR delay_ms must be a non-negative integer"},
		{[]string{"EMQ.ENQUEUE.MANY", "q", "at", "x", "JOBS", "nope", "p"}, "ERR value is not an integer or out of range"},
		{[]string{"EMQ.ENQUEUE.MANY", "q", "DELAY", "5", "JOBS", "*", "p", "nope", "p"}, ErrKind},
		{[]string{"EMQ.ENQUEUE.MANY", "a:b", "JOBS", "*", "p"}, ErrInvalidQueue},
	} {
		if got := h.do(c.args...); got != replyErr(c.want) {
			t.Errorf("%v: %v, want %q", c.args, got, c.want)
		}
	}
	if digest(h.s) != digest(newTH(t).s) {
		t.Fatal("argument errors wrote")
	}
	// Duplicates: an existing row, and an id admitted earlier in the batch.
	h.ok("EMQ.ENQUEUE", "q", tID, "old")
	got := h.ok("EMQ.ENQUEUE.MANY", "q", "delay", "10", "JOBS", tID, "new", tID2, "a", tID2, "b")
	if !reflect.DeepEqual(got, []any{nil, tID2, nil}) || h.field("q", tID, "payload") != "old" || h.field("q", tID2, "payload") != "a" {
		t.Fatalf("duplicates: %v %s %s", got, h.row("q", tID), h.row("q", tID2))
	}
	if h.field("q", tID2, "state") != "scheduled" {
		t.Fatalf("DELAY: %s", h.row("q", tID2))
	}
	// All duplicates: nothing written.
	before, feed := digest(h.s), h.feed.n
	if got := h.ok("EMQ.ENQUEUE.MANY", "q", "JOBS", tID, "x"); !reflect.DeepEqual(got, []any{nil}) || digest(h.s) != before || h.feed.n != feed {
		t.Fatalf("all duplicates: %v", got)
	}
}

// TestNextIsFinishThenClaim is the property of docs/verbs.md §4.5.1 over
// random states (jobs in every state, broken rows among them): EMQ.COMPLETE
// / EMQ.FAIL with NEXT answers and leaves the keyspace exactly as the same
// verb without NEXT followed by EMQ.CLAIM q lease_ms COUNT n; it is refused
// exactly when one of the two would be, and then writes nothing; it writes
// one Feed record.
func TestNextIsFinishThenClaim(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	served, refused := 0, 0
	for s := 0; s < 3000; s++ {
		seed := rng.Int63()
		mk := func() *th {
			h := newTH(t)
			randomState(h, rand.New(rand.NewSource(seed)))
			return h
		}
		a, b := mk(), mk()
		// Leases held for real: the same claim on both sides, then mostly
		// a held job with its token.
		warm := []string{"EMQ.CLAIM", "q", "1000", "COUNT", pick(rng, "1", "3")}
		a.do(warm...)
		b.do(warm...)
		id, tok := pick(rng, propIDs...), pick(rng, "1", "1", "2", "0")
		if v := a.s.DB(0).Get(tk.Active); v != nil && v.ZSet != nil && rng.Intn(5) != 0 {
			var held []string
			v.ZSet.AscendAll(func(it store.ZItem) bool { held = append(held, it.Member); return true })
			if len(held) > 0 {
				id = held[rng.Intn(len(held))]
				if rv := a.s.DB(0).Get(tk.Row(id)); rv != nil && rv.Hash() != nil {
					if at, ok := rv.Hash().Get("attempts"); ok {
						tok = string(at)
					}
				}
			}
		}
		if rng.Intn(4) == 0 {
			a.clk.Advance(2000) // some leases past their deadline, some due times passed
			b.clk.Advance(2000)
		}
		var finish []string
		if rng.Intn(2) == 0 {
			finish = []string{"EMQ.COMPLETE", "q", id, tok}
		} else {
			finish = []string{"EMQ.FAIL", "q", id, tok, pick(rng, "1", "3"), pick(rng, "0", "0", "500"), "err"}
		}
		lease, count := pick(rng, "1000", "50"), pick(rng, "1", "2", "5")
		claim := []string{"EMQ.CLAIM", "q", lease, "COUNT", count}
		with := append(append([]string{}, finish...), "NEXT", lease)
		if count != "1" || rng.Intn(2) == 0 {
			if rng.Intn(2) == 0 {
				with = append(append(append([]string{}, finish...), "COUNT", count), "NEXT", lease)
			} else {
				with = append(with, "COUNT", count)
			}
		}
		before, feed := digest(a.s), a.feed.n
		got := a.do(with...)
		r1 := b.do(finish...)
		var r2 any
		if _, isErr := r1.(replyErr); !isErr {
			r2 = b.do(claim...)
		}
		e1, bad1 := r1.(replyErr)
		e2, bad2 := r2.(replyErr)
		if bad1 || bad2 {
			refused++
			want := e1
			if !bad1 {
				want = e2
			}
			if got != want {
				t.Fatalf("%q: %v, want the refusal %q (%q then %q: %v, %v)", with, got, want, finish, claim, r1, r2)
			}
			if digest(a.s) != before || a.feed.n != feed {
				t.Fatalf("%q refused but wrote", with)
			}
			continue
		}
		served++
		var want any = r2
		if finish[0] == "EMQ.FAIL" {
			want = append(r1.([]any), r2)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: %v, want %v", with, got, want)
		}
		if digest(a.s) != digest(b.s) {
			t.Fatalf("%q: keyspace differs from %q then %q", with, finish, claim)
		}
		if a.feed.n != feed+1 {
			t.Fatalf("%q: %d Feed records, want 1", with, a.feed.n-feed)
		}
	}
	if served < 300 || refused < 300 {
		t.Fatalf("served %d, refused %d of 3000", served, refused)
	}
	t.Logf("served %d, refused %d", served, refused)
}

// TestNextArguments: NEXT's options after the verb's own arguments
// (docs/verbs.md §4.5.1).
func TestNextArguments(t *testing.T) {
	h := newTH(t)
	h.ok("EMQ.ENQUEUE", "q", tID, "p")
	claimOne(t, h, "1000")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"EMQ.COMPLETE", "q", tID, "1", "NEXT"}, "ERR syntax error"},
		{[]string{"EMQ.COMPLETE", "q", tID, "1", "COUNT", "2"}, "ERR syntax error"},
		{[]string{"EMQ.COMPLETE", "q", tID, "1", "NEXT", "0"}, "ERR lease_ms must be a positive integer"},
		{[]string{"EMQ.COMPLETE", "q", tID, "1", "NEXT", "10", "COUNT", "0"}, "ERR count must be a positive integer"},
		{[]string{"EMQ.COMPLETE", "q", tID, "1", "NEXT", "10", "NEXT", "10"}, "ERR syntax error"},
		{[]string{"EMQ.COMPLETE", "q", tID, "1", "NEXT", "10", "BLOCK", "10"}, "ERR syntax error"},
		{[]string{"EMQ.FAIL", "q", tID, "1", "3", "0", "e", "NEXT", "x"}, "ERR value is not an integer or out of range"},
		{[]string{"EMQ.FAIL", "q", tID, "1", "0", "0", "e", "NEXT", "5"}, "ERR max_attempts must be a positive integer"},
		{[]string{"EMQ.COMPLETE", "q", tID, "9", "NEXT", "10"}, "EMQSTALE complete token mismatch"},
	} {
		before := digest(h.s)
		if got := h.do(c.args...); got != replyErr(c.want) {
			t.Errorf("%v: %v, want %q", c.args, got, c.want)
		}
		if digest(h.s) != before {
			t.Errorf("%v wrote", c.args)
		}
	}
	// A worker's loop: complete one, get the next in the same call.
	h.ok("EMQ.ENQUEUE", "q", tID2, "p2")
	got := h.ok("EMQ.COMPLETE", "q", tID, "1", "next", "1000", "count", "5")
	if !reflect.DeepEqual(got, []any{[]any{tID2, "p2", "1", int64(0)}}) {
		t.Fatalf("COMPLETE NEXT: %v", got)
	}
	// FAIL with a retry due at once: the claim takes the failed job back.
	got = h.ok("EMQ.FAIL", "q", tID2, "1", "3", "0", "boom", "NEXT", "1000")
	if !reflect.DeepEqual(got, []any{"scheduled", int64(1), []any{[]any{tID2, "p2", "2", int64(1)}}}) {
		t.Fatalf("FAIL NEXT: %v", got)
	}
	// Nothing to claim: an empty array.
	if got := h.ok("EMQ.COMPLETE", "q", tID2, "2", "NEXT", "1000"); !reflect.DeepEqual(got, []any{}) {
		t.Fatalf("COMPLETE NEXT on an empty queue: %v", got)
	}
}

// TestQueueLatency: EMQ.COUNTS' latency_ms is the age of the job the next
// claim takes (docs/verbs.md §4.16), on the server clock; 0 with nothing
// pending or a head row without a readable enqueued_at.
func TestQueueLatency(t *testing.T) {
	h := newTH(t)
	lat := func() int64 { return h.ok("EMQ.COUNTS", "q").([]any)[15].(int64) }
	if lat() != 0 {
		t.Fatal("empty queue")
	}
	h.ok("EMQ.ENQUEUE", "q", tID2, "p")
	h.clk.Advance(1500)
	h.ok("EMQ.ENQUEUE", "q", tID3, "p")
	h.clk.Advance(500)
	if got := lat(); got != 2000 {
		t.Fatalf("latency %d, want 2000 (the head, %s, waited 2 s)", got, tID2)
	}
	claimOne(t, h, "1000") // takes the head
	if got := lat(); got != 500 {
		t.Fatalf("latency %d, want 500", got)
	}
	h.hset(tk.Row(tID3), "enqueued_at", "soon")
	if got := lat(); got != 0 {
		t.Fatalf("unreadable enqueued_at: %d", got)
	}
	h.hset(tk.Row(tID3), "enqueued_at", strconv.FormatInt(h.clk.NowMs()+10, 10))
	if got := lat(); got != 0 {
		t.Fatalf("enqueued_at in the future: %d", got)
	}
}
