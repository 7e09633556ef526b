// Package resp holds emqd's wire codec: the reply writer (RESP2 and RESP3) and
// the request reader. Reply frames are encoded with redcon's Append* helpers;
// RESP3-only types (map, set, double, null, verbatim, push) are written raw.
//
// Reference: https://valkey.io/topics/protocol/
package resp

import (
	"strconv"
	"strings"

	"github.com/tidwall/redcon"
)

// Writer accumulates reply frames for one connection in the protocol the
// connection negotiated (2 or 3, see HELLO). It never writes to the network
// itself: the server flushes Buf after a batch.
type Writer struct {
	Buf   []byte
	Proto int // 2 (default) or 3
}

// NewWriter returns a RESP2 writer.
func NewWriter() *Writer { return &Writer{Proto: 2} }

// RESP3 reports whether the connection speaks RESP3.
func (w *Writer) RESP3() bool { return w.Proto == 3 }

// Reset empties the buffer and keeps its capacity.
func (w *Writer) Reset() { w.Buf = w.Buf[:0] }

// Len is the number of bytes buffered.
func (w *Writer) Len() int { return len(w.Buf) }

// Bulk writes a bulk string.
func (w *Writer) Bulk(b []byte) { w.Buf = redcon.AppendBulk(w.Buf, b) }

// BulkString writes a bulk string.
func (w *Writer) BulkString(s string) { w.Buf = redcon.AppendBulkString(w.Buf, s) }

// BulkInt writes n in decimal as a bulk string.
func (w *Writer) BulkInt(n int64) { w.Buf = redcon.AppendBulkInt(w.Buf, n) }

// Simple writes a simple string (+s). CR and LF are replaced by spaces.
func (w *Writer) Simple(s string) { w.Buf = redcon.AppendString(w.Buf, s) }

// OK writes +OK.
func (w *Writer) OK() { w.Buf = redcon.AppendOK(w.Buf) }

// Int writes an integer reply (:n).
func (w *Writer) Int(n int64) { w.Buf = redcon.AppendInt(w.Buf, n) }

// Error writes an error reply. As Valkey's addReplyError, "ERR " is prefixed
// unless msg already starts with an error code: callers pass the full text,
// e.g. "ERR syntax error" or "WRONGTYPE Operation ...". As Valkey's
// addReplyErrorFormat, CR and LF at either end are dropped (an argument
// quoted at the end of a text, "a\n", leaves no trailing space) and those
// inside become spaces.
func (w *Writer) Error(msg string) {
	w.Buf = redcon.AppendError(w.Buf, strings.Trim(msg, "\r\n"))
}

// Array writes an array header of n elements.
func (w *Writer) Array(n int) { w.Buf = redcon.AppendArray(w.Buf, n) }

// Nil writes the null bulk: $-1 (RESP2) or _ (RESP3).
func (w *Writer) Nil() {
	if w.Proto == 3 {
		w.Buf = append(w.Buf, '_', '\r', '\n')
		return
	}
	w.Buf = redcon.AppendNull(w.Buf)
}

// NilArray writes the null array: *-1 (RESP2) or _ (RESP3).
func (w *Writer) NilArray() {
	if w.Proto == 3 {
		w.Buf = append(w.Buf, '_', '\r', '\n')
		return
	}
	w.Buf = append(w.Buf, '*', '-', '1', '\r', '\n')
}

// Map writes a map header of n pairs: %n (RESP3) or *2n (RESP2, flat).
func (w *Writer) Map(n int) {
	if w.Proto == 3 {
		w.Buf = appendHeader(w.Buf, '%', n)
		return
	}
	w.Buf = redcon.AppendArray(w.Buf, 2*n)
}

// Set writes a set header: ~n (RESP3) or *n (RESP2).
func (w *Writer) Set(n int) {
	if w.Proto == 3 {
		w.Buf = appendHeader(w.Buf, '~', n)
		return
	}
	w.Buf = redcon.AppendArray(w.Buf, n)
}

// Push writes a push header: >n (RESP3) or *n (RESP2).
func (w *Writer) Push(n int) {
	if w.Proto == 3 {
		w.Buf = appendHeader(w.Buf, '>', n)
		return
	}
	w.Buf = redcon.AppendArray(w.Buf, n)
}

// Double writes an already formatted double (Valkey's d2string text, see
// num.FormatScore): ",text" in RESP3, a bulk string in RESP2.
func (w *Writer) Double(text string) {
	if w.Proto == 3 {
		w.Buf = append(w.Buf, ',')
		w.Buf = append(w.Buf, text...)
		w.Buf = append(w.Buf, '\r', '\n')
		return
	}
	w.Buf = redcon.AppendBulkString(w.Buf, text)
}

// Verbatim writes a verbatim string with format "txt" in RESP3
// (=len\r\ntxt:...), a bulk string in RESP2.
func (w *Writer) Verbatim(s string) {
	if w.Proto == 3 {
		w.Buf = appendHeader(w.Buf, '=', len(s)+4)
		w.Buf = append(w.Buf, "txt:"...)
		w.Buf = append(w.Buf, s...)
		w.Buf = append(w.Buf, '\r', '\n')
		return
	}
	w.Buf = redcon.AppendBulkString(w.Buf, s)
}

// Raw appends bytes as they are (an already encoded frame).
func (w *Writer) Raw(b []byte) { w.Buf = append(w.Buf, b...) }

func appendHeader(b []byte, c byte, n int) []byte {
	b = append(b, c)
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\r', '\n')
}
