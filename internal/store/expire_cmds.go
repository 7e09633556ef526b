package store

import (
	"math"
	"strconv"

	"github.com/emqd/emqd/internal/num"
)

// The key expiry commands (docs/compat.md §1.7) with Valkey 8.0.1's replies
// and check order (expire.c): EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT (NX,
// XX, GT, LT), TTL, PTTL, EXPIRETIME, PEXPIRETIME, PERSIST. Times are on
// the server clock. An expiry set is recorded in the AOF as PEXPIREAT with
// the absolute time; one already past deletes the key, counts it in
// expired_keys (deleteExpiredKeyFromOverwriteAndPropagate) and is recorded
// as DEL.

func expireCommands() []*CommandSpec {
	spec := func(name string, arity int, flags []Flag, h Handler) *CommandSpec {
		return NewCommand(name, arity, h, flags...).WithKeys(1, 1, 1)
	}
	wf := []Flag{FlagWrite, FlagFast}
	rf := []Flag{FlagReadonly, FlagFast}
	return []*CommandSpec{
		spec("expire", -3, wf, func(c *Ctx) { expireGeneric(c, c.NowMs, true) }),
		spec("pexpire", -3, wf, func(c *Ctx) { expireGeneric(c, c.NowMs, false) }),
		spec("expireat", -3, wf, func(c *Ctx) { expireGeneric(c, 0, true) }),
		spec("pexpireat", -3, wf, func(c *Ctx) { expireGeneric(c, 0, false) }),
		spec("ttl", 2, rf, func(c *Ctx) { ttlGeneric(c, false, false) }),
		spec("pttl", 2, rf, func(c *Ctx) { ttlGeneric(c, true, false) }),
		spec("expiretime", 2, rf, func(c *Ctx) { ttlGeneric(c, false, true) }),
		spec("pexpiretime", 2, rf, func(c *Ctx) { ttlGeneric(c, true, true) }),
		spec("persist", 2, wf, cmdPersist),
	}
}

// The EXPIRE options.
const (
	expNX = 1 << iota
	expXX
	expGT
	expLT
)

// parseExpireOptions is parseExtendedExpireArgumentsOrReply: every option
// is read first (`ERR Unsupported option <opt>` for anything else), then
// the conflicts are reported.
func parseExpireOptions(c *Ctx) (int, bool) {
	flags := 0
	for _, a := range c.Argv[3:] {
		opt := cstr(a)
		switch {
		case eqFold(opt, "nx"):
			flags |= expNX
		case eqFold(opt, "xx"):
			flags |= expXX
		case eqFold(opt, "gt"):
			flags |= expGT
		case eqFold(opt, "lt"):
			flags |= expLT
		default:
			c.W.Error("ERR Unsupported option " + opt)
			return 0, false
		}
	}
	if flags&expNX != 0 && flags&(expXX|expGT|expLT) != 0 {
		c.W.Error("ERR NX and XX, GT or LT options at the same time are not compatible")
		return 0, false
	}
	if flags&expGT != 0 && flags&expLT != 0 {
		c.W.Error("ERR GT and LT options at the same time are not compatible")
		return 0, false
	}
	return flags, true
}

// expireGeneric is expireGenericCommand: EXPIRE key seconds, PEXPIRE key
// ms (basetime now), EXPIREAT key unix-seconds, PEXPIREAT key unix-ms
// (basetime 0), each with [NX|XX] [GT|LT].
//
// Check order: the options, the number (`ERR value is not an integer or
// out of range`), the unit conversion and the addition of basetime
// (`ERR invalid expire time in '<cmd>' command` on overflow; negative
// times are allowed), then the key (`:0` when missing). NX: only without a
// TTL; XX: only with one; GT / LT compare with the current TTL, a key
// without one counting as infinite. A time at or before now deletes the
// key (`:1`, recorded as DEL); otherwise the TTL is set (`:1`, recorded as
// PEXPIREAT key ms). A condition that fails is `:0` and writes nothing.
func expireGeneric(c *Ctx, basetime int64, seconds bool) {
	flags, ok := parseExpireOptions(c)
	if !ok {
		return
	}
	when, ok := num.ParseInt(c.Argv[2])
	if !ok {
		c.W.Error(ErrNotInteger)
		return
	}
	if seconds {
		if when > math.MaxInt64/1000 || when < math.MinInt64/1000 {
			c.W.Error(invalidExpire(c))
			return
		}
		when *= 1000
	}
	if when > math.MaxInt64-basetime {
		c.W.Error(invalidExpire(c))
		return
	}
	when += basetime
	key := string(c.Argv[1])
	if c.DB.Get(key) == nil {
		c.W.Int(0)
		return
	}
	if flags != 0 {
		cur, has := c.DB.ExpireAt(key)
		switch {
		case flags&expNX != 0 && has,
			flags&expXX != 0 && !has,
			flags&expGT != 0 && (!has || when <= cur),
			flags&expLT != 0 && has && when >= cur:
			c.W.Int(0)
			return
		}
	}
	if alreadyExpired(c, when) {
		c.DB.Remove(key)
		c.S.ExpiredKeys++ // deleteExpiredKeyFromOverwriteAndPropagate
		c.Dirty(key)
		c.W.Int(1)
		c.Propagate([][][]byte{{[]byte("DEL"), c.Argv[1]}})
		return
	}
	c.DB.SetExpire(key, when)
	c.Dirty(key)
	c.W.Int(1)
	c.Propagate([][][]byte{{[]byte("PEXPIREAT"), c.Argv[1], strconv.AppendInt(nil, when, 10)}})
}

// ttlGeneric is ttlGenericCommand: TTL (seconds, rounded to the nearest),
// PTTL (ms), EXPIRETIME (Unix seconds, rounded to the nearest), PEXPIRETIME
// (Unix ms): `:-2` for a missing key, `:-1` for a key without a TTL. A
// remaining time is never negative. Does not update the key's access time.
func ttlGeneric(c *Ctx, ms, abs bool) {
	key := string(c.Argv[1])
	if c.DB.Peek(key) == nil {
		c.W.Int(-2)
		return
	}
	at, ok := c.DB.ExpireAt(key)
	if !ok {
		c.W.Int(-1)
		return
	}
	ttl := at
	if !abs {
		ttl = at - c.NowMs
	}
	if ttl < 0 {
		ttl = 0
	}
	if !ms {
		// (ttl+500)/1000 without overflowing next to the int64 maximum (the
		// C expression's result as Valkey's build computes it there).
		ttl = ttl/1000 + (ttl%1000+500)/1000
	}
	c.W.Int(ttl)
}

// PERSIST key: `:1` when the key's TTL was removed, `:0` when the key is
// missing or has none.
func cmdPersist(c *Ctx) {
	key := string(c.Argv[1])
	if c.DB.Get(key) == nil || !c.DB.Persist(key) {
		c.W.Int(0)
		return
	}
	c.Dirty(key)
	c.W.Int(1)
}
