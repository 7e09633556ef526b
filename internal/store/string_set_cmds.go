package store

import (
	"math"
	"strconv"

	"github.com/emqd/emqd/internal/num"
)

// SET with its options and the string writes beside it (the rest of the
// family, docs/compat.md §1.3, is string_cmds.go), with Valkey 8.0.1's
// replies and check order (t_string.c): SET with its expiry options,
// SETEX, PSETEX, SETNX, GETEX, GETDEL, GETSET, GETRANGE (and SUBSTR),
// SETRANGE, INCRBYFLOAT, MSETNX, LCS. Relative times are recorded in the
// AOF as absolute ones (SET ... PXAT, PEXPIREAT).

func setStringCommands() []*CommandSpec {
	spec := func(name string, arity int, flags []Flag, first, last, step int, h Handler) *CommandSpec {
		return NewCommand(name, arity, h, flags...).WithKeys(first, last, step)
	}
	wdo := []Flag{FlagWrite, FlagDenyOOM}
	wdf := []Flag{FlagWrite, FlagDenyOOM, FlagFast}
	wf := []Flag{FlagWrite, FlagFast}
	ro := []Flag{FlagReadonly}
	return []*CommandSpec{
		spec("setex", 4, wdo, 1, 1, 1, func(c *Ctx) { setexGeneric(c, false) }),
		spec("psetex", 4, wdo, 1, 1, 1, func(c *Ctx) { setexGeneric(c, true) }),
		spec("setnx", 3, wdf, 1, 1, 1, cmdSetNX),
		spec("getex", -2, wf, 1, 1, 1, cmdGetEx),
		spec("getdel", 2, wf, 1, 1, 1, cmdGetDel),
		spec("getset", 3, wdf, 1, 1, 1, cmdGetSet),
		spec("getrange", 4, ro, 1, 1, 1, cmdGetRange),
		spec("substr", 4, ro, 1, 1, 1, cmdGetRange),
		spec("setrange", 4, wdo, 1, 1, 1, cmdSetRange),
		spec("incrbyfloat", 3, wdf, 1, 1, 1, cmdIncrByFloat),
		spec("msetnx", -3, wdo, 1, -1, 2, cmdMSetNX),
		spec("lcs", -3, ro, 1, 2, 1, cmdLCS),
	}
}

// Error texts of the string family.
const (
	errOffsetRange = "ERR offset is out of range"
	errStringSize  = "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
	errIncrNaNInf  = "ERR increment would produce NaN or Infinity"
)

// invalidExpire is addReplyErrorExpireTime: it names the command.
func invalidExpire(c *Ctx) string {
	return "ERR invalid expire time in '" + lowerName(c.Argv[0]) + "' command"
}

// The option flags of SET and GETEX (parseExtendedStringArgumentsOrReply).
const (
	optNX = 1 << iota
	optXX
	optGet
	optKeepTTL
	optPersist
	optEX
	optPX
	optEXAT
	optPXAT
)

const optExpire = optEX | optPX | optEXAT | optPXAT

// parseStringOptions is parseExtendedStringArgumentsOrReply for SET
// (forGet false, options from argv[3]) and GETEX (forGet true, from
// argv[2]): an unknown, repeated-conflicting or incomplete option is
// `ERR syntax error`. It returns the flags and the expire argument.
func parseStringOptions(c *Ctx, forGet bool) (flags int, expire []byte, ok bool) {
	argv := c.Argv
	j := 3
	if forGet {
		j = 2
	}
	set := !forGet
	for ; j < len(argv); j++ {
		opt := cstr(argv[j])
		hasNext := j+1 < len(argv)
		switch {
		case set && eqFold(opt, "nx") && flags&optXX == 0:
			flags |= optNX
		case set && eqFold(opt, "xx") && flags&optNX == 0:
			flags |= optXX
		case set && eqFold(opt, "get"):
			flags |= optGet
		case set && eqFold(opt, "keepttl") && flags&(optPersist|optExpire) == 0:
			flags |= optKeepTTL
		case forGet && eqFold(opt, "persist") && flags&(optExpire|optKeepTTL) == 0:
			flags |= optPersist
		case eqFold(opt, "ex") && flags&(optKeepTTL|optPersist|optEXAT|optPX|optPXAT) == 0 && hasNext:
			flags |= optEX
			expire = argv[j+1]
			j++
		case eqFold(opt, "px") && flags&(optKeepTTL|optPersist|optEX|optEXAT|optPXAT) == 0 && hasNext:
			flags |= optPX
			expire = argv[j+1]
			j++
		case eqFold(opt, "exat") && flags&(optKeepTTL|optPersist|optEX|optPX|optPXAT) == 0 && hasNext:
			flags |= optEXAT
			expire = argv[j+1]
			j++
		case eqFold(opt, "pxat") && flags&(optKeepTTL|optPersist|optEX|optEXAT|optPX) == 0 && hasNext:
			flags |= optPXAT
			expire = argv[j+1]
			j++
		default:
			c.W.Error(ErrSyntax)
			return 0, nil, false
		}
	}
	return flags, expire, true
}

// eqFold is strcasecmp(a, b) == 0 for ASCII.
func eqFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if asciiLower(a[i]) != b[i] {
			return false
		}
	}
	return true
}

// expireMs is getExpireMillisecondsOrReply: the absolute expire time in ms
// of an EX/PX/EXAT/PXAT argument. Not an integer: `ERR value is not an
// integer or out of range`; <= 0, an overflow of the unit conversion or of
// the addition to now: `ERR invalid expire time in '<cmd>' command`.
func expireMs(c *Ctx, arg []byte, flags int) (int64, bool) {
	ms, ok := num.ParseInt(arg)
	if !ok {
		c.W.Error(ErrNotInteger)
		return 0, false
	}
	seconds := flags&(optEX|optEXAT) != 0
	if ms <= 0 || (seconds && ms > math.MaxInt64/1000) {
		c.W.Error(invalidExpire(c))
		return 0, false
	}
	if seconds {
		ms *= 1000
	}
	if flags&(optEX|optPX) != 0 {
		if ms > math.MaxInt64-c.NowMs {
			c.W.Error(invalidExpire(c))
			return 0, false
		}
		ms += c.NowMs
	}
	if ms <= 0 {
		c.W.Error(invalidExpire(c))
		return 0, false
	}
	return ms, true
}

// SET key value [NX|XX] [GET] [EX s|PX ms|EXAT s|PXAT ms|KEEPTTL]
// (t_string.c setGenericCommand). Options left to right (`ERR syntax
// error`), then the expire value, then with GET the old value (WRONGTYPE
// when it is not a string: nothing is written), then NX/XX (nil, or the
// old value with GET). Otherwise the key is overwritten whatever its type:
// `+OK` or the old value. The TTL is replaced by the given one, kept with
// KEEPTTL, cleared otherwise; with an expire time already past nothing is
// stored and an existing key is deleted, counted in expired_keys (`+OK` all
// the same; Valkey 8.0's fast path). Recorded as `SET key value PXAT ms` when an expiry was
// given (DEL for one already past), else as sent without GET.
func cmdSet(c *Ctx) {
	flags, expire, ok := parseStringOptions(c, false)
	if !ok {
		return
	}
	setGeneric(c, flags, c.Argv[1], c.Argv[2], expire, nil, nil)
}

// setGeneric is setGenericCommand: okReply / abortReply replace +OK and
// nil (SETNX answers :1 / :0); nil means the defaults.
func setGeneric(c *Ctx, flags int, keyArg, val, expire []byte, okReply, abortReply func()) {
	var at int64
	if expire != nil {
		var ok bool
		if at, ok = expireMs(c, expire, flags); !ok {
			return
		}
	}
	key := string(keyArg)
	if flags&optGet != 0 {
		old, found, e := lookupString(c.DB, key)
		switch {
		case e != "":
			c.W.Error(e)
			return
		case found:
			c.W.Bulk(old)
		default:
			c.W.Nil()
		}
	}
	found := c.DB.Get(key) != nil
	if (flags&optNX != 0 && found) || (flags&optXX != 0 && !found) {
		if flags&optGet == 0 {
			if abortReply != nil {
				abortReply()
			} else {
				c.W.Nil()
			}
		}
		return
	}
	if expire != nil && alreadyExpired(c, at) {
		// Valkey 8.0's fast path: an expire time already past stores
		// nothing and deletes the key that was there (recorded as DEL).
		if found {
			c.DB.Remove(key)
			c.S.ExpiredKeys++ // deleteExpiredKeyFromOverwriteAndPropagate
			c.Dirty(key)
			c.Propagate([][][]byte{{[]byte("DEL"), keyArg}})
		}
		if flags&optGet == 0 {
			c.W.OK()
		}
		return
	}
	v := NewString(c.KeepArg(val))
	if flags&optKeepTTL != 0 {
		c.DB.Replace(key, v)
	} else {
		c.DB.Put(key, v)
	}
	if expire != nil {
		c.DB.SetExpire(key, at)
	}
	c.Dirty(key)
	if flags&optGet == 0 {
		if okReply != nil {
			okReply()
		} else {
			c.W.OK()
		}
	}
	switch {
	case expire != nil:
		c.Propagate([][][]byte{{[]byte("SET"), keyArg, val, []byte("PXAT"), strconv.AppendInt(nil, at, 10)}})
	case flags&optGet != 0:
		// Valkey propagates SET without its GET arguments.
		out := make([][]byte, 0, len(c.Argv))
		for j, a := range c.Argv {
			if j >= 3 && eqFold(cstr(a), "get") {
				continue
			}
			out = append(out, a)
		}
		c.Propagate([][][]byte{out})
	}
	// Otherwise the server records the command's own argv (SET with NX,
	// XX or KEEPTTL, SETNX) which replays to the same effect.
}

// SETEX key seconds value / PSETEX key milliseconds value: `+OK`; the
// expire argument as SET EX / PX (`ERR invalid expire time in 'setex'
// command` ...).
func setexGeneric(c *Ctx, ms bool) {
	flags := optEX
	if ms {
		flags = optPX
	}
	setGeneric(c, flags, c.Argv[1], c.Argv[3], c.Argv[2], nil, nil)
}

// SETNX key value: `:1` set (the TTL cleared), `:0` when the key exists.
func cmdSetNX(c *Ctx) {
	setGeneric(c, optNX, c.Argv[1], c.Argv[2], nil, func() { c.W.Int(1) }, func() { c.W.Int(0) })
}

// GETEX key [EX s|PX ms|EXAT s|PXAT ms|PERSIST]: the value (nil when
// missing; WRONGTYPE), after the options (`ERR syntax error`); the expire
// value is checked only for an existing string. Sets, or with PERSIST
// removes, the TTL; an EXAT/PXAT already past deletes the key (recorded as
// DEL). Recorded as PEXPIREAT / PERSIST / DEL, never as GETEX.
func cmdGetEx(c *Ctx) {
	flags, expire, ok := parseStringOptions(c, true)
	if !ok {
		return
	}
	key := string(c.Argv[1])
	v := c.DB.Get(key)
	if v == nil {
		c.W.Nil()
		return
	}
	if v.Kind != KindString {
		c.W.Error(ErrWrongType)
		return
	}
	var at int64
	if expire != nil {
		if at, ok = expireMs(c, expire, flags); !ok {
			return
		}
	}
	c.W.Bulk(v.Str)
	switch {
	case flags&(optEXAT|optPXAT) != 0 && alreadyExpired(c, at):
		// Valkey 8.0.1 deletes it without counting expired_keys (EXPIRE
		// and SET count: deleteExpiredKeyFromOverwriteAndPropagate).
		c.DB.Remove(key)
		c.Dirty(key)
		c.Propagate([][][]byte{{[]byte("DEL"), c.Argv[1]}})
	case expire != nil:
		c.DB.SetExpire(key, at)
		c.Dirty(key)
		c.Propagate([][][]byte{{[]byte("PEXPIREAT"), c.Argv[1], strconv.AppendInt(nil, at, 10)}})
	case flags&optPersist != 0:
		if c.DB.Persist(key) {
			c.Dirty(key)
			c.Propagate([][][]byte{{[]byte("PERSIST"), c.Argv[1]}})
		}
	}
}

// alreadyExpired is checkAlreadyExpired: an absolute time at or before now
// deletes the key at once (never while the AOF is replayed).
func alreadyExpired(c *Ctx, at int64) bool {
	return at <= c.NowMs && !c.S.loading
}

// GETDEL key: the value, then the key is deleted; nil when missing;
// WRONGTYPE. Recorded as DEL.
func cmdGetDel(c *Ctx) {
	key := string(c.Argv[1])
	s, found, e := lookupString(c.DB, key)
	switch {
	case e != "":
		c.W.Error(e)
		return
	case !found:
		c.W.Nil()
		return
	}
	c.W.Bulk(s)
	c.DB.Remove(key)
	c.Dirty(key)
	c.Propagate([][][]byte{{[]byte("DEL"), c.Argv[1]}})
}

// GETSET key value: the old value (nil when missing; WRONGTYPE and nothing
// written), then SET key value (the TTL cleared). Recorded as SET.
func cmdGetSet(c *Ctx) {
	key := string(c.Argv[1])
	s, found, e := lookupString(c.DB, key)
	switch {
	case e != "":
		c.W.Error(e)
		return
	case found:
		c.W.Bulk(s)
	default:
		c.W.Nil()
	}
	c.DB.Put(key, NewString(c.KeepArg(c.Argv[2])))
	c.Dirty(key)
	c.Propagate([][][]byte{{[]byte("SET"), c.Argv[1], c.Argv[2]}})
}

// GETRANGE key start end (and SUBSTR): the bytes from start to end,
// inclusive, negative offsets counting from the end; the integers first
// (`ERR value is not an integer or out of range`), then WRONGTYPE; an
// empty bulk for a missing key or an empty range.
func cmdGetRange(c *Ctx) {
	start, ok := num.ParseInt(c.Argv[2])
	if !ok {
		c.W.Error(ErrNotInteger)
		return
	}
	end, ok := num.ParseInt(c.Argv[3])
	if !ok {
		c.W.Error(ErrNotInteger)
		return
	}
	s, _, e := lookupString(c.DB, string(c.Argv[1]))
	if e != "" {
		c.W.Error(e)
		return
	}
	n := int64(len(s))
	if start < 0 && end < 0 && start > end {
		c.W.Bulk(nil)
		return
	}
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	if start < 0 {
		start = 0
	}
	if end < 0 {
		end = 0
	}
	if end >= n {
		end = n - 1
	}
	if start > end || n == 0 {
		c.W.Bulk(nil)
		return
	}
	c.W.Bulk(s[start : end+1])
}

// maxBulk is the largest string SETRANGE and APPEND may build
// (proto-max-bulk-len).
func (s *Store) maxBulk() int64 {
	if s.ProtoMaxBulkLen > 0 {
		return s.ProtoMaxBulkLen
	}
	return MaxStringLen
}

// checkStringLength is Valkey's: size+add above proto-max-bulk-len (or an
// overflow) is refused; never while the AOF is replayed.
func checkStringLength(c *Ctx, size, add int64) bool {
	if c.S.loading {
		return true
	}
	total := size + add
	if total > c.S.maxBulk() || total < size || total < add {
		c.W.Error(errStringSize)
		return false
	}
	return true
}

// SETRANGE key offset value: `:len` of the string after writing value at
// offset (zero bytes fill a gap). The offset first (`ERR value is not an
// integer or out of range`, negative: `ERR offset is out of range`); an
// empty value writes nothing (`:0` for a missing key, which is not
// created); WRONGTYPE; a result above proto-max-bulk-len is `ERR string
// exceeds maximum allowed size (proto-max-bulk-len)`. Keeps the TTL.
func cmdSetRange(c *Ctx) {
	off, ok := num.ParseInt(c.Argv[2])
	if !ok {
		c.W.Error(ErrNotInteger)
		return
	}
	if off < 0 {
		c.W.Error(errOffsetRange)
		return
	}
	key := string(c.Argv[1])
	val := c.Argv[3]
	v := c.DB.Get(key)
	if v == nil {
		if len(val) == 0 {
			c.W.Int(0)
			return
		}
		if !checkStringLength(c, off, int64(len(val))) {
			return
		}
		b := make([]byte, off+int64(len(val)))
		copy(b[off:], val)
		c.DB.Put(key, &Value{Kind: KindString, Str: b, enc: encRaw})
		c.Dirty(key)
		c.W.Int(int64(len(b)))
		return
	}
	if v.Kind != KindString {
		c.W.Error(ErrWrongType)
		return
	}
	if len(val) == 0 {
		c.W.Int(int64(len(v.Str)))
		return
	}
	if !checkStringLength(c, off, int64(len(val))) {
		return
	}
	need := off + int64(len(val))
	c.DB.Mutating()
	b := v.Str
	if int64(len(b)) < need {
		nb := make([]byte, need)
		copy(nb, b)
		b = nb
	}
	copy(b[off:], val)
	v.Str = b
	v.enc = encRaw
	c.Dirty(key)
	c.W.Int(int64(len(b)))
}

// INCRBYFLOAT key increment: the new value as a bulk (long double
// arithmetic and printing, docs/compat.md §3.4). WRONGTYPE, then the
// stored value, then the increment (`ERR value is not a valid float`), then
// `ERR increment would produce NaN or Infinity`. Keeps the TTL; recorded
// as `SET key value KEEPTTL`.
func cmdIncrByFloat(c *Ctx) {
	key := string(c.Argv[1])
	s, found, e := lookupString(c.DB, key)
	if e != "" {
		c.W.Error(e)
		return
	}
	cur := num.NewLongDouble()
	if found {
		v, ok := num.ParseLongDouble(s)
		if !ok {
			c.W.Error(ErrNotFloat)
			return
		}
		cur = v
	}
	incr, ok := num.ParseLongDouble(c.Argv[2])
	if !ok {
		c.W.Error(ErrNotFloat)
		return
	}
	sum, ok := num.AddLongDouble(cur, incr)
	if !ok {
		c.W.Error(errIncrNaNInf)
		return
	}
	text := []byte(num.FormatLongDouble(sum))
	nv := &Value{Kind: KindString, Str: text, enc: encCreated}
	if found {
		c.DB.Replace(key, nv)
	} else {
		c.DB.Put(key, nv)
	}
	c.Dirty(key)
	c.W.Bulk(text)
	c.Propagate([][][]byte{{[]byte("SET"), c.Argv[1], text, []byte("KEEPTTL")}})
}

// MSETNX key value [key value ...]: `:1` when no key existed and all were
// set (TTLs cleared; the last value wins for a repeated key), `:0` and
// nothing written when any exists. A key without a value is the arity
// error.
func cmdMSetNX(c *Ctx) {
	if len(c.Argv)%2 == 0 {
		c.W.Error("ERR wrong number of arguments for 'msetnx' command")
		return
	}
	for i := 1; i < len(c.Argv); i += 2 {
		if c.DB.Get(string(c.Argv[i])) != nil {
			c.W.Int(0)
			return
		}
	}
	for i := 1; i+1 < len(c.Argv); i += 2 {
		key := string(c.Argv[i])
		c.DB.Put(key, NewString(c.KeepArg(c.Argv[i+1])))
		c.Dirty(key)
	}
	c.W.Int(1)
}

// LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]: the longest
// common subsequence of two strings (a missing key is ""), its length
// (LEN), or with IDX a map {matches: [[[a_start, a_end], [b_start, b_end]
// [, len]] ...], len: n}, ranges from the end of the strings backwards
// (t_string.c cmdLCS). Either key not a string: `ERR The specified keys
// must contain string values`, before the options; LEN with IDX: `ERR If
// you want both the length and indexes, please just use IDX.`; a table
// larger than proto-max-bulk-len: `ERR Insufficient memory, transient
// memory for LCS exceeds proto-max-bulk-len`.
func cmdLCS(c *Ctx) {
	va := c.DB.Get(string(c.Argv[1]))
	vb := c.DB.Get(string(c.Argv[2]))
	if (va != nil && va.Kind != KindString) || (vb != nil && vb.Kind != KindString) {
		c.W.Error("ERR The specified keys must contain string values")
		return
	}
	var a, b []byte
	if va != nil {
		a = va.Str
	}
	if vb != nil {
		b = vb.Str
	}
	var getLen, getIdx, withMatchLen bool
	var minMatch int64
	argv := c.Argv
	for j := 3; j < len(argv); j++ {
		opt := cstr(argv[j])
		more := len(argv) - 1 - j
		switch {
		case eqFold(opt, "idx"):
			getIdx = true
		case eqFold(opt, "len"):
			getLen = true
		case eqFold(opt, "withmatchlen"):
			withMatchLen = true
		case eqFold(opt, "minmatchlen") && more > 0:
			n, ok := num.ParseInt(argv[j+1])
			if !ok {
				c.W.Error(ErrNotInteger)
				return
			}
			minMatch = max(n, 0)
			j++
		default:
			c.W.Error(ErrSyntax)
			return
		}
	}
	if getIdx && getLen {
		c.W.Error("ERR If you want both the length and indexes, please just use IDX.")
		return
	}
	alen, blen := len(a), len(b)
	if int64(alen)+1 > math.MaxInt64/4/(int64(blen)+1) || 4*(int64(alen)+1)*(int64(blen)+1) > c.S.maxBulk() {
		c.W.Error("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len")
		return
	}
	w := blen + 1
	lcs := make([]uint32, (alen+1)*w)
	for i := 1; i <= alen; i++ {
		for j := 1; j <= blen; j++ {
			if a[i-1] == b[j-1] {
				lcs[i*w+j] = lcs[(i-1)*w+j-1] + 1
			} else {
				l1, l2 := lcs[(i-1)*w+j], lcs[i*w+j-1]
				lcs[i*w+j] = max(l1, l2)
			}
		}
	}
	total := lcs[alen*w+blen]
	if getLen {
		c.W.Int(int64(total))
		return
	}
	idx := total
	result := make([]byte, idx)
	arraysAt, matches := 0, 0
	if getIdx {
		c.W.Map(2)
		c.W.BulkString("matches")
		arraysAt = len(c.W.Buf)
	}
	aStart, aEnd, bStart, bEnd := alen, 0, 0, 0 // aStart == alen: no range yet
	i, j := alen, blen
	for i > 0 && j > 0 {
		emit := false
		if a[i-1] == b[j-1] {
			result[idx-1] = a[i-1]
			if aStart == alen {
				aStart, aEnd, bStart, bEnd = i-1, i-1, j-1, j-1
			} else if aStart == i && bStart == j {
				aStart--
				bStart--
			} else {
				emit = true
			}
			if aStart == 0 || bStart == 0 {
				emit = true
			}
			idx--
			i--
			j--
		} else {
			if lcs[(i-1)*w+j] > lcs[i*w+j-1] {
				i--
			} else {
				j--
			}
			if aStart != alen {
				emit = true
			}
		}
		matchLen := int64(aEnd - aStart + 1)
		if emit {
			if getIdx && (minMatch == 0 || matchLen >= minMatch) {
				if withMatchLen {
					c.W.Array(3)
				} else {
					c.W.Array(2)
				}
				c.W.Array(2)
				c.W.Int(int64(aStart))
				c.W.Int(int64(aEnd))
				c.W.Array(2)
				c.W.Int(int64(bStart))
				c.W.Int(int64(bEnd))
				if withMatchLen {
					c.W.Int(matchLen)
				}
				matches++
			}
			aStart = alen
		}
	}
	if getIdx {
		deferredArray(c.W, arraysAt, matches)
		c.W.BulkString("len")
		c.W.Int(int64(total))
		return
	}
	c.W.Bulk(result)
}
