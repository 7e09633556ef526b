package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/emqd/emqd/clock"
	"github.com/emqd/emqd/internal/faultfs"
	"github.com/emqd/emqd/internal/store"
	"github.com/emqd/emqd/internal/store/aof"
	"github.com/emqd/emqd/internal/testsupport"
	"github.com/redis/go-redis/v9"
)

// Persistence tests that need a server (docs/durability.md §7): restart
// with a full keyspace compare, minted ids across restarts, the restart
// exemption (docs/verbs.md §1.5), disk
// failures through the fault-injecting file layer, INFO and CONFIG.

const pt0 = int64(1_700_000_000_000)

// durable starts a server with appendonly yes in dir.
func durable(t *testing.T, dir string, clk clock.Clock, extra ...string) *Server {
	t.Helper()
	return durableFS(t, nil, dir, clk, extra...)
}

// durableFS is durable with the append-only file on fsys (nil: the OS's).
func durableFS(t *testing.T, fsys aof.FS, dir string, clk clock.Clock, extra ...string) *Server {
	t.Helper()
	cfg := map[string]string{"appendonly": "yes", "dir": dir, "appendfsync": "always"}
	for i := 0; i+1 < len(extra); i += 2 {
		cfg[extra[i]] = extra[i+1]
	}
	s, err := Start(Options{Config: cfg, Clock: clk, aofFS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

func stop(t *testing.T, s *Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
}

func rclient(t *testing.T, s *Server, db int) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), DB: db, MaxRetries: -1, PoolSize: 4, Protocol: 2, ReadTimeout: testsupport.ClientTimeout, WriteTimeout: testsupport.ClientTimeout})
	t.Cleanup(func() { c.Close() })
	return c
}

func must(t *testing.T, c *redis.Client, args ...any) any {
	t.Helper()
	v, err := c.Do(context.Background(), args...).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatalf("%v: %v", args, err)
	}
	return v
}

// keyspace renders every key of every database: type, hash fields with
// values in order, sorted-set members with exact scores, string bytes.
func keyspace(s *Server) []string {
	st := s.Store()
	st.Lock()
	defer st.Unlock()
	var out []string
	for i := 0; i < st.NumDBs(); i++ {
		st.DB(i).Keys(func(k string, v *store.Value) bool {
			var b strings.Builder
			fmt.Fprintf(&b, "db%d %q %s", i, k, v.Kind.TypeName())
			switch v.Kind {
			case store.KindString:
				fmt.Fprintf(&b, " %q", v.Str)
			case store.KindHash:
				v.Hash().Range(func(f string, val []byte) bool {
					fmt.Fprintf(&b, " %q=%q", f, val)
					return true
				})
			case store.KindZSet:
				v.ZSet.AscendAll(func(it store.ZItem) bool {
					fmt.Fprintf(&b, " %q@%b", it.Member, it.Score)
					return true
				})
			}
			out = append(out, b.String())
			return true
		})
	}
	sort.Strings(out)
	return out
}

func infoField(t *testing.T, c *redis.Client, name string) string {
	t.Helper()
	info := must(t, c, "INFO", "persistence").(string)
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, name+":"); ok {
			return v
		}
	}
	t.Fatalf("no %s in %q", name, info)
	return ""
}

// fillQueues puts jobs in every state in queues qa and qb, plus plain data
// in three databases; it runs a rewrite in the middle.
func fillQueues(t *testing.T, s *Server, clk *clock.Manual) {
	c := rclient(t, s, 0)
	c3 := rclient(t, s, 3)
	for _, q := range []string{"qa", "qb"} {
		for i := range 30 {
			args := []any{"EMQ.ENQUEUE", q, "*", fmt.Sprintf("payload\x00\r\n%d", i)}
			if i%6 == 5 {
				args = append(args, "DELAY", 60000)
			}
			must(t, c, args...)
			clk.Advance(1)
		}
		var held [][]any
		for range 4 {
			for _, j := range must(t, c, "EMQ.CLAIM", q, 30000, "COUNT", 3).([]any) {
				held = append(held, j.([]any))
			}
		}
		for i, j := range held {
			id, tok := j[0], j[2]
			switch i % 4 {
			case 0:
				must(t, c, "EMQ.COMPLETE", q, id, tok)
			case 1:
				must(t, c, "EMQ.FAIL", q, id, tok, 1, 0, "boom") // dead
			case 2:
				must(t, c, "EMQ.FAIL", q, id, tok, 5, 5000, "retry") // scheduled
			case 3:
				must(t, c, "EMQ.PROGRESS", q, id, tok, "50%") // stays active
			}
		}
		if q == "qa" {
			must(t, c, "BGREWRITEAOF")
		}
	}
	must(t, c, "EMQ.PAUSE", "qb")
	waitRewrite(t, c)
	must(t, c, "HSET", "plain", "f1", "v1", "f2", "\x00\xff")
	must(t, c, "HDEL", "plain", "f1")
	must(t, c, "ZADD", "scores", "0.1", "a", "-inf", "b", "1e300", "c", "3", "d")
	must(t, c, "ZREM", "scores", "d")
	must(t, c3, "SET", "s3", "three")
	must(t, c3, "HINCRBY", "counter", "n", 41)
	must(t, c3, "HINCRBY", "counter", "n", 1)
	must(t, c, "SET", "gone", "x")
	must(t, c, "DEL", "gone")
	tx := c.TxPipeline()
	tx.HSet(context.Background(), "tx", "a", "1")
	tx.ZAdd(context.Background(), "txz", redis.Z{Score: 2.5, Member: "m"})
	if _, err := tx.Exec(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func waitRewrite(t *testing.T, c *redis.Client) {
	t.Helper()
	deadline := time.Now().Add(testsupport.ClientTimeout)
	for infoField(t, c, "aof_rewrite_in_progress") != "0" {
		if time.Now().After(deadline) {
			t.Fatal("rewrite did not finish")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestAOFRestartKeepsTheWholeKeyspace(t *testing.T) {
	for _, policy := range []string{"always", "everysec", "no"} {
		t.Run(policy, func(t *testing.T) {
			dir := t.TempDir()
			clk := clock.NewManual(pt0)
			s1 := durable(t, dir, clk, "appendfsync", policy)
			fillQueues(t, s1, clk)
			c := rclient(t, s1, 0)
			if got := infoField(t, c, "aof_rewrites"); got != "1" {
				t.Fatalf("aof_rewrites %s", got)
			}
			before := keyspace(s1)
			run1 := s1.RunID()
			stop(t, s1)
			if len(before) < 60 {
				t.Fatalf("only %d keys", len(before))
			}
			s2 := durable(t, dir, clk, "appendfsync", policy)
			if after := keyspace(s2); !reflect.DeepEqual(before, after) {
				t.Fatalf("keyspace changed across the restart:\nbefore %q\nafter  %q", before, after)
			}
			if s2.RunID() == run1 || len(s2.RunID()) != 40 {
				t.Fatalf("run_id %q after %q", s2.RunID(), run1)
			}
			// A rewrite of the reloaded state is loadable by redis-check-aof
			// (Redis 7.0's, which reads RDB 10 at most: so without the
			// preamble; the preamble's interchange is TestAOFPreambleToValkey).
			c2 := rclient(t, s2, 0)
			must(t, c2, "CONFIG", "SET", "aof-use-rdb-preamble", "no")
			must(t, c2, "BGREWRITEAOF")
			waitRewrite(t, c2)
			if after := keyspace(s2); !reflect.DeepEqual(before, after) {
				t.Fatal("keyspace changed by the rewrite")
			}
			stop(t, s2)
			if bin, err := exec.LookPath("redis-check-aof"); err != nil && os.Getenv(testsupport.RequireEnv) == "1" {
				t.Fatal("redis-check-aof not installed (EMQD_REQUIRE_REFERENCE=1)")
			} else if err == nil {
				out, err := exec.Command(bin, filepath.Join(dir, "appendonly.aof")).CombinedOutput()
				if err != nil || !strings.Contains(string(out), "is valid") {
					t.Fatalf("redis-check-aof: %v %s", err, out)
				}
			}
			s3 := durable(t, dir, clk, "appendfsync", policy)
			if after := keyspace(s3); !reflect.DeepEqual(before, after) {
				t.Fatal("keyspace changed across the rewrite and restart")
			}
		})
	}
}

func TestAOFMintedIDsIncreaseAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	var last string
	for round, at := range []int64{pt0, pt0 - 3600_000, pt0 - 7200_000, pt0 - 7200_000} {
		s := durable(t, dir, clock.NewManual(at))
		c := rclient(t, s, 0)
		for range 3 {
			id := must(t, c, "EMQ.ENQUEUE", "q", "*", "x").(string)
			if id <= last {
				t.Fatalf("round %d: minted %s after %s", round, id, last)
			}
			last = id
		}
		// Completing the newest job deletes its row; the mint survives.
		j := must(t, c, "EMQ.CLAIM", "q", 1000, "COUNT", 100).([]any)
		for _, x := range j {
			must(t, c, "EMQ.COMPLETE", "q", x.([]any)[0], x.([]any)[2])
		}
		if round == 2 {
			must(t, c, "BGREWRITEAOF")
			waitRewrite(t, c)
		}
		stop(t, s)
	}
}

// TestAOFSeedRestartTable is docs/verbs.md §1.5 end to end: a lease
// granted before a restart is recovered without charging stalled; the same
// expiry without a restart is counted and, at max_stalled 1, dead.
func TestAOFSeedRestartTable(t *testing.T) {
	for _, restart := range []bool{true, false} {
		t.Run(fmt.Sprint("restart=", restart), func(t *testing.T) {
			dir := t.TempDir()
			clk := clock.NewManual(pt0)
			s := durable(t, dir, clk)
			c := rclient(t, s, 0)
			must(t, c, "EMQ.ENQUEUE", "q", "JOB00000000001", "p")
			j := must(t, c, "EMQ.CLAIM", "q", 1000).([]any)[0].([]any)
			if j[0] != "JOB00000000001" || j[2] != "1" {
				t.Fatalf("claim %v", j)
			}
			epoch := must(t, c, "HGET", "emq:{q}:job:JOB00000000001", "lease_epoch")
			if epoch != s.RunID() {
				t.Fatalf("lease_epoch %v", epoch)
			}
			if restart {
				stop(t, s)
				s = durable(t, dir, clk)
				c = rclient(t, s, 0)
			}
			clk.Advance(1001)
			got := must(t, c, "EMQ.STALLED.CHECK", "q", 1)
			row := must(t, c, "HGETALL", "emq:{q}:job:JOB00000000001")
			failed := must(t, c, "HGET", "emq:{q}:metrics:failed", "count")
			if restart {
				want := []any{[]any{"JOB00000000001"}, []any{}}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("after a restart: %v, want %v", got, want)
				}
				wantRow := map[any]any{"state": "pending", "attempts": "1", "payload": "p", "lease_epoch": epoch,
					"enqueued_at": "1700000000000", "claimed_at": "1700000000000"}
				if !reflect.DeepEqual(toMap(row), wantRow) {
					t.Fatalf("row %v", row)
				}
				if failed != nil {
					t.Fatalf("metrics:failed %v", failed)
				}
				if m := must(t, c, "ZRANGE", "emq:{q}:pending", 0, -1); !reflect.DeepEqual(m, []any{"JOB00000000001"}) {
					t.Fatalf("pending %v", m)
				}
			} else {
				want := []any{[]any{}, []any{"JOB00000000001"}}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("without a restart: %v, want %v", got, want)
				}
				wantRow := map[any]any{"state": "dead", "attempts": "1", "payload": "p", "lease_epoch": epoch, "stalled": "1", "last_error": "stalled",
					"enqueued_at": "1700000000000", "claimed_at": "1700000000000", "finished_at": "1700000001001"}
				if !reflect.DeepEqual(toMap(row), wantRow) {
					t.Fatalf("row %v", row)
				}
				if failed != "1" {
					t.Fatalf("metrics:failed %v", failed)
				}
				if m := must(t, c, "ZRANGE", "emq:{q}:dead", 0, -1); !reflect.DeepEqual(m, []any{"JOB00000000001"}) {
					t.Fatalf("dead %v", m)
				}
			}
			if n := must(t, c, "ZCARD", "emq:{q}:active"); n != int64(0) {
				t.Fatalf("active %v", n)
			}
		})
	}
}

func toMap(v any) map[any]any {
	out := map[any]any{}
	if a, ok := v.([]any); ok {
		for i := 0; i+1 < len(a); i += 2 {
			out[a[i]] = a[i+1]
		}
	}
	return out
}

// TestAOFDiskFailureMISCONF: with the file layer failing (ENOSPC, EIO),
// writes are refused with Valkey's MISCONF text, reads keep working, the
// batch that could not be made durable is not acknowledged, and service
// resumes once the disk works; nothing acknowledged is lost, even by a
// power cut.
func TestAOFDiskFailureMISCONF(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault func(fs *faultfs.FS)
		msg   string
	}{
		{"ENOSPC", func(fs *faultfs.FS) {
			b, _ := fs.Contents("/d/appendonly.aof")
			fs.SetSpace(int64(len(b)) + 5)
		}, "MISCONF Errors writing to the AOF file: No space left on device"},
		{"EIO write", func(fs *faultfs.FS) { fs.FailOps(syscall.EIO, faultfs.OpWrite) }, "MISCONF Errors writing to the AOF file: Input/output error"},
		{"EIO fsync", func(fs *faultfs.FS) { fs.FailOps(syscall.EIO, faultfs.OpSync) }, "MISCONF Errors writing to the AOF file: Input/output error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := faultfs.New()
			s := durableFS(t, fsys, "/d", nil)
			c := rclient(t, s, 0)
			must(t, c, "SET", "a", "1")
			must(t, c, "EMQ.ENQUEUE", "q", "JOB00000000001", "p")
			tc.fault(fsys)
			// The batch that cannot be made durable is not acknowledged.
			if v, err := c.Do(context.Background(), "SET", "b", "2").Result(); err == nil {
				t.Fatalf("SET b acknowledged (%v) with a failing disk", v)
			}
			for _, args := range [][]any{{"SET", "c", "3"}, {"HSET", "h", "f", "v"}, {"EMQ.ENQUEUE", "q", "JOB00000000002", "p"}} {
				_, err := c.Do(context.Background(), args...).Result()
				if err == nil || err.Error() != tc.msg {
					t.Fatalf("%v: %v, want %s", args, err, tc.msg)
				}
			}
			if v := must(t, c, "GET", "a"); v != "1" {
				t.Fatalf("GET a %v", v)
			}
			if v := must(t, c, "EMQ.COUNTS", "q"); !strings.HasPrefix(fmt.Sprint(v), "[pending 1 active 0 scheduled 0 dead 0 completed 0 failed 0 retained 0 latency_ms ") {
				t.Fatalf("EMQ.COUNTS %v", v)
			}
			if st := infoField(t, c, "aof_last_write_status"); st != "err" {
				t.Fatalf("aof_last_write_status %s", st)
			}
			fsys.Heal()
			deadline := time.Now().Add(testsupport.ClientTimeout)
			for {
				_, err := c.Do(context.Background(), "SET", "d", "4").Result()
				if err == nil {
					break
				}
				if err.Error() != tc.msg || time.Now().After(deadline) {
					t.Fatalf("after healing: %v", err)
				}
				time.Sleep(10 * time.Millisecond)
			}
			if st := infoField(t, c, "aof_last_write_status"); st != "ok" {
				t.Fatalf("aof_last_write_status %s", st)
			}
			fsys.PowerLoss()
			s.Close(context.Background())
			s2 := durableFS(t, fsys, "/d", nil)
			got := keyspace(s2)
			for i := range got { // the wall clock's enqueued_at
				got[i] = regexp.MustCompile(`"enqueued_at"="[0-9]+"`).ReplaceAllString(got[i], `"enqueued_at"=T`)
			}
			// The refused writes (c, h, job 2) left nothing, in memory or
			// in the file.
			want := []string{`db0 "a" string "1"`, `db0 "b" string "2"`, `db0 "d" string "4"`,
				`db0 "emq:{q}:job:JOB00000000001" hash "state"="pending" "attempts"="0" "payload"="p" "enqueued_at"=T`,
				fmt.Sprintf(`db0 "emq:{q}:pending" zset "JOB00000000001"@%b`, 0.0)}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("after the power loss:\n%q\nwant\n%q", got, want)
			}
		})
	}
}

func TestAOFInfoConfigAndBoot(t *testing.T) {
	dir := t.TempDir()
	s := durable(t, dir, nil, "appendfsync", "everysec")
	c := rclient(t, s, 0)
	for name, want := range map[string]string{"appendonly": "yes", "appendfsync": "everysec", "appendfilename": "appendonly.aof",
		"dir": dir, "auto-aof-rewrite-percentage": "100", "auto-aof-rewrite-min-size": "67108864"} {
		if got := must(t, c, "CONFIG", "GET", name); !reflect.DeepEqual(got, []any{name, want}) {
			t.Fatalf("CONFIG GET %s: %v", name, got)
		}
	}
	must(t, c, "CONFIG", "SET", "appendfsync", "always")
	if p := s.AOF().FsyncPolicy(); p != aof.FsyncAlways {
		t.Fatalf("policy %v", p)
	}
	_, err := c.Do(context.Background(), "CONFIG", "SET", "appendfsync", "sometimes").Result()
	if err == nil || err.Error() != "ERR CONFIG SET failed (possibly related to argument 'appendfsync') - argument(s) must be one of the following: always, everysec, no" {
		t.Fatalf("bad appendfsync: %v", err)
	}
	must(t, c, "CONFIG", "SET", "auto-aof-rewrite-min-size", "1kb")
	must(t, c, "CONFIG", "SET", "auto-aof-rewrite-percentage", "50")
	for i := 0; infoField(t, c, "aof_rewrites") == "0"; i++ {
		if i > 20000 {
			t.Fatal("no automatic rewrite after CONFIG SET")
		}
		must(t, c, "HSET", "h", "f", i)
	}
	must(t, c, "CONFIG", "SET", "auto-aof-rewrite-percentage", "0")
	waitRewrite(t, c)
	must(t, c, "SET", "k", "v")
	info := must(t, c, "INFO", "persistence").(string)
	for _, f := range []string{"aof_enabled:1", "aof_rewrite_scheduled:0", "aof_last_bgrewrite_status:ok", "aof_last_write_status:ok",
		"aof_pending_rewrite:0", "rdb_bgsave_in_progress:0", "module_fork_in_progress:0"} {
		if !strings.Contains(info, "\r\n"+f+"\r\n") {
			t.Fatalf("INFO persistence lacks %s:\n%s", f, info)
		}
	}
	size, _ := os.Stat(filepath.Join(dir, "appendonly.aof"))
	if !strings.Contains(info, fmt.Sprintf("\r\naof_current_size:%d\r\n", size.Size())) {
		t.Fatalf("aof_current_size is not the file's size %d:\n%s", size.Size(), info)
	}
	stop(t, s)

	// A torn tail is cut at boot, with the log line; damage refuses to boot.
	path := filepath.Join(dir, "appendonly.aof")
	good, _ := os.ReadFile(path)
	os.WriteFile(path, append(good, "*3\r\n$3\r\nSET\r\n$1\r\nz"...), 0o644)
	logs := &lockedBuf{}
	s2, err := Start(Options{Config: map[string]string{"appendonly": "yes", "dir": dir}, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if v := must(t, rclient(t, s2, 0), "GET", "k"); v != "v" {
		t.Fatalf("GET k after the torn tail: %v", v)
	}
	stop(t, s2)
	want := fmt.Sprintf("AOF appendonly.aof loaded anyway because aof-load-truncated is enabled: truncated at offset %d, 18 bytes dropped", len(good))
	if !strings.Contains(logs.String(), want) {
		t.Fatalf("log lacks %q:\n%s", want, logs.String())
	}
	// A framing byte of the last command (after the RDB preamble the
	// rewrite wrote) is damage, not a torn tail.
	bad := append([]byte(nil), good...)
	bad[bytes.LastIndex(bad, []byte("*3\r\n$3\r\nSET"))+4] = '#'
	os.WriteFile(path, bad, 0o644)
	_, err = Start(Options{Config: map[string]string{"appendonly": "yes", "dir": dir}})
	var le *aof.LoadError
	if !errors.As(err, &le) || !strings.HasPrefix(err.Error(), "Bad file format reading the append only file appendonly.aof at offset ") {
		t.Fatalf("damaged file: %v", err)
	}
}

// lockedBuf is a log sink safe for concurrent writers.
type lockedBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestAOFConfigSetAppendOnly: CONFIG SET appendonly yes on a running
// in-memory server writes the keyspace to a new file (replacing a stale one)
// and records from then on; no stops recording.
func TestAOFConfigSetAppendOnly(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "appendonly.aof")
	os.WriteFile(path, []byte("*3\r\n$3\r\nSET\r\n$5\r\nstale\r\n$1\r\n1\r\n"), 0o644)
	s, err := Start(Options{Config: map[string]string{"dir": dir}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	c := rclient(t, s, 0)
	if got := infoField(t, c, "aof_enabled"); got != "0" {
		t.Fatalf("aof_enabled %s", got)
	}
	_, err = c.Do(context.Background(), "BGREWRITEAOF").Result()
	if err == nil || err.Error() != "ERR Background append only file rewriting is not available: appendonly is off" {
		t.Fatalf("BGREWRITEAOF with appendonly no: %v", err)
	}
	for i := range 500 {
		must(t, c, "HSET", fmt.Sprint("h", i), "f", i)
	}
	must(t, c, "ZADD", "z", "1.5", "a")
	must(t, c, "CONFIG", "SET", "appendonly", "yes")
	if got := must(t, c, "CONFIG", "GET", "appendonly"); !reflect.DeepEqual(got, []any{"appendonly", "yes"}) {
		t.Fatalf("CONFIG GET appendonly %v", got)
	}
	must(t, c, "SET", "during", "1")
	waitRewrite(t, c)
	if got := infoField(t, c, "aof_rewrites"); got != "1" {
		t.Fatalf("aof_rewrites %s", got)
	}
	must(t, c, "SET", "after", "2")
	must(t, c, "HINCRBY", "h1", "f", 10)
	want := keyspace(s)
	must(t, c, "CONFIG", "SET", "appendonly", "no")
	if got := infoField(t, c, "aof_enabled"); got != "0" {
		t.Fatalf("aof_enabled after no: %s", got)
	}
	must(t, c, "SET", "unrecorded", "3")
	stop(t, s)
	s2 := durable(t, dir, nil)
	if got := keyspace(s2); !reflect.DeepEqual(got, want) {
		t.Fatalf("after the restart:\n%q\nwant\n%q", got, want)
	}
}

// TestAOFLoadTruncatedNo: with aof-load-truncated no, a file whose length
// in the middle was damaged ($8 value-26 -> $9999 value-26) stops the boot
// with Valkey's "Unexpected end of file" text and stays as it was; with yes
// (the default) the boot truncates it and logs that whole records were
// dropped.
func TestAOFLoadTruncatedNo(t *testing.T) {
	dir := t.TempDir()
	s := durable(t, dir, nil)
	c := rclient(t, s, 0)
	for i := range 60 {
		must(t, c, "SET", fmt.Sprintf("k%02d", i), fmt.Sprintf("value-%02d", i))
	}
	stop(t, s)
	path := filepath.Join(dir, "appendonly.aof")
	good, _ := os.ReadFile(path)
	bad := []byte(strings.Replace(string(good), "$8\r\nvalue-26", "$9999\r\nvalue-26", 1))
	os.WriteFile(path, bad, 0o644)
	logs := &lockedBuf{}
	_, err := Start(Options{Config: map[string]string{"appendonly": "yes", "dir": dir, "aof-load-truncated": "no"},
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if !IsAOFLoadError(err) || !strings.HasPrefix(err.Error(), "Unexpected end of file reading the append only file appendonly.aof") {
		t.Fatalf("boot with aof-load-truncated no: %v", err)
	}
	if strings.Contains(logs.String(), "aof-load-truncated is enabled") || strings.Contains(logs.String(), "Truncating") {
		t.Fatalf("the log claims a truncation:\n%s", logs.String())
	}
	if now, _ := os.ReadFile(path); string(now) != string(bad) {
		t.Fatal("the refused file was changed")
	}
	logs = &lockedBuf{}
	s2, err := Start(Options{Config: map[string]string{"appendonly": "yes", "dir": dir}, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer stop(t, s2)
	if n := must(t, rclient(t, s2, 0), "DBSIZE"); n != int64(26) {
		t.Fatalf("DBSIZE %v after the truncation", n)
	}
	for _, want := range []string{"hold what look like 33 more whole records", "aof-load-truncated is enabled"} {
		if !strings.Contains(logs.String(), want) {
			t.Fatalf("log lacks %q:\n%s", want, logs.String())
		}
	}
}

// Keys of every encoding survive an AOF replay and a rewrite with the same
// content: listpack hashes and sets (a job row's one-byte words, multi-byte
// members, -0 and infinite scores), hashtable and skiplist ones big by
// count or by one long field, value or member, and a hash converted then
// shrunk (a replay runs its commands again and converts it again; the
// rewritten file has only what it holds now, so it is a listpack after
// the rewrite, as with Valkey).
func TestAOFEncodingsAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewManual(pt0)
	s1 := durable(t, dir, clk)
	c := rclient(t, s1, 0)
	must(t, c, "HSET", "row", "state", "pending", "attempts", "0", "payload", strings.Repeat("p", 64))
	must(t, c, "HSET", "multi", "é", "ü", strings.Repeat("ß", 32), "")
	args := []any{"HSET", "bighash"}
	for i := range 600 {
		args = append(args, fmt.Sprint("f", i), fmt.Sprint(i))
	}
	must(t, c, args...)
	must(t, c, "HSET", "longvalue", "a", "1", "b", strings.Repeat("v", 65))
	must(t, c, "HSET", "shrunk", "a", "1", "b", strings.Repeat("v", 65))
	must(t, c, "HDEL", "shrunk", "b")
	must(t, c, "ZADD", "smallz", "0", "a", "-0", "b", "inf", "c", "-inf", "d", "1.5", "é")
	args = []any{"ZADD", "bigz"}
	for i := range 200 {
		args = append(args, i%13, fmt.Sprint("m", i))
	}
	must(t, c, args...)
	must(t, c, "ZADD", "longmember", "1", "a", "2", strings.Repeat("é", 33))
	want := map[string][3]string{ // key: encoding before, after a replay, after a rewrite
		"row": {"listpack", "listpack", "listpack"}, "multi": {"listpack", "listpack", "listpack"},
		"bighash": {"hashtable", "hashtable", "hashtable"}, "longvalue": {"hashtable", "hashtable", "hashtable"},
		"shrunk": {"hashtable", "hashtable", "listpack"}, "smallz": {"listpack", "listpack", "listpack"},
		"bigz": {"skiplist", "skiplist", "skiplist"}, "longmember": {"skiplist", "skiplist", "skiplist"},
	}
	check := func(c *redis.Client, after int) {
		t.Helper()
		for k, w := range want {
			if got := must(t, c, "OBJECT", "ENCODING", k); got != w[after] {
				t.Errorf("OBJECT ENCODING %s = %v, want %s", k, got, w[after])
			}
		}
	}
	check(c, 0)
	before := keyspace(s1)
	stop(t, s1)
	s2 := durable(t, dir, clk)
	c2 := rclient(t, s2, 0)
	if after := keyspace(s2); !reflect.DeepEqual(before, after) {
		t.Fatalf("keyspace changed across the replay:\nbefore %q\nafter  %q", before, after)
	}
	check(c2, 1)
	must(t, c2, "BGREWRITEAOF")
	waitRewrite(t, c2)
	stop(t, s2)
	s3 := durable(t, dir, clk)
	if after := keyspace(s3); !reflect.DeepEqual(before, after) {
		t.Fatal("keyspace changed across the rewrite and restart")
	}
	check(rclient(t, s3, 0), 2)
}

// CONFIG SET appendonly yes inside MULTI/EXEC turns the AOF on for good:
// the writes after EXEC reach the file (the EXEC group is the store's, not
// a Feed swapped in for the transaction and swapped back over the new AOF),
// and appendonly no inside EXEC stops it.
func TestAOFConfigSetAppendOnlyInsideExec(t *testing.T) {
	dir := t.TempDir()
	s, err := Start(Options{Config: map[string]string{"dir": dir}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	c := dial(t, s)
	for _, step := range [][]string{{"MULTI"}, {"SET", "before", "1"}, {"CONFIG", "SET", "appendonly", "yes"}, {"SET", "inside", "2"}, {"EXEC"}} {
		c.Do(step...)
	}
	rc := rclient(t, s, 0)
	waitRewrite(t, rc)
	must(t, rc, "SET", "after", "3")
	want := keyspace(s)
	stop(t, s)
	s2 := durable(t, dir, nil)
	if got := keyspace(s2); !reflect.DeepEqual(got, want) || len(want) != 3 {
		t.Fatalf("after the restart:\n%q\nwant\n%q", got, want)
	}
	c2 := dial(t, s2)
	for _, step := range [][]string{{"MULTI"}, {"CONFIG", "SET", "appendonly", "no"}, {"SET", "unrecorded", "4"}, {"EXEC"}} {
		c2.Do(step...)
	}
	s2.store.Lock()
	feed := s2.store.SetFeed(nil)
	s2.store.SetFeed(feed)
	s2.store.Unlock()
	if feed != nil {
		t.Fatalf("appendonly no inside EXEC left the store feeding %T", feed)
	}
}
