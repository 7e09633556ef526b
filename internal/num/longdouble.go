package num

import (
	"math/big"
	"strings"
)

// This file emulates the x87 80-bit `long double` arithmetic that Valkey on
// x86-64 uses for HINCRBYFLOAT and INCRBYFLOAT (docs/compat.md §3.4):
// string2ld (strtold plus Valkey's rejections) to read the increment and the
// stored value, one addition rounded to a 64-bit mantissa, and ld2string in
// LD_STR_HUMAN mode ("%.17Lf", trailing zeros and point trimmed, "-0" -> "0")
// to print the result. Values are math/big Floats of precision 64 whose
// exponent is kept inside the x87 range by hand.

// x87 extended precision limits, in big.Float's MantExp terms (|x| =
// mant * 2^exp with 0.5 <= mant < 1).
const (
	ldPrec       = 64
	ldMaxExp     = 16384  // largest finite: (1-2^-64) * 2^16384 ~ 1.19e4932
	ldMinNormExp = -16381 // smallest normal: 0.5 * 2^-16381 = 2^-16382
	ldSubnormLSB = 16445  // subnormals are multiples of 2^-16445
	ldMaxChars   = 5 * 1024
)

// ldMaxLen is the longest text string2ld accepts: Valkey copies it into a
// MAX_LONG_DOUBLE_CHARS (5 KiB) buffer with its NUL.
const ldMaxLen = ldMaxChars - 1

// NewLongDouble is a long double zero (precision 64, round to nearest even).
func NewLongDouble() *big.Float { return new(big.Float).SetPrec(ldPrec).SetMode(big.ToNearestEven) }

func ldSpace(c byte) bool { return c == ' ' || (c >= '\t' && c <= '\r') }

func ldDigit(c byte) bool { return c >= '0' && c <= '9' }

func ldHexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// ParseLongDouble parses b as Valkey's string2ld (util.c): C strtold syntax
// in the C locale covering all of b (decimal, hex "0x1.8p3" with or without
// the "p" exponent, "inf"/"infinity" in any case, an optional sign), with no
// leading white space, at most 5119 bytes. It refuses NaN, a value that
// overflows the long double range (about ±1.19e4932, so "1e4933") and a
// non-zero value that underflows to zero ("1e-5000"); subnormals such as
// "1e-4950" are kept. A NUL byte anywhere is refused: strtold stops at it,
// and string2ld requires the end pointer at slen ("1\x00x" and "\x00" are
// not floats, as in Redis 7.0). The result has 64 mantissa bits and may be
// ±Inf.
func ParseLongDouble(b []byte) (*big.Float, bool) {
	if len(b) == 0 || len(b) > ldMaxLen || ldSpace(b[0]) {
		return nil, false
	}
	for _, c := range b {
		if c == 0 {
			return nil, false
		}
	}
	s := string(b)
	i := 0
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	rest := strings.ToLower(s[i:])
	if rest == "inf" || rest == "infinity" {
		return NewLongDouble().SetInf(neg), true
	}
	if len(rest) >= 2 && rest[0] == '0' && rest[1] == 'x' {
		return parseHexLD(s[i+2:], neg)
	}
	return parseDecLD(s[i:], neg)
}

// parseDecLD reads digits [. digits] [e [sign] digits] covering all of s.
func parseDecLD(s string, neg bool) (*big.Float, bool) {
	var mant []byte // significant digits, leading zeros dropped
	frac := 0       // digits after the point that are in mant or skipped zeros
	seen := false
	i := 0
	for ; i < len(s) && ldDigit(s[i]); i++ {
		seen = true
		if len(mant) > 0 || s[i] != '0' {
			mant = append(mant, s[i])
		}
	}
	if i < len(s) && s[i] == '.' {
		i++
		for ; i < len(s) && ldDigit(s[i]); i++ {
			seen = true
			frac++
			if len(mant) > 0 || s[i] != '0' {
				mant = append(mant, s[i])
			}
		}
	}
	if !seen {
		return nil, false
	}
	exp, j, ok := parseExponent(s, i, 'e')
	if !ok || j != len(s) {
		return nil, false
	}
	if len(mant) == 0 {
		return zeroLD(neg), true
	}
	// value = mant * 10^e10
	e10 := exp - int64(frac)
	lead := int64(len(mant)) - 1 + e10 // decimal exponent of the first digit
	if lead > 4933 {
		return nil, false // overflow to HUGE_VALL
	}
	if lead < -4952 {
		return nil, false // underflow to zero
	}
	num := new(big.Int)
	num.SetString(string(mant), 10)
	r := new(big.Rat)
	if e10 >= 0 {
		num.Mul(num, new(big.Int).Exp(big.NewInt(10), big.NewInt(e10), nil))
		r.SetInt(num)
	} else {
		r.SetFrac(num, new(big.Int).Exp(big.NewInt(10), big.NewInt(-e10), nil))
	}
	return roundLD(r, neg)
}

// parseHexLD reads hexdigits [. hexdigits] [p [sign] digits] covering all
// of s (the part after "0x").
func parseHexLD(s string, neg bool) (*big.Float, bool) {
	num := new(big.Int)
	frac := int64(0)
	seen := false
	i := 0
	nz := false
	var digits []byte
	for ; i < len(s) && ldHexVal(s[i]) >= 0; i++ {
		seen = true
		if nz || s[i] != '0' {
			nz = true
			digits = append(digits, s[i])
		}
	}
	if i < len(s) && s[i] == '.' {
		i++
		for ; i < len(s) && ldHexVal(s[i]) >= 0; i++ {
			seen = true
			frac++
			if nz || s[i] != '0' {
				nz = true
				digits = append(digits, s[i])
			}
		}
	}
	if !seen {
		// strtold reads "0" and stops at the "x": trailing bytes.
		return nil, false
	}
	exp, j, ok := parseExponent(s, i, 'p')
	if !ok || j != len(s) {
		return nil, false
	}
	if len(digits) == 0 {
		return zeroLD(neg), true
	}
	num.SetString(string(digits), 16)
	e2 := exp - 4*frac
	top := int64(num.BitLen()) + e2 // value < 2^top
	if top > ldMaxExp+1 {
		return nil, false
	}
	if top < -ldSubnormLSB-2 {
		return nil, false
	}
	r := new(big.Rat)
	if e2 >= 0 {
		r.SetInt(num.Lsh(num, uint(e2)))
	} else {
		r.SetFrac(num, new(big.Int).Lsh(big.NewInt(1), uint(-e2)))
	}
	return roundLD(r, neg)
}

// parseExponent reads an optional exponent marker (e or p, any case) with an
// optional sign and at least one digit starting at s[i]. It returns the
// exponent (saturated far beyond any meaningful range), the index after it,
// and false only when the marker is present but not followed by digits (C
// then stops before the marker, which leaves trailing bytes).
func parseExponent(s string, i int, marker byte) (int64, int, bool) {
	if i >= len(s) || (s[i] != marker && s[i] != marker-'a'+'A') {
		return 0, i, true
	}
	j := i + 1
	neg := false
	if j < len(s) && (s[j] == '+' || s[j] == '-') {
		neg = s[j] == '-'
		j++
	}
	if j >= len(s) || !ldDigit(s[j]) {
		return 0, i, false
	}
	var e int64
	for ; j < len(s) && ldDigit(s[j]); j++ {
		if e < 1<<40 {
			e = e*10 + int64(s[j]-'0')
		}
	}
	if neg {
		e = -e
	}
	return e, j, true
}

func zeroLD(neg bool) *big.Float {
	z := NewLongDouble()
	if neg {
		z.Neg(z)
	}
	return z
}

// roundLD rounds the exact non-zero magnitude r to the nearest long double
// (ties to even), refusing overflow and underflow to zero as strtold's
// ERANGE does in string2ld.
func roundLD(r *big.Rat, neg bool) (*big.Float, bool) {
	f := NewLongDouble().SetRat(r)
	exp := f.MantExp(nil)
	if exp > ldMaxExp {
		return nil, false
	}
	if exp < ldMinNormExp {
		// Subnormal: round r * 2^16445 to an integer, ties to even.
		scaled := new(big.Rat).Mul(r, new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), ldSubnormLSB)))
		q, m := new(big.Int).QuoRem(scaled.Num(), scaled.Denom(), new(big.Int))
		twice := new(big.Int).Lsh(m, 1)
		switch twice.Cmp(scaled.Denom()) {
		case 1:
			q.Add(q, big.NewInt(1))
		case 0:
			if q.Bit(0) == 1 {
				q.Add(q, big.NewInt(1))
			}
		}
		if q.Sign() == 0 {
			return nil, false
		}
		f = NewLongDouble().SetInt(q)
		f.SetMantExp(f, -ldSubnormLSB)
	}
	if neg {
		f.Neg(f)
	}
	return f, true
}

// AddLongDouble returns a+b rounded to a 64-bit mantissa, and false when the
// sum is not finite (Valkey: "increment would produce NaN or Infinity").
func AddLongDouble(a, b *big.Float) (*big.Float, bool) {
	if a.IsInf() || b.IsInf() {
		return nil, false
	}
	sum := NewLongDouble().Add(a, b)
	if sum.MantExp(nil) > ldMaxExp {
		return nil, false
	}
	return sum, true
}

// FormatLongDouble prints a finite v as Valkey's ld2string(LD_STR_HUMAN):
// "%.17Lf" (fixed point, never an exponent), then trailing zeros and a
// trailing point removed, and "-0" printed as "0". For example 0.1+0.2 prints
// "0.3" and 1e20 prints "100000000000000000000".
func FormatLongDouble(v *big.Float) string {
	s := v.Text('f', 17)
	if strings.IndexByte(s, '.') >= 0 {
		s = strings.TrimRight(s, "0")
		s = strings.TrimSuffix(s, ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}
