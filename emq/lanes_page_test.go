package emq_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/emqd/emqd/emq"
)

// TestLanesPaged: Lanes lists every lane of a queue with more lanes than
// one EMQ.LANES page holds (1,000), by name; LanesPage gives one page and
// passes the server's argument errors on (docs/verbs.md §4.26.5).
func TestLanesPaged(t *testing.T) {
	e := newEnv(t)
	pipe := e.rdb.Pipeline()
	for l := 0; l < 1205; l++ {
		pipe.Do(e.ctx, "EMQ.ENQUEUE", "q", "*", "p", "LANE", fmt.Sprintf("t%04d", l))
	}
	if _, err := pipe.Exec(e.ctx); err != nil {
		t.Fatal(err)
	}
	lanes, err := e.in.Lanes(e.ctx, "q")
	if err != nil || len(lanes) != 1205 {
		t.Fatalf("Lanes: %d lanes, %v", len(lanes), err)
	}
	for i, l := range lanes {
		if want := fmt.Sprintf("t%04d", i); l.Name != want || l.Pending != 1 || l.State != emq.LaneReady {
			t.Fatalf("lane %d: %+v, want %s with 1 pending", i, l, want)
		}
	}
	page, err := e.in.LanesPage(e.ctx, "q", &emq.ListOptions{Offset: 1200, Count: 10})
	if err != nil || len(page) != 5 || page[0].Name != "t1200" || page[4].Name != "t1204" {
		t.Fatalf("LanesPage(1200, 10): %+v %v", page, err)
	}
	if _, err := e.in.LanesPage(e.ctx, "q", &emq.ListOptions{Count: 1001}); err == nil || !strings.Contains(err.Error(), "count must be at most 1000") {
		t.Fatalf("count 1001: %v", err)
	}
	if _, err := e.in.LanesPage(e.ctx, "q", &emq.ListOptions{Offset: -1, Count: 10}); err == nil || !strings.Contains(err.Error(), "offset must be a non-negative integer") {
		t.Fatalf("offset -1: %v", err)
	}
}
