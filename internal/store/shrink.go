package store

// Maps given back after mass deletion (docs/architecture.md §2.10). A Go
// map never shrinks: its table keeps the size of the most entries it ever
// held, so a keyspace that held 1,000,000 keys keeps about 40 MB of table
// after every key is deleted, and a map iterated from a random start (the
// expire cycle's sampling, RANDOMKEY) walks all of that empty table. Valkey
// resizes a dict once it is less than 1/8 full (HASHTABLE_MIN_FILL, in
// serverCron's databasesCron); the store does the same with its maps:
//
//   - the keyspace and the TTL table of each database: a deletion that
//     leaves fewer than 1/shrinkFill of the most keys the map held since it
//     was built marks it, and Store.ShrinkMaps (the server's active expire
//     cycle calls it under the lock, at a point where no command is
//     iterating a map) rebuilds it at its size;
//   - a big sorted set's member map and a big hash's field index are
//     rebuilt by the deletion that crosses the same line (nothing iterates
//     them while members are deleted).
//
// Rebuilding copies the remaining entries (about 100 ns each; the bytes of
// keys and members are shared, not copied): a map emptied from 1,000,000
// entries to 125,000 costs about 12 ms once, amortised over the 875,000
// deletions before it. Maps that never held shrinkMinPeak entries are left
// alone.

const (
	shrinkFill    = 8
	shrinkMinPeak = 1024
)

// mustShrink reports whether a map of n entries that held peak at most
// should be rebuilt.
func mustShrink(n, peak int) bool { return peak >= shrinkMinPeak && n*shrinkFill < peak }

// noteKeys records the keyspace's size after a key was added.
func (d *DB) noteKeys() {
	if n := d.keys.len(); n > d.keysPeak {
		d.keysPeak = n
	}
}

// noteKeyGone marks d for ShrinkMaps when its maps fell below the line.
func (d *DB) noteKeyGone() {
	if mustShrink(d.keys.len(), d.keysPeak) || mustShrink(d.expires.len(), d.expiresPeak) {
		d.s.shrinkDue = true
	}
}

// ShrinkMaps rebuilds every database map that fell below 1/shrinkFill of
// its peak since the last rebuild, and returns how many it rebuilt. Store
// lock held; no map of the store may be in iteration.
func (s *Store) ShrinkMaps() int {
	if !s.shrinkDue {
		return 0
	}
	s.shrinkDue = false
	n := 0
	for _, d := range s.dbs {
		if mustShrink(d.keys.len(), d.keysPeak) {
			d.keys.fit()
			d.keysPeak = d.keys.len()
			n++
		}
		if mustShrink(d.expires.len(), d.expiresPeak) {
			d.expires.fit()
			d.expiresPeak = d.expires.len()
			d.expCursor = 0
			n++
		}
	}
	s.MapsShrunk += int64(n)
	return n
}

// Churned keyspaces (docs/architecture.md §2.10): a Go map whose count
// stays constant while its keys turn over (a job queue's rows: created,
// completed, deleted) doubles its table and keeps it (35.0 -> 69.9 B a key
// for 200,000 keys, BenchmarkKeyTableTurnover); the keyspace is a keyTable
// (keytable.go) for that reason, whose deletions leave no tombstones, so
// there is nothing to rebuild after a turnover. (Until round 6 the idle tick
// and MEMORY PURGE rebuilt a churned Go map, ShrinkChurned, which gave the
// table back only when the server went idle.) The TTL table is the same
// kind of table since round 7 (expire.go).

// dictDel deletes member from a big set's member map, rebuilding the map
// when it fell below the line.
func (z *ZSet) dictDel(member string) {
	if z.dict == nil {
		return // no index (zset.go: one score)
	}
	z.dict.del(member)
	if t := z.tree; mustShrink(z.dict.len(), t.dictPeak) {
		z.dict.fit()
		t.dictPeak = z.dict.len()
	}
}

// noteDict records a big set's member count after an insertion.
func (z *ZSet) noteDict() {
	if n := z.dict.len(); n > z.tree.dictPeak {
		z.tree.dictPeak = n
	}
}
