package verbs

import (
	"github.com/emqd/emqd/store"
)

// EMQ.LIST q state [offset count] (docs/verbs.md §4.18): the jobs of
// one state, read-only.

// ListMax is the largest count EMQ.LIST accepts (docs/verbs.md §4.18).
const ListMax = 1000

// listDefault is EMQ.LIST's count when none is given.
const listDefault = 100

// Error texts of EMQ.LIST's arguments (docs/verbs.md §4.18).
const (
	ErrListState = "ERR state must be one of pending, active, scheduled, dead"
	ErrListCount = "ERR count must be at most 1000"
)

var errNonNegOffset = errNonNegative("offset")

// listSet maps a state name (any case) to its set's key.
func listSet(k *Keys, b []byte) (string, bool) {
	switch {
	case eqFold(b, "PENDING"):
		return k.Pending, true
	case eqFold(b, "ACTIVE"):
		return k.Active, true
	case eqFold(b, "SCHEDULED"):
		return k.Schedule, true
	case eqFold(b, "DEAD"):
		return k.Dead, true
	}
	return "", false
}

// listed is one member of the listed set with what EMQ.JOB would show of it.
type listed struct {
	id       string
	row      *store.Hash // nil: a ghost (a member without a row)
	inActive bool
	deadline float64
	inSched  bool
	runAt    float64
}

func cmdList(c *store.Ctx) {
	k := queueArg(c)
	if k == nil {
		return
	}
	argv := c.Argv
	setKey, ok := listSet(k, argv[2])
	if !ok {
		c.W.Error(ErrListState)
		return
	}
	if len(argv) != 3 && len(argv) != 5 {
		c.W.Error(store.ErrSyntax)
		return
	}
	offset, count := int64(0), int64(listDefault)
	if len(argv) == 5 {
		var e string
		if offset, e = intArg(argv[3], 0, errNonNegOffset); e != "" {
			c.W.Error(e)
			return
		}
		if count, e = intArg(argv[4], 1, errPosCount); e != "" {
			c.W.Error(e)
			return
		}
		if count > ListMax {
			c.W.Error(ErrListCount)
			return
		}
	}

	// Read pass: the set, then each selected member as EMQ.JOB reads it
	// (row, then active and schedule membership); the first refusal wins.
	d := c.DB
	z, kind := zsetKind(d, setKey)
	if kind == Wrong {
		refuseReply(c, wrongType(setKey))
		return
	}
	var out []listed
	if z != nil && offset < int64(z.Len()) {
		n := min(count, int64(z.Len())-offset)
		out = make([]listed, 0, n)
		first, _ := z.At(int(offset))
		var act, sched *store.ZSet
		checked := false
		var ref Refusal
		z.Ascend(first, func(it store.ZItem) bool {
			if int64(len(out)) >= n {
				return false
			}
			l := listed{id: it.Member}
			h, hk := hashKind(d, k.Row(it.Member))
			if hk == Wrong {
				ref = wrongType(k.Row(it.Member))
				return false
			}
			if h != nil {
				if !checked {
					checked = true
					var ak, sk KeyKind
					if act, ak = zsetKind(d, k.Active); ak == Wrong {
						ref = wrongType(k.Active)
						return false
					}
					if sched, sk = zsetKind(d, k.Schedule); sk == Wrong {
						ref = wrongType(k.Schedule)
						return false
					}
				}
				l.row = h
				if act != nil {
					l.deadline, l.inActive = act.Score(it.Member)
				}
				if sched != nil {
					l.runAt, l.inSched = sched.Score(it.Member)
				}
			}
			out = append(out, l)
			return true
		})
		if ref.Refused() {
			refuseReply(c, ref)
			return
		}
	}

	w := c.W
	w.Array(len(out))
	for i := range out {
		l := &out[i]
		w.Array(2)
		w.BulkString(l.id)
		if l.row == nil {
			w.Nil()
			continue
		}
		n := l.row.Len()
		if l.inActive {
			n++
		}
		if l.inSched {
			n++
		}
		w.Map(n)
		l.row.Range(func(f string, v []byte) bool {
			w.BulkString(f)
			w.Bulk(v)
			return true
		})
		if l.inActive {
			w.BulkString("lease_deadline_ms")
			w.BulkString(formatMs(l.deadline))
		}
		if l.inSched {
			w.BulkString("run_at_ms")
			w.BulkString(formatMs(l.runAt))
		}
	}
}
