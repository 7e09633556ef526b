package store

import (
	"math"

	"github.com/emqd/emqd/internal/num"
)

// The keyspace commands across databases and on one key's object (the
// rest of the family, docs/compat.md §1.4, is keys_cmds.go), with Valkey
// 8.0.1's replies and check order (db.c, object.c): COPY, MOVE, SWAPDB, RANDOMKEY,
// TOUCH, OBJECT (ENCODING, FREQ, IDLETIME, REFCOUNT, HELP). A key's TTL
// travels with it (COPY, MOVE, RENAME).

func dbKeyspaceCommands() []*CommandSpec {
	obj := func(name string, h Handler) *CommandSpec {
		return NewCommand("object|"+name, 3, h, FlagReadonly).WithKeys(2, 2, 1)
	}
	return []*CommandSpec{
		NewCommand("copy", -3, cmdCopy, FlagWrite, FlagDenyOOM).WithKeys(1, 2, 1),
		NewCommand("move", 3, cmdMove, FlagWrite, FlagFast).WithKeys(1, 1, 1),
		NewCommand("swapdb", 3, cmdSwapDB, FlagWrite, FlagFast),
		NewCommand("randomkey", 1, cmdRandomKey, FlagReadonly),
		NewCommand("touch", -2, cmdTouch, FlagReadonly, FlagFast).WithKeys(1, -1, 1),
		NewCommand("object", -2, nil).WithSubcommands(
			obj("encoding", cmdObjectEncoding),
			obj("freq", cmdObjectFreq),
			obj("idletime", cmdObjectIdletime),
			obj("refcount", cmdObjectRefcount),
			NewCommand("object|help", 2, cmdObjectHelp, FlagLoading, FlagStale),
		),
	}
}

// Error texts of the keyspace family.
const (
	ErrSameObject = "ERR source and destination objects are the same"
	ErrDBRange    = "ERR DB index is out of range"
)

// errIntRange is getRangeLongFromObjectOrReply's text for a number outside
// a C int.
const errIntRange = "ERR value is out of range, value must between -2147483648 and 2147483647"

// parseDBIndex is getIntFromObjectOrReply then selectDb's range check: not
// an integer is `ERR value is not an integer or out of range`, outside a C
// int errIntRange, outside 0..n-1 `ERR DB index is out of range`.
func parseDBIndex(c *Ctx, arg []byte) (int, bool) {
	n, ok := num.ParseInt(arg)
	if !ok {
		c.W.Error(ErrNotInteger)
		return 0, false
	}
	if n < math.MinInt32 || n > math.MaxInt32 {
		c.W.Error(errIntRange)
		return 0, false
	}
	if n < 0 || n >= int64(c.S.NumDBs()) {
		c.W.Error(ErrDBRange)
		return 0, false
	}
	return int(n), true
}

// dupValue copies v for COPY (Valkey's dup*Object): same type, same
// encoding, independent contents.
func dupValue(v *Value) *Value {
	out := &Value{Kind: v.Kind, enc: v.enc}
	switch v.Kind {
	case KindString:
		out.Str = cloneBytes(v.Str)
		if v.Encoding() == "int" {
			out.enc = encIntCopy // dupStringObject: a new, unshared integer object
		}
	case KindHash:
		return v.Hash().Copy().val() // the copy is its own Value (hash.go)
	case KindZSet:
		out.ZSet = v.ZSet.Copy()
	}
	return out
}

// COPY source destination [DB index] [REPLACE]: `:1` copied (with the
// source's TTL; REPLACE overwrites a destination of any type), `:0` when
// the source is missing or the destination exists without REPLACE.
// Options first (`ERR syntax error`, `ERR value is not an integer or out
// of range`, `ERR DB index is out of range`), then the same key in the
// same database is `ERR source and destination objects are the same`.
func cmdCopy(c *Ctx) {
	argv := c.Argv
	dst := c.DB
	replace := false
	for j := 3; j < len(argv); j++ {
		switch {
		case eqFold(cstr(argv[j]), "replace"):
			replace = true
		case eqFold(cstr(argv[j]), "db") && j+1 < len(argv):
			i, ok := parseDBIndex(c, argv[j+1])
			if !ok {
				return
			}
			dst = c.S.DB(i)
			j++
		default:
			c.W.Error(ErrSyntax)
			return
		}
	}
	key, newKey := string(argv[1]), string(argv[2])
	if dst == c.DB && key == newKey {
		c.W.Error(ErrSameObject)
		return
	}
	v := c.DB.Get(key)
	if v == nil {
		c.W.Int(0)
		return
	}
	at, hasTTL := c.DB.ExpireAt(key)
	if dst.Get(newKey) != nil {
		if !replace {
			c.W.Int(0)
			return
		}
		dst.Remove(newKey)
	}
	dst.Put(newKey, dupValue(v))
	if hasTTL {
		dst.SetExpire(newKey, at)
	}
	c.dirtyIn(dst, newKey)
	c.W.Int(1)
}

// dirtyIn is Dirty for a key of database d (MOVE, COPY ... DB).
func (c *Ctx) dirtyIn(d *DB, key string) {
	c.dirty++
	c.S.DirtyCount++
	c.S.Touch(d.Index, key)
}

// MOVE key db: `:1` moved (with its TTL), `:0` when the key is missing or
// exists in db. The index first (`ERR value is not an integer or out of
// range`, `ERR DB index is out of range`), then the same database is
// `ERR source and destination objects are the same`.
func cmdMove(c *Ctx) {
	i, ok := parseDBIndex(c, c.Argv[2])
	if !ok {
		return
	}
	dst := c.S.DB(i)
	if dst == c.DB {
		c.W.Error(ErrSameObject)
		return
	}
	key := string(c.Argv[1])
	v := c.DB.Get(key)
	if v == nil {
		c.W.Int(0)
		return
	}
	at, hasTTL := c.DB.ExpireAt(key)
	if dst.Get(key) != nil {
		c.W.Int(0)
		return
	}
	c.DB.Remove(key)
	dst.Put(key, v)
	if hasTTL {
		dst.SetExpire(key, at)
	}
	c.Dirty(key)
	c.dirtyIn(dst, key)
	c.W.Int(1)
}

// SWAPDB index1 index2: `+OK`; every client sees the other database's keys
// (with their TTLs) from then on. `ERR invalid first DB index` / `ERR
// invalid second DB index` for a non-integer, `ERR DB index is out of
// range`. WATCHers of keys that change are touched as Valkey's
// touchAllWatchedKeysInDb; blocked pops are retried on the swapped keys.
func cmdSwapDB(c *Ctx) {
	id1, ok1 := num.ParseInt(c.Argv[1])
	if !ok1 || id1 < math.MinInt32 || id1 > math.MaxInt32 {
		c.W.Error("ERR invalid first DB index")
		return
	}
	id2, ok2 := num.ParseInt(c.Argv[2])
	if !ok2 || id2 < math.MinInt32 || id2 > math.MaxInt32 {
		c.W.Error("ERR invalid second DB index")
		return
	}
	n := int64(c.S.NumDBs())
	if id1 < 0 || id1 >= n || id2 < 0 || id2 >= n {
		c.W.Error(ErrDBRange)
		return
	}
	if id1 != id2 {
		c.S.SwapDB(int(id1), int(id2))
	}
	c.dirty++
	c.S.DirtyCount++
	c.W.OK()
}

// SwapDB exchanges the contents of databases a and b (SWAPDB): keys, TTLs,
// the TTL estimate and the SCAN cursors; watchers and blocked clients stay
// with their database index. Call under the store lock.
func (s *Store) SwapDB(a, b int) {
	da, db := s.dbs[a], s.dbs[b]
	s.mutations++
	s.touchSwap(da, db)
	s.touchSwap(db, da)
	da.keys, db.keys = db.keys, da.keys
	da.expires, db.expires = db.expires, da.expires
	da.expCursor, db.expCursor = db.expCursor, da.expCursor
	// What the maps held since they were built goes with them (shrink.go).
	da.keysPeak, db.keysPeak = db.keysPeak, da.keysPeak
	da.expiresPeak, db.expiresPeak = db.expiresPeak, da.expiresPeak
	da.avgTTL, db.avgTTL = db.avgTTL, da.avgTTL
	da.resetScan()
	db.resetScan()
	if s.toucher != nil || len(s.touchWatchers) > 0 {
		// For the AOF rewrite and a background save: both databases are
		// copied again whole.
		for _, d := range []*DB{da, db} {
			s.notifyTouch(d.Index, "")
			for k := range d.keys.all() {
				s.notifyTouch(d.Index, k)
			}
		}
	}
	if s.obs != nil {
		s.obs.Swapped(a, b)
	}
}

// touchSwap is touchAllWatchedKeysInDb(emptied, replacedWith), run before
// the swap: a watched key of emptied is touched when it exists there or in
// replacedWith, except a key that had expired when watched and is now
// missing, or still expired, and a missing key replaced by an expired one.
func (s *Store) touchSwap(emptied, with *DB) {
	for k, m := range s.watched {
		if k.db != emptied.Index {
			continue
		}
		inEmptied := emptied.keys.get(k.key) != nil
		inWith := with.keys.get(k.key) != nil
		if !inEmptied && !inWith {
			continue
		}
		for w, expired := range m {
			if expired {
				if !inWith {
					m[w] = false
					continue
				}
				if with.isExpired(k.key) {
					continue
				}
			} else if !inEmptied && with.isExpired(k.key) {
				m[w] = true
				continue
			}
			w.Touched = true
		}
	}
}

// RANDOMKEY: a random key of the database (never one whose TTL has
// passed: those met are deleted), nil when it is empty.
func cmdRandomKey(c *Ctx) {
	k, ok := c.DB.RandomKey()
	if !ok {
		c.W.Nil()
		return
	}
	c.W.BulkString(k)
}

// TOUCH key [key ...]: `:n` keys that exist (a repeated key counts each
// time); updates their access time.
func cmdTouch(c *Ctx) {
	n := 0
	for _, k := range c.Argv[1:] {
		if c.DB.Get(string(k)) != nil {
			n++
		}
	}
	c.W.Int(int64(n))
}

// objectLookup is objectCommandLookupOrReply: the value without updating
// its access time, or nil after replying nil.
func objectLookup(c *Ctx) *Value {
	v := c.DB.Peek(string(c.Argv[2]))
	if v == nil {
		c.W.Nil()
	}
	return v
}

// OBJECT ENCODING key: the encoding Valkey would report (Value.Encoding,
// encoding.go); nil for a missing key.
func cmdObjectEncoding(c *Ctx) {
	if v := objectLookup(c); v != nil {
		c.W.BulkString(v.Encoding())
	}
}

// OBJECT FREQ key: nil for a missing key (checked first), else Valkey's
// error under a policy without LFU: maxmemory-policy accepts only
// noeviction (docs/compat.md §1.4, docs/operations.md §5).
func cmdObjectFreq(c *Ctx) {
	if objectLookup(c) == nil {
		return
	}
	c.W.Error("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
}

// OBJECT IDLETIME key: seconds since the key was last read or written (on
// the server clock). Nil for a missing key.
func cmdObjectIdletime(c *Ctx) {
	v := objectLookup(c)
	if v == nil {
		return
	}
	c.W.Int(c.S.IdleMs(v) / 1000)
}

// OBJECT REFCOUNT key: what Valkey reports: 2147483647 for the shared
// integers 0..9999 (an "int" string in that range that is not a COPY),
// else 1.
func cmdObjectRefcount(c *Ctx) {
	v := objectLookup(c)
	if v == nil {
		return
	}
	if v.Kind == KindString && v.enc != encIntCopy && v.Encoding() == "int" {
		if n, _ := num.ParseInt(v.Str); n >= 0 && n < 10000 {
			c.W.Int(math.MaxInt32)
			return
		}
	}
	c.W.Int(1)
}

var objectHelp = []string{
	"OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"ENCODING <key>",
	"    Return the kind of internal representation used in order to store the value",
	"    associated with a <key>.",
	"FREQ <key>",
	"    Return the access frequency index of the <key>. The returned integer is",
	"    proportional to the logarithm of the recent access frequency of the key.",
	"IDLETIME <key>",
	"    Return the idle time of the <key>, that is the approximated number of",
	"    seconds elapsed since the last access to the key.",
	"REFCOUNT <key>",
	"    Return the number of references of the value associated with the specified",
	"    <key>.",
	"HELP",
	"    Print this help.",
}

// OBJECT HELP.
func cmdObjectHelp(c *Ctx) {
	c.W.Array(len(objectHelp))
	for _, l := range objectHelp {
		c.W.Simple(l)
	}
}
