package store

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/emqd/emqd/internal/num"
	"github.com/emqd/emqd/internal/resp"
)

// Hash commands (docs/compat.md §1.1) with Valkey 8.0's replies and check
// order (t_hash.c). Fields iterate in insertion order (docs/compat.md §3.1).

func hashCommands() []*CommandSpec {
	return []*CommandSpec{
		NewCommand("hset", -4, hsetGeneric("hset", false), FlagWrite, FlagDenyOOM, FlagFast).WithKeys(1, 1, 1),
		NewCommand("hmset", -4, hsetGeneric("hmset", true), FlagWrite, FlagDenyOOM, FlagFast).WithKeys(1, 1, 1),
		NewCommand("hsetnx", 4, cmdHSetNX, FlagWrite, FlagDenyOOM, FlagFast).WithKeys(1, 1, 1),
		NewCommand("hget", 3, cmdHGet, FlagReadonly, FlagFast).WithKeys(1, 1, 1),
		NewCommand("hmget", -3, cmdHMGet, FlagReadonly, FlagFast).WithKeys(1, 1, 1),
		NewCommand("hgetall", 2, cmdHGetAll, FlagReadonly).WithKeys(1, 1, 1),
		NewCommand("hkeys", 2, cmdHKeys, FlagReadonly).WithKeys(1, 1, 1),
		NewCommand("hvals", 2, cmdHVals, FlagReadonly).WithKeys(1, 1, 1),
		NewCommand("hdel", -3, cmdHDel, FlagWrite, FlagFast).WithKeys(1, 1, 1),
		NewCommand("hexists", 3, cmdHExists, FlagReadonly, FlagFast).WithKeys(1, 1, 1),
		NewCommand("hlen", 2, cmdHLen, FlagReadonly, FlagFast).WithKeys(1, 1, 1),
		NewCommand("hstrlen", 3, cmdHStrLen, FlagReadonly, FlagFast).WithKeys(1, 1, 1),
		NewCommand("hincrby", 4, cmdHIncrBy, FlagWrite, FlagDenyOOM, FlagFast).WithKeys(1, 1, 1),
		NewCommand("hincrbyfloat", 4, cmdHIncrByFloat, FlagWrite, FlagDenyOOM, FlagFast).WithKeys(1, 1, 1),
		NewCommand("hscan", -3, cmdHScan, FlagReadonly).WithKeys(1, 1, 1),
		NewCommand("hrandfield", -2, cmdHRandField, FlagReadonly).WithKeys(1, 1, 1),
	}
}

// HashScanAllMax is the largest hash that HSCAN returns whole, with cursor
// 0, whatever the cursor asked (as Valkey does for a listpack-encoded hash;
// the brief fixes the bound at 512 fields). Bigger hashes are paged (scan.go),
// and a paged scan goes on paging a hash that shrinks to this size meanwhile.
const HashScanAllMax = 512

// HSET key field value [field value ...] -> `:n` new fields;
// HMSET (deprecated) -> `+OK`. A field without a value is the arity error
// naming the command (t_hash.c cmdHSet), then WRONGTYPE.
func hsetGeneric(name string, okReply bool) Handler {
	arityErr := "ERR wrong number of arguments for '" + name + "' command"
	return func(c *Ctx) {
		if len(c.Argv)%2 == 1 {
			c.W.Error(arityErr)
			return
		}
		// The keyspace's own key string when the hash exists: no
		// conversion of the argument per call.
		key, h, e := c.DB.HashForWriteArg(c.Argv[1])
		if e != "" {
			c.W.Error(e)
			return
		}
		h.NoteBulk((len(c.Argv) - 2) / 2)
		created := 0
		for i := 2; i+1 < len(c.Argv); i += 2 {
			f, v := c.Argv[i], c.Argv[i+1]
			var added bool
			if len(v) >= resp.BigArg {
				// A big value is kept as received when the command owns
				// it (Ctx.KeepArg), not copied once more.
				added = h.Set(string(f), c.KeepArg(v))
			} else {
				added = h.SetArg(f, v)
			}
			if added {
				created++
			}
		}
		if okReply {
			c.W.OK()
		} else {
			c.W.Int(int64(created))
		}
		c.Dirty(key)
	}
}

// HSETNX key field value: `:1` set, `:0` when the field exists; WRONGTYPE.
func cmdHSetNX(c *Ctx) {
	key := string(c.Argv[1])
	field := string(c.Argv[2])
	h, e := c.DB.LookupHash(key)
	if e != "" {
		c.W.Error(e)
		return
	}
	if _, ok := hashField(h, c.Argv[2]); ok {
		h.noteSet(field, len(c.Argv[3])) // hashTypeTryConversion runs first
		c.W.Int(0)
		return
	}
	h, _ = c.DB.HashForWrite(key)
	h.SetArg(c.Argv[2], c.Argv[3])
	c.W.Int(1)
	c.Dirty(key)
}

// readHash looks up argv[1] for a read command: the hash, or nil with the
// WRONGTYPE error already written (ok false).
func readHash(c *Ctx) (h *Hash, ok bool) {
	h, e := c.DB.LookupHash(string(c.Argv[1]))
	if e != "" {
		c.W.Error(e)
		return nil, false
	}
	return h, true
}

// hashField is field f of h: its value and true, or nil and false when h is
// nil (a missing key) or has no such field. The value is a peek (Hash.peek):
// every caller copies it into the reply or parses it at once.
func hashField(h *Hash, f []byte) ([]byte, bool) {
	if h == nil {
		return nil, false
	}
	return h.peek(string(f))
}

// writeHashField writes field f of h as a bulk, or nil when h is nil or has
// no such field (HGET, HMGET).
func writeHashField(c *Ctx, h *Hash, f []byte) {
	if v, ok := hashField(h, f); ok {
		c.W.Bulk(v)
		return
	}
	c.W.Nil()
}

// HGET key field: bulk, or nil (missing key or field); WRONGTYPE.
func cmdHGet(c *Ctx) {
	h, ok := readHash(c)
	if !ok {
		return
	}
	writeHashField(c, h, c.Argv[2])
}

// HMGET key field [field ...]: an array with a bulk or nil per field (all
// nils for a missing key); WRONGTYPE.
func cmdHMGet(c *Ctx) {
	h, ok := readHash(c)
	if !ok {
		return
	}
	c.W.Array(len(c.Argv) - 2)
	for _, f := range c.Argv[2:] {
		writeHashField(c, h, f)
	}
}

// HGETALL key: RESP2 flat `*2n` field, value...; RESP3 map `%n`; a missing
// key is `*0` / `%0`; WRONGTYPE.
func cmdHGetAll(c *Ctx) {
	h, ok := readHash(c)
	if !ok {
		return
	}
	if h == nil {
		c.W.Map(0)
		return
	}
	c.W.Map(h.Len())
	h.Range(func(f string, v []byte) bool {
		c.W.BulkString(f)
		c.W.Bulk(v)
		return true
	})
}

// HKEYS key: array of fields (both protocols), `*0` when missing.
func cmdHKeys(c *Ctx) { hashList(c, true) }

// HVALS key: array of values (both protocols), `*0` when missing.
func cmdHVals(c *Ctx) { hashList(c, false) }

func hashList(c *Ctx, fields bool) {
	h, ok := readHash(c)
	if !ok {
		return
	}
	if h == nil {
		c.W.Array(0)
		return
	}
	c.W.Array(h.Len())
	h.Range(func(f string, v []byte) bool {
		if fields {
			c.W.BulkString(f)
		} else {
			c.W.Bulk(v)
		}
		return true
	})
}

// HDEL key field [field ...]: `:n` removed; the key is deleted when its last
// field goes; WRONGTYPE.
func cmdHDel(c *Ctx) {
	key := string(c.Argv[1])
	h, ok := readHash(c)
	if !ok {
		return
	}
	if h == nil {
		c.W.Int(0)
		return
	}
	deleted := 0
	c.DB.Mutating()
	for _, f := range c.Argv[2:] {
		if h.Del(string(f)) {
			deleted++
			if h.Len() == 0 {
				break
			}
		}
	}
	if h.Len() == 0 {
		c.DB.Remove(key)
	}
	c.W.Int(int64(deleted))
	if deleted > 0 {
		c.Dirty(key)
	}
}

// HEXISTS key field: `:1` / `:0`; WRONGTYPE.
func cmdHExists(c *Ctx) {
	h, ok := readHash(c)
	if !ok {
		return
	}
	n := int64(0)
	if _, ok := hashField(h, c.Argv[2]); ok {
		n = 1
	}
	c.W.Int(n)
}

// HLEN key: `:n` fields, 0 when missing; WRONGTYPE.
func cmdHLen(c *Ctx) {
	h, ok := readHash(c)
	if !ok {
		return
	}
	n := 0
	if h != nil {
		n = h.Len()
	}
	c.W.Int(int64(n))
}

// HSTRLEN key field: `:len` of the value, 0 when missing; WRONGTYPE.
func cmdHStrLen(c *Ctx) {
	h, ok := readHash(c)
	if !ok {
		return
	}
	v, _ := hashField(h, c.Argv[2])
	c.W.Int(int64(len(v)))
}

// HINCRBY key field increment: `:new`. Checks, in Valkey's order: the
// increment (`ERR value is not an integer or out of range`), WRONGTYPE, the
// stored value (string2ll: `ERR hash value is not an integer`), overflow
// (`ERR increment or decrement would overflow`, t_hash.c). A missing field
// counts as 0.
func cmdHIncrBy(c *Ctx) {
	incr, ok := num.ParseInt(c.Argv[3])
	if !ok {
		c.W.Error(ErrNotInteger)
		return
	}
	// One lookup, and the keyspace's own key string when the hash exists
	// (the argument is converted only for a hash this call creates).
	key, v := c.DB.lookupArg(c.Argv[1])
	var h *Hash
	if v != nil {
		if v.Kind != KindHash {
			c.W.Error(ErrWrongType)
			return
		}
		h = v.Hash()
	}
	var old int64
	if v, ok := hashField(h, c.Argv[2]); ok {
		if old, ok = num.ParseInt(v); !ok {
			c.W.Error(ErrHashNotInt)
			return
		}
	}
	if (incr < 0 && old < 0 && incr < math.MinInt64-old) || (incr > 0 && old > 0 && incr > math.MaxInt64-old) {
		c.W.Error(ErrOverflow)
		return
	}
	n := old + incr
	if h == nil {
		key = string(c.Argv[1])
		h, _ = c.DB.HashForWrite(key)
	} else {
		c.DB.Mutating() // the hash read above is the one to write (no second lookup)
	}
	var buf [20]byte // the listpack copies the digits; buf stays on the stack (TestHashSetArgScratchOnStack)
	h.SetArg(c.Argv[2], strconv.AppendInt(buf[:0], n, 10))
	c.W.Int(n)
	c.Dirty(key)
}

// HINCRBYFLOAT key field increment: the new value as a bulk string in both
// protocols, computed in x87 long double and printed by ld2string's human
// mode (internal/num/longdouble.go, docs/compat.md §3.4). Checks, in Valkey's order:
// the increment (`ERR value is not a valid float`, NaN included), an
// infinite increment (`ERR value is NaN or Infinity`), WRONGTYPE, the stored
// value (`ERR hash value is not a float`), the sum
// (`ERR increment would produce NaN or Infinity`). As Valkey, the command
// is propagated as `HSET key field <new value>`.
func cmdHIncrByFloat(c *Ctx) {
	incr, ok := num.ParseLongDouble(c.Argv[3])
	if !ok {
		c.W.Error(ErrNotFloat)
		return
	}
	if incr.IsInf() {
		c.W.Error("ERR value is NaN or Infinity")
		return
	}
	key := string(c.Argv[1])
	field := string(c.Argv[2])
	h, ok := readHash(c)
	if !ok {
		return
	}
	cur := num.NewLongDouble()
	if v, ok := hashField(h, c.Argv[2]); ok {
		if cur, ok = num.ParseLongDouble(v); !ok {
			c.W.Error("ERR hash value is not a float")
			return
		}
	}
	sum, ok := num.AddLongDouble(cur, incr)
	if !ok {
		c.W.Error("ERR increment would produce NaN or Infinity")
		return
	}
	text := []byte(num.FormatLongDouble(sum))
	h, _ = c.DB.HashForWrite(key)
	h.Set(field, text)
	c.W.Bulk(text)
	c.Dirty(key)
	c.Propagate([][][]byte{{[]byte("HSET"), c.Argv[1], c.Argv[2], text}})
}

// HSCAN key cursor [MATCH pattern] [COUNT count] [NOVALUES]:
// `*2` [cursor, flat field, value... array] in both protocols. The cursor is
// parsed first (`ERR invalid cursor`), then the key (a missing key answers
// `*2 "0" *0` without reading the options; WRONGTYPE), then the options
// (scan.go parseScanOptions). A hash of at most HashScanAllMax fields is
// returned whole, in insertion order, with cursor 0; a bigger one is paged
// with the guarantees of scan.go.
func cmdHScan(c *Ctx) {
	cursor, ok := ParseScanCursor(c.Argv[2])
	if !ok {
		c.W.Error(ErrInvalidCur)
		return
	}
	h, ok := readHash(c)
	if !ok {
		return
	}
	if h == nil {
		c.W.Raw([]byte(emptyScanReply))
		return
	}
	o, ok := parseScanOptions(c, 3, KindHash)
	if !ok {
		return
	}
	type fv struct {
		f string
		v []byte
	}
	var out []fv
	var next uint64
	if h.Len() <= HashScanAllMax && !c.DB.scanCollPaging(h, cursor) {
		h.Range(func(f string, v []byte) bool {
			if o.match(f) {
				out = append(out, fv{f, v})
			}
			return true
		})
	} else {
		var names []scanName
		names, next = c.DB.scanCollPage(h, h.Len(), cursor, o.count, func(yield func(string)) {
			h.Range(func(f string, _ []byte) bool { yield(f); return true })
		}, func(f string) bool { _, ok := h.Peek(f); return ok })
		for _, n := range names {
			if v, ok := h.Get(n.name); ok && o.match(n.name) {
				out = append(out, fv{n.name, v})
			}
		}
	}
	n := len(out)
	if !o.onlyKeys {
		n *= 2
	}
	writeScanHeader(c, next, n)
	for _, e := range out {
		c.W.BulkString(e.f)
		if !o.onlyKeys {
			c.W.Bulk(e.v)
		}
	}
}

// hrandMaxReply bounds what HRANDFIELD with a negative count may build
// (Valkey would grow the reply until memory runs out): past it the command
// answers `ERR value is out of range`.
const hrandMaxReply = 256 << 20

// HRANDFIELD key [count [WITHVALUES]] (t_hash.c cmdHRandField).
// Without count: a random field as a bulk, nil for a missing key. With
// count: checks in order `ERR value is not an integer or out of range`,
// `ERR value is out of range, value must between -9223372036854775807 and
// 9223372036854775807` (count = LLONG_MIN), `ERR syntax error` (a 4th
// argument other than WITHVALUES, or more arguments), `ERR value is out of
// range` (WITHVALUES with |count| > LLONG_MAX/2), then the key: missing is
// `*0`, WRONGTYPE. count 0 is `*0`; count > 0 returns that many distinct
// fields (all of them when count >= HLEN, in insertion order); count < 0
// returns |count| fields drawn with repetition. WITHVALUES replies flat
// field, value pairs in RESP2 and `[field, value]` pairs in RESP3.
func cmdHRandField(c *Ctx) {
	argv := c.Argv
	if len(argv) >= 3 {
		l, ok := num.ParseInt(argv[2])
		if !ok {
			c.W.Error(ErrNotInteger)
			return
		}
		if l == math.MinInt64 {
			c.W.Error("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
			return
		}
		withValues := false
		if len(argv) > 4 || (len(argv) == 4 && !strings.EqualFold(cstr(argv[3]), "withvalues")) {
			c.W.Error(ErrSyntax)
			return
		} else if len(argv) == 4 {
			withValues = true
			if l < -math.MaxInt64/2 || l > math.MaxInt64/2 {
				c.W.Error("ERR value is out of range")
				return
			}
		}
		hrandfieldWithCount(c, l, withValues)
		return
	}
	h, ok := readHash(c)
	if !ok {
		return
	}
	if h == nil {
		c.W.Nil()
		return
	}
	f, _ := h.At(rand.IntN(h.Len()))
	c.W.BulkString(f)
}

func hrandfieldWithCount(c *Ctx, l int64, withValues bool) {
	h, ok := readHash(c)
	if !ok {
		return
	}
	if h == nil || l == 0 {
		c.W.Array(0)
		return
	}
	size := h.Len()
	resp3Pairs := withValues && c.W.RESP3()
	writeOne := func(f string, v []byte) {
		if resp3Pairs {
			c.W.Array(2)
		}
		c.W.BulkString(f)
		if withValues {
			c.W.Bulk(v)
		}
	}
	header := func(n int64) {
		if withValues && !resp3Pairs {
			c.W.Array(int(2 * n))
		} else {
			c.W.Array(int(n))
		}
	}
	if l < 0 || l == 1 {
		// Case 1: |count| random fields, repetitions allowed.
		count := l
		if count < 0 {
			count = -count
		}
		type fv struct {
			f string
			v []byte
		}
		all := make([]fv, 0, size)
		maxEntry := 0
		h.Range(func(f string, v []byte) bool {
			all = append(all, fv{f, v})
			if n := len(f) + len(v) + 32; n > maxEntry {
				maxEntry = n
			}
			return true
		})
		if count > hrandMaxReply/int64(maxEntry) {
			c.W.Error("ERR value is out of range")
			return
		}
		header(count)
		for ; count > 0; count-- {
			e := all[rand.IntN(size)]
			writeOne(e.f, e.v)
		}
		return
	}
	if l >= int64(size) {
		// Case 2: the whole hash.
		header(int64(size))
		h.Range(func(f string, v []byte) bool { writeOne(f, v); return true })
		return
	}
	// Cases 3 and 4: count distinct fields (count < size), replied in
	// insertion order.
	count := int(l)
	var picked []int
	if count*3 > size {
		perm := rand.Perm(size)
		picked = perm[:count]
	} else {
		seen := make(map[int]struct{}, count)
		for len(seen) < count {
			seen[rand.IntN(size)] = struct{}{}
		}
		picked = make([]int, 0, count)
		for i := range seen {
			picked = append(picked, i)
		}
	}
	slices.Sort(picked)
	header(int64(count))
	i, p := 0, 0
	h.Range(func(f string, v []byte) bool {
		if p < len(picked) && picked[p] == i {
			writeOne(f, v)
			p++
		}
		i++
		return p < len(picked)
	})
}
