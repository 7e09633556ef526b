package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/emqd/emqd/internal/testsupport"
)

// TestCrashKeepsAcknowledgedWrites is the crash test of docs/durability.md
// §7: the real emqd
// binary with appendfsync always, concurrent writers recording every
// acknowledged reply, SIGKILL at random points (some while a rewrite runs),
// a restart, and a check that every acknowledged write is there and the job
// invariants hold. SIGKILL keeps the page cache, so this shows the process
// side; power loss is internal/store/aof's fault-injection tests.
func TestCrashKeepsAcknowledgedWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and restarts the binary")
	}
	bin := testsupport.BuildEmqd(t)
	dir := t.TempDir()
	if d := os.Getenv("EMQD_CRASH_DIR"); d != "" {
		dir = d
	}
	port := testsupport.FreePort(t)
	addr := "127.0.0.1:" + port
	logPath := filepath.Join(dir, "emqd.log")
	start := func() *testsupport.Proc {
		t.Helper()
		return testsupport.StartEmqd(t, bin, port, logPath, "--dir", dir, "--appendfsync", "always")
	}

	m := &model{enqueued: map[string]bool{}, completed: map[string]bool{}, completing: map[string]bool{}, tokens: map[string]int{}}
	var seq atomic.Int64
	seed, err := crashSeed(os.Getenv("EMQD_CRASH_SEED"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("seed %d: EMQD_CRASH_SEED=%d repeats the test's random choices (kill points, rewrites, each worker's mix)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 4))
	const rounds = 24
	duringRewrite := 0
	for round := 0; round < rounds; round++ {
		cmd := start()
		c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, MaxRetries: -1, PoolSize: 4, ReadTimeout: testsupport.ClientTimeout, WriteTimeout: testsupport.ClientTimeout})
		if round > 0 {
			m.verify(t, c, round)
		} else {
			fill(t, c)
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range 6 {
			wg.Go(func() { m.worker(t, addr, w, seed+uint64(round)<<32, &seq, stop) })
		}
		time.Sleep(time.Duration(100+rng.IntN(400)) * time.Millisecond)
		if round%3 == 2 {
			// Kill during a rewrite.
			must(t, c.Do(context.Background(), "BGREWRITEAOF").Err())
			time.Sleep(time.Duration(rng.IntN(15)) * time.Millisecond)
			if strings.Contains(c.Info(context.Background(), "persistence").Val(), "aof_rewrite_in_progress:1") {
				duringRewrite++
			}
		}
		cmd.Cmd.Process.Signal(syscall.SIGKILL)
		close(stop)
		wg.Wait()
		c.Close()
		<-cmd.Exited
	}
	if duringRewrite < 2 {
		t.Errorf("only %d kills landed during a rewrite", duringRewrite)
	}
	// A clean stop: SIGTERM fsyncs and exits 0; everything is still there.
	cmd := start()
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, MaxRetries: -1, ReadTimeout: testsupport.ClientTimeout, WriteTimeout: testsupport.ClientTimeout})
	m.verify(t, c, rounds)
	c.Close()
	if code := cmd.Stop(); code != 0 {
		t.Fatalf("exit code %d after SIGTERM", code)
	}
	cmd = start()
	c = redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, MaxRetries: -1, ReadTimeout: testsupport.ClientTimeout, WriteTimeout: testsupport.ClientTimeout})
	m.verify(t, c, rounds+1)
	c.Close()
	cmd.Stop()
	t.Logf("%d acknowledged enqueues, %d completions, %d claims, counter %d; %d kills during a rewrite",
		len(m.enqueued), len(m.completed), len(m.tokens), m.counter, duringRewrite)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// fill adds bulk the rewrite has to copy, so a kill can land inside one.
func fill(t *testing.T, c *redis.Client) {
	ctx := context.Background()
	for b := range 40 {
		p := c.Pipeline()
		for i := range 1000 {
			k := fmt.Sprintf("filler:%d:%d", b, i)
			p.HSet(ctx, k, "a", "aaaaaaaaaaaaaaaa", "b", "bbbbbbbbbbbbbbbbbbbbbb", "c", i)
		}
		_, err := p.Exec(ctx)
		must(t, err)
	}
}

// model is what the clients were told: every acknowledged write.
type model struct {
	mu         sync.Mutex
	enqueued   map[string]bool // acknowledged EMQ.ENQUEUE
	completed  map[string]bool // acknowledged EMQ.COMPLETE
	completing map[string]bool // EMQ.COMPLETE sent (acknowledged or not)
	tokens     map[string]int  // highest token an acknowledged claim returned
	counter    int64           // highest acknowledged HINCRBY result
}

// crashSeed is the crash test's seed: EMQD_CRASH_SEED's value (a decimal
// uint64) when set, otherwise one from the time now.
func crashSeed(env string, now time.Time) (uint64, error) {
	if env == "" {
		return uint64(now.UnixNano()), nil
	}
	v, err := strconv.ParseUint(strings.TrimSpace(env), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("EMQD_CRASH_SEED=%q is not a decimal unsigned 64-bit integer", env)
	}
	return v, nil
}

// TestCrashSeed: the seed comes from EMQD_CRASH_SEED when set, from the
// clock otherwise, and a bad value is refused with its name.
func TestCrashSeed(t *testing.T) {
	now := time.Unix(0, 1234567890)
	if v, err := crashSeed("", now); err != nil || v != 1234567890 {
		t.Errorf("unset: %d %v", v, err)
	}
	if v, err := crashSeed("18446744073709551615", now); err != nil || v != 1<<64-1 {
		t.Errorf("max: %d %v", v, err)
	}
	for _, bad := range []string{"x", "-1", "18446744073709551616", "1.5"} {
		if _, err := crashSeed(bad, now); err == nil || !strings.Contains(err.Error(), "EMQD_CRASH_SEED") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// worker enqueues (one at a time and pipelined), claims, completes, fails
// and counts until stop or until the server dies.
func (m *model) worker(t *testing.T, addr string, w int, seed uint64, seq *atomic.Int64, stop chan struct{}) {
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, MaxRetries: -1, PoolSize: 1, ReadTimeout: testsupport.ClientTimeout, WriteTimeout: testsupport.ClientTimeout})
	defer c.Close()
	rng := rand.New(rand.NewPCG(uint64(w), seed))
	newID := func() string { return fmt.Sprintf("JOB%011d", seq.Add(1)) }
	for {
		select {
		case <-stop:
			return
		default:
		}
		var err error
		switch op := rng.IntN(10); {
		case op < 3:
			id := newID()
			var v any
			v, err = c.Do(ctx, "EMQ.ENQUEUE", "q", id, "payload-"+id).Result()
			if err == nil && v == id {
				m.mu.Lock()
				m.enqueued[id] = true
				m.mu.Unlock()
			}
		case op < 4:
			p := c.Pipeline()
			ids := make([]string, 8)
			cmds := make([]*redis.Cmd, 8)
			for i := range ids {
				ids[i] = newID()
				cmds[i] = p.Do(ctx, "EMQ.ENQUEUE", "q", ids[i], "p")
			}
			_, err = p.Exec(ctx)
			m.mu.Lock()
			for i, cmd := range cmds {
				if v, e := cmd.Result(); e == nil && v == ids[i] {
					m.enqueued[ids[i]] = true
				}
			}
			m.mu.Unlock()
		case op < 8:
			var v any
			v, err = c.Do(ctx, "EMQ.CLAIM", "q", 600000, "COUNT", 3).Result()
			if err != nil {
				break
			}
			for _, x := range v.([]any) {
				j := x.([]any)
				id, tok := j[0].(string), j[2].(string)
				n, _ := strconv.Atoi(tok)
				m.mu.Lock()
				m.tokens[id] = max(m.tokens[id], n)
				m.mu.Unlock()
				switch rng.IntN(4) {
				case 0, 1:
					m.mu.Lock()
					m.completing[id] = true // its outcome is unknown until the reply
					m.mu.Unlock()
					r, e := c.Do(ctx, "EMQ.COMPLETE", "q", id, tok).Result()
					if e == nil && r == int64(1) {
						m.mu.Lock()
						m.completed[id] = true
						m.mu.Unlock()
					}
					err = e
				case 2:
					err = c.Do(ctx, "EMQ.FAIL", "q", id, tok, 3, 0, "boom").Err()
				}
				if err != nil {
					break
				}
			}
		default:
			var n int64
			n, err = c.HIncrBy(ctx, "ctr", "n", 1).Result()
			if err == nil {
				m.mu.Lock()
				m.counter = max(m.counter, n)
				m.mu.Unlock()
			}
		}
		if err != nil {
			var re redis.Error
			if errors.As(err, &re) {
				t.Errorf("worker %d: error reply %v", w, err)
			}
			return // the server is gone
		}
	}
}

// verify checks every acknowledged write and the job invariants: each
// job in exactly one set, state agreeing with its set, active rows with a
// lease_epoch, no set member without a row.
func (m *model) verify(t *testing.T, c *redis.Client, round int) {
	t.Helper()
	ctx := context.Background()
	m.mu.Lock()
	defer m.mu.Unlock()
	ctr, _ := c.HGet(ctx, "ctr", "n").Int64()
	if ctr < m.counter {
		t.Fatalf("round %d: counter %d, acknowledged %d", round, ctr, m.counter)
	}
	sets := map[string]string{"pending": "pending", "active": "active", "schedule": "scheduled", "dead": "dead"}
	member := map[string]string{}
	for set, state := range sets {
		ids, err := c.ZRange(ctx, "emq:{q}:"+set, 0, -1).Result()
		must(t, err)
		for _, id := range ids {
			if prev, dup := member[id]; dup {
				t.Fatalf("round %d: %s in %s and %s", round, id, prev, state)
			}
			member[id] = state
		}
	}
	rows := map[string]map[string]string{}
	iter := c.Scan(ctx, 0, "emq:{q}:job:*", 1000).Iterator()
	for iter.Next(ctx) {
		id := strings.TrimPrefix(iter.Val(), "emq:{q}:job:")
		row, err := c.HGetAll(ctx, iter.Val()).Result()
		must(t, err)
		rows[id] = row
	}
	must(t, iter.Err())
	for id, row := range rows {
		state, ok := member[id]
		if !ok {
			t.Fatalf("round %d: row %s in no set: %v", round, id, row)
		}
		if row["state"] != state {
			t.Fatalf("round %d: %s has state %q but is in the %s set", round, id, row["state"], state)
		}
		if state == "active" && row["lease_epoch"] == "" {
			t.Fatalf("round %d: active %s without lease_epoch", round, id)
		}
	}
	for id := range member {
		if rows[id] == nil {
			t.Fatalf("round %d: set member %s without a row", round, id)
		}
	}
	for id := range m.enqueued {
		if !m.completing[id] && rows[id] == nil {
			t.Fatalf("round %d: acknowledged job %s lost", round, id)
		}
	}
	for id := range m.completed {
		if rows[id] != nil {
			t.Fatalf("round %d: acknowledged completion of %s lost: %v", round, id, rows[id])
		}
	}
	for id, tok := range m.tokens {
		if row := rows[id]; row != nil {
			if n, _ := strconv.Atoi(row["attempts"]); n < tok {
				t.Fatalf("round %d: %s attempts %s below acknowledged token %d", round, id, row["attempts"], tok)
			}
		}
	}
}
