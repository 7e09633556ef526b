package verbs

import (
	"github.com/emqd/emqd/store"
)

// The read pass (verbs.md rule 2) looks at the store through these plain
// values; the judgements take nothing else, so they are pure and table
// tested. Byte slices point into the store and are only valid until the
// verb's write pass.

// KeyKind is what a key the verb must read holds.
type KeyKind uint8

// Key kinds as a verb sees them.
const (
	Absent KeyKind = iota // no such key
	OK                    // the type the verb expects (hash or zset)
	Wrong                 // another type: WRONGTYPE (rule 7)
)

// Field is one hash field as read: Present is false when the field (or the
// whole row) is missing.
type Field struct {
	Val     []byte
	Present bool
}

// F is a present field holding s (a test helper for tables).
func F(s string) Field { return Field{Val: []byte(s), Present: true} }

// Row is a job row as read (verbs.md section 2). Kind is Absent for no row
// and Wrong when the row key holds a non-hash (the fields are then unset).
type Row struct {
	Kind       KeyKind
	Lane       bool // `group` present
	State      Field
	Attempts   Field
	Failures   Field
	Stalled    Field
	LeaseEpoch Field
	Payload    Field
}

// Counter is a metrics hash (`count` field) as read.
type Counter struct {
	Kind  KeyKind
	Count Field
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

	vPending   = []byte("pending")
	vActive    = []byte("active")
	vScheduled = []byte("scheduled")
	vDead      = []byte("dead")
	vZero      = []byte("0")
	vOne       = []byte("1")
	vStalled   = []byte("stalled")
)

func hashKind(d *store.DB, key string) (*store.Hash, KeyKind) {
	v := d.Get(key)
	if v == nil {
		return nil, Absent
	}
	if v.Kind != store.KindHash {
		return nil, Wrong
	}
	return v.Hash, OK
}

func zsetKind(d *store.DB, key string) (*store.ZSet, KeyKind) {
	v := d.Get(key)
	if v == nil {
		return nil, Absent
	}
	if v.Kind != store.KindZSet {
		return nil, Wrong
	}
	return v.ZSet, OK
}

func getField(h *store.Hash, f string) Field {
	v, ok := h.Get(f)
	return Field{Val: v, Present: ok}
}

// readRow reads the job row at key.
func readRow(d *store.DB, key string) Row {
	h, k := hashKind(d, key)
	if k != OK {
		return Row{Kind: k}
	}
	_, lane := h.Get("group")
	return Row{
		Kind:       OK,
		Lane:       lane,
		State:      getField(h, "state"),
		Attempts:   getField(h, "attempts"),
		Failures:   getField(h, "failures"),
		Stalled:    getField(h, "stalled"),
		LeaseEpoch: getField(h, "lease_epoch"),
		Payload:    getField(h, "payload"),
	}
}

// readCounter reads a metrics hash.
func readCounter(d *store.DB, key string) Counter {
	h, k := hashKind(d, key)
	if k != OK {
		return Counter{Kind: k}
	}
	return Counter{Kind: OK, Count: getField(h, "count")}
}

// member reads whether id is in the sorted set at key, and its score.
func member(d *store.DB, key, id string) (KeyKind, bool, float64) {
	z, k := zsetKind(d, key)
	if k != OK {
		return k, false, 0
	}
	s, ok := z.Score(id)
	return OK, ok, s
}

// Due is one member selected by score (a due scheduled job or an expired
// lease) with its row.
type Due struct {
	ID    string
	Score float64
	Row   Row
	Key   string // the row key when the read pass built it ("" in tables)
}

// rowKey is d's row key.
func (d *Due) rowKey(k *Keys) string {
	if d.Key != "" {
		return d.Key
	}
	return k.Row(d.ID)
}

// readDue selects the members of the zset z with score <= now, lowest
// first, at most limit, with their rows (ZRANGEBYSCORE key -inf now LIMIT 0
// limit).
func readDue(d *store.DB, k *Keys, z *store.ZSet, now int64, limit int64) []Due {
	if z == nil || z.Len() == 0 {
		return nil
	}
	if m, _ := z.Min(); m.Score > float64(now) {
		return nil
	}
	var out []Due
	z.RangeByScore(store.NegInf, float64(now), func(it store.ZItem) bool {
		if int64(len(out)) >= limit {
			return false
		}
		key := k.Row(it.Member)
		out = append(out, Due{ID: it.Member, Score: it.Score, Row: readRow(d, key), Key: key})
		return true
	})
	return out
}
