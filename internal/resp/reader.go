package resp

import (
	"bytes"
	"math"
	"sync"

	"github.com/emqd/emqd/internal/num"
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

// BigArg is PROTO_MBULK_BIG_ARG: a bulk argument at least this long is
// received straight into its own buffer, grown as its bytes arrive (never
// allocated at the announced length up front), and handed out without a
// copy.
const BigArg = 32 << 10

// ArgvHeaderBytes is what one argument costs beside its bytes while a
// frame is being received (its []byte header in the argv), counted by
// Pending.
const ArgvHeaderBytes = 24

// Reader is Valkey's request parser (processInlineBuffer and
// processMultibulkBuffer, networking.c): RESP2 multibulk frames and inline
// commands split with sdssplitargs quoting. It parses incrementally: bytes
// are read into Space, committed with Commit, and Parse returns every
// complete command buffered so far, keeping the state of a partial frame, so
// a request split at any byte boundary parses the same.
//
// Memory follows the bytes received, never the lengths announced: each
// argument of a multibulk frame is copied out of the read buffer as soon
// as it is complete (so the buffer holds only unparsed bytes), the argv
// grows as arguments arrive, and a big argument (BigArg) grows as its
// bytes arrive. Pending is what a client holds this way, the figure
// client-query-buffer-limit is checked against.
//
// The zero value is ready to use with Valkey's default limits.
type Reader struct {
	// MaxBulkLen is proto-max-bulk-len (0: DefaultMaxBulkLen). A larger
	// "$len" is refused before anything is allocated for it.
	MaxBulkLen int64

	buf []byte
	pos int // start of the bytes not parsed yet

	// State of a multibulk frame whose header was read (mbRemain > 0).
	mbRemain int
	bulkLen  int        // length of the bulk being read, -1 while its header is unread
	argv     [][]byte   // the frame's complete arguments so far (the last chunk)
	chunks   [][][]byte // full chunks of argChunk arguments before argv
	argSlots int        // argv slots held: cap(argv) + argChunk per chunk
	argArena bool       // argv is cut from the header arena
	argBytes int        // the arguments' total length
	big      []byte     // a big bulk being received: its bytes and CRLF so far
	spaceBig bool       // the last Space was room in big

	// Results of one Parse call.
	spans   []span // inline tokens in scratch
	scratch []byte // unescaped inline tokens
	cmds    [][][]byte

	// The arenas of the current Parse call (see takeBytes), and the bytes
	// buffered when it began.
	arena    []byte
	hdrArena [][]byte
	hint     int
	// lastHdr is the header arena the last Parse call cut argvs from (its
	// used part); reuse says the caller released them (Recycle).
	lastHdr [][]byte
	reuse   bool
}

// The argument bytes and argv headers of the small commands of one Parse
// call are cut from arenas that call allocates as it needs them (a first
// chunk sized to the first need, then doubling up to these sizes); each
// region is handed out once and never written again, and the next call
// starts new arenas, so a retained argument pins only memory of its own
// batch. An argument longer than a quarter of the byte arena gets its own
// allocation, and a frame with a big argument (BigArg) takes no argv from
// the header arena, so nothing keeps a big argument alive but its holder.
const (
	arenaBytes   = 16 << 10
	arenaHeaders = 512
)

// takeBytes returns n fresh bytes (cap n) never handed out before.
func (r *Reader) takeBytes(n int) []byte {
	if n > arenaBytes/4 {
		return make([]byte, n)
	}
	if cap(r.arena)-len(r.arena) < n {
		// The arguments of this call's complete frames fit in the bytes
		// buffered when it began (r.hint), so one arena usually serves
		// the whole batch.
		r.arena = make([]byte, 0, min(arenaBytes, max(r.hint, 2*cap(r.arena), n)))
	}
	l := len(r.arena)
	r.arena = r.arena[:l+n]
	return r.arena[l : l+n : l+n]
}

// takeHeaders returns n argv headers (cap n) not handed out since the
// caller last released them (Recycle).
func (r *Reader) takeHeaders(n int) [][]byte {
	if n > arenaHeaders/4 {
		return make([][]byte, n)
	}
	if cap(r.hdrArena)-len(r.hdrArena) < n {
		// An argument takes at least 6 buffered bytes ($0 and two CRLF).
		r.hdrArena = make([][]byte, 0, min(arenaHeaders, max(r.hint/6+1, 2*cap(r.hdrArena), n)))
	}
	l := len(r.hdrArena)
	r.hdrArena = r.hdrArena[:l+n]
	return r.hdrArena[l : l+n : l+n]
}

// span locates one inline token in scratch.
type span struct{ lo, hi int }

// bigFirst is the first allocation for a big bulk; it then doubles as its
// bytes arrive, up to its length plus CRLF.
const bigFirst = 64 << 10

// Space returns free buffer space to read into. While a big bulk is being
// received it is room in that bulk's own buffer (at most the bytes the bulk
// still needs, so nothing after it lands there), grown by doubling as the
// bytes arrive; otherwise at least 16 KiB after the unparsed bytes. Commit
// the bytes read with Commit.
func (r *Reader) Space() []byte {
	if r.big != nil {
		need := r.bulkNeed()
		if len(r.big) < need {
			r.spaceBig = true
			if cap(r.big) == len(r.big) {
				n := max(2*cap(r.big), bigFirst)
				if n >= r.bulkLen {
					// Room for the data is room for its CRLF too: a
					// power-of-two value does not cost one more copy
					// for its last two bytes.
					n = need
				}
				n = min(n, need)
				nb := make([]byte, len(r.big), n)
				copy(nb, r.big)
				r.big = nb
			}
			return r.big[len(r.big):min(cap(r.big), need)]
		}
	}
	r.spaceBig = false
	r.compact()
	if r.buf == nil {
		r.buf = bufPool.Get().(*[readChunk]byte)[:0:readChunk]
	}
	if cap(r.buf)-len(r.buf) < readChunk {
		n := max(2*cap(r.buf), len(r.buf)+readChunk)
		nb := make([]byte, len(r.buf), n)
		copy(nb, r.buf)
		r.buf = nb
	}
	return r.buf[len(r.buf):cap(r.buf)]
}

// bufPool holds the read buffers of readChunk bytes that idle connections
// gave back (Release): a connection waiting for its next command holds
// none, as Valkey's clients share one query buffer between commands.
var bufPool = sync.Pool{New: func() any { return new([readChunk]byte) }}

// Release gives the read buffer back to the shared pool when every byte
// in it was parsed and no big bulk is being received, and reports whether
// the reader now holds none; the next Space takes one again. The bytes of
// the commands already returned are not in it (they are copied into the
// Parse call's arena), so releasing never invalidates them. A buffer grown
// beyond readChunk by a long pipeline is left to the collector.
func (r *Reader) Release() bool {
	if r.pos != len(r.buf) || r.big != nil {
		return false
	}
	if cap(r.buf) == readChunk {
		bufPool.Put((*[readChunk]byte)(r.buf[:readChunk]))
	}
	r.buf, r.pos = nil, 0
	return true
}

// Commit adds the first n bytes of the last Space to the buffer.
func (r *Reader) Commit(n int) {
	if r.spaceBig {
		r.big = r.big[:len(r.big)+n]
		return
	}
	r.buf = r.buf[:len(r.buf)+n]
}

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
// a command, including the bytes of a big bulk being received (Valkey's
// qbuf of CLIENT LIST).
func (r *Reader) Buffered() int { return len(r.buf) - r.pos + len(r.big) }

// Pending is the memory a client holds in this reader: the unparsed bytes,
// and for a frame being received its complete arguments (their bytes and
// ArgvHeaderBytes per argv slot) and the buffer of a big bulk. The server
// checks client-query-buffer-limit against it (Valkey counts the query
// buffer and the arguments' lengths; the argv slots are counted too, so a
// frame of countless empty arguments meets the limit as well).
func (r *Reader) Pending() int64 {
	return int64(len(r.buf)-r.pos) + int64(r.argBytes) + int64(r.argSlots)*ArgvHeaderBytes + int64(cap(r.big))
}

// Held is the capacity of the read buffer the reader holds, in bytes: 0
// once Release gave it back (CLIENT LIST rbs, the client's memory).
func (r *Reader) Held() int { return cap(r.buf) }

// ArgvBytes is the total length of the arguments of the frame being
// received (Valkey's argv-mem of CLIENT LIST).
func (r *Reader) ArgvBytes() int { return r.argBytes }

// compact drops consumed bytes (arguments are copied out as they are
// parsed, so nothing points into buf).
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
	n := copy(r.buf, r.buf[r.pos:])
	r.buf = r.buf[:n]
	r.pos = 0
}

// Parse returns the complete commands buffered, at most max of them
// (max <= 0: all). unauth applies the limits Valkey keeps for clients that
// have not authenticated yet (10 arguments, 16384-byte bulks).
//
// Each command is its argv (argv[0] the command name). The argument bytes
// are never reused (they are cut from fresh memory: small commands from
// arenas of this call, see takeBytes), so a handler may keep them. The argv
// slices are not reused either unless the caller says, with Recycle, that
// it holds none of them any more; the outer slice is reused by the next
// call.
// Empty inline lines, "*0" and "*-1" yield nothing.
//
// A non-nil error is a *ProtocolError found after the returned commands:
// run those, reply the error's text, then close the connection.
func (r *Reader) Parse(max int, unauth bool) ([][][]byte, error) {
	r.cmds = r.cmds[:0]
	r.arena = nil
	if r.reuse && r.mbRemain == 0 && r.lastHdr != nil {
		// (Not while a frame is being received: its argv may be cut
		// from lastHdr.)
		clear(r.lastHdr) // drop the old arguments for the collector
		r.hdrArena = r.lastHdr[:0]
	} else {
		r.hdrArena, r.reuse = nil, false
	}
	r.hint = len(r.buf) - r.pos
	var perr error
	for max <= 0 || len(r.cmds) < max {
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
		r.cmds = append(r.cmds, r.frameArgv())
		r.argv, r.chunks, r.argSlots, r.argBytes = nil, nil, 0, 0
	}
	if len(r.hdrArena) > 0 {
		r.reuse = false // handed out again: held until the next Recycle
	}
	r.lastHdr = r.hdrArena
	return r.cmds, perr
}

// Recycle tells the reader that the caller holds none of the argv slices
// the last Parse call returned (the argument bytes they point to may still
// be held: those are never reused). The next Parse call then cuts its argvs
// from the same header arena instead of a new one: a pipelined batch of
// small commands allocates its argument bytes only. The server calls it
// after a batch that left nothing queued (MULTI), parked (blocking) or
// pending (docs/architecture.md §2.1).
func (r *Reader) Recycle() { r.reuse = true }

// multibulkHeader reads "*count\r\n" at r.pos.
func (r *Reader) multibulkHeader(unauth bool) (bool, error) {
	b := r.buf[r.pos:]
	nl, ll, ok := shortHeader(b, '*')
	if !ok {
		nl = cIndex(b, '\r')
		if nl < 0 {
			if len(b) > MaxInline {
				return false, protoErr("too big mbulk count string")
			}
			return false, nil
		}
		if nl > len(b)-2 { // the byte after \r (not checked to be \n, as Valkey)
			return false, nil
		}
		ll, ok = num.ParseInt(b[1:nl])
	}
	if !ok || ll > maxIntArg {
		return false, protoErr("invalid multibulk length")
	}
	if ll > UnauthMaxMultibulk && unauth {
		return false, protoErr("unauthenticated multibulk length")
	}
	r.pos += nl + 2
	if ll <= 0 {
		return true, nil
	}
	r.mbRemain = int(ll)
	r.bulkLen = -1
	// The argv grows as arguments arrive, a chunk of at most argChunk
	// slots at a time, so a count alone reserves little.
	if ll <= arenaHeaders/4 {
		r.argv, r.argArena = r.takeHeaders(int(ll))[:0], true
	} else {
		r.argv, r.argArena = make([][]byte, 0, min(int(ll), argChunk)), false
	}
	r.chunks, r.argSlots, r.argBytes = nil, cap(r.argv), 0
	if r.arena == nil && len(r.cmds) == 0 && ll <= 8 {
		// The call's first frame, a small command: its header line and
		// at least 6 bytes of framing per argument ("$0\r\n\r\n") are not
		// argument bytes, so the byte arena's first chunk (takeBytes) is
		// sized without them (a frame of more arguments may have only
		// some buffered, and keeps the old sizing). A request-reply client's batch is one frame, whose arena
		// is then its arguments' size or a little more (a length of two
		// digits or more frames its argument in 7 bytes or more):
		// ZPOPMIN myzset 13 bytes (Go's 16-byte tiny blocks) instead of
		// the 29 buffered (32), ZADD of redis-benchmark 32 instead of 60
		// (64): half the heap pages a -P 1 client walks through between
		// collections.
		r.hint = max(r.hint-(nl+2)-6*int(ll), 0)
	}
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
			b := r.buf[r.pos:]
			nl, ll, ok := shortHeader(b, '$')
			if !ok {
				nl = cIndex(b, '\r')
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
				ll, ok = num.ParseInt(b[1:nl])
			}
			if !ok || ll < 0 || ll > maxBulk {
				return false, protoErr("invalid bulk length")
			}
			if ll > UnauthMaxBulk && unauth {
				return false, protoErr("unauthenticated bulk length")
			}
			r.pos += nl + 2
			r.bulkLen = int(ll)
			if ll >= BigArg {
				// An argv cut from the header arena would keep this
				// argument alive as long as any command of its batch:
				// a frame with a big argument gets an argv of its own.
				if r.argArena {
					na := make([][]byte, len(r.argv), cap(r.argv))
					copy(na, r.argv)
					r.argv, r.argArena = na, false
				}
				// Its own buffer, starting with what is already here.
				need := r.bulkNeed()
				have := min(len(r.buf)-r.pos, need)
				r.big = make([]byte, have, min(need, max(have, bigFirst)))
				copy(r.big, r.buf[r.pos:])
				r.pos += have
			}
		}
		var arg []byte
		if r.big != nil {
			if len(r.big) < r.bulkNeed() {
				return false, nil
			}
			// The two bytes after the data are skipped unchecked, as Valkey does.
			arg = r.big[:r.bulkLen:r.bulkLen]
			r.big = nil
		} else {
			if len(r.buf)-r.pos < r.bulkNeed() {
				return false, nil
			}
			arg = r.takeBytes(r.bulkLen)
			copy(arg, r.buf[r.pos:])
			r.pos += r.bulkLen + 2
		}
		if len(r.argv) == cap(r.argv) {
			// A full chunk: start the next one (never past the count
			// announced); nothing is copied until the frame completes.
			r.chunks = append(r.chunks, r.argv)
			r.argv = make([][]byte, 0, min(argChunk, r.mbRemain))
			r.argSlots += cap(r.argv)
		}
		r.argv = append(r.argv, arg)
		r.argBytes += r.bulkLen
		r.bulkLen = -1
		r.mbRemain--
	}
	return true, nil
}

// shortHeader reads a complete header line of one or two digits at the
// start of b ("$5\r\n", "*3\r\n", "$20\r\n": lead, the count, \r and one
// more byte), the common case, without the search for \r and the general
// integer parse: the index of its \r, the count and true; false for
// anything else (longer, signed, a leading zero, not yet complete), which
// the caller parses the general way with the same result.
func shortHeader(b []byte, lead byte) (int, int64, bool) {
	if len(b) < 4 || b[0] != lead {
		return 0, 0, false
	}
	d := b[1] - '0'
	if d > 9 {
		return 0, 0, false
	}
	if b[2] == '\r' {
		return 2, int64(d), true
	}
	if e := b[2] - '0'; d > 0 && e <= 9 && len(b) >= 5 && b[3] == '\r' {
		return 3, int64(d)*10 + int64(e), true
	}
	return 0, 0, false
}

// bulkNeed is the bytes the current bulk takes with its CRLF. It
// saturates at the largest int: proto-max-bulk-len may be LONG_MAX
// (9223372036854775807), and such a bulk waits for bytes that never come
// (the query buffer limit ends the client) instead of overflowing.
func (r *Reader) bulkNeed() int {
	if r.bulkLen > math.MaxInt-2 {
		return math.MaxInt
	}
	return r.bulkLen + 2
}

// argChunk is the number of argv slots a frame takes at a time (24 KiB):
// a frame of n arguments holds n slots plus less than one chunk while it
// is received (Valkey's doubling argv holds up to 2n).
const argChunk = 1024

// frameArgv is the complete frame's argv: the one chunk itself, or the
// chunks joined into one exact-size argv.
func (r *Reader) frameArgv() [][]byte {
	if len(r.chunks) == 0 {
		return r.argv
	}
	n := len(r.argv)
	for _, c := range r.chunks {
		n += len(c)
	}
	argv := make([][]byte, 0, n)
	for _, c := range r.chunks {
		argv = append(argv, c...)
	}
	return append(argv, r.argv...)
}

// inline reads one inline command line at r.pos and, when it has tokens,
// appends it to r.cmds.
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
	r.spans = r.spans[:0]
	r.scratch = r.scratch[:0]
	if !r.splitArgs(line) {
		return false, protoErr("unbalanced quotes in request")
	}
	r.pos += nl + 1
	if len(r.spans) == 0 {
		return true, nil
	}
	argv := r.takeHeaders(len(r.spans))
	arena := r.takeBytes(len(r.scratch))
	copy(arena, r.scratch)
	for i, sp := range r.spans {
		argv[i] = arena[sp.lo:sp.hi:sp.hi]
	}
	r.cmds = append(r.cmds, argv)
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
		r.spans = append(r.spans, span{lo: start, hi: len(r.scratch)})
	}
}

// cIndex is C's strchr on the query buffer: the index of c in b, or -1 when
// c is absent or a NUL byte comes first (Valkey then waits for more input,
// up to its 64 KiB line limit: the protocol desync regression tests rely
// on that).
func cIndex(b []byte, c byte) int {
	// Header lines ("$5", "*3") are a few bytes: a plain loop finds their
	// end faster than two vector searches would.
	n := min(len(b), 32)
	for i := 0; i < n; i++ {
		switch b[i] {
		case c:
			return i
		case 0:
			return -1
		}
	}
	if len(b) <= n {
		return -1
	}
	i := bytes.IndexByte(b[n:], c)
	if i < 0 || bytes.IndexByte(b[n:n+i], 0) >= 0 {
		return -1
	}
	return n + i
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
