package verbs

import (
	"strings"
	"testing"

	"github.com/emqd/emqd/internal/store"
)

// stalledRow is an expired lease: active, attempts 1, leased by epoch.
func stalledRow(epoch string) jobRow {
	r := live()
	if epoch == "" {
		r.LeaseEpoch = rowField{}
	} else {
		r.LeaseEpoch = fieldOf(epoch)
	}
	return r
}

func sweepRead(rows ...dueJob) *stalledRead {
	return &stalledRead{Now: tNow, Active: keyOK, Expired: rows, Pending: keyOK, Dead: keyOK, Failed: counter{Kind: keyOK}}
}

func TestStalledCheck(t *testing.T) {
	row := func(epoch, stalled string) jobRow {
		r := stalledRow(epoch)
		if stalled != "" {
			r.Stalled = fieldOf(stalled)
		}
		return r
	}
	lane := row(tRun, "")
	lane.Lane = true
	cases := []struct {
		name       string
		due        []dueJob
		max        int64
		rec, dead  []string
		refusal    string
		refusalKey string
		plan       []string
	}{
		{name: "ghost removed and listed nowhere", due: []dueJob{{ID: tID, Row: jobRow{Kind: keyAbsent}}}, max: 1,
			plan: []string{"ZREM emq:{q}:active " + tID}},
		{name: "lane row refuses the whole sweep", due: []dueJob{{ID: tID, Row: row(tRun, "")}, {ID: tID2, Row: lane}}, max: 1,
			refusal: ErrLane, refusalKey: tk.Row(tID2)},
		{name: "wrong type refuses the whole sweep", due: []dueJob{{ID: tID, Row: jobRow{Kind: keyAbsent}}, {ID: tID2, Row: jobRow{Kind: keyWrong}}}, max: 1,
			refusal: store.ErrWrongType, refusalKey: tk.Row(tID2)},
		{name: "stalled not an integer", due: []dueJob{{ID: tID, Row: row(tRun, "")}, {ID: tID2, Row: row(tRun, "abc")}}, max: 3,
			refusal: store.ErrHashNotInt, refusalKey: tk.Row(tID2)},
		{name: "stalled would overflow", due: []dueJob{{ID: tID, Row: row(tRun, "9223372036854775807")}}, max: 3,
			refusal: store.ErrOverflow, refusalKey: tk.Row(tID)},
		{name: "another run's lease is exempt and uncounted", due: []dueJob{{ID: tID, Row: row(tOld, "")}}, max: 1,
			rec:  []string{tID},
			plan: []string{"ZREM emq:{q}:active " + tID, "HSET " + tRowQ + tID + " state pending", "ZADD emq:{q}:pending 0 " + tID}},
		{name: "exempt does not read stalled", due: []dueJob{{ID: tID, Row: row(tOld, "junk")}}, max: 1, rec: []string{tID},
			plan: []string{"ZREM emq:{q}:active " + tID, "HSET " + tRowQ + tID + " state pending", "ZADD emq:{q}:pending 0 " + tID}},
		{name: "a missing lease_epoch differs", due: []dueJob{{ID: tID, Row: row("", "")}}, max: 1, rec: []string{tID},
			plan: []string{"ZREM emq:{q}:active " + tID, "HSET " + tRowQ + tID + " state pending", "ZADD emq:{q}:pending 0 " + tID}},
		{name: "counted below max_stalled", due: []dueJob{{ID: tID, Row: row(tRun, "1")}}, max: 3, rec: []string{tID},
			plan: []string{"ZREM emq:{q}:active " + tID, "HSET " + tRowQ + tID + " state pending stalled 2", "ZADD emq:{q}:pending 0 " + tID}},
		{name: "counted at max_stalled", due: []dueJob{{ID: tID, Row: row(tRun, "1")}}, max: 2, dead: []string{tID},
			plan: []string{"ZREM emq:{q}:active " + tID, "HSET " + tRowQ + tID + " stalled 2 state dead last_error stalled finished_at 1700000000000",
				"ZADD emq:{q}:dead 0 " + tID, "HINCRBY emq:{q}:metrics:failed count 1"}},
		{name: "mixed, selection order", due: []dueJob{{ID: tID3, Row: row(tRun, "")}, {ID: tID, Row: jobRow{Kind: keyAbsent}}, {ID: tID2, Row: row(tOld, "")}}, max: 1,
			rec: []string{tID2}, dead: []string{tID3},
			plan: []string{
				"ZREM emq:{q}:active " + tID3, "HSET " + tRowQ + tID3 + " stalled 1 state dead last_error stalled finished_at 1700000000000",
				"ZADD emq:{q}:dead 0 " + tID3, "HINCRBY emq:{q}:metrics:failed count 1",
				"ZREM emq:{q}:active " + tID,
				"ZREM emq:{q}:active " + tID2, "HSET " + tRowQ + tID2 + " state pending", "ZADD emq:{q}:pending 0 " + tID2}},
	}
	for _, c := range cases {
		v, p, ref := judgeStalled(sweepRead(c.due...), []byte(tRun), tk, c.max)
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
	r := sweepRead(dueJob{ID: tID, Row: row(tRun, "")})
	r.Failed.Count = fieldOf("9223372036854775807")
	if _, _, ref := judgeStalled(r, []byte(tRun), tk, 1); ref.Text != store.ErrOverflow || ref.Key != tk.Failed {
		t.Errorf("metrics overflow: %+v", ref)
	}
	r = &stalledRead{Active: keyWrong}
	if _, _, ref := judgeStalled(r, []byte(tRun), tk, 1); ref.Text != store.ErrWrongType || ref.Key != tk.Active {
		t.Errorf("active wrong type: %+v", ref)
	}
	if v, p, ref := judgeStalled(&stalledRead{}, []byte(tRun), tk, 1); ref.Refused() || p != nil || v.Recovered != nil || v.Dead != nil {
		t.Error("empty sweep wrote something")
	}
}

// TestThreeRecoveries is docs/verbs.md §5: one expired lease from the
// previous process, max_stalled 1: the native sweep exempts it; the same
// row leased by this run is counted and dead-lettered.
func TestThreeRecoveries(t *testing.T) {
	before := jobRow{Kind: keyOK, State: fieldOf("active"), Attempts: fieldOf("1"), LeaseEpoch: fieldOf(tOld)}
	v, p, _ := judgeStalled(sweepRead(dueJob{ID: tID, Row: before}), []byte(tRun), tk, 1)
	if len(v.Recovered) != 1 || len(v.Dead) != 0 {
		t.Fatalf("previous run: %+v", v)
	}
	for _, l := range render(p) {
		if strings.Contains(l, "stalled") || strings.Contains(l, "metrics") {
			t.Fatalf("exempt expiry counted: %q", l)
		}
	}
	before.LeaseEpoch = fieldOf(tRun)
	v, p, _ = judgeStalled(sweepRead(dueJob{ID: tID, Row: before}), []byte(tRun), tk, 1)
	if len(v.Dead) != 1 || len(v.Recovered) != 0 {
		t.Fatalf("this run: %+v", v)
	}
	eqLines(t, render(p), []string{
		"ZREM emq:{q}:active " + tID,
		"HSET " + tRowQ + tID + " stalled 1 state dead last_error stalled finished_at 1700000000000",
		"ZADD emq:{q}:dead 0 " + tID,
		"HINCRBY emq:{q}:metrics:failed count 1",
	})
}

func TestPromote(t *testing.T) {
	lane := live()
	lane.Lane = true
	r := &promoteRead{Schedule: keyOK, Pending: keyOK, Due: []dueJob{{ID: tID2, Row: live()}, {ID: tID, Row: jobRow{Kind: keyAbsent}}, {ID: tID3, Row: live()}}}
	ids, p, ref := judgePromote(r, tk)
	if ref.Refused() || strings.Join(ids, ",") != tID2+","+tID3 {
		t.Fatal(ids, ref)
	}
	eqLines(t, render(p), []string{
		"ZREM emq:{q}:schedule " + tID2, "HSET " + tRowQ + tID2 + " state pending", "ZADD emq:{q}:pending 0 " + tID2,
		"ZREM emq:{q}:schedule " + tID,
		"ZREM emq:{q}:schedule " + tID3, "HSET " + tRowQ + tID3 + " state pending", "ZADD emq:{q}:pending 0 " + tID3,
	})
	r.Due = append(r.Due, dueJob{ID: "JOB00000000009", Row: lane})
	if _, p, ref := judgePromote(r, tk); ref.Text != ErrLane || p != nil {
		t.Fatal(ref)
	}
	r.Due[3].Row = jobRow{Kind: keyWrong}
	if _, _, ref := judgePromote(r, tk); ref.Text != store.ErrWrongType {
		t.Fatal(ref)
	}
	if _, _, ref := judgePromote(&promoteRead{Schedule: keyWrong}, tk); ref.Key != tk.Schedule {
		t.Fatal(ref)
	}
	if _, _, ref := judgePromote(&promoteRead{Schedule: keyOK, Pending: keyWrong, Due: []dueJob{{ID: tID, Row: live()}}}, tk); ref.Key != tk.Pending {
		t.Fatal(ref)
	}
}
