package verbs

import (
	"bytes"
	"sort"
	"strconv"

	"github.com/emqd/emqd/num"
	"github.com/emqd/emqd/plan"
	"github.com/emqd/emqd/store"
)

// This file holds the pure judgements (architecture.md "Keep the judgement
// pure"): each takes what its verb's read pass saw, `now`, the run_id and the
// parsed arguments, and returns a verdict and the write plan, or a Refusal.
// A refusal comes with no plan: nothing is written (verbs.md rule 2).

// Refusal is a judgement's "no": Text is the full error reply. Bad marks a
// refusal caused by stored data (a wrong type, a lane row, a counter HINCRBY
// would refuse: verbs.md rule 11), Key the key holding that data.
type Refusal struct {
	Text string
	Key  string
	Bad  bool
}

// Refused reports whether r is a refusal.
func (r Refusal) Refused() bool { return r.Text != "" }

var noRefusal Refusal

func refuse(text string) Refusal      { return Refusal{Text: text} }
func badRow(text, key string) Refusal { return Refusal{Text: text, Key: key, Bad: true} }
func wrongType(key string) Refusal    { return badRow(store.ErrWrongType, key) }
func kindCheck(k KeyKind, key string) Refusal {
	if k == Wrong {
		return wrongType(key)
	}
	return noRefusal
}

// ---------------------------------------------------------------------------
// EMQ.ENQUEUE

// Schedule modes of EMQ.ENQUEUE and EMQ.DELAY.
const (
	SchedNone  uint8 = iota // pending now
	SchedDelay              // DELAY / IN delay_ms: at now+ms
	SchedAt                 // AT run_at_ms
)

// EnqueueArgs are EMQ.ENQUEUE's parsed arguments.
type EnqueueArgs struct {
	K       *Keys
	ID      string // the client's id; "" when Mint
	Mint    bool   // id was `*`
	Payload []byte
	Sched   uint8
	Ms      int64
}

// MintRead is the {emq}:mint hash as read.
type MintRead struct {
	Kind KeyKind
	Last Field
}

// judgeMint gives the number of the next minted id: max(now, last+1)
// (verbs.md section 2). The read pass then skips numbers whose row exists.
func judgeMint(m MintRead, now int64) (int64, Refusal) {
	if m.Kind == Wrong {
		return 0, wrongType(MintKey)
	}
	var last int64
	has := m.Kind == OK && m.Last.Present
	if has {
		n, ok := DecodeID(m.Last.Val)
		if !ok {
			return 0, badRow(ErrMintNotID, MintKey)
		}
		last = n
	}
	n, ok := mintNumber(now, last, has)
	if !ok {
		return 0, badRow(ErrMintExhausted, MintKey)
	}
	return n, noRefusal
}

// EnqueueRead is what EMQ.ENQUEUE's read pass saw: the row of the id to
// admit (ID: the client's or the minted one) and the destination set.
type EnqueueRead struct {
	ID     string
	RowKey string  // ID's row key ("" in tables: built from ID)
	Row    KeyKind // OK: a row exists (a duplicate)
	Dest   KeyKind // pending, or schedule with DELAY/AT
}

// EnqueueVerdict: Dup is a duplicate (reply nil, nothing written); else ID
// was admitted, Pending tells whether it went to pending (wake a claimer).
type EnqueueVerdict struct {
	ID      string
	Dup     bool
	Pending bool
}

// JudgeEnqueue is EMQ.ENQUEUE's judgement (verbs.md section 4).
func JudgeEnqueue(r *EnqueueRead, now int64, a *EnqueueArgs) (EnqueueVerdict, *plan.Plan, Refusal) {
	k := a.K
	rowKey := r.RowKey
	if rowKey == "" {
		rowKey = k.Row(r.ID)
	}
	if r.Row == Wrong {
		return EnqueueVerdict{}, nil, wrongType(rowKey)
	}
	if r.Row == OK {
		return EnqueueVerdict{ID: r.ID, Dup: true}, nil, noRefusal
	}
	dest, state, score := k.Pending, vPending, int64(0)
	switch a.Sched {
	case SchedDelay:
		dest, state, score = k.Schedule, vScheduled, addMs(now, a.Ms)
	case SchedAt:
		dest, state, score = k.Schedule, vScheduled, atMs(a.Ms)
	}
	if r.Dest == Wrong {
		return EnqueueVerdict{}, nil, wrongType(dest)
	}
	p := newPlan(3)
	p.HSetBytes(rowKey, fState, state, fAttempts, vZero, fPayload, a.Payload)
	p.ZAdd(dest, score, r.ID)
	if a.Mint {
		p.HSetBytes(MintKey, fLast, []byte(r.ID))
	}
	return EnqueueVerdict{ID: r.ID, Pending: a.Sched == SchedNone}, p, noRefusal
}

// ---------------------------------------------------------------------------
// The six token verbs

// TokenArgs are the `q id token` every token verb starts with.
type TokenArgs struct {
	K      *Keys
	ID     string
	RowKey string
	Token  []byte
}

// TokenRead is what the common guard reads: the row and the id's
// membership of active.
type TokenRead struct {
	Row      Row
	Active   KeyKind
	InActive bool
}

// tokenGuard is the common guard of the six token verbs, in the order of
// verbs.md section 4: WRONGTYPE, gone, token mismatch (bytes, rule 6),
// lane, dead, not in active. A lease past its deadline but not swept still
// passes: the guard looks at membership, not at the clock.
func tokenGuard(verb string, a *TokenArgs, r *TokenRead) Refusal {
	switch {
	case r.Row.Kind == Wrong:
		return wrongType(a.RowKey)
	case !r.Row.Attempts.Present:
		return refuse(ErrGone)
	case !bytes.Equal(r.Row.Attempts.Val, a.Token):
		return refuse(errStale(verb))
	case r.Row.Lane:
		return badRow(ErrLane, a.RowKey)
	case r.Row.State.Present && bytes.Equal(r.Row.State.Val, vDead):
		return refuse(ErrDead)
	case r.Active == Wrong:
		return wrongType(a.K.Active)
	case !r.InActive:
		return refuse(ErrLeaseLost)
	}
	return noRefusal
}

// counterCheck judges a metrics hash that will get n HINCRBY count 1.
func counterCheck(c Counter, key string, n int64) Refusal {
	if c.Kind == Wrong {
		return wrongType(key)
	}
	if _, e := nextCount(c.Count, n); e != "" {
		return badRow(e, key)
	}
	return noRefusal
}

// CompleteRead adds the completed-metrics hash to the guard's read.
type CompleteRead struct {
	TokenRead
	Completed Counter
}

// JudgeComplete is EMQ.COMPLETE: ZREM active, DEL row, HINCRBY
// metrics:completed count 1.
func JudgeComplete(r *CompleteRead, a *TokenArgs) (*plan.Plan, Refusal) {
	if ref := tokenGuard("complete", a, &r.TokenRead); ref.Refused() {
		return nil, ref
	}
	if ref := counterCheck(r.Completed, a.K.Completed, 1); ref.Refused() {
		return nil, ref
	}
	p := newPlan(3)
	p.ZRem(a.K.Active, a.ID)
	p.Del(a.RowKey)
	hincr1(p, a.K.Completed, fvCount)
	return p, noRefusal
}

// FailArgs are EMQ.FAIL's arguments after `q id token`.
type FailArgs struct {
	MaxAttempts int64
	DelayMs     int64
	Error       []byte
}

// FailRead adds the destinations to the guard's read.
type FailRead struct {
	TokenRead
	Schedule KeyKind
	Dead     KeyKind
	Failed   Counter
}

// FailVerdict is the seed's decide_fail outcome: retried (scheduled) or
// dead, with f, the failures count after this failure.
type FailVerdict struct {
	Dead bool
	F    int64
}

// JudgeFail is the seed's decide_fail (verbs.md section 4, EMQ.FAIL): the
// token is compared as bytes, then failures is read through HINCRBY's rule
// and f = failures+1 is capped by max_attempts. attempts is never written.
func JudgeFail(r *FailRead, now int64, a *TokenArgs, fa *FailArgs) (FailVerdict, *plan.Plan, Refusal) {
	if ref := tokenGuard("fail", a, &r.TokenRead); ref.Refused() {
		return FailVerdict{}, nil, ref
	}
	f, e := nextCount(r.Row.Failures, 1)
	if e != "" {
		return FailVerdict{}, nil, badRow(e, a.RowKey)
	}
	fb := strconv.AppendInt(nil, f, 10)
	if f >= fa.MaxAttempts {
		if r.Dead == Wrong {
			return FailVerdict{}, nil, wrongType(a.K.Dead)
		}
		if ref := counterCheck(r.Failed, a.K.Failed, 1); ref.Refused() {
			return FailVerdict{}, nil, ref
		}
		p := newPlan(4)
		p.ZRem(a.K.Active, a.ID)
		p.HSetBytes(a.RowKey, fLastError, fa.Error, fFailures, fb, fState, vDead)
		p.ZAdd(a.K.Dead, 0, a.ID)
		hincr1(p, a.K.Failed, fvCount)
		return FailVerdict{Dead: true, F: f}, p, noRefusal
	}
	if r.Schedule == Wrong {
		return FailVerdict{}, nil, wrongType(a.K.Schedule)
	}
	p := newPlan(3)
	p.ZRem(a.K.Active, a.ID)
	p.HSetBytes(a.RowKey, fLastError, fa.Error, fFailures, fb, fState, vScheduled)
	p.ZAdd(a.K.Schedule, addMs(now, fa.DelayMs), a.ID)
	return FailVerdict{F: f}, p, noRefusal
}

// RequeueRead adds pending to the guard's read.
type RequeueRead struct {
	TokenRead
	Pending KeyKind
}

// JudgeRequeue is EMQ.REQUEUE, the seed's requeue_plan: exactly three
// writes (ZREM active, HSET state pending, ZADD pending 0), no counter.
func JudgeRequeue(r *RequeueRead, a *TokenArgs) (*plan.Plan, Refusal) {
	if ref := tokenGuard("requeue", a, &r.TokenRead); ref.Refused() {
		return nil, ref
	}
	if r.Pending == Wrong {
		return nil, wrongType(a.K.Pending)
	}
	p := newPlan(3)
	p.ZRem(a.K.Active, a.ID)
	hset(p, a.RowKey, fvStatePending)
	p.ZAdd(a.K.Pending, 0, a.ID)
	return p, noRefusal
}

// JudgeExtend is EMQ.EXTEND: ZADD active now+lease_ms, HSET lease_epoch
// run_id (the current run: a lease extended after a restart is the new
// run's).
func JudgeExtend(r *TokenRead, now int64, runID []byte, a *TokenArgs, leaseMs int64) (*plan.Plan, Refusal) {
	if ref := tokenGuard("extend", a, r); ref.Refused() {
		return nil, ref
	}
	p := newPlan(2)
	p.ZAdd(a.K.Active, addMs(now, leaseMs), a.ID)
	p.HSetBytes(a.RowKey, fLeaseEpoch, runID)
	return p, noRefusal
}

// DelayRead adds schedule to the guard's read.
type DelayRead struct {
	TokenRead
	Schedule KeyKind
}

// JudgeDelay is EMQ.DELAY: ZREM active, HSET state scheduled, ZADD
// schedule at now+ms (SchedDelay) or at ms (SchedAt). No counter.
func JudgeDelay(r *DelayRead, now int64, a *TokenArgs, sched uint8, ms int64) (*plan.Plan, Refusal) {
	if ref := tokenGuard("delay", a, &r.TokenRead); ref.Refused() {
		return nil, ref
	}
	if r.Schedule == Wrong {
		return nil, wrongType(a.K.Schedule)
	}
	score := atMs(ms)
	if sched == SchedDelay {
		score = addMs(now, ms)
	}
	p := newPlan(3)
	p.ZRem(a.K.Active, a.ID)
	hset(p, a.RowKey, fvStateScheduled)
	p.ZAdd(a.K.Schedule, score, a.ID)
	return p, noRefusal
}

// JudgeProgress is EMQ.PROGRESS: HSET progress value.
func JudgeProgress(r *TokenRead, a *TokenArgs, value []byte) (*plan.Plan, Refusal) {
	if ref := tokenGuard("progress", a, r); ref.Refused() {
		return nil, ref
	}
	p := newPlan(1)
	p.HSetBytes(a.RowKey, fProgress, value)
	return p, noRefusal
}

// ---------------------------------------------------------------------------
// EMQ.PROMOTE (and the promotion EMQ.CLAIM runs first)

// PromoteRead is what EMQ.PROMOTE's read pass saw: the due members of
// schedule (score <= now, at most limit) with their rows, and pending.
type PromoteRead struct {
	Schedule KeyKind
	Due      []Due
	Pending  KeyKind
}

// judgePromotions judges due scheduled members and appends their writes to
// p: a ghost is dropped from schedule (not counted); a non-hash row or a
// lane row refuses the whole call; a job moves to pending at score 0. It
// returns the promoted ids in selection order.
func judgePromotions(k *Keys, due []Due, p *plan.Plan) ([]string, Refusal) {
	for i := range due {
		d := &due[i]
		switch {
		case d.Row.Kind == Wrong:
			return nil, wrongType(d.rowKey(k))
		case d.Row.Kind == OK && d.Row.Lane:
			return nil, badRow(ErrLane, d.rowKey(k))
		}
	}
	var out []string
	for i := range due {
		d := &due[i]
		p.ZRem(k.Schedule, d.ID)
		if d.Row.Kind == Absent {
			continue
		}
		hset(p, d.rowKey(k), fvStatePending)
		p.ZAdd(k.Pending, 0, d.ID)
		out = append(out, d.ID)
	}
	return out, noRefusal
}

// JudgePromote is EMQ.PROMOTE (verbs.md section 4): it returns the promoted
// ids (the reply is their number). Charges nothing.
func JudgePromote(r *PromoteRead, k *Keys) ([]string, *plan.Plan, Refusal) {
	if r.Schedule == Wrong {
		return nil, nil, wrongType(k.Schedule)
	}
	if len(r.Due) == 0 {
		return nil, nil, noRefusal
	}
	p := &plan.Plan{Ops: make([]plan.Op, 0, 3*len(r.Due))}
	ids, ref := judgePromotions(k, r.Due, p)
	if ref.Refused() {
		return nil, nil, ref
	}
	if len(ids) > 0 && r.Pending == Wrong {
		return nil, nil, wrongType(k.Pending)
	}
	return ids, p, noRefusal
}

// ---------------------------------------------------------------------------
// EMQ.CLAIM

// ClaimArgs are EMQ.CLAIM's parsed arguments.
type ClaimArgs struct {
	K       *Keys
	LeaseMs int64
	Count   int64
	Block   bool
	BlockMs int64
}

// ClaimRead is what EMQ.CLAIM's read pass saw: meta (paused), the due
// members of schedule (at most 100), the members of pending in order with
// their rows (enough of them: see readClaim), and active's type.
type ClaimRead struct {
	Meta     KeyKind
	Paused   bool
	Schedule KeyKind
	Due      []Due
	Pending  KeyKind
	Cands    []Due
	Active   KeyKind
}

// ClaimedJob is one job handed out: the reply's [id, payload, token,
// failures].
type ClaimedJob struct {
	ID       string
	Key      string // row key
	Payload  []byte
	Token    []byte
	Failures int64
}

// ClaimVerdict lists the jobs handed out, and the ids the claim promoted to
// pending but did not take (they wake other claimers). Promoted is the
// number of ids the claim promoted (taken or not).
type ClaimVerdict struct {
	Jobs     []ClaimedJob
	Woken    []string
	Promoted int
}

// claimPromoteMax bounds the promotion EMQ.CLAIM runs first (verbs.md).
const claimPromoteMax = 100

// JudgeClaim is EMQ.CLAIM (verbs.md section 4): a paused queue hands out
// nothing; the due scheduled members are judged as EMQ.PROMOTE judges them;
// then pending (with the promoted ids at score 0) is walked in order until
// Count jobs are found: a ghost is dropped and does not use up Count; a
// non-hash row, a lane row or an attempts/failures value HINCRBY would
// refuse refuses the whole call. Each job gets attempts+1 (the token), state
// active, lease_epoch run_id and an active score of now+lease_ms.
func JudgeClaim(r *ClaimRead, now int64, runID []byte, a *ClaimArgs) (ClaimVerdict, *plan.Plan, Refusal) {
	k := a.K
	var v ClaimVerdict
	if r.Meta == Wrong {
		return v, nil, wrongType(k.Meta)
	}
	if r.Paused {
		return v, nil, noRefusal
	}
	if ref := kindCheck(r.Schedule, k.Schedule); ref.Refused() {
		return v, nil, ref
	}
	if ref := kindCheck(r.Pending, k.Pending); ref.Refused() {
		return v, nil, ref
	}
	if ref := kindCheck(r.Active, k.Active); ref.Refused() {
		return v, nil, ref
	}
	p := newPlan(4 * (len(r.Due) + int(min(a.Count, 64))))
	var promoted []string
	if len(r.Due) > 0 {
		var ref Refusal
		promoted, ref = judgePromotions(k, r.Due, p)
		if ref.Refused() {
			return v, nil, ref
		}
	}
	// The promoted ids join pending at score 0, so they sort by id among the
	// score-0 members; a promoted id already in pending moves to score 0.
	var prom []*Due
	var inProm map[string]bool
	if len(promoted) > 0 {
		prom = make([]*Due, 0, len(promoted))
		inProm = make(map[string]bool, len(promoted))
		for i := range r.Due {
			if r.Due[i].Row.Kind == OK {
				prom = append(prom, &r.Due[i])
				inProm[r.Due[i].ID] = true
			}
		}
		sort.Slice(prom, func(i, j int) bool { return prom[i].ID < prom[j].ID })
	}
	var ghosts []string
	taken := make(map[string]bool, len(prom))
	i, j := 0, 0
	for int64(len(v.Jobs)) < a.Count {
		for i < len(r.Cands) && inProm[r.Cands[i].ID] {
			i++
		}
		var c *Due
		switch {
		case i < len(r.Cands) && j < len(prom):
			pc := &r.Cands[i]
			if pc.Score < 0 || (pc.Score == 0 && pc.ID < prom[j].ID) {
				c = pc
				i++
			} else {
				c = prom[j]
				j++
			}
		case i < len(r.Cands):
			c = &r.Cands[i]
			i++
		case j < len(prom):
			c = prom[j]
			j++
		}
		if c == nil {
			break
		}
		rowKey := c.rowKey(k)
		switch {
		case c.Row.Kind == Absent:
			ghosts = append(ghosts, c.ID)
			continue
		case c.Row.Kind == Wrong:
			return ClaimVerdict{}, nil, wrongType(rowKey)
		case c.Row.Lane:
			return ClaimVerdict{}, nil, badRow(ErrLane, rowKey)
		}
		tok, e := nextCount(c.Row.Attempts, 1)
		if e != "" {
			return ClaimVerdict{}, nil, badRow(e, rowKey)
		}
		var failures int64
		if c.Row.Failures.Present {
			n, ok := num.ParseInt(c.Row.Failures.Val)
			if !ok {
				return ClaimVerdict{}, nil, badRow(store.ErrHashNotInt, rowKey)
			}
			failures = n
		}
		v.Jobs = append(v.Jobs, ClaimedJob{ID: c.ID, Key: rowKey, Payload: c.Row.Payload.Val, Token: strconv.AppendInt(nil, tok, 10), Failures: failures})
		if inProm[c.ID] {
			taken[c.ID] = true
		}
	}
	v.Promoted = len(promoted)
	for _, id := range promoted {
		if !taken[id] {
			v.Woken = append(v.Woken, id)
		}
	}
	for _, id := range ghosts {
		p.ZRem(k.Pending, id)
	}
	deadline := addMs(now, a.LeaseMs)
	for _, jb := range v.Jobs {
		p.ZRem(k.Pending, jb.ID)
		hincr1(p, jb.Key, fvAttempts)
		p.HSetBytes(jb.Key, fState, vActive, fLeaseEpoch, runID)
		p.ZAdd(k.Active, deadline, jb.ID)
	}
	if len(p.Ops) == 0 {
		p = nil
	}
	return v, p, noRefusal
}

// ---------------------------------------------------------------------------
// EMQ.STALLED.CHECK

// StalledRead is what EMQ.STALLED.CHECK's read pass saw: the expired
// members of active (score <= now, at most limit) with their rows, and the
// destinations.
type StalledRead struct {
	Active  KeyKind
	Expired []Due
	Pending KeyKind
	Dead    KeyKind
	Failed  Counter
}

// StalledVerdict is the sweep's reply: the recovered ids and the dead ids,
// in selection order (ghosts are in neither).
type StalledVerdict struct {
	Recovered []string
	Dead      []string
}

// JudgeStalled is EMQ.STALLED.CHECK (the seed's stalled_check; verbs.md
// section 4): every expired member is judged before anything is written,
// in order: a ghost is removed from active and listed nowhere; a non-hash
// row or a lane row refuses the whole call; a lease_epoch other than runID
// (or none) is exempt: back to pending, stalled neither read nor written; a
// stalled value HINCRBY would refuse refuses the whole call; otherwise a
// counted expiry: s = stalled+1, dead when s >= maxStalled, else recovered.
func JudgeStalled(r *StalledRead, runID []byte, k *Keys, maxStalled int64) (StalledVerdict, *plan.Plan, Refusal) {
	var v StalledVerdict
	if r.Active == Wrong {
		return v, nil, wrongType(k.Active)
	}
	if len(r.Expired) == 0 {
		return v, nil, noRefusal
	}
	const (
		ghost = iota
		exempt
		recovered
		dead
	)
	type verdict struct {
		kind int
		s    int64
	}
	vs := make([]verdict, len(r.Expired))
	var nRecovered, nDead int64
	for i := range r.Expired {
		d := &r.Expired[i]
		switch {
		case d.Row.Kind == Absent:
			vs[i] = verdict{kind: ghost}
			continue
		case d.Row.Kind == Wrong:
			return v, nil, wrongType(d.rowKey(k))
		case d.Row.Lane:
			return v, nil, badRow(ErrLane, d.rowKey(k))
		case !d.Row.LeaseEpoch.Present || !bytes.Equal(d.Row.LeaseEpoch.Val, runID):
			vs[i] = verdict{kind: exempt}
			nRecovered++
			continue
		}
		s, e := nextCount(d.Row.Stalled, 1)
		if e != "" {
			return v, nil, badRow(e, d.rowKey(k))
		}
		if s >= maxStalled {
			vs[i] = verdict{kind: dead, s: s}
			nDead++
		} else {
			vs[i] = verdict{kind: recovered, s: s}
			nRecovered++
		}
	}
	if nRecovered > 0 && r.Pending == Wrong {
		return v, nil, wrongType(k.Pending)
	}
	if nDead > 0 {
		if r.Dead == Wrong {
			return v, nil, wrongType(k.Dead)
		}
		if ref := counterCheck(r.Failed, k.Failed, nDead); ref.Refused() {
			return v, nil, ref
		}
	}
	p := &plan.Plan{Ops: make([]plan.Op, 0, 4*len(r.Expired))}
	for i := range r.Expired {
		id := r.Expired[i].ID
		rk := r.Expired[i].rowKey(k)
		p.ZRem(k.Active, id)
		switch vs[i].kind {
		case ghost:
		case exempt:
			hset(p, rk, fvStatePending)
			p.ZAdd(k.Pending, 0, id)
			v.Recovered = append(v.Recovered, id)
		case recovered:
			p.HSetBytes(rk, fState, vPending, fStalled, strconv.AppendInt(nil, vs[i].s, 10))
			p.ZAdd(k.Pending, 0, id)
			v.Recovered = append(v.Recovered, id)
		case dead:
			p.HSetBytes(rk, fStalled, strconv.AppendInt(nil, vs[i].s, 10), fState, vDead, fLastError, vStalled)
			p.ZAdd(k.Dead, 0, id)
			hincr1(p, k.Failed, fvCount)
			v.Dead = append(v.Dead, id)
		}
	}
	return v, p, noRefusal
}

// ---------------------------------------------------------------------------
// EMQ.REPROCESS, EMQ.REMOVE, EMQ.PAUSE, EMQ.RESUME, EMQ.COUNTS

// ReprocessRead is what EMQ.REPROCESS's read pass saw.
type ReprocessRead struct {
	Dead    KeyKind
	InDead  bool
	Row     Row
	Pending KeyKind
}

// JudgeReprocess is EMQ.REPROCESS, the dead-letter return: ZREM dead, HDEL
// last_error (with RESET also failures and stalled), HSET state pending,
// ZADD pending 0. attempts is never reset. Charges nothing.
func JudgeReprocess(r *ReprocessRead, k *Keys, id, rowKey string, reset bool) (*plan.Plan, Refusal) {
	switch {
	case r.Dead == Wrong:
		return nil, wrongType(k.Dead)
	case !r.InDead:
		return nil, refuse(ErrNotDead)
	case r.Row.Kind == Wrong:
		return nil, wrongType(rowKey)
	case r.Row.Kind == Absent:
		return nil, refuse(ErrGone)
	case r.Row.Lane:
		return nil, badRow(ErrLane, rowKey)
	case r.Pending == Wrong:
		return nil, wrongType(k.Pending)
	}
	p := newPlan(4)
	p.ZRem(k.Dead, id)
	if reset {
		hdel(p, rowKey, fvReset)
	} else {
		hdel(p, rowKey, fvLastError)
	}
	hset(p, rowKey, fvStatePending)
	p.ZAdd(k.Pending, 0, id)
	return p, noRefusal
}

// RemoveRead is what EMQ.REMOVE's read pass saw: the row and the id's
// membership of each set.
type RemoveRead struct {
	Active, Pending, Schedule, Dead         KeyKind
	InActive, InPending, InSchedule, InDead bool
	Row                                     Row
}

// JudgeRemove is EMQ.REMOVE: a held job (in active) is refused, a lane row
// is refused; otherwise the id leaves pending, schedule and dead and the row
// is deleted. A nil plan means there was no such job (reply 0).
func JudgeRemove(r *RemoveRead, k *Keys, id, rowKey string) (*plan.Plan, Refusal) {
	switch {
	case r.Active == Wrong:
		return nil, wrongType(k.Active)
	case r.InActive:
		return nil, refuse(ErrActive)
	case r.Row.Kind == Wrong:
		return nil, wrongType(rowKey)
	case r.Row.Lane:
		return nil, badRow(ErrLane, rowKey)
	case r.Pending == Wrong:
		return nil, wrongType(k.Pending)
	case r.Schedule == Wrong:
		return nil, wrongType(k.Schedule)
	case r.Dead == Wrong:
		return nil, wrongType(k.Dead)
	}
	p := newPlan(4)
	if r.InPending {
		p.ZRem(k.Pending, id)
	}
	if r.InSchedule {
		p.ZRem(k.Schedule, id)
	}
	if r.InDead {
		p.ZRem(k.Dead, id)
	}
	if r.Row.Kind == OK {
		p.Del(rowKey)
	}
	if len(p.Ops) == 0 {
		return nil, noRefusal
	}
	return p, noRefusal
}

// JudgePause is EMQ.PAUSE: HSET meta paused 1.
func JudgePause(meta KeyKind, k *Keys) (*plan.Plan, Refusal) {
	if meta == Wrong {
		return nil, wrongType(k.Meta)
	}
	p := newPlan(1)
	hset(p, k.Meta, fvPausedOne)
	return p, noRefusal
}

// JudgeResume is EMQ.RESUME: HDEL meta paused (nothing to write when the
// queue is not paused).
func JudgeResume(meta KeyKind, paused bool, k *Keys) (*plan.Plan, Refusal) {
	if meta == Wrong {
		return nil, wrongType(k.Meta)
	}
	if !paused {
		return nil, noRefusal
	}
	p := newPlan(1)
	hdel(p, k.Meta, fvPaused)
	return p, noRefusal
}

// CountsRead is what EMQ.COUNTS's read pass saw: the four sets (kind and
// size) and the two metrics hashes.
type CountsRead struct {
	Sets      [4]KeyKind // pending, active, schedule, dead
	Sizes     [4]int64
	Completed Counter
	Failed    Counter
}

// Counts is EMQ.COUNTS's reply, in reply order.
type Counts struct {
	Pending, Active, Scheduled, Dead, Completed, Failed int64
}

// JudgeCounts is EMQ.COUNTS: set sizes and metric counts; a wrong type or a
// count that is not an integer refuses.
func JudgeCounts(r *CountsRead, k *Keys) (Counts, Refusal) {
	keys := [4]string{k.Pending, k.Active, k.Schedule, k.Dead}
	for i, kk := range r.Sets {
		if kk == Wrong {
			return Counts{}, wrongType(keys[i])
		}
	}
	metric := func(c Counter, key string) (int64, Refusal) {
		if c.Kind == Wrong {
			return 0, wrongType(key)
		}
		if !c.Count.Present {
			return 0, noRefusal
		}
		n, ok := num.ParseInt(c.Count.Val)
		if !ok {
			return 0, badRow(store.ErrHashNotInt, key)
		}
		return n, noRefusal
	}
	done, ref := metric(r.Completed, k.Completed)
	if ref.Refused() {
		return Counts{}, ref
	}
	failed, ref := metric(r.Failed, k.Failed)
	if ref.Refused() {
		return Counts{}, ref
	}
	return Counts{r.Sizes[0], r.Sizes[1], r.Sizes[2], r.Sizes[3], done, failed}, noRefusal
}
