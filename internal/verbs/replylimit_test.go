package verbs

import (
	"fmt"
	"strings"
	"testing"
)

// TestClaimReplyFitsOutputLimit (issue 27 item 1): a claim whose reply
// would pass the client's output limit hands out only the jobs whose
// entries fit (the reply is at most the limit, byte for byte what was
// budgeted), leaves the rest pending, and the jobs it did not hand out are
// untouched; a claim whose first job alone does not fit is refused with
// EMQLIMIT and writes nothing (docs/verbs.md §2.16).
func TestClaimReplyFitsOutputLimit(t *testing.T) {
	h := newTH(t)
	payload := strings.Repeat("p", 64<<10)
	for i := 0; i < 300; i++ {
		h.ok("EMQ.ENQUEUE", "bq", fmt.Sprintf("JOB%011d", i+1), payload)
	}
	h.outLimit = 1 << 20
	raw := h.raw("EMQ.CLAIM", "bq", "1000", "COUNT", "300")
	if int64(len(raw)) > h.outLimit {
		t.Fatalf("reply of %d bytes passes the %d-byte limit", len(raw), h.outLimit)
	}
	jobs := parseReply(t, raw).([]any)
	// Each entry is 65,536 payload bytes plus 47 of framing: 15 fit in 1 MiB.
	if len(jobs) != 15 {
		t.Fatalf("claimed %d jobs, want 15", len(jobs))
	}
	for i, j := range jobs {
		if id := j.([]any)[0]; id != fmt.Sprintf("JOB%011d", i+1) {
			t.Fatalf("job %d is %v", i, id)
		}
	}
	if c := h.ok("EMQ.COUNTS", "bq"); fmt.Sprint(c) != "[pending 285 active 15 scheduled 0 dead 0 completed 0 failed 0 retained 0 latency_ms 0 waiting 0]" {
		t.Fatalf("counts %v", c)
	}
	if st, at := h.field("bq", "JOB00000000016", "state"), h.field("bq", "JOB00000000016", "attempts"); st != "pending" || at != "0" {
		t.Fatalf("job 16 was touched: state %q attempts %q", st, at)
	}
	if st, at := h.field("bq", "JOB00000000015", "state"), h.field("bq", "JOB00000000015", "attempts"); st != "active" || at != "1" {
		t.Fatalf("job 15: state %q attempts %q", st, at)
	}

	// The first job alone is larger than the limit: refused, nothing written.
	h.outLimit = 32 << 10
	before, n := digest(h.s), h.feed.n
	if got := h.do("EMQ.CLAIM", "bq", "1000", "COUNT", "300"); got != replyErr(ErrReplyLimit) {
		t.Fatalf("got %v", got)
	}
	if digest(h.s) != before || h.feed.n != n {
		t.Fatal("the refused claim wrote")
	}
	// Without a limit the rest goes out in one reply.
	h.outLimit = 0
	if jobs := h.ok("EMQ.CLAIM", "bq", "1000", "COUNT", "300").([]any); len(jobs) != 285 {
		t.Fatalf("claimed %d, want 285", len(jobs))
	}
}

// TestClaimReplyBytes: the size the budget counts is the size written, for
// RESP2 and RESP3, ids, payloads, tokens and failures of every width.
func TestClaimReplyBytes(t *testing.T) {
	for _, proto := range []int{2, 3} {
		h := newTH(t)
		h.proto = proto
		for i, n := range []int{0, 1, 9, 10, 99, 100, 9999, 10000} {
			id := fmt.Sprintf("JOB%011d", i+1)
			h.ok("EMQ.ENQUEUE", "q", id, strings.Repeat("x", n))
			h.hset(NewKeys("q").Row(id), "failures", fmt.Sprint(-i*1000), "attempts", fmt.Sprint(i*123456))
		}
		c := h.ctx(nil)
		var a claimArgs
		a.K = NewKeys("q")
		a.Count = 8
		r := readClaim(c.DB, &a, tNow)
		v, _, ref := judgeClaim(&r, tNow, []byte(tRun), &a)
		if ref.Refused() || len(v.Jobs) != 8 {
			t.Fatalf("judge: %v %d", ref, len(v.Jobs))
		}
		for i := range v.Jobs {
			c := h.ctx(nil)
			writeClaimJobs(c, v.Jobs[i:i+1])
			if got, want := int64(c.W.Len()), arrayHeaderBytes(1)+v.Jobs[i].replyBytes(); got != want {
				t.Errorf("RESP%d job %d: %d bytes written, %d counted", proto, i, got, want)
			}
		}
	}
}
