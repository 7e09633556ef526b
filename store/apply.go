package store

import (
	"strconv"

	"github.com/emqd/emqd/num"
	"github.com/emqd/emqd/plan"
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
	c.S.mutations++
	var pk planKeys
	for i := range p.Ops {
		applyOp(c.DB, &p.Ops[i], &pk)
		c.Dirty(p.Ops[i].Key)
	}
	if c.S.Feed != nil {
		c.Propagate(p.Argvs())
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
type planKeys struct {
	keys [8]string
	vals [8]*Value
	next int
}

// get returns the value at key (d.Get on a miss, which is then kept when
// the key exists).
func (pk *planKeys) get(d *DB, key string) *Value {
	for i := range pk.vals {
		if pk.vals[i] != nil && pk.keys[i] == key {
			return pk.vals[i]
		}
	}
	v := d.Get(key)
	if v != nil {
		pk.put(key, v)
	}
	return v
}

func (pk *planKeys) put(key string, v *Value) {
	pk.keys[pk.next], pk.vals[pk.next] = key, v
	pk.next = (pk.next + 1) % len(pk.vals)
}

// drop forgets key (removed from the keyspace).
func (pk *planKeys) drop(key string) {
	for i := range pk.vals {
		if pk.vals[i] != nil && pk.keys[i] == key {
			pk.keys[i], pk.vals[i] = "", nil
		}
	}
}

// zsetForWrite is DB.ZSetForWrite through pk.
func (pk *planKeys) zsetForWrite(d *DB, key string) (*ZSet, string) {
	if v := pk.get(d, key); v != nil {
		d.Mutating()
		if v.Kind != KindZSet {
			return nil, ErrWrongType
		}
		return v.ZSet, ""
	}
	z, e := d.ZSetForWrite(key)
	if z != nil {
		pk.put(key, d.keys[key])
	}
	return z, e
}

// hashForWrite is DB.HashForWrite through pk.
func (pk *planKeys) hashForWrite(d *DB, key string) (*Hash, string) {
	if v := pk.get(d, key); v != nil {
		d.Mutating()
		if v.Kind != KindHash {
			return nil, ErrWrongType
		}
		return v.Hash, ""
	}
	h, e := d.HashForWrite(key)
	if h != nil {
		pk.put(key, d.keys[key])
	}
	return h, e
}

func applyOp(d *DB, o *plan.Op, pk *planKeys) {
	switch o.Kind {
	case plan.HSet:
		h, e := d.HashForWrite(o.Key)
		mustType(e, o)
		// A plan's bytes are never written again (package plan), so the
		// hash may keep the field as a view of them.
		h.setPlan(o.Fields)
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
			pk.drop(o.Key)
		}
	case plan.HIncrBy:
		h, e := pk.hashForWrite(d, o.Key)
		mustType(e, o)
		f := zview(o.Fields[0])
		var cur int64
		if v, ok := h.Get(f); ok {
			n, ok := num.ParseInt(v)
			if !ok {
				panic("store: plan HINCRBY on a non-integer field " + o.Key + " " + f)
			}
			cur = n
		}
		var buf [20]byte // copied by the listpack; buf stays on the stack (TestHashSetArgScratchOnStack)
		h.SetArg(o.Fields[0], strconv.AppendInt(buf[:0], cur+o.Num, 10))
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
		if v.ZSet.Rem(o.Member) && v.ZSet.Len() == 0 { // DropIfEmpty without a third lookup
			d.Remove(o.Key)
			pk.drop(o.Key)
		}
	case plan.Del:
		d.Remove(o.Key)
		pk.drop(o.Key)
	}
}

func mustType(e string, o *plan.Op) {
	if e != "" {
		panic("store: plan " + o.Kind.String() + " on key of the wrong type: " + o.Key)
	}
}
