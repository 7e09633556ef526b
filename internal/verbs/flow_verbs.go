package verbs

import (
	"bytes"

	"github.com/emqd/emqd/internal/plan"
	"github.com/emqd/emqd/internal/store"
)

// ---------------------------------------------------------------------------
// EMQ.FLOW q parent_id parent_payload [ON_CHILD_FAIL fail|ignore|continue]
//   CHILD cq child_id child_payload [UNDER uq uid] [ON_CHILD_FAIL policy] [CHILD ...]

// flowNode is one job of a flow as EMQ.FLOW names it: the root (Up -1) or
// a child under node Up.
type flowNode struct {
	K       *Keys
	ID      string
	RowKey  string
	Ref     string // <queue>:<id>
	Payload []byte
	Up      int
	Depth   int
	Policy  []byte // nil: not given (fail)
	Kids    []int
	under   bool // UNDER was given
}

// parseFlow parses EMQ.FLOW's arguments (docs/verbs.md §4.25.1) in the
// order of §2.1: each queue name and option from left to right, then the
// shape of every id. On an error it returns the reply text.
func (vs *Verbs) parseFlow(argv [][]byte) ([]flowNode, string) {
	if !validQueue(argv[1]) {
		return nil, ErrInvalidQueue
	}
	root := flowNode{K: vs.keysFor(argv[1]), ID: string(argv[2]), Payload: argv[3], Up: -1}
	root.Ref = flowRef(root.K.Queue, root.ID)
	nodes := []flowNode{root}
	byRef := map[string]int{root.Ref: 0}
	i := 4
	cur := 0
	for i < len(argv) {
		switch {
		case eqFold(argv[i], "ON_CHILD_FAIL"):
			if i+1 >= len(argv) || nodes[cur].Policy != nil {
				return nil, store.ErrSyntax
			}
			pol := policyArg(argv[i+1])
			if pol == nil {
				return nil, ErrFlowPolicy
			}
			nodes[cur].Policy = pol
			i += 2
		case eqFold(argv[i], "UNDER") && cur > 0:
			if i+2 >= len(argv) || nodes[cur].under {
				return nil, store.ErrSyntax
			}
			if !validQueue(argv[i+1]) {
				return nil, ErrInvalidQueue
			}
			up, ok := byRef[flowRef(string(argv[i+1]), string(argv[i+2]))]
			if !ok || up == cur {
				return nil, ErrFlowUnder
			}
			n := &nodes[cur]
			n.under = true
			nodes[0].Kids = nodes[0].Kids[:len(nodes[0].Kids)-1]
			n.Up, n.Depth = up, nodes[up].Depth+1
			if n.Depth > MaxFlowDepth {
				return nil, ErrFlowDepth
			}
			nodes[up].Kids = append(nodes[up].Kids, cur)
			i += 3
		case eqFold(argv[i], "CHILD"):
			if i+3 >= len(argv) {
				return nil, store.ErrSyntax
			}
			if !validQueue(argv[i+1]) {
				return nil, ErrInvalidQueue
			}
			k := vs.keysFor(argv[i+1])
			n := flowNode{K: k, ID: string(argv[i+2]), Payload: argv[i+3], Up: 0, Depth: 1}
			n.Ref = flowRef(k.Queue, n.ID)
			if _, dup := byRef[n.Ref]; dup {
				return nil, errFlowDup(n.Ref)
			}
			cur = len(nodes)
			byRef[n.Ref] = cur
			nodes = append(nodes, n)
			nodes[0].Kids = append(nodes[0].Kids, cur)
			i += 4
		default:
			return nil, store.ErrSyntax
		}
	}
	if len(nodes) == 1 {
		return nil, store.ErrSyntax
	}
	for j := range nodes {
		if nodes[j].Policy != nil && len(nodes[j].Kids) == 0 {
			return nil, ErrFlowPolicyLeaf
		}
	}
	for j := range nodes {
		n := &nodes[j]
		if !ValidID([]byte(n.ID)) {
			return nil, ErrKind
		}
		n.RowKey = n.K.Row(n.ID)
		n.Payload = clone(n.Payload)
	}
	return nodes, ""
}

// kidsRefs is node n's children as roster fields, in order.
func kidsRefs(nodes []flowNode, n *flowNode) []string {
	out := make([]string, len(n.Kids))
	for i, c := range n.Kids {
		out[i] = nodes[c].Ref
	}
	return out
}

// nodePolicy is the stored policy of n (fail when none was given).
func nodePolicy(n *flowNode) []byte {
	if n.Policy == nil {
		return vFail
	}
	return n.Policy
}

// FlowChild is one child of an EMQ.FLOW (docs/verbs.md §4.25.1): Queue
// (valid), ID (a valid job id, new), Payload; UnderQueue and UnderID name
// the job of the flow it is a child of, one named before it ("": the
// root; UNDER uq uid); OnChildFail is the policy for its own children
// (fail, ignore or continue; "": not given, fail; only on a child that has
// children).
type FlowChild struct {
	Queue, ID           string
	Payload             []byte
	UnderQueue, UnderID string
	OnChildFail         string
}

// FlowArgs are EMQ.FLOW's arguments (docs/verbs.md §4.25.1): the root's
// Queue, ID, Payload and OnChildFail (as FlowChild's), and Children, at
// least one, in order. Depth is at most MaxFlowDepth and no job is named
// twice (the wire adapter has checked all of it).
type FlowArgs struct {
	Queue, ID   string
	Payload     []byte
	OnChildFail string
	Children    []FlowChild
	// nodes is the tree the wire adapter parsed these arguments from.
	nodes []flowNode
}

// Argv is EMQ.FLOW q id payload [ON_CHILD_FAIL p], then each child as
// CHILD cq cid payload [UNDER uq uid] [ON_CHILD_FAIL p].
func (a *FlowArgs) Argv() [][]byte {
	argv := argvOf("EMQ.FLOW", a.Queue, a.ID)
	argv = append(argv, a.Payload)
	if a.OnChildFail != "" {
		argv = append(argv, []byte("ON_CHILD_FAIL"), []byte(a.OnChildFail))
	}
	for i := range a.Children {
		ch := &a.Children[i]
		argv = append(argv, []byte("CHILD"), []byte(ch.Queue), []byte(ch.ID), ch.Payload)
		if ch.UnderQueue != "" {
			argv = append(argv, []byte("UNDER"), []byte(ch.UnderQueue), []byte(ch.UnderID))
		}
		if ch.OnChildFail != "" {
			argv = append(argv, []byte("ON_CHILD_FAIL"), []byte(ch.OnChildFail))
		}
	}
	return argv
}

// FlowResult is what EMQ.FLOW did: Jobs, the jobs of the flow (the reply),
// and Duplicate, the root existed as this same flow and nothing was
// written (docs/verbs.md §4.25.1).
type FlowResult struct {
	Jobs      int
	Duplicate bool
}

// flowNodes builds a's tree (the adapter's, when it parsed a). An UNDER
// that names no earlier job of the flow refuses with ErrFlowUnder.
func (vs *Verbs) flowNodes(a *FlowArgs) ([]flowNode, refusal) {
	if a.nodes != nil {
		return a.nodes, noRefusal
	}
	policy := func(s string) []byte {
		if s == "" {
			return nil
		}
		return policyArg([]byte(s))
	}
	node := func(q, id string, payload []byte) flowNode {
		k := vs.keysOf(q)
		return flowNode{K: k, ID: id, RowKey: k.Row(id), Ref: flowRef(k.Queue, id), Payload: clone(payload)}
	}
	root := node(a.Queue, a.ID, a.Payload)
	root.Up, root.Policy = -1, policy(a.OnChildFail)
	nodes := make([]flowNode, 1, 1+len(a.Children))
	nodes[0] = root
	byRef := map[string]int{root.Ref: 0}
	for i := range a.Children {
		ch := &a.Children[i]
		n := node(ch.Queue, ch.ID, ch.Payload)
		n.Policy = policy(ch.OnChildFail)
		if ch.UnderQueue != "" {
			up, ok := byRef[flowRef(ch.UnderQueue, ch.UnderID)]
			if !ok {
				return nil, refuse(ErrFlowUnder)
			}
			n.Up, n.under = up, true
		}
		n.Depth = nodes[n.Up].Depth + 1
		cur := len(nodes)
		byRef[n.Ref] = cur
		nodes = append(nodes, n)
		nodes[n.Up].Kids = append(nodes[n.Up].Kids, cur)
	}
	return nodes, noRefusal
}

// flowArgs is the typed form of the adapter's parsed nodes.
func flowArgs(nodes []flowNode) FlowArgs {
	root := &nodes[0]
	a := FlowArgs{Queue: root.K.Queue, ID: root.ID, Payload: root.Payload, OnChildFail: string(root.Policy),
		Children: make([]FlowChild, len(nodes)-1), nodes: nodes}
	for j := 1; j < len(nodes); j++ {
		n := &nodes[j]
		ch := FlowChild{Queue: n.K.Queue, ID: n.ID, Payload: n.Payload, OnChildFail: string(n.Policy)}
		if n.Up > 0 {
			ch.UnderQueue, ch.UnderID = nodes[n.Up].K.Queue, nodes[n.Up].ID
		}
		a.Children[j-1] = ch
	}
	return a
}

func (vs *Verbs) cmdFlow(c *store.Ctx) {
	nodes, e := vs.parseFlow(c.Argv)
	if e != "" {
		c.W.Error(e)
		return
	}
	a := flowArgs(nodes)
	r, err := vs.Flow(c, &a)
	if err != nil {
		replyRefusal(c, err)
		return
	}
	c.W.Int(int64(r.Jobs))
}

// Flow is EMQ.FLOW (docs/verbs.md §4.25.1): it enqueues the root waiting
// for its children and every leaf as pending, or, when the root exists as
// this same flow, writes nothing (Duplicate). Refusals: the root exists
// and is not this flow, a child exists (EMQFLOW), or a key read holds the
// wrong type.
func (vs *Verbs) Flow(c *store.Ctx, a *FlowArgs) (FlowResult, error) {
	nodes, ref := vs.flowNodes(a)
	if ref.Refused() {
		return FlowResult{}, vs.refused(c, ref)
	}
	dup, p, ref := judgeFlow(c.DB, nodes, c.NowMs)
	if ref.Refused() {
		return FlowResult{}, vs.refused(c, ref)
	}
	if dup {
		return FlowResult{Jobs: len(nodes), Duplicate: true}, nil
	}
	apply(c, p)
	woken := map[*Keys]bool{}
	for j := range nodes {
		n := &nodes[j]
		vs.count(c, n.K, Enqueued, 1)
		vs.event(c, n.K, EvEnqueued, n.ID)
		if len(n.Kids) == 0 && !woken[n.K] {
			woken[n.K] = true
			vs.wake(c, n.K)
		}
	}
	return FlowResult{Jobs: len(nodes)}, nil
}

// judgeFlow is EMQ.FLOW's read pass and judgement (docs/verbs.md
// §4.25.1). dup: the root exists and is this flow (same direct children in
// the same order, same policy): nothing is written and the reply is the
// first one's. Otherwise the root and every child must be new.
func judgeFlow(d *store.DB, nodes []flowNode, now int64) (dup bool, p *plan.Plan, ref refusal) {
	root := &nodes[0]
	row, kind := hashKind(d, root.RowKey)
	if kind == keyWrong {
		return false, nil, wrongType(root.RowKey)
	}
	if row != nil {
		if _, isFlow := row.Get(string(fChildren)); !isFlow {
			return false, nil, refuse(errFlowExists(root.Ref))
		}
		pol, _ := row.Get(string(fOnChildFail))
		ros, rk := hashKind(d, root.K.Roster(root.ID))
		if rk == keyWrong {
			return false, nil, wrongType(root.K.Roster(root.ID))
		}
		want := kidsRefs(nodes, root)
		if ros == nil || ros.Len() != len(want) || !bytes.Equal(pol, nodePolicy(root)) {
			return false, nil, refuse(errFlowExists(root.Ref))
		}
		i := 0
		same := true
		ros.Range(func(f string, _ []byte) bool {
			if f != want[i] {
				same = false
				return false
			}
			i++
			return true
		})
		if !same {
			return false, nil, refuse(errFlowExists(root.Ref))
		}
		return true, nil, noRefusal
	}
	var stale []string // leftover roster keys of a parent row that is gone
	lts := map[string]*laneTx{}
	var ltOrder []*laneTx
	for j := range nodes {
		n := &nodes[j]
		if j > 0 {
			_, kind := hashKind(d, n.RowKey)
			if kind == keyWrong {
				return false, nil, wrongType(n.RowKey)
			}
			if kind == keyOK {
				return false, nil, refuse(errFlowChildExists(n.Ref))
			}
		}
		set := n.K.Pending
		if len(n.Kids) > 0 {
			set = n.K.Waiting
			for _, key := range []string{n.K.Roster(n.ID), n.K.RosterOut(n.ID)} {
				_, rk := hashKind(d, key)
				if rk == keyWrong {
					return false, nil, wrongType(key)
				}
				if rk == keyOK {
					stale = append(stale, key)
				}
			}
		}
		if _, sk := zsetKind(d, set); sk == keyWrong {
			return false, nil, wrongType(set)
		}
		if len(n.Kids) == 0 && lts[n.K.Queue] == nil {
			// A leaf enters pending through seam 1: with its queue's lanes.
			lt, ref := readLanes(d, n.K, now)
			if ref.Refused() {
				return false, nil, ref
			}
			if lt.on {
				if _, ref := lt.lane(DefaultLane); ref.Refused() {
					return false, nil, ref
				}
			}
			lts[n.K.Queue] = lt
			ltOrder = append(ltOrder, lt)
		}
	}
	p = newPlan(3*len(nodes) + len(stale))
	for _, key := range stale {
		p.Del(key)
	}
	for j := range nodes {
		n := &nodes[j]
		var extra [][]byte
		if n.Up >= 0 {
			extra = append(extra, fParent, []byte(nodes[n.Up].Ref))
		}
		if len(n.Kids) == 0 {
			addJobRow(p, n.K, lts[n.K.Queue], n.RowKey, n.ID, vPending, n.Payload, now, nil, n.K.Pending, 0, nil, extra...)
			continue
		}
		cnt := countBytes(int64(len(n.Kids)))
		extra = append(extra, fChildren, cnt, fChildrenLeft, cnt, fOnChildFail, nodePolicy(n))
		addJobRow(p, n.K, nil, n.RowKey, n.ID, vWaiting, n.Payload, now, nil, n.K.Waiting, 0, nil, extra...)
		fv := make([][]byte, 0, 2*len(n.Kids))
		for _, r := range kidsRefs(nodes, n) {
			fv = append(fv, []byte(r), vPending)
		}
		p.HSetBytes(n.K.Roster(n.ID), fv...)
	}
	for _, lt := range ltOrder {
		p = lt.flush(p)
	}
	return false, p, noRefusal
}

// ---------------------------------------------------------------------------
// EMQ.CHILDREN q parent_id

// cmdChildren answers the children of a flow parent (docs/verbs.md
// §4.25.5): nil (as EMQ.JOB for no row) when q has no roster for parent_id, else one map per
// child in the flow's order: queue, id, state, and result or error.
