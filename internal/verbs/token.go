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

// Lease names the claimed job a token verb acts on (docs/verbs.md §4.4):
// its queue (a valid name), its id and the token EMQ.CLAIM handed out
// (the attempts value, compared as bytes, docs/verbs.md §2.6). It starts
// the arguments of the six token verbs.
type Lease struct {
	Queue string
	ID    string
	Token []byte
	// row is the row key the wire adapter built with ID (one string for
	// both); tokenArgsOf uses it only while it is still ID's.
	row string
}

// parseLease parses `q id token` (argv[1..3]); on an error it has written
// the reply.
func (vs *Verbs) parseLease(c *store.Ctx) (Lease, bool) {
	k := vs.queueArg(c)
	if k == nil {
		return Lease{}, false
	}
	rowKey, id := k.rowIn(c.DB, c.Argv[2])
	return Lease{Queue: k.Queue, ID: id, Token: c.Argv[3], row: rowKey}, true
}

// tokenArgsOf is the guard's view of l.
func (vs *Verbs) tokenArgsOf(l *Lease) tokenArgs {
	k := vs.keysOf(l.Queue)
	rk := l.row
	if n := len(k.JobPrefix); len(rk) != n+len(l.ID) || rk[n:] != l.ID || rk[:n] != k.JobPrefix {
		rk = k.Row(l.ID)
	}
	return tokenArgs{K: k, ID: l.ID, RowKey: rk, Token: l.Token}
}

// leaseArgv is the command line name q id token, then rest.
func leaseArgv(name string, l *Lease, rest ...[]byte) [][]byte {
	argv := make([][]byte, 0, 4+len(rest))
	argv = append(argv, []byte(name), []byte(l.Queue), []byte(l.ID), l.Token)
	return append(argv, rest...)
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

// CompleteArgs are EMQ.COMPLETE's arguments (docs/verbs.md §4.5): the
// lease, RESULT (HasResult; Result at most MaxResult bytes, the method
// keeps its own copy) and NEXT (Next.LeaseMs 0: none), the claim that
// follows in the same plan (§4.5.1; Next.Queue is the lease's queue).
type CompleteArgs struct {
	Lease
	Result    []byte
	HasResult bool
	Next      ClaimArgs
	// wire: the wire adapter's call, which writes NEXT's jobs out before
	// any other claim (they may be Verbs' scratch, jobScratch).
	wire bool
}

// Argv is the canonical command line: EMQ.COMPLETE q id token [RESULT
// value] [NEXT lease_ms [COUNT count]].
func (a *CompleteArgs) Argv() [][]byte {
	argv := leaseArgv("EMQ.COMPLETE", &a.Lease)
	if a.HasResult {
		argv = append(argv, []byte("RESULT"), a.Result)
	}
	return a.Next.nextArgv(argv)
}

// CompleteResult is NEXT's claim (empty without NEXT; the wire reply is
// then 1).
type CompleteResult struct{ Next ClaimResult }

// EMQ.COMPLETE q id token [RESULT value] [NEXT lease_ms [COUNT count]]
func (vs *Verbs) cmdComplete(c *store.Ctx) {
	l, ok := vs.parseLease(c)
	if !ok {
		return
	}
	a := CompleteArgs{Lease: l, wire: true}
	var ca completeArgs
	var na ClaimArgs
	next, ok := vs.parseNext(c, l.Queue, 4, &na, &ca)
	if !ok {
		return
	}
	a.Result, a.HasResult = ca.Result, ca.HasResult
	if next {
		a.Next = na
	}
	res, err := vs.Complete(c, &a)
	if err != nil {
		replyRefusal(c, err)
		return
	}
	if !next {
		c.W.Int(1)
		return
	}
	writeClaimJobs(c, res.Next.Jobs)
	vs.jobsDone(res.Next.Jobs)
}

// Complete is EMQ.COMPLETE (docs/verbs.md §4.5): the token guard, then the
// job leaves active, deleted or kept in the completed set (EMQ.RETAIN), a
// flow child's end goes to its parent, and with Next a claim follows in
// the same plan. A *Refusal (of the completion or of NEXT's claim) wrote
// nothing.
func (vs *Verbs) Complete(c *store.Ctx, ta *CompleteArgs) (CompleteResult, error) {
	a := vs.tokenArgsOf(&ta.Lease)
	ca := completeArgs{Result: ta.Result, HasResult: ta.HasResult}
	next := ta.Next.LeaseMs > 0
	var na claimArgs
	if next {
		na = vs.claimArgsOf(&ta.Next)
		if ta.wire {
			na.Jobs = vs.jobScratch()
		}
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
		return CompleteResult{}, vs.refused(c, ref)
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
		ov := &vs.nextOv // judgeNext keeps no reference to it
		*ov = rowOverlay{ID: a.ID, Row: jobRow{Kind: keyAbsent}, Released: fe.releasedIn(a.K)}
		if v, p2, ref = vs.judgeNext(c, &na, p, ov, r.Lanes); ref.Refused() {
			plan.Put(p)
			return CompleteResult{}, vs.refused(c, ref)
		}
	}
	vs.flushApply(c, a.K, r.Lanes, p)
	plan.Put(p2)
	vs.count(c, a.K, Completed, 1)
	vs.event(c, a.K, EvCompleted, a.ID)
	vs.trimmed(c, a.K, TrimmedCompleted, r.Trim)
	fe.after(c)
	if !next {
		return CompleteResult{}, nil
	}
	vs.claimed(c, &na, &v)
	return CompleteResult{Next: ClaimResult{Jobs: v.Jobs}}, nil
}

// parseNext parses the options of EMQ.COMPLETE and EMQ.FAIL from argv[from]
// on (docs/verbs.md §4.5.1): `NEXT lease_ms` and `COUNT count`, in either
// order, each at most once, COUNT only with NEXT, and for EMQ.COMPLETE (ca
// not nil) `RESULT value` (docs/verbs.md §4.5) in any place among them. It
// fills na as EMQ.CLAIM q lease_ms COUNT count would be parsed and reports
// whether NEXT was given; on an error it has written the reply (ok false).
func (vs *Verbs) parseNext(c *store.Ctx, q string, from int, na *ClaimArgs, ca *completeArgs) (next, ok bool) {
	argv := c.Argv
	*na = ClaimArgs{Queue: q, Count: 1}
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
	na.NowB = vs.msNow(c.NowMs)
	na.Cands = vs.candScratch()
	r := readClaimAfter(c.DB, na, c.NowMs, ov, lt, nil)
	if r.Lanes == nil || !r.Lanes.on {
		na.ActiveFV = vs.activeFields(c.NowMs, c.RunID) // the lane path writes lane_slot too
	}
	v, p2, ref := judgeClaim(&r, c.NowMs, vs.runIDBytes(c.RunID), na)
	vs.candsDone(r.Cands)
	na.Cands = nil
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

// FailArgs are EMQ.FAIL's arguments (docs/verbs.md §4.6): the lease,
// MaxAttempts (>= 1: the failures count that dead-letters), DelayMs (>= 0:
// the retry's delay), Error (the job's last_error; the method keeps its own
// copy, at most ErrorCapAtLimit bytes of it while memory is at the limit)
// and NEXT (Next.LeaseMs 0: none, §4.5.1).
type FailArgs struct {
	Lease
	MaxAttempts int64
	DelayMs     int64
	Error       []byte
	Next        ClaimArgs
	// wire: as CompleteArgs'.
	wire bool
}

// Argv is the canonical command line: EMQ.FAIL q id token max_attempts
// delay_ms error [NEXT lease_ms [COUNT count]].
func (a *FailArgs) Argv() [][]byte {
	argv := leaseArgv("EMQ.FAIL", &a.Lease, []byte(itoa(a.MaxAttempts)), []byte(itoa(a.DelayMs)), a.Error)
	return a.Next.nextArgv(argv)
}

// FailResult is EMQ.FAIL's verdict: Dead (dead-lettered) or retried
// (scheduled), Failures the failures count after this failure, and NEXT's
// claim.
type FailResult struct {
	Dead     bool
	Failures int64
	Next     ClaimResult
}

// EMQ.FAIL q id token max_attempts delay_ms error [NEXT lease_ms [COUNT count]]
func (vs *Verbs) cmdFail(c *store.Ctx) {
	l, ok := vs.parseLease(c)
	if !ok {
		return
	}
	a := FailArgs{Lease: l, wire: true}
	var e string
	if a.MaxAttempts, e = intArg(c.Argv[4], 1, errPosMaxAttempts); e != "" {
		c.W.Error(e)
		return
	}
	if a.DelayMs, e = intArg(c.Argv[5], 0, errNonNegDelay); e != "" {
		c.W.Error(e)
		return
	}
	var na ClaimArgs
	next, ok := vs.parseNext(c, l.Queue, 7, &na, nil)
	if !ok {
		return
	}
	if next {
		a.Next = na
	}
	a.Error = c.Argv[6]
	res, err := vs.Fail(c, &a)
	if err != nil {
		replyRefusal(c, err)
		return
	}
	if next {
		c.W.Array(3)
	} else {
		c.W.Array(2)
	}
	if res.Dead {
		c.W.BulkString("dead")
	} else {
		c.W.BulkString("scheduled")
	}
	c.W.Int(res.Failures)
	if next {
		writeClaimJobs(c, res.Next.Jobs)
		vs.jobsDone(res.Next.Jobs)
	}
}

// Fail is EMQ.FAIL (docs/verbs.md §4.6): the token guard, then the job is
// retried (scheduled at now+DelayMs) or, once its failures reach
// MaxAttempts, dead-lettered; with Next a claim follows in the same plan.
// A *Refusal wrote nothing.
func (vs *Verbs) Fail(c *store.Ctx, ta *FailArgs) (FailResult, error) {
	a := vs.tokenArgsOf(&ta.Lease)
	fa := failArgs{MaxAttempts: ta.MaxAttempts, DelayMs: ta.DelayMs}
	next := ta.Next.LeaseMs > 0
	var na claimArgs
	if next {
		na = vs.claimArgsOf(&ta.Next)
		if ta.wire {
			na.Jobs = vs.jobScratch()
		}
	}
	d := c.DB
	lb := vs.laneScratch()
	r := failRead{tokenRead: readToken(d, &a, c.NowMs, lb)}
	_, r.Schedule = zsetKind(d, a.K.Schedule)
	_, r.Dead = zsetKind(d, a.K.Dead)
	r.Failed = readCounter(d, a.K.Failed)
	fa.Error = clone(storedError(c, ta.Error))
	r.Retain, r.RetainRef = readRetain(d, a.K)
	if r.RetainRef == noRefusal && r.Retain.Dead.on() {
		z, _ := zsetKind(d, a.K.Dead)
		r.Trim = selectTrim(d, a.K, z, r.Retain.Dead, c.NowMs, 1, true, retainTrimPerCall)
	}
	v, p, ref := judgeFail(&r, c.NowMs, &a, &fa)
	if ref.Refused() {
		return FailResult{}, vs.refused(c, ref)
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
		ov := &vs.nextOv // judgeNext keeps no reference to it
		*ov = rowOverlay{ID: a.ID, Row: row, Sched: !v.Dead, Due: !v.Dead && addMs(c.NowMs, fa.DelayMs) <= c.NowMs, Released: fe.releasedIn(a.K)}
		if nv, p2, ref = vs.judgeNext(c, &na, p, ov, r.Lanes); ref.Refused() {
			plan.Put(p)
			return FailResult{}, vs.refused(c, ref)
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
	if !next {
		return FailResult{Dead: v.Dead, Failures: v.F}, nil
	}
	vs.claimed(c, &na, &nv)
	return FailResult{Dead: v.Dead, Failures: v.F, Next: ClaimResult{Jobs: nv.Jobs}}, nil
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
	l, ok := vs.parseLease(c)
	if !ok {
		return
	}
	if err := vs.Requeue(c, &l); err != nil {
		replyRefusal(c, err)
		return
	}
	c.W.Int(1)
}

// RequeueArgv is EMQ.REQUEUE's canonical command line: EMQ.REQUEUE q id
// token.
func RequeueArgv(l *Lease) [][]byte { return leaseArgv("EMQ.REQUEUE", l) }

// Requeue is EMQ.REQUEUE (docs/verbs.md §4.7): the token guard, then the
// job goes back to pending at its priority, attempts unchanged. The wire
// reply is 1. A *Refusal wrote nothing.
func (vs *Verbs) Requeue(c *store.Ctx, l *Lease) error {
	a := vs.tokenArgsOf(l)
	lb := vs.laneScratch()
	r := requeueRead{tokenRead: readToken(c.DB, &a, c.NowMs, lb)}
	_, r.Pending = zsetKind(c.DB, a.K.Pending)
	p, ref := judgeRequeue(&r, &a)
	if ref.Refused() {
		return vs.refused(c, ref)
	}
	vs.flushApply(c, a.K, r.Lanes, p)
	vs.count(c, a.K, Requeued, 1)
	vs.event(c, a.K, EvRequeued, a.ID)
	vs.wake(c, a.K)
	return nil
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

// ExtendArgs are EMQ.EXTEND's arguments (docs/verbs.md §4.8): the lease
// and LeaseMs (>= 1), the new lease from now.
type ExtendArgs struct {
	Lease
	LeaseMs int64
}

// Argv is the canonical command line: EMQ.EXTEND q id token lease_ms.
func (a *ExtendArgs) Argv() [][]byte {
	return leaseArgv("EMQ.EXTEND", &a.Lease, []byte(itoa(a.LeaseMs)))
}

// EMQ.EXTEND q id token lease_ms
func (vs *Verbs) cmdExtend(c *store.Ctx) {
	l, ok := vs.parseLease(c)
	if !ok {
		return
	}
	lease, e := intArg(c.Argv[4], 1, errPosLease)
	if e != "" {
		c.W.Error(e)
		return
	}
	if err := vs.Extend(c, &ExtendArgs{Lease: l, LeaseMs: lease}); err != nil {
		replyRefusal(c, err)
		return
	}
	c.W.Int(1)
}

// Extend is EMQ.EXTEND (docs/verbs.md §4.8): the token guard, then the
// lease ends at now+LeaseMs and belongs to this run. The wire reply is 1.
// A *Refusal wrote nothing.
func (vs *Verbs) Extend(c *store.Ctx, ea *ExtendArgs) error {
	a := vs.tokenArgsOf(&ea.Lease)
	lb := vs.laneScratch()
	r := readToken(c.DB, &a, c.NowMs, lb)
	p, ref := judgeExtend(&r, c.NowMs, []byte(c.RunID), &a, ea.LeaseMs)
	if ref.Refused() {
		return vs.refused(c, ref)
	}
	apply(c, p)
	return nil
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

// DelayArgs are EMQ.DELAY's arguments (docs/verbs.md §4.9): the lease and
// the new due time, At (a Unix ms time, AT run_at_ms) or else now+Ms (IN
// delay_ms); Ms >= 0.
type DelayArgs struct {
	Lease
	At bool
	Ms int64
}

// Argv is the canonical command line: EMQ.DELAY q id token (IN delay_ms |
// AT run_at_ms).
func (a *DelayArgs) Argv() [][]byte {
	word := "IN"
	if a.At {
		word = "AT"
	}
	return leaseArgv("EMQ.DELAY", &a.Lease, []byte(word), []byte(itoa(a.Ms)))
}

// EMQ.DELAY q id token (IN delay_ms | AT run_at_ms)
func (vs *Verbs) cmdDelay(c *store.Ctx) {
	l, ok := vs.parseLease(c)
	if !ok {
		return
	}
	a := DelayArgs{Lease: l}
	var e string
	switch {
	case eqFold(c.Argv[4], "IN"):
		a.Ms, e = intArg(c.Argv[5], 0, errNonNegDelay)
	case eqFold(c.Argv[4], "AT"):
		a.At = true
		a.Ms, e = intArg(c.Argv[5], 0, errNonNegRunAt)
	default:
		e = store.ErrSyntax
	}
	if e != "" {
		c.W.Error(e)
		return
	}
	if err := vs.Delay(c, &a); err != nil {
		replyRefusal(c, err)
		return
	}
	c.W.Int(1)
}

// Delay is EMQ.DELAY (docs/verbs.md §4.9): the token guard, then the job
// leaves active for the schedule at its new due time. The wire reply is 1.
// A *Refusal wrote nothing.
func (vs *Verbs) Delay(c *store.Ctx, da *DelayArgs) error {
	a := vs.tokenArgsOf(&da.Lease)
	sched := schedDelay
	if da.At {
		sched = schedAt
	}
	lb := vs.laneScratch()
	r := delayRead{tokenRead: readToken(c.DB, &a, c.NowMs, lb)}
	_, r.Schedule = zsetKind(c.DB, a.K.Schedule)
	p, ref := judgeDelay(&r, c.NowMs, &a, sched, da.Ms)
	if ref.Refused() {
		return vs.refused(c, ref)
	}
	vs.flushApply(c, a.K, r.Lanes, p)
	vs.count(c, a.K, Delayed, 1)
	vs.event(c, a.K, EvDelayed, a.ID)
	vs.wake(c, a.K) // the new due time (see Enqueue)
	return nil
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

// ProgressArgs are EMQ.PROGRESS's arguments (docs/verbs.md §4.10): the
// lease and Value, the progress to store (the method keeps its own copy).
type ProgressArgs struct {
	Lease
	Value []byte
}

// Argv is the canonical command line: EMQ.PROGRESS q id token value.
func (a *ProgressArgs) Argv() [][]byte { return leaseArgv("EMQ.PROGRESS", &a.Lease, a.Value) }

// EMQ.PROGRESS q id token value
func (vs *Verbs) cmdProgress(c *store.Ctx) {
	l, ok := vs.parseLease(c)
	if !ok {
		return
	}
	if err := vs.Progress(c, &ProgressArgs{Lease: l, Value: c.Argv[4]}); err != nil {
		replyRefusal(c, err)
		return
	}
	c.W.Int(1)
}

// Progress is EMQ.PROGRESS (docs/verbs.md §4.10): the token guard, then
// the row's progress field is Value. The wire reply is 1. A *Refusal wrote
// nothing.
func (vs *Verbs) Progress(c *store.Ctx, pa *ProgressArgs) error {
	a := vs.tokenArgsOf(&pa.Lease)
	lb := vs.laneScratch()
	r := readToken(c.DB, &a, c.NowMs, lb)
	p, ref := judgeProgress(&r, &a, clone(pa.Value))
	if ref.Refused() {
		return vs.refused(c, ref)
	}
	apply(c, p)
	vs.event(c, a.K, EvProgress, a.ID)
	return nil
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
