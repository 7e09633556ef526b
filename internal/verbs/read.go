package verbs

import (
	"github.com/emqd/emqd/internal/store"
)

// The read pass (docs/verbs.md §2.2) looks at the store through these plain
// values; the judgements take nothing else, so they are pure and table
// tested. Byte slices point into the store and are only valid until the
// verb's write pass.

// keyKind is what a key the verb must read holds.
type keyKind uint8

// Key kinds as a verb sees them.
const (
	keyAbsent keyKind = iota // no such key
	keyOK                    // the type the verb expects (hash or zset)
	keyWrong                 // another type: WRONGTYPE (docs/verbs.md §2.7)
)

// rowField is one hash field as read: Present is false when the field (or the
// whole row) is missing.
type rowField struct {
	Val     []byte
	Present bool
}

// jobRow is a job row as read (docs/verbs.md §1.3). Kind is keyAbsent for no
// row and keyWrong when the row key holds a non-hash (the fields are then unset).
type jobRow struct {
	Kind       keyKind
	Lane       bool // `group` present
	State      rowField
	Attempts   rowField
	Failures   rowField
	Stalled    rowField
	LeaseEpoch rowField
	Payload    rowField
	Priority   rowField // `priority` (absent: 0; docs/verbs.md §1.3)
	Parent     rowField // a flow child's `parent` (<queue>:<id>, docs/verbs.md §4.25)
	Children   bool     // `children` present: a flow parent
	LaneName   rowField // `lane` (absent: the default lane; §4.26)
	LaneSlot   bool     // `lane_slot` present: the job holds a lane slot
}

// counter is a metrics hash (`count` field) as read.
type counter struct {
	Kind  keyKind
	Count rowField
}

var (
	fState      = []byte("state")
	fAttempts   = []byte("attempts")
	fFailures   = []byte("failures")
	fStalled    = []byte("stalled")
	fLeaseEpoch = []byte("lease_epoch")
	fPayload    = []byte("payload")
	fLastError  = []byte("last_error")
	fProgress   = []byte("progress")
	fCount      = []byte("count")
	fPaused     = []byte("paused")
	fLast       = []byte("last")
	fEnqueuedAt = []byte("enqueued_at")
	fClaimedAt  = []byte("claimed_at")
	fFinishedAt = []byte("finished_at")
	fResult     = []byte("result")

	vPending   = []byte("pending")
	vActive    = []byte("active")
	vScheduled = []byte("scheduled")
	vDead      = []byte("dead")
	vZero      = []byte("0")
	vOne       = []byte("1")
	vStalled   = []byte("stalled")
	vCompleted = []byte("completed")
)

func hashKind(d *store.DB, key string) (*store.Hash, keyKind) {
	d.NoteRead(key)
	v := d.GetKept(key) // the plan finds it there (store.DB.GetKept)
	if v == nil {
		return nil, keyAbsent
	}
	if v.Kind != store.KindHash {
		return nil, keyWrong
	}
	return v.Hash(), keyOK
}

func zsetKind(d *store.DB, key string) (*store.ZSet, keyKind) {
	d.NoteRead(key)
	v := d.GetKept(key)
	if v == nil {
		return nil, keyAbsent
	}
	if v.Kind != store.KindZSet {
		return nil, keyWrong
	}
	return v.ZSet, keyOK
}

// peekZSet is the sorted set at key read as an observer does (Peek: no
// access time, no client-tracking read), nil when the key is missing or
// of another type.
func peekZSet(d *store.DB, key string) *store.ZSet {
	if v := d.Peek(key); v != nil && v.Kind == store.KindZSet {
		return v.ZSet
	}
	return nil
}

// peekHash is peekZSet for a hash.
func peekHash(d *store.DB, key string) *store.Hash {
	if v := d.Peek(key); v != nil && v.Kind == store.KindHash {
		return v.Hash()
	}
	return nil
}

func getField(h *store.Hash, f string) rowField {
	v, ok := h.Get(f)
	return rowField{Val: v, Present: ok}
}

// peekField is getField for a value the read pass is done with before the
// verb applies (store.Hash.Peek: the hash may then be rewritten in place,
// internal/store/listpack.go): the mint's last id, decoded at once; a
// metrics counter, parsed by the judgement (readCounter).
func peekField(h *store.Hash, f string) rowField {
	v, ok := h.Peek(f)
	return rowField{Val: v, Present: ok}
}

// readRow reads the job row at key.
func readRow(d *store.DB, key string) jobRow { return readRowFor(d, key, false) }

// readRowFor is readRow; forPlan reads a listpack row without marking it
// viewed (store.Hash.RangeForPlan), for a verb whose views of the row are
// dead once its plan's HSET of the row applies, so that HSET may rewrite
// the row in place (EMQ.STALLED.CHECK: docs/architecture.md §2.5, "Views
// of a row and its in-place write").
func readRowFor(d *store.DB, key string, forPlan bool) jobRow {
	h, k := hashKind(d, key)
	if k != keyOK {
		return jobRow{Kind: k}
	}
	if !h.Big() {
		// A listpack row is read in one pass, not one scan per field.
		r := jobRow{Kind: keyOK}
		fn := func(f string, v []byte) bool {
			switch f {
			case "group":
				r.Lane = true
			case "state":
				r.State = rowField{Val: v, Present: true}
			case "attempts":
				r.Attempts = rowField{Val: v, Present: true}
			case "failures":
				r.Failures = rowField{Val: v, Present: true}
			case "stalled":
				r.Stalled = rowField{Val: v, Present: true}
			case "lease_epoch":
				r.LeaseEpoch = rowField{Val: v, Present: true}
			case "payload":
				r.Payload = rowField{Val: v, Present: true}
			case "priority":
				r.Priority = rowField{Val: v, Present: true}
			case "parent":
				r.Parent = rowField{Val: v, Present: true}
			case "children":
				r.Children = true
			case "lane":
				r.LaneName = rowField{Val: v, Present: true}
			case "lane_slot":
				r.LaneSlot = true
			}
			return true
		}
		if forPlan {
			h.RangeForPlan(fn)
		} else {
			h.Range(fn)
		}
		return r
	}
	_, lane := h.Get("group")
	_, slot := h.Get("lane_slot")
	return jobRow{
		LaneName:   getField(h, "lane"),
		LaneSlot:   slot,
		Kind:       keyOK,
		Lane:       lane,
		State:      getField(h, "state"),
		Attempts:   getField(h, "attempts"),
		Failures:   getField(h, "failures"),
		Stalled:    getField(h, "stalled"),
		LeaseEpoch: getField(h, "lease_epoch"),
		Payload:    getField(h, "payload"),
		Priority:   getField(h, "priority"),
		Parent:     getField(h, "parent"),
		Children:   getField(h, "children").Present,
	}
}

// readCounter reads a metrics hash (emq:{q}:metrics:completed, :failed).
// Its count is only parsed, by the judgement before the verb applies
// (counterCheck: the HINCRBY the plan will run; EMQ.STATS's metric) and
// never kept past it, so it is peeked (peekField): the hash is not marked
// viewed and the plan's HINCRBY rewrites the count in place, where Get's
// mark made every COMPLETE copy the hash (internal/store/listpack.go;
// TestNextCycleAllocs).
func readCounter(d *store.DB, key string) counter {
	h, k := hashKind(d, key)
	if k != keyOK {
		return counter{Kind: k}
	}
	return counter{Kind: keyOK, Count: peekField(h, "count")}
}

// member reads whether id is in the sorted set at key, and its score.
func member(d *store.DB, key, id string) (keyKind, bool, float64) {
	z, k := zsetKind(d, key)
	if k != keyOK {
		return k, false, 0
	}
	s, ok := z.Score(id)
	return keyOK, ok, s
}

// dueJob is one member selected by score (a due scheduled job or an expired
// lease) with its row.
type dueJob struct {
	ID    string
	Score float64
	Row   jobRow
	Key   string // the row key when the read pass built it ("" in tables)
}

// rowKey is d's row key.
func (d *dueJob) rowKey(k *Keys) string {
	if d.Key != "" {
		return d.Key
	}
	return k.Row(d.ID)
}

// readDue selects the members of the zset z with score <= now, lowest
// first, at most limit, with their rows (ZRANGEBYSCORE key -inf now LIMIT 0
// limit). The result is sized by counting first (or appended to buf[:0]
// when buf is not nil); each row key is the keyspace's own string
// (store.DB.WarmKey), looked up with the keys built in one buffer
// (BenchmarkStalledCheck).
func readDue(d *store.DB, k *Keys, z *store.ZSet, now int64, limit int64, buf []dueJob) []dueJob {
	return readDueFor(d, k, z, now, limit, buf, nil, false)
}

// readDueFor is readDue reading the rows with readRowFor(forPlan) and
// building the row keys to look up in *kb (nil: a buffer of its own). The
// keys handed out are never *kb's bytes: a present row's is the keyspace's
// string of it, an absent one's (a ghost) a new string (k.Row). Until
// round 7 the keys were one new string per call (34 B a lease, two fifths
// of the bytes the sweep allocated: bench/README.md "The stall sweep,
// round 7 (issue 25)"); a plan's keys reach the observer (blocking's ready
// list, tracking), which may keep them, so they cannot be scratch.
func readDueFor(d *store.DB, k *Keys, z *store.ZSet, now int64, limit int64, buf []dueJob, kb *[]byte, forPlan bool) []dueJob {
	if z == nil || z.Len() == 0 {
		return nil
	}
	if m, _ := z.Min(); m.Score > float64(now) {
		return nil
	}
	n := int64(z.CountScoreBelow(float64(now), true))
	if n > limit {
		n = limit
	}
	out := buf[:0]
	if int64(cap(out)) < n {
		out = make([]dueJob, 0, n)
	}
	nk := 0
	z.RangeByScore(store.NegInf, float64(now), func(it store.ZItem) bool {
		if int64(len(out)) >= limit {
			return false
		}
		out = append(out, dueJob{ID: it.Member, Score: it.Score})
		nk += len(k.JobPrefix) + len(it.Member)
		return true
	})
	var keys []byte
	if kb != nil {
		keys = (*kb)[:0]
	}
	if cap(keys) < nk {
		keys = make([]byte, 0, nk)
	}
	for i := range out {
		keys = append(keys, k.JobPrefix...)
		keys = append(keys, out[i].ID...)
	}
	at := 0
	for i := range out {
		end := at + len(k.JobPrefix) + len(out[i].ID)
		// All rows first (store.DB.Warm): the cache misses of independent
		// lookups overlap.
		out[i].Key, _ = d.WarmKey(keys[at:end])
		at = end
	}
	if kb != nil && cap(keys) <= 64*sweepKeepMax {
		*kb = keys[:0]
	}
	for i := range out {
		if out[i].Key == "" {
			out[i].Key = k.Row(out[i].ID) // a ghost (or a row gone since)
		}
		out[i].Row = readRowFor(d, out[i].Key, forPlan)
	}
	return out
}
