package verbs

import (
	"strconv"

	"github.com/emqd/emqd/internal/store"
)

// The typed verb core (docs/architecture.md §2.5.1). Every EMQ verb that
// has been given one is a method of *Verbs taking a *store.Ctx (the
// database, the clock reading NowMs, the run_id and the client's output
// room, set by the caller as for a command) and the verb's typed
// arguments, returning its typed result or a *Refusal as its error. The
// method runs read, judge, plan and apply, counts the transition, publishes
// its events and wakes blocked claimers; it never writes a reply. The
// cmdXxx handler is the wire adapter: it parses argv into the arguments
// (argument errors are answered there and never reach the method), calls
// the method and writes the reply, byte for byte the reply of the RESP
// command (the golden transcripts and internal/verbs/aofbytes_test.go).
//
// The arguments' Argv method gives the canonical command line: what the
// append-only file records for an in-process call (docs/durability.md §1:
// the AOF is the command log) when the plan did not propagate itself. Zero
// values of optional arguments are the arguments left out, so Argv of the
// zero options is the shortest command.

// refused counts r when stored data caused it (INFO's
// emq_bad_row_refusals, the rate-limited warning) and returns it as the
// typed method's error.
func (vs *Verbs) refused(c *store.Ctx, r refusal) error {
	vs.badRows.note(c.DB.Index, r)
	out := r
	return &out
}

// replyRefusal writes a typed method's error as the error reply.
func replyRefusal(c *store.Ctx, err error) {
	c.W.Error(err.(*Refusal).Text)
}

// argvOf builds the command line name args... .
func argvOf(name string, args ...string) [][]byte {
	out := make([][]byte, 0, len(args)+1)
	out = append(out, []byte(name))
	for _, a := range args {
		out = append(out, []byte(a))
	}
	return out
}

// itoa is the decimal spelling of n, as a command line argument.
func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// JobRef names one job of a queue for the operator verbs that take `q id`
// (EMQ.REMOVE, EMQ.REPROCESS, EMQ.PROMOTE.JOB): Queue (valid) and ID.
type JobRef struct {
	Queue string
	ID    string
	// row is the row key the wire adapter built with ID.
	row string
}

// parseJobRef parses `q id` (argv[1..2]); on an error it has written the
// reply.
func (vs *Verbs) parseJobRef(c *store.Ctx) (JobRef, bool) {
	k := vs.queueArg(c)
	if k == nil {
		return JobRef{}, false
	}
	rowKey, id := k.rowOf(c.Argv[2])
	return JobRef{Queue: k.Queue, ID: id, row: rowKey}, true
}

// keys are j's queue keys and its row key.
func (vs *Verbs) jobRefKeys(j *JobRef) (*Keys, string) {
	k := vs.keysOf(j.Queue)
	if n := len(k.JobPrefix); len(j.row) == n+len(j.ID) && j.row[n:] == j.ID && j.row[:n] == k.JobPrefix {
		return k, j.row
	}
	return k, k.Row(j.ID)
}

// BulkResult is what an operator bulk verb did (docs/verbs.md §4.24): the
// ids it acted on, in selection order, and Left, the members of the set
// beyond the selection (the wire reply is [len(Done), Left]).
type BulkResult struct {
	Done []string
	Left int
}

// writeBulk answers [done, left].
func writeBulk(c *store.Ctx, r BulkResult) { bulkReply(c, len(r.Done), r.Left) }

// limitArgv appends LIMIT n when n > 0.
func limitArgv(argv [][]byte, n int64) [][]byte {
	if n > 0 {
		argv = append(argv, []byte("LIMIT"), []byte(itoa(n)))
	}
	return argv
}
