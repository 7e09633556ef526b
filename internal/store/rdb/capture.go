package rdb

import (
	"iter"
	"slices"

	"github.com/emqd/emqd/internal/store"
)

// Capture chunking: a Step holds the store lock for at most chunkKeys keys
// or chunkWork units of capture work (a hashtable hash's entries copied; 1
// for an O(1) capture). A pass over the changed keys that finds fewer than
// smallDirty, or the maxPasses-th pass, is followed by the cut.
const (
	chunkKeys  = 1024
	chunkWork  = 64 << 10
	smallDirty = 256
	maxPasses  = 8
)

// Capturer takes a Snapshot in chunks, so a background save holds the
// store lock only briefly (docs/durability.md §9.2), where Take holds it for
// the whole keyspace: every key is captured as it is when visited, the
// store reports each key changed meanwhile (Store.WatchTouches), passes
// over the changed keys capture them again (a later capture of a key
// replaces the earlier one), and the cut (Finish, under the lock)
// captures the last changed keys. The snapshot is then the keyspace as it
// was at the cut, one instant, as Take's: a key not changed since its
// capture has the same value at the cut, and every changed key was
// captured again at or before it.
//
// Every method is called under the store lock.
type Capturer struct {
	st   *store.Store
	snap *Snapshot
	// over holds a database's keys captured again (Kind 0: missing at
	// their last capture); they replace the first capture of the key.
	over    []map[string]capturedKey
	dirty   map[dkey]struct{}
	cur     map[dkey]struct{} // the keys of the running pass not captured again yet
	flushed []bool
	// pending are the databases still to copy; next and stop iterate the
	// one being copied (db); done once every database has been copied.
	pending []bool
	db      int
	next    func() (string, *store.Value, bool)
	stop    func()
	done    bool
	pass    int
	// restarts counts the copies begun again because their database was
	// flushed or swapped.
	restarts int
	unwch    func()
	chunk    int // keys per step (chunkKeys; tests lower it)
}

type dkey struct {
	db  int
	key string
}

type capturedKey struct {
	obj Object
	at  int64
}

// capturedEntry is one key of the first copy.
type capturedEntry struct {
	key string
	capturedKey
}

// blockLen is the number of keys per block of the first copy.
const blockLen = 1024

// Begin starts a chunked capture of st (call under the store lock).
func Begin(st *store.Store) *Capturer {
	n := st.NumDBs()
	c := &Capturer{
		st:      st,
		snap:    &Snapshot{dbs: make([]dbSnap, n), blocks: make([][][]capturedEntry, n)},
		over:    make([]map[string]capturedKey, n),
		dirty:   make(map[dkey]struct{}),
		flushed: make([]bool, n),
		pending: make([]bool, n),
		db:      -1,
		chunk:   chunkKeys,
	}
	for i := range c.pending {
		c.pending[i] = true
	}
	c.unwch = st.WatchTouches(c.touch)
	return c
}

// touch is the WatchTouches function.
func (c *Capturer) touch(db int, key string) {
	if key == "" {
		for i := range c.flushed {
			if db < 0 || db == i {
				c.flushed[i] = true
			}
		}
		return
	}
	c.dirty[dkey{db, key}] = struct{}{}
}

// Step captures one chunk (call under the store lock) and reports whether
// the capture is ready for its cut (Finish).
func (c *Capturer) Step() (ready bool) {
	c.resetFlushed()
	if !c.done {
		if c.restarts >= maxPasses {
			// Databases flushed or swapped again and again while being
			// copied: the rest is copied at the cut, under the lock.
			return true
		}
		c.copyChunk()
		return false
	}
	if len(c.cur) == 0 {
		if len(c.dirty) < smallDirty || c.pass >= maxPasses {
			return true
		}
		// A pass over the keys changed so far; those changed meanwhile
		// go to the next pass.
		c.cur, c.dirty = c.dirty, make(map[dkey]struct{})
		c.pass++
	}
	work, n := 0, 0
	for k := range c.cur {
		if n >= c.chunk || work >= chunkWork {
			break
		}
		delete(c.cur, k)
		work += c.recapture(k)
		n++
	}
	return false
}

// resetFlushed drops what was captured of a database flushed or swapped
// since, and copies it again (its keys are those of now).
func (c *Capturer) resetFlushed() {
	for i, fl := range c.flushed {
		if !fl {
			continue
		}
		c.flushed[i] = false
		c.snap.blocks[i] = nil
		c.over[i] = nil
		for k := range c.dirty {
			if k.db == i {
				delete(c.dirty, k)
			}
		}
		for k := range c.cur {
			if k.db == i {
				delete(c.cur, k)
			}
		}
		if i == c.db && c.stop != nil {
			c.stop()
			c.next, c.stop = nil, nil
		}
		c.pending[i] = true
		c.done = false
		c.restarts++
	}
}

// copyChunk captures the next chunk of the first copy: the database being
// copied, then the lowest one still to copy.
func (c *Capturer) copyChunk() {
	work, n := 0, 0
	for n < c.chunk && work < chunkWork {
		if c.next == nil {
			c.db = slices.Index(c.pending, true)
			if c.db < 0 {
				c.done = true
				return
			}
			c.pending[c.db] = false
			c.next, c.stop = iter.Pull2(iter.Seq2[string, *store.Value](c.st.DB(c.db).Keys))
		}
		k, v, ok := c.next()
		if !ok {
			c.stop()
			c.next, c.stop = nil, nil
			continue
		}
		// Fixed-size blocks: no slice growth copies a big capture under
		// the lock (merge flattens them without it).
		bl := c.snap.blocks[c.db]
		if len(bl) == 0 || len(bl[len(bl)-1]) == blockLen {
			bl = append(bl, make([]capturedEntry, 0, blockLen))
			c.snap.blocks[c.db] = bl
		}
		at, _ := c.st.DB(c.db).ExpireAt(k)
		o := Capture(v)
		bl[len(bl)-1] = append(bl[len(bl)-1], capturedEntry{k, capturedKey{o, at}})

		work += captureWork(o)
		n++
	}
}

// recapture captures key k as it is now into over.
func (c *Capturer) recapture(k dkey) int {
	if c.over[k.db] == nil {
		c.over[k.db] = make(map[string]capturedKey)
	}
	db := c.st.DB(k.db)
	v := db.Lookup(k.key)
	if v == nil {
		c.over[k.db][k.key] = capturedKey{}
		return 1
	}
	at, _ := db.ExpireAt(k.key)
	o := Capture(v)
	c.over[k.db][k.key] = capturedKey{obj: o, at: at}
	return captureWork(o)
}

func captureWork(o Object) int {
	if o.Kind == store.KindHash && o.Hash.Big() {
		return max(1, o.Hash.Len())
	}
	return 1
}

// Finish is the cut (call under the store lock): it captures the keys
// changed since their capture (and whole any database flushed since),
// stops watching the store, and returns the snapshot, valid once the lock
// is released. The merge of first captures and recaptures is left to
// WriteTo, which runs without the lock.
func (c *Capturer) Finish() *Snapshot {
	c.resetFlushed()
	for !c.done {
		// A database flushed since the last Step (or a Finish before the
		// copy ended): the rest is copied now, under this lock.
		c.copyChunk()
	}
	for k := range c.cur {
		c.recapture(k)
	}
	for k := range c.dirty {
		c.recapture(k)
	}
	c.dirty, c.cur = nil, nil
	c.release()
	c.snap.over = c.over
	c.snap.chunked = true
	return c.snap
}

// Abort stops the capture (call under the store lock).
func (c *Capturer) Abort() { c.release() }

func (c *Capturer) release() {
	if c.stop != nil {
		c.stop()
		c.next, c.stop = nil, nil
	}
	if c.unwch != nil {
		c.unwch()
		c.unwch = nil
	}
}
