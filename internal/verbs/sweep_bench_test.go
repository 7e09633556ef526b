package verbs

import (
	"runtime"
	"strconv"
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
