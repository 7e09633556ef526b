// Package num holds Valkey's number rules, byte for byte: string2ll for
// integers (every integer argument, the RESP request headers), string2d and
// zslParseRange's strtod for doubles, d2string (fpconv_dtoa's Grisu2) for
// every score the server prints, and the x87 long double arithmetic of
// HINCRBYFLOAT and INCRBYFLOAT (string2ld, ld2string). It imports nothing
// of emqd.
package num

// ParseInt parses b with Valkey's string2ll rules (util.c): exactly "0" or
// -?[1-9][0-9]* within int64, at most 20 bytes. It rejects "+1", "01",
// "-0", spaces, "" and out-of-range values (ok false).
func ParseInt(b []byte) (int64, bool) {
	n := len(b)
	if n == 0 || n > 20 {
		return 0, false
	}
	if n == 1 && b[0] == '0' {
		return 0, true
	}
	i := 0
	neg := false
	if b[0] == '-' {
		neg = true
		i = 1
		if n == 1 {
			return 0, false
		}
	}
	if b[i] < '1' || b[i] > '9' {
		return 0, false
	}
	var v uint64
	for ; i < n; i++ {
		c := b[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if v > (1<<64-1)/10 {
			return 0, false
		}
		v *= 10
		d := uint64(c - '0')
		if v > 1<<64-1-d {
			return 0, false
		}
		v += d
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return -int64(v), true
	}
	if v > 1<<63-1 {
		return 0, false
	}
	return int64(v), true
}
