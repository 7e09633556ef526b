package verbs

import (
	"math"

	"github.com/emqd/emqd/internal/num"
	"github.com/emqd/emqd/internal/plan"
	"github.com/emqd/emqd/internal/store"
)

// Retention (docs/verbs.md §4.21): a queue may keep its finished jobs.
// Completed jobs are kept in emq:{q}:completed (Keys.Done), scored by
// finished_at; dead jobs are always kept in dead, and a DEAD setting only
// bounds them. The settings live in the queue's meta hash; the verbs that
// add to a set trim it, oldest first, at most retainTrimPerCall members
// per call (the sweep: up to its limit), and every trimmed job is counted
// (TrimmedCompleted, TrimmedDead) and published (EvTrimmed).

// The meta fields of the settings (absent: 0).
var (
	fCompletedMaxCount = []byte("completed_max_count")
	fCompletedMaxAge   = []byte("completed_max_age_ms")
	fDeadMaxCount      = []byte("dead_max_count")
	fDeadMaxAge        = []byte("dead_max_age_ms")
)

// retainTrimPerCall bounds the members one adding verb trims from a set
// (docs/verbs.md §4.21): more than the one it adds, so a set over its cap
// after a smaller setting shrinks back as jobs finish.
const retainTrimPerCall = 10

// MaxResult is the largest RESULT value EMQ.COMPLETE accepts, in bytes
// (docs/verbs.md §4.5).
const MaxResult = 1 << 20

// Error texts of retention and results (docs/verbs.md §4.5, §4.21).
const (
	ErrResultSize  = "ERR result must be at most 1048576 bytes"
	ErrRetainKind  = "ERR kind must be COMPLETED or DEAD"
	ErrCompletedIs = "EMQSTATE job is completed"
)

var (
	errNonNegMaxCount = errNonNegative("max_count")
	errNonNegMaxAge   = errNonNegative("max_age_ms")
)

// retention is one kind's setting: keep at most MaxCount jobs (0: no count
// cap) no older than MaxAgeMs (0: no age cap).
type retention struct{ MaxCount, MaxAgeMs int64 }

// on reports whether the setting bounds or keeps anything (0 0 is the
// default: for COMPLETED keep none, for DEAD keep all).
func (r retention) on() bool { return r.MaxCount > 0 || r.MaxAgeMs > 0 }

// retainSettings are a queue's two settings as read from meta.
type retainSettings struct {
	Completed, Dead retention
}

// readRetain reads the settings from k's meta hash (WRONGTYPE if meta is
// not a hash; a field that is not a non-negative integer refuses as a bad
// row, docs/verbs.md §2.11).
func readRetain(d *store.DB, k *Keys) (retainSettings, refusal) {
	var s retainSettings
	h, kind := hashKind(d, k.Meta)
	if kind == keyWrong {
		return s, wrongType(k.Meta)
	}
	if h == nil {
		return s, noRefusal
	}
	for _, f := range []struct {
		name []byte
		dst  *int64
	}{{fCompletedMaxCount, &s.Completed.MaxCount}, {fCompletedMaxAge, &s.Completed.MaxAgeMs},
		{fDeadMaxCount, &s.Dead.MaxCount}, {fDeadMaxAge, &s.Dead.MaxAgeMs}} {
		v, ok := h.Get(string(f.name))
		if !ok {
			continue
		}
		n, ok := num.ParseInt(v)
		if !ok || n < 0 {
			return retainSettings{}, badRow(store.ErrHashNotInt, k.Meta)
		}
		*f.dst = n
	}
	return s, noRefusal
}

// trimJob is one member a trim removes, with whether it has a row.
type trimJob struct {
	ID     string
	RowKey string
	HasRow bool
	K      *Keys // set when the row is a flow parent: its roster goes too
}

// selectTrim is the read pass of one trim of set z (k.Done, or k.Dead
// when dead) under setting r at now, once adding more members join it
// (they are the newest): first the oldest members beyond max_count, then
// the members older than max_age_ms (score <= now - max_age_ms; in dead,
// a member at score 0 died before the DEAD setting scored it and only the
// count cap trims it), oldest first, at most max in all. It stops at a
// lane row (docs/verbs.md §1.3), which it leaves alone.
func selectTrim(d *store.DB, k *Keys, z *store.ZSet, r retention, now int64, adding int, dead bool, max int) []trimJob {
	if z == nil || z.Len() == 0 || max <= 0 {
		return nil
	}
	var out []trimJob
	stop := false
	take := func(id string) bool {
		rk := k.Row(id)
		h, kind := hashKind(d, rk)
		var fk *Keys
		if h != nil {
			if _, lane := h.Get("group"); lane {
				stop = true
				return false
			}
			if _, parent := h.Get(string(fChildren)); parent {
				fk = k
			}
		}
		out = append(out, trimJob{ID: id, RowKey: rk, HasRow: kind != keyAbsent, K: fk})
		return len(out) < max
	}
	if r.MaxCount > 0 {
		excess := int64(z.Len()) + int64(adding) - r.MaxCount
		for i := 0; int64(i) < excess && len(out) < max && !stop; i++ {
			it, ok := z.At(i)
			if !ok || !take(it.Member) {
				break
			}
		}
	}
	if r.MaxAgeMs > 0 && len(out) < max && !stop {
		cutoff := float64(now) - float64(r.MaxAgeMs)
		lo := store.NegInf
		if dead {
			lo = math.SmallestNonzeroFloat64
		}
		n := len(out)
		seen := make(map[string]bool, n)
		for _, t := range out {
			seen[t.ID] = true
		}
		z.RangeByScore(lo, cutoff, func(it store.ZItem) bool {
			if seen[it.Member] {
				return true
			}
			return take(it.Member)
		})
	}
	return out
}

// planTrim appends the writes of trimming ts from set: ZREM set id and, for
// a job with a row, DEL row.
func planTrim(p *plan.Plan, set string, ts []trimJob) {
	for _, t := range ts {
		p.ZRem(set, t.ID)
		if t.HasRow {
			p.Del(t.RowKey)
		}
		if t.K != nil {
			delRoster(p, t.K, t.ID)
		}
	}
}

// trimmed counts and publishes the trimmed jobs (after the apply).
func (vs *Verbs) trimmed(c *store.Ctx, k *Keys, tr Transition, ts []trimJob) {
	if len(ts) == 0 {
		return
	}
	vs.count(c, k, tr, len(ts))
	if vs.listening(k) {
		for _, t := range ts {
			vs.event(c, k, EvTrimmed, t.ID)
		}
	}
}

// deadScore is the score a death gives its dead member: 0, as always,
// unless the queue has a DEAD setting, which scores by finished_at so it
// can trim oldest first (docs/verbs.md §4.21).
func deadScore(s retainSettings, now int64) int64 {
	if s.Dead.on() {
		return now
	}
	return 0
}

// ---------------------------------------------------------------------------
// EMQ.RETAIN q [(COMPLETED|DEAD) max_count max_age_ms]

// RetainArgs are EMQ.RETAIN's setting form (docs/verbs.md §4.21): Queue
// (valid), Dead (the DEAD setting; else COMPLETED), MaxCount and MaxAgeMs
// (>= 0; both 0: no retention of that kind).
type RetainArgs struct {
	Queue    string
	Dead     bool
	MaxCount int64
	MaxAgeMs int64
}

// Argv is the canonical command line: EMQ.RETAIN q (COMPLETED | DEAD)
// max_count max_age_ms.
func (a *RetainArgs) Argv() [][]byte {
	kind := "COMPLETED"
	if a.Dead {
		kind = "DEAD"
	}
	return argvOf("EMQ.RETAIN", a.Queue, kind, itoa(a.MaxCount), itoa(a.MaxAgeMs))
}

// RetainSettings are a queue's retention settings (EMQ.RETAIN q; 0: none).
type RetainSettings struct {
	CompletedMaxCount, CompletedMaxAgeMs int64
	DeadMaxCount, DeadMaxAgeMs           int64
}

// EMQ.RETAIN q [(COMPLETED|DEAD) max_count max_age_ms]
func (vs *Verbs) cmdRetain(c *store.Ctx) {
	k := vs.queueArg(c)
	if k == nil {
		return
	}
	argv := c.Argv
	if len(argv) != 2 && len(argv) != 5 {
		c.W.Error(store.ErrSyntax)
		return
	}
	if len(argv) == 2 {
		s, err := vs.Retention(c, k.Queue)
		if err != nil {
			replyRefusal(c, err)
			return
		}
		w := c.W
		w.Map(4)
		w.BulkString("completed_max_count")
		w.Int(s.CompletedMaxCount)
		w.BulkString("completed_max_age_ms")
		w.Int(s.CompletedMaxAgeMs)
		w.BulkString("dead_max_count")
		w.Int(s.DeadMaxCount)
		w.BulkString("dead_max_age_ms")
		w.Int(s.DeadMaxAgeMs)
		return
	}
	a := RetainArgs{Queue: k.Queue}
	switch {
	case eqFold(argv[2], "COMPLETED"):
	case eqFold(argv[2], "DEAD"):
		a.Dead = true
	default:
		c.W.Error(ErrRetainKind)
		return
	}
	var e string
	if a.MaxCount, e = intArg(argv[3], 0, errNonNegMaxCount); e != "" {
		c.W.Error(e)
		return
	}
	if a.MaxAgeMs, e = intArg(argv[4], 0, errNonNegMaxAge); e != "" {
		c.W.Error(e)
		return
	}
	if err := vs.Retain(c, &a); err != nil {
		replyRefusal(c, err)
		return
	}
	c.W.OK()
}

// Retention is EMQ.RETAIN q (docs/verbs.md §4.21): the queue's settings.
// A *Refusal (the meta hash unreadable) wrote nothing.
func (vs *Verbs) Retention(c *store.Ctx, q string) (RetainSettings, error) {
	s, ref := readRetain(c.DB, vs.keysOf(q))
	if ref.Refused() {
		return RetainSettings{}, vs.refused(c, ref)
	}
	return RetainSettings{s.Completed.MaxCount, s.Completed.MaxAgeMs, s.Dead.MaxCount, s.Dead.MaxAgeMs}, nil
}

// Retain is EMQ.RETAIN q (COMPLETED | DEAD) max_count max_age_ms
// (docs/verbs.md §4.21): the setting of one kind (nothing written when it
// is already so). A *Refusal wrote nothing.
func (vs *Verbs) Retain(c *store.Ctx, a *RetainArgs) error {
	k := vs.keysOf(a.Queue)
	fc, fa := fCompletedMaxCount, fCompletedMaxAge
	if a.Dead {
		fc, fa = fDeadMaxCount, fDeadMaxAge
	}
	h, kind := hashKind(c.DB, k.Meta)
	if kind == keyWrong {
		return vs.refused(c, wrongType(k.Meta))
	}
	p := judgeRetain(h, k, fc, fa, retention{MaxCount: a.MaxCount, MaxAgeMs: a.MaxAgeMs})
	apply(c, p)
	return nil
}

// judgeRetain is EMQ.RETAIN's plan: the two fields of the kind set to the
// new values, or deleted when they are 0 (so a queue at the defaults has
// no retention fields); nil when meta already says so.
func judgeRetain(meta *store.Hash, k *Keys, fc, fa []byte, r retention) *plan.Plan {
	p := newPlan(2)
	var set, del [][]byte
	for _, f := range []struct {
		name []byte
		v    int64
	}{{fc, r.MaxCount}, {fa, r.MaxAgeMs}} {
		var cur []byte
		var has bool
		if meta != nil {
			cur, has = meta.Get(string(f.name))
		}
		if f.v == 0 {
			if has {
				del = append(del, f.name)
			}
			continue
		}
		nb := countBytes(f.v)
		if !has || string(cur) != string(nb) {
			set = append(set, f.name, nb)
		}
	}
	if len(set) > 0 {
		hset(p, k.Meta, set)
	}
	if len(del) > 0 {
		hdel(p, k.Meta, del)
	}
	if len(p.Ops) == 0 {
		plan.Put(p)
		return nil
	}
	return p
}
