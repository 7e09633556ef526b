package emq_test

import (
	"context"
	"fmt"
	"time"

	"github.com/emqd/emqd/emq"
	"github.com/emqd/emqd/server"
	"github.com/redis/go-redis/v9"
)

// startExample is an emqd in process for the examples, and a go-redis
// client of it.
func startExample() (*redis.Client, func()) {
	s, err := server.Start(server.Options{}) // in memory, on a free loopback port
	if err != nil {
		panic(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr()})
	return rdb, func() {
		rdb.Close()
		s.Close(context.Background())
	}
}

// Email is a job kind of the typed layer: its JSON is the job's args.
type Email struct {
	To      string `json:"to"`
	Subject string `json:"subject"`
}

// Kind names the kind in the payload's envelope.
func (Email) Kind() string { return "email" }

// Resize is a second kind, sent to the same queue.
type Resize struct {
	Image string `json:"image"`
	Width int    `json:"width"`
}

func (Resize) Kind() string { return "resize" }

// ExampleKinds: two kinds on one queue, each job routed to the handler of
// its kind with its args decoded; the payload is the envelope.
func ExampleKinds() {
	rdb, stop := startExample()
	defer stop()
	ctx, cancel := context.WithCancel(context.Background())
	c := emq.New(rdb, nil)

	id, _ := c.EnqueueKind(ctx, "work", Email{To: "ada@example.com", Subject: "hi"}, nil)
	c.EnqueueKind(ctx, "work", Resize{Image: "cat.png", Width: 64}, nil)
	j, _ := c.Inspector().Job(ctx, "work", id)
	fmt.Println(string(j.Payload))

	done := make(chan string, 2)
	kinds := emq.NewKinds()
	emq.Handle(kinds, func(ctx context.Context, j *emq.Job, e Email) error {
		done <- "email to " + e.To
		return nil
	})
	emq.Handle(kinds, func(ctx context.Context, j *emq.Job, r Resize) error {
		done <- fmt.Sprintf("resize %s to %d", r.Image, r.Width)
		return nil
	})
	go func() {
		fmt.Println(<-done)
		fmt.Println(<-done)
		cancel()
	}()
	w := emq.NewWorker(c, nil)
	w.Run(ctx, "work", kinds.Handler)
	n, _ := c.Inspector().Counts(context.Background(), "work")
	fmt.Println("completed:", n.Completed)
	// Output:
	// {"kind":"email","args":{"to":"ada@example.com","subject":"hi"}}
	// email to ada@example.com
	// resize cat.png to 64
	// completed: 2
}

// ExampleClient_Claim: a hand-written loop. Claim returns leases; each
// lease sends its own holder verbs.
func ExampleClient_Claim() {
	rdb, stop := startExample()
	defer stop()
	ctx := context.Background()
	c := emq.New(rdb, nil)
	c.Enqueue(ctx, "mail", []byte("a"), nil)
	c.Enqueue(ctx, "mail", []byte("b"), nil)

	leases, _ := c.Claim(ctx, "mail", 30*time.Second, &emq.ClaimOptions{MaxJobs: 10})
	for _, l := range leases {
		fmt.Println("claimed", string(l.Payload), "token", l.Token)
	}
	leases[0].Progress(ctx, "half way")
	fmt.Println(leases[0].Complete(ctx, nil))
	v, _ := leases[1].Fail(ctx, "smtp down", &emq.FailOptions{RetryIn: time.Minute})
	fmt.Println("dead:", v.Dead, "failures:", v.Failures)
	// The first lease is spent: its verbs are refused.
	fmt.Println(leases[0].Extend(ctx, time.Minute))
	// Output:
	// claimed a token 1
	// claimed b token 1
	// <nil>
	// dead: false failures: 1
	// EMQSTALE job gone
}

// ExampleInspector: the operator's view of a queue and a bulk action.
func ExampleInspector() {
	rdb, stop := startExample()
	defer stop()
	ctx := context.Background()
	c := emq.New(rdb, nil)
	for _, p := range []string{"a", "b", "c"} {
		c.Enqueue(ctx, "reports", []byte(p), &emq.EnqueueOptions{Delay: time.Hour})
	}

	in := emq.NewInspector(rdb, nil)
	n, _ := in.Counts(ctx, "reports")
	fmt.Println("scheduled:", n.Scheduled, "pending:", n.Pending)
	page, _ := in.List(ctx, "reports", emq.StateScheduled, &emq.ListOptions{Count: 2})
	for _, j := range page {
		fmt.Println(string(j.Payload), j.State)
	}
	b, _ := in.PromoteAll(ctx, "reports", nil)
	fmt.Println("promoted:", b.Done, "calls:", b.Calls)
	n, _ = in.Counts(ctx, "reports")
	fmt.Println("scheduled:", n.Scheduled, "pending:", n.Pending)
	// Output:
	// scheduled: 3 pending: 0
	// a scheduled
	// b scheduled
	// promoted: 3 calls: 1
	// scheduled: 0 pending: 3
}
