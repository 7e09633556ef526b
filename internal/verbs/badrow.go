package verbs

import (
	"log/slog"
	"sync/atomic"
	"time"
)

// docs/verbs.md §2.11: a refusal caused by stored data (a wrong
// type, a lane row, a counter HINCRBY would refuse) is counted, and logged
// once per key per badRowLogEvery, so an operator can find and repair the
// key with plain commands.

// badRowLog counts and logs one server's refusals caused by stored data
// (store lock held, except n, read from anywhere).
type badRowLog struct {
	n    atomic.Int64
	log  *slog.Logger
	last map[string]time.Time // when each key was last logged
}

// badRowLogEvery is how often one key's refusal is logged again.
const badRowLogEvery = time.Minute

// badRowLogKeys bounds the memory of logged keys.
const badRowLogKeys = 4096

// note counts r (when r.Bad) and logs it unless its key was logged within
// badRowLogEvery.
func (b *badRowLog) note(db int, r refusal) {
	if !r.Bad {
		return
	}
	b.n.Add(1)
	now := time.Now()
	if b.last == nil || len(b.last) >= badRowLogKeys {
		b.last = make(map[string]time.Time)
	}
	if t, seen := b.last[r.Key]; seen && now.Sub(t) < badRowLogEvery {
		return
	}
	b.last[r.Key] = now
	b.log.Warn("emq: refused a verb because of stored data; repair the key with plain commands",
		"db", db, "key", r.Key, "error", r.Text)
}
