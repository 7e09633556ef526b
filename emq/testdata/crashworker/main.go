// Command crashworker is the worker of emq's crash test
// (TestWorkerKilledJobsComeBack): a Go program that uses only Worker.Run,
// as the README's worker does. It serves queue EMQ_QUEUE on EMQ_ADDR with
// Concurrency 8 and Lease EMQ_LEASE_MS, and prints "claimed <id>" for every
// job its handler starts. With EMQ_HANG=1 every handler waits forever (the
// test SIGKILLs the process with the jobs in hand); otherwise it completes
// each job at once.
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/emqd/emqd/emq"
	"github.com/redis/go-redis/v9"
)

func main() {
	leaseMs, err := strconv.Atoi(os.Getenv("EMQ_LEASE_MS"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "EMQ_LEASE_MS:", err)
		os.Exit(2)
	}
	hang := os.Getenv("EMQ_HANG") == "1"
	c := emq.New(redis.NewClient(&redis.Options{Addr: os.Getenv("EMQ_ADDR"), MaxRetries: -1}), nil)
	w := emq.NewWorker(c, &emq.WorkerOptions{Concurrency: 8, LeaseDuration: time.Duration(leaseMs) * time.Millisecond})
	var mu sync.Mutex
	err = w.Run(context.Background(), os.Getenv("EMQ_QUEUE"), func(ctx context.Context, j *emq.Job) error {
		mu.Lock()
		fmt.Printf("claimed %s\n", j.ID)
		mu.Unlock()
		if hang {
			select {}
		}
		return nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
