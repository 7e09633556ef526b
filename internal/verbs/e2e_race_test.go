package verbs_test

import (
	"context"
	"errors"
	"math/rand"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// holderLost reports whether err is one of the refusals a holder gets for a
// job that is no longer its own (docs/verbs.md §4.4): claimed again, gone,
// swept back to pending, or dead-lettered by the sweep after its lease ran
// out (`EMQSTATE job is dead`: the token still matches, as nobody claimed
// it since).
func holderLost(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "EMQSTALE ") || msg == "EMQSTATE job is dead"
}

// TestHolderOfSweptDeadJob: the sweep dead-letters a job whose lease ran
// out under its holder; every verb of that holder is then refused with
// `EMQSTATE job is dead`, which TestE2EConcurrentWorkers must count as a
// lost job, not as an unexpected error (the race it met under load).
func TestHolderOfSweptDeadJob(t *testing.T) {
	e := newEnv(t)
	e.ok("EMQ.ENQUEUE", "q", "JOB0000000000A", "p")
	id, tok, _ := e.claim("q", 100)
	e.advance(101)
	swept := e.ok("EMQ.STALLED.CHECK", "q", 1).([]any)
	if dead := swept[1].([]any); len(dead) != 1 || dead[0] != id {
		t.Fatalf("sweep: %v", swept)
	}
	for _, args := range [][]any{
		{"EMQ.COMPLETE", "q", id, tok},
		{"EMQ.FAIL", "q", id, tok, 2, 0, "boom"},
		{"EMQ.REQUEUE", "q", id, tok},
		{"EMQ.EXTEND", "q", id, tok, 200},
		{"EMQ.DELAY", "q", id, tok, "IN", 5},
		{"EMQ.PROGRESS", "q", id, tok, "half"},
	} {
		_, err := e.do(args...)
		if err == nil || err.Error() != "EMQSTATE job is dead" {
			t.Fatalf("%v: %v, want EMQSTATE job is dead", args, err)
		}
		if !holderLost(err) {
			t.Fatalf("%v: %v is not taken for a lost job", args, err)
		}
	}
}

// TestE2EConcurrentWorkers runs many workers claiming, completing, failing,
// requeueing and delaying while sweeps and promotions run and the clock
// moves (leases expire under their holders). At the end every job is
// exactly once in exactly one of pending/active/schedule/dead, or completed
// (row gone, counted once), and every row's state agrees with its set. Half
// the workers claim with BLOCK. Run it under -race.
func TestE2EConcurrentWorkers(t *testing.T) {
	e := newEnv(t)
	const (
		jobs    = 240
		workers = 6
	)
	ids := make([]string, jobs)
	for i := range ids {
		ids[i] = e.ok("EMQ.ENQUEUE", "q", "*", "payload").(string)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var stop atomic.Bool
	var wg sync.WaitGroup
	var stale, done, failed atomic.Int64
	unexpected := make(chan string, 16)
	check := func(err error) {
		if err == nil || errors.Is(err, redis.Nil) {
			return
		}
		if holderLost(err) {
			stale.Add(1)
			return
		}
		select {
		case unexpected <- err.Error():
		default:
		}
	}
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(w)))
			c := e.client(2)
			for !stop.Load() && ctx.Err() == nil {
				args := []any{"EMQ.CLAIM", "q", 100, "COUNT", 2}
				if w%2 == 1 {
					args = append(args, "BLOCK", 100) // a blocked claimer, woken or timed out
				}
				v, err := c.Do(ctx, args...).Result()
				if errors.Is(err, redis.Nil) {
					continue // BLOCK timed out
				}
				if err != nil {
					check(err)
					continue
				}
				got := v.([]any)
				if len(got) == 0 {
					time.Sleep(time.Millisecond)
					continue
				}
				for _, j := range got {
					job := j.([]any)
					id, tok := job[0].(string), job[2].(string)
					if rng.Intn(4) == 0 {
						time.Sleep(time.Millisecond) // a slow holder: its lease may be swept
					}
					var err error
					switch rng.Intn(10) {
					case 0, 1, 2:
						var r any
						r, err = c.Do(ctx, "EMQ.FAIL", "q", id, tok, 2, rng.Intn(30), "boom").Result()
						if err == nil && r.([]any)[0] == "dead" {
							failed.Add(1)
						}
					case 3:
						err = c.Do(ctx, "EMQ.REQUEUE", "q", id, tok).Err()
					case 4:
						err = c.Do(ctx, "EMQ.DELAY", "q", id, tok, "IN", rng.Intn(30)).Err()
					case 5:
						if err = c.Do(ctx, "EMQ.EXTEND", "q", id, tok, 200).Err(); err == nil {
							err = c.Do(ctx, "EMQ.PROGRESS", "q", id, tok, "half").Err()
						}
						if err == nil {
							err = c.Do(ctx, "EMQ.COMPLETE", "q", id, tok).Err()
							if err == nil {
								done.Add(1)
							}
						}
					default:
						if err = c.Do(ctx, "EMQ.COMPLETE", "q", id, tok).Err(); err == nil {
							done.Add(1)
						}
					}
					check(err)
				}
			}
		}(w)
	}
	// Sweeps, promotions and a moving clock.
	var bg sync.WaitGroup
	bg.Add(1)
	go func() {
		defer bg.Done()
		c := e.client(2)
		for i := 0; !stop.Load() && ctx.Err() == nil; i++ {
			var r any
			var err error
			switch i % 3 {
			case 0:
				r, err = c.Do(ctx, "EMQ.STALLED.CHECK", "q", 2, 50).Result()
				if err == nil {
					failed.Add(int64(len(r.([]any)[1].([]any))))
				}
			case 1:
				err = c.Do(ctx, "EMQ.PROMOTE", "q", 20).Err()
			case 2:
				e.advance(40)
			}
			check(err)
			time.Sleep(300 * time.Microsecond)
		}
	}()
	for {
		v := e.ok("EMQ.COUNTS", "q").([]any)
		if v[1].(int64)+v[3].(int64)+v[5].(int64) == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("did not drain: %v", v)
		}
		time.Sleep(5 * time.Millisecond)
	}
	stop.Store(true)
	bg.Wait()
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	for waiting := true; waiting; {
		select {
		case <-finished:
			waiting = false
		case <-time.After(2 * time.Millisecond):
			e.advance(100) // time out the blocked claimers
		}
	}
	select {
	case msg := <-unexpected:
		t.Fatalf("unexpected error: %s", msg)
	default:
	}

	// Every job exactly once in exactly one place.
	where := map[string]string{}
	sets := map[string]string{"pending": "pending", "active": "active", "schedule": "scheduled", "dead": "dead"}
	for set, state := range sets {
		for _, id := range e.zmembers("emq:{q}:" + set) {
			if prev, dup := where[id]; dup {
				t.Fatalf("%s in %s and %s", id, prev, set)
			}
			where[id] = set
			if got := e.field("q", id, "state"); got != state {
				t.Fatalf("%s in %s has state %s", id, set, got)
			}
		}
	}
	completed := 0
	for _, id := range ids {
		if _, ok := where[id]; ok {
			continue
		}
		if e.row("q", id) != "" {
			t.Fatalf("%s is in no set but has a row %s", id, e.row("q", id))
		}
		completed++
	}
	if len(where)+completed != jobs {
		t.Fatalf("%d placed + %d completed != %d", len(where), completed, jobs)
	}
	counts := e.ok("EMQ.COUNTS", "q").([]any)
	if counts[9].(int64) != int64(completed) || counts[9].(int64) != done.Load() {
		t.Fatalf("completed metric %v, rows gone %d, workers completed %d", counts[9], completed, done.Load())
	}
	if counts[7].(int64) != int64(len(e.zmembers("emq:{q}:dead"))) || counts[11].(int64) != counts[7].(int64) || failed.Load() != counts[11].(int64) {
		t.Fatalf("dead %v, failed metric %v, deaths seen %d", counts[7], counts[11], failed.Load())
	}
	t.Logf("completed %d, dead %d, stale refusals %d", completed, counts[7], stale.Load())
}
