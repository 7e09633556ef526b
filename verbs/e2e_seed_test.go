package verbs_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/emqd/emqd/clock"
	"github.com/emqd/emqd/server"
	"github.com/redis/go-redis/v9"
)

// End to end through go-redis: the seed's cases and verbs.md sections 3-5.

const (
	idA = "JOB00000000001"
	idB = "JOB00000000002"
	idC = "JOB00000000003"
)

func TestE2ECapIsOnFailuresNotAttempts(t *testing.T) {
	e := newEnv(t)
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
	if e.row("q", idA) != "state=dead attempts=3 payload=p lease_epoch="+e.srv.RunID()+" last_error=second failures=2" {
		t.Fatalf("dead row %s", e.row("q", idA))
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

func TestE2ERequeueThreeWritesNoCounter(t *testing.T) {
	e := newEnv(t)
	e.ok("EMQ.ENQUEUE", "q", idA, "p")
	_, tok, _ := e.claim("q", 1000)
	before := e.row("q", idA)
	feed := e.recordFeed()
	e.ok("EMQ.REQUEUE", "q", idA, tok)
	want := []string{"ZREM emq:{q}:active " + idA, "HSET emq:{q}:job:" + idA + " state pending", "ZADD emq:{q}:pending 0 " + idA}
	if feed.n() != 1 || !reflect.DeepEqual(feed.last(), want) {
		t.Fatalf("REQUEUE recorded %v, want one record %v", feed.recs, want)
	}
	after := e.row("q", idA)
	if strings.Replace(before, "state=active", "state=pending", 1) != after {
		t.Fatalf("row %q -> %q", before, after)
	}
	if n, _ := e.do("EXISTS", "emq:{q}:metrics:failed", "emq:{q}:metrics:completed"); n != int64(0) {
		t.Fatal("REQUEUE wrote a metric")
	}
}

// TestE2ECountersTable reads the row after each verb of verbs.md section 3.
func TestE2ECountersTable(t *testing.T) {
	e := newEnv(t)
	run := e.srv.RunID()
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
		{"stalled.check (counted)", func() { e.advance(1000); e.ok("EMQ.STALLED.CHECK", "q", 5) }, "attempts=4 failures=1 stalled=1 lease_epoch=" + run},
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
	if got := e.ok("EMQ.COUNTS", "q"); !reflect.DeepEqual(got, []any{"pending", int64(0), "active", int64(0), "scheduled", int64(0), "dead", int64(0), "completed", int64(1), "failed", int64(2)}) {
		t.Fatalf("counts %v", got)
	}
}

// expired makes id an expired lease of q by hand: active, attempts 1,
// lease_epoch epoch ("" for none), extra fields, deadline in the past.
func (e *env) expired(q, id, epoch string, extra ...any) {
	e.t.Helper()
	args := []any{"HSET", "emq:{" + q + "}:job:" + id, "state", "active", "attempts", "1", "payload", "p"}
	if epoch != "" {
		args = append(args, "lease_epoch", epoch)
	}
	e.ok(append(args, extra...)...)
	e.ok("ZADD", "emq:{"+q+"}:active", t0-1, id)
}

func TestE2EStalledCheck(t *testing.T) {
	e := newEnv(t)
	run := e.srv.RunID()
	feed := e.recordFeed()

	// Ghost: removed from active, listed nowhere, no row created.
	e.ok("ZADD", "emq:{q}:active", t0-5, idC)
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
		{"row not a hash", func() { e.ok("SET", "emq:{q}:job:"+idB, "x"); e.ok("ZADD", "emq:{q}:active", t0-1, idB) }, "WRONGTYPE Operation against a key holding the wrong kind of value"},
		{"stalled not an integer", func() { e.expired("q", idB, run, "stalled", "abc") }, "ERR hash value is not an integer"},
		{"stalled would overflow", func() { e.expired("q", idB, run, "stalled", "9223372036854775807") }, "ERR increment or decrement would overflow"},
	} {
		e.ok("FLUSHALL")
		e.expired("q", idA, run)                  // a counted expiry before the bad one
		e.ok("ZADD", "emq:{q}:active", t0-9, idC) // and a ghost
		c.setup()
		before, n := e.digest(), feed.n()
		if got := e.refused("EMQ.STALLED.CHECK", "q", 3); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
		if e.digest() != before || feed.n() != n {
			t.Errorf("%s: the refused sweep wrote", c.name)
		}
	}

	// Another run's lease: exempt, uncounted, recovered; even with a bad stalled.
	e.ok("FLUSHALL")
	e.expired("q", idA, "0000000000000000000000000000000000000000", "stalled", "junk")
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
		e.advance(100)
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
	for _, args := range [][]any{{"EMQ.STALLED.CHECK", "q", 0}, {"EMQ.STALLED.CHECK", "q", -1}, {"EMQ.STALLED.CHECK", "q", 1, 0}} {
		want := "ERR max_stalled must be a positive integer"
		if len(args) == 4 {
			want = "ERR limit must be a positive integer"
		}
		if got := e.refused(args...); got != want {
			t.Errorf("%v: %q", args, got)
		}
	}
	e.ok("FLUSHALL")
	e.expired("q", idA, run)
	e.expired("q", idB, run)
	if got := e.ok("EMQ.STALLED.CHECK", "q", 2, 1); !reflect.DeepEqual(got, []any{[]any{idA}, []any{}}) {
		t.Fatalf("limit 1: %v", got)
	}
}

// TestE2EThreeRecoveries is verbs.md section 5 / the seed's table.
func TestE2EThreeRecoveries(t *testing.T) {
	e := newEnv(t)
	e.expired("q", idA, "0000000000000000000000000000000000000000")
	if got := e.ok("EMQ.STALLED.CHECK", "q", 1); !reflect.DeepEqual(got, []any{[]any{idA}, []any{}}) {
		t.Fatalf("previous run: %v", got)
	}
	if e.row("q", idA) != "state=pending attempts=1 payload=p lease_epoch=0000000000000000000000000000000000000000" {
		t.Fatalf("exempt row %s", e.row("q", idA))
	}
	e.ok("FLUSHALL")
	e.expired("q", idA, e.srv.RunID())
	if got := e.ok("EMQ.STALLED.CHECK", "q", 1); !reflect.DeepEqual(got, []any{[]any{}, []any{idA}}) {
		t.Fatalf("this run: %v", got)
	}
	if e.row("q", idA) != "state=dead attempts=1 payload=p lease_epoch="+e.srv.RunID()+" stalled=1 last_error=stalled" {
		t.Fatalf("dead row %s", e.row("q", idA))
	}
	if !reflect.DeepEqual(e.zmembers("emq:{q}:dead"), []string{idA}) || e.ok("HGET", "emq:{q}:metrics:failed", "count") != "1" {
		t.Fatal("dead set or metric")
	}
}

// TestE2EFencing: a late holder is refused by all six token verbs; a holder
// whose lease deadline passed but that no sweep recovered is still served.
func TestE2EFencing(t *testing.T) {
	e := newEnv(t)
	e.ok("EMQ.ENQUEUE", "q", idA, "p")
	_, tok1, _ := e.claim("q", 100)
	e.advance(100)
	if got := e.ok("EMQ.STALLED.CHECK", "q", 5); !reflect.DeepEqual(got, []any{[]any{idA}, []any{}}) {
		t.Fatal(got)
	}
	// Swept, not yet re-claimed: the token still matches but the lease is lost.
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
	if e.digest() != before {
		t.Fatal("a refused late holder wrote")
	}
	// The current holder's deadline passes; nothing swept: still served.
	e.advance(5000)
	e.ok("EMQ.PROGRESS", "q", idA, tok2, "90%")
	e.ok("EMQ.EXTEND", "q", idA, tok2, 100)
	e.advance(5000)
	if got := e.ok("EMQ.COMPLETE", "q", idA, tok2); got != int64(1) {
		t.Fatal(got)
	}
}

// TestE2EArgumentsBeforeReads: rule 1 with rule 8's texts through the wire.
func TestE2EArgumentsBeforeReads(t *testing.T) {
	e := newEnv(t)
	for _, k := range []string{"pending", "active", "schedule", "dead", "meta", "metrics:failed", "job:" + idA} {
		e.ok("SET", "emq:{q}:"+k, "x")
	}
	for _, c := range []struct {
		args []any
		want string
	}{
		{[]any{"EMQ.CLAIM", "q", "0"}, "ERR lease_ms must be a positive integer"},
		{[]any{"EMQ.CLAIM", "q", "1", "COUNT", "x"}, "ERR value is not an integer or out of range"},
		{[]any{"EMQ.FAIL", "q", idA, "1", "0", "0", "e"}, "ERR max_attempts must be a positive integer"},
		{[]any{"EMQ.ENQUEUE", "q", "bad", "p", "DELAY", "5", "AT", "5"}, "ERR syntax error"},
		{[]any{"EMQ.ENQUEUE", "q", "bad", "p"}, "EMQKIND job id must be JOB-namespaced"},
		{[]any{"EMQ.ENQUEUE", "no good", "bad", "p"}, "ERR invalid queue name"},
		{[]any{"EMQ.STALLED.CHECK", "q", "1", "-2"}, "ERR limit must be a positive integer"},
		{[]any{"emq.claim", "q"}, "ERR wrong number of arguments for 'emq.claim' command"},
		{[]any{"EMQ.DEBUG", "CLOCK"}, "ERR wrong number of arguments for 'emq.debug|clock' command"},
		{[]any{"EMQ.CLAIM", "q", "1"}, "WRONGTYPE Operation against a key holding the wrong kind of value"},
		{[]any{"EMQ.COMPLETE", "q", idA, "1"}, "WRONGTYPE Operation against a key holding the wrong kind of value"},
		{[]any{"EMQ.REAP", "q"}, "ERR unknown command 'EMQ.REAP', with args beginning with: 'q' "},
	} {
		if got := e.refused(c.args...); got != c.want {
			t.Errorf("%v: %q, want %q", c.args, got, c.want)
		}
	}
}

// TestE2EDebugClock: EMQ.DEBUG CLOCK ADVANCE moves the server clock with
// enable-debug-command yes, and is refused with Valkey's DEBUG text without.
func TestE2EDebugClock(t *testing.T) {
	e := newEnv(t)
	e.ok("EMQ.ENQUEUE", "q", idA, "p", "DELAY", 1000)
	e.ok("EMQ.DEBUG", "CLOCK", "ADVANCE", 999)
	if got := e.ok("EMQ.PROMOTE", "q"); got != int64(0) {
		t.Fatal("promoted early")
	}
	e.ok("EMQ.DEBUG", "CLOCK", "ADVANCE", 1)
	if got := e.ok("EMQ.PROMOTE", "q"); got != int64(1) {
		t.Fatal("not promoted at the due time")
	}

	srv, err := server.Start(server.Options{Clock: clock.NewManual(t0)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(context.Background())
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), Protocol: 2})
	defer c.Close()
	want := "ERR EMQ.DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server."
	if err := c.Do(context.Background(), "EMQ.DEBUG", "CLOCK", "ADVANCE", 10).Err(); err == nil || err.Error() != want {
		t.Fatalf("debug off: %v", err)
	}
	if now := srv.Clock().NowMs(); now != t0 {
		t.Fatalf("clock moved to %d", now)
	}
}

// TestE2EMultiWatch: verbs inside MULTI/EXEC (BLOCK does not block), and a
// verb's writes invalidate WATCH on the keys it touches.
func TestE2EMultiWatch(t *testing.T) {
	e := newEnv(t)
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
	if got := cmds[0].(*redis.Cmd).Val(); !reflect.DeepEqual(got, []any{}) {
		t.Fatalf("BLOCK in MULTI on an empty queue: %#v", got)
	}
	if got := cmds[2].(*redis.Cmd).Val(); !reflect.DeepEqual(got, []any{[]any{idA, "in-multi", "1", int64(0)}}) {
		t.Fatalf("claim in MULTI: %#v", got)
	}
	if cmds[3].Err() == nil || cmds[3].Err().Error() != "EMQSTALE complete token mismatch" {
		t.Fatalf("refusal inside EXEC: %v", cmds[3].Err())
	}

	other := e.client(2)
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
	// A refused verb does not invalidate WATCH.
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

// TestE2ERESP3Maps: COUNTS and JOB are maps after HELLO 3.
func TestE2ERESP3Maps(t *testing.T) {
	e := newEnvProto(t, 3)
	e.ok("EMQ.ENQUEUE", "q", idA, "p")
	e.claim("q", 500)
	got := e.ok("EMQ.COUNTS", "q").(map[any]any)
	if got["active"] != int64(1) || got["pending"] != int64(0) || len(got) != 6 {
		t.Fatalf("counts %v", got)
	}
	job := e.ok("EMQ.JOB", "q", idA).(map[any]any)
	if job["state"] != "active" || job["lease_deadline_ms"] != "1700000000500" || job["attempts"] != "1" {
		t.Fatalf("job %v", job)
	}
	if v, _ := e.do("EMQ.JOB", "q", idB); v != nil {
		t.Fatalf("missing job %v", v)
	}
}
