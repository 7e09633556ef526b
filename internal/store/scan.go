package store

import (
	"cmp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/emqd/emqd/internal/num"
)

// SCAN, HSCAN and ZSCAN cursors over Go maps.
//
// Valkey's cursor walks hash-table buckets in reverse-binary order. emqd has
// no bucket array to walk, so it orders names by a 63-bit hash of their
// bytes (FNV-1a, shifted right by one so every cursor fits a signed 64-bit
// integer for clients that parse it as one) and a cursor c means "every name
// whose position is below c has been visited". Each page is served from a
// sorted snapshot of the names: a snapshot is built when a scan starts
// (cursor 0) and anything changed since the last one, or when a non-zero
// cursor arrives and there is none; it is dropped when a page reaches the
// end. Names in a page are checked against the live data before they are
// returned, so deleted names are never returned.
//
// Cost: building a snapshot is O(n log n) under the store lock (about a
// quarter of a second per million keys on a small machine), paid once per
// scan that starts after a change; each page is then O(log n + COUNT).
// Valkey's bucket walk has no such start-up cost.
//
// Guarantee (as Valkey's): a name present for the whole of a scan (from the
// call with cursor 0 to the call that returns 0) is returned at least once;
// a name added or removed during the scan may or may not be. Why: every
// snapshot a scan uses was built after the scan began, so it holds every
// name present throughout, and positions are a pure function of the name, so
// a cursor means the same thing in any snapshot. Two names with the same
// position are always served in the same page. Unlike Valkey (whose
// rehashing can repeat elements), a name is never returned twice in one
// scan: cursors only move forward through fixed positions.

// scanCollMax is how many collection (HSCAN/ZSCAN) snapshots a database
// keeps at once, so that a few clients scanning different big collections at
// the same time do not rebuild each other's snapshot on every page.
const scanCollMax = 4

// scanCache holds a database's scan snapshots (the DB's scan field).
type scanCache struct {
	keys  *scanSnapshot
	colls []*scanSnapshot
}

// scanSnapshot is a list of names sorted by scan position.
type scanSnapshot struct {
	src   any   // the *Hash or *ZSet it was built from; nil for the keyspace
	dirty int64 // Store.DirtyCount when built
	size  int   // number of names when built
	names []scanName
}

type scanName struct {
	pos  uint64
	name string
}

// scanPos is the scan position of name: FNV-1a 64 of its bytes, shifted
// right by one (so positions and cursors stay below 2^63).
func scanPos(name string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(name); i++ {
		h ^= uint64(name[i])
		h *= 1099511628211
	}
	return h >> 1
}

func buildScanSnapshot(src any, dirty int64, size int, each func(yield func(string))) *scanSnapshot {
	sn := &scanSnapshot{src: src, dirty: dirty, size: size, names: make([]scanName, 0, size)}
	each(func(name string) { sn.names = append(sn.names, scanName{scanPos(name), name}) })
	slices.SortFunc(sn.names, func(a, b scanName) int {
		if c := cmp.Compare(a.pos, b.pos); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	return sn
}

// page returns the names at or after cursor and the cursor of the next
// page (0 when this page reaches the end). live reports whether a name is
// still present; like Valkey's scanGenericCommand (db.c), which visits
// buckets until it has sampled COUNT entries or visited 10*COUNT buckets, a
// page runs until it holds count live names or has looked at 10*count
// names, then takes any that share the last one's position. So a snapshot
// whose names were mostly deleted after it was built (a keyspace emptied
// while a scan runs) still moves about COUNT live names a call, where a page
// of count snapshot names would return mostly nothing; Valkey's table
// shrinks under the same deletions to the same effect.
func (sn *scanSnapshot) page(cursor uint64, count int64, live func(string) bool) ([]scanName, uint64) {
	n := len(sn.names)
	i := sort.Search(n, func(i int) bool { return sn.names[i].pos >= cursor })
	limit := int64(n - i)
	if count <= limit/10 {
		limit = count * 10
	}
	end, sampled := i, int64(0)
	for end < i+int(limit) && sampled < count {
		if live(sn.names[end].name) {
			sampled++
		}
		end++
	}
	for end < n && end > i && sn.names[end].pos == sn.names[end-1].pos {
		end++
	}
	if end >= n {
		return sn.names[i:], 0
	}
	return sn.names[i:end], sn.names[end-1].pos + 1
}

// scanShrinkMin and scanShrinkRatio decide when a scan under way rebuilds
// its snapshot because most of its names are gone: at least scanShrinkMin
// names, and scanShrinkRatio times the live count or more. Valkey shrinks a
// hash table whose fill falls under an eighth (dict.c), after which its
// cursor walks the small table; a rebuilt snapshot does the same here. The
// guarantees hold across a rebuild (positions are a function of the name,
// and the new snapshot, built after the scan began, holds every name present
// throughout). The cost is O(n log n) of the live names, paid again only
// after another eightfold shrink.
const (
	scanShrinkMin   = 1024
	scanShrinkRatio = 8
)

func scanShrunk(sn *scanSnapshot, live int) bool {
	return sn.size >= scanShrinkMin && sn.size >= scanShrinkRatio*live
}

// scanKeysPage returns one page of the keyspace for SCAN: candidate keys
// (the caller checks each still exists) and the next cursor.
func (d *DB) scanKeysPage(cursor uint64, count int64) ([]scanName, uint64) {
	live := func(k string) bool { return d.keys.get(k) != nil }
	sn := d.scan.keys
	if sn == nil || (cursor == 0 && (sn.dirty != d.s.DirtyCount || sn.size != d.keys.len())) || scanShrunk(sn, d.keys.len()) {
		sn = buildScanSnapshot(nil, d.s.DirtyCount, d.keys.len(), func(yield func(string)) {
			for k := range d.keys.all() {
				yield(k)
			}
		})
		d.scan.keys = sn
	}
	names, next := sn.page(cursor, count, live)
	if next == 0 {
		d.scan.keys = nil
	}
	return names, next
}

// scanCollPage returns one page of a big collection src (a *Hash or *ZSet,
// for HSCAN/ZSCAN) of size names, listed by each when a snapshot must be
// built, and live reports whether a name is still in it: candidate names
// (the caller checks each still exists) and the next cursor.
func (d *DB) scanCollPage(src any, size int, cursor uint64, count int64, each func(yield func(string)), live func(string) bool) ([]scanName, uint64) {
	idx := -1
	for i, sn := range d.scan.colls {
		if sn.src == src {
			idx = i
			break
		}
	}
	var sn *scanSnapshot
	if idx >= 0 {
		sn = d.scan.colls[idx]
		if (cursor == 0 && (sn.dirty != d.s.DirtyCount || sn.size != size)) || scanShrunk(sn, size) {
			sn = nil
		}
		d.scan.colls = append(d.scan.colls[:idx], d.scan.colls[idx+1:]...)
	}
	if sn == nil {
		sn = buildScanSnapshot(src, d.s.DirtyCount, size, each)
	}
	names, next := sn.page(cursor, count, live)
	if next != 0 {
		if len(d.scan.colls) >= scanCollMax {
			d.scan.colls = append(d.scan.colls[:0], d.scan.colls[1:]...)
		}
		d.scan.colls = append(d.scan.colls, sn)
	}
	return names, next
}

// scanCollPaging reports whether a paged scan of src is under way: a
// snapshot of it is kept and cursor is not 0. HSCAN and ZSCAN then go on
// paging a collection that has shrunk to the size they return whole, so
// that the scan's names are not returned a second time.
func (d *DB) scanCollPaging(src any, cursor uint64) bool {
	if cursor == 0 {
		return false
	}
	for _, sn := range d.scan.colls {
		if sn.src == src {
			return true
		}
	}
	return false
}

// resetScan drops every snapshot of d (FLUSHDB, FLUSHALL).
func (d *DB) resetScan() { d.scan = scanCache{} }

// ParseScanCursor parses a SCAN/HSCAN/ZSCAN cursor as Valkey's string2ull
// (util.c, via parseScanCursorOrReply): string2ll's strict form when it
// applies (a negative value such as "-1" is refused), otherwise C strtoull
// over the whole text, which also takes leading white space, a sign,
// leading zeros ("01", " 5", "+5") and a negated value modulo 2^64
// ("-18446744073709551615" is 1), and refuses "", trailing bytes and values
// above 2^64-1. The text ends at the first NUL byte, as in C. Refusal is
// `ERR invalid cursor` (Valkey's db.c parseScanCursorOrReply).
func ParseScanCursor(b []byte) (uint64, bool) {
	for i, c := range b {
		if c == 0 {
			b = b[:i]
			break
		}
	}
	if n, ok := num.ParseInt(b); ok {
		if n < 0 {
			return 0, false
		}
		return uint64(n), true
	}
	if len(b) == 0 {
		return 0, false
	}
	i := 0
	for i < len(b) && (b[i] == ' ' || (b[i] >= '\t' && b[i] <= '\r')) {
		i++
	}
	neg := false
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	if i >= len(b) || b[i] < '0' || b[i] > '9' {
		return 0, false // no conversion: the end pointer is not at the end
	}
	var v uint64
	for ; i < len(b); i++ {
		c := b[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (1<<64-1)/10 || v*10 > 1<<64-1-d {
			return 0, false // ERANGE
		}
		v = v*10 + d
	}
	if neg {
		v = -v
	}
	return v, true
}

// scanOpts are the options of SCAN, HSCAN and ZSCAN after the cursor.
type scanOpts struct {
	count    int64
	pattern  string
	usePat   bool
	typeName string // SCAN TYPE, lower case; "" when not given
	onlyKeys bool   // HSCAN NOVALUES, ZSCAN NOSCORES
}

// parseScanOptions parses c.Argv[i:] as Valkey's scanGenericCommand does
// (db.c), in argument order, the first bad option deciding the error:
// COUNT n (`ERR value is not an integer or out of range`; n < 1 is
// `ERR syntax error`), MATCH pattern, TYPE name (SCAN only; an unknown name
// is `ERR unknown type name '<name>'`), NOVALUES (HSCAN only, else
// `ERR NOVALUES option can only be used in HSCAN`), NOSCORES (ZSCAN only,
// else `ERR NOSCORES option can only be used in ZSCAN`); anything else,
// including an option missing its argument, is `ERR syntax error`. target
// is 0 for SCAN, KindHash for HSCAN, KindZSet for ZSCAN. On refusal it
// writes the error and returns false.
func parseScanOptions(c *Ctx, i int, target Kind) (scanOpts, bool) {
	o := scanOpts{count: 10}
	argv := c.Argv
	for i < len(argv) {
		left := len(argv) - i
		opt := string(argv[i])
		switch {
		case strings.EqualFold(opt, "count") && left >= 2:
			n, ok := num.ParseInt(argv[i+1])
			if !ok {
				c.W.Error(ErrNotInteger)
				return o, false
			}
			if n < 1 {
				c.W.Error(ErrSyntax)
				return o, false
			}
			o.count = n
			i += 2
		case strings.EqualFold(opt, "match") && left >= 2:
			o.pattern = string(argv[i+1])
			o.usePat = o.pattern != "*"
			i += 2
		case strings.EqualFold(opt, "type") && target == 0 && left >= 2:
			name := string(argv[i+1])
			switch t := strings.ToLower(name); t {
			case "string", "list", "set", "zset", "hash", "stream":
				o.typeName = t
			default:
				c.W.Error("ERR unknown type name '" + name + "'")
				return o, false
			}
			i += 2
		case strings.EqualFold(opt, "novalues"):
			if target != KindHash {
				c.W.Error("ERR NOVALUES option can only be used in HSCAN")
				return o, false
			}
			o.onlyKeys = true
			i++
		case strings.EqualFold(opt, "noscores"):
			if target != KindZSet {
				c.W.Error("ERR NOSCORES option can only be used in ZSCAN")
				return o, false
			}
			o.onlyKeys = true
			i++
		default:
			c.W.Error(ErrSyntax)
			return o, false
		}
	}
	return o, true
}

// match reports whether name passes the MATCH pattern.
func (o *scanOpts) match(name string) bool {
	return !o.usePat || GlobMatch(o.pattern, name, false)
}

// writeScanHeader writes the reply's outer `*2`, the next cursor as a bulk
// string, and the header of an array of n items (an array in RESP3 too).
func writeScanHeader(c *Ctx, next uint64, n int) {
	c.W.Array(2)
	c.W.BulkString(strconv.FormatUint(next, 10))
	c.W.Array(n)
}

// emptyScanReply is Valkey's shared.emptyscan: `*2 "0" *0`, what HSCAN and
// ZSCAN answer for a missing key (before parsing any option).
const emptyScanReply = "*2\r\n$1\r\n0\r\n*0\r\n"
