// Command emqd-migrate copies every queue of a running emqd to a Valkey or
// Redis Cluster that serves the same verbs through the emq FUNCTION library
// (docs/cluster.md §5), and verifies the copy.
//
//	emqd-migrate --from 127.0.0.1:6379 --to 10.0.0.1:6379,10.0.0.2:6379 [--load-library]
//	emqd-migrate --from 127.0.0.1:6379 --to 10.0.0.1:6379 --verify-only
//
// It finds the queues with SCAN (every key emq:{q}:... of a valid queue
// name, docs/verbs.md §1.1), reads each queue's keys with HGETALL / ZRANGE
// WITHSCORES, and writes them slot by slot: per key, one MULTI on the
// target with DEL and the key's whole content (HSET, ZADD with the exact
// score text), skipped when the target already holds the same content. It
// also writes each queue's minter emq:{q}:mint last from emqd's
// {emq}:mint, so ids the cluster mints sort after every id emqd minted.
// Then it verifies: every copied key equal on both sides, the queue's
// counts equal (EMQ.COUNTS against emq_counts), the minter not behind, and
// it lists keys of the queue present only on the target. A second run
// writes nothing.
//
// Each key it writes is recorded on the target, in the same MULTI, in the
// queue's hash emq:{q}:migrated (field: the key, value: a digest of the
// content written). A later run that finds a key differing from emqd
// first checks that the target still holds what the last copy wrote: a key
// the cluster changed since (a job completed there, a counter moved, a job
// enqueued there that --prune would delete) is a conflict, and the run
// refuses before writing anything, naming every such key, unless --force.
// Without --load-library it checks first that every primary has the emq
// library (the verification calls emq_counts).
//
// Exit status: 0 when the verification passed, 1 when it found a
// difference, 2 on a usage or connection error (or no library), 3 when it
// refused because the target changed keys since the last copy.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/emqd/emqd/cluster"
	"github.com/emqd/emqd/internal/verbs"
	"github.com/redis/go-redis/v9"
)

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

type config struct {
	from, fromPassword string
	fromDB             int
	to                 []string
	toPassword         string
	standalone         bool
	loadLibrary        bool
	verifyOnly         bool
	prune              bool
	force              bool
	queues             map[string]bool
	batch              int
}

func parse(args []string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("emqd-migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := &config{}
	var to, queues string
	fs.StringVar(&c.from, "from", "127.0.0.1:6379", "emqd's host:port")
	fs.StringVar(&c.fromPassword, "from-password", "", "emqd's requirepass")
	fs.IntVar(&c.fromDB, "from-db", 0, "the emqd database to copy (a cluster has only database 0)")
	fs.StringVar(&to, "to", "", "the cluster: host:port of one or more nodes, comma-separated (required)")
	fs.StringVar(&c.toPassword, "to-password", "", "the cluster's password")
	fs.BoolVar(&c.standalone, "standalone", false, "the target is one Valkey/Redis server, not a cluster")
	fs.BoolVar(&c.loadLibrary, "load-library", false, "load the emq FUNCTION library on every primary first")
	fs.BoolVar(&c.verifyOnly, "verify-only", false, "write nothing: only compare")
	fs.BoolVar(&c.prune, "prune", false, "delete keys of a copied queue that exist only on the target")
	fs.BoolVar(&c.force, "force", false, "overwrite (or prune) keys the target changed since the last copy")
	fs.StringVar(&queues, "queues", "", "copy only these queues (comma-separated); default: every queue")
	fs.IntVar(&c.batch, "batch", 500, "fields or members per HSET/ZADD")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: emqd-migrate --from host:port --to host:port[,host:port...] [flags]")
		fmt.Fprintln(stderr, "Copies every queue of a running emqd to a Valkey/Redis Cluster and verifies the copy (docs/cluster.md §5).")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if to == "" {
		return nil, errors.New("--to is required")
	}
	c.to = strings.Split(to, ",")
	if queues != "" {
		c.queues = map[string]bool{}
		for _, q := range strings.Split(queues, ",") {
			if !validQueue(q) {
				return nil, fmt.Errorf("invalid queue name %q", q)
			}
			c.queues[q] = true
		}
	}
	if c.batch < 1 {
		return nil, errors.New("--batch must be positive")
	}
	return c, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c, err := parse(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, "emqd-migrate:", err)
		}
		return 2
	}
	src := redis.NewClient(&redis.Options{Addr: c.from, Password: c.fromPassword, DB: c.fromDB, Protocol: 2})
	defer src.Close()
	var dst redis.UniversalClient
	if c.standalone {
		dst = redis.NewClient(&redis.Options{Addr: c.to[0], Password: c.toPassword, Protocol: 2})
	} else {
		dst = redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.to, Password: c.toPassword, Protocol: 2})
	}
	defer dst.Close()
	m := &migrator{cfg: c, src: src, dst: dst, out: stdout}
	if err := m.run(ctx); err != nil {
		fmt.Fprintln(stderr, "emqd-migrate:", err)
		var ce *conflictError
		if errors.As(err, &ce) {
			return 3
		}
		return 2
	}
	if m.diffs > 0 {
		fmt.Fprintf(stdout, "verify: FAILED, %d difference(s)\n", m.diffs)
		return 1
	}
	fmt.Fprintln(stdout, "verify: OK")
	return 0
}

// validQueue is the queue-name rule (docs/verbs.md §1.2), asked of the
// verbs' own key parser.
func validQueue(q string) bool {
	_, _, ok := verbs.ParseQueueKey(verbs.NewKeys(q).Pending)
	return ok
}

// queueOf returns the queue a key belongs to: key is emq:{q}:... with q a
// valid queue name.
func queueOf(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, "emq:{")
	if !ok {
		return "", false
	}
	i := strings.Index(rest, "}:")
	if i < 0 {
		return "", false
	}
	q := rest[:i]
	return q, validQueue(q)
}

type migrator struct {
	cfg   *config
	src   *redis.Client
	dst   redis.UniversalClient
	out   io.Writer
	diffs int

	keysWritten, keysDeleted, keysSame int
}

// content is one key as read: its type and its value in a canonical form
// (hash: field -> value; zset: member -> score text as ZRANGE WITHSCORES
// gives it, parsed back to compare; string: the bytes).
type content struct {
	typ  string
	str  string
	hash map[string]string
	zset []member
}

type member struct {
	m     string
	score string
}

func (m *migrator) run(ctx context.Context) error {
	if err := m.src.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("emqd at %s: %w", m.cfg.from, err)
	}
	if err := m.dst.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("target at %s: %w", strings.Join(m.cfg.to, ","), err)
	}
	if m.cfg.loadLibrary && !m.cfg.verifyOnly {
		if err := cluster.Load(ctx, m.dst); err != nil {
			return err
		}
		fmt.Fprintln(m.out, "library: loaded on every primary")
	} else if err := m.checkLibrary(ctx); err != nil {
		return err
	}
	byQueue, err := m.scanSource(ctx)
	if err != nil {
		return err
	}
	mint, err := m.src.HGet(ctx, verbs.MintKey, "last").Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("emqd %s: %w", verbs.MintKey, err)
	}
	queues := make([]string, 0, len(byQueue))
	for q := range byQueue {
		queues = append(queues, q)
	}
	// Slot by slot (then by name): a queue is one slot.
	sort.Slice(queues, func(i, j int) bool {
		si, sj := slot(queues[i]), slot(queues[j])
		if si != sj {
			return si < sj
		}
		return queues[i] < queues[j]
	})
	mode := "copy"
	if m.cfg.verifyOnly {
		mode = "verify"
	}
	fmt.Fprintf(m.out, "%s: %d queue(s) from %s (db %d) to %s\n", mode, len(queues), m.cfg.from, m.cfg.fromDB, strings.Join(m.cfg.to, ","))
	if !m.cfg.verifyOnly && !m.cfg.force {
		// Every queue is checked before any is written, so a refusal
		// writes nothing.
		var conflicts []string
		for _, q := range queues {
			c, err := m.conflicts(ctx, q, byQueue[q])
			if err != nil {
				return fmt.Errorf("queue %s: %w", q, err)
			}
			conflicts = append(conflicts, c...)
		}
		if len(conflicts) > 0 {
			for _, c := range conflicts {
				fmt.Fprintln(m.out, "  conflict:", c)
			}
			return &conflictError{n: len(conflicts)}
		}
	}
	for _, q := range queues {
		if err := m.queue(ctx, q, byQueue[q], mint); err != nil {
			return fmt.Errorf("queue %s: %w", q, err)
		}
	}
	if !m.cfg.verifyOnly {
		fmt.Fprintf(m.out, "copy: %d key(s) written, %d deleted, %d already equal\n", m.keysWritten, m.keysDeleted, m.keysSame)
	}
	return nil
}

// conflictError is the refusal of a run that found keys the target
// changed since the last copy.
type conflictError struct{ n int }

func (e *conflictError) Error() string {
	return fmt.Sprintf("refused, nothing written: %d key(s) on the target changed since the last copy (listed above); "+
		"the cluster has taken writes, and copying again would undo them (run it with --force to overwrite them)", e.n)
}

// checkLibrary fails unless every primary of the target has the emq
// FUNCTION library (docs/cluster.md §1.1): without it the verification's
// emq_counts would fail with "ERR Function not found" after the copy.
func (m *migrator) checkLibrary(ctx context.Context) error {
	check := func(ctx context.Context, c *redis.Client) error {
		libs, err := c.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: cluster.LibraryName}).Result()
		if err != nil {
			return fmt.Errorf("FUNCTION LIST on %s: %w", c.Options().Addr, err)
		}
		for _, l := range libs {
			if l.Name == cluster.LibraryName {
				return nil
			}
		}
		return fmt.Errorf("the %s FUNCTION library is not loaded on %s: run with --load-library to load it on every primary (docs/cluster.md §1.1); nothing was copied",
			cluster.LibraryName, c.Options().Addr)
	}
	switch d := m.dst.(type) {
	case *redis.ClusterClient:
		return d.ForEachMaster(ctx, check)
	case *redis.Client:
		return check(ctx, d)
	}
	return nil
}

// recordKey is the hash on the target that records what the copies wrote
// for queue q: field the key, value digest(content) ("" for a key deleted
// by --prune). Same slot as the queue's keys.
func recordKey(q string) string { return "emq:{" + q + "}:migrated" }

// digest is a fingerprint of a key's content (nil: absent), equal for
// contents equal under equal (scores as numbers).
func digest(c *content) string {
	if c == nil {
		return ""
	}
	h := sha256.New()
	put := func(s string) { fmt.Fprintf(h, "%d:%s", len(s), s) }
	put(c.typ)
	switch c.typ {
	case "string":
		put(c.str)
	case "hash":
		fields := make([]string, 0, len(c.hash))
		for f := range c.hash {
			fields = append(fields, f)
		}
		sort.Strings(fields)
		for _, f := range fields {
			put(f)
			put(c.hash[f])
		}
	case "zset":
		for _, z := range c.zset {
			put(z.m)
			if f, err := strconv.ParseFloat(z.score, 64); err == nil {
				put(strconv.FormatFloat(f, 'g', -1, 64))
			} else {
				put(z.score)
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// conflicts lists the keys of queue q that this run would overwrite or
// prune although the target changed them since the last copy: a key that
// differs from emqd whose target content is not what the record says the
// last copy wrote (or that no copy wrote and the target holds).
func (m *migrator) conflicts(ctx context.Context, q string, keys []string) ([]string, error) {
	src, err := read(ctx, m.src, keys)
	if err != nil {
		return nil, fmt.Errorf("reading emqd: %w", err)
	}
	names := make([]string, 0, len(src))
	for k := range src {
		names = append(names, k)
	}
	sort.Strings(names)
	dst, err := read(ctx, m.dst, names)
	if err != nil {
		return nil, fmt.Errorf("reading the target: %w", err)
	}
	rec, err := m.dst.HGetAll(ctx, recordKey(q)).Result()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", recordKey(q), err)
	}
	var out []string
	for _, k := range names {
		if equal(src[k], dst[k]) {
			continue
		}
		if why, changed := changedSince(rec, k, dst[k]); changed {
			out = append(out, fmt.Sprintf("%s %s (emqd %s, target %s)", k, why, describe(src[k]), describe(dst[k])))
		}
	}
	if m.cfg.prune {
		extra, err := m.targetKeys(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, k := range extra {
			if _, ok := src[k]; ok || k == "emq:{"+q+"}:mint" || k == recordKey(q) {
				continue
			}
			ct, err := read(ctx, m.dst, []string{k})
			if err != nil {
				return nil, err
			}
			if why, changed := changedSince(rec, k, ct[k]); changed {
				out = append(out, fmt.Sprintf("%s %s (--prune would delete it)", k, why))
			}
		}
	}
	return out, nil
}

// changedSince reports whether the target's content cur of key differs
// from what the record says the last copy left there.
func changedSince(rec map[string]string, key string, cur *content) (string, bool) {
	want, ok := rec[key]
	switch {
	case !ok && cur == nil:
		return "", false // never written, absent: nothing to lose
	case !ok:
		return "was not written by a copy and the target holds it", true
	case digest(cur) == want:
		return "", false
	case cur == nil:
		return "was deleted on the target since the last copy", true
	}
	return "was changed on the target since the last copy", true
}

// scanSource lists the keys of every queue on emqd.
func (m *migrator) scanSource(ctx context.Context) (map[string][]string, error) {
	out := map[string][]string{}
	var cursor uint64
	for {
		keys, next, err := m.src.Scan(ctx, cursor, "emq:{*", 1000).Result()
		if err != nil {
			return nil, fmt.Errorf("SCAN on emqd: %w", err)
		}
		for _, k := range keys {
			q, ok := queueOf(k)
			if !ok || (m.cfg.queues != nil && !m.cfg.queues[q]) {
				continue
			}
			out[q] = append(out[q], k)
		}
		if next == 0 {
			break
		}
		cursor = next
	}
	for q := range m.cfg.queues {
		if _, ok := out[q]; !ok {
			out[q] = nil // asked for, has no keys on emqd: still verified
		}
	}
	return out, nil
}

// read reads keys from c: types first, then contents in one MULTI (one
// consistent view of the keys on emqd).
func read(ctx context.Context, c redis.Cmdable, keys []string) (map[string]*content, error) {
	out := make(map[string]*content, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	types := make([]*redis.StatusCmd, len(keys))
	if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			types[i] = p.Type(ctx, k)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	vals := make([]redis.Cmder, len(keys))
	present := 0
	for i, k := range keys {
		switch types[i].Val() {
		case "hash", "zset", "string":
			present++
		case "none":
		default:
			return nil, fmt.Errorf("key %s has type %s, which emqd does not keep", k, types[i].Val())
		}
	}
	if present == 0 {
		return out, nil
	}
	if _, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			switch types[i].Val() {
			case "hash":
				vals[i] = p.HGetAll(ctx, k)
			case "zset":
				vals[i] = p.Do(ctx, "ZRANGE", k, 0, -1, "WITHSCORES")
			case "string":
				vals[i] = p.Get(ctx, k)
			}
		}
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	for i, k := range keys {
		ct := &content{typ: types[i].Val()}
		switch ct.typ {
		case "none":
			continue // gone since the SCAN
		case "hash":
			ct.hash = vals[i].(*redis.MapStringStringCmd).Val()
			if len(ct.hash) == 0 {
				continue
			}
		case "zset":
			v, err := vals[i].(*redis.Cmd).Slice()
			if err != nil {
				return nil, err
			}
			for j := 0; j+1 < len(v); j += 2 {
				ct.zset = append(ct.zset, member{m: fmt.Sprint(v[j]), score: fmt.Sprint(v[j+1])})
			}
			if len(ct.zset) == 0 {
				continue
			}
		case "string":
			s, err := vals[i].(*redis.StringCmd).Result()
			if errors.Is(err, redis.Nil) {
				continue
			}
			ct.str = s
		}
		out[k] = ct
	}
	return out, nil
}

// equal compares two contents; scores compare as numbers (emqd prints
// Valkey 8's shortest form, Redis 7.0 %.17g).
func equal(a, b *content) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.typ != b.typ || a.str != b.str || !reflect.DeepEqual(a.hash, b.hash) || len(a.zset) != len(b.zset) {
		return false
	}
	for i := range a.zset {
		if a.zset[i].m != b.zset[i].m || !sameScore(a.zset[i].score, b.zset[i].score) {
			return false
		}
	}
	return true
}

func sameScore(a, b string) bool {
	if a == b {
		return true
	}
	var x, y float64
	if _, err := fmt.Sscan(a, &x); err != nil {
		return false
	}
	if _, err := fmt.Sscan(b, &y); err != nil {
		return false
	}
	return x == y
}

// write makes key on the target hold ct: one MULTI with DEL and the
// content, so a run stopped half-way leaves whole keys and the next run
// completes it.
func (m *migrator) write(ctx context.Context, q, key string, ct *content) error {
	_, err := m.dst.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, recordKey(q), key, digest(ct))
		p.Del(ctx, key)
		switch ct.typ {
		case "string":
			p.Set(ctx, key, ct.str, 0)
		case "hash":
			fields := make([]string, 0, len(ct.hash))
			for f := range ct.hash {
				fields = append(fields, f)
			}
			sort.Strings(fields)
			for i := 0; i < len(fields); i += m.cfg.batch {
				args := []any{"HSET", key}
				for _, f := range fields[i:min(i+m.cfg.batch, len(fields))] {
					args = append(args, f, ct.hash[f])
				}
				p.Do(ctx, args...)
			}
		case "zset":
			for i := 0; i < len(ct.zset); i += m.cfg.batch {
				args := []any{"ZADD", key}
				for _, z := range ct.zset[i:min(i+m.cfg.batch, len(ct.zset))] {
					args = append(args, z.score, z.m)
				}
				p.Do(ctx, args...)
			}
		}
		return nil
	})
	return err
}

// queue copies (unless verify-only) and verifies one queue.
func (m *migrator) queue(ctx context.Context, q string, keys []string, mint string) error {
	src, err := read(ctx, m.src, keys)
	if err != nil {
		return fmt.Errorf("reading emqd: %w", err)
	}
	names := make([]string, 0, len(src))
	for k := range src {
		names = append(names, k)
	}
	sort.Strings(names)
	mintKey := "emq:{" + q + "}:mint"
	written := 0
	if !m.cfg.verifyOnly {
		dst, err := read(ctx, m.dst, names)
		if err != nil {
			return fmt.Errorf("reading the target: %w", err)
		}
		rec, err := m.dst.HGetAll(ctx, recordKey(q)).Result()
		if err != nil {
			return fmt.Errorf("reading %s: %w", recordKey(q), err)
		}
		for _, k := range names {
			if equal(src[k], dst[k]) {
				m.keysSame++
				if d := digest(src[k]); rec[k] != d {
					// Equal already (an earlier copy, or by chance): the
					// record says so, so a later change on the target is
					// seen as one.
					if err := m.dst.HSet(ctx, recordKey(q), k, d).Err(); err != nil {
						return fmt.Errorf("writing %s: %w", recordKey(q), err)
					}
				}
				continue
			}
			if err := m.write(ctx, q, k, src[k]); err != nil {
				return fmt.Errorf("writing %s: %w", k, err)
			}
			m.keysWritten++
			written++
		}
		if mint != "" {
			cur, err := m.dst.HGet(ctx, mintKey, "last").Result()
			if err != nil && !errors.Is(err, redis.Nil) {
				return fmt.Errorf("reading %s: %w", mintKey, err)
			}
			if cur == "" || !verbs.ValidID([]byte(cur)) || cur < mint {
				if err := m.dst.HSet(ctx, mintKey, "last", mint).Err(); err != nil {
					return fmt.Errorf("writing %s: %w", mintKey, err)
				}
				written++
				m.keysWritten++
			}
		}
		if m.cfg.prune {
			extra, err := m.targetKeys(ctx, q)
			if err != nil {
				return err
			}
			for _, k := range extra {
				if _, ok := src[k]; !ok && k != mintKey && k != recordKey(q) {
					if _, err := m.dst.TxPipelined(ctx, func(p redis.Pipeliner) error {
						p.HSet(ctx, recordKey(q), k, "")
						p.Del(ctx, k)
						return nil
					}); err != nil {
						return err
					}
					written++
					m.keysDeleted++
				}
			}
		}
	}
	diffs := m.verify(ctx, q, names, src, mint)
	fmt.Fprintf(m.out, "slot %5d  %-24s %4d key(s), %4d written, %d difference(s)\n", slot(q), q, len(names), written, diffs)
	return nil
}

// verify compares one queue on both sides and reports each difference.
func (m *migrator) verify(ctx context.Context, q string, names []string, src map[string]*content, mint string) int {
	n := 0
	report := func(format string, args ...any) {
		n++
		m.diffs++
		fmt.Fprintf(m.out, "  %s: %s\n", q, fmt.Sprintf(format, args...))
	}
	dst, err := read(ctx, m.dst, names)
	if err != nil {
		report("reading the target: %v", err)
		return n
	}
	for _, k := range names {
		if !equal(src[k], dst[k]) {
			report("%s differs (emqd %s, target %s)", k, describe(src[k]), describe(dst[k]))
		}
	}
	extra, err := m.targetKeys(ctx, q)
	if err != nil {
		report("SCAN on the target: %v", err)
	}
	for _, k := range extra {
		if _, ok := src[k]; !ok && k != "emq:{"+q+"}:mint" && k != recordKey(q) {
			report("%s exists only on the target (--prune deletes it)", k)
		}
	}
	want, err1 := m.src.Do(ctx, "EMQ.COUNTS", q).Slice()
	got, err2 := m.dst.FCall(ctx, "emq_counts", []string{q}).Slice()
	switch {
	case err1 != nil || err2 != nil:
		if err1 == nil || err2 == nil || err1.Error() != err2.Error() {
			report("counts: emqd %v %v, target %v %v", want, err1, got, err2)
		}
	case !reflect.DeepEqual(countsOnly(want), countsOnly(got)):
		report("counts: emqd %v, target %v", pairs(want), pairs(got))
	}
	if mint != "" {
		cur, _ := m.dst.HGet(ctx, "emq:{"+q+"}:mint", "last").Result()
		if cur < mint {
			report("emq:{%s}:mint last %q is behind emqd's %s %q", q, cur, verbs.MintKey, mint)
		}
	}
	return n
}

func describe(c *content) string {
	switch {
	case c == nil:
		return "absent"
	case c.typ == "hash":
		return fmt.Sprintf("hash of %d field(s)", len(c.hash))
	case c.typ == "zset":
		return fmt.Sprintf("zset of %d member(s)", len(c.zset))
	}
	return c.typ
}

// pairs turns a flat name/value reply into a map.
// countsOnly is EMQ.COUNTS' reply without latency_ms: the head's age on
// each side's clock, read at two instants, is no count to verify
// (docs/verbs.md §4.16).
func countsOnly(v []any) map[string]any {
	m := pairs(v)
	delete(m, "latency_ms")
	return m
}

func pairs(v []any) map[string]any {
	out := map[string]any{}
	for i := 0; i+1 < len(v); i += 2 {
		out[fmt.Sprint(v[i])] = v[i+1]
	}
	return out
}

// targetKeys lists the keys of queue q on the target (on every master of a
// cluster; the queue's slot is on one of them).
func (m *migrator) targetKeys(ctx context.Context, q string) ([]string, error) {
	pattern := "emq:{" + escapeGlob(q) + "}:*"
	var keys []string
	scan := func(ctx context.Context, c *redis.Client) error {
		var cursor uint64
		for {
			ks, next, err := c.Scan(ctx, cursor, pattern, 1000).Result()
			if err != nil {
				return err
			}
			keys = append(keys, ks...)
			if next == 0 {
				return nil
			}
			cursor = next
		}
	}
	var err error
	switch d := m.dst.(type) {
	case *redis.ClusterClient:
		var mu sync.Mutex
		err = d.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			var local []string
			var cursor uint64
			for {
				ks, next, err := c.Scan(ctx, cursor, pattern, 1000).Result()
				if err != nil {
					return err
				}
				local = append(local, ks...)
				if next == 0 {
					break
				}
				cursor = next
			}
			mu.Lock()
			keys = append(keys, local...)
			mu.Unlock()
			return nil
		})
	case *redis.Client:
		err = scan(ctx, d)
	}
	sort.Strings(keys)
	return keys, err
}

// escapeGlob escapes the glob characters of a queue name (none are valid
// in one, docs/verbs.md §1.2, but the pattern stays exact regardless).
func escapeGlob(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`, `]`, `\]`)
	return r.Replace(s)
}

// slot is the cluster slot of queue q.
func slot(q string) int { return cluster.Slot(q) }
