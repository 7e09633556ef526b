package store

// ZSetSnapshot is a read-only, point-in-time copy of a sorted set that stays
// valid and unchanged after the store lock is released, whatever is written
// next: the AOF rewrite takes one of a large sorted set under the lock in
// O(1) (a copy-on-write tree Copy, ztree.go) and writes it out without the
// lock.
type ZSetSnapshot struct {
	tree *ztree
}

// Snapshot copies z (call under the store lock). Later writes to z copy the
// tree nodes they touch; the snapshot keeps the old ones.
func (z *ZSet) Snapshot() *ZSetSnapshot { return &ZSetSnapshot{tree: z.tree.Copy()} }

// Len is the number of members.
func (s *ZSetSnapshot) Len() int { return s.tree.Len() }

// AscendAll calls fn for every member in ascending order until it returns
// false. It may run without the store lock, concurrently with writers.
func (s *ZSetSnapshot) AscendAll(fn func(ZItem) bool) { s.tree.Scan(fn) }
