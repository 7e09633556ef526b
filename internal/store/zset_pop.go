package store

import (
	"math"
	"math/big"
	"strconv"

	"github.com/emqd/emqd/internal/num"
)

// ZMPOP and the blocking pops BZPOPMIN, BZPOPMAX, BZMPOP (docs/compat.md
// §1.2) with Valkey 8.0.1's replies, error texts and check order (t_zset.c
// genericZpopCommand, blockingGenericZpopCommand, zmpopGenericCommand;
// timeout.c getTimeoutFromObjectOrReply). A blocking pop that finds
// nothing parks the client on the server's blocked-client machinery
// (docs/architecture.md §3, the same as EMQ.CLAIM ... BLOCK): clients
// blocked on a key are served first come first served when a write makes
// it a non-empty sorted set; inside MULTI it answers a nil array at once.
// Every pop is recorded in the AOF as ZPOPMIN/ZPOPMAX key count.

func zsetPopCommands() []*CommandSpec {
	return []*CommandSpec{
		NewCommand("zmpop", -4, cmdZMPop, FlagWrite, FlagMovableKeys).WithKeyFunc(numkeysKeys(1, 0)),
		NewCommand("bzmpop", -5, cmdBZMPop, FlagWrite, FlagBlocking, FlagMovableKeys).WithKeyFunc(numkeysKeys(2, 0)),
		NewCommand("bzpopmin", -3, func(c *Ctx) { bzpopGeneric(c, false) }, FlagWrite, FlagFast, FlagBlocking).WithKeys(1, -2, 1),
		NewCommand("bzpopmax", -3, func(c *Ctx) { bzpopGeneric(c, true) }, FlagWrite, FlagFast, FlagBlocking).WithKeys(1, -2, 1),
	}
}

const (
	errNumkeysPositive = "ERR numkeys should be greater than 0"
	errCountPositive   = "ERR count should be greater than 0"
	errTimeoutFloat    = "ERR timeout is not a float or out of range"
	errTimeoutRange    = "ERR timeout is out of range"
	errTimeoutNegative = "ERR timeout is negative"
)

// popArgs is a parsed pop: its keys, MIN or MAX, the count (-1: the plain
// BZPOPMIN/BZPOPMAX form) and the reply shape.
type popArgs struct {
	keys   [][]byte
	max    bool
	count  int64
	nested bool // ZMPOP/BZMPOP: [key, [[member, score] ...]]
}

// parseMpop is zmpopGenericCommand's parse from argv[numkeysIdx]: numkeys
// (`ERR numkeys should be greater than 0`, also for a non-integer), then
// MIN|MAX (`ERR syntax error`, also when it is missing), then COUNT once
// (`ERR count should be greater than 0`); anything else `ERR syntax error`.
func parseMpop(c *Ctx, numkeysIdx int) (popArgs, bool) {
	argv := c.Argv
	n, ok := num.ParseInt(argv[numkeysIdx])
	if !ok || n < 1 {
		c.W.Error(errNumkeysPositive)
		return popArgs{}, false
	}
	if n >= int64(len(argv)) {
		c.W.Error(ErrSyntax) // where MIN|MAX would be is past the end
		return popArgs{}, false
	}
	whereIdx := int64(numkeysIdx) + n + 1
	if whereIdx >= int64(len(argv)) {
		c.W.Error(ErrSyntax)
		return popArgs{}, false
	}
	a := popArgs{keys: argv[numkeysIdx+1 : whereIdx], count: -1, nested: true}
	switch w := cstr(argv[whereIdx]); {
	case eqFold(w, "min"):
	case eqFold(w, "max"):
		a.max = true
	default:
		c.W.Error(ErrSyntax)
		return popArgs{}, false
	}
	for j := int(whereIdx) + 1; j < len(argv); j++ {
		if a.count == -1 && eqFold(cstr(argv[j]), "count") && j+1 < len(argv) {
			j++
			n, ok := num.ParseInt(argv[j])
			if !ok || n < 1 {
				c.W.Error(errCountPositive)
				return popArgs{}, false
			}
			a.count = n
			continue
		}
		c.W.Error(ErrSyntax)
		return popArgs{}, false
	}
	if a.count == -1 {
		a.count = 1
	}
	return a, true
}

// ParseTimeout is getTimeoutFromObjectOrReply in seconds: a long double
// (`ERR timeout is not a float or out of range`), times 1000 above the
// int64 range `ERR timeout is out of range`, rounded up to ms, negative
// `ERR timeout is negative`, and now + timeout must not overflow. It
// returns the timeout in ms (0: block forever) or the error text.
func ParseTimeout(arg []byte, nowMs int64) (int64, string) {
	f, ok := num.ParseLongDouble(arg)
	if !ok {
		return 0, errTimeoutFloat
	}
	ms := num.NewLongDouble().Mul(f, big.NewFloat(1000))
	if ms.IsInf() && ms.Sign() > 0 || !ms.IsInf() && ms.Cmp(new(big.Float).SetInt64(math.MaxInt64)) > 0 {
		return 0, errTimeoutRange
	}
	var tval int64
	if ms.IsInf() {
		return 0, errTimeoutNegative
	}
	// ceill, then the conversion to long long.
	i, acc := ms.Int(nil)
	if acc == big.Below {
		i.Add(i, big.NewInt(1))
	}
	if !i.IsInt64() {
		return 0, errTimeoutNegative
	}
	tval = i.Int64()
	if tval < 0 {
		return 0, errTimeoutNegative
	}
	if tval > 0 && tval > math.MaxInt64-nowMs {
		return 0, errTimeoutRange
	}
	return tval, ""
}

// popOnce is genericZpopCommand over a's keys: the first key that exists
// decides (WRONGTYPE when it is not a sorted set); it pops up to count
// members from it, replies, deletes the key when it empties and records
// ZPOPMIN/ZPOPMAX key n. It reports false, having written nothing, when
// no key exists.
func popOnce(c *Ctx, a *popArgs) bool {
	var key []byte
	var z *ZSet
	for _, k := range a.keys {
		v := c.DB.Get(string(k))
		if v == nil {
			continue
		}
		if v.Kind != KindZSet {
			c.W.Error(ErrWrongType)
			return true
		}
		key, z = k, v.ZSet
		break
	}
	if z == nil {
		return false
	}
	count := a.count
	if count == -1 {
		count = 1
	}
	n := z.Len()
	if count < int64(n) {
		n = int(count)
	}
	if a.nested {
		c.W.Array(2)
		c.W.Bulk(key)
		c.W.Array(n)
	} else {
		c.W.Array(2*n + 1)
		c.W.Bulk(key)
	}
	c.DB.Mutating()
	for i := 0; i < n; i++ {
		var it ZItem
		if a.max {
			it, _ = z.PopMax()
		} else {
			it, _ = z.PopMin()
		}
		if a.nested {
			c.W.Array(2)
		}
		c.W.BulkString(it.Member)
		writeScore(c.W, it.Score)
	}
	skey := string(key)
	c.DB.DropIfEmpty(skey)
	c.Dirty(skey)
	name := "ZPOPMIN"
	if a.max {
		name = "ZPOPMAX"
	}
	c.Propagate([][][]byte{{[]byte(name), key, strconv.AppendInt(nil, int64(n), 10)}})
	return true
}

// ZMPOP numkeys key [key ...] MIN|MAX [COUNT count]: [key, [[member,
// score] ...]] from the first existing key, nil array when none exists.
func cmdZMPop(c *Ctx) {
	a, ok := parseMpop(c, 1)
	if !ok {
		return
	}
	if !popOnce(c, &a) {
		c.W.NilArray()
	}
}

// BZPOPMIN key [key ...] timeout / BZPOPMAX: the timeout first, then the
// keys in order as ZPOPMIN/ZPOPMAX key: [key, member, score]; blocks when
// none exists (nil array after the timeout, or at once inside MULTI).
func bzpopGeneric(c *Ctx, max bool) {
	argv := c.Argv
	a := popArgs{keys: argv[1 : len(argv)-1], max: max, count: -1}
	blockingPop(c, &a, argv[len(argv)-1])
}

// BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT count]: ZMPOP that
// blocks; the arguments after the timeout are checked first.
func cmdBZMPop(c *Ctx) {
	a, ok := parseMpop(c, 2)
	if !ok {
		return
	}
	blockingPop(c, &a, c.Argv[1])
}

// blockingPop is blockingGenericZpopCommand: parse the timeout, pop at
// once if a key holds members, else a nil array inside MULTI, else park
// the client on its keys (c.Block). A retry (a key became a non-empty
// sorted set) runs the same pop over the keys in order.
func blockingPop(c *Ctx, a *popArgs, timeoutArg []byte) {
	timeout, e := ParseTimeout(timeoutArg, c.NowMs)
	if e != "" {
		c.W.Error(e)
		return
	}
	if popOnce(c, a) {
		return
	}
	if c.InMulti {
		c.W.NilArray()
		return
	}
	keys := make([]string, len(a.keys))
	held := make([][]byte, len(a.keys))
	for i, k := range a.keys {
		keys[i] = string(k)
		held[i] = []byte(keys[i]) // the request buffer is reused once parked
	}
	args := *a
	args.keys = held
	c.Block = &BlockSpec{
		DB:        c.DB.Index,
		Keys:      keys,
		TimeoutMs: timeout,
		Retry:     func(x *Ctx) bool { return popOnce(x, &args) },
	}
}
