package verbs

import (
	"strings"
	"testing"

	"github.com/emqd/emqd/internal/store"
)

func schedViewReply(v ScheduleView) any {
	if !v.Found {
		return nil
	}
	out := []any{"name", v.Name}
	for _, f := range v.Fields {
		out = append(out, f.Name, string(f.Value))
	}
	return out
}

// TestTypedSchedule runs Schedule, ScheduleGet and ScheduleList beside
// their commands on twin stores: the same keyspace, AOF records and
// events, and the result equal to the reply.
func TestTypedSchedule(t *testing.T) {
	var st *testing.T
	setup := [][]string{
		{"EMQ.SCHEDULE", "q", "b", "EVERY", "5000", "pb"},
		{"EMQ.SCHEDULE", "q", "a", "CRON", "*/5 * * * *", "pa"},
		{"EMQ.SCHEDULE.PAUSE", "q", "b"},
	}
	sched := func(a ScheduleArgs, want string) typedCase {
		return typedCase{name: want, argv: &a, want: want,
			call: func(vs *Verbs, c *store.Ctx) (any, error) { return "OK", vs.Schedule(c, &a) }}
	}
	get := func(name string) typedCase {
		return typedCase{name: "get " + name, argv: argvFunc(func() [][]byte { return argvOf("EMQ.SCHEDULE.GET", "q", name) }),
			want: "EMQ.SCHEDULE.GET q " + name,
			call: func(vs *Verbs, c *store.Ctx) (any, error) {
				v, err := vs.ScheduleGet(c, &ScheduleRef{Queue: "q", Name: name})
				return schedViewReply(v), err
			}}
	}
	list := func(a ScheduleListArgs, want string, names ...string) typedCase {
		return typedCase{name: want, argv: &a, want: want,
			call: func(vs *Verbs, c *store.Ctx) (any, error) {
				l, err := vs.ScheduleList(c, &a)
				out := []any{}
				var got []string
				for _, v := range l {
					got = append(got, v.Name)
					out = append(out, []any{v.Name, schedViewReply(v)})
				}
				if strings.Join(got, ",") != strings.Join(names, ",") {
					st.Fatalf("%s: %v, want %v", want, got, names)
				}
				return out, err
			}}
	}
	cases := []typedCase{
		sched(ScheduleArgs{Queue: "q", Name: "n", EveryMs: 1000, Payload: []byte("p")}, "EMQ.SCHEDULE q n EVERY 1000 p"),
		sched(ScheduleArgs{Queue: "q", Name: "n", Cron: "0 9 * * 1-5", TZ: "Europe/Paris", Payload: []byte("p"),
			HasStart: true, StartMs: 0, HasEnd: true, EndMs: 9e12, Limit: 3, Skip: true, Catchup: "all"},
			"EMQ.SCHEDULE q n CRON 0 9 * * 1-5 TZ Europe/Paris p START 0 END 9000000000000 LIMIT 3 OVERLAP skip CATCHUP all"),
		sched(ScheduleArgs{Queue: "q", Name: "b", EveryMs: 2000, Payload: []byte("upsert"), Catchup: "none"}, "EMQ.SCHEDULE q b EVERY 2000 upsert CATCHUP none"),
		sched(ScheduleArgs{Queue: "q", Name: "a", EveryMs: 7000, Payload: []byte("")}, "EMQ.SCHEDULE q a EVERY 7000 "),
		get("a"), get("b"), get("none"),
		list(ScheduleListArgs{Queue: "q"}, "EMQ.SCHEDULE.LIST q", "a", "b"),
		list(ScheduleListArgs{Queue: "q", Offset: 1, Count: 1}, "EMQ.SCHEDULE.LIST q 1 1", "b"),
		list(ScheduleListArgs{Queue: "q", Offset: 1}, "EMQ.SCHEDULE.LIST q 1 100", "b"),
		list(ScheduleListArgs{Queue: "q", Offset: 5, Count: 2}, "EMQ.SCHEDULE.LIST q 5 2"),
		list(ScheduleListArgs{Queue: "none"}, "EMQ.SCHEDULE.LIST none"),
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st = t
			runTypedCase(t, tc, setup, 100, false)
		})
	}
	// An upsert by the typed call keeps the number and the pause, as the
	// command's does (docs/verbs.md §4.22.1).
	h := newTH(t)
	h.ok("EMQ.SCHEDULE", "q", "b", "EVERY", "5000", "pb")
	h.ok("EMQ.SCHEDULE.PAUSE", "q", "b")
	if err := h.v.Schedule(h.ctx(nil), &ScheduleArgs{Queue: "q", Name: "b", EveryMs: 10, Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	v, err := h.v.ScheduleGet(h.ctx(nil), &ScheduleRef{Queue: "q", Name: "b"})
	fields := map[string]string{}
	for _, f := range v.Fields {
		fields[f.Name] = string(f.Value)
	}
	if err != nil || !v.Found || fields["state"] != "paused" || fields["sid"] != "1" || fields["every_ms"] != "10" || fields["payload"] != "x" {
		t.Fatalf("after the upsert: %v %v", fields, err)
	}
}

// TestTypedScheduleRefusals: keys of the wrong type refuse Schedule,
// ScheduleGet and ScheduleList with the command's text, a bad cron spec
// refuses the typed call with the wire's argument error, and nothing is
// written.
func TestTypedScheduleRefusals(t *testing.T) {
	h := newTH(t)
	h.ok("EMQ.SCHEDULE", "q", "a", "EVERY", "5000", "pa")
	wireText := func(args ...string) string {
		t.Helper()
		e, ok := h.do(args...).(replyErr)
		if !ok {
			t.Fatalf("%v was not refused", args)
		}
		return string(e)
	}
	every := &ScheduleArgs{Queue: "q", Name: "n", EveryMs: 1000, Payload: []byte("p")}
	untouched(t, h, wireText("EMQ.SCHEDULE", "q", "n", "CRON", "nope", "p"), func() error {
		return h.v.Schedule(h.ctx(nil), &ScheduleArgs{Queue: "q", Name: "n", Cron: "nope", Payload: []byte("p")})
	})
	h.setString(tk.Meta, "x")
	untouched(t, h, store.ErrWrongType, func() error { return h.v.Schedule(h.ctx(nil), every) })
	h.s.DB(h.db).Remove(tk.Meta)
	h.setString(tk.SchedPref+"a", "x")
	untouched(t, h, store.ErrWrongType, func() error {
		return h.v.Schedule(h.ctx(nil), &ScheduleArgs{Queue: "q", Name: "a", EveryMs: 1, Payload: []byte("p")})
	})
	untouched(t, h, store.ErrWrongType, func() error {
		_, err := h.v.ScheduleGet(h.ctx(nil), &ScheduleRef{Queue: "q", Name: "a"})
		return err
	})
	untouched(t, h, store.ErrWrongType, func() error { _, err := h.v.ScheduleList(h.ctx(nil), &ScheduleListArgs{Queue: "q"}); return err })
	h.setString(tk.Sched, "x")
	untouched(t, h, store.ErrWrongType, func() error { return h.v.Schedule(h.ctx(nil), every) })
	untouched(t, h, store.ErrWrongType, func() error { _, err := h.v.ScheduleList(h.ctx(nil), &ScheduleListArgs{Queue: "q"}); return err })
}
