package check

import (
	"fmt"
	"sort"
	"strings"
)

// Violation is one property a history broke, with the operations that
// show it.
type Violation struct {
	Kind   string // lost, double-grant, double-accept, superseded, completed-twice, ...
	ID     string // the job
	Detail string
	Ops    []Op // the excerpt of the history that shows it
}

func (v Violation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: %s", v.Kind, v.ID, v.Detail)
	for i := range v.Ops {
		fmt.Fprintf(&b, "\n    %s", v.Ops[i].String())
	}
	return b.String()
}

// The kinds of violation Check reports.
const (
	VLost           = "lost"              // an acknowledged enqueue is nowhere at the end
	VDoubleGrant    = "double-grant"      // one token handed out by two acknowledged claims
	VDoubleAccept   = "double-accept"     // two accepted COMPLETE/FAIL/REQUEUE/DELAY for one claim
	VSuperseded     = "superseded"        // a token verb accepted after a newer claim was acknowledged
	VTokenBack      = "token-order"       // a later claim handed out a token not above an earlier one
	VCompletedTwice = "completed-twice"   // two accepted COMPLETEs for one job
	VResurrected    = "resurrected"       // a job claimed, or still in the keyspace, after it completed or died
	VAttempts       = "attempts"          // the final attempts disagrees with the claims
	VFailures       = "failures"          // failures disagrees with the accepted FAILs
	VFailVerdict    = "fail-verdict"      // dead/scheduled disagrees with failures and max_attempts
	VExemption      = "restart-exemption" // a lease granted before a restart was charged, or one after it was not
	VStalled        = "stalled"           // the final stalled disagrees with the counted expiries
	VLinearizable   = "not-linearizable"  // the per-job state machine has no linearization (porcupine)
	VRefusedWrote   = "refused-wrote"     // a job whose enqueue was refused is in the keyspace
	VPriority       = "priority"          // a row's priority differs from its enqueue's, or pending is out of priority order
	VFlow           = "flow"              // a flow parent claimed before its children could have ended, or waiting after all ended
	VLane           = "lane-max-active"   // more leases of a lane held at one instant than its MAX_ACTIVE
	VResult         = "result"            // a retained row's result differs from its COMPLETE's RESULT, or the row is missing
	VSchedule       = "schedule"          // a slot fired twice, lost, missed without a fault, or the schedule's counts disagree
)

// jobOps is the part of a history that names one job.
type jobOps struct {
	enq     *Op
	grants  []grantAt // acknowledged claims that handed it out
	verbs   []*Op     // token verbs, every status
	sweeps  []sweepAt // acknowledged sweeps that listed it
	related []*Op     // everything above, in history order (for the porcupine partition)
	// flowChildren: a flow parent's children (its acknowledged EMQ.FLOW).
	flowChildren []string
}

type grantAt struct {
	op *Op
	g  Grant
}

type sweepAt struct {
	op   *Op
	dead bool
}

func index(h *History) (map[string]*jobOps, []*Op, []*Op) {
	jobs := map[string]*jobOps{}
	get := func(id string) *jobOps {
		j := jobs[id]
		if j == nil {
			j = &jobOps{}
			jobs[id] = j
		}
		return j
	}
	var unknownClaims, unknownSweeps []*Op
	for i := range h.Ops {
		o := &h.Ops[i]
		switch o.Kind {
		case Enqueue:
			if o.Status == OK && o.ID != "" {
				j := get(o.ID)
				j.enq = o
				j.related = append(j.related, o)
			}
		case Flow:
			if o.Status == OK {
				p := get(o.ID)
				p.enq, p.flowChildren = o, o.IDs
				p.related = append(p.related, o)
			}
			fallthrough
		case Many:
			if o.Status == OK {
				for _, id := range o.IDs {
					j := get(id)
					j.enq = o
					j.related = append(j.related, o)
				}
			}
		case Claim:
			switch o.Status {
			case OK:
				for _, g := range o.Grants {
					j := get(g.ID)
					j.grants = append(j.grants, grantAt{o, g})
					j.related = append(j.related, o)
				}
			case Unknown:
				unknownClaims = append(unknownClaims, o)
			}
		case Promote, List:
			// Name no job: promotion is invisible to the model (scheduled
			// and pending are one phase), a listing is a read.
		case Sweep:
			switch o.Status {
			case OK:
				for _, id := range o.Recovered {
					j := get(id)
					j.sweeps = append(j.sweeps, sweepAt{o, false})
					j.related = append(j.related, o)
				}
				for _, id := range o.Dead {
					j := get(id)
					j.sweeps = append(j.sweeps, sweepAt{o, true})
					j.related = append(j.related, o)
				}
			case Unknown:
				unknownSweeps = append(unknownSweeps, o)
			}
		default:
			j := get(o.ID)
			j.verbs = append(j.verbs, o)
			j.related = append(j.related, o)
			if o.Next { // COMPLETE ... NEXT: also a claim
				switch o.Status {
				case OK:
					for _, g := range o.Grants {
						gj := get(g.ID)
						gj.grants = append(gj.grants, grantAt{o, g})
						gj.related = append(gj.related, o)
					}
				case Unknown:
					unknownClaims = append(unknownClaims, o)
				}
			}
		}
	}
	for id := range h.Final {
		get(id)
	}
	return jobs, unknownClaims, unknownSweeps
}

// isTerminalVerb: the token verbs that end a lease (docs/verbs.md §4.4):
// at most one of them is accepted per claim.
func isTerminalVerb(k Kind) bool { return k == Complete || k == Fail || k == Requeue || k == Delay }

// isTokenVerb: the six verbs of the guard (docs/verbs.md §4.4), the ones
// that present a token.
func isTokenVerb(k Kind) bool { return isTerminalVerb(k) || k == Extend || k == Progress }

// Check checks a history against the queue's model and returns every
// violation found, sorted by job id then kind (nil: none). The properties
// and the rule each follows are listed in bench/README.md ("The history
// checker"); the linearizability of each job's state machine is checked
// by Linearizable, which Check calls.
func Check(h *History) []Violation {
	v, _, _ := powerFilter(h, checkAll(h))
	return v
}

// checkAll is Check without the power-cut window (power.go).
func checkAll(h *History) []Violation {
	jobs, unknownClaims, unknownSweeps := index(h)
	var out []Violation
	add := func(kind, id, detail string, ops ...*Op) {
		v := Violation{Kind: kind, ID: id, Detail: detail}
		for _, o := range ops {
			v.Ops = append(v.Ops, *o)
		}
		out = append(out, v)
	}
	ids := make([]string, 0, len(jobs))
	for id := range jobs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		j := jobs[id]
		row, present := h.Final[id]
		var completes, completesMaybe, removes, removesMaybe, revives, resetsOK, resetsMaybe, reads []*Op
		for _, o := range j.verbs {
			if o.Kind == Revive && o.Reset {
				switch o.Status {
				case OK:
					resetsOK = append(resetsOK, o)
				case Unknown:
					resetsMaybe = append(resetsMaybe, o)
				}
			}
			switch {
			case o.Kind == Read && o.Status == OK:
				reads = append(reads, o)
			case o.Kind == Complete && o.Status == OK:
				completes = append(completes, o)
			case o.Kind == Complete && o.Status == Unknown:
				completesMaybe = append(completesMaybe, o)
			case o.Kind == Remove && o.Status == OK && o.Removed == 1:
				removes = append(removes, o)
			case o.Kind == Remove && o.Status == Unknown:
				removesMaybe = append(removesMaybe, o)
			case o.Kind == Revive && o.Status != Refused:
				revives = append(revives, o)
			}
		}

		// No acknowledged enqueue is lost: the row is there, or a
		// COMPLETE or REMOVE that may have happened deleted it
		// (docs/verbs.md §4.5, §4.15).
		if j.enq != nil && !present && len(completes)+len(completesMaybe)+len(removes)+len(removesMaybe) == 0 {
			add(VLost, id, "acknowledged enqueue has no row at the end and no COMPLETE or REMOVE was sent", j.enq)
		}
		// A retained completion keeps its row, with the RESULT its COMPLETE
		// sent (docs/verbs.md §4.5, §4.21): only a REMOVE deletes it.
		if h.Retain {
			if !present && len(completes) > 0 && len(removes)+len(removesMaybe) == 0 {
				add(VResult, id, "completed under retention, yet no row at the end and no REMOVE was sent", completes...)
			}
			if present && row.State == "completed" {
				cands := completes
				if len(cands) == 0 {
					cands = completesMaybe
				}
				if len(cands) == 0 {
					add(VResult, id, "a completed row at the end, and no COMPLETE was sent")
				} else if !resultMatches(cands, row.HasResult, row.Result) {
					add(VResult, id, fmt.Sprintf("the retained row's result is %s, not what its COMPLETE sent", showResult(row.HasResult, row.Result)), cands...)
				}
			}
			// EMQ.JOB after an accepted COMPLETE shows the completed row and
			// its result, unless a REMOVE may have deleted it first.
			for _, rd := range reads {
				var before []*Op
				for _, c := range completes {
					if c.Return < rd.Call {
						before = append(before, c)
					}
				}
				if len(before) == 0 {
					continue
				}
				removed := false
				for _, o := range j.verbs {
					removed = removed || (o.Kind == Remove && o.Status != Refused && o.Call < rd.Return)
				}
				switch {
				case !rd.Seen && removed:
				case !rd.Seen || rd.State != "completed":
					add(VResult, id, fmt.Sprintf("EMQ.JOB after an accepted COMPLETE answered %s", map[bool]string{true: "state " + rd.State, false: "nil"}[rd.Seen]), before[0], rd)
				case !resultMatches(before, rd.HasResult, rd.Result):
					add(VResult, id, fmt.Sprintf("EMQ.JOB answered result %s, not what the accepted COMPLETE sent", showResult(rd.HasResult, rd.Result)), before[0], rd)
				}
			}
		}

		// Tokens: one grant per token, growing in real time.
		byTok := map[int64]*Op{}
		var maxTok int64
		for _, ga := range j.grants {
			if prev := byTok[ga.g.Token]; prev != nil {
				add(VDoubleGrant, id, fmt.Sprintf("token %d handed out twice", ga.g.Token), prev, ga.op)
			}
			byTok[ga.g.Token] = ga.op
			maxTok = max(maxTok, ga.g.Token)
		}
		for _, a := range j.grants {
			for _, b := range j.grants {
				if a.op.Return < b.op.Call && a.g.Token >= b.g.Token {
					add(VTokenBack, id, fmt.Sprintf("token %d granted after token %d was acknowledged", b.g.Token, a.g.Token), a.op, b.op)
				}
			}
		}

		// Token verbs: at most one accepted release (COMPLETE, FAIL, REQUEUE,
		// DELAY) per claim, none for a
		// superseded token (docs/verbs.md §4.4).
		accepted := map[int64][]*Op{}
		for _, o := range j.verbs {
			if o.Status != OK || !isTokenVerb(o.Kind) {
				continue
			}
			if isTerminalVerb(o.Kind) {
				accepted[o.Token] = append(accepted[o.Token], o)
			}
			for _, ga := range j.grants {
				if ga.g.Token > o.Token && ga.op.Return < o.Call {
					add(VSuperseded, id, fmt.Sprintf("%s with token %d accepted after token %d was granted", o.Kind, o.Token, ga.g.Token), ga.op, o)
					break
				}
			}
		}
		toks := make([]int64, 0, len(accepted))
		for t := range accepted {
			toks = append(toks, t)
		}
		sort.Slice(toks, func(a, b int) bool { return toks[a] < toks[b] })
		for _, t := range toks {
			if ops := accepted[t]; len(ops) > 1 {
				add(VDoubleAccept, id, fmt.Sprintf("%d accepted releases of token %d", len(ops), t), ops...)
			}
		}

		// Every job ends one way.
		if len(completes) > 1 {
			add(VCompletedTwice, id, fmt.Sprintf("%d accepted COMPLETEs", len(completes)), completes...)
		}
		var ends []*Op // completions and deaths, acknowledged
		ends = append(ends, completes...)
		for _, o := range j.verbs {
			if o.Kind == Fail && o.Status == OK && o.Verdict == "dead" {
				ends = append(ends, o)
			}
		}
		for _, s := range j.sweeps {
			if s.dead {
				ends = append(ends, s.op)
			}
		}
		ends = append(ends, removes...)
		for _, e := range ends {
			for _, ga := range j.grants {
				if ga.op.Call <= e.Return {
					continue
				}
				revived := false // a death undone by EMQ.REPROCESS in between (docs/verbs.md §4.13)
				for _, rv := range revives {
					if e.Kind != Complete && e.Kind != Remove && rv.Return > e.Call && rv.Call < ga.op.Return {
						revived = true
					}
				}
				if !revived {
					add(VResurrected, id, "claimed after it completed, died or was removed", e, ga.op)
				}
			}
		}
		if len(completes) > 0 && present && !(h.Retain && row.State == "completed") {
			add(VResurrected, id, fmt.Sprintf("completed, yet its row is %s at the end", row.State), completes[0])
		}
		if len(removes) > 0 && present {
			add(VResurrected, id, fmt.Sprintf("removed, yet its row is %s at the end", row.State), removes[0])
		}
		if !present {
			continue
		}

		// attempts: the last token, plus at most the claims whose reply was lost.
		if row.Attempts < maxTok {
			add(VAttempts, id, fmt.Sprintf("final attempts %d below the granted token %d", row.Attempts, maxTok))
		} else if row.Attempts > maxTok+int64(len(unknownClaims)) {
			add(VAttempts, id, fmt.Sprintf("final attempts %d above the granted token %d plus %d unanswered claims", row.Attempts, maxTok, len(unknownClaims)))
		}

		// failures: every accepted FAIL adds one, an unanswered one maybe;
		// EMQ.REPROCESS ... RESET clears them (docs/verbs.md §4.13). A
		// FAIL that returned before an accepted RESET was called is
		// cleared for certain; one called after every accepted RESET had
		// returned counts for certain, unless a RESET went unanswered
		// (it may have come after anything).
		rs := resetBounds(resetsOK, resetsMaybe)
		var fLow, fHigh int64
		for _, o := range j.verbs {
			if o.Kind != Fail {
				continue
			}
			switch o.Status {
			case OK:
				if !rs.maybe && o.Call > rs.lastReturn {
					fLow++
				}
				if o.Return > rs.lastCall {
					fHigh++
				}
				if dead := o.FailCount >= o.MaxAttempts; dead != (o.Verdict == "dead") {
					add(VFailVerdict, id, fmt.Sprintf("failures %d with max_attempts %d answered %s", o.FailCount, o.MaxAttempts, o.Verdict), o)
				}
			case Unknown:
				fHigh++
			}
		}
		if row.Failures < fLow || row.Failures > fHigh {
			add(VFailures, id, fmt.Sprintf("final failures %d, FAILs since the last RESET between %d and %d (%d RESET accepted, %d unanswered)", row.Failures, fLow, fHigh, len(resetsOK), len(resetsMaybe)))
		}

		// stalled and the restart exemption (docs/verbs.md §1.5, §4.11);
		// RESET clears stalled as it clears failures.
		var minC, maxC int64 // over the whole run, for the final row
		type judged struct{ counted, sure bool }
		js := make([]judged, len(j.sweeps))
		for i, s := range j.sweeps {
			counted, sure := leaseCounted(j, s.op, unknownSweeps)
			js[i] = judged{counted, sure}
			if sure && counted && !rs.maybe && s.op.Call > rs.lastReturn {
				minC++
			}
			if (counted || !sure) && s.op.Return > rs.lastCall {
				maxC++
			}
		}
		for i, s := range j.sweeps {
			if js[i].sure && !js[i].counted && s.dead {
				add(VExemption, id, "a lease granted by an earlier server process was dead-lettered by the sweep", append(leaseOps(j, s.op), s.op)...)
			}
			// The counted expiries up to this sweep since the RESETs that
			// may (for minC) or must (for maxC) have come before it.
			lowCut, highCut := resetsBefore(resetsOK, resetsMaybe, s.op)
			var lo, hi int64
			for k := 0; k <= i; k++ {
				o := j.sweeps[k].op
				if js[k].sure && js[k].counted && o.Call > lowCut {
					lo++
				}
				if (js[k].counted || !js[k].sure) && o.Return > highCut {
					hi++
				}
			}
			var hidden int64
			for _, u := range unknownSweeps {
				if u.Call < s.op.Return {
					hidden++
				}
			}
			if s.dead && hi+hidden < h.MaxStalled {
				add(VExemption, id, fmt.Sprintf("dead-lettered by the sweep after at most %d counted expiries (max_stalled %d)", hi+hidden, h.MaxStalled), append(leaseOps(j, s.op), s.op)...)
			}
			// Only a counted expiry must kill at the cap: an exempt one
			// (a lease of an earlier process) is recovered whatever the
			// count, as a job revived without RESET keeps stalled at the
			// cap (docs/verbs.md §1.5, §4.13).
			if !s.dead && lo >= h.MaxStalled && js[i].sure && js[i].counted {
				add(VExemption, id, fmt.Sprintf("recovered after %d counted expiries (max_stalled %d): should have died", lo, h.MaxStalled), append(leaseOps(j, s.op), s.op)...)
			}
		}
		if row.Stalled < minC || row.Stalled > maxC+int64(len(unknownSweeps)) {
			add(VStalled, id, fmt.Sprintf("final stalled %d, counted expiries between %d and %d, %d unanswered sweeps", row.Stalled, minC, maxC, len(unknownSweeps)))
		}
	}
	// A refused enqueue wrote nothing (docs/verbs.md §2.2): no row carries
	// its payload (every payload of a run is unique).
	refused := map[string]*Op{}
	for i := range h.Ops {
		if o := &h.Ops[i]; (o.Kind == Enqueue || o.Kind == Many) && o.Status == Refused {
			for _, p := range o.Payloads {
				refused[p] = o
			}
		}
	}
	for _, id := range ids {
		if row, ok := h.Final[id]; ok && row.Payload != "" {
			if o := refused[row.Payload]; o != nil {
				add(VRefusedWrote, id, fmt.Sprintf("its payload %q was sent by an enqueue refused with %q", row.Payload, o.Err), o)
			}
		}
	}
	// Flows (docs/verbs.md §4.25, policy ignore): a parent is released
	// once every child has ended (completed, dead or removed), and not
	// before: no claim of the parent answered before some child had even
	// been sent a verb that could end it; at the end, a parent still
	// waiting has a child still pending, scheduled or active, and one
	// whose children all ended is no longer waiting.
	for _, id := range ids {
		j := jobs[id]
		if len(j.flowChildren) == 0 {
			continue
		}
		unended := 0
		for _, c := range j.flowChildren {
			if row, ok := h.Final[c]; ok && row.State != "dead" && row.State != "completed" {
				unended++
			}
		}
		if row, ok := h.Final[id]; ok && row.State == "waiting" && unended == 0 {
			add(VFlow, id, fmt.Sprintf("still waiting at the end, though all %d children ended", len(j.flowChildren)), j.enq)
		}
		revived := false // a dead child brought back after the release is a plain job again (§4.25.3)
		for _, c := range j.flowChildren {
			if cj := jobs[c]; cj != nil {
				for _, o := range cj.verbs {
					revived = revived || (o.Kind == Revive && o.Status != Refused)
				}
			}
		}
		if row, ok := h.Final[id]; ok && row.State != "waiting" && unended > 0 && len(j.grants) == 0 && !revived {
			add(VFlow, id, fmt.Sprintf("%s at the end, never claimed, while %d of its children have not ended", row.State, unended), j.enq)
		}
		for _, ga := range j.grants {
			for _, c := range j.flowChildren {
				if !mayHaveEnded(jobs[c], ga.op.Return, unknownSweeps) {
					add(VFlow, id, fmt.Sprintf("claimed before its child %s could have ended", c), j.enq, ga.op)
				}
			}
		}
	}

	// Priorities (docs/verbs.md §4.2, §4.3.1): a row keeps the priority
	// its enqueue sent through every return to pending (requeue, failure,
	// recovery, restart exemption, reprocess, replay), and EMQ.LIST
	// pending at the end walks every lane's set in turn, the default lane
	// first, then the others by name (§4.26.6), each ordered by priority,
	// then id.
	for _, id := range ids {
		if e := jobs[id].enq; e != nil && e.Kind == Enqueue {
			if row, ok := h.Final[id]; ok && row.Priority != e.Priority {
				add(VPriority, id, fmt.Sprintf("the row's priority is %d, its enqueue sent %d", row.Priority, e.Priority), e)
			}
		}
	}
	for i := 1; i < len(h.PendingOrder); i++ {
		a, b := h.PendingOrder[i-1], h.PendingOrder[i]
		ra, rb := h.Final[a], h.Final[b]
		if ra.Lane != rb.Lane {
			if ra.Lane > rb.Lane {
				add(VPriority, b, fmt.Sprintf("pending lists %s (lane %q) before it (lane %q)", a, ra.Lane, rb.Lane))
			}
			continue
		}
		pa, pb := ra.Priority, rb.Priority
		if pa > pb || (pa == pb && a >= b) {
			add(VPriority, b, fmt.Sprintf("pending lists %s (priority %d) before it (priority %d)", a, pa, pb))
		}
	}
	lv, _, _ := laneLimits(h, jobs, unknownSweeps)
	out = append(out, lv...)
	sv, _, _, _ := schedChecks(h, jobs)
	out = append(out, sv...)
	out = append(out, Linearizable(h)...)
	sort.SliceStable(out, func(a, b int) bool { return out[a].ID < out[b].ID })
	return out
}

// resultMatches says whether some COMPLETE of cands sent the result
// (has false: no RESULT).
func resultMatches(cands []*Op, has bool, result string) bool {
	for _, c := range cands {
		if c.HasResult == has && (!has || c.Result == result) {
			return true
		}
	}
	return false
}

func showResult(has bool, result string) string {
	if !has {
		return "absent"
	}
	return fmt.Sprintf("%q", result)
}

// resets are the bounds a job's EMQ.REPROCESS ... RESET calls put on
// its counters over the whole run: lastCall is the latest call of an
// accepted RESET (what returned before it was cleared for certain),
// lastReturn the latest reply of one (what was called after it counts,
// unless maybe: a RESET went unanswered and may have come after
// anything). Without a RESET both are -1.
type resets struct {
	lastCall, lastReturn int64
	maybe                bool
}

func resetBounds(ok, maybe []*Op) resets {
	r := resets{lastCall: -1, lastReturn: -1, maybe: len(maybe) > 0}
	for _, o := range ok {
		r.lastCall = max(r.lastCall, o.Call)
		r.lastReturn = max(r.lastReturn, o.Return)
	}
	return r
}

// resetsBefore bounds the RESETs before sweep s: lowCut is the latest
// reply of a RESET that may have come before s (an unanswered one: the
// end of time), so a counted expiry called after it is still counted at
// s for certain; highCut is the latest call of an accepted RESET that
// returned before s was sent, so an expiry that returned before it was
// cleared for certain.
func resetsBefore(ok, maybe []*Op, s *Op) (lowCut, highCut int64) {
	lowCut, highCut = -1, -1
	for _, o := range ok {
		if o.Call < s.Return {
			lowCut = max(lowCut, o.Return)
		}
		if o.Return < s.Call {
			highCut = max(highCut, o.Call)
		}
	}
	for _, o := range maybe {
		if o.Call < s.Return {
			lowCut = 1<<63 - 1
		}
	}
	return lowCut, highCut
}

// laneLimits checks MAX_ACTIVE (docs/verbs.md §4.26.3): at no instant
// are more leases of a lane certainly held than its cap. A lease is
// certainly held from its claim's reply until the call of the first
// operation that may have ended it: a release with its token (not
// refused), a sweep that listed the job, an unanswered sweep, a later
// claim of the job; a lease nothing may have ended is held to the end.
// Indeterminacy only shortens the intervals, so a report is certain.
//
// It also returns each lane's peak of certainly held leases and the number
// of lane leases judged.
func laneLimits(h *History, jobs map[string]*jobOps, unknownSweeps []*Op) ([]Violation, map[string]int, int) {
	if len(h.LaneMax) == 0 {
		return nil, nil, 0
	}
	peaks, leases := map[string]int{}, 0
	type ev struct {
		t     int64
		delta int
		op    *Op
		id    string
	}
	byLane := map[string][]ev{}
	var end int64
	for i := range h.Ops {
		end = max(end, h.Ops[i].Return)
	}
	for id, j := range jobs {
		lane := ""
		if j.enq != nil && j.enq.Kind == Enqueue {
			lane = j.enq.Lane
		}
		if row, ok := h.Final[id]; ok && row.Lane != "" {
			lane = row.Lane
		}
		if h.LaneMax[lane] <= 0 {
			continue
		}
		for _, ga := range j.grants {
			from, to := ga.op.Return, end+1
			for _, o := range j.verbs {
				if isTerminalVerb(o.Kind) && o.Token == ga.g.Token && o.Status != Refused && o.Call < to {
					to = o.Call
				}
			}
			for _, sw := range j.sweeps {
				if sw.op.Return > ga.op.Call && sw.op.Call < to {
					to = sw.op.Call
				}
			}
			for _, u := range unknownSweeps {
				if u.Return > ga.op.Call && u.Call < to {
					to = u.Call
				}
			}
			for _, other := range j.grants {
				if other.g.Token > ga.g.Token && other.op.Call < to {
					to = other.op.Call
				}
			}
			if to > from {
				leases++
				byLane[lane] = append(byLane[lane], ev{from, 1, ga.op, id}, ev{to, -1, nil, id})
			}
		}
	}
	var out []Violation
	lanes := make([]string, 0, len(byLane))
	for l := range byLane {
		lanes = append(lanes, l)
	}
	sort.Strings(lanes)
	for _, l := range lanes {
		evs := byLane[l]
		sort.Slice(evs, func(a, b int) bool {
			if evs[a].t != evs[b].t {
				return evs[a].t < evs[b].t
			}
			return evs[a].delta < evs[b].delta // an end before a start at the same instant
		})
		held, reported := 0, false
		for _, e := range evs {
			held += e.delta
			peaks[l] = max(peaks[l], held)
			if held > h.LaneMax[l] && !reported {
				reported = true
				out = append(out, Violation{Kind: VLane, ID: e.id, Detail: fmt.Sprintf("lane %s: %d leases certainly held at %.3fs, MAX_ACTIVE %d", l, held, float64(e.t)/1e9, h.LaneMax[l]), Ops: []Op{*e.op}})
			}
		}
	}
	return out, peaks, leases
}

// mayHaveEnded says whether job j may have ended (completed, died or been
// removed) before time t: a verb that could end it was sent before t, a
// sweep listed it dead before t, or a sweep whose reply was lost was sent
// before t.
func mayHaveEnded(j *jobOps, t int64, unknownSweeps []*Op) bool {
	if j == nil {
		return true // never seen: nothing to judge
	}
	for _, o := range j.verbs {
		if o.Call >= t || o.Status == Refused {
			continue
		}
		switch {
		case o.Kind == Complete, o.Kind == Fail && (o.Status == Unknown || o.Verdict == "dead"), o.Kind == Remove && (o.Status == Unknown || o.Removed == 1):
			return true
		}
	}
	for _, s := range j.sweeps {
		if s.dead && s.op.Call < t {
			return true
		}
	}
	for _, u := range unknownSweeps {
		if u.Call < t {
			return true
		}
	}
	return false
}

// leaseOps returns the acknowledged claim or EXTEND that last stamped the
// job's lease before sweep s was sent (nil when there is none).
func leaseOps(j *jobOps, s *Op) []*Op {
	var last *Op
	for _, ga := range j.grants {
		if ga.op.Return < s.Call && (last == nil || ga.op.Return > last.Return) {
			last = ga.op
		}
	}
	for _, o := range j.verbs {
		if o.Kind == Extend && o.Status == OK && o.Return < s.Call && (last == nil || o.Return > last.Return) {
			last = o
		}
	}
	if last == nil {
		return nil
	}
	return []*Op{last}
}

// leaseCounted says whether sweep s had to count the expiry of the job's
// lease (its lease_epoch equals the sweep's process) and whether that is
// certain. It is uncertain when the lease may have been stamped by an
// operation whose reply was lost or that ran concurrently with the sweep,
// or when the job was released after its last known grant (an unanswered
// claim may then have taken it).
func leaseCounted(j *jobOps, s *Op, unknownSweeps []*Op) (counted, sure bool) {
	lo := leaseOps(j, s)
	if len(lo) == 0 {
		return false, false
	}
	last := lo[0]
	epochs := map[string]bool{last.Epoch: true}
	for _, ga := range j.grants {
		if ga.op != last && ga.op.Call < s.Return && ga.op.Return > s.Call {
			epochs[ga.op.Epoch] = true
		}
	}
	for _, o := range j.verbs {
		if o.Call > s.Return || o.Call < last.Call || o == last {
			continue
		}
		switch {
		case o.Kind == Extend && (o.Status == Unknown || o.Return > s.Call):
			epochs[o.Epoch] = true
		case (isTerminalVerb(o.Kind) || o.Kind == Revive || o.Kind == Remove) && o.Status != Refused:
			return false, false // released: an unanswered claim may hold it now
		}
	}
	for _, other := range j.sweeps {
		if other.op != s && other.op.Call > last.Call && other.op.Call < s.Call {
			return false, false // recovered in between: a lost claim may hold it
		}
	}
	for _, u := range unknownSweeps {
		if u.Call < s.Call && u.Return > last.Call {
			return false, false // an unanswered sweep may have recovered it
		}
	}
	if len(epochs) > 1 {
		return false, false
	}
	return epochs[s.Epoch], true
}

// Summary counts violations by kind: "lost 2, not-linearizable 3" ("none"
// for none), kinds in alphabetical order.
func Summary(vs []Violation) string {
	n := map[string]int{}
	for _, v := range vs {
		n[v.Kind]++
	}
	if len(n) == 0 {
		return "none"
	}
	ks := make([]string, 0, len(n))
	for k := range n {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = fmt.Sprintf("%s %d", k, n[k])
	}
	return strings.Join(parts, ", ")
}
