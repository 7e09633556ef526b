package conformance

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/emqd/emqd/internal/verbs"
	"github.com/redis/go-redis/v9"
)

func encodeID(n int64) string { return verbs.EncodeID(n) }

// incID is the id after id.
func incID(id string) string {
	n, _ := verbs.DecodeID([]byte(id))
	return verbs.EncodeID(n + 1)
}

// Difference is one way the library target differs from emqd, asserted by
// the scenario named in Scenario and listed in docs/cluster.md under its
// Topic.
type Difference struct {
	Topic    string
	Emqd     string
	Library  string
	Scenario string
}

// Differences are every known difference between emqd's verbs and the
// library's functions (docs/cluster.md, "Differences").
var Differences = []Difference{
	{"blocking claims", "EMQ.CLAIM ... BLOCK block_ms waits for a job",
		"BLOCK is validated, then the call answers at once (an empty array), as emqd does inside MULTI; the Go client polls",
		"BlockAnswersAtOnce"},
	{"minted ids across queues", "one {emq}:mint for the server: minted ids increase across all queues",
		"one emq:{q}:mint per queue: minted ids increase within each queue", "MintedIDs"},
	{"mint key in texts", "EMQKIND {emq}:mint last is not a minted job id",
		"EMQKIND emq:{q}:mint last is not a minted job id", "Differential"},
	{"map entry order", "EMQ.COUNTS in reply order, EMQ.JOB in the row's field order",
		"the same entries in the order of the Lua table (RESP3 map or RESP2 flat array alike)", "RepliesAsMaps"},
	{"unknown verbs", "EMQ.REAP: ERR unknown command 'EMQ.REAP', with args beginning with: ...",
		"FCALL emq_reap: ERR Function not found", "ArgumentsBeforeReads"},
	{"integers above 2^53 in replies", "exact (int64)",
		"Lua numbers are doubles: failures in EMQ.CLAIM's reply, f in EMQ.FAIL's, and COUNTS values lose precision above 2^53 (counters themselves are judged and written exactly)",
		"LargeCounters"},
	{"the clock in tests", "clock.Manual, or EMQ.DEBUG CLOCK ADVANCE with enable-debug-command yes",
		"the node's TIME; only the test variant (cluster.DebugClock) has emq_debug CLOCK ADVANCE/SET", "DebugRefused"},
	{"non-integral score digits", "a hand-written non-integral score prints with Grisu2's digits, as Valkey's d2string (1771878222317.96875: 1771878222317.9687)",
		"the shortest digits that read back, which differ from Grisu2's for about 0.14% of doubles (1771878222317.9688); same layout", "RepliesAsMaps"},
	{"bad-row accounting", "logged once per key per minute and counted in INFO (emq_bad_row_refusals)",
		"counted only in the server's errorstats (errorstat_WRONGTYPE, errorstat_EMQLANE, ...)", "-"},
	{"events", "PUBLISH on emq:{q}:events: SUBSCRIBE or PSUBSCRIBE; the message's third word is the database",
		"SPUBLISH on emq:{q}:events (the queue's shard only): SSUBSCRIBE; the third word is always 0 (a cluster has one database)",
		"Events"},
	{"schedule firing", "the server fires due slots itself, on one timer at the earliest next fire time (EMQ.SCHEDULE.FIRE run as a command)",
		"a function cannot arm a timer: due slots fire when emq_schedule_fire is called (the emq library's sweeper or a worker calls it), with the same ids and end state", "Schedules"},
	{"cron schedules", "EMQ.SCHEDULE ... CRON spec [TZ zone] (robfig/cron/v3's parser, the IANA zones, the DST rules)",
		"refused: ERR CRON schedules are not available in the cluster library (no cron parser or zone database in the function); EVERY only", "Schedules"},
	{"waiting", "EMQ.WAIT parks until the job is completed or dead (nil array at the timeout; inside MULTI it answers at once)",
		"emq_wait answers at once: the finished job's map, EMQSTALE job gone, or nil for a job not finished (emqd's answer inside MULTI); the Go client polls", "Wait"},
	{"flows across queues", "EMQ.FLOW takes children in any queue of the database",
		"every job of a flow must be in the parent's queue (ERR in a cluster every job of a flow must be in the parent's queue ...; nothing written): another queue's keys are in another slot", "Flows"},
	{"lanes", "EMQ.LANE's MAX_ACTIVE, RATE count and per_ms kept exactly up to 2^63-1; a blocked claimer wakes when a rate token arrives",
		"the same lanes, selection, limits and keys; those settings above 2^53-1 are kept as 2^53-1 (Lua numbers are doubles); no claimer blocks, so none waits for a token (BLOCK answers at once)", "Lanes"},
	{"transition counters", "INFO # EMQ and the metrics endpoint count every transition per queue",
		"none (the library keeps only the queue's own metrics:completed and metrics:failed)", "-"},
}

// Scenario is one conformance scenario.
type Scenario struct {
	Name string
	Run  func(t *testing.T, tg Target)
}

// Scenarios are the suite, run in this order.
var Scenarios = []Scenario{
	{"CapIsOnFailuresNotAttempts", capIsOnFailures},
	{"RequeueThreeWritesNoCounter", requeueThreeWrites},
	{"CountersTable", countersTable},
	{"StalledCheck", stalledCheck},
	{"ThreeRecoveries", threeRecoveries},
	{"RestartExemption", restartExemption},
	{"Fencing", fencing},
	{"ArgumentsBeforeReads", argumentsBeforeReads},
	{"MultiWatch", multiWatch},
	{"RepliesAsMaps", repliesAsMaps},
	{"MintedIDs", mintedIDs},
	{"ClaimOrderAndPromotion", claimOrderAndPromotion},
	{"RemovePauseResume", removePauseResume},
	{"ReprocessAndRemove", reprocessAndRemove},
	{"Saturation", saturation},
	{"LargeCounters", largeCounters},
	{"BlockAnswersAtOnce", blockAnswersAtOnce},
	{"DebugRefused", debugRefused},
	{"List", list},
	{"SweepGuard", sweepGuard},
	{"Events", eventsScenario},
	{"Retention", retention},
	{"FailErrorCappedAtLimit", failErrorCappedAtLimit},
	{"EnqueueMany", enqueueMany},
	{"Schedules", schedules},
	{"CompleteAndClaimNext", completeAndClaimNext},
	{"QueueLatency", queueLatency},
	{"Wait", waitScenario},
	{"BulkActions", bulkActions},
	{"Priorities", priorities},
	{"Flows", flows},
	{"Lanes", lanesScenario},
}

// Run runs every scenario as a subtest, each on a new target.
func Run(t *testing.T, newTarget func(testing.TB) Target) {
	for _, s := range Scenarios {
		t.Run(s.Name, func(t *testing.T) { s.Run(t, newTarget(t)) })
	}
}

const (
	idA = "JOB00000000001"
	idB = "JOB00000000002"
	idC = "JOB00000000003"
	idD = "JOB00000000004"

	wrongType = "WRONGTYPE Operation against a key holding the wrong kind of value"
	oldRun    = "0000000000000000000000000000000000000000"
)

// The cap is on failures, not attempts (docs/verbs.md §4.6).
func capIsOnFailures(t *testing.T, tg Target) {
	e := newEnv(t, tg)
	e.ok("EMQ.ENQUEUE", "q", idA, "p")
	// claim, requeue, claim: token 2, no failure on record.
	_, tok, _ := e.claim("q", 1000)
	e.ok("EMQ.REQUEUE", "q", idA, tok)
	_, tok, f := e.claim("q", 1000)
	if tok != "2" || f != 0 {
		t.Fatalf("token %s failures %d", tok, f)
	}
	if got := e.ok("EMQ.FAIL", "q", idA, "2", 2, 0, "first"); !reflect.DeepEqual(got, []any{"scheduled", int64(1)}) {
		t.Fatalf("token 2, max 2, no failures: %v, want [scheduled 1]", got)
	}
	if e.field("q", idA, "attempts") != "2" || e.field("q", idA, "failures") != "1" {
		t.Fatalf("row %s", e.row("q", idA))
	}
	// A row with one failure dies at the second.
	_, tok, f = e.claim("q", 1000) // CLAIM promotes the due retry
	if tok != "3" || f != 1 {
		t.Fatalf("token %s failures %d", tok, f)
	}
	if got := e.ok("EMQ.FAIL", "q", idA, tok, 2, 0, "second"); !reflect.DeepEqual(got, []any{"dead", int64(2)}) {
		t.Fatalf("failures 1, max 2: %v, want [dead 2]", got)
	}
	want := rowOf("state=dead", "attempts=3", "payload=p", "lease_epoch="+tg.RunID(), "last_error=second", "failures=2",
		"enqueued_at=1700000000000", "claimed_at=1700000000000", "finished_at=1700000000000")
	if e.row("q", idA) != want {
		t.Fatalf("dead row %s, want %s", e.row("q", idA), want)
	}
	if got := e.zmembers("emq:{q}:dead"); !reflect.DeepEqual(got, []string{idA}) {
		t.Fatalf("dead set %v", got)
	}
	// max_attempts 1 dies at the first FAIL.
	e.ok("EMQ.ENQUEUE", "q", idB, "p")
	_, tok, _ = e.claim("q", 1000)
	if got := e.ok("EMQ.FAIL", "q", idB, tok, 1, 0, "x"); !reflect.DeepEqual(got, []any{"dead", int64(1)}) {
		t.Fatalf("max_attempts 1: %v", got)
	}
	if got := e.ok("HGET", "emq:{q}:metrics:failed", "count"); got != "2" {
		t.Fatalf("metrics:failed %v", got)
	}
}

// EMQ.REQUEUE writes exactly its three writes and no counter.
func requeueThreeWrites(t *testing.T, tg Target) {
	e := newEnv(t, tg)
	e.ok("EMQ.ENQUEUE", "q", idA, "p")
	_, tok, _ := e.claim("q", 1000)
	before := e.keyspace(isMintKey)
	d0 := e.dirty()
	e.ok("EMQ.REQUEUE", "q", idA, tok)
	after := e.keyspace(isMintKey)
	// ZREM active (the set empties and goes), HSET state, ZADD pending.
	if d := e.dirty() - d0; d != 3 {
		t.Errorf("REQUEUE made %d changes, want 3", d)
	}
	want := map[string]string{}
	for k, v := range before {
		want[k] = v
	}
	delete(want, "emq:{q}:active")
	want["emq:{q}:job:"+idA] = strings.Replace(before["emq:{q}:job:"+idA], `"state"="active"`, `"state"="pending"`, 1)
	want["emq:{q}:pending"] = `zset: "` + idA + `"@0`
	if !reflect.DeepEqual(after, want) {
		t.Fatalf("after REQUEUE:\n%v\nwant\n%v", after, want)
	}
}

// The counters table (docs/verbs.md §3): the row after each verb.
func countersTable(t *testing.T, tg Target) {
	e := newEnv(t, tg)
	run := tg.RunID()
	counters := func() string {
		return "attempts=" + e.field("q", idA, "attempts") + " failures=" + e.field("q", idA, "failures") +
			" stalled=" + e.field("q", idA, "stalled") + " lease_epoch=" + e.field("q", idA, "lease_epoch")
	}
	e.ok("EMQ.ENQUEUE", "q", idA, "p")
	steps := []struct {
		name string
		do   func()
		want string
	}{
		{"enqueue", func() {}, "attempts=0 failures=<absent> stalled=<absent> lease_epoch=<absent>"},
		{"claim", func() { e.claim("q", 1000) }, "attempts=1 failures=<absent> stalled=<absent> lease_epoch=" + run},
		{"progress", func() { e.ok("EMQ.PROGRESS", "q", idA, "1", "half") }, "attempts=1 failures=<absent> stalled=<absent> lease_epoch=" + run},
		{"fail", func() { e.ok("EMQ.FAIL", "q", idA, "1", 5, 0, "e") }, "attempts=1 failures=1 stalled=<absent> lease_epoch=" + run},
		{"promote", func() { e.ok("EMQ.PROMOTE", "q") }, "attempts=1 failures=1 stalled=<absent> lease_epoch=" + run},
		{"claim", func() { e.claim("q", 1000) }, "attempts=2 failures=1 stalled=<absent> lease_epoch=" + run},
		{"hand-stamp an old epoch", func() { e.ok("HSET", "emq:{q}:job:"+idA, "lease_epoch", "old") }, "attempts=2 failures=1 stalled=<absent> lease_epoch=old"},
		{"extend", func() { e.ok("EMQ.EXTEND", "q", idA, "2", 1000) }, "attempts=2 failures=1 stalled=<absent> lease_epoch=" + run},
		{"delay", func() { e.ok("EMQ.DELAY", "q", idA, "2", "IN", 0) }, "attempts=2 failures=1 stalled=<absent> lease_epoch=" + run},
		{"claim", func() { e.claim("q", 1000) }, "attempts=3 failures=1 stalled=<absent> lease_epoch=" + run},
		{"requeue", func() { e.ok("EMQ.REQUEUE", "q", idA, "3") }, "attempts=3 failures=1 stalled=<absent> lease_epoch=" + run},
		{"claim", func() { e.claim("q", 1000) }, "attempts=4 failures=1 stalled=<absent> lease_epoch=" + run},
		{"stalled.check (counted)", func() { tg.Advance(1000); e.ok("EMQ.STALLED.CHECK", "q", 5) }, "attempts=4 failures=1 stalled=1 lease_epoch=" + run},
		{"claim", func() { e.claim("q", 1000) }, "attempts=5 failures=1 stalled=1 lease_epoch=" + run},
		{"fail to dead", func() { e.ok("EMQ.FAIL", "q", idA, "5", 2, 0, "e") }, "attempts=5 failures=2 stalled=1 lease_epoch=" + run},
		{"reprocess", func() { e.ok("EMQ.REPROCESS", "q", idA) }, "attempts=5 failures=2 stalled=1 lease_epoch=" + run},
		{"claim", func() { e.claim("q", 1000) }, "attempts=6 failures=2 stalled=1 lease_epoch=" + run},
		{"fail to dead", func() { e.ok("EMQ.FAIL", "q", idA, "6", 1, 0, "e") }, "attempts=6 failures=3 stalled=1 lease_epoch=" + run},
		{"reprocess reset", func() { e.ok("EMQ.REPROCESS", "q", idA, "RESET") }, "attempts=6 failures=<absent> stalled=<absent> lease_epoch=" + run},
	}
	for _, s := range steps {
		s.do()
		if got := counters(); got != s.want {
			t.Fatalf("after %s: %s, want %s", s.name, got, s.want)
		}
	}
	e.claim("q", 1000)
	e.ok("EMQ.COMPLETE", "q", idA, "7")
	if n, _ := e.do("EXISTS", "emq:{q}:job:"+idA); n != int64(0) {
		t.Fatal("complete kept the row")
	}
	want := map[string]any{"pending": int64(0), "active": int64(0), "scheduled": int64(0), "dead": int64(0), "completed": int64(1), "failed": int64(2), "retained": int64(0), "latency_ms": int64(0), "waiting": int64(0)}
	if got := asMap(t, e.ok("EMQ.COUNTS", "q")); !reflect.DeepEqual(got, want) {
		t.Fatalf("counts %v", got)
	}
}

// EMQ.STALLED.CHECK: ghosts, whole-call refusals that write nothing, the
// exemption, counted expiries, the limit.
func stalledCheck(t *testing.T, tg Target) {
	e := newEnv(t, tg)
	run := tg.RunID()
	now := tg.Now()

	// Ghost: removed from active, listed nowhere, no row created.
	e.ok("ZADD", "emq:{q}:active", now-5, idC)
	if got := e.ok("EMQ.STALLED.CHECK", "q"); !reflect.DeepEqual(got, []any{[]any{}, []any{}}) {
		t.Fatalf("ghost: %v", got)
	}
	if n, _ := e.do("EXISTS", "emq:{q}:active", "emq:{q}:job:"+idC, "emq:{q}:dead", "emq:{q}:pending"); n != int64(0) {
		t.Fatal("ghost left something")
	}

	// Refusals of the whole sweep, nothing written.
	for _, c := range []struct {
		name  string
		setup func()
		want  string
	}{
		{"lane row", func() { e.expired("q", idB, run, "group", "g") }, "EMQLANE lane rows are not served natively"},
		{"row not a hash", func() { e.ok("SET", "emq:{q}:job:"+idB, "x"); e.ok("ZADD", "emq:{q}:active", now-1, idB) }, wrongType},
		{"stalled not an integer", func() { e.expired("q", idB, run, "stalled", "abc") }, "ERR hash value is not an integer"},
		{"stalled would overflow", func() { e.expired("q", idB, run, "stalled", "9223372036854775807") }, "ERR increment or decrement would overflow"},
		{"failed count would overflow", func() {
			e.expired("q", idB, run, "stalled", "2")
			e.ok("HSET", "emq:{q}:metrics:failed", "count", "9223372036854775807")
		}, "ERR increment or decrement would overflow"},
		{"dead set of another type", func() { e.expired("q", idB, run, "stalled", "2"); e.ok("SET", "emq:{q}:dead", "x") }, wrongType},
	} {
		e.ok("FLUSHALL")
		e.expired("q", idA, run)                   // a counted expiry before the bad one
		e.ok("ZADD", "emq:{q}:active", now-9, idC) // and a ghost
		c.setup()
		before, d := e.digest(), e.dirty()
		if got := e.refused("EMQ.STALLED.CHECK", "q", 3); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
		if e.digest() != before || e.dirty() != d {
			t.Errorf("%s: the refused sweep wrote", c.name)
		}
	}

	// Another run's lease: exempt, uncounted, recovered; even with a bad stalled.
	e.ok("FLUSHALL")
	e.expired("q", idA, oldRun, "stalled", "junk")
	e.expired("q", idB, "")
	if got := e.ok("EMQ.STALLED.CHECK", "q"); !reflect.DeepEqual(got, []any{[]any{idA, idB}, []any{}}) {
		t.Fatalf("exempt: %v", got)
	}
	if e.field("q", idA, "stalled") != "junk" || e.field("q", idB, "stalled") != "<absent>" || e.field("q", idB, "state") != "pending" {
		t.Fatalf("exempt rows %s / %s", e.row("q", idA), e.row("q", idB))
	}
	if got := e.zmembers("emq:{q}:pending"); !reflect.DeepEqual(got, []string{idA, idB}) {
		t.Fatalf("pending %v", got)
	}

	// Counted: below max_stalled recovered with stalled s, at max dead.
	e.ok("FLUSHALL")
	e.ok("EMQ.ENQUEUE", "q", idA, "p")
	for s := 1; s <= 3; s++ {
		e.claim("q", 100)
		tg.Advance(100)
		got := e.ok("EMQ.STALLED.CHECK", "q", 3)
		if s < 3 {
			if !reflect.DeepEqual(got, []any{[]any{idA}, []any{}}) || e.field("q", idA, "stalled") != string(rune('0'+s)) || e.field("q", idA, "state") != "pending" {
				t.Fatalf("counted expiry %d: %v %s", s, got, e.row("q", idA))
			}
			continue
		}
		if !reflect.DeepEqual(got, []any{[]any{}, []any{idA}}) {
			t.Fatalf("at max_stalled: %v", got)
		}
		if e.field("q", idA, "state") != "dead" || e.field("q", idA, "last_error") != "stalled" || e.field("q", idA, "stalled") != "3" {
			t.Fatalf("dead row %s", e.row("q", idA))
		}
	}

	// max_stalled and limit must be positive integers; limit caps the sweep.
	for _, c := range []struct {
		args []any
		want string
	}{
		{[]any{"EMQ.STALLED.CHECK", "q", 0}, "ERR max_stalled must be a positive integer"},
		{[]any{"EMQ.STALLED.CHECK", "q", -1}, "ERR max_stalled must be a positive integer"},
		{[]any{"EMQ.STALLED.CHECK", "q", 1, 0}, "ERR limit must be a positive integer"},
		{[]any{"EMQ.STALLED.CHECK", "q", 1, 1, 1}, "ERR syntax error"},
		{[]any{"EMQ.STALLED.CHECK", "q", "01"}, "ERR value is not an integer or out of range"},
	} {
		if got := e.refused(c.args...); got != c.want {
			t.Errorf("%v: %q, want %q", c.args, got, c.want)
		}
	}
	e.ok("FLUSHALL")
	e.expired("q", idA, run)
	e.expired("q", idB, run)
	if got := e.ok("EMQ.STALLED.CHECK", "q", 2, 1); !reflect.DeepEqual(got, []any{[]any{idA}, []any{}}) {
		t.Fatalf("limit 1: %v", got)
	}
}

// The table of docs/verbs.md §5: one expired lease, the native
// exit. A lease from the previous process is exempt; from this one, counted.
func threeRecoveries(t *testing.T, tg Target) {
	e := newEnv(t, tg)
	e.expired("q", idA, oldRun)
	if got := e.ok("EMQ.STALLED.CHECK", "q", 1); !reflect.DeepEqual(got, []any{[]any{idA}, []any{}}) {
		t.Fatalf("previous run: %v", got)
	}
	if want := rowOf("state=pending", "attempts=1", "payload=p", "lease_epoch="+oldRun); e.row("q", idA) != want {
		t.Fatalf("exempt row %s", e.row("q", idA))
	}
	e.ok("FLUSHALL")
	e.expired("q", idA, tg.RunID())
	if got := e.ok("EMQ.STALLED.CHECK", "q", 1); !reflect.DeepEqual(got, []any{[]any{}, []any{idA}}) {
		t.Fatalf("this run: %v", got)
	}
	if want := rowOf("state=dead", "attempts=1", "payload=p", "lease_epoch="+tg.RunID(), "stalled=1", "last_error=stalled", "finished_at=1700000000000"); e.row("q", idA) != want {
		t.Fatalf("dead row %s", e.row("q", idA))
	}
	if !reflect.DeepEqual(e.zmembers("emq:{q}:dead"), []string{idA}) || e.ok("HGET", "emq:{q}:metrics:failed", "count") != "1" {
		t.Fatal("dead set or metric")
	}
}

// The restart exemption through a real restart: a lease granted before the
// server restarted carries the old run_id and is recovered uncounted; a
// lease granted after it is counted. A lease extended after the restart
// belongs to the new run.
func restartExemption(t *testing.T, tg Target) {
	e := newEnv(t, tg)
	for _, id := range []string{idA, idB, idC} {
		e.ok("EMQ.ENQUEUE", "q", id, "p-"+id)
	}
	before := tg.RunID()
	for range 3 {
		e.claim("q", 1000)
	}
	tg.Restart()
	after := tg.RunID()
	if after == before || len(after) != 40 {
		t.Fatalf("run_id %q -> %q", before, after)
	}
	if e.field("q", idA, "lease_epoch") != before {
		t.Fatalf("the restart lost the lease: %s", e.row("q", idA))
	}
	// idC's holder heartbeats after the restart: its lease is the new run's.
	e.ok("EMQ.EXTEND", "q", idC, "1", 500)
	if e.field("q", idC, "lease_epoch") != after {
		t.Fatalf("EXTEND after the restart: %s", e.row("q", idC))
	}
	tg.Advance(1000)
	got := e.ok("EMQ.STALLED.CHECK", "q", 1)
	if !reflect.DeepEqual(got, []any{[]any{idA, idB}, []any{idC}}) {
		t.Fatalf("after the restart: %v, want [[%s %s] [%s]]", got, idA, idB, idC)
	}
	for _, id := range []string{idA, idB} {
		if want := rowOf("state=pending", "attempts=1", "payload=p-"+id, "lease_epoch="+before, "enqueued_at=1700000000000", "claimed_at=1700000000000"); e.row("q", id) != want {
			t.Fatalf("exempt %s: %s", id, e.row("q", id))
		}
	}
	if e.field("q", idC, "stalled") != "1" || e.field("q", idC, "state") != "dead" {
		t.Fatalf("counted %s", e.row("q", idC))
	}
	// The recovered jobs are claimed again with the next token.
	if id, tok, _ := e.claim("q", 1000); id != idA || tok != "2" {
		t.Fatalf("re-claim %s %s", id, tok)
	}
}

// A late holder is refused by all six token verbs; a holder whose lease
// deadline passed but that no sweep recovered is still served.
func fencing(t *testing.T, tg Target) {
	e := newEnv(t, tg)
	e.ok("EMQ.ENQUEUE", "q", idA, "p")
	_, tok1, _ := e.claim("q", 100)
	tg.Advance(100)
	if got := e.ok("EMQ.STALLED.CHECK", "q", 5); !reflect.DeepEqual(got, []any{[]any{idA}, []any{}}) {
		t.Fatal(got)
	}
	if got := e.refused("EMQ.COMPLETE", "q", idA, tok1); got != "EMQSTALE lease lost" {
		t.Fatalf("after sweep: %q", got)
	}
	_, tok2, _ := e.claim("q", 100)
	if tok1 != "1" || tok2 != "2" {
		t.Fatal(tok1, tok2)
	}
	before := e.digest()
	for _, c := range []struct {
		verb string
		args []any
	}{
		{"complete", []any{"EMQ.COMPLETE", "q", idA, tok1}},
		{"fail", []any{"EMQ.FAIL", "q", idA, tok1, 3, 0, "late"}},
		{"requeue", []any{"EMQ.REQUEUE", "q", idA, tok1}},
		{"extend", []any{"EMQ.EXTEND", "q", idA, tok1, 1000}},
		{"delay", []any{"EMQ.DELAY", "q", idA, tok1, "IN", 10}},
		{"progress", []any{"EMQ.PROGRESS", "q", idA, tok1, "x"}},
	} {
		if got := e.refused(c.args...); got != "EMQSTALE "+c.verb+" token mismatch" {
			t.Errorf("%s with the late token: %q", c.verb, got)
		}
	}
	if got := e.refused("EMQ.COMPLETE", "q", idA, "02"); got != "EMQSTALE complete token mismatch" {
		t.Errorf("bytes compare: %q", got)
	}
	// The guard's order: gone, mismatch, lane, dead, lease lost.
	e.ok("HSET", "emq:{q}:job:"+idB, "state", "dead", "attempts", "1", "group", "g")
	for _, c := range []struct {
		args []any
		want string
	}{
		{[]any{"EMQ.COMPLETE", "q", idC, "1"}, "EMQSTALE job gone"},
		{[]any{"EMQ.COMPLETE", "q", idB, "2"}, "EMQSTALE complete token mismatch"},
		{[]any{"EMQ.COMPLETE", "q", idB, "1"}, "EMQLANE lane rows are not served natively"},
	} {
		if got := e.refused(c.args...); got != c.want {
			t.Errorf("%v: %q, want %q", c.args, got, c.want)
		}
	}
	e.ok("HDEL", "emq:{q}:job:"+idB, "group")
	if got := e.refused("EMQ.FAIL", "q", idB, "1", 1, 0, "e"); got != "EMQSTATE job is dead" {
		t.Errorf("dead: %q", got)
	}
	e.ok("HSET", "emq:{q}:job:"+idB, "state", "active")
	if got := e.refused("EMQ.EXTEND", "q", idB, "1", 10); got != "EMQSTALE lease lost" {
		t.Errorf("not in active: %q", got)
	}
	e.ok("DEL", "emq:{q}:job:"+idB)
	if e.digest() != before {
		t.Fatal("a refused late holder wrote")
	}
	// The current holder's deadline passes; nothing swept: still served.
	tg.Advance(5000)
	e.ok("EMQ.PROGRESS", "q", idA, tok2, "90%")
	e.ok("EMQ.EXTEND", "q", idA, tok2, 100)
	tg.Advance(5000)
	if got := e.ok("EMQ.COMPLETE", "q", idA, tok2); got != int64(1) {
		t.Fatal(got)
	}
}

// Arguments are validated before any key is read (docs/verbs.md §2.1, §2.8).
func argumentsBeforeReads(t *testing.T, tg Target) {
	e := newEnv(t, tg)
	for _, k := range []string{"pending", "active", "schedule", "dead", "meta", "metrics:failed", "job:" + idA} {
		e.ok("SET", "emq:{q}:"+k, "x")
	}
	d := e.dirty()
	for _, c := range []struct {
		args []any
		want string
	}{
		{[]any{"EMQ.CLAIM", "q", "0"}, "ERR lease_ms must be a positive integer"},
		{[]any{"EMQ.CLAIM", "q", "1", "COUNT", "x"}, "ERR value is not an integer or out of range"},
		{[]any{"EMQ.CLAIM", "q", "1", "COUNT", "0"}, "ERR count must be a positive integer"},
		{[]any{"EMQ.CLAIM", "q", "1", "BLOCK", "-1"}, "ERR block_ms must be a non-negative integer"},
		{[]any{"EMQ.CLAIM", "q", "1", "COUNT", "1", "COUNT", "1"}, "ERR syntax error"},
		{[]any{"EMQ.CLAIM", "q", "1", "COUNT"}, "ERR syntax error"},
		{[]any{"EMQ.FAIL", "q", idA, "1", "0", "0", "e"}, "ERR max_attempts must be a positive integer"},
		{[]any{"EMQ.FAIL", "q", idA, "1", "1", "-5", "e"}, "ERR delay_ms must be a non-negative integer"},
		{[]any{"EMQ.EXTEND", "q", idA, "1", "0"}, "ERR lease_ms must be a positive integer"},
		{[]any{"EMQ.DELAY", "q", idA, "1", "SOON", "5"}, "ERR syntax error"},
		{[]any{"EMQ.DELAY", "q", idA, "1", "at", "-5"}, "ERR run_at_ms must be a non-negative integer"},
		{[]any{"EMQ.ENQUEUE", "q", "bad", "p", "DELAY", "5", "AT", "5"}, "ERR syntax error"},
		{[]any{"EMQ.ENQUEUE", "q", "bad", "p", "DELAY", "+5"}, "ERR value is not an integer or out of range"},
		{[]any{"EMQ.ENQUEUE", "q", "bad", "p"}, "EMQKIND job id must be JOB followed by 11 characters from 0-9A-Za-z"},
		{[]any{"EMQ.ENQUEUE", "no good", "bad", "p"}, "ERR invalid queue name"},
		{[]any{"EMQ.ENQUEUE", "emq", idA, "p"}, "ERR invalid queue name"},
		{[]any{"EMQ.ENQUEUE", strings.Repeat("q", 129), idA, "p"}, "ERR invalid queue name"},
		{[]any{"EMQ.STALLED.CHECK", "q", "1", "-2"}, "ERR limit must be a positive integer"},
		{[]any{"EMQ.PROMOTE", "q", "1", "2"}, "ERR syntax error"},
		{[]any{"EMQ.REPROCESS", "q", idA, "NOW"}, "ERR syntax error"},
		{[]any{"emq.claim", "q"}, "ERR wrong number of arguments for 'emq.claim' command"},
		{[]any{"EMQ.COMPLETE", "q", idA}, "ERR wrong number of arguments for 'emq.complete' command"},
		{[]any{"EMQ.FAIL", "q", idA, "1", "1", "1"}, "ERR wrong number of arguments for 'emq.fail' command"},
		{[]any{"EMQ.COUNTS", "q", "x"}, "ERR wrong number of arguments for 'emq.counts' command"},
		{[]any{"EMQ.CLAIM", "q", "1"}, wrongType},
		{[]any{"EMQ.COMPLETE", "q", idA, "1"}, wrongType},
		{[]any{"EMQ.COUNTS", "q"}, wrongType},
		{[]any{"EMQ.PAUSE", "q"}, wrongType},
		{[]any{"EMQ.JOB", "q", idA}, wrongType},
	} {
		if got := e.refused(c.args...); got != c.want {
			t.Errorf("%v: %q, want %q", c.args, got, c.want)
		}
	}
	reap := "ERR unknown command 'EMQ.REAP', with args beginning with: 'q' "
	if !tg.Native() {
		reap = "ERR Function not found" // Differences: "unknown verbs"
	}
	if got := e.refused("EMQ.REAP", "q"); got != reap {
		t.Errorf("EMQ.REAP: %q, want %q", got, reap)
	}
	if e.dirty() != d {
		t.Fatal("a refusal wrote")
	}
}

// Verbs inside MULTI/EXEC (BLOCK does not block); a verb's writes invalidate
// WATCH on the keys it touches, a refused verb's do not.
func multiWatch(t *testing.T, tg Target) {
	e := newEnv(t, tg)
	cmds, err := e.rdb.TxPipelined(e.ctx, func(p redis.Pipeliner) error {
		p.Do(e.ctx, "EMQ.CLAIM", "q", 1000, "BLOCK", 0)
		p.Do(e.ctx, "EMQ.ENQUEUE", "q", idA, "in-multi")
		p.Do(e.ctx, "EMQ.CLAIM", "q", 1000, "BLOCK", 0)
		p.Do(e.ctx, "EMQ.COMPLETE", "q", idA, "9")
		return nil
	})
	if err == nil {
		t.Fatal("EXEC hid the refusal")
	}
	if tg.Native() {
		// emqd answers what a timeout answers, as Valkey's blocking
		// commands do inside a transaction (docs/verbs.md §4.3.3).
		if err := cmds[0].Err(); err != redis.Nil {
			t.Fatalf("BLOCK in MULTI on an empty queue: %v %#v, want the nil array of a timeout", err, cmds[0].(*redis.Cmd).Val())
		}
	} else if got := cmds[0].(*redis.Cmd).Val(); !reflect.DeepEqual(got, []any{}) {
		// A function cannot block: BLOCK answers what a claim without it
		// answers, in a transaction or not (cluster/emq.lua).
		t.Fatalf("BLOCK in MULTI on an empty queue: %#v", got)
	}
	if got := cmds[2].(*redis.Cmd).Val(); !reflect.DeepEqual(got, []any{[]any{idA, "in-multi", "1", int64(0)}}) {
		t.Fatalf("claim in MULTI: %#v", got)
	}
	if cmds[3].Err() == nil || cmds[3].Err().Error() != "EMQSTALE complete token mismatch" {
		t.Fatalf("refusal inside EXEC: %v", cmds[3].Err())
	}

	other := tg.Client(2)
	for _, c := range []struct {
		key   string
		write []any
	}{
		{"emq:{q}:pending", []any{"EMQ.ENQUEUE", "q", idB, "x"}},
		{"emq:{q}:job:" + idA, []any{"EMQ.PROGRESS", "q", idA, "1", "50%"}},
		{"emq:{q}:active", []any{"EMQ.EXTEND", "q", idA, "1", 5000}},
		{"emq:{q}:meta", []any{"EMQ.PAUSE", "q"}},
	} {
		err := e.rdb.Watch(e.ctx, func(tx *redis.Tx) error {
			if err := other.Do(e.ctx, c.write...).Err(); err != nil {
				t.Fatalf("%v: %v", c.write, err)
			}
			_, err := tx.TxPipelined(e.ctx, func(p redis.Pipeliner) error {
				p.Do(e.ctx, "EMQ.COUNTS", "q")
				return nil
			})
			return err
		}, c.key)
		if err != redis.TxFailedErr {
			t.Errorf("WATCH %s then %v: EXEC %v, want aborted", c.key, c.write, err)
		}
	}
	err = e.rdb.Watch(e.ctx, func(tx *redis.Tx) error {
		other.Do(e.ctx, "EMQ.COMPLETE", "q", idA, "bad")
		_, err := tx.TxPipelined(e.ctx, func(p redis.Pipeliner) error {
			p.Do(e.ctx, "EMQ.COUNTS", "q")
			return nil
		})
		return err
	}, "emq:{q}:job:"+idA, "emq:{q}:active")
	if err != nil {
		t.Fatalf("a refusal aborted a watcher: %v", err)
	}
}

// EMQ.COUNTS and EMQ.JOB are maps after HELLO 3 and flat name/value arrays
// under RESP2 (entry order: Differences "map entry order").
func repliesAsMaps(t *testing.T, tg Target) {
	e := newEnv(t, tg)
	r3 := tg.Client(3)
	e.ok("EMQ.ENQUEUE", "q", idA, "p")
	e.claim("q", 500)
	e.ok("EMQ.ENQUEUE", "q", idB, "later", "AT", T0+9000)
	counts := map[string]any{"pending": int64(0), "active": int64(1), "scheduled": int64(1), "dead": int64(0), "completed": int64(0), "failed": int64(0), "retained": int64(0), "latency_ms": int64(0), "waiting": int64(0)}
	v3, err := r3.Do(e.ctx, "EMQ.COUNTS", "q").Result()
	if err != nil {
		t.Fatal(err)
	}
	if _, isMap := v3.(map[any]any); !isMap || !reflect.DeepEqual(asMap(t, v3), counts) {
		t.Fatalf("RESP3 counts %#v", v3)
	}
	v2 := e.ok("EMQ.COUNTS", "q")
	if a, isArr := v2.([]any); !isArr || len(a) != 18 || !reflect.DeepEqual(asMap(t, v2), counts) {
		t.Fatalf("RESP2 counts %#v", v2)
	}
	job := map[string]any{"state": "active", "attempts": "1", "payload": "p", "lease_epoch": tg.RunID(), "lease_deadline_ms": "1700000000500",
		"enqueued_at": "1700000000000", "claimed_at": "1700000000000"}
	v3, _ = r3.Do(e.ctx, "EMQ.JOB", "q", idA).Result()
	if _, isMap := v3.(map[any]any); !isMap || !reflect.DeepEqual(asMap(t, v3), job) {
		t.Fatalf("RESP3 job %#v", v3)
	}
	if got := asMap(t, e.ok("EMQ.JOB", "q", idA)); !reflect.DeepEqual(got, job) {
		t.Fatalf("RESP2 job %v", got)
	}
	if got := asMap(t, e.ok("EMQ.JOB", "q", idB)); got["run_at_ms"] != "1700000009000" || got["state"] != "scheduled" {
		t.Fatalf("scheduled job %v", got)
	}
	if _, err := r3.Do(e.ctx, "EMQ.JOB", "q", idC).Result(); err != redis.Nil {
		t.Fatalf("RESP3 missing job: %v", err)
	}
	if v, _ := e.do("EMQ.JOB", "q", idC); v != nil {
		t.Fatalf("missing job %v", v)
	}
	// A hand-written fractional score prints as the shortest decimal.
	e.ok("ZADD", "emq:{q}:schedule", "1.5", idB)
	if got := asMap(t, e.ok("EMQ.JOB", "q", idB)); got["run_at_ms"] != "1.5" {
		t.Fatalf("fractional run_at_ms %v", got["run_at_ms"])
	}
	e.ok("ZADD", "emq:{q}:schedule", "+inf", idB)
	if got := asMap(t, e.ok("EMQ.JOB", "q", idB)); got["run_at_ms"] != "inf" {
		t.Fatalf("infinite run_at_ms %v", got["run_at_ms"])
	}
	// Any score prints as Valkey's d2string (docs/verbs.md §4.17,
	// docs/compat.md §3.3): integers up to 2^62 plain, the rest as
	// fpconv_dtoa lays its digits out.
	for _, c := range []struct{ score, want string }{
		{"-2.5", "-2.5"}, {"0.000025", "0.000025"}, {"0.0000001", "1e-7"}, {"123456789.125", "123456789.125"},
		{"1e20", "1e+20"}, {"1e21", "1e+21"}, {"1.25e17", "125000000000000000"},
		{"4611686018427387904", "4611686018427387904"}, {"9223372036854775808", "9223372036854776000"},
		{"1.2345678e+30", "1.2345678e+30"}, {"-1e-300", "-1e-300"}, {"5e-324", "5e-324"},
		{"1.7976931348623157e308", "1.7976931348623157e+308"}, {"-inf", "-inf"},
	} {
		e.ok("ZADD", "emq:{q}:schedule", c.score, idB)
		if got := asMap(t, e.ok("EMQ.JOB", "q", idB))["run_at_ms"]; got != c.want {
			t.Errorf("score %s: run_at_ms %v, want %s", c.score, got, c.want)
		}
	}
	// Where Grisu2's digits are not the shortest round-trip ones the
	// library prints the latter (Differences "non-integral score digits").
	e.ok("ZADD", "emq:{q}:schedule", "1771878222317.96875", idB)
	want := "1771878222317.9687"
	if !tg.Native() {
		want = "1771878222317.9688"
	}
	if got := asMap(t, e.ok("EMQ.JOB", "q", idB))["run_at_ms"]; got != want {
		t.Errorf("score 1771878222317.96875: run_at_ms %v, want %s", got, want)
	}
	// An empty claim is an empty array; a duplicate enqueue is nil.
	if got := e.ok("EMQ.CLAIM", "other", 10); !reflect.DeepEqual(got, []any{}) {
		t.Fatalf("empty claim %#v", got)
	}
	if v, err := e.do("EMQ.ENQUEUE", "q", idA, "again"); v != nil || err != nil {
		t.Fatalf("duplicate %v %v", v, err)
	}
	if got := e.ok("EMQ.PAUSE", "q"); got != "OK" {
		t.Fatalf("pause %v", got)
	}
}

// Minted ids: max(now, last+1), strictly increasing on a queue, the clock
// stepping back, a deleted newest row, an id a client took itself.
func mintedIDs(t *testing.T, tg Target) {
	e := newEnv(t, tg)
	a := e.ok("EMQ.ENQUEUE", "q", "*", "1").(string)
	b := e.ok("EMQ.ENQUEUE", "q", "*", "2").(string)
	if a != encodeID(T0) || b != encodeID(T0+1) {
		t.Fatalf("minted %s %s", a, b)
	}
	if got := e.ok("HGET", tg.MintKey("q"), "last"); got != b {
		t.Fatalf("mint key %s last %v", tg.MintKey("q"), got)
	}
	tg.Advance(-60000) // the clock steps back
	c := e.ok("EMQ.ENQUEUE", "q", "*", "3").(string)
	if c != encodeID(T0+2) {
		t.Fatalf("minted %s after %s with the clock back", c, b)
	}
	// Another queue: emqd's one minter orders it after q's ids; the
	// library's per-queue minter starts from the clock (Differences:
	// "minted ids across queues").
	o := e.ok("EMQ.ENQUEUE", "other", "*", "x").(string)
	wantO := encodeID(T0 + 3)
	if !tg.Native() {
		wantO = encodeID(T0 - 60000)
	}
	if o != wantO {
		t.Fatalf("other queue minted %s, want %s", o, wantO)
	}
	tg.Advance(60000)
	// A completion that deletes the newest row does not make its id reusable.
	if got := e.ok("EMQ.CLAIM", "q", 10, "COUNT", 3).([]any); len(got) != 3 || got[2].([]any)[0] != c {
		t.Fatalf("claimed %v", got)
	}
	e.ok("EMQ.COMPLETE", "q", c, "1")
	d := e.ok("EMQ.ENQUEUE", "q", "*", "4").(string)
	if d <= c {
		t.Fatalf("minted %s after %s", d, c)
	}
	// A client that took the next id itself is skipped over.
	next := encodeID(tg.Now())
	if next <= d {
		next = incID(d)
	}
	if e.ok("EMQ.ENQUEUE", "q", next, "mine") != next {
		t.Fatal("explicit id")
	}
	if got := e.ok("EMQ.ENQUEUE", "q", "*", "5").(string); got != incID(next) {
		t.Fatalf("minted %s, want to skip %s", got, next)
	}
	// A duplicate is nil and never overwrites.
	if v, _ := e.do("EMQ.ENQUEUE", "q", next, "other"); v != nil || e.field("q", next, "payload") != "mine" {
		t.Fatal("duplicate")
	}
	// A mint key that holds no minted id, or the last one, refuses.
	e.ok("HSET", tg.MintKey("q"), "last", "junk")
	want := "EMQKIND " + tg.MintKey("q") + " last is not a minted job id"
	if got := e.refused("EMQ.ENQUEUE", "q", "*", "6"); got != want {
		t.Fatalf("junk mint: %q, want %q", got, want)
	}
	e.ok("HSET", tg.MintKey("q"), "last", "JOBAzL8n0Y58m7")
	if got := e.refused("EMQ.ENQUEUE", "q", "*", "6"); got != "ERR job id space exhausted" {
		t.Fatalf("exhausted: %q", got)
	}
}

// EMQ.CLAIM promotes due jobs first and hands out the lowest ids first,
// promoted ones among pending by id; ghosts are dropped and do not use up
// COUNT.
func claimOrderAndPromotion(t *testing.T, tg Target) {
	e := newEnv(t, tg)
	e.ok("EMQ.ENQUEUE", "q", idD, "d")
	for _, id := range []string{idC, idA} {
		e.ok("EMQ.ENQUEUE", "q", id, "p-"+id, "DELAY", 10)
	}
	e.ok("ZADD", "emq:{q}:pending", 0, idB) // a ghost
	if got := e.ok("EMQ.CLAIM", "q", 1000, "COUNT", 5); !reflect.DeepEqual(got, []any{[]any{idD, "d", "1", int64(0)}}) {
		t.Fatalf("before due: %v", got)
	}
	if n, _ := e.do("ZCARD", "emq:{q}:pending"); n != int64(0) {
		t.Fatal("the ghost stayed in pending")
	}
	e.ok("EMQ.ENQUEUE", "q", "JOB00000000000", "zero")
	tg.Advance(10)
	got := e.ok("EMQ.CLAIM", "q", 1000, "COUNT", 2)
	if !reflect.DeepEqual(got, []any{[]any{"JOB00000000000", "zero", "1", int64(0)}, []any{idA, "p-" + idA, "1", int64(0)}}) {
		t.Fatalf("after due: %v", got)
	}
	if got := e.zmembers("emq:{q}:pending"); !reflect.DeepEqual(got, []string{idC}) {
		t.Fatalf("pending %v", got)
	}
	if e.field("q", idC, "state") != "pending" {
		t.Fatalf("promoted row %s", e.row("q", idC))
	}
	// A lane row met in pending refuses the whole claim; a due scheduled
	// lane row refuses EMQ.PROMOTE and EMQ.CLAIM. Nothing is written.
	e.ok("HSET", "emq:{q}:job:"+idC, "group", "g")
	dig, d := e.digest(), e.dirty()
	if got := e.refused("EMQ.CLAIM", "q", 1000); got != "EMQLANE lane rows are not served natively" {
		t.Fatalf("lane: %q", got)
	}
	if e.digest() != dig || e.dirty() != d {
		t.Fatal("the refused claim wrote")
	}
	e.ok("HDEL", "emq:{q}:job:"+idC, "group")
	e.ok("EMQ.ENQUEUE", "q", idB, "b", "DELAY", 0)
	e.ok("HSET", "emq:{q}:job:"+idB, "group", "g")
	dig, d = e.digest(), e.dirty()
	if got := e.refused("EMQ.PROMOTE", "q"); got != "EMQLANE lane rows are not served natively" {
		t.Fatalf("promote lane: %q", got)
	}
	if got := e.refused("EMQ.CLAIM", "q", 1000); got != "EMQLANE lane rows are not served natively" {
		t.Fatalf("claim due lane: %q", got)
	}
	if e.digest() != dig || e.dirty() != d {
		t.Fatal("a refused promotion wrote")
	}
	// Bad counters refuse the claim.
	e.ok("DEL", "emq:{q}:job:"+idB)
	e.ok("HSET", "emq:{q}:job:"+idC, "failures", "x")
	if got := e.refused("EMQ.CLAIM", "q", 1000); got != "ERR hash value is not an integer" {
		t.Fatalf("failures: %q", got)
	}
	e.ok("HSET", "emq:{q}:job:"+idC, "failures", "2", "attempts", "9223372036854775807")
	if got := e.refused("EMQ.CLAIM", "q", 1000); got != "ERR increment or decrement would overflow" {
		t.Fatalf("attempts: %q", got)
	}
	e.ok("HSET", "emq:{q}:job:"+idC, "attempts", "-3")
	if got := e.ok("EMQ.CLAIM", "q", 1000); !reflect.DeepEqual(got, []any{[]any{idC, "p-" + idC, "-2", int64(2)}}) {
		t.Fatalf("negative attempts: %v", got)
	}
}

// EMQ.REMOVE, EMQ.PAUSE, EMQ.RESUME.
func removePauseResume(t *testing.T, tg Target) {
	e := newEnv(t, tg)
	e.ok("EMQ.ENQUEUE", "q", idA, "a")
	e.ok("EMQ.ENQUEUE", "q", idB, "b", "DELAY", 100)
	e.ok("EMQ.PAUSE", "q")
	if v := e.ok("EMQ.CLAIM", "q", 100); !reflect.DeepEqual(v, []any{}) {
		t.Fatalf("paused queue handed out %v", v)
	}
	e.ok("EMQ.RESUME", "q")
	if n, _ := e.do("EXISTS", "emq:{q}:meta"); n != int64(0) {
		t.Fatal("RESUME left meta")
	}
	e.ok("EMQ.RESUME", "q")
	e.claim("q", 100)
	if got := e.refused("EMQ.REMOVE", "q", idA); got != "EMQSTATE job is active" {
		t.Fatalf("removed a held job: %q", got)
	}
	if e.ok("EMQ.REMOVE", "q", idB) != int64(1) || e.row("q", idB) != "" {
		t.Fatal("remove scheduled")
	}
	if n, _ := e.do("EXISTS", "emq:{q}:schedule"); n != int64(0) {
		t.Fatal("schedule kept the id")
	}
	if e.ok("EMQ.REMOVE", "q", idB) != int64(0) {
		t.Fatal("remove twice")
	}
	e.ok("ZADD", "emq:{q}:dead", 0, idC) // a member without a row
	if e.ok("EMQ.REMOVE", "q", idC) != int64(1) {
		t.Fatal("remove a dead member without a row")
	}
	e.ok("HSET", "emq:{q}:job:"+idD, "group", "g")
	if got := e.refused("EMQ.REMOVE", "q", idD); got != "EMQLANE lane rows are not served natively" {
		t.Fatalf("lane: %q", got)
	}
}

// EMQ.REPROCESS's refusals and writes.
func reprocessAndRemove(t *testing.T, tg Target) {
	e := newEnv(t, tg)
	// A missing job is gone (docs/verbs.md §4.13), a job in another state
	// is not dead, a dead member without a row is gone.
	if got := e.refused("EMQ.REPROCESS", "q", idA); got != "EMQSTALE job gone" {
		t.Fatalf("missing: %q", got)
	}
	e.ok("HSET", "emq:{q}:job:"+idA, "state", "pending", "payload", "p")
	if got := e.refused("EMQ.REPROCESS", "q", idA); got != "EMQSTATE job is not dead" {
		t.Fatalf("not dead: %q", got)
	}
	e.ok("DEL", "emq:{q}:job:"+idA)
	e.ok("ZADD", "emq:{q}:dead", 0, idA)
	if got := e.refused("EMQ.REPROCESS", "q", idA); got != "EMQSTALE job gone" {
		t.Fatalf("gone: %q", got)
	}
	e.ok("HSET", "emq:{q}:job:"+idA, "state", "dead", "attempts", "4", "failures", "3", "stalled", "1", "last_error", "boom", "payload", "p")
	e.ok("SET", "emq:{q}:pending", "x")
	if got := e.refused("EMQ.REPROCESS", "q", idA); got != wrongType {
		t.Fatalf("pending wrong: %q", got)
	}
	e.ok("DEL", "emq:{q}:pending")
	if e.ok("EMQ.REPROCESS", "q", idA) != int64(1) {
		t.Fatal("reprocess")
	}
	if want := rowOf("state=pending", "attempts=4", "failures=3", "stalled=1", "payload=p"); e.row("q", idA) != want {
		t.Fatalf("reprocessed row %s", e.row("q", idA))
	}
	_, tok, f := e.claim("q", 100)
	if tok != "5" || f != 3 {
		t.Fatalf("claim after reprocess: %s %d", tok, f)
	}
	e.ok("EMQ.FAIL", "q", idA, tok, 1, 0, "again")
	if e.ok("EMQ.REPROCESS", "q", idA, "reset") != int64(1) {
		t.Fatal("reprocess reset")
	}
	if want := rowOf("state=pending", "attempts=5", "payload=p", "lease_epoch="+tg.RunID(), "claimed_at=1700000000000", "finished_at=1700000000000"); e.row("q", idA) != want {
		t.Fatalf("reset row %s", e.row("q", idA))
	}
}

// Computed and AT times saturate at 2^53-1 ms, and read back exactly.
func saturation(t *testing.T, tg Target) {
	e := newEnv(t, tg)
	const max = "9007199254740991"
	e.ok("EMQ.ENQUEUE", "q", idA, "p", "DELAY", "9223372036854775807")
	e.ok("EMQ.ENQUEUE", "q", idB, "p", "AT", "9007199254740993")
	e.ok("EMQ.ENQUEUE", "q", idC, "p", "AT", "0")
	for _, id := range []string{idA, idB} {
		if got := asMap(t, e.ok("EMQ.JOB", "q", id))["run_at_ms"]; got != max {
			t.Fatalf("%s run_at_ms %v", id, got)
		}
	}
	_, tok, _ := e.claim("q", 1) // AT 0 is due at once
	if got := e.ok("EMQ.EXTEND", "q", idC, tok, "9223372036854775807"); got != int64(1) {
		t.Fatal(got)
	}
	if got := e.zscore("emq:{q}:active", idC); got != max {
		t.Fatalf("extended deadline %s", got)
	}
	e.ok("EMQ.DELAY", "q", idC, tok, "IN", "9007199254740000")
	if got := e.zscore("emq:{q}:schedule", idC); got != max {
		t.Fatalf("delayed %s", got)
	}
	if got := e.ok("EMQ.PROMOTE", "q", "9223372036854775807"); got != int64(0) {
		t.Fatalf("promoted %v", got)
	}
}

// Counters near the int64 limits are judged exactly.
func largeCounters(t *testing.T, tg Target) {
	e := newEnv(t, tg)
	e.ok("HSET", "emq:{q}:job:"+idA, "state", "pending", "attempts", "9223372036854775806", "payload", "p", "failures", "1000")
	e.ok("ZADD", "emq:{q}:pending", 0, idA)
	_, tok, f := e.claim("q", 100)
	if tok != "9223372036854775807" || f != 1000 {
		t.Fatalf("token %s failures %d", tok, f)
	}
	if got := e.ok("EMQ.FAIL", "q", idA, tok, "9223372036854775807", 0, "x"); !reflect.DeepEqual(got, []any{"scheduled", int64(1001)}) {
		t.Fatalf("fail %v", got)
	}
	if got := e.refused("EMQ.CLAIM", "q", 100); got != "ERR increment or decrement would overflow" {
		t.Fatalf("token overflow: %q", got)
	}
	e.ok("HSET", "emq:{q}:job:"+idA, "attempts", "-9223372036854775808", "failures", "9223372036854775806")
	_, tok, _ = e.claim("q", 100)
	if tok != "-9223372036854775807" {
		t.Fatalf("token from the minimum: %s", tok)
	}
	// f = 2^63-1 reaches max_attempts 2^63-1: dead. (The reply's integer is
	// exact on emqd and a double's on the library: Differences.)
	got := e.ok("EMQ.FAIL", "q", idA, tok, "9223372036854775807", 0, "x").([]any)
	if got[0] != "dead" || e.field("q", idA, "failures") != "9223372036854775807" {
		t.Fatalf("fail at the cap: %v %s", got, e.row("q", idA))
	}
	if tg.Native() && got[1] != int64(9223372036854775807) {
		t.Fatalf("emqd's f %v", got[1])
	}
	e.ok("HSET", "emq:{q}:metrics:completed", "count", "9223372036854775807")
	e.ok("EMQ.ENQUEUE", "q", idB, "p")
	_, tok, _ = e.claim("q", 100)
	if got := e.refused("EMQ.COMPLETE", "q", idB, tok); got != "ERR increment or decrement would overflow" {
		t.Fatalf("completed overflow: %q", got)
	}
	e.ok("HSET", "emq:{q}:metrics:completed", "count", "9223372036854775806")
	e.ok("EMQ.COMPLETE", "q", idB, tok)
	if got := e.ok("HGET", "emq:{q}:metrics:completed", "count"); got != "9223372036854775807" {
		t.Fatalf("completed %v", got)
	}
}

// BLOCK: on the library the call answers at once (Differences: "blocking
// claims"); emqd's blocking is tested in verbs (e2e_block_test.go).
func blockAnswersAtOnce(t *testing.T, tg Target) {
	e := newEnv(t, tg)
	if tg.Native() {
		t.Skip("emqd blocks: tested in internal/verbs/e2e_block_test.go")
	}
	if got := e.ok("EMQ.CLAIM", "q", 1000, "BLOCK", 0); !reflect.DeepEqual(got, []any{}) {
		t.Fatalf("BLOCK 0 on an empty queue: %#v", got)
	}
	e.ok("EMQ.ENQUEUE", "q", idA, "p")
	if got := e.ok("EMQ.CLAIM", "q", 1000, "BLOCK", 5000, "COUNT", 3); !reflect.DeepEqual(got, []any{[]any{idA, "p", "1", int64(0)}}) {
		t.Fatalf("BLOCK with a job: %#v", got)
	}
}

// EMQ.DEBUG's argument checks, and the clock it moves.
func debugRefused(t *testing.T, tg Target) {
	e := newEnv(t, tg)
	for _, c := range []struct {
		args []any
		want string
	}{
		{[]any{"EMQ.DEBUG", "CLOCK"}, "ERR wrong number of arguments for 'emq.debug|clock' command"},
		{[]any{"EMQ.DEBUG", "CLOCK", "BACK", 5}, "ERR syntax error"},
		{[]any{"EMQ.DEBUG", "CLOCK", "ADVANCE", -5}, "ERR ms must be a non-negative integer"},
		{[]any{"EMQ.DEBUG", "FOO"}, "ERR unknown subcommand 'FOO'. Try EMQ.DEBUG HELP."},
		{[]any{"EMQ.DEBUG", "FOO", "BAR"}, "ERR unknown subcommand 'FOO'. Try EMQ.DEBUG HELP."},
		{[]any{"EMQ.DEBUG", "HELP", "x"}, "ERR wrong number of arguments for 'emq.debug|help' command"},
		{[]any{"EMQ.DEBUG", "CLOCK", "ADVANCE", "9223372036854775807"}, "ERR ms is out of range"},
	} {
		if got := e.refused(c.args...); got != c.want {
			t.Errorf("%v: %q, want %q", c.args, got, c.want)
		}
	}
	help := []any{
		"EMQ.DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"CLOCK ADVANCE <ms>",
		"    Move the server clock forward by <ms> milliseconds (leases, due times,",
		"    minted ids and BLOCK timeouts follow it). Needs enable-debug-command yes.",
		"HELP",
		"    Print this help.",
	}
	if got := e.ok("EMQ.DEBUG", "help"); !reflect.DeepEqual(got, help) {
		t.Errorf("HELP: %#v", got)
	}
	e.ok("EMQ.ENQUEUE", "q", idA, "p", "DELAY", 1000)
	e.ok("EMQ.DEBUG", "CLOCK", "ADVANCE", 999)
	if got := e.ok("EMQ.PROMOTE", "q"); got != int64(0) {
		t.Fatal("promoted early")
	}
	e.ok("EMQ.DEBUG", "CLOCK", "ADVANCE", 1)
	if got := e.ok("EMQ.PROMOTE", "q"); got != int64(1) {
		t.Fatal("not promoted at the due time")
	}
	// The clock stops at 2^53-1 ms, the last time a score holds
	// (docs/verbs.md §2.12, §4.19): not one ms further.
	const maxMs = int64(9007199254740991)
	tg.SetClock(maxMs - 10)
	if got := e.refused("EMQ.DEBUG", "CLOCK", "ADVANCE", 11); got != "ERR ms is out of range" {
		t.Errorf("advance past 2^53-1: %q", got)
	}
	e.ok("EMQ.DEBUG", "CLOCK", "ADVANCE", 10)
	if got := e.refused("EMQ.DEBUG", "CLOCK", "ADVANCE", 1); got != "ERR ms is out of range" {
		t.Errorf("advance at 2^53-1: %q", got)
	}
	e.ok("EMQ.DEBUG", "CLOCK", "ADVANCE", 0)
}

// EMQ.LIST: each state in its set's order, paging, ghosts, arguments, bad
// rows (docs/verbs.md §4.18).
func list(t *testing.T, tg Target) {
	e := newEnv(t, tg)
	page := func(args ...any) []string {
		t.Helper()
		var out []string
		for _, x := range e.ok(append([]any{"EMQ.LIST", "q"}, args...)...).([]any) {
			pair := x.([]any)
			if pair[1] == nil {
				out = append(out, pair[0].(string)+":ghost")
				continue
			}
			m := asMap(t, pair[1])
			out = append(out, pair[0].(string)+":"+m["state"].(string))
		}
		return out
	}
	if got := page("pending"); len(got) != 0 {
		t.Fatalf("empty queue: %v", got)
	}
	for _, id := range []string{idD, idB, idA} {
		e.ok("EMQ.ENQUEUE", "q", id, "p")
	}
	e.ok("EMQ.ENQUEUE", "q", idC, "p", "DELAY", 50)
	e.ok("ZADD", "emq:{q}:pending", 0, "JOB0000000000Z") // a ghost
	if got := page("PENDING"); !reflect.DeepEqual(got, []string{idA + ":pending", idB + ":pending", idD + ":pending", "JOB0000000000Z:ghost"}) {
		t.Fatalf("pending: %v", got)
	}
	if got := page("pending", 1, 2); !reflect.DeepEqual(got, []string{idB + ":pending", idD + ":pending"}) {
		t.Fatalf("page: %v", got)
	}
	if got := page("pending", "9223372036854775807", 1000); len(got) != 0 {
		t.Fatalf("past the end: %v", got)
	}
	e.claim("q", 300)
	e.ok("EMQ.EXTEND", "q", idA, "1", 100)
	e.claim("q", 200)
	if got := page("active"); !reflect.DeepEqual(got, []string{idA + ":active", idB + ":active"}) {
		t.Fatalf("active by deadline: %v", got)
	}
	entry := e.ok("EMQ.LIST", "q", "scheduled").([]any)[0].([]any)
	if entry[0] != idC || asMap(t, entry[1])["run_at_ms"] != "1700000000050" {
		t.Fatalf("scheduled: %v", entry)
	}
	d := e.dirty()
	for _, c := range []struct {
		args []any
		want string
	}{
		{[]any{"EMQ.LIST", "q", "done"}, "ERR state must be one of pending, active, scheduled, dead, completed, waiting"},
		{[]any{"EMQ.LIST", "q", "dead", 1}, "ERR syntax error"},
		{[]any{"EMQ.LIST", "q", "dead", -1, 1}, "ERR offset must be a non-negative integer"},
		{[]any{"EMQ.LIST", "q", "dead", 0, 0}, "ERR count must be a positive integer"},
		{[]any{"EMQ.LIST", "q", "dead", 0, 1001}, "ERR count must be at most 1000"},
		{[]any{"EMQ.LIST", "q", "dead", "x", 1}, "ERR value is not an integer or out of range"},
		{[]any{"EMQ.LIST", "q"}, "ERR wrong number of arguments for 'emq.list' command"},
	} {
		if got := e.refused(c.args...); got != c.want {
			t.Errorf("%v: %q, want %q", c.args, got, c.want)
		}
	}
	e.ok("SET", "emq:{q}:job:"+idD, "x")
	if got := e.refused("EMQ.LIST", "q", "pending"); got != wrongType {
		t.Fatalf("bad row: %q", got)
	}
	if got := page("pending", 1, 1); !reflect.DeepEqual(got, []string{"JOB0000000000Z:ghost"}) {
		t.Fatalf("a page without the bad row: %v", got)
	}
	if e.dirty() != d+1 {
		t.Fatal("EMQ.LIST wrote")
	}
}

// EMQ.STALLED.CHECK ... EVERY interval_ms (docs/verbs.md §4.11.1): at most
// one guarded sweep per interval, on the server clock; a skipped one writes
// nothing; meta's swept_at holds the time of the last that ran.
func sweepGuard(t *testing.T, tg Target) {
	e := newEnv(t, tg)
	run := tg.RunID()
	e.expired("q", idA, run)
	now := tg.Now()
	if got := e.ok("EMQ.STALLED.CHECK", "q", 2, 100, "EVERY", 1000); !reflect.DeepEqual(got, []any{[]any{idA}, []any{}}) {
		t.Fatalf("first guarded sweep: %v", got)
	}
	if at, _ := e.do("HGET", "emq:{q}:meta", "swept_at"); at != strconv.FormatInt(now, 10) {
		t.Fatalf("swept_at %v, want %d", at, now)
	}
	e.expired("q", idB, run)
	tg.Advance(999)
	before, d := e.digest(), e.dirty()
	if got := e.ok("EMQ.STALLED.CHECK", "q", 2, "every", 1000); !reflect.DeepEqual(got, []any{[]any{}, []any{}}) {
		t.Fatalf("within the interval: %v", got)
	}
	if e.digest() != before || e.dirty() != d {
		t.Fatal("a skipped sweep wrote")
	}
	tg.Advance(1)
	if got := e.ok("EMQ.STALLED.CHECK", "q", 2, "EVERY", 1000); !reflect.DeepEqual(got, []any{[]any{idB}, []any{}}) {
		t.Fatalf("at the interval: %v", got)
	}
	for _, c := range []struct {
		args []any
		want string
	}{
		{[]any{"EMQ.STALLED.CHECK", "q", "EVERY", 0}, "ERR interval_ms must be a positive integer"},
		{[]any{"EMQ.STALLED.CHECK", "q", 0, "EVERY", "x"}, "ERR max_stalled must be a positive integer"},
		{[]any{"EMQ.STALLED.CHECK", "q", "EVERY"}, "ERR syntax error"},
		{[]any{"EMQ.STALLED.CHECK", "q", "EVERY", 5, 1}, "ERR syntax error"},
	} {
		if got := e.refused(c.args...); got != c.want {
			t.Errorf("%v: %q, want %q", c.args, got, c.want)
		}
	}
	e.ok("HSET", "emq:{q}:meta", "swept_at", "soon")
	before = e.digest()
	if got := e.refused("EMQ.STALLED.CHECK", "q", "EVERY", 5); got != "ERR hash value is not an integer" || e.digest() != before {
		t.Fatalf("bad swept_at: %q", got)
	}
}

// eventsScenario: one message per transition on emq:{q}:events, in order,
// "<event> <id> <db>" (docs/verbs.md §1.6); emqd publishes (SUBSCRIBE),
// the library sharded-publishes (SSUBSCRIBE, docs/cluster.md "events").
func eventsScenario(t *testing.T, tg Target) {
	e := newEnv(t, tg)
	sub := tg.Client(3)
	var ps *redis.PubSub
	if tg.Native() {
		ps = sub.Subscribe(e.ctx, "emq:{q}:events")
	} else {
		ps = sub.SSubscribe(e.ctx, "emq:{q}:events")
	}
	defer ps.Close()
	if _, err := ps.Receive(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.ok("EMQ.ENQUEUE", "q", idA, "p")
	e.ok("EMQ.ENQUEUE", "q", idB, "p", "DELAY", 10)
	_, tok, _ := e.claim("q", 1000)
	e.ok("EMQ.FAIL", "q", idA, tok, 1, 0, "boom")
	e.ok("EMQ.REPROCESS", "q", idA)
	tg.Advance(10)
	if got := e.ok("EMQ.CLAIM", "q", 1000, "COUNT", 2).([]any); len(got) != 2 {
		t.Fatalf("claim %v", got)
	}
	e.ok("EMQ.COMPLETE", "q", idA, "2")
	e.ok("EMQ.REQUEUE", "q", idB, "1")
	e.ok("EMQ.REMOVE", "q", idB)
	want := []string{"enqueued " + idA, "enqueued " + idB, "claimed " + idA, "dead " + idA, "reprocessed " + idA,
		"promoted " + idB, "claimed " + idA, "claimed " + idB, "completed " + idA, "requeued " + idB, "removed " + idB}
	for _, w := range want {
		m, err := ps.ReceiveTimeout(e.ctx, 10*time.Second)
		if err != nil {
			t.Fatalf("waiting for %q: %v", w, err)
		}
		msg, ok := m.(*redis.Message)
		if !ok || msg.Channel != "emq:{q}:events" || msg.Payload != w+" 0" {
			t.Fatalf("got %#v, want %q", m, w+" 0")
		}
	}
}

// At the memory limit EMQ.FAIL runs (a full queue must drain) but stores
// at most the first 256 bytes of its error (docs/verbs.md §2.14): a
// 20,000-byte error at maxmemory 1 leaves a 256-byte last_error, for a
// retry and for a death alike; an error within the cap is kept whole at
// the limit, and below the limit every error is.
func failErrorCappedAtLimit(t *testing.T, tg Target) {
	e := newEnv(t, tg)
	for _, id := range []string{idA, idB, idC, idD} {
		e.ok("EMQ.ENQUEUE", "q", id, "p")
	}
	big := strings.Repeat("0123456789", 2_000)
	e.ok("CONFIG", "SET", "maxmemory", "1")
	defer e.ok("CONFIG", "SET", "maxmemory", "0")
	if got := e.refused("EMQ.ENQUEUE", "q", "JOB00000000009", "p"); !strings.HasPrefix(got, "OOM ") {
		t.Fatalf("ENQUEUE at maxmemory 1: %q", got)
	}
	const later = 1 << 40 // retries wait: the next claim takes the next job
	fail := func(max int, msg string, verdict string) string {
		t.Helper()
		id, tok, _ := e.claim("q", 1000)
		if got := e.ok("EMQ.FAIL", "q", id, tok, max, later, msg); !reflect.DeepEqual(got, []any{verdict, int64(1)}) {
			t.Fatalf("FAIL %s: %v, want [%s 1]", id, got, verdict)
		}
		return e.field("q", id, "last_error")
	}
	if got := fail(5, big, "scheduled"); got != big[:256] {
		t.Fatalf("retry at the limit: last_error of %d bytes, want the first 256", len(got))
	}
	if got := fail(1, big, "dead"); got != big[:256] {
		t.Fatalf("death at the limit: last_error of %d bytes, want the first 256", len(got))
	}
	if got := fail(5, big[:256], "scheduled"); got != big[:256] {
		t.Fatalf("a 256-byte error at the limit: %d bytes", len(got))
	}
	e.ok("CONFIG", "SET", "maxmemory", "0")
	if got := fail(5, big, "scheduled"); got != big {
		t.Fatalf("below the limit: last_error of %d bytes, want %d", len(got), len(big))
	}
}

// EMQ.ENQUEUE.MANY (docs/verbs.md §4.2.1): each pair as EMQ.ENQUEUE with the
// same options, in order; duplicates answer nil; one bad id, or one row of
// another type, writes nothing.
func enqueueMany(t *testing.T, tg Target) {
	e := newEnv(t, tg)
	e.ok("EMQ.ENQUEUE", "q", idA, "old")
	got := e.ok("EMQ.ENQUEUE.MANY", "q", "JOBS", idA, "new", idB, "b", idB, "again", "*", "m1", "*", "m2")
	arr, _ := got.([]any)
	if len(arr) != 5 || arr[0] != nil || arr[1] != idB || arr[2] != nil {
		t.Fatalf("reply %v", got)
	}
	m1, _ := arr[3].(string)
	if m2, _ := arr[4].(string); m2 != incID(m1) {
		t.Fatalf("minted %v then %v, want consecutive ids", arr[3], arr[4])
	}
	if e.field("q", idA, "payload") != "old" || e.field("q", idB, "payload") != "b" || e.field("q", m1, "payload") != "m1" {
		t.Fatalf("rows %s %s %s", e.row("q", idA), e.row("q", idB), e.row("q", m1))
	}
	if got := e.zmembers("emq:{q}:pending"); !reflect.DeepEqual(got, []string{idA, idB, m1, incID(m1)}) {
		t.Fatalf("pending %v", got)
	}
	now := tg.Now()
	e.ok("EMQ.ENQUEUE.MANY", "q", "DELAY", 500, "JOBS", idC, "c")
	if e.field("q", idC, "state") != "scheduled" || e.zscore("emq:{q}:schedule", idC) != strconv.FormatInt(now+500, 10) {
		t.Fatalf("DELAY: %s %s", e.row("q", idC), e.zscore("emq:{q}:schedule", idC))
	}
	e.ok("SET", "emq:{q}:job:"+idD, "x")
	before, d := e.digest(), e.dirty()
	for _, c := range []struct {
		args []any
		want string
	}{
		{[]any{"EMQ.ENQUEUE.MANY", "q", "JOBS", "*", "p", "JOB-bad", "p", "*", "p"}, "EMQKIND job id must be JOB followed by 11 characters from 0-9A-Za-z"},
		{[]any{"EMQ.ENQUEUE.MANY", "q", "JOBS", "*", "p", idD, "p"}, wrongType},
		{[]any{"EMQ.ENQUEUE.MANY", "q", "JOBS", "*", "p", "*"}, "ERR syntax error"},
		{[]any{"EMQ.ENQUEUE.MANY", "q", "*", "p", "*", "p"}, "ERR syntax error"},
		{[]any{"EMQ.ENQUEUE.MANY", "q", "DELAY", -1, "JOBS", "*", "p"}, "ERR delay_ms must be a non-negative integer"},
	} {
		if got := e.refused(c.args...); got != c.want {
			t.Errorf("%v: %q, want %q", c.args, got, c.want)
		}
	}
	if e.digest() != before || e.dirty() != d {
		t.Fatal("a refused batch wrote")
	}
}

// EMQ.COMPLETE / EMQ.FAIL ... NEXT lease_ms [COUNT n] (docs/verbs.md
// §4.5.1): the reply is the claim's that would follow, the keyspace the
// one after both; a refusal of either writes nothing.
func completeAndClaimNext(t *testing.T, tg Target) {
	e := newEnv(t, tg)
	for _, id := range []string{idA, idB, idC} {
		e.ok("EMQ.ENQUEUE", "q", id, "p"+id[len(id)-1:])
	}
	id, tok, _ := e.claim("q", 1000)
	if id != idA {
		t.Fatalf("claimed %s", id)
	}
	got := e.ok("EMQ.COMPLETE", "q", idA, tok, "NEXT", 1000, "COUNT", 2)
	if !reflect.DeepEqual(got, []any{[]any{idB, "p2", "1", int64(0)}, []any{idC, "p3", "1", int64(0)}}) {
		t.Fatalf("COMPLETE NEXT: %v", got)
	}
	if e.row("q", idA) != "" || e.field("q", idB, "state") != "active" {
		t.Fatalf("rows %s / %s", e.row("q", idA), e.row("q", idB))
	}
	// A retry due at once is promoted and claimed back by its own NEXT.
	got = e.ok("EMQ.FAIL", "q", idB, "1", 3, 0, "boom", "NEXT", 1000)
	if !reflect.DeepEqual(got, []any{"scheduled", int64(1), []any{[]any{idB, "p2", "2", int64(1)}}}) {
		t.Fatalf("FAIL NEXT: %v", got)
	}
	got = e.ok("EMQ.FAIL", "q", idC, "1", 1, 0, "dead", "count", 5, "next", 1000)
	if !reflect.DeepEqual(got, []any{"dead", int64(1), []any{}}) {
		t.Fatalf("FAIL NEXT to dead: %v", got)
	}
	// A bad row in pending refuses the claim, and so the whole call.
	e.ok("EMQ.ENQUEUE", "q", idD, "p4")
	e.ok("HSET", "emq:{q}:job:"+idD, "attempts", "x")
	before, d := e.digest(), e.dirty()
	if got := e.refused("EMQ.COMPLETE", "q", idB, "2", "NEXT", 1000); got != "ERR hash value is not an integer" {
		t.Fatalf("bad row behind NEXT: %q", got)
	}
	if e.digest() != before || e.dirty() != d {
		t.Fatal("a refused NEXT wrote")
	}
	for _, c := range []struct {
		args []any
		want string
	}{
		{[]any{"EMQ.COMPLETE", "q", idB, "2", "COUNT", 2}, "ERR syntax error"},
		{[]any{"EMQ.COMPLETE", "q", idB, "2", "NEXT", 0}, "ERR lease_ms must be a positive integer"},
		{[]any{"EMQ.FAIL", "q", idB, "2", 3, 0, "e", "NEXT"}, "ERR syntax error"},
	} {
		if got := e.refused(c.args...); got != c.want {
			t.Errorf("%v: %q, want %q", c.args, got, c.want)
		}
	}
	// Without the bad row: completes and answers an empty claim.
	e.ok("DEL", "emq:{q}:job:"+idD)
	if got := e.ok("EMQ.COMPLETE", "q", idB, "2", "NEXT", 1000); !reflect.DeepEqual(got, []any{}) {
		t.Fatalf("COMPLETE NEXT over a ghost: %v", got)
	}
}

// EMQ.COUNTS' latency_ms (docs/verbs.md §4.16): the age of the job the next
// claim takes, on the server clock; with lanes, the largest age among the
// lanes' heads.
func queueLatency(t *testing.T, tg Target) {
	e := newEnv(t, tg)
	e.ok("EMQ.ENQUEUE", "q", idB, "p")
	tg.Advance(1500)
	e.ok("EMQ.ENQUEUE", "q", idC, "p")
	tg.Advance(500)
	if got := asMap(t, e.ok("EMQ.COUNTS", "q"))["latency_ms"]; got != int64(2000) {
		t.Fatalf("latency_ms %v, want 2000", got)
	}
	e.claim("q", 1000)
	if got := asMap(t, e.ok("EMQ.COUNTS", "q"))["latency_ms"]; got != int64(500) {
		t.Fatalf("after a claim: latency_ms %v, want 500", got)
	}
	e.ok("HSET", "emq:{q}:job:"+idC, "enqueued_at", "soon")
	if got := asMap(t, e.ok("EMQ.COUNTS", "q"))["latency_ms"]; got != int64(0) {
		t.Fatalf("unreadable enqueued_at: %v", got)
	}
	// A lane's head counts as the default lane's does: the largest wait
	// among the heads (§4.16), here with nothing readable in the default
	// lane.
	e.ok("EMQ.ENQUEUE", "q", idD, "p", "LANE", "a")
	tg.Advance(3000)
	e.ok("EMQ.ENQUEUE", "q", idA, "p", "LANE", "b")
	tg.Advance(1000)
	if got := asMap(t, e.ok("EMQ.COUNTS", "q"))["latency_ms"]; got != int64(4000) {
		t.Fatalf("lane heads: latency_ms %v, want 4000 (lane a's)", got)
	}
	e.ok("EMQ.REMOVE", "q", idD)
	if got := asMap(t, e.ok("EMQ.COUNTS", "q"))["latency_ms"]; got != int64(1000) {
		t.Fatalf("after lane a's head left: latency_ms %v, want 1000 (lane b's)", got)
	}
	// A lane set of another type counts 0 and refuses nothing.
	e.ok("ZADD", "emq:{q}:lanes:known", 0, "c")
	e.ok("SET", "emq:{q}:lane:c:pending", "x")
	if got := asMap(t, e.ok("EMQ.COUNTS", "q"))["latency_ms"]; got != int64(1000) {
		t.Fatalf("with a lane set of another type: latency_ms %v, want 1000", got)
	}
}

// retention: EMQ.RETAIN and what it keeps (docs/verbs.md §4.21): the
// retained row with its result and times, the completed set by finish
// time, trimming past the count cap, the DEAD setting's scores and trims,
// COUNTS' retained, LIST completed, and the refusals.
func retention(t *testing.T, tg Target) {
	e := newEnv(t, tg)
	if got := asMap(t, e.ok("EMQ.RETAIN", "q")); !reflect.DeepEqual(got, map[string]any{"completed_max_count": int64(0),
		"completed_max_age_ms": int64(0), "dead_max_count": int64(0), "dead_max_age_ms": int64(0)}) {
		t.Fatalf("defaults %v", got)
	}
	e.ok("EMQ.RETAIN", "q", "COMPLETED", 2, 0)
	e.ok("EMQ.RETAIN", "q", "dead", 1, 0)
	ids := []string{idA, idB, idC}
	for i, id := range ids {
		tg.Advance(10)
		e.ok("EMQ.ENQUEUE", "q", id, "p")
		_, tok, _ := e.claim("q", 1000)
		e.ok("EMQ.COMPLETE", "q", id, tok, "RESULT", "r"+strconv.Itoa(i))
	}
	if got := e.ok("ZRANGE", "emq:{q}:completed", 0, -1, "WITHSCORES"); !reflect.DeepEqual(got,
		[]any{idB, strconv.FormatInt(T0+20, 10), idC, strconv.FormatInt(T0+30, 10)}) {
		t.Fatalf("completed set %v", got)
	}
	if e.row("q", idA) != "" {
		t.Fatal("the oldest was not trimmed")
	}
	now := strconv.FormatInt(T0+30, 10)
	if want := rowOf("state=completed", "attempts=1", "payload=p", "lease_epoch="+tg.RunID(), "enqueued_at="+now,
		"claimed_at="+now, "finished_at="+now, "result=r2"); e.row("q", idC) != want {
		t.Fatalf("retained row %s", e.row("q", idC))
	}
	if got := e.refused("EMQ.COMPLETE", "q", idC, "1"); got != "EMQSTATE job is completed" {
		t.Fatalf("complete again: %q", got)
	}
	if got := asMap(t, e.ok("EMQ.COUNTS", "q")); got["retained"] != int64(2) || got["completed"] != int64(3) {
		t.Fatalf("counts %v", got)
	}
	if l := e.ok("EMQ.LIST", "q", "completed").([]any); len(l) != 2 || l[0].([]any)[0] != idB {
		t.Fatalf("list %v", l)
	}
	// DEAD 1 0: deaths are scored by finished_at, one is kept.
	for _, id := range []string{idD, "JOB00000000005"} {
		tg.Advance(10)
		e.ok("EMQ.ENQUEUE", "q", id, "p")
		_, tok, _ := e.claim("q", 1000)
		e.ok("EMQ.FAIL", "q", id, tok, 1, 0, "boom")
	}
	if got := e.ok("ZRANGE", "emq:{q}:dead", 0, -1, "WITHSCORES"); !reflect.DeepEqual(got,
		[]any{"JOB00000000005", strconv.FormatInt(T0+50, 10)}) || e.row("q", idD) != "" {
		t.Fatalf("dead set %v", got)
	}
	for _, c := range []struct {
		args []any
		want string
	}{
		{[]any{"EMQ.RETAIN", "q", "ALL", 1, 1}, "ERR kind must be COMPLETED or DEAD"},
		{[]any{"EMQ.RETAIN", "q", "DEAD", -1, 1}, "ERR max_count must be a non-negative integer"},
		{[]any{"EMQ.RETAIN", "q", "DEAD", 1}, "ERR syntax error"},
		{[]any{"EMQ.COMPLETE", "q", idB, "1", "RESULT"}, "ERR syntax error"},
	} {
		if got := e.refused(c.args...); got != c.want {
			t.Errorf("%v: %q, want %q", c.args, got, c.want)
		}
	}
	// Back to the defaults: meta loses the fields.
	e.ok("EMQ.RETAIN", "q", "COMPLETED", 0, 0)
	e.ok("EMQ.RETAIN", "q", "DEAD", 0, 0)
	if n := e.ok("EXISTS", "emq:{q}:meta"); n != int64(0) {
		t.Fatalf("meta kept %v", n)
	}
}

// waitScenario: EMQ.WAIT (docs/verbs.md §4.23) on both targets: a retained
// completed job and a dead one answer their outcome at once, a missing
// row EMQSTALE job gone, the refusals; a job not finished answers nil at
// once on the library and inside MULTI on emqd, where a plain wait parks
// and the completion answers it (docs/cluster.md §3).
func waitScenario(t *testing.T, tg Target) {
	e := newEnv(t, tg)
	e.ok("EMQ.RETAIN", "q", "COMPLETED", 10, 0)
	e.ok("EMQ.ENQUEUE", "q", idA, "p")
	_, tok, _ := e.claim("q", 1000)
	e.ok("EMQ.COMPLETE", "q", idA, tok, "RESULT", "42")
	fin := strconv.FormatInt(tg.Now(), 10)
	if got := asMap(t, e.ok("EMQ.WAIT", "q", idA, 0)); !reflect.DeepEqual(got, map[string]any{
		"state": "completed", "result": "42", "error": nil, "finished_at": fin}) {
		t.Fatalf("%s: completed %v", tg.Name(), got)
	}
	e.ok("EMQ.ENQUEUE", "q", idB, "p")
	_, tok, _ = e.claim("q", 1000)
	e.ok("EMQ.FAIL", "q", idB, tok, 1, 0, "boom")
	if got := asMap(t, e.ok("EMQ.WAIT", "q", idB, 100)); !reflect.DeepEqual(got, map[string]any{
		"state": "dead", "result": nil, "error": "boom", "finished_at": fin}) {
		t.Fatalf("%s: dead %v", tg.Name(), got)
	}
	for _, c := range []struct {
		args []any
		want string
	}{
		{[]any{"EMQ.WAIT", "q", idD, 0}, "EMQSTALE job gone"},
		{[]any{"EMQ.WAIT", "q", idA, -1}, "ERR timeout_ms must be a non-negative integer"},
		{[]any{"EMQ.WAIT", "q", idA, "x"}, "ERR value is not an integer or out of range"},
		{[]any{"EMQ.WAIT", "q", idA}, "ERR wrong number of arguments for 'emq.wait' command"},
	} {
		if got := e.refused(c.args...); got != c.want {
			t.Fatalf("%s: %v: %q, want %q", tg.Name(), c.args, got, c.want)
		}
	}
	e.ok("EMQ.ENQUEUE", "q", idC, "p")
	if !tg.Native() {
		if v, err := e.do("EMQ.WAIT", "q", idC, 0); v != nil || err != nil {
			t.Fatalf("library: unfinished %v %v", v, err)
		}
		return
	}
	cmds, err := e.rdb.TxPipelined(e.ctx, func(p redis.Pipeliner) error {
		p.Do(e.ctx, "EMQ.WAIT", "q", idC, 0)
		return nil
	})
	if len(cmds) != 1 || !errors.Is(cmds[0].Err(), redis.Nil) || !errors.Is(err, redis.Nil) {
		t.Fatalf("emqd: MULTI %v %v", cmds, err)
	}
	done := make(chan map[string]any, 1)
	go func() {
		v, err := e.do("EMQ.WAIT", "q", idC, 0)
		if err != nil {
			t.Error(err)
		}
		m, _ := v.([]any)
		out := map[string]any{}
		for i := 0; i+1 < len(m); i += 2 {
			out[m[i].(string)] = m[i+1]
		}
		done <- out
	}()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(e.ok("INFO", "clients").(string), "blocked_clients:1") {
		if time.Now().After(deadline) {
			t.Fatal("emqd: EMQ.WAIT never parked")
		}
		time.Sleep(time.Millisecond)
	}
	_, tok, _ = e.claim("q", 1000)
	e.ok("EMQ.COMPLETE", "q", idC, tok)
	if got := <-done; !reflect.DeepEqual(got, map[string]any{"state": "completed", "result": nil, "error": nil,
		"finished_at": strconv.FormatInt(tg.Now(), 10)}) {
		t.Fatalf("emqd: woken %v", got)
	}
}

// bulkActions: the operator bulk actions (docs/verbs.md §4.24) on both
// targets: [done, left] per bounded call, the set's order, a ghost dropped
// by REPROCESS.ALL and PROMOTE.ALL, RESET, REMOVE.ALL of each state, run now
// (EMQ.PROMOTE.JOB) of a job not yet due, the argument refusals, and a
// refusal that writes nothing; events as the per-job verbs publish them.
func bulkActions(t *testing.T, tg Target) {
	e := newEnv(t, tg)
	sub := tg.Client(3)
	var ps *redis.PubSub
	if tg.Native() {
		ps = sub.Subscribe(e.ctx, "emq:{q}:events")
	} else {
		ps = sub.SSubscribe(e.ctx, "emq:{q}:events")
	}
	defer ps.Close()
	if _, err := ps.Receive(e.ctx); err != nil {
		t.Fatal(err)
	}
	pair := func(v any) [2]int64 {
		t.Helper()
		a, ok := v.([]any)
		if !ok || len(a) != 2 {
			t.Fatalf("reply %#v", v)
		}
		return [2]int64{a[0].(int64), a[1].(int64)}
	}
	for _, id := range []string{idA, idB, idD} {
		e.ok("EMQ.ENQUEUE", "q", id, "p")
		_, tok, _ := e.claim("q", 1000)
		e.ok("EMQ.FAIL", "q", id, tok, 1, 0, "boom")
	}
	e.ok("ZADD", "emq:{q}:dead", 0, idC) // a ghost between them
	if got := pair(e.ok("EMQ.REPROCESS.ALL", "q", "LIMIT", 2)); got != [2]int64{2, 2} {
		t.Fatalf("reprocess.all %v", got)
	}
	if got := e.field("q", idA, "failures"); got != "1" {
		t.Fatalf("failures kept without RESET: %s", got)
	}
	if got := pair(e.ok("EMQ.REPROCESS.ALL", "q", "reset")); got != [2]int64{1, 0} {
		t.Fatalf("reprocess.all reset %v", got)
	}
	if got := e.row("q", idD); got != rowOf("state=pending", "attempts=1", "payload=p", "lease_epoch="+tg.RunID(),
		"enqueued_at="+strconv.FormatInt(T0, 10), "claimed_at="+strconv.FormatInt(T0, 10), "finished_at="+strconv.FormatInt(T0, 10)) {
		t.Fatalf("reset row %s", got)
	}
	if got := e.zmembers("emq:{q}:pending"); !reflect.DeepEqual(got, []string{idA, idB, idD}) {
		t.Fatalf("pending %v", got)
	}
	// Run now: one job not yet due, then every scheduled job.
	e.ok("EMQ.ENQUEUE", "q", "JOB00000000007", "p", "DELAY", 60000)
	e.ok("EMQ.ENQUEUE", "q", "JOB00000000006", "p", "DELAY", 90000)
	e.ok("EMQ.ENQUEUE", "q", "JOB00000000005", "p", "DELAY", 30000)
	if got := e.ok("EMQ.PROMOTE.JOB", "q", "JOB00000000007"); got != int64(1) {
		t.Fatalf("promote.job %v", got)
	}
	for _, c := range []struct {
		args []any
		want string
	}{
		{[]any{"EMQ.PROMOTE.JOB", "q", "JOB00000000007"}, "EMQSTATE job is not scheduled"},
		{[]any{"EMQ.PROMOTE.JOB", "q", "JOB00000000009"}, "EMQSTALE job gone"},
		{[]any{"EMQ.PROMOTE.ALL", "q", "LIMIT", 10001}, "ERR limit must be at most 10000"},
		{[]any{"EMQ.PROMOTE.ALL", "q", "LIMIT", 0}, "ERR limit must be a positive integer"},
		{[]any{"EMQ.PROMOTE.ALL", "q", "LIMIT"}, "ERR syntax error"},
		{[]any{"EMQ.REPROCESS.ALL", "q", "RESET", "RESET"}, "ERR syntax error"},
		{[]any{"EMQ.REMOVE.ALL", "q", "active"}, "ERR state must be one of pending, scheduled, dead, completed"},
		{[]any{"EMQ.REMOVE.ALL", "q", "dead", "LIMIT", "x"}, "ERR value is not an integer or out of range"},
	} {
		if got := e.refused(c.args...); got != c.want {
			t.Errorf("%v: %q, want %q", c.args, got, c.want)
		}
	}
	if got := pair(e.ok("EMQ.PROMOTE.ALL", "q", "LIMIT", 1)); got != [2]int64{1, 1} {
		t.Fatalf("promote.all %v", got)
	}
	if got := e.zmembers("emq:{q}:schedule"); !reflect.DeepEqual(got, []string{"JOB00000000006"}) {
		t.Fatalf("the earliest goes first: %v", got)
	}
	// A lane row refuses the whole call; nothing is written.
	e.ok("HSET", "emq:{q}:job:JOB00000000006", "group", "g")
	before := e.digest()
	if got := e.refused("EMQ.PROMOTE.ALL", "q"); got != "EMQLANE lane rows are not served natively" {
		t.Fatalf("lane: %q", got)
	}
	if e.digest() != before {
		t.Fatal("a refusal wrote")
	}
	e.ok("HDEL", "emq:{q}:job:JOB00000000006", "group")
	if got := pair(e.ok("EMQ.PROMOTE.ALL", "q")); got != [2]int64{1, 0} {
		t.Fatalf("promote.all rest %v", got)
	}
	// Drain, and the retained completed jobs.
	e.ok("EMQ.RETAIN", "q", "COMPLETED", 10, 0)
	_, tok, _ := e.claim("q", 1000) // idA is held, never removed
	e.ok("EMQ.COMPLETE", "q", idA, tok)
	_, tok, _ = e.claim("q", 1000)
	if got := pair(e.ok("EMQ.REMOVE.ALL", "q", "PENDING", "LIMIT", 2)); got != [2]int64{2, 2} {
		t.Fatalf("drain %v", got)
	}
	if got := pair(e.ok("EMQ.REMOVE.ALL", "q", "pending")); got != [2]int64{2, 0} {
		t.Fatalf("drain rest %v", got)
	}
	if got := pair(e.ok("EMQ.REMOVE.ALL", "q", "completed")); got != [2]int64{1, 0} || e.row("q", idA) != "" {
		t.Fatalf("completed %v", got)
	}
	if got := pair(e.ok("EMQ.REMOVE.ALL", "q", "dead")); got != [2]int64{0, 0} {
		t.Fatalf("no dead %v", got)
	}
	if e.row("q", idB) == "" || e.field("q", idB, "state") != "active" || tok != "2" {
		t.Fatalf("the held job %s (token %s)", e.row("q", idB), tok)
	}
	want := []string{
		"enqueued " + idA, "claimed " + idA, "dead " + idA, "enqueued " + idB, "claimed " + idB, "dead " + idB,
		"enqueued " + idD, "claimed " + idD, "dead " + idD,
		"reprocessed " + idA, "reprocessed " + idB, "reprocessed " + idD,
		"enqueued JOB00000000007", "enqueued JOB00000000006", "enqueued JOB00000000005", "promoted JOB00000000007",
		"promoted JOB00000000005", "promoted JOB00000000006",
		"claimed " + idA, "completed " + idA, "claimed " + idB,
		"removed " + idD, "removed JOB00000000005", "removed JOB00000000006", "removed JOB00000000007", "removed " + idA,
	}
	for _, w := range want {
		m, err := ps.ReceiveTimeout(e.ctx, 10*time.Second)
		if err != nil {
			t.Fatalf("waiting for %q: %v", w, err)
		}
		if msg, ok := m.(*redis.Message); !ok || msg.Payload != w+" 0" {
			t.Fatalf("got %#v, want %q", m, w+" 0")
		}
	}
	// Every bulk call reached the append-only file: a restart replays the
	// same keyspace.
	before = e.digest()
	tg.Restart()
	if e.digest() != before {
		t.Fatal("the keyspace after a restart differs from the one before")
	}
}
