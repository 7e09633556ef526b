package verbs

import (
	"testing"

	"github.com/emqd/emqd/internal/num"
	"github.com/emqd/emqd/internal/store"
)

// The read verbs' typed results as the wire's parsed replies.

func countsReply(n Counts) any {
	return []any{"pending", n.Pending, "active", n.Active, "scheduled", n.Scheduled, "dead", n.Dead,
		"completed", n.Completed, "failed", n.Failed, "retained", n.Retained, "latency_ms", n.LatencyMs,
		"waiting", n.Waiting}
}

func jobReply(j JobInfo) any {
	if !j.Found {
		return nil
	}
	out := []any{}
	for _, f := range j.Fields {
		out = append(out, f.Name, string(f.Value))
	}
	if j.InActive {
		out = append(out, "lease_deadline_ms", num.FormatScore(j.LeaseDeadlineMs))
	}
	if j.InSchedule {
		out = append(out, "run_at_ms", num.FormatScore(j.RunAtMs))
	}
	return out
}

func listReply(l []ListEntry) any {
	out := []any{}
	for _, e := range l {
		out = append(out, []any{e.ID, jobReply(e.Job)})
	}
	return out
}

func childrenReply(kids []Child) any {
	if kids == nil {
		return nil
	}
	out := []any{}
	for _, ch := range kids {
		m := []any{"queue", ch.Queue, "id", ch.ID, "state", ch.State}
		if ch.OutputName != "" {
			m = append(m, ch.OutputName, string(ch.Output))
		}
		out = append(out, m)
	}
	return out
}

// TestTypedRead runs each read verb's typed method on one twin and its
// command on the other, over a queue with a job in each state: the
// result equals the reply, and neither wrote anything.
func TestTypedRead(t *testing.T) {
	var st *testing.T // the running case
	line := func(args ...string) argvFunc {
		return func() [][]byte { return argvOf(args[0], args[1:]...) }
	}
	const tID3, tID4, tID5 = "JOB00000000003", "JOB00000000004", "JOB00000000005"
	setup := [][]string{
		{"EMQ.RETAIN", "q", "COMPLETED", "10", "0"},
		{"EMQ.ENQUEUE", "q", tID, "a"},
		{"EMQ.ENQUEUE", "q", tID2, "b"},
		{"EMQ.ENQUEUE", "q", tID3, "c"},
		{"EMQ.CLAIM", "q", "1000", "COUNT", "3"},
		{"EMQ.COMPLETE", "q", tID, "1", "RESULT", "done"},
		{"EMQ.FAIL", "q", tID2, "1", "1", "0", "boom"},
		{"EMQ.ENQUEUE", "q", tID4, "d", "DELAY", "5000"},
		{"EMQ.ENQUEUE", "q", tID5, "e"},
		{"EMQ.FLOW", "q", fP, "p", "CHILD", "q", fC1, "x", "CHILD", "r", fC2, "y"},
	}
	ref := func(id string) *JobRef { return &JobRef{Queue: "q", ID: id} }
	job := func(id string) typedCase {
		return typedCase{name: "job " + id, argv: line("EMQ.JOB", "q", id), want: "EMQ.JOB q " + id,
			call: func(vs *Verbs, c *store.Ctx) (any, error) {
				j, err := vs.Job(c, ref(id))
				return jobReply(j), err
			}}
	}
	list := func(a ListArgs, want string, n int) typedCase {
		return typedCase{name: want, argv: &a, want: want,
			call: func(vs *Verbs, c *store.Ctx) (any, error) {
				l, err := vs.List(c, &a)
				if len(l) != n {
					st.Fatalf("%s: %d jobs, want %d", want, len(l), n)
				}
				return listReply(l), err
			}}
	}
	cases := []typedCase{
		{name: "counts", argv: line("EMQ.COUNTS", "q"), want: "EMQ.COUNTS q",
			call: func(vs *Verbs, c *store.Ctx) (any, error) {
				n, err := vs.Counts(c, "q")
				want := Counts{Pending: 2, Active: 1, Scheduled: 1, Dead: 1, Completed: 1, Failed: 1, Retained: 1, LatencyMs: 250, Waiting: 1}
				if n != want {
					st.Fatalf("counts %+v, want %+v", n, want)
				}
				return countsReply(n), err
			}},
		{name: "counts empty", argv: line("EMQ.COUNTS", "none"), want: "EMQ.COUNTS none",
			call: func(vs *Verbs, c *store.Ctx) (any, error) {
				n, err := vs.Counts(c, "none")
				return countsReply(n), err
			}},
		job(tID), job(tID3), job(tID4), job(fP), job("JOB00000000099"),
		list(ListArgs{Queue: "q", State: "pending"}, "EMQ.LIST q pending", 2),
		list(ListArgs{Queue: "q", State: "Active"}, "EMQ.LIST q Active", 1),
		list(ListArgs{Queue: "q", State: "pending", Offset: 1, Count: 1}, "EMQ.LIST q pending 1 1", 1),
		list(ListArgs{Queue: "q", State: "pending", Offset: 1}, "EMQ.LIST q pending 1 100", 1),
		list(ListArgs{Queue: "q", State: "pending", Offset: 9, Count: 5}, "EMQ.LIST q pending 9 5", 0),
		list(ListArgs{Queue: "q", State: "completed"}, "EMQ.LIST q completed", 1),
		list(ListArgs{Queue: "q", State: "waiting"}, "EMQ.LIST q waiting", 1),
		list(ListArgs{Queue: "q", State: "scheduled", Count: 10}, "EMQ.LIST q scheduled 0 10", 1),
		list(ListArgs{Queue: "q", State: "pending", Lane: "default"}, "EMQ.LIST q pending LANE default", 2),
		list(ListArgs{Queue: "q", State: "pending", Lane: "a"}, "EMQ.LIST q pending LANE a", 0),
		{name: "list lanes", setup: [][]string{{"EMQ.ENQUEUE", "q", "JOB00000000007", "l", "LANE", "a"}, {"EMQ.ENQUEUE", "q", "JOB00000000006", "l", "LANE", "a"}},
			argv: &ListArgs{Queue: "q", State: "pending", Offset: 1, Count: 2}, want: "EMQ.LIST q pending 1 2",
			call: func(vs *Verbs, c *store.Ctx) (any, error) {
				l, err := vs.List(c, &ListArgs{Queue: "q", State: "pending", Offset: 1, Count: 2})
				if len(l) != 2 || l[0].ID != fC1 || l[1].ID != "JOB00000000006" {
					st.Fatalf("list across lanes: %+v", l)
				}
				return listReply(l), err
			}},
		{name: "list one lane", setup: [][]string{{"EMQ.ENQUEUE", "q", "JOB00000000007", "l", "LANE", "a"}, {"EMQ.ENQUEUE", "q", "JOB00000000006", "l", "LANE", "a"}},
			argv: &ListArgs{Queue: "q", State: "pending", Offset: 1, Count: 5, Lane: "a"}, want: "EMQ.LIST q pending 1 5 LANE a",
			call: func(vs *Verbs, c *store.Ctx) (any, error) {
				l, err := vs.List(c, &ListArgs{Queue: "q", State: "pending", Offset: 1, Count: 5, Lane: "a"})
				if len(l) != 1 || l[0].ID != "JOB00000000007" {
					st.Fatalf("list of lane a: %+v", l)
				}
				return listReply(l), err
			}},
		{name: "children", argv: line("EMQ.CHILDREN", "q", fP), want: "EMQ.CHILDREN q " + fP,
			call: func(vs *Verbs, c *store.Ctx) (any, error) {
				kids, err := vs.Children(c, ref(fP))
				if len(kids) != 2 || kids[0].Queue != "q" || kids[1].Queue != "r" || kids[0].State != "pending" {
					st.Fatalf("children %+v", kids)
				}
				return childrenReply(kids), err
			}},
		{name: "children ended", setup: [][]string{{"EMQ.CLAIM", "r", "1000"}, {"EMQ.COMPLETE", "r", fC2, "1", "RESULT", "rr"}},
			argv: line("EMQ.CHILDREN", "q", fP), want: "EMQ.CHILDREN q " + fP,
			call: func(vs *Verbs, c *store.Ctx) (any, error) {
				kids, err := vs.Children(c, ref(fP))
				if len(kids) != 2 || kids[1].OutputName != "result" || string(kids[1].Output) != "rr" {
					st.Fatalf("children %+v", kids)
				}
				return childrenReply(kids), err
			}},
		{name: "children none", argv: line("EMQ.CHILDREN", "q", tID), want: "EMQ.CHILDREN q " + tID,
			call: func(vs *Verbs, c *store.Ctx) (any, error) {
				kids, err := vs.Children(c, ref(tID))
				if kids != nil {
					st.Fatalf("children of a plain job: %+v", kids)
				}
				return childrenReply(kids), err
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st = t
			runTypedCase(t, tc, setup, 250, true)
		})
	}
}

// TestTypedReadRefusals: a key of the wrong type refuses each read verb
// with the command's text, and nothing is written.
func TestTypedReadRefusals(t *testing.T) {
	h := newTH(t)
	h.ok("EMQ.ENQUEUE", "q", tID, "a")
	wireText := func(args ...string) string {
		t.Helper()
		e, ok := h.do(args...).(replyErr)
		if !ok {
			t.Fatalf("%v was not refused", args)
		}
		return string(e)
	}
	ref := &JobRef{Queue: "q", ID: tID}
	h.setString(tk.Roster(tID), "x")
	untouched(t, h, wireText("EMQ.CHILDREN", "q", tID), func() error { _, err := h.v.Children(h.ctx(nil), ref); return err })
	h.setString(tk.Completed, "notanumber")
	untouched(t, h, wireText("EMQ.COUNTS", "q"), func() error { _, err := h.v.Counts(h.ctx(nil), "q"); return err })
	h.setString(tk.Active, "x")
	untouched(t, h, store.ErrWrongType, func() error { _, err := h.v.Job(h.ctx(nil), ref); return err })
	untouched(t, h, store.ErrWrongType, func() error {
		_, err := h.v.List(h.ctx(nil), &ListArgs{Queue: "q", State: "pending"})
		return err
	})
	untouched(t, h, store.ErrWrongType, func() error {
		_, err := h.v.List(h.ctx(nil), &ListArgs{Queue: "q", State: "ACTIVE"})
		return err
	})
	untouched(t, h, store.ErrWrongType, func() error { _, err := h.v.Counts(h.ctx(nil), "q"); return err })
}
