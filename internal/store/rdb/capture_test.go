package rdb

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/emqd/emqd/internal/resp"
	"github.com/emqd/emqd/internal/store"
)

// cmdRunner runs Valkey commands on a store with the lock held by the
// caller (so a test can interleave them with Capturer steps).
type cmdRunner struct {
	st   *store.Store
	cmds map[string]*store.CommandSpec
	now  int64
}

func newRunner(st *store.Store) *cmdRunner {
	r := &cmdRunner{st: st, cmds: map[string]*store.CommandSpec{}, now: 1_700_000_000_000}
	for _, cs := range store.Commands() {
		r.cmds[cs.Name] = cs
	}
	st.SetNow(r.now)
	return r
}

func (r *cmdRunner) do(t *testing.T, db int, args ...string) string {
	t.Helper()
	cs := r.cmds[strings.ToLower(args[0])]
	if cs == nil || cs.Handler == nil {
		t.Fatalf("no command %s", args[0])
	}
	argv := make([][]byte, len(args))
	for i, a := range args {
		argv[i] = []byte(a)
	}
	w := &resp.Writer{Proto: 2}
	c := &store.Ctx{S: r.st, DB: r.st.DB(db), W: w, NowMs: r.now}
	c.ResetForCommand(argv)
	cs.Handler(c)
	if strings.HasPrefix(string(w.Buf), "-") && !strings.HasPrefix(string(w.Buf), "-ERR no such key") {
		t.Fatalf("%v: %s", args, w.Buf)
	}
	return string(w.Buf)
}

// canonSnap renders a snapshot as db/key -> expire time and DUMP payload.
func canonSnap(s *Snapshot) map[string]string {
	s.Keys()
	out := map[string]string{}
	for i, d := range s.dbs {
		for j, k := range d.keys {
			id := strconv.Itoa(i) + "/" + k
			if _, dup := out[id]; dup {
				out[id] = "DUPLICATE"
				continue
			}
			out[id] = fmt.Sprintf("%d %q", d.exps[j], Dump(d.objs[j], false))
		}
	}
	return out
}

// TestCapturerIsTheCutInstant (docs/durability.md §9.2): a chunked capture
// interleaved with writes of every kind (SET, APPEND, DEL, HSET on
// listpack and hashtable hashes, ZADD on small and big sorted sets, EXPIRE,
// FLUSHDB, SWAPDB, RENAME) between its steps gives exactly the snapshot
// Take gives at the cut, with no key twice, and holds the lock for at most
// one chunk per step.
func TestCapturerIsTheCutInstant(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			st := store.New(4)
			r := newRunner(st)
			st.Lock()
			defer st.Unlock()
			for i := 0; i < 3000; i++ {
				db := i % 3
				k := "k" + strconv.Itoa(i)
				switch i % 4 {
				case 0:
					r.do(t, db, "SET", k, strconv.Itoa(i))
				case 1:
					r.do(t, db, "HSET", k, "f", "v", "g", strconv.Itoa(i))
				case 2:
					r.do(t, db, "ZADD", k, "1", "a", "2", "b")
				case 3:
					r.do(t, db, "SET", k, strings.Repeat("x", 30), "PX", "100000000")
				}
			}
			for i := 0; i < 300; i++ {
				r.do(t, 0, "HSET", "bighash", "f"+strconv.Itoa(i), "v")
				r.do(t, 1, "ZADD", "bigz", strconv.Itoa(i), "m"+strconv.Itoa(i))
			}
			c := Begin(st)
			c.chunk = 128 // so 3,000 keys take many steps
			steps := 0
			for !c.Step() {
				steps++
				if steps > 100000 {
					t.Fatal("the capture never reached its cut")
				}
				for range rng.IntN(40) {
					db := rng.IntN(3)
					k := "k" + strconv.Itoa(rng.IntN(3500))
					switch x := rng.IntN(100); {
					case x < 20:
						r.do(t, db, "SET", k, "new"+strconv.Itoa(steps))
					case x < 30:
						r.do(t, db, "DEL", k)
					case x < 40:
						r.do(t, db, "DEL", k)
						r.do(t, db, "APPEND", k, "appended")
					case x < 50:
						r.do(t, db, "DEL", k)
						r.do(t, db, "HSET", k, "f", strconv.Itoa(steps))
					case x < 60:
						r.do(t, db, "DEL", k)
						r.do(t, db, "ZADD", k, strconv.Itoa(steps), "m")
					case x < 70:
						r.do(t, 0, "HSET", "bighash", "f"+strconv.Itoa(rng.IntN(400)), strconv.Itoa(steps))
					case x < 80:
						r.do(t, 1, "ZADD", "bigz", strconv.Itoa(steps), "m"+strconv.Itoa(rng.IntN(400)))
					case x < 88:
						r.do(t, db, "PEXPIRE", k, "5000000")
					default:
						r.do(t, db, "RENAME", "k"+strconv.Itoa(rng.IntN(100)*4), "renamed"+strconv.Itoa(steps))
					}
				}
				switch rng.IntN(200) {
				case 0:
					r.do(t, 2, "FLUSHDB")
					r.do(t, 2, "SET", "after-flush", strconv.Itoa(steps))
				case 1:
					r.do(t, 0, "SWAPDB", "1", "3")
				}
			}
			got := canonSnap(c.Finish())
			want := canonSnap(Take(st))
			if len(got) != len(want) || len(want) < 1000 {
				t.Fatalf("%d keys captured, %d at the cut", len(got), len(want))
			}
			for k, w := range want {
				if got[k] != w {
					t.Fatalf("%s: captured %.80s, at the cut %.80s", k, got[k], w)
				}
			}
			if steps < 3 {
				t.Fatalf("only %d steps: the capture was not chunked", steps)
			}
		})
	}
}
