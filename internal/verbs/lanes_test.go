package verbs

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/emqd/emqd/internal/store"
)

// laneOfPayload is the lane a claimed job's payload names ("<lane>/<n>").
func laneOfPayload(p string) string { return p[:strings.IndexByte(p, '/')] }

// fill enqueues n jobs in lane (DefaultLane: no LANE option), in batches.
func fill(h *th, q, lane string, n int, opts ...string) {
	h.t.Helper()
	for n > 0 {
		b := min(n, 5000)
		args := []string{"EMQ.ENQUEUE.MANY", q}
		if lane != DefaultLane {
			args = append(args, "LANE", lane)
		}
		args = append(args, opts...)
		args = append(args, "JOBS")
		for i := 0; i < b; i++ {
			args = append(args, "*", fmt.Sprintf("%s/%d", lane, n-i))
		}
		h.ok(args...)
		n -= b
	}
}

type claimed struct{ id, payload, token string }

// claimN claims up to count jobs in calls of batch.
func claimN(h *th, q string, count, batch int) []claimed {
	h.t.Helper()
	var out []claimed
	for len(out) < count {
		r := h.ok("EMQ.CLAIM", q, "100000000", "COUNT", fmt.Sprint(min(batch, count-len(out)))).([]any)
		if len(r) == 0 {
			break
		}
		for _, j := range r {
			jj := j.([]any)
			out = append(out, claimed{jj[0].(string), jj[1].(string), jj[2].(string)})
		}
	}
	return out
}

func lanesOf(cs []claimed) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = laneOfPayload(c.payload)
	}
	return out
}

// checkShares asserts that over every prefix of seq each lane's count is
// within one job of its weighted share.
func checkShares(t *testing.T, seq []string, weights map[string]int) {
	t.Helper()
	W := 0
	for _, w := range weights {
		W += w
	}
	n := map[string]int{}
	worst := 0.0
	for i, l := range seq {
		n[l]++
		for name, w := range weights {
			exp := float64(i+1) * float64(w) / float64(W)
			d := float64(n[name]) - exp
			if d < 0 {
				d = -d
			}
			if d > worst {
				worst = d
			}
			if d > 1 {
				t.Fatalf("after %d picks lane %s has %d, share %.2f (counts %v)", i+1, name, n[name], exp, n)
			}
		}
	}
	t.Logf("%d picks, counts %v, worst deviation %.3f", len(seq), n, worst)
}

// TestLaneShares: backlogged lanes of weights 3:1 and 5:3:1 (one of them
// the default lane), 10,000 claims one by one and in batches of 7: every
// prefix of the picks gives each lane its weighted share within one job
// (docs/verbs.md §4.26.2).
func TestLaneShares(t *testing.T) {
	for _, c := range []struct {
		weights map[string]int
	}{
		{map[string]int{"a": 3, "b": 1}},
		{map[string]int{"a": 5, "b": 3, DefaultLane: 1}},
	} {
		for _, batch := range []int{1, 7} {
			t.Run(fmt.Sprintf("%v/batch%d", c.weights, batch), func(t *testing.T) {
				h := newTH(t)
				names := make([]string, 0, len(c.weights))
				for l := range c.weights {
					names = append(names, l)
				}
				sort.Strings(names)
				for _, l := range names {
					if w := c.weights[l]; w != 1 {
						h.ok("EMQ.LANE", "q", l, "WEIGHT", fmt.Sprint(w))
					}
					fill(h, "q", l, 10000)
				}
				seq := lanesOf(claimN(h, "q", 10000, batch))
				if len(seq) != 10000 {
					t.Fatalf("%d claimed", len(seq))
				}
				checkShares(t, seq, c.weights)
			})
		}
	}
}

// TestLaneLateJoiner: a lane that joins after 5,000 picks of two others is
// served at once (within one round of the lanes), then gets its share, not
// a catch-up burst for the others' history.
func TestLaneLateJoiner(t *testing.T) {
	h := newTH(t)
	fill(h, "q", "a", 6000)
	fill(h, "q", "b", 6000)
	claimN(h, "q", 5000, 7)
	fill(h, "q", "c", 3000)
	seq := lanesOf(claimN(h, "q", 3000, 1))
	first := -1
	for i, l := range seq {
		if l == "c" {
			first = i
			break
		}
	}
	if first < 0 || first > 2 {
		t.Fatalf("the late lane was first served at pick %d: %v", first, seq[:10])
	}
	checkShares(t, seq, map[string]int{"a": 1, "b": 1, "c": 1})
}

// TestLaneNoStarvation: a 100,000-job lane beside a 10-job lane: the small
// lane is done within its fair share of the first picks (20, equal
// weights, plus one).
func TestLaneNoStarvation(t *testing.T) {
	h := newTH(t)
	fill(h, "q", "big", 100000)
	fill(h, "q", "small", 10)
	seq := lanesOf(claimN(h, "q", 21, 1))
	n := 0
	for _, l := range seq {
		if l == "small" {
			n++
		}
	}
	if n != 10 {
		t.Fatalf("the small lane got %d of the first 21 picks: %v", n, seq)
	}
	// The default lane (plain jobs) beside a flood of lane work: neither
	// starves.
	h2 := newTH(t)
	fill(h2, "q", "flood", 50000)
	fill(h2, "q", DefaultLane, 10)
	seq = lanesOf(claimN(h2, "q", 21, 3))
	n = 0
	for _, l := range seq {
		if l == DefaultLane {
			n++
		}
	}
	if n != 10 {
		t.Fatalf("the default lane got %d of the first 21 picks: %v", n, seq)
	}
}

// TestLanePriorityWithinLane: within a lane, jobs go by priority then id;
// across lanes the selection is by share, not by priority.
func TestLanePriorityWithinLane(t *testing.T) {
	h := newTH(t)
	h.ok("EMQ.ENQUEUE", "q", "JOB00000000001", "a/1", "LANE", "a")
	h.ok("EMQ.ENQUEUE", "q", "JOB00000000002", "a/2", "LANE", "a", "PRIORITY", "-1")
	h.ok("EMQ.ENQUEUE", "q", "JOB00000000003", "b/1", "LANE", "b", "PRIORITY", "9")
	h.ok("EMQ.ENQUEUE", "q", "JOB00000000004", "b/2", "LANE", "b", "PRIORITY", "5")
	var got []string
	for _, c := range claimN(h, "q", 4, 1) {
		got = append(got, c.payload)
	}
	if want := []string{"a/2", "b/2", "a/1", "b/1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}

// laneRow returns a lane's view from EMQ.LANES (nil: not listed).
func laneRow(h *th, q, name string) map[string]any {
	h.t.Helper()
	for _, x := range h.ok("EMQ.LANES", q).([]any) {
		kv := x.([]any)
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		if m["lane"] == name {
			return m
		}
	}
	return nil
}

// laneKeys lists the keys of q's lane machinery left in the keyspace.
func laneKeys(h *th, q string) []string {
	var out []string
	h.s.DB(h.db).Keys(func(key string, _ *store.Value) bool {
		if strings.HasPrefix(key, "emq:{"+q+"}:lane") {
			out = append(out, key)
		}
		return true
	})
	sort.Strings(out)
	return out
}

// TestLaneMaxActive: a lane at MAX_ACTIVE is absent from the selection; each
// exit from active (COMPLETE, FAIL retry and death, REQUEUE, DELAY, the
// sweep's recovery, death and restart exemption) gives its slot back once,
// and the lane serves again (docs/verbs.md §4.26.3).
func TestLaneMaxActive(t *testing.T) {
	h := newTH(t)
	h.ok("EMQ.LANE", "q", "a", "MAX_ACTIVE", "2")
	fill(h, "q", "a", 20)
	fill(h, "q", "b", 20)
	got := claimN(h, "q", 6, 6)
	n := 0
	var held []claimed
	for _, c := range got {
		if laneOfPayload(c.payload) == "a" {
			n++
			held = append(held, c)
			if h.field("q", c.id, "lane_slot") != "1" {
				t.Fatalf("no lane_slot: %s", h.row("q", c.id))
			}
		}
	}
	if n != 2 {
		t.Fatalf("lane a handed out %d with MAX_ACTIVE 2: %v", n, lanesOf(got))
	}
	if m := laneRow(h, "q", "a"); m["active"] != int64(2) || m["state"] != "full" {
		t.Fatalf("lane a %v", m)
	}
	exits := []func(c claimed){
		func(c claimed) { h.ok("EMQ.COMPLETE", "q", c.id, c.token) },
		func(c claimed) { h.ok("EMQ.FAIL", "q", c.id, c.token, "5", "0", "e") },
		func(c claimed) { h.ok("EMQ.FAIL", "q", c.id, c.token, "1", "0", "e") },
		func(c claimed) { h.ok("EMQ.REQUEUE", "q", c.id, c.token) },
		func(c claimed) { h.ok("EMQ.DELAY", "q", c.id, c.token, "IN", "0") },
		func(c claimed) { h.ok("EMQ.COMPLETE", "q", c.id, c.token, "NEXT", "1000") },
	}
	for i, exit := range exits {
		exit(held[0])
		if f := h.field("q", held[0].id, "lane_slot"); f != "<absent>" && f != "" {
			t.Fatalf("exit %d left lane_slot: %s", i, h.row("q", held[0].id))
		}
		m := laneRow(h, "q", "a")
		if i == len(exits)-1 {
			// NEXT claimed again in the same call: a back to 2.
			if m["active"] != int64(2) {
				t.Fatalf("exit %d (NEXT): lane a %v", i, m)
			}
			break
		}
		if m["active"] != int64(1) {
			t.Fatalf("exit %d: lane a %v", i, m)
		}
		// Only a's freed slot is claimable from a: the next a-claim refills.
		var next claimed
		for _, c := range claimN(h, "q", 3, 3) {
			if laneOfPayload(c.payload) == "a" {
				next = c
			}
		}
		if next.id == "" {
			t.Fatalf("exit %d: lane a not served again", i)
		}
		held[0] = next
		if m := laneRow(h, "q", "a"); m["active"] != int64(2) {
			t.Fatalf("exit %d: after refill %v", i, m)
		}
	}
	// The sweep: every lease expires; recovery, death and the exemption
	// give the slots back.
	h.clk.Advance(200000000)
	h.ok("EMQ.STALLED.CHECK", "q", "1", "1000")
	if m := laneRow(h, "q", "a"); m["active"] != int64(0) {
		t.Fatalf("after the sweep's deaths lane a %v", m)
	}
	got = claimN(h, "q", 4, 4)
	h.run = "another-run-0000000000000000000000000000"
	h.clk.Advance(200000000)
	h.ok("EMQ.STALLED.CHECK", "q", "1", "1000")
	if m := laneRow(h, "q", "a"); m["active"] != int64(0) {
		t.Fatalf("after the exemption lane a %v (%v)", m, lanesOf(got))
	}
}

// TestLaneNoGarbage: once a lane's jobs are done and it is not configured,
// none of its keys is left; a queue whose lanes are all gone writes as a
// queue without lanes again.
func TestLaneNoGarbage(t *testing.T) {
	h := newTH(t)
	h.ok("EMQ.LANE", "q", "r", "RATE", "100", "1000", "MAX_ACTIVE", "3", "WEIGHT", "2")
	fill(h, "q", "r", 5)
	fill(h, "q", "x", 5)
	fill(h, "q", DefaultLane, 5)
	for {
		cs := claimN(h, "q", 4, 4)
		if len(cs) == 0 {
			break
		}
		for i, c := range cs {
			switch i % 3 {
			case 0:
				h.ok("EMQ.COMPLETE", "q", c.id, c.token)
			case 1:
				h.ok("EMQ.FAIL", "q", c.id, c.token, "2", "0", "e")
			default:
				h.ok("EMQ.REQUEUE", "q", c.id, c.token)
			}
		}
	}
	h.ok("EMQ.LANE", "q", "r", "RESET")
	h.ok("EMQ.STALLED.CHECK", "q")
	if dead := h.ok("EMQ.COUNTS", "q").([]any); len(dead) == 0 {
		t.Fatal("no counts")
	}
	// The dead jobs hold no slot; once the last lane is empty no verb
	// leaves a lane key for a later one to delete (docs/verbs.md §4.26.4).
	for _, m := range h.members("emq:{q}:dead") {
		h.ok("EMQ.REMOVE", "q", m[:strings.IndexByte(m, '@')])
	}
	if k := laneKeys(h, "q"); len(k) != 0 {
		t.Fatalf("lane keys left: %v", k)
	}
	claimN(h, "q", 1, 1)
	if k := laneKeys(h, "q"); len(k) != 0 {
		t.Fatalf("lane keys left after a claim: %v", k)
	}
	if f := h.field("q", "none", "x"); f != "<absent>" {
		t.Fatal(f)
	}
	if v := h.s.DB(0).Get("emq:{q}:meta"); v != nil {
		if _, ok := v.Hash().Get("lane_vt"); ok {
			t.Fatal("lane_vt left in meta")
		}
	}
}

// TestLaneRate: RATE count per_ms hands out at most count jobs of the lane
// in any window of per_ms, on the server clock; the blocking layer's
// wake-up is the next token's time.
func TestLaneRate(t *testing.T) {
	h := newTH(t)
	h.ok("EMQ.LANE", "q", "r", "RATE", "3", "1000")
	fill(h, "q", "r", 10)
	if got := claimN(h, "q", 10, 10); len(got) != 3 {
		t.Fatalf("claimed %d with RATE 3 1000", len(got))
	}
	if m := laneRow(h, "q", "r"); m["state"] != "limited" {
		t.Fatalf("lane %v", m)
	}
	k := NewKeys("q")
	if at, ok := nextWake(h.s.DB(0), k); !ok || at != tNow+1000 {
		t.Fatalf("wake at %d %v, want %d", at, ok, tNow+1000)
	}
	h.clk.Advance(999)
	if got := claimN(h, "q", 10, 10); len(got) != 0 {
		t.Fatalf("claimed %d before the window passed", len(got))
	}
	h.clk.Advance(1)
	if got := claimN(h, "q", 10, 10); len(got) != 3 {
		t.Fatalf("claimed %d after the window", len(got))
	}
	h.clk.Advance(500)
	h.ok("EMQ.LANE", "q", "r", "RATE", "5", "1000")
	if got := claimN(h, "q", 10, 10); len(got) != 2 {
		t.Fatalf("claimed %d after raising the rate to 5", len(got))
	}
}

// TestLanePause: a paused lane is out of the selection; RESUME brings it
// back; the other lanes go on.
func TestLanePause(t *testing.T) {
	h := newTH(t)
	fill(h, "q", "a", 3)
	fill(h, "q", "b", 3)
	h.ok("EMQ.LANE", "q", "a", "PAUSE")
	if got := lanesOf(claimN(h, "q", 10, 10)); !reflect.DeepEqual(got, []string{"b", "b", "b"}) {
		t.Fatalf("paused: %v", got)
	}
	h.ok("EMQ.LANE", "q", "a", "RESUME")
	if got := lanesOf(claimN(h, "q", 10, 10)); !reflect.DeepEqual(got, []string{"a", "a", "a"}) {
		t.Fatalf("resumed: %v", got)
	}
}

// TestLaneArgs: the refusals of EMQ.LANE, EMQ.LANES and the LANE option
// write nothing.
func TestLaneArgs(t *testing.T) {
	h := newTH(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"EMQ.LANE", "q", "a:b", "WEIGHT", "2"}, ErrLaneName},
		{[]string{"EMQ.LANE", "q", "a"}, "ERR wrong number of arguments for 'emq.lane' command"},
		{[]string{"EMQ.LANE", "q", "a", "WEIGHT", "0"}, ErrLaneWeight},
		{[]string{"EMQ.LANE", "q", "a", "WEIGHT", "1001"}, ErrLaneWeight},
		{[]string{"EMQ.LANE", "q", "a", "WEIGHT", "x"}, "ERR value is not an integer or out of range"},
		{[]string{"EMQ.LANE", "q", "a", "MAX_ACTIVE", "-1"}, "ERR max_active must be a non-negative integer"},
		{[]string{"EMQ.LANE", "q", "a", "RATE", "1", "0"}, "ERR per_ms must be a positive integer"},
		{[]string{"EMQ.LANE", "q", "a", "RATE", "1"}, "ERR syntax error"},
		{[]string{"EMQ.LANE", "q", "a", "PAUSE", "RESUME"}, "ERR syntax error"},
		{[]string{"EMQ.LANE", "q", "a", "WEIGHT", "2", "WEIGHT", "3"}, "ERR syntax error"},
		{[]string{"EMQ.ENQUEUE", "q", "*", "p", "LANE", ""}, ErrLaneName},
		{[]string{"EMQ.ENQUEUE", "q", "*", "p", "LANE", "a", "LANE", "b"}, "ERR syntax error"},
		{[]string{"EMQ.ENQUEUE.MANY", "q", "LANE", "a b", "JOBS", "*", "p"}, ErrLaneName},
		{[]string{"EMQ.LANES", "bad name"}, ErrInvalidQueue},
	} {
		if got := h.do(c.args...); got != replyErr(c.want) {
			t.Errorf("%v: %v, want %s", c.args, got, c.want)
		}
	}
	if h.feed.n != 0 || h.s.DB(0).Len() != 0 {
		t.Fatalf("a refusal wrote: %d records, %d keys", h.feed.n, h.s.DB(0).Len())
	}
	// Stored lane state of the wrong type refuses, writing nothing.
	h.setString("emq:{q}:lanes:known", "x")
	if got := h.do("EMQ.ENQUEUE", "q", "*", "p", "LANE", "a"); got != replyErr("WRONGTYPE Operation against a key holding the wrong kind of value") {
		t.Fatalf("wrong type: %v", got)
	}
	if h.feed.n != 0 {
		t.Fatal("wrote")
	}
	// LANE default is the default lane: no field, a plain job.
	h2 := newTH(t)
	h2.ok("EMQ.ENQUEUE", "q", "JOB00000000001", "p", "LANE", "default")
	if h2.field("q", "JOB00000000001", "lane") != "<absent>" || h2.s.DB(0).Get("emq:{q}:lanes:known") != nil {
		t.Fatal(h2.row("q", "JOB00000000001"))
	}
}

// TestLanesTurnOnWithPlainBacklog: plain pending jobs from before lanes were
// used join the selection as the default lane when the first lane appears.
func TestLanesTurnOnWithPlainBacklog(t *testing.T) {
	h := newTH(t)
	fill(h, "q", DefaultLane, 4)
	fill(h, "q", "a", 4)
	if got := lanesOf(claimN(h, "q", 8, 8)); !reflect.DeepEqual(got, []string{"a", "default", "a", "default", "a", "default", "a", "default"}) {
		t.Fatalf("order %v", got)
	}
}

// TestLaneSeedGroupRowsStillRefused: a `group` row is refused as before,
// with lanes on (the seed's rule).
func TestLaneSeedGroupRowsStillRefused(t *testing.T) {
	h := newTH(t)
	fill(h, "q", "a", 1)
	id := h.members("emq:{q}:lane:a:pending")[0]
	id = id[:strings.IndexByte(id, '@')]
	h.hset("emq:{q}:job:"+id, "group", "g")
	before := digest(h.s)
	if got := h.do("EMQ.CLAIM", "q", "1000"); got != replyErr(ErrLane) {
		t.Fatalf("claim of a group row: %v", got)
	}
	if digest(h.s) != before {
		t.Fatal("the refusal wrote")
	}
}

// TestLaneRegistryDeletedByHand: with emq:{q}:lanes:known deleted by a
// plain DEL, the lane's jobs are out of the selection; the next enqueue
// into the lane (or EMQ.LANE on it) registers it again, with the jobs it
// already had, instead of stranding them and every later one
// (docs/verbs.md §4.26.4; found by a newcomer run: ENQUEUE ... LANE la
// answered an id that no claim ever handed out).
func TestLaneRegistryDeletedByHand(t *testing.T) {
	for _, how := range []string{"enqueue", "lane"} {
		t.Run(how, func(t *testing.T) {
			h := newTH(t)
			fill(h, "kq", "la", 1)
			fill(h, "kq", DefaultLane, 1)
			h.s.Lock()
			h.s.DB(0).Remove("emq:{kq}:lanes:known")
			h.s.Unlock()
			if how == "enqueue" {
				fill(h, "kq", "la", 1)
			} else {
				h.ok("EMQ.LANE", "kq", "la", "WEIGHT", "2")
			}
			want := 3
			if how == "lane" {
				want = 2
			}
			got := 0
			for {
				cs := claimN(h, "kq", 5, 5)
				if len(cs) == 0 {
					break
				}
				for _, c := range cs {
					h.ok("EMQ.COMPLETE", "kq", c.id, c.token)
					got++
				}
			}
			if got != want {
				t.Fatalf("%d jobs claimed after the registry was deleted and %s, want %d", got, how, want)
			}
		})
	}
}

// TestLaneClaimAfterTurnOn: on a queue whose lanes have all emptied and
// been deleted (§4.26.4), a claim whose promotion moves a lane job from
// the schedule into pending turns lanes on and serves the rest of the call
// with the lane selection: the job is handed out by this call, not the
// next one (issue 23: no call answers empty while a lane has work). The
// three shapes: a lane job failed with delay 0, a due ENQUEUE ... DELAY
// ... LANE, and COMPLETE ... NEXT's claim; each with plain jobs pending
// beside it, which the stride rule interleaves (ties by name: default
// before x).
func TestLaneClaimAfterTurnOn(t *testing.T) {
	claimIDs := func(r any) []string {
		var ids []string
		for _, j := range r.([]any) {
			ids = append(ids, j.([]any)[0].(string))
		}
		return ids
	}
	t.Run("fail-delay-0", func(t *testing.T) {
		h := newTH(t)
		lj := h.ok("EMQ.ENQUEUE", "q", "*", "lanejob", "LANE", "x").(string)
		c := claimN(h, "q", 1, 1)
		if len(c) != 1 || c[0].id != lj {
			t.Fatalf("claimed %v", c)
		}
		h.ok("EMQ.FAIL", "q", lj, c[0].token, "5", "0", "e")
		if k := laneKeys(h, "q"); len(k) != 0 {
			t.Fatalf("lanes not deleted after the fail: %v", k)
		}
		got := claimIDs(h.ok("EMQ.CLAIM", "q", "1000"))
		if !reflect.DeepEqual(got, []string{lj}) {
			t.Fatalf("claim after the lane job's retry came due: %v, want [%s]", got, lj)
		}
		if f := h.field("q", lj, "lane_slot"); f != "1" {
			t.Fatalf("lane_slot %q: the job was not claimed under lanes", f)
		}
		if m := laneRow(h, "q", "x"); m == nil || m["active"] != int64(1) {
			t.Fatalf("lane x %v", m)
		}
	})
	t.Run("due-delay-lane", func(t *testing.T) {
		h := newTH(t)
		p1 := h.ok("EMQ.ENQUEUE", "q", "*", "plain1").(string)
		p2 := h.ok("EMQ.ENQUEUE", "q", "*", "plain2").(string)
		lj := h.ok("EMQ.ENQUEUE", "q", "*", "lanejob", "DELAY", "100", "LANE", "x").(string)
		if k := laneKeys(h, "q"); len(k) != 0 {
			t.Fatalf("lane keys before the job is due: %v", k)
		}
		h.clk.Advance(100)
		got := claimIDs(h.ok("EMQ.CLAIM", "q", "1000", "COUNT", "3"))
		if !reflect.DeepEqual(got, []string{p1, lj, p2}) {
			t.Fatalf("claim %v, want [%s %s %s] (default, x, default)", got, p1, lj, p2)
		}
		for _, id := range got {
			if f := h.field("q", id, "lane_slot"); f != "1" {
				t.Fatalf("%s lane_slot %q", id, f)
			}
		}
		if m := laneRow(h, "q", DefaultLane); m == nil || m["active"] != int64(2) {
			t.Fatalf("default lane %v", m)
		}
		if m := laneRow(h, "q", "x"); m == nil || m["active"] != int64(1) {
			t.Fatalf("lane x %v", m)
		}
	})
	t.Run("complete-next", func(t *testing.T) {
		h := newTH(t)
		a := h.ok("EMQ.ENQUEUE", "q", "*", "a").(string)
		lj := h.ok("EMQ.ENQUEUE", "q", "*", "lanejob", "DELAY", "100", "LANE", "x").(string)
		c := claimN(h, "q", 1, 1)
		if len(c) != 1 || c[0].id != a {
			t.Fatalf("claimed %v", c)
		}
		h.clk.Advance(100)
		got := claimIDs(h.ok("EMQ.COMPLETE", "q", a, c[0].token, "NEXT", "1000"))
		if !reflect.DeepEqual(got, []string{lj}) {
			t.Fatalf("NEXT %v, want [%s]", got, lj)
		}
	})
}
