package store

import (
	"math"
	"strconv"

	"github.com/emqd/emqd/internal/num"
)

// String commands (docs/compat.md §1.3): GET SET INCR INCRBY DECR DECRBY
// MGET MSET STRLEN APPEND, with Valkey 8.0's replies and check order
// (t_string.c).

func stringCommands() []*CommandSpec {
	return []*CommandSpec{
		NewCommand("get", 2, cmdGet, FlagReadonly, FlagFast).WithKeys(1, 1, 1),
		NewCommand("set", -3, cmdSet, FlagWrite, FlagDenyOOM).WithKeys(1, 1, 1),
		NewCommand("incr", 2, cmdIncr, FlagWrite, FlagDenyOOM, FlagFast).WithKeys(1, 1, 1),
		NewCommand("decr", 2, cmdDecr, FlagWrite, FlagDenyOOM, FlagFast).WithKeys(1, 1, 1),
		NewCommand("incrby", 3, cmdIncrBy, FlagWrite, FlagDenyOOM, FlagFast).WithKeys(1, 1, 1),
		NewCommand("decrby", 3, cmdDecrBy, FlagWrite, FlagDenyOOM, FlagFast).WithKeys(1, 1, 1),
		NewCommand("mget", -2, cmdMGet, FlagReadonly, FlagFast).WithKeys(1, -1, 1),
		NewCommand("mset", -3, cmdMSet, FlagWrite, FlagDenyOOM).WithKeys(1, -1, 2),
		NewCommand("strlen", 2, cmdStrLen, FlagReadonly, FlagFast).WithKeys(1, 1, 1),
		NewCommand("append", 3, cmdAppend, FlagWrite, FlagDenyOOM, FlagFast).WithKeys(1, 1, 1),
	}
}

// MaxStringLen is the largest string APPEND and SETRANGE may build by
// default: Valkey's default proto-max-bulk-len, 512 MiB (Store.ProtoMaxBulkLen
// follows CONFIG SET).
const MaxStringLen = 512 << 20

// cloneBytes copies b so the store never keeps a slice of a request buffer.
func cloneBytes(b []byte) []byte {
	out := make([]byte, len(b))
	copy(out, b)
	return out
}

// cstr is b up to its first NUL byte: how Valkey's strcasecmp and
// character tests see an option name.
func cstr(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// lookupString returns the string at key: (nil, false, "") when missing,
// ErrWrongType when the key holds another type.
func lookupString(d *DB, key string) ([]byte, bool, string) {
	v := d.Get(key)
	if v == nil {
		return nil, false, ""
	}
	if v.Kind != KindString {
		return nil, false, ErrWrongType
	}
	return v.Str, true, ""
}

// GET key: bulk, nil when missing, WRONGTYPE.
func cmdGet(c *Ctx) {
	s, ok, e := lookupString(c.DB, string(c.Argv[1]))
	switch {
	case e != "":
		c.W.Error(e)
	case !ok:
		c.W.Nil()
	default:
		c.W.Bulk(s)
	}
}

// incrDecr adds incr to the integer at argv[1] (incrDecrCommand):
// WRONGTYPE, then `ERR value is not an integer or out of range` when the
// stored string fails string2ll, then `ERR increment or decrement would
// overflow`. A missing key counts as 0.
func incrDecr(c *Ctx, incr int64) {
	key := string(c.Argv[1])
	s, found, e := lookupString(c.DB, key)
	if e != "" {
		c.W.Error(e)
		return
	}
	var old int64
	if found {
		n, ok := num.ParseInt(s)
		if !ok {
			c.W.Error(ErrNotInteger)
			return
		}
		old = n
	}
	if (incr < 0 && old < 0 && incr < math.MinInt64-old) || (incr > 0 && old > 0 && incr > math.MaxInt64-old) {
		c.W.Error(ErrOverflow)
		return
	}
	n := old + incr
	text := strconv.AppendInt(nil, n, 10)
	if v := c.DB.Get(key); v != nil {
		c.DB.Mutating()
		v.Str = text // in place: the TTL stays
		v.enc = encAuto
	} else {
		c.DB.Put(key, &Value{Kind: KindString, Str: text})
	}
	c.W.Int(n)
	c.Dirty(key)
}

// INCR key.
func cmdIncr(c *Ctx) { incrDecr(c, 1) }

// DECR key.
func cmdDecr(c *Ctx) { incrDecr(c, -1) }

// INCRBY key increment: the increment is parsed first
// (`ERR value is not an integer or out of range`).
func cmdIncrBy(c *Ctx) {
	n, ok := num.ParseInt(c.Argv[2])
	if !ok {
		c.W.Error(ErrNotInteger)
		return
	}
	incrDecr(c, n)
}

// DECRBY key decrement: the decrement is parsed first; -9223372036854775808
// cannot be negated: `ERR decrement would overflow`.
func cmdDecrBy(c *Ctx) {
	n, ok := num.ParseInt(c.Argv[2])
	if !ok {
		c.W.Error(ErrNotInteger)
		return
	}
	if n == math.MinInt64 {
		c.W.Error("ERR decrement would overflow")
		return
	}
	incrDecr(c, -n)
}

// MGET key [key ...]: one bulk per key, nil for a missing key or one that
// is not a string (never WRONGTYPE).
func cmdMGet(c *Ctx) {
	c.W.Array(len(c.Argv) - 1)
	for _, k := range c.Argv[1:] {
		v := c.DB.Get(string(k))
		if v == nil || v.Kind != KindString {
			c.W.Nil()
			continue
		}
		c.W.Bulk(v.Str)
	}
}

// MSET key value [key value ...]: `+OK`; every key is overwritten whatever
// its type (the last value wins for a repeated key). A key without a value
// is the arity error `ERR wrong number of arguments for 'mset' command`
// (t_string.c msetGenericCommand).
func cmdMSet(c *Ctx) {
	if len(c.Argv)%2 == 0 {
		c.W.Error("ERR wrong number of arguments for 'mset' command")
		return
	}
	for i := 1; i+1 < len(c.Argv); i += 2 {
		key := string(c.Argv[i])
		c.DB.Put(key, &Value{Kind: KindString, Str: c.KeepArg(c.Argv[i+1])})
		c.Dirty(key)
	}
	c.W.OK()
}

// STRLEN key: `:len`, 0 when missing, WRONGTYPE.
func cmdStrLen(c *Ctx) {
	s, _, e := lookupString(c.DB, string(c.Argv[1]))
	if e != "" {
		c.W.Error(e)
		return
	}
	c.W.Int(int64(len(s)))
}

// APPEND key value: `:newlen`. A missing key is created (even with an
// empty value); WRONGTYPE; a result above 512 MiB is
// `ERR string exceeds maximum allowed size (proto-max-bulk-len)`.
func cmdAppend(c *Ctx) {
	key := string(c.Argv[1])
	add := c.Argv[2]
	v := c.DB.Get(key)
	if v == nil {
		v = &Value{Kind: KindString, Str: cloneBytes(add)}
		c.DB.Put(key, v)
	} else {
		if v.Kind != KindString {
			c.W.Error(ErrWrongType)
			return
		}
		if !checkStringLength(c, int64(len(v.Str)), int64(len(add))) {
			return
		}
		c.DB.Mutating()
		v.Str = append(v.Str, add...)
		v.enc = encRaw
	}
	c.W.Int(int64(len(v.Str)))
	c.Dirty(key)
}
