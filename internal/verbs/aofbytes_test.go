package verbs

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// byteFeed records every Append as the RESP bytes an AOF would hold.
type byteFeed struct{ buf bytes.Buffer }

func (f *byteFeed) Append(db int, cmds [][][]byte) {
	for _, argv := range cmds {
		f.buf.WriteString("*" + strconv.Itoa(len(argv)) + "\r\n")
		for _, a := range argv {
			f.buf.WriteString("$" + strconv.Itoa(len(a)) + "\r\n")
			f.buf.Write(a)
			f.buf.WriteString("\r\n")
		}
	}
}

// plainSession runs every verb that moves a job on a queue that uses no
// priority, no lane and no flow, on the manual clock, and returns the
// writes' bytes.
func plainSession(t *testing.T) []byte {
	h := newTH(t)
	f := &byteFeed{}
	h.s.SetFeed(f)
	h.ok("EMQ.ENQUEUE", "q", "JOB00000000001", "a")
	h.ok("EMQ.ENQUEUE", "q", "JOB00000000002", "b")
	h.ok("EMQ.ENQUEUE", "q", "JOB00000000003", "c", "DELAY", "100")
	h.ok("EMQ.ENQUEUE.MANY", "q", "JOBS", "JOB00000000004", "d", "JOB00000000005", "e")
	h.ok("EMQ.ENQUEUE", "q", "*", "m")
	h.ok("EMQ.CLAIM", "q", "1000", "COUNT", "2")
	h.ok("EMQ.REQUEUE", "q", "JOB00000000001", "1")
	h.ok("EMQ.FAIL", "q", "JOB00000000002", "1", "1", "0", "boom")
	h.ok("EMQ.REPROCESS", "q", "JOB00000000002")
	h.clk.Advance(200)
	h.ok("EMQ.CLAIM", "q", "50", "COUNT", "3")
	h.ok("EMQ.DELAY", "q", "JOB00000000002", "2", "IN", "10")
	h.ok("EMQ.COMPLETE", "q", "JOB00000000001", "2", "NEXT", "50")
	h.clk.Advance(100)
	h.ok("EMQ.STALLED.CHECK", "q", "5")
	h.ok("EMQ.PROMOTE", "q")
	h.run = "otherrun0000000000000000000000000000000"
	h.ok("EMQ.CLAIM", "q", "10", "COUNT", "10")
	h.clk.Advance(20)
	h.ok("EMQ.STALLED.CHECK", "q")
	h.ok("EMQ.REMOVE", "q", "JOB00000000005")
	h.ok("EMQ.SCHEDULE", "q", "s1", "EVERY", "1000", "p")
	h.clk.Advance(2000)
	h.ok("EMQ.SCHEDULE.FIRE", "q")
	h.ok("EMQ.CLAIM", "q", "10", "COUNT", "10")
	return f.buf.Bytes()
}

// TestPlainQueueAOFBytes: a queue with no priority, lane or flow writes
// byte-identical AOF records to emqd before priorities and lanes
// (docs/verbs.md §1.3). testdata/plain_session.aof was recorded by this
// test on main before priorities existed (EMQD_WRITE_AOF_GOLDEN=1).
func TestPlainQueueAOFBytes(t *testing.T) {
	got := plainSession(t)
	path := filepath.Join("testdata", "plain_session.aof")
	if os.Getenv("EMQD_WRITE_AOF_GOLDEN") == "1" {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < 2000 {
		t.Fatalf("golden has only %d bytes", len(want))
	}
	if !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		lo := max(0, i-200)
		t.Fatalf("AOF bytes differ at %d (got %d bytes, want %d):\ngot  ...%q\nwant ...%q", i, len(got), len(want),
			got[lo:min(len(got), i+200)], want[lo:min(len(want), i+200)])
	}
}
