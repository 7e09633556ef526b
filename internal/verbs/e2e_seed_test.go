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

// End to end through go-redis, what only emqd has: the exact AOF record of a
// verb, and EMQ.DEBUG refused with debug off. The contract's scenarios (the cap
// on failures, the counters table, the sweep, the three recoveries, the
// restart exemption, fencing, arguments before reads, MULTI/WATCH, RESP3
// maps) are written once in cluster/conformance and run there against emqd
// and against the cluster library (docs/cluster.md).

const (
	idA = "JOB00000000001"
	idB = "JOB00000000002"
	idC = "JOB00000000003"
)

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
