package rdb

import "math/bits"

// LZF (Marc Lehmann's format, which Valkey's lzf_c.c and lzf_d.c implement):
// a sequence of runs, each starting with a control byte c:
//
//	c < 32:   a literal run of c+1 bytes follows;
//	c >= 32:  a back reference: length l = c>>5 (7: plus the next byte),
//	          then one more byte; it copies l+2 bytes from
//	          ((c&31)<<8 | that byte) + 1 bytes back in the output.
//
// The compressor is emqd's own (a hash of three bytes finds earlier
// occurrences); its output is any valid LZF stream, not necessarily the
// bytes Valkey's would be, and Valkey decompresses it.

const (
	lzfMaxLit = 1 << 5
	lzfMaxOff = 1 << 13
	lzfMaxRef = (1 << 8) + (1 << 3) // 264: the longest back reference
	lzfHLog   = 14
	// lzfMaxRatio bounds the ratio of decompressed to compressed length: a
	// 3-byte back reference gives at most 264 bytes. A declared length
	// beyond it cannot be right, and is refused before any allocation.
	lzfMaxRatio = 88
)

// lzfCompress compresses in into a new slice of at most limit bytes; nil when
// the result would not fit (Valkey then stores the string uncompressed).
// scratch is the caller's hash table, reused from call to call (only the
// part an input of this length uses is cleared).
func lzfCompress(in []byte, limit int, scratch *[]int32) []byte {
	n := len(in)
	if n < 4 || limit <= 0 {
		return nil
	}
	hl := min(max(bits.Len(uint(n)), 4), lzfHLog)
	if len(*scratch) < 1<<lzfHLog {
		*scratch = make([]int32, 1<<lzfHLog)
	}
	htab := (*scratch)[:1<<hl] // position+1 of the last occurrence
	clear(htab)
	out := make([]byte, 0, limit)
	lit := 0 // literal bytes pending, ending at ip
	flushLit := func(end int) bool {
		for lit > 0 {
			k := min(lit, lzfMaxLit)
			if len(out)+1+k > limit {
				return false
			}
			start := end - lit
			out = append(out, byte(k-1))
			out = append(out, in[start:start+k]...)
			lit -= k
		}
		return true
	}
	ip := 0
	for ip+2 < n {
		h := (uint32(in[ip])<<16 | uint32(in[ip+1])<<8 | uint32(in[ip+2])) * 2654435761 >> (32 - hl)
		ref := int(htab[h]) - 1
		htab[h] = int32(ip + 1)
		if ref >= 0 && ip-ref-1 < lzfMaxOff && in[ref] == in[ip] && in[ref+1] == in[ip+1] && in[ref+2] == in[ip+2] {
			l := 3
			maxL := min(lzfMaxRef, n-ip)
			for l < maxL && in[ref+l] == in[ip+l] {
				l++
			}
			if !flushLit(ip) {
				return nil
			}
			off := ip - ref - 1
			ln := l - 2
			if ln < 7 {
				if len(out)+2 > limit {
					return nil
				}
				out = append(out, byte(ln<<5|off>>8), byte(off))
			} else {
				if len(out)+3 > limit {
					return nil
				}
				out = append(out, byte(7<<5|off>>8), byte(ln-7), byte(off))
			}
			// Index the positions inside the match (the next one or two
			// are enough to find most repeats).
			for j := ip + 1; j < ip+l && j+2 < n; j++ {
				hj := (uint32(in[j])<<16 | uint32(in[j+1])<<8 | uint32(in[j+2])) * 2654435761 >> (32 - hl)
				htab[hj] = int32(j + 1)
			}
			ip += l
			continue
		}
		lit++
		ip++
	}
	lit += n - ip
	if !flushLit(n) {
		return nil
	}
	return out
}

// lzfDecompress decompresses in, which must give exactly n bytes; ok false
// for a stream that is damaged or of another length (Valkey's
// lzf_decompress returning 0: "Invalid LZF compressed string").
func lzfDecompress(in []byte, n int) ([]byte, bool) {
	if n < 0 || n > len(in)*lzfMaxRatio {
		return nil, false
	}
	out := make([]byte, 0, n)
	for i := 0; i < len(in); {
		c := int(in[i])
		i++
		if c < 32 {
			k := c + 1
			if i+k > len(in) || len(out)+k > n {
				return nil, false
			}
			out = append(out, in[i:i+k]...)
			i += k
			continue
		}
		l := c >> 5
		if l == 7 {
			if i >= len(in) {
				return nil, false
			}
			l += int(in[i])
			i++
		}
		if i >= len(in) {
			return nil, false
		}
		ref := len(out) - ((c&31)<<8 | int(in[i])) - 1
		i++
		l += 2
		if ref < 0 || len(out)+l > n {
			return nil, false
		}
		for j := 0; j < l; j++ { // may overlap: byte by byte
			out = append(out, out[ref+j])
		}
	}
	if len(out) != n {
		return nil, false
	}
	return out, true
}
