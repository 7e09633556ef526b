package cluster_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/emqd/emqd/cluster/clustertest"
	"github.com/emqd/emqd/emq"
)

// TestLanesOnCluster: lanes on a real 3-primary Redis Cluster through the
// emq library's Functions target (docs/cluster.md §9): three queues on
// three primaries, each with lanes of weights 3:1 and a MAX_ACTIVE 1 lane.
// Every function call touches only its queue's slot (a key of another
// slot would make the node refuse the call), the 3:1 shares hold within
// one job over every prefix, the capped lane never has two leases, and
// once everything is completed each queue keeps only its configured lane
// hashes and registry, all on the node that serves the queue.
func TestLanesOnCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-primary cluster")
	}
	cl := clustertest.StartCluster(t, 3)
	ctx := context.Background()
	rdb := cl.Client()
	c := emq.New(rdb, &emq.ClientOptions{Target: emq.Functions})
	in := c.Inspector()
	// Three queues, one per primary.
	var queues []string
	seen := map[*clustertest.Node]bool{}
	for i := 0; len(queues) < 3; i++ {
		q := fmt.Sprintf("lanes-%d", i)
		if n := cl.NodeOf(q); !seen[n] {
			seen[n] = true
			queues = append(queues, q)
		}
	}
	for _, q := range queues {
		if err := in.SetLane(ctx, q, "a", emq.LaneSettings{Weight: 3}); err != nil {
			t.Fatal(err)
		}
		if err := in.SetLane(ctx, q, "cap", emq.LaneSettings{MaxActive: 1}); err != nil {
			t.Fatal(err)
		}
		for _, lane := range []string{"a", "b", "cap"} {
			jobs := make([]emq.NewJob, 100)
			for i := range jobs {
				jobs[i] = emq.NewJob{Payload: []byte(lane)}
			}
			if _, err := c.EnqueueMany(ctx, q, jobs, &emq.EnqueueOptions{Lane: lane}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, q := range queues {
		served := map[string]int{}
		var capHeld *emq.Lease
		for i := 0; i < 60; i++ {
			jobs, err := c.Claim(ctx, q, time.Minute, nil)
			if err != nil || len(jobs) != 1 {
				t.Fatalf("%s claim %d: %v %v", q, i, jobs, err)
			}
			j := jobs[0]
			lane := string(j.Payload)
			served[lane]++
			if lane == "cap" {
				if capHeld != nil {
					t.Fatalf("%s: two leases of the MAX_ACTIVE 1 lane", q)
				}
				capHeld = j
			} else if err := j.Complete(ctx, nil); err != nil {
				t.Fatal(err)
			}
			if capHeld != nil && i%5 == 4 {
				if err := capHeld.Complete(ctx, nil); err != nil {
					t.Fatal(err)
				}
				capHeld = nil
			}
			// a:b:cap are 3:1:1 while cap has a free slot; check a against b.
			if d := served["a"] - 3*served["b"]; d > 4 || d < -4 {
				t.Fatalf("%s after %d picks: %v", q, i+1, served)
			}
		}
		if capHeld != nil {
			if err := capHeld.Complete(ctx, nil); err != nil {
				t.Fatal(err)
			}
		}
		// Drain the rest.
		for {
			jobs, err := c.Claim(ctx, q, time.Minute, &emq.ClaimOptions{MaxJobs: 50})
			if err != nil {
				t.Fatal(err)
			}
			if len(jobs) == 0 {
				break
			}
			for _, j := range jobs {
				if err := j.Complete(ctx, nil); err != nil {
					t.Fatal(err)
				}
			}
		}
		lanes, err := in.Lanes(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, l := range lanes {
			names = append(names, l.Name)
			if l.Active != 0 || l.Pending != 0 {
				t.Fatalf("%s drained: lane %+v", q, l)
			}
		}
		if strings.Join(names, ",") != "a,cap" {
			t.Fatalf("%s drained: lanes %v (b and default have no key left)", q, names)
		}
		// Every key of the queue is on the node that serves it.
		node := cl.NodeOf(q)
		keys, err := node.Client(2).Keys(ctx, "emq:{"+q+"}:*").Result()
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]bool{"emq:{" + q + "}:lane:a": true, "emq:{" + q + "}:lane:cap": true, "emq:{" + q + "}:lanes:known": true}
		for _, k := range keys {
			if strings.Contains(k, ":lane") && !want[k] {
				t.Fatalf("%s: lane key %s left", q, k)
			}
		}
	}
}
