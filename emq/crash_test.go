package emq_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/emqd/emqd/emq"
	"github.com/emqd/emqd/server"
	"github.com/redis/go-redis/v9"
)

// TestWorkerKilledJobsComeBack is issue 21's crash drill: a worker process
// (testdata/crashworker, only Worker.Run, the library's defaults but a
// 2 s lease) is SIGKILLed with eight jobs in hand, then started again. The
// restarted worker's own sweep (WorkerOptions.StallSweep, default Lease/2,
// max_stalled 2) brings the eight back: every job completes, none is dead,
// and the last completes within the lease plus the sweep interval after
// the kill (plus a slack for starting a process on a loaded machine).
func TestWorkerKilledJobsComeBack(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a worker process")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(t.TempDir(), "crashworker")
	if out, err := exec.Command(goBin, "build", "-o", bin, "./testdata/crashworker").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	srv := server.StartTest(t, server.Options{}) // the wall clock: a real process's timers
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	c := emq.New(rdb, nil)
	ctx := context.Background()
	const jobs = 40
	for i := 0; i < jobs; i++ {
		if _, err := c.Enqueue(ctx, "crash", []byte(fmt.Sprint(i)), nil); err != nil {
			t.Fatal(err)
		}
	}
	const lease = 2 * time.Second
	sweep := lease / 2 // WorkerOptions.StallSweep's default
	start := func(hang bool) (*exec.Cmd, *bufio.Scanner) {
		cmd := exec.Command(bin)
		cmd.Env = append(os.Environ(), "EMQ_ADDR="+srv.Addr(), "EMQ_QUEUE=crash", fmt.Sprintf("EMQ_LEASE_MS=%d", lease.Milliseconds()))
		if hang {
			cmd.Env = append(cmd.Env, "EMQ_HANG=1")
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd, bufio.NewScanner(out)
	}

	// First run: eight handlers start (Concurrency 8) and hang.
	first, lines := start(true)
	held := map[string]bool{}
	for len(held) < 8 && lines.Scan() {
		if id, ok := strings.CutPrefix(lines.Text(), "claimed "); ok {
			held[id] = true
		}
	}
	if len(held) != 8 {
		t.Fatalf("the first worker started %d jobs, want 8", len(held))
	}
	counts, err := c.Inspector().Counts(ctx, "crash")
	if err != nil || counts.Active != 8 {
		t.Fatalf("before the kill: %+v %v", counts, err)
	}
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.Wait()
	killed := time.Now()

	// Second run: completes everything, the eight recovered jobs included.
	start(false)
	deadline := killed.Add(lease + sweep + 5*time.Second)
	for {
		counts, err = c.Inspector().Counts(ctx, "crash")
		if err != nil {
			t.Fatal(err)
		}
		if counts.Completed == jobs || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	took := time.Since(killed)
	if counts.Completed != jobs || counts.Dead != 0 || counts.Failed != 0 || counts.Pending+counts.Active+counts.Scheduled != 0 {
		t.Fatalf("%v after the kill: %+v, want all %d completed and none dead", took, counts, jobs)
	}
	for id := range held {
		if j, err := c.Inspector().Job(ctx, "crash", id); !errors.Is(err, emq.ErrNoJob) {
			t.Fatalf("job %s held by the killed worker: %+v %v, want completed (no row)", id, j, err)
		}
	}
	t.Logf("all %d jobs completed %v after the kill (lease %v, sweep every %v)", jobs, took.Round(time.Millisecond), lease, sweep)
}
