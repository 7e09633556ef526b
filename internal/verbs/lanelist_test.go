package verbs

import (
	"math/rand"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// laneListIDs is EMQ.LIST's reply as ids, and each entry's lane field
// ("<absent>" for none, "<ghost>" for a member without a row).
func laneListIDs(t *testing.T, h *th, args ...string) (ids, lanes []string) {
	t.Helper()
	for _, e := range h.ok(append([]string{"EMQ.LIST"}, args...)...).([]any) {
		pair := e.([]any)
		ids = append(ids, pair[0].(string))
		lane := "<ghost>"
		if pair[1] != nil {
			lane = "<absent>"
			kv := pair[1].([]any)
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == "lane" {
					lane = kv[i+1].(string)
				}
			}
		}
		lanes = append(lanes, lane)
	}
	return ids, lanes
}

func jid(n int) string { return EncodeID(int64(n)) }

// laneListFixture: the default lane (1, 2), lane a (3, 4, 5; 5 first by
// priority), lane b (6, 7) and the configured lane cfg (8), and one held
// job of lane a (9): EMQ.LIST pending walks default, a, b, cfg.
func laneListFixture(t *testing.T) *th {
	h := newTH(t)
	h.ok("EMQ.LANE", "q", "cfg", "WEIGHT", "3")
	h.ok("EMQ.ENQUEUE", "q", jid(9), "held", "LANE", "a")
	if id, _ := h.claimID("q"); id != jid(9) {
		t.Fatalf("claimed %q", id)
	}
	h.ok("EMQ.ENQUEUE", "q", jid(1), "d")
	h.ok("EMQ.ENQUEUE", "q", jid(2), "d")
	h.ok("EMQ.ENQUEUE", "q", jid(3), "a", "LANE", "a")
	h.ok("EMQ.ENQUEUE", "q", jid(4), "a", "LANE", "a")
	h.ok("EMQ.ENQUEUE", "q", jid(5), "a", "LANE", "a", "PRIORITY", "-1")
	h.ok("EMQ.ENQUEUE", "q", jid(6), "b", "LANE", "b")
	h.ok("EMQ.ENQUEUE", "q", jid(7), "b", "LANE", "b")
	h.ok("EMQ.ENQUEUE", "q", jid(8), "c", "LANE", "cfg")
	checkLanes(t, h, "q", "fixture")
	return h
}

func countsPending(t *testing.T, h *th) int64 {
	t.Helper()
	m := h.ok("EMQ.COUNTS", "q").([]any)
	return m[1].(int64)
}

// TestLaneList: EMQ.LIST q pending lists every lane's pending jobs, the
// default lane's first, then the other lanes by name, each in claim order
// (priority, then id), as many as EMQ.COUNTS' pending; pages of any size
// tile it exactly; LANE name lists one lane (docs/verbs.md §4.26.6).
func TestLaneList(t *testing.T) {
	h := laneListFixture(t)
	all := []string{jid(1), jid(2), jid(5), jid(3), jid(4), jid(6), jid(7), jid(8)}
	lanes := []string{"<absent>", "<absent>", "a", "a", "a", "b", "b", "cfg"}
	ids, ls := laneListIDs(t, h, "q", "pending")
	if !reflect.DeepEqual(ids, all) || !reflect.DeepEqual(ls, lanes) {
		t.Fatalf("LIST pending: %v %v, want %v %v", ids, ls, all, lanes)
	}
	if n := countsPending(t, h); n != int64(len(all)) {
		t.Fatalf("COUNTS pending %d, LIST %d", n, len(all))
	}
	for size := 1; size <= 9; size++ {
		var got []string
		for off := 0; ; off += size {
			page, _ := laneListIDs(t, h, "q", "PENDING", strconv.Itoa(off), strconv.Itoa(size))
			got = append(got, page...)
			if len(page) < size {
				break
			}
		}
		if !reflect.DeepEqual(got, all) {
			t.Fatalf("pages of %d: %v", size, got)
		}
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"q", "pending", "LANE", "a"}, []string{jid(5), jid(3), jid(4)}},
		{[]string{"q", "pending", "lane", "default"}, []string{jid(1), jid(2)}},
		{[]string{"q", "pending", "1", "1", "LANE", "a"}, []string{jid(3)}},
		{[]string{"q", "pending", "3", "10", "LANE", "a"}, nil},
		{[]string{"q", "pending", "LANE", "cfg"}, []string{jid(8)}},
		{[]string{"q", "pending", "LANE", "nope"}, nil},
		{[]string{"q", "pending", "LANE", "DEFAULT"}, nil}, // a lane of its own (§2.8)
		{[]string{"none", "pending", "LANE", "a"}, nil},
		{[]string{"q", "pending", "7", "5"}, []string{jid(8)}},
		{[]string{"q", "pending", "8", "5"}, nil},
		{[]string{"q", "active"}, []string{jid(9)}},
	} {
		if got, _ := laneListIDs(t, h, tc.args...); !reflect.DeepEqual(got, tc.want) {
			t.Fatalf("LIST %v: %v, want %v", tc.args, got, tc.want)
		}
	}
}

// TestLaneListRefusals: LANE with another state, a bad lane name, a stray
// word, and a lane set or lanes:known of the wrong type refuse, writing
// nothing; a lane set of the wrong type refuses only the pages that reach
// it (docs/verbs.md §4.26.6).
func TestLaneListRefusals(t *testing.T) {
	h := laneListFixture(t)
	before := digest(h.s)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"EMQ.LIST", "q", "active", "LANE", "a"}, ErrLaneState},
		{[]string{"EMQ.LIST", "q", "dead", "0", "10", "LANE", "a"}, ErrLaneState},
		{[]string{"EMQ.LIST", "q", "pending", "LANE", "a:b"}, ErrLaneName},
		{[]string{"EMQ.LIST", "q", "pending", "LANE", ""}, ErrLaneName},
		{[]string{"EMQ.LIST", "q", "pending", "LANE", "a", "0", "1"}, "ERR syntax error"},
		{[]string{"EMQ.LIST", "q", "pending", "0", "1", "LANE"}, "ERR syntax error"},
		{[]string{"EMQ.LIST", "q", "pending", "0", "1", "LIMIT", "a"}, "ERR syntax error"},
		{[]string{"EMQ.LIST", "q", "pending", "x", "1", "LANE", "a:b"}, "ERR value is not an integer or out of range"},
		{[]string{"EMQ.LIST", "q", "pending", "0", "1001", "LANE", "a"}, ErrListCount},
		{[]string{"EMQ.LIST", "q", "all", "LANE", "a"}, ErrListState},
		{[]string{"EMQ.REMOVE.ALL", "q", "dead", "LANE", "a"}, ErrLaneState},
		{[]string{"EMQ.REMOVE.ALL", "q", "scheduled", "LIMIT", "1", "LANE", "a"}, ErrLaneState},
		{[]string{"EMQ.REMOVE.ALL", "q", "pending", "LANE", "a", "LANE", "b"}, "ERR syntax error"},
		{[]string{"EMQ.REMOVE.ALL", "q", "pending", "LANE"}, "ERR syntax error"},
		{[]string{"EMQ.REMOVE.ALL", "q", "pending", "LANE", "x y"}, ErrLaneName},
		{[]string{"EMQ.REMOVE.ALL", "q", "pending", "LANE", "a", "LIMIT", "0"}, "ERR limit must be a positive integer"},
		{[]string{"EMQ.REMOVE.ALL", "q", "active", "LANE", "a"}, ErrRemoveState},
		{[]string{"EMQ.REPROCESS.ALL", "q", "LANE", "a"}, "ERR syntax error"},
		{[]string{"EMQ.PROMOTE.ALL", "q", "LANE", "a"}, "ERR syntax error"},
	} {
		if got := h.raw(tc.args...); got != "-"+tc.want+"\r\n" {
			t.Fatalf("%v: %q, want %q", tc.args, got, tc.want)
		}
	}
	// The typed calls refuse alike.
	for _, err := range []error{
		func() error {
			_, err := h.v.List(h.ctx(nil), &ListArgs{Queue: "q", State: "active", Lane: "a"})
			return err
		}(),
		func() error {
			_, err := h.v.RemoveAll(h.ctx(nil), &RemoveAllArgs{Queue: "q", State: "dead", Lane: "a"})
			return err
		}(),
	} {
		if err == nil || err.Error() != ErrLaneState {
			t.Fatalf("typed LANE with another state: %v", err)
		}
	}
	if _, err := h.v.List(h.ctx(nil), &ListArgs{Queue: "q", State: "pending", Lane: "a b"}); err == nil || err.Error() != ErrLaneName {
		t.Fatalf("typed bad lane: %v", err)
	}
	if digest(h.s) != before {
		t.Fatal("a refused call wrote")
	}
	// Lane b's set of the wrong type: pages that end before it are served.
	k := NewKeys("q")
	h.s.DB(h.db).Remove(k.LanePrefix + "b:pending")
	h.setString(k.LanePrefix+"b:pending", "x")
	before = digest(h.s)
	if got, _ := laneListIDs(t, h, "q", "pending", "0", "5"); len(got) != 5 {
		t.Fatalf("the page before the bad set: %v", got)
	}
	wrong := "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
	for _, args := range [][]string{
		{"EMQ.LIST", "q", "pending", "0", "6"}, {"EMQ.LIST", "q", "pending"}, {"EMQ.LIST", "q", "pending", "LANE", "b"},
		{"EMQ.REMOVE.ALL", "q", "pending"}, {"EMQ.REMOVE.ALL", "q", "pending", "LIMIT", "1"}, {"EMQ.REMOVE.ALL", "q", "pending", "LANE", "b"},
	} {
		if got := h.raw(args...); got != wrong {
			t.Fatalf("%v: %q", args, got)
		}
	}
	if digest(h.s) != before {
		t.Fatal("a refused call wrote")
	}
	h.s.DB(h.db).Remove(k.LanesKnown)
	h.setString(k.LanesKnown, "x")
	for _, args := range [][]string{{"EMQ.LIST", "q", "pending"}, {"EMQ.REMOVE.ALL", "q", "pending"}} {
		if got := h.raw(args...); got != wrong {
			t.Fatalf("%v with lanes:known a string: %q", args, got)
		}
	}
}

// TestLaneDrain: EMQ.REMOVE.ALL q pending removes every lane's pending
// jobs in EMQ.LIST pending's order, LIMIT at a time, with left the pending
// jobs left in every lane; LANE name drains one lane. After each call the
// counts match EMQ.COUNTS and EMQ.LANES, the rows are gone, and the lane
// state is exact: an emptied lane leaves the selection, an idle,
// unconfigured one has no key left (docs/verbs.md §4.26.4, §4.26.6).
func TestLaneDrain(t *testing.T) {
	h := laneListFixture(t)
	k := NewKeys("q")
	step := func(want []any, args ...string) {
		t.Helper()
		if got := h.ok(args...); !reflect.DeepEqual(got, want) {
			t.Fatalf("%v: %v, want %v", args, got, want)
		}
		checkLanes(t, h, "q", strings.Join(args, " "))
		ids, _ := laneListIDs(t, h, "q", "pending")
		if n := countsPending(t, h); n != int64(len(ids)) || (!strings.Contains(strings.ToUpper(strings.Join(args, " ")), "LANE") && n != want[1].(int64)) {
			t.Fatalf("%v: COUNTS pending %d, LIST %d, left %v", args, n, len(ids), want[1])
		}
		var lanesPend int64
		for _, l := range h.ok("EMQ.LANES", "q").([]any) {
			m := l.([]any)
			lanesPend += m[5].(int64)
		}
		if lanesPend != countsPending(t, h) {
			t.Fatalf("%v: EMQ.LANES pending %d, COUNTS %d", args, lanesPend, countsPending(t, h))
		}
	}
	step([]any{int64(2), int64(1)}, "EMQ.REMOVE.ALL", "q", "pending", "LANE", "a", "LIMIT", "2")
	for _, id := range []string{jid(5), jid(3)} {
		if h.s.DB(h.db).Get(k.Row(id)) != nil {
			t.Fatalf("row %s left", id)
		}
	}
	if h.s.DB(h.db).Get(k.Row(jid(4))) == nil {
		t.Fatal("row 4 removed")
	}
	step([]any{int64(1), int64(0)}, "EMQ.REMOVE.ALL", "q", "pending", "limit", "5", "lane", "a")
	// Lane a still holds job 9: its hash stays (active 1), out of the
	// selection with nothing pending.
	if got := h.members(k.Lanes); len(got) != 3 { // default, b, cfg
		t.Fatalf("selection after draining lane a: %v", got)
	}
	step([]any{int64(0), int64(0)}, "EMQ.REMOVE.ALL", "q", "pending", "LANE", "a")
	step([]any{int64(0), int64(0)}, "EMQ.REMOVE.ALL", "q", "pending", "LANE", "nope")
	step([]any{int64(3), int64(2)}, "EMQ.REMOVE.ALL", "q", "pending", "LIMIT", "3") // 1, 2, 6
	if got, _ := laneListIDs(t, h, "q", "pending"); !reflect.DeepEqual(got, []string{jid(7), jid(8)}) {
		t.Fatalf("left %v", got)
	}
	step([]any{int64(2), int64(0)}, "EMQ.REMOVE.ALL", "q", "pending")
	for i := 1; i <= 8; i++ {
		if h.s.DB(h.db).Get(k.Row(jid(i))) != nil {
			t.Fatalf("row %d left", i)
		}
	}
	// Left: lane a (a slot held), cfg (configured), the registry.
	if got := laneKeys(h, "q"); !reflect.DeepEqual(got, []string{"emq:{q}:lane:a", "emq:{q}:lane:cfg", "emq:{q}:lanes:known"}) {
		t.Fatalf("lane keys after the drain: %v", got)
	}
	if got := h.members(k.Lanes); len(got) != 0 {
		t.Fatalf("selection after the drain: %v", got)
	}
	// The held job ends: lane a goes; cfg reset: lanes are off.
	id, tok := jid(9), "1"
	h.ok("EMQ.COMPLETE", "q", id, tok)
	h.ok("EMQ.LANE", "q", "cfg", "RESET")
	checkLanes(t, h, "q", "after")
	if got := laneKeys(h, "q"); len(got) != 0 {
		t.Fatalf("lane keys left: %v", got)
	}
}

// TestLaneDrainStrays: members of a lane's set that their rows do not
// place there (a ghost, a row naming another lane) and an id in two
// pending sets are each removed from the set they were taken from and
// counted once, so the drain ends and the lane state stays exact
// (docs/verbs.md §4.26.6).
func TestLaneDrainStrays(t *testing.T) {
	h := laneListFixture(t)
	k := NewKeys("q")
	h.zadd(k.LanePrefix+"b:pending", 0, "JOB0000000000g")   // a ghost
	h.zadd(k.LanePrefix+"b:pending", 0, jid(3))             // a's job, also in b
	h.zadd(k.LanePrefix+"cfg:pending", 0, "JOB0000000000h") // a ghost
	if got := h.ok("EMQ.REMOVE.ALL", "q", "pending", "LANE", "b"); !reflect.DeepEqual(got, []any{int64(4), int64(0)}) {
		t.Fatalf("LANE b: %v", got)
	}
	if got := h.members(k.LanePrefix + "a:pending"); len(got) != 2 {
		t.Fatalf("lane a after draining b: %v", got)
	}
	checkLanes(t, h, "q", "LANE b")
	h.zadd(k.LanePrefix+"cfg:pending", 0, jid(4)) // a's job, also in cfg
	if got := h.ok("EMQ.REMOVE.ALL", "q", "pending"); !reflect.DeepEqual(got, []any{int64(6), int64(0)}) {
		t.Fatalf("drain: %v", got)
	}
	checkLanes(t, h, "q", "drain")
	if n := countsPending(t, h); n != 0 {
		t.Fatalf("pending %d after the drain", n)
	}
}

// TestLaneDrainIsPerJobRemoves: over random states with lanes, EMQ.REMOVE.ALL
// q pending [LANE name] LIMIT n leaves the keyspace as EMQ.REMOVE of each of
// the first n members of EMQ.LIST pending's walk would, and answers its
// first refusal (docs/verbs.md §4.24, §4.26.6); states with strays (a lane
// set member its row does not place there) are left out, their rule is
// TestLaneDrainStrays'.
func TestLaneDrainIsPerJobRemoves(t *testing.T) {
	rng := rand.New(rand.NewSource(20261202))
	states := 400
	kinds := []string{"refused", "lane ", "lane a", "lane default"}
	tried := map[string]int{}
	// Under -short the states end at the first one past 80 where each
	// kind was exercised 10 times (the assertion below; about 100 states
	// with this seed, against 400).
	enough := func() bool { return exercised(tried, kinds, 10) }
	for s := 0; s < states && !(testing.Short() && s >= 80 && enough()); s++ {
		seed := rng.Int63()
		bulk, each := newTH(t), newTH(t)
		for _, h := range []*th{bulk, each} {
			r := rand.New(rand.NewSource(seed))
			randomState(h, r)
			randomLanes(h, r)
			for i := r.Intn(4); i > 0; i-- {
				h.raw("EMQ.ENQUEUE", "q", "*", "p", "LANE", pick(r, "a", "b", "c"))
			}
		}
		k := NewKeys("q")
		limit := 1 + rng.Intn(7)
		args := []string{"EMQ.REMOVE.ALL", "q", "pending", "LIMIT", strconv.Itoa(limit)}
		lane := pick(rng, "", "", "a", "b", "default", "c")
		if lane != "" {
			args = append(args, "LANE", lane)
		}
		// The walk: the default lane's set, then lanes:known's by rank.
		var sets []string
		var names []string
		switch lane {
		case "":
			sets, names = []string{k.Pending}, []string{DefaultLane}
			if v := each.s.DB(0).Get(k.LanesKnown); v != nil && v.ZSet == nil {
				continue
			}
			for _, n := range each.zorder(k.LanesKnown) {
				if n != DefaultLane {
					sets, names = append(sets, k.LanePrefix+n+":pending"), append(names, n)
				}
			}
		case DefaultLane:
			sets, names = []string{k.Pending}, []string{DefaultLane}
		default:
			sets, names = []string{k.LanePrefix + lane + ":pending"}, []string{lane}
		}
		var ids []string
		stray, wrong := false, false
		for i, set := range sets {
			if v := each.s.DB(0).Get(set); v != nil && v.ZSet == nil {
				wrong = true
				break
			}
			for _, id := range each.zorder(set) {
				if names[i] != DefaultLane && each.field("q", id, "lane") != names[i] {
					stray = true
				}
				ids = append(ids, id)
			}
		}
		if stray || wrong {
			continue
		}
		got := bulk.raw(args...)
		n := min(limit, len(ids))
		done, want := 0, ""
		for _, id := range ids[:n] {
			out := each.raw("EMQ.REMOVE", "q", id)
			if strings.HasPrefix(out, "-") {
				want = out
				break
			}
			if out != ":0\r\n" {
				done++
			}
		}
		if want == "" {
			want = "*2\r\n:" + strconv.Itoa(done) + "\r\n:" + strconv.Itoa(len(ids)-n) + "\r\n"
		}
		if got != want {
			t.Fatalf("state %d %q: %q, per job %q (walk %v)", s, args, got, want, ids)
		}
		if strings.HasPrefix(got, "-") {
			tried["refused"]++
			continue
		}
		tried["lane "+lane]++
		if digest(bulk.s) != digest(each.s) {
			t.Fatalf("state %d %q: the keyspaces differ", s, args)
		}
	}
	for _, v := range kinds {
		if tried[v] < 10 {
			t.Errorf("%q exercised %d times (%v)", v, tried[v], tried)
		}
	}
	t.Logf("%v", tried)
}

// BenchmarkListAcrossLanes: EMQ.LIST q pending on a queue of 10,000 lanes
// of one job each (through the handlers, no network): "walk-end" is the
// last page of every lane's jobs (10 entries after 9,990: the walk reads
// 10,000 set sizes), "one-lane" the same 10 jobs' lane alone with LANE
// name, "plain-end" the last 10 of 10,000 jobs of a queue without lanes
// (one set), "counts" EMQ.COUNTS of the laned queue (its pending adds
// every lane's size: the same walk). The walk's extra cost is its size reads (docs/verbs.md
// §4.26.6, "Cost bound").
func BenchmarkListAcrossLanes(b *testing.B) {
	const n = 10000
	laned, plain := newTH(b), newTH(b)
	k := NewKeys("q")
	for i := 0; i < n; i++ {
		id := EncodeID(int64(i + 1))
		lane := "t" + strconv.Itoa(100000+i)
		laned.hset(k.Row(id), "state", "pending", "attempts", "0", "payload", "p", "lane", lane)
		laned.zadd(k.LanePrefix+lane+":pending", 0, id)
		laned.zadd(k.LanesKnown, 0, lane)
		plain.hset(k.Row(id), "state", "pending", "attempts", "0", "payload", "p")
		plain.zadd(k.Pending, 0, id)
	}
	last := "t" + strconv.Itoa(100000+n-1)
	for _, c := range []struct {
		name string
		h    *th
		args []string
		want int
	}{
		{"walk-start", laned, []string{"EMQ.LIST", "q", "pending", "0", "10"}, 10},
		{"walk-end", laned, []string{"EMQ.LIST", "q", "pending", strconv.Itoa(n - 10), "10"}, 10},
		{"one-lane", laned, []string{"EMQ.LIST", "q", "pending", "0", "10", "LANE", last}, 1},
		{"plain-end", plain, []string{"EMQ.LIST", "q", "pending", strconv.Itoa(n - 10), "10"}, 10},
		{"counts", laned, []string{"EMQ.COUNTS", "q"}, 18}, // EMQ.COUNTS' own walk of the lanes
	} {
		b.Run(c.name, func(b *testing.B) {
			if got := len(c.h.ok(c.args...).([]any)); got != c.want {
				b.Fatalf("%v: %d entries, want %d", c.args, got, c.want)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c.h.raw(c.args...)
			}
		})
	}
}
