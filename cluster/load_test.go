package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emqd/emqd/cluster/clustertest"
	"github.com/emqd/emqd/verbs"
	"github.com/redis/go-redis/v9"
)

// TestClusterLoad runs producers, workers (completing, failing and
// crashing jobs) and a sweeper against a 3-primary Redis Cluster through
// go-redis's cluster client, with queues spread over the three primaries;
// kills one primary with SIGKILL mid-run and starts it again; and checks
// that no job was lost or completed twice, that every queue's EMQ.COUNTS
// agrees with what the workers saw, and that the leases the killed
// process had granted were recovered uncounted (the restart exemption,
// docs/cluster.md).
func TestClusterLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-primary cluster")
	}
	c := clustertest.StartCluster(t, 3)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: c.Addrs(), Protocol: 2,
		DialTimeout: 300 * time.Millisecond, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second,
		MaxRetries: 1, MinRetryBackoff: 20 * time.Millisecond, MaxRetryBackoff: 100 * time.Millisecond,
		PoolSize: 8,
	})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()

	// Queues: at least perNode on each primary.
	const perNode, jobsPerQueue = 6, 25
	byNode := map[*clustertest.Node][]string{}
	var queues []string
	for i := 0; len(queues) < 3*perNode; i++ {
		q := fmt.Sprintf("load-%d", i)
		n := c.NodeOf(q)
		if len(byNode[n]) < perNode {
			byNode[n] = append(byNode[n], q)
			queues = append(queues, q)
		}
	}
	victim := c.NodeOf(queues[0])
	strand := ""
	for i := 0; strand == ""; i++ {
		if q := fmt.Sprintf("strand-%d", i); c.NodeOf(q) == victim {
			strand = q
		}
	}

	d := &driver{t: t, rdb: rdb, jobs: map[string]*jobState{}}
	for qi, q := range queues {
		for j := 0; j < jobsPerQueue; j++ {
			id := verbs.EncodeID(int64(qi*1000 + j))
			d.jobs[q+"/"+id] = &jobState{q: q, id: id}
		}
	}

	// Producers: every job, with its own id (idempotent admission).
	var prod sync.WaitGroup
	for p := 0; p < 3; p++ {
		prod.Add(1)
		go func(p int) {
			defer prod.Done()
			for qi, q := range queues {
				if qi%3 != p {
					continue
				}
				for j := 0; j < jobsPerQueue; j++ {
					id := verbs.EncodeID(int64(qi*1000 + j))
					d.retry(func() error { return rdb.FCall(ctx, "emq_enqueue", []string{q}, id, "payload-"+id).Err() })
				}
			}
		}(p)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 10; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			d.work(stop, queues, rand.New(rand.NewSource(int64(w))))
		}(w)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		d.sweep(stop, queues)
	}()

	// Mid-run: leases held on the victim that no worker will finish.
	for !d.progressed(len(d.jobs) / 4) {
		time.Sleep(10 * time.Millisecond)
	}
	for i := 0; i < 3; i++ {
		d.retry(func() error {
			return rdb.FCall(ctx, "emq_enqueue", []string{strand}, verbs.EncodeID(int64(i+1)), "stranded").Err()
		})
	}
	held, err := rdb.FCall(ctx, "emq_claim", []string{strand}, 300, "COUNT", 3).Slice()
	if err != nil || len(held) != 3 {
		t.Fatalf("stranded claim: %v %v", held, err)
	}
	before := victim.RunID()
	victim.Kill()
	killedAt := d.completedN.Load()
	// Workers meet the dead primary's slots for a while, then it is back.
	time.Sleep(300 * time.Millisecond)
	victim.Start()
	c.WaitOK()
	after := victim.RunID()
	if after == before {
		t.Fatal("the restarted primary kept its run_id")
	}
	t.Logf("killed %s (run_id %s…) after %d completions; restarted as %s…", victim.Addr, before[:8], killedAt, after[:8])

	// The stranded leases carry the old run_id: exempt, recovered uncounted
	// even with max_stalled 1.
	var sweep []any
	deadline := time.Now().Add(20 * time.Second)
	for {
		v, err := rdb.FCall(ctx, "emq_stalled_check", []string{strand}, 1).Slice()
		if err == nil && len(v[0].([]any))+len(v[1].([]any)) > 0 {
			sweep = v
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stranded leases never expired: %v %v", v, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	want := []any{[]any{verbs.EncodeID(1), verbs.EncodeID(2), verbs.EncodeID(3)}, []any{}}
	if !reflect.DeepEqual(sweep, want) {
		t.Fatalf("sweep of the stranded leases: %v, want %v (all recovered, none counted)", sweep, want)
	}
	for i := 1; i <= 3; i++ {
		row := rdb.HGetAll(ctx, "emq:{"+strand+"}:job:"+verbs.EncodeID(int64(i))).Val()
		if row["state"] != "pending" || row["lease_epoch"] != before || row["stalled"] != "" {
			t.Fatalf("stranded row %d: %v", i, row)
		}
	}
	// The same expiry under the new process is counted: with max_stalled 1
	// the job dies.
	if v, err := rdb.FCall(ctx, "emq_claim", []string{strand}, 100).Slice(); err != nil || len(v) != 1 {
		t.Fatalf("re-claim: %v %v", v, err)
	}
	deadline = time.Now().Add(20 * time.Second)
	for {
		v, err := rdb.FCall(ctx, "emq_stalled_check", []string{strand}, 1).Slice()
		if err == nil && len(v[1].([]any)) > 0 {
			if !reflect.DeepEqual(v, []any{[]any{}, []any{verbs.EncodeID(1)}}) {
				t.Fatalf("counted expiry: %v", v)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the new lease never expired: %v %v", v, err)
		}
		time.Sleep(20 * time.Millisecond)
	}

	prod.Wait()
	if !d.waitDone(60 * time.Second) {
		close(stop)
		wg.Wait()
		t.Fatalf("not every job finished: %s", d.unfinished())
	}
	close(stop)
	wg.Wait()
	d.verify(ctx, queues, jobsPerQueue)
	t.Logf("%d jobs on %d queues: %d completed, %d dead, %d failures, %d crashes, %d transport errors, %d sweeps recovered",
		len(d.jobs), len(queues), d.completedN.Load(), d.deadN.Load(), d.failN.Load(), d.crashN.Load(), d.netErrs.Load(), d.recovered.Load())
}

// jobState is what the workers saw of one job.
type jobState struct {
	mu    sync.Mutex
	q, id string
	acked int  // COMPLETE answered 1
	gone  int  // a COMPLETE resent after a lost reply answered job gone
	dead  bool // FAIL killed it
}

type driver struct {
	t    *testing.T
	rdb  *redis.ClusterClient
	jobs map[string]*jobState

	completedN, deadN, failN, crashN, netErrs, recovered atomic.Int64
}

// retry runs f until it succeeds or fails with a server error (a refusal
// is an answer); transport errors (the primary is down) are retried.
func (d *driver) retry(f func() error) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := f()
		if err == nil || errors.Is(err, redis.Nil) || isRefusal(err) {
			return err
		}
		d.netErrs.Add(1)
		if time.Now().After(deadline) {
			d.t.Errorf("gave up after transport errors: %v", err)
			return err
		}
		time.Sleep(30 * time.Millisecond)
	}
}

// isRefusal reports whether err is a reply from the server (not a
// transport error and not a cluster redirection gone wrong).
func isRefusal(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	s := err.Error()
	return !strings.HasPrefix(s, "CLUSTERDOWN") && !strings.HasPrefix(s, "LOADING") && !strings.HasPrefix(s, "TRYAGAIN") &&
		!strings.HasPrefix(s, "MOVED") && !strings.HasPrefix(s, "ASK")
}

func (d *driver) progressed(n int) bool { return int(d.completedN.Load()+d.deadN.Load()) >= n }

func (d *driver) job(q, id string) *jobState {
	j := d.jobs[q+"/"+id]
	if j == nil {
		d.t.Errorf("claimed an unknown job %s/%s", q, id)
	}
	return j
}

// work claims round-robin over the queues; per job: 15% FAIL (max_attempts
// 2: a job that fails twice dies), 5% crash (drop it; the sweeper recovers
// the lease), else COMPLETE.
func (d *driver) work(stop <-chan struct{}, queues []string, rng *rand.Rand) {
	ctx := context.Background()
	for i := rng.Intn(len(queues)); ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		q := queues[i%len(queues)]
		v, err := d.rdb.FCall(ctx, "emq_claim", []string{q}, 400).Slice()
		if err != nil {
			if !isRefusal(err) {
				d.netErrs.Add(1)
				time.Sleep(20 * time.Millisecond)
				continue
			}
			d.t.Errorf("claim %s: %v", q, err)
			return
		}
		if len(v) == 0 {
			time.Sleep(time.Millisecond) // poll: a function cannot block
			continue
		}
		job := v[0].([]any)
		id, tok, failures := job[0].(string), job[2].(string), job[3].(int64)
		if job[1] != "payload-"+id {
			d.t.Errorf("%s/%s payload %q", q, id, job[1])
		}
		j := d.job(q, id)
		if j == nil {
			return
		}
		time.Sleep(time.Duration(rng.Intn(2000)) * time.Microsecond)
		switch r := rng.Float64(); {
		case r < 0.05:
			d.crashN.Add(1)
		case r < 0.20:
			d.failN.Add(1)
			var res []any
			lost := false
			err := d.retry(func() error {
				var err error
				res, err = d.rdb.FCall(ctx, "emq_fail", []string{q}, id, tok, 2, 10<<failures, "boom").Slice()
				if err != nil && !isRefusal(err) {
					lost = true
				}
				return err
			})
			switch {
			case err == nil && res[0] == "dead":
				d.finish(j, func() { j.dead = true })
			case err == nil:
			case lost && strings.HasPrefix(err.Error(), "EMQSTALE"):
				// The lost FAIL may have been applied: only a FAIL kills here.
				if d.rdb.HGet(ctx, "emq:{"+q+"}:job:"+id, "state").Val() == "dead" {
					d.finish(j, func() { j.dead = true })
				}
			case strings.HasPrefix(err.Error(), "EMQSTALE"):
			default:
				d.t.Errorf("fail %s/%s: %v", q, id, err)
			}
		default:
			lost := false
			err := d.retry(func() error {
				n, err := d.rdb.FCall(ctx, "emq_complete", []string{q}, id, tok).Int()
				if err != nil && !isRefusal(err) {
					lost = true
				}
				if err == nil && n != 1 {
					return fmt.Errorf("complete replied %d", n)
				}
				return err
			})
			switch {
			case err == nil:
				d.finish(j, func() { j.acked++ })
			case lost && err.Error() == "EMQSTALE job gone":
				d.finish(j, func() { j.gone++ }) // a lost COMPLETE was applied (this one or another holder's)
			case strings.HasPrefix(err.Error(), "EMQSTALE"):
				// recovered by the sweep meanwhile: another holder finishes it
			default:
				d.t.Errorf("complete %s/%s: %v", q, id, err)
			}
		}
	}
}

// finish applies f to j and counts j finished the first time it is.
func (d *driver) finish(j *jobState, f func()) {
	j.mu.Lock()
	defer j.mu.Unlock()
	was := j.acked+j.gone > 0 || j.dead
	f()
	if was {
		return
	}
	if j.dead {
		d.deadN.Add(1)
	} else {
		d.completedN.Add(1)
	}
}

// sweep sends EMQ.STALLED.CHECK (max_stalled 1000: crashed jobs are
// recovered, not dead-lettered) for every queue every 100 ms.
func (d *driver) sweep(stop <-chan struct{}, queues []string) {
	ctx := context.Background()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		for _, q := range queues {
			v, err := d.rdb.FCall(ctx, "emq_stalled_check", []string{q}, 1000).Slice()
			if err != nil {
				if isRefusal(err) {
					d.t.Errorf("sweep %s: %v", q, err)
				}
				continue
			}
			d.recovered.Add(int64(len(v[0].([]any))))
			if dead := v[1].([]any); len(dead) > 0 {
				d.t.Errorf("sweep %s dead-lettered %v below max_stalled", q, dead)
			}
		}
	}
}

func (d *driver) finished() int {
	n := 0
	for _, j := range d.jobs {
		j.mu.Lock()
		if j.acked+j.gone > 0 || j.dead {
			n++
		}
		j.mu.Unlock()
	}
	return n
}

func (d *driver) waitDone(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for d.finished() < len(d.jobs) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

func (d *driver) unfinished() string {
	var out []string
	for k, j := range d.jobs {
		j.mu.Lock()
		if j.acked+j.gone == 0 && !j.dead {
			out = append(out, k)
		}
		j.mu.Unlock()
	}
	if len(out) > 10 {
		out = append(out[:10], "...")
	}
	return fmt.Sprint(len(out), " ", out)
}

// verify checks every job and every queue's counts.
func (d *driver) verify(ctx context.Context, queues []string, perQueue int) {
	t := d.t
	completed, dead := map[string]int64{}, map[string]int64{}
	for k, j := range d.jobs {
		row, err := d.rdb.HGetAll(ctx, "emq:{"+j.q+"}:job:"+j.id).Result()
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case j.dead:
			if row["state"] != "dead" || row["last_error"] != "boom" || j.acked+j.gone != 0 {
				t.Errorf("%s: dead job %v (acked %d)", k, row, j.acked)
			}
			dead[j.q]++
		case (j.acked == 1 || (j.acked == 0 && j.gone > 0)) && len(row) == 0:
			completed[j.q]++ // exactly one COMPLETE applied (docs/cluster.md)
		case j.acked > 1:
			t.Errorf("%s: completed %d times", k, j.acked)
		default:
			t.Errorf("%s: lost or left over: row %v, acked %d, gone %d", k, row, j.acked, j.gone)
		}
	}
	for _, q := range queues {
		v, err := d.rdb.FCall(ctx, "emq_counts", []string{q}).Slice()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int64{}
		for i := 0; i < len(v); i += 2 {
			got[v[i].(string)] = v[i+1].(int64)
		}
		want := map[string]int64{"pending": 0, "active": 0, "scheduled": 0, "dead": dead[q], "completed": completed[q], "failed": dead[q]}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: counts %v, want %v", q, got, want)
		}
		if completed[q]+dead[q] != int64(perQueue) {
			t.Errorf("%s: %d completed + %d dead of %d jobs", q, completed[q], dead[q], perQueue)
		}
	}
}
