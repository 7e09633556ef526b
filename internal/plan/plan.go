// Package plan is the write plan of a job verb: an ordered list of primitive
// ops (HSET, HDEL, HINCRBY, ZADD, ZREM, DEL) that the store applies as one
// atomic unit and that the append-only file records as one all-or-nothing
// MULTI/EXEC group (docs/architecture.md §2.5, §2.6).
//
// A plan is built by a verb's pure judgement from what its read pass saw, so
// every op is known to succeed when applied: the store applies plans without
// re-checking types.
package plan

import (
	"strconv"
	"sync"
)

// Kind is a primitive op.
type Kind uint8

// The primitive ops.
const (
	HSet    Kind = iota + 1 // HSET key field value [field value ...]
	HDel                    // HDEL key field [field ...]
	HIncrBy                 // HINCRBY key field incr
	ZAdd                    // ZADD key score member
	ZRem                    // ZREM key member
	Del                     // DEL key
)

var names = [...]string{HSet: "HSET", HDel: "HDEL", HIncrBy: "HINCRBY", ZAdd: "ZADD", ZRem: "ZREM", Del: "DEL"}

// String is the op's command name.
func (k Kind) String() string { return names[k] }

// Op is one primitive write.
type Op struct {
	Kind Kind
	// Room: HSET only, bytes of spare capacity the store leaves in a
	// listpack row this write copies or grows, so that a later write's new
	// fields fit in place (the claim leaves room for the sweep's death,
	// docs/architecture.md §2.11). A layout hint: the keyspace and the AOF
	// record are the same with any value (not rendered by Argv).
	Room uint16
	// Borrow: HSET only, bit i set when the value of pair i is the
	// caller's bytes, valid only while the plan applies (a command's
	// argument: the store copies what it keeps, docs/architecture.md §2.9),
	// so the store copies it where it would keep the slice itself (a
	// hashtable hash); a listpack copies every value anyway. Without the
	// bit a value is kept as given (shared read-only plan bytes). Like
	// Room, a storage hint: the keyspace and the AOF record are the same.
	Borrow uint8
	Key    string
	// Fields: HSET field/value pairs; HDEL fields; HINCRBY the one field.
	Fields [][]byte
	// Member: ZADD / ZREM member.
	Member string
	// Num: ZADD score (ms or 0), HINCRBY increment.
	Num int64
}

// Argv renders the op as the Valkey command that has the same effect.
func (o Op) Argv() [][]byte {
	switch o.Kind {
	case HSet, HDel:
		out := make([][]byte, 0, 2+len(o.Fields))
		out = append(out, []byte(o.Kind.String()), []byte(o.Key))
		return append(out, o.Fields...)
	case HIncrBy:
		return [][]byte{[]byte("HINCRBY"), []byte(o.Key), o.Fields[0], strconv.AppendInt(nil, o.Num, 10)}
	case ZAdd:
		return [][]byte{[]byte("ZADD"), []byte(o.Key), strconv.AppendInt(nil, o.Num, 10), []byte(o.Member)}
	case ZRem:
		return [][]byte{[]byte("ZREM"), []byte(o.Key), []byte(o.Member)}
	case Del:
		return [][]byte{[]byte("DEL"), []byte(o.Key)}
	}
	panic("plan: unknown op")
}

// Plan is an ordered list of ops, applied all or nothing.
type Plan struct {
	Ops []Op
	// pooled: the plan came from Get, and Put may take it back.
	pooled bool
	// fields is the backing of the Fields HSetBytes copies its pairs into,
	// kept with the plan through the pool: a verb's variadic pairs then
	// stay on its stack (a new row's eight were a 192-byte allocation per
	// job, the mint's two another).
	fields [][]byte
}

// pool holds plans Put back after they were applied: a verb's plan and its
// ops were about a tenth of a job's cycle (allocation and the collector's
// scanning of them, BenchmarkJobCycleNoFeed).
var pool = sync.Pool{New: func() any { return &Plan{pooled: true} }}

// maxPooledOps is the most ops a plan may hold room for and go back to the
// pool (a claim of 64 jobs builds about 256; the common plans hold 1 to 8).
const maxPooledOps = 64

// Get returns an empty plan with room for n ops, from the plans Put back
// when there is one. Give it back with Put once it is applied.
func Get(n int) *Plan {
	p := pool.Get().(*Plan)
	if cap(p.Ops) < n {
		p.Ops = make([]Op, 0, n)
	}
	return p
}

// Put gives p back for a later Get: p and its ops must not be used after.
// The ops are cleared first, so the pool holds nothing they pointed to. A
// plan that did not come from Get (a verb's own scratch, a literal) is left
// alone, as is nil.
func Put(p *Plan) {
	if p == nil || !p.pooled {
		return
	}
	if cap(p.Ops) > maxPooledOps {
		p.Ops = nil
	} else {
		clear(p.Ops)
		p.Ops = p.Ops[:0]
	}
	if cap(p.fields) > maxPooledFields {
		p.fields = nil
	} else {
		clear(p.fields)
		p.fields = p.fields[:0]
	}
	pool.Put(p)
}

// Len is the number of ops.
func (p *Plan) Len() int { return len(p.Ops) }

// HSet appends HSET key f1 v1 [f2 v2 ...]; fv alternates fields and values.
func (p *Plan) HSet(key string, fv ...string) {
	fs := make([][]byte, len(fv))
	for i, s := range fv {
		fs[i] = []byte(s)
	}
	p.Ops = append(p.Ops, Op{Kind: HSet, Key: key, Fields: fs})
}

// maxPooledFields is the most field and value slices a plan's Fields
// backing may keep through the pool (a claim of 64 jobs shares one field
// list; the common plans hold 2 to 12).
const maxPooledFields = 256

// HSetBytes is HSet with byte values (binary payloads). The op's Fields
// are a copy of fv in the plan's own backing (the slices, not the bytes
// they point to, which the plan keeps as given): fv may be the caller's
// scratch or its variadic list.
func (p *Plan) HSetBytes(key string, fv ...[]byte) {
	at := len(p.fields)
	p.fields = append(p.fields, fv...)
	p.Ops = append(p.Ops, Op{Kind: HSet, Key: key, Fields: p.fields[at:len(p.fields):len(p.fields)]})
}

// HDel appends HDEL key field...
func (p *Plan) HDel(key string, fields ...string) {
	fs := make([][]byte, len(fields))
	for i, s := range fields {
		fs[i] = []byte(s)
	}
	p.Ops = append(p.Ops, Op{Kind: HDel, Key: key, Fields: fs})
}

// HIncrBy appends HINCRBY key field incr. The judgement has already checked
// (with HINCRBY's rule) that the stored value accepts the increment.
func (p *Plan) HIncrBy(key, field string, incr int64) {
	p.Ops = append(p.Ops, Op{Kind: HIncrBy, Key: key, Fields: [][]byte{[]byte(field)}, Num: incr})
}

// ZAdd appends ZADD key score member (score in ms, or 0).
func (p *Plan) ZAdd(key string, score int64, member string) {
	p.Ops = append(p.Ops, Op{Kind: ZAdd, Key: key, Num: score, Member: member})
}

// ZRem appends ZREM key member.
func (p *Plan) ZRem(key, member string) {
	p.Ops = append(p.Ops, Op{Kind: ZRem, Key: key, Member: member})
}

// Del appends DEL key.
func (p *Plan) Del(key string) { p.Ops = append(p.Ops, Op{Kind: Del, Key: key}) }

// nameBytes are the command names Argvs shares between calls (read-only).
var nameBytes = [...][]byte{HSet: []byte("HSET"), HDel: []byte("HDEL"), HIncrBy: []byte("HINCRBY"),
	ZAdd: []byte("ZADD"), ZRem: []byte("ZREM"), Del: []byte("DEL")}

// Argvs renders every op (see Op.Argv), the form the AOF records. It makes
// three allocations per plan (not several per op): the argument slices of
// all ops share one backing array and the keys, members and numbers share
// one byte buffer; command names are shared read-only slices. The result
// must not be modified.
func (p *Plan) Argvs() [][][]byte { return p.ArgvsInto(nil) }

// ArgvScratch is memory ArgvsInto reuses from plan to plan: the render of
// one plan is valid until the next call with the same scratch.
type ArgvScratch struct {
	out  [][][]byte
	args [][]byte
	buf  []byte
}

// argvScratchKeep bounds what a scratch keeps between plans: a bigger
// render (a bulk verb's thousands of ops) is dropped after use, so one
// large plan does not hold its size for good.
const argvScratchKeep = 64 << 10

// Release clears the references the last render holds (the plan's field
// and value slices, so a payload is not kept alive) and drops memory past
// argvScratchKeep. Call it once the render was consumed.
func (sc *ArgvScratch) Release() {
	if cap(sc.buf) > argvScratchKeep || cap(sc.args) > argvScratchKeep/16 {
		*sc = ArgvScratch{}
		return
	}
	clear(sc.out)
	clear(sc.args)
	sc.out, sc.args, sc.buf = sc.out[:0], sc.args[:0], sc.buf[:0]
}

// ArgvsInto is Argvs rendered into sc's memory (nil: new memory, as
// Argvs), with no allocation once sc has room: the result is valid until
// sc is used again or released, so only a caller whose consumer copies at
// once may pass one (the store's feed, outside a MULTI/EXEC group,
// store.Feed).
func (p *Plan) ArgvsInto(sc *ArgvScratch) [][][]byte {
	nargs, nbytes := 0, 0
	for i := range p.Ops {
		o := &p.Ops[i]
		switch o.Kind {
		case HSet, HDel:
			nargs += 2 + len(o.Fields)
			nbytes += len(o.Key)
		case HIncrBy:
			nargs += 4
			nbytes += len(o.Key) + 20
		case ZAdd:
			nargs += 4
			nbytes += len(o.Key) + len(o.Member) + 20
		case ZRem:
			nargs += 3
			nbytes += len(o.Key) + len(o.Member)
		case Del:
			nargs += 2
			nbytes += len(o.Key)
		default:
			panic("plan: unknown op")
		}
	}
	var out [][][]byte
	var args [][]byte
	var buf []byte
	if sc == nil {
		out = make([][][]byte, len(p.Ops))
		args = make([][]byte, 0, nargs)
		buf = make([]byte, 0, nbytes)
	} else {
		if cap(sc.out) < len(p.Ops) {
			sc.out = make([][][]byte, len(p.Ops))
		}
		if cap(sc.args) < nargs {
			sc.args = make([][]byte, 0, nargs)
		}
		if cap(sc.buf) < nbytes {
			sc.buf = make([]byte, 0, nbytes)
		}
		out, args, buf = sc.out[:len(p.Ops)], sc.args[:0], sc.buf[:0]
	}
	// put appends s to buf (which never grows: capacity was counted) and
	// returns the slice holding it.
	put := func(s string) []byte {
		n := len(buf)
		buf = append(buf, s...)
		return buf[n:len(buf):len(buf)]
	}
	num := func(v int64) []byte {
		n := len(buf)
		buf = strconv.AppendInt(buf, v, 10)
		return buf[n:len(buf):len(buf)]
	}
	for i := range p.Ops {
		o := &p.Ops[i]
		start := len(args)
		args = append(args, nameBytes[o.Kind], put(o.Key))
		switch o.Kind {
		case HSet, HDel:
			args = append(args, o.Fields...)
		case HIncrBy:
			args = append(args, o.Fields[0], num(o.Num))
		case ZAdd:
			args = append(args, num(o.Num), put(o.Member))
		case ZRem:
			args = append(args, put(o.Member))
		}
		out[i] = args[start:len(args):len(args)]
	}
	if sc != nil {
		sc.out, sc.args, sc.buf = out, args, buf
	}
	return out
}
