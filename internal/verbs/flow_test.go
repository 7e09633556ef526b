package verbs

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/emqd/emqd/internal/store"
)

// Flows (docs/verbs.md §4.25): one test per path of the seam.

const (
	fP  = "JOBP0000000001"
	fC1 = "JOBC0000000001"
	fC2 = "JOBC0000000002"
	fC3 = "JOBC0000000003"
)

// claimID claims one job of q and returns its id and token ("" when none).
func (h *th) claimID(q string) (string, string) {
	h.t.Helper()
	r := h.ok("EMQ.CLAIM", q, "1000").([]any)
	if len(r) == 0 {
		return "", ""
	}
	j := r[0].([]any)
	return j[0].(string), j[2].(string)
}

// claimThis claims from q until it gets id (failing when id is not
// claimable) and returns its token; other jobs claimed are requeued.
func (h *th) claimThis(q, id string) string {
	h.t.Helper()
	var back [][2]string
	defer func() {
		for _, b := range back {
			h.ok("EMQ.REQUEUE", q, b[0], b[1])
		}
	}()
	for i := 0; i < 100; i++ {
		got, tok := h.claimID(q)
		if got == "" {
			h.t.Fatalf("%s:%s is not claimable (pending %v)", q, id, h.members(NewKeys(q).Pending))
		}
		if got == id {
			return tok
		}
		back = append(back, [2]string{got, tok})
	}
	h.t.Fatalf("%s not found", id)
	return ""
}

// children is EMQ.CHILDREN as "queue:id=state[/out]" strings.
func (h *th) children(q, id string) []string {
	h.t.Helper()
	r := h.ok("EMQ.CHILDREN", q, id)
	if r == nil {
		return nil
	}
	var out []string
	for _, e := range r.([]any) {
		m := e.([]any)
		s := m[1].(string) + ":" + m[3].(string) + "=" + m[5].(string)
		if len(m) > 6 {
			s += "/" + m[6].(string) + ":" + m[7].(string)
		}
		out = append(out, s)
	}
	return out
}

func TestFlowAddAndRelease(t *testing.T) {
	h := newTH(t)
	h.listen = true
	if got := h.ok("EMQ.FLOW", "album", fP, "build", "CHILD", "img", fC1, "a", "CHILD", "img", fC2, "b", "CHILD", "album", fC3, "c"); got != int64(4) {
		t.Fatalf("reply %v", got)
	}
	pk, ik := NewKeys("album"), NewKeys("img")
	if got := h.row("album", fP); got != "state=waiting attempts=0 payload=build enqueued_at=1700000000000 children=3 children_left=3 on_child_fail=fail" {
		t.Fatal(got)
	}
	if got := h.row("img", fC1); got != "state=pending attempts=0 payload=a enqueued_at=1700000000000 parent=album:"+fP {
		t.Fatal(got)
	}
	if got := h.members(pk.Waiting); !reflect.DeepEqual(got, []string{fP + "@0"}) {
		t.Fatal(got)
	}
	if got := h.members(pk.Pending); !reflect.DeepEqual(got, []string{fC3 + "@0"}) {
		t.Fatal("the parent is not claimable, its child in album is:", got)
	}
	if got := h.members(ik.Pending); !reflect.DeepEqual(got, []string{fC1 + "@0", fC2 + "@0"}) {
		t.Fatal(got)
	}
	counts := h.ok("EMQ.COUNTS", "album").([]any)
	if counts[16] != "waiting" || counts[17] != int64(1) || counts[1] != int64(1) {
		t.Fatal(counts)
	}
	if l := h.ok("EMQ.LIST", "album", "WAITING").([]any); len(l) != 1 || l[0].([]any)[0] != fP {
		t.Fatal(l)
	}
	if got := h.children("album", fP); !reflect.DeepEqual(got, []string{"img:" + fC1 + "=pending", "img:" + fC2 + "=pending", "album:" + fC3 + "=pending"}) {
		t.Fatal(got)
	}

	// c1 completes with a result, c2 is claimed (active), c3 completes.
	tok := h.claimThis("img", fC1)
	h.ok("EMQ.COMPLETE", "img", fC1, tok, "RESULT", "thumb-1")
	if h.row("img", fC1) != "" {
		t.Fatal("the child's row stays")
	}
	tok2 := h.claimThis("img", fC2)
	if got := h.children("album", fP); !reflect.DeepEqual(got, []string{"img:" + fC1 + "=completed/result:thumb-1", "img:" + fC2 + "=active", "album:" + fC3 + "=pending"}) {
		t.Fatal(got)
	}
	if h.field("album", fP, "children_left") != "2" {
		t.Fatal(h.row("album", fP))
	}
	tok3 := h.claimThis("album", fC3)
	h.ok("EMQ.COMPLETE", "album", fC3, tok3)
	if h.field("album", fP, "state") != "waiting" {
		t.Fatal("released early")
	}
	h.pub = nil
	h.ready = nil
	h.ok("EMQ.COMPLETE", "img", fC2, tok2, "RESULT", "thumb-2")
	if h.field("album", fP, "state") != "pending" || h.field("album", fP, "children_left") != "0" {
		t.Fatal(h.row("album", fP))
	}
	if len(h.members(pk.Waiting)) != 0 {
		t.Fatal("still waiting")
	}
	if !reflect.DeepEqual(h.pub, []string{"emq:{img}:events completed " + fC2 + " 0", "emq:{album}:events released " + fP + " 0"}) {
		t.Fatal(h.pub)
	}
	if !reflect.DeepEqual(h.ready, []string{"0:album"}) {
		t.Fatal(h.ready)
	}
	// The parent's worker reads the results, then completes it: no key of
	// the flow remains.
	ptok := h.claimThis("album", fP)
	if got := h.children("album", fP); !reflect.DeepEqual(got, []string{"img:" + fC1 + "=completed/result:thumb-1", "img:" + fC2 + "=completed/result:thumb-2", "album:" + fC3 + "=completed"}) {
		t.Fatal(got)
	}
	h.ok("EMQ.COMPLETE", "album", fP, ptok)
	assertNoFlowKeys(t, h)
}

// assertNoFlowKeys fails when any key other than the metrics remains.
func assertNoFlowKeys(t *testing.T, h *th) {
	t.Helper()
	var left []string
	for _, k := range keysOf(h) {
		if strings.Contains(k, ":metrics:") {
			continue
		}
		left = append(left, k)
	}
	if len(left) > 0 {
		t.Fatalf("keys left: %v", left)
	}
}

// keysOf lists h's keys of its database, sorted.
func keysOf(h *th) []string {
	var out []string
	h.s.DB(h.db).Keys(func(k string, _ *store.Value) bool { out = append(out, k); return true })
	sort.Strings(out)
	return out
}

func TestFlowIdempotent(t *testing.T) {
	h := newTH(t)
	args := []string{"EMQ.FLOW", "q", fP, "p", "ON_CHILD_FAIL", "ignore", "CHILD", "q", fC1, "a", "CHILD", "r", fC2, "b"}
	if h.ok(args...) != int64(3) {
		t.Fatal()
	}
	d, n := digest(h.s), h.feed.n
	h.listen, h.ready = true, nil
	if h.ok(args...) != int64(3) || digest(h.s) != d || h.feed.n != n || len(h.pub) != 0 || len(h.ready) != 0 {
		t.Fatal("the second flow wrote")
	}
	// After a child ended the same flow still answers the same.
	tok := h.claimThis("q", fC1)
	h.ok("EMQ.COMPLETE", "q", fC1, tok)
	d = digest(h.s)
	if h.ok(args...) != int64(3) || digest(h.s) != d {
		t.Fatal("the flow after a child ended")
	}
	for _, bad := range [][]string{
		{"EMQ.FLOW", "q", fP, "p", "CHILD", "q", fC1, "a", "CHILD", "r", fC2, "b"},                                                    // another policy
		{"EMQ.FLOW", "q", fP, "p", "ON_CHILD_FAIL", "ignore", "CHILD", "q", fC1, "a"},                                                 // fewer children
		{"EMQ.FLOW", "q", fP, "p", "ON_CHILD_FAIL", "ignore", "CHILD", "r", fC2, "b", "CHILD", "q", fC1, "a"},                         // another order
		{"EMQ.FLOW", "q", fP, "p", "ON_CHILD_FAIL", "ignore", "CHILD", "q", fC1, "a", "CHILD", "r", fC3, "b"},                         // another child
		{"EMQ.FLOW", "q", fP, "p", "ON_CHILD_FAIL", "IGNORE", "CHILD", "q", fC1, "a", "CHILD", "r", fC2, "b", "CHILD", "r", fC3, "x"}, // more
	} {
		if got := h.raw(bad...); got != "-EMQFLOW job q:"+fP+" exists and is not this flow\r\n" {
			t.Fatalf("%v: %q", bad, got)
		}
	}
	if digest(h.s) != d {
		t.Fatal("a conflicting flow wrote")
	}
	// A plain job with the parent's id, a child id that exists.
	h.ok("EMQ.ENQUEUE", "q", "JOBX0000000001", "x")
	if got := h.raw("EMQ.FLOW", "q", "JOBX0000000001", "p", "CHILD", "q", "JOBX0000000002", "a"); got != "-EMQFLOW job q:JOBX0000000001 exists and is not this flow\r\n" {
		t.Fatal(got)
	}
	if got := h.raw("EMQ.FLOW", "q", "JOBX0000000003", "p", "CHILD", "q", "JOBX0000000001", "a"); got != "-EMQFLOW job q:JOBX0000000001 already exists\r\n" {
		t.Fatal(got)
	}
}

func TestFlowArguments(t *testing.T) {
	h := newTH(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"EMQ.FLOW", "q", fP, "p", "CHILD", "q", fC1}, errArity("emq.flow")},
		{[]string{"EMQ.FLOW", "a:b", fP, "p", "CHILD", "q", fC1, "a"}, ErrInvalidQueue},
		{[]string{"EMQ.FLOW", "q", fP, "p", "CHILD", "a b", fC1, "a"}, ErrInvalidQueue},
		{[]string{"EMQ.FLOW", "q", fP, "p", "ON_CHILD_FAIL", "retry", "CHILD", "q", fC1, "a"}, ErrFlowPolicy},
		{[]string{"EMQ.FLOW", "q", fP, "p", "ON_CHILD_FAIL", "fail", "ON_CHILD_FAIL", "fail", "CHILD", "q", fC1, "a"}, "ERR syntax error"},
		{[]string{"EMQ.FLOW", "q", fP, "p", "CHILD", "q", fC1, "a", "ON_CHILD_FAIL", "ignore"}, ErrFlowPolicyLeaf},
		{[]string{"EMQ.FLOW", "q", fP, "p", "CHILD", "q", fC1, "a", "CHILD", "q", fC1, "b"}, "ERR job q:" + fC1 + " is named twice in the flow"},
		{[]string{"EMQ.FLOW", "q", fP, "p", "CHILD", "q", fP, "a"}, "ERR job q:" + fP + " is named twice in the flow"},
		{[]string{"EMQ.FLOW", "q", fP, "p", "CHILD", "q", fC1, "a", "UNDER", "q", fC2}, ErrFlowUnder},
		{[]string{"EMQ.FLOW", "q", fP, "p", "CHILD", "q", fC1, "a", "UNDER", "q", fC1}, ErrFlowUnder},
		{[]string{"EMQ.FLOW", "q", fP, "p", "CHILD", "q", fC1, "a", "UNDER", "q"}, "ERR syntax error"},
		{[]string{"EMQ.FLOW", "q", fP, "p", "CHILD", "q", fC1, "a", "UNDER", "q", fP, "UNDER", "q", fP}, "ERR syntax error"},
		{[]string{"EMQ.FLOW", "q", fP, "p", "UNDER", "q", fP, "CHILD", "q", fC1, "a"}, "ERR syntax error"},
		{[]string{"EMQ.FLOW", "q", fP, "p", "CHILD", "q", fC1, "a", "FOO", "x"}, "ERR syntax error"},
		{[]string{"EMQ.FLOW", "q", fP, "p", "FOO", "CHILD", "q", fC1, "a"}, "ERR syntax error"},
		{[]string{"EMQ.FLOW", "q", fP, "p", "CHILD", "q", fC1, "a", "CHILD", "q"}, "ERR syntax error"},
		{[]string{"EMQ.FLOW", "q", "*", "p", "CHILD", "q", fC1, "a"}, ErrKind},
		{[]string{"EMQ.FLOW", "q", fP, "p", "CHILD", "q", "bad", "a"}, ErrKind},
	} {
		if got := h.raw(c.args...); got != "-"+c.want+"\r\n" {
			t.Errorf("%v: %q, want %q", c.args, got, c.want)
		}
	}
	// Depth: a chain of MaxFlowDepth is fine, one more is refused.
	chain := func(n int) []string {
		a := []string{"EMQ.FLOW", "q", fP, "p"}
		up := fP
		for i := 1; i <= n; i++ {
			id := fmt.Sprintf("JOBD%010d", i)
			a = append(a, "CHILD", "q", id, "x")
			if i > 1 {
				a = append(a, "UNDER", "q", up)
			}
			up = id
		}
		return a
	}
	if got := h.raw(chain(MaxFlowDepth + 1)...); got != "-"+ErrFlowDepth+"\r\n" {
		t.Fatal(got)
	}
	if len(keysOf(h)) != 0 {
		t.Fatal("a refused flow wrote", keysOf(h))
	}
	if h.ok(chain(MaxFlowDepth)...) != int64(MaxFlowDepth+1) {
		t.Fatal()
	}
	if h.field("q", fmt.Sprintf("JOBD%010d", 2), "parent") != "q:"+fmt.Sprintf("JOBD%010d", 1) {
		t.Fatal(h.row("q", fmt.Sprintf("JOBD%010d", 2)))
	}
}

func TestFlowPolicies(t *testing.T) {
	for _, pol := range []string{"fail", "ignore", "continue"} {
		t.Run(pol, func(t *testing.T) {
			h := newTH(t)
			h.ok("EMQ.FLOW", "p", fP, "x", "ON_CHILD_FAIL", pol, "CHILD", "c", fC1, "a", "CHILD", "c", fC2, "b")
			tok := h.claimThis("c", fC1)
			if got := h.ok("EMQ.FAIL", "c", fC1, tok, "1", "0", "boom"); !reflect.DeepEqual(got, []any{"dead", int64(1)}) {
				t.Fatal(got)
			}
			st := h.field("p", fP, "state")
			switch pol {
			case "fail":
				if st != "dead" || h.field("p", fP, "last_error") != "child c:"+fC1+" died: boom" {
					t.Fatal(h.row("p", fP))
				}
				if got := h.members(NewKeys("p").Dead); !reflect.DeepEqual(got, []string{fP + "@0"}) {
					t.Fatal(got)
				}
				if h.ok("EMQ.COUNTS", "p").([]any)[11] != int64(1) {
					t.Fatal("the parent's death is counted in failed")
				}
				// Decision: the remaining children are left to run; their
				// ends are recorded but change nothing.
				tok2 := h.claimThis("c", fC2)
				h.ok("EMQ.COMPLETE", "c", fC2, tok2, "RESULT", "late")
				if h.field("p", fP, "state") != "dead" || h.field("p", fP, "children_left") != "0" {
					t.Fatal(h.row("p", fP))
				}
			case "ignore":
				if st != "waiting" || h.field("p", fP, "children_left") != "1" {
					t.Fatal(h.row("p", fP))
				}
				tok2 := h.claimThis("c", fC2)
				h.ok("EMQ.COMPLETE", "c", fC2, tok2)
				if h.field("p", fP, "state") != "pending" {
					t.Fatal(h.row("p", fP))
				}
			case "continue":
				if st != "pending" || h.field("p", fP, "children_left") != "1" {
					t.Fatal(h.row("p", fP))
				}
				ptok := h.claimThis("p", fP)
				tok2 := h.claimThis("c", fC2)
				h.ok("EMQ.COMPLETE", "c", fC2, tok2)
				if h.field("p", fP, "state") != "active" || h.field("p", fP, "children_left") != "0" {
					t.Fatal("a later end released the running parent again:", h.row("p", fP))
				}
				h.ok("EMQ.COMPLETE", "p", fP, ptok)
			}
			want := []string{"c:" + fC1 + "=dead/error:boom", "c:" + fC2 + "=completed"}
			if pol == "fail" {
				want[1] = "c:" + fC2 + "=completed/result:late"
			}
			if pol != "continue" {
				if got := h.children("p", fP); !reflect.DeepEqual(got, want) {
					t.Fatal(got)
				}
			}
		})
	}
}

func TestFlowSweepDeathAndRemove(t *testing.T) {
	h := newTH(t)
	h.ok("EMQ.FLOW", "p", fP, "x", "ON_CHILD_FAIL", "ignore", "CHILD", "c", fC1, "a", "CHILD", "c", fC2, "b", "CHILD", "c", fC3, "c")
	h.claimThis("c", fC1)
	h.claimThis("c", fC2)
	h.clk.Advance(2000)
	// Both leases die in one sweep: two ends of one parent in one plan.
	if got := h.ok("EMQ.STALLED.CHECK", "c", "1"); !reflect.DeepEqual(got, []any{[]any{}, []any{fC1, fC2}}) {
		t.Fatal(got)
	}
	if h.field("p", fP, "children_left") != "1" || h.field("p", fP, "state") != "waiting" {
		t.Fatal(h.row("p", fP))
	}
	// Removing a dead child changes nothing (it ended already).
	h.ok("EMQ.REMOVE", "c", fC1)
	if h.field("p", fP, "children_left") != "1" {
		t.Fatal(h.row("p", fP))
	}
	// Removing the last pending child releases the parent.
	h.ok("EMQ.REMOVE", "c", fC3)
	if h.field("p", fP, "state") != "pending" || h.field("p", fP, "children_left") != "0" {
		t.Fatal(h.row("p", fP))
	}
	if got := h.children("p", fP); !reflect.DeepEqual(got, []string{"c:" + fC1 + "=dead/error:stalled", "c:" + fC2 + "=dead/error:stalled", "c:" + fC3 + "=removed"}) {
		t.Fatal(got)
	}
	// REMOVE of the parent takes its roster.
	h.ok("EMQ.REMOVE", "p", fP)
	h.ok("EMQ.REMOVE", "c", fC2)
	assertNoFlowKeys(t, h)
}

func TestFlowReprocess(t *testing.T) {
	h := newTH(t)
	h.ok("EMQ.FLOW", "p", fP, "x", "ON_CHILD_FAIL", "ignore", "CHILD", "c", fC1, "a", "CHILD", "c", fC2, "b")
	tok := h.claimThis("c", fC1)
	h.ok("EMQ.FAIL", "c", fC1, tok, "1", "0", "boom")
	if h.field("p", fP, "children_left") != "1" {
		t.Fatal()
	}
	// The parent waits: the child's entry reopens, so its next end counts
	// once (EchoMQ's double decrement cannot happen).
	h.ok("EMQ.REPROCESS", "c", fC1)
	if h.field("p", fP, "children_left") != "2" {
		t.Fatal(h.row("p", fP))
	}
	if got := h.children("p", fP); got[0] != "c:"+fC1+"=pending" {
		t.Fatal(got)
	}
	tok = h.claimThis("c", fC1)
	h.ok("EMQ.COMPLETE", "c", fC1, tok, "RESULT", "ok")
	tok = h.claimThis("c", fC2)
	h.ok("EMQ.COMPLETE", "c", fC2, tok)
	if h.field("p", fP, "state") != "pending" || h.field("p", fP, "children_left") != "0" {
		t.Fatal(h.row("p", fP))
	}

	// Under fail the parent is dead: REPROCESS of the child is refused,
	// nothing written; after the parent was reprocessed it is allowed and
	// leaves the roster alone.
	h2 := newTH(t)
	h2.ok("EMQ.FLOW", "p", fP, "x", "CHILD", "c", fC1, "a", "CHILD", "c", fC2, "b")
	tok = h2.claimThis("c", fC1)
	h2.ok("EMQ.FAIL", "c", fC1, tok, "1", "0", "boom")
	d := digest(h2.s)
	if got := h2.raw("EMQ.REPROCESS", "c", fC1); got != "-EMQFLOW parent p:"+fP+" is dead: reprocess or remove it first\r\n" {
		t.Fatal(got)
	}
	if digest(h2.s) != d {
		t.Fatal("the refusal wrote")
	}
	h2.ok("EMQ.REPROCESS", "p", fP)
	h2.ok("EMQ.REPROCESS", "c", fC1)
	if h2.field("p", fP, "children_left") != "1" || h2.field("p", fP, "state") != "pending" {
		t.Fatal(h2.row("p", fP))
	}
	if got := h2.children("p", fP); got[0] != "c:"+fC1+"=dead/error:boom" {
		t.Fatal(got)
	}
}

func TestFlowNested(t *testing.T) {
	const g1, g2 = "JOBG0000000001", "JOBG0000000002"
	h := newTH(t)
	// root -> c1 (-> g1, g2), c2; c1 is an inner parent under fail.
	h.ok("EMQ.FLOW", "r", fP, "root", "ON_CHILD_FAIL", "ignore",
		"CHILD", "m", fC1, "mid", "CHILD", "m", fC2, "leaf",
		"CHILD", "l", g1, "g1", "UNDER", "m", fC1, "CHILD", "l", g2, "g2", "UNDER", "m", fC1)
	if got := h.row("m", fC1); got != "state=waiting attempts=0 payload=mid enqueued_at=1700000000000 parent=r:"+fP+" children=2 children_left=2 on_child_fail=fail" {
		t.Fatal(got)
	}
	if got := h.members(NewKeys("m").Pending); !reflect.DeepEqual(got, []string{fC2 + "@0"}) {
		t.Fatal(got)
	}
	// g1 dies: c1 dies (fail), which ends c1 for the root (ignore).
	tok := h.claimThis("l", g1)
	h.ok("EMQ.FAIL", "l", g1, tok, "1", "0", "bad pixel")
	if h.field("m", fC1, "state") != "dead" || h.field("r", fP, "children_left") != "1" || h.field("r", fP, "state") != "waiting" {
		t.Fatal(h.row("m", fC1), h.row("r", fP))
	}
	if got := h.children("r", fP)[0]; got != "m:"+fC1+"=dead/error:child l:"+g1+" died: bad pixel" {
		t.Fatal(got)
	}
	tok = h.claimThis("m", fC2)
	h.ok("EMQ.COMPLETE", "m", fC2, tok)
	if h.field("r", fP, "state") != "pending" {
		t.Fatal(h.row("r", fP))
	}
	// Completing the root: the roster goes; the dead inner parent keeps
	// its own (dead jobs are kept: retention) until it is removed.
	tok = h.claimThis("r", fP)
	h.ok("EMQ.COMPLETE", "r", fP, tok)
	if h.s.DB(0).Get(NewKeys("r").Roster(fP)) != nil {
		t.Fatal("root roster left")
	}
	tok = h.claimThis("l", g2)
	h.ok("EMQ.COMPLETE", "l", g2, tok)
	h.ok("EMQ.REMOVE", "m", fC1)
	h.ok("EMQ.REMOVE", "l", g1)
	assertNoFlowKeys(t, h)
}

func TestFlowRemoveWaitingParent(t *testing.T) {
	h := newTH(t)
	h.ok("EMQ.FLOW", "p", fP, "x", "CHILD", "c", fC1, "a")
	// Decision: removing a waiting parent removes it and its roster; its
	// children run on as plain jobs whose ends change nothing.
	h.ok("EMQ.REMOVE", "p", fP)
	if h.s.DB(0).Get(NewKeys("p").Roster(fP)) != nil || len(h.members(NewKeys("p").Waiting)) != 0 {
		t.Fatal("roster or waiting left")
	}
	tok := h.claimThis("c", fC1)
	h.ok("EMQ.COMPLETE", "c", fC1, tok)
	assertNoFlowKeys(t, h)
}

func TestFlowRetentionTrimsRoster(t *testing.T) {
	h := newTH(t)
	h.ok("EMQ.RETAIN", "p", "COMPLETED", "1", "0")
	h.ok("EMQ.FLOW", "p", fP, "x", "CHILD", "c", fC1, "a")
	tok := h.claimThis("c", fC1)
	h.ok("EMQ.COMPLETE", "c", fC1, tok, "RESULT", "r1")
	tok = h.claimThis("p", fP)
	h.ok("EMQ.COMPLETE", "p", fP, tok)
	if got := h.children("p", fP); !reflect.DeepEqual(got, []string{"c:" + fC1 + "=completed/result:r1"}) {
		t.Fatal("a retained parent keeps its roster:", got)
	}
	// A second completion trims the first (max_count 1): the roster goes.
	h.ok("EMQ.ENQUEUE", "p", "JOBZ0000000001", "z")
	tok = h.claimThis("p", "JOBZ0000000001")
	h.ok("EMQ.COMPLETE", "p", "JOBZ0000000001", tok)
	if h.s.DB(0).Get(NewKeys("p").Roster(fP)) != nil || h.s.DB(0).Get(NewKeys("p").RosterOut(fP)) != nil {
		t.Fatal("trim left the roster")
	}
	if h.ok("EMQ.CHILDREN", "p", fP) != nil {
		t.Fatal()
	}
}

// TestFlowNextClaimsReleasedParent: COMPLETE ... NEXT of a flow's last
// child releases the parent into the same queue, and the NEXT claim sees
// it there, as COMPLETE then CLAIM would (docs/verbs.md §4.5.1).
func TestFlowNextClaimsReleasedParent(t *testing.T) {
	for _, next := range []bool{true, false} {
		h := newTH(t)
		h.ok("EMQ.FLOW", "q", fP, "x", "CHILD", "q", fC1, "a")
		tok := h.claimThis("q", fC1)
		var got any
		if next {
			got = h.ok("EMQ.COMPLETE", "q", fC1, tok, "NEXT", "1000")
		} else {
			h.ok("EMQ.COMPLETE", "q", fC1, tok)
			got = h.ok("EMQ.CLAIM", "q", "1000")
		}
		if !reflect.DeepEqual(got, []any{[]any{fP, "x", "1", int64(0)}}) {
			t.Fatalf("next=%v: %v", next, got)
		}
		if h.field("q", fP, "state") != "active" {
			t.Fatal(h.row("q", fP))
		}
	}
}

// TestFlowBulkActions: EMQ.REMOVE.ALL ends each removed child once (the
// parent is released once), and EMQ.REPROCESS.ALL reopens a waiting
// parent's dead children while a dead parent's child comes back plain
// (docs/verbs.md §4.25.2, §4.25.3).
func TestFlowBulkActions(t *testing.T) {
	h := newTH(t)
	h.ok("EMQ.FLOW", "p", fP, "x", "CHILD", "c", fC1, "a", "CHILD", "c", fC2, "b")
	if got := h.ok("EMQ.REMOVE.ALL", "c", "pending"); !reflect.DeepEqual(got, []any{int64(2), int64(0)}) {
		t.Fatal(got)
	}
	if h.field("p", fP, "state") != "pending" || h.field("p", fP, "children_left") != "0" {
		t.Fatal(h.row("p", fP))
	}
	if got := h.ok("EMQ.REMOVE.ALL", "p", "pending"); !reflect.DeepEqual(got, []any{int64(1), int64(0)}) {
		t.Fatal(got)
	}
	assertNoFlowKeys(t, h)

	h = newTH(t)
	const pd = "JOBP0000000002"
	h.ok("EMQ.FLOW", "p", fP, "x", "ON_CHILD_FAIL", "ignore", "CHILD", "c", fC1, "a", "CHILD", "c", fC2, "b")
	h.ok("EMQ.FLOW", "p", pd, "y", "CHILD", "c", fC3, "c")
	for _, id := range []string{fC1, fC3} {
		tok := h.claimThis("c", id)
		h.ok("EMQ.FAIL", "c", id, tok, "1", "0", "boom")
	}
	if h.field("p", pd, "state") != "dead" || h.field("p", fP, "children_left") != "1" {
		t.Fatal(h.row("p", pd), h.row("p", fP))
	}
	if got := h.ok("EMQ.REPROCESS.ALL", "c"); !reflect.DeepEqual(got, []any{int64(2), int64(0)}) {
		t.Fatal(got)
	}
	if h.field("p", fP, "children_left") != "2" || h.field("c", fC3, "state") != "pending" || h.field("p", pd, "children_left") != "0" {
		t.Fatal(h.row("p", fP), h.row("c", fC3), h.row("p", pd))
	}
	if got := h.children("p", pd); !reflect.DeepEqual(got, []string{"c:" + fC3 + "=dead/error:boom"}) {
		t.Fatal(got)
	}
}
