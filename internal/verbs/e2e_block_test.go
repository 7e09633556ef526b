package verbs_test

import (
	"testing"
)

// Blocking claims end to end (docs/verbs.md §4.3.3), over raw sockets.

func claimCmd(block string, extra ...string) []string {
	return append([]string{"EMQ.CLAIM", "q", "1000", "BLOCK", block}, extra...)
}

func TestE2EBlockedClaimersFIFO(t *testing.T) {
	e := newEnv(t)
	a, b := e.raw(), e.raw()
	a.send(claimCmd("0"))
	e.waitBlocked(1)
	b.send(claimCmd("0"))
	e.waitBlocked(2)
	e.ok("EMQ.ENQUEUE", "q", idA, "first")
	if got := a.readReply(); got != "["+"["+idA+" first 1 :0]]" {
		t.Fatalf("first claimer got %s", got)
	}
	e.waitBlocked(1) // one job wakes one claimer
	e.ok("EMQ.ENQUEUE", "q", idB, "second")
	if got := b.readReply(); got != "[["+idB+" second 1 :0]]" {
		t.Fatalf("second claimer got %s", got)
	}
	e.waitBlocked(0)
}

func TestE2EBlockTimeout(t *testing.T) {
	e := newEnv(t)
	a := e.raw()
	a.send(claimCmd("500"))
	e.waitBlocked(1)
	e.advance(499)
	e.clk.Wait() // every timer due by now has run: none may have ended the wait
	if e.blocked() != 1 {
		t.Fatal("timed out early")
	}
	e.advance(1)
	if got := a.readReply(); got != "(nil)" {
		t.Fatalf("timeout reply %s, want a nil array", got)
	}
	e.waitBlocked(0)
	// The connection is usable again.
	a.send([]string{"PING"})
	if got := a.readReply(); got != "PONG" {
		t.Fatal(got)
	}
}

func TestE2EDisconnectedClaimerTakesNoJob(t *testing.T) {
	e := newEnv(t)
	a := e.raw()
	a.send(claimCmd("0"))
	e.waitBlocked(1)
	a.nc.Close()
	e.waitBlocked(0)
	e.ok("EMQ.ENQUEUE", "q", idA, "p")
	if got := e.zmembers("emq:{q}:pending"); len(got) != 1 || got[0] != idA {
		t.Fatalf("pending %v", got)
	}
	if e.field("q", idA, "attempts") != "0" {
		t.Fatal("the job was claimed")
	}
}

func TestE2EPipelinedBlockingClaims(t *testing.T) {
	e := newEnv(t)
	a := e.raw()
	a.send(claimCmd("0"), claimCmd("0"), []string{"PING"})
	e.waitBlocked(1)
	e.ok("EMQ.ENQUEUE", "q", idA, "one")
	e.ok("EMQ.ENQUEUE", "q", idB, "two")
	if got := a.readReply(); got != "[["+idA+" one 1 :0]]" {
		t.Fatalf("first reply %s", got)
	}
	if got := a.readReply(); got != "[["+idB+" two 1 :0]]" {
		t.Fatalf("second reply %s", got)
	}
	if got := a.readReply(); got != "PONG" {
		t.Fatalf("third reply %s", got)
	}
}

func TestE2EBlockedClaimerGetsDelayedJob(t *testing.T) {
	e := newEnv(t)
	a := e.raw()
	a.send(claimCmd("0"))
	e.waitBlocked(1)
	e.ok("EMQ.ENQUEUE", "q", idA, "later", "DELAY", 1000)
	e.advance(999)
	e.clk.Wait() // every timer due by now has run: the job is not due yet
	if e.blocked() != 1 {
		t.Fatal("served before the job came due")
	}
	e.advance(1)
	if got := a.readReply(); got != "[["+idA+" later 1 :0]]" {
		t.Fatalf("reply %s", got)
	}
	if got := e.ok("HGET", "emq:{q}:job:"+idA, "state"); got != "active" {
		t.Fatal(got)
	}
}

// TestE2EBlockedClaimerWakeSources: requeue, sweep recovery, reprocess and
// resume each wake a blocked claimer; a paused queue keeps it waiting.
func TestE2EBlockedClaimerWakeSources(t *testing.T) {
	e := newEnv(t)
	a := e.raw()
	e.ok("EMQ.ENQUEUE", "q", idA, "p")
	_, tok, _ := e.claim("q", 100)

	a.send(claimCmd("0"))
	e.waitBlocked(1)
	e.ok("EMQ.REQUEUE", "q", idA, tok)
	if got := a.readReply(); got != "[["+idA+" p 2 :0]]" {
		t.Fatalf("after requeue: %s", got)
	}

	a.send(claimCmd("0"))
	e.waitBlocked(1)
	e.advance(1000)
	e.ok("EMQ.STALLED.CHECK", "q", 5)
	if got := a.readReply(); got != "[["+idA+" p 3 :0]]" {
		t.Fatalf("after the sweep: %s", got)
	}

	e.ok("EMQ.FAIL", "q", idA, "3", 1, 0, "x")
	a.send(claimCmd("0"))
	e.waitBlocked(1)
	e.ok("EMQ.REPROCESS", "q", idA)
	if got := a.readReply(); got != "[["+idA+" p 4 :1]]" {
		t.Fatalf("after reprocess: %s", got)
	}

	e.ok("EMQ.PAUSE", "q")
	a.send(claimCmd("0", "COUNT", "2"))
	e.waitBlocked(1)
	e.ok("EMQ.ENQUEUE", "q", idB, "b")
	e.ok("EMQ.ENQUEUE", "q", idC, "c")
	// The server retries the queue's parked claims before it sends the
	// replies of the batch that made jobs ready (docs/architecture.md §3), so
	// once ENQUEUE's reply is here the claimer had its chance.
	if e.blocked() != 1 {
		t.Fatal("a paused queue served a claimer")
	}
	e.ok("EMQ.RESUME", "q")
	if got := a.readReply(); got != "[["+idB+" b 1 :0] ["+idC+" c 1 :0]]" {
		t.Fatalf("after resume: %s", got)
	}
}
