package aof

import (
	"bufio"
	"io"
	"iter"

	"github.com/emqd/emqd/internal/store"
)

// Preamble is the RDB part of an AOF (aof-use-rdb-preamble,
// docs/durability.md §1.1 and §4): a rewrite writes the keyspace as an RDB
// file (Valkey 8.0.1's format, with its CRC-64) followed by commands, and a
// replay that finds a file starting with "REDIS" reads that RDB before the
// commands. The server supplies internal/store/rdb's reader and writer (internal/store/aof
// does not import internal/store/rdb, docs/architecture.md "Packages").
type Preamble interface {
	// Enabled is aof-use-rdb-preamble, read when a rewrite starts.
	Enabled() bool
	// NewBase starts an RDB on w: it writes the header (magic and aux
	// fields, aof-base 1).
	NewBase(w io.Writer) (BaseWriter, error)
	// Load reads one RDB from r, positioned at its magic, into the store
	// (the replay holds the store lock; nothing expires while it runs, so a
	// key whose time has passed is kept until the replay ends, §3.1).
	// remain is the number of bytes left in the file. It returns the
	// number of bytes read (up to and including the checksum) and the
	// number of keys loaded; an error refuses the whole file.
	Load(r *bufio.Reader, remain int64) (n int64, keys int, err error)
}

// BaseWriter writes the RDB part of a rewritten file.
type BaseWriter interface {
	// SelectDB starts database db with the RESIZEDB hint (its key count
	// and the count of keys with an expire time when the copy began).
	SelectDB(db, keys, expires int) error
	// Add captures key (called under the store lock): O(1) for a string,
	// a listpack hash and a sorted set (copy-on-write), a copy of the
	// entry list of a hashtable hash. It returns that work in entries
	// copied (1 for an O(1) capture), which bounds a chunk.
	Add(key string, v *store.Value, expireAt int64) int
	// Flush encodes and writes the keys captured since the last Flush
	// (without the store lock).
	Flush() error
	// End writes EOF and the checksum and flushes everything to the
	// writer NewBase was given.
	End() error
}

// chunkWork bounds the capture work (BaseWriter.Add's units) of one
// store-lock acquisition of an RDB-preamble copy.
const chunkWork = 64 << 10

// copyKeyspaceRDB is copyKeyspace for a file with an RDB preamble: every
// key of every database, as it is when visited, captured a chunk at a time
// under the store lock and encoded without it, then EOF and the checksum.
// Each key is visited once (a Go map iteration yields an entry at most
// once), so the RDB holds no duplicate, which Valkey refuses; a key changed
// after it was captured is written again after the RDB as DEL plus its
// value (the catch-up passes, as in the command form). A database flushed
// meanwhile is left (its FLUSHDB comes with the changed keys).
func (a *AOF) copyKeyspaceRDB(w *rwWriter, p Preamble) error {
	base, err := p.NewBase(w.w)
	if err != nil {
		return err
	}
	st := a.cfg.Store
	for i := 0; i < st.NumDBs(); i++ {
		a.lockStore()
		db := st.DB(i)
		n, exp := db.Len(), db.ExpiresLen()
		a.unlockStore()
		if n == 0 {
			continue
		}
		if err := base.SelectDB(i, n, exp); err != nil {
			return err
		}
		if err := a.copyDBRDB(base, i); err != nil {
			return err
		}
	}
	return base.End()
}

func (a *AOF) copyDBRDB(base BaseWriter, i int) error {
	st := a.cfg.Store
	a.lockStore()
	next, stop := iter.Pull2(iter.Seq2[string, *store.Value](st.DB(i).Keys))
	a.unlockStore()
	defer func() {
		a.lockStore()
		stop()
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
		db := st.DB(i)
		for n, work := 0, 0; n < chunkKeys && work < chunkWork; n++ {
			k, v, ok := next()
			if !ok {
				done = true
				break
			}
			at, _ := db.ExpireAt(k)
			work += base.Add(k, v, at)
		}
		a.unlockStore()
		if err := base.Flush(); err != nil {
			return err
		}
		if done {
			return nil
		}
	}
}
