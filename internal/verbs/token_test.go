package verbs

import (
	"strings"
	"testing"

	"github.com/emqd/emqd/internal/plan"
	"github.com/emqd/emqd/internal/store"
)

// driveFail is one EMQ.FAIL judgement (docs/verbs.md §4.6): token, max_attempts, the row.
func driveFail(t *testing.T, token string, max int64, row jobRow) (failVerdict, *plan.Plan, refusal) {
	t.Helper()
	return judgeFail(failReadOf(row), tNow, targs(token), &failArgs{MaxAttempts: max, DelayMs: 500, Error: []byte(tErr)})
}

func failReadOf(row jobRow) *failRead {
	return &failRead{tokenRead: tokenRead{Row: row, Active: keyOK, InActive: true}, Schedule: keyOK, Dead: keyOK, Failed: counter{Kind: keyOK, Count: fieldOf("7")}}
}

func TestTheCapIsOnFailuresNotAttempts(t *testing.T) {
	// R10's falsifier: attempts 2 (claim, requeue, claim) with no failure yet, max 2 -> retry.
	row := live()
	row.Attempts = fieldOf("2")
	v, p, ref := driveFail(t, "2", 2, row)
	if ref.Refused() || v != (failVerdict{Dead: false, F: 1}) {
		t.Fatalf("token 2, max 2, no failures: got %+v %+v, want Retry(1)", v, ref)
	}
	eqLines(t, render(p), []string{
		"ZREM emq:{q}:active " + tID,
		"HSET " + tRowQ + tID + " last_error boom failures 1 state scheduled",
		"ZADD emq:{q}:schedule 1700000000500 " + tID,
	})

	row = live()
	row.Failures = fieldOf("1")
	v, p, _ = driveFail(t, "1", 2, row)
	if v != (failVerdict{Dead: true, F: 2}) {
		t.Fatalf("failures 1, max 2: got %+v, want Dead(2)", v)
	}
	eqLines(t, render(p), []string{
		"ZREM emq:{q}:active " + tID,
		"HSET " + tRowQ + tID + " last_error boom failures 2 state dead finished_at 1700000000000",
		"ZADD emq:{q}:dead 0 " + tID,
		"HINCRBY emq:{q}:metrics:failed count 1",
	})

	if v, _, _ := driveFail(t, "1", 1, live()); v != (failVerdict{Dead: true, F: 1}) {
		t.Fatalf("max_attempts 1 dies at the first FAIL: got %+v", v)
	}
	// Over the cap already: still dead, f counts on.
	row = live()
	row.Failures = fieldOf("5")
	if v, _, _ := driveFail(t, "1", 2, row); v != (failVerdict{Dead: true, F: 6}) {
		t.Fatalf("over the cap: got %+v", v)
	}
	// attempts is never written by FAIL.
	for _, l := range append(render(p), "") {
		if strings.Contains(l, "attempts") {
			t.Fatalf("FAIL wrote attempts: %q", l)
		}
	}
}

func TestFailCounterRefusals(t *testing.T) {
	for _, c := range []struct{ failures, want string }{
		{"x", store.ErrHashNotInt},
		{"01", store.ErrHashNotInt},
		{" 1", store.ErrHashNotInt},
		{"", store.ErrHashNotInt},
		{"9223372036854775807", store.ErrOverflow},
	} {
		row := live()
		row.Failures = fieldOf(c.failures)
		_, p, ref := driveFail(t, "1", 3, row)
		if ref.Text != c.want || p != nil || !ref.Bad || ref.Key != tk.Row(tID) {
			t.Errorf("failures %q: got %+v plan %v, want %q", c.failures, ref, p, c.want)
		}
	}
	// The metric of a dying job follows HINCRBY too.
	r := failReadOf(live())
	r.Failed.Count = fieldOf("9223372036854775807")
	_, p, ref := judgeFail(r, tNow, targs("1"), &failArgs{MaxAttempts: 1, Error: []byte(tErr)})
	if ref.Text != store.ErrOverflow || p != nil || ref.Key != tk.Failed {
		t.Fatalf("metrics overflow: %+v", ref)
	}
	r = failReadOf(live())
	r.Failed.Kind = keyWrong
	if _, _, ref := judgeFail(r, tNow, targs("1"), &failArgs{MaxAttempts: 1, Error: []byte(tErr)}); ref.Text != store.ErrWrongType {
		t.Fatalf("metrics wrong type: %+v", ref)
	}
	// A retry does not look at the metric (it is not written).
	if _, _, ref := judgeFail(r, tNow, targs("1"), &failArgs{MaxAttempts: 5, Error: []byte(tErr)}); ref.Refused() {
		t.Fatalf("retry refused on the metric: %+v", ref)
	}
}

// TestTokenGuard runs the common guard's six steps, in order, for all six
// token verbs.
func TestTokenGuard(t *testing.T) {
	lane := live()
	lane.Lane = true
	dead := live()
	dead.State = fieldOf("dead")
	cases := []struct {
		name     string
		r        tokenRead
		token    string
		want     string // "%s" is the verb
		bad      bool
		wantOKIf bool
	}{
		{"wrong type", tokenRead{Row: jobRow{Kind: keyWrong}, Active: keyOK, InActive: true}, "1", store.ErrWrongType, true, false},
		{"no row", tokenRead{Row: jobRow{Kind: keyAbsent}, Active: keyOK, InActive: true}, "1", ErrGone, false, false},
		{"row without attempts", tokenRead{Row: jobRow{Kind: keyOK, State: fieldOf("active")}, Active: keyOK, InActive: true}, "1", ErrGone, false, false},
		{"mismatch", tokenRead{Row: live(), Active: keyOK, InActive: true}, "2", "EMQSTALE %s token mismatch", false, false},
		{"bytes not numbers", tokenRead{Row: live(), Active: keyOK, InActive: true}, "01", "EMQSTALE %s token mismatch", false, false},
		{"mismatch before lane", tokenRead{Row: lane, Active: keyOK, InActive: true}, "9", "EMQSTALE %s token mismatch", false, false},
		{"lane", tokenRead{Row: lane, Active: keyOK, InActive: true}, "1", ErrLane, true, false},
		{"dead", tokenRead{Row: dead, Active: keyOK, InActive: false}, "1", ErrDead, false, false},
		{"active wrong type", tokenRead{Row: live(), Active: keyWrong}, "1", store.ErrWrongType, true, false},
		{"lease lost", tokenRead{Row: live(), Active: keyOK, InActive: false}, "1", ErrLeaseLost, false, false},
		{"no active key", tokenRead{Row: live(), Active: keyAbsent}, "1", ErrLeaseLost, false, false},
		{"held", tokenRead{Row: live(), Active: keyOK, InActive: true}, "1", "", false, true},
	}
	verbs := []struct {
		name string
		run  func(r tokenRead, a *tokenArgs) (*plan.Plan, refusal)
	}{
		{"complete", func(r tokenRead, a *tokenArgs) (*plan.Plan, refusal) {
			return judgeComplete(&completeRead{tokenRead: r}, a, &completeArgs{})
		}},
		{"fail", func(r tokenRead, a *tokenArgs) (*plan.Plan, refusal) {
			_, p, ref := judgeFail(&failRead{tokenRead: r}, tNow, a, &failArgs{MaxAttempts: 3, Error: []byte("e")})
			return p, ref
		}},
		{"requeue", func(r tokenRead, a *tokenArgs) (*plan.Plan, refusal) {
			return judgeRequeue(&requeueRead{tokenRead: r}, a)
		}},
		{"extend", func(r tokenRead, a *tokenArgs) (*plan.Plan, refusal) {
			return judgeExtend(&r, tNow, []byte(tRun), a, 1000)
		}},
		{"delay", func(r tokenRead, a *tokenArgs) (*plan.Plan, refusal) {
			return judgeDelay(&delayRead{tokenRead: r}, tNow, a, schedDelay, 10)
		}},
		{"progress", func(r tokenRead, a *tokenArgs) (*plan.Plan, refusal) {
			return judgeProgress(&r, a, []byte("50%"))
		}},
	}
	for _, vb := range verbs {
		for _, c := range cases {
			p, ref := vb.run(c.r, targs(c.token))
			want := strings.ReplaceAll(c.want, "%s", vb.name)
			if ref.Text != want || ref.Bad != c.bad {
				t.Errorf("%s/%s: got %q bad=%v, want %q bad=%v", vb.name, c.name, ref.Text, ref.Bad, want, c.bad)
			}
			if (p != nil) != c.wantOKIf {
				t.Errorf("%s/%s: plan %v", vb.name, c.name, render(p))
			}
		}
	}
}

func TestRequeueThreeWritesNoCounter(t *testing.T) {
	r := &requeueRead{tokenRead: tokenRead{Row: live(), Active: keyOK, InActive: true}}
	p, ref := judgeRequeue(r, targs("1"))
	if ref.Refused() {
		t.Fatal(ref)
	}
	eqLines(t, render(p), []string{
		"ZREM emq:{q}:active " + tID,
		"HSET " + tRowQ + tID + " state pending",
		"ZADD emq:{q}:pending 0 " + tID,
	})
	for _, o := range p.Ops {
		if o.Kind == plan.HIncrBy {
			t.Fatal("REQUEUE wrote a counter")
		}
	}
	r.Pending = keyWrong
	if _, ref := judgeRequeue(r, targs("1")); ref.Text != store.ErrWrongType || ref.Key != tk.Pending {
		t.Fatalf("pending wrong type: %+v", ref)
	}
}

func TestCompleteExtendDelayProgressPlans(t *testing.T) {
	held := tokenRead{Row: live(), Active: keyOK, InActive: true}
	p, _ := judgeComplete(&completeRead{tokenRead: held}, targs("1"), &completeArgs{})
	eqLines(t, render(p), []string{
		"ZREM emq:{q}:active " + tID,
		"DEL " + tRowQ + tID,
		"HINCRBY emq:{q}:metrics:completed count 1",
	})
	if _, ref := judgeComplete(&completeRead{tokenRead: held, Completed: counter{Kind: keyOK, Count: fieldOf("1.5")}}, targs("1"), &completeArgs{}); ref.Text != store.ErrHashNotInt || !ref.Bad {
		t.Fatalf("completed count 1.5: %+v", ref)
	}
	p, _ = judgeExtend(&held, tNow, []byte(tRun), targs("1"), 30000)
	eqLines(t, render(p), []string{
		"ZADD emq:{q}:active 1700000030000 " + tID,
		"HSET " + tRowQ + tID + " lease_epoch " + tRun,
	})
	p, _ = judgeDelay(&delayRead{tokenRead: held}, tNow, targs("1"), schedAt, 42)
	eqLines(t, render(p), []string{
		"ZREM emq:{q}:active " + tID,
		"HSET " + tRowQ + tID + " state scheduled",
		"ZADD emq:{q}:schedule 42 " + tID,
	})
	p, _ = judgeDelay(&delayRead{tokenRead: held}, tNow, targs("1"), schedDelay, 9223372036854775807)
	eqLines(t, render(p)[2:], []string{"ZADD emq:{q}:schedule 9007199254740991 " + tID})
	p, _ = judgeProgress(&held, targs("1"), []byte("half"))
	eqLines(t, render(p), []string{"HSET " + tRowQ + tID + " progress half"})
}
