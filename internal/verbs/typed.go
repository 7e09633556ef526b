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
