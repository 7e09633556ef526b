package verbs

import (
	"bytes"
	"strconv"

	"github.com/emqd/emqd/internal/plan"
	"github.com/emqd/emqd/internal/store"
)

// The six token verbs (EMQ.COMPLETE, EMQ.FAIL, EMQ.REQUEUE, EMQ.EXTEND,
// EMQ.DELAY, EMQ.PROGRESS) start with `q id token` and pass one common
// guard (tokenGuard) before their own judgement.

// tokenArgs are the `q id token` every token verb starts with.
type tokenArgs struct {
	K      *Keys
	ID     string
	RowKey string
	Token  []byte
}

// tokenRead is what the common guard reads: the row and the id's
// membership of active.
type tokenRead struct {
	Row      jobRow
	Active   keyKind
	InActive bool
	// Lanes is the queue's lane state (nil in tables), LanesRef its
	// refusal, judged after the guard by the verbs that use it.
	Lanes    *laneTx
	LanesRef refusal
}

// parseTokenArgs parses `q id token` (argv[1..3]).
func (vs *Verbs) parseTokenArgs(c *store.Ctx) (tokenArgs, bool) {
	k := vs.queueArg(c)
	if k == nil {
		return tokenArgs{}, false
	}
	rowKey, id := k.rowOf(c.Argv[2])
	return tokenArgs{K: k, ID: id, RowKey: rowKey, Token: c.Argv[3]}, true
}

// readToken is the common guard's read pass, the lane state read into lb
// (the caller's; readLanesInto).
func readToken(d *store.DB, a *tokenArgs, now int64, lb *laneTx) tokenRead {
	var r tokenRead
	r.Row = readRow(d, a.RowKey)
	r.Active, r.InActive, _ = member(d, a.K.Active, a.ID)
	r.Lanes, r.LanesRef = readLanesInto(lb, d, a.K, now)
	return r
}

// laneCheck judges the lane state an exit from active (seam 2) and, with
// toPending, a return to pending (seam 1) of r's job need.
func (r *tokenRead) laneCheck(rowKey string, toPending bool) refusal {
	if r.LanesRef.Refused() {
		return r.LanesRef
	}
	if ref := checkLeavesActive(r.Lanes, &r.Row); ref.Refused() {
		return ref
	}
	if toPending {
		return checkIntoPending(r.Lanes, &r.Row, rowKey)
	}
	return noRefusal
}

// tokenGuard is the common guard of the six token verbs, in the order of
// docs/verbs.md §4.4: WRONGTYPE, gone, token mismatch (bytes, docs/verbs.md §2.6),
// lane, dead, not in active. A lease past its deadline but not swept still
// passes: the guard looks at membership, not at the clock.
func tokenGuard(verb string, a *tokenArgs, r *tokenRead) refusal {
	switch {
	case r.Row.Kind == keyWrong:
		return wrongType(a.RowKey)
	case !r.Row.Attempts.Present:
		return refuse(ErrGone)
	case !bytes.Equal(r.Row.Attempts.Val, a.Token):
		return refuse(errStale(verb))
	case r.Row.Lane:
		return badRow(ErrLane, a.RowKey)
	case r.Row.State.Present && bytes.Equal(r.Row.State.Val, vDead):
		return refuse(ErrDead)
	case r.Row.State.Present && bytes.Equal(r.Row.State.Val, vCompleted):
		return refuse(ErrCompletedIs)
	case r.Active == keyWrong:
		return wrongType(a.K.Active)
	case !r.InActive:
		return refuse(ErrLeaseLost)
	}
	return noRefusal
}

// ---------------------------------------------------------------------------
// EMQ.COMPLETE q id token

// completeArgs are EMQ.COMPLETE's options after `q id token`.
type completeArgs struct {
	Result    []byte // the RESULT value (the verb's own copy); nil: none
	HasResult bool
}

// EMQ.COMPLETE q id token [RESULT value] [NEXT lease_ms [COUNT count]]
func (vs *Verbs) cmdComplete(c *store.Ctx) {
	a, ok := vs.parseTokenArgs(c)
	if !ok {
		return
	}
	var ca completeArgs
	var na claimArgs
	next, ok := vs.parseNext(c, a.K, 4, &na, &ca)
	if !ok {
		return
	}
	d := c.DB
	lb := vs.laneScratch()
	r := completeRead{tokenRead: readToken(d, &a, c.NowMs, lb), Completed: readCounter(d, a.K.Completed), Now: c.NowMs}
	r.Retain, r.RetainRef = readRetain(d, a.K)
	if r.RetainRef == noRefusal && r.Retain.Completed.on() {
		var z *store.ZSet
		z, r.Done = zsetKind(d, a.K.Done)
		r.Trim = selectTrim(d, a.K, z, r.Retain.Completed, c.NowMs, 1, false, retainTrimPerCall)
		if ca.HasResult {
			ca.Result = clone(ca.Result)
		}
	}
	p, ref := judgeComplete(&r, &a, &ca)
	if ref.Refused() {
		vs.refuseReply(c, ref)
		return
	}
	var fe *flowEnds
	if r.Row.Parent.Present {
		// A flow child: its end and its RESULT go to the parent's roster
		// (docs/verbs.md §4.25.2).
		var res []byte
		if ca.HasResult {
			res = clone(ca.Result)
		}
		vs.endRow(&fe, c, p, r.Lanes, &r.Row, a.K, a.ID, vCompleted, res)
		planFlow(fe, p)
	}
	var v claimVerdict
	var p2 *plan.Plan
	if next {
		ov := &rowOverlay{ID: a.ID, Row: jobRow{Kind: keyAbsent}, Released: fe.releasedIn(a.K)}
		if v, p2, ref = vs.judgeNext(c, &na, p, ov, r.Lanes); ref.Refused() {
			plan.Put(p)
			vs.refuseReply(c, ref)
			return
		}
	}
	vs.flushApply(c, a.K, r.Lanes, p)
	plan.Put(p2)
	vs.count(c, a.K, Completed, 1)
	vs.event(c, a.K, EvCompleted, a.ID)
	vs.trimmed(c, a.K, TrimmedCompleted, r.Trim)
	fe.after(c)
	if !next {
		c.W.Int(1)
		return
	}
	vs.claimed(c, &na, &v)
	writeClaimReply(c, &v)
}

// parseNext parses the options of EMQ.COMPLETE and EMQ.FAIL from argv[from]
// on (docs/verbs.md §4.5.1): `NEXT lease_ms` and `COUNT count`, in either
// order, each at most once, COUNT only with NEXT, and for EMQ.COMPLETE (ca
// not nil) `RESULT value` (docs/verbs.md §4.5) in any place among them. It
// fills na as EMQ.CLAIM q lease_ms COUNT count would be parsed and reports
// whether NEXT was given; on an error it has written the reply (ok false).
func (vs *Verbs) parseNext(c *store.Ctx, k *Keys, from int, na *claimArgs, ca *completeArgs) (next, ok bool) {
	argv := c.Argv
	*na = claimArgs{K: k, Count: 1}
	var haveCount bool
	for i := from; i < len(argv); i += 2 {
		if i+1 >= len(argv) {
			c.W.Error(store.ErrSyntax)
			return false, false
		}
		var e string
		switch {
		case eqFold(argv[i], "NEXT") && !next:
			next = true
			na.LeaseMs, e = intArg(argv[i+1], 1, errPosLease)
		case eqFold(argv[i], "COUNT") && !haveCount:
			haveCount = true
			na.Count, e = intArg(argv[i+1], 1, errPosCount)
		case ca != nil && eqFold(argv[i], "RESULT") && !ca.HasResult:
			if len(argv[i+1]) > MaxResult {
				e = ErrResultSize
			}
			ca.HasResult, ca.Result = true, argv[i+1]
		default:
			e = store.ErrSyntax
		}
		if e != "" {
			c.W.Error(e)
			return false, false
		}
	}
	if haveCount && !next {
		c.W.Error(store.ErrSyntax)
		return false, false
	}
	return next, true
}

// judgeNext is NEXT's claim (docs/verbs.md §4.5.1): EMQ.CLAIM's read pass
// and judgement as the store will stand once the finishing plan p (whose
// effect on its job ov describes) is applied. The claim's ops are appended
// to p, so the two are one plan and one AOF record; the returned plan is
// the claim's own, to give back once p was applied. A refusal of the claim
// refuses the whole call.
func (vs *Verbs) judgeNext(c *store.Ctx, na *claimArgs, p *plan.Plan, ov *rowOverlay, lt *laneTx) (claimVerdict, *plan.Plan, refusal) {
	na.Room = c.ReplyRoom()
	r := readClaimAfter(c.DB, na, c.NowMs, ov, lt, nil)
	v, p2, ref := judgeClaim(&r, c.NowMs, []byte(c.RunID), na)
	if ref.Refused() {
		return v, nil, ref
	}
	if p2 != nil {
		p.Ops = append(p.Ops, p2.Ops...)
	}
	return v, p2, noRefusal
}

// completeRead adds the completed-metrics hash and the retention (the
// settings, the completed set, the members to trim) to the guard's read.
type completeRead struct {
	tokenRead
	Completed counter
	Now       int64
	Retain    retainSettings
	RetainRef refusal // meta unreadable
	Done      keyKind
	Trim      []trimJob
}

// judgeComplete is EMQ.COMPLETE (docs/verbs.md §4.5): ZREM active, then
// without a COMPLETED setting DEL row (a RESULT goes with it), with one
// HSET row state completed finished_at now [result value] and ZADD
// completed now id, then HINCRBY metrics:completed count 1 and the trim.
func judgeComplete(r *completeRead, a *tokenArgs, ca *completeArgs) (*plan.Plan, refusal) {
	if ref := tokenGuard("complete", a, &r.tokenRead); ref.Refused() {
		return nil, ref
	}
	if ref := r.laneCheck(a.RowKey, false); ref.Refused() {
		return nil, ref
	}
	if ref := counterCheck(r.Completed, a.K.Completed, 1); ref.Refused() {
		return nil, ref
	}
	if r.RetainRef.Refused() {
		return nil, r.RetainRef
	}
	keep := r.Retain.Completed.on()
	if keep && r.Done == keyWrong {
		return nil, wrongType(a.K.Done)
	}
	p := newPlan(4 + 2*len(r.Trim))
	p.ZRem(a.K.Active, a.ID)
	leavesActive(p, r.Lanes, a.RowKey, &r.Row, !keep)
	if !keep {
		p.Del(a.RowKey)
		if r.Row.Children {
			delRoster(p, a.K, a.ID)
		}
	} else {
		now := msBytes(r.Now)
		if ca.HasResult {
			p.HSetBytes(a.RowKey, fState, vCompleted, fFinishedAt, now, fResult, ca.Result)
		} else {
			p.HSetBytes(a.RowKey, fState, vCompleted, fFinishedAt, now)
		}
		p.ZAdd(a.K.Done, r.Now, a.ID)
	}
	hincr1(p, a.K.Completed, fvCount)
	planTrim(p, a.K.Done, r.Trim)
	return p, noRefusal
}

// ---------------------------------------------------------------------------
// EMQ.FAIL q id token max_attempts delay_ms error

// EMQ.FAIL q id token max_attempts delay_ms error
func (vs *Verbs) cmdFail(c *store.Ctx) {
	a, ok := vs.parseTokenArgs(c)
	if !ok {
		return
	}
	var fa failArgs
	var e string
	if fa.MaxAttempts, e = intArg(c.Argv[4], 1, errPosMaxAttempts); e != "" {
		c.W.Error(e)
		return
	}
	if fa.DelayMs, e = intArg(c.Argv[5], 0, errNonNegDelay); e != "" {
		c.W.Error(e)
		return
	}
	d := c.DB
	lb := vs.laneScratch()
	r := failRead{tokenRead: readToken(d, &a, c.NowMs, lb)}
	_, r.Schedule = zsetKind(d, a.K.Schedule)
	_, r.Dead = zsetKind(d, a.K.Dead)
	r.Failed = readCounter(d, a.K.Failed)
	var na claimArgs
	next, ok := vs.parseNext(c, a.K, 7, &na, nil)
	if !ok {
		return
	}
	fa.Error = clone(storedError(c, c.Argv[6]))
	r.Retain, r.RetainRef = readRetain(d, a.K)
	if r.RetainRef == noRefusal && r.Retain.Dead.on() {
		z, _ := zsetKind(d, a.K.Dead)
		r.Trim = selectTrim(d, a.K, z, r.Retain.Dead, c.NowMs, 1, true, retainTrimPerCall)
	}
	v, p, ref := judgeFail(&r, c.NowMs, &a, &fa)
	if ref.Refused() {
		vs.refuseReply(c, ref)
		return
	}
	var fe *flowEnds
	if v.Dead && r.Row.Parent.Present {
		vs.endRow(&fe, c, p, r.Lanes, &r.Row, a.K, a.ID, vDead, fa.Error)
		planFlow(fe, p)
	}
	var nv claimVerdict
	var p2 *plan.Plan
	if next {
		// The failed job as the claim will see it: failures f, and with a
		// retry a member of schedule, due at once when delay_ms is 0.
		row := r.Row
		row.Payload.Val = clone(row.Payload.Val)
		row.Failures = rowField{Val: strconv.AppendInt(nil, v.F, 10), Present: true}
		ov := &rowOverlay{ID: a.ID, Row: row, Sched: !v.Dead, Due: !v.Dead && addMs(c.NowMs, fa.DelayMs) <= c.NowMs, Released: fe.releasedIn(a.K)}
		if nv, p2, ref = vs.judgeNext(c, &na, p, ov, r.Lanes); ref.Refused() {
			plan.Put(p)
			vs.refuseReply(c, ref)
			return
		}
	}
	vs.flushApply(c, a.K, r.Lanes, p)
	plan.Put(p2)
	vs.count(c, a.K, Failed, 1)
	if v.Dead {
		vs.count(c, a.K, FailedDead, 1)
		vs.event(c, a.K, EvDead, a.ID)
		vs.trimmed(c, a.K, TrimmedDead, r.Trim)
		fe.after(c)
	} else {
		vs.event(c, a.K, EvFailed, a.ID)
		vs.wake(c, a.K) // the retry's due time (see cmdEnqueue)
	}
	if next {
		vs.claimed(c, &na, &nv)
		c.W.Array(3)
	} else {
		c.W.Array(2)
	}
	if v.Dead {
		c.W.BulkString("dead")
	} else {
		c.W.BulkString("scheduled")
	}
	c.W.Int(v.F)
	if next {
		writeClaimReply(c, &nv)
	}
}

// failArgs are EMQ.FAIL's arguments after `q id token`.
type failArgs struct {
	MaxAttempts int64
	DelayMs     int64
	Error       []byte
}

// failRead adds the destinations to the guard's read.
type failRead struct {
	tokenRead
	Schedule  keyKind
	Dead      keyKind
	Failed    counter
	Retain    retainSettings // the DEAD setting (a death's score and trim)
	RetainRef refusal        // meta unreadable (judged on a death only)
	Trim      []trimJob      // dead members a death trims
}

// failVerdict is EMQ.FAIL's verdict (docs/verbs.md §4.6): retried (scheduled) or
// dead, with f, the failures count after this failure.
type failVerdict struct {
	Dead bool
	F    int64
}

// judgeFail is EMQ.FAIL (docs/verbs.md §4.6): the
// token is compared as bytes, then failures is read through HINCRBY's rule
// and f = failures+1 is capped by max_attempts. attempts is never written.
func judgeFail(r *failRead, now int64, a *tokenArgs, fa *failArgs) (failVerdict, *plan.Plan, refusal) {
	if ref := tokenGuard("fail", a, &r.tokenRead); ref.Refused() {
		return failVerdict{}, nil, ref
	}
	if ref := r.laneCheck(a.RowKey, false); ref.Refused() {
		return failVerdict{}, nil, ref
	}
	f, e := nextCount(r.Row.Failures, 1)
	if e != "" {
		return failVerdict{}, nil, badRow(e, a.RowKey)
	}
	fb := strconv.AppendInt(nil, f, 10)
	if f >= fa.MaxAttempts {
		if r.Dead == keyWrong {
			return failVerdict{}, nil, wrongType(a.K.Dead)
		}
		if ref := counterCheck(r.Failed, a.K.Failed, 1); ref.Refused() {
			return failVerdict{}, nil, ref
		}
		if r.RetainRef.Refused() {
			return failVerdict{}, nil, r.RetainRef
		}
		p := newPlan(4 + 2*len(r.Trim))
		p.ZRem(a.K.Active, a.ID)
		leavesActive(p, r.Lanes, a.RowKey, &r.Row, false)
		p.HSetBytes(a.RowKey, fLastError, fa.Error, fFailures, fb, fState, vDead, fFinishedAt, msBytes(now))
		p.ZAdd(a.K.Dead, deadScore(r.Retain, now), a.ID)
		hincr1(p, a.K.Failed, fvCount)
		planTrim(p, a.K.Dead, r.Trim)
		return failVerdict{Dead: true, F: f}, p, noRefusal
	}
	if r.Schedule == keyWrong {
		return failVerdict{}, nil, wrongType(a.K.Schedule)
	}
	p := newPlan(3)
	p.ZRem(a.K.Active, a.ID)
	leavesActive(p, r.Lanes, a.RowKey, &r.Row, false)
	p.HSetBytes(a.RowKey, fLastError, fa.Error, fFailures, fb, fState, vScheduled)
	p.ZAdd(a.K.Schedule, addMs(now, fa.DelayMs), a.ID)
	return failVerdict{F: f}, p, noRefusal
}

// ErrorCapAtLimit is how many bytes of its error EMQ.FAIL stores in
// last_error while used memory is above maxmemory: the verb runs at the
// limit so a full queue drains, and must not grow memory there by more
// than this bound per job (docs/verbs.md §2.14; cluster/emq.lua has the
// same rule).
const ErrorCapAtLimit = 256

// storedError is the error EMQ.FAIL stores: all of it, or its first
// ErrorCapAtLimit bytes when it is longer and memory is at the limit.
func storedError(c *store.Ctx, e []byte) []byte {
	if len(e) > ErrorCapAtLimit && c.AtMemoryLimit != nil && c.AtMemoryLimit() {
		return e[:ErrorCapAtLimit]
	}
	return e
}

// ---------------------------------------------------------------------------
// EMQ.REQUEUE q id token

// EMQ.REQUEUE q id token
func (vs *Verbs) cmdRequeue(c *store.Ctx) {
	a, ok := vs.parseTokenArgs(c)
	if !ok {
		return
	}
	lb := vs.laneScratch()
	r := requeueRead{tokenRead: readToken(c.DB, &a, c.NowMs, lb)}
	_, r.Pending = zsetKind(c.DB, a.K.Pending)
	p, ref := judgeRequeue(&r, &a)
	if ref.Refused() {
		vs.refuseReply(c, ref)
		return
	}
	vs.flushApply(c, a.K, r.Lanes, p)
	vs.count(c, a.K, Requeued, 1)
	vs.event(c, a.K, EvRequeued, a.ID)
	vs.wake(c, a.K)
	c.W.Int(1)
}

// requeueRead adds pending to the guard's read.
type requeueRead struct {
	tokenRead
	Pending keyKind
}

// judgeRequeue is EMQ.REQUEUE (docs/verbs.md §4.7): exactly three
// writes (ZREM active, HSET state pending, ZADD pending <priority>), no
// counter.
func judgeRequeue(r *requeueRead, a *tokenArgs) (*plan.Plan, refusal) {
	if ref := tokenGuard("requeue", a, &r.tokenRead); ref.Refused() {
		return nil, ref
	}
	if r.Pending == keyWrong {
		return nil, wrongType(a.K.Pending)
	}
	if ref := checkIntoPending(nil, &r.Row, a.RowKey); ref.Refused() {
		return nil, ref
	}
	if ref := r.laneCheck(a.RowKey, true); ref.Refused() {
		return nil, ref
	}
	p := newPlan(3)
	p.ZRem(a.K.Active, a.ID)
	leavesActive(p, r.Lanes, a.RowKey, &r.Row, false)
	hset(p, a.RowKey, fvStatePending)
	intoPending(p, a.K, r.Lanes, a.ID, &r.Row)
	return p, noRefusal
}

// ---------------------------------------------------------------------------
// EMQ.EXTEND q id token lease_ms

// EMQ.EXTEND q id token lease_ms
func (vs *Verbs) cmdExtend(c *store.Ctx) {
	a, ok := vs.parseTokenArgs(c)
	if !ok {
		return
	}
	lease, e := intArg(c.Argv[4], 1, errPosLease)
	if e != "" {
		c.W.Error(e)
		return
	}
	lb := vs.laneScratch()
	r := readToken(c.DB, &a, c.NowMs, lb)
	p, ref := judgeExtend(&r, c.NowMs, []byte(c.RunID), &a, lease)
	if ref.Refused() {
		vs.refuseReply(c, ref)
		return
	}
	apply(c, p)
	c.W.Int(1)
}

// judgeExtend is EMQ.EXTEND: ZADD active now+lease_ms, HSET lease_epoch
// run_id (the current run: a lease extended after a restart is the new
// run's).
func judgeExtend(r *tokenRead, now int64, runID []byte, a *tokenArgs, leaseMs int64) (*plan.Plan, refusal) {
	if ref := tokenGuard("extend", a, r); ref.Refused() {
		return nil, ref
	}
	p := newPlan(2)
	p.ZAdd(a.K.Active, addMs(now, leaseMs), a.ID)
	p.HSetBytes(a.RowKey, fLeaseEpoch, runID)
	return p, noRefusal
}

// ---------------------------------------------------------------------------
// EMQ.DELAY q id token (IN delay_ms | AT run_at_ms)

// EMQ.DELAY q id token (IN delay_ms | AT run_at_ms)
func (vs *Verbs) cmdDelay(c *store.Ctx) {
	a, ok := vs.parseTokenArgs(c)
	if !ok {
		return
	}
	var sched uint8
	var ms int64
	var e string
	switch {
	case eqFold(c.Argv[4], "IN"):
		sched = schedDelay
		ms, e = intArg(c.Argv[5], 0, errNonNegDelay)
	case eqFold(c.Argv[4], "AT"):
		sched = schedAt
		ms, e = intArg(c.Argv[5], 0, errNonNegRunAt)
	default:
		e = store.ErrSyntax
	}
	if e != "" {
		c.W.Error(e)
		return
	}
	lb := vs.laneScratch()
	r := delayRead{tokenRead: readToken(c.DB, &a, c.NowMs, lb)}
	_, r.Schedule = zsetKind(c.DB, a.K.Schedule)
	p, ref := judgeDelay(&r, c.NowMs, &a, sched, ms)
	if ref.Refused() {
		vs.refuseReply(c, ref)
		return
	}
	vs.flushApply(c, a.K, r.Lanes, p)
	vs.count(c, a.K, Delayed, 1)
	vs.event(c, a.K, EvDelayed, a.ID)
	vs.wake(c, a.K) // the new due time (see cmdEnqueue)
	c.W.Int(1)
}

// delayRead adds schedule to the guard's read.
type delayRead struct {
	tokenRead
	Schedule keyKind
}

// judgeDelay is EMQ.DELAY: ZREM active, HSET state scheduled, ZADD
// schedule at now+ms (schedDelay) or at ms (schedAt). No counter.
func judgeDelay(r *delayRead, now int64, a *tokenArgs, sched uint8, ms int64) (*plan.Plan, refusal) {
	if ref := tokenGuard("delay", a, &r.tokenRead); ref.Refused() {
		return nil, ref
	}
	if ref := r.laneCheck(a.RowKey, false); ref.Refused() {
		return nil, ref
	}
	if r.Schedule == keyWrong {
		return nil, wrongType(a.K.Schedule)
	}
	score := atMs(ms)
	if sched == schedDelay {
		score = addMs(now, ms)
	}
	p := newPlan(3)
	p.ZRem(a.K.Active, a.ID)
	leavesActive(p, r.Lanes, a.RowKey, &r.Row, false)
	hset(p, a.RowKey, fvStateScheduled)
	p.ZAdd(a.K.Schedule, score, a.ID)
	return p, noRefusal
}

// ---------------------------------------------------------------------------
// EMQ.PROGRESS q id token value

// EMQ.PROGRESS q id token value
func (vs *Verbs) cmdProgress(c *store.Ctx) {
	a, ok := vs.parseTokenArgs(c)
	if !ok {
		return
	}
	lb := vs.laneScratch()
	r := readToken(c.DB, &a, c.NowMs, lb)
	p, ref := judgeProgress(&r, &a, clone(c.Argv[4]))
	if ref.Refused() {
		vs.refuseReply(c, ref)
		return
	}
	apply(c, p)
	vs.event(c, a.K, EvProgress, a.ID)
	c.W.Int(1)
}

// judgeProgress is EMQ.PROGRESS: HSET progress value.
func judgeProgress(r *tokenRead, a *tokenArgs, value []byte) (*plan.Plan, refusal) {
	if ref := tokenGuard("progress", a, r); ref.Refused() {
		return nil, ref
	}
	p := newPlan(1)
	p.HSetBytes(a.RowKey, fProgress, value)
	return p, noRefusal
}
