package verbs_test

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/emqd/emqd/clock"
	"github.com/emqd/emqd/server"
)

// Issue 22's benchmark (not a timed test): 10,000 EVERY 1000 schedules in
// 10 queues. BenchmarkSchedule10k: one op is one second of the manual
// clock, 10,000 fires by the server's timer; it reports the process CPU
// per fire, the heap per schedule, and, as the side-by-side reference in
// the same run, the CPU per EMQ.ENQUEUE of 10,000 jobs sent pipelined by
// a client in the same process (client CPU included there, not in the
// fires). BenchmarkScheduleLag10k: the same on the wall clock, one op a
// second; it reports INFO's emq_schedule_lag_p99_ms and _max_ms.

const benchScheds, benchQueues = 10000, 10

func schedCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func schedLiveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

func createBenchSchedules(b *testing.B, rdb *redis.Client) {
	ctx := context.Background()
	pipe := rdb.Pipeline()
	for i := range benchScheds {
		pipe.Do(ctx, "EMQ.SCHEDULE", "b"+strconv.Itoa(i%benchQueues), "s"+strconv.Itoa(i), "EVERY", 1000, "payload", "CATCHUP", "all")
		if i%500 == 499 {
			if _, err := pipe.Exec(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkSchedule10k(b *testing.B) {
	clk := clock.NewManual(1_700_000_000_000)
	s := server.StartTest(b, server.Options{Clock: clk})
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2})
	defer rdb.Close()
	ctx := context.Background()
	h0 := schedLiveHeap()
	createBenchSchedules(b, rdb)
	h1 := schedLiveHeap()
	b.ResetTimer()
	c0 := schedCPU()
	for range b.N {
		clk.Advance(1000)
		clk.Wait()
	}
	cpu := schedCPU() - c0
	b.StopTimer()
	n, _ := rdb.Do(ctx, "EMQ.COUNTS", "b0").Slice()
	if n[1].(int64) != int64(b.N*benchScheds/benchQueues) {
		b.Fatalf("b0 pending %v after %d s", n[1], b.N)
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*benchScheds), "cpu-ns/fire")
	b.ReportMetric(float64(h1-h0)/benchScheds, "heap-B/schedule")
	// The reference: the same number of jobs enqueued by a client.
	pipe := rdb.Pipeline()
	c0 = schedCPU()
	for i := range benchScheds {
		pipe.Do(ctx, "EMQ.ENQUEUE", "ref", "*", "payload")
		if i%500 == 499 {
			if _, err := pipe.Exec(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64((schedCPU()-c0).Nanoseconds())/benchScheds, "ref-cpu-ns/enqueue")
}

func BenchmarkScheduleLag10k(b *testing.B) {
	s := server.StartTest(b, server.Options{})
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2})
	defer rdb.Close()
	createBenchSchedules(b, rdb)
	b.ResetTimer()
	for range b.N {
		time.Sleep(time.Second)
	}
	b.StopTimer()
	info := s.InfoText("emq")
	field := func(f string) float64 {
		for _, l := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(l), f+":"); ok {
				x, _ := strconv.ParseFloat(v, 64)
				return x
			}
		}
		b.Fatalf("INFO lacks %s", f)
		return 0
	}
	fired := field("emq_schedule_fired")
	if fired == 0 {
		b.Fatal("nothing fired")
	}
	b.ReportMetric(field("emq_schedule_lag_p99_ms"), "lag-p99-ms")
	b.ReportMetric(field("emq_schedule_lag_max_ms"), "lag-max-ms")
	b.ReportMetric(fired/float64(b.N), "fires/s")
}
