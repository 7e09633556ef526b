package server

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/emqd/emqd/clock"
	"github.com/emqd/emqd/internal/verbs"
)

// TestKnownQueuesPruned (the newcomer's finding): a client that touched
// MaxTrackedQueues queue names filled the known-queue table for good, so a
// later queue was missing from INFO, /metrics and the dashboard, and
// deleting the queues changed nothing until a restart. Now the clients
// cron forgets, every 10 s of server clock, the queues with no key left,
// and registers the keyspace's queues again when one was turned away.
func TestKnownQueuesPruned(t *testing.T) {
	clk := clock.NewManual(1_700_000_000_000)
	s := startServer(t, nil, clk)
	c := dial(t, s)
	var b bytes.Buffer
	b.WriteString(string(encode("SELECT", "1")))
	for i := 0; i < verbs.MaxTrackedQueues; i++ {
		b.Write(encode("EMQ.ENQUEUE", "mq"+strconv.Itoa(i), "*", "x"))
	}
	c.Write(b.Bytes())
	for i := 0; i <= verbs.MaxTrackedQueues; i++ {
		c.Read()
	}
	c.Do("SELECT", "0")
	if r := c.Do("EMQ.ENQUEUE", "late", "*", "x"); !strings.HasPrefix(r, "$") {
		t.Fatalf("EMQ.ENQUEUE late: %q", r)
	}
	if n := emqInfoField(t, c, "emq_queues"); n != strconv.Itoa(verbs.MaxTrackedQueues) {
		t.Fatalf("emq_queues %s, want the cap %d", n, verbs.MaxTrackedQueues)
	}
	c.Do("SELECT", "1")
	if r := c.Do("FLUSHDB"); r != "+OK\r\n" {
		t.Fatal(r)
	}
	// Before the prune period nothing is forgotten.
	clk.Advance(5_000)
	clk.Wait()
	if n := emqInfoField(t, c, "emq_queues"); n != strconv.Itoa(verbs.MaxTrackedQueues) {
		t.Fatalf("emq_queues %s before the prune period", n)
	}
	clk.Advance(queuePruneEveryMs)
	clk.Wait()
	eventually(t, func() bool { return emqInfoField(t, c, "emq_queues") == "1" })
	st := s.EMQStats()
	if qs := st.Queues(); len(qs) != 1 || qs[0].Queue != "late" || qs[0].DB != 0 {
		t.Fatalf("known queues after the prune: %+v", qs)
	}
}

// emqInfoField reads one field of INFO emq over a raw connection.
func emqInfoField(t *testing.T, c interface{ Do(...string) string }, field string) string {
	t.Helper()
	for _, line := range strings.Split(c.Do("INFO", "emq"), "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	t.Fatalf("no %s in INFO emq", field)
	return ""
}
