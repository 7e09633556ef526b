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

func (vs *Verbs) cmdEnqueue(c *store.Ctx) {
	k := vs.queueArg(c)
	if k == nil {
		return
	}
	a := enqueueArgs{K: k}
	argv := c.Argv
	for i := 4; i < len(argv); i += 2 {
		if !parseJobOpt(argv, i, &a.jobOpts, c) {
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
	var r enqueueRead
	var rowKey string
	if a.Mint {
		var m mintRead
		var h *store.Hash
		h, m.Kind = hashKind(d, MintKey)
		if h != nil {
			m.Last = getField(h, "last")
		}
		n, ref := judgeMint(m, c.NowMs)
		if ref.Refused() {
			vs.refuseReply(c, ref)
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
				vs.refuseReply(c, badRow(ErrMintExhausted, MintKey))
				return
			}
			n++
		}
		r.Row = keyAbsent
	} else {
		rowKey, a.ID = k.rowOf(argv[2])
		r.ID = a.ID
		_, r.Row = hashKind(d, rowKey)
	}
	if a.Sched == schedNone {
		_, r.Dest = zsetKind(d, k.Pending)
	} else {
		_, r.Dest = zsetKind(d, k.Schedule)
	}
	if r.Row == keyAbsent {
		a.Payload = clone(a.Payload)
	}
	r.RowKey = rowKey
	var ref refusal
	lb := vs.laneScratch()
	if r.Row == keyAbsent && a.Sched == schedNone {
		if r.Lanes, ref = readLanesInto(lb, d, k, c.NowMs); ref.Refused() {
			vs.refuseReply(c, ref)
			return
		}
	}
	v, p, ref := judgeEnqueue(&r, c.NowMs, &a)
	if ref.Refused() {
		vs.refuseReply(c, ref)
		return
	}
	if v.Dup {
		c.W.Nil()
		return
	}
	p = r.Lanes.flush(p)
	apply(c, p)
	vs.count(c, k, Enqueued, 1)
	vs.event(c, k, EvEnqueued, v.ID)
	// A pending job wakes a claimer; a scheduled one too, so the server
	// re-reads the earliest due time (and a run_at_ms in the past is
	// claimable at once: EMQ.CLAIM promotes it).
	vs.wake(c, k)
	c.W.BulkString(v.ID)
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
	if ref := addJobRow(p, k, r.Lanes, rowKey, r.ID, state, a.Payload, now, dest, score, &a.jobOpts, a.rowExtra()...); ref.Refused() {
		return enqueueVerdict{}, nil, ref
	}
	if a.Mint {
		p.HSetBytes(MintKey, fLast, []byte(r.ID))
	}
	return enqueueVerdict{ID: r.ID, Pending: a.Sched == schedNone}, p, noRefusal
}

// addJobRow appends the writes that create a job row (docs/verbs.md §1.3,
// §4.2): `HSET row state <state> attempts 0 payload <payload> enqueued_at
// <now>` and `ZADD <dest> <score> id`. It is the one builder of a new row:
// every verb that admits a job (EMQ.ENQUEUE, its batch form, a schedule's
// occurrence) calls it, so every row gets the same fields. payload must be
// the verb's own copy (the plan keeps it); now is the verb's one clock
// reading in Unix ms (§2.4), score already capped (§2.12). extra are
// (field, value, ...) pairs written after those (a schedule's occurrence:
// `schedule <name> slot_ms <slot>`, §4.22.4).
//
// A job bound for pending (dest == k.Pending) enters it through seam 1
// with o's priority and lane (o nil: neither), which extra must then carry
// (o.rowExtra). A refusal comes from the lane's stored state.
func addJobRow(p *plan.Plan, k *Keys, lt *laneTx, rowKey, id string, state, payload []byte, now int64, dest string, score int64, o *jobOpts, extra ...[]byte) refusal {
	if len(extra) == 0 {
		p.HSetBytes(rowKey, fState, state, fAttempts, vZero, fPayload, payload, fEnqueuedAt, msBytes(now))
	} else {
		fv := make([][]byte, 0, 8+len(extra))
		fv = append(fv, fState, state, fAttempts, vZero, fPayload, payload, fEnqueuedAt, msBytes(now))
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
	sched, ms := o.Sched, o.Ms
	pairs := argv[min(i+1, len(argv)):]
	if i >= len(argv) || len(pairs) == 0 || len(pairs)%2 != 0 {
		c.W.Error(store.ErrSyntax)
		return
	}
	n := len(pairs) / 2
	mints := 0
	for j := 0; j < len(pairs); j += 2 {
		if len(pairs[j]) == 1 && pairs[j][0] == '*' {
			mints++
		} else if !ValidID(pairs[j]) {
			c.W.Error(ErrKind)
			return
		}
	}

	// Read pass.
	d := c.DB
	dest, state, score := jobDest(k, sched, ms, c.NowMs)
	if _, kind := zsetKind(d, dest); kind == keyWrong {
		vs.refuseReply(c, wrongType(dest))
		return
	}
	var next int64 // the next number to mint
	if mints > 0 {
		var m mintRead
		var h *store.Hash
		h, m.Kind = hashKind(d, MintKey)
		if h != nil {
			m.Last = getField(h, "last")
		}
		var ref refusal
		if next, ref = judgeMint(m, c.NowMs); ref.Refused() {
			vs.refuseReply(c, ref)
			return
		}
	}
	ids := make([]string, n) // "" for a duplicate
	keys := make([]string, n)
	taken := make(map[string]bool, n) // ids admitted by earlier pairs
	var lastMinted string
	var idb [idLen]byte
	exhausted := false // the last number was minted
	for j := 0; j < n; j++ {
		raw := pairs[2*j]
		if len(raw) == 1 && raw[0] == '*' {
			for {
				if exhausted {
					vs.refuseReply(c, badRow(ErrMintExhausted, MintKey))
					return
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
		rowKey, id := k.rowOf(raw)
		if taken[id] {
			continue // admitted by an earlier pair: a duplicate
		}
		_, kind := hashKind(d, rowKey)
		switch kind {
		case keyWrong:
			vs.refuseReply(c, wrongType(rowKey))
			return
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
			vs.refuseReply(c, ref)
			return
		}
		if o.Lane != "" || lt.on {
			if _, ref = lt.lane(laneOf(o.row())); ref.Refused() {
				vs.refuseReply(c, ref)
				return
			}
		}
	}
	p := newPlan(2*len(taken) + 1)
	extra := o.rowExtra()
	admitted := 0
	for j := 0; j < n; j++ {
		if ids[j] != "" {
			addJobRow(p, k, lt, keys[j], ids[j], state, c.KeepArg(pairs[2*j+1]), c.NowMs, dest, score, &o, extra...)
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
	c.W.Array(n)
	for _, id := range ids {
		if id == "" {
			c.W.Nil()
		} else {
			c.W.BulkString(id)
		}
	}
}
