package verbs

import (
	"strings"
	"testing"

	"github.com/emqd/emqd/internal/store"
)

func lanesReply(views []LaneView) any {
	out := []any{}
	for _, v := range views {
		out = append(out, []any{"lane", v.Name, "state", v.State, "pending", v.Pending, "active", v.Active,
			"weight", v.Weight, "max_active", v.MaxActive, "rate_count", v.RateCount, "rate_per_ms", v.RatePer,
			"paused", b2i(v.Paused), "pass", v.Pass})
	}
	return out
}

// TestTypedLanes runs Lane and Lanes beside EMQ.LANE and EMQ.LANES on twin
// stores: the same keyspace, AOF records, events and wake-ups, and the
// result equal to the reply.
func TestTypedLanes(t *testing.T) {
	var st *testing.T
	setup := [][]string{
		{"EMQ.ENQUEUE", "q", tID, "a", "LANE", "a"},
		{"EMQ.ENQUEUE", "q", tID2, "b", "LANE", "b"},
		{"EMQ.ENQUEUE", "q", "JOB00000000003", "c", "LANE", "c"},
		{"EMQ.CLAIM", "q", "1000"},
	}
	lane := func(a LaneArgs, want string) typedCase {
		return typedCase{name: want, argv: &a, want: want,
			call: func(vs *Verbs, c *store.Ctx) (any, error) { return "OK", vs.Lane(c, &a) }}
	}
	lanes := func(a LanesArgs, want string, names ...string) typedCase {
		return typedCase{name: want, argv: &a, want: want,
			call: func(vs *Verbs, c *store.Ctx) (any, error) {
				views, err := vs.Lanes(c, &a)
				var got []string
				for _, v := range views {
					got = append(got, v.Name)
				}
				if strings.Join(got, ",") != strings.Join(names, ",") {
					st.Fatalf("%s: lanes %v, want %v", want, got, names)
				}
				return lanesReply(views), err
			}}
	}
	cases := []typedCase{
		lane(LaneArgs{Queue: "q", Name: "a", Weight: 5}, "EMQ.LANE q a WEIGHT 5"),
		lane(LaneArgs{Queue: "q", Name: "new", HasMaxActive: true, MaxActive: 2}, "EMQ.LANE q new MAX_ACTIVE 2"),
		lane(LaneArgs{Queue: "q", Name: "b", HasRate: true, RateCount: 3, RatePerMs: 1000, Pause: true}, "EMQ.LANE q b RATE 3 1000 PAUSE"),
		lane(LaneArgs{Queue: "q", Name: "c", Reset: true, Resume: true}, "EMQ.LANE q c RESET RESUME"),
		lane(LaneArgs{Queue: "other", Name: "x", Weight: 2, HasMaxActive: true}, "EMQ.LANE other x WEIGHT 2 MAX_ACTIVE 0"),
		lanes(LanesArgs{Queue: "q"}, "EMQ.LANES q", "a", "b", "c"),
		lanes(LanesArgs{Queue: "q", Offset: 1, Count: 1}, "EMQ.LANES q 1 1", "b"),
		lanes(LanesArgs{Queue: "q", Offset: 2}, "EMQ.LANES q 2 100", "c"),
		lanes(LanesArgs{Queue: "q", Offset: 7, Count: 3}, "EMQ.LANES q 7 3"),
		lanes(LanesArgs{Queue: "none"}, "EMQ.LANES none"),
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st = t
			runTypedCase(t, tc, setup, 0, false)
		})
	}
	// A lane change is seen by the next read: the typed Lane wrote what
	// the command writes (checked above), and Lanes reads it back.
	h := newTH(t)
	h.ok("EMQ.ENQUEUE", "q", tID, "a", "LANE", "a")
	if err := h.v.Lane(h.ctx(nil), &LaneArgs{Queue: "q", Name: "a", Weight: 7, Pause: true}); err != nil {
		t.Fatal(err)
	}
	views, err := h.v.Lanes(h.ctx(nil), &LanesArgs{Queue: "q"})
	if err != nil || len(views) != 1 || views[0].Weight != 7 || !views[0].Paused || views[0].State != "paused" || views[0].Pending != 1 {
		t.Fatalf("lanes after Lane: %+v, %v", views, err)
	}
}

// TestTypedLanesRefusals: a lanes key of the wrong type refuses Lane and
// Lanes with the command's text, and nothing is written.
func TestTypedLanesRefusals(t *testing.T) {
	h := newTH(t)
	h.ok("EMQ.ENQUEUE", "q", tID, "a", "LANE", "a")
	wireText := func(args ...string) string {
		t.Helper()
		e, ok := h.do(args...).(replyErr)
		if !ok {
			t.Fatalf("%v was not refused", args)
		}
		return string(e)
	}
	h.setString(tk.LanePrefix+"a", "x")
	untouched(t, h, wireText("EMQ.LANE", "q", "a", "WEIGHT", "2"), func() error {
		return h.v.Lane(h.ctx(nil), &LaneArgs{Queue: "q", Name: "a", Weight: 2})
	})
	untouched(t, h, wireText("EMQ.LANES", "q"), func() error { _, err := h.v.Lanes(h.ctx(nil), &LanesArgs{Queue: "q"}); return err })
	h.setString(tk.LanesKnown, "x")
	untouched(t, h, store.ErrWrongType, func() error {
		return h.v.Lane(h.ctx(nil), &LaneArgs{Queue: "q", Name: "b", Weight: 2})
	})
	untouched(t, h, store.ErrWrongType, func() error { _, err := h.v.Lanes(h.ctx(nil), &LanesArgs{Queue: "q"}); return err })
}
