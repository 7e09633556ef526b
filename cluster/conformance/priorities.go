package conformance

import (
	"reflect"
	"testing"
)

// priorities: pending is served by (priority, id), and every way back to
// pending (REQUEUE, the sweep, promotion, REPROCESS) restores the job's
// priority (docs/verbs.md §1.3, §4.3.1); bad PRIORITY arguments and bad
// stored priorities are refused, writing nothing.
func priorities(t *testing.T, tg Target) {
	e := newEnv(t, tg)
	e.ok("EMQ.ENQUEUE", "q", idD, "d")
	e.ok("EMQ.ENQUEUE", "q", idC, "c", "PRIORITY", 5)
	e.ok("EMQ.ENQUEUE", "q", idB, "b", "PRIORITY", -2)
	e.ok("EMQ.ENQUEUE.MANY", "q", "DELAY", 10, "PRIORITY", -1, "JOBS", idA, "a")
	if f := e.field("q", idC, "priority"); f != "5" {
		t.Fatalf("priority field %q", f)
	}
	tg.Advance(10)
	got := e.ok("EMQ.CLAIM", "q", 1000, "COUNT", 4).([]any)
	var ids []any
	for _, j := range got {
		ids = append(ids, j.([]any)[0])
	}
	if !reflect.DeepEqual(ids, []any{idB, idA, idD, idC}) {
		t.Fatalf("claim order %v", ids)
	}
	e.ok("EMQ.REQUEUE", "q", idC, "1")
	e.ok("EMQ.FAIL", "q", idB, "1", 1, 0, "x")
	e.ok("EMQ.REPROCESS", "q", idB)
	if got := e.ok("ZRANGE", "emq:{q}:pending", 0, -1, "WITHSCORES"); !reflect.DeepEqual(got, []any{idB, "-2", idC, "5"}) {
		t.Fatalf("pending after requeue and reprocess %v", got)
	}
	tg.Advance(2000)
	e.ok("EMQ.STALLED.CHECK", "q", 5)
	if got := e.ok("ZRANGE", "emq:{q}:pending", 0, -1, "WITHSCORES"); !reflect.DeepEqual(got, []any{idB, "-2", idA, "-1", idD, "0", idC, "5"}) {
		t.Fatalf("pending after the sweep %v", got)
	}
	dig, d := e.digest(), e.dirty()
	for _, c := range []struct {
		args []any
		want string
	}{
		{[]any{"EMQ.ENQUEUE", "q", "*", "p", "PRIORITY", "x"}, "ERR value is not an integer or out of range"},
		{[]any{"EMQ.ENQUEUE", "q", "*", "p", "PRIORITY", "9007199254740992"}, "ERR priority must be an integer between -9007199254740991 and 9007199254740991"},
		{[]any{"EMQ.ENQUEUE", "q", "*", "p", "PRIORITY", 1, "PRIORITY", 1}, "ERR syntax error"},
		{[]any{"EMQ.ENQUEUE.MANY", "q", "PRIORITY", "-9007199254740992", "JOBS", "*", "p"}, "ERR priority must be an integer between -9007199254740991 and 9007199254740991"},
	} {
		if got := e.refused(c.args...); got != c.want {
			t.Errorf("%v: %q, want %q", c.args, got, c.want)
		}
	}
	if e.digest() != dig || e.dirty() != d {
		t.Fatal("a refused PRIORITY wrote")
	}
	tok := e.ok("EMQ.CLAIM", "q", 1000).([]any)[0].([]any)[2]
	e.ok("HSET", "emq:{q}:job:"+idB, "priority", "soon")
	dig, d = e.digest(), e.dirty()
	if got := e.refused("EMQ.REQUEUE", "q", idB, tok); got != "ERR hash value is not an integer" {
		t.Fatalf("bad stored priority: %q", got)
	}
	if e.digest() != dig || e.dirty() != d {
		t.Fatal("a refused requeue wrote")
	}
}
