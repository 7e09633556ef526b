package store

// Access tracking for OBJECT IDLETIME (Valkey's object.c, evict.c;
// docs/compat.md §1.4). A lookup (DB.Get) and every write record the key's
// access time on the server clock; DB.Peek (TYPE, EXISTS, TTL, OBJECT) does
// not. Valkey's LFU counters are not kept: maxmemory-policy accepts only
// noeviction (docs/operations.md §5), so OBJECT FREQ always answers
// Valkey's "An LFU maxmemory policy is not selected" error.

// Value.access holds an access in 32 bits (a Value is 48 bytes, a Go size
// class, and a hash key's Value is its Hash: BenchmarkPendingJobMemory):
// the server clock in units of accessUnit ms modulo 2^32, so idle times up to 397 days are exact to 16 ms (Valkey's
// LRU clock counts seconds and wraps after 194 days).
const accessUnit = 16

// touchAccess records an access to v.
func (s *Store) touchAccess(v *Value) { v.access = uint32(s.now / accessUnit) }

// IdleMs is how long ago (ms, server clock) v was last accessed (OBJECT
// IDLETIME divides it by 1000); 0 when the clock went back since.
func (s *Store) IdleMs(v *Value) int64 {
	d := uint32(s.now/accessUnit) - v.access
	if d >= 1<<31 {
		return 0 // the clock went back
	}
	return int64(d) * accessUnit
}
