package store

import (
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/emqd/emqd/internal/num"
	"github.com/emqd/emqd/internal/resp"
)

// The sorted set commands, with Valkey 8.0's replies, error texts and
// check order (docs/compat.md §1.2; t_zset.c). Arguments are validated
// before the key lookup (1.4); refusals write nothing to the store.

func zsetCommands() []*CommandSpec {
	w := []Flag{FlagWrite, FlagDenyOOM, FlagFast}
	wf := []Flag{FlagWrite, FlagFast}
	rf := []Flag{FlagReadonly, FlagFast}
	wr := []Flag{FlagWrite}
	ro := []Flag{FlagReadonly}
	spec := func(name string, arity int, flags []Flag, h Handler) *CommandSpec {
		return NewCommand(name, arity, h, flags...).WithKeys(1, 1, 1)
	}
	return []*CommandSpec{
		spec("zadd", -4, w, cmdZAdd),
		spec("zincrby", 4, w, cmdZIncrBy),
		spec("zrem", -3, wf, cmdZRem),
		spec("zscore", 3, rf, cmdZScore),
		spec("zmscore", -3, rf, cmdZMScore),
		spec("zcard", 2, rf, cmdZCard),
		spec("zcount", 4, rf, func(c *Ctx) { zcountGeneric(c, zrangeScore) }),
		spec("zlexcount", 4, rf, func(c *Ctx) { zcountGeneric(c, zrangeLex) }),
		spec("zrank", -3, rf, func(c *Ctx) { zrankGeneric(c, false) }),
		spec("zrevrank", -3, rf, func(c *Ctx) { zrankGeneric(c, true) }),
		spec("zrange", -4, ro, func(c *Ctx) { zrangeGeneric(c, zrangeAuto, dirAuto) }),
		NewCommand("zrangestore", -5, func(c *Ctx) { zrangeGenericStore(c, zrangeAuto, dirAuto, true) },
			FlagWrite, FlagDenyOOM).WithKeys(1, 2, 1),
		spec("zrangebyscore", -4, ro, func(c *Ctx) { zrangeGeneric(c, zrangeScore, dirForward) }),
		spec("zrevrangebyscore", -4, ro, func(c *Ctx) { zrangeGeneric(c, zrangeScore, dirReverse) }),
		spec("zrangebylex", -4, ro, func(c *Ctx) { zrangeGeneric(c, zrangeLex, dirForward) }),
		spec("zrevrangebylex", -4, ro, func(c *Ctx) { zrangeGeneric(c, zrangeLex, dirReverse) }),
		spec("zrevrange", -4, ro, func(c *Ctx) { zrangeGeneric(c, zrangeRank, dirReverse) }),
		spec("zpopmin", -2, wf, func(c *Ctx) { zpopGeneric(c, false) }),
		spec("zpopmax", -2, wf, func(c *Ctx) { zpopGeneric(c, true) }),
		spec("zremrangebyscore", 4, wr, func(c *Ctx) { zremrangeGeneric(c, zrangeScore) }),
		spec("zremrangebyrank", 4, wr, func(c *Ctx) { zremrangeGeneric(c, zrangeRank) }),
		spec("zremrangebylex", 4, wr, func(c *Ctx) { zremrangeGeneric(c, zrangeLex) }),
		spec("zscan", -3, ro, cmdZScan),
		spec("zrandmember", -2, ro, cmdZRandMember),
	}
}

// Error texts of the sorted set commands (t_zset.c).
const (
	errZAddXXNX      = "ERR XX and NX options at the same time are not compatible"
	errZAddGTLTNX    = "ERR GT, LT, and/or NX options at the same time are not compatible"
	errZAddIncrPair  = "ERR INCR option supports a single increment-element pair"
	errZNaN          = "ERR resulting score is not a number (NaN)"
	errZLimitNeedsBy = "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"
	errZScoresBylex  = "ERR syntax error, WITHSCORES not supported in combination with BYLEX"
	errOutOfRange    = "ERR value is out of range"
	errCountRange    = "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"
)

// writeScore writes score v as Valkey's addReplyDouble: a RESP3 double
// (",text") or a RESP2 bulk string, with FormatScore's text. No allocation.
func writeScore(w *resp.Writer, v float64) {
	var tmp [40]byte
	txt := num.AppendScore(tmp[:0], v)
	if w.Proto == 3 {
		w.Buf = append(w.Buf, ',')
		w.Buf = append(w.Buf, txt...)
		w.Buf = append(w.Buf, '\r', '\n')
		return
	}
	w.Bulk(txt)
}

// writeScoreBulk writes score v as a bulk string in both protocols (ZSCAN).
func writeScoreBulk(w *resp.Writer, v float64) {
	var tmp [40]byte
	w.Bulk(num.AppendScore(tmp[:0], v))
}

// deferredArray inserts an array header of n elements at offset at of w's
// buffer, before the elements already written after it (Valkey's
// setDeferredArrayLen).
func deferredArray(w *resp.Writer, at, n int) {
	var tmp [24]byte
	h := append(tmp[:0], '*')
	h = strconv.AppendInt(h, int64(n), 10)
	h = append(h, '\r', '\n')
	w.Buf = append(w.Buf, h...) // grow by len(h)
	copy(w.Buf[at+len(h):], w.Buf[at:len(w.Buf)-len(h)])
	copy(w.Buf[at:], h)
}

// argIs reports whether arg equals the lower-case ASCII word, ignoring
// ASCII case only (C's tolower in the C locale, as strcasecmp).
func argIs(arg []byte, word string) bool {
	if len(arg) != len(word) {
		return false
	}
	for i := range arg {
		if asciiLower(arg[i]) != word[i] {
			return false
		}
	}
	return true
}

// asciiLower is C's tolower in the C locale.
func asciiLower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// lookupZSetOrReply looks key up for a sorted set command: it returns the
// set, or nil after writing WRONGTYPE (wrong=true), or nil with wrong=false
// when the key is missing (the caller writes its own reply).
func lookupZSetOrReply(c *Ctx, key []byte) (z *ZSet, wrong bool) {
	z, e := c.DB.LookupZSet(string(key))
	if e != "" {
		c.W.Error(e)
		return nil, true
	}
	return z, false
}

// ---- ZADD / ZINCRBY

const (
	zaddNX = 1 << iota
	zaddXX
	zaddGT
	zaddLT
	zaddIncr
	zaddCH
)

// cmdZAdd is ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...].
func cmdZAdd(c *Ctx) { zaddGeneric(c, 0) }

// cmdZIncrBy is ZINCRBY key increment member: ZADD's code with INCR set, as
// in Valkey (so ZINCRBY z nx m is a syntax error).
func cmdZIncrBy(c *Ctx) { zaddGeneric(c, zaddIncr) }

func zaddGeneric(c *Ctx, flags int) {
	argv := c.Argv
	idx := 2
options:
	for ; idx < len(argv); idx++ {
		a := argv[idx]
		switch {
		case argIs(a, "nx"):
			flags |= zaddNX
		case argIs(a, "xx"):
			flags |= zaddXX
		case argIs(a, "ch"):
			flags |= zaddCH
		case argIs(a, "incr"):
			flags |= zaddIncr
		case argIs(a, "gt"):
			flags |= zaddGT
		case argIs(a, "lt"):
			flags |= zaddLT
		default:
			break options
		}
	}
	incr := flags&zaddIncr != 0
	nx, xx := flags&zaddNX != 0, flags&zaddXX != 0
	gt, lt := flags&zaddGT != 0, flags&zaddLT != 0
	elements := len(argv) - idx
	if elements%2 != 0 || elements == 0 {
		c.W.Error(ErrSyntax)
		return
	}
	elements /= 2
	if nx && xx {
		c.W.Error(errZAddXXNX)
		return
	}
	if (gt && nx) || (lt && nx) || (gt && lt) {
		c.W.Error(errZAddGTLTNX)
		return
	}
	if incr && elements > 1 {
		c.W.Error(errZAddIncrPair)
		return
	}
	// Every score is parsed before anything is written.
	var stack [8]float64
	scores := stack[:0]
	if elements > len(stack) {
		scores = make([]float64, 0, elements)
	}
	for j := 0; j < elements; j++ {
		v, ok := num.ParseDouble(argv[idx+2*j])
		if !ok {
			c.W.Error(ErrNotFloat)
			return
		}
		scores = append(scores, v)
	}

	// The key is converted for the lookup on the stack and again only
	// where it is kept (a new set, Dirty): a ZADD that changes nothing
	// (redis-benchmark's ZADD of one member, a job re-added at its score)
	// allocates no key (TestReadKeyConversionOnStack).
	z, e := c.DB.LookupZSet(string(argv[1]))
	if e != "" {
		c.W.Error(e)
		return
	}
	if z == nil {
		if xx {
			if incr {
				c.W.Nil()
			} else {
				c.W.Int(0)
			}
			return
		}
		z, _ = c.DB.ZSetForWrite(string(argv[1]))
	}
	c.DB.Mutating()
	z.NoteHint(elements, zaddMaxLen(argv[idx:]))

	added, updated, processed := 0, 0, 0
	var score float64
	for j := 0; j < elements; j++ {
		s := scores[j]
		member := argv[idx+2*j+1]
		if cur, exists := z.ScoreBytes(member); exists {
			if nx {
				continue
			}
			if incr {
				s += cur
				if math.IsNaN(s) {
					// Only an existing member can get here: the set is not
					// empty and nothing was written.
					c.W.Error(errZNaN)
					return
				}
			}
			if (lt && s >= cur) || (gt && s <= cur) {
				continue
			}
			processed++
			score = s
			if s != cur {
				z.AddBytes(member, s)
				updated++
			}
		} else if !xx {
			z.AddBytes(member, s)
			added++
			processed++
			score = s
		}
	}
	if added+updated > 0 {
		c.Dirty(string(argv[1]))
	}
	if incr {
		if processed > 0 {
			writeScore(c.W, score)
		} else {
			c.W.Nil()
		}
		return
	}
	if flags&zaddCH != 0 {
		c.W.Int(int64(added + updated))
	} else {
		c.W.Int(int64(added))
	}
}

// zaddMaxLen is the longest member of ZADD's score/member pairs.
func zaddMaxLen(pairs [][]byte) int {
	m := 0
	for j := 1; j < len(pairs); j += 2 {
		m = max(m, len(pairs[j]))
	}
	return m
}

// ---- ZREM ZSCORE ZMSCORE ZCARD

// cmdZRem is ZREM key member [member ...]: the number removed; the key goes
// when its last member does.
func cmdZRem(c *Ctx) {
	z, wrong := lookupZSetOrReply(c, c.Argv[1])
	if wrong {
		return
	}
	if z == nil {
		c.W.Int(0)
		return
	}
	n := 0
	c.DB.Mutating()
	for _, m := range c.Argv[2:] {
		if z.RemBytes(m) {
			n++
		}
		if z.Len() == 0 {
			break
		}
	}
	if n > 0 {
		key := string(c.Argv[1])
		c.DB.DropIfEmpty(key)
		c.Dirty(key)
	}
	c.W.Int(int64(n))
}

// writeMemberScore writes member m's score in z (writeScore), or nil when
// z is nil (a missing key) or has no such member (ZSCORE, ZMSCORE).
func writeMemberScore(c *Ctx, z *ZSet, m []byte) {
	if z != nil {
		if s, ok := z.ScoreBytes(m); ok {
			writeScore(c.W, s)
			return
		}
	}
	c.W.Nil()
}

// cmdZScore is ZSCORE key member: the score (bulk, RESP3 double) or nil.
func cmdZScore(c *Ctx) {
	z, wrong := lookupZSetOrReply(c, c.Argv[1])
	if wrong {
		return
	}
	writeMemberScore(c, z, c.Argv[2])
}

// cmdZMScore is ZMSCORE key member [member ...]: an array of scores or nils
// (all nils for a missing key).
func cmdZMScore(c *Ctx) {
	z, wrong := lookupZSetOrReply(c, c.Argv[1])
	if wrong {
		return
	}
	c.W.Array(len(c.Argv) - 2)
	for _, m := range c.Argv[2:] {
		writeMemberScore(c, z, m)
	}
}

// cmdZCard is ZCARD key.
func cmdZCard(c *Ctx) {
	z, wrong := lookupZSetOrReply(c, c.Argv[1])
	if wrong {
		return
	}
	if z == nil {
		c.W.Int(0)
		return
	}
	c.W.Int(int64(z.Len()))
}

// ---- Ranges

// scoreRange is a parsed zslParseRange pair.
type scoreRange struct {
	min, max     float64
	minEx, maxEx bool
}

func parseScoreRange(minArg, maxArg []byte) (r scoreRange, ok bool) {
	var ok1, ok2 bool
	r.min, r.minEx, ok1 = num.ParseRangeBound(minArg)
	r.max, r.maxEx, ok2 = num.ParseRangeBound(maxArg)
	return r, ok1 && ok2
}

func (r *scoreRange) gteMin(v float64) bool {
	if r.minEx {
		return v > r.min
	}
	return v >= r.min
}

func (r *scoreRange) lteMax(v float64) bool {
	if r.maxEx {
		return v < r.max
	}
	return v <= r.max
}

// empty reports a range that can hold nothing whatever the set.
func (r *scoreRange) empty() bool {
	return r.min > r.max || (r.min == r.max && (r.minEx || r.maxEx))
}

// ranks returns [lo, hi): the ascending ranks of the members in range.
func (r *scoreRange) ranks(z *ZSet) (lo, hi int) {
	if r.empty() {
		return 0, 0
	}
	lo = z.CountScoreBelow(r.min, r.minEx)
	hi = z.CountScoreBelow(r.max, !r.maxEx)
	if hi < lo {
		hi = lo
	}
	return lo, hi
}

// lexBound is one parsed lex range item: '-' (the least string), '+' (the
// greatest), or "(s"/"[s".
type lexBound struct {
	inf int // -1 for '-', +1 for '+', 0 for a string
	s   string
	ex  bool
}

// parseLexBound is zslParseLexRangeItem (C string semantics: "+" and "-"
// must be the whole item up to a NUL).
func parseLexBound(b []byte) (lexBound, bool) {
	if len(b) == 0 {
		return lexBound{}, false
	}
	switch b[0] {
	case '+', '-':
		if len(b) > 1 && b[1] != 0 {
			return lexBound{}, false
		}
		if b[0] == '+' {
			return lexBound{inf: 1, ex: true}, true
		}
		return lexBound{inf: -1, ex: true}, true
	case '(':
		return lexBound{s: string(b[1:]), ex: true}, true
	case '[':
		return lexBound{s: string(b[1:])}, true
	}
	return lexBound{}, false
}

// lexRange is a parsed zsetParseLexRange pair.
type lexRange struct{ min, max lexBound }

func parseLexRange(minArg, maxArg []byte) (r lexRange, ok bool) {
	var ok1, ok2 bool
	r.min, ok1 = parseLexBound(minArg)
	if !ok1 {
		return r, false
	}
	r.max, ok2 = parseLexBound(maxArg)
	return r, ok2
}

// cmpLex is sdscmplex(value, bound) for a member value.
func cmpLex(v string, b *lexBound) int {
	switch b.inf {
	case -1:
		return 1
	case 1:
		return -1
	}
	switch {
	case v < b.s:
		return -1
	case v > b.s:
		return 1
	}
	return 0
}

func (r *lexRange) gteMin(v string) bool {
	if r.min.ex {
		return cmpLex(v, &r.min) > 0
	}
	return cmpLex(v, &r.min) >= 0
}

func (r *lexRange) lteMax(v string) bool {
	if r.max.ex {
		return cmpLex(v, &r.max) < 0
	}
	return cmpLex(v, &r.max) <= 0
}

// empty is zslIsInLexRange's first test: min after max, or equal with an
// exclusive end.
func (r *lexRange) empty() bool {
	var cmp int
	a, b := &r.min, &r.max
	switch {
	case a.inf != 0 && a.inf == b.inf:
		cmp = 0
	case a.inf == -1 || b.inf == 1:
		cmp = -1
	case a.inf == 1 || b.inf == -1:
		cmp = 1
	case a.s < b.s:
		cmp = -1
	case a.s > b.s:
		cmp = 1
	}
	return cmp > 0 || (cmp == 0 && (a.ex || b.ex))
}

// inRange is zslIsInLexRange: the range is not empty, the last member is
// at or after min and the first is at or before max.
func (r *lexRange) inRange(z *ZSet) bool {
	if r.empty() {
		return false
	}
	last, ok := z.Max()
	if !ok || !r.gteMin(last.Member) {
		return false
	}
	first, _ := z.Min()
	return r.lteMax(first.Member)
}

// countLexBelow is, for a set whose members all have score s, the number
// of members ordered before bound b (orEqual: at or before it).
func countLexBelow(z *ZSet, s float64, b *lexBound, orEqual bool) int {
	switch b.inf {
	case -1:
		return 0
	case 1:
		return z.Len()
	}
	n := z.CountLess(ZItem{s, b.s})
	if orEqual {
		if _, ok := z.Score(b.s); ok {
			n++
		}
	}
	return n
}

// forwardRanks returns the ascending ranks [lo, hi) that a forward lex walk
// visits, as the listpack code does (zzlFirstInLexRange, then on while
// lteMax). With one score for all members (the documented use) the members
// are in lex order and this is two binary searches; otherwise it walks.
func (r *lexRange) forwardRanks(z *ZSet) (lo, hi int) {
	if !r.inRange(z) {
		return 0, 0
	}
	if first, _ := z.Min(); z.SameScore() {
		lo = countLexBelow(z, first.Score, &r.min, r.min.ex)
		hi = countLexBelow(z, first.Score, &r.max, !r.max.ex)
		if hi < lo {
			hi = lo
		}
		return lo, hi
	}
	i, state := 0, 0 // 0: looking for the first, 1: inside
	lo, hi = 0, 0
	z.AscendAll(func(it ZItem) bool {
		switch state {
		case 0:
			if r.gteMin(it.Member) {
				if !r.lteMax(it.Member) {
					return false
				}
				lo, hi, state = i, i+1, 1
			}
		case 1:
			if !r.lteMax(it.Member) {
				return false
			}
			hi = i + 1
		}
		i++
		return true
	})
	return lo, hi
}

// ---- ZRANGE family

type zrangeType int

const (
	zrangeAuto zrangeType = iota
	zrangeRank
	zrangeScore
	zrangeLex
)

// zrangeBounds is a parsed min/max pair of one range type: ranks, scores
// (zslParseRange) or lex items (zsetParseLexRange).
type zrangeBounds struct {
	rt         zrangeType
	start, end int64
	score      scoreRange
	lex        lexRange
}

// parseZRangeBounds parses minArg and maxArg as rt (not zrangeAuto) reads
// them. On a bad bound it writes the type's error (ErrNotInteger,
// ErrMinMaxFloat or ErrMinMaxLex) and returns ok=false.
func parseZRangeBounds(c *Ctx, rt zrangeType, minArg, maxArg []byte) (b zrangeBounds, ok bool) {
	b.rt = rt
	switch rt {
	case zrangeRank:
		if b.start, ok = num.ParseInt(minArg); ok {
			b.end, ok = num.ParseInt(maxArg)
		}
		if !ok {
			c.W.Error(ErrNotInteger)
		}
	case zrangeScore:
		if b.score, ok = parseScoreRange(minArg, maxArg); !ok {
			c.W.Error(ErrMinMaxFloat)
		}
	case zrangeLex:
		if b.lex, ok = parseLexRange(minArg, maxArg); !ok {
			c.W.Error(ErrMinMaxLex)
		}
	}
	return b, ok
}

// ranks returns [lo, hi): the ascending ranks the range covers in z (ranks
// clamped as clampRanks does; for a lex range, those a forward walk visits).
func (b *zrangeBounds) ranks(z *ZSet) (lo, hi int) {
	switch b.rt {
	case zrangeRank:
		s, e, ok := clampRanks(b.start, b.end, z.Len())
		if !ok {
			return 0, 0
		}
		return s, e + 1
	case zrangeScore:
		return b.score.ranks(z)
	case zrangeLex:
		return b.lex.forwardRanks(z)
	}
	return 0, 0
}

type zrangeDir int

const (
	dirAuto zrangeDir = iota
	dirForward
	dirReverse
)

// rangeEmitter writes range results: member bulks, with scores as RESP2
// flat pairs or RESP3 [member, double] arrays.
type rangeEmitter struct {
	w          *resp.Writer
	withScores bool
	pairs      bool // RESP3 nested pairs
	n          int
	// collect, when set, receives the results instead of w (ZRANGESTORE;
	// w is then a scratch writer).
	collect *[]ZItem
}

func newRangeEmitter(w *resp.Writer, withScores bool) rangeEmitter {
	return rangeEmitter{w: w, withScores: withScores, pairs: withScores && w.Proto == 3}
}

func (e *rangeEmitter) emit(it ZItem) {
	if e.collect != nil {
		*e.collect = append(*e.collect, it)
		e.n++
		return
	}
	if e.pairs {
		e.w.Array(2)
	}
	e.w.BulkString(it.Member)
	if e.withScores {
		writeScore(e.w, it.Score)
	}
	e.n++
}

// header is the array length for n results.
func (e *rangeEmitter) header(n int) int {
	if e.withScores && !e.pairs {
		return 2 * n
	}
	return n
}

// zrangeGeneric is Valkey's zrangeGenericCommand for ZRANGE, ZREVRANGE,
// Z[REV]RANGEBYSCORE and Z[REV]RANGEBYLEX (docs/compat.md §1.2, ZRANGE
// row): the option loop, the LIMIT/WITHSCORES conflicts, the range parse,
// then the key.
func zrangeGeneric(c *Ctx, rt zrangeType, dir zrangeDir) { zrangeGenericStore(c, rt, dir, false) }

// zrangeGenericStore is zrangeGeneric, or with store ZRANGESTORE dst src
// min max [BYSCORE|BYLEX] [REV] [LIMIT offset count] (no WITHSCORES).
func zrangeGenericStore(c *Ctx, rt zrangeType, dir zrangeDir, store bool) {
	argv := c.Argv
	at := 1 // the source key
	if store {
		at = 2
	}
	minIdx, maxIdx := at+1, at+2
	withScores := false
	offset, limit := int64(0), int64(-1)
	for j := at + 3; j < len(argv); j++ {
		left := len(argv) - j - 1
		a := argv[j]
		switch {
		case !store && argIs(a, "withscores"):
			withScores = true
		case argIs(a, "limit") && left >= 2:
			var ok bool
			if offset, ok = num.ParseInt(argv[j+1]); !ok {
				c.W.Error(ErrNotInteger)
				return
			}
			if limit, ok = num.ParseInt(argv[j+2]); !ok {
				c.W.Error(ErrNotInteger)
				return
			}
			j += 2
		case dir == dirAuto && argIs(a, "rev"):
			dir = dirReverse
		case rt == zrangeAuto && argIs(a, "bylex"):
			rt = zrangeLex
		case rt == zrangeAuto && argIs(a, "byscore"):
			rt = zrangeScore
		default:
			c.W.Error(ErrSyntax)
			return
		}
	}
	if dir == dirAuto {
		dir = dirForward
	}
	if rt == zrangeAuto {
		rt = zrangeRank
	}
	if limit != -1 && rt == zrangeRank {
		c.W.Error(errZLimitNeedsBy)
		return
	}
	if withScores && rt == zrangeLex {
		c.W.Error(errZScoresBylex)
		return
	}
	reverse := dir == dirReverse
	if reverse && rt != zrangeRank {
		minIdx, maxIdx = maxIdx, minIdx
	}

	b, ok := parseZRangeBounds(c, rt, argv[minIdx], argv[maxIdx])
	if !ok {
		return
	}

	z, wrong := lookupZSetOrReply(c, argv[at])
	if wrong {
		return
	}
	if store {
		var items []ZItem
		if z != nil {
			e := rangeEmitter{w: &resp.Writer{Proto: 2}, collect: &items}
			zrangeEmit(&e, z, rt, &b, offset, limit, reverse)
		}
		storeZSetResult(c, string(argv[1]), items)
		return
	}
	if z == nil {
		c.W.Array(0)
		return
	}
	e := newRangeEmitter(c.W, withScores)
	zrangeEmit(&e, z, rt, &b, offset, limit, reverse)
}

// zrangeEmit runs the range of type rt over z into e.
func zrangeEmit(e *rangeEmitter, z *ZSet, rt zrangeType, b *zrangeBounds, offset, limit int64, reverse bool) {
	switch rt {
	case zrangeRank:
		zrangeByRank(e, z, b.start, b.end, reverse)
	case zrangeScore:
		zrangeByScore(e, z, &b.score, offset, limit, reverse)
	case zrangeLex:
		zrangeByLex(e, z, &b.lex, offset, limit, reverse)
	}
}

// clampRanks is Valkey's rank sanitizing: negative indexes count from the
// end, start is clamped to 0 and end to len-1; ok is false for an empty
// range (start > end or start >= len).
func clampRanks(start, end int64, llen int) (s, e int, ok bool) {
	n := int64(llen)
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	if start < 0 {
		start = 0
	}
	if start > end || start >= n {
		return 0, 0, false
	}
	if end >= n {
		end = n - 1
	}
	return int(start), int(end), true
}

func zrangeByRank(e *rangeEmitter, z *ZSet, start, end int64, reverse bool) {
	llen := z.Len()
	s, en, ok := clampRanks(start, end, llen)
	if !ok {
		e.w.Array(0)
		return
	}
	count := en - s + 1
	e.w.Array(e.header(count))
	if reverse {
		pivot, _ := z.At(llen - 1 - s)
		z.Descend(pivot, func(it ZItem) bool {
			e.emit(it)
			return e.n < count
		})
		return
	}
	pivot, _ := z.At(s)
	z.Ascend(pivot, func(it ZItem) bool {
		e.emit(it)
		return e.n < count
	})
}

// smallOffset is the LIMIT offset below which a range walk steps over the
// skipped members rather than computing ranks.
const smallOffset = 32

// emitRanks writes the members of ascending ranks [lo, hi), after skipping
// offset of them in walk order, at most limit (negative: no limit), with a
// deferred array header.
func emitRanks(e *rangeEmitter, z *ZSet, lo, hi int, offset, limit int64, reverse bool) {
	at := len(e.w.Buf)
	defer func() { deferredArray(e.w, at, e.header(e.n)) }()
	if offset < 0 || lo >= hi || offset >= int64(hi-lo) {
		return
	}
	count := int64(hi-lo) - offset
	if limit >= 0 && limit < count {
		count = limit
	}
	if count == 0 {
		return
	}
	n := int(count)
	if reverse {
		pivot, _ := z.At(hi - 1 - int(offset))
		z.Descend(pivot, func(it ZItem) bool {
			e.emit(it)
			return e.n < n
		})
		return
	}
	pivot, _ := z.At(lo + int(offset))
	z.Ascend(pivot, func(it ZItem) bool {
		e.emit(it)
		return e.n < n
	})
}

// zrangeByScore is genericZrangebyscoreCommand: a negative offset or one
// past the end gives nothing, a negative limit means no limit.
func zrangeByScore(e *rangeEmitter, z *ZSet, r *scoreRange, offset, limit int64, reverse bool) {
	if offset >= smallOffset || r.empty() || offset < 0 || limit == 0 {
		lo, hi := 0, 0
		if offset >= 0 && limit != 0 {
			lo, hi = r.ranks(z)
		}
		emitRanks(e, z, lo, hi, offset, limit, reverse)
		return
	}
	// Walk from the first member in range, stepping over offset members:
	// O(log n + offset + limit) and no rank computation.
	at := len(e.w.Buf)
	skip := offset
	if reverse {
		walk := func(it ZItem) bool {
			if !r.lteMax(it.Score) {
				return true // the pivot's neighbour just above max
			}
			if !r.gteMin(it.Score) {
				return false
			}
			if skip > 0 {
				skip--
				return true
			}
			e.emit(it)
			return limit < 0 || int64(e.n) < limit
		}
		pmax := r.max
		if !r.maxEx {
			if pmax == PosInf {
				z.DescendAll(walk)
				deferredArray(e.w, at, e.header(e.n))
				return
			}
			pmax = math.Nextafter(pmax, PosInf)
		}
		z.Descend(ZItem{pmax, ""}, walk)
		deferredArray(e.w, at, e.header(e.n))
		return
	}
	pmin := r.min
	if r.minEx {
		if pmin == PosInf {
			deferredArray(e.w, at, 0)
			return
		}
		pmin = math.Nextafter(pmin, PosInf)
	}
	z.Ascend(ZItem{pmin, ""}, func(it ZItem) bool {
		if !r.lteMax(it.Score) {
			return false
		}
		if skip > 0 {
			skip--
			return true
		}
		e.emit(it)
		return limit < 0 || int64(e.n) < limit
	})
	deferredArray(e.w, at, e.header(e.n))
}

// zrangeByLex is genericZrangebylexCommand. When every member has the same
// score (the documented use) the members are in lex order and the range is
// found by rank; otherwise it walks as Valkey's listpack code does: from
// the first member in range, over offset members unchecked, then on while
// in range.
func zrangeByLex(e *rangeEmitter, z *ZSet, r *lexRange, offset, limit int64, reverse bool) {
	if z.SameScore() {
		lo, hi := r.forwardRanks(z)
		emitRanks(e, z, lo, hi, offset, limit, reverse)
		return
	}
	at := len(e.w.Buf)
	defer func() { deferredArray(e.w, at, e.header(e.n)) }()
	if !r.inRange(z) || offset < 0 || limit == 0 {
		return
	}
	state, skip := 0, offset // 0: looking for the start, 1: skipping, 2: emitting
	walk := func(it ZItem) bool {
		if state == 0 {
			if reverse {
				if !r.lteMax(it.Member) {
					return true
				}
				if !r.gteMin(it.Member) {
					return false
				}
			} else {
				if !r.gteMin(it.Member) {
					return true
				}
				if !r.lteMax(it.Member) {
					return false
				}
			}
			state = 1
		}
		if state == 1 {
			if skip > 0 {
				skip--
				return true
			}
			state = 2
		}
		if reverse && !r.gteMin(it.Member) || !reverse && !r.lteMax(it.Member) {
			return false
		}
		e.emit(it)
		return limit < 0 || int64(e.n) < limit
	}
	if reverse {
		z.DescendAll(walk)
	} else {
		z.AscendAll(walk)
	}
}

// zcountGeneric is ZCOUNT (rt zrangeScore) and ZLEXCOUNT (rt zrangeLex)
// key min max: the number of members in range.
func zcountGeneric(c *Ctx, rt zrangeType) {
	b, ok := parseZRangeBounds(c, rt, c.Argv[2], c.Argv[3])
	if !ok {
		return
	}
	z, wrong := lookupZSetOrReply(c, c.Argv[1])
	if wrong {
		return
	}
	if z == nil {
		c.W.Int(0)
		return
	}
	lo, hi := b.ranks(z)
	c.W.Int(int64(hi - lo))
}

// zrankGeneric is ZRANK/ZREVRANK key member [WITHSCORE].
func zrankGeneric(c *Ctx, reverse bool) {
	argv := c.Argv
	if len(argv) > 4 {
		c.W.Error("ERR wrong number of arguments for '" + lowerName(argv[0]) + "' command")
		return
	}
	withScore := false
	if len(argv) == 4 {
		if !argIs(argv[3], "withscore") {
			c.W.Error(ErrSyntax)
			return
		}
		withScore = true
	}
	z, wrong := lookupZSetOrReply(c, argv[1])
	if wrong {
		return
	}
	rank := -1
	var score float64
	if z != nil {
		rank, score = z.RankBytes(argv[2])
	}
	if rank < 0 {
		if withScore {
			c.W.NilArray()
		} else {
			c.W.Nil()
		}
		return
	}
	if reverse {
		rank = z.Len() - 1 - rank
	}
	if withScore {
		c.W.Array(2)
		c.W.Int(int64(rank))
		writeScore(c.W, score)
		return
	}
	c.W.Int(int64(rank))
}

// lowerName is the command name in lower case (Valkey's arity errors name
// the command so).
func lowerName(b []byte) string {
	out := make([]byte, len(b))
	for i, ch := range b {
		out[i] = asciiLower(ch)
	}
	return string(out)
}

// ---- ZPOPMIN / ZPOPMAX

// zpopGeneric is ZPOPMIN/ZPOPMAX key [count].
func zpopGeneric(c *Ctx, max bool) {
	argv := c.Argv
	if len(argv) > 3 {
		c.W.Error(ErrSyntax)
		return
	}
	count := int64(-1)
	if len(argv) == 3 {
		n, ok := num.ParseInt(argv[2])
		if !ok || n < 0 {
			c.W.Error(ErrPositive)
			return
		}
		count = n
	}
	// The lookup's key stays on the stack (TestReadKeyConversionOnStack);
	// only a pop that writes converts it again for DropIfEmpty and Dirty,
	// so a pop of a missing key, the common case of a drained queue and of
	// redis-benchmark's ZPOPMIN, allocates nothing.
	z, e := c.DB.LookupZSet(string(argv[1]))
	if e != "" {
		c.W.Error(e)
		return
	}
	if z == nil || count == 0 {
		c.W.Array(0)
		return
	}
	key := string(argv[1])
	nested := c.W.Proto == 3 && count != -1
	if count == -1 {
		count = 1
	}
	n := z.Len()
	if count < int64(n) {
		n = int(count)
	}
	if nested {
		c.W.Array(n)
	} else {
		c.W.Array(2 * n)
	}
	c.DB.Mutating()
	for i := 0; i < n; i++ {
		var it ZItem
		if max {
			it, _ = z.PopMax()
		} else {
			it, _ = z.PopMin()
		}
		if nested {
			c.W.Array(2)
		}
		c.W.BulkString(it.Member)
		writeScore(c.W, it.Score)
	}
	c.DB.DropIfEmpty(key)
	c.Dirty(key)
}

// ---- ZREMRANGEBY*

// zremrangeGeneric is ZREMRANGEBYRANK/SCORE/LEX key a b: the number removed.
func zremrangeGeneric(c *Ctx, rt zrangeType) {
	argv := c.Argv
	b, ok := parseZRangeBounds(c, rt, argv[2], argv[3])
	if !ok {
		return
	}
	key := string(argv[1])
	z, e := c.DB.LookupZSet(key)
	if e != "" {
		c.W.Error(e)
		return
	}
	if z == nil {
		c.W.Int(0)
		return
	}
	lo, hi := b.ranks(z)
	c.DB.Mutating()
	n := z.DeleteRankRange(lo, hi)
	if n > 0 {
		c.DB.DropIfEmpty(key)
		c.Dirty(key)
	}
	c.W.Int(int64(n))
}

// ---- ZSCAN

// ZSetScanAllMax is the largest sorted set that ZSCAN returns whole, in
// rank order, with cursor 0 (Valkey's zset-max-listpack-entries default:
// such sets are listpacks there and are also returned whole). A paged scan
// goes on paging a set that shrinks to this size meanwhile (scan.go).
const ZSetScanAllMax = 128

// cmdZScan is ZSCAN key cursor [MATCH pattern] [COUNT count] [NOSCORES]:
// `*2` [cursor, flat member, score... array] in both protocols, scores as
// FormatScore text in bulk strings (docs/compat.md §3.3: a big Valkey set
// prints %.17Lg instead; emqd always prints d2string). The cursor is parsed
// first, then the key (a missing key answers `*2 "0" *0` without reading
// the options), then the options (scan.go). A set of at most
// ZSetScanAllMax members is returned whole; a bigger one is paged with the
// guarantees of scan.go.
func cmdZScan(c *Ctx) {
	cursor, ok := ParseScanCursor(c.Argv[2])
	if !ok {
		c.W.Error(ErrInvalidCur)
		return
	}
	z, wrong := lookupZSetOrReply(c, c.Argv[1])
	if wrong {
		return
	}
	if z == nil {
		c.W.Raw([]byte(emptyScanReply))
		return
	}
	o, ok := parseScanOptions(c, 3, KindZSet)
	if !ok {
		return
	}
	per := 2
	if o.onlyKeys {
		per = 1
	}
	emit := func(it ZItem) {
		c.W.BulkString(it.Member)
		if !o.onlyKeys {
			writeScoreBulk(c.W, it.Score)
		}
	}
	if z.Len() <= ZSetScanAllMax && !c.DB.scanCollPaging(z, cursor) {
		c.W.Array(2)
		c.W.BulkString("0")
		at, n := len(c.W.Buf), 0
		z.AscendAll(func(it ZItem) bool {
			if o.match(it.Member) {
				emit(it)
				n += per
			}
			return true
		})
		deferredArray(c.W, at, n)
		return
	}
	names, next := c.DB.scanCollPage(z, z.Len(), cursor, o.count, z.members,
		func(m string) bool { _, ok := z.Score(m); return ok })
	var tmp [24]byte
	c.W.Array(2)
	c.W.Bulk(strconv.AppendUint(tmp[:0], next, 10))
	at, n := len(c.W.Buf), 0
	for _, nm := range names {
		if sc, ok := z.Score(nm.name); ok && o.match(nm.name) {
			emit(ZItem{sc, nm.name})
			n += per
		}
	}
	deferredArray(c.W, at, n)
}

// ---- ZRANDMEMBER

// cmdZRandMember is ZRANDMEMBER key [count [WITHSCORES]]: one member (bulk
// or nil), or an array: distinct members for count >= 0 (the whole set,
// highest first, when count >= ZCARD), count members with repeats for a
// negative count. RESP3 WITHSCORES gives [member, double] pairs. Errors as
// HRANDFIELD's, in its order; a negative count whose reply would pass
// hrandMaxReply (256 MiB) is `ERR value is out of range` (Valkey would
// build it until memory runs out).
func cmdZRandMember(c *Ctx) {
	argv := c.Argv
	if len(argv) >= 3 {
		l, ok := num.ParseInt(argv[2])
		if !ok {
			c.W.Error(ErrNotInteger)
			return
		}
		if l == math.MinInt64 {
			c.W.Error(errCountRange)
			return
		}
		withScores := false
		if len(argv) > 4 || (len(argv) == 4 && !argIs(argv[3], "withscores")) {
			c.W.Error(ErrSyntax)
			return
		} else if len(argv) == 4 {
			withScores = true
			if l < -math.MaxInt64/2 || l > math.MaxInt64/2 {
				c.W.Error(errOutOfRange)
				return
			}
		}
		zrandWithCount(c, l, withScores)
		return
	}
	z, wrong := lookupZSetOrReply(c, argv[1])
	if wrong {
		return
	}
	if z == nil {
		c.W.Nil()
		return
	}
	it, _ := z.At(rand.IntN(z.Len()))
	c.W.BulkString(it.Member)
}

func zrandWithCount(c *Ctx, l int64, withScores bool) {
	z, wrong := lookupZSetOrReply(c, c.Argv[1])
	if wrong {
		return
	}
	if z == nil || l == 0 {
		c.W.Array(0)
		return
	}
	e := newRangeEmitter(c.W, withScores)
	size := z.Len()
	if l < 0 {
		// Repeats allowed: count independent picks. As HRANDFIELD, a reply
		// that would pass hrandMaxReply is refused rather than built.
		count := -l
		if count > 1024 {
			maxEntry := 0
			z.members(func(m string) { maxEntry = max(maxEntry, len(m)+48) })
			if count > hrandMaxReply/int64(maxEntry) {
				c.W.Error(errOutOfRange)
				return
			}
		}
		c.W.Array(e.header(int(count)))
		for i := int64(0); i < count; i++ {
			it, _ := z.At(rand.IntN(size))
			e.emit(it)
		}
		return
	}
	if l >= int64(size) {
		c.W.Array(e.header(size))
		z.DescendAll(func(it ZItem) bool { e.emit(it); return true })
		return
	}
	count := int(l)
	c.W.Array(e.header(count))
	if count*3 > size {
		// Partial Fisher-Yates over the ranks.
		idx := make([]int, size)
		for i := range idx {
			idx[i] = i
		}
		for i := 0; i < count; i++ {
			j := i + rand.IntN(size-i)
			idx[i], idx[j] = idx[j], idx[i]
			it, _ := z.At(idx[i])
			e.emit(it)
		}
		return
	}
	seen := make(map[int]struct{}, count)
	for len(seen) < count {
		r := rand.IntN(size)
		if _, dup := seen[r]; dup {
			continue
		}
		seen[r] = struct{}{}
		it, _ := z.At(r)
		e.emit(it)
	}
}
