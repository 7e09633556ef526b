package verbs

import (
	"math"
	"strconv"

	"github.com/emqd/emqd/plan"
	"github.com/emqd/emqd/store"
)

// Every handler runs: parse and validate all arguments (verbs.md rule 1,
// texts of rule 8) -> read pass (read.go) -> pure judgement (judge.go) ->
// c.ApplyPlan -> reply. A refusal writes nothing. The server has checked the
// command's arity before the handler runs.

// refuseReply answers r, counting and logging it when stored data caused it.
func refuseReply(c *store.Ctx, r Refusal) {
	noteBadRow(c.DB.Index, r)
	c.W.Error(r.Text)
}

// wake tells the server a job of k's queue became pending (blocked claimers).
func wake(c *store.Ctx, k *Keys) {
	if c.S.OnReady != nil {
		c.S.OnReady(c.DB.Index, k.Queue)
	}
}

// clone copies an argument the store will keep (argv buffers are reused).
func clone(b []byte) []byte {
	out := make([]byte, len(b))
	copy(out, b)
	return out
}

// queueArg validates argv[1] as a queue name (rule 8) and returns its keys.
func queueArg(c *store.Ctx) *Keys {
	if !validQueue(c.Argv[1]) {
		c.W.Error(ErrInvalidQueue)
		return nil
	}
	return keysFor(c.Argv[1])
}

// apply applies p (nil: nothing to write).
func apply(c *store.Ctx, p *plan.Plan) {
	if p != nil {
		c.ApplyPlan(p)
	}
}

// ---------------------------------------------------------------------------
// EMQ.ENQUEUE q id payload [DELAY delay_ms | AT run_at_ms]

func cmdEnqueue(c *store.Ctx) {
	k := queueArg(c)
	if k == nil {
		return
	}
	a := EnqueueArgs{K: k}
	argv := c.Argv
	for i := 4; i < len(argv); i += 2 {
		if i+1 >= len(argv) || a.Sched != SchedNone {
			c.W.Error(store.ErrSyntax)
			return
		}
		var e string
		switch {
		case eqFold(argv[i], "DELAY"):
			a.Sched = SchedDelay
			a.Ms, e = intArg(argv[i+1], 0, errNonNegDelay)
		case eqFold(argv[i], "AT"):
			a.Sched = SchedAt
			a.Ms, e = intArg(argv[i+1], 0, errNonNegRunAt)
		default:
			e = store.ErrSyntax
		}
		if e != "" {
			c.W.Error(e)
			return
		}
	}
	if len(argv[2]) == 1 && argv[2][0] == '*' {
		a.Mint = true
	} else if !ValidID(argv[2]) {
		c.W.Error(ErrKind)
		return
	}
	a.Payload = argv[3] // cloned below once admission is certain

	// Read pass.
	d := c.DB
	var r EnqueueRead
	var rowKey string
	if a.Mint {
		var m MintRead
		var h *store.Hash
		h, m.Kind = hashKind(d, MintKey)
		if h != nil {
			m.Last = getField(h, "last")
		}
		n, ref := judgeMint(m, c.NowMs)
		if ref.Refused() {
			refuseReply(c, ref)
			return
		}
		// Skip numbers a client already used as its own id.
		var idb [idLen]byte
		for {
			encodeID(n, &idb)
			rowKey, r.ID = k.rowOf(idb[:])
			if d.Get(rowKey) == nil {
				break
			}
			if n == maxMintNum {
				refuseReply(c, badRow(ErrMintExhausted, MintKey))
				return
			}
			n++
		}
		r.Row = Absent
	} else {
		rowKey, a.ID = k.rowOf(argv[2])
		r.ID = a.ID
		_, r.Row = hashKind(d, rowKey)
	}
	if a.Sched == SchedNone {
		_, r.Dest = zsetKind(d, k.Pending)
	} else {
		_, r.Dest = zsetKind(d, k.Schedule)
	}
	if r.Row == Absent {
		a.Payload = clone(a.Payload)
	}
	r.RowKey = rowKey
	v, p, ref := JudgeEnqueue(&r, c.NowMs, &a)
	if ref.Refused() {
		refuseReply(c, ref)
		return
	}
	if v.Dup {
		c.W.Nil()
		return
	}
	apply(c, p)
	count(c, k, Enqueued, 1)
	// A pending job wakes a claimer; a scheduled one too, so the server
	// re-reads the earliest due time (and a run_at_ms in the past is
	// claimable at once: EMQ.CLAIM promotes it).
	wake(c, k)
	c.W.BulkString(v.ID)
}

// ---------------------------------------------------------------------------
// The six token verbs

// tokenArgs parses `q id token` (argv[1..3]).
func tokenArgs(c *store.Ctx) (TokenArgs, bool) {
	k := queueArg(c)
	if k == nil {
		return TokenArgs{}, false
	}
	rowKey, id := k.rowOf(c.Argv[2])
	return TokenArgs{K: k, ID: id, RowKey: rowKey, Token: c.Argv[3]}, true
}

// readToken is the common guard's read pass.
func readToken(d *store.DB, a *TokenArgs) TokenRead {
	var r TokenRead
	r.Row = readRow(d, a.RowKey)
	r.Active, r.InActive, _ = member(d, a.K.Active, a.ID)
	return r
}

// EMQ.COMPLETE q id token
func cmdComplete(c *store.Ctx) {
	a, ok := tokenArgs(c)
	if !ok {
		return
	}
	r := CompleteRead{TokenRead: readToken(c.DB, &a), Completed: readCounter(c.DB, a.K.Completed)}
	p, ref := JudgeComplete(&r, &a)
	if ref.Refused() {
		refuseReply(c, ref)
		return
	}
	apply(c, p)
	count(c, a.K, Completed, 1)
	c.W.Int(1)
}

// EMQ.FAIL q id token max_attempts delay_ms error
func cmdFail(c *store.Ctx) {
	a, ok := tokenArgs(c)
	if !ok {
		return
	}
	var fa FailArgs
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
	r := FailRead{TokenRead: readToken(d, &a)}
	_, r.Schedule = zsetKind(d, a.K.Schedule)
	_, r.Dead = zsetKind(d, a.K.Dead)
	r.Failed = readCounter(d, a.K.Failed)
	fa.Error = clone(c.Argv[6])
	v, p, ref := JudgeFail(&r, c.NowMs, &a, &fa)
	if ref.Refused() {
		refuseReply(c, ref)
		return
	}
	apply(c, p)
	count(c, a.K, Failed, 1)
	if v.Dead {
		count(c, a.K, FailedDead, 1)
	} else {
		wake(c, a.K) // the retry's due time (see cmdEnqueue)
	}
	c.W.Array(2)
	if v.Dead {
		c.W.BulkString("dead")
	} else {
		c.W.BulkString("scheduled")
	}
	c.W.Int(v.F)
}

// EMQ.REQUEUE q id token
func cmdRequeue(c *store.Ctx) {
	a, ok := tokenArgs(c)
	if !ok {
		return
	}
	r := RequeueRead{TokenRead: readToken(c.DB, &a)}
	_, r.Pending = zsetKind(c.DB, a.K.Pending)
	p, ref := JudgeRequeue(&r, &a)
	if ref.Refused() {
		refuseReply(c, ref)
		return
	}
	apply(c, p)
	count(c, a.K, Requeued, 1)
	wake(c, a.K)
	c.W.Int(1)
}

// EMQ.EXTEND q id token lease_ms
func cmdExtend(c *store.Ctx) {
	a, ok := tokenArgs(c)
	if !ok {
		return
	}
	lease, e := intArg(c.Argv[4], 1, errPosLease)
	if e != "" {
		c.W.Error(e)
		return
	}
	r := readToken(c.DB, &a)
	p, ref := JudgeExtend(&r, c.NowMs, runIDBytes(c.RunID), &a, lease)
	if ref.Refused() {
		refuseReply(c, ref)
		return
	}
	apply(c, p)
	c.W.Int(1)
}

// EMQ.DELAY q id token (IN delay_ms | AT run_at_ms)
func cmdDelay(c *store.Ctx) {
	a, ok := tokenArgs(c)
	if !ok {
		return
	}
	var sched uint8
	var ms int64
	var e string
	switch {
	case eqFold(c.Argv[4], "IN"):
		sched = SchedDelay
		ms, e = intArg(c.Argv[5], 0, errNonNegDelay)
	case eqFold(c.Argv[4], "AT"):
		sched = SchedAt
		ms, e = intArg(c.Argv[5], 0, errNonNegRunAt)
	default:
		e = store.ErrSyntax
	}
	if e != "" {
		c.W.Error(e)
		return
	}
	r := DelayRead{TokenRead: readToken(c.DB, &a)}
	_, r.Schedule = zsetKind(c.DB, a.K.Schedule)
	p, ref := JudgeDelay(&r, c.NowMs, &a, sched, ms)
	if ref.Refused() {
		refuseReply(c, ref)
		return
	}
	apply(c, p)
	count(c, a.K, Delayed, 1)
	wake(c, a.K) // the new due time (see cmdEnqueue)
	c.W.Int(1)
}

// EMQ.PROGRESS q id token value
func cmdProgress(c *store.Ctx) {
	a, ok := tokenArgs(c)
	if !ok {
		return
	}
	r := readToken(c.DB, &a)
	p, ref := JudgeProgress(&r, &a, clone(c.Argv[4]))
	if ref.Refused() {
		refuseReply(c, ref)
		return
	}
	apply(c, p)
	c.W.Int(1)
}

// ---------------------------------------------------------------------------
// EMQ.CLAIM q lease_ms [COUNT count] [BLOCK block_ms]

func parseClaim(c *store.Ctx, a *ClaimArgs) bool {
	k := queueArg(c)
	if k == nil {
		return false
	}
	argv := c.Argv
	*a = ClaimArgs{K: k, Count: 1}
	var e string
	if a.LeaseMs, e = intArg(argv[2], 1, errPosLease); e != "" {
		c.W.Error(e)
		return false
	}
	var haveCount bool
	for i := 3; i < len(argv); i += 2 {
		if i+1 >= len(argv) {
			c.W.Error(store.ErrSyntax)
			return false
		}
		switch {
		case eqFold(argv[i], "COUNT") && !haveCount:
			haveCount = true
			a.Count, e = intArg(argv[i+1], 1, errPosCount)
		case eqFold(argv[i], "BLOCK") && !a.Block:
			a.Block = true
			a.BlockMs, e = intArg(argv[i+1], 0, errNonNegBlock)
		default:
			e = store.ErrSyntax
		}
		if e != "" {
			c.W.Error(e)
			return false
		}
	}
	return true
}

// readClaim is EMQ.CLAIM's read pass at now: meta, the due scheduled
// members (at most 100), and pending in order until Count + len(Due)
// members with a row were seen (promoted ids may replace pending ones, and
// ghosts do not use up Count).
func readClaim(d *store.DB, a *ClaimArgs, now int64) ClaimRead {
	k := a.K
	var r ClaimRead
	var meta *store.Hash
	meta, r.Meta = hashKind(d, k.Meta)
	if meta != nil {
		_, r.Paused = meta.Get("paused")
	}
	if r.Meta == Wrong || r.Paused {
		return r
	}
	var sched, pend *store.ZSet
	sched, r.Schedule = zsetKind(d, k.Schedule)
	pend, r.Pending = zsetKind(d, k.Pending)
	_, r.Active = zsetKind(d, k.Active)
	if r.Schedule == Wrong || r.Pending == Wrong || r.Active == Wrong {
		return r
	}
	r.Due = readDue(d, k, sched, now, claimPromoteMax)
	if pend == nil {
		return r
	}
	need := a.Count
	if need > math.MaxInt64-claimPromoteMax {
		need = math.MaxInt64 - claimPromoteMax
	}
	need += int64(len(r.Due))
	if need <= 8 {
		r.Cands = make([]Due, 0, need)
	}
	for i := 0; need > 0; i++ {
		it, ok := pend.At(i)
		if !ok {
			break
		}
		key := k.Row(it.Member)
		row := readRow(d, key)
		r.Cands = append(r.Cands, Due{ID: it.Member, Score: it.Score, Row: row, Key: key})
		if row.Kind != Absent {
			need--
		}
	}
	return r
}

// claimOnce runs one claim at c.NowMs: read, judge, apply, wake. It writes
// the reply only for a refusal (refused true).
func claimOnce(c *store.Ctx, a *ClaimArgs) (v ClaimVerdict, refused bool) {
	r := readClaim(c.DB, a, c.NowMs)
	v, p, ref := JudgeClaim(&r, c.NowMs, runIDBytes(c.RunID), a)
	if ref.Refused() {
		refuseReply(c, ref)
		return v, true
	}
	apply(c, p)
	count(c, a.K, Promoted, v.Promoted)
	count(c, a.K, Claimed, len(v.Jobs))
	for range v.Woken {
		wake(c, a.K)
	}
	return v, false
}

func writeClaimReply(c *store.Ctx, v *ClaimVerdict) {
	c.W.Array(len(v.Jobs))
	for i := range v.Jobs {
		j := &v.Jobs[i]
		c.W.Array(4)
		c.W.BulkString(j.ID)
		c.W.Bulk(j.Payload)
		c.W.Bulk(j.Token)
		c.W.Int(j.Failures)
	}
}

func cmdClaim(c *store.Ctx) {
	var args ClaimArgs
	if !parseClaim(c, &args) {
		return
	}
	v, refused := claimOnce(c, &args)
	if refused {
		return
	}
	if len(v.Jobs) > 0 || !args.Block || c.InMulti {
		writeClaimReply(c, &v)
		return
	}
	a := new(ClaimArgs)
	*a = args
	db := c.DB.Index
	c.Block = &store.BlockSpec{
		DB:        db,
		Queue:     a.K.Queue,
		TimeoutMs: a.BlockMs,
		Retry: func(rc *store.Ctx) bool {
			if rc.DB == nil || rc.DB.Index != db {
				rc.DB = rc.S.DB(db)
			}
			v, refused := claimOnce(rc, a)
			if refused {
				return true // the error ends the wait
			}
			if len(v.Jobs) == 0 {
				return false
			}
			writeClaimReply(rc, &v)
			return true
		},
		Due: func(rc *store.Ctx) (int64, bool) { return nextDue(rc.S.DB(db), a.K) },
	}
}

// nextDue is the lowest score of k's schedule set, the time at which a
// delayed job comes due (false: none, or the queue is paused, so time alone
// makes nothing claimable).
func nextDue(d *store.DB, k *Keys) (int64, bool) {
	if meta, kind := hashKind(d, k.Meta); kind == Wrong {
		return 0, false
	} else if meta != nil {
		if _, paused := meta.Get("paused"); paused {
			return 0, false
		}
	}
	z, _ := zsetKind(d, k.Schedule)
	if z == nil {
		return 0, false
	}
	m, ok := z.Min()
	if !ok {
		return 0, false
	}
	if m.Score <= math.MinInt64 {
		return math.MinInt64, true
	}
	if m.Score >= math.MaxInt64 {
		return math.MaxInt64, true
	}
	return int64(math.Ceil(m.Score)), true
}

// ---------------------------------------------------------------------------
// EMQ.STALLED.CHECK q [max_stalled [limit]]

func cmdStalledCheck(c *store.Ctx) {
	k := queueArg(c)
	if k == nil {
		return
	}
	argv := c.Argv
	if len(argv) > 4 {
		c.W.Error(store.ErrSyntax)
		return
	}
	maxStalled, limit := int64(1), int64(100)
	var e string
	if len(argv) > 2 {
		if maxStalled, e = intArg(argv[2], 1, errPosMaxStalled); e != "" {
			c.W.Error(e)
			return
		}
	}
	if len(argv) > 3 {
		if limit, e = intArg(argv[3], 1, errPosLimit); e != "" {
			c.W.Error(e)
			return
		}
	}
	d := c.DB
	var r StalledRead
	var act *store.ZSet
	act, r.Active = zsetKind(d, k.Active)
	r.Expired = readDue(d, k, act, c.NowMs, limit)
	if len(r.Expired) > 0 {
		_, r.Pending = zsetKind(d, k.Pending)
		_, r.Dead = zsetKind(d, k.Dead)
		r.Failed = readCounter(d, k.Failed)
	}
	v, p, ref := JudgeStalled(&r, runIDBytes(c.RunID), k, maxStalled)
	if ref.Refused() {
		refuseReply(c, ref)
		return
	}
	apply(c, p)
	count(c, k, StallRecovered, len(v.Recovered))
	count(c, k, StallDead, len(v.Dead))
	for range v.Recovered {
		wake(c, k)
	}
	c.W.Array(2)
	c.W.Array(len(v.Recovered))
	for _, id := range v.Recovered {
		c.W.BulkString(id)
	}
	c.W.Array(len(v.Dead))
	for _, id := range v.Dead {
		c.W.BulkString(id)
	}
}

// ---------------------------------------------------------------------------
// EMQ.PROMOTE q [limit]

func cmdPromote(c *store.Ctx) {
	k := queueArg(c)
	if k == nil {
		return
	}
	if len(c.Argv) > 3 {
		c.W.Error(store.ErrSyntax)
		return
	}
	limit := int64(100)
	if len(c.Argv) > 2 {
		var e string
		if limit, e = intArg(c.Argv[2], 1, errPosLimit); e != "" {
			c.W.Error(e)
			return
		}
	}
	d := c.DB
	var r PromoteRead
	var sched *store.ZSet
	sched, r.Schedule = zsetKind(d, k.Schedule)
	r.Due = readDue(d, k, sched, c.NowMs, limit)
	_, r.Pending = zsetKind(d, k.Pending)
	ids, p, ref := JudgePromote(&r, k)
	if ref.Refused() {
		refuseReply(c, ref)
		return
	}
	apply(c, p)
	count(c, k, Promoted, len(ids))
	for range ids {
		wake(c, k)
	}
	c.W.Int(int64(len(ids)))
}

// ---------------------------------------------------------------------------
// EMQ.REPROCESS q id [RESET]

func cmdReprocess(c *store.Ctx) {
	k := queueArg(c)
	if k == nil {
		return
	}
	argv := c.Argv
	reset := false
	if len(argv) > 4 || (len(argv) == 4 && !eqFold(argv[3], "RESET")) {
		c.W.Error(store.ErrSyntax)
		return
	}
	reset = len(argv) == 4
	rowKey, id := k.rowOf(argv[2])
	d := c.DB
	var r ReprocessRead
	r.Dead, r.InDead, _ = member(d, k.Dead, id)
	r.Row = readRow(d, rowKey)
	_, r.Pending = zsetKind(d, k.Pending)
	p, ref := JudgeReprocess(&r, k, id, rowKey, reset)
	if ref.Refused() {
		refuseReply(c, ref)
		return
	}
	apply(c, p)
	count(c, k, Reprocessed, 1)
	wake(c, k)
	c.W.Int(1)
}

// ---------------------------------------------------------------------------
// EMQ.REMOVE q id

func cmdRemove(c *store.Ctx) {
	k := queueArg(c)
	if k == nil {
		return
	}
	rowKey, id := k.rowOf(c.Argv[2])
	d := c.DB
	var r RemoveRead
	r.Active, r.InActive, _ = member(d, k.Active, id)
	r.Row = readRow(d, rowKey)
	r.Pending, r.InPending, _ = member(d, k.Pending, id)
	r.Schedule, r.InSchedule, _ = member(d, k.Schedule, id)
	r.Dead, r.InDead, _ = member(d, k.Dead, id)
	p, ref := JudgeRemove(&r, k, id, rowKey)
	if ref.Refused() {
		refuseReply(c, ref)
		return
	}
	if p == nil {
		c.W.Int(0)
		return
	}
	apply(c, p)
	count(c, k, Removed, 1)
	c.W.Int(1)
}

// ---------------------------------------------------------------------------
// EMQ.PAUSE q, EMQ.RESUME q

func cmdPause(c *store.Ctx) {
	k := queueArg(c)
	if k == nil {
		return
	}
	_, kind := hashKind(c.DB, k.Meta)
	p, ref := JudgePause(kind, k)
	if ref.Refused() {
		refuseReply(c, ref)
		return
	}
	apply(c, p)
	c.W.OK()
}

func cmdResume(c *store.Ctx) {
	k := queueArg(c)
	if k == nil {
		return
	}
	h, kind := hashKind(c.DB, k.Meta)
	paused := false
	if h != nil {
		_, paused = h.Get("paused")
	}
	p, ref := JudgeResume(kind, paused, k)
	if ref.Refused() {
		refuseReply(c, ref)
		return
	}
	apply(c, p)
	wake(c, k)
	c.W.OK()
}

// ---------------------------------------------------------------------------
// EMQ.COUNTS q

func cmdCounts(c *store.Ctx) {
	k := queueArg(c)
	if k == nil {
		return
	}
	d := c.DB
	var r CountsRead
	for i, key := range [4]string{k.Pending, k.Active, k.Schedule, k.Dead} {
		z, kind := zsetKind(d, key)
		r.Sets[i] = kind
		if z != nil {
			r.Sizes[i] = int64(z.Len())
		}
	}
	r.Completed = readCounter(d, k.Completed)
	r.Failed = readCounter(d, k.Failed)
	n, ref := JudgeCounts(&r, k)
	if ref.Refused() {
		refuseReply(c, ref)
		return
	}
	w := c.W
	w.Map(6)
	w.BulkString("pending")
	w.Int(n.Pending)
	w.BulkString("active")
	w.Int(n.Active)
	w.BulkString("scheduled")
	w.Int(n.Scheduled)
	w.BulkString("dead")
	w.Int(n.Dead)
	w.BulkString("completed")
	w.Int(n.Completed)
	w.BulkString("failed")
	w.Int(n.Failed)
}

// ---------------------------------------------------------------------------
// EMQ.JOB q id

func cmdJob(c *store.Ctx) {
	k := queueArg(c)
	if k == nil {
		return
	}
	rowKey, id := k.rowOf(c.Argv[2])
	d := c.DB
	h, kind := hashKind(d, rowKey)
	if kind == Wrong {
		refuseReply(c, wrongType(rowKey))
		return
	}
	if h == nil {
		c.W.Nil()
		return
	}
	ak, inActive, deadline := member(d, k.Active, id)
	if ak == Wrong {
		refuseReply(c, wrongType(k.Active))
		return
	}
	sk, inSched, runAt := member(d, k.Schedule, id)
	if sk == Wrong {
		refuseReply(c, wrongType(k.Schedule))
		return
	}
	n := h.Len()
	if inActive {
		n++
	}
	if inSched {
		n++
	}
	w := c.W
	w.Map(n)
	h.Range(func(f string, v []byte) bool {
		w.BulkString(f)
		w.Bulk(v)
		return true
	})
	if inActive {
		w.BulkString("lease_deadline_ms")
		w.BulkString(formatMs(deadline))
	}
	if inSched {
		w.BulkString("run_at_ms")
		w.BulkString(formatMs(runAt))
	}
}

// formatMs prints a score that is a time in ms: in decimal when integral,
// else as the shortest decimal (a score written by hand).
func formatMs(s float64) string {
	switch {
	case math.IsInf(s, 1):
		return "inf"
	case math.IsInf(s, -1):
		return "-inf"
	case s == math.Trunc(s) && math.Abs(s) < 1<<63:
		return strconv.FormatInt(int64(s), 10)
	}
	return strconv.FormatFloat(s, 'f', -1, 64)
}

// ---------------------------------------------------------------------------
// EMQ.DEBUG CLOCK ADVANCE ms (verbs.md section 6)

// advancer is a clock EMQ.DEBUG CLOCK ADVANCE can move (clock.Manual,
// clock.Shifted).
type advancer interface{ Advance(int64) }

// cmdDebug is the container alone or with a subcommand the server did not
// route: refused like Valkey's DEBUG when debug is off.
func cmdDebug(c *store.Ctx) {
	if !c.DebugEnabled {
		c.W.Error(ErrDebugDisabled)
		return
	}
	if len(c.Argv) < 2 {
		c.W.Error(errArity("emq.debug"))
		return
	}
	c.W.Error("ERR unknown subcommand '" + string(c.Argv[1]) + "'. Try EMQ.DEBUG HELP.")
}

func cmdDebugClock(c *store.Ctx) {
	if !c.DebugEnabled {
		c.W.Error(ErrDebugDisabled)
		return
	}
	if !eqFold(c.Argv[2], "ADVANCE") {
		c.W.Error(store.ErrSyntax)
		return
	}
	ms, e := intArg(c.Argv[3], 0, errNonNegMs)
	if e != "" {
		c.W.Error(e)
		return
	}
	adv, ok := c.Clock.(advancer)
	if !ok {
		c.W.Error(ErrClockFixed)
		return
	}
	if ms > 0 {
		adv.Advance(ms)
	}
	c.W.OK()
}
