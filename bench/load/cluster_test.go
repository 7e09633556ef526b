package load

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/emqd/emqd/cluster/clustertest"
	"github.com/redis/go-redis/v9"
)

// TestLoadClusterPrimaryKilled is the load driver against a 3-primary Redis
// Cluster with the emq library (docs/cluster.md §4): many queues spread over
// the slots of all three primaries, failures and crashes on, the emq
// library's workers (Functions target, polling) and sweepers through a
// go-redis ClusterClient. Mid-run one primary is killed with SIGKILL and
// started again (same port, its AOF with appendfsync always): the run must
// lose no job and complete none twice, and every queue's counts must agree
// with its jobs. Leases the killed process granted carry its run_id: the
// test holds three on purpose and checks that the sweep recovers them
// uncounted even with max_stalled 1, while a lease of the new process is
// counted.
func TestLoadClusterPrimaryKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-primary cluster")
	}
	cl := clustertest.StartCluster(t, 3)
	ctx := context.Background()
	rdb := cl.Client()
	cfg := Config{
		Cluster: cl.Addrs(), Queue: "ld-" + randString(4), Queues: 12, Jobs: 600, Producers: 3, Workers: 12,
		FailRate: 0.15, CrashRate: 0.05, MaxAttempts: 2,
		LeaseMs: 400, Work: time.Millisecond, Heartbeat: 100 * time.Millisecond,
		BackoffBase: 5 * time.Millisecond, BackoffMax: 40 * time.Millisecond,
		SweepEvery: 100 * time.Millisecond, PollInterval: 20 * time.Millisecond, MaxBacklog: 200, Seed: 11,
		DrainTimeout: 40 * time.Second, RetryFor: 40 * time.Second,
	}
	nodes := map[*clustertest.Node]int{}
	for i := 0; i < cfg.Queues; i++ {
		nodes[cl.NodeOf(fmt.Sprintf("%s.%d", cfg.Queue, i))]++
	}
	if len(nodes) != 3 {
		t.Fatalf("the queues sit on %d primaries: %v", len(nodes), nodes)
	}
	victim := cl.NodeOf(cfg.Queue + ".0")
	strand := ""
	for i := 0; strand == ""; i++ {
		if q := fmt.Sprintf("strand-%d", i); cl.NodeOf(q) == victim {
			strand = q
		}
	}

	type outcome struct {
		res *Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := Run(ctx, cfg)
		done <- outcome{res, err}
	}()

	// Mid-run: a quarter of the jobs completed.
	completed := func() int64 {
		var n int64
		for i := 0; i < cfg.Queues; i++ {
			v, err := rdb.FCall(ctx, "emq_counts", []string{fmt.Sprintf("%s.%d", cfg.Queue, i)}).Slice()
			if err != nil {
				return -1
			}
			m, _ := toMap(v)
			c, _ := m["completed"].(int64)
			n += c
		}
		return n
	}
	deadline := time.Now().Add(60 * time.Second)
	for completed() < int64(cfg.Jobs/4) {
		if time.Now().After(deadline) {
			t.Fatal("the run never got a quarter done")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Leases no worker will finish, granted by the victim's process.
	for i := 1; i <= 3; i++ {
		if err := rdb.FCall(ctx, "emq_enqueue", []string{strand}, jobID("strn", int64(i)), "stranded").Err(); err != nil {
			t.Fatal(err)
		}
	}
	if v, err := rdb.FCall(ctx, "emq_claim", []string{strand}, 300, "COUNT", 3).Slice(); err != nil || len(v) != 3 {
		t.Fatalf("stranded claim: %v %v", v, err)
	}
	before := victim.RunID()
	victim.Kill()
	time.Sleep(300 * time.Millisecond) // the workers meet the dead primary's slots
	victim.Start()
	cl.WaitOK()
	after := victim.RunID()
	if after == before {
		t.Fatal("the restarted primary kept its run_id")
	}

	// The stranded leases: exempt, recovered uncounted with max_stalled 1.
	sweep := func() []any {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			v, err := rdb.FCall(ctx, "emq_stalled_check", []string{strand}, 1).Slice()
			if err == nil && len(v[0].([]any))+len(v[1].([]any)) > 0 {
				return v
			}
			if time.Now().After(deadline) {
				t.Fatalf("the stranded leases never expired: %v %v", v, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	ids := []any{jobID("strn", 1), jobID("strn", 2), jobID("strn", 3)}
	if got := sweep(); !reflect.DeepEqual(got, []any{ids, []any{}}) {
		t.Fatalf("sweep of the killed process's leases: %v, want all recovered, none counted", got)
	}
	for _, id := range ids {
		row := rdb.HGetAll(ctx, "emq:{"+strand+"}:job:"+id.(string)).Val()
		if row["state"] != "pending" || row["lease_epoch"] != before || row["stalled"] != "" {
			t.Fatalf("stranded row %s: %v", id, row)
		}
	}
	// The same expiry under the new process is counted: dead at max_stalled 1.
	if v, err := rdb.FCall(ctx, "emq_claim", []string{strand}, 100).Slice(); err != nil || len(v) != 1 {
		t.Fatalf("re-claim: %v %v", v, err)
	}
	if got := sweep(); !reflect.DeepEqual(got, []any{[]any{}, []any{ids[0]}}) {
		t.Fatalf("a lease of the new process: %v, want counted and dead", got)
	}

	o := <-done
	if o.err != nil {
		t.Fatal(o.err)
	}
	t.Logf("killed %s (run_id %s…), restarted as %s…\n%s", victim.Addr, before[:8], after[:8], o.res.Summary())
	if !o.res.OK() {
		t.Fatalf("verification failed:\n%s", o.res.Summary())
	}
	if o.res.Completed+o.res.Dead != cfg.Jobs || o.res.Failed == 0 || o.res.Crashes == 0 {
		t.Fatalf("the run did not exercise everything:\n%s", o.res.Summary())
	}
}

// Queues > 1 on emqd: the jobs spread over the queues, every queue's own
// counts verified.
func TestLoadEmbeddedQueues(t *testing.T) {
	srv := startEmbedded(t)
	cfg := smallConfig(srv.Addr(), 400)
	cfg.Queues = 4
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() || len(res.Queues) != 4 || res.Completed+res.Dead != 400 {
		t.Fatalf("verification failed:\n%s", res.Summary())
	}
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer c.Close()
	for _, q := range res.Queues {
		m, err := toMap(c.Do(context.Background(), "EMQ.COUNTS", q).Val())
		if err != nil || m["completed"].(int64)+m["dead"].(int64) != 100 {
			t.Fatalf("queue %s: %v %v", q, m, err)
		}
	}
}

// Config: Addr or Cluster, not both, and RestartCmd only with Addr.
func TestConfigClusterOrAddr(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Jobs: 1}, "load: Addr or Cluster is required"},
		{Config{Jobs: 1, Addr: "a", Cluster: []string{"b"}}, "load: Addr and Cluster exclude each other"},
		{Config{Jobs: 1, Cluster: []string{"b"}, RestartCmd: "x"}, "load: RestartCmd restarts emqd; with Cluster the caller kills and restarts nodes"},
	} {
		if err := c.cfg.defaults(); err == nil || err.Error() != c.want {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
}
