package store

import "sync/atomic"

// ztree is the ordered half of a big sorted set: a counted B+tree of ZItems
// in zless order (score, then member bytes). Items live in leaves of up to
// ztFan items; inner nodes hold their children, each child's item count
// (rank queries in O(log n)) and a separator per child after the first (the
// lowest item that child held when it was split off: every item of child k
// orders at or after seps[k-1] and before seps[k]).
//
// Why not a general B-tree library (tidwall/btree, which this replaced):
// memory. A library tree splits a full node in half, so items inserted in
// ascending order (job ids into pending, lease deadlines into active: the
// common case here) leave every node half full, and its node item slices
// keep their grown capacity: 52 bytes per member for 24-byte items. This
// tree fills a leaf completely when an item goes to the very end of the
// last leaf (or the very start of the first one) and splits in half
// otherwise, and its leaves are fixed arrays sized to an allocator size
// class: 24 to 35 bytes per member (BenchmarkZSetMemory).
//
// Copy is O(1): both trees then share every node and each copies a node
// before its first write to it (copy on write, the owner field), which the
// AOF rewrite uses to write a big set out without the store lock.

// ztFan is the items per leaf and children per inner node: 42 items of 24
// bytes fill the allocator's 1024-byte size class.
const ztFan = 42

// ztMin is the fill below which a node after a deletion merges with, or
// borrows from, a neighbour.
const ztMin = ztFan / 4

// ztLeaf holds up to ztFan items. A full-size leaf has capacity ztFan
// (1008 bytes of items: the allocator's 1024-byte class); the only leaf of
// a small tree grows from a few items.
type ztLeaf struct {
	owner uint64
	items []ZItem
}

type ztInner struct {
	owner  uint64
	n      int // children
	sizes  [ztFan]int
	seps   [ztFan - 1]ZItem
	leaves [ztFan]*ztLeaf  // children at height 1
	inners [ztFan]*ztInner // children above
}

type ztree struct {
	id     uint64
	height int // 0: the root is a leaf
	leaf   *ztLeaf
	inner  *ztInner
	count  int
	// dictPeak is the most members the set's member map held since it was
	// built (shrink.go).
	dictPeak int
}

var ztIDs atomic.Uint64

func newZTree() *ztree { return &ztree{id: ztIDs.Add(1)} }

// Len is the number of items.
func (t *ztree) Len() int { return t.count }

// Copy returns a tree with the same items in O(1); t and the copy then
// copy shared nodes on their first write.
func (t *ztree) Copy() *ztree {
	c := *t
	c.id = ztIDs.Add(1)
	t.id = ztIDs.Add(1)
	return &c
}

func (t *ztree) ownLeaf(p **ztLeaf) *ztLeaf {
	if (*p).owner != t.id {
		old := *p
		*p = &ztLeaf{owner: t.id, items: append(make([]ZItem, 0, cap(old.items)), old.items...)}
	}
	return *p
}

func (t *ztree) ownInner(p **ztInner) *ztInner {
	if (*p).owner != t.id {
		c := **p
		c.owner = t.id
		*p = &c
	}
	return *p
}

// leafPos is the index of the first item of l not ordered before it.
func leafPos(l *ztLeaf, it ZItem) int {
	lo, hi := 0, len(l.items)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if zless(l.items[m], it) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// childFor is the child of n whose range holds it: the number of
// separators at or before it.
func childFor(n *ztInner, it ZItem) int {
	lo, hi := 0, n.n-1
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if !zless(it, n.seps[m]) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

func (n *ztInner) total() int {
	s := 0
	for i := 0; i < n.n; i++ {
		s += n.sizes[i]
	}
	return s
}

// ---- insertion

// Insert adds it, which must not be in the tree. An item ordered after
// the last one (ascending inserts: job ids into pending, deadlines into
// active, deaths into dead) goes down the rightmost path with no compares
// but the one against the last item (bench/README.md, "The stall sweep,
// round 5").
func (t *ztree) Insert(it ZItem) {
	t.insert(it, t.afterLast(it))
}

// last is the last item of a tree that is not empty, by the rightmost
// path; false when that path ends in an empty leaf (a deletion can leave
// one behind a single-child node, fixLeaf), where the last item is
// elsewhere and an item after it need not belong to the last leaf.
func (t *ztree) last() (ZItem, bool) {
	h, n, l := t.height, t.inner, t.leaf
	for ; h > 0; h-- {
		if h == 1 {
			l = n.leaves[n.n-1]
		} else {
			n = n.inners[n.n-1]
		}
	}
	if l == nil || len(l.items) == 0 {
		return ZItem{}, false
	}
	return l.items[len(l.items)-1], true
}

// afterLast reports whether it orders after every item and the rightmost
// path may take it without a search (insert's atEnd).
func (t *ztree) afterLast(it ZItem) bool {
	if t.count == 0 {
		return false
	}
	m, ok := t.last()
	return ok && zless(m, it)
}

// insert is Insert; atEnd says it orders after every item, so each level
// takes its last child and the leaf its end without a search.
func (t *ztree) insert(it ZItem, atEnd bool) {
	t.count++
	if t.height == 0 {
		if t.leaf == nil {
			t.leaf = &ztLeaf{owner: t.id}
		}
		l := t.ownLeaf(&t.leaf)
		right, sep := t.leafInsert(l, it, true, true, atEnd)
		if right == nil {
			return
		}
		root := &ztInner{owner: t.id, n: 2}
		root.leaves[0], root.leaves[1] = l, right
		root.sizes[0], root.sizes[1] = len(l.items), len(right.items)
		root.seps[0] = sep
		t.leaf, t.inner, t.height = nil, root, 1
		return
	}
	n := t.ownInner(&t.inner)
	right, sep := t.innerInsert(n, t.height, it, true, true, atEnd)
	if right == nil {
		return
	}
	root := &ztInner{owner: t.id, n: 2}
	root.inners[0], root.inners[1] = n, right
	root.sizes[0], root.sizes[1] = n.total(), right.total()
	root.seps[0] = sep
	t.inner = root
	t.height++
}

// leafInsert inserts it into l (owned). When l is full it splits: it
// returns the new right sibling and its separator. first/last tell whether
// l is the first/last leaf of the tree (the fill rule of the split).
func (t *ztree) leafInsert(l *ztLeaf, it ZItem, first, last, atEnd bool) (*ztLeaf, ZItem) {
	pos := len(l.items)
	if !atEnd {
		pos = leafPos(l, it)
	}
	n := len(l.items)
	if n < ztFan {
		if n == cap(l.items) {
			l.items = append(make([]ZItem, 0, min(ztFan, max(4, 2*n))), l.items...)
		}
		l.items = l.items[:n+1]
		copy(l.items[pos+1:], l.items[pos:n])
		l.items[pos] = it
		return nil, ZItem{}
	}
	var all [ztFan + 1]ZItem
	copy(all[:pos], l.items[:pos])
	all[pos] = it
	copy(all[pos+1:], l.items[pos:])
	m := (ztFan + 1) / 2
	switch {
	case last && pos > ztFan/2:
		// Ascending inserts, some a few places out of order (a queue's
		// producers): keep this leaf full, the new last one takes the
		// greatest item. A leaf split in half here would stay half full:
		// only later stragglers land in its range.
		m = ztFan
	case first && pos < ztFan/2:
		m = 1 // descending inserts: keep the new leaf full
	}
	right := &ztLeaf{owner: t.id, items: make([]ZItem, ztFan+1-m, ztFan)}
	copy(right.items, all[m:])
	copy(l.items, all[:m])
	clear(l.items[m:])
	l.items = l.items[:m]
	return right, right.items[0]
}

// innerInsert inserts it below n (owned, at height h >= 1).
func (t *ztree) innerInsert(n *ztInner, h int, it ZItem, first, last, atEnd bool) (*ztInner, ZItem) {
	i := n.n - 1
	if !atEnd {
		i = childFor(n, it)
	}
	first, last = first && i == 0, last && i == n.n-1
	var newRight any
	var sep ZItem
	if h == 1 {
		l := t.ownLeaf(&n.leaves[i])
		if len(l.items) == ztFan && t.leafShift(n, i, l, it, atEnd) {
			return nil, ZItem{}
		}
		r, s := t.leafInsert(l, it, first, last, atEnd)
		n.sizes[i] = len(l.items)
		if r == nil {
			return nil, ZItem{}
		}
		newRight, sep = r, s
	} else {
		c := t.ownInner(&n.inners[i])
		r, s := t.innerInsert(c, h-1, it, first, last, atEnd)
		if r == nil {
			n.sizes[i]++
			return nil, ZItem{}
		}
		n.sizes[i] = c.total()
		newRight, sep = r, s
	}
	return t.innerAdd(n, h, i+1, newRight, sep, last)
}

// leafShift inserts it into l, the full leaf child i of n (owned), by
// moving one item to a neighbour leaf with room instead of splitting l:
// the greatest to the front of the next leaf, else the least to the end of
// the previous one; false when neither has room (n is unchanged). A queue's
// pending set needs it: a straggler among ascending job ids that belongs
// to the full leaf before the last would otherwise split it in half, for
// good (TestZTreeQueueTurnoverKeepsLeavesFull).
func (t *ztree) leafShift(n *ztInner, i int, l *ztLeaf, it ZItem, atEnd bool) bool {
	pos := ztFan
	if !atEnd {
		pos = leafPos(l, it)
	}
	switch {
	case i+1 < n.n && len(n.leaves[i+1].items) < ztFan:
		out := it
		if pos < ztFan {
			out = l.items[ztFan-1]
			copy(l.items[pos+1:], l.items[pos:ztFan-1])
			l.items[pos] = it
		}
		r := t.ownLeaf(&n.leaves[i+1])
		leafRoom(r)
		r.items = r.items[:len(r.items)+1]
		copy(r.items[1:], r.items)
		r.items[0] = out
		n.sizes[i+1]++
		n.seps[i] = out
	case i > 0 && len(n.leaves[i-1].items) < ztFan:
		out := it
		if pos > 0 {
			out = l.items[0]
			copy(l.items[:pos-1], l.items[1:pos])
			l.items[pos-1] = it
		}
		p := t.ownLeaf(&n.leaves[i-1])
		leafRoom(p)
		p.items = append(p.items, out)
		n.sizes[i-1]++
		n.seps[i-1] = l.items[0]
	default:
		return false
	}
	return true
}

// leafRoom gives l, which holds fewer than ztFan items, the capacity for
// one more.
func leafRoom(l *ztLeaf) {
	if n := len(l.items); n == cap(l.items) {
		l.items = append(make([]ZItem, 0, min(ztFan, max(4, 2*n))), l.items...)
	}
}

// innerAdd puts child c (a *ztLeaf at height 1, else a *ztInner) with
// separator sep at index j of n, splitting n when it is full.
func (t *ztree) innerAdd(n *ztInner, h, j int, c any, sep ZItem, last bool) (*ztInner, ZItem) {
	size := 0
	switch c := c.(type) {
	case *ztLeaf:
		size = len(c.items)
	case *ztInner:
		size = c.total()
	}
	if n.n < ztFan {
		copy(n.sizes[j+1:n.n+1], n.sizes[j:n.n])
		copy(n.seps[j:n.n], n.seps[j-1:n.n-1])
		n.sizes[j] = size
		n.seps[j-1] = sep
		if h == 1 {
			copy(n.leaves[j+1:n.n+1], n.leaves[j:n.n])
			n.leaves[j] = c.(*ztLeaf)
		} else {
			copy(n.inners[j+1:n.n+1], n.inners[j:n.n])
			n.inners[j] = c.(*ztInner)
		}
		n.n++
		return nil, ZItem{}
	}
	// Full: lay the ztFan+1 children out, then split them.
	var sizes [ztFan + 1]int
	var seps [ztFan]ZItem
	var leaves [ztFan + 1]*ztLeaf
	var inners [ztFan + 1]*ztInner
	copy(sizes[:j], n.sizes[:j])
	sizes[j] = size
	copy(sizes[j+1:], n.sizes[j:n.n])
	copy(seps[:j-1], n.seps[:j-1])
	seps[j-1] = sep
	copy(seps[j:], n.seps[j-1:n.n-1])
	if h == 1 {
		copy(leaves[:j], n.leaves[:j])
		leaves[j] = c.(*ztLeaf)
		copy(leaves[j+1:], n.leaves[j:n.n])
	} else {
		copy(inners[:j], n.inners[:j])
		inners[j] = c.(*ztInner)
		copy(inners[j+1:], n.inners[j:n.n])
	}
	m := (ztFan + 1) / 2
	if last && j == ztFan {
		m = ztFan
	}
	right := &ztInner{owner: t.id, n: ztFan + 1 - m}
	copy(right.sizes[:], sizes[m:])
	copy(right.seps[:], seps[m:])
	up := seps[m-1]
	*n = ztInner{owner: t.id, n: m}
	copy(n.sizes[:], sizes[:m])
	copy(n.seps[:], seps[:m-1])
	if h == 1 {
		copy(right.leaves[:], leaves[m:])
		copy(n.leaves[:], leaves[:m])
	} else {
		copy(right.inners[:], inners[m:])
		copy(n.inners[:], inners[:m])
	}
	return right, up
}

// ---- deletion

// Delete removes the item equal to it (same score and member) and returns
// it, or false when there is none.
func (t *ztree) Delete(it ZItem) (ZItem, bool) {
	if t.count == 0 {
		return ZItem{}, false
	}
	if t.height == 0 {
		l := t.leaf
		i := leafPos(l, it)
		if i >= len(l.items) || zless(it, l.items[i]) {
			return ZItem{}, false
		}
		l = t.ownLeaf(&t.leaf)
		out := l.items[i]
		leafRemove(l, i)
		t.count--
		t.shrinkRoot()
		return out, true
	}
	if !t.contains(it) {
		return ZItem{}, false
	}
	n := t.ownInner(&t.inner)
	out := t.innerDelete(n, t.height, func(n *ztInner) int { return childFor(n, it) },
		func(l *ztLeaf) int { return leafPos(l, it) })
	t.count--
	t.shrinkRoot()
	return out, true
}

// contains reports whether an item equal to it is in the tree (no copy).
func (t *ztree) contains(it ZItem) bool {
	h := t.height
	n := t.inner
	l := t.leaf
	for h > 0 {
		i := childFor(n, it)
		if h == 1 {
			l = n.leaves[i]
		} else {
			n = n.inners[i]
		}
		h--
	}
	i := leafPos(l, it)
	return i < len(l.items) && !zless(it, l.items[i])
}

// DeleteAt removes and returns the item of rank i (0-based, ascending).
func (t *ztree) DeleteAt(i int) (ZItem, bool) {
	if i < 0 || i >= t.count {
		return ZItem{}, false
	}
	var out ZItem
	if t.height == 0 {
		l := t.ownLeaf(&t.leaf)
		out = l.items[i]
		leafRemove(l, i)
	} else {
		rank := i
		n := t.ownInner(&t.inner)
		out = t.innerDelete(n, t.height, func(n *ztInner) int {
			k := 0
			for rank >= n.sizes[k] {
				rank -= n.sizes[k]
				k++
			}
			return k
		}, func(*ztLeaf) int { return rank })
	}
	t.count--
	t.shrinkRoot()
	return out, true
}

// DeleteFirst removes the k least items (k <= Len): a leaf's worth at a
// time, each leaf's remaining items shifted once (k calls of DeleteAt(0)
// shift the leaf once per item and walk down once per item).
func (t *ztree) DeleteFirst(k int) {
	k = min(k, t.count)
	for k > 0 {
		var m int
		if t.height == 0 {
			l := t.ownLeaf(&t.leaf)
			m = min(k, len(l.items))
			leafRemoveFirst(l, m)
		} else {
			m = t.innerDeleteFirst(t.ownInner(&t.inner), t.height, k)
		}
		t.count -= m
		k -= m
		t.shrinkRoot()
	}
}

// innerDeleteFirst removes up to k of the least items below n (owned,
// height h), all from its leftmost leaf, and returns how many; children
// left too small are merged or rebalanced as innerDelete does.
func (t *ztree) innerDeleteFirst(n *ztInner, h, k int) int {
	if h == 1 {
		l := t.ownLeaf(&n.leaves[0])
		m := min(k, len(l.items))
		leafRemoveFirst(l, m)
		n.sizes[0] = len(l.items)
		if len(l.items) < ztMin {
			t.fixLeaf(n, 0)
		}
		return m
	}
	c := t.ownInner(&n.inners[0])
	m := t.innerDeleteFirst(c, h-1, k)
	n.sizes[0] -= m
	if c.n < ztMin {
		t.fixInner(n, 0, h-1)
	}
	return m
}

// leafRemoveFirst drops the first m items of l.
func leafRemoveFirst(l *ztLeaf, m int) {
	n := len(l.items)
	copy(l.items, l.items[m:])
	clear(l.items[n-m:])
	l.items = l.items[:n-m]
}

func leafRemove(l *ztLeaf, i int) {
	n := len(l.items)
	copy(l.items[i:], l.items[i+1:])
	l.items[n-1] = ZItem{}
	l.items = l.items[:n-1]
}

// innerDelete removes an item below n (owned, height h): pick chooses the
// child at each inner node and slot the index in the leaf; the item is
// known to exist. Children left too small are merged or rebalanced.
func (t *ztree) innerDelete(n *ztInner, h int, pick func(*ztInner) int, slot func(*ztLeaf) int) ZItem {
	i := pick(n)
	var out ZItem
	if h == 1 {
		l := t.ownLeaf(&n.leaves[i])
		j := slot(l)
		out = l.items[j]
		leafRemove(l, j)
		n.sizes[i] = len(l.items)
		if len(l.items) < ztMin {
			t.fixLeaf(n, i)
		}
		return out
	}
	c := t.ownInner(&n.inners[i])
	out = t.innerDelete(c, h-1, pick, slot)
	n.sizes[i]--
	if c.n < ztMin {
		t.fixInner(n, i, h-1)
	}
	return out
}

// removeChild drops child i of n (at height h, whose separator sep[i-1],
// or sep[0] when i == 0, goes with it).
func removeChild(n *ztInner, i, h int) {
	copy(n.sizes[i:n.n-1], n.sizes[i+1:n.n])
	if i > 0 {
		copy(n.seps[i-1:n.n-2], n.seps[i:n.n-1])
	} else if n.n > 1 {
		copy(n.seps[0:n.n-2], n.seps[1:n.n-1])
	}
	if h == 1 {
		copy(n.leaves[i:n.n-1], n.leaves[i+1:n.n])
		n.leaves[n.n-1] = nil
	} else {
		copy(n.inners[i:n.n-1], n.inners[i+1:n.n])
		n.inners[n.n-1] = nil
	}
	n.n--
	n.sizes[n.n] = 0
	if n.n > 0 {
		n.seps[n.n-1] = ZItem{}
	}
}

// fixLeaf merges leaf child i of n with a neighbour, or evens their items
// out when both do not fit in one leaf.
func (t *ztree) fixLeaf(n *ztInner, i int) {
	if n.n < 2 {
		return
	}
	a, b := i-1, i // merge b into a
	if i == 0 {
		a, b = 0, 1
	}
	la, lb := t.ownLeaf(&n.leaves[a]), t.ownLeaf(&n.leaves[b])
	na, nb := len(la.items), len(lb.items)
	if na+nb <= ztFan {
		if cap(la.items) < na+nb {
			la.items = append(make([]ZItem, 0, ztFan), la.items...)
		}
		la.items = append(la.items, lb.items...)
		n.sizes[a] = len(la.items)
		removeChild(n, b, 1)
		return
	}
	// Even out: move items across so both hold about half (both are
	// full-size leaves: together they hold more than ztFan).
	want := (na + nb) / 2
	if na < want {
		k := want - na
		la.items = append(la.items, lb.items[:k]...)
		copy(lb.items, lb.items[k:])
		clear(lb.items[nb-k:])
		lb.items = lb.items[:nb-k]
	} else {
		k := na - want
		lb.items = lb.items[:nb+k]
		copy(lb.items[k:], lb.items[:nb])
		copy(lb.items[:k], la.items[na-k:])
		clear(la.items[na-k:])
		la.items = la.items[:na-k]
	}
	n.sizes[a], n.sizes[b] = len(la.items), len(lb.items)
	n.seps[a] = lb.items[0]
}

// fixInner is fixLeaf for inner children at height ch.
func (t *ztree) fixInner(n *ztInner, i, ch int) {
	if n.n < 2 {
		return
	}
	a, b := i-1, i
	if i == 0 {
		a, b = 0, 1
	}
	na, nb := t.ownInner(&n.inners[a]), t.ownInner(&n.inners[b])
	mid := n.seps[a] // lower bound of nb's items
	if na.n+nb.n <= ztFan {
		na.seps[na.n-1] = mid
		copy(na.seps[na.n:], nb.seps[:nb.n-1])
		copy(na.sizes[na.n:], nb.sizes[:nb.n])
		if ch == 1 {
			copy(na.leaves[na.n:], nb.leaves[:nb.n])
		} else {
			copy(na.inners[na.n:], nb.inners[:nb.n])
		}
		na.n += nb.n
		n.sizes[a] += n.sizes[b]
		removeChild(n, b, 2)
		return
	}
	total := na.n + nb.n
	want := total / 2
	if na.n < want {
		// Move the first k children of nb to the end of na.
		k := want - na.n
		na.seps[na.n-1] = mid
		copy(na.seps[na.n:], nb.seps[:k-1])
		copy(na.sizes[na.n:], nb.sizes[:k])
		moved := 0
		for _, s := range nb.sizes[:k] {
			moved += s
		}
		newMid := nb.seps[k-1]
		if ch == 1 {
			copy(na.leaves[na.n:], nb.leaves[:k])
			copy(nb.leaves[:], nb.leaves[k:nb.n])
			clear(nb.leaves[nb.n-k : nb.n])
		} else {
			copy(na.inners[na.n:], nb.inners[:k])
			copy(nb.inners[:], nb.inners[k:nb.n])
			clear(nb.inners[nb.n-k : nb.n])
		}
		copy(nb.seps[:], nb.seps[k:nb.n-1])
		clear(nb.seps[nb.n-1-k : nb.n-1])
		copy(nb.sizes[:], nb.sizes[k:nb.n])
		clear(nb.sizes[nb.n-k : nb.n])
		na.n += k
		nb.n -= k
		n.sizes[a] += moved
		n.sizes[b] -= moved
		n.seps[a] = newMid
	} else {
		// Move the last k children of na to the front of nb.
		k := na.n - want
		moved := 0
		for _, s := range na.sizes[na.n-k : na.n] {
			moved += s
		}
		newMid := na.seps[na.n-k-1]
		copy(nb.seps[k:], nb.seps[:nb.n-1])
		nb.seps[k-1] = mid
		copy(nb.seps[:k-1], na.seps[na.n-k:na.n-1])
		copy(nb.sizes[k:], nb.sizes[:nb.n])
		copy(nb.sizes[:k], na.sizes[na.n-k:na.n])
		if ch == 1 {
			copy(nb.leaves[k:], nb.leaves[:nb.n])
			copy(nb.leaves[:k], na.leaves[na.n-k:na.n])
			clear(na.leaves[na.n-k : na.n])
		} else {
			copy(nb.inners[k:], nb.inners[:nb.n])
			copy(nb.inners[:k], na.inners[na.n-k:na.n])
			clear(na.inners[na.n-k : na.n])
		}
		clear(na.seps[na.n-k-1 : na.n-1])
		clear(na.sizes[na.n-k : na.n])
		na.n -= k
		nb.n += k
		n.sizes[a] -= moved
		n.sizes[b] += moved
		n.seps[a] = newMid
	}
}

// shrinkRoot lowers the tree while the root has one child, and empties it
// when the last item went.
func (t *ztree) shrinkRoot() {
	for t.height > 0 && t.inner.n == 1 {
		if t.height == 1 {
			t.leaf, t.inner = t.inner.leaves[0], nil
		} else {
			t.inner = t.inner.inners[0]
		}
		t.height--
	}
	if t.count == 0 {
		t.leaf, t.inner, t.height = nil, nil, 0
	}
}

// ---- reads

// GetAt returns the item of rank i (0-based, ascending).
func (t *ztree) GetAt(i int) (ZItem, bool) {
	if i < 0 || i >= t.count {
		return ZItem{}, false
	}
	h, n, l := t.height, t.inner, t.leaf
	for h > 0 {
		k := 0
		for i >= n.sizes[k] {
			i -= n.sizes[k]
			k++
		}
		if h == 1 {
			l = n.leaves[k]
		} else {
			n = n.inners[k]
		}
		h--
	}
	return l.items[i], true
}

// CountLess is the number of items ordered before it. O(log n).
func (t *ztree) CountLess(it ZItem) int {
	if t.count == 0 {
		return 0
	}
	rank := 0
	h, n, l := t.height, t.inner, t.leaf
	for h > 0 {
		k := childFor(n, it)
		for j := 0; j < k; j++ {
			rank += n.sizes[j]
		}
		if h == 1 {
			l = n.leaves[k]
		} else {
			n = n.inners[k]
		}
		h--
	}
	return rank + leafPos(l, it)
}

// Min and Max are the first and last items.
func (t *ztree) Min() (ZItem, bool) { return t.GetAt(0) }
func (t *ztree) Max() (ZItem, bool) {
	if m, ok := t.last(); ok && t.count > 0 {
		return m, true
	}
	return t.GetAt(t.count - 1)
}

// ztCursor walks the leaves in order; path holds the inner nodes from the
// root and the child index taken in each.
type ztCursor struct {
	t    *ztree
	path [12]struct {
		n *ztInner
		i int
	}
	depth int
	leaf  *ztLeaf
	pos   int
}

// seek positions c at the first item not ordered before it (pos may equal
// leaf.n: past the end of that leaf).
func (c *ztCursor) seek(it ZItem) {
	t := c.t
	h, n, l := t.height, t.inner, t.leaf
	c.depth = 0
	for h > 0 {
		k := childFor(n, it)
		c.path[c.depth].n, c.path[c.depth].i = n, k
		c.depth++
		if h == 1 {
			l = n.leaves[k]
		} else {
			n = n.inners[k]
		}
		h--
	}
	c.leaf, c.pos = l, leafPos(l, it)
}

// seekEnd positions c past the last item (pos = leaf.n of the last leaf).
func (c *ztCursor) seekEnd() {
	t := c.t
	h, n, l := t.height, t.inner, t.leaf
	c.depth = 0
	for h > 0 {
		k := n.n - 1
		c.path[c.depth].n, c.path[c.depth].i = n, k
		c.depth++
		if h == 1 {
			l = n.leaves[k]
		} else {
			n = n.inners[k]
		}
		h--
	}
	c.leaf, c.pos = l, len(l.items)
}

// nextLeaf moves to the first item of the following leaf; false at the end.
func (c *ztCursor) nextLeaf() bool {
	d := c.depth - 1
	for d >= 0 && c.path[d].i+1 >= c.path[d].n.n {
		d--
	}
	if d < 0 {
		return false
	}
	c.path[d].i++
	c.descend(d, false)
	c.pos = 0
	return true
}

// prevLeaf moves to the last item of the preceding leaf; false at the start.
func (c *ztCursor) prevLeaf() bool {
	d := c.depth - 1
	for d >= 0 && c.path[d].i == 0 {
		d--
	}
	if d < 0 {
		return false
	}
	c.path[d].i--
	c.descend(d, true)
	c.pos = len(c.leaf.items) - 1
	return true
}

// descend follows path[d]'s child down to a leaf, taking the first (or,
// when toLast, the last) child below d.
func (c *ztCursor) descend(d int, toLast bool) {
	h := c.t.height - d
	n := c.path[d].n
	k := c.path[d].i
	for {
		if h == 1 {
			c.leaf = n.leaves[k]
			return
		}
		n = n.inners[k]
		d++
		h--
		k = 0
		if toLast {
			k = n.n - 1
		}
		c.path[d].n, c.path[d].i = n, k
	}
}

// Ascend calls fn for the items from the first one not ordered before
// pivot, ascending, until fn returns false.
func (t *ztree) Ascend(pivot ZItem, fn func(ZItem) bool) {
	if t.count == 0 {
		return
	}
	c := ztCursor{t: t}
	c.seek(pivot)
	t.ascendFrom(&c, fn)
}

// Scan calls fn for every item ascending until fn returns false.
func (t *ztree) Scan(fn func(ZItem) bool) {
	if t.count == 0 {
		return
	}
	c := ztCursor{t: t}
	c.seek(ZItem{Score: NegInf})
	t.ascendFrom(&c, fn)
}

func (t *ztree) ascendFrom(c *ztCursor, fn func(ZItem) bool) {
	for {
		for ; c.pos < len(c.leaf.items); c.pos++ {
			if !fn(c.leaf.items[c.pos]) {
				return
			}
		}
		if !c.nextLeaf() {
			return
		}
	}
}

// Descend calls fn for the items from the last one not ordered after
// pivot, descending, until fn returns false.
func (t *ztree) Descend(pivot ZItem, fn func(ZItem) bool) {
	if t.count == 0 {
		return
	}
	c := ztCursor{t: t}
	c.seek(pivot)
	// c is at the first item >= pivot: start there if it equals pivot,
	// else just before it.
	if c.pos == len(c.leaf.items) || zless(pivot, c.leaf.items[c.pos]) {
		c.pos-- // not equal to pivot: start just before it
	}
	t.descendFrom(&c, fn)
}

// Reverse calls fn for every item descending until fn returns false.
func (t *ztree) Reverse(fn func(ZItem) bool) {
	if t.count == 0 {
		return
	}
	c := ztCursor{t: t}
	c.seekEnd()
	c.pos--
	t.descendFrom(&c, fn)
}

func (t *ztree) descendFrom(c *ztCursor, fn func(ZItem) bool) {
	for {
		if c.pos < 0 {
			if !c.prevLeaf() {
				return
			}
			continue
		}
		for ; c.pos >= 0; c.pos-- {
			if !fn(c.leaf.items[c.pos]) {
				return
			}
		}
	}
}
