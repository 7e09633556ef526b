package store

import "github.com/tidwall/btree"

// Snapshot is a point-in-time copy of the keyspace, taken under the store
// lock and read without it: the AOF rewrite writes it out while the server
// keeps serving (architecture.md "Persistence"). Taking it costs one pass
// over the keys plus a copy of every hash's field list; sorted sets are
// shared copy-on-write (btree Copy), strings are copied.
type Snapshot struct {
	DBs []DBSnapshot
}

// DBSnapshot is one database of a Snapshot; only non-empty ones are listed.
type DBSnapshot struct {
	Index int
	Keys  []KeySnapshot
}

// KeySnapshot is one key of a Snapshot. Kind says which of Str, the hash or
// the sorted set is in use.
type KeySnapshot struct {
	Key  string
	Kind Kind
	Str  []byte
	hash []hashEntry
	zset *btree.BTreeG[ZItem]
}

// HashLen is the number of fields of a hash key.
func (k *KeySnapshot) HashLen() int { return len(k.hash) }

// RangeHash calls fn for each field of a hash key in insertion order until
// fn returns false. value must not be modified.
func (k *KeySnapshot) RangeHash(fn func(field string, value []byte) bool) {
	for _, e := range k.hash {
		if !fn(e.field, e.value) {
			return
		}
	}
}

// ZSetLen is the number of members of a sorted-set key.
func (k *KeySnapshot) ZSetLen() int {
	if k.zset == nil {
		return 0
	}
	return k.zset.Len()
}

// RangeZSet calls fn for each member of a sorted-set key in ascending order
// until fn returns false.
func (k *KeySnapshot) RangeZSet(fn func(ZItem) bool) {
	if k.zset != nil {
		k.zset.Scan(fn)
	}
}

// Snapshot copies the keyspace. Call it under the lock; the result stays
// valid, unchanged, after the lock is released, whatever is written next.
// Hash values are shared: the store never modifies a stored value slice in
// place (Hash.Set's contract).
func (s *Store) Snapshot() *Snapshot {
	snap := &Snapshot{}
	for _, d := range s.dbs {
		if len(d.keys) == 0 {
			continue
		}
		ds := DBSnapshot{Index: d.Index, Keys: make([]KeySnapshot, 0, len(d.keys))}
		for k, v := range d.keys {
			ks := KeySnapshot{Key: k, Kind: v.Kind}
			switch v.Kind {
			case KindString:
				ks.Str = append([]byte(nil), v.Str...)
			case KindHash:
				h := v.Hash
				ks.hash = make([]hashEntry, 0, h.live)
				for _, e := range h.entries {
					if !e.dead {
						ks.hash = append(ks.hash, e)
					}
				}
			case KindZSet:
				ks.zset = v.ZSet.tree.Copy()
			}
			ds.Keys = append(ds.Keys, ks)
		}
		snap.DBs = append(snap.DBs, ds)
	}
	return snap
}
