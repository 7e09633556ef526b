package store

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// zsetTailOK checks lpTail's invariant: when set, it is the offset of the
// listpack's last entry and the members ascend in member order.
func zsetTailOK(t *testing.T, z *ZSet) {
	t.Helper()
	if z.tree != nil {
		if z.lpTail != 0 {
			t.Fatalf("a big set keeps lpTail %d", z.lpTail)
		}
		return
	}
	if z.lpTail == 0 {
		return
	}
	last, prev := -1, ""
	for off := lpHeader; off < len(z.lp); {
		m, _, next := z.lpEntry(off)
		if last >= 0 && !(prev < string(m)) {
			t.Fatalf("lpTail %d set, but member %q follows %q", z.lpTail, m, prev)
		}
		last, prev, off = off, string(m), next
	}
	if int(z.lpTail) != last {
		t.Fatalf("lpTail %d, last entry at %d", z.lpTail, last)
	}
}

// TestZSetTailAgainstScan: Add's insert after a known tail (lpAfterTail,
// no scan) against the same operations on a twin whose tail is forgotten
// before every write (so each Add scans), byte for byte, and against a
// model: queue-like workloads (ascending ids at one score, ascending
// deadlines, removals from the front) mixed with re-scores, removals
// anywhere, pops from both ends, rank-range cuts, snapshots and copies.
func TestZSetTailAgainstScan(t *testing.T) {
	totalFast := 0
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 25))
		a, b := NewZSet(), NewZSet()
		var model zsetModel
		next, score := 0, 0.0
		fastAdds := 0 // adds that took lpAfterTail's path
		for step := range 3000 {
			var m string
			switch rng.IntN(30) {
			case 0: // an old member, or one below every id
				m = fmt.Sprintf("JOB%06d", rng.IntN(next+2))
			default: // the next id
				next++
				m = fmt.Sprintf("JOB%06d", next)
			}
			if rng.IntN(8) == 0 {
				score += float64(rng.IntN(3)) // deadlines move on
			}
			sc := score
			if rng.IntN(80) == 0 {
				sc = float64(rng.IntN(4)) // a priority, or an old deadline
			}
			b.lpTail = 0
			switch op := rng.IntN(16); {
			case op < 9:
				if a.lpAfterTail(m, sc) {
					fastAdds++
				}
				if rng.IntN(2) == 0 {
					a.Add(m, sc)
					b.Add(m, sc)
				} else {
					a.AddBytes([]byte(m), sc)
					b.AddBytes([]byte(m), sc)
				}
				model.add(m, sc)
			case op < 12:
				x, okA := a.PopMin()
				y, okB := b.PopMin()
				if okA != okB || x != y || okA && x != model[0] {
					t.Fatalf("seed %d step %d: PopMin %v %v and %v %v", seed, step, x, okA, y, okB)
				}
				if okA {
					model = model[1:]
				}
			case op == 12:
				if len(model) > 0 {
					m = model[rng.IntN(len(model))].Member
				}
				ra, rb := a.Rem(m), b.Rem(m)
				if ra != rb || ra != model.rem(m) {
					t.Fatalf("seed %d step %d: Rem %q %v and %v", seed, step, m, ra, rb)
				}
			case op == 13 && rng.IntN(6) == 0:
				x, okA := a.PopMax()
				y, okB := b.PopMax()
				if okA != okB || x != y {
					t.Fatalf("seed %d step %d: PopMax %v %v and %v %v", seed, step, x, okA, y, okB)
				}
				if okA {
					model = model[:len(model)-1]
				}
			case op == 13:
				lo, n := rng.IntN(4), rng.IntN(3)
				if ra, rb := a.DeleteRankRange(lo, lo+n), b.DeleteRankRange(lo, lo+n); ra != rb {
					t.Fatalf("seed %d step %d: DeleteRankRange %d and %d", seed, step, ra, rb)
				}
				if lo < len(model) {
					model = slices.Delete(model, lo, min(lo+n, len(model)))
				}
			case op == 14:
				_ = a.Snapshot() // the next write copies
				_ = b.Snapshot()
			default:
				a, b = a.Copy(), b.Copy()
			}
			if a.Big() != b.Big() {
				t.Fatalf("seed %d step %d: encodings differ", seed, step)
			}
			if !a.Big() && (lpCount(a.lp) != lpCount(b.lp) || !bytes.Equal(a.lp[min(len(a.lp), lpHeader):], b.lp[min(len(b.lp), lpHeader):])) {
				t.Fatalf("seed %d step %d: listpacks differ:\n tail %x\n scan %x", seed, step, a.lp, b.lp)
			}
			zsetTailOK(t, a)
			if got := zsetItems(a); !slices.Equal(got, []ZItem(model)) {
				t.Fatalf("seed %d step %d: set %v, model %v", seed, step, got, model)
			}
			if a.Big() || len(model) > 100 {
				a, b, model = NewZSet(), NewZSet(), nil // stay small
			}
		}
		totalFast += fastAdds
	}
	// Deterministic (fixed seeds): 20 x 3000 steps, about half of them adds.
	if totalFast < 2500 {
		t.Fatalf("%d adds after the tail in 60,000 steps: the workload does not reach the fast path", totalFast)
	}
	t.Logf("%d adds after the tail in 60,000 steps", totalFast)
}

// TestZSetQueueKeepsTail: a queue's sets keep their tail known through
// the job cycle, so every append skips the scan: pending (ascending ids at
// score 0, removed from the front) and active (deadlines that move on,
// ids claimed in order), and a new set made after one emptied.
func TestZSetQueueKeepsTail(t *testing.T) {
	pend, act := NewZSet(), NewZSet()
	id := 0
	for round := range 50 {
		for range 100 {
			id++
			m := fmt.Sprintf("JOB%08d", id)
			if !pend.lpAfterTail(m, 0) && pend.Len() > 0 {
				t.Fatalf("round %d: pending's tail lost before %s", round, m)
			}
			if !pend.Add(m, 0) {
				t.Fatalf("Add %s: not new", m)
			}
		}
		for i := range 100 {
			it, _ := pend.PopMin()
			deadline := float64(30000 + round*7 + i/40)
			if !act.lpAfterTail(it.Member, deadline) && act.Len() > 0 {
				t.Fatalf("round %d: active's tail lost before %s", round, it.Member)
			}
			act.Add(it.Member, deadline)
		}
		for range 100 {
			act.PopMin()
		}
		if pend.Len() != 0 || act.Len() != 0 {
			t.Fatalf("round %d: %d pending, %d active", round, pend.Len(), act.Len())
		}
	}
}
