package verbs_test

import (
	"strings"
	"testing"
)

// TestE2ELaneWakeUps: a claimer blocked on a queue whose only work is in a
// lane out of rate tokens is served when the next token arrives (the
// token's time joins the blocking layer's timer, no polling); one blocked
// behind a lane at MAX_ACTIVE is served when a slot comes back (docs/verbs.md
// §2.13, §4.26.3).
func TestE2ELaneWakeUps(t *testing.T) {
	e := newEnv(t)
	e.ok("EMQ.LANE", "q", "r", "RATE", 1, 1000)
	e.ok("EMQ.ENQUEUE", "q", idA, "r1", "LANE", "r")
	e.ok("EMQ.ENQUEUE", "q", idB, "r2", "LANE", "r")
	if id, _, _ := e.claim("q", 60000); id != idA {
		t.Fatalf("first claim %q", id)
	}
	a := e.raw()
	a.send(claimCmd("0"))
	e.waitBlocked(1)
	e.advance(999)
	e.clk.Wait()
	if e.blocked() != 1 {
		t.Fatal("served before the token")
	}
	e.advance(1)
	if got := a.readReply(); !strings.Contains(got, idB) {
		t.Fatalf("after the token: %s", got)
	}
	e.waitBlocked(0)

	e.ok("EMQ.LANE", "q", "m", "MAX_ACTIVE", 1)
	e.ok("EMQ.ENQUEUE", "q", "JOB00000000011", "m1", "LANE", "m")
	e.ok("EMQ.ENQUEUE", "q", "JOB00000000012", "m2", "LANE", "m")
	id, tok, _ := e.claim("q", 60000)
	if id != "JOB00000000011" {
		t.Fatalf("claimed %s", id)
	}
	b := e.raw()
	b.send(claimCmd("0"))
	e.waitBlocked(1)
	e.ok("EMQ.COMPLETE", "q", id, tok)
	if got := b.readReply(); !strings.Contains(got, "JOB00000000012") {
		t.Fatalf("after the slot came back: %s", got)
	}
	e.waitBlocked(0)
}
