package emq_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/emqd/emqd/emq"
)

// TestEnqueueMany: EMQ.ENQUEUE.MANY through the library, RESP2 and RESP3:
// minted and own ids, duplicates as "", the options, and a bad id that
// admits nothing.
func TestEnqueueMany(t *testing.T) {
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			e := newEnvProto(t, proto)
			jobs := make([]emq.NewJob, 1000)
			for i := range jobs {
				jobs[i].Payload = []byte(fmt.Sprint(i))
			}
			jobs[10].ID = "JOB00000000001"
			ids, err := e.c.EnqueueMany(e.ctx, "q", jobs, nil)
			if err != nil || len(ids) != len(jobs) || ids[10] != "JOB00000000001" || ids[0] == "" || ids[999] <= ids[0] {
				t.Fatalf("ids %d %v", len(ids), err)
			}
			again, err := e.c.EnqueueMany(e.ctx, "q", []emq.NewJob{{ID: "JOB00000000001", Payload: []byte("x")}, {Payload: []byte("y")}}, nil)
			if err != nil || again[0] != "" || again[1] == "" {
				t.Fatalf("duplicate: %q %v", again, err)
			}
			n, err := e.in.Counts(e.ctx, "q")
			if err != nil || n.Pending != 1001 {
				t.Fatalf("counts %+v %v", n, err)
			}
			d, err := e.c.EnqueueMany(e.ctx, "q", []emq.NewJob{{Payload: []byte("later")}}, &emq.EnqueueOptions{Delay: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if j, err := e.in.Job(e.ctx, "q", d[0]); err != nil || j.State != "scheduled" || j.RunAt.UnixMilli() != t0+1000 {
				t.Fatalf("delayed %+v %v", j, err)
			}
			if _, err := e.c.EnqueueMany(e.ctx, "q", []emq.NewJob{{Payload: []byte("a")}, {ID: "nope"}}, nil); !errors.Is(err, emq.ErrKind) {
				t.Fatalf("bad id: %v", err)
			}
			if n2, _ := e.in.Counts(e.ctx, "q"); n2.Pending != 1001 || n2.Scheduled != 1 {
				t.Fatalf("a refused batch admitted: %+v", n2)
			}
			if ids, err := e.c.EnqueueMany(e.ctx, "q", nil, nil); ids != nil || err != nil {
				t.Fatalf("empty: %v %v", ids, err)
			}
		})
	}
}

// TestWorkerCompletesWithNext: a busy worker completes each job with
// EMQ.COMPLETE ... NEXT (docs/verbs.md §4.5.1), so the server sees one
// command per job and almost no separate claims: 200 jobs, concurrency 1,
// then INFO commandstats counts 200 completions and at most a few claims.
func TestWorkerCompletesWithNext(t *testing.T) {
	e := newEnv(t)
	const n = 200
	jobs := make([]emq.NewJob, n)
	if _, err := e.c.EnqueueMany(e.ctx, "q", jobs, nil); err != nil {
		t.Fatal(err)
	}
	wk := e.startWorker("q", emq.WorkerOptions{StallSweepInterval: -1}, func(context.Context, *emq.Job) error { return nil })
	for done := 0; done < n; {
		select {
		case <-wk.claimed:
		case o := <-wk.outcomes:
			if o.o.Kind != emq.Completed {
				t.Fatalf("outcome %+v", o.o)
			}
			done++
		case <-time.After(within):
			t.Fatalf("%d of %d outcomes within %v", done, n, within)
		}
	}
	info, err := e.rdb.Info(e.ctx, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	calls := func(cmd string) int {
		for _, line := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, "cmdstat_"+cmd+":calls="); ok {
				k, _ := strconv.Atoi(v[:strings.IndexByte(v, ',')])
				return k
			}
		}
		return 0
	}
	if c, cl := calls("emq.complete"), calls("emq.claim"); c != n || cl > 3 {
		t.Fatalf("emq.complete %d calls, emq.claim %d: want %d and at most 3", c, cl, n)
	}
}
