package server

import (
	"github.com/emqd/emqd/store"
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

// groupFeed collects the records of the commands EXEC runs, so the
// transaction reaches the real Feed as one all-or-nothing record per run of
// consecutive commands on one database.
type groupFeed struct {
	db   int
	cmds [][][]byte
	out  []groupRec
}

type groupRec struct {
	db   int
	cmds [][][]byte
}

func (g *groupFeed) Append(db int, cmds [][][]byte) {
	if len(g.cmds) > 0 && db != g.db {
		g.out = append(g.out, groupRec{g.db, g.cmds})
		g.cmds = nil
	}
	g.db = db
	g.cmds = append(g.cmds, cmds...)
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
	real := st.Feed
	var g *groupFeed
	if real != nil {
		g = &groupFeed{}
		st.Feed = g
	}
	c.execing = true
	// A queued command that panics (panics.go) must not leave the group
	// feed in place nor the client executing.
	defer func() {
		c.execing = false
		st.Feed = real
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
	if g != nil {
		st.Feed = real
		if len(g.cmds) > 0 {
			g.out = append(g.out, groupRec{g.db, g.cmds})
		}
		for _, r := range g.out {
			real.Append(r.db, r.cmds)
		}
	}
	for i := range q {
		q[i] = queued{}
	}
	if c.queue == nil {
		c.queue = q[:0]
	}
}
