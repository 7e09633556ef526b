package aof

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emqd/emqd/internal/faultfs"
	"github.com/emqd/emqd/internal/store"
)

// applyArgv applies one command to s's database db, as the store's
// handlers would (touching the keys it writes): the primitive ops the AOF
// carries (SET HSET HDEL HINCRBY ZADD ZREM DEL, and FLUSHDB), enough for
// these tests to replay without the command table.
func applyArgv(s *store.Store, db int, argv [][]byte) error {
	d := s.DB(db)
	if strings.EqualFold(string(argv[0]), "FLUSHDB") {
		s.TouchDB(db)
		d.Clear()
		return nil
	}
	key := string(argv[1])
	// As Ctx.Dirty: every key the command writes is touched.
	if strings.EqualFold(string(argv[0]), "DEL") {
		for _, k := range argv[1:] {
			s.Touch(db, string(k))
		}
	} else {
		s.Touch(db, key)
	}
	switch strings.ToUpper(string(argv[0])) {
	case "SET":
		d.Put(key, &store.Value{Kind: store.KindString, Str: bytes.Clone(argv[2])})
	case "HSET":
		h, e := d.HashForWrite(key)
		if e != "" {
			return fmt.Errorf("%s", e)
		}
		for i := 2; i+1 < len(argv); i += 2 {
			h.Set(string(argv[i]), bytes.Clone(argv[i+1]))
		}
	case "HDEL":
		h, _ := d.LookupHash(key)
		if h != nil {
			for _, f := range argv[2:] {
				h.Del(string(f))
			}
			d.DropIfEmpty(key)
		}
	case "HINCRBY":
		h, _ := d.HashForWrite(key)
		var cur int64
		if v, ok := h.Get(string(argv[2])); ok {
			cur, _ = strconv.ParseInt(string(v), 10, 64)
		}
		inc, _ := strconv.ParseInt(string(argv[3]), 10, 64)
		h.Set(string(argv[2]), []byte(strconv.FormatInt(cur+inc, 10)))
	case "ZADD":
		z, e := d.ZSetForWrite(key)
		if e != "" {
			return fmt.Errorf("%s", e)
		}
		for i := 2; i+1 < len(argv); i += 2 {
			sc, err := strconv.ParseFloat(string(argv[i]), 64)
			if err != nil {
				return err
			}
			z.Add(string(argv[i+1]), sc)
		}
	case "ZREM":
		z, _ := d.LookupZSet(key)
		if z != nil {
			for _, m := range argv[2:] {
				z.Rem(string(m))
			}
			d.DropIfEmpty(key)
		}
	case "DEL":
		for _, k := range argv[1:] {
			d.Remove(string(k))
		}
	default:
		return fmt.Errorf("ERR unknown command '%s'", argv[0])
	}
	return nil
}

// dump renders the whole keyspace canonically: one line per key, hash
// fields in insertion order, sorted-set members ascending with scores.
func dump(s *store.Store) []string {
	var out []string
	for i := 0; i < s.NumDBs(); i++ {
		s.DB(i).Keys(func(k string, v *store.Value) bool {
			var b strings.Builder
			fmt.Fprintf(&b, "%d %q %s", i, k, v.Kind.TypeName())
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
					fmt.Fprintf(&b, " %q@%v", it.Member, it.Score)
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

func cmd(args ...string) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = []byte(a)
	}
	return out
}

// harness is a live store with an AOF on a faultfs.FS.
type harness struct {
	t    *testing.T
	fs   *faultfs.FS
	st   *store.Store
	a    *AOF
	logs *logBuf
	cfg  Config
}

func newHarness(t *testing.T, fsys *faultfs.FS, policy Fsync, tweak func(*Config)) *harness {
	t.Helper()
	if fsys == nil {
		fsys = faultfs.New()
	}
	h := &harness{t: t, fs: fsys, st: store.New(16), logs: &logBuf{}}
	h.cfg = Config{Dir: "/data", Fsync: policy, Store: h.st, FS: fsys, Logger: slog.New(h.logs),
		CronInterval: 10 * time.Millisecond, FsyncInterval: 100 * time.Millisecond}
	if tweak != nil {
		tweak(&h.cfg)
	}
	h.a = New(h.cfg)
	_, err := h.a.Load(func(db int, argv [][]byte) error { return applyArgv(h.st, db, argv) })
	noErr(t, err)
	noErr(t, h.a.Start())
	h.st.SetFeed(h.a)
	t.Cleanup(func() { h.a.Close() })
	return h
}

// do applies cmds to db as one group under the store lock, records them,
// and commits; it returns Commit's error.
func (h *harness) do(db int, cmds ...[][]byte) error {
	h.st.Lock()
	for _, c := range cmds {
		if err := applyArgv(h.st, db, c); err != nil {
			h.st.Unlock()
			return err
		}
	}
	h.a.Append(db, cmds)
	h.st.Unlock()
	return h.a.Commit()
}

// cron runs one round of the AOF's cron (a harness with cfg.manualCron)
// and waits for the background fsync it starts, if any.
func (h *harness) cron() {
	h.t.Helper()
	h.a.mu.Lock()
	runs := h.a.syncRuns
	// cronOnce asks for a background fsync only while the file is not
	// failing (a failing file is retried synchronously, no fsync run
	// counted): waiting for one then timed out whenever FsyncInterval
	// had passed since the last Sync, as it does on a loaded machine.
	failing := h.a.lastErr != nil
	h.a.mu.Unlock()
	due := h.a.FsyncPolicy() == FsyncEverySec && !failing && h.a.fsyncDue()
	h.a.cronOnce()
	if due {
		waitFor(h.t, "the background fsync", func() bool {
			h.a.mu.Lock()
			defer h.a.mu.Unlock()
			return h.a.syncRuns > runs
		})
	}
}

// testClock is a manual clock for Config.now.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func newTestClock() *testClock { return &testClock{now: time.Unix(1_700_000_000, 0)} }

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func (h *harness) dump() []string {
	h.st.Lock()
	defer h.st.Unlock()
	return dump(h.st)
}

// reload replays what fsys holds now into a fresh store.
func reload(t *testing.T, fsys FS, path string) ([]string, LoadResult, *logBuf, error) {
	t.Helper()
	st := store.New(16)
	lb := &logBuf{}
	res, err := LoadFile(fsys, path, LoadOptions{NumDBs: 16, Log: slog.New(lb)}, func(db int, argv [][]byte) error { return applyArgv(st, db, argv) })
	return dump(st), res, lb, err
}

// logBuf is a slog.Handler that keeps the records.
type logBuf struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *logBuf) Enabled(context.Context, slog.Level) bool { return true }
func (l *logBuf) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	l.recs = append(l.recs, r.Clone())
	l.mu.Unlock()
	return nil
}
func (l *logBuf) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logBuf) WithGroup(string) slog.Handler      { return l }

// lines renders every record as "LEVEL msg k=v ...".
func (l *logBuf) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, r := range l.recs {
		s := r.Level.String() + " " + r.Message
		r.Attrs(func(a slog.Attr) bool {
			s += " " + a.Key + "=" + a.Value.String()
			return true
		})
		out = append(out, s)
	}
	return out
}

func (l *logBuf) contains(sub string) bool {
	for _, s := range l.lines() {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

func eq[T any](t *testing.T, want, got T, what ...any) {
	t.Helper()
	if !reflect.DeepEqual(want, got) {
		t.Fatalf("%s:\nwant %#v\ngot  %#v", fmt.Sprint(what...), want, got)
	}
}

func isTrue(t *testing.T, cond bool, what ...any) {
	t.Helper()
	if !cond {
		t.Fatalf("expected: %s", fmt.Sprint(what...))
	}
}

func infoField(a *AOF, name string) string {
	for _, kv := range a.Info() {
		if kv[0] == name {
			return kv[1]
		}
	}
	return "<missing>"
}
