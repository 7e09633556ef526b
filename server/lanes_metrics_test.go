package server_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/emqd/emqd/clock"
	"github.com/emqd/emqd/server"
)

// TestLaneMetricsAndInfo: /metrics names the 10 lanes of a queue with the
// most jobs and sums the rest as lane="(other)" (a bounded label set),
// emqd_queue_jobs{state=pending} counts every lane's pending jobs, and
// INFO shows emq_lanes and emq_lane_slots (docs/verbs.md §4.26.5).
func TestLaneMetricsAndInfo(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(1_700_000_000_000)
	s := server.StartTest(t, server.Options{Clock: clk, Config: map[string]string{"metrics-addr": "127.0.0.1:0"}})
	c := redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer c.Close()
	// Lanes l00..l13 with 14..1 jobs.
	for l := 0; l < 14; l++ {
		for j := 0; j < 14-l; j++ {
			if err := c.Do(ctx, "EMQ.ENQUEUE", "q", "*", "p", "LANE", fmt.Sprintf("l%02d", l)).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := c.Do(ctx, "EMQ.CLAIM", "q", 100000, "COUNT", 14).Err(); err != nil {
		t.Fatal(err)
	}
	fams := scrape(t, s)
	n := 0
	for _, m := range fams["emqd_lane_jobs"].GetMetric() {
		_ = m
		n++
	}
	if n != 2*11 {
		t.Fatalf("%d lane samples, want 22 (10 lanes and (other), pending and active)", n)
	}
	// 14 picks, one per lane: each lane holds one slot; l00 has 13 left.
	if v, ok := metric(fams, "emqd_lane_jobs", "db=0", "lane=l00", "queue=q", "state=pending"); !ok || v != 13 {
		t.Fatalf("l00 pending %v %v", v, ok)
	}
	// (other) is l10..l13: 4+3+2+1 jobs, one claimed from each.
	if v, ok := metric(fams, "emqd_lane_jobs", "db=0", "lane=(other)", "queue=q", "state=pending"); !ok || v != 6 {
		t.Fatalf("(other) pending %v %v", v, ok)
	}
	if v, ok := metric(fams, "emqd_lane_jobs", "db=0", "lane=(other)", "queue=q", "state=active"); !ok || v != 4 {
		t.Fatalf("(other) active %v %v", v, ok)
	}
	if v, ok := metric(fams, "emqd_queue_jobs", "db=0", "queue=q", "state=pending"); !ok || v != 105-14 {
		t.Fatalf("queue pending %v %v", v, ok)
	}
	info := infoFields(c.Info(ctx, "emq").Val())
	if info["emq_lanes"] != "14" || info["emq_lane_slots"] != "14" {
		t.Fatalf("INFO emq_lanes %q emq_lane_slots %q", info["emq_lanes"], info["emq_lane_slots"])
	}
}

// TestLaneCountsNeverRefuse: INFO's lane fields and /metrics' lane samples
// count a queue's lanes even when one lane hash holds what the lane verbs
// never write (docs/verbs.md §4.26.4): EMQ.LANES refuses the page holding
// it, the counters count it (an `active` that is not an integer as 0) and
// go on with the other lanes, instead of dropping the whole queue's lanes.
func TestLaneCountsNeverRefuse(t *testing.T) {
	ctx := context.Background()
	s := server.StartTest(t, server.Options{Config: map[string]string{"metrics-addr": "127.0.0.1:0"}})
	c := redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer c.Close()
	for _, l := range []string{"a", "a", "a", "b", "b", "c"} {
		if err := c.Do(ctx, "EMQ.ENQUEUE", "q", "*", "p", "LANE", l).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Do(ctx, "EMQ.CLAIM", "q", 100000, "COUNT", 3).Err(); err != nil {
		t.Fatal(err)
	}
	// One pick per lane: a 2 pending 1 active, b 1 and 1, c 0 and 1.
	c.HSet(ctx, "emq:{q}:lane:b", "pass", "soon")
	c.HSet(ctx, "emq:{q}:lane:c", "active", "many")
	if err := c.Do(ctx, "EMQ.LANES", "q").Err(); err == nil || err.Error() != "ERR hash value is not an integer" {
		t.Fatalf("EMQ.LANES over the bad lanes: %v", err)
	}
	info := infoFields(c.Info(ctx, "emq").Val())
	if info["emq_lanes"] != "3" || info["emq_lane_slots"] != "2" {
		t.Fatalf("INFO emq_lanes %q emq_lane_slots %q, want 3 and 2 (c's active unreadable: 0)", info["emq_lanes"], info["emq_lane_slots"])
	}
	fams := scrape(t, s)
	for _, w := range []struct {
		lane, state string
		want        float64
	}{{"a", "pending", 2}, {"a", "active", 1}, {"b", "pending", 1}, {"b", "active", 1}, {"c", "pending", 0}, {"c", "active", 0}} {
		if v, ok := metric(fams, "emqd_lane_jobs", "db=0", "lane="+w.lane, "queue=q", "state="+w.state); !ok || v != w.want {
			t.Errorf("lane %s %s: %v %v, want %v", w.lane, w.state, v, ok, w.want)
		}
	}
	if v, ok := metric(fams, "emqd_queue_jobs", "db=0", "queue=q", "state=pending"); !ok || v != 3 {
		t.Fatalf("queue pending %v %v", v, ok)
	}
}

// TestScrapesAreNoAccess: INFO emq and a /metrics scrape read a queue's
// sets and its lanes' heads (pending counts, queue latency) without
// touching them: OBJECT IDLETIME of the pending sets and of the heads'
// rows keeps counting, so an LRU policy or an operator's idle-key check
// does not see a scraped queue as used (docs/verbs.md §4.16).
func TestScrapesAreNoAccess(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(1_700_000_000_000)
	s := server.StartTest(t, server.Options{Clock: clk, Config: map[string]string{"metrics-addr": "127.0.0.1:0"}})
	c := redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer c.Close()
	idA := c.Do(ctx, "EMQ.ENQUEUE", "q", "*", "p").Val().(string)
	idB := c.Do(ctx, "EMQ.ENQUEUE", "q", "*", "p", "LANE", "a").Val().(string)
	clk.Advance(30_000)
	c.Ping(ctx) // the store's clock reads the new time
	info := infoFields(c.Info(ctx, "emq").Val())
	if info["emq_queue_latency_max_ms"] != "30000" {
		t.Fatalf("emq_queue_latency_max_ms %q, want 30000", info["emq_queue_latency_max_ms"])
	}
	if v, ok := metric(scrape(t, s), "emqd_queue_latency_seconds", "db=0", "queue=q"); !ok || v != 30 {
		t.Fatalf("emqd_queue_latency_seconds %v %v, want 30", v, ok)
	}
	for _, key := range []string{"emq:{q}:pending", "emq:{q}:lane:a:pending", "emq:{q}:job:" + idA, "emq:{q}:job:" + idB, "emq:{q}:lanes:known"} {
		if idle, err := c.ObjectIdleTime(ctx, key).Result(); err != nil || idle.Seconds() < 30 {
			t.Errorf("OBJECT IDLETIME %s after INFO and a scrape: %v %v, want >= 30 s", key, idle, err)
		}
	}
}
