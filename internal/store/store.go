// Package store is emqd's keyspace: numbered databases of keys holding
// strings, hashes (insertion-ordered) and sorted sets (a counted B+tree
// ordered by score then member bytes, plus a member index), and the Valkey
// commands over them with Valkey 8.0's replies and error texts
// (docs/compat.md §1, §3).
//
// Concurrency: the Store has one writer. Callers take Lock/Unlock around a
// batch of commands (a pipeline, an EXEC, a verb) and run every command of the
// batch under that one acquisition; nothing in this package locks on its own.
package store

import (
	"math"
	"sync"

	"github.com/emqd/emqd/internal/plan"
	"github.com/emqd/emqd/internal/resp"
)

// Error texts shared by many commands (Valkey's object.c and server.c).
const (
	ErrWrongType   = "WRONGTYPE Operation against a key holding the wrong kind of value"
	ErrNotInteger  = "ERR value is not an integer or out of range"
	ErrNotFloat    = "ERR value is not a valid float"
	ErrSyntax      = "ERR syntax error"
	ErrNoSuchKey   = "ERR no such key"
	ErrInvalidCur  = "ERR invalid cursor"
	ErrHashNotInt  = "ERR hash value is not an integer"
	ErrOverflow    = "ERR increment or decrement would overflow"
	ErrPositive    = "ERR value is out of range, must be positive"
	ErrMinMaxFloat = "ERR min or max is not a float"
	ErrMinMaxLex   = "ERR min or max not valid string range item"
)

// Kind is the type of a stored value, as TYPE names it.
type Kind uint8

// The value kinds emqd stores.
const (
	KindString Kind = iota + 1
	KindHash
	KindZSet
)

// TypeName is the name TYPE replies for k ("string", "hash", "zset").
func (k Kind) TypeName() string {
	switch k {
	case KindString:
		return "string"
	case KindHash:
		return "hash"
	case KindZSet:
		return "zset"
	}
	return "none"
}

// Value is what one key holds. Exactly one of Str, Hash, ZSet is in use,
// as Kind says. Empty hashes and sorted sets are never stored. A key's TTL
// is kept by its database, not here (expire.go).
type Value struct {
	Kind Kind
	// enc is the encoding OBJECT ENCODING reports for a string (encoding.go).
	enc strEnc
	// access is the last access on the server clock, in 16 ms units
	// (object.go).
	access uint32
	// Str is a string's bytes; a listpack-encoded hash keeps its listpack
	// here (hash.go).
	Str  []byte
	ZSet *ZSet
	// tab is a hash's table (hash.go: a Hash is its Value).
	tab *hashTable
}

// Hash is v as a hash, nil when v holds another type (a Hash and its Value
// are one object, hash.go).
func (v *Value) Hash() *Hash {
	if v.Kind != KindHash {
		return nil
	}
	return (*Hash)(v)
}

// DB is one numbered database (SELECT n).
type DB struct {
	Index int
	keys  keyTable // the keyspace (keytable.go)
	// expires holds the absolute expire time (Unix ms) of every key that
	// has one (expire.go), under the keyspace's own string of the key.
	expires oaTable[int64]
	// avgTTL is the estimate INFO keyspace reports (ms), kept by the
	// active expire cycle as Valkey's db->avg_ttl.
	avgTTL int64
	s      *Store
	scan   scanCache // SCAN/HSCAN/ZSCAN cursor snapshots (scan.go)
	// keysPeak and expiresPeak are the most entries keys and expires held
	// since they were built (shrink.go).
	keysPeak, expiresPeak int
	// expCursor is the active expire cycle's place in expires: the slot
	// its next sample starts at (expire.go, as Valkey's expires_cursor).
	expCursor int
}

// Get returns the value at key, or nil. A key whose TTL has passed is
// deleted first (lazy expiry, expire.go) and reads as missing; an existing
// key's access time is updated (OBJECT IDLETIME). Use Peek for the commands
// Valkey looks up without touching (TYPE, EXISTS, TTL, OBJECT).
func (d *DB) Get(key string) *Value {
	v := d.keys.get(key)
	if v == nil {
		return nil
	}
	if d.expires.used > 0 && d.expireIfNeeded(key) {
		return nil
	}
	d.s.touchAccess(v)
	return v
}

// Warm looks key up with no effect at all (no lazy expiry, no access
// time) and returns the first byte of its value's bytes (0 when there is
// none): a caller about to read many keys one after the other warms them
// all first in one loop, where the cache misses of independent lookups
// overlap, instead of waiting for each lookup's misses in turn (the stall
// sweep's rows, bench/README.md "The stall sweep, round 5"). It is not
// inlined, so that its loads are made though the caller drops the byte.
//
//go:noinline
func (d *DB) Warm(key string) byte {
	v := d.keys.get(key)
	if v == nil || len(v.Str) == 0 {
		return 0
	}
	return v.Str[0]
}

// WarmKey is Warm for a key given as bytes (not kept) that also returns
// the keyspace's own string of it ("" when key is absent): a caller that
// built key in scratch bytes to look it up keeps the stored string
// instead (immutable, and as long-lived as any key string: the sweep's
// row keys, internal/verbs readDueFor).
func (d *DB) WarmKey(key []byte) (string, byte) {
	i := d.keys.find(zview(key))
	if i < 0 {
		return "", 0
	}
	s := &d.keys.slots[i]
	if len(s.v.Str) == 0 {
		return s.key(), 0
	}
	return s.key(), s.v.Str[0]
}

// Peek is Get without updating the access time.
func (d *DB) Peek(key string) *Value {
	v := d.keys.get(key)
	if v == nil {
		return nil
	}
	if d.expires.used > 0 && d.expireIfNeeded(key) {
		return nil
	}
	return v
}

// Len is the number of keys (DBSIZE), counting keys whose TTL has passed
// but that no read or expire cycle has deleted yet, as Valkey does.
func (d *DB) Len() int { return d.keys.len() }

// Put stores v at key, replacing what was there, and clears the key's TTL
// (Valkey's setKey without KEEPTTL). It does not touch watchers nor count a
// change; callers use Ctx.Dirty for that.
func (d *DB) Put(key string, v *Value) {
	d.s.mutations++
	d.s.touchAccess(v)
	if d.keys.put(key, v) {
		d.noteKeys()
	}
	if d.expires.used > 0 {
		d.expires.del(key)
	}
}

// Replace stores v at key keeping the key's TTL (Valkey's dbReplaceValue,
// SET ... KEEPTTL).
func (d *DB) Replace(key string, v *Value) {
	d.s.mutations++
	d.s.touchAccess(v)
	if d.keys.put(key, v) {
		d.noteKeys()
	}
}

// Remove deletes key (and its TTL) and reports whether it existed.
func (d *DB) Remove(key string) bool {
	if !d.keys.del(key) {
		return false
	}
	d.s.mutations++
	if d.expires.used > 0 {
		d.expires.del(key)
	}
	d.noteKeyGone()
	return true
}

// Mutating declares that the caller is about to change a value it found
// through a lookup (Get, LookupHash, LookupZSet: a field deleted, a member
// popped, a string changed in place). The DB's own write methods declare
// themselves. Store.Mutations counts these declarations.
func (d *DB) Mutating() { d.s.mutations++ }

// Keys calls fn for every key until fn returns false, skipping keys whose
// TTL has passed (without deleting them, as KEYS). Order is unspecified.
func (d *DB) Keys(fn func(key string, v *Value) bool) {
	for k, v := range d.keys.all() {
		if d.expires.used > 0 && d.isExpired(k) {
			continue
		}
		if !fn(k, v) {
			return
		}
	}
}

// NoteRead reports that the running command read key (present or not) to
// the observer (KeyRead): commands whose declared key is not what they
// read (the EMQ verbs, which name a queue) call it so that a tracking
// client is told when what it read changes.
func (d *DB) NoteRead(key string) {
	if d.s.obs != nil {
		d.s.obs.KeyRead(key)
	}
}

// Clear removes every key.
func (d *DB) Clear() {
	d.s.mutations++
	d.keys = keyTable{}
	d.expires = oaTable[int64]{}
	d.expCursor = 0
	d.keysPeak, d.expiresPeak = 0, 0
	d.avgTTL = 0
}

// LookupHash returns the hash at key: (nil, "") when the key is missing,
// (nil, ErrWrongType) when it holds another type.
func (d *DB) LookupHash(key string) (*Hash, string) {
	v := d.Get(key)
	if v == nil {
		return nil, ""
	}
	if v.Kind != KindHash {
		return nil, ErrWrongType
	}
	return v.Hash(), ""
}

// LookupZSet returns the sorted set at key: (nil, "") when the key is
// missing, (nil, ErrWrongType) when it holds another type.
func (d *DB) LookupZSet(key string) (*ZSet, string) {
	v := d.Get(key)
	if v == nil {
		return nil, ""
	}
	if v.Kind != KindZSet {
		return nil, ErrWrongType
	}
	return v.ZSet, ""
}

// HashForWrite returns the hash at key, creating an empty one (stored) when
// the key is missing; ErrWrongType when the key holds another type. A caller
// that ends up writing nothing into a created hash must remove it again
// (DropIfEmpty).
func (d *DB) HashForWrite(key string) (*Hash, string) {
	d.s.mutations++
	v := d.Get(key)
	if v == nil {
		return d.createHash(key).Hash(), ""
	}
	if v.Kind != KindHash {
		return nil, ErrWrongType
	}
	return v.Hash(), ""
}

// HashForWriteArg is HashForWrite for a key given as a command's argument
// bytes (not kept). It also returns the key as a string: the keyspace's own
// string when the key exists (no allocation; immutable and as long-lived as
// any key string), a new one when the hash is created. The string is the
// one the command hands to Ctx.Dirty, whose observers (WATCH, tracking,
// blocked clients) may keep it. ("", nil, ErrWrongType) when the key holds
// another type.
func (d *DB) HashForWriteArg(key []byte) (string, *Hash, string) {
	d.s.mutations++
	k, v := d.lookupArg(key)
	if v == nil {
		k = string(key)
		v = newHashValue(d.s.hashLim)
		d.Put(k, v)
		return k, v.Hash(), ""
	}
	if v.Kind != KindHash {
		return "", nil, ErrWrongType
	}
	return k, v.Hash(), ""
}

// lookupArg is Get for a key given as a command's argument bytes (not
// kept): the value and the keyspace's own string of the key, or ("", nil)
// when the key is missing or its TTL has passed (then deleted, as Get
// does). One lookup, no allocation.
func (d *DB) lookupArg(key []byte) (string, *Value) {
	i := d.keys.find(zview(key))
	if i < 0 {
		return "", nil
	}
	s := &d.keys.slots[i]
	k, v := s.key(), s.v
	if d.expires.used > 0 {
		// A database with TTLs takes Get's path (lazy expiry; a second
		// lookup). Calling expireIfNeeded from here instead made go1.26's
		// -race build convert every read command's key on the heap
		// (TestReadKeyConversionOnStack fails under -race); not explained.
		if v = d.Get(k); v == nil {
			return "", nil
		}
		return k, v
	}
	d.s.touchAccess(v)
	return k, v
}

// ZSetForWrite is HashForWrite for sorted sets.
func (d *DB) ZSetForWrite(key string) (*ZSet, string) {
	d.s.mutations++
	v := d.Get(key)
	if v == nil {
		return d.createZSet(key).ZSet, ""
	}
	if v.Kind != KindZSet {
		return nil, ErrWrongType
	}
	return v.ZSet, ""
}

// createHash stores an empty hash at key, which the caller knows to be
// missing (a lookup just returned nil), and returns its value: the rest of
// HashForWrite without a second lookup.
func (d *DB) createHash(key string) *Value {
	v := newHashValue(d.s.hashLim)
	d.Put(key, v)
	return v
}

// createZSet is createHash for a sorted set.
func (d *DB) createZSet(key string) *Value {
	z := NewZSet()
	z.lim = &d.s.limits
	v := &Value{Kind: KindZSet, ZSet: z}
	d.Put(key, v)
	return v
}

// DropIfEmpty removes key when it holds an empty hash or sorted set
// (Valkey never stores empty collections) and reports whether it did.
func (d *DB) DropIfEmpty(key string) bool {
	v := d.keys.get(key)
	if v == nil {
		return false
	}
	if (v.Kind == KindHash && v.Hash().Len() == 0) || (v.Kind == KindZSet && v.ZSet.Len() == 0) {
		d.Remove(key)
		return true
	}
	return false
}

// Store is the whole keyspace: Databases numbered 0..n-1.
type Store struct {
	mu  sync.Mutex
	dbs []*DB

	// obs is the observer (WithObserver; nil: nobody), fixed at New.
	obs Observer
	// feed is the persister (SetFeed), toucher the same when it learns
	// changed keys; grouping and group are Record's EXEC group.
	feed     Feed
	toucher  Toucher
	grouping bool
	group    group
	// touchWatchers are called as the Toucher is (WatchTouches: a
	// background save's chunked capture, docs/durability.md §9.2).
	touchWatchers []*touchWatcher

	// watched maps a key to its watchers; the value is the watcher's
	// "expired when watched" flag (Valkey's watchedKey.expired, expire.go).
	watched map[watchKey]map[*Watcher]bool
	// Dirty counts changes since start, as Valkey's server.dirty.
	DirtyCount int64

	// now is the running command's time (Unix ms, the server clock): every
	// TTL check of the command uses it (SetNow).
	now int64
	// loading is true while the AOF is replayed: nothing expires then
	// (Valkey's server.loading).
	loading bool
	// limits are the encoding thresholds (hash-max-listpack-*,
	// zset-max-listpack-*) OBJECT ENCODING follows (encoding.go).
	limits Limits
	// hashLim is the table every listpack hash of this store points to for
	// the thresholds (hash.go).
	hashLim *hashTable
	// expireDB is where the next active expire cycle starts.
	expireDB int
	// ProtoMaxBulkLen is proto-max-bulk-len (0: MaxStringLen): the longest
	// string APPEND and SETRANGE may build.
	ProtoMaxBulkLen int64
	// Expiry statistics (INFO stats), see expire.go.
	ExpiredKeys          int64
	ExpiredStalePerc     float64
	ExpiredTimeCapCount  int64
	ExpireCycleCPUMicros int64
	// mutations counts the keyspace changes begun (see Mutations).
	mutations uint64
	// shrinkDue: a database map fell below the rebuild line (shrink.go).
	shrinkDue bool
	// MapsShrunk counts the database maps ShrinkMaps rebuilt (INFO
	// memory's mem_maps_shrunk).
	MapsShrunk int64
	// planKeys is ApplyPlan's scratch, reused from plan to plan (plans
	// apply under the lock, one at a time) and zeroed before and after
	// each, so it holds nothing of the keyspace between them.
	planKeys planKeys
	// argvs is ApplyPlan's render of a plan for the feed (plan.ArgvsInto).
	argvs plan.ArgvScratch
	// memo is the running command's read pass for its plan (GetKept), and
	// expGen counts the expired keys deleted (which mutations does not),
	// for the memo's stamp.
	memo   readMemo
	expGen uint64
}

// SetListpackInPlace turns the in-place rewrite of this store's listpack
// hashes on (the default) or off (listpack.go): off, every change of a
// value below a listpack's end copies it, as when a view of it may exist.
// The keyspace, the replies and the AOF are the same either way; the tests
// compare the two paths (TestSweepInPlaceMatchesCopy). Under the lock.
func (s *Store) SetListpackInPlace(on bool) { s.hashLim.copyOnly = !on }

// Mutations counts, under the lock, every change to the keyspace that has
// begun: a DB write method (Put, Replace, Remove, Clear, HashForWrite,
// ZSetForWrite, DropIfEmpty, SetExpire, Persist, SwapDB), DB.Mutating
// before a change through a lookup, the start of ApplyPlan, Ctx.Dirty. A
// lazily expired key is not counted: its deletion reaches the Feed (DEL)
// as it happens, a whole unit of its own. A unit of work that panicked with Mutations
// unchanged since it began wrote nothing: the server answers it with an
// error and carries on; otherwise it stops (docs/operations.md §6).
func (s *Store) Mutations() uint64 { return s.mutations }

type watchKey struct {
	db  int
	key string
}

// Watcher is one client's WATCH state: it becomes Touched when any watched
// key is written (or flushed).
type Watcher struct {
	Touched bool
	keys    []watchKey
}

// New returns a store with n databases (16 by default in the server),
// configured by opts (WithObserver).
func New(n int, opts ...Option) *Store {
	s := &Store{watched: make(map[watchKey]map[*Watcher]bool), limits: DefaultLimits}
	for _, o := range opts {
		o(s)
	}
	s.hashLim = &hashTable{lim: &s.limits}
	s.dbs = make([]*DB, n)
	for i := range s.dbs {
		s.dbs[i] = &DB{Index: i, s: s}
	}
	return s
}

// Lock takes the single writer lock.
func (s *Store) Lock() { s.mu.Lock() }

// Unlock releases it, running the observer's BeforeUnlock first.
func (s *Store) Unlock() {
	if s.obs != nil {
		s.obs.BeforeUnlock()
	}
	s.mu.Unlock()
}

// NumDBs is the number of databases.
func (s *Store) NumDBs() int { return len(s.dbs) }

// DB returns database i (0 <= i < NumDBs).
func (s *Store) DB(i int) *DB { return s.dbs[i] }

// Watch adds key of db to w's watched keys (WATCH). Call under the lock.
func (s *Store) Watch(w *Watcher, db int, key string) {
	k := watchKey{db, key}
	m := s.watched[k]
	if m == nil {
		m = make(map[*Watcher]bool)
		s.watched[k] = m
	}
	if _, ok := m[w]; ok {
		return
	}
	m[w] = s.dbs[db].isExpired(key)
	w.keys = append(w.keys, k)
}

// Unwatch forgets all of w's keys and clears Touched (UNWATCH, EXEC, DISCARD,
// RESET, disconnect). Call under the lock.
func (s *Store) Unwatch(w *Watcher) {
	for _, k := range w.keys {
		if m := s.watched[k]; m != nil {
			delete(m, w)
			if len(m) == 0 {
				delete(s.watched, k)
			}
		}
	}
	w.keys = nil
	w.Touched = false
}

// WatchedKeyExpired reports whether a key w watches has expired since it
// was watched (Valkey's isWatchedKeyExpired, checked by EXEC): a key that
// had already expired when watched does not count. Call under the lock,
// after SetNow.
func (s *Store) WatchedKeyExpired(w *Watcher) bool {
	for _, k := range w.keys {
		if expired := s.watched[k][w]; expired {
			continue
		}
		if s.dbs[k.db].isExpired(k.key) {
			return true
		}
	}
	return false
}

// WatchCount is the number of keys w watches.
func (w *Watcher) WatchCount() int { return len(w.keys) }

// Touch marks every watcher of key in db as touched (Valkey's
// touchWatchedKey): a watcher that watched the key when it had already
// expired is not touched; once the key is gone it watches it as a missing
// key from then on.
func (s *Store) Touch(db int, key string) { s.touch(db, key, true) }

// touch is Touch; byCommand is false for the store's own deletions
// (expiry).
func (s *Store) touch(db int, key string, byCommand bool) {
	if s.obs != nil {
		s.obs.KeyChanged(db, key, byCommand)
	}
	s.notifyTouch(db, key)
	if len(s.watched) == 0 {
		return
	}
	m := s.watched[watchKey{db, key}]
	for w, expired := range m {
		if expired {
			if s.dbs[db].keys.get(key) == nil {
				m[w] = false
			}
			continue
		}
		w.Touched = true
	}
}

// TouchDB marks every watcher of any key in db (db < 0: in every db) that
// exists as touched (FLUSHDB, FLUSHALL): Valkey's touchAllWatchedKeysInDb
// without a replacement database.
func (s *Store) TouchDB(db int) {
	if s.obs != nil {
		s.obs.Flushed(db)
	}
	s.notifyTouch(db, "")
	for k, m := range s.watched {
		if db >= 0 && k.db != db {
			continue
		}
		if s.dbs[k.db].keys.get(k.key) == nil {
			continue
		}
		for w, expired := range m {
			if expired {
				m[w] = false // the stale key is deleted: no logical change
				continue
			}
			w.Touched = true
		}
	}
}

// Ctx is what a command handler runs with: the store (locked), the selected
// database, the arguments and the reply writer. The server builds one per
// connection (and for its own callers: the sweeper, the AOF replay, parked
// clients) with one constructor, and resets it for every command.
type Ctx struct {
	S    *Store
	DB   *DB
	Argv [][]byte
	W    *resp.Writer
	// NowMs is the server clock reading for this command (docs/verbs.md §2.4);
	// set by the server before the handler runs.
	NowMs int64
	// RunID is the server's boot run_id (40 hex characters).
	RunID string
	// DebugEnabled mirrors enable-debug-command.
	DebugEnabled bool
	// InMulti is true while the command runs inside EXEC.
	InMulti bool
	// Block, set by a blocking handler (EMQ.CLAIM BLOCK) that found nothing to
	// serve, asks the server to park the connection (see BlockSpec).
	Block *BlockSpec
	// BigArgsOwned says that every argument of at least resp.BigArg bytes
	// is an allocation of its own that nobody reads or writes after the
	// command (the connection's reader hands such arguments out that way),
	// so the store may keep it instead of a copy (KeepArg). Set by the
	// server for its connections; false for every other caller.
	BigArgsOwned bool
	// OutLimit is the hard output limit of the client the command runs
	// for, in bytes (its class of client-output-buffer-limit; 0: none),
	// and OutQueued the bytes of its replies already waiting outside W. A
	// client whose replies pass OutLimit is disconnected before it reads
	// them, so a verb whose reply comes from what its plan hands out
	// bounds it with ReplyRoom before applying (docs/verbs.md §2.16). Set
	// by the server; zero (no limit) for every other caller.
	OutLimit, OutQueued int64
	// AtMemoryLimit reports whether used memory is above maxmemory now
	// (docs/operations.md §5), for the verbs allowed at the limit that
	// bound what they store there (docs/verbs.md §2.14). Set by the
	// server; nil (no limit) for every other caller.
	AtMemoryLimit func() bool

	dirty      int
	propagated bool
}

// BlockSpec describes a parked connection: the server retries Retry (under
// the store lock) in arrival order when it learns that a job of Queue in DB
// may have become claimable, or, for a spec with Keys, when a write leaves
// one of those keys of DB holding a sorted set (store.Observer.KeyChanged), or when the
// earliest time Due reports passes;
// Retry writes the reply and reports true when it served the client. After
// TimeoutMs (0: forever) the server replies a nil array.
type BlockSpec struct {
	DB    int
	Queue string
	// Keys are the keys a blocking sorted-set pop waits on (instead of a
	// Queue).
	Keys []string
	// AnyKind retries a spec with Keys after every write of one of them,
	// whatever the key then holds (or its deletion): EMQ.WAIT waits so on a
	// job row (docs/verbs.md §4.23). Without it only a sorted set serves.
	AnyKind   bool
	TimeoutMs int64
	Retry     func(c *Ctx) bool
	// Due reports the earliest time (Unix ms) at which something may become
	// claimable without any other event (a scheduled job coming due), if any.
	Due func(c *Ctx) (int64, bool)
}

// Dirty records that the command changed key: it marks watchers of key and
// counts a change, so the server propagates the command to the Feed.
func (c *Ctx) Dirty(key string) {
	c.S.mutations++
	c.dirty++
	c.S.DirtyCount++
	c.S.Touch(c.DB.Index, key)
}

// ReplyRoom is how many bytes the command's reply may take before the
// client's output passes its limit: OutLimit less OutQueued and what W
// holds (0 when it is already past; math.MaxInt64 without a limit).
func (c *Ctx) ReplyRoom() int64 {
	if c.OutLimit <= 0 {
		return math.MaxInt64
	}
	r := c.OutLimit - c.OutQueued
	if c.W != nil {
		r -= int64(c.W.Len())
	}
	return max(r, 0)
}

// Changed reports whether the command recorded any change.
func (c *Ctx) Changed() bool { return c.dirty > 0 }

// Propagated reports whether the handler sent its own record to the Feed
// (so the server must not also record its argv).
func (c *Ctx) Propagated() bool { return c.propagated }

// Propagate sends cmds to the Feed as one all-or-nothing record and stops
// the server from recording the command's own argv.
func (c *Ctx) Propagate(cmds [][][]byte) {
	c.propagated = true
	c.S.Record(c.DB.Index, cmds)
}

// ResetForCommand clears per-command state so one Ctx can serve a batch.
func (c *Ctx) ResetForCommand(argv [][]byte) {
	if c.S != nil {
		c.S.memo.forget()
	}
	c.Argv = argv
	c.dirty = 0
	c.propagated = false
	c.Block = nil
}

// KeepArg returns the bytes of argument b for the store to keep: b itself
// (capacity cut to its length) when it is a big argument handed over with
// the command (BigArgsOwned, outside EXEC, whose feed holds the arguments
// until the transaction ends), otherwise a copy. A 100 MB value is then
// held once, not twice (docs/architecture.md §2.9).
func (c *Ctx) KeepArg(b []byte) []byte {
	if c.BigArgsOwned && !c.InMulti && len(b) >= resp.BigArg {
		return b[:len(b):len(b)]
	}
	return cloneBytes(b)
}

// Handler runs one command. It reads c.Argv (argv[0] is the command name),
// writes exactly one reply to c.W (unless it sets c.Block), and calls
// c.Dirty for every key it changed.
type Handler func(c *Ctx)

// Flag is one command flag (Valkey's command flags, as COMMAND INFO names
// them). Specs list the flags they carry; an unknown flag does not compile.
type Flag uint32

// The command flags emqd's commands carry. The dispatcher acts on Write
// (the write gate), NoAuth, NoMulti, SkipSlowlog; COMMAND and the ACL
// categories it reports read the others.
const (
	FlagWrite          Flag = 1 << iota // changes the keyspace
	FlagReadonly                        // reads the keyspace only
	FlagDenyOOM                         // may grow memory
	FlagAdmin                           // administrative
	FlagNoScript                        // not allowed in scripts
	FlagBlocking                        // may park the connection
	FlagLoading                         // allowed while loading
	FlagStale                           // allowed on a stale replica
	FlagSkipSlowlog                     // never logged in SLOWLOG (EXEC, AUTH, HELLO)
	FlagFast                            // O(1) or O(log N)
	FlagNoAuth                          // runs before AUTH (AUTH, HELLO, QUIT, RESET)
	FlagSentinel                        // available in sentinel mode
	FlagNoAsyncLoading                  // refused during async loading
	FlagNoMulti                         // refused inside MULTI (MULTI, WATCH)
	FlagAllowBusy                       // allowed while a script is busy
	FlagMovableKeys                     // keys found from the arguments (numkeys): WithKeyFunc
	FlagPubSub                          // a Pub/Sub command
	FlagMayReplicate                    // may be replicated (PUBLISH)
)

var flagNames = map[Flag]string{
	FlagWrite: "write", FlagReadonly: "readonly", FlagDenyOOM: "denyoom", FlagAdmin: "admin",
	FlagNoScript: "noscript", FlagBlocking: "blocking", FlagLoading: "loading", FlagStale: "stale",
	FlagSkipSlowlog: "skip_slowlog", FlagFast: "fast", FlagNoAuth: "no_auth", FlagSentinel: "sentinel",
	FlagNoAsyncLoading: "no_async_loading", FlagNoMulti: "no_multi", FlagAllowBusy: "allow_busy",
	FlagMovableKeys: "movablekeys", FlagPubSub: "pubsub", FlagMayReplicate: "may_replicate",
}

// String is the flag's name in COMMAND INFO ("write", "no_auth", ...).
func (f Flag) String() string {
	if n, ok := flagNames[f]; ok {
		return n
	}
	return "unknown"
}

// CommandSpec is one entry of the command table (COMMAND INFO's shape).
// Build one with NewCommand.
type CommandSpec struct {
	Name     string // lower case; "client|setname" for a subcommand
	Arity    int    // Valkey's arity: n exact, -n at least n (argv[0] counted)
	Flags    []Flag // in the order COMMAND INFO lists them
	FirstKey int
	LastKey  int
	Step     int
	Handler  Handler // nil for a server command (it runs with the connection)
	// Keys, when set, gives the key positions of a command whose keys move
	// with its arguments (numkeys: ZUNION, ZMPOP, ...; COMMAND GETKEYS);
	// FirstKey, LastKey and Step are then 0 as in Valkey's COMMAND INFO.
	Keys func(argv [][]byte) []int
	// Subcommands of a container command (CLIENT, CONFIG, MEMORY, ...).
	Subcommands []*CommandSpec
}

// NewCommand is the one constructor of command specs (store, verbs and
// server commands): name in lower case ("container|sub" for a subcommand),
// Valkey's arity, the handler and the flags in COMMAND INFO's order. It has
// no key arguments until WithKeys.
func NewCommand(name string, arity int, h Handler, flags ...Flag) *CommandSpec {
	return &CommandSpec{Name: name, Arity: arity, Flags: flags, Handler: h}
}

// WithKeys sets the key positions (COMMAND INFO's first key, last key,
// step; last -1: up to the last argument) and returns cs.
func (cs *CommandSpec) WithKeys(first, last, step int) *CommandSpec {
	cs.FirstKey, cs.LastKey, cs.Step = first, last, step
	return cs
}

// WithKeyFunc sets the function giving the key positions of a command
// whose keys move with its arguments (FlagMovableKeys) and returns cs.
func (cs *CommandSpec) WithKeyFunc(f func(argv [][]byte) []int) *CommandSpec {
	cs.Keys = f
	return cs
}

// WithSubcommands makes cs a container of subs and returns cs.
func (cs *CommandSpec) WithSubcommands(subs ...*CommandSpec) *CommandSpec {
	cs.Subcommands = subs
	return cs
}

// FlagSet is the union of cs's flags.
func (cs *CommandSpec) FlagSet() Flag {
	var m Flag
	for _, f := range cs.Flags {
		m |= f
	}
	return m
}

// Commands returns every command the store implements: the hash, keyspace
// (and expiry), string and sorted set commands.
func Commands() []*CommandSpec {
	var out []*CommandSpec
	for _, f := range []func() []*CommandSpec{hashCommands, keyspaceCommands, dbKeyspaceCommands, expireCommands,
		stringCommands, setStringCommands, zsetCommands, zsetAlgebraCommands, zsetPopCommands} {
		out = append(out, f()...)
	}
	return out
}
