package cluster_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"testing"

	"github.com/emqd/emqd/cluster/clustertest"
)

// BenchmarkLibraryLaneClaim is internal/verbs' BenchmarkLaneClaim on the
// library: one `FCALL emq_claim 1 q 30000` of a queue with n backlogged
// lanes and the `FCALL emq_requeue` that puts the job back, against a
// redis-server with the library loaded (docs/cluster.md §9). It reports
// the server's time per cycle (INFO commandstats, cmdstat_fcall usec), so
// the round trips do not hide how the claim grows with the lanes: with
// log(lanes), not with lanes. n=0 is the cycle on a queue without lanes.
func BenchmarkLibraryLaneClaim(b *testing.B) {
	ctx := context.Background()
	n := clustertest.StartLibraryNode(b, clustertest.NodeOptions{})
	rdb := n.Client(2)
	usec := regexp.MustCompile(`cmdstat_fcall:calls=\d+,usec=(\d+),`)
	for _, lanes := range []int{0, 1, 100, 10000} {
		b.Run(fmt.Sprintf("lanes=%d", lanes), func(b *testing.B) {
			if err := rdb.FlushAll(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			p := rdb.Pipeline()
			for l := 0; l < max(lanes, 1); l++ {
				args := []any{"q"}
				if lanes > 0 {
					args = append(args, "LANE", "l"+strconv.Itoa(l))
				}
				args = append(args, "JOBS", "*", "p", "*", "p", "*", "p")
				p.FCall(ctx, "emq_enqueue_many", []string{"q"}, args[1:]...)
				if p.Len() >= 1000 {
					if _, err := p.Exec(ctx); err != nil {
						b.Fatal(err)
					}
				}
			}
			if _, err := p.Exec(ctx); err != nil && p.Len() > 0 {
				b.Fatal(err)
			}
			if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				v, err := rdb.FCall(ctx, "emq_claim", []string{"q"}, 30000).Slice()
				if err != nil || len(v) != 1 {
					b.Fatalf("claim: %v %v", v, err)
				}
				j := v[0].([]any)
				if err := rdb.FCall(ctx, "emq_requeue", []string{"q"}, j[0], j[2]).Err(); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			info, err := rdb.Info(ctx, "commandstats").Result()
			if err != nil {
				b.Fatal(err)
			}
			m := usec.FindStringSubmatch(info)
			if m == nil {
				b.Fatalf("no cmdstat_fcall in %q", info)
			}
			us, _ := strconv.ParseFloat(m[1], 64)
			b.ReportMetric(us/float64(b.N), "server-µs/cycle")
		})
	}
}
