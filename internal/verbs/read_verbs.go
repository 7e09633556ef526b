package verbs

import (
	"bytes"

	"github.com/emqd/emqd/internal/num"
	"github.com/emqd/emqd/internal/resp"
	"github.com/emqd/emqd/internal/store"
)

// The read verbs as typed methods (docs/architecture.md §2.5.1): EMQ.COUNTS,
// EMQ.JOB, EMQ.LIST and EMQ.CHILDREN. They write nothing; a refusal is a
// wrong type (or a count that is not an integer) in the keys they read,
// counted in emq_bad_row_refusals as the command's is. Results that hold
// a row's bytes (Field) are views of the store: valid while the caller
// holds the store lock and nothing writes; copy them to keep them.

// Counts is EMQ.COUNTS q (docs/verbs.md §4.16): the jobs of each state,
// the transition counters, and LatencyMs, the age in ms of the oldest
// claimable job (0: none). Pending includes the lanes' pending jobs.
type Counts struct {
	Pending, Active, Scheduled, Dead int64
	Completed, Failed, Retained      int64
	LatencyMs                        int64
	Waiting                          int64
}

// Counts is EMQ.COUNTS q (docs/verbs.md §4.16) for the queue q (valid):
// a set that is not a sorted set, or a counter that is not an integer,
// refuses.
func (vs *Verbs) Counts(c *store.Ctx, q string) (Counts, error) {
	k := vs.keysOf(q)
	d := c.DB
	var r countsRead
	for i, key := range [4]string{k.Pending, k.Active, k.Schedule, k.Dead} {
		z, kind := zsetKind(d, key)
		r.Sets[i] = kind
		if z != nil {
			r.Sizes[i] = int64(z.Len())
		}
	}
	r.Completed = readCounter(d, k.Completed)
	r.Failed = readCounter(d, k.Failed)
	z, kind := zsetKind(d, k.Done)
	r.Done = kind
	if z != nil {
		r.DoneSize = int64(z.Len())
	}
	z, kind = zsetKind(d, k.Waiting)
	r.Waiting = kind
	if z != nil {
		r.WaitingSize = int64(z.Len())
	}
	n, ref := judgeCounts(&r, k)
	if ref.Refused() {
		return Counts{}, vs.refused(c, ref)
	}
	return Counts{
		Pending: n.Pending + lanesPending(d, k), Active: n.Active, Scheduled: n.Scheduled, Dead: n.Dead,
		Completed: n.Completed, Failed: n.Failed, Retained: n.Retained,
		LatencyMs: QueueLatencyMs(d, k, c.NowMs), Waiting: n.Waiting,
	}, nil
}

func (vs *Verbs) cmdCounts(c *store.Ctx) {
	k := vs.queueArg(c)
	if k == nil {
		return
	}
	n, err := vs.Counts(c, k.Queue)
	if err != nil {
		replyRefusal(c, err)
		return
	}
	w := c.W
	w.Map(9)
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
	w.BulkString("retained")
	w.Int(n.Retained)
	w.BulkString("latency_ms")
	w.Int(n.LatencyMs)
	w.BulkString("waiting")
	w.Int(n.Waiting)
}

// ---------------------------------------------------------------------------
// EMQ.JOB q id

// Field is one field of a stored hash (a job's row, a schedule's hash): a
// view of the store (see above).
type Field struct {
	Name  string
	Value []byte
}

// JobInfo is a job as EMQ.JOB shows it (docs/verbs.md §4.17). Found is
// false when the job has no row (the nil reply). Fields are the row's
// fields in the row's order; InActive (with LeaseDeadlineMs, the lease's
// deadline in Unix ms) and InSchedule (with RunAtMs, its due time in Unix
// ms) say whether the job is a member of active and of schedule, the
// reply's lease_deadline_ms and run_at_ms.
type JobInfo struct {
	Found           bool
	Fields          []Field
	InActive        bool
	LeaseDeadlineMs float64
	InSchedule      bool
	RunAtMs         float64
}

// Job is EMQ.JOB q id (docs/verbs.md §4.17): a row key, active or
// schedule that holds the wrong type refuses.
func (vs *Verbs) Job(c *store.Ctx, j *JobRef) (JobInfo, error) {
	k, rowKey := vs.jobRefKeys(j)
	v, ref := readJobView(c.DB, k, rowKey, j.ID)
	if ref.Refused() {
		return JobInfo{}, vs.refused(c, ref)
	}
	info, _ := v.info(nil)
	return info, nil
}

func (vs *Verbs) cmdJob(c *store.Ctx) {
	j, ok := vs.parseJobRef(c)
	if !ok {
		return
	}
	info, err := vs.Job(c, &j)
	if err != nil {
		replyRefusal(c, err)
		return
	}
	info.write(c.W)
}

// jobView is a job as EMQ.JOB reads it: its row and its membership of
// active and schedule. EMQ.LIST reads each member so.
type jobView struct {
	row      *store.Hash // nil: no row
	inActive bool
	deadline float64
	inSched  bool
	runAt    float64
}

// readJobView reads id (whose row key is rowKey) as EMQ.JOB does: the row
// key (WRONGTYPE if it is not a hash) and, when there is a row, active and
// schedule (WRONGTYPE if either is not a sorted set).
func readJobView(d *store.DB, k *Keys, rowKey, id string) (jobView, refusal) {
	var v jobView
	h, kind := hashKind(d, rowKey)
	if kind == keyWrong {
		return v, wrongType(rowKey)
	}
	if h == nil {
		return v, noRefusal
	}
	v.row = h
	var ak, sk keyKind
	if ak, v.inActive, v.deadline = member(d, k.Active, id); ak == keyWrong {
		return v, wrongType(k.Active)
	}
	if sk, v.inSched, v.runAt = member(d, k.Schedule, id); sk == keyWrong {
		return v, wrongType(k.Schedule)
	}
	return v, noRefusal
}

// info is v as a JobInfo, its fields appended to buf (EMQ.LIST shares one
// buffer among its page); it returns buf grown.
func (v *jobView) info(buf []Field) (JobInfo, []Field) {
	if v.row == nil {
		return JobInfo{}, buf
	}
	if buf == nil {
		buf = make([]Field, 0, v.row.Len())
	}
	start := len(buf)
	v.row.Range(func(f string, b []byte) bool {
		buf = append(buf, Field{f, b})
		return true
	})
	return JobInfo{Found: true, Fields: buf[start:len(buf):len(buf)], InActive: v.inActive, LeaseDeadlineMs: v.deadline,
		InSchedule: v.inSched, RunAtMs: v.runAt}, buf
}

// write writes EMQ.JOB's reply for j: nil for no row, else a map of the
// row's fields in the row's order, then lease_deadline_ms and run_at_ms.
func (j *JobInfo) write(w *resp.Writer) {
	if !j.Found {
		w.Nil()
		return
	}
	n := len(j.Fields)
	if j.InActive {
		n++
	}
	if j.InSchedule {
		n++
	}
	w.Map(n)
	for _, f := range j.Fields {
		w.BulkString(f.Name)
		w.Bulk(f.Value)
	}
	if j.InActive {
		w.BulkString("lease_deadline_ms")
		w.BulkString(num.FormatScore(j.LeaseDeadlineMs))
	}
	if j.InSchedule {
		w.BulkString("run_at_ms")
		w.BulkString(num.FormatScore(j.RunAtMs))
	}
}

// ---------------------------------------------------------------------------
// EMQ.LIST q state [offset count] (docs/verbs.md §4.18): the jobs of
// one state, read-only.

// ListMax is the largest count EMQ.LIST accepts (docs/verbs.md §4.18).
const ListMax = 1000

// listDefault is EMQ.LIST's count when none is given.
const listDefault = 100

// Error texts of EMQ.LIST's arguments (docs/verbs.md §4.18).
const (
	ErrListState = "ERR state must be one of pending, active, scheduled, dead, completed, waiting"
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
	case eqFold(b, "COMPLETED"):
		return k.Done, true
	case eqFold(b, "WAITING"):
		return k.Waiting, true
	}
	return "", false
}

// ListArgs are EMQ.LIST's arguments: Queue (valid), State (one of
// pending, active, scheduled, dead, completed, waiting, any case), Offset
// (>= 0), Count (1..ListMax; 0: the default, 100) and Lane (state pending
// only: that lane's pending jobs, DefaultLane the plain ones; "": every
// lane's, docs/verbs.md §4.26.6).
type ListArgs struct {
	Queue         string
	State         string
	Offset, Count int64
	Lane          string
}

// appendPage appends a listing's `offset count` to argv when either is set
// (EMQ.LIST, EMQ.SCHEDULE.LIST and EMQ.LANES page alike, docs/verbs.md
// §4.26.5), a zero count written as the default.
func appendPage(argv [][]byte, offset, count int64) [][]byte {
	if offset == 0 && count == 0 {
		return argv
	}
	return append(argv, []byte(itoa(offset)), []byte(itoa(pageCount(count))))
}

// pageCount is a listing's count: 0 means the default, 100 (listDefault).
func pageCount(count int64) int64 {
	if count == 0 {
		return listDefault
	}
	return count
}

// Argv is EMQ.LIST q state, with offset and count when either is set, then
// LANE name when Lane is set.
func (a *ListArgs) Argv() [][]byte {
	argv := argvOf("EMQ.LIST", a.Queue, a.State)
	return laneArgv(appendPage(argv, a.Offset, a.Count), a.Lane)
}

// ListEntry is one member of an EMQ.LIST page: its id and the job as
// EMQ.JOB shows it (Found false: a member without a row).
type ListEntry struct {
	ID  string
	Job JobInfo
}

// List is EMQ.LIST (docs/verbs.md §4.18): the members of a's state's set
// from Offset, at most Count, in the set's order, each read as EMQ.JOB
// reads it. State pending walks every lane's pending set as one listing
// (the default lane's, then the other lanes' by name), or Lane's only
// (docs/verbs.md §4.26.6); a Lane with another state, or one that is not a
// lane name, is refused (ErrLaneState, ErrLaneName). A set the page
// reaches, lanes:known, or any selected member's row key, active or
// schedule, holding the wrong type refuses (the first met).
func (vs *Verbs) List(c *store.Ctx, a *ListArgs) ([]ListEntry, error) {
	if err := checkLaneArg(a.State, a.Lane); err != nil {
		return nil, err
	}
	k := vs.keysOf(a.Queue)
	setKey, _ := listSet(k, []byte(a.State))
	count := pageCount(a.Count)
	d := c.DB
	var out []ListEntry
	var fields []Field
	off := a.Offset
	var ref refusal
	// page reads one set of the walk: past it while off is at or past its
	// end, else its members from off until the page is full.
	page := func(s pendingSet) bool {
		z, kind := zsetKind(d, s.key)
		if kind == keyWrong {
			ref = wrongType(s.key)
			return false
		}
		if z == nil {
			return true
		}
		if off >= int64(z.Len()) {
			off -= int64(z.Len())
			return true
		}
		if out == nil {
			out = make([]ListEntry, 0, min(count, int64(z.Len())-off))
		}
		first, _ := z.At(int(off))
		off = 0
		z.Ascend(first, func(it store.ZItem) bool {
			if int64(len(out)) >= count {
				return false
			}
			var v jobView
			if v, ref = readJobView(d, k, k.Row(it.Member), it.Member); ref.Refused() {
				return false
			}
			e := ListEntry{ID: it.Member}
			e.Job, fields = v.info(fields)
			out = append(out, e)
			return true
		})
		return !ref.Refused() && int64(len(out)) < count
	}
	if setKey == k.Pending {
		if r := walkPending(d, k, a.Lane, page); r.Refused() {
			ref = r
		}
	} else {
		page(pendingSet{key: setKey})
	}
	if ref.Refused() {
		return nil, vs.refused(c, ref)
	}
	return out, nil
}

// cmdList is EMQ.LIST q state [offset count] [LANE name]: the page first,
// then the lane (docs/verbs.md §4.18, §4.26.6). The shape is judged before
// any value (a stray word is a syntax error), then the values from left to
// right.
func (vs *Verbs) cmdList(c *store.Ctx) {
	k := vs.queueArg(c)
	if k == nil {
		return
	}
	argv := c.Argv
	if _, ok := listSet(k, argv[2]); !ok {
		c.W.Error(ErrListState)
		return
	}
	page, lane := -1, -1 // the index of offset, of the lane name
	switch rest := len(argv) - 3; {
	case rest == 0:
	case rest == 2 && eqFold(argv[3], "LANE"):
		lane = 4
	case rest == 2:
		page = 3
	case rest == 4 && !eqFold(argv[3], "LANE") && eqFold(argv[5], "LANE"):
		page, lane = 3, 6
	default:
		c.W.Error(store.ErrSyntax)
		return
	}
	a := ListArgs{Queue: k.Queue, State: string(argv[2])}
	if page > 0 {
		var e string
		if a.Offset, e = intArg(argv[page], 0, errNonNegOffset); e != "" {
			c.W.Error(e)
			return
		}
		if a.Count, e = intArg(argv[page+1], 1, errPosCount); e != "" {
			c.W.Error(e)
			return
		}
		if a.Count > ListMax {
			c.W.Error(ErrListCount)
			return
		}
	}
	if lane > 0 {
		if e := laneOption(argv[2], argv[lane]); e != "" {
			c.W.Error(e)
			return
		}
		a.Lane = string(argv[lane])
	}
	out, err := vs.List(c, &a)
	if err != nil {
		replyRefusal(c, err)
		return
	}
	w := c.W
	w.Array(len(out))
	for i := range out {
		w.Array(2)
		w.BulkString(out[i].ID)
		out[i].Job.write(w)
	}
}

// ---------------------------------------------------------------------------
// EMQ.CHILDREN q parent_id (docs/verbs.md §4.25.5)

// Child is one child of a flow parent as EMQ.CHILDREN shows it: its
// queue and id (Queue "" when the roster's entry names no queue), its
// state (a pending child's live state from its row), and, once it ended,
// OutputName "result" (completed) or "error" with Output, its recorded
// result or last error (a view of the store; OutputName "": none).
type Child struct {
	Queue, ID, State string
	OutputName       string
	Output           []byte
}

// Children is EMQ.CHILDREN q parent_id (docs/verbs.md §4.25.5): the
// parent's children in its roster's order; nil when the parent has no
// roster (the nil reply). A roster or output hash of the wrong type
// refuses.
func (vs *Verbs) Children(c *store.Ctx, j *JobRef) ([]Child, error) {
	k := vs.keysOf(j.Queue)
	d := c.DB
	id := j.ID
	ros, rk := hashKind(d, k.Roster(id))
	if rk == keyWrong {
		return nil, vs.refused(c, wrongType(k.Roster(id)))
	}
	out, ok := hashKind(d, k.RosterOut(id))
	if ok == keyWrong {
		return nil, vs.refused(c, wrongType(k.RosterOut(id)))
	}
	if ros == nil {
		return nil, nil
	}
	kids := make([]Child, 0, ros.Len())
	ros.Range(func(f string, v []byte) bool {
		ch := Child{State: string(v)}
		q, cid, ok := splitRef([]byte(f))
		if !ok {
			q, cid = "", f
		}
		ch.Queue, ch.ID = q, cid
		if bytes.Equal(v, vPending) && ok {
			// Not ended: the child's live state, read from its row.
			if h, _ := hashKind(d, vs.keysFor([]byte(q)).Row(cid)); h != nil {
				if st, ok := h.Get(string(fState)); ok {
					ch.State = string(st)
				}
			}
		}
		if out != nil {
			if o, ok := out.Get(f); ok {
				ch.Output = o
				if bytes.Equal(v, vCompleted) {
					ch.OutputName = "result"
				} else {
					ch.OutputName = "error"
				}
			}
		}
		kids = append(kids, ch)
		return true
	})
	return kids, nil
}

func (vs *Verbs) cmdChildren(c *store.Ctx) {
	k := vs.queueArg(c)
	if k == nil {
		return
	}
	kids, err := vs.Children(c, &JobRef{Queue: k.Queue, ID: string(c.Argv[2])})
	if err != nil {
		replyRefusal(c, err)
		return
	}
	w := c.W
	if kids == nil {
		w.Nil()
		return
	}
	w.Array(len(kids))
	for _, ch := range kids {
		n := 3
		if ch.OutputName != "" {
			n++
		}
		w.Map(n)
		w.BulkString("queue")
		w.BulkString(ch.Queue)
		w.BulkString("id")
		w.BulkString(ch.ID)
		w.BulkString("state")
		w.BulkString(ch.State)
		if ch.OutputName != "" {
			w.BulkString(ch.OutputName)
			w.Bulk(ch.Output)
		}
	}
}
