package verbs

import (
	"bytes"
	"sort"
	"strconv"

	"github.com/emqd/emqd/internal/num"
	"github.com/emqd/emqd/internal/plan"
	"github.com/emqd/emqd/internal/store"
)

// Flows (docs/verbs.md §4.25): a parent job waits, in state `waiting` in
// emq:{q}:waiting and in no claimable set, until its children have ended.
// The parent's roster emq:{q}:flow:<id> names every child
// (<child_queue>:<child_id>) and how it ended, so each child's end counts
// exactly once whatever the path: COMPLETE, FAIL at the cap, the sweep's
// dead-letter, REMOVE. Every end of a row with a `parent` field goes
// through one function, flowEnds.end (the "job ended" seam of the shared
// design of lanes and flows); REPROCESS of a dead child goes through
// flowEnds.reopen.

// MaxFlowDepth is how deep a flow's tree may be: the root's children are
// at depth 1, theirs at depth 2, ... (docs/verbs.md §4.25.1).
const MaxFlowDepth = 8

// Error texts of flows (docs/verbs.md §4.25).
const (
	ErrFlowPolicy     = "ERR ON_CHILD_FAIL must be fail, ignore or continue"
	ErrFlowPolicyLeaf = "ERR ON_CHILD_FAIL given for a job without children"
	ErrFlowUnder      = "ERR UNDER must name the flow's parent or an earlier child"
	ErrFlowDepth      = "ERR flow depth must be at most 8"
)

func errFlowDup(ref string) string { return "ERR job " + ref + " is named twice in the flow" }

func errFlowExists(ref string) string {
	return "EMQFLOW job " + ref + " exists and is not this flow"
}

func errFlowChildExists(ref string) string { return "EMQFLOW job " + ref + " already exists" }

func errFlowParentDead(ref string) string {
	return "EMQFLOW parent " + ref + " is dead: reprocess or remove it first"
}

var (
	fParent       = []byte("parent")
	fChildren     = []byte("children")
	fChildrenLeft = []byte("children_left")
	fOnChildFail  = []byte("on_child_fail")

	vWaiting  = []byte("waiting")
	vRemoved  = []byte("removed")
	vFail     = []byte("fail")
	vIgnore   = []byte("ignore")
	vContinue = []byte("continue")
)

// flowRef is "<queue>:<id>", the name of a job in a roster and in a
// child's `parent` field (`:` occurs in neither a queue name nor a job id).
func flowRef(q, id string) string { return q + ":" + id }

// splitRef splits a flowRef at its last `:`; ok is false when the queue
// part is not a queue name.
func splitRef(b []byte) (q, id string, ok bool) {
	i := bytes.LastIndexByte(b, ':')
	if i <= 0 || i == len(b)-1 || !validQueue(b[:i]) {
		return "", "", false
	}
	return string(b[:i]), string(b[i+1:]), true
}

// policyArg matches fail, ignore or continue in any case and returns the
// stored form.
func policyArg(b []byte) []byte {
	switch {
	case eqFold(b, "FAIL"):
		return vFail
	case eqFold(b, "IGNORE"):
		return vIgnore
	case eqFold(b, "CONTINUE"):
		return vContinue
	}
	return nil
}

// ---------------------------------------------------------------------------
// The "job ended" seam.

// flowParent is one parent as the seam sees it: read once from the store
// (which no write has touched yet: the seam runs in the judgement, before
// the plan is applied) and then changed in memory by each end the verb
// makes, so a sweep that ends several children of one parent counts each
// once against the same roster.
type flowParent struct {
	K                     *Keys
	ID, Ref               string
	RowKey, Roster, Out   string
	ok                    bool // a row of the shape EMQ.FLOW writes, roster and sets readable
	State                 []byte
	Left                  int64
	Policy                []byte
	ParentRef             rowField // its own parent (nested flows)
	row                   jobRow   // the row as read (its priority: seam 1)
	lanes                 *laneTx  // the parent queue's lanes (seam 1 with lanes)
	roster, out           *store.Hash
	entries               []string // roster fields changed, in order
	vals                  map[string][]byte
	outSet                []string
	outVals               map[string][]byte
	outDel                []string
	leftDirty             bool
	released, killed      bool
	Err                   []byte
	deadScore             int64
	dirtyRow, reopenCount bool
}

// flowEnds gathers the flow effects of one verb's plan.
type flowEnds struct {
	vs      *Verbs
	d       *store.DB
	now     int64
	parents map[string]*flowParent
	list    []*flowParent
	gone    map[string]bool // row keys the verb's own plan deletes
	// lts is one lane state per parent queue (docs/verbs.md §4.26.4): the
	// verb's own (own: the verb flushes it after its own lane writes, so
	// a release into a lane the verb also touched is one computation), or
	// read once by the seam for another queue (flushed by plan).
	lts  map[string]*laneTx
	own  *laneTx
	read []*laneTx
}

// newFlowEnds starts the seam of one verb whose plan so far is p: the row
// keys p deletes (a trim, a completion) are gone, and the seam writes
// nothing for a parent among them. lt is the verb's own lane state of its
// queue (nil: none read): a parent of that queue is released through it,
// and the verb flushes it.
func newFlowEnds(vs *Verbs, c *store.Ctx, p *plan.Plan, lt *laneTx) *flowEnds {
	fe := &flowEnds{vs: vs, d: c.DB, now: c.NowMs, own: lt}
	if lt != nil {
		fe.lts = map[string]*laneTx{lt.k.Queue: lt}
	}
	if p == nil {
		return fe
	}
	for _, op := range p.Ops {
		if op.Kind == plan.Del {
			if fe.gone == nil {
				fe.gone = make(map[string]bool)
			}
			fe.gone[op.Key] = true
		}
	}
	return fe
}

// parent loads (once) the parent named ref.
func (fe *flowEnds) parent(ref []byte) *flowParent {
	if fp := fe.parents[string(ref)]; fp != nil {
		return fp
	}
	q, id, ok := splitRef(ref)
	if !ok {
		return nil
	}
	k := fe.vs.keysFor([]byte(q))
	fp := &flowParent{K: k, ID: id, Ref: string(ref), RowKey: k.Row(id), Roster: k.Roster(id), Out: k.RosterOut(id)}
	if fe.parents == nil {
		fe.parents = make(map[string]*flowParent)
	}
	fe.parents[fp.Ref] = fp
	fe.list = append(fe.list, fp)
	fe.load(fp)
	return fp
}

// load reads fp's row, roster and the sets a release or a death writes. A
// parent not in the shape EMQ.FLOW writes (no row, another type, no
// roster, a children_left that is not an integer, a set of another type)
// is treated as gone: its children's ends change nothing (docs/verbs.md
// §4.25.4).
func (fe *flowEnds) load(fp *flowParent) {
	d := fe.d
	if fe.gone[fp.RowKey] {
		return
	}
	row, kind := hashKind(d, fp.RowKey)
	if kind != keyOK {
		return
	}
	if _, lane := row.Get("group"); lane {
		return
	}
	if _, ok := row.Get(string(fChildren)); !ok {
		return
	}
	left, ok := row.Get(string(fChildrenLeft))
	if !ok {
		return
	}
	n, ok := num.ParseInt(left)
	if !ok {
		return
	}
	ros, rk := hashKind(d, fp.Roster)
	if rk != keyOK {
		return
	}
	out, ok2 := hashKind(d, fp.Out)
	if ok2 == keyWrong {
		return
	}
	fp.out = out
	for _, key := range []string{fp.K.Waiting, fp.K.Pending, fp.K.Dead} {
		if _, kk := zsetKind(d, key); kk == keyWrong {
			return
		}
	}
	if c := readCounter(d, fp.K.Failed); counterCheck(c, fp.K.Failed, 1).Refused() {
		return
	}
	fp.row = readRow(d, fp.RowKey)
	lt := fe.lanesOf(fp.K)
	if lt == nil || checkIntoPending(lt, &fp.row, fp.RowKey).Refused() {
		return
	}
	fp.lanes = lt
	st, _ := row.Get(string(fState))
	pol, _ := row.Get(string(fOnChildFail))
	fp.State, fp.Left, fp.Policy, fp.roster = st, n, pol, ros
	fp.ParentRef = getField(row, string(fParent))
	if rs, ref := readRetain(d, fp.K); !ref.Refused() {
		fp.deadScore = deadScore(rs, fe.now)
	}
	fp.ok = true
}

// lanesOf is the lane state of parent queue k within the verb: the verb's
// own for its queue, else read once per queue (nil: unreadable, the parent
// is treated as gone).
func (fe *flowEnds) lanesOf(k *Keys) *laneTx {
	if lt, ok := fe.lts[k.Queue]; ok {
		return lt
	}
	lt, ref := readLanes(fe.d, k, fe.now)
	if ref.Refused() {
		lt = nil
	}
	if fe.lts == nil {
		fe.lts = make(map[string]*laneTx)
	}
	fe.lts[k.Queue] = lt
	if lt != nil {
		fe.read = append(fe.read, lt)
	}
	return lt
}

// entry is child's roster entry as the plan so far leaves it (nil: none).
func (fp *flowParent) entry(child string) []byte {
	if v, ok := fp.vals[child]; ok {
		return v
	}
	v, ok := fp.roster.Get(child)
	if !ok {
		return nil
	}
	return v
}

func (fp *flowParent) setEntry(child string, v []byte) {
	if fp.vals == nil {
		fp.vals = make(map[string][]byte)
	}
	if _, ok := fp.vals[child]; !ok {
		fp.entries = append(fp.entries, child)
	}
	fp.vals[child] = v
}

func (fp *flowParent) setOut(child string, v []byte) {
	if fp.outVals == nil {
		fp.outVals = make(map[string][]byte)
	}
	if _, ok := fp.outVals[child]; !ok {
		fp.outSet = append(fp.outSet, child)
	}
	fp.outVals[child] = v
}

// end is the seam: child (a flowRef) of the parent named by ref ended
// with outcome (completed, dead or removed) and out (its RESULT or its
// error; nil: none). A child whose entry is not `pending` has ended
// already and changes nothing; otherwise its entry flips, children_left
// goes down by one, and a parent still waiting is released (the last
// child, or a death under continue) or killed (a death under fail; its own
// death is then an end for its own parent).
func (fe *flowEnds) end(ref []byte, child string, outcome, out []byte) {
	for depth := 0; depth <= MaxFlowDepth+1; depth++ {
		fp := fe.parent(ref)
		if fp == nil || !fp.ok {
			return
		}
		if !bytes.Equal(fp.entry(child), vPending) {
			return
		}
		fp.setEntry(child, outcome)
		if out != nil {
			fp.setOut(child, out)
		}
		fp.Left--
		fp.leftDirty = true
		if !bytes.Equal(fp.State, vWaiting) {
			return
		}
		dead := bytes.Equal(outcome, vDead)
		switch {
		case dead && (len(fp.Policy) == 0 || bytes.Equal(fp.Policy, vFail)):
			fp.killed = true
			fp.State = vDead
			e := make([]byte, 0, len(child)+len(out)+16)
			e = append(e, "child "...)
			e = append(e, child...)
			e = append(e, " died: "...)
			fp.Err = append(e, out...)
			if !fp.ParentRef.Present {
				return
			}
			// The parent's death ends it as a child of its own parent.
			ref, child, outcome, out = fp.ParentRef.Val, fp.Ref, vDead, fp.Err
			continue
		case dead && bytes.Equal(fp.Policy, vContinue), fp.Left <= 0:
			fp.released = true
			fp.State = vPending
		}
		return
	}
}

// reopen is REPROCESS of the dead child (a flowRef) whose row names parent
// ref: while the parent waits, the child's entry goes back to `pending`
// and children_left up by one, so its next end counts; a dead parent
// refuses (docs/verbs.md §4.25.3); any other parent (released, running,
// finished, gone) leaves the roster as it is and the job runs again on its
// own.
func (fe *flowEnds) reopen(ref []byte, child string) refusal {
	fp := fe.parent(ref)
	if fp == nil || !fp.ok || !bytes.Equal(fp.entry(child), vDead) {
		return noRefusal
	}
	switch {
	case bytes.Equal(fp.State, vWaiting):
		fp.setEntry(child, vPending)
		if fp.out != nil {
			if _, had := fp.out.Get(child); had {
				fp.outDel = append(fp.outDel, child)
			}
		}
		fp.Left++
		fp.leftDirty = true
	case bytes.Equal(fp.State, vDead):
		return refuse(errFlowParentDead(fp.Ref))
	}
	return noRefusal
}

// plan appends the seam's writes to p.
func (fe *flowEnds) plan(p *plan.Plan) {
	for _, fp := range fe.list {
		if !fp.ok || (len(fp.entries) == 0 && len(fp.outDel) == 0) {
			continue
		}
		fv := make([][]byte, 0, 2*len(fp.entries))
		for _, c := range fp.entries {
			fv = append(fv, []byte(c), fp.vals[c])
		}
		p.HSetBytes(fp.Roster, fv...)
		if len(fp.outSet) > 0 {
			ov := make([][]byte, 0, 2*len(fp.outSet))
			for _, c := range fp.outSet {
				ov = append(ov, []byte(c), fp.outVals[c])
			}
			p.HSetBytes(fp.Out, ov...)
		}
		if len(fp.outDel) > 0 {
			fs := make([]string, len(fp.outDel))
			copy(fs, fp.outDel)
			p.HDel(fp.Out, fs...)
		}
		left := strconv.AppendInt(nil, fp.Left, 10)
		switch {
		case fp.released:
			p.ZRem(fp.K.Waiting, fp.ID)
			p.HSetBytes(fp.RowKey, fChildrenLeft, left, fState, vPending)
			// Into the lane state the verb shares (lanesOf): its lanes'
			// writes are computed once, after every change (§4.26.4).
			intoPending(p, fp.K, fp.lanes, fp.ID, &fp.row)
		case fp.killed:
			p.ZRem(fp.K.Waiting, fp.ID)
			p.HSetBytes(fp.RowKey, fChildrenLeft, left, fState, vDead, fLastError, fp.Err, fFinishedAt, msBytes(fe.now))
			p.ZAdd(fp.K.Dead, fp.deadScore, fp.ID)
			hincr1(p, fp.K.Failed, fvCount)
		default:
			p.HSetBytes(fp.RowKey, fChildrenLeft, left)
		}
	}
	// The lane writes of other queues' parents, once per queue; the verb's
	// own queue's go with the verb's flush.
	for _, lt := range fe.read {
		lt.flush(p)
	}
}

// releasedIn lists the parents of queue k the seam releases, as members of
// pending (score: the priority seam 1 gives them) in pending's order
// (NEXT's claim sees them there, docs/verbs.md §4.5.1).
func (fe *flowEnds) releasedIn(k *Keys) []store.ZItem {
	if fe == nil {
		return nil
	}
	var out []store.ZItem
	for _, fp := range fe.list {
		if fp.released && fp.K.Queue == k.Queue {
			prio, _ := rowPriority(&fp.row, "")
			out = append(out, store.ZItem{Member: fp.ID, Score: float64(prio)})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Score < out[j].Score || (out[i].Score == out[j].Score && out[i].Member < out[j].Member)
	})
	return out
}

// after counts, publishes and wakes for what the applied seam did.
func (fe *flowEnds) after(c *store.Ctx) {
	if fe == nil {
		return
	}
	for _, fp := range fe.list {
		switch {
		case fp.released:
			fe.vs.count(c, fp.K, FlowReleased, 1)
			fe.vs.event(c, fp.K, EvReleased, fp.ID)
			fe.vs.wake(c, fp.K)
		case fp.killed:
			fe.vs.count(c, fp.K, FlowDead, 1)
			fe.vs.event(c, fp.K, EvDead, fp.ID)
		}
	}
}

// endRow runs the seam for row of queue k, id, when it is a flow child;
// fe is created on first use against the verb's plan p and its lane state
// lt of k (nil: none; the verb flushes lt after planFlow).
func (vs *Verbs) endRow(fe **flowEnds, c *store.Ctx, p *plan.Plan, lt *laneTx, row *jobRow, k *Keys, id string, outcome, out []byte) {
	if !row.Parent.Present {
		return
	}
	if *fe == nil {
		*fe = newFlowEnds(vs, c, p, lt)
	}
	(*fe).end(row.Parent.Val, flowRef(k.Queue, id), outcome, out)
}

// planFlow appends fe's writes to p (fe nil: nothing).
func planFlow(fe *flowEnds, p *plan.Plan) {
	if fe != nil {
		fe.plan(p)
	}
}

// delRoster appends the deletion of parent id's roster keys (a flow
// parent's row is deleted: COMPLETE, REMOVE, a trim).
func delRoster(p *plan.Plan, k *Keys, id string) {
	p.Del(k.Roster(id))
	p.Del(k.RosterOut(id))
}
