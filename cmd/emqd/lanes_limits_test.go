package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/emqd/emqd/internal/testsupport"
)

// laneLimit is one lane's limits in the limits test.
type laneLimit struct {
	name      string
	weight    int
	maxActive int
	rateCount int
	ratePer   int64
}

var limitLanes = []laneLimit{
	{name: "a", maxActive: 2},
	{name: "b", maxActive: 3, rateCount: 20, ratePer: 1000},
	{name: "c", weight: 3, rateCount: 40, ratePer: 500},
	{name: "default", maxActive: 4},
}

// TestLaneLimitsUnderConcurrency (docs/verbs.md §4.26.3): the real emqd
// binary (appendfsync always), four lanes with MAX_ACTIVE and RATE, 64
// concurrent claimers completing, failing, requeueing, delaying and
// abandoning jobs (their leases expire and the sweep recovers or buries
// them), a producer adding jobs, and SIGKILL restarts (the restart
// exemption then recovers the old leases). A checker replays the whole
// history, the append-only file record by record: a slot is taken by a
// claim's HSET ... lane_slot 1 and given back by HDEL lane_slot or the row's
// DEL; at no record does a lane hold more slots than its MAX_ACTIVE, no
// claim of a lane finds `count` others of that lane in the `per_ms` before
// it (claimed_at, the server clock), and when the queue has drained no
// slot is held and EMQ.LANES shows every active count at 0.
func TestLaneLimitsUnderConcurrency(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and restarts the binary")
	}
	bin := testsupport.BuildEmqd(t)
	dir := t.TempDir()
	port := testsupport.FreePort(t)
	addr := "127.0.0.1:" + port
	logPath := filepath.Join(dir, "emqd.log")
	start := func() *testsupport.Proc {
		t.Helper()
		return testsupport.StartEmqd(t, bin, port, logPath, "--dir", dir, "--appendonly", "yes", "--appendfsync", "always",
			"--aof-use-rdb-preamble", "no", "--auto-aof-rewrite-percentage", "0")
	}
	ctx := context.Background()
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("EMQD_LANES_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d (EMQD_LANES_SEED repeats the choices)", seed)
	rng := rand.New(rand.NewPCG(seed, 23))

	p := start()
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, MaxRetries: 3, PoolSize: 80})
	defer c.Close()
	for _, l := range limitLanes {
		args := []any{"EMQ.LANE", "q", l.name}
		if l.weight > 0 {
			args = append(args, "WEIGHT", l.weight)
		}
		if l.maxActive > 0 {
			args = append(args, "MAX_ACTIVE", l.maxActive)
		}
		if l.rateCount > 0 {
			args = append(args, "RATE", l.rateCount, l.ratePer)
		}
		must(t, c.Do(ctx, args...).Err())
	}
	enqueue := func(n int) error {
		for i := 0; i < n; i++ {
			l := limitLanes[rng.IntN(len(limitLanes))].name
			if err := c.Do(ctx, "EMQ.ENQUEUE", "q", "*", l, "LANE", l).Err(); err != nil {
				return err
			}
		}
		return nil
	}
	must(t, enqueue(600))

	var claims, completes, fails, requeues, delays, abandons atomic.Int64
	var stopping atomic.Bool
	var wg sync.WaitGroup
	worker := func(w int) {
		r := rand.New(rand.NewPCG(seed, uint64(w)))
		wc := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, MaxRetries: -1, PoolSize: 1,
			ReadTimeout: 2 * time.Second, DialTimeout: time.Second})
		defer wc.Close()
		for !stopping.Load() {
			lease := 300 + r.IntN(400)
			v, err := wc.Do(ctx, "EMQ.CLAIM", "q", lease, "COUNT", 1+r.IntN(3), "BLOCK", 200).Slice()
			if err != nil {
				if err != redis.Nil {
					time.Sleep(20 * time.Millisecond)
				}
				continue
			}
			for _, x := range v {
				j := x.([]any)
				id, tok := j[0].(string), j[2].(string)
				claims.Add(1)
				time.Sleep(time.Duration(r.IntN(15)) * time.Millisecond)
				var e error
				switch n := r.IntN(100); {
				case n < 50:
					e = wc.Do(ctx, "EMQ.COMPLETE", "q", id, tok).Err()
					completes.Add(1)
				case n < 65:
					e = wc.Do(ctx, "EMQ.FAIL", "q", id, tok, 4, r.IntN(50), "boom").Err()
					fails.Add(1)
				case n < 75:
					e = wc.Do(ctx, "EMQ.REQUEUE", "q", id, tok).Err()
					requeues.Add(1)
				case n < 85:
					e = wc.Do(ctx, "EMQ.DELAY", "q", id, tok, "IN", r.IntN(50)).Err()
					delays.Add(1)
				default:
					abandons.Add(1) // the lease expires; the sweep takes it
				}
				_ = e // EMQSTALE after a sweep or a restart is expected
			}
		}
	}
	for w := 0; w < 64; w++ {
		wg.Add(1)
		go func() { defer wg.Done(); worker(w) }()
	}
	sweeps := make(chan struct{})
	go func() {
		defer close(sweeps)
		sc := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, MaxRetries: -1, PoolSize: 1})
		defer sc.Close()
		for !stopping.Load() {
			sc.Do(ctx, "EMQ.STALLED.CHECK", "q", 5, 1000)
			time.Sleep(50 * time.Millisecond)
		}
	}()

	const kills = 5
	for k := 0; k < kills; k++ {
		time.Sleep(time.Duration(1200+rng.IntN(1200)) * time.Millisecond)
		p.Kill()
		time.Sleep(time.Duration(rng.IntN(200)) * time.Millisecond)
		p = start()
		if k < 3 {
			if err := enqueue(150); err != nil {
				t.Logf("enqueue after restart %d: %v", k, err)
			}
		}
	}
	// Drain: everything completes, dies or is recovered and claimed again.
	deadline := time.Now().Add(40 * time.Second)
	for {
		m, err := c.Do(ctx, "EMQ.COUNTS", "q").Slice()
		must(t, err)
		counts := map[string]int64{}
		for i := 0; i+1 < len(m); i += 2 {
			counts[m[i].(string)], _ = m[i+1].(int64)
		}
		if counts["pending"]+counts["active"]+counts["scheduled"] == 0 {
			break
		}
		if time.Now().After(deadline) {
			lanes, _ := c.Do(ctx, "EMQ.LANES", "q").Result()
			t.Fatalf("not drained: %v, lanes %v", counts, lanes)
		}
		time.Sleep(100 * time.Millisecond)
	}
	stopping.Store(true)
	wg.Wait()
	<-sweeps
	lanes, err := c.Do(ctx, "EMQ.LANES", "q").Slice()
	must(t, err)
	for _, x := range lanes {
		kv := x.([]any)
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i] == "active" && kv[i+1] != int64(0) {
				t.Errorf("drained, but lane %v holds %v slots", kv[1], kv[i+1])
			}
		}
	}
	p.Stop()

	st := checkLaneHistory(t, filepath.Join(dir, "appendonly.aof"))
	t.Logf("%d kills; client side: %d claims, %d completes, %d fails, %d requeues, %d delays, %d abandoned; "+
		"history: %d records, %d slot takes, %d gives back, peak slots %v, peak claims per window %v",
		kills, claims.Load(), completes.Load(), fails.Load(), requeues.Load(), delays.Load(), abandons.Load(),
		st.records, st.takes, st.gives, st.peak, st.peakRate)
	if st.takes < 1000 {
		t.Errorf("only %d claims in the history", st.takes)
	}
}

type laneHistory struct {
	records, takes, gives int
	peak, peakRate        map[string]int
}

// checkLaneHistory replays the append-only file at path and checks every
// lane's limits at every record (see TestLaneLimitsUnderConcurrency).
func checkLaneHistory(t *testing.T, path string) laneHistory {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	limits := map[string]laneLimit{}
	for _, l := range limitLanes {
		limits[l.name] = l
	}
	const rowPrefix = "emq:{q}:job:"
	jobLane := map[string]string{}
	held := map[string]map[string]bool{}
	claimsAt := map[string][]int64{}
	h := laneHistory{peak: map[string]int{}, peakRate: map[string]int{}}
	give := func(id string) {
		l := jobLane[id]
		if held[l][id] {
			delete(held[l], id)
			h.gives++
		}
	}
	for {
		argv, err := readAOFCommand(br)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("AOF: %v", err)
		}
		h.records++
		if len(argv) < 2 || !strings.HasPrefix(argv[1], rowPrefix) {
			continue
		}
		id := argv[1][len(rowPrefix):]
		switch strings.ToUpper(argv[0]) {
		case "HSET":
			slot, at := false, int64(-1)
			for i := 2; i+1 < len(argv); i += 2 {
				switch argv[i] {
				case "lane":
					jobLane[id] = argv[i+1]
				case "lane_slot":
					slot = true
				case "claimed_at":
					at, _ = strconv.ParseInt(argv[i+1], 10, 64)
				}
			}
			if _, ok := jobLane[id]; !ok {
				jobLane[id] = "default"
			}
			if !slot {
				continue
			}
			l := jobLane[id]
			if held[l] == nil {
				held[l] = map[string]bool{}
			}
			if held[l][id] {
				t.Fatalf("record %d: %s takes a slot of lane %s it already holds", h.records, id, l)
			}
			held[l][id] = true
			h.takes++
			if n := len(held[l]); n > h.peak[l] {
				h.peak[l] = n
			}
			if m := limits[l].maxActive; m > 0 && len(held[l]) > m {
				t.Fatalf("record %d: lane %s holds %d slots, MAX_ACTIVE %d", h.records, l, len(held[l]), m)
			}
			if lim := limits[l]; lim.rateCount > 0 {
				if at < 0 {
					t.Fatalf("record %d: a claim without claimed_at", h.records)
				}
				n := 1
				for _, x := range claimsAt[l] {
					if x > at-lim.ratePer && x <= at {
						n++
					}
				}
				if n > h.peakRate[l] {
					h.peakRate[l] = n
				}
				if n > lim.rateCount {
					t.Fatalf("record %d: lane %s: %d claims in the %d ms up to %d, RATE %d", h.records, l, n, lim.ratePer, at, lim.rateCount)
				}
				claimsAt[l] = append(claimsAt[l], at)
				if len(claimsAt[l]) > 4*lim.rateCount {
					claimsAt[l] = claimsAt[l][len(claimsAt[l])-2*lim.rateCount:]
				}
			}
		case "HDEL":
			for _, fld := range argv[2:] {
				if fld == "lane_slot" {
					give(id)
				}
			}
		case "DEL":
			give(id)
		}
	}
	for l, m := range held {
		if len(m) > 0 {
			t.Errorf("lane %s still holds %d slots at the end of the history", l, len(m))
		}
	}
	return h
}

// readAOFCommand reads one RESP multibulk command.
func readAOFCommand(br *bufio.Reader) ([]string, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		if err == io.EOF && line == "" {
			return nil, io.EOF
		}
		return nil, fmt.Errorf("torn record %q: %v", line, err)
	}
	if !strings.HasPrefix(line, "*") {
		return nil, fmt.Errorf("not a multibulk: %q", line)
	}
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil {
		return nil, err
	}
	out := make([]string, n)
	for i := range out {
		hdr, err := br.ReadString('\n')
		if err != nil {
			return nil, err
		}
		l, err := strconv.Atoi(strings.TrimSpace(hdr[1:]))
		if err != nil {
			return nil, err
		}
		b := make([]byte, l+2)
		if _, err := io.ReadFull(br, b); err != nil {
			return nil, err
		}
		out[i] = string(b[:l])
	}
	return out, nil
}
