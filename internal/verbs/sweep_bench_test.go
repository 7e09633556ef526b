package verbs

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/emqd/emqd/internal/resp"
	"github.com/emqd/emqd/internal/store"
)

// BenchmarkStalledCheck is the native side of bench/cmd/jobcycle's stall
// sweep through the handlers (no network): 100,000 jobs are enqueued and
// claimed for 1 ms (1,000 per claim), then one op is EMQ.STALLED.CHECK q 1
// 100 until the sweep comes back empty (1,001 calls). The setup is not timed.
func BenchmarkStalledCheck(b *testing.B) {
	const leases, chunk = 100000, 1000
	b.ReportAllocs()
	var cpu time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s := store.New(16) // no Feed: the bench runs appendonly no
		c := &store.Ctx{S: s, DB: s.DB(0), W: &resp.Writer{Proto: 2}, RunID: tRun, NowMs: tNow}
		vs := New(Config{})
		payload := make([]byte, 64)
		for first := 0; first < leases; first += chunk {
			for j := first; j < first+chunk; j++ {
				c.W.Reset()
				c.ResetForCommand([][]byte{[]byte("EMQ.ENQUEUE"), []byte("q"), []byte("JOB" + strconv.FormatInt(int64(10_000_000_000+j), 10)[:11]), payload})
				vs.cmdEnqueue(c)
			}
			c.W.Reset()
			c.ResetForCommand([][]byte{[]byte("EMQ.CLAIM"), []byte("q"), []byte("1"), []byte("COUNT"), []byte("1000")})
			vs.cmdClaim(c)
			c.NowMs++
		}
		c.NowMs += 20
		sweep := [][]byte{[]byte("EMQ.STALLED.CHECK"), []byte("q"), []byte("1"), []byte("100")}
		runtime.GC() // the setup's garbage is not the sweep's
		b.StartTimer()
		cpu0 := cpuTime()
		calls := 0
		for {
			c.W.Reset()
			c.ResetForCommand(sweep)
			vs.cmdStalledCheck(c)
			calls++
			if string(c.W.Buf) == "*2\r\n*0\r\n*0\r\n" {
				break
			}
		}
		cpu += cpuTime() - cpu0
		b.StopTimer()
		if calls != leases/100+1 {
			b.Fatalf("%d calls, last reply %q", calls, c.W.Buf)
		}
		b.StartTimer()
	}
	// CPU time of the process (every thread, the GC's too) per sweep: on a
	// shared machine it moves less than the elapsed time.
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

// cpuTime is the user and system CPU time of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// sweepCallAllocsMax bounds the allocations of one EMQ.STALLED.CHECK of
// 100 expired leases (TestStalledCheckAllocs): a few per call (the
// verdicts, the tree leaves of dead; until round 7 also the reply's id
// lists and the row keys' one string) and none per lease: each row is rewritten in place (read
// unmarked, docs/architecture.md §2.5 "Views of a row and its in-place
// write"; the claim left room for the death's fields). Before the sweep's
// scratch was reused it was 5.2 per lease (bench/README.md, "What stands
// in the way: the stall sweep"), before the in-place rewrite 1.1 (111, 109
// and 109 per call).
const sweepCallAllocsMax = 16

// TestStalledCheckAllocs guards the sweep's allocations per call, on the
// dead-letter path (max_stalled 1), the recovery path (max_stalled 2) and
// the restart exemption (leases of another run id): at most
// sweepCallAllocsMax (10, 8 and 8 when written; 7, 6 and 6 since the
// reply's id lists are lent and the row keys are the keyspace's strings,
// round 7), fewer than one per ten
// leases, where a row copied per lease would be 100 more.
func TestStalledCheckAllocs(t *testing.T) {
	for _, tc := range []struct {
		name       string
		maxStalled string
		runID      string
	}{{"dead", "1", tRun}, {"recover", "2", tRun}, {"exempt", "1", "another-run"}} {
		t.Run(tc.name, func(t *testing.T) {
			const runs, per = 10, 100
			s := store.New(16)
			c := &store.Ctx{S: s, DB: s.DB(0), W: &resp.Writer{Proto: 2}, RunID: tRun, NowMs: tNow}
			vs := New(Config{})
			for j := 0; j < (runs+2)*per; j++ {
				c.W.Reset()
				c.ResetForCommand([][]byte{[]byte("EMQ.ENQUEUE"), []byte("q"), []byte(fmt.Sprintf("JOB%011d", j)), []byte("payload")})
				vs.cmdEnqueue(c)
				if c.W.Buf[0] == '-' {
					t.Fatalf("enqueue: %q", c.W.Buf)
				}
			}
			for j := 0; j < runs+2; j++ {
				c.W.Reset()
				c.ResetForCommand([][]byte{[]byte("EMQ.CLAIM"), []byte("q"), []byte("1"), []byte("COUNT"), []byte(strconv.Itoa(per))})
				vs.cmdClaim(c)
				if !strings.HasPrefix(string(c.W.Buf), "*100\r\n") {
					t.Fatalf("claim: %.80q", c.W.Buf)
				}
			}
			c.NowMs += 20
			c.RunID = tc.runID
			sweep := [][]byte{[]byte("EMQ.STALLED.CHECK"), []byte("q"), []byte(tc.maxStalled), []byte(strconv.Itoa(per))}
			call := func() {
				c.W.Reset()
				c.ResetForCommand(sweep)
				vs.cmdStalledCheck(c)
				if n := strings.Count(string(c.W.Buf), "$14\r\n"); n != per {
					t.Fatalf("sweep listed %d ids, want %d: %.80q", n, per, c.W.Buf)
				}
			}
			call() // the scratch's first sizing
			got := testing.AllocsPerRun(runs, call)
			if raceEnabled {
				// -race allocates beside the code (about one more per
				// lease here): the count is not the code's.
				t.Logf("%s under -race: %v allocations per sweep of %d leases (not checked)", tc.name, got, per)
				return
			}
			if got > sweepCallAllocsMax {
				t.Fatalf("%s: %v allocations per sweep of %d leases, want at most %d", tc.name, got, per, sweepCallAllocsMax)
			}
			t.Logf("%s: %v allocations per sweep of %d leases", tc.name, got, per)
		})
	}
}
