package verbs

import (
	"strconv"

	"github.com/emqd/emqd/internal/plan"
	"github.com/emqd/emqd/internal/store"
)

// ---------------------------------------------------------------------------
// EMQ.ENQUEUE q id payload [DELAY delay_ms | AT run_at_ms] [PRIORITY p]

// Schedule modes of EMQ.ENQUEUE and EMQ.DELAY.
const (
	schedNone  uint8 = iota // pending now
	schedDelay              // DELAY / IN delay_ms: at now+ms
	schedAt                 // AT run_at_ms
)

// enqueueArgs are EMQ.ENQUEUE's parsed arguments.
type enqueueArgs struct {
	K       *Keys
	ID      string // the client's id; "" when Mint
	Mint    bool   // id was `*`
	Payload []byte
	// Borrowed: Payload is the caller's bytes (the command's argument),
	// not the verb's copy: the row's HSET marks it (plan.Op.Borrow), and
	// the store copies it where it keeps values (a listpack row copies
	// every value; only a hashtable row would have kept the slice).
	Borrowed bool
	// NowB is the time in decimal for enqueued_at (Verbs.msNow; nil:
	// rendered by addJobRow).
	NowB []byte
	jobOpts
}

// jobOpts are the options EMQ.ENQUEUE and EMQ.ENQUEUE.MANY share
// (docs/verbs.md §4.2): where the job goes (DELAY / AT) and its priority.
type jobOpts struct {
	Sched   uint8
	Ms      int64
	HasPrio bool
	Prio    int64
	HasLane bool
	Lane    string // "" and "default": the default lane (no lane field)
}

// parseJobOpt parses the option at argv[i] (with its value at argv[i+1])
// into o: DELAY and AT exclude each other, each option at most once, a
// missing value or an unknown word is a syntax error. On an error it has
// written the reply (false).
func parseJobOpt(argv [][]byte, i int, o *jobOpts, c *store.Ctx) bool {
	if i+1 >= len(argv) {
		c.W.Error(store.ErrSyntax)
		return false
	}
	var e string
	switch {
	case eqFold(argv[i], "DELAY") && o.Sched == schedNone:
		o.Sched = schedDelay
		o.Ms, e = intArg(argv[i+1], 0, errNonNegDelay)
	case eqFold(argv[i], "AT") && o.Sched == schedNone:
		o.Sched = schedAt
		o.Ms, e = intArg(argv[i+1], 0, errNonNegRunAt)
	case eqFold(argv[i], "PRIORITY") && !o.HasPrio:
		o.HasPrio = true
		o.Prio, e = priorityArg(argv[i+1])
	case eqFold(argv[i], "LANE") && !o.HasLane:
		o.HasLane = true
		if !validLane(argv[i+1]) {
			e = ErrLaneName
		} else if string(argv[i+1]) != DefaultLane {
			o.Lane = string(argv[i+1])
		}
	default:
		e = store.ErrSyntax
	}
	if e != "" {
		c.W.Error(e)
		return false
	}
	return true
}

// rowExtra is the row fields the options add after the builder's own
// (docs/verbs.md §1.3: priority only when not 0, lane only when not the
// default lane).
func (o *jobOpts) rowExtra() [][]byte {
	var out [][]byte
	if o.Prio != 0 {
		out = append(out, fPriority, msBytes(o.Prio))
	}
	if o.Lane != "" {
		out = append(out, fLane, []byte(o.Lane))
	}
	return out
}

// row is the part of a new row seam 1 reads (its priority and lane).
func (o *jobOpts) row() *jobRow {
	if o == nil || o.Lane == "" {
		return nil
	}
	return &jobRow{LaneName: rowField{Val: []byte(o.Lane), Present: true}}
}

// JobOptions are the options EMQ.ENQUEUE and EMQ.ENQUEUE.MANY share
// (docs/verbs.md §4.2): where the job goes (HasDelay: DELAY DelayMs >= 0,
// due at now+DelayMs; HasAt: AT AtMs, a Unix ms time >= 0; at most one of
// the two; neither: pending now), its Priority (0: none; a PRIORITY
// value, docs/verbs.md §2.13) and its Lane ("" or DefaultLane: the
// default lane; else a valid lane name, §4.26).
type JobOptions struct {
	HasDelay bool
	DelayMs  int64
	HasAt    bool
	AtMs     int64
	Priority int64
	Lane     string
}

// jobOptsOf is the judgement's view of o.
func jobOptsOf(o *JobOptions) jobOpts {
	j := jobOpts{Prio: o.Priority, HasPrio: o.Priority != 0}
	switch {
	case o.HasDelay:
		j.Sched, j.Ms = schedDelay, o.DelayMs
	case o.HasAt:
		j.Sched, j.Ms = schedAt, o.AtMs
	}
	if o.Lane != "" && o.Lane != DefaultLane {
		j.HasLane, j.Lane = true, o.Lane
	}
	return j
}

// public is the JobOptions of parsed options j.
func (j *jobOpts) public() JobOptions {
	o := JobOptions{Priority: j.Prio, Lane: j.Lane}
	switch j.Sched {
	case schedDelay:
		o.HasDelay, o.DelayMs = true, j.Ms
	case schedAt:
		o.HasAt, o.AtMs = true, j.Ms
	}
	return o
}

// argv appends o's options as the command line spells them.
func (o *JobOptions) argv(argv [][]byte) [][]byte {
	switch {
	case o.HasDelay:
		argv = append(argv, []byte("DELAY"), []byte(itoa(o.DelayMs)))
	case o.HasAt:
		argv = append(argv, []byte("AT"), []byte(itoa(o.AtMs)))
	}
	if o.Priority != 0 {
		argv = append(argv, []byte("PRIORITY"), []byte(itoa(o.Priority)))
	}
	if o.Lane != "" && o.Lane != DefaultLane {
		argv = append(argv, []byte("LANE"), []byte(o.Lane))
	}
	return argv
}

// EnqueueArgs are EMQ.ENQUEUE's arguments (docs/verbs.md §4.2): Queue
// (valid), ID (a job id, ValidID, or "*": the server mints one, §1.4),
// Payload (the method keeps its own copy) and the options.
type EnqueueArgs struct {
	Queue   string
	ID      string
	Payload []byte
	JobOptions
	// row is the row key the wire adapter built with ID.
	row string
}

// Argv is the canonical command line: EMQ.ENQUEUE q id payload [DELAY
// delay_ms | AT run_at_ms] [PRIORITY p] [LANE name].
func (a *EnqueueArgs) Argv() [][]byte {
	argv := argvOf("EMQ.ENQUEUE", a.Queue, a.ID)
	argv = append(argv, a.Payload)
	return a.JobOptions.argv(argv)
}

// EnqueueResult is the admitted job's id (minted or the caller's), or
// Duplicate: a job of that id exists, nothing was written (the wire
// reply is nil).
type EnqueueResult struct {
	ID        string
	Duplicate bool
}

// EMQ.ENQUEUE q id payload [DELAY delay_ms | AT run_at_ms] [PRIORITY p] [LANE name]
func (vs *Verbs) cmdEnqueue(c *store.Ctx) {
	k := vs.queueArg(c)
	if k == nil {
		return
	}
	var o jobOpts
	argv := c.Argv
	for i := 4; i < len(argv); i += 2 {
		if !parseJobOpt(argv, i, &o, c) {
			return
		}
	}
	ea := EnqueueArgs{Queue: k.Queue, ID: "*", Payload: argv[3], JobOptions: o.public()}
	if len(argv[2]) != 1 || argv[2][0] != '*' {
		if !ValidID(argv[2]) {
			c.W.Error(ErrKind)
			return
		}
		ea.row, ea.ID = k.rowOf(argv[2])
	}
	res, err := vs.Enqueue(c, &ea)
	switch {
	case err != nil:
		replyRefusal(c, err)
	case res.Duplicate:
		c.W.Nil()
	default:
		c.W.BulkString(res.ID)
	}
}

// Enqueue is EMQ.ENQUEUE (docs/verbs.md §4.2): a new job row, pending (or
// scheduled with DELAY or AT), unless a job of that id exists (Duplicate,
// nothing written). A *Refusal wrote nothing.
func (vs *Verbs) Enqueue(c *store.Ctx, ea *EnqueueArgs) (EnqueueResult, error) {
	k := vs.keysOf(ea.Queue)
	a := enqueueArgs{K: k, Mint: ea.ID == "*", Payload: ea.Payload, jobOpts: jobOptsOf(&ea.JobOptions)}
	// Read pass.
	d := c.DB
	var r enqueueRead
	var rowKey string
	if a.Mint {
		var m mintRead
		var h *store.Hash
		h, m.Kind = hashKind(d, MintKey)
		if h != nil {
			m.Last = peekField(h, "last") // decoded by judgeMint, kept nowhere
		}
		n, ref := judgeMint(m, c.NowMs)
		if ref.Refused() {
			return EnqueueResult{}, vs.refused(c, ref)
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
				return EnqueueResult{}, vs.refused(c, badRow(ErrMintExhausted, MintKey))
			}
			n++
		}
		r.Row = keyAbsent
	} else {
		rowKey = ea.row
		if n := len(k.JobPrefix); len(rowKey) != n+len(ea.ID) || rowKey[n:] != ea.ID || rowKey[:n] != k.JobPrefix {
			rowKey = k.Row(ea.ID)
		}
		a.ID = ea.ID
		r.ID = a.ID
		_, r.Row = hashKind(d, rowKey)
	}
	if a.Sched == schedNone {
		_, r.Dest = zsetKind(d, k.Pending)
	} else {
		_, r.Dest = zsetKind(d, k.Schedule)
	}
	if r.Row == keyAbsent {
		// Not cloned: the row's listpack copies it, and a hashtable row
		// copies what Borrow marks (a 64-byte payload's clone was one of
		// the job cycle's allocations).
		a.Borrowed = true
		a.NowB = vs.msNow(c.NowMs)
	}
	r.RowKey = rowKey
	var ref refusal
	lb := vs.laneScratch()
	if r.Row == keyAbsent && a.Sched == schedNone {
		if r.Lanes, ref = readLanesInto(lb, d, k, c.NowMs); ref.Refused() {
			return EnqueueResult{}, vs.refused(c, ref)
		}
	}
	v, p, ref := judgeEnqueue(&r, c.NowMs, &a)
	if ref.Refused() {
		return EnqueueResult{}, vs.refused(c, ref)
	}
	if v.Dup {
		return EnqueueResult{ID: v.ID, Duplicate: true}, nil
	}
	p = r.Lanes.flush(p)
	apply(c, p)
	vs.count(c, k, Enqueued, 1)
	vs.event(c, k, EvEnqueued, v.ID)
	// A pending job wakes a claimer; a scheduled one too, so the server
	// re-reads the earliest due time (and a run_at_ms in the past is
	// claimable at once: EMQ.CLAIM promotes it).
	vs.wake(c, k)
	return EnqueueResult{ID: v.ID}, nil
}

// mintRead is the {emq}:mint hash as read.
type mintRead struct {
	Kind keyKind
	Last rowField
}

// judgeMint gives the number of the next minted id: max(now, last+1)
// (docs/verbs.md §1.4). The read pass then skips numbers whose row exists.
func judgeMint(m mintRead, now int64) (int64, refusal) {
	if m.Kind == keyWrong {
		return 0, wrongType(MintKey)
	}
	var last int64
	has := m.Kind == keyOK && m.Last.Present
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

// enqueueRead is what EMQ.ENQUEUE's read pass saw: the row of the id to
// admit (ID: the client's or the minted one) and the destination set.
type enqueueRead struct {
	ID     string
	RowKey string  // ID's row key ("" in tables: built from ID)
	Row    keyKind // OK: a row exists (a duplicate)
	Dest   keyKind // pending, or schedule with DELAY/AT
	Lanes  *laneTx // the queue's lanes (nil in tables)
}

// enqueueVerdict: Dup is a duplicate (reply nil, nothing written); else ID
// was admitted, Pending tells whether it went to pending (wake a claimer).
type enqueueVerdict struct {
	ID      string
	Dup     bool
	Pending bool
}

// judgeEnqueue is EMQ.ENQUEUE's judgement (docs/verbs.md §4.2).
func judgeEnqueue(r *enqueueRead, now int64, a *enqueueArgs) (enqueueVerdict, *plan.Plan, refusal) {
	k := a.K
	rowKey := r.RowKey
	if rowKey == "" {
		rowKey = k.Row(r.ID)
	}
	if r.Row == keyWrong {
		return enqueueVerdict{}, nil, wrongType(rowKey)
	}
	if r.Row == keyOK {
		return enqueueVerdict{ID: r.ID, Dup: true}, nil, noRefusal
	}
	dest, state, score := jobDest(k, a.Sched, a.Ms, now)
	if r.Dest == keyWrong {
		return enqueueVerdict{}, nil, wrongType(dest)
	}
	p := newPlan(3)
	if ref := addJobRow(p, k, r.Lanes, rowKey, r.ID, state, a.Payload, now, a.NowB, dest, score, &a.jobOpts, a.rowExtra()...); ref.Refused() {
		return enqueueVerdict{}, nil, ref
	}
	if a.Borrowed {
		p.Ops[0].Borrow = rowPayloadPair // addJobRow's first op is the row's HSET
	}
	if a.Mint {
		p.HSetBytes(MintKey, fLast, strBytes(r.ID))
	}
	return enqueueVerdict{ID: r.ID, Pending: a.Sched == schedNone}, p, noRefusal
}

// addJobRow appends the writes that create a job row (docs/verbs.md §1.3,
// §4.2): `HSET row state <state> attempts 0 payload <payload> enqueued_at
// <now>` and `ZADD <dest> <score> id`. It is the one builder of a new row:
// every verb that admits a job (EMQ.ENQUEUE, its batch form, a schedule's
// occurrence) calls it, so every row gets the same fields. payload must be
// the verb's own copy (the plan keeps it); now is the verb's one clock
// reading in Unix ms (§2.4), nowB the same in decimal when the caller has
// it (Verbs.msNow; nil: rendered here), score already capped (§2.12). extra are
// (field, value, ...) pairs written after those (a schedule's occurrence:
// `schedule <name> slot_ms <slot>`, §4.22.4).
//
// A job bound for pending (dest == k.Pending) enters it through seam 1
// with o's priority and lane (o nil: neither), which extra must then carry
// (o.rowExtra). A refusal comes from the lane's stored state.
func addJobRow(p *plan.Plan, k *Keys, lt *laneTx, rowKey, id string, state, payload []byte, now int64, nowB []byte, dest string, score int64, o *jobOpts, extra ...[]byte) refusal {
	if nowB == nil {
		nowB = msBytes(now)
	}
	if len(extra) == 0 {
		p.HSetBytes(rowKey, fState, state, fAttempts, vZero, fPayload, payload, fEnqueuedAt, nowB)
	} else {
		var buf [16][]byte // on the stack: HSetBytes copies the list
		fv := append(buf[:0], fState, state, fAttempts, vZero, fPayload, payload, fEnqueuedAt, nowB)
		p.HSetBytes(rowKey, append(fv, extra...)...)
	}
	if dest == k.Pending {
		var prio int64
		if o != nil {
			prio = o.Prio
		}
		return intoPendingLane(p, k, lt, id, o.row(), prio)
	}
	p.ZAdd(dest, score, id)
	return noRefusal
}

// rowPayloadPair is plan.Op.Borrow's bit of the payload in addJobRow's
// HSET of a new row (state, attempts, payload, ...: the third pair).
const rowPayloadPair = 1 << 2

// msBytes is a time in Unix ms in decimal, as the row stores it.
func msBytes(ms int64) []byte { return strconv.AppendInt(make([]byte, 0, 13), ms, 10) }

// jobDest is where a new job goes (docs/verbs.md §4.2): pending at score 0,
// or with DELAY / AT the schedule at now+ms / ms (capped, §2.12).
func jobDest(k *Keys, sched uint8, ms, now int64) (dest string, state []byte, score int64) {
	switch sched {
	case schedDelay:
		return k.Schedule, vScheduled, addMs(now, ms)
	case schedAt:
		return k.Schedule, vScheduled, atMs(ms)
	}
	return k.Pending, vPending, 0
}

// ---------------------------------------------------------------------------
// EMQ.ENQUEUE.MANY q [DELAY delay_ms | AT run_at_ms] [PRIORITY p] JOBS id payload [id payload ...]

// NewJob is one job of EMQ.ENQUEUE.MANY: its ID (ValidID, or "*": the
// server mints one) and Payload.
type NewJob struct {
	ID      string
	Payload []byte
	// row is the row key the wire adapter built with ID.
	row string
}

// rowKey is j's row key in k's queue.
func (j *NewJob) rowKey(k *Keys) string {
	if n := len(k.JobPrefix); len(j.row) == n+len(j.ID) && j.row[n:] == j.ID && j.row[:n] == k.JobPrefix {
		return j.row
	}
	return k.Row(j.ID)
}

// EnqueueManyArgs are EMQ.ENQUEUE.MANY's arguments (docs/verbs.md
// §4.2.1): Queue (valid), the options every job gets, and the jobs (at
// least one), in order.
type EnqueueManyArgs struct {
	Queue string
	JobOptions
	Jobs []NewJob
}

// Argv is the canonical command line: EMQ.ENQUEUE.MANY q [options] JOBS id
// payload [id payload ...].
func (a *EnqueueManyArgs) Argv() [][]byte {
	argv := a.JobOptions.argv(argvOf("EMQ.ENQUEUE.MANY", a.Queue))
	argv = append(argv, []byte("JOBS"))
	for i := range a.Jobs {
		argv = append(argv, []byte(a.Jobs[i].ID), a.Jobs[i].Payload)
	}
	return argv
}

// EnqueueManyResult is the id of each job in argument order, "" for a
// duplicate (an existing job, or an id an earlier job of the call took;
// the wire reply has nil there).
type EnqueueManyResult struct{ IDs []string }

// cmdEnqueueMany admits many jobs in one atomic plan (docs/verbs.md §4.2.1):
// the same as EMQ.ENQUEUE of each pair in order with the same options, all
// or nothing.
func (vs *Verbs) cmdEnqueueMany(c *store.Ctx) {
	k := vs.queueArg(c)
	if k == nil {
		return
	}
	argv := c.Argv
	var o jobOpts
	i := 2
	for ; i < len(argv) && !eqFold(argv[i], "JOBS"); i += 2 {
		if !parseJobOpt(argv, i, &o, c) {
			return
		}
	}
	pairs := argv[min(i+1, len(argv)):]
	if i >= len(argv) || len(pairs) == 0 || len(pairs)%2 != 0 {
		c.W.Error(store.ErrSyntax)
		return
	}
	for j := 0; j < len(pairs); j += 2 {
		if !(len(pairs[j]) == 1 && pairs[j][0] == '*') && !ValidID(pairs[j]) {
			c.W.Error(ErrKind)
			return
		}
	}
	a := EnqueueManyArgs{Queue: k.Queue, JobOptions: o.public(), Jobs: make([]NewJob, len(pairs)/2)}
	for j := range a.Jobs {
		raw := pairs[2*j]
		a.Jobs[j].Payload = pairs[2*j+1]
		if len(raw) == 1 && raw[0] == '*' {
			a.Jobs[j].ID = "*"
		} else {
			a.Jobs[j].row, a.Jobs[j].ID = k.rowOf(raw)
		}
	}
	res, err := vs.EnqueueMany(c, &a)
	if err != nil {
		replyRefusal(c, err)
		return
	}
	c.W.Array(len(res.IDs))
	for _, id := range res.IDs {
		if id == "" {
			c.W.Nil()
		} else {
			c.W.BulkString(id)
		}
	}
}

// EnqueueMany is EMQ.ENQUEUE.MANY (docs/verbs.md §4.2.1): EMQ.ENQUEUE of
// each job in order with the same options, in one plan, all or nothing. A
// *Refusal wrote nothing.
func (vs *Verbs) EnqueueMany(c *store.Ctx, a *EnqueueManyArgs) (EnqueueManyResult, error) {
	k := vs.keysOf(a.Queue)
	o := jobOptsOf(&a.JobOptions)
	sched, ms := o.Sched, o.Ms
	jobs := a.Jobs
	n := len(jobs)
	mints := 0
	for j := range jobs {
		if jobs[j].ID == "*" {
			mints++
		}
	}

	// Read pass.
	d := c.DB
	dest, state, score := jobDest(k, sched, ms, c.NowMs)
	if _, kind := zsetKind(d, dest); kind == keyWrong {
		return EnqueueManyResult{}, vs.refused(c, wrongType(dest))
	}
	var next int64 // the next number to mint
	if mints > 0 {
		var m mintRead
		var h *store.Hash
		h, m.Kind = hashKind(d, MintKey)
		if h != nil {
			m.Last = peekField(h, "last") // decoded by judgeMint, kept nowhere
		}
		var ref refusal
		if next, ref = judgeMint(m, c.NowMs); ref.Refused() {
			return EnqueueManyResult{}, vs.refused(c, ref)
		}
	}
	ids := make([]string, n) // "" for a duplicate
	keys := make([]string, n)
	taken := make(map[string]bool, n) // ids admitted by earlier pairs
	var lastMinted string
	var idb [idLen]byte
	exhausted := false // the last number was minted
	for j := 0; j < n; j++ {
		if jobs[j].ID == "*" {
			for {
				if exhausted {
					return EnqueueManyResult{}, vs.refused(c, badRow(ErrMintExhausted, MintKey))
				}
				encodeID(next, &idb)
				rowKey, id := k.rowOf(idb[:])
				if next == maxMintNum {
					exhausted = true
				} else {
					next++
				}
				if !taken[id] && d.Get(rowKey) == nil {
					ids[j], keys[j], lastMinted = id, rowKey, id
					break
				}
			}
			taken[ids[j]] = true
			continue
		}
		id := jobs[j].ID
		rowKey := jobs[j].rowKey(k)
		if taken[id] {
			continue // admitted by an earlier pair: a duplicate
		}
		_, kind := hashKind(d, rowKey)
		switch kind {
		case keyWrong:
			return EnqueueManyResult{}, vs.refused(c, wrongType(rowKey))
		case keyAbsent:
			ids[j], keys[j] = id, rowKey
			taken[id] = true
		}
	}

	var lt *laneTx
	lb := vs.laneScratch()
	if len(taken) > 0 && sched == schedNone {
		var ref refusal
		if lt, ref = readLanesInto(lb, d, k, c.NowMs); ref.Refused() {
			return EnqueueManyResult{}, vs.refused(c, ref)
		}
		if o.Lane != "" || lt.on {
			if _, ref = lt.lane(laneOf(o.row())); ref.Refused() {
				return EnqueueManyResult{}, vs.refused(c, ref)
			}
		}
	}
	p := newPlan(2*len(taken) + 1)
	extra := o.rowExtra()
	admitted := 0
	for j := 0; j < n; j++ {
		if ids[j] != "" {
			addJobRow(p, k, lt, keys[j], ids[j], state, c.KeepArg(jobs[j].Payload), c.NowMs, vs.msNow(c.NowMs), dest, score, &o, extra...)
			admitted++
		}
	}
	p = lt.flush(p)
	if lastMinted != "" {
		p.HSetBytes(MintKey, fLast, []byte(lastMinted))
	}
	if admitted == 0 {
		plan.Put(p)
		p = nil
	}
	apply(c, p)
	vs.count(c, k, Enqueued, admitted)
	if admitted > 0 {
		vs.wake(c, k)
		if vs.listening(k) {
			for _, id := range ids {
				if id != "" {
					vs.event(c, k, EvEnqueued, id)
				}
			}
		}
	}
	return EnqueueManyResult{IDs: ids}, nil
}
