package verbs

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/emqd/emqd/internal/store"
)

func TestReprocessRemovePauseCounts(t *testing.T) {
	deadRow := live()
	deadRow.State = fieldOf("dead")
	rk := tk.Row(tID)
	p, ref := judgeReprocess(&reprocessRead{Dead: keyOK, InDead: true, Row: deadRow, Pending: keyOK}, tk, tID, rk, true)
	if ref.Refused() {
		t.Fatal(ref)
	}
	eqLines(t, render(p), []string{
		"ZREM emq:{q}:dead " + tID,
		"HDEL " + rk + " last_error failures stalled",
		"HSET " + rk + " state pending",
		"ZADD emq:{q}:pending 0 " + tID,
	})
	p, _ = judgeReprocess(&reprocessRead{Dead: keyOK, InDead: true, Row: deadRow, Pending: keyOK}, tk, tID, rk, false)
	eqLines(t, render(p)[1:2], []string{"HDEL " + rk + " last_error"})
	for _, c := range []struct {
		r    reprocessRead
		want string
	}{
		{reprocessRead{Dead: keyOK, InDead: false, Row: deadRow}, ErrNotDead},
		{reprocessRead{Dead: keyAbsent, Row: deadRow}, ErrNotDead},
		{reprocessRead{Dead: keyAbsent, Row: jobRow{Kind: keyAbsent}}, ErrGone},
		{reprocessRead{Dead: keyOK, InDead: false, Row: jobRow{Kind: keyAbsent}}, ErrGone},
		{reprocessRead{Dead: keyOK, InDead: true, Row: jobRow{Kind: keyAbsent}}, ErrGone},
		{reprocessRead{Dead: keyOK, InDead: true, Row: jobRow{Kind: keyOK, Lane: true}}, ErrLane},
		{reprocessRead{Dead: keyWrong}, store.ErrWrongType},
	} {
		if _, ref := judgeReprocess(&c.r, tk, tID, rk, false); ref.Text != c.want {
			t.Errorf("%+v: %q, want %q", c.r, ref.Text, c.want)
		}
	}

	p, ref = judgeRemove(&removeRead{Pending: keyOK, InPending: true, Row: pendingRow("0", "")}, tk, tID, rk)
	eqLines(t, render(p), []string{"ZREM emq:{q}:pending " + tID, "DEL " + rk})
	if p, ref := judgeRemove(&removeRead{}, tk, tID, rk); p != nil || ref.Refused() {
		t.Fatal("remove of nothing")
	}
	if _, ref := judgeRemove(&removeRead{Active: keyOK, InActive: true, Row: live()}, tk, tID, rk); ref.Text != ErrActive {
		t.Fatal(ref)
	}
	if _, ref := judgeRemove(&removeRead{Row: jobRow{Kind: keyOK, Lane: true}}, tk, tID, rk); ref.Text != ErrLane {
		t.Fatal(ref)
	}

	p, _ = judgePause(keyAbsent, tk)
	eqLines(t, render(p), []string{"HSET emq:{q}:meta paused 1"})
	p, _ = judgeResume(keyOK, true, tk)
	eqLines(t, render(p), []string{"HDEL emq:{q}:meta paused"})
	if p, _ := judgeResume(keyOK, false, tk); p != nil {
		t.Fatal("resume of a running queue wrote")
	}

	n, ref := judgeCounts(&countsRead{Sizes: [4]int64{1, 2, 3, 4}, Completed: counter{Kind: keyOK, Count: fieldOf("5")}, DoneSize: 7}, tk)
	if ref.Refused() || n != (queueCounts{1, 2, 3, 4, 5, 0, 7, 0}) {
		t.Fatal(n, ref)
	}
	if _, ref := judgeCounts(&countsRead{Failed: counter{Kind: keyOK, Count: fieldOf("x")}}, tk); ref.Text != store.ErrHashNotInt {
		t.Fatal(ref)
	}
	if _, ref := judgeCounts(&countsRead{Sets: [4]keyKind{keyOK, keyOK, keyWrong}}, tk); ref.Key != tk.Schedule {
		t.Fatal(ref)
	}
}

func TestJobAndCountsReplies(t *testing.T) {
	h := newTH(t)
	h.ok("EMQ.ENQUEUE", "q", tID, "pay")
	if h.do("EMQ.JOB", "q", tID2) != nil {
		t.Fatal("missing job not nil")
	}
	claimOne(t, h, "1500")
	got := h.ok("EMQ.JOB", "q", tID)
	want := []any{"state", "active", "attempts", "1", "payload", "pay", "enqueued_at", "1700000000000", "lease_epoch", tRun, "claimed_at", "1700000000000", "lease_deadline_ms", "1700000001500"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("job %v", got)
	}
	h.proto = 3
	if out := h.raw("EMQ.JOB", "q", tID2); out != "_\r\n" {
		t.Fatalf("RESP3 nil %q", out)
	}
	if out := h.raw("EMQ.COUNTS", "q"); !strings.HasPrefix(out, "%9\r\n$7\r\npending\r\n:0\r\n$6\r\nactive\r\n:1\r\n") {
		t.Fatalf("RESP3 counts %q", out)
	}
	if out := h.raw("EMQ.JOB", "q", tID); !strings.HasPrefix(out, "%7\r\n") {
		t.Fatalf("RESP3 job %q", out)
	}
	h.ok("EMQ.DELAY", "q", tID, "1", "AT", "1700000009000")
	if got := h.ok("EMQ.JOB", "q", tID).([]any); got[len(got)-2] != "run_at_ms" || got[len(got)-1] != "1700000009000" {
		t.Fatalf("job %v", got)
	}
}

func TestRemovePauseResume(t *testing.T) {
	h := newTH(t)
	h.ok("EMQ.ENQUEUE", "q", tID, "a")
	h.ok("EMQ.ENQUEUE", "q", tID2, "b", "DELAY", "100")
	h.ok("EMQ.PAUSE", "q")
	if v := h.ok("EMQ.CLAIM", "q", "100"); !reflect.DeepEqual(v, []any{}) {
		t.Fatalf("paused queue handed out %v", v)
	}
	h.ok("EMQ.RESUME", "q")
	claimOne(t, h, "100")
	if h.do("EMQ.REMOVE", "q", tID) != replyErr(ErrActive) {
		t.Fatal("removed a held job")
	}
	if h.ok("EMQ.REMOVE", "q", tID2) != int64(1) || h.row("q", tID2) != "" || h.members(NewKeys("q").Schedule) != nil {
		t.Fatal("remove scheduled")
	}
	if h.ok("EMQ.REMOVE", "q", tID2) != int64(0) {
		t.Fatal("remove twice")
	}
}

// TestDebugClock is EMQ.DEBUG CLOCK ADVANCE: refused with Valkey's DEBUG
// text while enable-debug-command is off, moves the clock when on.
func TestDebugClock(t *testing.T) {
	h := newTH(t)
	want := "ERR EMQ.DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server."
	if got := h.do("EMQ.DEBUG", "CLOCK", "ADVANCE", "5"); got != replyErr(want) {
		t.Fatalf("debug off: %v", got)
	}
	if got := h.do("emq.debug", "clock", "advance", "x"); got != replyErr(want) {
		t.Fatalf("debug off, bad args: %v", got)
	}
	if h.clk.NowMs() != tNow {
		t.Fatal("clock moved while refused")
	}
	// An unknown subcommand is named whether or not debug is on, as the
	// server's lookup answers it before the protected-command check.
	if got := h.do("EMQ.DEBUG", "NOPE"); got != replyErr("ERR unknown subcommand 'NOPE'. Try EMQ.DEBUG HELP.") {
		t.Fatalf("debug off, unknown subcommand: %v", got)
	}
	h.debug = true
	if got := h.do("EMQ.DEBUG", "CLOCK", "ADVANCE", "1500"); got != "OK" {
		t.Fatalf("advance: %v", got)
	}
	if h.clk.NowMs() != tNow+1500 {
		t.Fatalf("clock at %d", h.clk.NowMs())
	}
	if got := h.do("EMQ.DEBUG", "CLOCK", "ADVANCE", "-1"); got != replyErr("ERR ms must be a non-negative integer") {
		t.Fatal(got)
	}
	if got := h.do("EMQ.DEBUG", "CLOCK", "BACK", "1"); got != replyErr(store.ErrSyntax) {
		t.Fatal(got)
	}
	if got := h.do("EMQ.DEBUG", "NOPE"); got != replyErr("ERR unknown subcommand 'NOPE'. Try EMQ.DEBUG HELP.") {
		t.Fatal(got)
	}
}

// TestDebugClockRange: a step that would take the clock past MaxScoreMs
// (docs/verbs.md §2.12) is refused and moves nothing; it used to wrap
// the reading negative (leases and due times in 1677).
func TestDebugClockRange(t *testing.T) {
	h := newTH(t)
	h.debug = true
	h.ok("EMQ.ENQUEUE", "q", tID, "a")
	before := h.feed.n
	for _, ms := range []string{"9223372036854775807", strconv.FormatInt(MaxScoreMs-tNow+1, 10)} {
		if got := h.do("EMQ.DEBUG", "CLOCK", "ADVANCE", ms); got != replyErr(ErrClockRange) {
			t.Fatalf("advance %s: %v", ms, got)
		}
		if h.clk.NowMs() != tNow {
			t.Fatalf("advance %s moved the clock to %d", ms, h.clk.NowMs())
		}
	}
	if h.feed.n != before {
		t.Fatal("a refused advance wrote to the AOF")
	}
	// Up to the last time a score holds, then not one ms more.
	if got := h.do("EMQ.DEBUG", "CLOCK", "ADVANCE", strconv.FormatInt(MaxScoreMs-tNow, 10)); got != "OK" {
		t.Fatalf("advance to MaxScoreMs: %v", got)
	}
	if h.clk.NowMs() != MaxScoreMs {
		t.Fatalf("clock at %d", h.clk.NowMs())
	}
	if got := h.do("EMQ.DEBUG", "CLOCK", "ADVANCE", "1"); got != replyErr(ErrClockRange) {
		t.Fatalf("advance past MaxScoreMs: %v", got)
	}
	if got := h.do("EMQ.DEBUG", "CLOCK", "ADVANCE", "0"); got != "OK" {
		t.Fatalf("advance 0 at MaxScoreMs: %v", got)
	}
	if id, _, _ := claimOne(t, h, "1000"); id != tID || h.field("q", tID, "state") != "active" {
		t.Fatalf("claim at MaxScoreMs: %s %s", id, h.field("q", tID, "state"))
	}
	job := h.ok("EMQ.JOB", "q", tID).([]any)
	if got := job[len(job)-1]; got != strconv.FormatInt(MaxScoreMs, 10) {
		t.Fatalf("lease deadline at MaxScoreMs: %v", got)
	}
}

// TestDebugHelp: EMQ.DEBUG HELP answers Valkey's container HELP layout (an
// array of simple strings) whether debug is on or off, as MODULE HELP
// does; extra arguments are the subcommand's arity error.
func TestDebugHelp(t *testing.T) {
	h := newTH(t)
	for _, debug := range []bool{false, true} {
		h.debug = debug
		raw := h.raw("EMQ.DEBUG", "help")
		want := "*6\r\n+EMQ.DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+CLOCK ADVANCE <ms>\r\n"
		if !strings.HasPrefix(raw, want) || !strings.HasSuffix(raw, "+HELP\r\n+    Print this help.\r\n") {
			t.Fatalf("debug %v: %q", debug, raw)
		}
		if got := h.do("EMQ.DEBUG", "HELP", "x"); got != replyErr("ERR wrong number of arguments for 'emq.debug|help' command") {
			t.Fatalf("debug %v: HELP x: %v", debug, got)
		}
	}
	if h.feed.n != 0 {
		t.Fatal("HELP wrote to the AOF")
	}
}

// listIDs returns the ids of an EMQ.LIST reply, in order.
func listIDs(t *testing.T, v any) []string {
	t.Helper()
	ids := []string{}
	for _, e := range v.([]any) {
		pair := e.([]any)
		if len(pair) != 2 {
			t.Fatalf("entry %v is not [id, fields]", e)
		}
		ids = append(ids, pair[0].(string))
	}
	return ids
}

// TestListEachState lists every state of a queue built by the verbs and
// checks each entry against EMQ.JOB's reply for the same id (fields,
// order, lease_deadline_ms, run_at_ms), in RESP2 and RESP3.
func TestListEachState(t *testing.T) {
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			h := newTH(t)
			h.proto = proto
			id := func(n int) string { return fmt.Sprintf("JOB%011d", n) }
			for n := 1; n <= 6; n++ {
				h.ok("EMQ.ENQUEUE", "q", id(n), fmt.Sprintf("p%d", n))
			}
			h.ok("EMQ.ENQUEUE", "q", id(7), "later", "DELAY", "5000")
			h.ok("EMQ.ENQUEUE", "q", id(8), "sooner", "DELAY", "100")
			// 1 and 2 claimed (2 with a longer lease), 3 failed to scheduled,
			// 4 failed to dead; 5 and 6 stay pending.
			h.ok("EMQ.CLAIM", "q", "3000", "COUNT", "4")
			h.ok("EMQ.EXTEND", "q", id(1), "1", "9000")
			h.ok("EMQ.FAIL", "q", id(3), "1", "5", "200", "retry me")
			h.ok("EMQ.FAIL", "q", id(4), "1", "1", "0", "fatal <b>")
			want := map[string][]string{
				"pending":   {id(5), id(6)},
				"active":    {id(2), id(1)}, // by lease deadline: 3000 before 9000
				"scheduled": {id(8), id(3), id(7)},
				"dead":      {id(4)},
			}
			for state, ids := range want {
				got := h.ok("EMQ.LIST", "q", state)
				if g := listIDs(t, got); !reflect.DeepEqual(g, ids) {
					t.Fatalf("%s: ids %v, want %v", state, g, ids)
				}
				for _, e := range got.([]any) {
					pair := e.([]any)
					if job := h.ok("EMQ.JOB", "q", pair[0].(string)); !reflect.DeepEqual(pair[1], job) {
						t.Fatalf("%s %s: fields %v, EMQ.JOB %v", state, pair[0], pair[1], job)
					}
				}
			}
			// Exact bytes of one entry: a map in RESP3, a flat array in RESP2.
			out := h.raw("EMQ.LIST", "q", "DEAD")
			head := "*2\r\n$14\r\n" + id(4) + "\r\n"
			if proto == 3 {
				head += "%9\r\n"
			} else {
				head += "*18\r\n"
			}
			if !strings.HasPrefix(out, "*1\r\n"+head+"$5\r\nstate\r\n$4\r\ndead\r\n") {
				t.Fatalf("raw dead list %q", out)
			}
			v := h.ok("EMQ.LIST", "q", "active", "0", "1").([]any)[0].([]any)[1].([]any)
			if v[len(v)-2] != "lease_deadline_ms" || v[len(v)-1] != "1700000003000" {
				t.Fatalf("active entry %v", v)
			}
		})
	}
}

// TestListPaging walks a set page by page: offsets and counts as ZRANGE's,
// an offset past the end answers an empty array, the default count is 100
// and the largest accepted is ListMax.
func TestListPaging(t *testing.T) {
	h := newTH(t)
	var all []string
	for n := 1; n <= 250; n++ {
		all = append(all, h.ok("EMQ.ENQUEUE", "q", "*", "p").(string))
	}
	if got := listIDs(t, h.ok("EMQ.LIST", "q", "pending")); !reflect.DeepEqual(got, all[:100]) {
		t.Fatalf("default page: %d ids", len(got))
	}
	var paged []string
	for off := 0; ; off += 7 {
		page := listIDs(t, h.ok("EMQ.LIST", "q", "pending", fmt.Sprint(off), "7"))
		paged = append(paged, page...)
		if len(page) < 7 {
			break
		}
	}
	if !reflect.DeepEqual(paged, all) {
		t.Fatalf("paged %d ids, want %d in order", len(paged), len(all))
	}
	if got := listIDs(t, h.ok("EMQ.LIST", "q", "pending", "248", "1000")); !reflect.DeepEqual(got, all[248:]) {
		t.Fatalf("tail %v", got)
	}
	for _, off := range []string{"250", "251", "9223372036854775807"} {
		if got := h.ok("EMQ.LIST", "q", "pending", off, "10"); !reflect.DeepEqual(got, []any{}) {
			t.Fatalf("offset %s: %v", off, got)
		}
	}
	if out := h.raw("EMQ.LIST", "q", "pending", "250", "10"); out != "*0\r\n" {
		t.Fatalf("past the end %q", out)
	}
}

// TestListEmptyAndGhosts: a queue without keys lists nothing in every
// state; a member without a row is listed as [id, nil] (EMQ.JOB's nil),
// takes its place in the page and is not removed (EMQ.LIST writes nothing).
func TestListEmptyAndGhosts(t *testing.T) {
	h := newTH(t)
	for _, state := range []string{"pending", "active", "scheduled", "dead"} {
		if got := h.ok("EMQ.LIST", "empty", state); !reflect.DeepEqual(got, []any{}) {
			t.Fatalf("%s of an empty queue: %v", state, got)
		}
	}
	h.ok("EMQ.ENQUEUE", "q", tID, "a")
	h.zadd(tk.Pending, 0, tID2) // a ghost
	h.ok("EMQ.ENQUEUE", "q", tID3, "c")
	before, feed := digest(h.s), h.feed.n
	got := h.ok("EMQ.LIST", "q", "pending").([]any)
	if len(got) != 3 || got[1].([]any)[0] != tID2 || got[1].([]any)[1] != nil || got[2].([]any)[0] != tID3 {
		t.Fatalf("list with a ghost: %v", got)
	}
	if digest(h.s) != before || h.feed.n != feed {
		t.Fatal("EMQ.LIST wrote")
	}
	h.proto = 3
	if out := h.raw("EMQ.LIST", "q", "pending", "1", "1"); out != "*1\r\n*2\r\n$14\r\n"+tID2+"\r\n_\r\n" {
		t.Fatalf("RESP3 ghost %q", out)
	}
	// A lane row is shown as EMQ.JOB shows it, its group field included.
	h.hset(tk.Row(tID2), "state", "pending", "attempts", "0", "group", "g")
	if got := h.ok("EMQ.LIST", "q", "pending", "1", "1"); !reflect.DeepEqual(got,
		[]any{[]any{tID2, []any{"state", "pending", "attempts", "0", "group", "g"}}}) {
		t.Fatalf("lane row %v", got)
	}
}

// TestListArguments: every argument error comes before any key is read
// (the queue's keys all hold strings here), in the order of the grammar.
func TestListArguments(t *testing.T) {
	h := newTH(t)
	k := NewKeys("q")
	for _, key := range []string{k.Pending, k.Active, k.Schedule, k.Dead, k.Row(tID)} {
		h.setString(key, "wrong")
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"EMQ.LIST", "q"}, "ERR wrong number of arguments for 'emq.list' command"},
		{[]string{"EMQ.LIST", "bad name", "nope", "x"}, ErrInvalidQueue},
		{[]string{"EMQ.LIST", "emq", "pending"}, ErrInvalidQueue},
		{[]string{"EMQ.LIST", "q", "schedule"}, ErrListState},
		{[]string{"EMQ.LIST", "q", "all", "0", "1"}, ErrListState},
		{[]string{"EMQ.LIST", "q", "", "x"}, ErrListState},
		{[]string{"EMQ.LIST", "q", "pending", "0"}, "ERR syntax error"},
		{[]string{"EMQ.LIST", "q", "pending", "0", "1", "2"}, "ERR syntax error"},
		{[]string{"EMQ.LIST", "q", "pending", "x", "1"}, "ERR value is not an integer or out of range"},
		{[]string{"EMQ.LIST", "q", "pending", "-1", "x"}, "ERR offset must be a non-negative integer"},
		{[]string{"EMQ.LIST", "q", "pending", "0", "x"}, "ERR value is not an integer or out of range"},
		{[]string{"EMQ.LIST", "q", "pending", "0", "0"}, "ERR count must be a positive integer"},
		{[]string{"EMQ.LIST", "q", "pending", "0", "-3"}, "ERR count must be a positive integer"},
		{[]string{"EMQ.LIST", "q", "pending", "0", "1001"}, ErrListCount},
		{[]string{"EMQ.LIST", "q", "pending", "1", "1000"}, "WRONGTYPE Operation against a key holding the wrong kind of value"},
	}
	bad := h.v.BadRowRefusals()
	for _, c := range cases {
		if got := h.do(c.args...); got != replyErr(c.want) {
			t.Errorf("%q: %v, want %q", c.args, got, c.want)
		}
	}
	if got := h.v.BadRowRefusals() - bad; got != 1 {
		t.Fatalf("bad-row refusals %d, want 1 (the WRONGTYPE)", got)
	}
}

// TestListRefusesBadRows: a row key holding another type refuses the whole
// call with WRONGTYPE, as EMQ.JOB does, and so do an active or schedule key
// of another type once a listed member has a row; each refusal counts as a
// bad row (docs/verbs.md §2.11) and writes nothing.
func TestListRefusesBadRows(t *testing.T) {
	const wrong = "WRONGTYPE Operation against a key holding the wrong kind of value"
	h := newTH(t)
	h.ok("EMQ.ENQUEUE", "q", tID, "a")
	h.setString(tk.Row(tID2), "not a hash")
	h.zadd(tk.Pending, 0, tID2)
	bad := h.v.BadRowRefusals()
	before := digest(h.s)
	if got := h.do("EMQ.LIST", "q", "pending"); got != replyErr(wrong) {
		t.Fatalf("wrong-type row: %v", got)
	}
	if digest(h.s) != before {
		t.Fatal("a refused EMQ.LIST wrote")
	}
	// The page that stops before the bad row is served.
	if got := listIDs(t, h.ok("EMQ.LIST", "q", "pending", "0", "1")); !reflect.DeepEqual(got, []string{tID}) {
		t.Fatalf("page before the bad row: %v", got)
	}
	h.s.DB(0).Remove(tk.Row(tID2))
	h.setString(tk.Active, "x")
	if got := h.do("EMQ.LIST", "q", "pending"); got != replyErr(wrong) {
		t.Fatalf("wrong-type active set: %v", got)
	}
	if got := h.do("EMQ.LIST", "q", "active"); got != replyErr(wrong) {
		t.Fatalf("wrong-type listed set: %v", got)
	}
	if got := h.v.BadRowRefusals() - bad; got != 3 {
		t.Fatalf("bad-row refusals %d, want 3", got)
	}
	h.s.DB(0).Remove(tk.Active)
	h.setString(tk.Schedule, "x")
	if got := h.do("EMQ.LIST", "q", "dead"); !reflect.DeepEqual(got, []any{}) {
		t.Fatalf("an empty dead set reads no other key: %v", got)
	}
	if got := h.do("EMQ.LIST", "q", "pending"); got != replyErr(wrong) {
		t.Fatalf("wrong-type schedule set: %v", got)
	}
	if h.feed.n != 1 {
		t.Fatalf("EMQ.LIST reached the Feed (%d records, want the one ENQUEUE)", h.feed.n)
	}
}
