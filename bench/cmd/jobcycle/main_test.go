package main

import (
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/emqd/emqd/bench/internal/procs"
	"github.com/emqd/emqd/bench/lua"
	"github.com/redis/go-redis/v9"
)

// startScripted starts redis-server with the scripts loaded, or skips.
func startScripted(t *testing.T) *scriptExec {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("EMQD_REQUIRE_REFERENCE") == "1" {
			t.Fatal("redis-server not found (Debian package redis-server)")
		}
		t.Skip("redis-server not found (Debian package redis-server)")
	}
	p, err := procs.StartRedis(bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Kill() })
	ex := &scriptExec{rdb: newClient(p.Addr, 8)}
	t.Cleanup(func() { ex.rdb.Close() })
	for _, s := range lua.All() {
		if err := ex.rdb.ScriptLoad(context.Background(), s.Src).Err(); err != nil {
			t.Fatal(err)
		}
	}
	return ex
}

// The scripted cycle completes every job, unpipelined and pipelined, with
// and without the failure; run checks the counts and the empty sets.
func TestScriptedCycle(t *testing.T) {
	ex := startScripted(t)
	ctx := context.Background()
	for _, batch := range []int{1, 25} {
		for _, retry := range []bool{false, true} {
			cy := cycle{jobs: 300, workers: 3, batch: batch, retry: retry, leaseMs: 30000, payload: "p"}
			r, err := cy.run(ctx, ex, "t."+randTag())
			if err != nil {
				t.Fatalf("batch %d retry %v: %v", batch, retry, err)
			}
			if r <= 0 {
				t.Fatalf("rate %v", r)
			}
		}
	}
}

// The scripted sweep counts every expiry: at max_stalled 1 all die, at 2
// all are recovered with stalled 1.
func TestScriptedSweep(t *testing.T) {
	ex := startScripted(t)
	ctx := context.Background()
	for _, ms := range []int{1, 2} {
		q := "sw." + randTag()
		r, err := sweep(ctx, ex, q, config{sweepLeases: 250, sweepLimit: 100, maxStalled: ms}, "p")
		if err != nil {
			t.Fatal(err)
		}
		if r.calls != 4 || r.swept != 250 {
			t.Fatalf("calls %d swept %d, want 4 and 250", r.calls, r.swept)
		}
		k := lua.Keys{Q: q}
		dead := ex.rdb.ZCard(ctx, k.Dead()).Val()
		pending := ex.rdb.ZCard(ctx, k.Pending()).Val()
		failed, _ := ex.rdb.HGet(ctx, k.Failed(), "count").Int()
		if ms == 1 && (dead != 250 || pending != 0 || failed != 250) {
			t.Fatalf("max_stalled 1: dead %d pending %d failed %d", dead, pending, failed)
		}
		if ms == 2 && (dead != 0 || pending != 250 || failed != 0) {
			t.Fatalf("max_stalled 2: dead %d pending %d failed %d", dead, pending, failed)
		}
	}
}

// The scripted retry caps on attempts (the seed's @retry): a job claimed,
// released and claimed again (token 2) dies at max_attempts 2 on its first
// failure, where the native verb would retry it.
func TestScriptedRetryCapsOnAttempts(t *testing.T) {
	ex := startScripted(t)
	ctx := context.Background()
	q := "cap." + randTag()
	k := lua.Keys{Q: q}
	id := jobID(1, 0)
	if err := ex.rdb.Process(ctx, ex.enqueue(ctx, q, id, "p")); err != nil {
		t.Fatal(err)
	}
	c := ex.claim(ctx, q, 30000)
	_ = ex.rdb.Process(ctx, c)
	j, err := parseClaim(c)
	if err != nil || j.token != "1" {
		t.Fatalf("claim %v %v", j, err)
	}
	// Release by hand (the requeue's three writes), then claim again.
	ex.rdb.ZRem(ctx, k.Active(), id)
	ex.rdb.HSet(ctx, k.Row(id), "state", "pending")
	ex.rdb.ZAdd(ctx, k.Pending(), redis.Z{Score: 0, Member: id})
	c = ex.claim(ctx, q, 30000)
	_ = ex.rdb.Process(ctx, c)
	if j, err = parseClaim(c); err != nil || j.token != "2" {
		t.Fatalf("claim %v %v", j, err)
	}
	// A stale token is refused with nothing written.
	f := ex.fail(ctx, q, id, "1", 2, 0, "boom")
	_ = ex.rdb.Process(ctx, f)
	if f.Err() == nil || f.Err().Error() != "EMQSTALE retry token mismatch" {
		t.Fatalf("stale fail: %v", f.Err())
	}
	f = ex.fail(ctx, q, id, "2", 2, 0, "boom")
	_ = ex.rdb.Process(ctx, f)
	if v, err := f.Text(); err != nil || v != "dead" {
		t.Fatalf("fail: %q %v, want dead", v, err)
	}
	row := ex.rdb.HGetAll(ctx, k.Row(id)).Val()
	if row["state"] != "dead" || row["attempts"] != "2" || row["last_error"] != "boom" {
		t.Fatalf("row %v", row)
	}
	cp := ex.complete(ctx, q, id, "2")
	_ = ex.rdb.Process(ctx, cp)
	if cp.Err() == nil || cp.Err().Error() != "EMQSTATE job is dead" {
		t.Fatalf("complete of a dead job: %v", cp.Err())
	}
}
