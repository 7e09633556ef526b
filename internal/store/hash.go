package store

import "unsafe"

// Hash is a field/value map that iterates in insertion order
// (docs/compat.md §3.1) in one of two encodings, as Valkey's hashes
// (encoding.go has the rules that switch them):
//
//   - listpack: every field and value in one byte slice (listpack.go), a
//     linear scan per lookup; for small hashes (a job row);
//   - hashtable: a map from field to a slot of an entry list that keeps
//     insertion order (holes compacted once they outnumber live fields).
//
// The zero value is not usable: NewHash, or DB.HashForWrite.
//
// A Hash is its key's Value seen as a hash (the same memory, one 48-byte
// allocation, Value.Hash): the listpack is in Str while the hash is one, a
// second allocation (a pending job's row costs these two,
// BenchmarkPendingJobMemory). tab is the hashtable encoding; while the
// hash is a listpack it is the store's shared table without entries that
// carries the thresholds (hashTable.lim, encoding.go).
type Hash Value

type hashTable struct {
	lim *Limits // a listpack hash's thresholds (the shared table only)
	// copyOnly: a listpack hash of this store is never rewritten in place
	// (the shared table only; Store.SetListpackInPlace, for the tests that
	// compare the in-place path with the copying one).
	copyOnly bool
	idx      map[string]int
	entries  []hashEntry
	live     int
}

// defaultLimitsTable is the shared table of a listpack hash made outside a
// store (NewHash): Valkey's default thresholds.
var defaultLimitsTable = &hashTable{lim: &DefaultLimits}

// big reports whether h uses the hashtable encoding.
func (h *Hash) big() bool { return h.tab.idx != nil }

// hashEntry is one slot of the entry list; a deleted field leaves value
// nil (a live value is never nil: an empty one is a zero-length slice).
type hashEntry struct {
	field string
	value []byte
}

// emptyValue is the value slice of an empty string.
var emptyValue = []byte{}

// NewHash returns an empty hash (listpack encoding, default thresholds).
func NewHash() *Hash { return newHashValue(defaultLimitsTable).Hash() }

// newHashValue returns a Value holding a new empty listpack hash whose
// shared table is lim (a store's, or defaultLimitsTable).
func newHashValue(lim *hashTable) *Value {
	return &Value{Kind: KindHash, tab: lim}
}

// val is h as its key's Value.
func (h *Hash) val() *Value { return (*Value)(h) }

// Big reports whether h uses the hashtable encoding (OBJECT ENCODING).
func (h *Hash) Big() bool { return h.big() }

// Len is the number of fields.
func (h *Hash) Len() int {
	if h.big() {
		return h.tab.live
	}
	return lpCount(h.Str)
}

// lpFind locates field in the listpack: the offsets of the field element,
// of its value element and of the element after it.
func (h *Hash) lpFind(field string) (fOff, vOff, end int, ok bool) {
	lp := h.Str
	for off := lpHeader; off < len(lp); {
		f, next := lpStr(lp, off)
		_, after := lpStr(lp, next)
		if string(f) == field {
			return off, next, after, true
		}
		off = after
	}
	return 0, 0, 0, false
}

// Get returns the value of field and whether it exists. The returned slice
// must not be modified; it stays valid and unchanged after later writes
// (a listpack hash is marked viewed, listpack.go).
func (h *Hash) Get(field string) ([]byte, bool) {
	v, ok := h.peek(field)
	if ok && !h.big() {
		lpMarkViewed(h.Str)
	}
	return v, ok
}

// Peek is Get for a caller done with the value before it writes h or
// releases the store lock (it parses the value, compares it, or copies it):
// a listpack hash is not marked viewed, so a later write may rewrite it in
// place (listpack.go). Keep the value past that and it may change: use Get.
func (h *Hash) Peek(field string) ([]byte, bool) { return h.peek(field) }

// Visit is Range for a caller done with each field and value when fn
// returns (it parses or compares them): as Peek, it leaves a listpack hash
// unmarked. Keep either past fn and it may change: use Range.
func (h *Hash) Visit(fn func(field string, value []byte) bool) {
	if !h.big() {
		h.lpRange(func(f, v []byte) bool { return fn(lpView(f), v) })
		return
	}
	for _, e := range h.tab.entries {
		if e.value != nil && !fn(e.field, e.value) {
			return
		}
	}
}

// RangeForPlan is Range for a job verb's read pass that keeps the views
// until its own plan writes this hash and reads none of them after that
// write (the verb's audit: docs/architecture.md §2.5, "Views of a row and
// its in-place write"): it leaves a listpack hash unmarked, so the plan's
// HSET may rewrite it in place. A plan's HSET of at most 8 distinct fields
// (setPlan's one-pass path) writes same-size values over the old ones and
// appends new fields beyond the end, so the views of the fields it does
// not set stay as they were (FuzzHashSetPlanInPlace); any other write may
// move them (a smaller value in place moves the bytes after it). A
// hashtable hash is Range.
func (h *Hash) RangeForPlan(fn func(field string, value []byte) bool) {
	if !h.big() {
		h.lpRange(func(f, v []byte) bool { return fn(lpView(f), v) })
		return
	}
	h.Range(fn)
}

// peek is Get for a caller that is done with the value before the store
// lock is released and before the hash is next written (it copies it into
// a reply or parses it): it does not mark a listpack viewed, so a later
// write may still rewrite the listpack in place (listpack.go). Only
// commands of this package whose use of the value is in sight may call it.
func (h *Hash) peek(field string) ([]byte, bool) {
	if h.big() {
		i, ok := h.tab.idx[field]
		if !ok {
			return nil, false
		}
		return h.tab.entries[i].value, true
	}
	if _, vOff, _, ok := h.lpFind(field); ok {
		v, _ := lpStr(h.Str, vOff)
		return v, true
	}
	return nil, false
}

// Set stores value at field (keeping field's position if it exists) and
// reports whether the field is new. The hashtable encoding keeps field and
// value and the listpack copies them: callers pass a slice they will not
// modify. Crossing a threshold converts the hash to the hashtable encoding
// (encoding.go).
func (h *Hash) Set(field string, value []byte) bool {
	if h.bigFor(len(field), len(value)) {
		return h.tab.set(field, value)
	}
	return h.lpSet(field, value)
}

// SetArg is Set for a field and value that belong to the caller (the
// arguments of a command, a scratch buffer): both encodings copy them.
// Neither escapes, so a scratch buffer on the caller's stack stays there
// (a separate path from Set's, which the hashtable encoding keeps).
func (h *Hash) SetArg(field, value []byte) bool {
	if h.bigFor(len(field), len(value)) {
		if i, ok := h.tab.idx[string(field)]; ok {
			h.tab.entries[i].value = append(make([]byte, 0, len(value)), value...)
			return false
		}
		return h.tab.set(string(field), append(make([]byte, 0, len(value)), value...))
	}
	return h.lpSet(lpView(field), value)
}

// bigFor converts a listpack hash that a field and value of these lengths
// (bytes) would make too long, and reports whether h is in the hashtable
// encoding.
func (h *Hash) bigFor(fieldLen, valueLen int) bool {
	if !h.big() && h.lpTooLong(fieldLen, valueLen) {
		h.convert()
	}
	return h.big()
}

// lpSet is Set on the listpack encoding, which copies field and value;
// crossing the entry-count threshold converts h. A new value of an existing
// field whose encoded size is the old one's or smaller is written in place
// when no view of the listpack was handed out (listpack.go); otherwise the
// listpack is copied with the new value.
func (h *Hash) lpSet(field string, value []byte) bool {
	added := false
	if _, vOff, end, ok := h.lpFind(field); ok {
		lp := h.Str
		if old, _ := lpStr(lp, vOff); string(old) != string(value) {
			vs := lpView(value)
			if n := lpStrLen(vs); n <= end-vOff && h.lpInPlaceOK(lp) {
				lpAppendStr(lp[vOff:vOff], vs) // within lp: n <= end-vOff bytes
				if n < end-vOff {
					k := copy(lp[vOff+n:], lp[end:])
					h.Str = lp[:vOff+n+k]
				}
			} else {
				h.Str = lpSplice(lp, vOff, end, n, lpCount(lp), func(dst []byte) []byte {
					return lpAppendStr(dst, vs)
				})
			}
		}
	} else {
		vs := lpView(value)
		h.Str = lpGrow(h.Str, lpStrLen(field)+lpStrLen(vs))
		h.Str = lpAppendStr(h.Str, field)
		h.Str = lpAppendStr(h.Str, vs)
		lpSetCount(h.Str, lpCount(h.Str)+1)
		added = true
	}
	if h.lpTooMany(lpCount(h.Str)) {
		h.convert()
	}
	return added
}

// setPlan stores a plan's HSET pairs fv (field, value, ...): the same
// result as Set for each pair in order (plan bytes are never written again,
// so the hashtable may keep views of them). A listpack hash that stays one
// is rewritten in one pass and at most one allocation when existing fields
// change: Set per pair scanned the listpack once per field and copied it
// for each change (the sweep's dead row: state changed, stalled and
// last_error added). room (bytes, plan.Op.Room) is the spare capacity a
// listpack copied or grown by this write keeps for a later write's new
// fields (a layout hint: the contents are the same without it).
func (h *Hash) setPlan(fv [][]byte, room int) { h.setPlanBorrow(fv, room, 0) }

// setPlanBorrow is setPlan with borrow (plan.Op.Borrow): bit i set, the
// value of pair i is the caller's, valid only while the plan applies, so
// a hashtable hash keeps a copy of it instead of the slice (a listpack
// copies every value it stores anyway).
func (h *Hash) setPlanBorrow(fv [][]byte, room int, borrow uint8) {
	if !h.lpSetPairs(fv, room) {
		if !h.big() && lpCount(h.Str) > 0 {
			// A pair that converts the hash converts it first, as Valkey's
			// hashTypeTryConversion does before the writes: the pairs
			// before it then leave the listpack's bytes alone (a smaller
			// value written in place would move the bytes after it,
			// under a RangeForPlan view).
			for i := 0; i+1 < len(fv); i += 2 {
				if h.lpTooLong(len(fv[i]), len(fv[i+1])) {
					h.convert()
					break
				}
			}
		}
		h.Reserve(fv) // a new row is one allocation of its size (BenchmarkPendingJobMemory)
		for i := 0; i+1 < len(fv); i += 2 {
			v := fv[i+1]
			if i/2 < 8 && borrow&(1<<(i/2)) != 0 && h.bigFor(len(fv[i]), len(v)) {
				v = append(make([]byte, 0, len(v)), v...) // the hashtable keeps it
			}
			h.Set(zview(fv[i]), v)
		}
	}
}

// ListpackRoom is the bytes the field/value pairs fv (field, value, ...)
// take when appended to a listpack hash (listpack.go's encoding): the room
// a plan's HSET leaves for a later write's new fields (plan.Op.Room; the
// claim leaves room for the sweep's death, internal/verbs).
func ListpackRoom(fv ...[]byte) int {
	n := 0
	for _, b := range fv {
		n += lpStrLen(lpView(b))
	}
	return n
}

// lpSetPairs is setPlan's one-pass path; it reports false, having written
// nothing, when it does not apply: a hashtable or empty hash, more than 8
// pairs, a repeated field, or a write that converts the hash. It writes in
// place (no allocation) when the listpack was never handed out
// (lpViewed), every changed value keeps its encoded size and the new
// fields fit in the spare capacity (lpSetPairsInPlace); otherwise it copies
// the listpack once, leaving room bytes spare.
func (h *Hash) lpSetPairs(fv [][]byte, room int) bool {
	const maxPairs = 8
	n := len(fv) / 2
	if h.big() || n == 0 || n > maxPairs || len(fv)%2 != 0 {
		return false
	}
	lp := h.Str
	count := lpCount(lp)
	if count == 0 {
		return false
	}
	for i := 0; i < n; i++ {
		if h.lpTooLong(len(fv[2*i]), len(fv[2*i+1])) {
			return false
		}
		for j := 0; j < i; j++ {
			if string(fv[2*j]) == string(fv[2*i]) {
				return false
			}
		}
	}
	// Where each field's value is (vOff[i] < 0: the field is new).
	var vOff, vEnd [maxPairs]int
	for i := 0; i < n; i++ {
		vOff[i] = -1
	}
	found := 0
	for off := lpHeader; off < len(lp) && found < n; {
		f, next := lpStr(lp, off)
		_, after := lpStr(lp, next)
		for i := 0; i < n; i++ {
			if vOff[i] < 0 && string(f) == string(fv[2*i]) {
				vOff[i], vEnd[i] = next, after
				found++
				break
			}
		}
		off = after
	}
	if h.lpTooMany(count + n - found) {
		return false
	}
	size, changed, same, resized := len(lp), false, 0, false
	for i := 0; i < n; i++ {
		vs := lpView(fv[2*i+1])
		if vOff[i] < 0 {
			size += lpStrLen(lpView(fv[2*i])) + lpStrLen(vs)
			continue
		}
		if old, _ := lpStr(lp, vOff[i]); string(old) == string(fv[2*i+1]) {
			vOff[i] = -2 // unchanged
			same++
			continue
		}
		if d := lpStrLen(vs) - (vEnd[i] - vOff[i]); d != 0 {
			size += d
			resized = true
		}
		changed = true
	}
	if same == n {
		return true // nothing to write
	}
	if changed && !resized && size <= cap(lp) && h.lpInPlaceOK(lp) {
		h.lpSetPairsInPlace(fv, vOff[:n], size, count+n-found)
		return true
	}
	var out []byte
	if changed {
		// Copy lp once, the changed values replaced in offset order.
		out = lpAlloc(size + room)
		at := 0
		for {
			k := -1
			for i := 0; i < n; i++ {
				if vOff[i] >= at && (k < 0 || vOff[i] < vOff[k]) {
					k = i
				}
			}
			if k < 0 {
				break
			}
			out = append(out, lp[at:vOff[k]]...)
			out = lpAppendStr(out, lpView(fv[2*k+1]))
			at = vEnd[k]
		}
		out = lpFresh(append(out, lp[at:]...))
	} else {
		out = lpGrowRoom(lp, size-len(lp), room)
	}
	for i := 0; i < n; i++ {
		if vOff[i] == -1 {
			out = lpAppendStr(out, lpView(fv[2*i]))
			out = lpAppendStr(out, lpView(fv[2*i+1]))
		}
	}
	lpSetCount(out, count+n-found)
	h.Str = out
	return true
}

// lpInPlaceOK reports whether lp's bytes below len may be rewritten in
// place: no view of them was handed out (listpack.go), and the store has
// not turned in-place rewrites off (Store.SetListpackInPlace, the copying
// path the tests compare with).
func (h *Hash) lpInPlaceOK(lp []byte) bool {
	return !lpViewed(lp) && !h.tab.copyOnly
}

// lpSetPairsInPlace is lpSetPairs written into the listpack's own buffer
// (the caller checked lpInPlaceOK, that every changed value of vOff (its
// offset; -1 new, -2 unchanged) encodes to its old one's size and that the
// new size (bytes) fits in the capacity): the changed values are written
// over the old ones, which moves no other byte, and the new fields are
// appended beyond len (bytes nobody has seen); count is the new count.
func (h *Hash) lpSetPairsInPlace(fv [][]byte, vOff []int, size, count int) {
	lp := h.Str
	for i := range vOff {
		if vOff[i] >= 0 {
			lpAppendStr(lp[vOff[i]:vOff[i]], lpView(fv[2*i+1])) // within lp: the same size
		}
	}
	for i := range vOff {
		if vOff[i] == -1 {
			lp = lpAppendStr(lp, lpView(fv[2*i]))
			lp = lpAppendStr(lp, lpView(fv[2*i+1]))
		}
	}
	if len(lp) != size || unsafe.SliceData(lp) != unsafe.SliceData(h.Str) {
		panic("store: listpack in-place rewrite moved") // the caller's checks were wrong
	}
	lpSetCount(lp, count)
	h.Str = lp
}

// Reserve sizes the listpack of an empty hash for the fields and values
// fv (field, value, ...) about to be set, so a new row is one allocation of
// exactly its size.
func (h *Hash) Reserve(fv [][]byte) {
	if h.big() || lpCount(h.Str) != 0 {
		return
	}
	size := 0
	for _, b := range fv {
		size += lpStrLen(lpView(b))
	}
	h.Str = lpGrow(h.Str, size)
}

func (t *hashTable) set(field string, value []byte) bool {
	if value == nil {
		value = emptyValue
	}
	if i, ok := t.idx[field]; ok {
		t.entries[i].value = value
		return false
	}
	t.idx[field] = len(t.entries)
	t.entries = append(t.entries, hashEntry{field: field, value: value})
	t.live++
	return true
}

// convert moves a listpack hash to the hashtable encoding (for good).
func (h *Hash) convert() {
	n := lpCount(h.Str)
	t := &hashTable{idx: make(map[string]int, n), entries: make([]hashEntry, 0, n)}
	h.lpRange(func(f, v []byte) bool {
		t.set(string(f), append(make([]byte, 0, len(v)), v...))
		return true
	})
	h.tab, h.Str = t, nil
}

// Copy returns a copy of h (COPY) in the same encoding; hashtable values
// are shared (the store never modifies a value in place).
func (h *Hash) Copy() *Hash {
	if !h.big() {
		out := newHashValue(h.tab).Hash()
		if h.Str != nil {
			out.Str = lpFresh(append(lpAlloc(len(h.Str)), h.Str...))
		}
		return out
	}
	t := h.tab
	out := newHashValue(defaultLimitsTable).Hash()
	out.tab = &hashTable{idx: make(map[string]int, t.live), entries: make([]hashEntry, 0, t.live)}
	h.Range(func(f string, v []byte) bool {
		out.tab.set(f, v)
		return true
	})
	return out
}

// Del removes field and reports whether it existed.
func (h *Hash) Del(field string) bool {
	if h.big() {
		return h.tab.del(field)
	}
	fOff, _, end, ok := h.lpFind(field)
	if !ok {
		return false
	}
	h.Str = lpCut(h.Str, fOff, end, lpCount(h.Str)-1)
	return true
}

func (t *hashTable) del(field string) bool {
	i, ok := t.idx[field]
	if !ok {
		return false
	}
	delete(t.idx, field)
	t.entries[i] = hashEntry{}
	t.live--
	if t.live == 0 {
		t.entries = t.entries[:0]
	} else if len(t.entries) > 32 && len(t.entries) > 2*t.live {
		// The entries are compacted, and the index rebuilt at the new
		// size: a Go map never shrinks (shrink.go).
		out := make([]hashEntry, 0, t.live)
		idx := make(map[string]int, t.live)
		for _, e := range t.entries {
			if e.value != nil {
				idx[e.field] = len(out)
				out = append(out, e)
			}
		}
		t.entries, t.idx = out, idx
	}
	return true
}

// lpRange calls fn with each field and value of a listpack hash.
func (h *Hash) lpRange(fn func(field, value []byte) bool) {
	lp := h.Str
	for off := lpHeader; off < len(lp); {
		f, next := lpStr(lp, off)
		v, after := lpStr(lp, next)
		if !fn(f, v) {
			return
		}
		off = after
	}
}

// Range calls fn for each field in insertion order until fn returns false.
// field and value share the hash's memory: they stay valid and unchanged
// after later writes, but a caller that keeps them long keeps that memory
// alive (clone them).
func (h *Hash) Range(fn func(field string, value []byte) bool) {
	if !h.big() {
		lpMarkViewed(h.Str)
		h.lpRange(func(f, v []byte) bool { return fn(lpView(f), v) })
		return
	}
	for _, e := range h.tab.entries {
		if e.value == nil {
			continue
		}
		if !fn(e.field, e.value) {
			return
		}
	}
}

// At returns the i-th field in insertion order (0 <= i < Len): O(i) for a
// listpack, O(1) for a hashtable without holes, O(n) with holes.
func (h *Hash) At(i int) (string, []byte) {
	if !h.big() {
		lpMarkViewed(h.Str)
		var field string
		var value []byte
		h.lpRange(func(f, v []byte) bool {
			if i == 0 {
				field, value = lpView(f), v
				return false
			}
			i--
			return true
		})
		if value == nil {
			panic("store: Hash.At out of range")
		}
		return field, value
	}
	t := h.tab
	if len(t.entries) == t.live {
		e := t.entries[i]
		return e.field, e.value
	}
	for _, e := range t.entries {
		if e.value == nil {
			continue
		}
		if i == 0 {
			return e.field, e.value
		}
		i--
	}
	panic("store: Hash.At out of range")
}
