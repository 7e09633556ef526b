package aof

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/emqd/emqd/internal/num"
	"github.com/emqd/emqd/internal/store"
)

// rewriteItemsPerCmd is how many field/value pairs or members one rewritten
// HSET/ZADD carries (Valkey's AOF_REWRITE_ITEMS_PER_CMD).
const rewriteItemsPerCmd = 64

// catchUpSmall: once the records appended during a rewrite that are still
// to be copied fit in this many bytes, the rewrite finishes with the writers
// paused (Append blocks) for one small write, two fsyncs and a rename.
const catchUpSmall = 256 << 10

// Chunking of the copy: the store lock is held for at most chunkKeys keys
// or chunkBytes bytes of output at a time; a sorted set with more than
// bigZSet members is copied copy-on-write under the lock (O(1)) and written
// out without it.
const (
	chunkKeys  = 512
	chunkBytes = 256 << 10
	bigZSet    = 1024
	// smallDirty: when a pass over the changed keys found fewer, the next
	// one is the cut.
	smallDirty = 256
)

var errRewriteCanceled = errors.New("rewrite canceled by shutdown")

// tempSeq numbers the temporary files, so two AOFs of one process (CONFIG
// SET appendonly no, then yes) never share one.
var tempSeq atomic.Int64

// StartRewrite starts a background rewrite (BGREWRITEAOF): it returns
// ErrRewriteInProgress when one is running, nil when it started. It writes
// the live keyspace as an RDB preamble (Config.Preamble, when Enabled) or
// as SET/HSET/ZADD commands to a temporary file in Dir while the server
// keeps serving, then renames it over the AOF:
//
//  1. Copy: every key is written as it is when visited, a few hundred keys
//     per store-lock acquisition; the store reports every key written
//     meanwhile (Touched: the AOF is the store's Feed and a store.Toucher).
//  2. Passes over the keys changed since they were copied: each is written
//     again as DEL plus its current value (FLUSHDB/FLUSHALL as themselves),
//     until few remain.
//  3. The cut, under the store lock: the last changed keys are captured
//     (large sorted sets copy-on-write) and from then on appended records
//     are also collected for the new file. The file, replayed, now gives
//     the keyspace as of the cut; the collected records bring it forward.
//  4. The collected records are copied until few remain, then, with Append
//     paused: the rest is written, the file fsynced and renamed over the
//     AOF, and the directory fsynced.
//
// Until the rename the old file is the AOF, complete; after it the new one
// is. The outcome is in Info and the log.
func (a *AOF) StartRewrite() error {
	a.mu.Lock()
	if a.closing || a.cfg.Store == nil {
		a.mu.Unlock()
		return errClosed
	}
	if a.rewriting {
		a.mu.Unlock()
		return ErrRewriteInProgress
	}
	a.rewriting = true
	a.rwStart = time.Now()
	a.rwMaxHold = 0
	a.rwDone = make(chan struct{})
	done := a.rwDone
	a.mu.Unlock()
	a.log.Info("Background append only file rewriting started")
	go func() {
		err := a.rewrite()
		a.mu.Lock()
		// What the log line reports is read before rewriting goes false:
		// from then on the next StartRewrite may reset both.
		took, hold := time.Since(a.rwStart), a.rwMaxHold
		a.rw = nil
		a.rewriting = false
		a.lastRwSec = int64(took / time.Second)
		if err == nil {
			a.lastRwOK = true
			a.rewrites++
			a.rwFailures = 0
		} else {
			a.lastRwOK = false
			a.rwFailures++
			a.lastRwFailure = time.Now()
		}
		a.mu.Unlock()
		if err == nil {
			a.log.Info("Background AOF rewrite finished successfully",
				"seconds", fmt.Sprintf("%.3f", took.Seconds()),
				"longest_lock_ms", fmt.Sprintf("%.1f", float64(hold.Microseconds())/1000))
		} else {
			a.log.Warn("Background AOF rewrite terminated with error: " + err.Error())
		}
		close(done)
	}()
	return nil
}

// WaitRewrite blocks until the running rewrite (if any) has finished.
func (a *AOF) WaitRewrite() {
	a.mu.Lock()
	done := a.rwDone
	a.mu.Unlock()
	if done != nil {
		<-done
	}
}

func (a *AOF) hook(step string) error {
	if a.cfg.Hook == nil {
		return nil
	}
	return a.cfg.Hook(step)
}

func (a *AOF) rewrite() (err error) {
	tmp := filepath.Join(a.cfg.Dir, fmt.Sprintf("temp-rewriteaof-bg-%d-%d.aof", os.Getpid(), tempSeq.Add(1)))
	st := a.cfg.Store
	a.lockStore()
	a.tracking = true
	a.dirty = make(map[dkey]struct{})
	a.flushed = make([]bool, st.NumDBs())
	a.unlockStore()

	var f File
	switched := false
	defer func() {
		if switched {
			return
		}
		a.lockStore()
		a.tracking, a.dirty, a.flushed = false, nil, nil
		a.unlockStore()
		a.mu.Lock()
		a.rw = nil
		a.mu.Unlock()
		if f != nil {
			f.Close()
			_ = a.fs.Remove(tmp)
		}
	}()
	if err := a.hook("snapshot"); err != nil {
		return err
	}
	f, err = a.fs.Create(tmp)
	if err != nil {
		return err
	}
	w := &rwWriter{w: bufio.NewWriterSize(fileWriter{f}, 1<<20), db: -1}
	if p := a.cfg.Preamble; p != nil && p.Enabled() {
		err = a.copyKeyspaceRDB(w, p)
	} else {
		err = a.copyKeyspace(w)
	}
	if err != nil {
		return err
	}
	if err := a.hook("copied"); err != nil {
		return err
	}
	for pass := 0; ; pass++ {
		a.lockStore()
		d, fl := a.dirty, a.flushed
		cut := pass >= 8 || len(d) < smallDirty
		if cut {
			// The cut: the last changed keys are captured and from here on
			// appended records are collected.
			a.tracking, a.dirty, a.flushed = false, nil, nil
			caps := captureKeys(st, d)
			a.mu.Lock()
			a.rw = &rewriteBuf{selDB: -1}
			a.mu.Unlock()
			a.unlockStore()
			err = w.writeCaptured(fl, caps)
		} else {
			a.dirty, a.flushed = make(map[dkey]struct{}), make([]bool, st.NumDBs())
			a.unlockStore()
			err = a.writeChanged(w, d, fl)
		}
		if err != nil {
			return err
		}
		if cut {
			break
		}
	}
	if err := w.w.Flush(); err != nil {
		return err
	}
	if err := a.hook("written"); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := a.hook("synced"); err != nil {
		return err
	}
	// Copy the records appended since the cut until what is left is small.
	for range 16 {
		if a.rwCancel.Load() {
			return errRewriteCanceled
		}
		a.mu.Lock()
		chunk := a.rw.buf
		a.rw.buf = nil
		a.mu.Unlock()
		if _, err := f.Write(chunk); err != nil {
			return err
		}
		if len(chunk) <= catchUpSmall {
			break
		}
	}
	if err := a.hook("caught-up"); err != nil {
		return err
	}

	// The switch: writers wait (wmu, then mu, so Append blocks) while the
	// last records are copied, the file is made durable and renamed; smu
	// first, so no background fsync runs on the file being replaced.
	a.smu.Lock()
	defer a.smu.Unlock()
	a.wmu.Lock()
	defer a.wmu.Unlock()
	a.mu.Lock()
	defer a.mu.Unlock()
	if (a.f == nil && !a.waiting) || a.rwCancel.Load() {
		return errRewriteCanceled
	}
	if _, err := f.Write(a.rw.buf); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	size, err := f.Size()
	if err != nil {
		return err
	}
	if err := a.hook("before-rename"); err != nil {
		return err
	}
	if err := a.fs.Rename(tmp, a.path); err != nil {
		return err
	}
	// From here the new file is the AOF: switch to it whatever happens.
	switched = true
	old := a.f
	a.f = renamedFile{File: f, path: a.path}
	a.fileSize, a.syncedSize = size, size
	a.unsynced, a.complete, a.needRepair = a.unsynced[:0], true, false
	a.buf = nil // every buffered record is in the new file
	a.written, a.synced = a.appended, a.appended
	a.selDB = a.rw.selDB
	a.rw = nil
	a.curSize, a.baseSize = size, size
	a.writeErr, a.syncErr, a.lastErr = nil, nil, nil
	a.needDirSync = true
	if old != nil {
		old.Close()
	}
	a.waiting = false
	if err := a.hook("renamed"); err != nil {
		return err
	}
	if err := a.fs.SyncDir(a.cfg.Dir); err != nil {
		// The rename may not survive a power loss: refuse writes until a
		// directory fsync succeeds (sync retries it).
		a.syncErr = err
		a.failLocked(err, "Fail to fsync the AOF directory: "+Strerror(err))
		return err
	}
	a.needDirSync = false
	return a.hook("done")
}

// lockStore and unlockStore take and release the store lock for the
// rewrite, keeping the longest hold (logged when the rewrite ends).
func (a *AOF) lockStore() {
	a.cfg.Store.Lock()
	a.lockedAt = time.Now()
}

func (a *AOF) unlockStore() {
	a.rwMaxHold = max(a.rwMaxHold, time.Since(a.lockedAt))
	a.cfg.Store.Unlock()
}

// dkey is a key of one database.
type dkey struct {
	db  int
	key string
}

// Touched is store.Toucher: the store calls it with every changed key (""
// for a flushed or swapped database, -1 every database) once the AOF is
// its Feed (Store.SetFeed), under the store lock, which also guards
// tracking, dirty and flushed. Only a running rewrite keeps them.
func (a *AOF) Touched(db int, key string) {
	if !a.tracking {
		return
	}
	if key == "" {
		for i := range a.flushed {
			if db < 0 || db == i {
				a.flushed[i] = true
			}
		}
		return
	}
	a.dirty[dkey{db, key}] = struct{}{}
}

// rwWriter writes the rewritten file.
type rwWriter struct {
	w      *bufio.Writer
	db     int // the database of the last SELECT written (-1: none)
	out    []byte
	argv   [][]byte
	scores []byte
}

// copyKeyspace writes every key of every database as it is when visited,
// holding the store lock for one chunk of keys at a time. A database
// flushed meanwhile is left (its FLUSHDB comes with the changed keys).
func (a *AOF) copyKeyspace(w *rwWriter) error {
	for i := 0; i < a.cfg.Store.NumDBs(); i++ {
		if err := a.copyDB(w, i); err != nil {
			return err
		}
	}
	return nil
}

func (a *AOF) copyDB(w *rwWriter, i int) error {
	st := a.cfg.Store
	a.lockStore()
	next, stop := iter.Pull2(iter.Seq2[string, *store.Value](st.DB(i).Keys))
	a.unlockStore()
	defer func() {
		a.lockStore()
		stop() // ends the iteration (a no-op once it is done)
		a.unlockStore()
	}()
	for {
		if a.rwCancel.Load() {
			return errRewriteCanceled
		}
		a.lockStore()
		if a.flushed[i] {
			a.unlockStore()
			return nil
		}
		done := false
		var big *store.ZSetSnapshot
		var bigKey string
		var bigAt int64
		db := st.DB(i)
		for n := 0; n < chunkKeys && len(w.out) < chunkBytes; n++ {
			k, v, ok := next()
			if !ok {
				done = true
				break
			}
			at, _ := db.ExpireAt(k)
			if big = w.encode(i, k, v, at, false); big != nil {
				bigKey, bigAt = k, at
				break
			}
		}
		a.unlockStore()
		if err := w.flushOut(); err != nil {
			return err
		}
		if big != nil {
			if err := w.writeZSet(bigKey, big, bigAt); err != nil {
				return err
			}
		}
		if done {
			return nil
		}
	}
}

// writeChanged writes the keys of d again, each as DEL plus its current
// value, after a FLUSHDB for every database flushed meanwhile, taking the
// store lock per chunk of keys.
func (a *AOF) writeChanged(w *rwWriter, d map[dkey]struct{}, flushed []bool) error {
	st := a.cfg.Store
	keys := sortedKeys(d)
	w.writeFlushes(flushed)
	for len(keys) > 0 {
		if err := w.flushOut(); err != nil {
			return err
		}
		if a.rwCancel.Load() {
			return errRewriteCanceled
		}
		a.lockStore()
		var big *store.ZSetSnapshot
		var bigKey string
		var bigAt int64
		n := 0
		for n < len(keys) && n < chunkKeys && len(w.out) < chunkBytes {
			k := keys[n]
			n++
			db := st.DB(k.db)
			at, _ := db.ExpireAt(k.key)
			if big = w.encode(k.db, k.key, db.Lookup(k.key), at, true); big != nil {
				bigKey, bigAt = k.key, at
				break
			}
		}
		a.unlockStore()
		keys = keys[n:]
		if big != nil {
			if err := w.flushOut(); err != nil {
				return err
			}
			if err := w.writeZSet(bigKey, big, bigAt); err != nil {
				return err
			}
		}
	}
	return w.flushOut()
}

func sortedKeys(d map[dkey]struct{}) []dkey {
	keys := make([]dkey, 0, len(d))
	for k := range d {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].db < keys[j].db })
	return keys
}

// keyCopy is one key captured at the cut: its value (kind 0: missing) as it
// is then, readable after the store lock is released.
type keyCopy struct {
	db    int
	key   string
	kind  store.Kind
	str   []byte
	pairs [][]byte
	z     *store.ZSetSnapshot
	at    int64 // expire time (Unix ms), 0: none
}

// captureKeys copies the keys of d (under the store lock): strings are
// copied, hash field lists are copied (values are never modified in place),
// sorted sets are copy-on-write snapshots.
func captureKeys(st *store.Store, d map[dkey]struct{}) []keyCopy {
	keys := sortedKeys(d)
	out := make([]keyCopy, len(keys))
	for i, k := range keys {
		c := keyCopy{db: k.db, key: k.key}
		if v := st.DB(k.db).Lookup(k.key); v != nil {
			c.at, _ = st.DB(k.db).ExpireAt(k.key)
			c.kind = v.Kind
			switch v.Kind {
			case store.KindString:
				c.str = bytes.Clone(v.Str)
			case store.KindHash:
				c.pairs = make([][]byte, 0, 2*v.Hash().Len())
				v.Hash().Range(func(f string, val []byte) bool {
					c.pairs = append(c.pairs, []byte(f), val)
					return true
				})
			case store.KindZSet:
				c.z = v.ZSet.Snapshot()
			}
		}
		out[i] = c
	}
	return out
}

// writeCaptured writes the cut's keys (DEL plus value) after the FLUSHDBs.
func (w *rwWriter) writeCaptured(flushed []bool, caps []keyCopy) error {
	w.out = w.out[:0]
	w.writeFlushes(flushed)
	for _, c := range caps {
		w.selectDB(c.db)
		key := []byte(c.key)
		w.out = AppendCommand(w.out, [][]byte{[]byte("DEL"), key})
		switch c.kind {
		case store.KindString:
			w.out = AppendCommand(w.out, [][]byte{[]byte("SET"), key, c.str})
		case store.KindHash:
			for i := 0; i < len(c.pairs); i += 2 * rewriteItemsPerCmd {
				end := min(len(c.pairs), i+2*rewriteItemsPerCmd)
				w.argv = append(append(w.argv[:0], []byte("HSET"), key), c.pairs[i:end]...)
				w.out = AppendCommand(w.out, w.argv)
			}
		case store.KindZSet:
			if err := w.flushOut(); err != nil {
				return err
			}
			if err := w.writeZSet(c.key, c.z, c.at); err != nil {
				return err
			}
		}
		if c.kind != store.KindZSet {
			w.appendExpire(key, c.at)
		}
		if len(w.out) >= chunkBytes {
			if err := w.flushOut(); err != nil {
				return err
			}
		}
	}
	return w.flushOut()
}

func (w *rwWriter) writeFlushes(flushed []bool) {
	for i, fl := range flushed {
		if fl {
			w.selectDB(i)
			w.out = AppendCommand(w.out, [][]byte{[]byte("FLUSHDB")})
		}
	}
}

func (w *rwWriter) selectDB(db int) {
	if db != w.db {
		w.out = appendSelect(w.out, db)
		w.db = db
	}
}

// flushOut hands the encoded bytes to the buffered file writer.
func (w *rwWriter) flushOut() error {
	if len(w.out) == 0 {
		return nil
	}
	_, err := w.w.Write(w.out)
	w.out = w.out[:0]
	return err
}

// encode appends key's value v (under the store lock) to w.out, preceded
// by DEL when del: SET, or HSET / ZADD with up to rewriteItemsPerCmd items
// each (Valkey's rewriteAppendOnlyFileRio, with HSET for HMSET), then
// PEXPIREAT key at when at is not 0. A sorted set larger than bigZSet is
// not encoded: its snapshot is returned for writeZSet, which the caller
// runs once the lock is released.
func (w *rwWriter) encode(db int, k string, v *store.Value, at int64, del bool) *store.ZSetSnapshot {
	w.selectDB(db)
	key := []byte(k)
	if del {
		w.out = AppendCommand(w.out, [][]byte{[]byte("DEL"), key})
	}
	if v == nil {
		return nil
	}
	switch v.Kind {
	case store.KindString:
		w.out = AppendCommand(w.out, [][]byte{[]byte("SET"), key, v.Str})
	case store.KindHash:
		w.argv = append(w.argv[:0], []byte("HSET"), key)
		v.Hash().Range(func(field string, value []byte) bool {
			w.argv = append(w.argv, []byte(field), value)
			if len(w.argv) == 2+2*rewriteItemsPerCmd {
				w.out = AppendCommand(w.out, w.argv)
				w.argv = w.argv[:2]
			}
			return true
		})
		if len(w.argv) > 2 {
			w.out = AppendCommand(w.out, w.argv)
		}
	case store.KindZSet:
		if v.ZSet.Len() > bigZSet {
			return v.ZSet.Snapshot()
		}
		w.appendZAdds(key, v.ZSet.AscendAll)
	}
	w.appendExpire(key, at)
	return nil
}

// appendExpire appends PEXPIREAT key at (at 0: nothing), the absolute
// expire time (never a relative one: the file may be replayed any time
// later).
func (w *rwWriter) appendExpire(key []byte, at int64) {
	if at == 0 {
		return
	}
	w.out = AppendCommand(w.out, [][]byte{[]byte("PEXPIREAT"), key, strconv.AppendInt(nil, at, 10)})
}

// appendZAdds appends ZADD commands for the members scan yields.
func (w *rwWriter) appendZAdds(key []byte, scan func(func(store.ZItem) bool)) {
	w.argv = append(w.argv[:0], []byte("ZADD"), key)
	w.scores = w.scores[:0]
	scan(func(it store.ZItem) bool {
		st := len(w.scores)
		w.scores = num.AppendScore(w.scores, it.Score)
		w.argv = append(w.argv, w.scores[st:len(w.scores):len(w.scores)], []byte(it.Member))
		if len(w.argv) == 2+2*rewriteItemsPerCmd {
			w.out = AppendCommand(w.out, w.argv)
			w.argv = w.argv[:2]
			w.scores = w.scores[:0]
		}
		return true
	})
	if len(w.argv) > 2 {
		w.out = AppendCommand(w.out, w.argv)
	}
}

// writeZSet writes a sorted-set snapshot (without the store lock), in
// chunks, then its PEXPIREAT (at 0: none); the SELECT of its database is
// already written.
func (w *rwWriter) writeZSet(key string, z *store.ZSetSnapshot, at int64) error {
	var err error
	k := []byte(key)
	w.argv = append(w.argv[:0], []byte("ZADD"), k)
	w.scores = w.scores[:0]
	z.AscendAll(func(it store.ZItem) bool {
		st := len(w.scores)
		w.scores = num.AppendScore(w.scores, it.Score)
		w.argv = append(w.argv, w.scores[st:len(w.scores):len(w.scores)], []byte(it.Member))
		if len(w.argv) == 2+2*rewriteItemsPerCmd {
			w.out = AppendCommand(w.out, w.argv)
			w.argv = w.argv[:2]
			w.scores = w.scores[:0]
			if len(w.out) >= chunkBytes {
				if err = w.flushOut(); err != nil {
					return false
				}
			}
		}
		return true
	})
	if err != nil {
		return err
	}
	if len(w.argv) > 2 {
		w.out = AppendCommand(w.out, w.argv)
	}
	w.appendExpire(k, at)
	return w.flushOut()
}

// fileWriter adapts File to io.Writer for bufio.
type fileWriter struct{ f File }

func (w fileWriter) Write(p []byte) (int, error) { return w.f.Write(p) }
