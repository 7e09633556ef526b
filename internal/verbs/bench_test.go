package verbs

import (
	"bytes"
	"runtime"
	"testing"

	"github.com/emqd/emqd/internal/resp"
	"github.com/emqd/emqd/internal/store"
)

// BenchmarkJobCycle is one ENQUEUE *, CLAIM, COMPLETE through the handlers
// (no network), the native side of bench/cmd/jobcycle.
func BenchmarkJobCycle(b *testing.B) { benchJobCycle(b, nopFeed{}, Config{}) }

// BenchmarkJobCycleNoFeed is BenchmarkJobCycle with nothing recording the
// writes (appendonly no, as bench/compare.sh runs the servers): the plans
// are not rendered for a Feed.
func BenchmarkJobCycleNoFeed(b *testing.B) { benchJobCycle(b, nil, Config{}) }

// BenchmarkEventsNoSubscriber is BenchmarkJobCycleNoFeed with the events
// of docs/verbs.md §1.6 wired as the server wires them: "off" without the
// Pub/Sub hooks, "unsubscribed" with them and nobody listening (the cost a
// queue pays for its events when no one subscribes: one map lookup per
// transition), "subscribed" with a subscriber on the channel (three
// messages built and handed over per cycle).
func BenchmarkEventsNoSubscriber(b *testing.B) {
	subs := map[string]int{}
	listening := func(ch string) bool { return subs[ch] > 0 }
	var got int
	publish := func(ch string, msg []byte) { got += len(msg) }
	b.Run("off", func(b *testing.B) { benchJobCycle(b, nil, Config{}) })
	b.Run("unsubscribed", func(b *testing.B) {
		benchJobCycle(b, nil, Config{Publish: publish, Listening: listening})
	})
	b.Run("subscribed", func(b *testing.B) {
		subs[NewKeys("q").Events] = 1
		defer delete(subs, NewKeys("q").Events)
		benchJobCycle(b, nil, Config{Publish: publish, Listening: listening})
		if got == 0 {
			b.Fatal("nothing published to the subscriber")
		}
	})
}

func benchJobCycle(b *testing.B, feed store.Feed, cfg Config) {
	s := store.New(16)
	s.SetFeed(feed)
	c := &store.Ctx{S: s, DB: s.DB(0), W: &resp.Writer{Proto: 2}, RunID: tRun, NowMs: tNow}
	vs := New(cfg)
	enq := [][]byte{[]byte("EMQ.ENQUEUE"), []byte("q"), []byte("*"), []byte("payload-bytes")}
	claim := [][]byte{[]byte("EMQ.CLAIM"), []byte("q"), []byte("30000")}
	complete := [][]byte{[]byte("EMQ.COMPLETE"), []byte("q"), nil, nil}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		c.NowMs++
		c.W.Reset()
		c.ResetForCommand(enq)
		vs.cmdEnqueue(c)
		c.W.Reset()
		c.ResetForCommand(claim)
		vs.cmdClaim(c)
		// *1 *4 $14 id ...
		buf := c.W.Buf
		complete[2] = buf[13 : 13+14]
		complete[3] = []byte("1")
		w := &resp.Writer{Proto: 2}
		cc := *c
		cc.W = w
		cc.ResetForCommand(complete)
		vs.cmdComplete(&cc)
		if string(w.Buf) != ":1\r\n" {
			b.Fatalf("complete: %q (claim %q)", w.Buf, buf)
		}
	}
}

func BenchmarkEnqueue(b *testing.B) {
	s := store.New(16)
	s.SetFeed(nopFeed{})
	c := &store.Ctx{S: s, DB: s.DB(0), W: &resp.Writer{Proto: 2}, RunID: tRun, NowMs: tNow}
	vs := New(Config{})
	enq := [][]byte{[]byte("EMQ.ENQUEUE"), []byte("q"), []byte("*"), []byte("payload-bytes")}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		c.W.Reset()
		c.ResetForCommand(enq)
		vs.cmdEnqueue(c)
	}
}

// nopFeed stands for the AOF: the plan is rendered, then dropped.
type nopFeed struct{}

func (nopFeed) Append(int, [][][]byte) {}

// BenchmarkPendingJobMemory enqueues b.N jobs (client ids, 64-byte
// payloads, one queue) and reports the heap each pending job keeps
// (retained-B/job: live heap growth after a full GC, divided by b.N) beside
// -benchmem's allocations per enqueue. The arguments of each command are cut
// from one fresh buffer, as the request reader hands them out. bench/compare.sh
// measures the same thing on the running server (RSS per job).
func BenchmarkPendingJobMemory(b *testing.B) {
	s := store.New(16)
	s.SetFeed(nopFeed{})
	c := &store.Ctx{S: s, DB: s.DB(0), W: &resp.Writer{Proto: 2}, RunID: tRun, NowMs: tNow}
	vs := New(Config{})
	payload := bytes.Repeat([]byte("x"), 64)
	id := []byte("JOB00000000000")
	argv := make([][]byte, 4)
	before := liveHeap()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		n := i
		for j := 13; j >= 3; j-- {
			id[j] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"[n%62]
			n /= 62
		}
		buf := make([]byte, 0, 11+1+14+64)
		buf = append(append(append(append(buf, "EMQ.ENQUEUE"...), 'q'), id...), payload...)
		argv[0], argv[1], argv[2], argv[3] = buf[:11:11], buf[11:12:12], buf[12:26:26], buf[26:90:90]
		c.W.Reset()
		c.ResetForCommand(argv)
		vs.cmdEnqueue(c)
	}
	b.StopTimer()
	if got := s.DB(0).Len(); got != b.N+1 {
		b.Fatalf("%d keys after %d enqueues", got, b.N)
	}
	b.ReportMetric(float64(liveHeap()-before)/float64(b.N), "retained-B/job")
	runtime.KeepAlive(s)
}

// liveHeap is the heap in use after a full collection, in bytes.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// nextCycle returns one job cycle in the NEXT form (docs/verbs.md §4.5.1)
// on queue q of vs, as bench/cmd/jobcycle's NEXT worker runs it: ENQUEUE q
// * payload, then COMPLETE q <held> 1 NEXT 30000, which completes the job
// claimed by the previous step and claims the one just enqueued. The
// first call claims a job with a plain CLAIM; argv and writer are reused;
// t fails unless each claim hands out a job with token 1.
func nextCycle(t testing.TB, vs *Verbs, c *store.Ctx) func() {
	enq := [][]byte{[]byte("EMQ.ENQUEUE"), []byte("q"), []byte("*"), []byte("payload-bytes")}
	complete := [][]byte{[]byte("EMQ.COMPLETE"), []byte("q"), make([]byte, 0, 32), []byte("1"), []byte("NEXT"), []byte("30000")}
	held := false
	// take reads the claimed job's id from a claim array (*1 *4 $14 <id>
	// ... $1 1 ...) into complete[2].
	take := func(what string) {
		buf := c.W.Buf
		if len(buf) < 13+14 || string(buf[:11]) != "*1\r\n*4\r\n$14" {
			t.Fatalf("%s: %q", what, buf)
		}
		complete[2] = append(complete[2][:0], buf[13:13+14]...)
	}
	return func() {
		c.NowMs++
		c.W.Reset()
		c.ResetForCommand(enq)
		vs.cmdEnqueue(c)
		c.W.Reset()
		if !held {
			c.ResetForCommand([][]byte{[]byte("EMQ.CLAIM"), []byte("q"), []byte("30000")})
			vs.cmdClaim(c)
			take("claim")
			held = true
			c.W.Reset()
			c.ResetForCommand(enq)
			vs.cmdEnqueue(c)
			c.W.Reset()
		}
		c.ResetForCommand(complete)
		vs.cmdComplete(c)
		take("complete NEXT")
	}
}

// BenchmarkJobCycleNext is one job of the NEXT form's cycle: ENQUEUE *,
// COMPLETE ... NEXT (nextCycle), beside BenchmarkJobCycle's three verbs.
func BenchmarkJobCycleNext(b *testing.B) {
	s := store.New(16)
	s.SetFeed(nopFeed{})
	c := &store.Ctx{S: s, DB: s.DB(0), W: &resp.Writer{Proto: 2}, RunID: tRun, NowMs: tNow}
	cycle := nextCycle(b, New(Config{}), c)
	cycle()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cycle()
	}
}

// BenchmarkJobCycleBatch100 is bench/cmd/jobcycle's pipelined worker
// through the handlers, per job: batches of 100 jobs on one queue, in the
// plain form (100 ENQUEUE *, 100 CLAIM, 100 COMPLETE) and the NEXT form
// (100 ENQUEUE *, then 100 COMPLETE ... NEXT of the jobs held, each
// claiming one of the batch just enqueued). pending and active hold about
// 100 members each: small sorted sets, whose removals from the front are
// in place (internal/store/listpack.go).
func BenchmarkJobCycleBatch100(b *testing.B) {
	for _, next := range []bool{false, true} {
		name := "plain"
		if next {
			name = "next"
		}
		b.Run(name, func(b *testing.B) { benchJobBatch(b, next, 100) })
	}
}

func benchJobBatch(b *testing.B, next bool, batch int) {
	s := store.New(16)
	s.SetFeed(nopFeed{})
	c := &store.Ctx{S: s, DB: s.DB(0), W: &resp.Writer{Proto: 2}, RunID: tRun, NowMs: tNow}
	vs := New(Config{})
	enq := [][]byte{[]byte("EMQ.ENQUEUE"), []byte("q"), []byte("*"), []byte("payload-bytes")}
	claim := [][]byte{[]byte("EMQ.CLAIM"), []byte("q"), []byte("30000")}
	complete := [][]byte{[]byte("EMQ.COMPLETE"), []byte("q"), nil, []byte("1")}
	completeNext := [][]byte{[]byte("EMQ.COMPLETE"), []byte("q"), nil, []byte("1"), []byte("NEXT"), []byte("30000")}
	held := make([][]byte, batch)
	for i := range held {
		held[i] = make([]byte, 14)
	}
	// take reads the id of the job a claim array hands out into held[i].
	take := func(i int) {
		buf := c.W.Buf
		if len(buf) < 13+14 || string(buf[:11]) != "*1\r\n*4\r\n$14" {
			b.Fatalf("claim: %q", buf)
		}
		copy(held[i], buf[13:13+14])
	}
	enqueue := func() {
		for range batch {
			c.W.Reset()
			c.ResetForCommand(enq)
			vs.cmdEnqueue(c)
		}
	}
	claimAll := func() {
		for i := range batch {
			c.W.Reset()
			c.ResetForCommand(claim)
			vs.cmdClaim(c)
			take(i)
		}
	}
	if next {
		enqueue()
		claimAll()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += batch {
		c.NowMs++
		enqueue()
		if !next {
			claimAll()
		}
		for i := range batch {
			c.W.Reset()
			if next {
				completeNext[2] = held[i]
				c.ResetForCommand(completeNext)
				vs.cmdComplete(c)
				take(i)
			} else {
				complete[2] = held[i]
				c.ResetForCommand(complete)
				vs.cmdComplete(c)
				if string(c.W.Buf) != ":1\r\n" {
					b.Fatalf("complete: %q", c.W.Buf)
				}
			}
		}
	}
}
