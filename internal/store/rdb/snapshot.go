package rdb

import (
	"errors"
	"io"

	"github.com/emqd/emqd/internal/store"
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
	// over, from a chunked capture (Capturer), holds per database the keys
	// captured again, which replace their entry in dbs (Kind 0: missing).
	over []map[string]capturedKey
	// blocks, from a chunked capture, hold per database the keys of the
	// first copy (merge moves them to dbs); chunked is true until merged.
	blocks  [][][]capturedEntry
	chunked bool
}

type dbSnap struct {
	keys    []string
	objs    []Object
	exps    []int64
	expires int
}

// Take captures every key of st whose TTL has not passed, at once (call
// under the store lock: SAVE, the shutdown save).
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

// Keys is the number of keys captured (call without the store lock after
// a chunked capture: it merges the recaptured keys in, once).
func (s *Snapshot) Keys() int {
	if s.chunked {
		s.merge()
	}
	return s.keys
}

// merge folds a chunked capture's recaptured keys into dbs: a key's first
// capture is dropped when it was captured again, and the live recaptures
// are appended. It runs once, without the store lock.
func (s *Snapshot) merge() {
	s.keys = 0
	for i := range s.dbs {
		d := &s.dbs[i]
		over := s.over[i]
		n := 0
		for _, b := range s.blocks[i] {
			n += len(b)
		}
		n += len(over)
		d.keys, d.objs, d.exps = make([]string, 0, n), make([]Object, 0, n), make([]int64, 0, n)
		for _, b := range s.blocks[i] {
			for _, e := range b {
				if _, ok := over[e.key]; ok {
					continue
				}
				d.keys = append(d.keys, e.key)
				d.objs = append(d.objs, e.obj)
				d.exps = append(d.exps, e.at)
			}
		}
		for k, c := range over {
			if c.obj.Kind != 0 {
				d.keys = append(d.keys, k)
				d.objs = append(d.objs, c.obj)
				d.exps = append(d.exps, c.at)
			}
		}
		d.expires = 0
		for _, at := range d.exps {
			if at != 0 {
				d.expires++
			}
		}
		s.keys += len(d.keys)
	}
	s.over, s.blocks, s.chunked = nil, nil, false
}

// WriteTo writes the snapshot as an RDB file: the header with aux, then
// each non-empty database (SELECTDB, RESIZEDB, its keys), EOF and the
// checksum. progress, when not nil, is called after each key with the
// number written so far; when it returns false the write stops with
// ErrCanceled.
func (s *Snapshot) WriteTo(out io.Writer, opts Options, aux [][2]string, progress func(int) bool) (int64, error) {
	if s.chunked {
		s.merge()
	}
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
