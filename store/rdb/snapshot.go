package rdb

import (
	"errors"
	"io"

	"github.com/emqd/emqd/store"
)

// ErrCanceled is WriteTo's error when its progress function stopped it.
var ErrCanceled = errors.New("snapshot write canceled")

// Snapshot is the keyspace as it was at one instant: Take captures it under
// the store lock (each key in O(1), but for a hashtable hash's entry list),
// WriteTo encodes it without the lock while clients keep writing
// (docs/durability.md §9.2).
type Snapshot struct {
	dbs  []dbSnap
	keys int
}

type dbSnap struct {
	keys    []string
	objs    []Object
	exps    []int64
	expires int
}

// Take captures every key of st whose TTL has not passed (call under the
// store lock).
func Take(st *store.Store) *Snapshot {
	s := &Snapshot{dbs: make([]dbSnap, st.NumDBs())}
	for i := range s.dbs {
		db := st.DB(i)
		d := &s.dbs[i]
		d.keys = make([]string, 0, db.Len())
		d.objs = make([]Object, 0, db.Len())
		d.exps = make([]int64, 0, db.Len())
		db.Keys(func(k string, v *store.Value) bool {
			at, _ := db.ExpireAt(k)
			if at != 0 {
				d.expires++
			}
			d.keys = append(d.keys, k)
			d.objs = append(d.objs, Capture(v))
			d.exps = append(d.exps, at)
			return true
		})
		s.keys += len(d.keys)
	}
	return s
}

// Keys is the number of keys captured.
func (s *Snapshot) Keys() int { return s.keys }

// WriteTo writes the snapshot as an RDB file: the header with aux, then
// each non-empty database (SELECTDB, RESIZEDB, its keys), EOF and the
// checksum. progress, when not nil, is called after each key with the
// number written so far; when it returns false the write stops with
// ErrCanceled.
func (s *Snapshot) WriteTo(out io.Writer, opts Options, aux [][2]string, progress func(int) bool) (int64, error) {
	w := NewWriter(out, opts)
	if err := w.Header(aux); err != nil {
		return w.Size(), err
	}
	n := 0
	for i := range s.dbs {
		d := &s.dbs[i]
		if len(d.keys) == 0 {
			continue
		}
		if err := w.SelectDB(i, len(d.keys), d.expires); err != nil {
			return w.Size(), err
		}
		for j, k := range d.keys {
			if err := w.Key(k, d.objs[j], d.exps[j]); err != nil {
				return w.Size(), err
			}
			n++
			if progress != nil && !progress(n) {
				return w.Size(), ErrCanceled
			}
		}
	}
	err := w.End()
	return w.Size(), err
}
