package server_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/emqd/emqd/clock"
	"github.com/emqd/emqd/server"
)

// TestEmbeddedEmqd starts emqd inside the test (in memory, on a free
// loopback port, with a clock that moves only when told) and drives one
// job through a worker that dies and one that completes it.
func TestEmbeddedEmqd(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(1_700_000_000_000)            // the server clock, Unix ms
	s := server.StartTest(t, server.Options{Clock: clk}) // closed when the test ends
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer rdb.Close()

	id, err := rdb.Do(ctx, "EMQ.ENQUEUE", "emails", "*", "to=ada@example.com").Text()
	if err != nil {
		t.Fatal(err)
	}
	// A claim replies [[id payload token failures]].
	jobs, err := rdb.Do(ctx, "EMQ.CLAIM", "emails", 30_000).Slice()
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %v %v", jobs, err)
	}
	if job := jobs[0].([]any); job[0] != id || job[1] != "to=ada@example.com" || job[2] != "1" || job[3] != int64(0) {
		t.Fatalf("claimed %v", job)
	}

	// The worker dies; its 30 s lease runs out without any waiting.
	clk.Advance(30_001)
	swept, err := rdb.Do(ctx, "EMQ.STALLED.CHECK", "emails", 2).Slice() // [recovered dead]
	if err != nil || len(swept[0].([]any)) != 1 || swept[0].([]any)[0] != id {
		t.Fatalf("sweep: %v %v", swept, err)
	}

	// The next claim gets token 2; the dead worker's token 1 no longer works.
	jobs, err = rdb.Do(ctx, "EMQ.CLAIM", "emails", 30_000).Slice()
	if err != nil || len(jobs) != 1 || jobs[0].([]any)[2] != "2" {
		t.Fatalf("second claim: %v %v", jobs, err)
	}
	if err := rdb.Do(ctx, "EMQ.COMPLETE", "emails", id, 1).Err(); err == nil || err.Error() != "EMQSTALE complete token mismatch" {
		t.Fatalf("stale token: %v", err)
	}
	if n, err := rdb.Do(ctx, "EMQ.COMPLETE", "emails", id, 2).Int(); err != nil || n != 1 {
		t.Fatalf("complete: %v %v", n, err)
	}

	counts, err := rdb.Do(ctx, "EMQ.COUNTS", "emails").Result() // a map under RESP3
	if err != nil {
		t.Fatal(err)
	}
	if c := counts.(map[any]any); c["completed"] != int64(1) || c["pending"] != int64(0) || c["active"] != int64(0) {
		t.Fatalf("counts: %v", c)
	}
}
