package store

// ZSetSnapshot is a read-only, point-in-time copy of a sorted set that stays
// valid and unchanged after the store lock is released, whatever is written
// next: the AOF rewrite takes one of a large sorted set under the lock in
// O(1) (a copy-on-write tree Copy, ztree.go) and writes it out without the
// lock. A listpack set is copied whole (it is small).
type ZSetSnapshot struct {
	lp   []byte // a private copy of a listpack set
	tree *ztree
}

// Snapshot copies z (call under the store lock). Later writes to z copy the
// tree nodes they touch; the snapshot keeps the old ones.
func (z *ZSet) Snapshot() *ZSetSnapshot {
	if z.tree == nil {
		return &ZSetSnapshot{lp: append([]byte(nil), z.lp...)}
	}
	return &ZSetSnapshot{tree: z.tree.Copy()}
}

// Len is the number of members.
func (s *ZSetSnapshot) Len() int {
	if s.tree == nil {
		return lpCount(s.lp)
	}
	return s.tree.Len()
}

// AscendAll calls fn for every member in ascending order until it returns
// false. It may run without the store lock, concurrently with writers.
func (s *ZSetSnapshot) AscendAll(fn func(ZItem) bool) {
	if s.tree != nil {
		s.tree.Scan(fn)
		return
	}
	for off := lpHeader; off < len(s.lp); {
		m, sc := lpStr(s.lp, off)
		if !fn(ZItem{lpScore(s.lp, sc), lpView(m)}) {
			return
		}
		off = sc + 8
	}
}
