package store

import (
	"math"
	"unsafe"
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

// ZSet is a sorted set: a counted B+tree ordered by (score, member)
// (ztree.go) plus a member index for O(1) score look-ups.
type ZSet struct {
	tree *ztree
	dict map[string]float64
	// big: Valkey would hold it as a skiplist (encoding.go); lim are the
	// store's thresholds (nil: the defaults).
	big bool
	lim *Limits
}

// Copy returns a copy of z (COPY) with the same encoding; the tree is
// copied on write, the member index in O(n).
func (z *ZSet) Copy() *ZSet {
	d := make(map[string]float64, len(z.dict))
	for m, s := range z.dict {
		d[m] = s
	}
	return &ZSet{tree: z.tree.Copy(), dict: d, big: z.big, lim: z.lim}
}

// NewZSet returns an empty sorted set.
func NewZSet() *ZSet {
	return &ZSet{tree: newZTree(), dict: make(map[string]float64)}
}

// Len is the number of members (ZCARD).
func (z *ZSet) Len() int { return len(z.dict) }

// Score returns member's score and whether it is a member.
func (z *ZSet) Score(member string) (float64, bool) {
	s, ok := z.dict[member]
	return s, ok
}

// Add sets member's score (a -0 score is stored as 0, docs/compat.md §3.2) and reports
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
	z.tree.Insert(ZItem{score, member})
	if !ok {
		z.noteAdd(member)
	}
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
// O(log n).
func (z *ZSet) Rank(member string) int {
	s, ok := z.dict[member]
	if !ok {
		return -1
	}
	return z.CountLess(ZItem{s, member})
}

// CountLess is the number of members ordered strictly before it.
func (z *ZSet) CountLess(it ZItem) int { return z.tree.CountLess(it) }

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

// ---- Helpers for the sorted set commands (zset_cmds.go). Member arguments
// arrive as []byte; the *Bytes methods look them up without copying and
// copy only a member that is stored for the first time.

// zview is b seen as a string without a copy. It must not be stored.
func zview(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// ScoreBytes is Score for a member given as bytes.
func (z *ZSet) ScoreBytes(member []byte) (float64, bool) {
	s, ok := z.dict[string(member)]
	return s, ok
}

// AddBytes is Add for a member given as bytes: it sets member's score
// (-0 stored as 0) and reports whether the member is new.
func (z *ZSet) AddBytes(member []byte, score float64) bool {
	if score == 0 {
		score = 0
	}
	view := zview(member)
	if old, ok := z.dict[view]; ok {
		if old == score {
			return false
		}
		prev, _ := z.tree.Delete(ZItem{old, view})
		z.dict[prev.Member] = score
		z.tree.Insert(ZItem{score, prev.Member})
		return false
	}
	m := string(member)
	z.dict[m] = score
	z.tree.Insert(ZItem{score, m})
	z.noteAdd(m)
	return true
}

// RemBytes is Rem for a member given as bytes.
func (z *ZSet) RemBytes(member []byte) bool {
	view := zview(member)
	old, ok := z.dict[view]
	if !ok {
		return false
	}
	z.tree.Delete(ZItem{old, view})
	delete(z.dict, view)
	return true
}

// RankBytes is Rank for a member given as bytes, also returning its score;
// rank is -1 when member is absent.
func (z *ZSet) RankBytes(member []byte) (rank int, score float64) {
	s, ok := z.dict[string(member)]
	if !ok {
		return -1, 0
	}
	return z.CountLess(ZItem{s, zview(member)}), s
}

// PopMin removes and returns the lowest member.
func (z *ZSet) PopMin() (ZItem, bool) {
	it, ok := z.tree.DeleteAt(0)
	if ok {
		delete(z.dict, it.Member)
	}
	return it, ok
}

// PopMax removes and returns the highest member.
func (z *ZSet) PopMax() (ZItem, bool) {
	it, ok := z.tree.DeleteAt(z.tree.Len() - 1)
	if ok {
		delete(z.dict, it.Member)
	}
	return it, ok
}

// DeleteRankRange removes the members of ascending ranks [lo, hi) and
// returns how many it removed. O((hi-lo) log n).
func (z *ZSet) DeleteRankRange(lo, hi int) int {
	if lo < 0 {
		lo = 0
	}
	if hi > z.tree.Len() {
		hi = z.tree.Len()
	}
	n := 0
	for i := lo; i < hi; i++ {
		it, ok := z.tree.DeleteAt(lo)
		if !ok {
			break
		}
		delete(z.dict, it.Member)
		n++
	}
	return n
}

// CountScoreBelow is the number of members whose score is < s, or <= s
// when orEqual: the rank of the first member at or after a score bound.
func (z *ZSet) CountScoreBelow(s float64, orEqual bool) int {
	if orEqual {
		if s == PosInf {
			return z.tree.Len()
		}
		s = math.Nextafter(s, PosInf)
	}
	// "" is the least member, so no member of score s orders before it.
	return z.CountLess(ZItem{s, ""})
}

// SameScore reports whether every member has the same score (the
// precondition of the lex range commands).
func (z *ZSet) SameScore() bool {
	lo, ok := z.tree.Min()
	if !ok {
		return true
	}
	hi, _ := z.tree.Max()
	return lo.Score == hi.Score
}
