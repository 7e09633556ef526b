package emq_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/emqd/emqd/cluster"
	"github.com/emqd/emqd/cluster/clustertest"
	"github.com/emqd/emqd/emq"
)

// laneListScenario: List of StatePending lists every lane's pending jobs
// (the default lane's first, then by lane name) and pages across lanes;
// ListOptions.Lane lists one lane; Drain and RemoveAll with
// RemoveAllOptions.Lane empty one lane, Drain without it every lane, in
// batches; Lane with another state is the server's refusal
// (docs/verbs.md §4.26.6).
func laneListScenario(t *testing.T, c *emq.Client, q string) {
	ctx := context.Background()
	in := c.Inspector()
	want := map[string][]string{}
	var all []string
	for _, lane := range []string{"", "a", "b"} {
		for i := 0; i < 3; i++ {
			id, err := c.Enqueue(ctx, q, []byte(lane), &emq.EnqueueOptions{Lane: lane})
			if err != nil {
				t.Fatal(err)
			}
			want[lane] = append(want[lane], id)
		}
		all = append(all, want[lane]...)
	}
	var got []string
	for off := 0; ; off += 2 {
		page, err := in.List(ctx, q, emq.StatePending, &emq.ListOptions{Offset: off, Count: 2})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range page {
			got = append(got, j.ID)
		}
		if len(page) < 2 {
			break
		}
	}
	if !reflect.DeepEqual(got, all) {
		t.Fatalf("List pending in pages of 2: %v, want %v", got, all)
	}
	if page, err := in.List(ctx, q, emq.StatePending, &emq.ListOptions{Offset: 2, Count: 2}); err != nil || len(page) != 2 ||
		page[0].Lane != "" || page[1].Lane != "a" {
		t.Fatalf("JobInfo.Lane across the default lane's end: %+v %v", page, err)
	}
	page, err := in.List(ctx, q, emq.StatePending, &emq.ListOptions{Lane: "a"})
	if err != nil || len(page) != 3 || page[0].ID != want["a"][0] || page[2].ID != want["a"][2] {
		t.Fatalf("List lane a: %+v %v", page, err)
	}
	if page, err = in.List(ctx, q, emq.StatePending, &emq.ListOptions{Lane: "nope"}); err != nil || len(page) != 0 {
		t.Fatalf("List of a lane without jobs: %+v %v", page, err)
	}
	if _, err := in.List(ctx, q, emq.StateActive, &emq.ListOptions{Lane: "a"}); err == nil || err.Error() != "ERR LANE applies to state pending only" {
		t.Fatalf("List active with a lane: %v", err)
	}
	if _, err := in.RemoveAll(ctx, q, emq.StateDead, &emq.RemoveAllOptions{Lane: "a"}); err == nil || err.Error() != "ERR LANE applies to state pending only" {
		t.Fatalf("RemoveAll dead with a lane: %v", err)
	}
	if _, err := in.Drain(ctx, q, &emq.RemoveAllOptions{Lane: "a b"}); err == nil || err.Error() != "ERR invalid lane name" {
		t.Fatalf("Drain of a bad lane name: %v", err)
	}
	b, err := in.Drain(ctx, q, &emq.RemoveAllOptions{Lane: "b", BulkOptions: emq.BulkOptions{BatchSize: 2}})
	if err != nil || b != (emq.Bulk{Done: 3, Left: 0, Calls: 2}) {
		t.Fatalf("Drain lane b: %+v %v", b, err)
	}
	if n, err := in.Counts(ctx, q); err != nil || n.Pending != 6 {
		t.Fatalf("counts after draining lane b: %+v %v", n, err)
	}
	b, err = in.Drain(ctx, q, &emq.RemoveAllOptions{BulkOptions: emq.BulkOptions{BatchSize: 4}})
	if err != nil || b != (emq.Bulk{Done: 6, Left: 0, Calls: 2}) {
		t.Fatalf("Drain: %+v %v", b, err)
	}
	if n, err := in.Counts(ctx, q); err != nil || n.Pending != 0 {
		t.Fatalf("counts after the drain: %+v %v", n, err)
	}
	if lanes, err := in.Lanes(ctx, q); err != nil || len(lanes) != 0 {
		t.Fatalf("lanes after the drain: %+v %v", lanes, err)
	}
}

// TestLaneListDrain: the scenario against emqd (RESP2 and RESP3).
func TestLaneListDrain(t *testing.T) {
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			e := newEnvProto(t, proto)
			laneListScenario(t, e.c, "lanelist")
		})
	}
}

// TestLaneListDrainFunctions: the same through the cluster library's
// functions.
func TestLaneListDrainFunctions(t *testing.T) {
	node := clustertest.StartLibraryNode(t, clustertest.NodeOptions{}, cluster.DebugClock())
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			c := emq.New(node.Client(proto), &emq.ClientOptions{Target: emq.Functions})
			laneListScenario(t, c, fmt.Sprintf("lanelist%d", proto))
		})
	}
}
