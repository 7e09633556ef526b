package conformance

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// lanesScenario: lanes (docs/verbs.md §4.26), the same on emqd and the
// library (docs/cluster.md §9): the weighted fair selection (shares within
// one job of the weights over every prefix, one by one and in batches),
// MAX_ACTIVE never exceeded and its slots given back by every exit from
// active, RATE as a log of claims on the server clock, PAUSE/RESUME,
// priorities within a lane, no lane key left once a lane is empty, idle
// and not configured, and bad arguments refused with nothing written.
func lanesScenario(t *testing.T, tg Target) {
	for _, c := range []struct {
		name string
		run  func(*testing.T, Target)
	}{
		{"first", lanesFirst}, {"shares", lanesShares}, {"max_active", lanesMaxActive},
		{"rate_pause", lanesRatePause}, {"refusals", lanesRefusals}, {"flows_schedules", lanesFlowsSchedules},
		{"turn_on", lanesTurnOn}, {"list_drain", lanesListDrain},
	} {
		t.Run(c.name, func(t *testing.T) {
			newEnv(t, tg).ok("FLUSHALL")
			c.run(t, tg)
		})
	}
}

// idE5 is a fifth job id (after idD).
const idE5 = "JOB00000000005"

// laneID is the n-th job id of lane l (ids sort by n within a lane).
func laneID(l string, n int) string { return fmt.Sprintf("JOB%s%010d", strings.ToUpper(l[:1]), n) }

// claimIDs claims count jobs of q and returns their ids.
func (e *env) claimIDs(q string, count int) []string {
	e.t.Helper()
	v := e.ok("EMQ.CLAIM", q, 60000, "COUNT", count).([]any)
	out := make([]string, len(v))
	for i, j := range v {
		out[i] = j.([]any)[0].(string)
	}
	return out
}

// lanes reads EMQ.LANES q [page...] as one map per lane (RESP2: flat
// pairs).
func (e *env) lanes(q string, page ...any) []map[string]any {
	e.t.Helper()
	var out []map[string]any
	for _, x := range e.ok(append([]any{"EMQ.LANES", q}, page...)...).([]any) {
		m := map[string]any{}
		kv := x.([]any)
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		out = append(out, m)
	}
	return out
}

// laneView is one lane's entry of EMQ.LANES (nil: not listed).
func (e *env) laneView(q, lane string) map[string]any {
	for _, m := range e.lanes(q) {
		if m["lane"] == lane {
			return m
		}
	}
	return nil
}

// laneKeys lists the keys of q's lane state.
func (e *env) laneKeys(q string) []string {
	e.t.Helper()
	var out []string
	for k := range e.keyspace(nil) {
		if strings.HasPrefix(k, "emq:{"+q+"}:lane") {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func lanesFirst(t *testing.T, tg Target) {
	e := newEnv(t, tg)
	e.ok("EMQ.LANE", "q", "a", "WEIGHT", 2)
	e.ok("EMQ.ENQUEUE", "q", idA, "a", "LANE", "a")
	e.ok("EMQ.ENQUEUE", "q", idB, "b", "LANE", "b")
	e.ok("EMQ.ENQUEUE", "q", idC, "c")
	if f := e.field("q", idA, "lane"); f != "a" {
		t.Fatalf("lane field %q", f)
	}
	if f := e.field("q", idC, "lane"); f != "<absent>" {
		t.Fatalf("default lane wrote lane=%q", f)
	}
	// Every pass is 0: ties go by name (a, b, default).
	if got := e.claimIDs("q", 3); !reflect.DeepEqual(got, []string{idA, idB, idC}) {
		t.Fatalf("claim %v", got)
	}
	ls := e.lanes("q")
	if len(ls) != 3 || ls[0]["lane"] != "a" || ls[1]["lane"] != "b" || ls[2]["lane"] != "default" {
		t.Fatalf("EMQ.LANES %v", ls)
	}
	a := ls[0]
	if a["weight"] != int64(2) || a["active"] != int64(1) || a["pending"] != int64(0) || a["state"] != "idle" || a["pass"] != int64(524288) {
		t.Fatalf("lane a %v", a)
	}
	// A page of lanes (EMQ.LIST's arguments): offset 1, count 1 is b.
	if page := e.lanes("q", 1, 1); len(page) != 1 || page[0]["lane"] != "b" {
		t.Fatalf("EMQ.LANES q 1 1: %v", page)
	}
	if page := e.lanes("q", 3, 10); len(page) != 0 {
		t.Fatalf("past the end: %v", page)
	}
	if f := e.field("q", idB, "lane_slot"); f != "1" {
		t.Fatalf("lane_slot %q", f)
	}
	// Priorities order jobs within a lane.
	e.ok("EMQ.ENQUEUE", "q", idD, "d", "LANE", "a", "PRIORITY", 5)
	e.ok("EMQ.ENQUEUE", "q", idE5, "e", "LANE", "a", "PRIORITY", -5)
	if got := e.zmembers("emq:{q}:lane:a:pending"); !reflect.DeepEqual(got, []string{idE5, idD}) {
		t.Fatalf("lane a pending %v", got)
	}
	if n := e.ok("EMQ.COUNTS", "q"); asMap(t, n)["pending"] != int64(2) {
		t.Fatalf("EMQ.COUNTS counts lane jobs: %v", n)
	}
	if got := e.claimIDs("q", 2); !reflect.DeepEqual(got, []string{idE5, idD}) {
		t.Fatalf("claim by priority %v", got)
	}
	// Every job completed: b and default are empty, idle and not
	// configured, so their keys go; a is configured and keeps its hash.
	for _, id := range []string{idA, idB, idC, idD, idE5} {
		e.ok("EMQ.COMPLETE", "q", id, "1")
	}
	if got := e.laneKeys("q"); !reflect.DeepEqual(got, []string{"emq:{q}:lane:a", "emq:{q}:lanes:known"}) {
		t.Fatalf("lane keys after draining: %v", got)
	}
	// Settings above 2^53-1 (Differences: lanes).
	e.ok("EMQ.LANE", "q", "big", "MAX_ACTIVE", "9007199254740993")
	want := "9007199254740993"
	if !tg.Native() {
		want = "9007199254740991"
	}
	if v := e.ok("HGET", "emq:{q}:lane:big", "max_active"); v != want {
		t.Fatalf("MAX_ACTIVE 9007199254740993 stored as %v", v)
	}
	e.ok("EMQ.LANE", "q", "big", "RESET")
	e.ok("EMQ.LANE", "q", "a", "RESET")
	if got := e.laneKeys("q"); len(got) != 0 {
		t.Fatalf("lane keys after RESET: %v", got)
	}
	if m := asMap(t, e.ok("HGETALL", "emq:{q}:meta")); m["lane_vt"] != nil {
		t.Fatalf("lane_vt left in meta: %v", m)
	}
}

// lanesShares: weights 3:1 claimed one by one, and 5:3:1 (the default
// lane among them) in batches of 7; after every claim each lane's served
// count is within one job of its weighted share. A lane that joins late is
// served within its share of the next picks.
func lanesShares(t *testing.T, tg Target) {
	e := newEnv(t, tg)
	check := func(name string, served map[string]int, weights map[string]int) {
		t.Helper()
		total, wsum := 0, 0
		for l, w := range weights {
			total += served[l]
			wsum += w
		}
		for l, w := range weights {
			want := float64(total) * float64(w) / float64(wsum)
			if d := float64(served[l]) - want; d > 1 || d < -1 {
				t.Fatalf("%s: after %d picks lane %s has %d, share %.2f (%v)", name, total, l, served[l], want, served)
			}
		}
	}
	enqueue := func(l string, n int) {
		args := []any{"EMQ.ENQUEUE.MANY", "q"}
		if l != "default" {
			args = append(args, "LANE", l)
		}
		args = append(args, "JOBS")
		for i := 0; i < n; i++ {
			args = append(args, laneID(l, i), "p")
		}
		e.ok(args...)
	}
	laneOfID := func(id string) string {
		switch id[3] {
		case 'A':
			return "a"
		case 'B':
			return "b"
		case 'C':
			return "c"
		}
		return "default"
	}
	e.ok("EMQ.LANE", "q", "a", "WEIGHT", 3)
	enqueue("a", 200)
	enqueue("b", 200)
	served := map[string]int{}
	for i := 0; i < 160; i++ {
		ids := e.claimIDs("q", 1)
		served[laneOfID(ids[0])]++
		check("3:1", served, map[string]int{"a": 3, "b": 1})
	}
	// A late joiner (c, weight 1) rejoins at the current virtual time.
	enqueue("c", 50)
	first := e.claimIDs("q", 4)
	var sawC bool
	for _, id := range first {
		sawC = sawC || laneOfID(id) == "c"
	}
	if !sawC {
		t.Fatalf("the late lane c was not served in the first 4 picks: %v", first)
	}
	e.ok("FLUSHALL")
	e.ok("EMQ.LANE", "q", "a", "WEIGHT", 5)
	e.ok("EMQ.LANE", "q", "b", "WEIGHT", 3)
	enqueue("a", 200)
	enqueue("b", 200)
	enqueue("default", 200)
	served = map[string]int{}
	for i := 0; i < 30; i++ {
		ids := e.claimIDs("q", 7)
		if len(ids) != 7 {
			t.Fatalf("batch %d: %d jobs", i, len(ids))
		}
		for _, id := range ids {
			served[laneOfID(id)]++
		}
		check("5:3:1", served, map[string]int{"a": 5, "b": 3, "default": 1})
	}
}

// lanesMaxActive: MAX_ACTIVE 2 is never exceeded, and COMPLETE, FAIL,
// REQUEUE, DELAY and the sweep each give the slot back once.
func lanesMaxActive(t *testing.T, tg Target) {
	e := newEnv(t, tg)
	e.ok("EMQ.LANE", "q", "m", "MAX_ACTIVE", 2)
	var args []any
	args = append(args, "EMQ.ENQUEUE.MANY", "q", "LANE", "m", "JOBS")
	for i := 0; i < 6; i++ {
		args = append(args, laneID("m", i), "p")
	}
	e.ok(args...)
	e.ok("EMQ.ENQUEUE", "q", idA, "plain")
	active := func() int64 {
		t.Helper()
		v := e.laneView("q", "m")
		if v == nil {
			return -1
		}
		return v["active"].(int64)
	}
	got := e.claimIDs("q", 10)
	if !reflect.DeepEqual(got, []string{idA, laneID("m", 0), laneID("m", 1)}) { // default < m at pass 0
		t.Fatalf("claim %v", got)
	}
	if a, st := active(), e.laneView("q", "m")["state"]; a != 2 || st != "full" {
		t.Fatalf("active %d state %v", a, st)
	}
	if got := e.claimIDs("q", 5); len(got) != 0 {
		t.Fatalf("a full lane handed out %v", got)
	}
	// Each exit from active gives its slot back, and the next claim takes it.
	exits := []struct {
		name string
		exit func(id string)
	}{
		{"complete", func(id string) { e.ok("EMQ.COMPLETE", "q", id, "1") }},
		{"fail", func(id string) { e.ok("EMQ.FAIL", "q", id, "1", 5, 100000, "boom") }},
		{"requeue", func(id string) { e.ok("EMQ.REQUEUE", "q", id, "1") }},
		{"delay", func(id string) { e.ok("EMQ.DELAY", "q", id, "1", "IN", 100000) }},
	}
	held := []string{laneID("m", 0), laneID("m", 1)}
	for _, x := range exits {
		id := held[0]
		x.exit(id)
		if a := active(); a != 1 {
			t.Fatalf("%s: active %d after the exit", x.name, a)
		}
		if f := e.field("q", id, "lane_slot"); f != "<absent>" && x.name != "complete" {
			t.Fatalf("%s: lane_slot %q left", x.name, f)
		}
		next := e.claimIDs("q", 5)
		if len(next) != 1 {
			t.Fatalf("%s: the freed slot gave %v", x.name, next)
		}
		if a := active(); a != 2 {
			t.Fatalf("%s: active %d", x.name, a)
		}
		held = append(held[1:], next[0])
	}
	// The sweep: both leases expire; both slots come back.
	tg.Advance(60001)
	e.ok("EMQ.STALLED.CHECK", "q", 5)
	if a := active(); a != 0 {
		t.Fatalf("after the sweep active %d", a)
	}
	for _, id := range held {
		if f := e.field("q", id, "lane_slot"); f != "<absent>" {
			t.Fatalf("sweep left lane_slot on %s", id)
		}
	}
	// Drain: the lane's slots all return; nothing but the configured
	// lane's hash and the registry remain.
	for i := 0; i < 20; i++ {
		v := e.ok("EMQ.CLAIM", "q", 60000, "COUNT", 5).([]any)
		m := 0
		for _, j := range v {
			if strings.HasPrefix(j.([]any)[0].(string), "JOBM") {
				m++
			}
		}
		if m > 2 {
			t.Fatalf("claimed %d from a MAX_ACTIVE 2 lane", m)
		}
		for _, j := range v {
			jj := j.([]any)
			e.ok("EMQ.COMPLETE", "q", jj[0], jj[2])
		}
		e.ok("EMQ.PROMOTE.ALL", "q")
	}
	if a := active(); a != 0 {
		t.Fatalf("drained: active %d", a)
	}
	if got := e.laneKeys("q"); !reflect.DeepEqual(got, []string{"emq:{q}:lane:m", "emq:{q}:lanes:known"}) {
		t.Fatalf("lane keys after draining: %v", got)
	}
}

// lanesRatePause: RATE 2 1000 lets two claims through in any window of
// 1000 ms on the server clock; PAUSE takes a lane out of the selection.
func lanesRatePause(t *testing.T, tg Target) {
	e := newEnv(t, tg)
	e.ok("EMQ.LANE", "q", "r", "RATE", 2, 1000)
	var args []any
	args = append(args, "EMQ.ENQUEUE.MANY", "q", "LANE", "r", "JOBS")
	for i := 0; i < 5; i++ {
		args = append(args, laneID("r", i), "p")
	}
	e.ok(args...)
	if got := e.claimIDs("q", 5); len(got) != 2 {
		t.Fatalf("RATE 2: %v", got)
	}
	if st := e.laneView("q", "r")["state"]; st != "limited" {
		t.Fatalf("state %v", st)
	}
	if got := e.zscore("emq:{q}:lanes:limited", "r"); got != fmt.Sprint(tg.Now()+1000) {
		t.Fatalf("next token at %q, now %d", got, tg.Now())
	}
	tg.Advance(999)
	if got := e.claimIDs("q", 5); len(got) != 0 {
		t.Fatalf("a claim inside the window: %v", got)
	}
	tg.Advance(1)
	if got := e.claimIDs("q", 5); len(got) != 2 {
		t.Fatalf("the next window: %v", got)
	}
	e.ok("EMQ.LANE", "q", "r", "RATE", 0, 1)
	e.ok("EMQ.LANE", "q", "r", "PAUSE")
	if got := e.claimIDs("q", 5); len(got) != 0 {
		t.Fatalf("a paused lane handed out %v", got)
	}
	if st := e.laneView("q", "r")["state"]; st != "paused" {
		t.Fatalf("state %v", st)
	}
	if n := len(e.zmembers("emq:{q}:lane:r:spent")); n != 0 {
		t.Fatalf("RATE 0 kept the rate log (%d)", n)
	}
	e.ok("EMQ.LANE", "q", "r", "RESUME")
	if got := e.claimIDs("q", 5); len(got) != 1 {
		t.Fatalf("resumed: %v", got)
	}
}

// lanesRefusals: bad lane arguments are refused with nothing written.
func lanesRefusals(t *testing.T, tg Target) {
	e := newEnv(t, tg)
	e.ok("EMQ.ENQUEUE", "q", idA, "a", "LANE", "a")
	dig, d := e.digest(), e.dirty()
	for _, c := range []struct {
		args []any
		want string
	}{
		{[]any{"EMQ.LANE", "q", "a:b", "WEIGHT", 1}, "ERR invalid lane name"},
		{[]any{"EMQ.LANE", "q", "a", "WEIGHT", 0}, "ERR weight must be an integer between 1 and 1000"},
		{[]any{"EMQ.LANE", "q", "a", "WEIGHT", "x"}, "ERR value is not an integer or out of range"},
		{[]any{"EMQ.LANE", "q", "a", "MAX_ACTIVE", -1}, "ERR max_active must be a non-negative integer"},
		{[]any{"EMQ.LANE", "q", "a", "RATE", 1, 0}, "ERR per_ms must be a positive integer"},
		{[]any{"EMQ.LANE", "q", "a", "PAUSE", "RESUME"}, "ERR syntax error"},
		{[]any{"EMQ.LANE", "q", "a"}, "ERR wrong number of arguments for 'emq.lane' command"},
		{[]any{"EMQ.ENQUEUE", "q", "*", "p", "LANE", ""}, "ERR invalid lane name"},
		{[]any{"EMQ.ENQUEUE", "q", "*", "p", "LANE", "a", "LANE", "b"}, "ERR syntax error"},
		{[]any{"EMQ.ENQUEUE.MANY", "q", "LANE", "a b", "JOBS", "*", "p"}, "ERR invalid lane name"},
	} {
		if got := e.refused(c.args...); got != c.want {
			t.Errorf("%v: %q, want %q", c.args, got, c.want)
		}
	}
	if e.digest() != dig || e.dirty() != d {
		t.Fatal("a refused lane argument wrote")
	}
	// A lane hash that is not what the lane verbs write refuses the verbs
	// that need the lane.
	e.ok("HSET", "emq:{q}:lane:a", "weight", "heavy")
	dig, d = e.digest(), e.dirty()
	if got := e.refused("EMQ.CLAIM", "q", 1000); got != "ERR hash value is not an integer" {
		t.Fatalf("bad lane hash: %q", got)
	}
	if got := e.refused("EMQ.ENQUEUE", "q", idB, "b", "LANE", "a"); got != "ERR hash value is not an integer" {
		t.Fatalf("bad lane hash: %q", got)
	}
	if e.digest() != dig || e.dirty() != d {
		t.Fatal("a refused lane verb wrote")
	}
}

// lanesFlowsSchedules: on a queue whose default lane has MAX_ACTIVE 1, a
// flow's children and a schedule's occurrences enter the default lane
// (seam 1); COMPLETE ... NEXT gives the slot back before its claim, so it
// hands out the next child; the last child's end releases the parent
// into the default lane and the same NEXT claims it (docs/verbs.md
// §4.26.4, §4.25.2).
func lanesFlowsSchedules(t *testing.T, tg Target) {
	e := newEnv(t, tg)
	e.ok("EMQ.LANE", "q", "default", "MAX_ACTIVE", 1)
	e.ok("EMQ.LANE", "q", "x", "WEIGHT", 2)
	e.ok("EMQ.FLOW", "q", idA, "parent", "CHILD", "q", idB, "c1", "CHILD", "q", idC, "c2")
	if v := e.laneView("q", "default"); v == nil || v["pending"] != int64(2) || v["state"] != "ready" {
		t.Fatalf("the flow's children in the default lane: %v", v)
	}
	next := func(id, tok string) []any {
		t.Helper()
		return e.ok("EMQ.COMPLETE", "q", id, tok, "NEXT", 60000, "COUNT", 2).([]any)
	}
	if got := e.claimIDs("q", 2); !reflect.DeepEqual(got, []string{idB}) {
		t.Fatalf("MAX_ACTIVE 1: %v", got)
	}
	got := next(idB, "1")
	if len(got) != 1 || got[0].([]any)[0] != idC {
		t.Fatalf("NEXT after the first child: %v", got)
	}
	got = next(idC, "1")
	if len(got) != 1 || got[0].([]any)[0] != idA {
		t.Fatalf("NEXT after the last child (the released parent): %v", got)
	}
	if v := e.laneView("q", "default"); v["active"] != int64(1) || v["pending"] != int64(0) || v["state"] != "idle" {
		t.Fatalf("default lane holding the parent: %v", v)
	}
	e.ok("EMQ.COMPLETE", "q", idA, "1")
	// A schedule's occurrences join the default lane, one slot at a time.
	e.ok("EMQ.SCHEDULE", "q", "s", "EVERY", 1000, "ps", "CATCHUP", "all")
	tg.Advance(3000)
	if _, err := e.do("EMQ.SCHEDULE.FIRE", "q"); err != nil {
		t.Fatal(err)
	}
	if v := e.laneView("q", "default"); v == nil || v["pending"] != int64(3) || v["active"] != int64(0) {
		t.Fatalf("the occurrences in the default lane: %v", v)
	}
	if got := e.claimIDs("q", 3); len(got) != 1 {
		t.Fatalf("MAX_ACTIVE 1 with occurrences: %v", got)
	}
	if got := e.zscore("emq:{q}:lanes", "default"); got != "" {
		t.Fatalf("a full default lane is in the selection (pass %s)", got)
	}
}

// lanesTurnOn: on a queue whose lanes all emptied and were deleted
// (§4.26.4), a claim whose promotion turns lanes on serves the rest of the
// call with the lane selection, so it hands out the lane job it promoted
// (issue 23: no call answers empty while a lane has work): a lane job
// failed with delay 0; a due ENQUEUE ... DELAY ... LANE beside plain
// pending jobs (the stride rule interleaves them, ties by name: default
// before x); and COMPLETE ... NEXT of a flow's last child, whose released
// parent and the due lane job are served by the same call.
func lanesTurnOn(t *testing.T, tg Target) {
	e := newEnv(t, tg)
	e.ok("EMQ.ENQUEUE", "q", idA, "lanejob", "LANE", "x")
	id, tok, _ := e.claim("q", 60000)
	if id != idA {
		t.Fatalf("claimed %q", id)
	}
	e.ok("EMQ.FAIL", "q", idA, tok, 5, 0, "e")
	if k := e.laneKeys("q"); len(k) != 0 {
		t.Fatalf("lane keys after the lane's last job failed: %v", k)
	}
	if got := e.claimIDs("q", 1); !reflect.DeepEqual(got, []string{idA}) {
		t.Fatalf("claim after the retry came due: %v", got)
	}
	if f := e.field("q", idA, "lane_slot"); f != "1" {
		t.Fatalf("lane_slot %q", f)
	}

	e.ok("EMQ.ENQUEUE", "d", idA, "p1")
	e.ok("EMQ.ENQUEUE", "d", idB, "p2")
	e.ok("EMQ.ENQUEUE", "d", idC, "lanejob", "DELAY", 100, "LANE", "x")
	if k := e.laneKeys("d"); len(k) != 0 {
		t.Fatalf("lane keys before the delayed job is due: %v", k)
	}
	tg.Advance(100)
	if got := e.claimIDs("d", 3); !reflect.DeepEqual(got, []string{idA, idC, idB}) {
		t.Fatalf("claim of the due lane job beside plain jobs: %v", got)
	}
	if v := e.laneView("d", "default"); v == nil || v["active"] != int64(2) {
		t.Fatalf("default lane %v", v)
	}
	if v := e.laneView("d", "x"); v == nil || v["active"] != int64(1) {
		t.Fatalf("lane x %v", v)
	}

	e.ok("EMQ.FLOW", "f", idA, "parent", "CHILD", "f", idB, "c1")
	e.ok("EMQ.ENQUEUE", "f", idC, "lanejob", "DELAY", 100, "LANE", "x")
	if id, _, _ := e.claim("f", 60000); id != idB {
		t.Fatalf("claimed %q", id)
	}
	tg.Advance(100)
	got := e.ok("EMQ.COMPLETE", "f", idB, "1", "NEXT", 60000, "COUNT", 2).([]any)
	var ids []string
	for _, j := range got {
		ids = append(ids, j.([]any)[0].(string))
	}
	if !reflect.DeepEqual(ids, []string{idA, idC}) {
		t.Fatalf("NEXT after the last child with a due lane job: %v", ids)
	}
}

// listIDs is EMQ.LIST's reply as ids.
func (e *env) listIDs(args ...any) []string {
	e.t.Helper()
	var out []string
	for _, x := range e.ok(append([]any{"EMQ.LIST"}, args...)...).([]any) {
		out = append(out, x.([]any)[0].(string))
	}
	return out
}

// lanesListDrain: EMQ.LIST q pending lists every lane's pending jobs (the
// default lane's first, then the other lanes by name, each by priority
// then id) and pages exactly across lanes; LANE name lists one lane, an
// unknown lane nothing. EMQ.REMOVE.ALL q pending drains every lane in that
// order, LIMIT at a time, with left the pending jobs left in every lane;
// LANE name drains one. Emptied lanes leave the selection and their keys
// go; LANE with another state and a bad lane name are refused with nothing
// written (docs/verbs.md §4.26.6).
func lanesListDrain(t *testing.T, tg Target) {
	e := newEnv(t, tg)
	e.ok("EMQ.LANE", "q", "cfg", "WEIGHT", 3)
	e.ok("EMQ.ENQUEUE", "q", idA, "d")
	e.ok("EMQ.ENQUEUE", "q", idB, "d")
	a1, a2, a3 := laneID("a", 1), laneID("a", 2), laneID("a", 3)
	b1, c1 := laneID("b", 1), laneID("cfg", 1)
	e.ok("EMQ.ENQUEUE", "q", a1, "a", "LANE", "a")
	e.ok("EMQ.ENQUEUE", "q", a2, "a", "LANE", "a")
	e.ok("EMQ.ENQUEUE", "q", a3, "a", "LANE", "a", "PRIORITY", -1)
	e.ok("EMQ.ENQUEUE", "q", b1, "b", "LANE", "b")
	e.ok("EMQ.ENQUEUE", "q", c1, "c", "LANE", "cfg")
	all := []string{idA, idB, a3, a1, a2, b1, c1}
	if got := e.listIDs("q", "pending"); !reflect.DeepEqual(got, all) {
		t.Fatalf("LIST pending %v, want %v", got, all)
	}
	if n := asMap(t, e.ok("EMQ.COUNTS", "q"))["pending"]; n != int64(len(all)) {
		t.Fatalf("COUNTS pending %v", n)
	}
	for _, size := range []int{1, 2, 3, 6, 7} {
		var got []string
		for off := 0; ; off += size {
			page := e.listIDs("q", "PENDING", off, size)
			got = append(got, page...)
			if len(page) < size {
				break
			}
		}
		if !reflect.DeepEqual(got, all) {
			t.Fatalf("pages of %d: %v", size, got)
		}
	}
	for _, c := range []struct {
		args []any
		want []string
	}{
		{[]any{"q", "pending", "LANE", "a"}, []string{a3, a1, a2}},
		{[]any{"q", "pending", "1", "1", "lane", "a"}, []string{a1}},
		{[]any{"q", "pending", "LANE", "default"}, []string{idA, idB}},
		{[]any{"q", "pending", "LANE", "nope"}, nil},
		{[]any{"q", "pending", "6", "5"}, []string{c1}},
	} {
		if got := e.listIDs(c.args...); !reflect.DeepEqual(got, c.want) {
			t.Fatalf("LIST %v: %v, want %v", c.args, got, c.want)
		}
	}
	dig, d := e.digest(), e.dirty()
	for _, c := range []struct {
		args []any
		want string
	}{
		{[]any{"EMQ.LIST", "q", "active", "LANE", "a"}, "ERR LANE applies to state pending only"},
		{[]any{"EMQ.LIST", "q", "pending", "LANE", "a:b"}, "ERR invalid lane name"},
		{[]any{"EMQ.LIST", "q", "pending", "LANE", "a", 0, 1}, "ERR syntax error"},
		{[]any{"EMQ.LIST", "q", "pending", 0, 1, "LANE"}, "ERR syntax error"},
		{[]any{"EMQ.LIST", "q", "pending", "x", 1, "LANE", "a:b"}, "ERR value is not an integer or out of range"},
		{[]any{"EMQ.REMOVE.ALL", "q", "dead", "LANE", "a"}, "ERR LANE applies to state pending only"},
		{[]any{"EMQ.REMOVE.ALL", "q", "pending", "LANE", "a", "LANE", "b"}, "ERR syntax error"},
		{[]any{"EMQ.REMOVE.ALL", "q", "pending", "LIMIT", 2, "LANE"}, "ERR syntax error"},
		{[]any{"EMQ.REMOVE.ALL", "q", "pending", "LANE", ""}, "ERR invalid lane name"},
	} {
		if got := e.refused(c.args...); got != c.want {
			t.Errorf("%v: %q, want %q", c.args, got, c.want)
		}
	}
	if e.digest() != dig || e.dirty() != d {
		t.Fatal("a refused LANE wrote")
	}
	bulk := func(want []any, args ...any) {
		t.Helper()
		if got := e.ok(append([]any{"EMQ.REMOVE.ALL", "q", "pending"}, args...)...); !reflect.DeepEqual(got, want) {
			t.Fatalf("REMOVE.ALL pending %v: %v, want %v", args, got, want)
		}
	}
	bulk([]any{int64(2), int64(1)}, "LANE", "a", "LIMIT", 2)
	if got := e.listIDs("q", "pending", "LANE", "a"); !reflect.DeepEqual(got, []string{a2}) {
		t.Fatalf("lane a after LIMIT 2: %v", got)
	}
	bulk([]any{int64(1), int64(0)}, "lane", "a")
	if e.laneView("q", "a") != nil {
		t.Fatalf("drained lane a is still listed: %v", e.lanes("q"))
	}
	bulk([]any{int64(0), int64(0)}, "LANE", "nope")
	bulk([]any{int64(3), int64(1)}, "LIMIT", 3) // idA, idB, b1
	if got := e.zmembers("emq:{q}:lanes"); !reflect.DeepEqual(got, []string{"cfg"}) {
		t.Fatalf("selection: %v", got)
	}
	bulk([]any{int64(1), int64(0)})
	if n := asMap(t, e.ok("EMQ.COUNTS", "q"))["pending"]; n != int64(0) {
		t.Fatalf("COUNTS pending %v after the drain", n)
	}
	for _, id := range all {
		if r := e.row("q", id); r != "" {
			t.Fatalf("row %s left: %s", id, r)
		}
	}
	if got := e.laneKeys("q"); !reflect.DeepEqual(got, []string{"emq:{q}:lane:cfg", "emq:{q}:lanes:known"}) {
		t.Fatalf("lane keys after the drain: %v", got)
	}
	// A ghost in a lane's set is removed from it and counted.
	e.ok("EMQ.ENQUEUE", "q", b1, "b", "LANE", "b")
	e.ok("ZADD", "emq:{q}:lane:b:pending", 0, laneID("b", 9))
	bulk([]any{int64(2), int64(0)})
	if got := e.laneKeys("q"); !reflect.DeepEqual(got, []string{"emq:{q}:lane:cfg", "emq:{q}:lanes:known"}) {
		t.Fatalf("lane keys after the ghost: %v", got)
	}
}
