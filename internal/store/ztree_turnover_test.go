package store

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// ztLeafCount is the number of leaves of t and the items they hold.
func ztLeafCount(t *ztree) (leaves, items int) {
	ztEachLeaf(t, func(l *ztLeaf) { leaves++; items += len(l.items) })
	return
}

// A queue's pending set under a job cycle: job ids go in ascending order
// but several producers' enqueues arrive a few places out of it (window),
// while consumers take the least one. The leaves must stay as full as
// after an ascending fill, whatever the turnover: a leaf split in half by
// a straggler near the end is never filled again (only later stragglers
// land in its range) and the set's memory would grow with every such
// split (bench/README.md "Memory during a job cycle (issue 25, round 7)").
func TestZTreeQueueTurnoverKeepsLeavesFull(t *testing.T) {
	const n = 20000
	id := func(i int) ZItem { return ZItem{Member: fmt.Sprintf("JOB%011d", i)} }
	for _, window := range []int{1, 2, 8, 32} {
		tr := newZTree()
		for i := 0; i < n; i++ {
			tr.Insert(id(i))
		}
		full, _ := ztLeafCount(tr)
		r := rand.New(rand.NewPCG(uint64(window), 7))
		next, order := n, make([]int, window)
		ref := 0 // the least id still in the tree
		for turn := 0; turn < 10*n; turn += window {
			for k := range order {
				order[k] = next + k
			}
			r.Shuffle(window, func(a, b int) { order[a], order[b] = order[b], order[a] })
			for _, i := range order {
				tr.Insert(id(i))
				if m, _ := tr.DeleteAt(0); m != id(ref) {
					t.Fatalf("window %d: popped %v, want %v", window, m, id(ref))
				}
				ref++
			}
			next += window
		}
		leaves, items := ztLeafCount(tr)
		if items != n {
			t.Fatalf("window %d: %d items, want %d", window, items, n)
		}
		// As full as the fill's leaves but for a few: the front leaf the
		// pops drain, the back leaf the inserts fill, and the pairs a
		// straggler split in half when both neighbours were full, which
		// travel to the front and go (before leafShift and the last
		// leaf's rule: 29 items a leaf at window 2, and falling).
		if float64(items)/float64(leaves) < 0.95*ztFan {
			t.Fatalf("window %d: %d leaves for %d items after %d turnovers, %d after the fill (%.1f items a leaf)",
				window, leaves, n, 10*n, full, float64(items)/float64(leaves))
		}
		want := make([]ZItem, 0, n)
		for i := ref; i < ref+n; i++ {
			want = append(want, id(i))
		}
		if err := ztCheck(tr, want); err != nil {
			t.Fatalf("window %d: %v", window, err)
		}
	}
}
