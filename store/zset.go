package store

import (
	"math"

	"github.com/tidwall/btree"
)

// ZItem is one member of a sorted set with its score.
type ZItem struct {
	Score  float64
	Member string
}

// zless orders by score, then by member bytes (memcmp, shorter prefix
// first), as Valkey's skiplist does.
func zless(a, b ZItem) bool {
	if a.Score != b.Score {
		return a.Score < b.Score
	}
	return a.Member < b.Member
}

// ZSet is a sorted set: a counted B-tree ordered by (score, member) plus a
// member index for O(1) score look-ups.
type ZSet struct {
	tree *btree.BTreeG[ZItem]
	dict map[string]float64
}

// NewZSet returns an empty sorted set.
func NewZSet() *ZSet {
	return &ZSet{
		tree: btree.NewBTreeGOptions(zless, btree.Options{NoLocks: true}),
		dict: make(map[string]float64),
	}
}

// Len is the number of members (ZCARD).
func (z *ZSet) Len() int { return len(z.dict) }

// Score returns member's score and whether it is a member.
func (z *ZSet) Score(member string) (float64, bool) {
	s, ok := z.dict[member]
	return s, ok
}

// Add sets member's score (a -0 score is stored as 0, compat.md) and reports
// whether the member is new.
func (z *ZSet) Add(member string, score float64) bool {
	if score == 0 {
		score = 0 // drop the sign of -0
	}
	old, ok := z.dict[member]
	if ok {
		if old == score {
			return false
		}
		z.tree.Delete(ZItem{old, member})
	}
	z.dict[member] = score
	z.tree.Set(ZItem{score, member})
	return !ok
}

// Rem removes member and reports whether it was one.
func (z *ZSet) Rem(member string) bool {
	old, ok := z.dict[member]
	if !ok {
		return false
	}
	delete(z.dict, member)
	z.tree.Delete(ZItem{old, member})
	return true
}

// At returns the member at 0-based rank i in ascending order.
func (z *ZSet) At(i int) (ZItem, bool) { return z.tree.GetAt(i) }

// Min returns the lowest member.
func (z *ZSet) Min() (ZItem, bool) { return z.tree.Min() }

// Max returns the highest member.
func (z *ZSet) Max() (ZItem, bool) { return z.tree.Max() }

// Rank returns member's 0-based ascending rank, or -1 if it is not a member.
// O(log^2 n): a binary search over the counted tree.
func (z *ZSet) Rank(member string) int {
	s, ok := z.dict[member]
	if !ok {
		return -1
	}
	return z.CountLess(ZItem{s, member})
}

// CountLess is the number of members ordered strictly before it.
func (z *ZSet) CountLess(it ZItem) int {
	lo, hi := 0, z.tree.Len()
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		x, _ := z.tree.GetAt(mid)
		if zless(x, it) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// Ascend calls fn for members from the first one not ordered before pivot,
// ascending, until fn returns false.
func (z *ZSet) Ascend(pivot ZItem, fn func(ZItem) bool) { z.tree.Ascend(pivot, fn) }

// AscendAll calls fn for every member in ascending order until it returns false.
func (z *ZSet) AscendAll(fn func(ZItem) bool) { z.tree.Scan(fn) }

// Descend calls fn for members from the last one not ordered after pivot,
// descending, until fn returns false.
func (z *ZSet) Descend(pivot ZItem, fn func(ZItem) bool) { z.tree.Descend(pivot, fn) }

// DescendAll calls fn for every member in descending order.
func (z *ZSet) DescendAll(fn func(ZItem) bool) { z.tree.Reverse(fn) }

// RangeByScore calls fn for members with min <= score <= max ascending,
// until fn returns false (the due-member selection of the verbs).
func (z *ZSet) RangeByScore(min, max float64, fn func(ZItem) bool) {
	z.tree.Ascend(ZItem{min, ""}, func(it ZItem) bool {
		if it.Score > max {
			return false
		}
		return fn(it)
	})
}

// NegInf and PosInf are the score bounds.
var (
	NegInf = math.Inf(-1)
	PosInf = math.Inf(1)
)
