package store

import (
	"hash/maphash"
	"iter"
	"math/rand/v2"
)

// keyTable is a database's keyspace: key -> *Value, an open-addressing hash
// table with linear probing whose deletions move entries back instead of
// leaving tombstones (Knuth's algorithm R, "backward shift"), so that a
// keyspace whose count stays constant while its keys turn over (a job
// queue's rows: created, completed, deleted) keeps its table's size.
//
// Why not a Go map (docs/architecture.md §2.10, bench/README.md "Memory
// during a job cycle (issue 25, round 6)"): Go 1.26's swiss-table map
// leaves a tombstone where a deleted key's group was full, reuses only the
// tombstones no probe sequence needs (pruneTombstones), and otherwise splits
// or doubles the table instead of rehashing it in place. 200,000 keys filled
// take 35.0 B a key of table; after 200,000 turnovers (a new key in, the
// oldest out) 69.9 B, and it stays there (BenchmarkKeyTableTurnover). This
// table holds 26 B a slot (a 16-byte string header, an 8-byte pointer, a
// tag byte and a distance byte) at a load between 2/5 and 4/5, whatever
// the turnover: 200,000 keys in 262,144 slots, 34.1 B a key, before and
// after any number of turnovers.
//
// Slots: tag[i] is ktEmpty, ktDead (a tombstone, left only by a deletion
// during an iteration, see all) or ktFull|7 bits of the key's hash, which
// a lookup compares before the key's bytes; dist[i] is a full slot's
// distance from its key's home slot (hash & mask), at most ktMaxDist, which
// lets a deletion shift entries back without hashing their keys again.
// There is always an empty slot (the load stays at most 4/5), so every
// probe ends.
//
// The zero keyTable is an empty table. Values are never nil (get returns
// nil for a missing key). Not safe for concurrent use (the store lock).
type keyTable struct {
	tag   []uint8
	dist  []uint8
	slots []ktSlot
	used  int // full slots
	dead  int // tombstones
	// iters counts the iterations in progress (all): while there is one, a
	// deletion leaves a tombstone instead of moving entries.
	iters int
	// gen changes whenever the slot arrays are replaced (a resize), so that
	// an iteration over the old arrays checks each key against the new ones.
	gen  uint32
	seed maphash.Seed
}

type ktSlot struct {
	key string
	v   *Value
}

const (
	ktEmpty   = 0
	ktDead    = 1
	ktFull    = 0x80
	ktMinCap  = 8
	ktMaxDist = 255
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

func (t *keyTable) len() int { return t.used }

func (t *keyTable) hash(k string) uint64 { return maphash.String(t.seed, k) }

func ktTag(h uint64) uint8 { return uint8(h>>57) | ktFull }

// find returns the slot of k, or -1.
func (t *keyTable) find(k string) int {
	if t.used == 0 {
		return -1
	}
	h := t.hash(k)
	mask := len(t.tag) - 1
	c := ktTag(h)
	for i := int(h) & mask; ; i = (i + 1) & mask {
		switch x := t.tag[i]; x {
		case c:
			if t.slots[i].key == k {
				return i
			}
		case ktEmpty:
			return -1
		}
	}
}

// get returns the value at k, or nil.
func (t *keyTable) get(k string) *Value {
	if i := t.find(k); i >= 0 {
		return t.slots[i].v
	}
	return nil
}

// put stores v at k and reports whether k is new. An existing key keeps
// its string (as a Go map's assignment does); only its value changes.
func (t *keyTable) put(k string, v *Value) bool {
	if t.tag == nil {
		t.resize(ktMinCap)
	}
	h := t.hash(k)
	mask := len(t.tag) - 1
	c := ktTag(h)
	home := int(h) & mask
	tomb := -1
	i := home
	for ; ; i = (i + 1) & mask {
		x := t.tag[i]
		if x == c && t.slots[i].key == k {
			t.slots[i].v = v
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
	if d := (i - home) & mask; d <= ktMaxDist && t.used+t.dead < ktMaxLoad(len(t.tag)) {
		t.set(i, c, d, k, v)
		t.used++
		return true
	}
	// Full (or a probe too long to record): a new table, the same size
	// when the tombstones are what fills it, else twice the size.
	c2 := len(t.tag)
	for ktMaxLoad(c2) < t.used+1 {
		c2 *= 2
	}
	t.resize(c2)
	t.insertNew(k, v)
	t.used++
	return true
}

func (t *keyTable) set(i int, tag uint8, d int, k string, v *Value) {
	t.tag[i], t.dist[i], t.slots[i] = tag, uint8(d), ktSlot{k, v}
}

// tryInsertNew places k, known to be missing, in the first free slot of its
// probe and reports false when that slot is beyond ktMaxDist (the caller
// then grows the table). It does not count the entry.
func (t *keyTable) tryInsertNew(k string, v *Value) bool {
	h := t.hash(k)
	mask := len(t.tag) - 1
	home := int(h) & mask
	for i := home; ; i = (i + 1) & mask {
		if x := t.tag[i]; x == ktEmpty || x == ktDead {
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

func (t *keyTable) insertNew(k string, v *Value) {
	for !t.tryInsertNew(k, v) {
		t.resize(len(t.tag) * 2)
	}
}

// resize moves every entry into new arrays of capacity c (a power of two
// holding them), dropping the tombstones, with a new hash seed. The old
// arrays are left as they were, for an iteration in progress.
func (t *keyTable) resize(c int) {
	for {
		old := t.slots
		oldTag := t.tag
		t.tag, t.dist, t.slots = make([]uint8, c), make([]uint8, c), make([]ktSlot, c)
		t.seed = maphash.MakeSeed()
		t.dead = 0
		t.gen++
		ok := true
		for i, x := range oldTag {
			if x >= ktFull && !t.tryInsertNew(old[i].key, old[i].v) {
				ok = false
				break
			}
		}
		if ok {
			return
		}
		// A probe longer than ktMaxDist (practically never with a random
		// seed): twice the size, from the same old arrays.
		t.tag, t.slots = oldTag, old
		c *= 2
	}
}

// del deletes k and reports whether it was there.
func (t *keyTable) del(k string) bool {
	i := t.find(k)
	if i < 0 {
		return false
	}
	t.used--
	if t.iters > 0 {
		t.tag[i], t.dist[i], t.slots[i] = ktDead, 0, ktSlot{}
		t.dead++
		return true
	}
	// Backward shift: an entry after the hole whose home is at or before
	// the hole moves into it, and its slot becomes the hole; the scan ends
	// at an empty slot. Tombstones (from an earlier iteration) are passed.
	mask := len(t.tag) - 1
	hole := i
	for j := (i + 1) & mask; ; j = (j + 1) & mask {
		x := t.tag[j]
		if x == ktEmpty {
			break
		}
		if x == ktDead {
			continue
		}
		if gap := (j - hole) & mask; gap <= int(t.dist[j]) {
			t.set(hole, x, int(t.dist[j])-gap, t.slots[j].key, t.slots[j].v)
			hole = j
		}
	}
	t.tag[hole], t.dist[hole], t.slots[hole] = ktEmpty, 0, ktSlot{}
	return true
}

// fit rebuilds the table at the capacity its entries need (ShrinkMaps).
// No iteration may be in progress.
func (t *keyTable) fit() {
	if t.used == 0 {
		*t = keyTable{}
		return
	}
	t.resize(ktCapFor(t.used))
}

// all iterates over the entries in slot order. As with a Go map, the body
// may delete any key (a key deleted before it is reached is not produced)
// and add keys (which may or may not be produced); every key present for
// the whole iteration is produced once, with its value at that moment.
// While an iteration runs, deletions leave tombstones; a resize during it
// (an insertion that fills the table) leaves the old arrays to it, and it
// checks each of their keys against the table.
func (t *keyTable) all() iter.Seq2[string, *Value] {
	return func(yield func(string, *Value) bool) {
		if t.used == 0 {
			return
		}
		t.iters++
		defer func() { t.iters-- }()
		tag, slots, gen := t.tag, t.slots, t.gen
		for i := range tag {
			if tag[i] < ktFull {
				continue
			}
			k, v := slots[i].key, slots[i].v
			if t.gen != gen {
				if v = t.get(k); v == nil {
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
func (t *keyTable) random(skip int) (string, bool) {
	if t.used == 0 {
		return "", false
	}
	mask := len(t.tag) - 1
	for i := rand.IntN(len(t.tag)); ; i = (i + 1) & mask {
		if t.tag[i] < ktFull {
			continue
		}
		if skip == 0 {
			return t.slots[i].key, true
		}
		skip--
	}
}
