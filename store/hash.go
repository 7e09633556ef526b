package store

// Hash is a field/value map that iterates in insertion order (as Valkey's
// listpack-encoded hashes do; docs/compat.md §3.1). Deleting a field leaves a
// hole that is compacted once holes outnumber live fields.
type Hash struct {
	idx     map[string]int
	entries []hashEntry
	live    int
	// big: Valkey would hold it as a hash table (encoding.go); lim are
	// the store's thresholds (nil: the defaults).
	big bool
	lim *Limits
}

type hashEntry struct {
	field string
	value []byte
	dead  bool
}

// NewHash returns an empty hash.
func NewHash() *Hash { return &Hash{idx: make(map[string]int)} }

// Len is the number of fields.
func (h *Hash) Len() int { return h.live }

// Get returns the value of field and whether it exists. The returned slice
// must not be modified.
func (h *Hash) Get(field string) ([]byte, bool) {
	i, ok := h.idx[field]
	if !ok {
		return nil, false
	}
	return h.entries[i].value, true
}

// Set stores value at field (keeping field's position if it exists) and
// reports whether the field is new. The hash keeps value; callers pass a
// slice they will not modify.
func (h *Hash) Set(field string, value []byte) bool {
	if i, ok := h.idx[field]; ok {
		h.entries[i].value = value
		h.noteSet(field, len(value))
		return false
	}
	h.idx[field] = len(h.entries)
	h.entries = append(h.entries, hashEntry{field: field, value: value})
	h.live++
	h.noteSet(field, len(value))
	return true
}

// Copy returns a copy of h (COPY), with the same encoding; values are
// shared (the store never modifies a value in place).
func (h *Hash) Copy() *Hash {
	out := &Hash{idx: make(map[string]int, h.live), entries: make([]hashEntry, 0, h.live), big: h.big, lim: h.lim}
	h.Range(func(f string, v []byte) bool {
		out.idx[f] = len(out.entries)
		out.entries = append(out.entries, hashEntry{field: f, value: v})
		out.live++
		return true
	})
	return out
}

// Del removes field and reports whether it existed.
func (h *Hash) Del(field string) bool {
	i, ok := h.idx[field]
	if !ok {
		return false
	}
	delete(h.idx, field)
	h.entries[i] = hashEntry{dead: true}
	h.live--
	if h.live == 0 {
		h.entries = h.entries[:0]
	} else if len(h.entries) > 32 && len(h.entries) > 2*h.live {
		h.compact()
	}
	return true
}

func (h *Hash) compact() {
	out := make([]hashEntry, 0, h.live)
	for _, e := range h.entries {
		if !e.dead {
			h.idx[e.field] = len(out)
			out = append(out, e)
		}
	}
	h.entries = out
}

// Range calls fn for each field in insertion order until fn returns false.
func (h *Hash) Range(fn func(field string, value []byte) bool) {
	for _, e := range h.entries {
		if e.dead {
			continue
		}
		if !fn(e.field, e.value) {
			return
		}
	}
}

// At returns the i-th live field in insertion order (0 <= i < Len). It is
// O(1) when the hash has no holes, O(n) otherwise.
func (h *Hash) At(i int) (string, []byte) {
	if len(h.entries) == h.live {
		e := h.entries[i]
		return e.field, e.value
	}
	for _, e := range h.entries {
		if e.dead {
			continue
		}
		if i == 0 {
			return e.field, e.value
		}
		i--
	}
	panic("store: Hash.At out of range")
}
