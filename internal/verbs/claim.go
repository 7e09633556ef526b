package verbs

import (
	"math"
	"sort"
	"strconv"

	"github.com/emqd/emqd/internal/num"
	"github.com/emqd/emqd/internal/plan"
	"github.com/emqd/emqd/internal/store"
)

// ---------------------------------------------------------------------------
// EMQ.CLAIM q lease_ms [COUNT count] [BLOCK block_ms]

// claimArgs are EMQ.CLAIM's parsed arguments.
type claimArgs struct {
	K       *Keys
	LeaseMs int64
	Count   int64
	Block   bool
	BlockMs int64
	// Room is how many bytes the reply may take (store.Ctx.ReplyRoom; 0:
	// judgeClaim treats it as no limit). The claim stops early rather than
	// hand out a job whose reply the client would be disconnected for
	// (docs/verbs.md §2.16).
	Room int64
	// NowB is the claim's time in decimal for claimed_at (Verbs.msNow;
	// nil: judgeClaim renders it), ActiveFV the HSET of a claimed row
	// (state active, lease_epoch, claimed_at) built from it and the run id
	// (Verbs.activeFields; nil: judgeClaim builds it, once per claim).
	NowB     []byte
	ActiveFV [][]byte
	// Cands is the read pass's scratch for the candidates (an empty slice
	// of Verbs.cands, handed back with candsDone once judged; nil: a new
	// one).
	Cands []dueJob
	// Jobs is the verdict's list of claimed jobs when a wire adapter, which
	// writes the reply before the next claim, lends Verbs' scratch
	// (jobScratch; nil: a new list, a typed caller's own).
	Jobs []ClaimedJob
}

func (vs *Verbs) parseClaim(c *store.Ctx, a *claimArgs) bool {
	k := vs.queueArg(c)
	if k == nil {
		return false
	}
	argv := c.Argv
	*a = claimArgs{K: k, Count: 1}
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

// claimRead is what EMQ.CLAIM's read pass saw: meta (paused), the due
// members of schedule (at most 100), the members of pending in order with
// their rows (enough of them: see readClaim), and active's type.
type claimRead struct {
	Meta     keyKind
	Paused   bool
	Schedule keyKind
	Due      []dueJob
	Pending  keyKind
	Cands    []dueJob
	Active   keyKind
	// Lanes is the queue's lane state (docs/verbs.md §4.26; nil in tables:
	// no lanes), LanesRef its refusal; Ov the NEXT overlay (nil: none).
	Lanes    *laneTx
	LanesRef refusal
	Ov       *rowOverlay
}

// readClaim is EMQ.CLAIM's read pass at now: meta, the due scheduled
// members (at most 100), and pending in order until Count + len(Due)
// members with a row were seen (promoted ids may replace pending ones, and
// ghosts do not use up Count).
func readClaim(d *store.DB, a *claimArgs, now int64) claimRead {
	return readClaimAfter(d, a, now, nil, nil, nil)
}

// rowOverlay is what a finishing verb's plan, not applied yet, does to the
// job it finishes, as NEXT's claim must see it (docs/verbs.md §4.5.1): the
// row of ID is Row from now on (Kind keyAbsent: deleted); with Sched, ID
// is a member of schedule at a new score, due (score now, a retry with
// delay_ms 0) when Due.
type rowOverlay struct {
	ID    string
	Row   jobRow
	Sched bool // the plan ZADDs ID to schedule (a retry)
	Due   bool // ... at a score <= now
	// Released are flow parents of the queue the plan puts into pending
	// (docs/verbs.md §4.25.2), in pending's order.
	Released []store.ZItem
}

// readClaimAfter is readClaim as it would read once ov's changes were
// applied (nil: as the store stands), with the lane state lt (nil: read
// it, into buf when not nil: readLanesInto; the finishing verb's, for
// NEXT).
func readClaimAfter(d *store.DB, a *claimArgs, now int64, ov *rowOverlay, lt, buf *laneTx) claimRead {
	k := a.K
	var r claimRead
	r.Ov = ov
	if lt == nil {
		lt, r.LanesRef = readLanesInto(buf, d, k, now)
	}
	r.Lanes = lt
	var meta *store.Hash
	meta, r.Meta = hashKind(d, k.Meta)
	if meta != nil {
		_, r.Paused = meta.Peek("paused")
	}
	if r.Meta == keyWrong || r.Paused {
		return r
	}
	var sched, pend *store.ZSet
	sched, r.Schedule = zsetKind(d, k.Schedule)
	pend, r.Pending = zsetKind(d, k.Pending)
	_, r.Active = zsetKind(d, k.Active)
	if r.Schedule == keyWrong || r.Pending == keyWrong || r.Active == keyWrong {
		return r
	}
	if ov == nil {
		r.Due = readDue(d, k, sched, now, claimPromoteMax, nil)
	} else {
		r.Due = overlayDue(readDue(d, k, sched, now, claimPromoteMax+1, nil), ov, k, now)
	}
	if (pend == nil && (ov == nil || len(ov.Released) == 0)) || (lt != nil && lt.on) {
		// With lanes, judgeClaimLanes walks each lane's set itself.
		return r
	}
	need := a.Count
	if need > math.MaxInt64-claimPromoteMax {
		need = math.MaxInt64 - claimPromoteMax
	}
	need += int64(len(r.Due))
	if r.Cands = a.Cands[:0]; r.Cands == nil && need <= 8 {
		r.Cands = make([]dueJob, 0, need)
	}
	var rel []store.ZItem
	if ov != nil {
		rel = ov.Released
	}
	for i := 0; need > 0; i++ {
		var it store.ZItem
		var m []byte // the member, a view (AtView)
		var ok bool
		if pend != nil {
			m, it.Score, ok = pend.AtView(i)
		}
		var key string
		if len(rel) > 0 && (!ok || it.Score > rel[0].Score || (it.Score == rel[0].Score && string(m) > rel[0].Member)) {
			// A released parent comes first (by score, then id).
			it, ok = rel[0], true
			rel = rel[1:]
			i--
			key = k.Row(it.Member)
		} else if ok {
			// The keyspace's row key and the id as its tail (one
			// allocation for both when the row is gone).
			key, it.Member = k.rowIn(d, m)
		}
		if !ok {
			break
		}
		row := readRow(d, key)
		if ov != nil && it.Member == ov.ID {
			row = ov.Row
		}
		r.Cands = append(r.Cands, dueJob{ID: it.Member, Score: it.Score, Row: row, Key: key})
		if row.Kind != keyAbsent {
			need--
		}
	}
	return r
}

// ClaimedJob is one job a claim handed out (docs/verbs.md §4.3): the wire
// reply's [id, payload, token, failures]. Key is the job's row key.
// Payload is the stored value: read it before the next write of the job.
// Token is read-only: a small one is shared (tokenBytes).
type ClaimedJob struct {
	ID       string
	Key      string
	Payload  []byte
	Token    []byte
	Failures int64
}

// claimedJob is the judgements' spelling of a ClaimedJob.
type claimedJob = ClaimedJob

// claimVerdict lists the jobs handed out, and the ids the claim promoted to
// pending but did not take (they wake other claimers). Promoted is the
// number of ids the claim promoted (taken or not).
type claimVerdict struct {
	Jobs     []claimedJob
	Woken    []string
	Promoted int
	Prom     []string // the promoted ids, in selection order (their events)
}

// claimPromoteMax bounds the promotion EMQ.CLAIM runs first (docs/verbs.md §4.3.2).
const claimPromoteMax = 100

// judgeClaim is EMQ.CLAIM (docs/verbs.md §4.3): a paused queue hands out
// nothing; the due scheduled members are judged as EMQ.PROMOTE judges them;
// then pending (with the promoted ids at score 0) is walked in order until
// Count jobs are found: a ghost is dropped and does not use up Count; a
// non-hash row, a lane row or an attempts/failures value HINCRBY would
// refuse refuses the whole call. Each job gets attempts+1 (the token), state
// active, lease_epoch run_id, claimed_at now and an active score of
// now+lease_ms.
func judgeClaim(r *claimRead, now int64, runID []byte, a *claimArgs) (claimVerdict, *plan.Plan, refusal) {
	k := a.K
	var v claimVerdict
	if r.Meta == keyWrong {
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
	if r.LanesRef.Refused() {
		return v, nil, r.LanesRef
	}
	p := newPlan(4 * (len(r.Due) + int(min(a.Count, 64))))
	var promoted []string
	if len(r.Due) > 0 {
		var ref refusal
		promoted, ref = judgePromotions(k, r.Due, p, r.Lanes)
		if ref.Refused() {
			return v, nil, ref
		}
	}
	if r.Lanes != nil && r.Lanes.on {
		return judgeClaimLanes(r, now, runID, a, p, promoted)
	}
	if r.Lanes != nil && r.Lanes.turnOn {
		// A promoted job of a lane turned lanes on in this claim: the rest
		// of the call is the lane selection, the default lane in it with
		// the jobs this call put into pending (docs/verbs.md §4.26.4).
		if ref := r.Lanes.lanesTurnedOn(r.Due, r.Ov); ref.Refused() {
			return v, nil, ref
		}
		return judgeClaimLanes(r, now, runID, a, p, promoted)
	}
	// The promoted ids join pending at their priority (seam 1), so they
	// sort by (priority, id) among the pending members; a promoted id
	// already in pending moves to that score.
	var prom []*dueJob
	var promScore []float64
	var inProm map[string]bool
	if len(promoted) > 0 {
		prom = make([]*dueJob, 0, len(promoted))
		inProm = make(map[string]bool, len(promoted))
		for i := range r.Due {
			// Lanes are off, so every promoted job is of the default lane.
			if r.Due[i].Row.Kind == keyOK {
				prom = append(prom, &r.Due[i])
				inProm[r.Due[i].ID] = true
			}
		}
		promScore = make([]float64, len(prom))
		for i, d := range prom {
			pr, _ := rowPriority(&d.Row, "")
			promScore[i] = float64(pr)
		}
		idx := make([]int, len(prom))
		for i := range idx {
			idx[i] = i
		}
		sort.Slice(idx, func(a, b int) bool {
			x, y := idx[a], idx[b]
			if promScore[x] != promScore[y] {
				return promScore[x] < promScore[y]
			}
			return prom[x].ID < prom[y].ID
		})
		sp := make([]*dueJob, len(prom))
		ss := make([]float64, len(prom))
		for i, x := range idx {
			sp[i], ss[i] = prom[x], promScore[x]
		}
		prom, promScore = sp, ss
	}
	var ghosts []string
	taken := make(map[string]bool, len(prom))
	room := a.Room
	if room <= 0 {
		room = math.MaxInt64
	}
	size := arrayHeaderBytes(a.Count)
	v.Jobs = a.Jobs[:0]
	i, j := 0, 0
	for int64(len(v.Jobs)) < a.Count {
		for i < len(r.Cands) && inProm[r.Cands[i].ID] {
			i++
		}
		var c *dueJob
		switch {
		case i < len(r.Cands) && j < len(prom):
			pc := &r.Cands[i]
			if pc.Score < promScore[j] || (pc.Score == promScore[j] && pc.ID < prom[j].ID) {
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
		case c.Row.Kind == keyAbsent:
			ghosts = append(ghosts, c.ID)
			continue
		case c.Row.Kind == keyWrong:
			return claimVerdict{}, nil, wrongType(rowKey)
		case c.Row.Lane:
			return claimVerdict{}, nil, badRow(ErrLane, rowKey)
		}
		tok, e := nextCount(c.Row.Attempts, 1)
		if e != "" {
			return claimVerdict{}, nil, badRow(e, rowKey)
		}
		var failures int64
		if c.Row.Failures.Present {
			n, ok := num.ParseInt(c.Row.Failures.Val)
			if !ok {
				return claimVerdict{}, nil, badRow(store.ErrHashNotInt, rowKey)
			}
			failures = n
		}
		jb := claimedJob{ID: c.ID, Key: rowKey, Payload: c.Row.Payload.Val, Token: tokenBytes(tok), Failures: failures}
		if n := jb.replyBytes(); n > room-size {
			if len(v.Jobs) == 0 {
				return claimVerdict{}, nil, refuse(ErrReplyLimit)
			}
			break
		} else {
			size += n
		}
		v.Jobs = append(v.Jobs, jb)
		if inProm[c.ID] {
			taken[c.ID] = true
		}
	}
	v.Promoted = len(promoted)
	v.Prom = promoted
	for _, id := range promoted {
		if !taken[id] {
			v.Woken = append(v.Woken, id)
		}
	}
	for _, id := range ghosts {
		p.ZRem(k.Pending, id)
	}
	deadline := addMs(now, a.LeaseMs)
	var claimedAt []byte
	if len(v.Jobs) > 0 {
		if claimedAt = a.NowB; claimedAt == nil {
			claimedAt = msBytes(now)
		}
	}
	fv := a.ActiveFV
	if fv == nil && len(v.Jobs) > 0 {
		fv = [][]byte{fState, vActive, fLeaseEpoch, runID, fClaimedAt, claimedAt}
	}
	for _, jb := range v.Jobs {
		p.ZRem(k.Pending, jb.ID)
		hincr1(p, jb.Key, fvAttempts)
		p.HSetBytes(jb.Key, fv...) // shared by the jobs (plan values are read-only)
		p.Ops[len(p.Ops)-1].Room = deathRoom
		p.ZAdd(k.Active, deadline, jb.ID)
	}
	if len(p.Ops) == 0 {
		p = nil
	}
	return v, p, noRefusal
}

// ClaimArgs are EMQ.CLAIM's arguments (docs/verbs.md §4.3) and NEXT's
// (§4.5.1): Queue (valid), LeaseMs (>= 1) and Count (>= 1; 0: 1). BLOCK
// is the connection's (the wire adapter parks it and retries Claim): the
// method makes one attempt.
type ClaimArgs struct {
	Queue   string
	LeaseMs int64
	Count   int64
}

// Argv is the canonical command line: EMQ.CLAIM q lease_ms [COUNT count].
func (a *ClaimArgs) Argv() [][]byte {
	argv := argvOf("EMQ.CLAIM", a.Queue, itoa(a.LeaseMs))
	if a.Count > 1 {
		argv = append(argv, []byte("COUNT"), []byte(itoa(a.Count)))
	}
	return argv
}

// nextArgv appends NEXT lease_ms [COUNT count] of a (LeaseMs 0: nothing).
func (a *ClaimArgs) nextArgv(argv [][]byte) [][]byte {
	if a.LeaseMs <= 0 {
		return argv
	}
	argv = append(argv, []byte("NEXT"), []byte(itoa(a.LeaseMs)))
	if a.Count > 1 {
		argv = append(argv, []byte("COUNT"), []byte(itoa(a.Count)))
	}
	return argv
}

// claimArgsOf is the judgement's view of a.
func (vs *Verbs) claimArgsOf(a *ClaimArgs) claimArgs {
	return claimArgs{K: vs.keysOf(a.Queue), LeaseMs: a.LeaseMs, Count: max(a.Count, 1)}
}

// ClaimResult is the jobs a claim handed out, in order (none: the queue
// had nothing claimable, or is paused).
type ClaimResult struct{ Jobs []ClaimedJob }

// Claim is EMQ.CLAIM without BLOCK (docs/verbs.md §4.3): the due
// scheduled jobs are promoted first, then up to Count pending jobs are
// leased for LeaseMs. The claim stops early rather than hand out a job
// whose reply would pass the client's output limit (c.ReplyRoom, §2.16).
// A *Refusal wrote nothing.
func (vs *Verbs) Claim(c *store.Ctx, a *ClaimArgs) (ClaimResult, error) {
	ca := vs.claimArgsOf(a)
	v, err := vs.claimOnce(c, &ca)
	return ClaimResult{Jobs: v.Jobs}, err
}

// claimOnce runs one claim at c.NowMs: read, judge, apply, wake.
func (vs *Verbs) claimOnce(c *store.Ctx, a *claimArgs) (claimVerdict, error) {
	a.Room = c.ReplyRoom()
	a.NowB = vs.msNow(c.NowMs)
	a.Cands = vs.candScratch()
	lb := vs.laneScratch()
	r := readClaimAfter(c.DB, a, c.NowMs, nil, nil, lb)
	if r.Lanes == nil || !r.Lanes.on {
		a.ActiveFV = vs.activeFields(c.NowMs, c.RunID) // the lane path writes lane_slot too
	}
	v, p, ref := judgeClaim(&r, c.NowMs, vs.runIDBytes(c.RunID), a)
	vs.candsDone(r.Cands)
	a.Cands = nil // a parked claim's arguments keep no scratch
	if ref.Refused() {
		return v, vs.refused(c, ref)
	}
	p = r.Lanes.flush(p)
	apply(c, p)
	vs.claimed(c, a, &v)
	return v, nil
}

// claimed counts, publishes and wakes for claim verdict v once its plan
// was applied.
func (vs *Verbs) claimed(c *store.Ctx, a *claimArgs, v *claimVerdict) {
	vs.count(c, a.K, Promoted, v.Promoted)
	vs.count(c, a.K, Claimed, len(v.Jobs))
	vs.events(c, a.K, EvPromoted, v.Prom)
	if len(v.Jobs) > 0 && vs.listening(a.K) {
		for i := range v.Jobs {
			vs.event(c, a.K, EvClaimed, v.Jobs[i].ID)
		}
	}
	for range v.Woken {
		vs.wake(c, a.K)
	}
}

// replyBytes is what the job's entry of the claim reply takes on the wire:
// `*4`, three bulks and an integer (the same bytes in RESP2 and RESP3).
func (j *claimedJob) replyBytes() int64 {
	return 4 + bulkBytes(len(j.ID)) + bulkBytes(len(j.Payload)) + bulkBytes(len(j.Token)) +
		int64(3+decimalLen(j.Failures))
}

// decimalLen is len(strconv.AppendInt(nil, n, 10)), counted without
// rendering (replyBytes runs for every claimed job).
func decimalLen(n int64) int {
	l := 1
	u := uint64(n)
	if n < 0 {
		l, u = 2, uint64(-(n+1))+1
	}
	for ; u >= 10; u /= 10 {
		l++
	}
	return l
}

// smallTokens are the decimal bytes of 0 .. len-1, shared read-only by
// tokenBytes.
var smallTokens = func() [][]byte {
	t := make([][]byte, 256)
	for i := range t {
		t[i] = strconv.AppendInt(nil, int64(i), 10)
	}
	return t
}()

// tokenBytes is a claim's token in decimal: a shared read-only slice for
// the common small tokens (a job's attempts rarely pass 255), a new one
// otherwise. Nothing writes a ClaimedJob's Token (the reply writes it out).
func tokenBytes(n int64) []byte {
	if n >= 0 && n < int64(len(smallTokens)) {
		return smallTokens[n]
	}
	return strconv.AppendInt(nil, n, 10)
}

// bulkBytes is the wire size of a bulk string of n bytes: `$n`, CRLF, the
// bytes, CRLF.
func bulkBytes(n int) int64 { return int64(n) + 5 + int64(len(strconv.Itoa(n))) }

// arrayHeaderBytes is the most an array header of at most n elements takes.
func arrayHeaderBytes(n int64) int64 { return 3 + int64(len(strconv.FormatInt(n, 10))) }

// writeClaimJobs writes a claim's reply: an array of [id, payload, token,
// failures].
func writeClaimJobs(c *store.Ctx, jobs []ClaimedJob) {
	c.W.Array(len(jobs))
	for i := range jobs {
		j := &jobs[i]
		c.W.Array(4)
		c.W.BulkString(j.ID)
		c.W.Bulk(j.Payload)
		c.W.Bulk(j.Token)
		c.W.Int(j.Failures)
	}
}

// EMQ.CLAIM q lease_ms [COUNT count] [BLOCK block_ms]
func (vs *Verbs) cmdClaim(c *store.Ctx) {
	var args claimArgs
	if !vs.parseClaim(c, &args) {
		return
	}
	args.Jobs = vs.jobScratch()
	v, err := vs.claimOnce(c, &args)
	args.Jobs = nil // a parked claim's arguments keep no scratch
	if err != nil {
		replyRefusal(c, err)
		return
	}
	if len(v.Jobs) > 0 || !args.Block {
		writeClaimJobs(c, v.Jobs)
		vs.jobsDone(v.Jobs)
		return
	}
	vs.jobsDone(v.Jobs)
	if c.InMulti {
		// A transaction cannot wait: answer what a timeout answers
		// (docs/verbs.md §4.3.3), as Valkey's blocking commands do.
		c.W.NilArray()
		return
	}
	a := new(claimArgs)
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
			v, err := vs.claimOnce(rc, a)
			if err != nil {
				replyRefusal(rc, err) // the error ends the wait
				return true
			}
			if len(v.Jobs) == 0 {
				return false
			}
			writeClaimJobs(rc, v.Jobs)
			return true
		},
		Due: func(rc *store.Ctx) (int64, bool) { return nextWake(rc.S.DB(db), a.K) },
	}
}

// nextWake is when time alone may make a job of k claimable: the earlier
// of nextDue and the earliest rate token of a limited lane (docs/verbs.md
// §4.26.3), never while the queue is paused.
func nextWake(d *store.DB, k *Keys) (int64, bool) {
	t, ok := nextDue(d, k)
	if !ok {
		if meta, _ := hashKind(d, k.Meta); meta != nil {
			if _, paused := meta.Peek("paused"); paused {
				return 0, false
			}
		}
	}
	if tt, ok2 := nextTokenDue(d, k); ok2 && (!ok || tt < t) {
		return tt, true
	}
	return t, ok
}

// nextDue is the lowest score of k's schedule set, the time at which a
// delayed job comes due (false: none, or the queue is paused, so time alone
// makes nothing claimable).
func nextDue(d *store.DB, k *Keys) (int64, bool) {
	if meta, kind := hashKind(d, k.Meta); kind == keyWrong {
		return 0, false
	} else if meta != nil {
		if _, paused := meta.Peek("paused"); paused {
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

// overlayDue applies ov to the due members of schedule read with one to
// spare: ov.ID leaves them, and joins them at score now when ov.Due (in
// ZRANGEBYSCORE's order: by score, then by member); at most
// claimPromoteMax are kept.
func overlayDue(due []dueJob, ov *rowOverlay, k *Keys, now int64) []dueJob {
	out := due[:0]
	for _, d := range due {
		if d.ID == ov.ID {
			if ov.Sched {
				continue
			}
			d.Row = ov.Row
		}
		out = append(out, d)
	}
	if ov.Due {
		j := dueJob{ID: ov.ID, Score: float64(now), Row: ov.Row, Key: k.Row(ov.ID)}
		i := sort.Search(len(out), func(i int) bool {
			return out[i].Score > j.Score || (out[i].Score == j.Score && out[i].ID > j.ID)
		})
		out = append(out, dueJob{})
		copy(out[i+1:], out[i:])
		out[i] = j
	}
	if len(out) > claimPromoteMax {
		out = out[:claimPromoteMax]
	}
	return out
}
