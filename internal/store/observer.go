package store

// The two ways the store reaches up to the server (docs/architecture.md
// §1.2): one Observer, fixed when the store is built, learns what happens
// to the keyspace; one Feed, the persister (the append-only file), set and
// cleared as persistence turns on and off, receives every write. Both are
// called under the store lock.

// Observer learns, under the store lock, what happens to the keyspace: the
// server's client-side caching table, its blocked clients and schedule
// timer, its invalidation messages. It is set once, when the store is built
// (New(n, WithObserver(o))); a store without one tells nobody.
type Observer interface {
	// KeyChanged reports that key of db was written, deleted or expired
	// (every Touch: Ctx.Dirty, MOVE and COPY's destination, ...); byCommand
	// is false for a key the store deleted on its own (expiry), which
	// Valkey signals with no client.
	KeyChanged(db int, key string, byCommand bool)
	// Flushed reports that FLUSHDB or FLUSHALL emptied database db (-1:
	// every database).
	Flushed(db int)
	// Swapped reports that SWAPDB exchanged every key of databases a and b.
	Swapped(a, b int)
	// KeyRead reports that the running command read key (present or not)
	// through DB.NoteRead: the EMQ verbs, whose declared key (the queue) is
	// not what they read.
	KeyRead(key string)
	// BeforeUnlock runs at every Unlock while the lock is still held.
	BeforeUnlock()
}

// Option configures a store at New.
type Option func(*Store)

// WithObserver makes o the store's observer.
func WithObserver(o Observer) Option { return func(s *Store) { s.obs = o } }

// Feed receives every change made to the store, in apply order, under the
// store lock: the append-only file implements it. cmds is one command
// (len 1) or a group that must be replayed all or nothing (len > 1, recorded
// inside MULTI/EXEC). cmds and its bytes are valid only during Append (a
// plan's render is reused by the next plan, ApplyPlan): copy what you keep.
type Feed interface {
	Append(db int, cmds [][][]byte)
}

// Toucher is a Feed that also learns every key changed (key "": database db
// was flushed or replaced whole, -1: every database): the append-only file,
// for the keys that change while it rewrites.
type Toucher interface {
	Touched(db int, key string)
}

// SetFeed makes f the store's persister (nil: none) and returns the one it
// replaces. A Feed that is also a Toucher learns the changed keys. Call it
// under the store lock.
func (s *Store) SetFeed(f Feed) Feed {
	old := s.feed
	s.feed = f
	s.toucher, _ = f.(Toucher)
	return old
}

// Persisting reports whether a Feed is set: whether a write's record is
// wanted at all.
func (s *Store) Persisting() bool { return s.feed != nil }

// Record sends cmds, applied to database db, to the Feed as one
// all-or-nothing record (nothing without a Feed); inside a group (BeginGroup)
// it is held until EndGroup (Ctx.BeginGroup). Call it under the store lock.
func (s *Store) Record(db int, cmds [][][]byte) {
	if s.feed == nil || len(cmds) == 0 {
		return
	}
	if !s.grouping {
		s.feed.Append(db, cmds)
		return
	}
	g := &s.group
	if len(g.cmds) > 0 && db != g.db {
		g.out = append(g.out, groupRec{g.db, g.cmds})
		g.cmds = nil
	}
	g.db = db
	g.cmds = append(g.cmds, cmds...)
}

// group is what Record holds inside a group: the records of the current
// database, and those of the databases before it (a SELECT inside EXEC).
type group struct {
	db   int
	cmds [][][]byte
	out  []groupRec
}

type groupRec struct {
	db   int
	cmds [][][]byte
}

// BeginGroup starts a group of writes recorded all or nothing (EXEC): until
// EndGroup, Record (so every command's record, Propagate, ApplyPlan, an
// expiry's DEL) holds what it is given; EndGroup sends it as one record per
// run of commands on one database. The group is the store's, whichever
// Ctx runs the grouped commands. Call both under the store lock.
func (c *Ctx) BeginGroup() { c.S.beginGroup() }

// EndGroup ends the group BeginGroup started and sends its records to the
// Feed; with discard (a queued command panicked) it drops them instead, as
// when nothing was recorded. A call outside a group does nothing.
func (c *Ctx) EndGroup(discard bool) { c.S.endGroup(discard) }

func (s *Store) beginGroup() {
	s.grouping = true
	s.group = group{}
}

func (s *Store) endGroup(discard bool) {
	if !s.grouping {
		return
	}
	s.grouping = false
	g := s.group
	s.group = group{}
	if discard || s.feed == nil {
		return
	}
	if len(g.cmds) > 0 {
		g.out = append(g.out, groupRec{g.db, g.cmds})
	}
	for _, r := range g.out {
		s.feed.Append(r.db, r.cmds)
	}
}

// BeginReplay starts the replay of a persisted file: no Feed (the replay
// writes nothing back) and loading on (nothing expires, Valkey's
// server.loading) until the returned function, which restores both, is
// called. Call both under the store lock.
func (s *Store) BeginReplay() (end func()) {
	feed := s.SetFeed(nil)
	s.loading = true
	return func() {
		s.SetFeed(feed)
		s.loading = false
	}
}
