package server

import (
	"bufio"
	"fmt"
	"io"

	"github.com/emqd/emqd/internal/store"
	"github.com/emqd/emqd/internal/store/aof"
	"github.com/emqd/emqd/internal/store/rdb"
)

// aofPreamble is the AOF's RDB preamble (aof-use-rdb-preamble,
// docs/durability.md §1.1): internal/store/rdb's writer and reader for internal/store/aof,
// which may not import it.
type aofPreamble struct{ s *Server }

// Enabled is aof-use-rdb-preamble (Valkey's default, yes).
func (p aofPreamble) Enabled() bool { return p.s.Config("aof-use-rdb-preamble") == "yes" }

// NewBase starts the RDB part of a rewritten AOF: rdbcompression and
// rdbchecksum apply as to dump.rdb, and the aux field aof-base is 1, as
// Valkey writes it.
func (p aofPreamble) NewBase(w io.Writer) (aof.BaseWriter, error) {
	s := p.s
	bw := &baseWriter{w: rdb.NewWriter(w, rdb.Options{
		Compress: s.Config("rdbcompression") == "yes",
		Checksum: s.Config("rdbchecksum") == "yes",
	})}
	if err := bw.w.Header(s.rdbAux(true)); err != nil {
		return nil, err
	}
	return bw, nil
}

// Load reads the preamble into the store (the replay holds the store lock
// and has SetLoading on, so nothing expires: a key whose time has passed
// is kept until the replay ends and then deleted, docs/durability.md
// §3.1). The whole RDB is read and checked before a key is stored; a key
// twice is Valkey's "RDB has duplicated key" refusal.
func (p aofPreamble) Load(r *bufio.Reader, remain int64) (int64, int, error) {
	s := p.s
	st := s.store
	var keys []rdb.Key
	info, err := rdb.Load(r, remain, st, rdb.Limits{DBs: st.NumDBs()}, s.Config("rdbchecksum") == "yes",
		func(k rdb.Key) error {
			keys = append(keys, k)
			return nil
		})
	if err != nil {
		return info.Size, 0, err
	}
	for _, k := range keys {
		if st.DB(k.DB).Peek(k.Key) != nil {
			return info.Size, 0, fmt.Errorf("RDB has duplicated key '%s' in DB %d", k.Key, k.DB)
		}
	}
	for _, k := range keys {
		db := st.DB(k.DB)
		db.Put(k.Key, k.Value)
		if k.ExpireAt != 0 {
			db.SetExpire(k.Key, k.ExpireAt)
		}
		if k.IdleSec >= 0 {
			st.SetIdleMs(k.Value, k.IdleSec*1000)
		}
	}
	return info.Size, len(keys), nil
}

// baseWriter captures keys under the store lock and encodes them without
// it.
type baseWriter struct {
	w       *rdb.Writer
	pending []pendingKey
}

type pendingKey struct {
	key string
	obj rdb.Object
	at  int64
}

func (b *baseWriter) SelectDB(db, keys, expires int) error { return b.w.SelectDB(db, keys, expires) }

// Add captures v (store lock held): the work is the number of entries a
// hashtable hash's capture copies, 1 for the O(1) captures.
func (b *baseWriter) Add(key string, v *store.Value, at int64) int {
	o := rdb.Capture(v)
	b.pending = append(b.pending, pendingKey{key, o, at})
	if o.Kind == store.KindHash && o.Hash.Big() {
		return max(1, o.Hash.Len())
	}
	return 1
}

func (b *baseWriter) Flush() error {
	for i := range b.pending {
		k := &b.pending[i]
		if err := b.w.Key(k.key, k.obj, k.at); err != nil {
			return err
		}
		*k = pendingKey{}
	}
	b.pending = b.pending[:0]
	return nil
}

func (b *baseWriter) End() error { return b.w.End() }
