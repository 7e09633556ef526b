package store

import (
	"encoding/binary"
	"math"
	"unsafe"
)

// The listpack: the compact encoding of small hashes and sorted sets
// (Valkey's listpack.c plays the same part; the layout here is emqd's own).
// One byte slice holds a 4-byte little-endian count (fields of a hash,
// members of a sorted set) and then the elements one after the other:
//
//	hash:       field, value, field, value ...     (insertion order)
//	sorted set: member, score, member, score ...   (ascending score, then member)
//
// A string element starts with one byte b:
//
//	b < 0x80          b bytes follow
//	0x80 <= b < 0xC0  the word lpWords[b-0x80], nothing follows
//	b == 0xFF         a uvarint length, then that many bytes
//
// A score is the 8 bytes of the float64, little endian. The words are the
// job row's field names and states (docs/verbs.md §1.3), so a pending job's
// row (state pending, attempts 0, a 64-byte payload, enqueued_at) is 89
// bytes in one allocation, the 96-byte size class (BenchmarkPendingJobMemory).
//
// Bytes below len(lp) are never written again once a view of them may
// exist: a change in the middle builds a new slice, and only appending at
// the end writes in place (beyond len, into spare capacity; a slice cut
// short has its capacity cut too). So the field, value and member slices
// handed out stay valid and unchanged after later writes (they keep that
// buffer alive). The count header is the one exception; it is never handed
// out.
//
// A hash's listpack whose bytes were never handed out may be rewritten in
// place (HINCRBY, HINCRBYFLOAT, a plan's HINCRBY, HSET of an existing field:
// Hash.lpSet), as Valkey rewrites its listpack entry in place: a value of
// the same encoded size or smaller replaces the old one in the same buffer
// instead of a copy of the whole listpack. The top bit of the count header
// (lpViewedBit) records that a view may exist: every Hash method that hands
// out bytes sharing the buffer sets it (Get, Range, At, Snapshot), a new
// buffer starts with it clear (lpFresh), and a set bit forbids the in-place
// rewrite for that buffer's life. The holders of such views, and why each
// is covered:
//
//   - replies: resp.Writer.Bulk copies into the connection's buffer under
//     the store lock, so a reply never holds listpack bytes; the commands
//     that only read a value into a reply or a number (HGET, HMGET, HSTRLEN,
//     HEXISTS, HINCRBY's read of the old value) use Hash.peek, which does
//     not set the bit;
//   - Lua and MULTI: replies reach a script through the same writer (copied);
//   - the AOF rewrite's capture (aof/rewrite.go captureKeys keeps Range's
//     values and writes them without the lock) and BGSAVE/DUMP's
//     HashSnapshot (kept in O(1) and read without the lock): Range and
//     Snapshot set the bit;
//   - the job verbs' read pass and plans (rows read with Get and Range, kept
//     until the apply and the reply): the bit is set; the metrics counters
//     and the mint's last id, only parsed by the judgement before the apply,
//     are read with Peek and leave it clear (verbs.readCounter);
//   - EMQ.STALLED.CHECK's read pass reads its rows with RangeForPlan, which
//     does not set it: the verb reads none of a row's views after its
//     plan's HSET of the row (the audit: docs/architecture.md §2.5, "Views
//     of a row and its in-place write"; TestSweepInPlaceMatchesCopy);
//   - keyspace notifications, client-side caching and WATCH keep keys, never
//     values; the AOF record of a write is its argv (or, for HINCRBYFLOAT,
//     the formatted text), copied into the AOF buffer.
//
// The bit is only ever set by a holder and cleared by a new allocation, so
// a missed clear costs an allocation, never a changed view
// (TestHashInPlaceKeepsViews).
//
// A sorted set's listpack follows the same rule with the same bit (ZSet's
// lpInPlace, lpRemove, lpInsert): while no view is outstanding, a removal
// from the front moves the header forward over the removed entry's last
// bytes and starts the slice there (O(1), no copy: ZPOPMIN, the claim's
// ZREM of the oldest pending job, COMPLETE's ZREM of the oldest lease), a
// removal elsewhere moves the later bytes down, the tail's cut keeps its
// capacity, and an insert that fits the capacity moves the later bytes up;
// otherwise the listpack is copied, as before. The holders, and why each
// is covered:
//
//   - members handed out are copies (ZItem.Member: At, Min, PopMin, the
//     walks, members for SCAN and ZSCAN's snapshot), so replies, Lua, the
//     AOF rewrite of a small set (its ZADDs built under the lock) and the
//     job verbs' plans never hold the set's bytes;
//   - ZSet.AtView (the claim's read pass) hands out a view valid only until
//     the set's next write, and its one caller copies it into the row key
//     before any write: it does not set the bit;
//   - ZSet.Snapshot (BGSAVE, DUMP, the AOF rewrite's capture, all read
//     without the lock) shares the bytes in O(1) and sets the bit;
//   - a walk (Ascend, Descend and their variants) reads the slice as it was
//     while its callback may write the set: ZSet.walks forbids in-place
//     edits until it returns (TestZSetInPlaceKeepsViews, FuzzZSetInPlace).

const lpHeader = 4

// lpWords are the strings stored as one byte (at most 64).
var lpWords = [...]string{
	"state", "attempts", "payload", "failures", "stalled", "last_error", "lease_epoch", "progress", "group",
	"pending", "active", "scheduled", "dead", "0", "1", "count", "paused", "last",
	// Appended, so the codes above keep their values. The row's timestamps
	// (docs/verbs.md §1.3): enqueued_at is in every row, and as 12 bytes
	// it took a pending job's row from 89 to 100 bytes, over the 96-byte
	// size class (BenchmarkPendingJobMemory: 304 B per job, 288 with it a
	// word).
	"enqueued_at", "claimed_at", "finished_at",
}

// lpWordMax is the length of the longest word.
const lpWordMax = 11

// lpWordsByLen lists the words of each length with their codes: a word is
// found by its length and a few short compares, not by hashing (lpWord
// runs for every field and value a hash write stores).
var lpWordsByLen = func() (out [lpWordMax + 1][]lpWordCode) {
	for i, w := range lpWords {
		if len(w) > lpWordMax || i >= 0x40 {
			panic("store: bad listpack word " + w)
		}
		out[len(w)] = append(out[len(w)], lpWordCode{w, byte(0x80 + i)})
	}
	return out
}()

type lpWordCode struct {
	w    string
	code byte
}

// lpWord returns the one-byte code of s, or 0 when s is not a word.
func lpWord(s string) byte {
	if len(s) > lpWordMax || len(s) == 0 {
		return 0
	}
	for _, c := range lpWordsByLen[len(s)] {
		if c.w[0] == s[0] && c.w == s {
			return c.code
		}
	}
	return 0
}

// lpViewedBit is the header's top bit: a view of the buffer's bytes may
// have been handed out, so they must not be rewritten in place (above).
const lpViewedBit = 1 << 31

// lpCount is the count recorded in lp's header.
func lpCount(lp []byte) int {
	if len(lp) < lpHeader {
		return 0
	}
	return int(binary.LittleEndian.Uint32(lp) &^ lpViewedBit)
}

// lpSetCount writes n into lp's header (in place), keeping the viewed bit.
func lpSetCount(lp []byte, n int) {
	h := binary.LittleEndian.Uint32(lp)
	binary.LittleEndian.PutUint32(lp, uint32(n)|h&lpViewedBit)
}

// lpMarkViewed records that a view of lp's bytes is being handed out. It
// writes only when the bit is clear, so a marked listpack is not written by
// readers.
func lpMarkViewed(lp []byte) {
	if len(lp) >= lpHeader && lp[3]&0x80 == 0 {
		lp[3] |= 0x80
	}
}

// lpViewed reports whether a view of lp's bytes may exist.
func lpViewed(lp []byte) bool { return len(lp) >= lpHeader && lp[3]&0x80 != 0 }

// lpFresh clears the viewed bit of a buffer just allocated (a copy of a
// marked one inherits the header): nothing has seen its bytes yet.
func lpFresh(lp []byte) []byte {
	if len(lp) >= lpHeader {
		lp[3] &^= 0x80
	}
	return lp
}

// lpAlloc returns an empty slice with room for at least size bytes: the
// whole of the allocator's size class, so a later append may still fit.
func lpAlloc(size int) []byte {
	return append([]byte(nil), make([]byte, size)...)[:0]
}

// lpNew returns an empty listpack with room for extra more bytes.
func lpNew(extra int) []byte {
	return lpAlloc(lpHeader + extra)[:lpHeader]
}

// lpStrLen is the encoded size of the string element s.
func lpStrLen(s string) int {
	switch n := len(s); {
	case n < 0x80:
		if lpWord(s) != 0 {
			return 1
		}
		return 1 + n
	default:
		var tmp [binary.MaxVarintLen64]byte
		return 1 + binary.PutUvarint(tmp[:], uint64(n)) + n
	}
}

// lpAppendStr appends the string element s.
func lpAppendStr(lp []byte, s string) []byte {
	if len(s) < 0x80 {
		if w := lpWord(s); w != 0 {
			return append(lp, w)
		}
		lp = append(lp, byte(len(s)))
		return append(lp, s...)
	}
	lp = append(lp, 0xFF)
	lp = binary.AppendUvarint(lp, uint64(len(s)))
	return append(lp, s...)
}

// lpAppendScore appends a score element.
func lpAppendScore(lp []byte, f float64) []byte {
	return binary.LittleEndian.AppendUint64(lp, math.Float64bits(f))
}

// lpStr reads the string element at off: its bytes (a view that must not
// be written, cap = len) and the offset of the next element.
func lpStr(lp []byte, off int) ([]byte, int) {
	b := lp[off]
	switch {
	case b < 0x80:
		s := off + 1
		e := s + int(b)
		return lp[s:e:e], e
	case b < 0xC0:
		w := lpWords[b-0x80]
		return unsafe.Slice(unsafe.StringData(w), len(w)), off + 1
	}
	n, k := binary.Uvarint(lp[off+1:])
	s := off + 1 + k
	e := s + int(n)
	return lp[s:e:e], e
}

// lpScore reads the score element at off.
func lpScore(lp []byte, off int) float64 {
	return math.Float64frombits(binary.LittleEndian.Uint64(lp[off:]))
}

// lpView is b as a string sharing b's bytes (b must not change while the
// string is in use: listpack bytes a view may see never do, listpack.go).
func lpView(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// lpSplice returns lp with lp[lo:hi] replaced by what ins appends (insLen
// bytes), in a new slice (a change in the middle never writes the old
// bytes); n is the new count.
func lpSplice(lp []byte, lo, hi, insLen, n int, ins func(dst []byte) []byte) []byte {
	out := append(lpAlloc(len(lp)-(hi-lo)+insLen), lp[:lo]...)
	out = ins(out)
	out = append(out, lp[hi:]...)
	lpSetCount(lpFresh(out), n)
	return out
}

// lpCut returns lp without lp[lo:hi] (new count n). Cutting the tail keeps
// the buffer and cuts the capacity, so a later append reallocates rather
// than writing over bytes handed out earlier.
func lpCut(lp []byte, lo, hi, n int) []byte {
	if hi == len(lp) {
		lp = lp[:lo:lo]
		lpSetCount(lp, n)
		return lp
	}
	return lpSplice(lp, lo, hi, 0, n, func(dst []byte) []byte { return dst })
}

// lpGrow makes room for more bytes at the end: in place when the capacity
// allows (bytes beyond len were never handed out), else in a new slice
// with a quarter of headroom (a listpack that grows element by element is
// copied O(log n) times).
func lpGrow(lp []byte, more int) []byte {
	if lp == nil {
		return lpNew(more)
	}
	if cap(lp)-len(lp) >= more {
		return lp
	}
	return lpFresh(append(lpAlloc(len(lp)+more+len(lp)/4), lp...))
}

// lpGrowRoom is lpGrow for a write that knows a later one will add about
// room more bytes (plan.Op.Room): when the buffer must be replaced, the new
// one has room spare beyond the quarter; when more fits, nothing moves.
func lpGrowRoom(lp []byte, more, room int) []byte {
	if lp == nil || cap(lp)-len(lp) >= more || room <= 0 {
		return lpGrow(lp, more)
	}
	return lpFresh(append(lpAlloc(len(lp)+more+len(lp)/4+room), lp...))
}
