package aof

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/emqd/emqd/internal/store"
)

// BenchmarkCommit: committers in parallel (GOMAXPROCS x 8 goroutines), each
// appending one job-cycle-sized record (HSET + ZADD in MULTI) under the
// store lock and committing it, on the OS file system in a temporary
// directory (real write(2) and fsync(2)). Under everysec the background
// fsync runs every 200 ms here, so a run of a second sees several of them:
// the everysec Commit should cost no more than no's. max-µs is the
// slowest single Append+Commit.
func BenchmarkCommit(b *testing.B) {
	for _, p := range []Fsync{FsyncNo, FsyncEverySec, FsyncAlways} {
		b.Run(p.String(), func(b *testing.B) {
			st := store.New(16)
			a := New(Config{Dir: b.TempDir(), Fsync: p, Store: st, FsyncInterval: 200 * time.Millisecond})
			if _, err := a.Load(func(int, [][]byte) error { return nil }); err != nil {
				b.Fatal(err)
			}
			if err := a.Start(); err != nil {
				b.Fatal(err)
			}
			defer a.Close()
			val := make([]byte, 64)
			b.SetParallelism(8)
			b.SetBytes(200)
			b.ResetTimer()
			var mu sync.Mutex
			var worst time.Duration
			b.RunParallel(func(pb *testing.PB) {
				n := 0
				var slowest time.Duration
				defer func() {
					mu.Lock()
					worst = max(worst, slowest)
					mu.Unlock()
				}()
				for pb.Next() {
					n++
					key := []byte(fmt.Sprint("job:", n))
					t0 := time.Now()
					st.Lock()
					a.Append(0, [][][]byte{
						{[]byte("HSET"), key, []byte("state"), []byte("pending"), []byte("payload"), val},
						{[]byte("ZADD"), []byte("queue:default"), []byte("1700000000000"), key},
					})
					st.Unlock()
					if err := a.Commit(); err != nil {
						b.Error(err)
						return
					}
					slowest = max(slowest, time.Since(t0))
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(worst.Microseconds()), "max-µs")
			b.ReportMetric(float64(infoInt(a, "aof_delayed_fsync")), "delayed")
		})
	}
}

func infoInt(a *AOF, name string) int64 {
	var v int64
	fmt.Sscan(infoField(a, name), &v)
	return v
}
