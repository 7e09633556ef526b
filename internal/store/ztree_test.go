package store

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// ztCheck verifies t's structure: counts, separators, order, fill, and that
// the items are exactly want (sorted).
func ztCheck(t *ztree, want []ZItem) error {
	if t.Len() != len(want) {
		return fmt.Errorf("Len %d, want %d", t.Len(), len(want))
	}
	var got []ZItem
	var walk func(h int, n *ztInner, l *ztLeaf, lo, hi *ZItem, root bool) (int, error)
	walk = func(h int, n *ztInner, l *ztLeaf, lo, hi *ZItem, root bool) (int, error) {
		if h == 0 {
			if len(l.items) > ztFan || (!root && len(l.items) == 0) {
				return 0, fmt.Errorf("leaf of %d items", len(l.items))
			}
			for i, it := range l.items {
				if lo != nil && zless(it, *lo) || hi != nil && !zless(it, *hi) {
					return 0, fmt.Errorf("item %v outside [%v, %v)", it, lo, hi)
				}
				if i > 0 && !zless(l.items[i-1], it) {
					return 0, fmt.Errorf("leaf out of order at %d", i)
				}
			}
			got = append(got, l.items...)
			return len(l.items), nil
		}
		if n.n < 1 || n.n > ztFan || (root && n.n < 2) {
			return 0, fmt.Errorf("inner node of %d children (root %v)", n.n, root)
		}
		total := 0
		for k := 0; k < n.n; k++ {
			clo, chi := lo, hi
			if k > 0 {
				clo = &n.seps[k-1]
			}
			if k < n.n-1 {
				chi = &n.seps[k]
			}
			var c int
			var err error
			if h == 1 {
				c, err = walk(0, nil, n.leaves[k], clo, chi, false)
			} else {
				c, err = walk(h-1, n.inners[k], nil, clo, chi, false)
			}
			if err != nil {
				return 0, err
			}
			if c != n.sizes[k] {
				return 0, fmt.Errorf("child %d holds %d items, size says %d", k, c, n.sizes[k])
			}
			total += c
		}
		for k := n.n; k < ztFan; k++ {
			if n.sizes[k] != 0 || n.leaves[k] != nil || n.inners[k] != nil {
				return 0, fmt.Errorf("stale child slot %d", k)
			}
		}
		return total, nil
	}
	if t.count > 0 || t.leaf != nil || t.inner != nil {
		if t.height == 0 && t.leaf == nil {
			return fmt.Errorf("height 0 without a leaf")
		}
		if _, err := walk(t.height, t.inner, t.leaf, nil, nil, true); err != nil {
			return err
		}
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("items differ: %d items, want %d", len(got), len(want))
	}
	return nil
}

func ztRefPos(ref []ZItem, it ZItem) int {
	i, _ := slices.BinarySearchFunc(ref, it, zcmp)
	return i
}

// Random operations against a sorted slice, with copies taken along the
// way that must not change whatever either side does next.
func TestZTreeRandom(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		r := rand.New(rand.NewPCG(seed, seed))
		tr := newZTree()
		var ref []ZItem
		type snap struct {
			t   *ztree
			ref []ZItem
		}
		var snaps []snap
		scoreSpace := []int{3, 50, 1 << 20}[seed%3]
		for step := 0; step < 12000; step++ {
			switch op := r.IntN(20); {
			case op < 9 || len(ref) < 50: // insert
				var it ZItem
				switch r.IntN(3) {
				case 0: // ascending (the append split)
					it = ZItem{Score: float64(scoreSpace + step), Member: fmt.Sprint("m", step)}
				case 1: // descending (the prepend split)
					it = ZItem{Score: float64(-step), Member: fmt.Sprint("m", step)}
				default:
					it = ZItem{Score: float64(r.IntN(scoreSpace)), Member: fmt.Sprint("m", r.IntN(100000))}
				}
				i := ztRefPos(ref, it)
				if i < len(ref) && ref[i] == it {
					continue
				}
				tr.Insert(it)
				ref = slices.Insert(ref, i, it)
			case op < 13: // delete a present item, or a missing one
				if r.IntN(8) == 0 {
					if _, ok := tr.Delete(ZItem{Score: 0.5, Member: "absent"}); ok {
						t.Fatal("deleted an absent item")
					}
					continue
				}
				i := r.IntN(len(ref))
				got, ok := tr.Delete(ref[i])
				if !ok || got != ref[i] {
					t.Fatalf("seed %d step %d: Delete(%v) = %v %v", seed, step, ref[i], got, ok)
				}
				ref = slices.Delete(ref, i, i+1)
			case op < 15: // delete at a rank (pops at both ends too)
				i := []int{0, len(ref) - 1, r.IntN(len(ref))}[r.IntN(3)]
				got, ok := tr.DeleteAt(i)
				if !ok || got != ref[i] {
					t.Fatalf("seed %d step %d: DeleteAt(%d) = %v %v, want %v", seed, step, i, got, ok, ref[i])
				}
				ref = slices.Delete(ref, i, i+1)
			case op < 16: // a copy
				snaps = append(snaps, snap{tr.Copy(), slices.Clone(ref)})
				if len(snaps) > 3 {
					snaps = snaps[1:]
				}
			case op < 17 && len(snaps) > 0: // write to a copy
				s := &snaps[r.IntN(len(snaps))]
				if len(s.ref) > 0 {
					i := r.IntN(len(s.ref))
					s.t.DeleteAt(i)
					s.ref = slices.Delete(s.ref, i, i+1)
				}
				it := ZItem{Score: -1e9, Member: fmt.Sprint("snap", step)}
				s.t.Insert(it)
				s.ref = slices.Insert(s.ref, ztRefPos(s.ref, it), it)
			default: // reads
				if len(ref) == 0 {
					continue
				}
				i := r.IntN(len(ref))
				if got, _ := tr.GetAt(i); got != ref[i] {
					t.Fatalf("GetAt(%d) = %v, want %v", i, got, ref[i])
				}
				probe := ZItem{Score: float64(r.IntN(scoreSpace)), Member: fmt.Sprint("m", r.IntN(100000))}
				if r.IntN(2) == 0 {
					probe = ref[i]
				}
				if got, want := tr.CountLess(probe), ztRefPos(ref, probe); got != want {
					t.Fatalf("CountLess(%v) = %d, want %d", probe, got, want)
				}
				var asc []ZItem
				tr.Ascend(probe, func(it ZItem) bool { asc = append(asc, it); return len(asc) < 60 })
				p := ztRefPos(ref, probe)
				if want := ref[p:min(len(ref), p+60)]; !slices.Equal(asc, want) {
					t.Fatalf("Ascend(%v): %d items differ", probe, len(asc))
				}
				var desc []ZItem
				tr.Descend(probe, func(it ZItem) bool { desc = append(desc, it); return len(desc) < 60 })
				end := p // items <= probe: ref[:end]
				if p < len(ref) && ref[p] == probe {
					end = p + 1
				}
				var wantDesc []ZItem
				for k := end - 1; k >= 0 && len(wantDesc) < 60; k-- {
					wantDesc = append(wantDesc, ref[k])
				}
				if !slices.Equal(desc, wantDesc) {
					t.Fatalf("Descend(%v): got %d items, want %d", probe, len(desc), len(wantDesc))
				}
			}
			if step%997 == 0 {
				if err := ztCheck(tr, ref); err != nil {
					t.Fatalf("seed %d step %d: %v", seed, step, err)
				}
			}
		}
		if err := ztCheck(tr, ref); err != nil {
			t.Fatalf("seed %d end: %v", seed, err)
		}
		for k, s := range snaps {
			if err := ztCheck(s.t, s.ref); err != nil {
				t.Fatalf("seed %d copy %d: %v", seed, k, err)
			}
		}
		var all, rev []ZItem
		tr.Scan(func(it ZItem) bool { all = append(all, it); return true })
		tr.Reverse(func(it ZItem) bool { rev = append(rev, it); return true })
		slices.Reverse(rev)
		if !slices.Equal(all, ref) || !slices.Equal(rev, ref) {
			t.Fatalf("seed %d: Scan/Reverse differ", seed)
		}
		for len(ref) > 0 {
			if _, ok := tr.DeleteAt(0); !ok {
				t.Fatal("DeleteAt(0) on a non-empty tree")
			}
			ref = ref[1:]
		}
		if err := ztCheck(tr, ref); err != nil || tr.leaf != nil || tr.inner != nil {
			t.Fatalf("seed %d emptied: %v", seed, err)
		}
	}
}

// Ascending inserts fill leaves completely; the fill after random inserts
// stays above half.
func TestZTreeFill(t *testing.T) {
	leaves := func(tr *ztree) (n, items int) {
		var walk func(h int, in *ztInner)
		walk = func(h int, in *ztInner) {
			for k := 0; k < in.n; k++ {
				if h == 1 {
					n++
					items += len(in.leaves[k].items)
				} else {
					walk(h-1, in.inners[k])
				}
			}
		}
		walk(tr.height, tr.inner)
		return
	}
	tr := newZTree()
	for i := 0; i < 100000; i++ {
		tr.Insert(ZItem{Score: 0, Member: fmt.Sprintf("JOB%011d", i)})
	}
	if n, items := leaves(tr); items != 100000 || n != (100000+ztFan-1)/ztFan {
		t.Fatalf("ascending: %d leaves for %d items", n, items)
	}
	tr = newZTree()
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 100000; i++ {
		tr.Insert(ZItem{Score: r.Float64(), Member: "m"})
	}
	if n, items := leaves(tr); float64(items)/float64(n*ztFan) < 0.6 {
		t.Fatalf("random: %d leaves for %d items", n, items)
	}
}

// randomZTree is a tree of n items (members "0" to n-1, random scores
// below scoreMax) and the items in the tree's order.
func randomZTree(r *rand.Rand, n, scoreMax int) (*ztree, []ZItem) {
	tr := newZTree()
	ref := make([]ZItem, 0, n)
	for i := 0; i < n; i++ {
		ref = append(ref, ZItem{Score: float64(r.IntN(scoreMax)), Member: fmt.Sprint(i)})
	}
	for _, it := range ref {
		tr.Insert(it)
	}
	slices.SortFunc(ref, func(a, b ZItem) int {
		if zless(a, b) {
			return -1
		}
		return 1
	})
	return tr, ref
}

// A tree three inner levels high, emptied in random order and from both
// ends: every merge and rebalance of inner nodes runs.
func TestZTreeDeep(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	tr, ref := randomZTree(r, 120000, 1<<30)
	if tr.height < 3 {
		t.Fatalf("height %d", tr.height)
	}
	snap := tr.Copy()
	alive := make([]bool, len(ref))
	for i := range alive {
		alive[i] = true
	}
	left := len(ref)
	lo, hi := 0, len(ref)-1 // the first and last alive items
	current := func() []ZItem {
		var out []ZItem
		for i, ok := range alive {
			if ok {
				out = append(out, ref[i])
			}
		}
		return out
	}
	for step := 0; left > 0; step++ {
		for !alive[lo] {
			lo++
		}
		for !alive[hi] {
			hi--
		}
		switch step % 3 {
		case 0:
			i := lo + r.IntN(hi-lo+1)
			for !alive[i] {
				i = lo + r.IntN(hi-lo+1)
			}
			if got, ok := tr.Delete(ref[i]); !ok || got != ref[i] {
				t.Fatalf("Delete %v", ref[i])
			}
			alive[i] = false
		case 1:
			if got, ok := tr.DeleteAt(0); !ok || got != ref[lo] {
				t.Fatalf("DeleteAt(0) = %v, want %v", got, ref[lo])
			}
			alive[lo] = false
		default:
			if got, ok := tr.DeleteAt(left - 1); !ok || got != ref[hi] {
				t.Fatalf("DeleteAt(last) = %v, want %v", got, ref[hi])
			}
			alive[hi] = false
		}
		left--
		if step%10000 == 0 {
			if err := ztCheck(tr, current()); err != nil {
				t.Fatalf("step %d (%d items, height %d): %v", step, left, tr.height, err)
			}
		}
	}
	if err := ztCheck(tr, nil); err != nil {
		t.Fatal(err)
	}
	for i := range alive {
		alive[i] = true
	}
	if err := ztCheck(snap, current()); err != nil {
		t.Fatalf("the copy changed: %v", err)
	}
}

// TestZTreeDeleteFirst: removing the least items in runs of random length
// (DeleteFirst, the sweep's bulk removal from active) keeps the tree valid
// and equal to the reference, on deep trees and copied ones.
func TestZTreeDeleteFirst(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for _, n := range []int{1, 5, 41, 42, 43, 500, 3000, 60000} {
		tr, ref := randomZTree(r, n, 1<<20)
		snap := tr.Copy()
		all := slices.Clone(ref)
		for step := 0; len(ref) > 0; step++ {
			k := 1 + r.IntN(min(len(ref), []int{3, 50, 200}[step%3]))
			if step%7 == 6 {
				k = len(ref) + 5 // more than it holds: all of it
			}
			tr.DeleteFirst(k)
			ref = ref[min(k, len(ref)):]
			if step%20 == 0 || len(ref) < 100 {
				if err := ztCheck(tr, ref); err != nil {
					t.Fatalf("n %d step %d: %v", n, step, err)
				}
			}
			if len(ref) > 0 {
				if m, _ := tr.Min(); m != ref[0] {
					t.Fatalf("n %d step %d: min %v, want %v", n, step, m, ref[0])
				}
			}
		}
		if err := ztCheck(tr, nil); err != nil {
			t.Fatal(err)
		}
		if err := ztCheck(snap, all); err != nil {
			t.Fatalf("n %d: the copy changed: %v", n, err)
		}
	}
}

// Insert's path for an item after the last one (no search) builds the tree
// the searching path builds, leaf by leaf, from one leaf to four levels, with
// a copy taken half way that must not change.
func TestZTreeInsertAtEnd(t *testing.T) {
	for _, n := range []int{1, ztFan, ztFan + 1, ztFan * ztFan, ztFan*ztFan + 1, 80000} {
		fast, slow := newZTree(), newZTree()
		var ref []ZItem
		var snap *ztree
		var snapRef []ZItem
		for i := 0; i < n; i++ {
			it := ZItem{Score: float64(i / 7), Member: fmt.Sprintf("JOB%011d", i%7)}
			if i > 0 && !fast.afterLast(it) {
				t.Fatalf("n %d: item %d not after the last", n, i)
			}
			fast.Insert(it)
			slow.insert(it, false)
			ref = append(ref, it)
			if i == n/2 {
				snap, snapRef = fast.Copy(), slices.Clone(ref)
			}
		}
		if err := ztCheck(fast, ref); err != nil {
			t.Fatalf("n %d: %v", n, err)
		}
		if err := ztCheck(slow, ref); err != nil {
			t.Fatalf("n %d (searching): %v", n, err)
		}
		if fast.height != slow.height || ztLeafSizes(fast) != ztLeafSizes(slow) {
			t.Fatalf("n %d: height %d leaves %s, searching: height %d leaves %s", n, fast.height, ztLeafSizes(fast), slow.height, ztLeafSizes(slow))
		}
		if err := ztCheck(snap, snapRef); err != nil {
			t.Fatalf("n %d: the copy changed: %v", n, err)
		}
		if m, _ := fast.Max(); m != ref[n-1] {
			t.Fatalf("n %d: Max %v, want %v", n, m, ref[n-1])
		}
	}
	if _, ok := newZTree().Max(); ok {
		t.Fatal("Max of an empty tree")
	}
}

// ztLeafSizes lists the item counts of t's leaves in order.
func ztLeafSizes(t *ztree) string {
	var b []byte
	ztEachLeaf(t, func(l *ztLeaf) { b = fmt.Appendf(b, "%d,", len(l.items)) })
	return string(b)
}

// ztEachLeaf calls fn for every leaf of t, in order.
func ztEachLeaf(t *ztree, fn func(l *ztLeaf)) {
	var walk func(h int, n *ztInner, l *ztLeaf)
	walk = func(h int, n *ztInner, l *ztLeaf) {
		if h == 0 {
			fn(l)
			return
		}
		for k := 0; k < n.n; k++ {
			if h == 1 {
				walk(0, nil, n.leaves[k])
			} else {
				walk(h-1, n.inners[k], nil)
			}
		}
	}
	walk(t.height, t.inner, t.leaf)
}
