package store

import (
	"math"
	"slices"
	"sort"

	"github.com/emqd/emqd/internal/num"
)

// Sorted-set algebra (docs/compat.md §1.2) with Valkey 8.0.1's replies,
// error texts and check order (t_zset.c zunionInterDiffGenericCommand):
// ZUNION, ZINTER, ZDIFF, ZUNIONSTORE, ZINTERSTORE, ZDIFFSTORE, ZINTERCARD.

func zsetAlgebraCommands() []*CommandSpec {
	spec := func(name string, arity int, flags []Flag, keys func([][]byte) []int, h Handler) *CommandSpec {
		return NewCommand(name, arity, h, append(flags, FlagMovableKeys)...).WithKeyFunc(keys)
	}
	ro := []Flag{FlagReadonly}
	wd := []Flag{FlagWrite, FlagDenyOOM}
	return []*CommandSpec{
		spec("zunion", -3, ro, numkeysKeys(1, 0), func(c *Ctx) { zsetOpGeneric(c, nil, 1, setOpUnion, false) }),
		spec("zinter", -3, ro, numkeysKeys(1, 0), func(c *Ctx) { zsetOpGeneric(c, nil, 1, setOpInter, false) }),
		spec("zdiff", -3, ro, numkeysKeys(1, 0), func(c *Ctx) { zsetOpGeneric(c, nil, 1, setOpDiff, false) }),
		spec("zintercard", -3, ro, numkeysKeys(1, 0), func(c *Ctx) { zsetOpGeneric(c, nil, 1, setOpInter, true) }),
		spec("zunionstore", -4, wd, numkeysKeys(2, 1), func(c *Ctx) { zsetOpGeneric(c, c.Argv[1], 2, setOpUnion, false) }),
		spec("zinterstore", -4, wd, numkeysKeys(2, 1), func(c *Ctx) { zsetOpGeneric(c, c.Argv[1], 2, setOpInter, false) }),
		spec("zdiffstore", -4, wd, numkeysKeys(2, 1), func(c *Ctx) { zsetOpGeneric(c, c.Argv[1], 2, setOpDiff, false) }),
	}
}

// numkeysKeys returns the key positions of a command whose keys follow a
// numkeys argument at argv[numkeysIdx] (and, when dst > 0, a destination
// key at argv[dst]): COMMAND GETKEYS. A numkeys that does not parse or
// points past the end gives none.
func numkeysKeys(numkeysIdx, dst int) func([][]byte) []int {
	return func(argv [][]byte) []int {
		if numkeysIdx >= len(argv) {
			return nil
		}
		n, ok := num.ParseInt(argv[numkeysIdx])
		if !ok || n < 1 || n > int64(len(argv)-numkeysIdx-1) {
			return nil
		}
		var out []int
		if dst > 0 {
			out = append(out, dst)
		}
		for i := 0; i < int(n); i++ {
			out = append(out, numkeysIdx+1+i)
		}
		return out
	}
}

const (
	setOpUnion = iota
	setOpInter
	setOpDiff
)

// zsetSrc is one input set with its weight (nil: a missing key).
type zsetSrc struct {
	z      *ZSet
	weight float64
}

func (s *zsetSrc) len() int {
	if s.z == nil {
		return 0
	}
	return s.z.Len()
}

// zaggregate is zunionInterAggregate: SUM (inf + -inf counts as 0), MIN,
// MAX (a NaN value never wins).
func zaggregate(target *float64, v float64, agg int) {
	switch agg {
	case aggSum:
		*target += v
		if math.IsNaN(*target) {
			*target = 0
		}
	case aggMin:
		if v < *target {
			*target = v
		}
	case aggMax:
		if v > *target {
			*target = v
		}
	}
}

const (
	aggSum = iota
	aggMin
	aggMax
)

// zsetOpGeneric is zunionInterDiffGenericCommand. dst is the destination
// key of the STORE forms (nil otherwise); numkeys is at argv[numkeysIdx].
//
// Check order: numkeys (`ERR value is not an integer or out of range`,
// then < 1: `ERR at least 1 input key is needed for '<cmd>' command`, then
// more than the arguments: `ERR syntax error`), then every input key's
// type (WRONGTYPE, even before the options), then the options left to
// right: WEIGHTS w1..wn (`ERR weight value is not a float`), AGGREGATE
// SUM|MIN|MAX (not for the DIFF forms), WITHSCORES (not for the STORE
// forms), LIMIT n (ZINTERCARD only; `ERR LIMIT can't be negative`);
// anything else `ERR syntax error`.
//
// Scores: each input score times its weight (NaN, from inf * 0, counts as
// 0), aggregated across the inputs; ZDIFF keeps the first set's scores.
// A STORE form replaces the destination whatever its type (and clears its
// TTL), or deletes it when the result is empty, and replies the result's
// size. Refusals write nothing.
func zsetOpGeneric(c *Ctx, dst []byte, numkeysIdx int, op int, cardOnly bool) {
	argv := c.Argv
	setnum, ok := num.ParseInt(argv[numkeysIdx])
	if !ok {
		c.W.Error(ErrNotInteger)
		return
	}
	if setnum < 1 {
		c.W.Error("ERR at least 1 input key is needed for '" + lowerName(argv[0]) + "' command")
		return
	}
	if setnum > int64(len(argv)-numkeysIdx-1) {
		c.W.Error(ErrSyntax)
		return
	}
	n := int(setnum)
	src := make([]zsetSrc, n)
	j := numkeysIdx + 1
	for i := 0; i < n; i, j = i+1, j+1 {
		z, e := c.DB.LookupZSet(string(argv[j]))
		if e != "" {
			c.W.Error(e)
			return
		}
		src[i] = zsetSrc{z: z, weight: 1}
	}
	agg := aggSum
	withScores := false
	var limit int64
	for remaining := len(argv) - j; remaining > 0; remaining = len(argv) - j {
		opt := cstr(argv[j])
		switch {
		case op != setOpDiff && !cardOnly && remaining >= n+1 && eqFold(opt, "weights"):
			j++
			for i := 0; i < n; i, j = i+1, j+1 {
				w, ok := num.ParseDouble(argv[j])
				if !ok {
					c.W.Error("ERR weight value is not a float")
					return
				}
				src[i].weight = w
			}
		case op != setOpDiff && !cardOnly && remaining >= 2 && eqFold(opt, "aggregate"):
			switch a := cstr(argv[j+1]); {
			case eqFold(a, "sum"):
				agg = aggSum
			case eqFold(a, "min"):
				agg = aggMin
			case eqFold(a, "max"):
				agg = aggMax
			default:
				c.W.Error(ErrSyntax)
				return
			}
			j += 2
		case dst == nil && !cardOnly && eqFold(opt, "withscores"):
			withScores = true
			j++
		case cardOnly && remaining >= 2 && eqFold(opt, "limit"):
			l, ok := num.ParseInt(argv[j+1])
			if !ok || l < 0 {
				c.W.Error("ERR LIMIT can't be negative")
				return
			}
			limit = l
			j += 2
		default:
			c.W.Error(ErrSyntax)
			return
		}
	}
	if op != setOpDiff {
		// Smallest input first (Valkey's qsort by cardinality, stable as
		// glibc's merge sort): the order of floating-point sums.
		sort.SliceStable(src, func(a, b int) bool { return src[a].len() < src[b].len() })
	}

	var out []ZItem
	switch op {
	case setOpInter:
		if src[0].len() == 0 {
			if cardOnly {
				c.W.Int(0)
				return
			}
			break
		}
		card := int64(0)
		src[0].z.AscendAll(func(it ZItem) bool {
			score := src[0].weight * it.Score
			if math.IsNaN(score) {
				score = 0
			}
			for k := 1; k < n; k++ {
				var v float64
				if src[k].z == src[0].z {
					v = it.Score * src[k].weight
				} else if s, ok := src[k].z.Score(it.Member); ok {
					v = s * src[k].weight
				} else {
					return true
				}
				zaggregate(&score, v, agg)
			}
			if cardOnly {
				card++
				return limit == 0 || card < limit
			}
			out = append(out, ZItem{Score: score, Member: it.Member})
			return true
		})
		if cardOnly {
			c.W.Int(card)
			return
		}
	case setOpUnion:
		acc := make(map[string]int)
		for i := range src {
			if src[i].len() == 0 {
				continue
			}
			w := src[i].weight
			src[i].z.AscendAll(func(it ZItem) bool {
				score := w * it.Score
				if math.IsNaN(score) {
					score = 0
				}
				if k, ok := acc[it.Member]; ok {
					zaggregate(&out[k].Score, score, agg)
				} else {
					acc[it.Member] = len(out)
					out = append(out, ZItem{Score: score, Member: it.Member})
				}
				return true
			})
		}
	case setOpDiff:
		if src[0].len() == 0 {
			break
		}
		src[0].z.AscendAll(func(it ZItem) bool {
			for k := 1; k < n; k++ {
				if src[k].z == src[0].z {
					return false // the first set minus itself: nothing
				}
				if src[k].z != nil {
					if _, ok := src[k].z.Score(it.Member); ok {
						return true
					}
				}
			}
			out = append(out, it)
			return true
		})
	}
	// The result in (score, member) order, -0 ordered as 0 (a skiplist).
	slices.SortFunc(out, func(a, b ZItem) int {
		switch {
		case a.Score < b.Score:
			return -1
		case a.Score > b.Score:
			return 1
		case a.Member < b.Member:
			return -1
		case a.Member > b.Member:
			return 1
		}
		return 0
	})

	if dst != nil {
		storeZSetResult(c, string(dst), out)
		return
	}
	e := newRangeEmitter(c.W, withScores)
	c.W.Array(e.header(len(out)))
	for _, it := range out {
		e.emit(it)
	}
}

// storeZSetResult is the STORE forms' ending: a non-empty result replaces
// key (any type, TTL cleared) and the reply is its size; an empty one
// deletes key and the reply is 0.
func storeZSetResult(c *Ctx, key string, items []ZItem) {
	if len(items) == 0 {
		if c.DB.Remove(key) {
			c.Dirty(key)
		}
		c.W.Int(0)
		return
	}
	z := NewZSet()
	z.lim = &c.S.limits
	for _, it := range items {
		z.Add(it.Member, it.Score)
	}
	c.DB.Put(key, &Value{Kind: KindZSet, ZSet: z})
	c.Dirty(key)
	c.W.Int(int64(z.Len()))
}
