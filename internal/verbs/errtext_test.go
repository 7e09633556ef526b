package verbs

import "testing"

// TestErrorTextsSayTheRule: the refusals a new user meets first state the
// rule they broke (docs/verbs.md §1.4, §4.13), with the literal texts so a
// change of a constant cannot pass unnoticed; each refusal writes nothing.
func TestErrorTextsSayTheRule(t *testing.T) {
	h := newTH(t)
	h.ok("EMQ.ENQUEUE", "q", tID, "p")
	h.ok("EMQ.ENQUEUE", "q", "JOB00000000002", "p")
	h.ok("EMQ.CLAIM", "q", "1000")
	cases := []struct {
		args []string
		want string
	}{
		// Starts with JOB, but is not JOB + 11 base-62 characters.
		{[]string{"EMQ.ENQUEUE", "q", "JOB123", "p"}, "EMQKIND job id must be JOB followed by 11 characters from 0-9A-Za-z"},
		{[]string{"EMQ.ENQUEUE", "q", "JOB0000000000!", "p"}, "EMQKIND job id must be JOB followed by 11 characters from 0-9A-Za-z"},
		{[]string{"EMQ.ENQUEUE", "q", "job00000000001", "p"}, "EMQKIND job id must be JOB followed by 11 characters from 0-9A-Za-z"},
		// No such job: gone, not "not dead"; an existing job in another
		// state (active, pending) is not dead.
		{[]string{"EMQ.REPROCESS", "q", "JOB0000000000z"}, "EMQSTALE job gone"},
		{[]string{"EMQ.REPROCESS", "nosuchqueue", tID}, "EMQSTALE job gone"},
		{[]string{"EMQ.REPROCESS", "q", tID}, "EMQSTATE job is not dead"},
		{[]string{"EMQ.REPROCESS", "q", "JOB00000000002"}, "EMQSTATE job is not dead"},
	}
	for _, c := range cases {
		before, n := digest(h.s), h.feed.n
		if got := h.do(c.args...); got != replyErr(c.want) {
			t.Errorf("%q: got %v, want %q", c.args, got, c.want)
		}
		if digest(h.s) != before || h.feed.n != n {
			t.Fatalf("%q wrote", c.args)
		}
	}
}
