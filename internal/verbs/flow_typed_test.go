package verbs

import (
	"reflect"
	"strings"
	"testing"

	"github.com/emqd/emqd/internal/store"
)

// TestTypedFlow runs Flow beside EMQ.FLOW on twin stores: the same
// keyspace, AOF records, events and wake-ups, and the result equal to the
// reply.
func TestTypedFlow(t *testing.T) {
	kid := func(q, id, p string) FlowChild { return FlowChild{Queue: q, ID: id, Payload: []byte(p)} }
	nested := FlowArgs{Queue: "album", ID: fP, Payload: []byte("build"), OnChildFail: "ignore", Children: []FlowChild{
		{Queue: "img", ID: fC1, Payload: []byte("a"), OnChildFail: "continue"},
		{Queue: "img", ID: fC2, Payload: []byte("b"), UnderQueue: "img", UnderID: fC1},
		kid("album", fC3, "c"),
	}}
	cases := []struct {
		name  string
		setup [][]string
		a     FlowArgs
		want  string
		dup   bool
	}{
		{name: "flat", a: FlowArgs{Queue: "q", ID: fP, Payload: []byte("p"), Children: []FlowChild{kid("q", fC1, "x"), kid("r", fC2, "y")}},
			want: "EMQ.FLOW q " + fP + " p CHILD q " + fC1 + " x CHILD r " + fC2 + " y"},
		{name: "nested", a: nested,
			want: "EMQ.FLOW album " + fP + " build ON_CHILD_FAIL ignore CHILD img " + fC1 + " a ON_CHILD_FAIL continue CHILD img " + fC2 + " b UNDER img " + fC1 + " CHILD album " + fC3 + " c"},
		{name: "duplicate", setup: [][]string{{"EMQ.FLOW", "album", fP, "build", "ON_CHILD_FAIL", "ignore", "CHILD", "img", fC1, "a", "ON_CHILD_FAIL", "continue",
			"CHILD", "img", fC2, "b", "UNDER", "img", fC1, "CHILD", "album", fC3, "c"}}, a: nested, dup: true,
			want: "EMQ.FLOW album " + fP + " build ON_CHILD_FAIL ignore CHILD img " + fC1 + " a ON_CHILD_FAIL continue CHILD img " + fC2 + " b UNDER img " + fC1 + " CHILD album " + fC3 + " c"},
		{name: "lanes on", setup: [][]string{{"EMQ.LANE", "q", "a", "WEIGHT", "2"}, {"EMQ.ENQUEUE", "q", tID, "p", "LANE", "a"}},
			a:    FlowArgs{Queue: "q", ID: fP, Payload: []byte("p"), Children: []FlowChild{kid("q", fC1, "x")}},
			want: "EMQ.FLOW q " + fP + " p CHILD q " + fC1 + " x"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newTwins(t)
			w.a.listen, w.b.listen = true, true
			for _, s := range tc.setup {
				w.both(s...)
			}
			var parts []string
			for _, a := range tc.a.Argv() {
				parts = append(parts, string(a))
			}
			if got := strings.Join(parts, " "); got != tc.want {
				t.Fatalf("Argv %q, want %q", got, tc.want)
			}
			wire := w.a.do(parts...)
			if e, refused := wire.(replyErr); refused {
				t.Fatalf("wire %q refused: %s", tc.want, e)
			}
			a := tc.a
			r, err := w.b.v.Flow(w.b.ctx(nil), &a)
			if err != nil {
				t.Fatalf("typed: %v", err)
			}
			if r.Duplicate != tc.dup || r.Jobs != 1+len(tc.a.Children) {
				t.Fatalf("result %+v", r)
			}
			if !reflect.DeepEqual(int64(r.Jobs), wire) {
				t.Fatalf("typed result %+v, wire reply %#v", r, wire)
			}
			w.same(tc.name)
			if strings.Join(w.a.pub, "\n") != strings.Join(w.b.pub, "\n") {
				t.Fatalf("events %v by the command, %v by the typed call", w.a.pub, w.b.pub)
			}
		})
	}
	// The adapter's parse and the typed arguments build the same tree.
	vs := newTH(t).v
	argv := make([][]byte, 0)
	argv = append(argv, nested.Argv()...)
	parsed, e := vs.parseFlow(argv)
	if e != "" {
		t.Fatal(e)
	}
	built, ref := vs.flowNodes(&nested)
	if ref.Refused() || !reflect.DeepEqual(parsed, built) {
		t.Fatalf("parsed %+v\nbuilt %+v (%v)", parsed, built, ref)
	}
	if back := flowArgs(parsed); back.nodes == nil || !reflect.DeepEqual(back.Argv(), nested.Argv()) {
		t.Fatalf("flowArgs round trip: %q", back.Argv())
	}
}

// TestTypedFlowRefusals: Flow refuses with the command's texts and writes
// nothing.
func TestTypedFlowRefusals(t *testing.T) {
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
	flow := func(a FlowArgs) func() error {
		return func() error { _, err := h.v.Flow(h.ctx(nil), &a); return err }
	}
	kid := []FlowChild{{Queue: "q", ID: fC1, Payload: []byte("x")}}
	untouched(t, h, wireText("EMQ.FLOW", "q", tID, "p", "CHILD", "q", fC1, "x"), flow(FlowArgs{Queue: "q", ID: tID, Payload: []byte("p"), Children: kid}))
	untouched(t, h, wireText("EMQ.FLOW", "q", fP, "p", "CHILD", "q", tID, "x"),
		flow(FlowArgs{Queue: "q", ID: fP, Payload: []byte("p"), Children: []FlowChild{{Queue: "q", ID: tID, Payload: []byte("x")}}}))
	untouched(t, h, ErrFlowUnder, flow(FlowArgs{Queue: "q", ID: fP, Payload: []byte("p"),
		Children: []FlowChild{{Queue: "q", ID: fC1, Payload: []byte("x"), UnderQueue: "q", UnderID: fC2}}}))
	h.setString(tk.Pending, "x")
	untouched(t, h, store.ErrWrongType, flow(FlowArgs{Queue: "q", ID: fP, Payload: []byte("p"), Children: kid}))
}
