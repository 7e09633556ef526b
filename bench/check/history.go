// Package check records a history of job-queue operations issued by many
// clients against a real emqd process while faults are injected (SIGKILL and
// restart, SIGSTOP/SIGCONT longer than a lease, connections cut, the debug
// clock jumping forward), then checks the history against a model of the
// queue: docs/verbs.md is the contract, bench/README.md ("The history
// checker") lists the properties and the figures of the runs.
//
// An operation whose reply never came (a timeout, a cut connection, a
// killed server) is indeterminate: as in Jepsen, it may or may not have
// taken effect, and no property may assume either.
package check

import (
	"fmt"
	"strings"
)

// Kind names the operation a client issued.
type Kind string

// The operations of a history: one per verb the clients send.
const (
	Enqueue  Kind = "enqueue"   // EMQ.ENQUEUE q * payload [DELAY delay_ms]
	Many     Kind = "many"      // EMQ.ENQUEUE.MANY q JOBS * payload [* payload ...]
	Claim    Kind = "claim"     // EMQ.CLAIM q lease_ms COUNT n
	Complete Kind = "complete"  // EMQ.COMPLETE q id token [NEXT lease_ms]
	Fail     Kind = "fail"      // EMQ.FAIL q id token max_attempts delay_ms error
	Requeue  Kind = "requeue"   // EMQ.REQUEUE q id token
	Extend   Kind = "extend"    // EMQ.EXTEND q id token lease_ms
	Delay    Kind = "delay"     // EMQ.DELAY q id token IN delay_ms
	Sweep    Kind = "sweep"     // EMQ.STALLED.CHECK q max_stalled limit
	Progress Kind = "progress"  // EMQ.PROGRESS q id token value
	Promote  Kind = "promote"   // EMQ.PROMOTE q limit (names no job)
	List     Kind = "list"      // EMQ.LIST q state offset count (a read; names no job)
	Revive   Kind = "reprocess" // EMQ.REPROCESS q id [RESET] (Reset: failures and stalled cleared, docs/verbs.md §4.13)
	Remove   Kind = "remove"    // EMQ.REMOVE q id
	Flow     Kind = "flow"      // EMQ.FLOW q parent payload ON_CHILD_FAIL ignore CHILD q id payload ... (ID the parent, IDs the children)
	Read     Kind = "job"       // EMQ.JOB q id (a read of one row: Seen, State, Result)
)

// Status is how an operation ended.
type Status int

const (
	// OK: the server answered with a success reply.
	OK Status = iota
	// Refused: the server answered with an error reply (it wrote nothing,
	// docs/verbs.md §2.2).
	Refused
	// Unknown: no reply (timeout, connection cut, server killed): the
	// operation may or may not have happened.
	Unknown
)

func (s Status) String() string {
	switch s {
	case OK:
		return "ok"
	case Refused:
		return "refused"
	}
	return "unknown"
}

// Grant is one job handed out by a claim: the id, the token (the new
// attempts) and the failures the reply carried (docs/verbs.md §4.3.2).
type Grant struct {
	ID       string
	Token    int64
	Failures int64
}

// Op is one operation of a history. Times are nanoseconds since the start
// of the run on the driver's monotonic clock: Call before the request was
// written, Return after the reply (or the error) was read.
type Op struct {
	Client int
	Kind   Kind
	ID     string // the job: the minted id of an acknowledged enqueue, the id of a token verb
	Token  int64  // token verbs: the token presented
	Call   int64
	Return int64
	Status Status
	Err    string // Refused: the error reply; Unknown: the client error
	// Epoch is the run_id of the server process the client's connection
	// was made to (docs/verbs.md §1.5): every effect of the operation, if
	// it had one, happened in that process.
	Epoch string

	IDs         []string // Many: the minted ids the reply listed
	Payloads    []string // Enqueue, Many: the payloads sent (unique in a run)
	Priority    int64    // Enqueue: the PRIORITY sent (0: none)
	Lane        string   // Enqueue: the LANE sent ("": the default lane)
	Next        bool     // Complete: with NEXT, a claim in the same command
	Grants      []Grant  // Claim, Complete with Next: the jobs handed out
	Verdict     string   // Fail: "scheduled" or "dead"
	FailCount   int64    // Fail: the failures the reply carried
	MaxAttempts int64    // Fail: the max_attempts sent
	Recovered   []string // Sweep: the ids sent back to pending
	Dead        []string // Sweep: the ids dead-lettered
	Removed     int64    // Remove: the reply (1 removed, 0 there was nothing)
	// Complete: the RESULT sent (HasResult false: none). Read: the row's
	// result field (HasResult false: the row has none).
	Result    string
	HasResult bool
	Reset     bool   // Revive: with RESET
	Seen      bool   // Read: the reply was a row (false: nil, no row)
	State     string // Read: the row's state
}

func (o *Op) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "c%d %s", o.Client, o.Kind)
	if o.Next {
		b.WriteString("+next")
	}
	if o.ID != "" {
		fmt.Fprintf(&b, " %s", o.ID)
	}
	if len(o.IDs) > 0 {
		fmt.Fprintf(&b, " %v", o.IDs)
	}
	if o.Token != 0 {
		fmt.Fprintf(&b, " token %d", o.Token)
	}
	fmt.Fprintf(&b, " [%.3fs..%.3fs] %s", float64(o.Call)/1e9, float64(o.Return)/1e9, o.Status)
	if o.Err != "" {
		fmt.Fprintf(&b, " %q", o.Err)
	}
	for _, g := range o.Grants {
		fmt.Fprintf(&b, " got %s/%d", g.ID, g.Token)
	}
	if o.Reset {
		b.WriteString(" RESET")
	}
	if o.HasResult {
		fmt.Fprintf(&b, " result %q", o.Result)
	}
	if o.Kind == Read {
		fmt.Fprintf(&b, " seen %v %s", o.Seen, o.State)
	}
	if o.Verdict != "" {
		fmt.Fprintf(&b, " -> %s %d", o.Verdict, o.FailCount)
	}
	if len(o.Recovered)+len(o.Dead) > 0 {
		fmt.Fprintf(&b, " recovered %v dead %v", o.Recovered, o.Dead)
	}
	if len(o.Epoch) >= 8 {
		fmt.Fprintf(&b, " epoch %s", o.Epoch[:8])
	}
	return b.String()
}

// Row is a job's row as read back after the run (EMQ.LIST, docs/verbs.md
// §4.18).
type Row struct {
	State      string // pending, active, scheduled, dead, waiting or completed (retained, docs/verbs.md §4.21)
	Attempts   int64
	Failures   int64
	Stalled    int64
	LeaseEpoch string
	Payload    string
	Priority   int64  // the row's priority field (absent: 0)
	Lane       string // the row's lane field (absent: the default lane)
	Result     string // a retained row's result field (HasResult false: none)
	HasResult  bool
	Schedule   string // an occurrence's schedule name (docs/verbs.md §4.22.4; "": none)
	SlotMs     int64  // an occurrence's slot_ms
}

// Fault is one injected fault, for the report.
type Fault struct {
	Kind string // kill, pause, cut, clock
	At   int64  // ns since the start
	// End is when the fault was over (ns since the start: the restart
	// answered, SIGCONT sent, the disk freed); At for a fault of an
	// instant.
	End  int64
	Note string
}

// History is what a run recorded: the operations, the final rows of every
// job still in the keyspace (a job without a row completed, docs/verbs.md
// §4.5; the clients never remove one), and the faults.
type History struct {
	// Fsync is the run's appendfsync (always or everysec; "": always).
	// Under everysec a fault "power" may undo what was acknowledged inside
	// the policy's window (power.go).
	Fsync string
	Ops   []Op
	Final map[string]Row
	// PendingOrder is EMQ.LIST pending at the end: every lane's pending
	// set in turn, the default lane first, then the others by name, each
	// by score, then id (docs/verbs.md §4.18, §4.26.6).
	PendingOrder []string
	// LaneMax is each lane's MAX_ACTIVE, set before the first client ran
	// (docs/verbs.md §4.26.1).
	LaneMax     map[string]int
	Faults      []Fault
	MaxStalled  int64 // the max_stalled every sweep sent
	MaxAttempts int64 // the max_attempts every FAIL sent
	// Retain says the queue kept its completed jobs (EMQ.RETAIN q
	// COMPLETED, docs/verbs.md §4.21, with a cap the run never reaches):
	// a completed job has a row at the end, state completed, with the
	// RESULT its COMPLETE sent.
	Retain bool
	// Schedules are the queue's schedules (set up before the first
	// client ran) with what EMQ.SCHEDULE.GET answered after the run.
	Schedules []Sched
	// Clock maps the checker's time to the server clock (TIME, which
	// follows EMQ.DEBUG CLOCK ADVANCE): one sample after each start and
	// each clock jump; the server clock runs at the checker's rate
	// between samples.
	Clock []ClockSample
	// EndMs is the server clock when the rows were read back (TIME).
	EndMs int64
}

// Sched is one EVERY schedule of the run (docs/verbs.md §4.22) and its
// hash as EMQ.SCHEDULE.GET answered it after the run.
type Sched struct {
	Name       string
	Catchup    string // all, one or none
	Sid        int64  // the schedule's number (sid)
	EveryMs    int64
	AnchorMs   int64 // the series' origin: slots are AnchorMs + k*EveryMs, k >= 1
	LastSlotMs int64 // the last slot fired (0: none)
	NextMs     int64
	Fired      int64
	Missed     int64
	Skipped    int64
	State      string // paused: the checker paused it after the run, before the read back
	// CaughtUp: within 5 s after the run no slot was due by the server
	// clock (the timer kept up after the last fault).
	CaughtUp bool
}

// ClockSample is one reading of the server clock: At ns since the start
// of the run (the checker's clock), Ms the server's TIME in ms.
type ClockSample struct {
	At int64
	Ms int64
}
