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
	for i := range p.Ops {
		applyOp(c.DB, &p.Ops[i])
		c.Dirty(p.Ops[i].Key)
	}
	if c.S.Feed != nil {
		c.Propagate(p.Argvs())
	} else {
		c.Propagate(nil) // nothing records the ops: do not render them
	}
}

func applyOp(d *DB, o *plan.Op) {
	switch o.Kind {
	case plan.HSet:
		h, e := d.HashForWrite(o.Key)
		mustType(e, o)
		h.Reserve(o.Fields) // a new row is one allocation of its size (BenchmarkPendingJobMemory)
		for i := 0; i+1 < len(o.Fields); i += 2 {
			// A plan's bytes are never written again (package plan), so
			// the hash may keep the field as a view of them.
			h.Set(zview(o.Fields[i]), o.Fields[i+1])
		}
	case plan.HDel:
		h, e := d.LookupHash(o.Key)
		mustType(e, o)
		if h == nil {
			return
		}
		for _, f := range o.Fields {
			h.Del(string(f))
		}
		d.DropIfEmpty(o.Key)
	case plan.HIncrBy:
		h, e := d.HashForWrite(o.Key)
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
		z, e := d.ZSetForWrite(o.Key)
		mustType(e, o)
		z.Add(o.Member, float64(o.Num))
	case plan.ZRem:
		z, e := d.LookupZSet(o.Key)
		mustType(e, o)
		if z == nil {
			return
		}
		z.Rem(o.Member)
		d.DropIfEmpty(o.Key)
	case plan.Del:
		d.Remove(o.Key)
	}
}

func mustType(e string, o *plan.Op) {
	if e != "" {
		panic("store: plan " + o.Kind.String() + " on key of the wrong type: " + o.Key)
	}
}
