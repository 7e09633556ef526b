package server_test

import (
	"context"
	"fmt"
	"log"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/emqd/emqd/clock"
	"github.com/emqd/emqd/server"
)

// Example starts emqd in process on a free loopback port with a clock the
// test moves by hand, and drives one job through go-redis: a worker claims
// it and dies, the lease runs out, the sweep sends the job back, a second
// worker completes it.
func Example() {
	ctx := context.Background()
	clk := clock.NewManual(1_700_000_000_000) // Unix ms; nothing moves it but Advance
	s, err := server.Start(server.Options{Clock: clk})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close(ctx)
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer rdb.Close()

	id, err := rdb.Do(ctx, "EMQ.ENQUEUE", "emails", "*", "to=ada@example.com").Text()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("enqueued:", id)

	// [[id payload token failures]]: the token fences this holder.
	job, _ := rdb.Do(ctx, "EMQ.CLAIM", "emails", 30_000).Slice()
	fmt.Println("claimed:", job)

	// The worker dies without a word; its 30 s lease runs out.
	clk.Advance(30_001)
	swept, _ := rdb.Do(ctx, "EMQ.STALLED.CHECK", "emails", 2).Slice()
	fmt.Println("[recovered dead]:", swept)
	row, _ := rdb.Do(ctx, "EMQ.JOB", "emails", id).Result()
	fields := row.(map[any]any) // RESP3 map (go-redis speaks RESP3)
	fmt.Println("state:", fields["state"], "stalled:", fields["stalled"])

	job, _ = rdb.Do(ctx, "EMQ.CLAIM", "emails", 30_000).Slice()
	fmt.Println("claimed again:", job)
	_, err = rdb.Do(ctx, "EMQ.COMPLETE", "emails", id, 1).Result()
	fmt.Println("first token:", err)
	n, _ := rdb.Do(ctx, "EMQ.COMPLETE", "emails", id, 2).Int()
	fmt.Println("completed:", n)

	row, _ = rdb.Do(ctx, "EMQ.JOB", "emails", id).Result()
	fmt.Println("row after completion:", row)
	counts, _ := rdb.Do(ctx, "EMQ.COUNTS", "emails").Result()
	fmt.Println("counts:", counts)
	// Output:
	// enqueued: JOB0000Tvcokgi
	// claimed: [[JOB0000Tvcokgi to=ada@example.com 1 0]]
	// [recovered dead]: [[JOB0000Tvcokgi] []]
	// state: pending stalled: 1
	// claimed again: [[JOB0000Tvcokgi to=ada@example.com 2 0]]
	// first token: EMQSTALE complete token mismatch
	// completed: 1
	// row after completion: <nil>
	// counts: map[active:0 completed:1 dead:0 failed:0 latency_ms:0 pending:0 retained:0 scheduled:0 waiting:0]
}

// TestStartTest is the five lines a Go test needs: StartTest closes the
// server when the test ends.
func TestStartTest(t *testing.T) {
	var s *server.Server
	t.Run("user test", func(t *testing.T) {
		clk := clock.NewManual(1_700_000_000_000)
		s = server.StartTest(t, server.Options{Clock: clk})
		rdb := redis.NewClient(&redis.Options{Addr: s.Addr()})
		defer rdb.Close()
		ctx := context.Background()
		if err := rdb.Do(ctx, "EMQ.ENQUEUE", "q", "*", "p").Err(); err != nil {
			t.Fatal(err)
		}
		clk.Advance(1000)
		if got, err := rdb.Do(ctx, "EMQ.CLAIM", "q", 100).Slice(); err != nil || len(got) != 1 {
			t.Fatalf("claim %v %v", got, err)
		}
	})
	select {
	case <-s.Done():
	default:
		t.Fatal("the server still runs after its test ended")
	}
}
