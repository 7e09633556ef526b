package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/emqd/emqd/clock"
	"github.com/emqd/emqd/internal/testsupport"
)

// Key expiry on a server (docs/compat.md §1.7): the edges on the manual
// clock, the active cycle, EXEC's frozen time, WATCH, the AOF.

const et0 = int64(1_700_000_000_000)

// expectSteps sends each command and compares its reply.
func expectSteps(t *testing.T, c *testsupport.Conn, steps [][2]string) {
	t.Helper()
	for _, st := range steps {
		args := strings.Fields(st[0])
		if got := c.Do(args...); got != st[1] {
			t.Fatalf("%s: got %q, want %q", st[0], got, st[1])
		}
	}
}

// waitExpireCycles waits until the active expire cycle has finished more
// than n runs (the cycle runs on a timer goroutine; this is its
// synchronisation point), failing after testsupport.ClientTimeout.
func waitExpireCycles(t *testing.T, s *Server, n int64) {
	t.Helper()
	deadline := time.Now().Add(testsupport.ClientTimeout)
	for s.exp.runs.Load() <= n {
		if time.Now().After(deadline) {
			t.Fatalf("the expire cycle did not run (runs %d)", s.exp.runs.Load())
		}
		time.Sleep(time.Millisecond)
	}
}

// A key with expire time T (PEXPIRETIME T) exists up to and including
// millisecond T and is gone from T+1 (Valkey's keyIsExpired: now > T),
// on the manual clock, whatever reads it.
func TestExpiryAtItsTimeNotBefore(t *testing.T) {
	clk := clock.NewManual(et0)
	s := startServer(t, map[string]string{"hz": "1"}, clk)
	c := dial(t, s)
	expectSteps(t, c, [][2]string{
		{"SET k v PX 1000", "+OK\r\n"},
		{"HSET h f v", ":1\r\n"},
		{"PEXPIREAT h " + itoa(et0+1000), ":1\r\n"},
		{"PEXPIRETIME k", ":" + itoa(et0+1000) + "\r\n"},
		{"PTTL k", ":1000\r\n"},
	})
	clk.Advance(999)
	expectSteps(t, c, [][2]string{
		{"PTTL k", ":1\r\n"},
		{"TTL k", ":0\r\n"},
		{"GET k", "$1\r\nv\r\n"},
		{"HGET h f", "$1\r\nv\r\n"},
	})
	clk.Advance(1)
	expectSteps(t, c, [][2]string{
		{"PTTL k", ":0\r\n"},
		{"GET k", "$1\r\nv\r\n"},
		{"EXISTS h", ":1\r\n"},
		{"DBSIZE", ":2\r\n"},
	})
	clk.Advance(1)
	expectSteps(t, c, [][2]string{
		{"DBSIZE", ":2\r\n"}, // nothing has deleted them yet
		{"GET k", "$-1\r\n"},
		{"PTTL k", ":-2\r\n"},
		{"HGETALL h", "*0\r\n"},
		{"EXISTS h", ":0\r\n"},
		{"DBSIZE", ":0\r\n"},
	})
	if r := c.Do("INFO", "stats"); !strings.Contains(r, "expired_keys:2\r\n") {
		t.Fatalf("INFO stats: %q", r)
	}
}

// The active cycle deletes expired keys nobody reads: DBSIZE drops and
// expired_keys counts them; keys without a TTL or not yet due stay.
func TestActiveExpireCycleRemovesUnreadKeys(t *testing.T) {
	clk := clock.NewManual(et0)
	s := startServer(t, nil, clk)
	c := dial(t, s)
	for i := 0; i < 300; i++ {
		if r := c.Do("SET", "e"+itoa(int64(i)), "v", "PX", "50"); r != "+OK\r\n" {
			t.Fatal(r)
		}
	}
	for i := 0; i < 5; i++ {
		c.Do("ZADD", "keep"+itoa(int64(i)), "1", "m")
	}
	c.Do("SET", "later", "v", "EX", "100")
	expectSteps(t, c, [][2]string{{"DBSIZE", ":306\r\n"}})
	if r := c.Do("INFO", "keyspace"); !strings.Contains(r, "db0:keys=306,expires=301,avg_ttl=") {
		t.Fatalf("INFO keyspace: %q", r)
	}
	runs := s.exp.runs.Load()
	clk.Advance(100) // the cycle's timer (hz 10) comes due
	waitExpireCycles(t, s, runs)
	expectSteps(t, c, [][2]string{
		{"DBSIZE", ":6\r\n"},
		{"TTL later", ":100\r\n"},
	})
	r := c.Do("INFO", "stats")
	if !strings.Contains(r, "expired_keys:300\r\n") {
		t.Fatalf("INFO stats: %q", r)
	}
	if r := c.Do("INFO", "keyspace"); !strings.Contains(r, "db0:keys=6,expires=1,") {
		t.Fatalf("INFO keyspace: %q", r)
	}
}

// The fast cycle (fastExpireLocked, Valkey's ACTIVE_EXPIRE_CYCLE_FAST): while
// one is due, clients' batches reclaim expired keys between slow cycles,
// none of which runs here (hz 1 and the manual clock held short of its
// tick); while none is due, batches reclaim nothing.
func TestFastExpireCycleRunsFromBatches(t *testing.T) {
	clk := clock.NewManual(et0)
	s := startServer(t, map[string]string{"hz": "1"}, clk)
	c := dial(t, s)
	const short, long = 5000, 500
	for i := 0; i < short; i++ {
		c.Do("SET", "s"+itoa(int64(i)), "v", "PX", "100")
	}
	for i := 0; i < long; i++ {
		c.Do("SET", "l"+itoa(int64(i)), "v", "EX", "3600")
	}
	runs := s.exp.runs.Load()
	clk.Advance(500) // the short TTLs pass; the slow cycle's tick is at 1000
	for i := 0; i < 20; i++ {
		c.Do("PING")
		time.Sleep(3 * time.Millisecond)
	}
	expectSteps(t, c, [][2]string{{"DBSIZE", ":" + itoa(short+long) + "\r\n"}})
	s.exp.fastDue.Store(true) // as a slow cycle over this keyspace would leave it
	deadline := time.Now().Add(testsupport.ClientTimeout)
	for c.Do("DBSIZE") != ":"+itoa(long)+"\r\n" {
		if time.Now().After(deadline) {
			t.Fatalf("the fast cycle left %s keys (want %d)", c.Do("DBSIZE"), long)
		}
		c.Do("PING")
		time.Sleep(3 * time.Millisecond)
	}
	if n := s.exp.runs.Load(); n != runs {
		t.Fatalf("a slow cycle ran (%d -> %d runs): the test proves nothing", runs, n)
	}
	if r := c.Do("INFO", "stats"); !strings.Contains(r, "expired_keys:"+itoa(short)+"\r\n") {
		t.Fatalf("INFO stats: %q", r)
	}
}

// Inside EXEC every command sees the time EXEC started: SET ... EX and
// TTL agree exactly, and a key that expires while the transaction runs is
// still there for its later commands (Valkey's command time snapshot).
func TestExpirySetEXInMulti(t *testing.T) {
	clk := clock.NewManual(et0)
	s := startServer(t, map[string]string{"enable-debug-command": "yes"}, clk)
	c := dial(t, s)
	expectSteps(t, c, [][2]string{
		{"MULTI", "+OK\r\n"},
		{"SET k v EX 10", "+QUEUED\r\n"},
		{"TTL k", "+QUEUED\r\n"},
		{"PTTL k", "+QUEUED\r\n"},
		{"SET short v PX 5", "+QUEUED\r\n"},
		{"EMQ.DEBUG CLOCK ADVANCE 100", "+QUEUED\r\n"},
		{"GET short", "+QUEUED\r\n"},
		{"PTTL short", "+QUEUED\r\n"},
		{"EXEC", "*7\r\n+OK\r\n:10\r\n:10000\r\n+OK\r\n+OK\r\n$1\r\nv\r\n:5\r\n"},
		{"GET short", "$-1\r\n"},
		{"PTTL k", ":9900\r\n"},
	})
}

// WATCH and expiry as Valkey's multi.c: a watched key that expires fails
// EXEC (whether or not anything deleted it), one that had expired before
// WATCH does not, and deleting such a stale key is no change either.
func TestWatchExpiredKeys(t *testing.T) {
	clk := clock.NewManual(et0)
	s := startServer(t, map[string]string{"hz": "1"}, clk)
	c := dial(t, s)
	other := dial(t, s)
	// Expires after WATCH, nobody reads it: EXEC fails.
	expectSteps(t, c, [][2]string{{"SET x 1 PX 100", "+OK\r\n"}, {"WATCH x", "+OK\r\n"}})
	clk.Advance(101)
	expectSteps(t, c, [][2]string{{"MULTI", "+OK\r\n"}, {"INCR x", "+QUEUED\r\n"}, {"EXEC", "*-1\r\n"}})
	// Expires after WATCH and another client's read deletes it: EXEC fails.
	expectSteps(t, c, [][2]string{{"SET x 1 PX 100", "+OK\r\n"}, {"WATCH x", "+OK\r\n"}})
	clk.Advance(101)
	expectSteps(t, other, [][2]string{{"GET x", "$-1\r\n"}})
	expectSteps(t, c, [][2]string{{"MULTI", "+OK\r\n"}, {"PING", "+QUEUED\r\n"}, {"EXEC", "*-1\r\n"}})
	// Watched when already expired: no change.
	expectSteps(t, c, [][2]string{{"SET x 1 PX 1", "+OK\r\n"}})
	clk.Advance(2)
	expectSteps(t, c, [][2]string{{"WATCH x", "+OK\r\n"}, {"MULTI", "+OK\r\n"}, {"PING", "+QUEUED\r\n"},
		{"EXEC", "*1\r\n+PONG\r\n"}})
	// ... and its lazy deletion (EXISTS) is no change either.
	expectSteps(t, c, [][2]string{{"SET x 1 PX 1", "+OK\r\n"}})
	clk.Advance(2)
	expectSteps(t, c, [][2]string{{"WATCH x", "+OK\r\n"}, {"EXISTS x", ":0\r\n"}, {"MULTI", "+OK\r\n"},
		{"PING", "+QUEUED\r\n"}, {"EXEC", "*1\r\n+PONG\r\n"}})
	// ... nor FLUSHDB.
	expectSteps(t, c, [][2]string{{"SET x 1 PX 1", "+OK\r\n"}})
	clk.Advance(2)
	expectSteps(t, c, [][2]string{{"WATCH x", "+OK\r\n"}, {"FLUSHDB", "+OK\r\n"}, {"MULTI", "+OK\r\n"},
		{"PING", "+QUEUED\r\n"}, {"EXEC", "*1\r\n+PONG\r\n"}})
	// EXPIRE on a watched key is a change.
	expectSteps(t, c, [][2]string{{"SET x foo", "+OK\r\n"}, {"WATCH x", "+OK\r\n"}, {"EXPIRE x 10", ":1\r\n"},
		{"MULTI", "+OK\r\n"}, {"PING", "+QUEUED\r\n"}, {"EXEC", "*-1\r\n"}})
	// SWAPDB: an expired key replaced with no key, or no key replaced with an
	// expired one, is no change; a live key swapped away is.
	expectSteps(t, c, [][2]string{{"FLUSHALL", "+OK\r\n"}, {"SELECT 1", "+OK\r\n"}, {"SET x foo PX 1", "+OK\r\n"}})
	clk.Advance(2)
	expectSteps(t, c, [][2]string{{"WATCH x", "+OK\r\n"}, {"SWAPDB 0 1", "+OK\r\n"}, {"MULTI", "+OK\r\n"},
		{"PING", "+QUEUED\r\n"}, {"EXEC", "*1\r\n+PONG\r\n"}})
	expectSteps(t, c, [][2]string{{"FLUSHALL", "+OK\r\n"}, {"SELECT 0", "+OK\r\n"}, {"SET x foo PX 1", "+OK\r\n"}})
	clk.Advance(2)
	expectSteps(t, c, [][2]string{{"SELECT 1", "+OK\r\n"}, {"WATCH x", "+OK\r\n"}, {"SWAPDB 0 1", "+OK\r\n"},
		{"MULTI", "+OK\r\n"}, {"PING", "+QUEUED\r\n"}, {"EXEC", "*1\r\n+PONG\r\n"}})
	expectSteps(t, c, [][2]string{{"FLUSHALL", "+OK\r\n"}, {"SELECT 0", "+OK\r\n"}, {"SET x 30", "+OK\r\n"},
		{"WATCH x", "+OK\r\n"}, {"SWAPDB 0 1", "+OK\r\n"}, {"MULTI", "+OK\r\n"}, {"PING", "+QUEUED\r\n"},
		{"EXEC", "*-1\r\n"}})
}

// The AOF records absolute times only, and a replay started after the keys
// expired holds none of them (the DELs of that cleanup are recorded, so a
// second restart agrees); a key not yet due keeps its exact expire time.
func TestAOFReplayAfterExpiry(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewManual(et0)
	s := durable(t, dir, clk)
	c := dial(t, s)
	expectSteps(t, c, [][2]string{
		{"SET a v PX 1000", "+OK\r\n"},
		{"SETEX b 2 v", "+OK\r\n"},
		{"HSET h f v", ":1\r\n"},
		{"EXPIRE h 3", ":1\r\n"},
		{"ZADD z 1 m", ":1\r\n"},
		{"PEXPIRE z 3000", ":1\r\n"},
		{"SET keep v", "+OK\r\n"},
		{"SET late v EX 100", "+OK\r\n"},
		{"GETEX keep PX 500000", "$1\r\nv\r\n"},
	})
	stop(t, s)
	data, err := os.ReadFile(filepath.Join(dir, "appendonly.aof"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for _, rel := range []string{"SETEX", "EXPIRE\r\n", "PEXPIRE\r\n", "GETEX", "$2\r\nPX\r\n", "$2\r\nEX\r\n"} {
		if strings.Contains(text, rel) {
			t.Fatalf("the AOF records a relative time (%q):\n%s", rel, text)
		}
	}
	for _, abs := range []string{"PXAT\r\n$13\r\n" + itoa(et0+1000), "PEXPIREAT\r\n$1\r\nh\r\n$13\r\n" + itoa(et0+3000)} {
		if !strings.Contains(text, abs) {
			t.Fatalf("the AOF lacks %q:\n%s", abs, text)
		}
	}
	// Restart 10 s later: only the keys without a TTL, or not yet due, are there.
	clk.Advance(10_000)
	s = durable(t, dir, clk)
	c = dial(t, s)
	expectSteps(t, c, [][2]string{
		{"DBSIZE", ":2\r\n"},
		{"PEXPIRETIME late", ":" + itoa(et0+100_000) + "\r\n"},
		{"PTTL keep", ":490000\r\n"},
		{"EXISTS a b h z", ":0\r\n"},
	})
	if r := c.Do("INFO", "stats"); !strings.Contains(r, "expired_keys:4\r\n") {
		t.Fatalf("INFO stats: %q", r)
	}
	stop(t, s)
	// The DELs were recorded: a replay sees the same keyspace even at the old time.
	clk.Set(et0)
	s = durable(t, dir, clk)
	c = dial(t, s)
	expectSteps(t, c, [][2]string{{"DBSIZE", ":2\r\n"}, {"EXISTS a", ":0\r\n"}})
}

// BGREWRITEAOF leaves out keys whose TTL has passed (even before anything
// deleted them) and writes the others' absolute expire times.
func TestAOFRewriteDropsExpiredKeys(t *testing.T) {
	for _, pre := range []string{"no", "yes"} {
		t.Run("aof-use-rdb-preamble="+pre, func(t *testing.T) { rewriteDropsExpired(t, pre) })
	}
}

func rewriteDropsExpired(t *testing.T, preamble string) {
	dir := t.TempDir()
	clk := clock.NewManual(et0)
	s := durable(t, dir, clk, "hz", "1", "aof-use-rdb-preamble", preamble) // no expire cycle before 1000 ms
	c := dial(t, s)
	expectSteps(t, c, [][2]string{
		{"SET gone v PX 10", "+OK\r\n"},
		{"HSET hgone f v", ":1\r\n"},
		{"PEXPIRE hgone 10", ":1\r\n"},
		{"ZADD zkeep 1 m", ":1\r\n"},
		{"PEXPIRE zkeep 50000", ":1\r\n"},
	})
	clk.Advance(20)
	expectSteps(t, c, [][2]string{{"DBSIZE", ":3\r\n"}}) // still stored
	if r := c.Do("BGREWRITEAOF"); !strings.HasPrefix(r, "+Background") {
		t.Fatal(r)
	}
	s.AOF().WaitRewrite()
	data, err := os.ReadFile(filepath.Join(dir, "appendonly.aof"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if strings.Contains(text, "gone") {
		t.Fatalf("the rewrite kept an expired key:\n%s", text)
	}
	if preamble == "no" && !strings.Contains(text, "PEXPIREAT\r\n$5\r\nzkeep\r\n$13\r\n"+itoa(et0+50_000)) {
		t.Fatalf("the rewrite lacks zkeep's expire time:\n%s", text)
	}
	if preamble == "yes" && !strings.HasPrefix(text, "REDIS0011") {
		t.Fatalf("no RDB preamble: %q", text)
	}
	stop(t, s)
	s = durable(t, dir, clk, "hz", "1")
	c = dial(t, s)
	expectSteps(t, c, [][2]string{{"DBSIZE", ":1\r\n"}, {"PEXPIRETIME zkeep", ":" + itoa(et0+50_000) + "\r\n"}})
}

// EMQ.* verbs and keys with a TTL (docs/verbs.md §2.15): a verb's writes
// keep a row's TTL as HSET would; an expired row is absent (EMQ.JOB nil,
// EMQSTALE job gone for its holder, a ghost the sweep drops from active);
// an expired queue set is empty; a completed row goes with its TTL.
func TestVerbsWithTTLKeys(t *testing.T) {
	clk := clock.NewManual(et0)
	s := startServer(t, map[string]string{"hz": "1"}, clk)
	c := dial(t, s)
	row1, row2 := "emq:{q}:job:JOB00000000001", "emq:{q}:job:JOB00000000002"
	expectSteps(t, c, [][2]string{
		{"EMQ.ENQUEUE q JOB00000000001 p1", "$14\r\nJOB00000000001\r\n"},
		{"EMQ.ENQUEUE q JOB00000000002 p2", "$14\r\nJOB00000000002\r\n"},
		{"EMQ.ENQUEUE q JOB00000000003 p3", "$14\r\nJOB00000000003\r\n"},
		{"PEXPIRE " + row1 + " 10000", ":1\r\n"},
		{"PEXPIRE " + row2 + " 50000", ":1\r\n"},
		{"EMQ.CLAIM q 60000", "*1\r\n*4\r\n$14\r\nJOB00000000001\r\n$2\r\np1\r\n$1\r\n1\r\n:0\r\n"},
		{"EMQ.PROGRESS q JOB00000000001 1 half", ":1\r\n"},
		{"PTTL " + row1, ":10000\r\n"}, // kept through CLAIM and PROGRESS
		{"HGET " + row1 + " progress", "$4\r\nhalf\r\n"},
	})
	clk.Advance(10_001)
	expectSteps(t, c, [][2]string{
		{"EMQ.JOB q JOB00000000001", "$-1\r\n"},
		{"EMQ.COMPLETE q JOB00000000001 1", "-EMQSTALE job gone\r\n"},
		{"ZCARD emq:{q}:active", ":1\r\n"}, // the ghost, until the sweep
		{"EMQ.CLAIM q 60000", "*1\r\n*4\r\n$14\r\nJOB00000000002\r\n$2\r\np2\r\n$1\r\n1\r\n:0\r\n"},
		{"EMQ.COMPLETE q JOB00000000002 1", ":1\r\n"},
		{"EXISTS " + row2, ":0\r\n"},
		{"EMQ.ENQUEUE q JOB00000000002 again", "$14\r\nJOB00000000002\r\n"},
		{"PTTL " + row2, ":-1\r\n"}, // a new row: no TTL
		{"PEXPIRE emq:{q}:pending 1000", ":1\r\n"},
	})
	clk.Advance(60_000)
	expectSteps(t, c, [][2]string{
		{"EMQ.STALLED.CHECK q", "*2\r\n*0\r\n*0\r\n"}, // the ghost goes, nothing recovered
		{"ZCARD emq:{q}:active", ":0\r\n"},
		{"EMQ.CLAIM q 60000", "*0\r\n"},                                // pending expired with its ids
		{"HGET emq:{q}:job:JOB00000000003 state", "$7\r\npending\r\n"}, // its row stays
	})
}
