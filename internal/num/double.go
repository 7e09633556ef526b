package num

import (
	"math"
	"math/big"
	"math/bits"
	"strconv"
	"unsafe"
)

// This file holds Valkey's double parsing and formatting rules
// (Valkey 8.0 util.c and t_zset.c; docs/compat.md §3.3): string2d for
// scores given as values,
// zslParseRange's plain strtod for range bounds, and d2string (an integer
// when the value is integral and |v| <= 2^62, otherwise the digits of
// fpconv_dtoa's Grisu2 laid out by its emit_digits rules) for every score
// the server prints.

// ParseDouble parses b as Valkey's string2d does (util.c): C strtod syntax covering the whole of b, with no leading white
// space. It accepts "inf", "+inf", "-inf", "infinity" in any case, "1e3",
// ".5", "5.", "+1", "01", and hex floats ("0x10", "0x1p3", "0x1.8" with no
// "p" exponent). It rejects "", "nan", trailing bytes, overflow ("1e400")
// and underflow to zero ("1e-400"; "0e-400" and the subnormal "5e-324" are
// accepted). ok is false when b is refused.
func ParseDouble(b []byte) (v float64, ok bool) {
	if len(b) == 0 || cIsSpace(b[0]) {
		return 0, false
	}
	v, rng, ok := parseStrtod(b)
	if !ok || rng != 0 || v != v {
		return 0, false
	}
	return v, true
}

// ParseRangeBound parses one score bound of ZRANGEBYSCORE, ZCOUNT,
// ZREMRANGEBYSCORE and ZRANGE BYSCORE as zslParseRange does (t_zset.c,
// Valkey 8.0): a leading "(" makes the bound exclusive, the rest
// is read with plain strtod, so leading white space is accepted, "" (and
// "(" alone) means 0, an overflow such as "1e400" means ±inf and an
// underflow means 0. Trailing bytes and NaN are refused (ok false). As in
// C, the text ends at the first NUL byte.
func ParseRangeBound(b []byte) (v float64, exclusive bool, ok bool) {
	if len(b) > 0 && b[0] == '(' {
		exclusive = true
		b = b[1:]
	}
	for i, c := range b {
		if c == 0 {
			b = b[:i]
			break
		}
	}
	if len(b) == 0 {
		return 0, exclusive, true
	}
	v, _, ok = parseStrtod(b)
	if !ok || v != v {
		return 0, false, false
	}
	return v, exclusive, true
}

// cIsSpace is C's isspace in the C locale.
func cIsSpace(c byte) bool {
	return c == ' ' || (c >= '\t' && c <= '\r')
}

func cIsDigit(c byte) bool { return c >= '0' && c <= '9' }

func cIsXDigit(c byte) bool {
	return cIsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func cToLower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// cEqualFold reports whether b equals the lower-case ASCII word s,
// ignoring case.
func cEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		if cToLower(b[i]) != s[i] {
			return false
		}
	}
	return true
}

// parseStrtod reads b as glibc strtod in the C locale and reports whether
// the whole of b was consumed (ok). Leading white space is skipped. rng is
// +1 when the value overflowed (v is ±Inf), -1 when a non-zero number
// underflowed to zero (v is ±0), 0 otherwise. NaN is returned as NaN.
func parseStrtod(b []byte) (v float64, rng int, ok bool) {
	i := 0
	for i < len(b) && cIsSpace(b[i]) {
		i++
	}
	start := i
	neg := false
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	rest := b[i:]
	if len(rest) == 0 {
		return 0, 0, false
	}
	switch cToLower(rest[0]) {
	case 'i':
		if cEqualFold(rest, "inf") || cEqualFold(rest, "infinity") {
			if neg {
				return math.Inf(-1), 0, true
			}
			return math.Inf(1), 0, true
		}
		return 0, 0, false
	case 'n':
		if isNaNText(rest) {
			return math.NaN(), 0, true
		}
		return 0, 0, false
	}
	if len(rest) > 2 && rest[0] == '0' && cToLower(rest[1]) == 'x' {
		if h := rest[2:]; cIsXDigit(h[0]) || (len(h) > 1 && h[0] == '.' && cIsXDigit(h[1])) {
			return parseHex(h, neg)
		}
		// strtod reads the "0" and stops at the x: trailing bytes.
		return 0, 0, false
	}
	// Decimal: digits [. digits] [e [sign] digits], at least one digit.
	j := 0
	nonzero := false
	digits := 0
	for j < len(rest) && cIsDigit(rest[j]) {
		nonzero = nonzero || rest[j] != '0'
		digits++
		j++
	}
	if j < len(rest) && rest[j] == '.' {
		j++
		for j < len(rest) && cIsDigit(rest[j]) {
			nonzero = nonzero || rest[j] != '0'
			digits++
			j++
		}
	}
	if digits == 0 {
		return 0, 0, false
	}
	if j < len(rest) && cToLower(rest[j]) == 'e' {
		j++
		if j < len(rest) && (rest[j] == '+' || rest[j] == '-') {
			j++
		}
		if j >= len(rest) || !cIsDigit(rest[j]) {
			return 0, 0, false
		}
		for j < len(rest) && cIsDigit(rest[j]) {
			j++
		}
	}
	if j != len(rest) {
		return 0, 0, false
	}
	// The text is now plain decimal syntax that strconv reads the same way
	// (it rounds correctly, as glibc does). strconv copies the string into
	// any error it returns, so viewing b without a copy is safe.
	s := b[start:]
	f, err := strconv.ParseFloat(unsafe.String(&s[0], len(s)), 64)
	if err != nil {
		if math.IsInf(f, 0) {
			return f, 1, true
		}
		return 0, 0, false
	}
	if f == 0 && nonzero {
		return f, -1, true
	}
	return f, 0, true
}

// isNaNText reports whether b is strtod's "nan" or "nan(n-char-sequence)".
func isNaNText(b []byte) bool {
	if len(b) < 3 || !cEqualFold(b[:3], "nan") {
		return false
	}
	if len(b) == 3 {
		return true
	}
	if b[3] != '(' || b[len(b)-1] != ')' {
		return false
	}
	for _, c := range b[4 : len(b)-1] {
		if !(cIsDigit(c) || (cToLower(c) >= 'a' && cToLower(c) <= 'z') || c == '_') {
			return false
		}
	}
	return true
}

// parseHex reads the hex float mantissa h (after "0x") with an optional
// binary exponent "p[sign]digits", which must cover all of h.
func parseHex(h []byte, neg bool) (float64, int, bool) {
	j := 0
	nonzero := false
	for j < len(h) && cIsXDigit(h[j]) {
		nonzero = nonzero || h[j] != '0'
		j++
	}
	if j < len(h) && h[j] == '.' {
		j++
		for j < len(h) && cIsXDigit(h[j]) {
			nonzero = nonzero || h[j] != '0'
			j++
		}
	}
	hasExp := false
	if j < len(h) && cToLower(h[j]) == 'p' {
		k := j + 1
		if k < len(h) && (h[k] == '+' || h[k] == '-') {
			k++
		}
		if k >= len(h) || !cIsDigit(h[k]) {
			return 0, 0, false
		}
		for k < len(h) && cIsDigit(h[k]) {
			k++
		}
		j = k
		hasExp = true
	}
	if j != len(h) {
		return 0, 0, false
	}
	// strconv wants "0x" and a "p" exponent.
	var stack [64]byte
	buf := stack[:0]
	if neg {
		buf = append(buf, '-')
	}
	buf = append(buf, '0', 'x')
	buf = append(buf, h...)
	if !hasExp {
		buf = append(buf, 'p', '0')
	}
	f, err := strconv.ParseFloat(string(buf), 64)
	if err != nil {
		if math.IsInf(f, 0) {
			return f, 1, true
		}
		return 0, 0, false
	}
	if f == 0 && nonzero {
		return f, -1, true
	}
	return f, 0, true
}

// FormatScore formats v as Valkey's d2string (util.c; docs/compat.md
// §3.3): "nan", "inf", "-inf", "0", "-0"; an integral value with
// |v| <= 2^62 as a plain integer ("100000000000000000"); anything else as
// fpconv_dtoa's Grisu2 digits with the emit_digits layout ("1.5",
// "0.000025", "1e+20", "1e-7", "8.716973141899057e+5", "5e-324").
func FormatScore(v float64) string {
	var buf [32]byte
	return string(AppendScore(buf[:0], v))
}

// AppendScore appends FormatScore(v) to dst without allocating when dst
// has room.
func AppendScore(dst []byte, v float64) []byte {
	switch {
	case v != v:
		return append(dst, "nan"...)
	case math.IsInf(v, 1):
		return append(dst, "inf"...)
	case math.IsInf(v, -1):
		return append(dst, "-inf"...)
	case v == 0:
		if math.Signbit(v) {
			return append(dst, "-0"...)
		}
		return append(dst, '0')
	}
	// double2ll: (double)(LLONG_MAX/2) is 2^62 exactly.
	if v >= -(1<<62) && v <= 1<<62 {
		if n := int64(v); float64(n) == v {
			return strconv.AppendInt(dst, n, 10)
		}
	}
	return appendDtoa(dst, v)
}

// ---- Grisu2, after Loitsch, "Printing Floating-Point Numbers Quickly and
// Accurately with Integers" (PLDI 2010), in the variant of fpconv_dtoa
// (night-shift/fpconv, deps/fpconv in Valkey), whose digit choice and
// rounding must be reproduced exactly: it is not always the shortest form.

const (
	dpFracMask  = 0x000FFFFFFFFFFFFF
	dpExpMask   = 0x7FF0000000000000
	dpHiddenBit = 0x0010000000000000
	dpExpBias   = 1023 + 52
)

// diyFp is an unpacked float f×2^e.
type diyFp struct {
	f uint64
	e int
}

// Cached powers of ten: 10^k for k = -348, -340, ..., 340 as normalized
// 64-bit significands rounded to nearest.
const (
	cachedFirstK = -348
	cachedStep   = 8
	cachedCount  = 87
	grisuMinExp  = -60
	grisuMaxExp  = -32
)

var cachedPowers = computeCachedPowers()

func computeCachedPowers() [cachedCount]diyFp {
	var out [cachedCount]diyFp
	one := big.NewInt(1)
	for i := range out {
		k := cachedFirstK + cachedStep*i
		p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(absInt(k))), nil)
		// 10^k = num/den × 2^e, with num/den in [2^63, 2^64).
		var num, den *big.Int
		var e int
		if k >= 0 {
			e = p.BitLen() - 64
			if e >= 0 {
				num, den = p, new(big.Int).Lsh(one, uint(e))
			} else {
				num, den = new(big.Int).Lsh(p, uint(-e)), one
			}
		} else {
			s := 63 + p.BitLen()
			num, den, e = new(big.Int).Lsh(one, uint(s)), p, -s
			if new(big.Int).Quo(num, den).BitLen() < 64 {
				num.Lsh(num, 1)
				e--
			}
		}
		q, r := new(big.Int).QuoRem(num, den, new(big.Int))
		if r.Lsh(r, 1).Cmp(den) >= 0 {
			q.Add(q, one)
		}
		if q.BitLen() > 64 {
			q.Rsh(q, 1)
			e++
		}
		out[i] = diyFp{q.Uint64(), e}
	}
	return out
}

func absInt(k int) int {
	if k < 0 {
		return -k
	}
	return k
}

// cachedPow10 picks the cached power c = 10^-k such that the product with a
// number of binary exponent exp lands in [grisuMinExp, grisuMaxExp],
// starting from fpconv's estimate and stepping as it does (when two powers
// qualify, the first one reached wins).
func cachedPow10(exp int) (diyFp, int) {
	const oneLogTen = 0.30102999566398114
	approx := int(float64(-(exp + cachedCount)) * oneLogTen)
	idx := (approx - cachedFirstK) / cachedStep
	for {
		cur := exp + cachedPowers[idx].e + 64
		if cur < grisuMinExp {
			idx++
			continue
		}
		if cur > grisuMaxExp {
			idx--
			continue
		}
		return cachedPowers[idx], cachedFirstK + idx*cachedStep
	}
}

// mulFp is the 64×64 product rounded to its upper 64 bits.
func mulFp(a, b diyFp) diyFp {
	hi, lo := bits.Mul64(a.f, b.f)
	_, carry := bits.Add64(lo, 1<<63, 0)
	return diyFp{hi + carry, a.e + b.e + 64}
}

var pow10u64 = [20]uint64{
	10000000000000000000, 1000000000000000000, 100000000000000000,
	10000000000000000, 1000000000000000, 100000000000000, 10000000000000,
	1000000000000, 100000000000, 10000000000, 1000000000, 100000000,
	10000000, 1000000, 100000, 10000, 1000, 100, 10, 1,
}

// grisu2 writes the digits of v (> 0, finite) into digits and returns their
// count n and the decimal exponent K: v ≈ digits×10^K.
func grisu2(v float64, digits *[24]byte) (n, K int) {
	b := math.Float64bits(v)
	w := diyFp{b & dpFracMask, int((b & dpExpMask) >> 52)}
	if w.e != 0 {
		w.f += dpHiddenBit
		w.e -= dpExpBias
	} else {
		w.e = -dpExpBias + 1
	}

	// Boundaries m+ and m-, both with m+'s normalized exponent.
	upper := diyFp{w.f<<1 + 1, w.e - 1}
	for upper.f&(dpHiddenBit<<1) == 0 {
		upper.f <<= 1
		upper.e--
	}
	upper.f <<= 64 - 52 - 2
	upper.e -= 64 - 52 - 2
	lshift := 1
	if w.f == dpHiddenBit {
		lshift = 2
	}
	lowerB := diyFp{w.f<<uint(lshift) - 1, w.e - lshift}
	lowerB.f <<= uint(lowerB.e - upper.e)
	lowerB.e = upper.e

	// Normalize w.
	for w.f&dpHiddenBit == 0 {
		w.f <<= 1
		w.e--
	}
	w.f <<= 64 - 52 - 1
	w.e -= 64 - 52 - 1

	cp, k := cachedPow10(upper.e)
	w = mulFp(w, cp)
	upper = mulFp(upper, cp)
	lowerB = mulFp(lowerB, cp)
	lowerB.f++
	upper.f--
	K = -k
	n = generateDigits(w, upper, lowerB, digits, &K)
	return n, K
}

func generateDigits(w, upper, low diyFp, digits *[24]byte, K *int) int {
	wfrac := upper.f - w.f
	delta := upper.f - low.f
	shift := uint(-upper.e)
	one := uint64(1) << shift
	part1 := upper.f >> shift
	part2 := upper.f & (one - 1)

	idx := 0
	kappa := 10
	for i := 10; kappa > 0; i++ {
		div := pow10u64[i]
		digit := part1 / div
		if digit != 0 || idx != 0 {
			digits[idx] = byte('0' + digit)
			idx++
		}
		part1 -= digit * div
		kappa--
		tmp := part1<<shift + part2
		if tmp <= delta {
			*K += kappa
			roundDigit(digits[:idx], delta, tmp, div<<shift, wfrac)
			return idx
		}
	}
	unit := 18 // pow10u64[18] = 10
	for {
		part2 *= 10
		delta *= 10
		kappa--
		digit := part2 >> shift
		if digit != 0 || idx != 0 {
			digits[idx] = byte('0' + digit)
			idx++
		}
		part2 &= one - 1
		if part2 < delta {
			*K += kappa
			roundDigit(digits[:idx], delta, part2, one, wfrac*pow10u64[unit])
			return idx
		}
		unit--
	}
}

// roundDigit is Grisu's weed step: move the last digit down while that
// brings the result closer to the exact value and stays inside the bounds.
func roundDigit(digits []byte, delta, rem, kappa, frac uint64) {
	for rem < frac && delta-rem >= kappa &&
		(rem+kappa < frac || frac-rem > rem+kappa-frac) {
		digits[len(digits)-1]--
		rem += kappa
	}
}

// appendDtoa appends fpconv_dtoa(v) for a finite non-zero v.
func appendDtoa(dst []byte, v float64) []byte {
	neg := false
	if v < 0 {
		dst = append(dst, '-')
		neg = true
		v = -v
	}
	var digits [24]byte
	nd, K := grisu2(v, &digits)
	return emitDigits(dst, digits[:nd], K, neg)
}

// emitDigits lays out D×10^K as fpconv's emit_digits: plain digits and
// zeros, a fixed decimal, or d.ddde±X with no exponent padding.
func emitDigits(dst []byte, d []byte, K int, neg bool) []byte {
	nd := len(d)
	exp := absInt(K + nd - 1)
	if K >= 0 && exp < nd+7 {
		dst = append(dst, d...)
		for i := 0; i < K; i++ {
			dst = append(dst, '0')
		}
		return dst
	}
	if K < 0 && (K > -7 || exp < 4) {
		offset := nd - absInt(K)
		if offset <= 0 {
			dst = append(dst, '0', '.')
			for i := 0; i < -offset; i++ {
				dst = append(dst, '0')
			}
			return append(dst, d...)
		}
		dst = append(dst, d[:offset]...)
		dst = append(dst, '.')
		return append(dst, d[offset:]...)
	}
	limit := 18
	if neg {
		limit = 17
	}
	ndOut := min(nd, limit)
	dst = append(dst, d[0])
	if ndOut > 1 {
		dst = append(dst, '.')
		dst = append(dst, d[1:ndOut]...)
	}
	dst = append(dst, 'e')
	if K+ndOut-1 < 0 {
		dst = append(dst, '-')
	} else {
		dst = append(dst, '+')
	}
	cent := 0
	if exp > 99 {
		cent = exp / 100
		dst = append(dst, byte('0'+cent))
		exp -= cent * 100
	}
	if exp > 9 {
		dec := exp / 10
		dst = append(dst, byte('0'+dec))
		exp -= dec * 10
	} else if cent != 0 {
		dst = append(dst, '0')
	}
	return append(dst, byte('0'+exp%10))
}
