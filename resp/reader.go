package resp

import (
	"bytes"

	"github.com/emqd/emqd/num"
)

// Request limits, Valkey's defaults (docs/compat.md §1.6; networking.c).
const (
	// DefaultMaxBulkLen is proto-max-bulk-len: the largest bulk argument.
	DefaultMaxBulkLen = 512 << 20
	// DefaultMaxQueryBuf is client-query-buffer-limit: the most unparsed
	// bytes one client may have buffered before it is closed.
	DefaultMaxQueryBuf = 1 << 30
	// MaxInline is PROTO_INLINE_MAX_SIZE: the longest inline request line,
	// and the longest "*count" or "$len" header line.
	MaxInline = 64 << 10
	// UnauthMaxMultibulk is the largest argument count accepted before AUTH.
	UnauthMaxMultibulk = 10
	// UnauthMaxBulk is the largest bulk length accepted before AUTH.
	UnauthMaxBulk = 16384
	// readChunk is PROTO_IOBUF_LEN: the least free space offered to a read.
	readChunk = 16 << 10
	// maxIntArg is INT_MAX, the largest multibulk count.
	maxIntArg = 1<<31 - 1
)

// ProtocolError is a malformed request. Msg is the full reply text
// ("ERR Protocol error: ..."), which the server writes before it closes
// the connection, as Valkey's setProtocolError does.
type ProtocolError struct{ Msg string }

func (e *ProtocolError) Error() string { return e.Msg }

func protoErr(s string) *ProtocolError { return &ProtocolError{Msg: "ERR Protocol error: " + s} }

// Reader is Valkey's request parser (processInlineBuffer and
// processMultibulkBuffer, networking.c): RESP2 multibulk frames and inline
// commands split with sdssplitargs quoting. It parses incrementally: bytes
// are read into Space, committed with Commit, and Parse returns every
// complete command buffered so far, keeping the state of a partial frame, so
// a request split at any byte boundary parses the same.
//
// The zero value is ready to use with Valkey's default limits.
type Reader struct {
	// MaxBulkLen is proto-max-bulk-len (0: DefaultMaxBulkLen). A larger
	// "$len" is refused before anything is allocated for it.
	MaxBulkLen int64

	buf []byte
	pos int // start of the first command not yet returned

	// State of a multibulk frame whose header was read (mbRemain > 0).
	mbRemain int
	scan     int // parse position inside the frame
	bulkLen  int // length of the bulk being read, -1 while its header is unread
	partial  []span

	// Results of one Parse call.
	spans   []span
	counts  []int
	scratch []byte // unescaped inline tokens
	cmds    [][][]byte
}

// span locates one argument: in buf, or in scratch when inScratch.
type span struct {
	lo, hi    int
	inScratch bool
}

// Space returns free buffer space to read into (at least 16 KiB, and room
// for the whole bulk being read when its length is known). Commit the
// bytes read with Commit.
func (r *Reader) Space() []byte {
	r.compact()
	want := len(r.buf) + readChunk
	big := false
	if r.mbRemain > 0 && r.bulkLen >= 0 {
		if bw := r.scan + r.bulkLen + 2; bw > want {
			want, big = bw, true
		}
	}
	if cap(r.buf) < want {
		n := 2 * cap(r.buf)
		if n < want || big {
			n = want
		}
		nb := make([]byte, len(r.buf), n)
		copy(nb, r.buf)
		r.buf = nb
	}
	return r.buf[len(r.buf):cap(r.buf)]
}

// Commit adds the first n bytes of the last Space to the buffer.
func (r *Reader) Commit(n int) { r.buf = r.buf[:len(r.buf)+n] }

// Write appends p to the buffer (for tests and callers that already hold
// the bytes).
func (r *Reader) Write(p []byte) {
	for len(p) > 0 {
		n := copy(r.Space(), p)
		r.Commit(n)
		p = p[n:]
	}
}

// Buffered is the number of bytes received and not yet returned as part of
// a command: what client-query-buffer-limit is checked against.
func (r *Reader) Buffered() int { return len(r.buf) - r.pos }

// compact drops consumed bytes, shifting the state of a partial frame.
func (r *Reader) compact() {
	if r.pos == 0 {
		return
	}
	if r.pos == len(r.buf) {
		if cap(r.buf) > 1<<20 {
			r.buf = nil // give back the memory of a big request
		} else {
			r.buf = r.buf[:0]
		}
		r.pos = 0
		return
	}
	if r.pos < cap(r.buf)/2 && cap(r.buf)-len(r.buf) >= readChunk {
		return
	}
	d := r.pos
	n := copy(r.buf, r.buf[d:])
	r.buf = r.buf[:n]
	r.pos = 0
	if r.mbRemain > 0 {
		r.scan -= d
		for i := range r.partial {
			r.partial[i].lo -= d
			r.partial[i].hi -= d
		}
	}
}

// Parse returns the complete commands buffered, at most max of them
// (max <= 0: all). unauth applies the limits Valkey keeps for clients that
// have not authenticated yet (10 arguments, 16384-byte bulks).
//
// Each command is its argv (argv[0] the command name). The argument bytes
// and the argv slices are never reused (one fresh allocation of each per
// call), so a handler may keep them; the outer slice is reused by the next
// call.
// Empty inline lines, "*0" and "*-1" yield nothing.
//
// A non-nil error is a *ProtocolError found after the returned commands:
// run those, reply the error's text, then close the connection.
func (r *Reader) Parse(max int, unauth bool) ([][][]byte, error) {
	r.spans = r.spans[:0]
	r.counts = r.counts[:0]
	r.scratch = r.scratch[:0]
	var perr error
	for max <= 0 || len(r.counts) < max {
		if r.mbRemain == 0 {
			if r.pos >= len(r.buf) {
				break
			}
			if r.buf[r.pos] != '*' {
				ok, err := r.inline()
				if err != nil {
					perr = err
					break
				}
				if !ok {
					break
				}
				continue
			}
			ok, err := r.multibulkHeader(unauth)
			if err != nil {
				perr = err
				break
			}
			if !ok {
				break
			}
			if r.mbRemain == 0 {
				continue // *0, *-1: ignored
			}
		}
		done, err := r.multibulkArgs(unauth)
		if err != nil {
			perr = err
			break
		}
		if !done {
			break
		}
		r.spans = append(r.spans, r.partial...)
		r.counts = append(r.counts, len(r.partial))
		r.partial = r.partial[:0]
		r.pos = r.scan
	}
	return r.build(), perr
}

func (r *Reader) build() [][][]byte {
	r.cmds = r.cmds[:0]
	if len(r.counts) == 0 {
		return r.cmds
	}
	total := 0
	for _, s := range r.spans {
		total += s.hi - s.lo
	}
	arena := make([]byte, total)
	argv := make([][]byte, len(r.spans))
	off := 0
	for i, s := range r.spans {
		src := r.buf
		if s.inScratch {
			src = r.scratch
		}
		n := copy(arena[off:], src[s.lo:s.hi])
		argv[i] = arena[off : off+n : off+n]
		off += n
	}
	k := 0
	for _, n := range r.counts {
		r.cmds = append(r.cmds, argv[k:k+n:k+n])
		k += n
	}
	return r.cmds
}

// multibulkHeader reads "*count\r\n" at r.pos.
func (r *Reader) multibulkHeader(unauth bool) (bool, error) {
	b := r.buf[r.pos:]
	nl := cIndex(b, '\r')
	if nl < 0 {
		if len(b) > MaxInline {
			return false, protoErr("too big mbulk count string")
		}
		return false, nil
	}
	if nl > len(b)-2 { // the byte after \r (not checked to be \n, as Valkey)
		return false, nil
	}
	ll, ok := num.ParseInt(b[1:nl])
	if !ok || ll > maxIntArg {
		return false, protoErr("invalid multibulk length")
	}
	if ll > UnauthMaxMultibulk && unauth {
		return false, protoErr("unauthenticated multibulk length")
	}
	end := r.pos + nl + 2
	if ll <= 0 {
		r.pos = end
		return true, nil
	}
	r.mbRemain = int(ll)
	r.scan = end
	r.bulkLen = -1
	r.partial = r.partial[:0]
	return true, nil
}

// multibulkArgs reads the arguments of the current frame; it reports
// whether the frame is complete.
func (r *Reader) multibulkArgs(unauth bool) (bool, error) {
	maxBulk := r.MaxBulkLen
	if maxBulk <= 0 {
		maxBulk = DefaultMaxBulkLen
	}
	for r.mbRemain > 0 {
		if r.bulkLen < 0 {
			b := r.buf[r.scan:]
			nl := cIndex(b, '\r')
			if nl < 0 {
				if len(b) > MaxInline {
					return false, protoErr("too big bulk count string")
				}
				return false, nil
			}
			if nl > len(b)-2 {
				return false, nil
			}
			if b[0] != '$' {
				return false, protoErr("expected '$', got '" + string(b[0:1]) + "'")
			}
			ll, ok := num.ParseInt(b[1:nl])
			if !ok || ll < 0 || ll > maxBulk {
				return false, protoErr("invalid bulk length")
			}
			if ll > UnauthMaxBulk && unauth {
				return false, protoErr("unauthenticated bulk length")
			}
			r.scan += nl + 2
			r.bulkLen = int(ll)
		}
		if len(r.buf)-r.scan < r.bulkLen+2 {
			return false, nil
		}
		// The two bytes after the data are skipped unchecked, as Valkey does.
		r.partial = append(r.partial, span{lo: r.scan, hi: r.scan + r.bulkLen})
		r.scan += r.bulkLen + 2
		r.bulkLen = -1
		r.mbRemain--
	}
	return true, nil
}

// inline reads one inline command line at r.pos.
func (r *Reader) inline() (bool, error) {
	b := r.buf[r.pos:]
	nl := cIndex(b, '\n')
	if nl < 0 {
		if len(b) > MaxInline {
			return false, protoErr("too big inline request")
		}
		return false, nil
	}
	line := b[:nl]
	if nl > 0 && line[nl-1] == '\r' {
		line = line[:nl-1]
	}
	mark := len(r.spans)
	if !r.splitArgs(line) {
		r.spans = r.spans[:mark]
		return false, protoErr("unbalanced quotes in request")
	}
	r.pos += nl + 1
	if n := len(r.spans) - mark; n > 0 {
		r.counts = append(r.counts, n)
	}
	return true, nil
}

// splitArgs is sdssplitargs (sds.c): tokens separated by blanks; inside
// double quotes \xHH and \n \r \t \b \a escapes (any other escaped byte
// stands for itself); inside single quotes only \' is an escape; a closing
// quote must be followed by a blank or the end. It appends the tokens to
// scratch and reports false for unbalanced quotes.
func (r *Reader) splitArgs(p []byte) bool {
	i := 0
	for {
		for i < len(p) && isSpace(p[i]) {
			i++
		}
		if i >= len(p) {
			return true
		}
		start := len(r.scratch)
		inq, insq := false, false
		for done := false; !done; {
			var c byte
			if i < len(p) {
				c = p[i]
			}
			switch {
			case inq:
				if c == '\\' && i+3 < len(p) && p[i+1] == 'x' && isHex(p[i+2]) && isHex(p[i+3]) {
					r.scratch = append(r.scratch, hexVal(p[i+2])<<4|hexVal(p[i+3]))
					i += 3
				} else if c == '\\' && i+1 < len(p) {
					i++
					e := p[i]
					switch e {
					case 'n':
						e = '\n'
					case 'r':
						e = '\r'
					case 't':
						e = '\t'
					case 'b':
						e = '\b'
					case 'a':
						e = '\a'
					}
					r.scratch = append(r.scratch, e)
				} else if c == '"' {
					if i+1 < len(p) && !isSpace(p[i+1]) {
						return false
					}
					done = true
				} else if i >= len(p) {
					return false
				} else {
					r.scratch = append(r.scratch, c)
				}
			case insq:
				if c == '\\' && i+1 < len(p) && p[i+1] == '\'' {
					i++
					r.scratch = append(r.scratch, '\'')
				} else if c == '\'' {
					if i+1 < len(p) && !isSpace(p[i+1]) {
						return false
					}
					done = true
				} else if i >= len(p) {
					return false
				} else {
					r.scratch = append(r.scratch, c)
				}
			default:
				switch {
				case i >= len(p), c == ' ', c == '\n', c == '\r', c == '\t':
					done = true
				case c == '"':
					inq = true
				case c == '\'':
					insq = true
				default:
					r.scratch = append(r.scratch, c)
				}
			}
			if i < len(p) {
				i++
			}
		}
		r.spans = append(r.spans, span{lo: start, hi: len(r.scratch), inScratch: true})
	}
}

// cIndex is C's strchr on the query buffer: the index of c in b, or -1 when
// c is absent or a NUL byte comes first (Valkey then waits for more input,
// up to its 64 KiB line limit: the protocol desync regression tests rely
// on that).
func cIndex(b []byte, c byte) int {
	i := bytes.IndexByte(b, c)
	if i < 0 || bytes.IndexByte(b[:i], 0) >= 0 {
		return -1
	}
	return i
}

// isSpace is C's isspace in the C locale.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func hexVal(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

// SplitArgs splits line with Valkey's sdssplitargs rules (the inline
// command and valkey.conf syntax). It reports false for unbalanced quotes.
func SplitArgs(line string) ([]string, bool) {
	var r Reader
	if !r.splitArgs([]byte(line)) {
		return nil, false
	}
	out := make([]string, len(r.spans))
	for i, s := range r.spans {
		out[i] = string(r.scratch[s.lo:s.hi])
	}
	return out, true
}
