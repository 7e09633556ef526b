package store

import "github.com/emqd/emqd/internal/num"

// The encoding OBJECT ENCODING reports (docs/compat.md §3.6). emqd keeps one
// representation per type, but answers what Valkey 8.0.1 would for the same
// key and history (object.c tryObjectEncoding, t_hash.c hashTypeSet and
// hashTypeTryConversion, t_zset.c zsetTypeCreate and zsetAdd):
//
//   - a string is "int" when Valkey's SET would store it as a number (at
//     most 20 bytes that string2ll accepts), else "embstr" up to 44 bytes,
//     else "raw"; APPEND and SETRANGE make it "raw", INCRBYFLOAT's result is
//     "embstr" or "raw" by length;
//   - a hash is "listpack" until it has more than hash-max-listpack-entries
//     fields, a field or value longer than hash-max-listpack-value, or an
//     HSET with more field/value pairs than the entries limit; then
//     "hashtable" for good;
//   - a sorted set is "listpack" until it has more than
//     zset-max-listpack-entries members, a member longer than
//     zset-max-listpack-value, or a ZADD with more pairs (or a longer
//     member) than that; then "skiplist" for good. ZUNIONSTORE, ZINTERSTORE,
//     ZDIFFSTORE and ZRANGESTORE build a new set that is "listpack" when it
//     is within both limits.
//
// Valkey converts a key when a write crosses a limit and never converts it
// back while the key lives; an AOF replay (or a rewrite) rebuilds each key
// from its commands, and the rebuilt key is "listpack" again when it is
// small, as Valkey's RDB load does.

// Limits are the encoding thresholds (CONFIG hash-max-listpack-entries,
// hash-max-listpack-value, zset-max-listpack-entries,
// zset-max-listpack-value).
type Limits struct {
	HashEntries, HashValue int64
	ZSetEntries, ZSetValue int64
}

// DefaultLimits are Valkey 8.0.1's defaults: 512 fields of up to 64 bytes,
// 128 members of up to 64 bytes.
var DefaultLimits = Limits{HashEntries: 512, HashValue: 64, ZSetEntries: 128, ZSetValue: 64}

// SetLimits sets the thresholds later writes follow (CONFIG SET). Keys
// already converted stay converted. Call under the store lock. (Listpack
// hashes reach them through s.hashLim, sorted sets through ZSet.lim.)
func (s *Store) SetLimits(l Limits) { s.limits = l }

// Limits returns the thresholds in force.
func (s *Store) Limits() Limits { return s.limits }

// strEnc is how a string was made, which decides its encoding.
type strEnc uint8

const (
	// encAuto: made from a client's argument (SET, MSET, GETSET, SETNX,
	// SETEX, a new key of APPEND), or an integer result (INCR): Valkey's
	// tryObjectEncoding, int / embstr / raw by content.
	encAuto strEnc = iota
	// encCreated: made by createStringObject (INCRBYFLOAT): embstr or raw by
	// length, never int.
	encCreated
	// encRaw: modified in place (APPEND to an existing key, SETRANGE).
	encRaw
	// encIntCopy: COPY of an "int" string: still "int", but its own object
	// (OBJECT REFCOUNT 1, where a shared integer says 2147483647).
	encIntCopy
)

// embstrMax is OBJ_ENCODING_EMBSTR_SIZE_LIMIT.
const embstrMax = 44

// Encoding is the name OBJECT ENCODING replies for v.
func (v *Value) Encoding() string {
	switch v.Kind {
	case KindString:
		switch v.enc {
		case encRaw:
			return "raw"
		case encIntCopy:
			return "int"
		case encAuto:
			if len(v.Str) <= 20 {
				if _, ok := num.ParseInt(v.Str); ok {
					return "int"
				}
			}
		}
		if len(v.Str) <= embstrMax {
			return "embstr"
		}
		return "raw"
	case KindHash:
		if v.Hash().Big() {
			return "hashtable"
		}
		return "listpack"
	case KindZSet:
		if v.ZSet.Big() {
			return "skiplist"
		}
		return "listpack"
	}
	return ""
}

// NewString is a string value made from bytes a client sent (Valkey's
// tryObjectEncoding decides its encoding). It keeps b.
func NewString(b []byte) *Value { return &Value{Kind: KindString, Str: b} }

func (h *Hash) limits() *Limits {
	if h.tab.lim == nil {
		return &DefaultLimits
	}
	return h.tab.lim
}

// lpTooLong is Valkey's length rule (hashTypeTryConversion, hashTypeSet):
// a field or value longer than hash-max-listpack-value converts the hash.
func (h *Hash) lpTooLong(field, value int) bool {
	l := h.limits()
	return int64(field) > l.HashValue || int64(value) > l.HashValue
}

// lpTooMany is the entries rule: more fields than
// hash-max-listpack-entries after a write converts the hash.
func (h *Hash) lpTooMany(n int) bool { return int64(n) > h.limits().HashEntries }

// noteSet applies the length and entries rules to an HSETNX that finds its
// field (hashTypeTryConversion runs before the lookup): field and a value
// of n bytes would not fit in a listpack.
func (h *Hash) noteSet(field string, n int) {
	if !h.big() && (h.lpTooLong(len(field), n) || h.lpTooMany(h.Len())) {
		h.convert()
	}
}

// NoteBulk applies hashTypeTryConversion's first rule: an HSET of more
// field/value pairs than the entries limit converts the hash whatever
// they turn out to add.
func (h *Hash) NoteBulk(pairs int) {
	if !h.big() && int64(pairs) > h.limits().HashEntries {
		h.convert()
	}
}

func (z *ZSet) limits() *Limits {
	if z.lim == nil {
		return &DefaultLimits
	}
	return z.lim
}

// lpTooLong is zsetAdd's length rule: a new member longer than
// zset-max-listpack-value converts the set before it is added.
func (z *ZSet) lpTooLong(member int) bool { return int64(member) > z.limits().ZSetValue }

// lpTooMany is zsetAdd's entries rule: more members than
// zset-max-listpack-entries after an insertion converts the set.
func (z *ZSet) lpTooMany(n int) bool { return int64(n) > z.limits().ZSetEntries }

// NoteHint applies zsetTypeCreate / zsetTypeMaybeConvert: a ZADD of more
// pairs than the entries limit, or with a member longer than the value
// limit, converts the set whatever it turns out to add.
func (z *ZSet) NoteHint(elements, maxLen int) {
	if z.tree != nil {
		return
	}
	l := z.limits()
	if int64(elements) > l.ZSetEntries || int64(maxLen) > l.ZSetValue {
		z.convert()
	}
}
