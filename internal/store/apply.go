package store

import (
	"strconv"

	"github.com/emqd/emqd/internal/num"
	"github.com/emqd/emqd/internal/plan"
)

// ApplyPlan applies every op of p to c's database in order, marks the keys
// it writes as changed (WATCH, dirty count) and sends the whole plan to the
// Feed as one all-or-nothing record. The plan comes from a judgement that
// checked every key's type and every counter, so no op can fail here: an
// op against a key of the wrong type panics (a bug in the judgement).
func (c *Ctx) ApplyPlan(p *plan.Plan) {
	if p == nil || len(p.Ops) == 0 {
		return
	}
	// The values the command's read pass found (GetKept) hold while
	// nothing changed since: the plan's ops find them there.
	memo := c.S.memo.valid(c.DB)
	c.S.mutations++
	// One planKeys per store, not per plan: a local escapes (pk.incr
	// points into pk.buf) and would be a job cycle's largest allocation
	// (bench/README.md, "Measured design decisions").
	pk := &c.S.planKeys
	if pk.dirty {
		*pk = planKeys{} // a plan a contained panic cut short
	}
	pk.dirty = true
	pk.memo = memo
	for i := range p.Ops {
		applyOp(c.DB, &p.Ops[i], pk)
		c.Dirty(p.Ops[i].Key)
	}
	pk.flushIncr("")
	pk.flushHead(c.DB)
	pk.reset()
	c.S.memo.forget()
	if c.S.feed != nil {
		if c.S.grouping {
			c.Propagate(p.Argvs()) // the group keeps the records until EXEC ends
		} else {
			// The feed copies at once (store.Feed): the render's memory is
			// the store's, reused by the next plan.
			c.Propagate(p.ArgvsInto(&c.S.argvs))
			c.S.argvs.Release()
		}
	} else {
		c.Propagate(nil) // nothing records the ops: do not render them
	}
}

// planKeys remembers the values of the keys a plan's ZADD, ZREM and
// HINCRBY ops touched, so that a plan writing one queue key per job (the
// sweep's active, dead and metrics:failed) looks each up in the keyspace
// once, not once per op. Row keys (HSET, HDEL, DEL) are not kept: a plan
// writes each row once. An entry is dropped when its key is removed.
// Nothing else writes the keyspace while a plan applies and the clock does
// not move, so a kept value is what the keyspace holds.
//
// It also holds back HINCRBY (docs/architecture.md §2.5): increments of
// one field add up and reach the hash when another op writes that key or
// the plan ends, in the order the fields were first incremented (the sweep increments metrics:failed once
// per dead job: 100 rewrites of the counter became one). The keyspace after
// the plan is the same: ops on other keys do not read the counter, the
// value written is the one the op-by-op order reaches (the judgement checked
// that it fits an int64), and no value of at most 20 bytes converts a
// listpack hash whose value limit is at least 20 (smaller limits, a
// pathological setting, apply each op at once).
type planKeys struct {
	keys [8]string
	vals [8]*Value
	next int
	used int // slots of keys and vals written since the last reset
	// dirty: a plan is applying (set at its start, cleared by reset).
	dirty bool
	// memo: the store's readMemo holds for this plan (ApplyPlan): a key
	// missing from keys and vals is looked up there before the keyspace.
	memo bool
	incr []pendingIncr // at most 4, in order of first increment
	buf  [4]pendingIncr
	head heldHead
	// fold is an HSET's pairs with its key's held increments before them
	// (foldIncr), and digits their values in decimal.
	fold   [2 * 8][]byte
	digits [4][20]byte
}

// heldHead is the ZREMs of a big sorted set's least members held back: the
// k least items of z's tree are gone from its member map and leave the tree
// in one DeleteFirst when another op writes the key or the plan ends (the
// sweep removes the expired leases, the least members of active, one op
// each: DeleteAt(0) per member walked down the tree and shifted the first
// leaf once per member).
type heldHead struct {
	key string
	z   *ZSet
	k   int
}

// remHead is ZREM key member on the big set z when member is the least
// item not yet held; it reports false, having done nothing, otherwise.
func (pk *planKeys) remHead(d *DB, key string, z *ZSet, member string) bool {
	if z.tree == nil {
		return false
	}
	if pk.head.z != nil && pk.head.z != z {
		pk.flushHead(d)
	}
	it, ok := z.tree.GetAt(pk.head.k)
	if !ok || it.Member != member {
		return false
	}
	z.dictDel(member)
	pk.head.key, pk.head.z = key, z
	pk.head.k++
	return true
}

// flushHead removes the held least items from the tree, and the key when
// its set is left empty.
func (pk *planKeys) flushHead(d *DB) {
	h := pk.head
	if h.z == nil {
		return
	}
	pk.head = heldHead{}
	h.z.tree.DeleteFirst(h.k)
	if h.z.Len() == 0 {
		d.Remove(h.key)
		pk.drop(d, h.key)
	}
}

// pendingIncr is the increments held back for one field of a hash.
type pendingIncr struct {
	key   string
	h     *Hash
	field []byte
	sum   int64
}

// hincr adds n to field of h (key), holding it back when it can.
func (pk *planKeys) hincr(key string, h *Hash, field []byte, n int64) {
	if !h.big() && h.limits().HashValue < 20 {
		pk.flushIncr(key)
		incrField(key, h, field, n)
		return
	}
	for i := range pk.incr {
		p := &pk.incr[i]
		if p.h == h && string(p.field) == string(field) {
			// The sum may wrap around: int64 addition is modular, so the
			// value written is still the op-by-op value (which fits).
			p.sum += n
			return
		}
	}
	if pk.incr == nil {
		pk.incr = pk.buf[:0]
	}
	if len(pk.incr) == cap(pk.incr) {
		pk.flushIncr("")
	}
	pk.incr = append(pk.incr, pendingIncr{key: key, h: h, field: field, sum: n})
}

// flushIncr writes the held increments of key ("": of every key). It
// returns at once when none is held for key: every op of a plan that
// holds one calls it (the sweep's ZREMs and ZADDs while metrics:failed's
// increments are held), and rewriting the held entries onto themselves
// cost a write barrier per pointer while the collector marks (4% of the
// sweep's CPU, bench/README.md "The stall sweep, round 7 (issue 25)").
func (pk *planKeys) flushIncr(key string) {
	if key != "" && !pk.holds(key) {
		return
	}
	kept := pk.incr[:0]
	for _, p := range pk.incr {
		if key == "" || p.key == key {
			incrField(p.key, p.h, p.field, p.sum)
		} else {
			kept = append(kept, p)
		}
	}
	clear(pk.incr[len(kept):])
	pk.incr = kept
}

// holds reports whether an increment of key is held.
func (pk *planKeys) holds(key string) bool {
	for i := range pk.incr {
		if pk.incr[i].key == key {
			return true
		}
	}
	return false
}

// foldIncr writes the increments held for key together with the HSET of
// fv that follows them (room: plan.Op.Room) in one pass over h's
// listpack, as if each increment were written first and then fv
// (Hash.lpSetPairs with the incremented fields' pairs before fv's: an
// existing field is rewritten where it stands and a new one appended in
// that order, which is what the op-by-op writes leave). The claim's
// HINCRBY of attempts and HSET of state, lease_epoch and claimed_at
// copied the row twice; folded, once (TestPlainCycleAllocs). It reports
// false, having written nothing, when it does not apply: no increment
// held for key, a hashtable hash (it keeps views of the values, and the
// digits here are scratch), or a write lpSetPairs declines (a field of fv
// incremented too, more than 8 pairs, a conversion); the caller then
// writes them op by op.
func (pk *planKeys) foldIncr(key string, h *Hash, fv [][]byte, room int) bool {
	if h.big() {
		return false
	}
	n := 0
	for _, p := range pk.incr {
		if p.key == key {
			n++
		}
	}
	if n == 0 || 2*n+len(fv) > len(pk.fold) {
		return false
	}
	pairs := pk.fold[:0]
	k := 0
	for _, p := range pk.incr {
		if p.key != key {
			continue
		}
		var cur int64
		if v, ok := h.peek(zview(p.field)); ok {
			c, ok := num.ParseInt(v)
			if !ok {
				panic("store: plan HINCRBY on a non-integer field " + key + " " + zview(p.field))
			}
			cur = c
		}
		pairs = append(pairs, p.field, strconv.AppendInt(pk.digits[k][:0], cur+p.sum, 10))
		k++
	}
	pairs = append(pairs, fv...)
	ok := h.lpSetPairs(pairs, room)
	clear(pairs) // the pool of plans holds no bytes through the scratch
	if !ok {
		return false
	}
	kept := pk.incr[:0]
	for _, p := range pk.incr {
		if p.key != key {
			kept = append(kept, p)
		}
	}
	clear(pk.incr[len(kept):])
	pk.incr = kept
	return true
}

// incrField is HINCRBY key field n on h, known to succeed.
func incrField(key string, h *Hash, field []byte, n int64) {
	f := zview(field)
	var cur int64
	if v, ok := h.peek(f); ok { // parsed at once (listpack.go: in place)
		c, ok := num.ParseInt(v)
		if !ok {
			panic("store: plan HINCRBY on a non-integer field " + key + " " + f)
		}
		cur = c
	}
	var buf [20]byte // copied by the listpack; buf stays on the stack (TestHashSetArgScratchOnStack)
	h.SetArg(field, strconv.AppendInt(buf[:0], cur+n, 10))
}

// get returns the value at key (d.Get on a miss, which is then kept when
// the key exists).
func (pk *planKeys) get(d *DB, key string) *Value {
	for i := range pk.vals {
		if pk.vals[i] != nil && pk.keys[i] == key {
			return pk.vals[i]
		}
	}
	v := pk.memoGet(d, key)
	if v == nil {
		v = d.Get(key)
	}
	if v != nil {
		pk.put(key, v)
	}
	return v
}

// memoGet is the value the command's read pass kept for key (readMemo),
// with Get's access time, or nil.
func (pk *planKeys) memoGet(d *DB, key string) *Value {
	if !pk.memo {
		return nil
	}
	v := d.s.memo.find(key)
	if v != nil {
		d.s.touchAccess(v)
	}
	return v
}

// rowForWrite is DB.HashForWrite for an HSET's key (a job row), through
// the read pass's memo but not kept in keys and vals: a plan writes each
// row once, and a sweep's hundred rows would push the queue keys out.
func (pk *planKeys) rowForWrite(d *DB, key string) (*Hash, string) {
	if v := pk.memoGet(d, key); v != nil {
		d.Mutating()
		if v.Kind != KindHash {
			return nil, ErrWrongType
		}
		return v.Hash(), ""
	}
	return d.HashForWrite(key)
}

func (pk *planKeys) put(key string, v *Value) {
	pk.keys[pk.next], pk.vals[pk.next] = key, v
	pk.next = (pk.next + 1) % len(pk.vals)
	pk.used = max(pk.used, pk.next)
	if pk.next == 0 {
		pk.used = len(pk.vals)
	}
}

// reset empties pk after a plan: the slots written, not the whole struct
// (each pointer cleared goes through a write barrier while the collector
// runs; the measurement: bench/README.md, "Measured design decisions"). flushIncr and flushHead
// have already emptied the held ops.
func (pk *planKeys) reset() {
	clear(pk.keys[:pk.used])
	clear(pk.vals[:pk.used])
	pk.next, pk.used, pk.incr, pk.dirty, pk.memo = 0, 0, nil, false, false
}

// drop forgets key (removed from the keyspace), here and in the memo.
func (pk *planKeys) drop(d *DB, key string) {
	if pk.memo {
		d.s.memo.drop(key)
	}
	for i := range pk.vals {
		if pk.vals[i] != nil && pk.keys[i] == key {
			pk.keys[i], pk.vals[i] = "", nil
		}
	}
}

// zsetForWrite is DB.ZSetForWrite through pk. A key pk.get found missing
// is created without looking it up again, and its new value kept (one
// keyspace lookup where there were three: the job cycle's pending and
// active sets are created anew whenever a claim or a completion emptied
// them).
func (pk *planKeys) zsetForWrite(d *DB, key string) (*ZSet, string) {
	d.Mutating()
	v := pk.get(d, key)
	if v == nil {
		v = d.createZSet(key)
		pk.put(key, v)
		return v.ZSet, ""
	}
	if v.Kind != KindZSet {
		return nil, ErrWrongType
	}
	return v.ZSet, ""
}

// hashForWrite is DB.HashForWrite through pk, as zsetForWrite.
func (pk *planKeys) hashForWrite(d *DB, key string) (*Hash, string) {
	d.Mutating()
	v := pk.get(d, key)
	if v == nil {
		v = d.createHash(key)
		pk.put(key, v)
		return v.Hash(), ""
	}
	if v.Kind != KindHash {
		return nil, ErrWrongType
	}
	return v.Hash(), ""
}

func applyOp(d *DB, o *plan.Op, pk *planKeys) {
	if len(pk.incr) > 0 && o.Kind != plan.HIncrBy && o.Kind != plan.HSet {
		pk.flushIncr(o.Key) // the op sees the key's increments
	}
	if pk.head.z != nil && o.Kind != plan.ZRem && o.Key == pk.head.key {
		pk.flushHead(d) // the op sees the set whole
	}
	switch o.Kind {
	case plan.HSet:
		h, e := pk.rowForWrite(d, o.Key)
		mustType(e, o)
		if len(pk.incr) > 0 {
			if pk.foldIncr(o.Key, h, o.Fields, int(o.Room)) {
				return
			}
			pk.flushIncr(o.Key) // the op sees the key's increments
		}
		// A plan's bytes are never written again (package plan), so the
		// hash may keep the field as a view of them.
		h.setPlanBorrow(o.Fields, int(o.Room), o.Borrow)
	case plan.HDel:
		h, e := d.LookupHash(o.Key)
		mustType(e, o)
		if h == nil {
			return
		}
		for _, f := range o.Fields {
			h.Del(string(f))
		}
		if d.DropIfEmpty(o.Key) {
			pk.drop(d, o.Key)
		}
	case plan.HIncrBy:
		h, e := pk.hashForWrite(d, o.Key)
		mustType(e, o)
		pk.hincr(o.Key, h, o.Fields[0], o.Num)
	case plan.ZAdd:
		z, e := pk.zsetForWrite(d, o.Key)
		mustType(e, o)
		z.Add(o.Member, float64(o.Num))
	case plan.ZRem:
		v := pk.get(d, o.Key)
		if v == nil {
			return
		}
		if v.Kind != KindZSet {
			mustType(ErrWrongType, o)
		}
		if pk.remHead(d, o.Key, v.ZSet, o.Member) {
			return
		}
		if pk.head.z == v.ZSet {
			pk.flushHead(d) // not the next least member
			if v = pk.get(d, o.Key); v == nil {
				return
			}
		}
		if v.ZSet.Rem(o.Member) && v.ZSet.Len() == 0 { // DropIfEmpty without a third lookup
			d.Remove(o.Key)
			pk.drop(d, o.Key)
		}
	case plan.Del:
		d.Remove(o.Key)
		pk.drop(d, o.Key)
	}
}

func mustType(e string, o *plan.Op) {
	if e != "" {
		panic("store: plan " + o.Kind.String() + " on key of the wrong type: " + o.Key)
	}
}
