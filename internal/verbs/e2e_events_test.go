package verbs_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestEventsOverTheWire: RESP2 and RESP3 subscribers of emq:{q}:events,
// and a pattern subscriber, each receive one message per transition, in
// order (docs/verbs.md §1.6); PUBSUB NUMSUB shows the channel is a plain
// Pub/Sub channel.
func TestEventsOverTheWire(t *testing.T) {
	e := newEnv(t)
	var subs []*redis.PubSub
	for _, proto := range []int{2, 3} {
		c := e.client(proto)
		ps := c.Subscribe(e.ctx, "emq:{mail}:events")
		if _, err := ps.Receive(e.ctx); err != nil {
			t.Fatal(err)
		}
		subs = append(subs, ps)
	}
	pc := e.client(3)
	pp := pc.PSubscribe(e.ctx, "emq:{*}:events")
	if _, err := pp.Receive(e.ctx); err != nil {
		t.Fatal(err)
	}
	subs = append(subs, pp)
	if n := e.ok("PUBSUB", "NUMSUB", "emq:{mail}:events").([]any); n[1] != int64(2) {
		t.Fatalf("numsub %v", n)
	}
	id := e.ok("EMQ.ENQUEUE", "mail", "*", "hi").(string)
	_, tok, _ := e.claim("mail", 1000)
	e.ok("EMQ.COMPLETE", "mail", id, tok)
	e.ok("EMQ.ENQUEUE", "other", "*", "x") // another queue's channel
	want := []string{"enqueued " + id + " 0", "claimed " + id + " 0", "completed " + id + " 0"}
	for i, ps := range subs {
		for _, w := range want {
			m, err := ps.ReceiveTimeout(e.ctx, 10*time.Second)
			if err != nil {
				t.Fatalf("subscriber %d: %v", i, err)
			}
			msg, ok := m.(*redis.Message)
			if !ok || msg.Channel != "emq:{mail}:events" || msg.Payload != w {
				t.Fatalf("subscriber %d: got %s, want %q", i, fmt.Sprint(m), w)
			}
		}
	}
	// The pattern subscriber also hears the other queue.
	m, err := pp.ReceiveTimeout(e.ctx, 10*time.Second)
	if msg, ok := m.(*redis.Message); err != nil || !ok || msg.Channel != "emq:{other}:events" {
		t.Fatalf("pattern: %v %v", m, err)
	}
}
