package verbs

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// runJob enqueues a job, claims it and completes it with result res ("":
// no RESULT) at the current clock, returning its id.
func runJob(t *testing.T, h *th, res string) string {
	t.Helper()
	id := h.ok("EMQ.ENQUEUE", "q", "*", "p").(string)
	_, tok, _ := claimOne(t, h, "1000")
	args := []string{"EMQ.COMPLETE", "q", id, tok}
	if res != "" {
		args = append(args, "RESULT", res)
	}
	if h.ok(args...) != int64(1) {
		t.Fatal("complete")
	}
	return id
}

// TestRetainDefaultKeepsNothing: without EMQ.RETAIN, COMPLETE deletes the row
// (a RESULT goes with it) and writes exactly today's plan.
func TestRetainDefaultKeepsNothing(t *testing.T) {
	h := newTH(t)
	id := runJob(t, h, "42")
	if h.row("q", id) != "" || len(h.zids(NewKeys("q").Done)) != 0 {
		t.Fatalf("row kept: %q", h.row("q", id))
	}
	if got := h.ok("EMQ.RETAIN", "q"); !reflect.DeepEqual(got, []any{"completed_max_count", int64(0), "completed_max_age_ms", int64(0),
		"dead_max_count", int64(0), "dead_max_age_ms", int64(0)}) {
		t.Fatalf("defaults %v", got)
	}
	r := completeRead{tokenRead: tokenRead{Row: jobRow{Kind: keyOK, Attempts: fieldOf("1")}, Active: keyOK, InActive: true}, Now: tNow}
	p, _ := judgeComplete(&r, targs("1"), &completeArgs{Result: []byte("r"), HasResult: true})
	eqLines(t, render(p), []string{"ZREM emq:{q}:active " + tID, "DEL " + tRowQ + tID, "HINCRBY emq:{q}:metrics:completed count 1"})
}

// TestRetainCompletedCountCap: the row stays with state completed, its
// result and its times; the completed set is scored by finished_at; past
// max_count the oldest goes first, counted, published as trimmed.
func TestRetainCompletedCountCap(t *testing.T) {
	h := newTH(t)
	st := NewStats()
	h.v.SetStats(st)
	h.listen = true
	k := NewKeys("q")
	if h.ok("EMQ.RETAIN", "q", "completed", "2", "0") != "OK" {
		t.Fatal("retain")
	}
	var ids []string
	for i := 0; i < 3; i++ {
		h.clk.Advance(10)
		ids = append(ids, runJob(t, h, "r"+strconv.Itoa(i)))
	}
	if got := h.zids(k.Done); !reflect.DeepEqual(got, ids[1:]) {
		t.Fatalf("completed set %v, want %v", got, ids[1:])
	}
	if h.row("q", ids[0]) != "" {
		t.Fatal("the oldest row was not trimmed")
	}
	now := strconv.FormatInt(h.clk.NowMs(), 10)
	job := h.ok("EMQ.JOB", "q", ids[2]).([]any)
	want := []any{"state", "completed", "attempts", "1", "payload", "p", "enqueued_at", now, "lease_epoch", tRun, "claimed_at", now,
		"finished_at", now, "result", "r2"}
	if !reflect.DeepEqual(job, want) {
		t.Fatalf("job %v\nwant %v", job, want)
	}
	if sc := h.zscore(k.Done, ids[2]); sc != h.clk.NowMs() {
		t.Fatalf("score %d", sc)
	}
	if st.Total(TrimmedCompleted) != 1 || st.Total(Completed) != 3 {
		t.Fatalf("trimmed %d completed %d", st.Total(TrimmedCompleted), st.Total(Completed))
	}
	if !containsStr(h.pub, "emq:{q}:events trimmed "+ids[0]+" 0") {
		t.Fatalf("no trimmed event: %q", h.pub)
	}
	c := h.ok("EMQ.COUNTS", "q").([]any)
	if c[8] != "completed" || c[9] != int64(3) || c[12] != "retained" || c[13] != int64(2) {
		t.Fatalf("counts %v", c)
	}
	list := h.ok("EMQ.LIST", "q", "COMPLETED").([]any)
	if len(list) != 2 || list[0].([]any)[0] != ids[1] || !reflect.DeepEqual(list[1].([]any)[1], job) {
		t.Fatalf("list %v", list)
	}
	// A retained job is a duplicate for ENQUEUE, done for its holder, and
	// removable.
	if h.do("EMQ.ENQUEUE", "q", ids[2], "again") != nil {
		t.Fatal("retained id admitted again")
	}
	if got := h.raw("EMQ.COMPLETE", "q", ids[2], "1"); got != "-"+ErrCompletedIs+"\r\n" {
		t.Fatalf("second complete %q", got)
	}
	if h.ok("EMQ.REMOVE", "q", ids[2]) != int64(1) || h.row("q", ids[2]) != "" || len(h.zids(k.Done)) != 1 {
		t.Fatal("remove of a retained job")
	}
	// 0 0 turns retention off: the fields go, the next completion deletes.
	h.ok("EMQ.RETAIN", "q", "COMPLETED", "0", "0")
	if h.s.DB(0).Get(k.Meta) != nil {
		t.Fatal("meta kept fields for the default")
	}
	id := runJob(t, h, "")
	if h.row("q", id) != "" {
		t.Fatal("kept with retention off")
	}
}

// TestRetainCompletedAgeCap: jobs older than max_age_ms are trimmed by the
// next completion or by the sweep, at most retainTrimPerCall per
// completion, at most limit per sweep.
func TestRetainCompletedAgeCap(t *testing.T) {
	h := newTH(t)
	st := NewStats()
	h.v.SetStats(st)
	k := NewKeys("q")
	h.ok("EMQ.RETAIN", "q", "COMPLETED", "0", "1000")
	for i := 0; i < 25; i++ {
		runJob(t, h, "")
	}
	h.clk.Advance(999)
	young := runJob(t, h, "")
	if n := len(h.zids(k.Done)); n != 26 {
		t.Fatalf("%d kept within the age", n)
	}
	h.clk.Advance(1)
	runJob(t, h, "") // trims retainTrimPerCall of the 25 now 1000 ms old
	if n := len(h.zids(k.Done)); n != 27-retainTrimPerCall {
		t.Fatalf("one completion trimmed %d", 27-n)
	}
	if got := h.ok("EMQ.STALLED.CHECK", "q", "1", "5"); !reflect.DeepEqual(got, []any{[]any{}, []any{}}) {
		t.Fatal(got)
	}
	if n := len(h.zids(k.Done)); n != 27-retainTrimPerCall-5 {
		t.Fatalf("a sweep of limit 5 left %d", n)
	}
	h.ok("EMQ.STALLED.CHECK", "q")
	if got := h.zids(k.Done); len(got) != 2 || got[0] != young {
		t.Fatalf("after the sweep %v", got)
	}
	if st.Total(TrimmedCompleted) != 25 {
		t.Fatalf("trimmed %d", st.Total(TrimmedCompleted))
	}
}

// TestRetainDead: with a DEAD setting, deaths are scored by finished_at
// and the dead set is trimmed oldest first, counted in TrimmedDead; dead
// members from before the setting (score 0) go first by count and are
// never trimmed by age.
func TestRetainDead(t *testing.T) {
	h := newTH(t)
	st := NewStats()
	h.v.SetStats(st)
	k := NewKeys("q")
	die := func() string {
		id := h.ok("EMQ.ENQUEUE", "q", "*", "p").(string)
		_, tok, _ := claimOne(t, h, "1000")
		h.ok("EMQ.FAIL", "q", id, tok, "1", "0", "boom")
		return id
	}
	old := die()
	if h.zscore(k.Dead, old) != 0 {
		t.Fatal("a death without a DEAD setting is not score 0")
	}
	h.ok("EMQ.RETAIN", "q", "DEAD", "3", "5000")
	h.clk.Advance(10)
	a := die()
	if h.zscore(k.Dead, a) != h.clk.NowMs() || h.field("q", a, "finished_at") != strconv.FormatInt(h.clk.NowMs(), 10) {
		t.Fatalf("death score %d", h.zscore(k.Dead, a))
	}
	h.clk.Advance(10)
	b := die()
	h.clk.Advance(10)
	c := die() // 4 dead, cap 3: the score-0 one goes
	if got := h.zids(k.Dead); !reflect.DeepEqual(got, []string{a, b, c}) || h.row("q", old) != "" {
		t.Fatalf("dead %v", got)
	}
	// The sweep's deaths trim too (age: a and b are past 5 s after this).
	h.clk.Advance(4985)
	id := h.ok("EMQ.ENQUEUE", "q", "*", "p").(string)
	claimOne(t, h, "10")
	h.clk.Advance(10)
	got := h.ok("EMQ.STALLED.CHECK", "q", "1")
	if !reflect.DeepEqual(got, []any{[]any{}, []any{id}}) {
		t.Fatalf("sweep %v", got)
	}
	if got := h.zids(k.Dead); !reflect.DeepEqual(got, []string{c, id}) {
		t.Fatalf("dead after the sweep %v", got)
	}
	if st.Total(TrimmedDead) != 3 {
		t.Fatalf("trimmed dead %d", st.Total(TrimmedDead))
	}
	// A pre-setting member at score 0 is not trimmed by age alone.
	h.zadd(k.Dead, 0, "JOB00000000009")
	h.hset(k.Row("JOB00000000009"), "state", "dead", "attempts", "1", "payload", "p")
	h.ok("EMQ.RETAIN", "q", "DEAD", "0", "1")
	h.clk.Advance(100)
	h.ok("EMQ.STALLED.CHECK", "q")
	if got := h.zids(k.Dead); !reflect.DeepEqual(got, []string{"JOB00000000009"}) {
		t.Fatalf("age trim %v", got)
	}
}

// TestRetainArguments: the grammar, and refusals that write nothing.
func TestRetainArguments(t *testing.T) {
	h := newTH(t)
	for _, c := range []struct{ args, want string }{
		{"EMQ.RETAIN q COMPLETED 1", "ERR syntax error"},
		{"EMQ.RETAIN q COMPLETED 1 2 3", "ERR syntax error"},
		{"EMQ.RETAIN q ALL 1 2", ErrRetainKind},
		{"EMQ.RETAIN q DEAD -1 2", "ERR max_count must be a non-negative integer"},
		{"EMQ.RETAIN q DEAD 1 -2", "ERR max_age_ms must be a non-negative integer"},
		{"EMQ.RETAIN q DEAD 1 x", "ERR value is not an integer or out of range"},
		{"EMQ.RETAIN a:b DEAD 1 1", ErrInvalidQueue},
		{"EMQ.COMPLETE q " + tID + " 1 RESULT", "ERR syntax error"},
		{"EMQ.COMPLETE q " + tID + " 1 RESULT a RESULT b", "ERR syntax error"},
		{"EMQ.COMPLETE q " + tID + " 1 NOPE a", "ERR syntax error"},
	} {
		if got := h.raw(strings.Fields(c.args)...); got != "-"+c.want+"\r\n" {
			t.Errorf("%s: %q, want %q", c.args, got, c.want)
		}
	}
	if got := h.raw("EMQ.COMPLETE", "q", tID, "1", "RESULT", strings.Repeat("x", MaxResult+1)); got != "-"+ErrResultSize+"\r\n" {
		t.Errorf("big result: %q", got)
	}
	h.hset(NewKeys("q").Meta, "completed_max_count", "x")
	if got := h.raw("EMQ.RETAIN", "q"); got != "-ERR hash value is not an integer\r\n" {
		t.Errorf("bad setting: %q", got)
	}
	if h.feed.n != 0 {
		t.Fatal("a refusal wrote")
	}
	// EMQ.RETAIN with the value already stored writes nothing.
	h.ok("EMQ.RETAIN", "q", "DEAD", "5", "0")
	n := h.feed.n
	h.ok("EMQ.RETAIN", "q", "dead", "5", "0")
	if h.feed.n != n {
		t.Fatal("an unchanged setting was written again")
	}
}

func containsStr(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// zscore is member's score in the sorted set at key (-1: none).
func (h *th) zscore(key, member string) int64 {
	v := h.s.DB(h.db).Get(key)
	if v == nil || v.ZSet == nil {
		return -1
	}
	sc, ok := v.ZSet.Score(member)
	if !ok {
		return -1
	}
	return int64(sc)
}

// zids is the members of the sorted set at key, in order, without scores.
func (h *th) zids(key string) []string {
	var out []string
	for _, m := range h.members(key) {
		out = append(out, strings.SplitN(m, "@", 2)[0])
	}
	return out
}
