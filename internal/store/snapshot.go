package store

// ZSetSnapshot is a read-only, point-in-time copy of a sorted set that stays
// valid and unchanged after the store lock is released, whatever is written
// next: the AOF rewrite takes one of a large sorted set under the lock in
// O(1) (a copy-on-write tree Copy, ztree.go) and writes it out without the
// lock. A listpack set's snapshot shares its bytes, also in O(1): the
// listpack is marked viewed, so no later write edits those bytes in place
// (listpack.go; the next write copies the listpack once).
type ZSetSnapshot struct {
	lp   []byte // a listpack set's bytes, to len at the snapshot (marked viewed)
	n    int    // a listpack set's count (its header may be written later: listpack.go)
	tree *ztree
}

// Snapshot copies z (call under the store lock). Later writes to z copy the
// tree nodes they touch, or the listpack; the snapshot keeps the old ones.
func (z *ZSet) Snapshot() *ZSetSnapshot {
	if z.tree == nil {
		lpMarkViewed(z.lp)
		return &ZSetSnapshot{lp: z.lp[:len(z.lp):len(z.lp)], n: lpCount(z.lp)}
	}
	return &ZSetSnapshot{tree: z.tree.Copy()}
}

// Len is the number of members.
func (s *ZSetSnapshot) Len() int {
	if s.tree == nil {
		return s.n
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

// HashSnapshot is a read-only, point-in-time copy of a hash that stays
// valid after the store lock is released (BGSAVE, docs/durability.md §9):
// a listpack hash is taken in O(1) (its bytes below len are never written
// again once it is marked viewed, listpack.go), a hashtable hash copies its entry list (the values
// are shared: the store never changes a value in place).
type HashSnapshot struct {
	lp      []byte // a listpack hash's bytes, to len at the snapshot
	n       int    // the number of fields
	entries []hashEntry
	big     bool
}

// Snapshot copies h (call under the store lock). It returns a value, so a
// snapshot of a listpack hash allocates nothing (BGSAVE takes one per key).
func (h *Hash) Snapshot() HashSnapshot {
	if !h.big() {
		lpMarkViewed(h.Str) // never rewritten in place from now (listpack.go)
		return HashSnapshot{lp: h.Str, n: h.Len()}
	}
	t := h.tab
	out := make([]hashEntry, 0, t.live)
	for _, e := range t.entries {
		if e.value != nil {
			out = append(out, e)
		}
	}
	return HashSnapshot{entries: out, n: t.live, big: true}
}

// Len is the number of fields.
func (s *HashSnapshot) Len() int { return s.n }

// Big reports whether the hash was hashtable-encoded (else listpack).
func (s *HashSnapshot) Big() bool { return s.big }

// Range calls fn for each field in insertion order until it returns false;
// it may run without the store lock. field and value must not be changed.
func (s *HashSnapshot) Range(fn func(field string, value []byte) bool) {
	if s.big {
		for _, e := range s.entries {
			if !fn(e.field, e.value) {
				return
			}
		}
		return
	}
	for off := lpHeader; off < len(s.lp); {
		f, next := lpStr(s.lp, off)
		v, after := lpStr(s.lp, next)
		if !fn(lpView(f), v) {
			return
		}
		off = after
	}
}

// Big reports whether the sorted set was skiplist-encoded (else listpack).
func (s *ZSetSnapshot) Big() bool { return s.tree != nil }

// DescendAll calls fn for every member in descending order (the order an
// RDB ZSET_2 holds them) until it returns false; it may run without the
// store lock.
func (s *ZSetSnapshot) DescendAll(fn func(ZItem) bool) {
	if s.tree != nil {
		s.tree.Reverse(fn)
		return
	}
	var items []ZItem
	s.AscendAll(func(it ZItem) bool { items = append(items, it); return true })
	for i := len(items) - 1; i >= 0; i-- {
		if !fn(items[i]) {
			return
		}
	}
}

// StrSnapshot returns a string value's bytes as they are now, valid and
// unchanged after the store lock is released: the bytes themselves, or a
// copy for a string SETRANGE may have changed in place (encoding raw).
func (v *Value) StrSnapshot() []byte {
	if v.enc == encRaw {
		return append([]byte(nil), v.Str...)
	}
	return v.Str
}

// NewHashValue returns an empty listpack hash Value with s's encoding
// thresholds, not stored (an RDB load or RESTORE fills it, then DB.Put).
func (s *Store) NewHashValue() *Value { return newHashValue(s.hashLim) }

// NewZSetValue returns an empty sorted-set Value with s's thresholds, not
// stored.
func (s *Store) NewZSetValue() *Value {
	z := NewZSet()
	z.lim = &s.limits
	return &Value{Kind: KindZSet, ZSet: z}
}

// SetIdleMs makes v look last accessed ms milliseconds ago on the server
// clock (RESTORE ... IDLETIME, an RDB's IDLE opcode; OBJECT IDLETIME).
func (s *Store) SetIdleMs(v *Value, ms int64) {
	v.access = uint32((s.now - ms) / accessUnit)
}
