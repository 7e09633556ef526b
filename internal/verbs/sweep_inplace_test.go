package verbs

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"unsafe"

	"github.com/emqd/emqd/internal/store"
)

// aofFeed keeps every record the store sends, rendered, in order (the
// AOF's bytes, in effect).
type aofFeed struct{ buf bytes.Buffer }

func (f *aofFeed) Append(db int, cmds [][][]byte) {
	fmt.Fprintf(&f.buf, "db%d", db)
	for _, c := range cmds {
		f.buf.WriteString(" [")
		for i, a := range c {
			if i > 0 {
				f.buf.WriteByte(' ')
			}
			fmt.Fprintf(&f.buf, "%q", a)
		}
		f.buf.WriteByte(']')
	}
	f.buf.WriteByte('\n')
}

// dumpUnmarked is digest's keyspace written out in full, read without
// marking any listpack viewed (Hash.Visit), so that dumping between steps
// does not turn the in-place path off for the steps after it.
func dumpUnmarked(s *store.Store) string {
	var b strings.Builder
	for i := 0; i < s.NumDBs(); i++ {
		d := s.DB(i)
		var keys []string
		d.Keys(func(k string, _ *store.Value) bool { keys = append(keys, k); return true })
		sort.Strings(keys)
		for _, k := range keys {
			v := d.Peek(k)
			fmt.Fprintf(&b, "db%d %q %d:", i, k, v.Kind)
			switch v.Kind {
			case store.KindString:
				fmt.Fprintf(&b, " %q", v.Str)
			case store.KindHash:
				v.Hash().Visit(func(f string, val []byte) bool {
					fmt.Fprintf(&b, " %q=%q", f, val)
					return true
				})
			case store.KindZSet:
				v.ZSet.AscendAll(func(it store.ZItem) bool {
					fmt.Fprintf(&b, " %q@%v", it.Member, it.Score)
					return true
				})
			}
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// TestSweepInPlaceMatchesCopy: EMQ.STALLED.CHECK reads its rows without
// marking them (readRowFor) and its HSET rewrites a row in place when the
// new values keep their sizes and the new fields fit (internal/store
// hash.go lpSetPairs). If any view of a row the read pass took were read
// after the in-place write changed its bytes (a later op of the plan, the
// AOF's render of it, the flow or lane bookkeeping, the reply), this store
// would answer, record or hold something else than its twin whose
// listpacks are never rewritten in place (Store.SetListpackInPlace(false)):
// random queues of plain, prioritised, lane and flow jobs with payloads of
// every size, stall counts that are and are not one-byte words, leases of
// the current and of another run id, rows read by EMQ.JOB (marked) or not,
// retention on and off, each command on both, replies and AOF records
// compared at every step and the keyspace every few steps.
func TestSweepInPlaceMatchesCopy(t *testing.T) {
	const seeds, steps = 12, 400
	for seed := uint64(1); seed <= seeds; seed++ {
		rng := rand.New(rand.NewPCG(seed, 77))
		a, b := newTH(t), newTH(t)
		fa, fb := &aofFeed{}, &aofFeed{}
		a.s.SetFeed(fa)
		b.s.SetFeed(fb)
		b.s.SetListpackInPlace(false)
		both := func(args ...string) string {
			t.Helper()
			ra, rb := a.raw(args...), b.raw(args...)
			if ra != rb {
				t.Fatalf("seed %d: %v: in place %q, copying %q", seed, args, ra, rb)
			}
			if !bytes.Equal(fa.buf.Bytes(), fb.buf.Bytes()) {
				t.Fatalf("seed %d: %v: the AOF records differ:\nin place %s\ncopying  %s", seed, args, tail(fa.buf.String()), tail(fb.buf.String()))
			}
			return ra
		}
		var ids []string
		next := 0
		id := func() string { next++; return fmt.Sprintf("JOB%011d", next) }
		pick := func() string {
			if len(ids) == 0 {
				return "JOB00000000000"
			}
			return ids[rng.IntN(len(ids))]
		}
		queues := []string{"q", "r"}
		for step := 0; step < steps; step++ {
			q := queues[rng.IntN(len(queues))]
			switch op := rng.IntN(21); {
			case op < 5:
				j := id()
				ids = append(ids, j)
				args := []string{"EMQ.ENQUEUE", q, j, strings.Repeat("p", rng.IntN(200))}
				switch rng.IntN(6) {
				case 0:
					args = append(args, "PRIORITY", fmt.Sprint(rng.IntN(5)-2))
				case 1:
					args = append(args, "LANE", []string{"a", "b"}[rng.IntN(2)])
				}
				both(args...)
			case op == 5:
				p, c1, c2 := id(), id(), id()
				ids = append(ids, p, c1, c2)
				both("EMQ.FLOW", q, p, "parent", "CHILD", q, c1, strings.Repeat("c", rng.IntN(80)), "CHILD", queues[rng.IntN(2)], c2, "x")
			case op < 9:
				both("EMQ.CLAIM", q, fmt.Sprint(1+rng.IntN(3)), "COUNT", fmt.Sprint(1+rng.IntN(8)))
			case op < 13:
				args := []string{"EMQ.STALLED.CHECK", q, fmt.Sprint(1 + rng.IntN(4)), fmt.Sprint(1 + rng.IntN(10))}
				if rng.IntN(4) == 0 {
					args = append(args, "EVERY", "2")
				}
				both(args...)
			case op == 13:
				a.clk.Advance(int64(1 + rng.IntN(4)))
				b.clk.Advance(a.clk.NowMs() - b.clk.NowMs())
			case op == 14:
				both("EMQ.JOB", q, pick()) // marks the row viewed: the next write copies
			case op == 15:
				both("EMQ.REPROCESS", q, pick())
			case op == 16 || op == 20:
				// A stall count that is not a one-byte word (2..99, or
				// over 99 so the next one is longer).
				j := pick()
				v := []string{"5", "9", "42", "99", "100"}[rng.IntN(5)]
				if key := NewKeys(q).Row(j); a.s.DB(0).Peek(key) != nil {
					a.hset(key, "stalled", v) // as HSET writes it (the harness has no HSET)
					b.hset(key, "stalled", v)
				}
			case op == 17:
				// Another process's leases: exempt.
				if a.run == tRun {
					a.run, b.run = "another-run", "another-run"
				} else {
					a.run, b.run = tRun, tRun
				}
			case op == 18:
				both("EMQ.RETAIN", q, "DEAD", fmt.Sprint(rng.IntN(4)), "0")
			case op == 19:
				both("EMQ.FAIL", q, pick(), "1", "3", "0", "boom")
			}
			if step%25 == 0 {
				if da, db := dumpUnmarked(a.s), dumpUnmarked(b.s); da != db {
					t.Fatalf("seed %d step %d: the keyspaces differ:\nin place\n%s\ncopying\n%s", seed, step, da, db)
				}
			}
		}
		a.clk.Advance(10)
		b.clk.Advance(10)
		for _, q := range queues {
			both("EMQ.STALLED.CHECK", q, "2", "1000")
		}

		if digest(a.s) != digest(b.s) {
			t.Fatalf("seed %d: the keyspaces differ at the end", seed)
		}
	}
}

// tail is the last few lines of an AOF dump.
func tail(s string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	return strings.Join(lines, "\n")
}

// TestSweepRewritesRowsInPlace: the sweep's HSET writes each expired row
// into the buffer it already had, on the dead-letter path (the claim left
// room for the death's fields, deathRoom), the recovery path and the
// restart exemption; with in-place rewrites off, every row gets a new
// buffer and the same contents.
func TestSweepRewritesRowsInPlace(t *testing.T) {
	for _, tc := range []struct {
		name, maxStalled, run string
		inPlace               bool
	}{
		{"dead", "1", tRun, true}, {"recover", "2", tRun, true}, {"exempt", "1", "another-run", true},
		{"dead copying", "1", tRun, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newTH(t)
			h.s.SetListpackInPlace(tc.inPlace)
			const n = 20
			for i := 0; i < n; i++ {
				h.ok("EMQ.ENQUEUE", "q", fmt.Sprintf("JOB%011d", i), strings.Repeat("x", 64))
			}
			h.ok("EMQ.CLAIM", "q", "1", "COUNT", fmt.Sprint(n))
			bufs := make([]*byte, n)
			for i := range bufs {
				bufs[i] = unsafe.SliceData(h.s.DB(0).Peek(fmt.Sprintf("emq:{q}:job:JOB%011d", i)).Str)
			}
			h.clk.Advance(5)
			h.run = tc.run
			h.ok("EMQ.STALLED.CHECK", "q", tc.maxStalled, "100")
			for i := range bufs {
				key := fmt.Sprintf("emq:{q}:job:JOB%011d", i)
				v := h.s.DB(0).Peek(key)
				if same := unsafe.SliceData(v.Str) == bufs[i]; same != tc.inPlace {
					t.Fatalf("%s: written in the same buffer %v, want %v", key, same, tc.inPlace)
				}
				want := map[string]string{"dead": "dead", "recover": "pending", "exempt": "pending", "dead copying": "dead"}[tc.name]
				if got := h.field("q", fmt.Sprintf("JOB%011d", i), "state"); got != want {
					t.Fatalf("%s: state %q, want %q", key, got, want)
				}
			}
		})
	}
}
