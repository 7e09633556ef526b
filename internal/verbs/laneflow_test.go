package verbs

import (
	"fmt"
	"math/rand"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/emqd/emqd/internal/num"
	"github.com/emqd/emqd/internal/store"
)

// Lanes and flows composed (docs/verbs.md §4.26.4): a verb that ends a flow
// child in a queue with lanes and releases its parent into that queue
// computes the lane writes of both seams once, so no verb leaves lane state
// that a later claim would have to heal. checkLanes is the judge: after
// every verb, the stored lane state of a queue equals what its jobs say.

// checkLanes asserts that queue q's lane state is exactly what its jobs
// and settings imply (no rate limits in these tests): for every lane, the
// hash's active count is the number of active rows holding a slot of it
// (never above MAX_ACTIVE), it is in emq:{q}:lanes exactly when it has
// pending jobs, is not paused and is under MAX_ACTIVE, and a lane that is
// empty, idle and not configured has no key at all; with no lane left,
// no selection set and no lane_vt remain.
func checkLanes(t *testing.T, h *th, q, step string) map[string]int64 {
	return checkLanesSince(t, h, q, step, nil)
}

// checkLanesSince is checkLanes where a lane may hold more slots than its
// MAX_ACTIVE only when it held at least as many before the verb (prev;
// nil: never): EMQ.LANE may lower MAX_ACTIVE below the slots held, which
// then run out without new claims. It returns the slots held per lane.
func checkLanesSince(t *testing.T, h *th, q, step string, prev map[string]int64) map[string]int64 {
	t.Helper()
	k := NewKeys(q)
	d := h.s.DB(h.db)
	set := func(key string) map[string]bool {
		m := map[string]bool{}
		for _, s := range h.members(key) {
			m[s[:strings.LastIndexByte(s, '@')]] = true
		}
		return m
	}
	known, lanes, limited := set(k.LanesKnown), set(k.Lanes), set(k.LanesLimited)
	names := map[string]bool{}
	for _, m := range []map[string]bool{known, lanes, limited} {
		for n := range m {
			names[n] = true
		}
	}
	// Slots held, from the rows of active.
	held := map[string]int64{}
	for _, s := range h.members(k.Active) {
		id := s[:strings.LastIndexByte(s, '@')]
		if h.field(q, id, "lane_slot") == "1" {
			l := h.field(q, id, "lane")
			if l == "<absent>" {
				l = DefaultLane
			}
			held[l]++
			names[l] = true
		}
	}
	d.Keys(func(key string, _ *store.Value) bool {
		if rest, ok := strings.CutPrefix(key, k.LanePrefix); ok {
			names[strings.TrimSuffix(rest, ":pending")] = true
		}
		return true
	})
	if len(known) > 0 {
		if pz := h.members(k.Pending); len(pz) > 0 {
			names[DefaultLane] = true
		}
	}
	for n := range names {
		pkey := k.LanePrefix + n + ":pending"
		if n == DefaultLane {
			pkey = k.Pending
		}
		pend := len(h.members(pkey))
		hash := map[string]int64{}
		if v := d.Get(k.LanePrefix + n); v != nil {
			v.Hash().Range(func(f string, b []byte) bool {
				x, _ := num.ParseInt(b)
				hash[f] = x
				return true
			})
		}
		_, w := hash["weight"]
		_, ma := hash["max_active"]
		_, rc := hash["rate_count"]
		configured := w || ma || rc || hash["paused"] != 0
		if hash["active"] != held[n] {
			t.Fatalf("%s: lane %s stores active %d, %d slots held (hash %v)", step, n, hash["active"], held[n], hash)
		}
		if ma && held[n] > hash["max_active"] && (prev == nil || held[n] > prev[n]) {
			t.Fatalf("%s: lane %s holds %d slots, MAX_ACTIVE %d", step, n, held[n], hash["max_active"])
		}
		if pend == 0 && held[n] == 0 && !configured {
			if d.Get(k.LanePrefix+n) != nil || known[n] || lanes[n] || limited[n] {
				t.Fatalf("%s: lane %s is empty, idle and not configured but left keys (known %v lanes %v hash %v)", step, n, known[n], lanes[n], hash)
			}
			continue
		}
		if !known[n] {
			t.Fatalf("%s: lane %s (pending %d, held %d) is not in lanes:known", step, n, pend, held[n])
		}
		eligible := pend > 0 && hash["paused"] == 0 && !(ma && hash["max_active"] > 0 && held[n] >= hash["max_active"])
		if lanes[n] != eligible {
			t.Fatalf("%s: lane %s (pending %d, held %d, hash %v) in the selection: %v, eligible: %v", step, n, pend, held[n], hash, lanes[n], eligible)
		}
		if limited[n] {
			t.Fatalf("%s: lane %s limited without a rate", step, n)
		}
	}
	if len(known) == 0 {
		if len(lanes)+len(limited) > 0 {
			t.Fatalf("%s: no lane known but selection sets left: %v %v", step, lanes, limited)
		}
		if v := d.Get(k.Meta); v != nil {
			if _, ok := v.Hash().Get("lane_vt"); ok {
				t.Fatalf("%s: lane_vt left with no lane", step)
			}
		}
	}
	return held
}

// drainAll claims and completes every job of q (checking the lanes after
// each verb) and returns the ids in claim order.
func drainAll(t *testing.T, h *th, q string) []string {
	t.Helper()
	var ids []string
	for i := 0; i < 1000; i++ {
		id, tok := h.claimID(q)
		checkLanes(t, h, q, "drain claim")
		if id == "" {
			return ids
		}
		ids = append(ids, id)
		h.ok("EMQ.COMPLETE", q, id, tok)
		checkLanes(t, h, q, "drain complete "+id)
	}
	t.Fatal("drain did not end")
	return nil
}

// TestLaneFlowRelease: a flow child of a queue with lanes ends (COMPLETE,
// COMPLETE NEXT, FAIL at the cap, FAIL NEXT, the sweep's dead-letter,
// REMOVE, REMOVE.ALL pending) and releases its parent into the default
// lane of the same queue (or of another queue with lanes); with the
// default lane plain or at MAX_ACTIVE 1, another lane configured idle or
// backlogged. After every verb the lane state is exact (checkLanes): the
// parent is claimable under lane selection at once, MAX_ACTIVE is never
// exceeded, and at the drain every lane's active count is 0 and the
// unconfigured lanes left no key (docs/verbs.md §4.26.4).
func TestLaneFlowRelease(t *testing.T) {
	type end struct {
		name   string
		claim  bool // the child is claimed before it ends
		act    func(h *th, cq, id, tok string) any
		nextOK bool // the reply carries NEXT's claim
	}
	ends := []end{
		{"complete", true, func(h *th, cq, id, tok string) any { return h.ok("EMQ.COMPLETE", cq, id, tok) }, false},
		{"complete-next", true, func(h *th, cq, id, tok string) any {
			return h.ok("EMQ.COMPLETE", cq, id, tok, "NEXT", "1000")
		}, true},
		{"fail-cap", true, func(h *th, cq, id, tok string) any { return h.ok("EMQ.FAIL", cq, id, tok, "1", "0", "boom") }, false},
		{"fail-cap-next", true, func(h *th, cq, id, tok string) any {
			return h.ok("EMQ.FAIL", cq, id, tok, "1", "0", "boom", "NEXT", "1000")
		}, true},
		{"sweep-dead", true, func(h *th, cq, id, tok string) any {
			h.clk.Advance(2000)
			return h.ok("EMQ.STALLED.CHECK", cq, "1")
		}, false},
		{"remove", false, func(h *th, cq, id, tok string) any { return h.ok("EMQ.REMOVE", cq, id) }, false},
		{"remove-all", false, func(h *th, cq, id, tok string) any { return h.ok("EMQ.REMOVE.ALL", cq, "pending") }, false},
	}
	for _, e := range ends {
		for _, cap1 := range []bool{false, true} {
			for _, other := range []string{"idle", "backlog"} {
				for _, cq := range []string{"q", "c"} {
					name := fmt.Sprintf("%s/cap1=%v/x=%s/child=%s", e.name, cap1, other, cq)
					t.Run(name, func(t *testing.T) {
						h := newTH(t)
						for _, q := range []string{"q", cq} {
							h.ok("EMQ.LANE", q, "x", "WEIGHT", "2")
							if cap1 {
								h.ok("EMQ.LANE", q, DefaultLane, "MAX_ACTIVE", "1")
							}
							if other == "backlog" {
								fill(h, q, "x", 3)
							}
						}
						h.ok("EMQ.FLOW", "q", fP, "parent", "ON_CHILD_FAIL", "ignore", "CHILD", cq, fC1, "a", "CHILD", cq, fC2, "b")
						checkLanes(t, h, "q", "flow")
						checkLanes(t, h, cq, "flow")
						// The first child completes; with MAX_ACTIVE 1 the
						// second is not claimable while the first is held.
						tok1 := h.claimThis(cq, fC1)
						checkLanes(t, h, cq, "claim c1")
						if cap1 {
							for i := 0; i < 5; i++ {
								if id, tok := h.claimID(cq); id == fC2 {
									t.Fatalf("c2 claimed beside c1 with MAX_ACTIVE 1")
								} else if id != "" {
									h.ok("EMQ.REQUEUE", cq, id, tok)
								}
							}
						}
						h.ok("EMQ.COMPLETE", cq, fC1, tok1)
						checkLanes(t, h, cq, "complete c1")
						var tok2 string
						if e.claim {
							if e.name == "sweep-dead" {
								// Only c2 holds a lease when the sweep runs.
								tok2 = h.claimThis(cq, fC2)
							} else {
								tok2 = h.claimThis(cq, fC2)
							}
							checkLanes(t, h, cq, "claim c2")
						}
						got := e.act(h, cq, fC2, tok2)
						checkLanes(t, h, cq, e.name)
						checkLanes(t, h, "q", e.name+" (parent queue)")
						if st := h.field("q", fP, "state"); st != "pending" && st != "active" {
							t.Fatalf("parent not released: %s (reply %v)", h.row("q", fP), got)
						}
						claimedP := false
						// NEXT's jobs: COMPLETE's whole reply, FAIL's last element.
						var jobs []any
						if e.nextOK {
							jobs = got.([]any)
							if strings.HasPrefix(e.name, "fail") {
								jobs = jobs[len(jobs)-1].([]any)
							}
						}
						if e.nextOK && cq == "q" {
							if other == "idle" {
								// The parent is the only pending job:
								// NEXT's claim, under lane selection, takes it.
								if len(jobs) != 1 || jobs[0].([]any)[0] != fP || jobs[0].([]any)[1] != "parent" {
									t.Fatalf("NEXT did not claim the released parent: %v", got)
								}
							}
							for _, j := range jobs {
								jj := j.([]any)
								if jj[0] == fP {
									claimedP = true
								}
								h.ok("EMQ.COMPLETE", "q", jj[0].(string), jj[2].(string))
								checkLanes(t, h, "q", "complete NEXT's job")
							}
						} else if e.nextOK {
							// NEXT claimed from the child's queue.
							for _, j := range jobs {
								jj := j.([]any)
								h.ok("EMQ.COMPLETE", cq, jj[0].(string), jj[2].(string))
								checkLanes(t, h, cq, "complete NEXT's job")
							}
						}
						ids := drainAll(t, h, "q")
						if cq != "q" {
							drainAll(t, h, cq)
						}
						for _, id := range ids {
							if id == fP {
								claimedP = true
							}
						}
						if !claimedP {
							t.Fatalf("the released parent was never claimed (drained %v, pending %v, lanes %v)", ids, h.members(NewKeys("q").Pending), h.members(NewKeys("q").Lanes))
						}
						for _, q := range []string{"q", cq} {
							for _, x := range h.ok("EMQ.LANES", q).([]any) {
								m := x.([]any)
								for i := 0; i+1 < len(m); i += 2 {
									if m[i] == "active" && m[i+1] != int64(0) {
										t.Fatalf("%s: lane active at the drain: %v", q, m)
									}
								}
							}
							// Only the configured lanes are left.
							var lanes []string
							for _, s := range h.members(NewKeys(q).LanesKnown) {
								lanes = append(lanes, s[:strings.LastIndexByte(s, '@')])
							}
							sort.Strings(lanes)
							want := []string{"x"}
							if cap1 {
								want = []string{DefaultLane, "x"}
							}
							if !reflect.DeepEqual(lanes, want) {
								t.Fatalf("%s: lanes left %v, want %v", q, lanes, want)
							}
						}
					})
				}
			}
		}
	}
}

// TestLaneRemoveExact: EMQ.REMOVE and EMQ.REMOVE.ALL pending of pending
// jobs of a queue with lanes leave the lanes exact at once, no claim
// between: a lane emptied by REMOVE leaves the selection, and its keys go
// when it is not configured; a bad lane hash refuses the removal, writing
// nothing (docs/verbs.md §4.26.4).
func TestLaneRemoveExact(t *testing.T) {
	h := newTH(t)
	h.ok("EMQ.LANE", "q", "cfg", "WEIGHT", "3")
	var ids = map[string][]string{}
	for _, l := range []string{"a", "cfg", DefaultLane} {
		for i := 0; i < 3; i++ {
			args := []string{"EMQ.ENQUEUE", "q", "*", l}
			if l != DefaultLane {
				args = append(args, "LANE", l)
			}
			ids[l] = append(ids[l], h.ok(args...).(string))
		}
	}
	checkLanes(t, h, "q", "enqueue")
	for _, l := range []string{"a", "cfg"} {
		for _, id := range ids[l] {
			if got := h.ok("EMQ.REMOVE", "q", id); got != int64(1) {
				t.Fatalf("REMOVE %s: %v", id, got)
			}
			checkLanes(t, h, "q", "remove "+l+" "+id)
		}
	}
	if k := laneKeys(h, "q"); !reflect.DeepEqual(k, []string{"emq:{q}:lane:cfg", "emq:{q}:lane:default", "emq:{q}:lanes", "emq:{q}:lanes:known"}) {
		t.Fatalf("lane keys after removing lanes a and cfg: %v", k)
	}
	if got := h.ok("EMQ.REMOVE.ALL", "q", "pending"); !reflect.DeepEqual(got, []any{int64(3), int64(0)}) {
		t.Fatal(got)
	}
	checkLanes(t, h, "q", "remove.all")
	if k := laneKeys(h, "q"); !reflect.DeepEqual(k, []string{"emq:{q}:lane:cfg", "emq:{q}:lanes:known"}) {
		t.Fatalf("lane keys after REMOVE.ALL: %v", k)
	}
	// The last configured lane reset: lanes off, nothing left.
	h.ok("EMQ.LANE", "q", "cfg", "RESET")
	if k := laneKeys(h, "q"); len(k) != 0 {
		t.Fatalf("lane keys left: %v", k)
	}

	// A bad lane hash refuses REMOVE of that lane's job, and REMOVE.ALL
	// pending of the default lane's: nothing written.
	id := h.ok("EMQ.ENQUEUE", "q", "*", "p", "LANE", "b").(string)
	h.ok("EMQ.ENQUEUE", "q", "*", "p", "LANE", "b")
	h.ok("EMQ.ENQUEUE", "q", "*", "p")
	h.hset("emq:{q}:lane:b", "active", "x")
	h.hset("emq:{q}:lane:default", "active", "x")
	before := digest(h.s)
	if got := h.raw("EMQ.REMOVE", "q", id); got != "-"+ErrLaneHash+"\r\n" {
		t.Fatalf("REMOVE with a bad lane hash: %q", got)
	}
	if got := h.raw("EMQ.REMOVE.ALL", "q", "pending"); got != "-"+ErrLaneHash+"\r\n" {
		t.Fatalf("REMOVE.ALL with a bad lane hash: %q", got)
	}
	if digest(h.s) != before {
		t.Fatal("a refused REMOVE wrote")
	}
}

// TestLaneFlowRandom: random sessions of one queue with lanes (a, b and
// the default lane, MAX_ACTIVE and PAUSE set and reset on the way) and
// flows (parents and children in the queue, every third flow with a child
// in queue c, which has lanes of its own; every policy): enqueues,
// claims, every exit from active (with and without NEXT), removals, sweeps,
// bulk actions. After every verb the lane state is exact (checkLanes); at
// the end a drain claims every job and leaves no slot held.
func TestLaneFlowRandom(t *testing.T) {
	for seed := int64(1); seed <= 24; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			h := newTH(t)
			h.ok("EMQ.LANE", "c", "a", "WEIGHT", "2")
			rng := rand.New(rand.NewSource(seed))
			lanes := []string{"a", "b", DefaultLane}
			type lease struct{ id, tok string }
			var held []lease
			take := func(r any, tail bool) {
				jobs, _ := r.([]any)
				if tail && len(jobs) > 0 {
					jobs, _ = jobs[len(jobs)-1].([]any)
				}
				for _, j := range jobs {
					if jj, ok := j.([]any); ok && len(jj) == 4 {
						held = append(held, lease{jj[0].(string), jj[2].(string)})
					}
				}
			}
			pick := func() (lease, bool) {
				if len(held) == 0 {
					return lease{}, false
				}
				i := rng.Intn(len(held))
				l := held[i]
				held = append(held[:i], held[i+1:]...)
				return l, true
			}
			flows := 0
			var prev map[string]int64
			for step := 0; step < 600; step++ {
				var what string
				switch op := rng.Intn(16); op {
				case 0, 1:
					l := lanes[rng.Intn(3)]
					args := []string{"EMQ.ENQUEUE", "q", "*", l + "/x"}
					if l != DefaultLane {
						args = append(args, "LANE", l)
					}
					h.ok(args...)
					what = "enqueue " + l
				case 2:
					flows++
					pid := fmt.Sprintf("JOBP%010d", flows)
					c1, c2 := fmt.Sprintf("JOBC%09d1", flows), fmt.Sprintf("JOBC%09d2", flows)
					pol := []string{"fail", "ignore", "continue"}[rng.Intn(3)]
					// Every third flow has its second child in queue c
					// (lanes of its own): its end releases into q through
					// q's lane state read by the seam.
					cq2 := "q"
					if flows%3 == 0 {
						cq2 = "c"
					}
					h.ok("EMQ.FLOW", "q", pid, "p", "ON_CHILD_FAIL", pol, "CHILD", "q", c1, "c", "CHILD", cq2, c2, "c")
					what = "flow " + pid
				case 3, 4, 5:
					take(h.ok("EMQ.CLAIM", "q", "1000", "COUNT", fmt.Sprint(1+rng.Intn(3))), false)
					what = "claim"
				case 6:
					if l, ok := pick(); ok {
						h.do("EMQ.COMPLETE", "q", l.id, l.tok)
						what = "complete " + l.id
					}
				case 7:
					if l, ok := pick(); ok {
						take(h.do("EMQ.COMPLETE", "q", l.id, l.tok, "NEXT", "1000"), false)
						what = "complete next " + l.id
					}
				case 8:
					if l, ok := pick(); ok {
						r := h.do("EMQ.FAIL", "q", l.id, l.tok, fmt.Sprint(1+rng.Intn(2)), "0", "e", "NEXT", "1000")
						take(r, true)
						what = "fail next " + l.id
					}
				case 9:
					if l, ok := pick(); ok {
						if rng.Intn(2) == 0 {
							h.do("EMQ.REQUEUE", "q", l.id, l.tok)
						} else {
							h.do("EMQ.DELAY", "q", l.id, l.tok, "IN", "0")
						}
						what = "requeue/delay " + l.id
					}
				case 10:
					// REMOVE a pending job of a random lane.
					l := lanes[rng.Intn(3)]
					key := NewKeys("q").LanePrefix + l + ":pending"
					if l == DefaultLane {
						key = NewKeys("q").Pending
					}
					if ms := h.members(key); len(ms) > 0 {
						m := ms[rng.Intn(len(ms))]
						h.ok("EMQ.REMOVE", "q", m[:strings.LastIndexByte(m, '@')])
						what = "remove " + m
					}
				case 11:
					if rng.Intn(4) == 0 {
						h.ok("EMQ.REMOVE.ALL", "q", "pending", "LIMIT", "2")
						what = "remove.all"
					}
				case 12:
					h.clk.Advance(1500)
					h.ok("EMQ.STALLED.CHECK", "q", fmt.Sprint(1+rng.Intn(2)))
					held = held[:0]
					what = "sweep"
				case 13:
					h.ok("EMQ.REPROCESS.ALL", "q", "LIMIT", "3")
					h.ok("EMQ.PROMOTE.ALL", "q")
					what = "reprocess/promote all"
				case 14:
					l := lanes[rng.Intn(3)]
					switch rng.Intn(4) {
					case 0:
						h.ok("EMQ.LANE", "q", l, "MAX_ACTIVE", fmt.Sprint(1+rng.Intn(2)))
					case 1:
						h.ok("EMQ.LANE", "q", l, "PAUSE")
					case 2:
						h.ok("EMQ.LANE", "q", l, "RESUME")
					default:
						h.ok("EMQ.LANE", "q", l, "RESET")
					}
					what = "lane " + l
				case 15:
					if rng.Intn(2) == 0 {
						h.ok("EMQ.LANE", "q", lanes[rng.Intn(3)], "WEIGHT", fmt.Sprint(1+rng.Intn(3)))
						what = "weight"
						break
					}
					// Queue c: a job of its lane, or a claim ended at once.
					if rng.Intn(2) == 0 {
						h.ok("EMQ.ENQUEUE", "c", "*", "x", "LANE", "a")
						what = "enqueue c"
					} else if id, tok := h.claimID("c"); id != "" {
						switch rng.Intn(3) {
						case 0:
							h.ok("EMQ.COMPLETE", "c", id, tok)
						case 1:
							h.ok("EMQ.FAIL", "c", id, tok, "1", "0", "e")
						default:
							h.ok("EMQ.REQUEUE", "c", id, tok)
						}
						what = "c ends " + id
					}
				}
				if what != "" {
					prev = checkLanesSince(t, h, "q", fmt.Sprintf("step %d %s", step, what), prev)
					checkLanes(t, h, "c", fmt.Sprintf("step %d %s (queue c)", step, what))
				}
			}
			for _, l := range lanes {
				h.ok("EMQ.LANE", "q", l, "RESET")
			}
			h.ok("EMQ.LANE", "c", "a", "RESET")
			drainAll(t, h, "c")
			for _, l := range held {
				h.do("EMQ.COMPLETE", "q", l.id, l.tok)
			}
			h.ok("EMQ.PROMOTE.ALL", "q")
			checkLanes(t, h, "q", "reset")
			drainAll(t, h, "q")
			for i := 0; i < 20; i++ {
				h.ok("EMQ.PROMOTE.ALL", "q")
				if ids := drainAll(t, h, "q"); len(ids) == 0 {
					break
				}
			}
			for _, q := range []string{"q", "c"} {
				if n := h.members(NewKeys(q).Active); len(n) != 0 {
					t.Fatalf("%s: active left: %v", q, n)
				}
			}
			for _, q := range []string{"q", "c"} {
				if k := laneKeys(h, q); len(k) != 0 {
					t.Fatalf("%s: lane keys left at the drain: %v (pending %v)", q, k, h.members(NewKeys(q).Pending))
				}
			}
		})
	}
}
