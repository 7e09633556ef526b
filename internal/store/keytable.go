package store

import (
	"hash/maphash"
	"iter"
	"math/rand/v2"
	"slices"
	"unsafe"
)

// oaTable is a string-keyed open-addressing hash table: a database's
// keyspace (keyTable: key -> *Value, store.go) and a big sorted set's
// member index (zdict: member -> score, zset.go). It probes linearly, and
// its deletions move entries back instead of leaving tombstones (Knuth's
// algorithm R, "backward shift"), so that a table whose count stays
// constant while its keys turn over (a job queue's rows: created,
// completed, deleted; an active set's leases) keeps its size.
//
// Why not a Go map (docs/architecture.md §2.10, bench/README.md "Memory
// during a job cycle (issue 25, round 6)"): Go 1.26's swiss-table map
// leaves a tombstone where a deleted key's group was full, reuses only the
// tombstones no probe sequence needs (pruneTombstones), and otherwise splits
// or doubles the table instead of rehashing it in place. 200,000 keys filled
// take 35.0 B a key of table; after 200,000 turnovers (a new key in, the
// oldest out) 69.9 B, and it stays there (BenchmarkKeyTableTurnover). This
// table holds 24 B a slot at a load between 2/5 and 4/5, whatever the
// turnover: 200,000 keys in 262,144 slots, 31.5 B a key, before and after
// any number of turnovers.
//
// A slot is the key's data pointer, a word of metadata and the value, 24
// bytes for an 8-byte value. The metadata word is the key's length (bits
// 24 and up), the slot's distance from its key's home slot (hash & mask;
// bits 8-23, at most ktMaxDist, which lets a deletion shift entries back
// without hashing their keys again) and a tag (bits 0-7): ktEmpty, ktDead
// (a tombstone, left only by a deletion during an iteration, see all) or
// ktFull|7 bits of the key's hash, which a lookup compares, with the
// length, before the key's bytes. Everything a probe reads of a slot is in
// the slot, so a lookup costs one cache miss in the table, not one in a
// tag array and one in the slots (round 7: bench/README.md "The stall
// sweep, round 7 (issue 25)"). There is always an empty slot (the load
// stays at most 4/5), so every probe ends.
//
// The zero oaTable is an empty table. In the keyspace values are never nil
// (get returns nil for a missing key). Not safe for concurrent use (the
// store lock).
type oaTable[V any] struct {
	slots []ktSlot[V]
	used  int // full slots
	dead  int // tombstones
	// iters counts the iterations in progress (all): while there is one, a
	// deletion leaves a tombstone instead of moving entries.
	iters int
	// gen changes whenever the slot array is replaced (a resize), so that
	// an iteration over the old array checks each key against the new one.
	gen  uint32
	seed maphash.Seed
}

// keyTable is a database's keyspace (store.go).
type keyTable = oaTable[*Value]

// ktSlot is one slot: kp is the key's bytes (unsafe.StringData of the
// stored string, which it keeps alive), meta its length, distance and tag.
type ktSlot[V any] struct {
	kp   *byte
	meta uint64
	v    V
}

func (s *ktSlot[V]) tag() uint8  { return uint8(s.meta) }
func (s *ktSlot[V]) dist() int   { return int(uint16(s.meta >> ktDistShift)) }
func (s *ktSlot[V]) key() string { return unsafe.String(s.kp, int(s.meta>>ktLenShift)) }

// ktMeta is the metadata word of key k with tag tag at distance d.
func ktMeta(k string, tag uint8, d int) uint64 {
	return uint64(len(k))<<ktLenShift | uint64(d)<<ktDistShift | uint64(tag)
}

// ktDistShift and ktLenShift place the distance and the key's length in
// the metadata word; ktDistBits masks the distance.
const (
	ktDistShift = 8
	ktLenShift  = 24
	ktDistBits  = uint64(0xffff) << ktDistShift
)

const (
	ktEmpty  = 0
	ktDead   = 1
	ktFull   = 0x80
	ktMinCap = 8
	// ktMaxDist is the longest distance a slot records. Sixteen bits, not
	// eight: at the load a table keeps (up to 4/5), linear probing's
	// clusters pass 255 slots now and then under a turnover (200,000 keys
	// in 262,144 slots: 13 times in 12,000,000 turnovers, about once in
	// 900,000), and an insertion that cannot record its distance rebuilds
	// the table at the same size, which holds the old and the new slot
	// arrays at once (6.3 MB more for that table at a job cycle's peak:
	// bench/README.md "Memory during a job cycle (issue 25, round 8)";
	// TestKeyTableTurnoverKeepsItsArray). A cluster of 65,535 slots does
	// not form by chance (the hash is seeded).
	ktMaxDist = 1<<16 - 1
)

// ktMaxLoad is how many slots of a table of capacity c may be taken, by
// entries and tombstones together: 4/5 (linear probing's expected probes
// for a missing key are about 13 there).
func ktMaxLoad(c int) int { return c - c/5 }

// ktCapFor is the smallest capacity that holds n entries.
func ktCapFor(n int) int {
	c := ktMinCap
	for ktMaxLoad(c) < n {
		c *= 2
	}
	return c
}

func (t *oaTable[V]) len() int { return t.used }

// bytes is the size of t's slot array (the key and value bytes they point
// at are not counted).
func (t *oaTable[V]) bytes() int64 {
	return int64(len(t.slots)) * int64(unsafe.Sizeof(ktSlot[V]{}))
}

func (t *oaTable[V]) hash(k string) uint64 { return maphash.String(t.seed, k) }

func ktTag(h uint64) uint8 { return uint8(h>>57) | ktFull }

// find returns the slot of k, or -1. A slot matches on its tag and
// length, then on the key's data pointer (a member index is mostly asked
// about the set's own strings) or bytes.
func (t *oaTable[V]) find(k string) int {
	if t.used == 0 {
		return -1
	}
	h := t.hash(k)
	mask := len(t.slots) - 1
	want := uint64(len(k))<<ktLenShift | uint64(ktTag(h))
	kp := unsafe.StringData(k)
	for i := int(h) & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		m := s.meta
		if m&^ktDistBits == want && (s.kp == kp || s.key() == k) {
			return i
		}
		if uint8(m) == ktEmpty {
			return -1
		}
	}
}

// get returns the value at k, or V's zero value (nil in the keyspace).
func (t *oaTable[V]) get(k string) V {
	if i := t.find(k); i >= 0 {
		return t.slots[i].v
	}
	var zero V
	return zero
}

// lookup returns the value at k and whether k is there.
func (t *oaTable[V]) lookup(k string) (V, bool) {
	if i := t.find(k); i >= 0 {
		return t.slots[i].v, true
	}
	var zero V
	return zero, false
}

// put stores v at k and reports whether k is new. An existing key keeps
// its string (as a Go map's assignment does); only its value changes.
func (t *oaTable[V]) put(k string, v V) bool {
	if t.slots == nil {
		t.resize(ktMinCap)
	}
	h := t.hash(k)
	mask := len(t.slots) - 1
	c := ktTag(h)
	want := uint64(len(k))<<ktLenShift | uint64(c)
	home := int(h) & mask
	tomb := -1
	i := home
	for ; ; i = (i + 1) & mask {
		s := &t.slots[i]
		x := s.tag()
		if s.meta&^ktDistBits == want && s.key() == k {
			s.v = v
			return false
		}
		if x == ktEmpty {
			break
		}
		if x == ktDead && tomb < 0 {
			tomb = i
		}
	}
	if d := (tomb - home) & mask; tomb >= 0 && d <= ktMaxDist {
		t.set(tomb, c, d, k, v)
		t.dead--
		t.used++
		return true
	}
	if d := (i - home) & mask; d <= ktMaxDist && t.used+t.dead < ktMaxLoad(len(t.slots)) {
		t.set(i, c, d, k, v)
		t.used++
		return true
	}
	// Full (or a probe too long to record): a new table, the same size
	// when the tombstones are what fills it, else twice the size.
	c2 := len(t.slots)
	for ktMaxLoad(c2) < t.used+1 {
		c2 *= 2
	}
	t.resize(c2)
	t.insertNew(k, v)
	t.used++
	return true
}

func (t *oaTable[V]) set(i int, tag uint8, d int, k string, v V) {
	t.slots[i] = ktSlot[V]{unsafe.StringData(k), ktMeta(k, tag, d), v}
}

// tryInsertNew places k, known to be missing, in the first free slot of its
// probe and reports false when that slot is beyond ktMaxDist (the caller
// then grows the table). It does not count the entry.
func (t *oaTable[V]) tryInsertNew(k string, v V) bool {
	h := t.hash(k)
	mask := len(t.slots) - 1
	home := int(h) & mask
	for i := home; ; i = (i + 1) & mask {
		if x := t.slots[i].tag(); x == ktEmpty || x == ktDead {
			d := (i - home) & mask
			if d > ktMaxDist {
				return false
			}
			if x == ktDead {
				t.dead--
			}
			t.set(i, ktTag(h), d, k, v)
			return true
		}
	}
}

func (t *oaTable[V]) insertNew(k string, v V) {
	for !t.tryInsertNew(k, v) {
		t.resize(len(t.slots) * 2)
	}
}

// resize moves every entry into a new array of capacity c (a power of two
// holding them), dropping the tombstones, with a new hash seed. The old
// array is left as it was, for an iteration in progress.
func (t *oaTable[V]) resize(c int) {
	for {
		old := t.slots
		t.slots = make([]ktSlot[V], c)
		t.seed = maphash.MakeSeed()
		t.dead = 0
		t.gen++
		ok := true
		for i := range old {
			if s := &old[i]; s.tag() >= ktFull && !t.tryInsertNew(s.key(), s.v) {
				ok = false
				break
			}
		}
		if ok {
			return
		}
		// A probe longer than ktMaxDist (practically never with a random
		// seed): twice the size, from the same old array.
		t.slots = old
		c *= 2
	}
}

// del deletes k and reports whether it was there.
func (t *oaTable[V]) del(k string) bool {
	i := t.find(k)
	if i < 0 {
		return false
	}
	t.used--
	if t.iters > 0 {
		t.slots[i] = ktSlot[V]{meta: ktDead}
		t.dead++
		return true
	}
	// Backward shift: an entry after the hole whose home is at or before
	// the hole moves into it, and its slot becomes the hole; the scan ends
	// at an empty slot. Tombstones (from an earlier iteration) are passed.
	mask := len(t.slots) - 1
	hole := i
	for j := (i + 1) & mask; ; j = (j + 1) & mask {
		s := &t.slots[j]
		x := s.tag()
		if x == ktEmpty {
			break
		}
		if x == ktDead {
			continue
		}
		if gap := (j - hole) & mask; gap <= s.dist() {
			t.slots[hole] = ktSlot[V]{s.kp, s.meta - uint64(gap)<<ktDistShift, s.v}
			hole = j
		}
	}
	t.slots[hole] = ktSlot[V]{}
	return true
}

// fit rebuilds the table at the capacity its entries need (ShrinkMaps).
// No iteration may be in progress.
func (t *oaTable[V]) fit() {
	if t.used == 0 {
		*t = oaTable[V]{}
		return
	}
	t.resize(ktCapFor(t.used))
}

// reserve sizes an empty table for n entries (a member index built from a
// set of n members), so that filling it does not resize it.
func (t *oaTable[V]) reserve(n int) {
	if t.used == 0 && t.dead == 0 && len(t.slots) < ktCapFor(n) {
		t.resize(ktCapFor(n))
	}
}

// clone returns a copy of t (its slots copied, its keys' strings shared).
// No iteration may be in progress.
func (t *oaTable[V]) clone() *oaTable[V] {
	out := *t
	out.slots = slices.Clone(t.slots)
	out.iters = 0
	return &out
}

// all iterates over the entries in slot order. As with a Go map, the body
// may delete any key (a key deleted before it is reached is not produced)
// and add keys (which may or may not be produced); every key present for
// the whole iteration is produced once, with its value at that moment.
// While an iteration runs, deletions leave tombstones; a resize during it
// (an insertion that fills the table) leaves the old array to it, and it
// checks each of its keys against the table.
func (t *oaTable[V]) all() iter.Seq2[string, V] {
	return func(yield func(string, V) bool) {
		if t.used == 0 {
			return
		}
		t.iters++
		defer func() { t.iters-- }()
		slots, gen := t.slots, t.gen
		for i := range slots {
			s := &slots[i]
			if s.tag() < ktFull {
				continue
			}
			k, v := s.key(), s.v
			if t.gen != gen {
				var ok bool
				if v, ok = t.lookup(k); !ok {
					continue
				}
			}
			if !yield(k, v) {
				return
			}
		}
	}
}

// random returns a key chosen at random (the first full slot from a random
// one, then up to skip more; RANDOMKEY), or "" and false when empty.
func (t *oaTable[V]) random(skip int) (string, bool) {
	if t.used == 0 {
		return "", false
	}
	mask := len(t.slots) - 1
	for i := rand.IntN(len(t.slots)); ; i = (i + 1) & mask {
		if t.slots[i].tag() < ktFull {
			continue
		}
		if skip == 0 {
			return t.slots[i].key(), true
		}
		skip--
	}
}
