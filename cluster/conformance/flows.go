package conformance

import (
	"reflect"
	"testing"
)

// flows is the Flows scenario (docs/verbs.md §4.25, docs/cluster.md §7): a
// parent waits in `waiting` until its children (in its own queue, the
// only layout the library takes) have ended; each end counts once; results
// flow up through EMQ.CHILDREN; a repeated flow writes nothing; removing
// and completing parents leaves no flow key.
func flows(t *testing.T, tg Target) {
	e := newEnv(t, tg)
	const p, c1, c2, c3 = "JOBP0000000001", "JOBC0000000001", "JOBC0000000002", "JOBC0000000003"
	args := []any{"EMQ.FLOW", "q", p, "build", "ON_CHILD_FAIL", "ignore", "CHILD", "q", c1, "a", "CHILD", "q", c2, "b", "CHILD", "q", c3, "c"}
	if got := e.ok(args...); got != int64(4) {
		t.Fatalf("%s: flow %v", tg.Name(), got)
	}
	d := e.digest()
	if got := e.ok(args...); got != int64(4) || e.digest() != d {
		t.Fatalf("%s: the repeated flow %v wrote", tg.Name(), got)
	}
	if got := e.row("q", p); got != rowOf("state=waiting", "attempts=0", "payload=build", "enqueued_at="+e.field("q", p, "enqueued_at"),
		"children=3", "children_left=3", "on_child_fail=ignore") {
		t.Fatalf("%s: parent %s", tg.Name(), got)
	}
	if got := e.field("q", c1, "parent"); got != "q:"+p {
		t.Fatalf("%s: parent field %q", tg.Name(), got)
	}
	if got := asMap(t, e.ok("EMQ.COUNTS", "q"))["waiting"]; got != int64(1) {
		t.Fatalf("%s: waiting %v", tg.Name(), got)
	}
	for _, c := range []struct {
		args []any
		want string
	}{
		{[]any{"EMQ.FLOW", "q", p, "build", "CHILD", "q", c1, "a"}, "EMQFLOW job q:" + p + " exists and is not this flow"},
		{[]any{"EMQ.FLOW", "q", "JOBP0000000002", "x", "CHILD", "q", c1, "a"}, "EMQFLOW job q:" + c1 + " already exists"},
		{[]any{"EMQ.FLOW", "q", p, "x", "ON_CHILD_FAIL", "later", "CHILD", "q", c1, "a"}, "ERR ON_CHILD_FAIL must be fail, ignore or continue"},
		{[]any{"EMQ.FLOW", "q", p, "x", "CHILD", "q", c1, "a", "UNDER", "q", c2}, "ERR UNDER must name the flow's parent or an earlier child"},
		{[]any{"EMQ.FLOW", "q", p, "x", "CHILD", "q", c1, "a", "CHILD", "q", c1, "a"}, "ERR job q:" + c1 + " is named twice in the flow"},
		{[]any{"EMQ.FLOW", "q", p, "x", "CHILD", "q", "nope", "a"}, "EMQKIND job id must be JOB followed by 11 characters from 0-9A-Za-z"},
	} {
		if got := e.refused(c.args...); got != c.want {
			t.Fatalf("%s: %v: %q, want %q", tg.Name(), c.args, got, c.want)
		}
	}
	if e.digest() != d {
		t.Fatalf("%s: a refused flow wrote", tg.Name())
	}
	// Children in another queue: another slot in a cluster.
	other := []any{"EMQ.FLOW", "q", "JOBP0000000003", "x", "CHILD", "r", "JOBC0000000009", "a"}
	if tg.Native() {
		if got := e.ok(other...); got != int64(2) {
			t.Fatalf("emqd: cross-queue flow %v", got)
		}
		e.ok("EMQ.REMOVE", "q", "JOBP0000000003")
		e.ok("EMQ.REMOVE", "r", "JOBC0000000009")
	} else if got := e.refused(other...); got != "ERR in a cluster every job of a flow must be in the parent's queue (another queue's keys are in another slot; docs/cluster.md §7)" {
		t.Fatalf("library: cross-queue flow %q", got)
	}
	// c1 completes with a result; c2 dies (ignore: the parent waits on);
	// c3 is removed: the parent is released once.
	claimOnly := func(id string) string {
		for {
			got, tok, _ := e.claim("q", 10000)
			if got == id {
				return tok
			}
			e.ok("EMQ.REQUEUE", "q", got, tok)
		}
	}
	e.ok("EMQ.COMPLETE", "q", c1, claimOnly(c1), "RESULT", "r1")
	e.ok("EMQ.FAIL", "q", c2, claimOnly(c2), 1, 0, "boom")
	if e.field("q", p, "state") != "waiting" || e.field("q", p, "children_left") != "1" {
		t.Fatalf("%s: parent %s", tg.Name(), e.row("q", p))
	}
	// REPROCESS of the dead child reopens the wait, a second death counts
	// once again.
	e.ok("EMQ.REPROCESS", "q", c2)
	if e.field("q", p, "children_left") != "2" {
		t.Fatalf("%s: reopened %s", tg.Name(), e.row("q", p))
	}
	e.ok("EMQ.FAIL", "q", c2, claimOnly(c2), 1, 0, "boom again")
	e.ok("EMQ.REMOVE", "q", c3)
	if e.field("q", p, "state") != "pending" || e.field("q", p, "children_left") != "0" {
		t.Fatalf("%s: released %s", tg.Name(), e.row("q", p))
	}
	kids := e.ok("EMQ.CHILDREN", "q", p).([]any)
	var got []map[string]any
	for _, k := range kids {
		got = append(got, asMap(t, k))
	}
	want := []map[string]any{
		{"queue": "q", "id": c1, "state": "completed", "result": "r1"},
		{"queue": "q", "id": c2, "state": "dead", "error": "boom again"},
		{"queue": "q", "id": c3, "state": "removed"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: children %v", tg.Name(), got)
	}
	if v, err := e.do("EMQ.CHILDREN", "q", "JOBP0000000009"); v != nil || err != nil {
		t.Fatalf("%s: no roster: %v %v", tg.Name(), v, err)
	}
	// Completing the parent removes its roster; removing the dead child
	// leaves nothing of the flow.
	e.ok("EMQ.COMPLETE", "q", p, claimOnly(p))
	e.ok("EMQ.REMOVE", "q", c2)
	for k := range e.keyspace(nil) {
		if k != "emq:{q}:metrics:completed" && k != "emq:{q}:metrics:failed" && !isMintKey(k) {
			t.Fatalf("%s: key %s left", tg.Name(), k)
		}
	}

	// Under fail a death kills the parent (its error names the child), and
	// REPROCESS of the child is then refused, writing nothing.
	e.ok("EMQ.FLOW", "q", p, "x", "CHILD", "q", c1, "a")
	e.ok("EMQ.FAIL", "q", c1, claimOnly(c1), 1, 0, "bad")
	if e.field("q", p, "state") != "dead" || e.field("q", p, "last_error") != "child q:"+c1+" died: bad" {
		t.Fatalf("%s: killed %s", tg.Name(), e.row("q", p))
	}
	d = e.digest()
	if got := e.refused("EMQ.REPROCESS", "q", c1); got != "EMQFLOW parent q:"+p+" is dead: reprocess or remove it first" {
		t.Fatalf("%s: reprocess %q", tg.Name(), got)
	}
	if e.digest() != d {
		t.Fatalf("%s: the refused reprocess wrote", tg.Name())
	}
}
