package verbs

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Rule 11 (verbs.md section 1): a refusal caused by stored data (a wrong
// type, a lane row, a counter HINCRBY would refuse) is counted, and logged
// once per key per badRowLogEvery, so an operator can find and repair the
// key with plain commands.

var badRows struct {
	n    atomic.Int64
	mu   sync.Mutex
	last map[string]time.Time
}

// badRowLogEvery is how often one key's refusal is logged again.
const badRowLogEvery = time.Minute

// badRowLogKeys bounds the memory of logged keys.
const badRowLogKeys = 4096

// BadRowRefusals is the number of refusals caused by stored data since the
// process started (INFO's emq_bad_row_refusals).
func BadRowRefusals() int64 { return badRows.n.Load() }

// noteBadRow counts r (when r.Bad) and logs it unless its key was logged
// within badRowLogEvery.
func noteBadRow(db int, r refusal) {
	if !r.Bad {
		return
	}
	badRows.n.Add(1)
	now := time.Now()
	badRows.mu.Lock()
	if badRows.last == nil || len(badRows.last) >= badRowLogKeys {
		badRows.last = make(map[string]time.Time)
	}
	t, seen := badRows.last[r.Key]
	log := !seen || now.Sub(t) >= badRowLogEvery
	if log {
		badRows.last[r.Key] = now
	}
	badRows.mu.Unlock()
	if log {
		slog.Warn("emq: refused a verb because of stored data; repair the key with plain commands",
			"db", db, "key", r.Key, "error", r.Text)
	}
}
