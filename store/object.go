package store

import "math/rand/v2"

// Access tracking for OBJECT IDLETIME and OBJECT FREQ (Valkey's object.c,
// evict.c). A lookup (DB.Get) and every write update the key's access
// time on the server clock, or, under an LFU maxmemory-policy, its LFU
// counter (logarithmic, decaying by lfu-decay-time minutes). DB.Peek (TYPE,
// EXISTS, TTL, OBJECT) does not.

// LFU parameters (Valkey's LFU_INIT_VAL and the lfu-log-factor and
// lfu-decay-time defaults).
const (
	lfuInitVal = 5
)

// SetLFU switches access tracking to LFU counters (maxmemory-policy
// volatile-lfu or allkeys-lfu) or back to access times, with lfu-log-factor
// and lfu-decay-time (minutes). As in Valkey, values keep what they held:
// after a switch they take some accesses to mean something again.
func (s *Store) SetLFU(on bool, logFactor, decayMinutes int64) {
	s.lfu = on
	s.lfuLog = logFactor
	s.lfuDecay = decayMinutes
}

// LFU reports whether an LFU policy is selected.
func (s *Store) LFU() bool { return s.lfu }

// initAccess sets a new value's access record: now, or under LFU the
// counter of the value it replaces (Valkey keeps it on overwrite) or
// LFU_INIT_VAL for a new key.
func (s *Store) initAccess(v, old *Value) {
	switch {
	case !s.lfu:
		v.access = uint32(s.now/accessUnit) &^ accessLFU
	case old != nil && old != v:
		v.access = old.access
	case old == nil:
		v.access = accessLFU | uint32(s.minutes()<<8|lfuInitVal)
	}
}

// minutes is the server clock in minutes modulo 2^16 (LFUGetTimeInMinutes).
func (s *Store) minutes() int64 { return (s.now / 60000) & 0xffff }

// Value.access packs an access into 32 bits (a Value is 48 bytes, and a
// hash key's Value and Hash share one 64-byte allocation:
// BenchmarkPendingJobMemory). Under LRU it is the server clock in units of
// accessUnit ms modulo 2^31, so idle times up to 397 days are exact to 16 ms
// (Valkey's LRU clock counts seconds and wraps after 194 days); under LFU
// it is accessLFU | minutes<<8 | counter.
const (
	accessUnit = 16
	accessLFU  = 1 << 31
)

// touchAccess records an access to v.
func (s *Store) touchAccess(v *Value) {
	if !s.lfu {
		v.access = uint32(s.now/accessUnit) &^ accessLFU
		return
	}
	c := s.lfuDecr(v)
	if c < 255 {
		base := float64(c - lfuInitVal)
		if base < 0 {
			base = 0
		}
		if rand.Float64() < 1.0/(base*float64(s.lfuLog)+1) {
			c++
		}
	}
	v.access = accessLFU | uint32(s.minutes()<<8|c)
}

// lfuDecr is LFUDecrAndReturn: v's counter after the decay of the minutes
// since its last access. A value last touched outside LFU mode starts at
// LFU_INIT_VAL.
func (s *Store) lfuDecr(v *Value) int64 {
	if v.access&accessLFU == 0 {
		return lfuInitVal
	}
	ldt, c := int64(v.access>>8&0xffff), int64(v.access&255)
	now := s.minutes()
	elapsed := now - ldt
	if elapsed < 0 {
		elapsed += 65536
	}
	if s.lfuDecay > 0 {
		if periods := elapsed / s.lfuDecay; periods > 0 {
			if periods > c {
				c = 0
			} else {
				c -= periods
			}
		}
	}
	return c
}

// IdleMs is how long ago (ms, server clock) v was last accessed (OBJECT
// IDLETIME divides it by 1000).
func (s *Store) IdleMs(v *Value) int64 {
	if s.lfu || v.access&accessLFU != 0 {
		return 0
	}
	d := (uint32(s.now/accessUnit) - v.access) &^ accessLFU
	if d >= accessLFU/2 {
		return 0 // the clock went back
	}
	return int64(d) * accessUnit
}

// Freq is v's LFU counter after decay (OBJECT FREQ).
func (s *Store) Freq(v *Value) int64 { return s.lfuDecr(v) }
