package verbs

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
)

// flowAOFFeed records every record the verbs send to the AOF, argv by argv.
type flowAOFFeed struct{ b []byte }

func (f *flowAOFFeed) Append(db int, cmds [][][]byte) {
	f.b = fmt.Appendf(f.b, "record db%d %d\n", db, len(cmds))
	for _, c := range cmds {
		for _, a := range c {
			f.b = fmt.Appendf(f.b, "%q ", a)
		}
		f.b = append(f.b, '\n')
	}
}

// flowPlainSessionAOF is the sha256 of the AOF records of flowPlainSession, taken
// on main before flows (docs/verbs.md §4.25: a queue that uses no flow
// writes the same records as before).
const flowPlainSessionAOF = "1bbcdda03ca95e1d973bcaedfeccdc7ab41e680e81b6d3dedc8699364c42779f"

// flowPlainSession drives every verb that a flow touches (COMPLETE, FAIL at
// the cap, the sweep's death, REMOVE, REPROCESS, trims) on queues without
// flows.
func flowPlainSession(h *th) {
	id := func(i int) string { return fmt.Sprintf("JOB%011d", i) }
	claim := func(q string) (string, string) {
		r := h.ok("EMQ.CLAIM", q, "1000").([]any)
		j := r[0].([]any)
		return j[0].(string), j[2].(string)
	}
	h.ok("EMQ.RETAIN", "r", "COMPLETED", "2", "0")
	h.ok("EMQ.RETAIN", "r", "DEAD", "1", "0")
	for _, q := range []string{"q", "r"} {
		for i := 1; i <= 8; i++ {
			h.ok("EMQ.ENQUEUE", q, id(i), "payload")
		}
		h.ok("EMQ.ENQUEUE.MANY", q, "DELAY", "10", "JOBS", id(20), "a", id(21), "b")
		a, t := claim(q)
		h.ok("EMQ.COMPLETE", q, a, t, "RESULT", "res")
		a, t = claim(q)
		h.ok("EMQ.COMPLETE", q, a, t)
		a, t = claim(q)
		h.ok("EMQ.FAIL", q, a, t, "2", "0", "e1")
		a, t = claim(q)
		h.ok("EMQ.FAIL", q, a, t, "1", "0", "e2")
		h.ok("EMQ.REPROCESS", q, a, "RESET")
		a, t = claim(q)
		h.ok("EMQ.REQUEUE", q, a, t)
		a, t = claim(q)
		h.ok("EMQ.DELAY", q, a, t, "IN", "5")
		a, t = claim(q)
		h.ok("EMQ.EXTEND", q, a, t, "10")
		h.ok("EMQ.PROGRESS", q, a, t, "50")
		claim(q)
		h.clk.Advance(2000)
		h.ok("EMQ.STALLED.CHECK", q, "1")
		h.ok("EMQ.PROMOTE", q)
		h.ok("EMQ.REMOVE", q, id(8))
		a, t = claim(q)
		h.ok("EMQ.COMPLETE", q, a, t, "NEXT", "1000")
		h.ok("EMQ.COUNTS", q)
	}
}

func TestPlainQueueAOFUnchanged(t *testing.T) {
	h := newTH(t)
	f := &flowAOFFeed{}
	h.s.SetFeed(f)
	flowPlainSession(h)
	sum := sha256.Sum256(f.b)
	got := hex.EncodeToString(sum[:])
	if got != flowPlainSessionAOF {
		t.Fatalf("the AOF records of a queue without flows changed: sha256 %s, want %s (%d bytes)", got, flowPlainSessionAOF, len(f.b))
	}
}
