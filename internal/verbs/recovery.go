package verbs

import (
	"bytes"
	"strconv"

	"github.com/emqd/emqd/internal/num"
	"github.com/emqd/emqd/internal/plan"
	"github.com/emqd/emqd/internal/store"
)

// ---------------------------------------------------------------------------
// EMQ.STALLED.CHECK q [max_stalled [limit]] [EVERY interval_ms]

// fSweptAt is the meta field of the sweep guard (docs/verbs.md §4.11.1):
// the server time, Unix ms, of the last sweep sent with EVERY that ran.
var fSweptAt = []byte("swept_at")

// StalledCheckArgs are EMQ.STALLED.CHECK's arguments (docs/verbs.md
// §4.11). Queue is a valid queue name (docs/verbs.md §2.8; the wire
// adapter checks it). MaxStalled (>= 1; 0: the default 1) is the stall
// count that dead-letters, Limit (>= 1; 0: the default 100) the most
// expired leases one call judges, Every (ms, >= 1; 0: no guard) the sweep
// guard's interval (§4.11.1).
type StalledCheckArgs struct {
	Queue      string
	MaxStalled int64
	Limit      int64
	Every      int64
}

// Argv is the canonical command line of a (what the AOF records for an
// in-process call): EMQ.STALLED.CHECK q [max_stalled [limit]] [EVERY ms].
func (a *StalledCheckArgs) Argv() [][]byte {
	argv := argvOf("EMQ.STALLED.CHECK", a.Queue)
	if a.MaxStalled > 0 || a.Limit > 0 {
		argv = append(argv, []byte(itoa(max(a.MaxStalled, 1))))
	}
	if a.Limit > 0 {
		argv = append(argv, []byte(itoa(a.Limit)))
	}
	if a.Every > 0 {
		argv = append(argv, []byte("EVERY"), []byte(itoa(a.Every)))
	}
	return argv
}

// StalledCheckResult is what one sweep did: the recovered ids (back to
// pending) and the dead-lettered ids, in selection order (ghosts are in
// neither). Both are empty when the guard skipped the sweep.
type StalledCheckResult struct {
	Recovered []string
	Dead      []string
}

// EMQ.STALLED.CHECK q [max_stalled [limit]] [EVERY interval_ms]
func (vs *Verbs) cmdStalledCheck(c *store.Ctx) {
	if !validQueue(c.Argv[1]) {
		c.W.Error(ErrInvalidQueue)
		return
	}
	argv := c.Argv
	a := StalledCheckArgs{MaxStalled: 1, Limit: 100}
	var e string
	i := 2
	for ; i < len(argv) && i < 4 && !eqFold(argv[i], "EVERY"); i++ {
		if i == 2 {
			a.MaxStalled, e = intArg(argv[i], 1, errPosMaxStalled)
		} else {
			a.Limit, e = intArg(argv[i], 1, errPosLimit)
		}
		if e != "" {
			c.W.Error(e)
			return
		}
	}
	if i < len(argv) {
		if !eqFold(argv[i], "EVERY") || i+2 != len(argv) {
			c.W.Error(store.ErrSyntax)
			return
		}
		if a.Every, e = intArg(argv[i+1], 1, errPosInterval); e != "" {
			c.W.Error(e)
			return
		}
	}
	a.Queue = vs.keysFor(argv[1]).Queue
	// The reply's id lists are the scratch's (lent for this call: they are
	// written to the reply and given back, not kept by anyone).
	vs.sweep.lend = true
	res, err := vs.StalledCheck(c, &a)
	vs.sweep.lend = false
	if err != nil {
		vs.sweep.giveBack()
		replyRefusal(c, err)
		return
	}
	c.W.Array(2)
	c.W.Array(len(res.Recovered))
	for _, id := range res.Recovered {
		c.W.BulkString(id)
	}
	c.W.Array(len(res.Dead))
	for _, id := range res.Dead {
		c.W.BulkString(id)
	}
	vs.sweep.giveBack()
}

// StalledCheck is EMQ.STALLED.CHECK (docs/verbs.md §4.11), the one
// recovery verb: the sweep guard, then every expired lease of a.Queue in
// c.DB (score <= c.NowMs, at most Limit) judged before anything is
// written, then the retention trims (§4.21). It returns a *Refusal (and
// writes nothing) when stored data refuses the call; the server's sweeper
// calls it directly.
func (vs *Verbs) StalledCheck(c *store.Ctx, a *StalledCheckArgs) (StalledCheckResult, error) {
	k := vs.keysOf(a.Queue)
	maxStalled, limit, every := a.MaxStalled, a.Limit, a.Every
	if maxStalled <= 0 {
		maxStalled = 1
	}
	if limit <= 0 {
		limit = 100
	}
	d := c.DB
	if every > 0 {
		var g sweepGuardRead
		var meta *store.Hash
		meta, g.Meta = hashKind(d, k.Meta)
		if meta != nil {
			g.SweptAt = getField(meta, string(fSweptAt))
		}
		skip, ref := judgeSweepGuard(&g, k, c.NowMs, every)
		if ref.Refused() {
			return StalledCheckResult{}, vs.refused(c, ref)
		}
		if skip {
			return StalledCheckResult{}, nil
		}
	}
	r := stalledRead{Now: c.NowMs}
	var act *store.ZSet
	act, r.Active = zsetKind(d, k.Active)
	// The rows are read unmarked (readRowFor): no view of a row's bytes
	// the plan's HSET of it overwrites is read after that HSET
	// (docs/architecture.md §2.5, "Views of a row and its in-place write"),
	// so the HSET rewrites the row in place when it fits.
	r.Expired = readDueFor(d, k, act, c.NowMs, limit, vs.sweep.due, &vs.sweep.keys, true)
	var deadZ *store.ZSet
	if len(r.Expired) > 0 {
		_, r.Pending = zsetKind(d, k.Pending)
		deadZ, r.Dead = zsetKind(d, k.Dead)
		r.Failed = readCounter(d, k.Failed)
		r.Lanes, r.LanesRef = readLanes(d, k, c.NowMs)
	}
	// Retention (docs/verbs.md §4.21): the DEAD setting scores the deaths;
	// the sweep trims both sets, up to limit members each.
	retain, retainRef := readRetain(d, k)
	r.Retain = retain
	v, p, ref := judgeStalledInto(&r, []byte(c.RunID), k, maxStalled, &vs.sweep)
	if !ref.Refused() {
		ref = retainRef
	}
	var trimDone, trimDead []trimJob
	if !ref.Refused() && retain.Completed.on() {
		z, kind := zsetKind(d, k.Done)
		if kind == keyWrong {
			ref = wrongType(k.Done)
		}
		trimDone = selectTrim(d, k, z, retain.Completed, c.NowMs, 0, false, int(min(limit, 1<<20)))
	}
	if !ref.Refused() && retain.Dead.on() {
		if deadZ == nil {
			deadZ, r.Dead = zsetKind(d, k.Dead)
		}
		if r.Dead == keyWrong {
			ref = wrongType(k.Dead)
		}
		trimDead = selectTrim(d, k, deadZ, retain.Dead, c.NowMs, len(v.Dead), true, int(min(limit, 1<<20)))
	}
	if ref.Refused() {
		vs.sweep.keep(r.Expired, nil)
		return StalledCheckResult{}, vs.refused(c, ref)
	}
	if len(trimDone)+len(trimDead) > 0 {
		if p == nil {
			p = newPlan(2 * (len(trimDone) + len(trimDead)))
		}
		planTrim(p, k.Done, trimDone)
		planTrim(p, k.Dead, trimDead)
	}
	var fe *flowEnds
	if len(v.Dead) > 0 {
		// Flow children the sweep dead-lettered (docs/verbs.md §4.25.2).
		di := 0
		for i := range r.Expired {
			if di < len(v.Dead) && r.Expired[i].ID == v.Dead[di] {
				di++
				vs.endRow(&fe, c, p, r.Lanes, &r.Expired[i].Row, k, r.Expired[i].ID, vDead, vStalled)
			}
		}
		planFlow(fe, p)
	}
	if every > 0 {
		if p == nil {
			p = newPlan(1)
		}
		p.HSetBytes(k.Meta, fSweptAt, strconv.AppendInt(nil, c.NowMs, 10))
	}
	p = r.Lanes.flush(p)
	apply(c, p)
	fe.after(c)
	if r.Lanes != nil && r.Lanes.woke {
		vs.wake(c, k)
	}
	vs.sweep.keep(r.Expired, p)
	vs.count(c, k, StallRecovered, len(v.Recovered))
	vs.count(c, k, StallDead, len(v.Dead))
	vs.events(c, k, EvStalled, v.Recovered)
	vs.events(c, k, EvDead, v.Dead)
	vs.trimmed(c, k, TrimmedCompleted, trimDone)
	vs.trimmed(c, k, TrimmedDead, trimDead)
	for range v.Recovered {
		vs.wake(c, k)
	}
	return StalledCheckResult{Recovered: v.Recovered, Dead: v.Dead}, nil
}

// deathRoom is the bytes the sweep's death adds to a claimed row's
// listpack (stalled 1, last_error stalled, finished_at <13 digits>: 19),
// the room the claim's HSET leaves in the row it copies (plan.Op.Room), so
// that a lease that expires and dies is rewritten in place, with no new
// listpack (docs/architecture.md §2.5, "Views of a row and its in-place
// write"; the active row of a 64-byte payload: 146 bytes, from the 160-byte
// size class to the 176-byte one).
var deathRoom = uint16(store.ListpackRoom(fStalled, vOne, fLastError, vStalled, fFinishedAt, msBytes(1_000_000_000_000)))

// sweepGuardRead is what the guard of EMQ.STALLED.CHECK ... EVERY read:
// the meta hash and its swept_at field.
type sweepGuardRead struct {
	Meta    keyKind
	SweptAt rowField
}

// judgeSweepGuard is the sweep guard (docs/verbs.md §4.11.1): skip (answer
// [[], []], write nothing) when meta's swept_at is a time t with
// now-every < t <= now; a swept_at in the future (the clock stepped back)
// does not hold the sweep back. meta of another type, or a swept_at that
// is not an integer, refuses (stored data, §2.11).
func judgeSweepGuard(g *sweepGuardRead, k *Keys, now, every int64) (skip bool, ref refusal) {
	if g.Meta == keyWrong {
		return false, wrongType(k.Meta)
	}
	if !g.SweptAt.Present {
		return false, noRefusal
	}
	t, ok := num.ParseInt(g.SweptAt.Val)
	if !ok {
		return false, badRow(store.ErrHashNotInt, k.Meta)
	}
	return t <= now && now-t < every, noRefusal
}

// stalledRead is what EMQ.STALLED.CHECK's read pass saw: the expired
// members of active (score <= now, at most limit) with their rows, and the
// destinations.
type stalledRead struct {
	Now     int64          // the clock reading (finished_at of the dead)
	Retain  retainSettings // the DEAD setting scores the dead members
	Active  keyKind
	Expired []dueJob
	Pending keyKind
	Dead    keyKind
	Failed  counter
	// Lanes is the queue's lane state (nil in tables), LanesRef its refusal.
	Lanes    *laneTx
	LanesRef refusal
}

// stalledVerdict is the sweep's reply: the recovered ids and the dead ids,
// in selection order (ghosts are in neither).
type stalledVerdict struct {
	Recovered []string
	Dead      []string
}

// judgeStalled is EMQ.STALLED.CHECK (docs/verbs.md
// §4.11): every expired member is judged before anything is written,
// in order: a ghost is removed from active and listed nowhere; a non-hash
// row or a lane row refuses the whole call; a lease_epoch other than runID
// (or none) is exempt: back to pending, stalled neither read nor written; a
// stalled value HINCRBY would refuse refuses the whole call; otherwise a
// counted expiry: s = stalled+1, dead when s >= maxStalled, else recovered.
func judgeStalled(r *stalledRead, runID []byte, k *Keys, maxStalled int64) (stalledVerdict, *plan.Plan, refusal) {
	return judgeStalledInto(r, runID, k, maxStalled, nil)
}

// sweepScratch is what one EMQ.STALLED.CHECK lends the next: the read
// pass's selection, the plan's ops and its field lists (a sweep of 100
// leases builds 400 ops; allocating them per call was a third of the bytes
// the sweep allocated and the GC marked, BenchmarkStalledCheck).
type sweepScratch struct {
	due  []dueJob
	ops  []plan.Op
	fv   [][]byte
	plan plan.Plan
	// verdicts: the judgement's one per selected lease (pointer-free, so
	// kept as it is; every entry is written before it is read).
	verdicts []sweepVerdict
	// lend: the caller (cmdStalledCheck) writes the verdict's id lists to
	// its reply and gives them back (giveBack), so the judgement builds
	// them in rec and dead instead of new slices (1.6 KB a call of 100
	// leases, a fifth of the bytes the sweep allocated: bench/README.md
	// "The stall sweep, round 7 (issue 25)"). The typed StalledCheck's
	// callers keep their lists, and get new ones.
	lend      bool
	rec, dead []string
	// keys: the read pass's row keys, built to look them up (readDueFor).
	keys []byte
}

// ids returns an empty id list of capacity n: *buf's while the lists are
// lent (grown to n when smaller, up to sweepKeepMax), else a new one.
func (sc *sweepScratch) ids(buf *[]string, n int64) []string {
	if !sc.lend || n > sweepKeepMax {
		return make([]string, 0, n)
	}
	if int64(cap(*buf)) < n {
		*buf = make([]string, 0, n)
	}
	return (*buf)[:0]
}

// giveBack takes the lent id lists back, cleared so that they hold no
// member of the keyspace.
func (sc *sweepScratch) giveBack() {
	clear(sc.rec[:cap(sc.rec)])
	clear(sc.dead[:cap(sc.dead)])
}

// sweepVerdict is the judgement of one expired lease: its kind (ghost,
// exempt, recovered, dead: judgeStalledInto) and its new stall count.
type sweepVerdict struct {
	kind int
	s    int64
}

// sweepKeepMax is the largest scratch (entries of the selection, ops of
// the plan, field lists) one call lends the next: a sweep of the default
// limit (100) and the server's sweeper reuse theirs, while one call with a
// huge limit (200,000 leases: about 130 MB of scratch) gives its memory
// back when it ends instead of pinning it for the server's life (issue 27;
// docs/verbs.md §4.11).
const sweepKeepMax = 4096

// keep takes back the selection and the applied plan p (nil: none), cleared
// so that they hold nothing of the keyspace, or drops them when they are
// larger than sweepKeepMax.
func (sc *sweepScratch) keep(due []dueJob, p *plan.Plan) {
	if c := cap(due); c > sweepKeepMax {
		sc.due = nil
	} else if c > 0 {
		clear(due[:c])
		sc.due = due[:0]
	}
	if p != nil && p == &sc.plan {
		if cap(p.Ops) > sweepKeepMax || cap(sc.fv) > sweepKeepMax {
			sc.ops, sc.fv, p.Ops = nil, nil, nil
			return
		}
		clear(p.Ops[:cap(p.Ops)])
		sc.ops, p.Ops = p.Ops[:0], nil
		clear(sc.fv[:cap(sc.fv)])
		sc.fv = sc.fv[:0]
	}
	if cap(sc.ops) > sweepKeepMax || cap(sc.fv) > sweepKeepMax {
		sc.ops, sc.fv = nil, nil
	}
}

// scratchCap is the capacity the scratch keeps (tests).
func (sc *sweepScratch) scratchCap() (due, ops, fv int) { return cap(sc.due), cap(sc.ops), cap(sc.fv) }

// judgeStalledInto is judgeStalled building its plan in sc (nil: fresh
// allocations); the plan is then &sc.plan until sc.keep.
func judgeStalledInto(r *stalledRead, runID []byte, k *Keys, maxStalled int64, sc *sweepScratch) (stalledVerdict, *plan.Plan, refusal) {
	var v stalledVerdict
	if r.Active == keyWrong {
		return v, nil, wrongType(k.Active)
	}
	if len(r.Expired) == 0 {
		return v, nil, noRefusal
	}
	if r.LanesRef.Refused() {
		return v, nil, r.LanesRef
	}
	const (
		ghost = iota
		exempt
		recovered
		dead
	)
	type verdict = sweepVerdict
	var vs []verdict
	if sc != nil && cap(sc.verdicts) >= len(r.Expired) {
		vs = sc.verdicts[:len(r.Expired)]
	} else {
		vs = make([]verdict, len(r.Expired))
		if sc != nil && len(r.Expired) <= sweepKeepMax {
			sc.verdicts = vs
		}
	}
	var nRecovered, nDead int64
	for i := range r.Expired {
		d := &r.Expired[i]
		switch {
		case d.Row.Kind == keyAbsent:
			vs[i] = verdict{kind: ghost}
			continue
		case d.Row.Kind == keyWrong:
			return v, nil, wrongType(d.rowKey(k))
		case d.Row.Lane:
			return v, nil, badRow(ErrLane, d.rowKey(k))
		case !d.Row.LeaseEpoch.Present || !bytes.Equal(d.Row.LeaseEpoch.Val, runID):
			if ref := checkIntoPending(r.Lanes, &d.Row, d.rowKey(k)); ref.Refused() {
				return v, nil, ref
			}
			if ref := checkLeavesActive(r.Lanes, &d.Row); ref.Refused() {
				return v, nil, ref
			}
			vs[i] = verdict{kind: exempt}
			nRecovered++
			continue
		}
		s, e := nextCount(d.Row.Stalled, 1)
		if e != "" {
			return v, nil, badRow(e, d.rowKey(k))
		}
		if ref := checkLeavesActive(r.Lanes, &d.Row); ref.Refused() {
			return v, nil, ref
		}
		if s >= maxStalled {
			vs[i] = verdict{kind: dead, s: s}
			nDead++
		} else {
			if ref := checkIntoPending(r.Lanes, &d.Row, d.rowKey(k)); ref.Refused() {
				return v, nil, ref
			}
			vs[i] = verdict{kind: recovered, s: s}
			nRecovered++
		}
	}
	if nRecovered > 0 && r.Pending == keyWrong {
		return v, nil, wrongType(k.Pending)
	}
	if nDead > 0 {
		if r.Dead == keyWrong {
			return v, nil, wrongType(k.Dead)
		}
		if ref := counterCheck(r.Failed, k.Failed, nDead); ref.Refused() {
			return v, nil, ref
		}
	}
	var p *plan.Plan
	var fv [][]byte
	if sc != nil {
		p = &sc.plan
		p.Ops, fv = sc.ops[:0], sc.fv[:0]
	} else {
		p = &plan.Plan{}
	}
	if cap(p.Ops) < 4*len(r.Expired) {
		p.Ops = make([]plan.Op, 0, 4*len(r.Expired))
	}
	if cap(fv) < 8*len(r.Expired) {
		fv = make([][]byte, 0, 8*len(r.Expired))
	}
	lists := sc
	if lists == nil {
		lists = &sweepScratch{} // judgeStalled: nothing lent
	}
	if nRecovered > 0 {
		v.Recovered = lists.ids(&lists.rec, nRecovered)
	}
	if nDead > 0 {
		v.Dead = lists.ids(&lists.dead, nDead)
	}
	// The field lists of the counted rows share one backing array (the
	// plan's bytes are never written again while the plan lives).
	fields := func(b ...[]byte) [][]byte {
		n := len(fv)
		fv = append(fv, b...)
		return fv[n:len(fv):len(fv)]
	}
	var finishedAt []byte
	for i := range r.Expired {
		id := r.Expired[i].ID
		rk := r.Expired[i].rowKey(k)
		p.ZRem(k.Active, id)
		if vs[i].kind != ghost {
			leavesActive(p, r.Lanes, rk, &r.Expired[i].Row, false)
		}
		switch vs[i].kind {
		case ghost:
		case exempt:
			hset(p, rk, fvStatePending)
			intoPending(p, k, r.Lanes, id, &r.Expired[i].Row)
			v.Recovered = append(v.Recovered, id)
		case recovered:
			hset(p, rk, fields(fState, vPending, fStalled, countBytes(vs[i].s)))
			intoPending(p, k, r.Lanes, id, &r.Expired[i].Row)
			v.Recovered = append(v.Recovered, id)
		case dead:
			if finishedAt == nil {
				finishedAt = msBytes(r.Now)
			}
			hset(p, rk, fields(fStalled, countBytes(vs[i].s), fState, vDead, fLastError, vStalled, fFinishedAt, finishedAt))
			p.ZAdd(k.Dead, deadScore(r.Retain, r.Now), id)
			hincr1(p, k.Failed, fvCount)
			v.Dead = append(v.Dead, id)
		}
	}
	if sc != nil {
		sc.fv = fv
	}
	return v, p, noRefusal
}

// ---------------------------------------------------------------------------
// EMQ.PROMOTE q [limit] (and the promotion EMQ.CLAIM runs first)

// PromoteArgs are EMQ.PROMOTE's arguments (docs/verbs.md §4.12): Queue
// (valid, the adapter checks it) and Limit (>= 1; 0: the default 100), the
// most due members one call moves.
type PromoteArgs struct {
	Queue string
	Limit int64
}

// Argv is the canonical command line: EMQ.PROMOTE q [limit].
func (a *PromoteArgs) Argv() [][]byte {
	argv := argvOf("EMQ.PROMOTE", a.Queue)
	if a.Limit > 0 {
		argv = append(argv, []byte(itoa(a.Limit)))
	}
	return argv
}

// PromoteResult is the promoted ids in selection order (the wire reply is
// their number; a ghost is dropped and not listed).
type PromoteResult struct{ Promoted []string }

// EMQ.PROMOTE q [limit]
func (vs *Verbs) cmdPromote(c *store.Ctx) {
	if !validQueue(c.Argv[1]) {
		c.W.Error(ErrInvalidQueue)
		return
	}
	if len(c.Argv) > 3 {
		c.W.Error(store.ErrSyntax)
		return
	}
	a := PromoteArgs{Queue: vs.keysFor(c.Argv[1]).Queue, Limit: 100}
	if len(c.Argv) > 2 {
		var e string
		if a.Limit, e = intArg(c.Argv[2], 1, errPosLimit); e != "" {
			c.W.Error(e)
			return
		}
	}
	res, err := vs.Promote(c, &a)
	if err != nil {
		replyRefusal(c, err)
		return
	}
	c.W.Int(int64(len(res.Promoted)))
}

// Promote is EMQ.PROMOTE (docs/verbs.md §4.12): the members of a.Queue's
// schedule due at c.NowMs (at most Limit) move to pending at their
// priority. A *Refusal wrote nothing.
func (vs *Verbs) Promote(c *store.Ctx, a *PromoteArgs) (PromoteResult, error) {
	k := vs.keysOf(a.Queue)
	limit := a.Limit
	if limit <= 0 {
		limit = 100
	}
	d := c.DB
	var r promoteRead
	var sched *store.ZSet
	sched, r.Schedule = zsetKind(d, k.Schedule)
	r.Due = readDue(d, k, sched, c.NowMs, limit, nil)
	_, r.Pending = zsetKind(d, k.Pending)
	if len(r.Due) > 0 {
		r.Lanes, r.LanesRef = readLanes(d, k, c.NowMs)
	}
	ids, p, ref := judgePromote(&r, k)
	if ref.Refused() {
		return PromoteResult{}, vs.refused(c, ref)
	}
	vs.flushApply(c, k, r.Lanes, p)
	vs.count(c, k, Promoted, len(ids))
	vs.events(c, k, EvPromoted, ids)
	for range ids {
		vs.wake(c, k)
	}
	return PromoteResult{Promoted: ids}, nil
}

// promoteRead is what EMQ.PROMOTE's read pass saw: the due members of
// schedule (score <= now, at most limit) with their rows, and pending.
type promoteRead struct {
	Schedule keyKind
	Due      []dueJob
	Pending  keyKind
	Lanes    *laneTx // nil in tables
	LanesRef refusal
}

// judgePromotions judges due scheduled members and appends their writes to
// p: a ghost is dropped from schedule (not counted); a non-hash row or a
// lane row or an unreadable priority refuses the whole call; a job moves
// to pending at its priority (seam 1). It
// returns the promoted ids in selection order.
func judgePromotions(k *Keys, due []dueJob, p *plan.Plan, lt *laneTx) ([]string, refusal) {
	for i := range due {
		d := &due[i]
		switch {
		case d.Row.Kind == keyWrong:
			return nil, wrongType(d.rowKey(k))
		case d.Row.Kind == keyOK && d.Row.Lane:
			return nil, badRow(ErrLane, d.rowKey(k))
		}
		if d.Row.Kind == keyOK {
			if ref := checkIntoPending(lt, &d.Row, d.rowKey(k)); ref.Refused() {
				return nil, ref
			}
		}
	}
	var out []string
	for i := range due {
		d := &due[i]
		p.ZRem(k.Schedule, d.ID)
		if d.Row.Kind == keyAbsent {
			continue
		}
		hset(p, d.rowKey(k), fvStatePending)
		intoPending(p, k, lt, d.ID, &d.Row)
		out = append(out, d.ID)
	}
	return out, noRefusal
}

// judgePromote is EMQ.PROMOTE (docs/verbs.md §4.12): it returns the promoted
// ids (the reply is their number). Charges nothing.
func judgePromote(r *promoteRead, k *Keys) ([]string, *plan.Plan, refusal) {
	if r.Schedule == keyWrong {
		return nil, nil, wrongType(k.Schedule)
	}
	if len(r.Due) == 0 {
		return nil, nil, noRefusal
	}
	if r.LanesRef.Refused() {
		return nil, nil, r.LanesRef
	}
	p := &plan.Plan{Ops: make([]plan.Op, 0, 3*len(r.Due))}
	ids, ref := judgePromotions(k, r.Due, p, r.Lanes)
	if ref.Refused() {
		return nil, nil, ref
	}
	if len(ids) > 0 && r.Pending == keyWrong {
		return nil, nil, wrongType(k.Pending)
	}
	return ids, p, noRefusal
}

// ---------------------------------------------------------------------------
// EMQ.REPROCESS q id [RESET]

// ReprocessArgs are EMQ.REPROCESS's arguments (docs/verbs.md §4.13): the
// dead job and Reset (RESET: failures and stalled start again).
type ReprocessArgs struct {
	JobRef
	Reset bool
}

// Argv is the canonical command line: EMQ.REPROCESS q id [RESET].
func (a *ReprocessArgs) Argv() [][]byte {
	argv := argvOf("EMQ.REPROCESS", a.Queue, a.ID)
	if a.Reset {
		argv = append(argv, []byte("RESET"))
	}
	return argv
}

// EMQ.REPROCESS q id [RESET]
func (vs *Verbs) cmdReprocess(c *store.Ctx) {
	j, ok := vs.parseJobRef(c)
	if !ok {
		return
	}
	argv := c.Argv
	if len(argv) > 4 || (len(argv) == 4 && !eqFold(argv[3], "RESET")) {
		c.W.Error(store.ErrSyntax)
		return
	}
	if err := vs.Reprocess(c, &ReprocessArgs{JobRef: j, Reset: len(argv) == 4}); err != nil {
		replyRefusal(c, err)
		return
	}
	c.W.Int(1)
}

// Reprocess is EMQ.REPROCESS (docs/verbs.md §4.13): a dead job back to
// pending at its priority; a dead flow child reopens its parent's wait.
// The wire reply is 1. A *Refusal wrote nothing.
func (vs *Verbs) Reprocess(c *store.Ctx, a *ReprocessArgs) error {
	k, rowKey := vs.jobRefKeys(&a.JobRef)
	id := a.ID
	r := readReprocess(c.DB, k, id, rowKey, nil, c.NowMs)
	p, ref := judgeReprocess(&r, k, id, rowKey, a.Reset)
	if ref.Refused() {
		return vs.refused(c, ref)
	}
	if r.Row.Parent.Present {
		// A dead flow child (docs/verbs.md §4.25.3): reopen its parent's
		// wait, or refuse when the parent is dead.
		fe := newFlowEnds(vs, c, p, r.Lanes)
		if ref := fe.reopen(r.Row.Parent.Val, flowRef(k.Queue, id)); ref.Refused() {
			plan.Put(p)
			return vs.refused(c, ref)
		}
		planFlow(fe, p)
	}
	vs.flushApply(c, k, r.Lanes, p)
	vs.count(c, k, Reprocessed, 1)
	vs.event(c, k, EvReprocessed, id)
	vs.wake(c, k)
	return nil
}

// reprocessRead is what EMQ.REPROCESS's read pass saw.
type reprocessRead struct {
	Dead     keyKind
	InDead   bool
	Row      jobRow
	Pending  keyKind
	Lanes    *laneTx // nil in tables
	LanesRef refusal
}

// readReprocess is EMQ.REPROCESS's read pass for one id; EMQ.REPROCESS.ALL
// reads each job it brings back through it (docs/verbs.md §4.24).
func readReprocess(d *store.DB, k *Keys, id, rowKey string, lt *laneTx, now int64) reprocessRead {
	var r reprocessRead
	r.Dead, r.InDead, _ = member(d, k.Dead, id)
	r.Row = readRow(d, rowKey)
	_, r.Pending = zsetKind(d, k.Pending)
	if lt == nil {
		lt, r.LanesRef = readLanes(d, k, now)
	}
	r.Lanes = lt
	return r
}

// judgeReprocess is EMQ.REPROCESS, the dead-letter return (docs/verbs.md
// §4.13): ZREM dead, HDEL
// last_error (with RESET also failures and stalled), HSET state pending,
// ZADD pending <priority> (seam 1). attempts is never reset. Charges nothing.
func judgeReprocess(r *reprocessRead, k *Keys, id, rowKey string, reset bool) (*plan.Plan, refusal) {
	switch {
	case r.Dead == keyWrong:
		return nil, wrongType(k.Dead)
	case !r.InDead && r.Row.Kind == keyAbsent:
		// Neither a member of dead nor a row: no such job (docs/verbs.md
		// §4.13), as every verb that names a missing job answers.
		return nil, refuse(ErrGone)
	case !r.InDead:
		return nil, refuse(ErrNotDead)
	case r.Row.Kind == keyWrong:
		return nil, wrongType(rowKey)
	case r.Row.Kind == keyAbsent:
		return nil, refuse(ErrGone)
	case r.Row.Lane:
		return nil, badRow(ErrLane, rowKey)
	case r.Pending == keyWrong:
		return nil, wrongType(k.Pending)
	}
	if r.LanesRef.Refused() {
		return nil, r.LanesRef
	}
	if ref := checkIntoPending(r.Lanes, &r.Row, rowKey); ref.Refused() {
		return nil, ref
	}
	p := newPlan(4)
	p.ZRem(k.Dead, id)
	if reset {
		hdel(p, rowKey, fvReset)
	} else {
		hdel(p, rowKey, fvLastError)
	}
	hset(p, rowKey, fvStatePending)
	intoPending(p, k, r.Lanes, id, &r.Row)
	return p, noRefusal
}
