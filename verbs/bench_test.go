package verbs

import (
	"testing"

	"github.com/emqd/emqd/resp"
	"github.com/emqd/emqd/store"
)

// BenchmarkJobCycle is one ENQUEUE *, CLAIM, COMPLETE through the handlers
// (no network), the native side of bench/cmd/jobcycle.
func BenchmarkJobCycle(b *testing.B) {
	s := store.New(16)
	s.Feed = nopFeed{}
	c := &store.Ctx{S: s, DB: s.DB(0), W: &resp.Writer{Proto: 2}, RunID: tRun, NowMs: tNow}
	vs := New(Config{})
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
	s.Feed = nopFeed{}
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
