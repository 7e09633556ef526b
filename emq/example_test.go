package emq_test

import (
	"context"
	"fmt"

	"github.com/emqd/emqd/emq"
	"github.com/emqd/emqd/server"
	"github.com/redis/go-redis/v9"
)

// A worker in ten lines (the README's), against an emqd started in
// process. The worker runs one job at a time so the output's order is
// fixed; the handler stops the worker after the third job, and Run returns
// once that job is completed.
func Example() {
	s, err := server.Start(server.Options{}) // in memory, on a free loopback port
	if err != nil {
		panic(err)
	}
	defer s.Close(context.Background())
	ctx, stop := context.WithCancel(context.Background())
	c := emq.New(redis.NewClient(&redis.Options{Addr: s.Addr()}))
	for _, to := range []string{"ada", "bob", "cy"} {
		c.Enqueue(ctx, "emails", []byte("to="+to))
	}

	sent := 0
	w := emq.NewWorker(c, emq.WorkerOptions{Concurrency: 1})
	err = w.Run(ctx, "emails", func(ctx context.Context, j *emq.Job) error {
		fmt.Println("sending", string(j.Payload)) // nil completes the job, an error retries it
		if sent++; sent == 3 {
			stop()
		}
		return nil
	})

	n, _ := c.Counts(context.Background(), "emails")
	fmt.Println(err, n.Completed, n.Pending)
	// Output:
	// sending to=ada
	// sending to=bob
	// sending to=cy
	// <nil> 3 0
}
