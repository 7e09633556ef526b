package store

import (
	"encoding/binary"
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

// ZSet is a sorted set in one of two encodings, as Valkey's (encoding.go
// has the rules that switch them):
//
//   - listpack: members and scores in one byte slice in (score, member)
//     order (listpack.go), linear scans; for small sets;
//   - skiplist (Valkey's name; here a counted B+tree, ztree.go, ordered by
//     (score, member), plus a member index for O(1) score look-ups). While
//     every member has one score (uni) there is no member index: a member's
//     score is uni and the tree finds the member in O(log n). A queue's
//     pending set without priorities is such a set, and so saves the index's
//     slot, about 35 bytes per pending job (docs/architecture.md §2.11);
//     the first member with another score builds the index, for good.
//
// Members handed out (ZItem.Member) are the caller's own strings: a
// listpack's are copied out of it, a big set's are the set's immutable
// strings.
//
// A listpack set is edited in place (a removal from the front moves the
// header forward, one elsewhere moves the bytes after it down, an insert
// moves them up within the spare capacity) while no view of its bytes is
// outstanding: the header's viewed bit is clear (Snapshot sets it) and no
// walk is under way (walks). Otherwise it is copied, as before
// (listpack.go has the rule; TestZSetInPlaceKeepsViews).
type ZSet struct {
	lp   []byte // the listpack, while tree is nil
	tree *ztree
	dict *zdict // nil while tree holds only members scored uni
	uni  float64
	// lim are the store's thresholds (nil: the defaults, encoding.go).
	lim *Limits
	// walks counts the listpack walks under way (lpAscend, lpDescend):
	// their callback may write z while the walk still reads the old
	// bytes, so no edit is in place meanwhile.
	walks int32
	// lpTail is the offset of the listpack's last entry while its members
	// are known to ascend in member order too (0: not known). A queue's
	// sets are built so (pending by minted id at one score, active by
	// deadline as the ids are claimed), and a member that orders after the
	// tail in both score and member bytes is then new and goes at the end:
	// Add needs no scan of the set for it (lpAfterTail). Kept by lpInsert
	// and lpRemove, the only writers of a listpack's entries; it fits in
	// the struct's padding (64 bytes either way).
	lpTail int32
}

// NewZSet returns an empty sorted set (listpack encoding).
func NewZSet() *ZSet { return &ZSet{} }

// Big reports whether z uses the skiplist encoding (OBJECT ENCODING).
func (z *ZSet) Big() bool { return z.tree != nil }

// Len is the number of members (ZCARD).
func (z *ZSet) Len() int {
	if z.tree != nil {
		if z.dict == nil {
			return z.tree.Len()
		}
		return z.dict.len()
	}
	return lpCount(z.lp)
}

// lpEntry reads the listpack entry at off: member bytes (a view), score and
// the offset of the next entry.
func (z *ZSet) lpEntry(off int) ([]byte, float64, int) {
	m, s := lpStr(z.lp, off)
	return m, lpScore(z.lp, s), s + 8
}

// lpFind locates member in the listpack: its entry's offsets and score.
func (z *ZSet) lpFind(member string) (off, end int, score float64, ok bool) {
	off, end, score, ok, _ = z.lpFindLast(member)
	return
}

// lpEntryAt is lpEntry at off when off is an entry's offset (>= lpHeader),
// else nothing.
func (z *ZSet) lpEntryAt(off int) ([]byte, float64, int) {
	if off < lpHeader || off >= len(z.lp) {
		return nil, 0, 0
	}
	return z.lpEntry(off)
}

// lpFindLast is lpFind that also returns, when member is absent, the
// offset of the last entry (-1: the set is empty): the scan for a member
// passes every entry, so an insert after the last one (a queue's
// appends: pending by enqueue order, active by deadline) needs no second
// scan for its place (lpInsert). A score is only decoded for the match.
func (z *ZSet) lpFindLast(member string) (off, end int, score float64, ok bool, last int) {
	lp := z.lp
	last = -1
	for off = lpHeader; off < len(lp); {
		m, s := lpStr(lp, off)
		if string(m) == member {
			return off, s + 8, lpScore(lp, s), true, 0
		}
		last, off = off, s+8
	}
	return 0, 0, 0, false, last
}

// lpPos is the offset of the first entry not ordered before it, and that
// entry's rank.
func (z *ZSet) lpPos(it ZItem) (off, rank int) {
	for off = lpHeader; off < len(z.lp); rank++ {
		m, sc, next := z.lpEntry(off)
		if !zless(ZItem{sc, lpView(m)}, it) {
			return off, rank
		}
		off = next
	}
	return off, rank
}

// lpInsert puts member at its place (it is not in the set); last is the
// offset of the last entry when the caller knows it (lpFindLast; -1 for an
// empty set or when unknown): an item ordered after it goes at the end
// without a scan for its place.
func (z *ZSet) lpInsert(member string, score float64, last int) {
	size := lpStrLen(member) + 8
	if z.lp == nil {
		z.lp = lpNew(size)
	}
	var off int
	if it := (ZItem{score, member}); len(z.lp) <= lpHeader {
		off = len(z.lp)
	} else if m, sc, _ := z.lpEntryAt(last); last >= lpHeader && zless(ZItem{sc, lpView(m)}, it) {
		off = len(z.lp)
	} else {
		off, _ = z.lpPos(it)
	}
	n := lpCount(z.lp) + 1
	if off == len(z.lp) {
		z.setTail(off, n == 1 || (last >= lpHeader && int(z.lpTail) == last && z.lpMemberAt(last) < member))
		z.lp = lpGrow(z.lp, size)
		z.lp = lpAppendStr(z.lp, member)
		z.lp = lpAppendScore(z.lp, score)
		lpSetCount(z.lp, n)
		return
	}
	z.lpTail = 0 // an entry in the middle: the member order is not known
	if z.lpInPlace() {
		lp := z.lp
		if cap(lp)-len(lp) < size {
			// No room: one copy with a quarter of headroom, as lpGrow
			// (a set filled out of order copies O(log n) times).
			out := append(lpAlloc(len(lp)+size+len(lp)/4), lp...)
			lp = lpFresh(out)
		}
		end := len(lp)
		lp = lp[:end+size]
		copy(lp[off+size:], lp[off:end])
		lpAppendScore(lpAppendStr(lp[off:off], member), score) // within lp: size bytes
		lpSetCount(lp, n)
		z.lp = lp
		return
	}
	z.lp = lpSplice(z.lp, off, off, size, n, func(dst []byte) []byte {
		return lpAppendScore(lpAppendStr(dst, member), score)
	})
}

// lpAfterTail reports whether member, at score, is known to be absent
// from the listpack and to order after its last entry without a scan: the
// members ascend in member order as well (lpTail is set), and the tail's
// score is at most score and its member orders before member. Every
// member is then at most the tail's, so none is member.
func (z *ZSet) lpAfterTail(member string, score float64) bool {
	t := int(z.lpTail)
	if t < lpHeader || t >= len(z.lp) {
		return false
	}
	m, sc, _ := z.lpEntry(t)
	return sc <= score && lpView(m) < member
}

// lpAddAtEnd is Add's insert of a new member that orders after every
// entry (lpAfterTail): at the end, converting the set as Add does; clone
// as bigAdd's.
func (z *ZSet) lpAddAtEnd(member string, score float64, clone bool) bool {
	if z.lpTooLong(len(member)) {
		z.convert()
		return z.bigAdd(member, score, clone)
	}
	z.lpInsert(member, score, int(z.lpTail))
	if z.lpTooMany(lpCount(z.lp)) {
		z.convert()
	}
	return true
}

// lpMemberAt is the member of the entry at off, a view.
func (z *ZSet) lpMemberAt(off int) string {
	m, _ := lpStr(z.lp, off)
	return lpView(m)
}

// setTail records off as the offset of a new last entry, with the member
// order known to ascend when asc (lpTail; an offset past int32 is not
// kept).
func (z *ZSet) setTail(off int, asc bool) {
	if asc && off <= math.MaxInt32 {
		z.lpTail = int32(off)
	} else {
		z.lpTail = 0
	}
}

// lpInPlace reports whether the listpack's bytes below len may be written:
// no view of them was handed out (the viewed bit, listpack.go) and no walk
// is reading them.
func (z *ZSet) lpInPlace() bool { return z.walks == 0 && !lpViewed(z.lp) }

// lpRemove removes the entries in z.lp[off:end] (n: the count after): in
// place when lpInPlace, else as lpCut (a copy, or the tail cut with its
// capacity). In place, a removal from the front writes the header over the
// last 4 bytes of what it removes and starts the slice there (O(1): the
// ZPOPMIN, the claim's ZREM of the oldest pending member, a lease's ZREM
// of the oldest active one); a removal elsewhere moves the bytes after it
// down. The bytes before a moved start stay unused until the next copy.
func (z *ZSet) lpRemove(off, end, n int) {
	if t := int(z.lpTail); t >= end {
		z.lpTail = int32(t - (end - off)) // the entries after the cut move down
	} else if t >= off {
		// The tail is cut (and everything after off with it): the members
		// before off still ascend, and the last of them is the new tail.
		// Finding it is a walk up to off, which the removal's own search
		// for off has just made (ZREM and ZPOPMAX of the last member).
		last := -1
		for o := lpHeader; o < off; {
			_, s := lpStr(z.lp, o)
			last, o = o, s+8
		}
		z.setTail(last, last >= lpHeader)
	}
	lp := z.lp
	if !z.lpInPlace() {
		z.lp = lpCut(lp, off, end, n)
		return
	}
	switch {
	case end == len(lp):
		lp = lp[:off] // the capacity stays: nothing beyond len is seen
	case off == lpHeader:
		lp = lp[end-lpHeader:]
	default:
		k := copy(lp[off:], lp[end:])
		lp = lp[:off+k]
	}
	binary.LittleEndian.PutUint32(lp, uint32(n)) // the viewed bit is clear
	z.lp = lp
}

// lpItem is the entry at off as a ZItem with its own member string.
func (z *ZSet) lpItem(off int) (ZItem, int) {
	m, sc, next := z.lpEntry(off)
	return ZItem{sc, string(m)}, next
}

// lpOffsets lists the entry offsets (for walks from the end).
func (z *ZSet) lpOffsets() []int {
	out := make([]int, 0, lpCount(z.lp))
	for off := lpHeader; off < len(z.lp); {
		out = append(out, off)
		_, _, off = z.lpEntry(off)
	}
	return out
}

// Score returns member's score and whether it is a member.
func (z *ZSet) Score(member string) (float64, bool) {
	if z.tree != nil {
		return z.bigScore(member)
	}
	_, _, s, ok := z.lpFind(member)
	return s, ok
}

// Add sets member's score (a -0 score is stored as 0, docs/compat.md §3.2)
// and reports whether the member is new. A big set keeps member as given.
func (z *ZSet) Add(member string, score float64) bool {
	if score == 0 {
		score = 0 // drop the sign of -0
	}
	if z.tree != nil {
		return z.bigAdd(member, score, false)
	}
	if z.lpAfterTail(member, score) {
		return z.lpAddAtEnd(member, score, false)
	}
	off, end, old, ok, last := z.lpFindLast(member)
	if ok {
		if old == score {
			return false
		}
		z.lpRemove(off, end, lpCount(z.lp)-1)
		z.lpInsert(member, score, -1)
		return false
	}
	if z.lpTooLong(len(member)) {
		z.convert()
		return z.bigAdd(member, score, false)
	}
	z.lpInsert(member, score, last)
	if z.lpTooMany(lpCount(z.lp)) {
		z.convert()
	}
	return true
}

// bigAdd is Add on the skiplist encoding; clone copies a new member's
// string (it is a view of the caller's bytes).
func (z *ZSet) bigAdd(member string, score float64, clone bool) bool {
	if z.dict == nil {
		if z.tree.Len() == 0 {
			z.uni = score
		}
		if score == z.uni {
			// A member after the last one is new without a search (the
			// ascending inserts of pending and dead, ztree.Insert).
			it := ZItem{score, member}
			atEnd := z.tree.afterLast(it)
			if !atEnd && z.tree.Len() > 0 && z.tree.contains(it) {
				return false
			}
			if clone {
				it.Member = string([]byte(member))
			}
			z.tree.insert(it, atEnd)
			return true
		}
		z.buildDict()
	}
	if i := z.dict.find(member); i >= 0 {
		old := z.dict.slots[i].v
		if old == score {
			return false
		}
		z.dict.slots[i].v = score // the slot keeps the set's own string
		prev, _ := z.tree.Delete(ZItem{old, member})
		z.tree.Insert(ZItem{score, prev.Member})
		return false
	}
	if clone {
		member = string([]byte(member))
	}
	z.dict.put(member, score)
	z.tree.Insert(ZItem{score, member})
	z.noteDict()
	return true
}

// convert moves a listpack set to the skiplist encoding (for good), without
// a member index while every member has one score.
func (z *ZSet) convert() {
	t := newZTree()
	uniform := true
	for off := lpHeader; off < len(z.lp); {
		var it ZItem
		it, off = z.lpItem(off)
		if t.Len() == 0 {
			z.uni = it.Score
		} else if it.Score != z.uni {
			uniform = false
		}
		t.Insert(it)
	}
	z.tree, z.lp, z.lpTail = t, nil, 0
	if !uniform {
		z.buildDict()
	}
}

// buildDict builds a big set's member index (the first member whose score
// is not uni, or a listpack of mixed scores converting).
func (z *ZSet) buildDict() {
	d := &zdict{}
	d.reserve(z.tree.Len())
	z.tree.Scan(func(it ZItem) bool {
		d.put(it.Member, it.Score)
		return true
	})
	z.dict = d
	z.noteDict()
}

// bigScore is Score on the skiplist encoding.
func (z *ZSet) bigScore(member string) (float64, bool) {
	if z.dict == nil {
		if z.tree.Len() == 0 {
			return 0, false
		}
		return z.uni, z.tree.contains(ZItem{z.uni, member})
	}
	return z.dict.lookup(member)
}

// members calls yield with every member in no particular order (the
// names a scan snapshot keeps: a listpack's are copied out).
func (z *ZSet) members(yield func(string)) {
	if z.tree != nil {
		if z.dict == nil {
			z.tree.Scan(func(it ZItem) bool {
				yield(it.Member)
				return true
			})
			return
		}
		for m := range z.dict.all() {
			yield(m)
		}
		return
	}
	for off := lpHeader; off < len(z.lp); {
		m, _, next := z.lpEntry(off)
		yield(string(m))
		off = next
	}
}

// Copy returns a copy of z (COPY) in the same encoding: a big set's tree is
// copied on write, its member index in O(n).
func (z *ZSet) Copy() *ZSet {
	out := &ZSet{lim: z.lim}
	if z.tree == nil {
		if z.lp != nil {
			out.lp = lpFresh(append(lpAlloc(len(z.lp)), z.lp...))
			out.lpTail = z.lpTail // the same bytes at the same offsets
		}
		return out
	}
	out.uni = z.uni
	if z.dict != nil {
		out.dict = z.dict.clone()
	}
	out.tree = z.tree.Copy()
	return out
}

// Rem removes member and reports whether it was one.
func (z *ZSet) Rem(member string) bool {
	if z.tree != nil {
		// The least member (a sweep of expired leases, a queue drained in
		// order) goes by rank: no score lookup, no comparisons on the way
		// down.
		if m, ok := z.tree.Min(); ok && m.Member == member {
			z.dictDel(member)
			z.tree.DeleteAt(0)
			return true
		}
		old, ok := z.bigScore(member)
		if !ok {
			return false
		}
		z.dictDel(member)
		z.tree.Delete(ZItem{old, member})
		return true
	}
	off, end, _, ok := z.lpFind(member)
	if !ok {
		return false
	}
	z.lpRemove(off, end, lpCount(z.lp)-1)
	return true
}

// At returns the member at 0-based rank i in ascending order.
func (z *ZSet) At(i int) (ZItem, bool) {
	if z.tree != nil {
		return z.tree.GetAt(i)
	}
	if i < 0 || i >= lpCount(z.lp) {
		return ZItem{}, false
	}
	off := lpHeader
	for ; i > 0; i-- {
		_, _, off = z.lpEntry(off)
	}
	it, _ := z.lpItem(off)
	return it, true
}

// AtView is At with the member as a view instead of a string of its own:
// while z is a listpack, of z's memory, valid until z's next write (which
// may edit those bytes in place: AtView does not mark the listpack viewed,
// listpack.go); in the skiplist encoding, of the member's string. Either
// way it is read-only, and never passed back to a write of z. A caller
// that keeps the member copies it before any write (the job verbs' claim
// builds the row key from it in its read pass, one allocation for the key
// and the id).
func (z *ZSet) AtView(i int) (member []byte, score float64, ok bool) {
	if z.tree != nil {
		it, ok := z.tree.GetAt(i)
		if !ok {
			return nil, 0, false
		}
		return unsafe.Slice(unsafe.StringData(it.Member), len(it.Member)), it.Score, true
	}
	if i < 0 || i >= lpCount(z.lp) {
		return nil, 0, false
	}
	off := lpHeader
	for ; i > 0; i-- {
		_, _, off = z.lpEntry(off)
	}
	m, sc, _ := z.lpEntry(off)
	return m, sc, true
}

// Min returns the lowest member.
func (z *ZSet) Min() (ZItem, bool) { return z.At(0) }

// Max returns the highest member.
func (z *ZSet) Max() (ZItem, bool) { return z.At(z.Len() - 1) }

// Rank returns member's 0-based ascending rank, or -1 if it is not a member.
// O(log n) for a big set.
func (z *ZSet) Rank(member string) int {
	if z.tree != nil {
		s, ok := z.bigScore(member)
		if !ok {
			return -1
		}
		return z.tree.CountLess(ZItem{s, member})
	}
	rank := 0
	for off := lpHeader; off < len(z.lp); rank++ {
		m, _, next := z.lpEntry(off)
		if string(m) == member {
			return rank
		}
		off = next
	}
	return -1
}

// CountLess is the number of members ordered strictly before it.
func (z *ZSet) CountLess(it ZItem) int {
	if z.tree != nil {
		return z.tree.CountLess(it)
	}
	_, rank := z.lpPos(it)
	return rank
}

// Ascend calls fn for members from the first one not ordered before pivot,
// ascending, until fn returns false.
func (z *ZSet) Ascend(pivot ZItem, fn func(ZItem) bool) {
	if z.tree != nil {
		z.tree.Ascend(pivot, fn)
		return
	}
	off, _ := z.lpPos(pivot)
	z.lpAscend(off, fn)
}

func (z *ZSet) lpAscend(off int, fn func(ZItem) bool) {
	lp := z.lp // fn may write to z: walk the slice as it was
	z.walks++  // and keep its bytes as they were (lpInPlace)
	defer func() { z.walks-- }()
	for off < len(lp) {
		m, s := lpStr(lp, off)
		if !fn(ZItem{lpScore(lp, s), string(m)}) {
			return
		}
		off = s + 8
	}
}

// AscendAll calls fn for every member in ascending order until it returns false.
func (z *ZSet) AscendAll(fn func(ZItem) bool) {
	if z.tree != nil {
		z.tree.Scan(fn)
		return
	}
	z.lpAscend(lpHeader, fn)
}

// Descend calls fn for members from the last one not ordered after pivot,
// descending, until fn returns false.
func (z *ZSet) Descend(pivot ZItem, fn func(ZItem) bool) {
	if z.tree != nil {
		z.tree.Descend(pivot, fn)
		return
	}
	z.lpDescend(&pivot, fn)
}

// lpDescend walks a listpack set from its end (from pivot, when not nil).
func (z *ZSet) lpDescend(pivot *ZItem, fn func(ZItem) bool) {
	lp := z.lp // fn may write to z: walk the slice as it was
	z.walks++  // and keep its bytes as they were (lpInPlace)
	defer func() { z.walks-- }()
	offs := z.lpOffsets()
	for i := len(offs) - 1; i >= 0; i-- {
		m, s := lpStr(lp, offs[i])
		it := ZItem{lpScore(lp, s), lpView(m)}
		if pivot != nil && zless(*pivot, it) {
			continue
		}
		it.Member = string(m)
		if !fn(it) {
			return
		}
	}
}

// DescendAll calls fn for every member in descending order.
func (z *ZSet) DescendAll(fn func(ZItem) bool) {
	if z.tree != nil {
		z.tree.Reverse(fn)
		return
	}
	z.lpDescend(nil, fn)
}

// RangeByScore calls fn for members with min <= score <= max ascending,
// until fn returns false (the due-member selection of the verbs).
func (z *ZSet) RangeByScore(min, max float64, fn func(ZItem) bool) {
	z.Ascend(ZItem{min, ""}, func(it ZItem) bool {
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
	return z.Score(zview(member))
}

// AddBytes is Add for a member given as bytes: it sets member's score
// (-0 stored as 0) and reports whether the member is new.
func (z *ZSet) AddBytes(member []byte, score float64) bool {
	if score == 0 {
		score = 0
	}
	view := zview(member)
	if z.tree != nil {
		return z.bigAdd(view, score, true)
	}
	if z.lpAfterTail(view, score) {
		return z.lpAddAtEnd(view, score, true)
	}
	off, end, old, ok, last := z.lpFindLast(view)
	if ok {
		if old == score {
			return false
		}
		z.lpRemove(off, end, lpCount(z.lp)-1)
		z.lpInsert(view, score, -1)
		return false
	}
	if z.lpTooLong(len(member)) {
		z.convert()
		return z.bigAdd(view, score, true)
	}
	z.lpInsert(view, score, last)
	if z.lpTooMany(lpCount(z.lp)) {
		z.convert()
	}
	return true
}

// RemBytes is Rem for a member given as bytes.
func (z *ZSet) RemBytes(member []byte) bool { return z.Rem(zview(member)) }

// RankBytes is Rank for a member given as bytes, also returning its score;
// rank is -1 when member is absent.
func (z *ZSet) RankBytes(member []byte) (rank int, score float64) {
	view := zview(member)
	if z.tree != nil {
		s, ok := z.bigScore(view)
		if !ok {
			return -1, 0
		}
		return z.tree.CountLess(ZItem{s, view}), s
	}
	rank = 0
	for off := lpHeader; off < len(z.lp); rank++ {
		m, sc, next := z.lpEntry(off)
		if string(m) == view {
			return rank, sc
		}
		off = next
	}
	return -1, 0
}

// PopMin removes and returns the lowest member.
func (z *ZSet) PopMin() (ZItem, bool) {
	if z.tree != nil {
		it, ok := z.tree.DeleteAt(0)
		if ok {
			z.dictDel(it.Member)
		}
		return it, ok
	}
	return z.lpPopAt(0)
}

// PopMax removes and returns the highest member.
func (z *ZSet) PopMax() (ZItem, bool) {
	if z.tree != nil {
		it, ok := z.tree.DeleteAt(z.tree.Len() - 1)
		if ok {
			z.dictDel(it.Member)
		}
		return it, ok
	}
	return z.lpPopAt(lpCount(z.lp) - 1)
}

func (z *ZSet) lpPopAt(i int) (ZItem, bool) {
	n := lpCount(z.lp)
	if i < 0 || i >= n {
		return ZItem{}, false
	}
	off := lpHeader
	for ; i > 0; i-- {
		_, _, off = z.lpEntry(off)
	}
	it, end := z.lpItem(off)
	z.lpRemove(off, end, n-1)
	return it, true
}

// DeleteRankRange removes the members of ascending ranks [lo, hi) and
// returns how many it removed. O((hi-lo) log n) for a big set.
func (z *ZSet) DeleteRankRange(lo, hi int) int {
	if lo < 0 {
		lo = 0
	}
	if hi > z.Len() {
		hi = z.Len()
	}
	if hi <= lo {
		return 0
	}
	if z.tree == nil {
		n := lpCount(z.lp)
		off, i := lpHeader, 0
		for ; i < lo; i++ {
			_, _, off = z.lpEntry(off)
		}
		end := off
		for ; i < hi; i++ {
			_, _, end = z.lpEntry(end)
		}
		z.lpRemove(off, end, n-(hi-lo))
		return hi - lo
	}
	n := 0
	for i := lo; i < hi; i++ {
		it, ok := z.tree.DeleteAt(lo)
		if !ok {
			break
		}
		z.dictDel(it.Member)
		n++
	}
	return n
}

// CountScoreBelow is the number of members whose score is < s, or <= s
// when orEqual: the rank of the first member at or after a score bound.
func (z *ZSet) CountScoreBelow(s float64, orEqual bool) int {
	if orEqual {
		if s == PosInf {
			return z.Len()
		}
		s = math.Nextafter(s, PosInf)
	}
	// "" is the least member, so no member of score s orders before it.
	return z.CountLess(ZItem{s, ""})
}

// SameScore reports whether every member has the same score (the
// precondition of the lex range commands).
func (z *ZSet) SameScore() bool {
	lo, ok := z.Min()
	if !ok {
		return true
	}
	hi, _ := z.Max()
	return lo.Score == hi.Score
}

// zdict is a big set's member index, member -> score (keytable.go's table:
// unlike a Go map it keeps its size while its members turn over, as an
// active set's leases do; docs/architecture.md §2.10).
type zdict = oaTable[float64]
