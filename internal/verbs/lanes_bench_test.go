package verbs

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/emqd/emqd/internal/resp"
	"github.com/emqd/emqd/internal/store"
)

// BenchmarkLaneClaim is one EMQ.CLAIM q lease of a queue with n backlogged
// lanes (docs/verbs.md §4.26.2) and the EMQ.REQUEUE that puts the job back
// (so the backlog stays), through the handlers: the claim's cost should
// grow with log(lanes), not with lanes. n=0 is the same cycle on a queue
// without lanes.
func BenchmarkLaneClaim(b *testing.B) {
	for _, n := range []int{0, 1, 100, 10000} {
		b.Run(fmt.Sprintf("lanes=%d", n), func(b *testing.B) {
			s := store.New(16)
			s.SetFeed(nopFeed{})
			c := &store.Ctx{S: s, DB: s.DB(0), W: &resp.Writer{Proto: 2}, RunID: tRun, NowMs: tNow}
			vs := New(Config{})
			run := func(args ...string) []byte {
				argv := make([][]byte, len(args))
				for i, a := range args {
					argv[i] = []byte(a)
				}
				c.W.Reset()
				c.ResetForCommand(argv)
				vs.handlers()[lowerName(args[0])](c)
				return c.W.Buf
			}
			lanes := max(n, 1)
			for l := 0; l < lanes; l++ {
				for j := 0; j < 3; j++ {
					if n == 0 {
						run("EMQ.ENQUEUE", "q", "*", "p")
					} else {
						run("EMQ.ENQUEUE", "q", "*", "p", "LANE", "l"+strconv.Itoa(l))
					}
				}
			}
			claim := [][]byte{[]byte("EMQ.CLAIM"), []byte("q"), []byte("30000")}
			requeue := [][]byte{[]byte("EMQ.REQUEUE"), []byte("q"), nil, nil}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c.NowMs++
				c.W.Reset()
				c.ResetForCommand(claim)
				vs.cmdClaim(c)
				buf := c.W.Buf
				if len(buf) < 27 {
					b.Fatalf("claim %q", buf)
				}
				requeue[2] = append(requeue[2][:0], buf[13:13+14]...)
				// The token: after "$7\r\npayload"? payload is "p": *1 *4 $14 id $1 p $n tok
				rest := buf[13+14+2:] // "$1\r\np\r\n$<n>\r\n<tok>\r\n..."
				rest = rest[7:]
				k := 1
				for rest[k] != '\r' {
					k++
				}
				tl, _ := strconv.Atoi(string(rest[1:k]))
				requeue[3] = append(requeue[3][:0], rest[k+2:k+2+tl]...)
				c.W.Reset()
				c.ResetForCommand(requeue)
				vs.cmdRequeue(c)
				if string(c.W.Buf) != ":1\r\n" {
					b.Fatalf("requeue: %q after %q", c.W.Buf, buf)
				}
			}
		})
	}
}

func lowerName(s string) string {
	b := []byte(s)
	for i, ch := range b {
		if ch >= 'A' && ch <= 'Z' {
			b[i] = ch + 'a' - 'A'
		}
	}
	return string(b)
}

// BenchmarkJobCycleLanes is BenchmarkJobCycle (ENQUEUE *, CLAIM, COMPLETE)
// with lanes off and on (every job in lane "x" of a queue with one other,
// idle, configured lane), and each with a backlog of 100 pending jobs
// (backlog=100: lane x never empties, so its keys are not created and
// removed every cycle, docs/verbs.md §4.26.4).
func BenchmarkJobCycleLanes(b *testing.B) {
	for _, bc := range []struct {
		on      bool
		backlog int
	}{{false, 0}, {true, 0}, {false, 100}, {true, 100}} {
		on := bc.on
		name := fmt.Sprintf("lanes=%v", on)
		if bc.backlog > 0 {
			name += fmt.Sprintf(",backlog=%d", bc.backlog)
		}
		b.Run(name, func(b *testing.B) {
			s := store.New(16)
			s.SetFeed(nopFeed{})
			c := &store.Ctx{S: s, DB: s.DB(0), W: &resp.Writer{Proto: 2}, RunID: tRun, NowMs: tNow}
			vs := New(Config{})
			enq := [][]byte{[]byte("EMQ.ENQUEUE"), []byte("q"), []byte("*"), []byte("payload-bytes")}
			if on {
				enq = append(enq, []byte("LANE"), []byte("x"))
				c.ResetForCommand([][]byte{[]byte("EMQ.LANE"), []byte("q"), []byte("y"), []byte("WEIGHT"), []byte("2")})
				vs.cmdLane(c)
			}
			claim := [][]byte{[]byte("EMQ.CLAIM"), []byte("q"), []byte("30000")}
			complete := [][]byte{[]byte("EMQ.COMPLETE"), []byte("q"), nil, []byte("1")}
			for range bc.backlog {
				c.NowMs++
				c.W.Reset()
				c.ResetForCommand(enq)
				vs.cmdEnqueue(c)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c.NowMs++
				c.W.Reset()
				c.ResetForCommand(enq)
				vs.cmdEnqueue(c)
				c.W.Reset()
				c.ResetForCommand(claim)
				vs.cmdClaim(c)
				buf := c.W.Buf
				complete[2] = append(complete[2][:0], buf[13:13+14]...)
				c.W.Reset()
				c.ResetForCommand(complete)
				vs.cmdComplete(c)
				if string(c.W.Buf) != ":1\r\n" {
					b.Fatalf("complete: %q (claim %q)", c.W.Buf, buf)
				}
			}
		})
	}
}
