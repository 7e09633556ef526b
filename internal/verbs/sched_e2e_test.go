package verbs_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/emqd/emqd/internal/verbs"
	"github.com/emqd/emqd/server"
	"github.com/redis/go-redis/v9"
)

// sched returns EMQ.SCHEDULE.GET's map as field -> value.
func (e *env) sched(q, name string) map[string]string {
	e.t.Helper()
	v := e.ok("EMQ.SCHEDULE.GET", q, name)
	if v == nil {
		return nil
	}
	x := v.([]any)
	m := map[string]string{}
	for i := 0; i+1 < len(x); i += 2 {
		m[fmt.Sprint(x[i])] = fmt.Sprint(x[i+1])
	}
	return m
}

// step advances the clock by ms and waits for the timers it fired.
func (e *env) step(ms int64) {
	e.clk.Advance(ms)
	e.clk.Wait()
}

// occurrences are the ids the slots t0+from*iv .. t0+to*iv give schedule sid.
func occurrences(sid int64, base, iv int64, from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, verbs.OccurrenceID(sid, base+int64(i)*iv))
	}
	return out
}

func sameList(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("%s:\n got %v\nwant %v", what, got, want)
	}
}

// TestScheduleEveryInSteps: EVERY 1000 and the clock advanced 10,000 ms in
// steps of 100 ms: exactly 10 occurrences, one per slot, ids by slot, each
// enqueued at its slot time (lag 0).
func TestScheduleEveryInSteps(t *testing.T) {
	e := newEnv(t)
	e.ok("EMQ.SCHEDULE", "q", "tick", "EVERY", "1000", "hello")
	for range 100 {
		e.step(100)
	}
	sameList(t, "pending", e.zmembers("emq:{q}:pending"), occurrences(1, t0, 1000, 1, 10))
	m := e.sched("q", "tick")
	if m["fired"] != "10" || m["missed"] != "0" || m["next_ms"] != strconv.FormatInt(t0+11000, 10) || m["last_slot_ms"] != strconv.FormatInt(t0+10000, 10) {
		t.Fatalf("schedule %v", m)
	}
	id := verbs.OccurrenceID(1, t0+3000)
	if r := e.row("q", id); r != "state=pending attempts=0 payload=hello enqueued_at="+strconv.FormatInt(t0+3000, 10)+" schedule=tick slot_ms="+strconv.FormatInt(t0+3000, 10) {
		t.Fatalf("row %q", r)
	}
	info := e.ok("INFO", "emq").(string)
	for _, f := range []string{"emq_schedule_fired:10", "emq_schedule_missed:0", "emq_schedule_lag_p99_ms:0"} {
		if !strings.Contains(info, f+"\r\n") {
			t.Fatalf("INFO lacks %s:\n%s", f, info)
		}
	}
}

// TestScheduleEveryOneStep: the same 10,000 ms in one step, per CATCHUP.
// The slot at the new time is on time; the nine before it are late.
func TestScheduleEveryOneStep(t *testing.T) {
	for _, c := range []struct {
		policy   string
		from     int
		missed   string
		firedCnt string
	}{{"all", 1, "0", "10"}, {"one", 9, "8", "2"}, {"none", 10, "9", "1"}} {
		t.Run(c.policy, func(t *testing.T) {
			e := newEnv(t)
			e.ok("EMQ.SCHEDULE", "q", "tick", "EVERY", "1000", "p", "CATCHUP", c.policy)
			e.step(10000)
			sameList(t, "pending", e.zmembers("emq:{q}:pending"), occurrences(1, t0, 1000, c.from, 10))
			m := e.sched("q", "tick")
			if m["fired"] != c.firedCnt || m["missed"] != c.missed || m["next_ms"] != strconv.FormatInt(t0+11000, 10) {
				t.Fatalf("schedule %v", m)
			}
		})
	}
}

// TestScheduleCatchupBounded: a year of EVERY 1000 under CATCHUP all fires
// 100 slots per EMQ.SCHEDULE.FIRE, in order, and the server calls it again
// at once until it is caught up.
func TestScheduleCatchupBounded(t *testing.T) {
	e := newEnv(t)
	e.ok("EMQ.SCHEDULE", "q", "tick", "EVERY", "1000", "p", "CATCHUP", "all")
	e.ok("EMQ.SCHEDULE.PAUSE", "q", "tick")
	e.step(250_000)
	if n := e.ok("EMQ.SCHEDULE.FIRE", "q").(int64); n != 0 {
		t.Fatalf("a paused schedule fired %d", n)
	}
	e.ok("EMQ.SCHEDULE", "q", "tick", "EVERY", "1000", "p", "CATCHUP", "all", "START", strconv.FormatInt(t0+1000, 10))
	// Upsert kept the pause.
	if m := e.sched("q", "tick"); m["state"] != "paused" {
		t.Fatalf("%v", m)
	}
	// Resume would skip the paused slots; instead fire by hand with a
	// clock behind: recreate the schedule active.
	e.ok("EMQ.SCHEDULE.DEL", "q", "tick")
	e.ok("EMQ.SCHEDULE", "q", "tick", "EVERY", "1000", "p", "CATCHUP", "all")
	now := t0 + 250_000
	e.step(250_000) // 250 slots due in one step
	m := e.sched("q", "tick")
	if m["fired"] != "250" || m["next_ms"] != strconv.FormatInt(now+251_000, 10) {
		t.Fatalf("%v", m)
	}
	got := e.zmembers("emq:{q}:pending")
	// The second schedule has number 2 (numbers are never reused).
	sameList(t, "pending", got, occurrences(2, now, 1000, 1, 250))
	cs := e.ok("INFO", "commandstats").(string)
	if !strings.Contains(cs, "cmdstat_emq.schedule.fire:calls=") {
		t.Fatal("fire not counted")
	}
}

// TestScheduleEndLimit: END and LIMIT stop firing; the schedule is done.
func TestScheduleEndLimit(t *testing.T) {
	e := newEnv(t)
	e.ok("EMQ.SCHEDULE", "q", "lim", "EVERY", "1000", "p", "LIMIT", "3")
	e.ok("EMQ.SCHEDULE", "q", "end", "EVERY", "1000", "p", "END", strconv.FormatInt(t0+4500, 10))
	for range 10 {
		e.step(1000)
	}
	a, b := e.sched("q", "lim"), e.sched("q", "end")
	if a["fired"] != "3" || a["state"] != "done" || a["next_ms"] != "<nil>" && a["next_ms"] != "" {
		t.Fatalf("limit %v", a)
	}
	if _, has := a["next_ms"]; has {
		t.Fatalf("done schedule keeps next_ms: %v", a)
	}
	if b["fired"] != "4" || b["state"] != "done" {
		t.Fatalf("end %v", b)
	}
	if n := len(e.zmembers("emq:{q}:pending")); n != 7 {
		t.Fatalf("%d occurrences, want 7", n)
	}
	// A done schedule's score never comes due: the timer is not armed for it.
	sc := e.ok("ZSCORE", "emq:{q}:sched", "lim").(string)
	if sc != strconv.FormatInt(verbs.MaxScoreMs, 10) {
		t.Fatalf("score %s", sc)
	}
}

// TestScheduleUpsertMidRun: replacing a live schedule takes effect at once,
// keeps no stale next time and never fires a slot twice.
func TestScheduleUpsertMidRun(t *testing.T) {
	e := newEnv(t)
	e.ok("EMQ.SCHEDULE", "q", "s", "EVERY", "1000", "v1")
	for range 3 {
		e.step(1000)
	}
	e.step(500) // t0+3500
	e.ok("EMQ.SCHEDULE", "q", "s", "EVERY", "1200", "v2", "START", strconv.FormatInt(t0+3000, 10))
	m := e.sched("q", "s")
	if m["next_ms"] != strconv.FormatInt(t0+4200, 10) || m["payload"] != "v2" || m["fired"] != "0" || m["last_slot_ms"] != strconv.FormatInt(t0+3000, 10) {
		t.Fatalf("after upsert %v", m)
	}
	e.step(700)  // t0+4200
	e.step(1200) // t0+5400
	want := append(occurrences(1, t0, 1000, 1, 3), occurrences(1, t0+3000, 1200, 1, 2)...)
	sameList(t, "pending", e.zmembers("emq:{q}:pending"), want)
	if got := e.field("q", verbs.OccurrenceID(1, t0+5400), "payload"); got != "v2" {
		t.Fatalf("payload %s", got)
	}
	// An upsert to CRON replaces the interval fields (no stale every_ms).
	e.ok("EMQ.SCHEDULE", "q", "s", "CRON", "*/5 * * * * *", "v3")
	m = e.sched("q", "s")
	if _, has := m["every_ms"]; has || m["cron"] != "*/5 * * * * *" {
		t.Fatalf("cron upsert %v", m)
	}
}

// TestScheduleOverlapSkip: with OVERLAP skip a slot is not enqueued while
// the previous occurrence is pending or active.
func TestScheduleOverlapSkip(t *testing.T) {
	e := newEnv(t)
	e.ok("EMQ.SCHEDULE", "q", "s", "EVERY", "1000", "p", "OVERLAP", "skip")
	e.step(1000)
	e.step(1000) // skipped: the first still pending
	id, tok, _ := e.claim("q", 60000)
	if id != verbs.OccurrenceID(1, t0+1000) {
		t.Fatalf("claimed %s", id)
	}
	e.step(1000) // skipped: active
	e.ok("EMQ.COMPLETE", "q", id, tok)
	e.step(1000) // fires
	m := e.sched("q", "s")
	if m["fired"] != "2" || m["skipped"] != "2" || m["last_id"] != verbs.OccurrenceID(1, t0+4000) {
		t.Fatalf("%v", m)
	}
}

// TestSchedulePauseResumeDel: a paused schedule fires nothing; resume goes
// on from the previous target's series (slots passed while paused are not
// fired); DEL removes it, its occurrences stay.
func TestSchedulePauseResumeDel(t *testing.T) {
	e := newEnv(t)
	e.ok("EMQ.SCHEDULE", "q", "s", "EVERY", "1000", "p")
	e.step(1000)
	e.ok("EMQ.SCHEDULE.PAUSE", "q", "s")
	e.step(3500) // t0+4500
	e.ok("EMQ.SCHEDULE.RESUME", "q", "s")
	if m := e.sched("q", "s"); m["next_ms"] != strconv.FormatInt(t0+5000, 10) || m["state"] != "active" || m["fired"] != "1" {
		t.Fatalf("%v", m)
	}
	e.step(500)
	sameList(t, "pending", e.zmembers("emq:{q}:pending"), []string{verbs.OccurrenceID(1, t0+1000), verbs.OccurrenceID(1, t0+5000)})
	if e.refused("EMQ.SCHEDULE.PAUSE", "q", "nope") != "ERR no such schedule" {
		t.Fatal("pause of a missing schedule")
	}
	l := e.ok("EMQ.SCHEDULE.LIST", "q").([]any)
	if len(l) != 1 || l[0].([]any)[0] != "s" {
		t.Fatalf("list %v", l)
	}
	if n := e.ok("EMQ.SCHEDULE.DEL", "q", "s").(int64); n != 1 {
		t.Fatal(n)
	}
	if n := e.ok("EMQ.SCHEDULE.DEL", "q", "s").(int64); n != 0 {
		t.Fatal(n)
	}
	e.step(5000)
	if n := len(e.zmembers("emq:{q}:pending")); n != 2 {
		t.Fatalf("%d", n)
	}
	if v := e.ok("EXISTS", "emq:{q}:sched"); v.(int64) != 0 {
		t.Fatal("sched set left")
	}
}

// TestScheduleWakesBlockedClaimer: an occurrence wakes a claimer blocked
// on the queue.
func TestScheduleWakesBlockedClaimer(t *testing.T) {
	e := newEnv(t)
	e.ok("EMQ.SCHEDULE", "q", "s", "EVERY", "1000", "wake")
	c := e.client(2)
	got := make(chan []any, 1)
	go func() {
		v, _ := c.Do(e.ctx, "EMQ.CLAIM", "q", "30000", "BLOCK", "0").Result()
		got <- v.([]any)
	}()
	e.waitBlocked(1)
	e.step(1000)
	select {
	case v := <-got:
		if v[0].([]any)[0] != verbs.OccurrenceID(1, t0+1000) {
			t.Fatalf("%v", v)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("claimer not woken")
	}
}

// TestScheduleCronTZ: a cron schedule in a zone fires at the zone's local
// times, across the spring change of America/New_York (02:30 does not
// exist on 8 March 2026 and fires at 03:00 EDT).
func TestScheduleCronTZ(t *testing.T) {
	e := newEnv(t)
	ny, _ := time.LoadLocation("America/New_York")
	start := time.Date(2026, 3, 7, 0, 0, 0, 0, ny).UnixMilli()
	e.step(start - t0)
	e.ok("EMQ.SCHEDULE", "q", "c", "CRON", "30 2 * * *", "TZ", "America/New_York", "p")
	for range 3 * 24 {
		e.step(3600_000)
	}
	var want []string
	for _, tm := range []time.Time{
		time.Date(2026, 3, 7, 2, 30, 0, 0, ny),
		time.Date(2026, 3, 8, 3, 0, 0, 0, ny),
		time.Date(2026, 3, 9, 2, 30, 0, 0, ny),
	} {
		want = append(want, verbs.OccurrenceID(1, tm.UnixMilli()))
	}
	sameList(t, "pending", e.zmembers("emq:{q}:pending"), want)
}

// TestScheduleArgErrors: bad arguments are refused before anything is read
// and write nothing.
func TestScheduleArgErrors(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		args []any
		want string
	}{
		{[]any{"EMQ.SCHEDULE", "q", "s", "EVERY", "0", "p"}, "ERR interval_ms must be a positive integer"},
		{[]any{"EMQ.SCHEDULE", "q", "s", "EVERY", "x", "p"}, "ERR value is not an integer or out of range"},
		{[]any{"EMQ.SCHEDULE", "q", "s", "EVERY", "1", "p"}, "ERR interval_ms must be at least 1000"},
		{[]any{"EMQ.SCHEDULE", "q", "s", "EVERY", "999", "p"}, "ERR interval_ms must be at least 1000"},
		{[]any{"EMQ.SCHEDULE", "q", "s", "EVERY", "9007199254740992", "p"}, "ERR interval_ms is out of range"},
		{[]any{"EMQ.SCHEDULE", "q", "a:b", "EVERY", "1000", "p"}, "ERR invalid schedule name"},
		{[]any{"EMQ.SCHEDULE", "a:b", "s", "EVERY", "1000", "p"}, "ERR invalid queue name"},
		{[]any{"EMQ.SCHEDULE", "q", "s", "DAILY", "1", "p"}, "ERR syntax error"},
		{[]any{"EMQ.SCHEDULE", "q", "s", "CRON", "61 * * * *", "p"}, `ERR invalid cron spec: minute field "61": 61 is above the maximum, 59 (allowed: 0-59, *, ?, ranges a-b, lists a,b and steps /n)`},
		{[]any{"EMQ.SCHEDULE", "q", "s", "CRON", "0 0 L * *", "p"}, `ERR invalid cron spec: day-of-month field "L": L, W and # (Quartz's last, weekday and nth) are not supported (allowed: 1-31, *, ?, ranges a-b, lists a,b and steps /n)`},
		{[]any{"EMQ.SCHEDULE", "q", "s", "CRON", "* * * * *", "TZ", "Mars/Base", "p"}, "ERR invalid cron spec: unknown time zone Mars/Base"},
		{[]any{"EMQ.SCHEDULE", "q", "s", "EVERY", "1000", "p", "LIMIT", "0"}, "ERR limit must be a positive integer"},
		{[]any{"EMQ.SCHEDULE", "q", "s", "EVERY", "1000", "p", "START", "5", "END", "4"}, "ERR end_ms must not be before start_ms"},
		{[]any{"EMQ.SCHEDULE", "q", "s", "EVERY", "1000", "p", "OVERLAP", "maybe"}, "ERR syntax error"},
		{[]any{"EMQ.SCHEDULE", "q", "s", "EVERY", "1000", "p", "CATCHUP", "some"}, "ERR syntax error"},
		{[]any{"EMQ.SCHEDULE", "q", "s", "EVERY", "1000", "p", "LIMIT", "1", "LIMIT", "2"}, "ERR syntax error"},
		{[]any{"EMQ.SCHEDULE", "q", "s", "EVERY", "1000", "p", "LIMIT"}, "ERR syntax error"},
		{[]any{"EMQ.SCHEDULE", "q", "s", "EVERY", "1000"}, "ERR wrong number of arguments for 'emq.schedule' command"},
		{[]any{"EMQ.SCHEDULE.FIRE", "q", "0"}, "ERR limit must be a positive integer"},
		{[]any{"EMQ.SCHEDULE.LIST", "q", "0"}, "ERR syntax error"},
		{[]any{"EMQ.SCHEDULE.LIST", "q", "0", "1001"}, "ERR count must be at most 1000"},
	} {
		if got := e.refused(c.args...); !strings.HasPrefix(got, c.want) {
			t.Errorf("%v: %q, want %q", c.args, got, c.want)
		}
	}
	if n := e.ok("DBSIZE").(int64); n != 0 {
		t.Fatalf("refusals wrote %d keys", n)
	}
}

// TestScheduleTimerFollowsPlainWrites: the server's one timer follows what
// plain commands do to the sched sets (docs/verbs.md §4.22.4): SWAPDB moves
// a schedule to another database, which then fires there; FLUSHALL leaves
// nothing due and the timer does not spin on the stale entry.
func TestScheduleTimerFollowsPlainWrites(t *testing.T) {
	e := newEnv(t)
	c1 := e.client(2)
	// db1 sends one command on database 1 (SELECT in the same pipeline).
	db1 := func(args ...any) any {
		pipe := c1.Pipeline()
		pipe.Do(e.ctx, "SELECT", 1)
		cmd := pipe.Do(e.ctx, args...)
		if _, err := pipe.Exec(e.ctx); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return cmd.Val()
	}
	db1("EMQ.SCHEDULE", "q", "s", "EVERY", "1000", "p")
	e.ok("SWAPDB", "0", "1")
	e.step(1000)
	sameList(t, "pending in db 0", e.zmembers("emq:{q}:pending"), []string{verbs.OccurrenceID(1, t0+1000)})
	e.ok("FLUSHALL")
	calls := func() int64 {
		info := e.ok("INFO", "commandstats").(string)
		for _, l := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(l, "cmdstat_emq.schedule.fire:calls="); ok {
				n, _ := strconv.ParseInt(v[:strings.IndexByte(v, ',')], 10, 64)
				return n
			}
		}
		return 0
	}
	before := calls()
	for range 5 {
		e.step(1000)
	}
	if got := calls() - before; got > 1 {
		t.Fatalf("%d fire calls after FLUSHALL: the timer spins on a stale entry", got)
	}
	if n := e.ok("DBSIZE").(int64); n != 0 {
		t.Fatalf("%d keys after FLUSHALL", n)
	}
}

// TestScheduleNegativeInfinityScore: a hand-written ZADD emq:{z}:sched -inf
// ghost (and -1e19 in another database) once overflowed the timer's delay
// and FIRE read from -2^62, so every schedule of every database stopped
// (docs/verbs.md §4.22.4). Now the ghost is due at once, FIRE removes it,
// and queue q's EVERY schedule keeps firing on its slots.
func TestScheduleNegativeInfinityScore(t *testing.T) {
	e := newEnv(t)
	c1 := e.client(2)
	e.ok("EMQ.SCHEDULE", "q", "tick", "EVERY", "1000", "p")
	e.ok("ZADD", "emq:{z}:sched", "-inf", "ghost")
	pipe := c1.Pipeline()
	pipe.Do(e.ctx, "SELECT", 1)
	pipe.Do(e.ctx, "ZADD", "emq:{y}:sched", "-1e19", "ghost")
	if _, err := pipe.Exec(e.ctx); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		e.step(1000)
	}
	sameList(t, "pending", e.zmembers("emq:{q}:pending"), occurrences(1, t0, 1000, 1, 3))
	if got := e.zmembers("emq:{z}:sched"); len(got) != 0 {
		t.Fatalf("emq:{z}:sched still holds %v", got)
	}
	pipe = c1.Pipeline()
	pipe.Do(e.ctx, "SELECT", 1)
	card := pipe.Do(e.ctx, "ZCARD", "emq:{y}:sched")
	if _, err := pipe.Exec(e.ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := card.Int64(); n != 0 {
		t.Fatalf("emq:{y}:sched in db 1 still holds %d members", n)
	}
	// FIRE itself reads from -inf: a ghost added and fired in one
	// transaction (before the timer sees it) is removed by that call.
	pipe = c1.TxPipeline()
	pipe.Do(e.ctx, "ZADD", "emq:{x}:sched", "-inf", "ghost")
	fire := pipe.Do(e.ctx, "EMQ.SCHEDULE.FIRE", "x")
	left := pipe.Do(e.ctx, "ZCARD", "emq:{x}:sched")
	if _, err := pipe.Exec(e.ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := fire.Int64(); n != 0 {
		t.Fatalf("FIRE x enqueued %d", n)
	}
	if n, _ := left.Int64(); n != 0 {
		t.Fatalf("FIRE x left %d members", n)
	}
	e.step(1000)
	sameList(t, "pending", e.zmembers("emq:{q}:pending"), occurrences(1, t0, 1000, 1, 4))
}

// TestScheduleCronRefusedSpecs: a spec with no time within five years and
// @every below 1s or with a sub-millisecond part are refused and write
// nothing (docs/verbs.md §4.22.1, §4.22.2); @every 1500ms fires every
// 1500 ms.
func TestScheduleCronRefusedSpecs(t *testing.T) {
	e := newEnv(t)
	for spec, want := range map[string]string{
		"0 0 30 2 *":       "ERR invalid cron spec: it has no time within five years",
		"0 0 31 4 *":       "ERR invalid cron spec: it has no time within five years",
		"@every 1ms":       "ERR invalid cron spec: @every must be at least 1s",
		"@every 0s":        "ERR invalid cron spec: @every must be at least 1s",
		"@every -5s":       "ERR invalid cron spec: @every must be at least 1s",
		"@every 999ms":     "ERR invalid cron spec: @every must be at least 1s",
		"@every 1000500us": "ERR invalid cron spec: @every must be a whole number of milliseconds",
		"@every soon":      `ERR invalid cron spec: @every needs a duration such as 90s, 5m or 1h30m, not "soon"`,
	} {
		if got := e.refused("EMQ.SCHEDULE", "q", "s", "CRON", spec, "p"); got != want {
			t.Errorf("%q: %q, want %q", spec, got, want)
		}
	}
	if n := e.ok("DBSIZE").(int64); n != 0 {
		t.Fatalf("refusals wrote %d keys", n)
	}
	e.ok("EMQ.SCHEDULE", "q", "s", "CRON", "@every 1500ms", "p")
	if m := e.sched("q", "s"); m["next_ms"] != strconv.FormatInt(t0+1500, 10) {
		t.Fatalf("schedule %v", m)
	}
	for range 30 {
		e.step(100)
	}
	sameList(t, "pending", e.zmembers("emq:{q}:pending"), occurrences(1, t0, 1500, 1, 2))
	if m := e.sched("q", "s"); m["next_ms"] != strconv.FormatInt(t0+4500, 10) {
		t.Fatalf("schedule %v", m)
	}
	e.ok("EMQ.SCHEDULE", "q", "leap", "CRON", "0 0 29 2 *", "p")
}

// TestScheduleNegativeScoreWallClock: the same ghost on the wall clock,
// whose timer clamps a delay to ~292 years: before the fix the overflowed
// delay armed the one timer for that long and q never fired. Generous
// bound (30 s) for a loaded machine; the schedule's period is 1000 ms.
func TestScheduleNegativeScoreWallClock(t *testing.T) {
	srv, err := server.Start(server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	ctx := context.Background()
	t.Cleanup(func() {
		rdb.Close()
		srv.Close(ctx)
	})
	if err := rdb.Do(ctx, "EMQ.SCHEDULE", "q", "tick", "EVERY", "1000", "p").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Do(ctx, "ZADD", "emq:{z}:sched", "-inf", "ghost").Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, err := rdb.ZCard(ctx, "emq:{q}:pending").Result()
		if err != nil {
			t.Fatal(err)
		}
		ghost, _ := rdb.ZCard(ctx, "emq:{z}:sched").Result()
		if n >= 2 && ghost == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s: %d occurrences of q, %d ghosts left", n, ghost)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestScheduleEveryFloor: EVERY below 1000 ms is refused and writes
// nothing, a fresh schedule or an upsert (docs/verbs.md §4.22.1, "The
// floor"); a stored every_ms below the floor (an older emqd's hash) is not
// a bad row and keeps firing at its period.
func TestScheduleEveryFloor(t *testing.T) {
	e := newEnv(t)
	for _, iv := range []string{"1", "500", "999"} {
		if got := e.refused("EMQ.SCHEDULE", "q", "s", "EVERY", iv, "p"); got != "ERR interval_ms must be at least 1000" {
			t.Fatalf("EVERY %s: %q", iv, got)
		}
	}
	if n := e.ok("DBSIZE").(int64); n != 0 {
		t.Fatalf("refusals wrote %d keys", n)
	}
	e.ok("EMQ.SCHEDULE", "q", "s", "EVERY", "1000", "p")
	// The older emqd's schedule: every 100 ms from the first slot, t0+1000.
	e.ok("HSET", "emq:{q}:sched:s", "every_ms", "100", "anchor_ms", strconv.FormatInt(t0+900, 10))
	before := e.sched("q", "s")
	if got := e.refused("EMQ.SCHEDULE", "q", "s", "EVERY", "100", "p2"); got != "ERR interval_ms must be at least 1000" {
		t.Fatalf("upsert EVERY 100: %q", got)
	}
	if after := e.sched("q", "s"); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("a refused upsert changed the schedule:\n%v\n%v", before, after)
	}
	for range 12 {
		e.step(100)
	}
	// t0+1200: slots t0+1000, +1100, +1200.
	sameList(t, "pending", e.zmembers("emq:{q}:pending"), occurrences(1, t0+900, 100, 1, 3))
	if m := e.sched("q", "s"); m["fired"] != "3" || m["next_ms"] != strconv.FormatInt(t0+1300, 10) {
		t.Fatalf("schedule %v", m)
	}
}
