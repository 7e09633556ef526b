package store

import (
	"runtime"
	"strconv"
	"testing"
)

// liveHeap is the heap in use after a full collection, in bytes.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// BenchmarkZSetMemory builds a sorted set of 1,000,000 members (job ids
// "JOB" + 11 digits, ascending, as a pending set; or random scores) per op
// and reports the heap it keeps per member (retained-B/member, after a full
// GC) beside -benchmem's allocations per build:
//
//	go test ./store -run - -bench ZSetMemory -benchmem
func BenchmarkZSetMemory(b *testing.B) {
	const n = 1_000_000
	members := make([]string, n)
	for i := range members {
		members[i] = "JOB" + leftPad(strconv.Itoa(i), 11)
	}
	for _, order := range []string{"ascending", "random"} {
		b.Run(order, func(b *testing.B) {
			b.ReportAllocs()
			var kept int64
			for i := 0; i < b.N; i++ {
				before := liveHeap()
				z := NewZSet()
				for j, m := range members {
					score := 0.0
					if order == "random" {
						score = float64((uint64(j) * 0x9E3779B97F4A7C15) >> 40)
					}
					z.Add(m, score)
				}
				kept = liveHeap() - before
				runtime.KeepAlive(z)
			}
			b.ReportMetric(float64(kept)/n, "retained-B/member")
		})
	}
}

func leftPad(s string, n int) string {
	for len(s) < n {
		s = "0" + s
	}
	return s
}
