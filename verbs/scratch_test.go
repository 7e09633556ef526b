package verbs

import (
	"fmt"
	"testing"
)

// TestSweepScratchGivenBack (issue 27 item 4): one EMQ.STALLED.CHECK over
// 20,000 expired leases (limit 20000) keeps none of its scratch once it
// ends; sweeps of the default limit keep theirs (at most sweepKeepMax
// entries) for the next call, and every job is still recovered.
func TestSweepScratchGivenBack(t *testing.T) {
	h := newTH(t)
	const n = 20000
	for i := 0; i < n; i++ {
		h.ok("EMQ.ENQUEUE", "q", fmt.Sprintf("JOB%011d", i+1), "p")
	}
	h.ok("EMQ.CLAIM", "q", "1", "COUNT", fmt.Sprint(n))
	h.clk.Advance(10)
	v := h.ok("EMQ.STALLED.CHECK", "q", "5", fmt.Sprint(n)).([]any)
	if len(v[0].([]any)) != n {
		t.Fatalf("recovered %d", len(v[0].([]any)))
	}
	if due, ops, fv := h.v.sweep.scratchCap(); due > sweepKeepMax || ops > sweepKeepMax || fv > sweepKeepMax {
		t.Fatalf("scratch kept after a sweep of %d: due %d, ops %d, fv %d", n, due, ops, fv)
	}
	// Small sweeps reuse theirs.
	h.ok("EMQ.CLAIM", "q", "1", "COUNT", "300")
	h.clk.Advance(10)
	for i := 0; i < 3; i++ {
		h.ok("EMQ.STALLED.CHECK", "q", "5")
	}
	if due, ops, _ := h.v.sweep.scratchCap(); due == 0 || ops == 0 || due > sweepKeepMax || ops > sweepKeepMax {
		t.Fatalf("small sweeps: due %d, ops %d", due, ops)
	}
	if c := h.ok("EMQ.COUNTS", "q").([]any); fmt.Sprint(c[:12]) != fmt.Sprintf("[pending %d active 0 scheduled 0 dead 0 completed 0 failed 0]", n) {
		t.Fatalf("counts %v", c)
	}
}
