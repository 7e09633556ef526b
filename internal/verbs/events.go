package verbs

import (
	"strconv"

	"github.com/emqd/emqd/internal/store"
)

// Events (docs/verbs.md §1.6): every job transition publishes one message
// on the queue's Pub/Sub channel emq:{q}:events (Keys.Events), with
// PUBLISH's semantics: delivered to the subscribers of the moment, kept
// nowhere, and never recorded in the AOF. The message is
// "<event> <id> <db>": the event name (Event.String), the job id and the
// database index in decimal, separated by one space. Every verb that
// applies a transition calls event (or events) once per job after its
// plan was applied; with nobody subscribed that is one map lookup and no
// allocation (BenchmarkEventsNoSubscriber).

// Event is one kind of published transition.
type Event uint8

// The published events, by name (Event.String).
const (
	EvEnqueued    Event = iota // a row was created (pending or scheduled)
	EvClaimed                  // EMQ.CLAIM handed the job out
	EvCompleted                // EMQ.COMPLETE
	EvFailed                   // EMQ.FAIL retried the job (it is scheduled)
	EvDead                     // dead-lettered: EMQ.FAIL's death or the sweep's
	EvRequeued                 // EMQ.REQUEUE
	EvDelayed                  // EMQ.DELAY
	EvStalled                  // EMQ.STALLED.CHECK sent the job back to pending
	EvPromoted                 // scheduled -> pending (EMQ.PROMOTE, EMQ.CLAIM's promotion)
	EvReprocessed              // EMQ.REPROCESS (dead -> pending)
	EvRemoved                  // EMQ.REMOVE deleted the job
	EvProgress                 // EMQ.PROGRESS stored a progress value
	EvTrimmed                  // retention trimmed a finished job (docs/verbs.md §4.21)
	EvReleased                 // a flow parent's children ended: waiting -> pending (docs/verbs.md §4.25)
	numEvents
)

var eventNames = [numEvents]string{
	"enqueued", "claimed", "completed", "failed", "dead", "requeued", "delayed", "stalled",
	"promoted", "reprocessed", "removed", "progress", "trimmed", "released",
}

// String is the event's name as published ("enqueued", "dead", ...).
func (e Event) String() string {
	if e < numEvents {
		return eventNames[e]
	}
	return "unknown"
}

// EventMessage is the message published for ev of job id in database db:
// "<event> <id> <db>" (docs/verbs.md §1.6).
func EventMessage(ev Event, id string, db int) []byte {
	return appendEvent(nil, ev, id, db)
}

func appendEvent(b []byte, ev Event, id string, db int) []byte {
	b = append(b, ev.String()...)
	b = append(b, ' ')
	b = append(b, id...)
	b = append(b, ' ')
	return strconv.AppendInt(b, int64(db), 10)
}

// listening reports whether a message on k's channel would reach anyone.
func (vs *Verbs) listening(k *Keys) bool {
	return vs.publish != nil && vs.listens(k.Events)
}

// event publishes ev of job id on k's channel (docs/verbs.md §1.6). Call
// it once per job and transition, after the plan was applied, in the order
// of the transitions.
func (vs *Verbs) event(c *store.Ctx, k *Keys, ev Event, id string) {
	if !vs.listening(k) {
		return
	}
	vs.evbuf = appendEvent(vs.evbuf[:0], ev, id, c.DB.Index)
	vs.publish(k.Events, vs.evbuf)
}

// events publishes ev for each id in ids, in order (one look at the
// subscribers for all of them).
func (vs *Verbs) events(c *store.Ctx, k *Keys, ev Event, ids []string) {
	if len(ids) == 0 || !vs.listening(k) {
		return
	}
	for _, id := range ids {
		vs.evbuf = appendEvent(vs.evbuf[:0], ev, id, c.DB.Index)
		vs.publish(k.Events, vs.evbuf)
	}
}
