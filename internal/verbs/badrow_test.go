package verbs

import (
	"context"
	"log/slog"
	"sync"
	"testing"
)

type countHandler struct {
	mu   sync.Mutex
	keys []string
}

func (h *countHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "key" {
			h.keys = append(h.keys, a.Value.String())
		}
		return true
	})
	return nil
}
func (h *countHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countHandler) WithGroup(string) slog.Handler      { return h }

// TestBadRowLoggedOncePerKey is docs/verbs.md §2.11: every refusal caused by
// stored data is counted; each key is logged once (rate-limited), and a
// refusal not caused by stored data is neither.
func TestBadRowLoggedOncePerKey(t *testing.T) {
	ch := &countHandler{}
	h := newTH(t)
	h.bind(slog.New(ch))
	k := NewKeys("badrows")
	h.setString(k.Row(tID), "x")
	h.zadd(k.Pending, 0, tID)
	h.hset(k.Row(tID2), "state", "active", "attempts", "1", "group", "g")
	h.zadd(k.Active, 0, tID2)
	n := h.v.BadRowRefusals()
	for i := 0; i < 3; i++ {
		if got := h.do("EMQ.CLAIM", "badrows", "1000"); got != replyErr("WRONGTYPE Operation against a key holding the wrong kind of value") {
			t.Fatal(got)
		}
		if got := h.do("EMQ.COMPLETE", "badrows", tID2, "1"); got != replyErr(ErrLane) {
			t.Fatal(got)
		}
		if got := h.do("EMQ.COMPLETE", "badrows", tID3, "1"); got != replyErr(ErrGone) {
			t.Fatal(got)
		}
	}
	if got := h.v.BadRowRefusals() - n; got != 6 {
		t.Fatalf("counted %d bad-row refusals, want 6", got)
	}
	if len(ch.keys) != 2 || ch.keys[0] != k.Row(tID) || ch.keys[1] != k.Row(tID2) {
		t.Fatalf("logged %v, want each bad key once", ch.keys)
	}
}
