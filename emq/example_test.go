package emq_test

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/emqd/emqd/emq"
	"github.com/emqd/emqd/server"
	"github.com/redis/go-redis/v9"
)

// Example is the README's worker ("Workers in Go: the emq library"): the
// lines between the README markers are the README's block, kept identical
// by TestReadmeWorker. Around them: an emqd started in process, and a
// send that prints each payload and stops the worker after the third.
// Run returns once the jobs it holds are settled.
func Example() {
	s, serr := server.Start(server.Options{}) // in memory, on a free loopback port
	if serr != nil {
		panic(serr)
	}
	defer s.Close(context.Background())
	addr := s.Addr()
	ctx, stop := context.WithCancel(context.Background())
	send := mailer(stop, 3)

	// README begin
	c := emq.New(redis.NewClient(&redis.Options{Addr: addr}), nil)
	for _, to := range []string{"ada", "bob", "cy"} {
		c.Enqueue(ctx, "emails", []byte("to="+to+"@example.com"), nil)
	}

	w := emq.NewWorker(c, &emq.WorkerOptions{Concurrency: 8})
	err := w.Run(ctx, "emails", func(ctx context.Context, j *emq.Job) error {
		return send(ctx, j.Payload) // nil completes the job; an error retries it later
	})
	// README end

	n, _ := c.Inspector().Counts(context.Background(), "emails")
	fmt.Println(err, "completed:", n.Completed, "pending:", n.Pending)
	// Unordered output:
	// sending to=ada@example.com
	// sending to=bob@example.com
	// sending to=cy@example.com
	// <nil> completed: 3 pending: 0
}

// mailer is the example's send: it prints the payload and calls stop
// after n jobs.
func mailer(stop func(), n int32) func(context.Context, []byte) error {
	var sent atomic.Int32
	return func(ctx context.Context, payload []byte) error {
		fmt.Println("sending", string(payload))
		if sent.Add(1) == n {
			stop()
		}
		return nil
	}
}
