package emq_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/emqd/emqd/cluster"
	"github.com/emqd/emqd/cluster/clustertest"
	"github.com/emqd/emqd/emq"
)

// TestSchedules: the schedule API on emqd (its timer fires on the manual
// clock) in RESP3: define, read, list, pause, resume, delete, and the
// refusals.
func TestSchedules(t *testing.T) {
	e := newEnv(t)
	if err := e.in.Schedule(e.ctx, "q", "tick", emq.ScheduleSpec{Every: time.Second, Payload: []byte("p"), Limit: 5}); err != nil {
		t.Fatal(err)
	}
	if err := e.in.Schedule(e.ctx, "q", "nightly", emq.ScheduleSpec{Cron: "0 3 * * *", TZ: "Europe/Berlin", Payload: []byte("n"), OverlapSkip: true, Catchup: emq.CatchupNone}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		e.clk.Advance(1000)
		e.clk.Wait()
	}
	s, err := e.in.GetSchedule(e.ctx, "q", "tick")
	if err != nil || s.Name != "tick" || s.State != "active" || s.Fired != 3 || s.LastSlot.UnixMilli() != t0+3000 || s.Next.UnixMilli() != t0+4000 || s.Fields["limit"] != "5" {
		t.Fatalf("%+v %v", s, err)
	}
	if n, err := e.in.Counts(e.ctx, "q"); err != nil || n.Pending != 3 {
		t.Fatalf("%+v %v", n, err)
	}
	if n, err := e.in.FireSchedules(e.ctx, "q", nil); err != nil || n != 0 {
		t.Fatalf("fire after the server fired: %d %v", n, err)
	}
	list, err := e.in.ListSchedules(e.ctx, "q", nil)
	if err != nil || len(list) != 2 || list[0].Name != "tick" || list[1].Name != "nightly" || list[1].Fields["tz"] != "Europe/Berlin" {
		t.Fatalf("%+v %v", list, err)
	}
	if err := e.in.PauseSchedule(e.ctx, "q", "tick"); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(5000)
	e.clk.Wait()
	if err := e.in.ResumeSchedule(e.ctx, "q", "tick"); err != nil {
		t.Fatal(err)
	}
	e.clk.Wait()
	// Resumed at t0+8000, a slot of its series: it fires at once (the
	// first slot at or after now); 4000..7000 passed while paused.
	if s, _ := e.in.GetSchedule(e.ctx, "q", "tick"); s.Fired != 4 || s.LastSlot.UnixMilli() != t0+8000 || s.Next.UnixMilli() != t0+9000 {
		t.Fatalf("after resume %+v", s)
	}
	if ok, err := e.in.DeleteSchedule(e.ctx, "q", "tick"); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if _, err := e.in.GetSchedule(e.ctx, "q", "tick"); !errors.Is(err, emq.ErrNoSchedule) {
		t.Fatal(err)
	}
	if err := e.in.PauseSchedule(e.ctx, "q", "tick"); err == nil || err.Error() != "ERR no such schedule" {
		t.Fatal(err)
	}
	if err := e.in.Schedule(e.ctx, "q", "x", emq.ScheduleSpec{Cron: "61 * * * *"}); err == nil {
		t.Fatal("bad cron accepted")
	}
	if err := e.in.Schedule(e.ctx, "q", "x", emq.ScheduleSpec{Every: time.Second, Cron: "* * * * *"}); err == nil {
		t.Fatal("both accepted")
	}
}

// TestSchedulesFunctionsSweeper: on the Functions target nothing fires by
// itself; RunSweeper with Schedules fires the due slots with emqd's ids.
func TestSchedulesFunctionsSweeper(t *testing.T) {
	node := clustertest.StartLibraryNode(t, clustertest.NodeOptions{}, cluster.DebugClock())
	rdb := node.Client(3)
	c := emq.New(rdb, &emq.ClientOptions{Target: emq.Functions})
	ctx := context.Background()
	if err := rdb.Do(ctx, "FCALL", "emq_debug", 0, "CLOCK", "SET", t0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Inspector().Schedule(ctx, "fq", "tick", emq.ScheduleSpec{Every: time.Second, Payload: []byte("p"), Catchup: emq.CatchupAll}); err != nil {
		t.Fatal(err)
	}
	if err := c.Inspector().Schedule(ctx, "fq", "c", emq.ScheduleSpec{Cron: "* * * * *"}); err == nil {
		t.Fatal("the library accepted CRON")
	}
	rdb.Do(ctx, "FCALL", "emq_debug", 0, "CLOCK", "SET", t0+5000)
	if s, _ := c.Inspector().GetSchedule(ctx, "fq", "tick"); s.Fired != 0 {
		t.Fatalf("fired by itself: %+v", s)
	}
	swept := make(chan struct{}, 4)
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- c.RunSweeper(sctx, "fq", &emq.SweeperOptions{Interval: time.Hour, Schedules: true, Logger: quiet,
			OnSweep: func([]string, []string, error) { swept <- struct{}{} }})
	}()
	recv(t, swept, "the first sweep")
	// The fire follows the sweep in the same round; wait for its effect.
	deadline := time.Now().Add(within)
	for {
		s, err := c.Inspector().GetSchedule(ctx, "fq", "tick")
		if err == nil && s.Fired == 5 {
			if s.LastID == "" || s.Next.UnixMilli() != t0+6000 {
				t.Fatalf("%+v", s)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not fired: %+v %v", s, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n, _ := c.Inspector().Counts(ctx, "fq"); n.Pending != 5 {
		t.Fatalf("%+v", n)
	}
}

// TestScheduleEveryBelowOneSecond: Every below 1s is the server's refusal
// (docs/verbs.md §4.22.1, "The floor"), and nothing is created.
func TestScheduleEveryBelowOneSecond(t *testing.T) {
	e := newEnv(t)
	err := e.in.Schedule(e.ctx, "q", "fast", emq.ScheduleSpec{Every: 999 * time.Millisecond, Payload: []byte("p")})
	if err == nil || err.Error() != "ERR interval_ms must be at least 1000" {
		t.Fatalf("Every 999ms: %v", err)
	}
	if _, err := e.in.GetSchedule(e.ctx, "q", "fast"); !errors.Is(err, emq.ErrNoSchedule) {
		t.Fatalf("after the refusal: %v", err)
	}
	if err := e.in.Schedule(e.ctx, "q", "fast", emq.ScheduleSpec{Every: time.Second, Payload: []byte("p")}); err != nil {
		t.Fatal(err)
	}
}

// TestScheduleStateTyped: ScheduleInfo.State is a ScheduleState, each of
// the server's three states arrives as its constant, and a state the
// library does not know (a newer server's, here written by hand) arrives
// as sent, with Known false: never mapped to a known one.
func TestScheduleStateTyped(t *testing.T) {
	e := newEnv(t)
	state := func(name string) emq.ScheduleState {
		t.Helper()
		s, err := e.in.GetSchedule(e.ctx, "q", name)
		if err != nil {
			t.Fatal(err)
		}
		return s.State
	}
	if err := e.in.Schedule(e.ctx, "q", "a", emq.ScheduleSpec{Every: time.Second, Payload: []byte("p"), Limit: 1}); err != nil {
		t.Fatal(err)
	}
	if err := e.in.Schedule(e.ctx, "q", "b", emq.ScheduleSpec{Every: time.Second, Payload: []byte("p")}); err != nil {
		t.Fatal(err)
	}
	if got := state("a"); got != emq.ScheduleActive || !got.Known() {
		t.Fatalf("a: %q", got)
	}
	if err := e.in.PauseSchedule(e.ctx, "q", "b"); err != nil {
		t.Fatal(err)
	}
	// a fires its one slot and the next one makes it done (LIMIT 1).
	for range 2 {
		e.clk.Advance(1000)
		e.clk.Wait()
	}
	if got := state("a"); got != emq.ScheduleDone || !got.Known() {
		t.Fatalf("a after its limit: %q", got)
	}
	if got := state("b"); got != emq.SchedulePaused || !got.Known() {
		t.Fatalf("b paused: %q", got)
	}
	if err := e.rdb.HSet(e.ctx, "emq:{q}:sched:b", "state", "retired").Err(); err != nil {
		t.Fatal(err)
	}
	if got := state("b"); got != "retired" || got.Known() {
		t.Fatalf("an unknown state: %q (Known %v)", got, got.Known())
	}
	list, err := e.in.ListSchedules(e.ctx, "q", nil)
	if err != nil || len(list) != 2 {
		t.Fatalf("%+v %v", list, err)
	}
	for _, s := range list {
		if want := map[string]emq.ScheduleState{"a": emq.ScheduleDone, "b": "retired"}[s.Name]; s.State != want {
			t.Errorf("listed %s: %q, want %q", s.Name, s.State, want)
		}
	}
	if emq.ScheduleState("").Known() {
		t.Fatal(`"" is known`)
	}
}
