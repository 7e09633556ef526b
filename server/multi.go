package server

import (
	"github.com/emqd/emqd/internal/store"
)

// MULTI/EXEC/DISCARD/WATCH/UNWATCH (docs/compat.md §1.5, docs/architecture.md
// §4; Valkey 8 multi.c). Dispatch-level errors inside MULTI mark the transaction dirty
// (see client.reject); MULTI and WATCH inside MULTI are refused by their
// no_multi flag, which also marks it dirty.

func cmdMulti(c *client, x *store.Ctx) {
	c.inMulti = true
	c.multiDirty = false
	c.queue = c.queue[:0]
	c.queueBytes = 0
	x.W.OK()
}

func cmdDiscard(c *client, x *store.Ctx) {
	if !c.inMulti {
		x.W.Error("ERR DISCARD without MULTI")
		return
	}
	c.discardTransaction()
	x.W.OK()
}

// discardTransaction leaves MULTI and unwatches every key.
func (c *client) discardTransaction() {
	c.inMulti = false
	c.multiDirty = false
	for i := range c.queue {
		c.queue[i] = queued{}
	}
	c.queue = c.queue[:0]
	c.queueBytes = 0
	c.s.store.Unwatch(&c.watcher)
}

func cmdWatch(c *client, x *store.Ctx) {
	if c.inMulti { // unreachable: WATCH is no_multi
		x.W.Error("ERR WATCH inside MULTI is not allowed")
		return
	}
	for _, k := range x.Argv[1:] {
		c.s.store.Watch(&c.watcher, c.db, string(k))
	}
	x.W.OK()
}

func cmdUnwatch(c *client, x *store.Ctx) {
	c.s.store.Unwatch(&c.watcher)
	x.W.OK()
}

// cmdExec runs the queued commands in order, inside the batch's one
// store lock acquisition, with Ctx.InMulti set. A dirty transaction gets
// EXECABORT; a touched WATCHed key a nil array.
func cmdExec(c *client, x *store.Ctx) {
	if !c.inMulti {
		x.W.Error("ERR EXEC without MULTI")
		return
	}
	if c.multiDirty {
		c.discardTransaction()
		x.W.Error("EXECABORT Transaction discarded because of previous errors.")
		return
	}
	if c.watcher.Touched || c.s.store.WatchedKeyExpired(&c.watcher) {
		c.discardTransaction()
		x.W.NilArray()
		return
	}
	st := c.s.store
	st.Unwatch(&c.watcher)
	q := c.queue
	c.queue = nil
	c.inMulti = false
	c.queueBytes = 0
	// The transaction reaches the Feed as one all-or-nothing record per run
	// of consecutive commands on one database (docs/architecture.md §4).
	x.BeginGroup()
	c.execing = true
	// A queued command that panics (panics.go) must not leave the group
	// open (its records are dropped) nor the client executing.
	defer func() {
		c.execing = false
		x.EndGroup(true)
	}()
	x.W.Array(len(q))
	for _, e := range q {
		c.call(e.cmd, e.argv, &c.xc)
		if c.closeAfter {
			// SHUTDOWN or CLIENT KILL of itself inside EXEC: still answer
			// every queued command's slot.
			continue
		}
	}
	c.execing = false
	x.EndGroup(false)
	for i := range q {
		q[i] = queued{}
	}
	if c.queue == nil {
		c.queue = q[:0]
	}
}
