package conformance

import (
	"fmt"
	"reflect"
	"strconv"
	"testing"

	"github.com/emqd/emqd/internal/verbs"
)

// schedules: two EVERY schedules fired through three clock steps (on time,
// one late step caught up under CATCHUP all, a long late step under the
// default CATCHUP one with OVERLAP skip) reach the same end state on both
// targets: the same occurrence ids (docs/verbs.md §4.22.3), rows,
// schedule hashes and set. On emqd the server's own timer fires as the
// clock moves and the explicit EMQ.SCHEDULE.FIRE finds nothing left; the
// library fires only when called (Differences "schedule firing").
func schedules(t *testing.T, tg Target) {
	e := newEnv(t, tg)
	ms := func(d int64) string { return strconv.FormatInt(T0+d, 10) }
	e.ok("EMQ.SCHEDULE", "q", "a", "EVERY", 1000, "pa", "CATCHUP", "all")
	e.ok("EMQ.SCHEDULE", "q", "b", "EVERY", 1500, "pb", "OVERLAP", "skip", "LIMIT", 2, "START", ms(500))
	fire := func() {
		t.Helper()
		if _, err := e.do("EMQ.SCHEDULE.FIRE", "q"); err != nil {
			t.Fatalf("%s: fire: %v", tg.Name(), err)
		}
	}
	tg.Advance(1000)
	fire()
	tg.Advance(2000)
	fire()
	tg.Advance(10000)
	fire()
	var want []string
	want = append(want, verbs.OccurrenceID(2, T0+500))
	for i := int64(1); i <= 13; i++ {
		want = append(want, verbs.OccurrenceID(1, T0+i*1000))
	}
	if got := e.zmembers("emq:{q}:pending"); !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: pending\n got %v\nwant %v", tg.Name(), got, want)
	}
	if got := e.row("q", want[0]); got != rowOf("state=pending", "attempts=0", "payload=pb", "enqueued_at="+ms(1000), "schedule=b", "slot_ms="+ms(500)) {
		t.Fatalf("%s: occurrence row %q", tg.Name(), got)
	}
	for _, c := range []struct {
		name string
		want map[string]any
	}{
		{"a", map[string]any{"name": "a", "sid": "1", "kind": "every", "every_ms": "1000", "anchor_ms": ms(0), "payload": "pa",
			"overlap": "allow", "catchup": "all", "state": "active", "next_ms": ms(14000), "last_slot_ms": ms(13000),
			"last_id": verbs.OccurrenceID(1, T0+13000), "fired": "13", "skipped": "0", "missed": "0"}},
		// b: 500 fired; 2000 skipped (500 still pending); after the long
		// step 3500..9500 missed, 11000 (the latest late slot) and 12500
		// (on time) skipped.
		{"b", map[string]any{"name": "b", "sid": "2", "kind": "every", "every_ms": "1500", "anchor_ms": ms(500), "payload": "pb",
			"start_ms": ms(500), "limit": "2", "overlap": "skip", "catchup": "one", "state": "active", "next_ms": ms(14000),
			"last_slot_ms": ms(500), "last_id": verbs.OccurrenceID(2, T0+500), "fired": "1", "skipped": "3", "missed": "5"}},
	} {
		got := asMap(t, e.ok("EMQ.SCHEDULE.GET", "q", c.name))
		if !reflect.DeepEqual(got, c.want) {
			t.Fatalf("%s: schedule %s\n got %v\nwant %v", tg.Name(), c.name, got, c.want)
		}
	}
	if got := e.zscore("emq:{q}:sched", "b"); got != ms(14000) {
		t.Fatalf("%s: score %s", tg.Name(), got)
	}
	// Nothing is due: a further fire writes nothing.
	before := e.digest()
	if n := e.ok("EMQ.SCHEDULE.FIRE", "q", 5); n != int64(0) || e.digest() != before {
		t.Fatalf("%s: a fire with nothing due: %v", tg.Name(), n)
	}
	// Pause, resume, delete.
	e.ok("EMQ.SCHEDULE.PAUSE", "q", "b")
	if got := e.zscore("emq:{q}:sched", "b"); got != fmt.Sprint(verbs.MaxScoreMs) {
		t.Fatalf("%s: paused score %s", tg.Name(), got)
	}
	tg.Advance(3000) // T0+16000: 14000 and 15500 pass while paused
	e.ok("EMQ.SCHEDULE.RESUME", "q", "b")
	if got := asMap(t, e.ok("EMQ.SCHEDULE.GET", "q", "b"))["next_ms"]; got != ms(17000) {
		t.Fatalf("%s: resumed next %v", tg.Name(), got)
	}
	if e.ok("EMQ.SCHEDULE.DEL", "q", "b") != int64(1) || e.ok("EMQ.SCHEDULE.DEL", "q", "b") != int64(0) {
		t.Fatalf("%s: del", tg.Name())
	}
	if got := e.refused("EMQ.SCHEDULE.PAUSE", "q", "b"); got != "ERR no such schedule" {
		t.Fatalf("%s: %q", tg.Name(), got)
	}
	// Refusals write nothing. On emqd the server's timer fires schedule a
	// (due since the advance above) on its own goroutine, at any moment:
	// fire what is due first, so the digests compare a quiet keyspace.
	fire()
	before = e.digest()
	for _, c := range []struct {
		args []any
		want string
	}{
		{[]any{"EMQ.SCHEDULE", "q", "x", "EVERY", 0, "p"}, "ERR interval_ms must be a positive integer"},
		{[]any{"EMQ.SCHEDULE", "q", "x", "EVERY", 1, "p"}, "ERR interval_ms must be at least 1000"},
		{[]any{"EMQ.SCHEDULE", "q", "x", "EVERY", 999, "p"}, "ERR interval_ms must be at least 1000"},
		{[]any{"EMQ.SCHEDULE", "q", "x", "EVERY", "9007199254740992", "p"}, "ERR interval_ms is out of range"},
		{[]any{"EMQ.SCHEDULE", "q", "a:b", "EVERY", 1, "p"}, "ERR invalid schedule name"},
		{[]any{"EMQ.SCHEDULE", "q", "x", "EVERY", 1000, "p", "START", 5, "END", 4}, "ERR end_ms must not be before start_ms"},
		{[]any{"EMQ.SCHEDULE", "q", "x", "EVERY", 1000, "p", "CATCHUP", "some"}, "ERR syntax error"},
		{[]any{"EMQ.SCHEDULE.LIST", "q", 0, 1001}, "ERR count must be at most 1000"},
	} {
		if got := e.refused(c.args...); got != c.want {
			t.Errorf("%s: %v: %q, want %q", tg.Name(), c.args, got, c.want)
		}
	}
	if e.digest() != before {
		t.Fatalf("%s: a refusal wrote", tg.Name())
	}
	// CRON: emqd's; the library refuses it (Differences "cron schedules").
	if tg.Native() {
		e.ok("EMQ.SCHEDULE", "q", "c", "CRON", "0 * * * *", "TZ", "Europe/Berlin", "p")
	} else if got := e.refused("EMQ.SCHEDULE", "q", "c", "CRON", "0 * * * *", "p"); got != "ERR CRON schedules are not available in the cluster library (docs/cluster.md)" {
		t.Fatalf("library cron: %q", got)
	}
}
