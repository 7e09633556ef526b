package verbs

import (
	"reflect"
	"testing"
)

// TestTimesSaturateAtMaxScoreMs: a delay, lease or AT time past 2^53-1 ms is
// stored as MaxScoreMs, so EMQ.JOB reads back exactly the score written
// (an int64 maximum would round to 2^63 in a double and print above it).
func TestTimesSaturateAtMaxScoreMs(t *testing.T) {
	const huge = "9223372036854775807"
	const want = "9007199254740991"
	if addMs(5, MaxScoreMs) != MaxScoreMs || addMs(MaxScoreMs-10, 3) != MaxScoreMs-7 || atMs(1<<62) != MaxScoreMs {
		t.Fatal("addMs/atMs do not saturate at MaxScoreMs")
	}
	h := newTH(t)
	h.ok("EMQ.ENQUEUE", "q", "JOB0000000000A", "p", "DELAY", huge)
	h.ok("EMQ.ENQUEUE", "q", "JOB0000000000B", "p", "AT", huge)
	h.ok("EMQ.ENQUEUE", "q", "JOB0000000000C", "p")
	h.ok("EMQ.CLAIM", "q", huge)
	for id, field := range map[string]string{
		"JOB0000000000A": "run_at_ms", "JOB0000000000B": "run_at_ms", "JOB0000000000C": "lease_deadline_ms",
	} {
		m := h.ok("EMQ.JOB", "q", id).([]any)
		got := ""
		for i := 0; i+1 < len(m); i += 2 {
			if m[i] == field {
				got, _ = m[i+1].(string)
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s %s = %q, want %q (row %v)", id, field, got, want, m)
		}
	}
}
