package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/emqd/emqd/internal/testsupport"
	"github.com/emqd/emqd/internal/valkeyref"
	"github.com/redis/go-redis/v9"
)

// commandFlags returns name -> flags of every command and subcommand that
// COMMAND reports on addr.
func commandFlags(t *testing.T, c *testsupport.Conn) map[string]map[string]bool {
	t.Helper()
	nodes, err := parseFrames(c.Do("COMMAND"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]bool{}
	var walk func(n *node)
	walk = func(n *node) {
		fl := map[string]bool{}
		for _, f := range n.kids[2].kids {
			fl[f.text] = true
		}
		out[strings.ToLower(n.kids[0].text)] = fl
		if len(n.kids) > 9 {
			for _, sub := range n.kids[9].kids {
				walk(sub)
			}
		}
	}
	for _, n := range nodes[0].kids {
		walk(n)
	}
	return out
}

// TestDenyOOMFlagsAsRedis: every command emqd shares with Redis 7.0 carries
// denyoom exactly when Redis's does (the flag maxmemory acts on).
func TestDenyOOMFlagsAsRedis(t *testing.T) {
	ref := diffDial(t, diffReference(t))
	s := startServer(t, nil, nil)
	ours := commandFlags(t, dial(t, s))
	theirs := commandFlags(t, ref)
	shared := 0
	for name, fl := range ours {
		rf, ok := theirs[name]
		if !ok {
			continue
		}
		shared++
		if fl["denyoom"] != rf["denyoom"] {
			t.Errorf("%s: denyoom %v, Redis %v", name, fl["denyoom"], rf["denyoom"])
		}
	}
	if shared < 40 {
		t.Fatalf("only %d commands shared with Redis", shared)
	}
}

// fillToOOM writes 1 MiB hash values until a write is refused and returns
// the refusal and how many were stored.
func fillToOOM(t *testing.T, c *redis.Client) (string, int) {
	t.Helper()
	val := strings.Repeat("x", 1<<20)
	for i := 0; i < 1000; i++ {
		err := c.HSet(context.Background(), fmt.Sprintf("big:%d", i), "v", val).Err()
		if err != nil {
			return err.Error(), i
		}
	}
	t.Fatal("1000 MiB written under maxmemory")
	return "", 0
}

// TestMaxmemoryOOM: with maxmemory set, 1 MiB values are refused with
// Valkey's OOM text once used memory passes it (as Redis does); reads,
// deletes and every verb that drains a queue go on, in MULTI too; ENQUEUE,
// PROGRESS and a MULTI queueing a denyoom command are refused; a refusal leaves the keyspace
// and the append-only file untouched; freed memory takes writes again.
func TestMaxmemoryOOM(t *testing.T) {
	// The reference: Redis with the same kind of limit.
	rref := redis.NewClient(&redis.Options{Addr: diffReference(t), Protocol: 2})
	defer rref.Close()
	if err := rref.ConfigSet(context.Background(), "maxmemory", "32mb").Err(); err != nil {
		t.Fatal(err)
	}
	refErr, refN := fillToOOM(t, rref)
	if refErr != errOOM {
		t.Fatalf("Redis says %q", refErr)
	}

	runtime.GC()
	base := usedMemory()
	limit := base + 24<<20
	dir := t.TempDir()
	s := startServer(t, map[string]string{"maxmemory": fmt.Sprint(limit), "appendonly": "yes", "dir": dir, "appendfsync": "always"}, nil)
	c := rclient(t, s, 0)
	ctx := context.Background()
	// Jobs in every state a drain meets, enqueued before the limit.
	for i := 0; i < 8; i++ {
		must(t, c, "EMQ.ENQUEUE", "q", fmt.Sprintf("JOB0000000000%d", i), "p")
	}
	held := must(t, c, "EMQ.CLAIM", "q", 60000, "COUNT", 6).([]any)
	tok := func(i int) string { return held[i].([]any)[2].(string) }
	id := func(i int) string { return held[i].([]any)[0].(string) }
	must(t, c, "EMQ.FAIL", "q", id(5), tok(5), 1, 0, "boom") // dead

	got, n := fillToOOM(t, c)
	if got != errOOM {
		t.Fatalf("refusal %q, want %q", got, errOOM)
	}
	t.Logf("Redis refused after %d MiB under 32mb; emqd after %d MiB under used+24MiB", refN, n)
	info := must(t, c, "INFO", "memory").(string)
	for _, f := range []string{fmt.Sprintf("maxmemory:%d", limit), "maxmemory_policy:noeviction", fmt.Sprintf("go_memory_limit:%d", limit+limit/8)} {
		if !strings.Contains(info, "\r\n"+f+"\r\n") {
			t.Fatalf("INFO memory lacks %s:\n%s", f, info)
		}
	}

	// Refusals write nothing.
	aof := filepath.Join(dir, "appendonly.aof")
	before, _ := os.ReadFile(aof)
	ks := keyspace(s)
	for _, cmd := range [][]any{
		{"SET", "s", "v"},
		{"HSET", "h", "f", "v"},
		{"ZADD", "z", 1, "m"},
		{"INCR", "n"},
		{"EMQ.ENQUEUE", "q", "*", "p"},
		{"EMQ.PROGRESS", "q", id(0), tok(0), "50%"},
	} {
		if err := c.Do(ctx, cmd...).Err(); err == nil || err.Error() != errOOM {
			t.Errorf("%v at the limit: %v", cmd, err)
		}
	}
	// Inside MULTI only denyoom commands are refused (then EXECABORT);
	// the others are queued and run, as in Valkey 8.0.1.
	tx := c.TxPipeline()
	tx.HSet(ctx, "big:0", "w", "x")
	if _, err := tx.Exec(ctx); err == nil || !strings.Contains(err.Error(), "EXECABORT") {
		t.Errorf("MULTI HSET at the limit: %v", err)
	}
	tx = c.TxPipeline()
	hlen := tx.HStrLen(ctx, "big:0", "v")
	if _, err := tx.Exec(ctx); err != nil || hlen.Val() != 1<<20 {
		t.Errorf("MULTI HSTRLEN at the limit: %v %d", err, hlen.Val())
	}
	if after, _ := os.ReadFile(aof); string(after) != string(before) {
		t.Fatal("a refused command reached the append-only file")
	}
	if !reflect.DeepEqual(keyspace(s), ks) {
		t.Fatal("a refused command changed the keyspace")
	}

	// Reads, and the verbs that drain a queue, go on.
	if v := must(t, c, "HSTRLEN", "big:0", "v"); v != int64(1<<20) {
		t.Fatalf("HSTRLEN %v", v)
	}
	must(t, c, "EMQ.PAUSE", "q")
	must(t, c, "EMQ.RESUME", "q")
	must(t, c, "EMQ.COMPLETE", "q", id(0), tok(0))
	must(t, c, "EMQ.FAIL", "q", id(1), tok(1), 5, 0, "retry")
	must(t, c, "EMQ.REQUEUE", "q", id(2), tok(2))
	must(t, c, "EMQ.EXTEND", "q", id(3), tok(3), 1000)
	must(t, c, "EMQ.DELAY", "q", id(4), tok(4), "IN", 0)
	must(t, c, "EMQ.PROMOTE", "q")
	must(t, c, "EMQ.REPROCESS", "q", id(5))
	must(t, c, "EMQ.STALLED.CHECK", "q")
	must(t, c, "EMQ.CLAIM", "q", 1000, "COUNT", 2)
	must(t, c, "EMQ.REMOVE", "q", "JOB00000000007")
	must(t, c, "EMQ.COUNTS", "q")
	must(t, c, "EMQ.JOB", "q", id(0))

	// Deletes go on, and what they free takes writes again.
	for i := 0; i < n; i++ {
		must(t, c, "DEL", fmt.Sprintf("big:%d", i))
	}
	runtime.GC() // the test's synchronisation point: the freed values are gone
	must(t, c, "SET", "s", "v")
	must(t, c, "EMQ.ENQUEUE", "q", "*", "p")
}

// TestMaxmemoryPolicyOnlyNoeviction: every policy but noeviction is
// refused, at start and by CONFIG SET, with the reason.
func TestMaxmemoryPolicyOnlyNoeviction(t *testing.T) {
	_, err := Start(Options{Config: map[string]string{"maxmemory-policy": "allkeys-lru"}})
	if err == nil || !strings.Contains(err.Error(), errPolicy.Error()) {
		t.Fatalf("Start with allkeys-lru: %v", err)
	}
	s := startServer(t, map[string]string{"maxmemory-policy": "noeviction"}, nil)
	c := dial(t, s)
	expectReplies(t, c, [][2]any{
		{a("CONFIG", "SET", "maxmemory-policy", "volatile-lru"), "-ERR CONFIG SET failed (possibly related to argument 'maxmemory-policy') - " + errPolicy.Error() + "\r\n"},
		{a("CONFIG", "SET", "maxmemory-policy", "nosuch"), "-ERR CONFIG SET failed (possibly related to argument 'maxmemory-policy') - argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction\r\n"},
		{a("CONFIG", "SET", "maxmemory-policy", "NOEVICTION"), "+OK\r\n"},
		{a("CONFIG", "GET", "maxmemory-policy"), "*2\r\n$16\r\nmaxmemory-policy\r\n$10\r\nnoeviction\r\n"},
	})
}

// TestMaxmemoryConfigSet: CONFIG SET maxmemory takes effect at once (and 0
// lifts it).
func TestMaxmemoryConfigSet(t *testing.T) {
	s := startServer(t, nil, nil)
	c := dial(t, s)
	expectReplies(t, c, [][2]any{
		{a("CONFIG", "SET", "maxmemory", "1"), "+OK\r\n"},
		{a("SET", "k", "v"), "-" + errOOM + "\r\n"},
		{a("GET", "k"), "$-1\r\n"},
		{a("DEL", "k"), ":0\r\n"},
		{a("CONFIG", "SET", "maxmemory", "0"), "+OK\r\n"},
		{a("SET", "k", "v"), "+OK\r\n"},
	})
}

// TestMultiAtMaxmemoryAsValkey: at the memory limit a transaction queues
// the commands that are not denyoom (GET, DEL, PING) and EXEC runs them;
// a denyoom command (SET) is refused with OOM and EXEC then aborts; the
// bytes are Valkey 8.0.1's (the reference server, maxmemory 1).
func TestMultiAtMaxmemoryAsValkey(t *testing.T) {
	ref := valkeyref.Start(t)
	s := startServer(t, nil, nil)
	script := [][]string{
		{"SET", "a", "1"},
		{"CONFIG", "SET", "maxmemory", "1"},
		{"MULTI"}, {"GET", "a"}, {"DEL", "a"}, {"SET", "b", "1"}, {"EXEC"},
		{"MULTI"}, {"GET", "a"}, {"PING"}, {"DEL", "a"}, {"EXEC"},
		{"EXISTS", "a"},
		{"CONFIG", "SET", "maxmemory", "0"},
	}
	run := func(addr string) []string {
		c := dialAddr(t, addr)
		var out []string
		for _, cmd := range script {
			out = append(out, c.Do(cmd...))
		}
		return out
	}
	want, got := run(ref.Addr), run(s.Addr())
	for i := range script {
		if got[i] != want[i] {
			t.Errorf("%q: emqd %q, Valkey 8.0.1 %q", script[i], got[i], want[i])
		}
	}
	if want[11] != "*3\r\n$1\r\n1\r\n+PONG\r\n:1\r\n" {
		t.Fatalf("the reference's EXEC: %q", want[11])
	}
}
