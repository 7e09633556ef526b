package store

import (
	"math/rand/v2"
	"strings"
	"time"
)

// Key expiry (docs/compat.md §1.7; Valkey's db.c and expire.c). A key's TTL
// is an absolute time in Unix milliseconds on the server clock, kept in its
// database's TTL table (an oaTable, keytable.go, with the walk of the
// active expire cycle below). A key is expired once the command time is past
// its expire time (now > at, Valkey's keyIsExpired: at the expire time
// itself the key still exists, with PTTL 0). An expired key is deleted
// when a command looks it up (lazy expiry) or when the active expire cycle
// samples it, whichever comes first; either way the deletion counts in
// expired_keys, touches WATCHers of the key and reaches the AOF as DEL.
// Nothing expires while the AOF is replayed (Store.Replay); PurgeExpired
// then removes what expired meanwhile.

// SetNow sets the time (Unix ms, server clock) of the command about to run:
// every TTL check of the command uses it, as Valkey's command time snapshot.
// The server calls it before each command (and each retry of a blocked
// one, and each expire cycle).
func (s *Store) SetNow(ms int64) { s.now = ms }

// Now is the time set by SetNow.
func (s *Store) Now() int64 { return s.now }

// Loading reports whether the AOF is being replayed (Replay): while
// loading, no key expires (a key that was set with an expire time now in
// the past is kept, so the records that follow it replay as they were
// recorded).
func (s *Store) Loading() bool { return s.loading }

// isExpired reports whether key has a TTL that has passed (without
// deleting it). Never while loading.
func (d *DB) isExpired(key string) bool {
	if d.expires.used == 0 || d.s.loading {
		return false
	}
	at, ok := d.expires.lookup(key)
	return ok && d.s.now > at
}

// expireIfNeeded deletes key when its TTL has passed and reports whether it
// did.
func (d *DB) expireIfNeeded(key string) bool {
	if !d.isExpired(key) {
		return false
	}
	d.deleteExpired(key)
	return true
}

// delArgv is the record of an expired key's deletion.
var delName = []byte("DEL")

// deleteExpired removes key as expired: expired_keys, WATCH (Valkey's
// deleteExpiredKeyAndPropagate signals the key as modified), the AOF (DEL)
// and the change count.
func (d *DB) deleteExpired(key string) {
	// The lookups that reach here (Get, Peek) are handed keys converted
	// from a command's argument bytes; touch keeps the key (WATCH,
	// tracking), so without this copy for the rare expired one, escape
	// analysis makes every read command's key conversion a heap
	// allocation (one per HGET, ZSCORE, HINCRBY: BenchmarkHGetPipelined64).
	d.expires.del(key)
	d.keys.del(key)
	d.noteKeyGone()
	s := d.s
	s.ExpiredKeys++
	s.expGen++
	s.DirtyCount++
	s.touch(d.Index, strings.Clone(key), false)
	if s.feed != nil {
		s.Record(d.Index, [][][]byte{{delName, []byte(key)}})
	}
}

// Lookup returns the value at key, or nil when it is missing or its TTL
// has passed, without any side effect (no deletion, no access time): for
// readers outside a command, such as the AOF rewrite.
func (d *DB) Lookup(key string) *Value {
	v := d.keys.get(key)
	if v == nil || d.isExpired(key) {
		return nil
	}
	return v
}

// ExpireAt returns key's expire time (Unix ms) and whether it has one. It
// does not check whether the key itself is expired (callers look the key up
// first).
func (d *DB) ExpireAt(key string) (int64, bool) {
	if d.expires.used == 0 {
		return 0, false
	}
	return d.expires.lookup(key)
}

// SetExpire sets key's expire time (Unix ms). The key must exist. The TTL
// table keeps the keyspace's string of the key, not key itself, so a key
// with a TTL costs its bytes once (as Valkey's expires dict shares the
// keyspace's sds).
func (d *DB) SetExpire(key string, at int64) {
	i := d.keys.find(key)
	if i < 0 {
		panic("store: SetExpire on a missing key " + key)
	}
	d.s.mutations++
	if d.expires.put(d.keys.slots[i].key(), at) {
		if n := d.expires.len(); n > d.expiresPeak {
			d.expiresPeak = n
		}
	}
}

// Persist removes key's TTL and reports whether it had one.
func (d *DB) Persist(key string) bool {
	if d.expires.used == 0 || !d.expires.del(key) {
		return false
	}
	d.s.mutations++
	d.noteKeyGone()
	return true
}

// TableBytes is the size of the slot arrays of d's keyspace table and TTL
// table (MEMORY STATS db.<n> overhead.hashtable.main and .expires).
func (d *DB) TableBytes() (main, expires int64) { return d.keys.bytes(), d.expires.bytes() }

// ExpiresLen is the number of keys with a TTL (INFO keyspace expires=).
func (d *DB) ExpiresLen() int { return d.expires.len() }

// AvgTTL is the estimated average TTL of the keys with one, in ms, as the
// active expire cycle samples it (INFO keyspace avg_ttl=).
func (d *DB) AvgTTL() int64 { return d.avgTTL }

// PurgeExpired deletes every key whose TTL has passed at the time set by
// SetNow, in every database, as expired keys (counted, recorded as DEL) and
// returns how many. The server runs it once the AOF is replayed, so keys
// that expired while the server was down are gone at once.
func (s *Store) PurgeExpired() int {
	if s.loading {
		return 0
	}
	n := 0
	for _, d := range s.dbs {
		for k, at := range d.expires.all() {
			if s.now > at {
				d.deleteExpired(k)
				n++
			}
		}
	}
	return n
}

// The active expire cycle's parameters (Valkey's expire.c): keys sampled
// per loop and the stale percentage above which a database is sampled
// again, both at active-expire-effort 1 (ExpireKeysPerLoop and
// ExpireAcceptableStale scale them with the effort), databases visited per
// cycle, iterations between two looks at the clock, smoothing factors.
const (
	expireKeysPerLoop     = 20
	expireAcceptableStale = 10
	expireDBsPerCycle     = 16
	expireTimeCheckEvery  = 16
	expireStaleSmoothing  = 0.05
	expireAvgTTLSmoothing = 50
)

// The active expire cycle walks each database's TTL table in slot order,
// as Valkey's walks its expires dict with db->expires_cursor: a sample goes
// on from the slot where the last one stopped, and the walk starts again at
// slot 0 after the last. Until round 7 the TTL table was a Go map, and each
// sample was a range from Go's random start: once part of the table was
// cleaned, most samples began in a cleaned stretch, found few keys expired
// and ended the database's turn, so 400,000 expired keys beside 200,000
// long-lived ones went at about 2,000 a second, where Valkey 8.0.1 took
// about ten seconds for all of them (docs/compat.md, bench/README.md "Key
// expiry (round 7)"). A key inserted behind the walk is met on its next
// pass; a resize (new slots, a new seed) leaves the cursor where it was.

// ExpireAcceptableStale is the percentage of expired keys in a sample at or
// below which a database's turn of the expire cycle ends, at the given
// active-expire-effort (1..10): 10, one less per step of effort (Valkey's
// config_cycle_acceptable_stale).
func ExpireAcceptableStale(effort int) int {
	return expireAcceptableStale - (min(max(effort, 1), 10) - 1)
}

// ActiveExpireCycle is one run of Valkey's slow active expire cycle at the
// time set by SetNow and the given active-expire-effort (1..10): up to 16
// databases (continuing round robin where the last run stopped), each
// sampled 20 keys at a time (more with more effort) along its TTL table
// from where its last sample stopped; expired ones are deleted, and a
// database is sampled again while more than 10% (less with more effort) of
// a sample was expired and its walk has not come back to the start. It stops when budget (real time)
// is spent and then reports true (the cycle hit its time limit; the caller
// runs another one soon, releasing the store lock in between so clients
// never wait longer than one budget). Call under the store lock.
func (s *Store) ActiveExpireCycle(budget time.Duration, effort int) (timeLimit bool) {
	if s.loading {
		return false
	}
	effort = min(max(effort, 1), 10) - 1
	keysPerLoop := expireKeysPerLoop + expireKeysPerLoop/4*effort
	acceptable := ExpireAcceptableStale(effort + 1)
	start := time.Now()
	var totalSampled, totalExpired int64
	iteration := 0
	for j := 0; j < expireDBsPerCycle && j < len(s.dbs) && !timeLimit; j++ {
		d := s.dbs[s.expireDB%len(s.dbs)]
		s.expireDB++
		for {
			n := d.expires.len()
			if n == 0 {
				d.avgTTL = 0
				d.expCursor = 0
				break
			}
			if n > keysPerLoop {
				n = keysPerLoop
			}
			sampled, expired, done := 0, 0, false
			var ttlSum, ttlSamples int64
			// The sample goes on along the table from where the last one
			// stopped (the walk, above), looking at up to 20 slots a key.
			slots := d.expires.slots
			for looked := 0; sampled < n && looked < n*20; {
				if d.expCursor >= len(slots) {
					d.expCursor, done = 0, true
					break
				}
				sl := &slots[d.expCursor]
				if sl.tag() < ktFull {
					d.expCursor++
					looked++
					continue
				}
				sampled++
				if at := sl.v; s.now > at {
					// The deletion may shift a later entry into this slot
					// (backward shift): the slot is looked at again.
					d.deleteExpired(sl.key())
					expired++
					continue
				} else if ttl := at - s.now; ttl > 0 {
					ttlSum += ttl
					ttlSamples++
				}
				d.expCursor++
				looked++
			}
			totalSampled += int64(sampled)
			totalExpired += int64(expired)
			if ttlSamples > 0 {
				avg := ttlSum / ttlSamples
				if d.avgTTL == 0 {
					d.avgTTL = avg
				} else {
					d.avgTTL = d.avgTTL/expireAvgTTLSmoothing*(expireAvgTTLSmoothing-1) + avg/expireAvgTTLSmoothing
				}
			}
			iteration++
			if iteration%expireTimeCheckEvery == 0 && time.Since(start) > budget {
				timeLimit = true
				break
			}
			// Valkey's rule: the database's turn ends when its walk came
			// back to the start, or when no more than acceptable percent of
			// a sample had expired.
			if done || (sampled != 0 && expired*100/sampled <= acceptable) {
				break
			}
		}
		if time.Since(start) > budget {
			timeLimit = true
		}
	}
	s.ExpireCycleCPUMicros += time.Since(start).Microseconds()
	if timeLimit {
		s.ExpiredTimeCapCount++
	}
	perc := 0.0
	if totalSampled > 0 {
		perc = float64(totalExpired) / float64(totalSampled)
	}
	s.ExpiredStalePerc = perc*expireStaleSmoothing + s.ExpiredStalePerc*(1-expireStaleSmoothing)
	return timeLimit
}

// RandomKey returns a random key of d that is not expired, deleting the
// expired ones it meets (Valkey's dbRandomKey), or "" and false when d is
// empty.
func (d *DB) RandomKey() (string, bool) {
	for d.keys.len() > 0 {
		// The first key from a random slot; stepping a random number of
		// keys on spreads the choice further.
		skip := 0
		if n := d.keys.len(); n > 1 {
			skip = rand.IntN(min(n, 16))
		}
		key, _ := d.keys.random(skip)
		if d.expireIfNeeded(key) {
			continue
		}
		return key, true
	}
	return "", false
}
