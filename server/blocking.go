package server

import (
	"container/list"

	"github.com/emqd/emqd/clock"
	"github.com/emqd/emqd/internal/store"
)

// Blocked clients, generic over store.BlockSpec (docs/verbs.md §4.3.3):
// a handler that found nothing sets Ctx.Block; the connection is parked (no
// reply yet; its later pipelined commands wait behind it). Parked clients
// wait in a FIFO per (db, queue). The verbs' Ready (onReady) marks a queue
// ready; after
// the batch that did so, the server retries the queue's clients in arrival
// order, each with a fresh NowMs, until one Retry returns false. A timer at
// the earliest BlockSpec.Due time retries the queue too. A spec with Keys
// waits in the FIFO of each key (store.Observer.KeyChanged); one with AnyKind (EMQ.WAIT
// on a job row) is retried after any write of its key, the others only
// while the key holds a sorted set. At TimeoutMs
// (0 = forever) the client gets a nil array. Everything here runs under the
// store lock.

// queueKey names a FIFO of parked clients: a queue of EMQ.CLAIM ... BLOCK
// (isKey false) or a key a blocking sorted-set pop waits on (isKey true).
type queueKey struct {
	db    int
	queue string
	isKey bool
}

// parked is one parked command, in the FIFO of each of its keys.
type parked struct {
	c     *client
	cmd   *command
	argv  [][]byte
	spec  *store.BlockSpec
	keys  []queueKey
	elems []*list.Element // nil once removed
	ctx   *store.Ctx
	timer clock.Timer
	// triedMs is the server time the command last ran at (its first run,
	// then each Retry): armDue drops a due time no later than it, which
	// that run already judged, and arms at once for one after it.
	triedMs int64
}

type dueTimer struct {
	at int64
	t  clock.Timer
}

type blocking struct {
	queues   map[queueKey]*list.List
	ready    []queueKey
	readySet map[queueKey]bool
	due      map[queueKey]*dueTimer
	count    int
	// keyWaiters counts the FIFOs of keys (not queues), so writes skip the
	// ready check when no pop is blocked.
	keyWaiters int
}

func newBlocking() *blocking {
	return &blocking{
		queues:   make(map[queueKey]*list.List),
		readySet: make(map[queueKey]bool),
		due:      make(map[queueKey]*dueTimer),
	}
}

// onReady is the verbs' Ready (verbs.Config): a job of queue in db may have
// become claimable.
// Called under the store lock; the retry happens after the current batch.
func (s *Server) onReady(db int, queue string) {
	b := s.blk
	k := queueKey{db, queue, false}
	if b.queues[k] == nil || b.readySet[k] {
		return
	}
	b.readySet[k] = true
	b.ready = append(b.ready, k)
}

// park parks c's command described by spec: in the FIFO of its queue, or
// of each of its keys.
// triedMs is the server time the command ran at (its ctx's NowMs).
func (b *blocking) park(c *client, cmd *command, argv [][]byte, spec *store.BlockSpec, triedMs int64) {
	s := c.s
	c.aw.Proto = c.w.Proto
	p := &parked{
		c:       c,
		cmd:     cmd,
		argv:    argv,
		spec:    spec,
		triedMs: triedMs,
	}
	if spec.Keys != nil {
		for _, k := range spec.Keys {
			p.keys = append(p.keys, queueKey{spec.DB, k, true})
		}
	} else {
		p.keys = []queueKey{{spec.DB, spec.Queue, false}}
	}
	x := s.newCtx(&c.aw)
	x.DebugEnabled = c.ctx.DebugEnabled
	p.ctx = &x
	for _, k := range p.keys {
		q := b.queues[k]
		if q == nil {
			q = list.New()
			b.queues[k] = q
			if k.isKey {
				b.keyWaiters++
			}
		}
		p.elems = append(p.elems, q.PushBack(p))
	}
	b.count++
	c.park = p
	c.setParked()
	if spec.TimeoutMs > 0 {
		p.timer = s.clock.AfterFunc(spec.TimeoutMs, func() { s.blockTimeout(p) })
	}
	if spec.Keys == nil {
		b.armDue(s, p.keys[0])
	}
}

// remove takes p out of its FIFOs (served, timed out, or disconnected).
func (b *blocking) remove(p *parked) {
	if p.elems == nil {
		return
	}
	for i, k := range p.keys {
		q := b.queues[k]
		q.Remove(p.elems[i])
		if q.Len() == 0 {
			delete(b.queues, k)
			if k.isKey {
				b.keyWaiters--
			}
			if d := b.due[k]; d != nil {
				d.t.Stop()
				delete(b.due, k)
			}
		}
	}
	p.elems = nil
	b.count--
	if p.timer != nil {
		p.timer.Stop()
	}
}

// onKeyReady is called by the store observer (observer.go) with every
// key written (store.Observer.KeyChanged): key of db was written. When a pop waits
// on it, it is retried after the current batch.
func (s *Server) onKeyReady(db int, key string) {
	s.schedKeyWritten(db, key)
	b := s.blk
	if b.keyWaiters == 0 {
		return
	}
	k := queueKey{db, key, true}
	if b.queues[k] == nil || b.readySet[k] {
		return
	}
	b.readySet[k] = true
	b.ready = append(b.ready, k)
}

// onDBReady is called by the store observer (observer.go) when SWAPDB
// replaced every key of db, or FLUSHDB/FLUSHALL emptied it, so every
// key a pop waits on in db is retried (Valkey's scanDatabaseForReadyKeys).
func (s *Server) onDBReady(db int) {
	s.schedDBReplaced(db)
	b := s.blk
	if b.keyWaiters == 0 {
		return
	}
	for k := range b.queues {
		if k.isKey && k.db == db && !b.readySet[k] {
			b.readySet[k] = true
			b.ready = append(b.ready, k)
		}
	}
}

// serveReady retries the parked clients of every ready queue, in arrival
// order, until one Retry returns false. The clients blocked on a key are
// retried only while the key holds a sorted set (Valkey's
// handleClientsBlockedOnKey: a key of another type, or a key that a
// transaction created and emptied again, serves no one). Called under the
// store lock at the end of a batch and from timers.
func (b *blocking) serveReady(s *Server) {
	for len(b.ready) > 0 {
		k := b.ready[0]
		b.ready = b.ready[1:]
		delete(b.readySet, k)
		for {
			q := b.queues[k]
			if q == nil || q.Len() == 0 {
				break
			}
			p := q.Front().Value.(*parked)
			if k.isKey && !p.spec.AnyKind {
				s.store.SetNow(s.clock.NowMs())
				if v := s.store.DB(k.db).Peek(k.queue); v == nil || v.Kind != store.KindZSet {
					break
				}
			}
			if p.c.gone() {
				// Its peer closed the connection while it waited: drop the
				// waiter before anything is handed to it.
				b.remove(p)
				p.c.drop()
				continue
			}
			if !b.retry(s, p) {
				break
			}
		}
		if !k.isKey {
			b.armDue(s, k)
		}
	}
	b.ready = b.ready[:0]
	// The schedule timer follows the writes of the batch (scheduler.go).
	s.schedFlush()
}

// retry runs p's Retry as a unit (panics.go); when it served the client,
// the client is removed, its reply queued and its connection resumed. A
// Retry that panicked before writing ends the wait with an error reply.
func (b *blocking) retry(s *Server, p *parked) (served bool) {
	x := p.ctx
	x.ResetForCommand(p.argv)
	x.DB = s.store.DB(p.c.db)
	x.NowMs = s.clock.NowMs()
	p.triedMs = x.NowMs
	s.store.SetNow(x.NowMs)
	x.InMulti = false
	p.c.setReplyRoom(x, p.c.hardLimit())
	mark := len(p.c.aw.Buf)
	t := s.trk
	if t != nil {
		t.beginRetry(p.c, &p.c.aw)
	}
	m0 := s.store.Mutations()
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		if t != nil {
			t.abortRetry()
		}
		b.remove(p)
		p.c.aw.Buf = p.c.aw.Buf[:mark]
		name := commandName(p.argv)
		if !s.contained(r, m0, "blocked command's retry", name, p.c.addr) {
			p.c.drop()
			served = true
			return
		}
		p.c.aw.Error(errPanicked(name))
		p.c.unpark()
		served = true
	}()
	ok := p.spec.Retry(x)
	if t != nil {
		t.endRetry()
	}
	if !ok {
		p.c.aw.Buf = p.c.aw.Buf[:mark] // a Retry that serves nothing answers nothing
		return false
	}
	b.remove(p)
	if x.Changed() {
		p.c.commitPending.Store(true)
		if !x.Propagated() && s.store.Persisting() {
			s.store.Record(x.DB.Index, [][][]byte{p.argv})
		}
	}
	p.c.unpark()
	return true
}

// blockTimeout answers p with a nil array once its timeout passed.
func (s *Server) blockTimeout(p *parked) {
	s.store.Lock()
	defer s.store.Unlock()
	if p.elems == nil || p.c.park != p {
		return
	}
	s.blk.remove(p)
	p.c.aw.NilArray()
	p.c.unpark()
}

// armDue (re)arms the queue's timer at the earliest Due time of its head.
// A due time the head's last run already saw (at <= triedMs) arms nothing:
// that run judged it. One after it arms a timer even when the clock has
// passed it since (delay <= 0: at once): the clock moves without the store
// lock, so a claim that ran at T, found its job due at T+1 not yet due and
// parked at T+1 would otherwise wait for its timeout with the job due (a
// manual clock's Advance landing between the two, or a wall clock crossing
// a millisecond).
func (b *blocking) armDue(s *Server, k queueKey) {
	q := b.queues[k]
	old := b.due[k]
	if q == nil || q.Len() == 0 {
		if old != nil {
			old.t.Stop()
			delete(b.due, k)
		}
		return
	}
	p := q.Front().Value.(*parked)
	if p.spec.Due == nil {
		return
	}
	p.ctx.DB = s.store.DB(p.c.db)
	p.ctx.NowMs = s.clock.NowMs()
	s.store.SetNow(p.ctx.NowMs)
	at, ok := p.spec.Due(p.ctx)
	now := p.ctx.NowMs
	if !ok || at <= p.triedMs {
		// Nothing comes due by time alone (a past due time was just tried).
		if old != nil {
			old.t.Stop()
			delete(b.due, k)
		}
		return
	}
	if old != nil {
		if old.at == at {
			return
		}
		old.t.Stop()
	}
	d := &dueTimer{at: at}
	d.t = s.clock.AfterFunc(at-now, func() {
		s.store.Lock()
		defer s.store.Unlock()
		if b.due[k] != d {
			return
		}
		delete(b.due, k)
		s.onReady(k.db, k.queue)
		b.serveReady(s)
	})
	b.due[k] = d
}

// rearmDue drops every due-time timer and retries its queue now: the
// server clock moved (clients_cron.go checkClockLocked), so what is due has
// changed; serveReady claims what is due at the new time and armDue arms
// each queue again for the rest. Store lock held.
func (b *blocking) rearmDue(s *Server) {
	for k, d := range b.due {
		d.t.Stop()
		delete(b.due, k)
		s.onReady(k.db, k.queue)
	}
	b.serveReady(s)
}

// stopAll stops every timer (server close).
func (b *blocking) stopAll() {
	for _, q := range b.queues {
		for e := q.Front(); e != nil; e = e.Next() {
			if p := e.Value.(*parked); p.timer != nil {
				p.timer.Stop()
			}
		}
	}
	for k, d := range b.due {
		d.t.Stop()
		delete(b.due, k)
	}
}
