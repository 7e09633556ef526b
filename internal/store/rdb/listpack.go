package rdb

import (
	"encoding/binary"
	"math"
	"strconv"

	"github.com/emqd/emqd/internal/num"
)

// Valkey's listpack (listpack.c), the blob a listpack-encoded hash or
// sorted set is saved as: a 6-byte header (total bytes, uint32 LE; element
// count, uint16 LE, 65535 when it does not fit), the elements, and 0xFF.
// Each element is its encoding and data, then its own length in 1 to 5
// "backlen" bytes. A string that string2ll accepts is stored as an integer
// (7-bit unsigned, 13-bit, 16, 24, 32 or 64-bit signed), anything else as a
// string with a 6-bit, 12-bit or 32-bit length.

const lpHdrSize = 6

// lpWriter builds one listpack.
type lpWriter struct {
	b []byte
	n int
}

func (w *lpWriter) reset() {
	w.b = append(w.b[:0], 0, 0, 0, 0, 0, 0)
	w.n = 0
}

// appendString appends s, as an integer when Valkey would store it as one
// (lpEncodeGetType: lpStringToInt64, string2ll's rules).
func (w *lpWriter) appendString(s []byte) {
	if len(s) > 0 && len(s) <= 20 {
		if v, ok := num.ParseInt(s); ok {
			w.appendInt(v)
			return
		}
	}
	start := len(w.b)
	switch l := len(s); {
	case l < 64:
		w.b = append(w.b, 0x80|byte(l))
	case l < 4096:
		w.b = append(w.b, 0xE0|byte(l>>8), byte(l))
	default:
		w.b = append(w.b, 0xF0)
		w.b = binary.LittleEndian.AppendUint32(w.b, uint32(l))
	}
	w.b = append(w.b, s...)
	w.backlen(len(w.b) - start)
}

// appendInt appends v in the smallest integer encoding.
func (w *lpWriter) appendInt(v int64) {
	start := len(w.b)
	switch {
	case v >= 0 && v <= 127:
		w.b = append(w.b, byte(v))
	case v >= -4096 && v <= 4095:
		u := uint64(v) & 0x1FFF
		w.b = append(w.b, 0xC0|byte(u>>8), byte(u))
	case v >= math.MinInt16 && v <= math.MaxInt16:
		w.b = append(w.b, 0xF1)
		w.b = binary.LittleEndian.AppendUint16(w.b, uint16(v))
	case v >= -(1<<23) && v < 1<<23:
		u := uint32(v)
		w.b = append(w.b, 0xF2, byte(u), byte(u>>8), byte(u>>16))
	case v >= math.MinInt32 && v <= math.MaxInt32:
		w.b = append(w.b, 0xF3)
		w.b = binary.LittleEndian.AppendUint32(w.b, uint32(v))
	default:
		w.b = append(w.b, 0xF4)
		w.b = binary.LittleEndian.AppendUint64(w.b, uint64(v))
	}
	w.backlen(len(w.b) - start)
}

// appendScore appends a sorted set's score as zzlInsertAt does: an integer
// when double2ll takes it (|v| <= 2^62, integral), else d2string's text.
func (w *lpWriter) appendScore(v float64, scratch []byte) []byte {
	if v >= -(1<<62) && v <= 1<<62 {
		if n := int64(v); float64(n) == v {
			w.appendInt(n)
			return scratch
		}
	}
	scratch = num.AppendScore(scratch[:0], v)
	w.appendString(scratch)
	return scratch
}

// backlen appends the element length l in listpack's reverse encoding
// (lpEncodeBacklen).
func (w *lpWriter) backlen(l int) {
	w.n++
	switch {
	case l <= 127:
		w.b = append(w.b, byte(l))
	case l < 16383:
		w.b = append(w.b, byte(l>>7), byte(l&127)|128)
	case l < 2097151:
		w.b = append(w.b, byte(l>>14), byte((l>>7)&127)|128, byte(l&127)|128)
	case l < 268435455:
		w.b = append(w.b, byte(l>>21), byte((l>>14)&127)|128, byte((l>>7)&127)|128, byte(l&127)|128)
	default:
		w.b = append(w.b, byte(l>>28), byte((l>>21)&127)|128, byte((l>>14)&127)|128, byte((l>>7)&127)|128, byte(l&127)|128)
	}
}

// finish writes the header and the end byte and returns the listpack.
func (w *lpWriter) finish() []byte {
	w.b = append(w.b, 0xFF)
	binary.LittleEndian.PutUint32(w.b, uint32(len(w.b)))
	binary.LittleEndian.PutUint16(w.b[4:], uint16(min(w.n, 65535)))
	return w.b
}

// lpElems parses a listpack blob into its elements (integers as their
// decimal text, as Valkey's lpGet gives them), checking every length
// against the blob (lpValidateIntegrity deep): false for a blob that is
// not a whole, well-formed listpack.
func lpElems(b []byte) ([][]byte, bool) {
	if len(b) < lpHdrSize+1 || int(binary.LittleEndian.Uint32(b)) != len(b) || b[len(b)-1] != 0xFF {
		return nil, false
	}
	count := int(binary.LittleEndian.Uint16(b[4:]))
	out := make([][]byte, 0, min(count, len(b)/2))
	p := lpHdrSize
	for p < len(b)-1 {
		start := p
		c := b[p]
		var elem []byte
		need := func(n int) bool { return p+n <= len(b)-1 }
		switch {
		case c < 0x80: // 7-bit uint
			elem = strconv.AppendInt(nil, int64(c), 10)
			p++
		case c&0xC0 == 0x80: // 6-bit string
			l := int(c & 0x3F)
			if !need(1 + l) {
				return nil, false
			}
			elem = b[p+1 : p+1+l]
			p += 1 + l
		case c&0xE0 == 0xC0: // 13-bit int
			if !need(2) {
				return nil, false
			}
			u := int64(c&0x1F)<<8 | int64(b[p+1])
			if u >= 1<<12 {
				u -= 1 << 13
			}
			elem = strconv.AppendInt(nil, u, 10)
			p += 2
		case c&0xF0 == 0xE0: // 12-bit string
			if !need(2) {
				return nil, false
			}
			l := int(c&0x0F)<<8 | int(b[p+1])
			if !need(2 + l) {
				return nil, false
			}
			elem = b[p+2 : p+2+l]
			p += 2 + l
		case c == 0xF0: // 32-bit string
			if !need(5) {
				return nil, false
			}
			l := int(binary.LittleEndian.Uint32(b[p+1:]))
			if l < 0 || l > len(b) || !need(5+l) {
				return nil, false
			}
			elem = b[p+5 : p+5+l]
			p += 5 + l
		case c == 0xF1:
			if !need(3) {
				return nil, false
			}
			elem = strconv.AppendInt(nil, int64(int16(binary.LittleEndian.Uint16(b[p+1:]))), 10)
			p += 3
		case c == 0xF2:
			if !need(4) {
				return nil, false
			}
			u := int32(uint32(b[p+1])<<8|uint32(b[p+2])<<16|uint32(b[p+3])<<24) >> 8
			elem = strconv.AppendInt(nil, int64(u), 10)
			p += 4
		case c == 0xF3:
			if !need(5) {
				return nil, false
			}
			elem = strconv.AppendInt(nil, int64(int32(binary.LittleEndian.Uint32(b[p+1:]))), 10)
			p += 5
		case c == 0xF4:
			if !need(9) {
				return nil, false
			}
			elem = strconv.AppendInt(nil, int64(binary.LittleEndian.Uint64(b[p+1:])), 10)
			p += 9
		default:
			return nil, false
		}
		// The backlen must be the element's length, in its encoding.
		l := p - start
		var want [5]byte
		bw := lpWriter{b: want[:0]}
		bw.backlen(l)
		if !need(len(bw.b)) || string(b[p:p+len(bw.b)]) != string(bw.b) {
			return nil, false
		}
		p += len(bw.b)
		out = append(out, elem)
	}
	if p != len(b)-1 || (count != 65535 && count != len(out)) {
		return nil, false
	}
	return out, true
}

// zlElems parses a ziplist blob (ziplist.c, RDB versions before 10): a
// 10-byte header (total bytes, tail offset, uint32 LE; count, uint16 LE),
// entries (previous entry's length in 1 or 5 bytes, an encoding, data),
// and 0xFF.
func zlElems(b []byte) ([][]byte, bool) {
	const hdr = 10
	if len(b) < hdr+1 || int(binary.LittleEndian.Uint32(b)) != len(b) || b[len(b)-1] != 0xFF {
		return nil, false
	}
	count := int(binary.LittleEndian.Uint16(b[8:]))
	out := make([][]byte, 0, min(count, len(b)/2))
	p, prev := hdr, 0
	for p < len(b)-1 {
		start := p
		need := func(n int) bool { return p+n <= len(b)-1 }
		// prevlen
		var pl int
		if b[p] < 254 {
			pl = int(b[p])
			p++
		} else if b[p] == 254 {
			if !need(5) {
				return nil, false
			}
			pl = int(binary.LittleEndian.Uint32(b[p+1:]))
			p += 5
		} else {
			return nil, false
		}
		if pl != prev {
			return nil, false
		}
		if !need(1) {
			return nil, false
		}
		c := b[p]
		var elem []byte
		switch {
		case c>>6 == 0:
			l := int(c & 0x3F)
			if !need(1 + l) {
				return nil, false
			}
			elem = b[p+1 : p+1+l]
			p += 1 + l
		case c>>6 == 1:
			if !need(2) {
				return nil, false
			}
			l := int(c&0x3F)<<8 | int(b[p+1])
			if !need(2 + l) {
				return nil, false
			}
			elem = b[p+2 : p+2+l]
			p += 2 + l
		case c == 0x80:
			if !need(5) {
				return nil, false
			}
			l := int(binary.BigEndian.Uint32(b[p+1:]))
			if l < 0 || l > len(b) || !need(5+l) {
				return nil, false
			}
			elem = b[p+5 : p+5+l]
			p += 5 + l
		case c == 0xC0:
			if !need(3) {
				return nil, false
			}
			elem = strconv.AppendInt(nil, int64(int16(binary.LittleEndian.Uint16(b[p+1:]))), 10)
			p += 3
		case c == 0xD0:
			if !need(5) {
				return nil, false
			}
			elem = strconv.AppendInt(nil, int64(int32(binary.LittleEndian.Uint32(b[p+1:]))), 10)
			p += 5
		case c == 0xE0:
			if !need(9) {
				return nil, false
			}
			elem = strconv.AppendInt(nil, int64(binary.LittleEndian.Uint64(b[p+1:])), 10)
			p += 9
		case c == 0xF0:
			if !need(4) {
				return nil, false
			}
			u := int32(uint32(b[p+1])<<8|uint32(b[p+2])<<16|uint32(b[p+3])<<24) >> 8
			elem = strconv.AppendInt(nil, int64(u), 10)
			p += 4
		case c == 0xFE:
			if !need(2) {
				return nil, false
			}
			elem = strconv.AppendInt(nil, int64(int8(b[p+1])), 10)
			p += 2
		case c >= 0xF1 && c <= 0xFD:
			elem = strconv.AppendInt(nil, int64(c&0x0F)-1, 10)
			p++
		default:
			return nil, false
		}
		prev = p - start
		out = append(out, elem)
	}
	if p != len(b)-1 || (count != 65535 && count != len(out)) {
		return nil, false
	}
	return out, true
}

// zipmapElems parses a zipmap blob (zipmap.c, RDB versions before 4): a
// count byte, then key and value pairs, each with a length in 1 byte (below
// 254) or 254 and 4 bytes, the value also followed by a free-space byte and
// that many unused bytes; 0xFF ends it.
func zipmapElems(b []byte) ([][]byte, bool) {
	if len(b) < 2 || b[len(b)-1] != 0xFF {
		return nil, false
	}
	var out [][]byte
	p := 1
	readLen := func() (int, bool) {
		if p >= len(b) {
			return 0, false
		}
		if b[p] < 254 {
			p++
			return int(b[p-1]), true
		}
		if b[p] == 254 && p+5 <= len(b) {
			l := int(binary.LittleEndian.Uint32(b[p+1:]))
			p += 5
			return l, l >= 0 && l <= len(b)
		}
		return 0, false
	}
	for p < len(b) && b[p] != 0xFF {
		kl, ok := readLen()
		if !ok || p+kl > len(b) {
			return nil, false
		}
		k := b[p : p+kl]
		p += kl
		vl, ok := readLen()
		if !ok || p+1+vl > len(b) {
			return nil, false
		}
		free := int(b[p])
		p++
		v := b[p : p+vl]
		p += vl + free
		if p > len(b) {
			return nil, false
		}
		out = append(out, k, v)
	}
	if p != len(b)-1 {
		return nil, false
	}
	return out, true
}
