package verbs

import (
	"testing"

	"github.com/emqd/emqd/internal/store"
)

// TestArgumentsBeforeReads is docs/verbs.md §2.1 with §2.8's texts: every
// argument error is given before any key is read, so a queue whose keys all
// hold the wrong type still answers the argument error.
func TestArgumentsBeforeReads(t *testing.T) {
	h := newTH(t)
	k := NewKeys("q")
	for _, key := range []string{k.Pending, k.Active, k.Schedule, k.Dead, k.Completed, k.Failed, k.Meta, MintKey, k.Row(tID)} {
		h.setString(key, "wrong")
	}
	const (
		notInt = store.ErrNotInteger
		syntax = store.ErrSyntax
	)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"EMQ.ENQUEUE", "q"}, "ERR wrong number of arguments for 'emq.enqueue' command"},
		{[]string{"EMQ.ENQUEUE", "bad name", "nope", "p", "DELAY", "x"}, ErrInvalidQueue},
		{[]string{"EMQ.ENQUEUE", "emq", tID, "p"}, ErrInvalidQueue},
		{[]string{"EMQ.ENQUEUE", "", tID, "p"}, ErrInvalidQueue},
		{[]string{"EMQ.ENQUEUE", string(make129()), tID, "p"}, ErrInvalidQueue},
		{[]string{"EMQ.ENQUEUE", "q", "nope", "p", "DELAY", "x"}, notInt},
		{[]string{"EMQ.ENQUEUE", "q", "nope", "p", "DELAY", "-1"}, "ERR delay_ms must be a non-negative integer"},
		{[]string{"EMQ.ENQUEUE", "q", "nope", "p", "AT", "-5"}, "ERR run_at_ms must be a non-negative integer"},
		{[]string{"EMQ.ENQUEUE", "q", "nope", "p", "DELAY", "1", "AT", "x"}, syntax},
		{[]string{"EMQ.ENQUEUE", "q", "nope", "p", "DELAY", "1", "DELAY", "1"}, syntax},
		{[]string{"EMQ.ENQUEUE", "q", "nope", "p", "LATER", "1"}, syntax},
		{[]string{"EMQ.ENQUEUE", "q", "nope", "p", "DELAY"}, syntax},
		{[]string{"EMQ.ENQUEUE", "q", "nope", "p"}, ErrKind},
		{[]string{"EMQ.ENQUEUE", "q", "job00000000001", "p"}, ErrKind},
		{[]string{"EMQ.CLAIM", "q", "0"}, "ERR lease_ms must be a positive integer"},
		{[]string{"EMQ.CLAIM", "q", "01"}, notInt},
		{[]string{"EMQ.CLAIM", "q", "1", "COUNT", "0"}, "ERR count must be a positive integer"},
		{[]string{"EMQ.CLAIM", "q", "1", "COUNT", "1", "COUNT", "1"}, syntax},
		{[]string{"EMQ.CLAIM", "q", "1", "BLOCK", "-1"}, "ERR block_ms must be a non-negative integer"},
		{[]string{"EMQ.CLAIM", "q", "1", "BLOCK", "1.5"}, notInt},
		{[]string{"EMQ.CLAIM", "q", "1", "COUNT"}, syntax},
		{[]string{"EMQ.CLAIM", "q", "1", "WAIT", "1"}, syntax},
		{[]string{"EMQ.COMPLETE", "q", tID}, "ERR wrong number of arguments for 'emq.complete' command"},
		{[]string{"EMQ.COMPLETE", "q!", tID, "1"}, ErrInvalidQueue},
		{[]string{"EMQ.FAIL", "q", tID, "1", "0", "0", "e"}, "ERR max_attempts must be a positive integer"},
		{[]string{"EMQ.FAIL", "q", tID, "1", "x", "-1", "e"}, notInt},
		{[]string{"EMQ.FAIL", "q", tID, "1", "3", "-1", "e"}, "ERR delay_ms must be a non-negative integer"},
		{[]string{"EMQ.EXTEND", "q", tID, "1", "0"}, "ERR lease_ms must be a positive integer"},
		{[]string{"EMQ.DELAY", "q", tID, "1", "SOON", "1"}, syntax},
		{[]string{"EMQ.DELAY", "q", tID, "1", "IN", "-1"}, "ERR delay_ms must be a non-negative integer"},
		{[]string{"EMQ.DELAY", "q", tID, "1", "AT", "-1"}, "ERR run_at_ms must be a non-negative integer"},
		{[]string{"EMQ.DELAY", "q", tID, "1", "AT", "soon"}, notInt},
		{[]string{"EMQ.STALLED.CHECK", "q", "0"}, "ERR max_stalled must be a positive integer"},
		{[]string{"EMQ.STALLED.CHECK", "q", "-3"}, "ERR max_stalled must be a positive integer"},
		{[]string{"EMQ.STALLED.CHECK", "q", "1", "0"}, "ERR limit must be a positive integer"},
		{[]string{"EMQ.STALLED.CHECK", "q", "x"}, notInt},
		{[]string{"EMQ.STALLED.CHECK", "q", "1", "1", "1"}, syntax},
		{[]string{"EMQ.PROMOTE", "q", "0"}, "ERR limit must be a positive integer"},
		{[]string{"EMQ.PROMOTE", "q", "1", "1"}, syntax},
		{[]string{"EMQ.REPROCESS", "q", tID, "NOW"}, syntax},
		{[]string{"EMQ.REPROCESS", "q", tID, "RESET", "RESET"}, syntax},
		{[]string{"EMQ.PAUSE", "q", "x"}, "ERR wrong number of arguments for 'emq.pause' command"},
		{[]string{"EMQ.DEBUG"}, "ERR wrong number of arguments for 'emq.debug' command"},
		{[]string{"EMQ.DEBUG", "CLOCK", "ADVANCE"}, "ERR wrong number of arguments for 'emq.debug|clock' command"},
	}
	for _, c := range cases {
		before := digest(h.s)
		got := h.do(c.args...)
		if got != replyErr(c.want) {
			t.Errorf("%q: got %v, want %q", c.args, got, c.want)
		}
		if digest(h.s) != before || h.feed.n != 0 {
			t.Fatalf("%q wrote", c.args)
		}
	}
	// With valid arguments the same queue answers WRONGTYPE.
	for _, args := range [][]string{
		{"EMQ.ENQUEUE", "q", tID, "p"}, {"EMQ.ENQUEUE", "q", "*", "p"}, {"EMQ.CLAIM", "q", "1"}, {"EMQ.COMPLETE", "q", tID, "1"},
		{"EMQ.STALLED.CHECK", "q"}, {"EMQ.PROMOTE", "q"}, {"EMQ.REPROCESS", "q", tID}, {"EMQ.PAUSE", "q"}, {"EMQ.RESUME", "q"},
		{"EMQ.REMOVE", "q", tID}, {"EMQ.COUNTS", "q"}, {"EMQ.JOB", "q", tID},
	} {
		if got := h.do(args...); got != replyErr(store.ErrWrongType) {
			t.Errorf("%q: got %v, want WRONGTYPE", args, got)
		}
	}
}

func make129() []byte {
	b := make([]byte, 129)
	for i := range b {
		b[i] = 'a'
	}
	return b
}

func TestQueueNames(t *testing.T) {
	for _, ok := range []string{"q", "a.b-c_d", "EMQ", "emq2", string(make129()[:128]), "0"} {
		if !validQueue([]byte(ok)) {
			t.Errorf("%q refused", ok)
		}
	}
	for _, bad := range []string{"", "emq", "a b", "a:b", "{q}", "é", string(make129())} {
		if validQueue([]byte(bad)) {
			t.Errorf("%q accepted", bad)
		}
	}
}
