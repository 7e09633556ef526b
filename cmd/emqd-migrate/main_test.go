package main

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/emqd/emqd/cluster/clustertest"
	"github.com/emqd/emqd/internal/verbs"
	"github.com/emqd/emqd/server"
	"github.com/redis/go-redis/v9"
)

// populate fills emqd with queues in every state: pending (minted and
// client ids), active (one lease already expired), scheduled (DELAY, AT, a
// retry), dead (by FAIL and by the sweep), progress, completed and failed
// counters, a paused queue, a queue large enough to need several
// HSET/ZADD batches, and keys that are no queue's.
func populate(t *testing.T, c *redis.Client) {
	ctx := context.Background()
	do := func(args ...any) any {
		t.Helper()
		v, err := c.Do(ctx, args...).Result()
		if err != nil && err != redis.Nil {
			t.Fatalf("%v: %v", args, err)
		}
		return v
	}
	claim := func(q string, lease int) (string, string) {
		t.Helper()
		v := do("EMQ.CLAIM", q, lease).([]any)
		if len(v) != 1 {
			t.Fatalf("claim %s: %v", q, v)
		}
		j := v[0].([]any)
		return j[0].(string), j[2].(string)
	}
	for i := 0; i < 12; i++ {
		do("EMQ.ENQUEUE", "emails", "*", fmt.Sprintf("mail-%d", i))
	}
	id, tok := claim("emails", 60000)
	do("EMQ.COMPLETE", "emails", id, tok)
	id, tok = claim("emails", 60000)
	do("EMQ.COMPLETE", "emails", id, tok)
	claim("emails", 1)
	for {
		v := do("EMQ.STALLED.CHECK", "emails", 1).([]any)
		if len(v[1].([]any)) == 1 {
			break // dead by the sweep (a lease of this process, counted)
		}
	}
	id, tok = claim("emails", 60000)
	do("EMQ.PROGRESS", "emails", id, tok, "40%")
	claim("emails", 1) // expires at once: an old lease on the cluster
	id, tok = claim("emails", 60000)
	do("EMQ.FAIL", "emails", id, tok, 5, 60000, "smtp timeout") // a retry, scheduled
	id, tok = claim("emails", 60000)
	do("EMQ.FAIL", "emails", id, tok, 1, 0, "bad address") // dead
	id, tok = claim("emails", 60000)
	do("EMQ.DELAY", "emails", id, tok, "IN", 3600000)
	do("EMQ.ENQUEUE", "emails", "JOB00000000007", "later", "AT", "4102444800000")
	do("EMQ.ENQUEUE", "emails", "JOB00000000001", "first")
	for i := 0; i < 3; i++ {
		do("EMQ.ENQUEUE", "reports", "*", fmt.Sprintf("report-%d", i))
	}
	do("EMQ.PAUSE", "reports")
	for i := 0; i < 1200; i++ {
		do("EMQ.ENQUEUE", "bulk", verbs.EncodeID(int64(i+1)), strings.Repeat("x", i%100))
	}
	do("SET", "user:1", "not a queue")
	do("HSET", "emq:{a b}:pending", "x", "y") // not a valid queue name
}

func counts(t *testing.T, c *redis.Cmd) map[string]any {
	t.Helper()
	v, err := c.Slice()
	if err != nil {
		t.Fatal(err)
	}
	m := pairs(v)
	// latency_ms is the head's age on each server's clock, read at
	// different instants on the two sides: present, not compared.
	if _, ok := m["latency_ms"]; !ok {
		t.Fatalf("EMQ.COUNTS without latency_ms: %v", m)
	}
	delete(m, "latency_ms")
	return m
}

func TestMigrate(t *testing.T) {
	src := server.StartTest(t)
	sc := redis.NewClient(&redis.Options{Addr: src.Addr(), Protocol: 2})
	defer sc.Close()
	populate(t, sc)
	cl := clustertest.StartCluster(t, 3)
	dst := cl.Client()
	ctx := context.Background()
	to := strings.Join(cl.Addrs(), ",")

	migrate := func(args ...string) (int, string) {
		t.Helper()
		var out, errb bytes.Buffer
		code := run(ctx, append([]string{"--from", src.Addr(), "--to", to}, args...), &out, &errb)
		if errb.Len() > 0 {
			t.Logf("stderr: %s", errb.String())
		}
		return code, out.String()
	}

	code, out := migrate()
	t.Logf("first run:\n%s", out)
	if code != 0 || !strings.Contains(out, "verify: OK") || !strings.Contains(out, "copy: 3 queue(s)") {
		t.Fatalf("first run: %d\n%s", code, out)
	}
	for _, q := range []string{"emails", "reports", "bulk"} {
		want := counts(t, sc.Do(ctx, "EMQ.COUNTS", q))
		got := counts(t, dst.FCall(ctx, "emq_counts", []string{q}))
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: counts %v, emqd %v", q, got, want)
		}
	}
	want := map[string]any{"pending": int64(5), "active": int64(2), "scheduled": int64(3), "dead": int64(2), "completed": int64(2), "failed": int64(2), "retained": int64(0), "waiting": int64(0)}
	if got := counts(t, dst.FCall(ctx, "emq_counts", []string{"emails"})); !reflect.DeepEqual(got, want) {
		t.Fatalf("emails on the cluster: %v, want %v", got, want)
	}
	// Every row and set is identical: EMQ.LIST of each state on both sides.
	for _, state := range []string{"pending", "active", "scheduled", "dead"} {
		a, err1 := sc.Do(ctx, "EMQ.LIST", "emails", state).Slice()
		b, err2 := dst.FCall(ctx, "emq_list", []string{"emails"}, state).Slice()
		if err1 != nil || err2 != nil || len(a) != len(b) {
			t.Fatalf("list %s: %v %v / %v %v", state, a, err1, b, err2)
		}
		for i := range a {
			x, y := a[i].([]any), b[i].([]any)
			if x[0] != y[0] || !reflect.DeepEqual(pairs(x[1].([]any)), pairs(y[1].([]any))) {
				t.Fatalf("list %s entry %d: emqd %v, cluster %v", state, i, x, y)
			}
		}
	}
	if n, _ := dst.Exists(ctx, "user:1", "emq:{a b}:pending").Result(); n != 0 {
		t.Fatal("copied keys that are no queue's")
	}
	if v := dst.HGet(ctx, "emq:{reports}:meta", "paused").Val(); v != "1" {
		t.Fatal("the pause was not copied")
	}

	// A second run writes nothing and verifies.
	code, out = migrate()
	if code != 0 || !strings.Contains(out, "copy: 0 key(s) written") || !strings.Contains(out, "verify: OK") {
		t.Fatalf("second run: %d\n%s", code, out)
	}

	// Verify finds a drift and a key only the target has; a run repairs
	// the first, --prune the second.
	dst.HSet(ctx, "emq:{emails}:job:JOB00000000001", "payload", "changed")
	dst.HSet(ctx, "emq:{emails}:job:JOBzzzzzzzzzzz", "state", "pending")
	code, out = migrate("--verify-only")
	if code != 1 || !strings.Contains(out, "emq:{emails}:job:JOB00000000001 differs") ||
		!strings.Contains(out, "emq:{emails}:job:JOBzzzzzzzzzzz exists only on the target") {
		t.Fatalf("verify-only: %d\n%s", code, out)
	}
	if dst.HGet(ctx, "emq:{emails}:job:JOB00000000001", "payload").Val() != "changed" {
		t.Fatal("--verify-only wrote")
	}
	// Both were changed on the target since the copy: refused, named,
	// nothing written, until --force.
	code, out = migrate("--prune", "--queues", "emails")
	if code != 3 || !strings.Contains(out, "conflict: emq:{emails}:job:JOB00000000001 was changed on the target since the last copy") ||
		!strings.Contains(out, "conflict: emq:{emails}:job:JOBzzzzzzzzzzz was not written by a copy") {
		t.Fatalf("repair without --force: %d\n%s", code, out)
	}
	if dst.HGet(ctx, "emq:{emails}:job:JOB00000000001", "payload").Val() != "changed" || dst.Exists(ctx, "emq:{emails}:job:JOBzzzzzzzzzzz").Val() != 1 {
		t.Fatal("the refused run wrote")
	}
	code, out = migrate("--prune", "--force", "--queues", "emails")
	if code != 0 || !strings.Contains(out, "copy: 1 queue(s)") || !strings.Contains(out, "copy: 1 key(s) written, 1 deleted") {
		t.Fatalf("repair: %d\n%s", code, out)
	}
	if n, _ := dst.Exists(ctx, "emq:{emails}:job:JOBzzzzzzzzzzz").Result(); n != 0 {
		t.Fatal("--prune kept the extra key")
	}

	// The cluster serves the copied queues.
	// Ids it mints sort after every id emqd minted.
	last := sc.HGet(ctx, verbs.MintKey, "last").Val()
	id, err := dst.FCall(ctx, "emq_enqueue", []string{"emails"}, "*", "new").Text()
	if err != nil || id <= last {
		t.Fatalf("minted %s after emqd's %s: %v", id, last, err)
	}
	// The lease emqd granted (expired) carries emqd's run_id: exempt.
	v, err := dst.FCall(ctx, "emq_stalled_check", []string{"emails"}, 1).Slice()
	if err != nil || len(v[0].([]any)) != 1 || len(v[1].([]any)) != 0 {
		t.Fatalf("sweep of emqd's expired lease: %v %v", v, err)
	}
	rid := v[0].([]any)[0].(string)
	if row := dst.HGetAll(ctx, "emq:{emails}:job:"+rid).Val(); row["lease_epoch"] != src.RunID() || row["stalled"] != "" {
		t.Fatalf("exempt row %v", row)
	}
	// Claims hand out the same jobs in the same order.
	for i := 0; i < 3; i++ {
		a, _ := sc.Do(ctx, "EMQ.CLAIM", "bulk", 1000, "COUNT", 400).Slice()
		b, _ := dst.FCall(ctx, "emq_claim", []string{"bulk"}, 1000, "COUNT", 400).Slice()
		if len(a) != 400 || len(b) != 400 {
			t.Fatalf("claims %d %d", len(a), len(b))
		}
		for j := range a {
			if a[j].([]any)[0] != b[j].([]any)[0] || a[j].([]any)[1] != b[j].([]any)[1] {
				t.Fatalf("claim %d.%d: emqd %v, cluster %v", i, j, a[j], b[j])
			}
		}
	}
	if v, _ := dst.FCall(ctx, "emq_claim", []string{"reports"}, 1000).Slice(); len(v) != 0 {
		t.Fatal("the paused queue handed out a job")
	}
}

func TestMigrateUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "--to is required"},
		{[]string{"--to", "x", "--queues", "a b"}, `invalid queue name "a b"`},
		{[]string{"--to", "x", "extra"}, `unexpected argument "extra"`},
		{[]string{"--to", "127.0.0.1:1", "--from", "127.0.0.1:1"}, "emqd at 127.0.0.1:1"},
	} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), c.args, &out, &errb); code != 2 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: %d %q, want %q", c.args, code, errb.String(), c.want)
		}
	}
	if slot("123456789") != 0x31c3 { // CRC16/XMODEM's check value
		t.Fatalf("slot %d", slot("123456789"))
	}
}

// TestMigrateAgainKeepsClusterWrites (issue 27 item 12): migrate, complete
// a job on the cluster (completed goes to 31), run the same migration
// again: it refuses with exit status 3, names the three keys the
// completion wrote, and writes nothing (the job stays completed, the
// counter 31); --force copies emqd's state over them. A target without the
// library is refused before anything is copied.
func TestMigrateAgainKeepsClusterWrites(t *testing.T) {
	src := server.StartTest(t)
	sc := redis.NewClient(&redis.Options{Addr: src.Addr(), Protocol: 2})
	defer sc.Close()
	ctx := context.Background()
	for i := 0; i < 31; i++ {
		sc.Do(ctx, "EMQ.ENQUEUE", "alpha", verbs.EncodeID(int64(i+1)), "p")
	}
	for i := 0; i < 30; i++ {
		j := sc.Do(ctx, "EMQ.CLAIM", "alpha", 60000).Val().([]any)[0].([]any)
		sc.Do(ctx, "EMQ.COMPLETE", "alpha", j[0], j[2])
	}
	held := sc.Do(ctx, "EMQ.CLAIM", "alpha", 600000).Val().([]any)[0].([]any)
	id := held[0].(string)

	// A target without the library: refused before copying.
	bare := clustertest.StartNode(t, clustertest.NodeOptions{})
	var bout, berr bytes.Buffer
	code := run(ctx, []string{"--from", src.Addr(), "--to", bare.Addr, "--standalone"}, &bout, &berr)
	if code != 2 || !strings.Contains(berr.String(), "library is not loaded on "+bare.Addr+": run with --load-library") {
		t.Fatalf("no library: %d %q %q", code, bout.String(), berr.String())
	}
	if n := bare.Client(2).DBSize(ctx).Val(); n != 0 {
		t.Fatalf("copied %d keys without the library", n)
	}

	cl := clustertest.StartCluster(t, 3)
	dst := cl.Client()
	to := strings.Join(cl.Addrs(), ",")
	migrate := func(args ...string) (int, string, string) {
		t.Helper()
		var out, errb bytes.Buffer
		code := run(ctx, append([]string{"--from", src.Addr(), "--to", to}, args...), &out, &errb)
		return code, out.String(), errb.String()
	}
	if code, out, _ := migrate(); code != 0 {
		t.Fatalf("first run: %d\n%s", code, out)
	}
	if v, err := dst.FCall(ctx, "emq_complete", []string{"alpha"}, id, "1").Result(); err != nil || v != int64(1) {
		t.Fatalf("complete on the cluster: %v %v", v, err)
	}
	completed := func() any { return counts(t, dst.FCall(ctx, "emq_counts", []string{"alpha"}))["completed"] }
	if c := completed(); c != int64(31) {
		t.Fatalf("completed %v", c)
	}
	code, out, errs := migrate()
	if code != 3 || !strings.Contains(errs, "refused, nothing written:") {
		t.Fatalf("second run: %d\n%s\n%s", code, out, errs)
	}
	for _, k := range []string{"emq:{alpha}:job:" + id + " was deleted on the target", "emq:{alpha}:active was", "emq:{alpha}:metrics:completed was"} {
		if !strings.Contains(out, "conflict: "+k) {
			t.Errorf("%q not named:\n%s", k, out)
		}
	}
	if c := completed(); c != int64(31) {
		t.Fatalf("completed %v after the refused run", c)
	}
	if n := dst.Exists(ctx, "emq:{alpha}:job:"+id).Val(); n != 0 {
		t.Fatal("the completed job's row is back")
	}
	// --verify-only still reports the differences and writes nothing.
	if code, _, _ := migrate("--verify-only"); code != 1 {
		t.Fatalf("verify-only: %d", code)
	}
	code, out, _ = migrate("--force")
	if code != 0 || !strings.Contains(out, "verify: OK") {
		t.Fatalf("--force: %d\n%s", code, out)
	}
	if c := completed(); c != int64(30) {
		t.Fatalf("completed %v after --force", c)
	}
	// And now a run again is quiet: nothing changed since that copy.
	if code, out, _ := migrate(); code != 0 || !strings.Contains(out, "copy: 0 key(s) written") {
		t.Fatalf("after --force: %d\n%s", code, out)
	}
}
