package verbs

import (
	"reflect"
	"testing"

	"github.com/emqd/emqd/internal/store"
)

func waitReply(r WaitResult) any {
	out := []any{"state", string(r.State)}
	for _, f := range []struct {
		name string
		v    []byte
		ok   bool
	}{{"result", r.Result, r.HasResult}, {"error", r.Error, r.HasError}, {"finished_at", r.FinishedAt, r.HasTime}} {
		if f.ok {
			out = append(out, f.name, string(f.v))
		} else {
			out = append(out, f.name, nil)
		}
	}
	return out
}

// TestTypedWait: one attempt of Wait beside EMQ.WAIT on a finished job
// (completed with a result, dead with an error) gives the reply; on a
// job still running it reports not finished; gone and wrong-type rows
// refuse with the command's texts; nothing is written.
func TestTypedWait(t *testing.T) {
	w := newTwins(t)
	for _, s := range [][]string{
		{"EMQ.RETAIN", "q", "COMPLETED", "10", "0"}, {"EMQ.RETAIN", "q", "DEAD", "10", "0"},
		{"EMQ.ENQUEUE", "q", tID, "a"}, {"EMQ.ENQUEUE", "q", tID2, "b"}, {"EMQ.ENQUEUE", "q", "JOB00000000003", "c"},
		{"EMQ.CLAIM", "q", "1000", "COUNT", "3"},
		{"EMQ.COMPLETE", "q", tID, "1", "RESULT", "r1"},
		{"EMQ.FAIL", "q", tID2, "1", "1", "0", "boom"},
	} {
		w.both(s...)
	}
	for _, tc := range []struct{ id, state string }{{tID, "completed"}, {tID2, "dead"}} {
		fa, fb := *w.a.feed, *w.b.feed
		wire := w.a.do("EMQ.WAIT", "q", tc.id, "0")
		r, err := w.b.v.Wait(w.b.ctx(nil), &JobRef{Queue: "q", ID: tc.id})
		if err != nil || !r.Finished || string(r.State) != tc.state {
			t.Fatalf("%s: %+v %v", tc.id, r, err)
		}
		if got := waitReply(r); !reflect.DeepEqual(got, wire) {
			t.Fatalf("%s: typed %#v, wire %#v", tc.id, got, wire)
		}
		w.same(tc.id)
		if *w.a.feed != fa || *w.b.feed != fb {
			t.Fatal("EMQ.WAIT wrote")
		}
	}
	h := w.b
	before := digest(h.s)
	r, err := h.v.Wait(h.ctx(nil), &JobRef{Queue: "q", ID: "JOB00000000003"})
	if err != nil || r.Finished || digest(h.s) != before {
		t.Fatalf("a running job: %+v %v", r, err)
	}
	gone := w.a.do("EMQ.WAIT", "q", "JOB00000000099", "0")
	untouched(t, h, string(gone.(replyErr)), func() error {
		_, err := h.v.Wait(h.ctx(nil), &JobRef{Queue: "q", ID: "JOB00000000099"})
		return err
	})
	h.setString(tk.Row("JOB00000000099"), "x")
	untouched(t, h, store.ErrWrongType, func() error {
		_, err := h.v.Wait(h.ctx(nil), &JobRef{Queue: "q", ID: "JOB00000000099"})
		return err
	})
}
