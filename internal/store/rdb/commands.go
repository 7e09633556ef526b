package rdb

import (
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/emqd/emqd/internal/num"
	"github.com/emqd/emqd/internal/store"
)

// Commands returns DUMP and RESTORE (Valkey's cluster.c dumpCommand and
// restoreCommand; docs/compat.md §1.10). compress is rdbcompression, read
// at each DUMP.
func Commands(compress *atomic.Bool) []*store.CommandSpec {
	return []*store.CommandSpec{
		store.NewCommand("dump", 2, func(c *store.Ctx) { cmdDump(c, compress.Load()) }, store.FlagReadonly).WithKeys(1, 1, 1),
		store.NewCommand("restore", -4, cmdRestore, store.FlagWrite, store.FlagDenyOOM).WithKeys(1, 1, 1),
	}
}

// DUMP key: the key's payload (type, value, RDB version, CRC-64: the bytes
// Valkey 8.0.1 gives for the same value and encoding), nil when missing.
func cmdDump(c *store.Ctx, compress bool) {
	v := c.DB.Get(string(c.Argv[1]))
	if v == nil {
		c.W.Nil()
		return
	}
	c.W.Bulk(Dump(Capture(v), compress))
}

// RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s] [FREQ f], in
// Valkey's order: the options (a bad IDLETIME or FREQ, or both given:
// syntax error), BUSYKEY, the TTL, the payload's footer ("DUMP payload
// version or checksum are wrong"), its value ("Bad data format"). A TTL
// already past stores nothing (with REPLACE the old key is deleted,
// recorded as DEL). A relative TTL is recorded as the absolute one with
// ABSTTL (Valkey rewrites the command the same way). FREQ is accepted and
// has no effect (no LFU policy, docs/operations.md §5); IDLETIME sets
// OBJECT IDLETIME.
func cmdRestore(c *store.Ctx) {
	argv := c.Argv
	replace, absttl := false, false
	idle, freq := int64(-1), int64(-1)
	for j := 4; j < len(argv); j++ {
		more := len(argv) - j - 1
		opt := strings.ToLower(string(argv[j]))
		switch {
		case opt == "replace":
			replace = true
		case opt == "absttl":
			absttl = true
		case opt == "idletime" && more >= 1 && freq == -1:
			n, ok := num.ParseInt(argv[j+1])
			if !ok {
				c.W.Error(store.ErrNotInteger)
				return
			}
			if n < 0 {
				c.W.Error("ERR Invalid IDLETIME value, must be >= 0")
				return
			}
			idle = n
			j++
		case opt == "freq" && more >= 1 && idle == -1:
			n, ok := num.ParseInt(argv[j+1])
			if !ok {
				c.W.Error(store.ErrNotInteger)
				return
			}
			if n < 0 || n > 255 {
				c.W.Error("ERR Invalid FREQ value, must be >= 0 and <= 255")
				return
			}
			freq = n
			j++
		default:
			c.W.Error(store.ErrSyntax)
			return
		}
	}
	key := string(argv[1])
	if !replace && c.DB.Get(key) != nil {
		c.W.Error("BUSYKEY Target key name already exists.")
		return
	}
	ttl, ok := num.ParseInt(argv[2])
	if !ok {
		c.W.Error(store.ErrNotInteger)
		return
	}
	if ttl < 0 {
		c.W.Error("ERR Invalid TTL value, must be >= 0")
		return
	}
	v, msg := Restore(argv[3], c.S)
	if msg != "" {
		c.W.Error(msg)
		return
	}
	deleted := false
	if replace {
		deleted = c.DB.Remove(key)
	}
	if ttl != 0 && !absttl {
		ttl += c.NowMs
	}
	if ttl != 0 && ttl <= c.NowMs && !c.S.Loading() {
		if deleted {
			c.Dirty(key)
			c.Propagate([][][]byte{{[]byte("DEL"), argv[1]}})
		}
		c.W.OK()
		return
	}
	c.DB.Put(key, v)
	if ttl != 0 {
		c.DB.SetExpire(key, ttl)
	}
	if idle >= 0 {
		c.S.SetIdleMs(v, idle*1000)
	}
	c.Dirty(key)
	if ttl != 0 && !absttl {
		rec := append([][]byte{argv[0], argv[1], strconv.AppendInt(nil, ttl, 10)}, argv[3:]...)
		c.Propagate([][][]byte{append(rec, []byte("ABSTTL"))})
	}
	c.W.OK()
}
