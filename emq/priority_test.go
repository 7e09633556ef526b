package emq_test

import (
	"testing"
	"time"

	"github.com/emqd/emqd/emq"
)

// TestWithPriority: Enqueue and EnqueueMany send PRIORITY p, and the claim
// serves by priority, then id (docs/verbs.md §4.3.1).
func TestWithPriority(t *testing.T) {
	e := newEnv(t)
	a := e.enqueue("q", "a", emq.WithPriority(3))
	b := e.enqueue("q", "b")
	ids, err := e.c.EnqueueMany(e.ctx, "q", []emq.NewJob{{Payload: []byte("c")}}, emq.WithPriority(-4))
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := e.c.Claim(e.ctx, "q", time.Second, emq.Count(3))
	if err != nil || len(jobs) != 3 || jobs[0].ID != ids[0] || jobs[1].ID != b || jobs[2].ID != a {
		t.Fatalf("claim %+v %v", jobs, err)
	}
	if _, err := e.c.Enqueue(e.ctx, "q", []byte("x"), emq.WithPriority(1<<53)); err == nil {
		t.Fatal("PRIORITY 2^53 admitted")
	}
}
