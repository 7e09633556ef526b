package store

import (
	"runtime/debug"
	"strings"

	"github.com/emqd/emqd/internal/num"
)

// Keyspace commands (docs/compat.md §1.4) with Valkey 8.0's replies and
// check order (db.c), and MEMORY USAGE (object.c).

func keyspaceCommands() []*CommandSpec {
	return []*CommandSpec{
		NewCommand("del", -2, cmdDel, FlagWrite).WithKeys(1, -1, 1),
		NewCommand("unlink", -2, cmdDel, FlagWrite, FlagFast).WithKeys(1, -1, 1),
		NewCommand("exists", -2, cmdExists, FlagReadonly, FlagFast).WithKeys(1, -1, 1),
		NewCommand("type", 2, cmdType, FlagReadonly, FlagFast).WithKeys(1, 1, 1),
		NewCommand("keys", 2, cmdKeys, FlagReadonly),
		NewCommand("scan", -2, cmdScan, FlagReadonly),
		NewCommand("rename", 3, cmdRename, FlagWrite).WithKeys(1, 2, 1),
		NewCommand("renamenx", 3, cmdRenameNX, FlagWrite, FlagFast).WithKeys(1, 2, 1),
		NewCommand("dbsize", 1, cmdDBSize, FlagReadonly, FlagFast),
		NewCommand("flushdb", -1, cmdFlushDB, FlagWrite),
		NewCommand("flushall", -1, cmdFlushAll, FlagWrite),
		NewCommand("memory", -2, nil).WithSubcommands(
			NewCommand("memory|usage", -3, cmdMemoryUsage, FlagReadonly).WithKeys(2, 2, 1),
			NewCommand("memory|purge", 2, cmdMemoryPurge, FlagLoading),
		),
	}
}

// DEL key [key ...] and UNLINK: `:n` keys removed (a repeated key counts
// once).
func cmdDel(c *Ctx) {
	n := 0
	for _, k := range c.Argv[1:] {
		key := string(k)
		if c.DB.Remove(key) {
			n++
			c.Dirty(key)
		}
	}
	c.W.Int(int64(n))
}

// EXISTS key [key ...]: `:n` keys that exist, repeats counted each time.
func cmdExists(c *Ctx) {
	n := 0
	for _, k := range c.Argv[1:] {
		if c.DB.Peek(string(k)) != nil {
			n++
		}
	}
	c.W.Int(int64(n))
}

// TYPE key: simple string `none`, `string`, `hash` or `zset`.
func cmdType(c *Ctx) {
	v := c.DB.Peek(string(c.Argv[1]))
	if v == nil {
		c.W.Simple("none")
		return
	}
	c.W.Simple(v.Kind.TypeName())
}

// KEYS pattern: array of the keys matching the glob pattern (GlobMatch), in
// no particular order.
func cmdKeys(c *Ctx) {
	pat := string(c.Argv[1])
	all := pat == "*"
	var out []string
	c.DB.Keys(func(k string, _ *Value) bool {
		if all || GlobMatch(pat, k, false) {
			out = append(out, k)
		}
		return true
	})
	c.W.Array(len(out))
	for _, k := range out {
		c.W.BulkString(k)
	}
}

// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]: `*2` [cursor,
// array of keys]. `ERR invalid cursor`, then the options in order
// (parseScanOptions: COUNT, `ERR unknown type name 'x'`, NOVALUES/NOSCORES
// errors, syntax errors). COUNT (default 10) is how many present keys of
// the scan order a call samples, looking at no more than 10*COUNT positions
// (Valkey's scanGenericCommand); MATCH and TYPE filter those, so a page may
// be empty with a non-zero cursor (docs/compat.md). Guarantees: scan.go.
func cmdScan(c *Ctx) {
	cursor, ok := ParseScanCursor(c.Argv[1])
	if !ok {
		c.W.Error(ErrInvalidCur)
		return
	}
	o, ok := parseScanOptions(c, 2, 0)
	if !ok {
		return
	}
	names, next := c.DB.scanKeysPage(cursor, o.count)
	out := make([]string, 0, len(names))
	for _, n := range names {
		v := c.DB.Peek(n.name)
		if v == nil {
			continue
		}
		if o.typeName != "" && v.Kind.TypeName() != o.typeName {
			continue
		}
		if !o.match(n.name) {
			continue
		}
		out = append(out, n.name)
	}
	writeScanHeader(c, next, len(out))
	for _, k := range out {
		c.W.BulkString(k)
	}
}

// RENAME key newkey: `+OK`; `ERR no such key` when key is missing (also when
// newkey is the same); key == newkey existing is `+OK` with no change; an
// existing newkey of any type is overwritten. The key's TTL (or none)
// replaces newkey's.
func cmdRename(c *Ctx) { renameGeneric(c, false) }

// RENAMENX key newkey: `:1` renamed, `:0` when newkey exists (or equals
// key); `ERR no such key`.
func cmdRenameNX(c *Ctx) { renameGeneric(c, true) }

func renameGeneric(c *Ctx, nx bool) {
	src, dst := string(c.Argv[1]), string(c.Argv[2])
	v := c.DB.Get(src)
	if v == nil {
		c.W.Error(ErrNoSuchKey)
		return
	}
	if src == dst {
		if nx {
			c.W.Int(0)
		} else {
			c.W.OK()
		}
		return
	}
	if nx && c.DB.Get(dst) != nil {
		c.W.Int(0)
		return
	}
	at, hasTTL := c.DB.ExpireAt(src)
	c.DB.Remove(src)
	c.DB.Put(dst, v)
	if hasTTL {
		c.DB.SetExpire(dst, at)
	}
	c.Dirty(src)
	c.Dirty(dst)
	if nx {
		c.W.Int(1)
	} else {
		c.W.OK()
	}
}

// DBSIZE: `:n` keys in the selected database.
func cmdDBSize(c *Ctx) { c.W.Int(int64(c.DB.Len())) }

// flushMode checks FLUSHDB/FLUSHALL's optional ASYNC|SYNC argument
// (getFlushCommandFlags): anything else, or more arguments, is
// `ERR syntax error`.
func flushMode(c *Ctx) bool {
	switch len(c.Argv) {
	case 1:
		return true
	case 2:
		m := cstr(c.Argv[1])
		if strings.EqualFold(m, "sync") || strings.EqualFold(m, "async") {
			return true
		}
	}
	c.W.Error(ErrSyntax)
	return false
}

// markFlushed records a flush as a change even when nothing was stored (so
// it is always propagated, as Valkey's forceCommandPropagation), without
// touching watchers of any particular key: TouchDB already marked those of
// the keys that existed.
func (c *Ctx) markFlushed() {
	c.dirty++
	c.S.DirtyCount++
}

// FLUSHDB [ASYNC|SYNC]: `+OK`; removes every key of the selected database.
// Both modes flush synchronously.
func cmdFlushDB(c *Ctx) {
	if !flushMode(c) {
		return
	}
	c.S.TouchDB(c.DB.Index)
	c.DB.Clear()
	c.DB.resetScan()
	c.markFlushed()
	c.W.OK()
}

// FLUSHALL [ASYNC|SYNC]: `+OK`; removes every key of every database.
func cmdFlushAll(c *Ctx) {
	if !flushMode(c) {
		return
	}
	c.S.TouchDB(-1)
	for i := 0; i < c.S.NumDBs(); i++ {
		d := c.S.DB(i)
		d.Clear()
		d.resetScan()
	}
	c.markFlushed()
	c.W.OK()
}

// MEMORY PURGE: `+OK` once the Go runtime has collected garbage and
// returned the freed pages to the operating system (runtime/debug
// FreeOSMemory); Valkey asks jemalloc to purge its dirty pages. It blocks
// every client while the collection runs (tens of milliseconds per GiB of
// live heap). docs/compat.md §2.6.
func cmdMemoryPurge(c *Ctx) {
	debug.FreeOSMemory()
	c.W.OK()
}

// memoryUsageDefaultSamples is Valkey's OBJ_COMPUTE_SIZE_DEF_SAMPLES.
const memoryUsageDefaultSamples = 5

// MEMORY USAGE key [SAMPLES count]: an estimate in bytes (> 0) of the key
// and its value, nil when the key is missing. Options are checked first:
// SAMPLES not an integer is `ERR value is not an integer or out of range`,
// negative or any other argument `ERR syntax error`; SAMPLES 0 samples every
// element (object.c memoryCommand). The estimate follows Valkey's shapes
// (listpack for small collections, dict/skiplist for big ones), sampling
// `count` elements of a collection and extrapolating, as Valkey does.
func cmdMemoryUsage(c *Ctx) {
	samples := int64(memoryUsageDefaultSamples)
	argv := c.Argv
	for j := 3; j < len(argv); j++ {
		if strings.EqualFold(cstr(argv[j]), "samples") && j+1 < len(argv) {
			n, ok := num.ParseInt(argv[j+1])
			if !ok {
				c.W.Error(ErrNotInteger)
				return
			}
			if n < 0 {
				c.W.Error(ErrSyntax)
				return
			}
			if n == 0 {
				n = 1<<63 - 1
			}
			samples = n
			j++
			continue
		}
		c.W.Error(ErrSyntax)
		return
	}
	key := string(argv[2])
	v := c.DB.Peek(key)
	if v == nil {
		c.W.Nil()
		return
	}
	c.W.Int(MemoryUsage(key, v, samples))
}

// sdsAlloc approximates the allocation of an sds string of n bytes (header,
// bytes, NUL), rounded up to an 8-byte size class.
func sdsAlloc(n int) int64 {
	hdr := 3
	switch {
	case n >= 1<<16:
		hdr = 9
	case n >= 1<<8:
		hdr = 5
	}
	return roundAlloc(int64(hdr + n + 1))
}

func roundAlloc(n int64) int64 { return (n + 7) &^ 7 }

// lpEntry approximates the listpack bytes of one element of n bytes.
func lpEntry(n int) int64 {
	switch {
	case n < 64:
		return int64(n) + 2
	case n < 4096:
		return int64(n) + 4
	}
	return int64(n) + 10
}

// MemoryUsage estimates, in bytes, what key and its value v would take in
// Valkey (MEMORY USAGE): the key's sds and table entry plus the value
// object. Collections sample up to samples elements in iteration order and
// extrapolate to their length. Always > 0.
func MemoryUsage(key string, v *Value, samples int64) int64 {
	const robj = 16
	const dictEntry = 24
	total := int64(dictEntry) + sdsAlloc(len(key)) + robj
	switch v.Kind {
	case KindString:
		if _, ok := num.ParseInt(v.Str); ok && len(v.Str) <= 20 {
			break // OBJ_ENCODING_INT: the number lives in the object
		}
		if len(v.Str) <= 44 {
			total += roundAlloc(int64(robj+3+len(v.Str)+1)) - robj // embstr: object and sds in one allocation
		} else {
			total += sdsAlloc(len(v.Str))
		}
	case KindHash:
		h := v.Hash()
		n := int64(h.Len())
		var seen, sum int64
		small := n <= 128
		h.Range(func(f string, val []byte) bool {
			if small {
				if len(f) > 64 || len(val) > 64 {
					small = false
				}
			}
			if seen < samples {
				if small {
					sum += lpEntry(len(f)) + lpEntry(len(val))
				} else {
					sum += int64(dictEntry) + sdsAlloc(len(f)) + sdsAlloc(len(val))
				}
				seen++
			}
			return small || seen < samples
		})
		if seen > 0 {
			sum = sum * n / seen
		}
		if small {
			total += roundAlloc(7 + sum)
		} else {
			total += 48 + 8*nextPow2(n) + sum
		}
	case KindZSet:
		z := v.ZSet
		n := int64(z.Len())
		var seen, sum int64
		small := n <= 128
		z.AscendAll(func(it ZItem) bool {
			if small && len(it.Member) > 64 {
				small = false
			}
			if seen < samples {
				if small {
					sum += lpEntry(len(it.Member)) + 10
				} else {
					sum += sdsAlloc(len(it.Member)) + 48 + int64(dictEntry)
				}
				seen++
			}
			return small || seen < samples
		})
		if seen > 0 {
			sum = sum * n / seen
		}
		if small {
			total += roundAlloc(7 + sum)
		} else {
			total += 48 + 8*nextPow2(n) + sum
		}
	}
	return total
}

func nextPow2(n int64) int64 {
	p := int64(4)
	for p < n {
		p <<= 1
	}
	return p
}
