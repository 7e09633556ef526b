package verbs

import (
	"strings"
	"testing"

	"github.com/emqd/emqd/plan"
	"github.com/emqd/emqd/store"
)

// Table tests of the pure judgements: the seed's cases, verbs.md sections 3
// and 5. Plans are compared as the Valkey commands they render to.

const (
	tRun  = "1111111111111111111111111111111111111111"
	tOld  = "0000000000000000000000000000000000000000"
	tNow  = int64(1_700_000_000_000)
	tID   = "JOB00000000001"
	tID2  = "JOB00000000002"
	tID3  = "JOB00000000003"
	tErr  = "boom"
	tRowQ = "emq:{q}:job:"
)

var tk = NewKeys("q")

// render gives p's ops as "CMD key args..." lines.
func render(p *plan.Plan) []string {
	if p == nil {
		return nil
	}
	var out []string
	for _, a := range p.Argvs() {
		parts := make([]string, len(a))
		for i, b := range a {
			parts[i] = string(b)
		}
		out = append(out, strings.Join(parts, " "))
	}
	return out
}

func eqLines(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("plan:\n got %q\nwant %q", got, want)
	}
}

// live is the seed's LIVE: an active row whose attempts is 1 and that has
// no failures field, leased by the current run.
func live() Row {
	return Row{Kind: OK, State: F("active"), Attempts: F("1"), LeaseEpoch: F(tRun), Payload: F("p")}
}

func targs(token string) *TokenArgs {
	return &TokenArgs{K: tk, ID: tID, RowKey: tk.Row(tID), Token: []byte(token)}
}

func failRead(row Row) *FailRead {
	return &FailRead{TokenRead: TokenRead{Row: row, Active: OK, InActive: true}, Schedule: OK, Dead: OK, Failed: Counter{Kind: OK, Count: F("7")}}
}

// driveFail is the seed's drive_fail: token, max_attempts, the row.
func driveFail(t *testing.T, token string, max int64, row Row) (FailVerdict, *plan.Plan, Refusal) {
	t.Helper()
	return JudgeFail(failRead(row), tNow, targs(token), &FailArgs{MaxAttempts: max, DelayMs: 500, Error: []byte(tErr)})
}

func TestTheCapIsOnFailuresNotAttempts(t *testing.T) {
	// R10's falsifier: attempts 2 (claim, requeue, claim) with no failure yet, max 2 -> retry.
	row := live()
	row.Attempts = F("2")
	v, p, ref := driveFail(t, "2", 2, row)
	if ref.Refused() || v != (FailVerdict{Dead: false, F: 1}) {
		t.Fatalf("token 2, max 2, no failures: got %+v %+v, want Retry(1)", v, ref)
	}
	eqLines(t, render(p), []string{
		"ZREM emq:{q}:active " + tID,
		"HSET " + tRowQ + tID + " last_error boom failures 1 state scheduled",
		"ZADD emq:{q}:schedule 1700000000500 " + tID,
	})

	row = live()
	row.Failures = F("1")
	v, p, _ = driveFail(t, "1", 2, row)
	if v != (FailVerdict{Dead: true, F: 2}) {
		t.Fatalf("failures 1, max 2: got %+v, want Dead(2)", v)
	}
	eqLines(t, render(p), []string{
		"ZREM emq:{q}:active " + tID,
		"HSET " + tRowQ + tID + " last_error boom failures 2 state dead",
		"ZADD emq:{q}:dead 0 " + tID,
		"HINCRBY emq:{q}:metrics:failed count 1",
	})

	if v, _, _ := driveFail(t, "1", 1, live()); v != (FailVerdict{Dead: true, F: 1}) {
		t.Fatalf("max_attempts 1 dies at the first FAIL: got %+v", v)
	}
	// Over the cap already: still dead, f counts on.
	row = live()
	row.Failures = F("5")
	if v, _, _ := driveFail(t, "1", 2, row); v != (FailVerdict{Dead: true, F: 6}) {
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
		row.Failures = F(c.failures)
		_, p, ref := driveFail(t, "1", 3, row)
		if ref.Text != c.want || p != nil || !ref.Bad || ref.Key != tk.Row(tID) {
			t.Errorf("failures %q: got %+v plan %v, want %q", c.failures, ref, p, c.want)
		}
	}
	// The metric of a dying job follows HINCRBY too.
	r := failRead(live())
	r.Failed.Count = F("9223372036854775807")
	_, p, ref := JudgeFail(r, tNow, targs("1"), &FailArgs{MaxAttempts: 1, Error: []byte(tErr)})
	if ref.Text != store.ErrOverflow || p != nil || ref.Key != tk.Failed {
		t.Fatalf("metrics overflow: %+v", ref)
	}
	r = failRead(live())
	r.Failed.Kind = Wrong
	if _, _, ref := JudgeFail(r, tNow, targs("1"), &FailArgs{MaxAttempts: 1, Error: []byte(tErr)}); ref.Text != store.ErrWrongType {
		t.Fatalf("metrics wrong type: %+v", ref)
	}
	// A retry does not look at the metric (it is not written).
	if _, _, ref := JudgeFail(r, tNow, targs("1"), &FailArgs{MaxAttempts: 5, Error: []byte(tErr)}); ref.Refused() {
		t.Fatalf("retry refused on the metric: %+v", ref)
	}
}

// TestTokenGuard runs the common guard's six steps, in order, for all six
// token verbs.
func TestTokenGuard(t *testing.T) {
	lane := live()
	lane.Lane = true
	dead := live()
	dead.State = F("dead")
	cases := []struct {
		name     string
		r        TokenRead
		token    string
		want     string // "%s" is the verb
		bad      bool
		wantOKIf bool
	}{
		{"wrong type", TokenRead{Row: Row{Kind: Wrong}, Active: OK, InActive: true}, "1", store.ErrWrongType, true, false},
		{"no row", TokenRead{Row: Row{Kind: Absent}, Active: OK, InActive: true}, "1", ErrGone, false, false},
		{"row without attempts", TokenRead{Row: Row{Kind: OK, State: F("active")}, Active: OK, InActive: true}, "1", ErrGone, false, false},
		{"mismatch", TokenRead{Row: live(), Active: OK, InActive: true}, "2", "EMQSTALE %s token mismatch", false, false},
		{"bytes not numbers", TokenRead{Row: live(), Active: OK, InActive: true}, "01", "EMQSTALE %s token mismatch", false, false},
		{"mismatch before lane", TokenRead{Row: lane, Active: OK, InActive: true}, "9", "EMQSTALE %s token mismatch", false, false},
		{"lane", TokenRead{Row: lane, Active: OK, InActive: true}, "1", ErrLane, true, false},
		{"dead", TokenRead{Row: dead, Active: OK, InActive: false}, "1", ErrDead, false, false},
		{"active wrong type", TokenRead{Row: live(), Active: Wrong}, "1", store.ErrWrongType, true, false},
		{"lease lost", TokenRead{Row: live(), Active: OK, InActive: false}, "1", ErrLeaseLost, false, false},
		{"no active key", TokenRead{Row: live(), Active: Absent}, "1", ErrLeaseLost, false, false},
		{"held", TokenRead{Row: live(), Active: OK, InActive: true}, "1", "", false, true},
	}
	verbs := []struct {
		name string
		run  func(r TokenRead, a *TokenArgs) (*plan.Plan, Refusal)
	}{
		{"complete", func(r TokenRead, a *TokenArgs) (*plan.Plan, Refusal) {
			return JudgeComplete(&CompleteRead{TokenRead: r}, a)
		}},
		{"fail", func(r TokenRead, a *TokenArgs) (*plan.Plan, Refusal) {
			_, p, ref := JudgeFail(&FailRead{TokenRead: r}, tNow, a, &FailArgs{MaxAttempts: 3, Error: []byte("e")})
			return p, ref
		}},
		{"requeue", func(r TokenRead, a *TokenArgs) (*plan.Plan, Refusal) {
			return JudgeRequeue(&RequeueRead{TokenRead: r}, a)
		}},
		{"extend", func(r TokenRead, a *TokenArgs) (*plan.Plan, Refusal) {
			return JudgeExtend(&r, tNow, []byte(tRun), a, 1000)
		}},
		{"delay", func(r TokenRead, a *TokenArgs) (*plan.Plan, Refusal) {
			return JudgeDelay(&DelayRead{TokenRead: r}, tNow, a, SchedDelay, 10)
		}},
		{"progress", func(r TokenRead, a *TokenArgs) (*plan.Plan, Refusal) {
			return JudgeProgress(&r, a, []byte("50%"))
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
	r := &RequeueRead{TokenRead: TokenRead{Row: live(), Active: OK, InActive: true}}
	p, ref := JudgeRequeue(r, targs("1"))
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
	r.Pending = Wrong
	if _, ref := JudgeRequeue(r, targs("1")); ref.Text != store.ErrWrongType || ref.Key != tk.Pending {
		t.Fatalf("pending wrong type: %+v", ref)
	}
}

func TestCompleteExtendDelayProgressPlans(t *testing.T) {
	held := TokenRead{Row: live(), Active: OK, InActive: true}
	p, _ := JudgeComplete(&CompleteRead{TokenRead: held}, targs("1"))
	eqLines(t, render(p), []string{
		"ZREM emq:{q}:active " + tID,
		"DEL " + tRowQ + tID,
		"HINCRBY emq:{q}:metrics:completed count 1",
	})
	if _, ref := JudgeComplete(&CompleteRead{TokenRead: held, Completed: Counter{Kind: OK, Count: F("1.5")}}, targs("1")); ref.Text != store.ErrHashNotInt || !ref.Bad {
		t.Fatalf("completed count 1.5: %+v", ref)
	}
	p, _ = JudgeExtend(&held, tNow, []byte(tRun), targs("1"), 30000)
	eqLines(t, render(p), []string{
		"ZADD emq:{q}:active 1700000030000 " + tID,
		"HSET " + tRowQ + tID + " lease_epoch " + tRun,
	})
	p, _ = JudgeDelay(&DelayRead{TokenRead: held}, tNow, targs("1"), SchedAt, 42)
	eqLines(t, render(p), []string{
		"ZREM emq:{q}:active " + tID,
		"HSET " + tRowQ + tID + " state scheduled",
		"ZADD emq:{q}:schedule 42 " + tID,
	})
	p, _ = JudgeDelay(&DelayRead{TokenRead: held}, tNow, targs("1"), SchedDelay, 9223372036854775807)
	eqLines(t, render(p)[2:], []string{"ZADD emq:{q}:schedule 9007199254740991 " + tID})
	p, _ = JudgeProgress(&held, targs("1"), []byte("half"))
	eqLines(t, render(p), []string{"HSET " + tRowQ + tID + " progress half"})
}

func TestEnqueue(t *testing.T) {
	a := &EnqueueArgs{K: tk, ID: tID, Payload: []byte("pay")}
	v, p, ref := JudgeEnqueue(&EnqueueRead{ID: tID, Row: Absent, Dest: Absent}, tNow, a)
	if ref.Refused() || v.Dup || !v.Pending || v.ID != tID {
		t.Fatalf("%+v %+v", v, ref)
	}
	eqLines(t, render(p), []string{
		"HSET " + tRowQ + tID + " state pending attempts 0 payload pay",
		"ZADD emq:{q}:pending 0 " + tID,
	})
	if v, p, _ := JudgeEnqueue(&EnqueueRead{ID: tID, Row: OK, Dest: Wrong}, tNow, a); !v.Dup || p != nil {
		t.Fatalf("duplicate: %+v %v", v, p)
	}
	if _, _, ref := JudgeEnqueue(&EnqueueRead{ID: tID, Row: Wrong}, tNow, a); ref.Text != store.ErrWrongType {
		t.Fatal(ref)
	}
	if _, _, ref := JudgeEnqueue(&EnqueueRead{ID: tID, Row: Absent, Dest: Wrong}, tNow, a); ref.Key != tk.Pending {
		t.Fatal(ref)
	}
	d := &EnqueueArgs{K: tk, Mint: true, Payload: []byte("x"), Sched: SchedDelay, Ms: 250}
	v, p, _ = JudgeEnqueue(&EnqueueRead{ID: tID2}, tNow, d)
	if v.Pending {
		t.Fatal("delayed job reported pending")
	}
	eqLines(t, render(p), []string{
		"HSET " + tRowQ + tID2 + " state scheduled attempts 0 payload x",
		"ZADD emq:{q}:schedule 1700000000250 " + tID2,
		"HSET {emq}:mint last " + tID2,
	})
	d.Sched, d.Ms = SchedAt, 5
	_, p, _ = JudgeEnqueue(&EnqueueRead{ID: tID2}, tNow, d)
	eqLines(t, render(p)[1:2], []string{"ZADD emq:{q}:schedule 5 " + tID2})
}

func TestMint(t *testing.T) {
	// max(now, last+1): the clock, then a clock that stepped back.
	n, ref := judgeMint(MintRead{}, 1000)
	if ref.Refused() || n != 1000 {
		t.Fatal(n, ref)
	}
	n, _ = judgeMint(MintRead{Kind: OK, Last: F(EncodeID(5000))}, 1000)
	if n != 5001 {
		t.Fatal(n)
	}
	n, _ = judgeMint(MintRead{Kind: OK, Last: F(EncodeID(5000))}, 9000)
	if n != 9000 {
		t.Fatal(n)
	}
	if _, ref := judgeMint(MintRead{Kind: Wrong}, 1); ref.Text != store.ErrWrongType || ref.Key != MintKey {
		t.Fatal(ref)
	}
	if _, ref := judgeMint(MintRead{Kind: OK, Last: F("nope")}, 1); ref.Text != ErrMintNotID || !ref.Bad {
		t.Fatal(ref)
	}
	if _, ref := judgeMint(MintRead{Kind: OK, Last: F(EncodeID(maxMintNum))}, 1); ref.Text != ErrMintExhausted {
		t.Fatal(ref)
	}
	// Byte order is mint order.
	prev := ""
	for _, x := range []int64{0, 1, 9, 10, 61, 62, 3843, 3844, 1 << 40, tNow, tNow + 1, maxMintNum} {
		id := EncodeID(x)
		if !ValidID([]byte(id)) || id <= prev {
			t.Fatalf("EncodeID(%d)=%q after %q", x, id, prev)
		}
		if back, ok := DecodeID([]byte(id)); !ok || back != x {
			t.Fatalf("DecodeID(%q)=%d", id, back)
		}
		prev = id
	}
	for _, bad := range []string{"", "JOB", "JOB0000000000", "JOB000000000000", "job00000000001", "JOB0000000000-", "XYZ00000000001"} {
		if ValidID([]byte(bad)) {
			t.Errorf("ValidID(%q)", bad)
		}
	}
	if _, ok := DecodeID([]byte("JOBzzzzzzzzzzz")); ok {
		t.Error("62^11-1 decoded into int64")
	}
}

// stalledRow is an expired lease: active, attempts 1, leased by epoch.
func stalledRow(epoch string) Row {
	r := live()
	if epoch == "" {
		r.LeaseEpoch = Field{}
	} else {
		r.LeaseEpoch = F(epoch)
	}
	return r
}

func sweepRead(rows ...Due) *StalledRead {
	return &StalledRead{Active: OK, Expired: rows, Pending: OK, Dead: OK, Failed: Counter{Kind: OK}}
}

func TestStalledCheck(t *testing.T) {
	row := func(epoch, stalled string) Row {
		r := stalledRow(epoch)
		if stalled != "" {
			r.Stalled = F(stalled)
		}
		return r
	}
	lane := row(tRun, "")
	lane.Lane = true
	cases := []struct {
		name       string
		due        []Due
		max        int64
		rec, dead  []string
		refusal    string
		refusalKey string
		plan       []string
	}{
		{name: "ghost removed and listed nowhere", due: []Due{{ID: tID, Row: Row{Kind: Absent}}}, max: 1,
			plan: []string{"ZREM emq:{q}:active " + tID}},
		{name: "lane row refuses the whole sweep", due: []Due{{ID: tID, Row: row(tRun, "")}, {ID: tID2, Row: lane}}, max: 1,
			refusal: ErrLane, refusalKey: tk.Row(tID2)},
		{name: "wrong type refuses the whole sweep", due: []Due{{ID: tID, Row: Row{Kind: Absent}}, {ID: tID2, Row: Row{Kind: Wrong}}}, max: 1,
			refusal: store.ErrWrongType, refusalKey: tk.Row(tID2)},
		{name: "stalled not an integer", due: []Due{{ID: tID, Row: row(tRun, "")}, {ID: tID2, Row: row(tRun, "abc")}}, max: 3,
			refusal: store.ErrHashNotInt, refusalKey: tk.Row(tID2)},
		{name: "stalled would overflow", due: []Due{{ID: tID, Row: row(tRun, "9223372036854775807")}}, max: 3,
			refusal: store.ErrOverflow, refusalKey: tk.Row(tID)},
		{name: "another run's lease is exempt and uncounted", due: []Due{{ID: tID, Row: row(tOld, "")}}, max: 1,
			rec:  []string{tID},
			plan: []string{"ZREM emq:{q}:active " + tID, "HSET " + tRowQ + tID + " state pending", "ZADD emq:{q}:pending 0 " + tID}},
		{name: "exempt does not read stalled", due: []Due{{ID: tID, Row: row(tOld, "junk")}}, max: 1, rec: []string{tID},
			plan: []string{"ZREM emq:{q}:active " + tID, "HSET " + tRowQ + tID + " state pending", "ZADD emq:{q}:pending 0 " + tID}},
		{name: "a missing lease_epoch differs", due: []Due{{ID: tID, Row: row("", "")}}, max: 1, rec: []string{tID},
			plan: []string{"ZREM emq:{q}:active " + tID, "HSET " + tRowQ + tID + " state pending", "ZADD emq:{q}:pending 0 " + tID}},
		{name: "counted below max_stalled", due: []Due{{ID: tID, Row: row(tRun, "1")}}, max: 3, rec: []string{tID},
			plan: []string{"ZREM emq:{q}:active " + tID, "HSET " + tRowQ + tID + " state pending stalled 2", "ZADD emq:{q}:pending 0 " + tID}},
		{name: "counted at max_stalled", due: []Due{{ID: tID, Row: row(tRun, "1")}}, max: 2, dead: []string{tID},
			plan: []string{"ZREM emq:{q}:active " + tID, "HSET " + tRowQ + tID + " stalled 2 state dead last_error stalled",
				"ZADD emq:{q}:dead 0 " + tID, "HINCRBY emq:{q}:metrics:failed count 1"}},
		{name: "mixed, selection order", due: []Due{{ID: tID3, Row: row(tRun, "")}, {ID: tID, Row: Row{Kind: Absent}}, {ID: tID2, Row: row(tOld, "")}}, max: 1,
			rec: []string{tID2}, dead: []string{tID3},
			plan: []string{
				"ZREM emq:{q}:active " + tID3, "HSET " + tRowQ + tID3 + " stalled 1 state dead last_error stalled",
				"ZADD emq:{q}:dead 0 " + tID3, "HINCRBY emq:{q}:metrics:failed count 1",
				"ZREM emq:{q}:active " + tID,
				"ZREM emq:{q}:active " + tID2, "HSET " + tRowQ + tID2 + " state pending", "ZADD emq:{q}:pending 0 " + tID2}},
	}
	for _, c := range cases {
		v, p, ref := JudgeStalled(sweepRead(c.due...), []byte(tRun), tk, c.max)
		if ref.Text != c.refusal || ref.Key != c.refusalKey {
			t.Errorf("%s: refusal %+v, want %q at %q", c.name, ref, c.refusal, c.refusalKey)
			continue
		}
		if ref.Refused() {
			if p != nil || !ref.Bad {
				t.Errorf("%s: refusal with a plan or not counted", c.name)
			}
			continue
		}
		if strings.Join(v.Recovered, ",") != strings.Join(c.rec, ",") || strings.Join(v.Dead, ",") != strings.Join(c.dead, ",") {
			t.Errorf("%s: got %v / %v, want %v / %v", c.name, v.Recovered, v.Dead, c.rec, c.dead)
		}
		if strings.Join(render(p), "\n") != strings.Join(c.plan, "\n") {
			t.Errorf("%s: plan\n got %q\nwant %q", c.name, render(p), c.plan)
		}
	}
	// Destinations are checked too.
	r := sweepRead(Due{ID: tID, Row: row(tRun, "")})
	r.Failed.Count = F("9223372036854775807")
	if _, _, ref := JudgeStalled(r, []byte(tRun), tk, 1); ref.Text != store.ErrOverflow || ref.Key != tk.Failed {
		t.Errorf("metrics overflow: %+v", ref)
	}
	r = &StalledRead{Active: Wrong}
	if _, _, ref := JudgeStalled(r, []byte(tRun), tk, 1); ref.Text != store.ErrWrongType || ref.Key != tk.Active {
		t.Errorf("active wrong type: %+v", ref)
	}
	if v, p, ref := JudgeStalled(&StalledRead{}, []byte(tRun), tk, 1); ref.Refused() || p != nil || v.Recovered != nil || v.Dead != nil {
		t.Error("empty sweep wrote something")
	}
}

// TestThreeRecoveries is verbs.md section 5: one expired lease from the
// previous process, max_stalled 1: the native sweep exempts it; the same
// row leased by this run is counted and dead-lettered.
func TestThreeRecoveries(t *testing.T) {
	before := Row{Kind: OK, State: F("active"), Attempts: F("1"), LeaseEpoch: F(tOld)}
	v, p, _ := JudgeStalled(sweepRead(Due{ID: tID, Row: before}), []byte(tRun), tk, 1)
	if len(v.Recovered) != 1 || len(v.Dead) != 0 {
		t.Fatalf("previous run: %+v", v)
	}
	for _, l := range render(p) {
		if strings.Contains(l, "stalled") || strings.Contains(l, "metrics") {
			t.Fatalf("exempt expiry counted: %q", l)
		}
	}
	before.LeaseEpoch = F(tRun)
	v, p, _ = JudgeStalled(sweepRead(Due{ID: tID, Row: before}), []byte(tRun), tk, 1)
	if len(v.Dead) != 1 || len(v.Recovered) != 0 {
		t.Fatalf("this run: %+v", v)
	}
	eqLines(t, render(p), []string{
		"ZREM emq:{q}:active " + tID,
		"HSET " + tRowQ + tID + " stalled 1 state dead last_error stalled",
		"ZADD emq:{q}:dead 0 " + tID,
		"HINCRBY emq:{q}:metrics:failed count 1",
	})
}

func TestPromote(t *testing.T) {
	lane := live()
	lane.Lane = true
	r := &PromoteRead{Schedule: OK, Pending: OK, Due: []Due{{ID: tID2, Row: live()}, {ID: tID, Row: Row{Kind: Absent}}, {ID: tID3, Row: live()}}}
	ids, p, ref := JudgePromote(r, tk)
	if ref.Refused() || strings.Join(ids, ",") != tID2+","+tID3 {
		t.Fatal(ids, ref)
	}
	eqLines(t, render(p), []string{
		"ZREM emq:{q}:schedule " + tID2, "HSET " + tRowQ + tID2 + " state pending", "ZADD emq:{q}:pending 0 " + tID2,
		"ZREM emq:{q}:schedule " + tID,
		"ZREM emq:{q}:schedule " + tID3, "HSET " + tRowQ + tID3 + " state pending", "ZADD emq:{q}:pending 0 " + tID3,
	})
	r.Due = append(r.Due, Due{ID: "JOB00000000009", Row: lane})
	if _, p, ref := JudgePromote(r, tk); ref.Text != ErrLane || p != nil {
		t.Fatal(ref)
	}
	r.Due[3].Row = Row{Kind: Wrong}
	if _, _, ref := JudgePromote(r, tk); ref.Text != store.ErrWrongType {
		t.Fatal(ref)
	}
	if _, _, ref := JudgePromote(&PromoteRead{Schedule: Wrong}, tk); ref.Key != tk.Schedule {
		t.Fatal(ref)
	}
	if _, _, ref := JudgePromote(&PromoteRead{Schedule: OK, Pending: Wrong, Due: []Due{{ID: tID, Row: live()}}}, tk); ref.Key != tk.Pending {
		t.Fatal(ref)
	}
}

func pendingRow(attempts, failures string) Row {
	r := Row{Kind: OK, State: F("pending"), Payload: F("pay")}
	if attempts != "" {
		r.Attempts = F(attempts)
	}
	if failures != "" {
		r.Failures = F(failures)
	}
	return r
}

func TestClaim(t *testing.T) {
	a := &ClaimArgs{K: tk, LeaseMs: 1000, Count: 2}
	base := func() *ClaimRead {
		return &ClaimRead{Meta: Absent, Schedule: OK, Pending: OK, Active: OK}
	}
	// A ghost is dropped and does not use up count.
	r := base()
	r.Cands = []Due{{ID: tID, Row: Row{Kind: Absent}}, {ID: tID2, Row: pendingRow("0", "")}, {ID: tID3, Row: pendingRow("4", "2")}}
	v, p, ref := JudgeClaim(r, tNow, []byte(tRun), a)
	if ref.Refused() || len(v.Jobs) != 2 {
		t.Fatal(v, ref)
	}
	if j := v.Jobs[0]; j.ID != tID2 || string(j.Token) != "1" || j.Failures != 0 || string(j.Payload) != "pay" {
		t.Fatalf("%+v", j)
	}
	if j := v.Jobs[1]; j.ID != tID3 || string(j.Token) != "5" || j.Failures != 2 {
		t.Fatalf("%+v", j)
	}
	eqLines(t, render(p), []string{
		"ZREM emq:{q}:pending " + tID,
		"ZREM emq:{q}:pending " + tID2, "HINCRBY " + tRowQ + tID2 + " attempts 1",
		"HSET " + tRowQ + tID2 + " state active lease_epoch " + tRun, "ZADD emq:{q}:active 1700000001000 " + tID2,
		"ZREM emq:{q}:pending " + tID3, "HINCRBY " + tRowQ + tID3 + " attempts 1",
		"HSET " + tRowQ + tID3 + " state active lease_epoch " + tRun, "ZADD emq:{q}:active 1700000001000 " + tID3,
	})
	// Refusals of the whole call: lane, wrong type, attempts and failures.
	for _, c := range []struct {
		row  Row
		want string
	}{
		{Row{Kind: Wrong}, store.ErrWrongType},
		{func() Row { x := pendingRow("0", ""); x.Lane = true; return x }(), ErrLane},
		{pendingRow("x", ""), store.ErrHashNotInt},
		{pendingRow("9223372036854775807", ""), store.ErrOverflow},
		{pendingRow("1", "1e3"), store.ErrHashNotInt},
	} {
		r := base()
		r.Cands = []Due{{ID: tID, Row: Row{Kind: Absent}}, {ID: tID2, Row: pendingRow("0", "")}, {ID: tID3, Row: c.row}}
		if _, p, ref := JudgeClaim(r, tNow, []byte(tRun), a); ref.Text != c.want || p != nil || ref.Key != tk.Row(tID3) {
			t.Errorf("%+v: got %+v", c.row, ref)
		}
	}
	// Paused: nothing, not even a look at the other keys.
	r = base()
	r.Paused, r.Meta, r.Pending = true, OK, Wrong
	if v, p, ref := JudgeClaim(r, tNow, []byte(tRun), a); ref.Refused() || p != nil || len(v.Jobs) != 0 {
		t.Fatal("paused queue handed out")
	}
	r = base()
	r.Meta = Wrong
	if _, _, ref := JudgeClaim(r, tNow, []byte(tRun), a); ref.Key != tk.Meta {
		t.Fatal(ref)
	}
	// Empty: an empty verdict and no plan.
	if v, p, ref := JudgeClaim(base(), tNow, []byte(tRun), a); ref.Refused() || p != nil || len(v.Jobs) != 0 {
		t.Fatal("empty claim")
	}
}

// TestClaimPromotesFirst: due scheduled jobs join pending at score 0, in id
// order among the pending ones; promoted jobs not taken wake others.
func TestClaimPromotesFirst(t *testing.T) {
	a := &ClaimArgs{K: tk, LeaseMs: 10, Count: 2}
	r := &ClaimRead{Meta: Absent, Schedule: OK, Pending: OK, Active: OK,
		Due:   []Due{{ID: tID3, Score: 5, Row: pendingRow("1", "1")}, {ID: tID, Score: 7, Row: pendingRow("0", "")}},
		Cands: []Due{{ID: tID2, Row: pendingRow("0", "")}}}
	v, p, ref := JudgeClaim(r, tNow, []byte(tRun), a)
	if ref.Refused() || len(v.Jobs) != 2 || v.Jobs[0].ID != tID || v.Jobs[1].ID != tID2 {
		t.Fatalf("%+v %+v", v, ref)
	}
	if len(v.Woken) != 1 || v.Woken[0] != tID3 {
		t.Fatalf("woken %v", v.Woken)
	}
	got := render(p)
	eqLines(t, got[:6], []string{
		"ZREM emq:{q}:schedule " + tID3, "HSET " + tRowQ + tID3 + " state pending", "ZADD emq:{q}:pending 0 " + tID3,
		"ZREM emq:{q}:schedule " + tID, "HSET " + tRowQ + tID + " state pending", "ZADD emq:{q}:pending 0 " + tID,
	})
	if len(got) != 6+8 {
		t.Fatalf("plan %q", got)
	}
	// A lane row among the due refuses the claim.
	r.Due[1].Row.Lane = true
	if _, p, ref := JudgeClaim(r, tNow, []byte(tRun), a); ref.Text != ErrLane || p != nil {
		t.Fatal(ref)
	}
}

func TestReprocessRemovePauseCounts(t *testing.T) {
	deadRow := live()
	deadRow.State = F("dead")
	rk := tk.Row(tID)
	p, ref := JudgeReprocess(&ReprocessRead{Dead: OK, InDead: true, Row: deadRow, Pending: OK}, tk, tID, rk, true)
	if ref.Refused() {
		t.Fatal(ref)
	}
	eqLines(t, render(p), []string{
		"ZREM emq:{q}:dead " + tID,
		"HDEL " + rk + " last_error failures stalled",
		"HSET " + rk + " state pending",
		"ZADD emq:{q}:pending 0 " + tID,
	})
	p, _ = JudgeReprocess(&ReprocessRead{Dead: OK, InDead: true, Row: deadRow, Pending: OK}, tk, tID, rk, false)
	eqLines(t, render(p)[1:2], []string{"HDEL " + rk + " last_error"})
	for _, c := range []struct {
		r    ReprocessRead
		want string
	}{
		{ReprocessRead{Dead: OK, InDead: false, Row: deadRow}, ErrNotDead},
		{ReprocessRead{Dead: Absent, Row: deadRow}, ErrNotDead},
		{ReprocessRead{Dead: OK, InDead: true, Row: Row{Kind: Absent}}, ErrGone},
		{ReprocessRead{Dead: OK, InDead: true, Row: Row{Kind: OK, Lane: true}}, ErrLane},
		{ReprocessRead{Dead: Wrong}, store.ErrWrongType},
	} {
		if _, ref := JudgeReprocess(&c.r, tk, tID, rk, false); ref.Text != c.want {
			t.Errorf("%+v: %q, want %q", c.r, ref.Text, c.want)
		}
	}

	p, ref = JudgeRemove(&RemoveRead{Pending: OK, InPending: true, Row: pendingRow("0", "")}, tk, tID, rk)
	eqLines(t, render(p), []string{"ZREM emq:{q}:pending " + tID, "DEL " + rk})
	if p, ref := JudgeRemove(&RemoveRead{}, tk, tID, rk); p != nil || ref.Refused() {
		t.Fatal("remove of nothing")
	}
	if _, ref := JudgeRemove(&RemoveRead{Active: OK, InActive: true, Row: live()}, tk, tID, rk); ref.Text != ErrActive {
		t.Fatal(ref)
	}
	if _, ref := JudgeRemove(&RemoveRead{Row: Row{Kind: OK, Lane: true}}, tk, tID, rk); ref.Text != ErrLane {
		t.Fatal(ref)
	}

	p, _ = JudgePause(Absent, tk)
	eqLines(t, render(p), []string{"HSET emq:{q}:meta paused 1"})
	p, _ = JudgeResume(OK, true, tk)
	eqLines(t, render(p), []string{"HDEL emq:{q}:meta paused"})
	if p, _ := JudgeResume(OK, false, tk); p != nil {
		t.Fatal("resume of a running queue wrote")
	}

	n, ref := JudgeCounts(&CountsRead{Sizes: [4]int64{1, 2, 3, 4}, Completed: Counter{Kind: OK, Count: F("5")}}, tk)
	if ref.Refused() || n != (Counts{1, 2, 3, 4, 5, 0}) {
		t.Fatal(n, ref)
	}
	if _, ref := JudgeCounts(&CountsRead{Failed: Counter{Kind: OK, Count: F("x")}}, tk); ref.Text != store.ErrHashNotInt {
		t.Fatal(ref)
	}
	if _, ref := JudgeCounts(&CountsRead{Sets: [4]KeyKind{OK, OK, Wrong}}, tk); ref.Key != tk.Schedule {
		t.Fatal(ref)
	}
}
