package verbs

import (
	"reflect"
	"strings"
	"testing"

	"github.com/emqd/emqd/store"
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

	n, ref := judgeCounts(&countsRead{Sizes: [4]int64{1, 2, 3, 4}, Completed: counter{Kind: keyOK, Count: fieldOf("5")}}, tk)
	if ref.Refused() || n != (queueCounts{1, 2, 3, 4, 5, 0}) {
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
	want := []any{"state", "active", "attempts", "1", "payload", "pay", "lease_epoch", tRun, "lease_deadline_ms", "1700000001500"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("job %v", got)
	}
	h.proto = 3
	if out := h.raw("EMQ.JOB", "q", tID2); out != "_\r\n" {
		t.Fatalf("RESP3 nil %q", out)
	}
	if out := h.raw("EMQ.COUNTS", "q"); !strings.HasPrefix(out, "%6\r\n$7\r\npending\r\n:0\r\n$6\r\nactive\r\n:1\r\n") {
		t.Fatalf("RESP3 counts %q", out)
	}
	if out := h.raw("EMQ.JOB", "q", tID); !strings.HasPrefix(out, "%5\r\n") {
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
