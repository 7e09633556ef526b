package check

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// The per-job state machine checked for linearizability with porcupine
// (github.com/anishathalye/porcupine, Jepsen's Knossos algorithm in Go).
// A job is absent (its enqueue not yet applied), pending (pending or
// scheduled: a claim may take it), held, completed or dead; it carries its
// token (attempts) and its failures. Each job is its own partition: the
// operations that name it, then the final read. An operation without a
// reply may take effect or not, at any point after its call (porcupine's
// model is nondeterministic for it). Claims and sweeps whose reply was
// lost name no job, so they cannot be placed in a partition; a history
// that has any lets the model take them as hidden steps (a token may jump
// by more than one, a held job may turn pending) instead.

type phase byte

const (
	phAbsent phase = 'a'
	phPend   phase = 'p'
	phHeld   phase = 'h'
	phDone   phase = 'c'
	phDead   phase = 'd'
	phGone   phase = 'r' // removed (EMQ.REMOVE)
	phWait   phase = 'w' // a flow parent waiting for its children (docs/verbs.md §4.25)
)

type linState struct {
	ph    phase
	tok   int64
	fails int64
}

type linIn struct {
	op      *Op
	grant   Grant
	asGrant bool // a COMPLETE ... NEXT seen from a job it handed out: the claim part
	parent  bool // an EMQ.FLOW seen from its parent
	dead    bool // sweep listing: dead-lettered
	final   bool
	present bool
	row     Row
}

type linModel struct {
	hiddenClaims, hiddenSweeps bool
	// retain: a completed job keeps its row (state completed, docs/verbs.md
	// §4.21) until a REMOVE deletes it.
	retain bool
}

// gone says whether a job in state s has no row: removed, or completed
// without retention.
func (m linModel) gone(s linState) bool { return s.ph == phGone || (s.ph == phDone && !m.retain) }

// resetFails is the failures after an EMQ.REPROCESS (RESET clears them).
func resetFails(o *Op, fails int64) int64 {
	if o.Reset {
		return 0
	}
	return fails
}

func (m linModel) step(s linState, in linIn) []linState {
	if in.final {
		if !in.present {
			if m.gone(s) {
				return []linState{s}
			}
			return nil
		}
		if m.finalOK(s, in.row) {
			return []linState{s}
		}
		return nil
	}
	o := in.op
	kind := o.Kind
	if in.asGrant {
		kind = Claim
	}
	held := s.ph == phHeld && s.tok == o.Token
	if o.Status == Unknown {
		out := []linState{s}
		switch kind {
		case Complete:
			if held {
				out = append(out, linState{phDone, s.tok, s.fails})
			}
		case Fail:
			if held {
				ph := phPend
				if s.fails+1 >= o.MaxAttempts {
					ph = phDead
				}
				out = append(out, linState{ph, s.tok, s.fails + 1})
			}
		case Requeue, Delay:
			if held {
				out = append(out, linState{phPend, s.tok, s.fails})
			}
		case Revive:
			if m.mayBeDead(s) {
				out = append(out, linState{phPend, s.tok, resetFails(o, s.fails)})
			}
		case Remove:
			if s.ph == phPend || s.ph == phWait || s.ph == phDead || (m.hiddenSweeps && s.ph == phHeld) || (m.retain && s.ph == phDone) {
				out = append(out, linState{phGone, s.tok, s.fails})
			}
		}
		return out
	}
	switch kind {
	case Read: // EMQ.JOB q id (docs/verbs.md §4.17)
		switch {
		case o.Status != OK:
			return []linState{s}
		case !o.Seen:
			if m.gone(s) || s.ph == phAbsent {
				return []linState{s}
			}
		case o.State == "completed":
			if m.retain && s.ph == phDone {
				return []linState{s}
			}
		case s.ph != phDone && s.ph != phGone && s.ph != phAbsent:
			return []linState{s} // other states: not judged here
		}
		return nil
	case Enqueue, Many, Flow:
		if s.ph == phAbsent && in.parent {
			return []linState{{phWait, 0, 0}}
		}
		if s.ph == phAbsent {
			return []linState{{phPend, 0, 0}}
		}
	case Claim:
		g := in.grant
		// A waiting parent is released by its children's ends, which are
		// not in its partition: a hidden step (the flow checks of Check
		// judge when it may happen).
		canTake := s.ph == phPend || s.ph == phWait || (m.hiddenSweeps && s.ph == phHeld)
		tokOK := g.Token == s.tok+1 || (m.hiddenClaims && g.Token > s.tok)
		if canTake && tokOK && g.Failures == s.fails {
			return []linState{{phHeld, g.Token, s.fails}}
		}
	case Sweep:
		if s.ph == phHeld || (m.hiddenClaims && (s.ph == phPend || s.ph == phWait)) {
			if in.dead {
				return []linState{{phDead, s.tok, s.fails}}
			}
			return []linState{{phPend, s.tok, s.fails}}
		}
	case Revive: // EMQ.REPROCESS q id (docs/verbs.md §4.13)
		if o.Status == Refused {
			switch {
			case strings.HasPrefix(o.Err, "EMQSTATE job is not dead"):
				if s.ph == phPend || s.ph == phHeld || (m.retain && s.ph == phDone) {
					return []linState{s}
				}
				return nil
			case strings.HasPrefix(o.Err, "EMQSTALE job gone"):
				if m.gone(s) || s.ph == phAbsent {
					return []linState{s}
				}
				return nil
			}
			return []linState{s}
		}
		if m.mayBeDead(s) {
			return []linState{{phPend, s.tok, resetFails(o, s.fails)}}
		}
	case Remove: // EMQ.REMOVE q id (docs/verbs.md §4.15)
		if o.Status == Refused {
			if strings.HasPrefix(o.Err, "EMQSTATE job is active") {
				if s.ph == phHeld || (m.hiddenClaims && (s.ph == phPend || s.ph == phWait)) {
					return []linState{s}
				}
				return nil
			}
			return []linState{s}
		}
		if o.Removed == 0 {
			if s.ph == phAbsent || m.gone(s) {
				return []linState{s}
			}
			return nil
		}
		if s.ph == phPend || s.ph == phWait || s.ph == phDead || (m.hiddenSweeps && s.ph == phHeld) || (m.retain && s.ph == phDone) {
			return []linState{{phGone, s.tok, s.fails}}
		}
	default: // token verbs
		if o.Status == Refused {
			if m.refusalOK(s, o) {
				return []linState{s}
			}
			return nil
		}
		if !held {
			return nil
		}
		switch o.Kind {
		case Complete:
			return []linState{{phDone, s.tok, s.fails}}
		case Requeue, Delay:
			return []linState{{phPend, s.tok, s.fails}}
		case Extend, Progress:
			return []linState{s}
		case Fail:
			if o.FailCount != s.fails+1 {
				return nil
			}
			ph := phPend
			if o.Verdict == "dead" {
				ph = phDead
			}
			return []linState{{ph, s.tok, o.FailCount}}
		}
	}
	return nil
}

// finalOK says whether the row read back at the end can follow state s
// through hidden steps, any number of them: a claim whose reply was lost
// (pending -> held, attempts up by one each) and a sweep whose reply was
// lost (held -> pending or dead). Neither changes failures. A job pending
// at the end with more attempts than s is allowed with hidden claims
// alone (as it always was: a lost claim's lease may have been released
// by another lost step).
func (m linModel) finalOK(s linState, row Row) bool {
	want := map[string]phase{"pending": phPend, "scheduled": phPend, "active": phHeld, "dead": phDead, "waiting": phWait, "completed": phDone}[row.State]
	if s.ph == phWait && want == phPend && row.Attempts == s.tok && row.Failures == s.fails {
		return true // released, not claimed yet
	}
	if row.Failures != s.fails || row.Attempts < s.tok || (row.Attempts > s.tok && !m.hiddenClaims) {
		return false
	}
	released := want == phPend || want == phDead
	if row.Attempts == s.tok { // no hidden claim: at most a hidden sweep
		return want == s.ph || (m.hiddenSweeps && s.ph == phHeld && released)
	}
	// One hidden claim or more. The same phase: the model's token may lag
	// (hidden claims before an answered sweep listed the job are not
	// counted in s.tok). Otherwise the job was pending before the first
	// (s pending, or held and then recovered by a hidden sweep), held after
	// the last, then perhaps recovered or dead-lettered by a hidden sweep.
	if want == s.ph {
		return true
	}
	if s.ph != phPend && s.ph != phWait && !(s.ph == phHeld && m.hiddenSweeps) {
		return false
	}
	return want == phHeld || (m.hiddenSweeps && released)
}

// mayBeDead says whether the job can be dead in state s: it is, or a
// hidden sweep may have dead-lettered it (held), or a hidden claim and a
// hidden sweep may have (pending).
func (m linModel) mayBeDead(s linState) bool {
	return s.ph == phDead || (m.hiddenSweeps && (s.ph == phHeld || (m.hiddenClaims && (s.ph == phPend || s.ph == phWait))))
}

// refusalOK says whether a token verb's refusal fits the state, by the
// guard's order (docs/verbs.md §4.4). Refusals this model does not know
// are allowed (a refusal writes nothing).
func (m linModel) refusalOK(s linState, o *Op) bool {
	switch {
	case strings.HasPrefix(o.Err, "EMQSTALE job gone"):
		return m.gone(s)
	case strings.Contains(o.Err, "token mismatch"):
		return !m.gone(s) && (s.tok != o.Token || m.hiddenClaims)
	case strings.HasPrefix(o.Err, "EMQSTATE job is completed"): // a retained job (§4.21)
		return m.retain && s.ph == phDone && s.tok == o.Token
	case strings.HasPrefix(o.Err, "EMQSTALE lease lost"):
		return s.tok == o.Token && (s.ph == phPend || (m.hiddenSweeps && s.ph == phHeld)) || (m.hiddenClaims && s.ph != phDone && s.ph != phGone)
	case strings.HasPrefix(o.Err, "EMQSTATE job is dead"):
		return s.tok == o.Token && (s.ph == phDead || (m.hiddenSweeps && s.ph == phHeld)) || (m.hiddenClaims && s.ph != phDone && s.ph != phGone)
	}
	return true
}

// LinearizeTimeout bounds porcupine's search for one job's history; a
// search that runs out is counted in Linearizable's unknown result, not as
// a violation.
var LinearizeTimeout = 5 * time.Second

// Linearizable checks each job's operations against the per-job state
// machine with porcupine and returns one violation per job whose history
// has no linearization.
func Linearizable(h *History) []Violation {
	v, _ := linearizable(h)
	return v
}

// linearizable is Linearizable that also counts the jobs checked and the
// searches that timed out.
func linearizable(h *History) ([]Violation, LinStats) {
	jobs, unknownClaims, unknownSweeps := index(h)
	m := linModel{hiddenClaims: len(unknownClaims) > 0, hiddenSweeps: len(unknownSweeps) > 0, retain: h.Retain}
	var end int64
	for i := range h.Ops {
		end = max(end, h.Ops[i].Return, h.Ops[i].Call)
	}
	end += 2
	model := porcupine.NondeterministicModel{
		Init: func() []interface{} { return nil }, // replaced per job
		Step: func(state, input, output interface{}) []interface{} {
			var out []interface{}
			for _, n := range m.step(state.(linState), input.(linIn)) {
				out = append(out, n)
			}
			return out
		},
		DescribeOperation: func(input, output interface{}) string {
			in := input.(linIn)
			if in.final {
				return fmt.Sprintf("final %v %+v", in.present, in.row)
			}
			return in.op.String()
		},
	}
	ids := make([]string, 0, len(jobs))
	for id := range jobs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var out []Violation
	var st LinStats
	for _, id := range ids {
		j := jobs[id]
		init := linState{ph: phPend}
		if j.enq != nil {
			init = linState{ph: phAbsent}
		} else if row, ok := h.Final[id]; ok && row.State == "waiting" {
			init = linState{ph: phWait} // the parent of a flow whose reply was lost
		}
		model.Init = func() []interface{} { return []interface{}{init} }
		var ops []porcupine.Operation
		for _, o := range j.related {
			in := linIn{op: o}
			if o.Next && o.ID != id {
				in.asGrant = true // COMPLETE ... NEXT, in the partition of a job it handed out
			}
			in.parent = o.Kind == Flow && o.ID == id
			switch {
			case o.Kind == Claim || in.asGrant:
				for _, g := range o.Grants {
					if g.ID == id {
						in.grant = g
					}
				}
			case o.Kind == Sweep:
				for _, d := range o.Dead {
					if d == id {
						in.dead = true
					}
				}
			}
			ret := o.Return
			if o.Status == Unknown {
				ret = end - 1 // may take effect any time before the final read
			}
			ops = append(ops, porcupine.Operation{ClientId: o.Client, Input: in, Call: o.Call, Output: nil, Return: ret})
		}
		row, present := h.Final[id]
		ops = append(ops, porcupine.Operation{ClientId: -1, Input: linIn{final: true, present: present, row: row}, Call: end, Return: end})
		st.Jobs++
		st.Ops += len(ops)
		switch porcupine.CheckOperationsTimeout(model.ToModel(), ops, LinearizeTimeout) {
		case porcupine.Illegal:
			fin := "no row at the end"
			if present {
				fin = fmt.Sprintf("its row at the end: %s, attempts %d, failures %d, stalled %d", row.State, row.Attempts, row.Failures, row.Stalled)
			}
			v := Violation{Kind: VLinearizable, ID: id, Detail: "no order of its operations fits the job state machine; " + fin}
			for _, o := range j.related {
				v.Ops = append(v.Ops, *o)
			}
			out = append(out, v)
		case porcupine.Unknown:
			st.TimedOut++
		}
	}
	return out, st
}

// LinStats counts what Linearizable checked.
type LinStats struct {
	Jobs, Ops, TimedOut int
}
