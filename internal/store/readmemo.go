package store

// readMemo is the values a command's read pass found (DB.GetKept), handed
// to the plan the same command applies (ApplyPlan), so that a job verb
// looks each key up in the keyspace once instead of once to judge and once
// more to write: the NEXT job cycle looked up 23 keys a job, most of them
// twice (bench/README.md, "The command layer (round 8)").
//
// An entry is what Get returned, valid while nothing has removed or
// replaced a key since: the memo belongs to one command (ResetForCommand
// forgets it) and is stamped with the database, the clock, the store's
// mutation count and its count of expired-key deletions (which the
// mutation count does not see), and any difference forgets it. Inside a
// plan, the keys the plan removes are forgotten as they go (planKeys.drop).
// Only present keys are kept: a missing key is looked up again.
type readMemo struct {
	db   *DB
	now  int64
	muts uint64
	gone uint64
	n    int // entries in use
	next int // the slot the next entry takes when all are in use
	keys [8]string
	vals [8]*Value
}

// valid reports whether the memo's entries still hold for db.
func (m *readMemo) valid(d *DB) bool {
	s := d.s
	return m.db == d && m.now == s.now && m.muts == s.mutations && m.gone == s.expGen
}

// find returns the kept value of key, or nil.
func (m *readMemo) find(key string) *Value {
	for i := 0; i < m.n; i++ {
		if m.keys[i] == key {
			return m.vals[i]
		}
	}
	return nil
}

// forget empties the memo (the slots used, as planKeys.reset: each pointer
// cleared goes through a write barrier while the collector runs).
func (m *readMemo) forget() {
	if m.db == nil {
		return
	}
	clear(m.keys[:m.n])
	clear(m.vals[:m.n])
	*m = readMemo{}
}

// drop forgets key (removed by a plan op).
func (m *readMemo) drop(key string) {
	for i := 0; i < m.n; i++ {
		if m.vals[i] != nil && m.keys[i] == key {
			m.keys[i], m.vals[i] = "", nil
		}
	}
}

// GetKept is Get for a command's read pass whose plan will write what it
// reads (the job verbs' judgements): the value is kept for the plan the
// command applies next (ApplyPlan looks it up there instead of in the
// keyspace), and a key the same command already read is found there too.
// The same value, access time and lazy expiry as Get.
func (d *DB) GetKept(key string) *Value {
	m := &d.s.memo
	if m.valid(d) {
		if v := m.find(key); v != nil {
			d.s.touchAccess(v)
			return v
		}
	} else {
		m.forget()
	}
	v := d.Get(key)
	if v == nil {
		return nil
	}
	if m.db == nil {
		m.db, m.now = d, d.s.now
	}
	m.muts, m.gone = d.s.mutations, d.s.expGen // Get may have expired another key
	i := m.n
	if i == len(m.keys) {
		i = m.next
		m.next = (m.next + 1) % len(m.keys)
	} else {
		m.n++
	}
	m.keys[i], m.vals[i] = key, v
	return v
}
