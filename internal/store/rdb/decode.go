package rdb

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/emqd/emqd/internal/num"
	"github.com/emqd/emqd/internal/store"
)

// Error is a refused RDB file or payload, with Valkey's text (rdb.c) and
// the offset where reading stopped.
type Error struct {
	Offset int64
	Msg    string
}

func (e *Error) Error() string { return e.Msg }

// Valkey's texts (rdb.c rdbLoadRioWithLoadingCtx, rdbReportError).
const (
	msgShortRead = "Short read or OOM loading DB. Unrecoverable error, aborting now."
	msgSignature = "Wrong signature trying to load DB from file"
)

func corrupt(off int64, reason string) *Error {
	return &Error{Offset: off, Msg: fmt.Sprintf("Internal error in RDB reading offset %d -> %s", off, reason)}
}

// errShort is a read past the end of the input.
var errShort = errors.New("short read")

// reader reads an RDB stream, keeping the CRC-64 of what it read and never
// allocating more than what remains of the input.
type reader struct {
	r      *bufio.Reader
	remain int64 // bytes of the input not yet read
	off    int64
	crc    uint64
	buf    [8]byte
}

func (r *reader) read(p []byte) error {
	if int64(len(p)) > r.remain {
		return errShort
	}
	if _, err := io.ReadFull(r.r, p); err != nil {
		return errShort
	}
	r.crc = CRC64(r.crc, p)
	r.remain -= int64(len(p))
	r.off += int64(len(p))
	return nil
}

func (r *reader) byte() (byte, error) {
	if err := r.read(r.buf[:1]); err != nil {
		return 0, err
	}
	return r.buf[0], nil
}

// bytes reads n bytes into a new slice (n is checked against what remains
// before anything is allocated).
func (r *reader) bytes(n uint64) ([]byte, error) {
	if n > uint64(r.remain) {
		return nil, errShort
	}
	b := make([]byte, n)
	return b, r.read(b)
}

// length reads an RDB length; encoded is true for the special string
// encodings (11xxxxxx), whose kind is then the value.
func (r *reader) length() (n uint64, encoded bool, err error) {
	c, err := r.byte()
	if err != nil {
		return 0, false, err
	}
	switch c >> 6 {
	case len6:
		return uint64(c & 0x3F), false, nil
	case len14:
		d, err := r.byte()
		return uint64(c&0x3F)<<8 | uint64(d), false, err
	case encVal:
		return uint64(c & 0x3F), true, nil
	}
	switch c {
	case len32:
		if err := r.read(r.buf[:4]); err != nil {
			return 0, false, err
		}
		return uint64(binary.BigEndian.Uint32(r.buf[:4])), false, nil
	case len64:
		if err := r.read(r.buf[:8]); err != nil {
			return 0, false, err
		}
		return binary.BigEndian.Uint64(r.buf[:8]), false, nil
	}
	return 0, false, corrupt(r.off, fmt.Sprintf("Unknown length encoding %d in rdbLoadLen()", c))
}

// plainLen reads a length that may not be a string encoding.
func (r *reader) plainLen() (uint64, error) {
	n, encoded, err := r.length()
	if err == nil && encoded {
		return 0, corrupt(r.off, fmt.Sprintf("Unknown length encoding %d in rdbLoadLen()", 0xC0|n))
	}
	return n, err
}

// str reads a string in any of its encodings (rdbGenericLoadStringObject).
func (r *reader) str() ([]byte, error) {
	n, encoded, err := r.length()
	if err != nil {
		return nil, err
	}
	if !encoded {
		return r.bytes(n)
	}
	switch n {
	case encInt8:
		c, err := r.byte()
		return strconv.AppendInt(nil, int64(int8(c)), 10), err
	case encInt16:
		if err := r.read(r.buf[:2]); err != nil {
			return nil, err
		}
		return strconv.AppendInt(nil, int64(int16(binary.LittleEndian.Uint16(r.buf[:2]))), 10), nil
	case encInt32:
		if err := r.read(r.buf[:4]); err != nil {
			return nil, err
		}
		return strconv.AppendInt(nil, int64(int32(binary.LittleEndian.Uint32(r.buf[:4]))), 10), nil
	case encLZF:
		clen, err := r.plainLen()
		if err != nil {
			return nil, err
		}
		ulen, err := r.plainLen()
		if err != nil {
			return nil, err
		}
		if clen > uint64(r.remain) {
			return nil, errShort
		}
		if ulen > clen*lzfMaxRatio {
			return nil, corrupt(r.off, "Invalid LZF compressed string")
		}
		c, err := r.bytes(clen)
		if err != nil {
			return nil, err
		}
		out, ok := lzfDecompress(c, int(ulen))
		if !ok {
			return nil, corrupt(r.off, "Invalid LZF compressed string")
		}
		return out, nil
	}
	return nil, corrupt(r.off, fmt.Sprintf("Unknown RDB string encoding type %d", n))
}

// binaryDouble reads the 8 bytes of a ZSET_2 score.
func (r *reader) binaryDouble() (float64, error) {
	if err := r.read(r.buf[:8]); err != nil {
		return 0, err
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(r.buf[:8])), nil
}

// textDouble reads an old ZSET score (rdbLoadDoubleValue): a length byte,
// 253 nan, 254 +inf, 255 -inf, else that many bytes of text.
func (r *reader) textDouble() (float64, error) {
	c, err := r.byte()
	if err != nil {
		return 0, err
	}
	switch c {
	case 253:
		return math.NaN(), nil
	case 254:
		return math.Inf(1), nil
	case 255:
		return math.Inf(-1), nil
	}
	b, err := r.bytes(uint64(c))
	if err != nil {
		return 0, err
	}
	v, perr := strconv.ParseFloat(string(b), 64)
	if perr != nil && !errors.Is(perr, strconv.ErrRange) {
		return 0, corrupt(r.off, "Invalid double value")
	}
	return v, nil
}

// Limits bound a load: a key or value may not make the keyspace hold more
// than the input allows anyway, so no explicit limit is needed beyond the
// input's size; MaxDB is the number of databases.
type Limits struct {
	DBs int
}

// Key is one key read from a file.
type Key struct {
	DB       int
	Key      string
	Value    *store.Value
	ExpireAt int64 // Unix ms, 0: none
	IdleSec  int64 // the IDLE opcode's seconds, -1: none
}

// LoadInfo is what a load found besides the keys.
type LoadInfo struct {
	Version int
	Aux     map[string]string
	// Size is the number of bytes read, up to and including the checksum
	// (an AOF's RDB preamble is followed by commands: docs/durability.md
	// §1.1).
	Size int64
}

// Load reads an RDB stream of size bytes and calls fn for every key, with
// values built for st (its encoding thresholds; not stored: the caller puts
// them once the whole file has been read and checked, so a refused file
// loads nothing). checksum is rdbchecksum: a file whose stored checksum is
// not 0 must match. Errors are *Error with Valkey's texts; a key of a type
// emqd does not store (list, set, stream, module) refuses the file, naming
// the key and its type. A *bufio.Reader is read directly, so nothing past
// the checksum is consumed (what follows an AOF's preamble stays in it).
func Load(in io.Reader, size int64, st *store.Store, lim Limits, checksum bool, fn func(Key) error) (info LoadInfo, err error) {
	br, ok := in.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(in, 1<<16)
	}
	r := &reader{r: br, remain: size}
	info = LoadInfo{Aux: map[string]string{}}
	defer func() { info.Size = r.off }()
	short := func() error {
		return &Error{Offset: r.off, Msg: msgShortRead + " (Unexpected EOF reading RDB file at offset " + strconv.FormatInt(r.off, 10) + ")"}
	}
	wrap := func(err error) error {
		var e *Error
		if errors.As(err, &e) {
			return e
		}
		if errors.Is(err, errShort) {
			return short()
		}
		return err
	}
	var magic [9]byte
	if err := r.read(magic[:]); err != nil {
		return info, short()
	}
	if string(magic[:5]) != "REDIS" {
		return info, &Error{Msg: msgSignature}
	}
	ver, err := strconv.Atoi(string(magic[5:]))
	if err != nil || ver < 1 || ver > Version {
		return info, &Error{Msg: fmt.Sprintf("Can't handle RDB format version %d", max(ver, 0))}
	}
	info.Version = ver
	db := 0
	expireAt, idle := int64(0), int64(-1)
	for {
		t, err := r.byte()
		if err != nil {
			return info, short()
		}
		switch t {
		case opExpireTime:
			if err := r.read(r.buf[:4]); err != nil {
				return info, short()
			}
			expireAt = int64(int32(binary.LittleEndian.Uint32(r.buf[:4]))) * 1000
			continue
		case opExpireTimeMs:
			if err := r.read(r.buf[:8]); err != nil {
				return info, short()
			}
			expireAt = int64(binary.LittleEndian.Uint64(r.buf[:8]))
			continue
		case opFreq:
			if _, err := r.byte(); err != nil {
				return info, short()
			}
			continue
		case opIdle:
			n, err := r.plainLen()
			if err != nil {
				return info, wrap(err)
			}
			idle = int64(min(n, math.MaxInt32))
			continue
		case opEOF:
			goto eof
		case opSelectDB:
			n, err := r.plainLen()
			if err != nil {
				return info, wrap(err)
			}
			if n >= uint64(lim.DBs) {
				return info, &Error{Offset: r.off, Msg: fmt.Sprintf("FATAL: Data file was created with a Valkey server configured to handle more than %d databases. Exiting", lim.DBs)}
			}
			db = int(n)
			continue
		case opResizeDB:
			if _, err := r.plainLen(); err != nil {
				return info, wrap(err)
			}
			if _, err := r.plainLen(); err != nil {
				return info, wrap(err)
			}
			continue
		case opAux:
			k, err := r.str()
			if err != nil {
				return info, wrap(err)
			}
			v, err := r.str()
			if err != nil {
				return info, wrap(err)
			}
			info.Aux[string(k)] = string(v)
			continue
		case opSlotInfo:
			for range 3 {
				if _, err := r.plainLen(); err != nil {
					return info, wrap(err)
				}
			}
			continue
		case opModuleAux:
			return info, corrupt(r.off, "The RDB file contains AUX module data I can't load: emqd has no modules")
		case opFunction2, opFunctionPre:
			return info, corrupt(r.off, "The RDB file contains a function library, which emqd does not load (it has no FUNCTION or scripting)")
		}
		key, err := r.str()
		if err != nil {
			return info, wrap(err)
		}
		if name := lackedType(t); name != "" {
			return info, &Error{Offset: r.off, Msg: fmt.Sprintf("The RDB file holds key '%s' in db %d of type %s, which emqd does not store (strings, hashes and sorted sets only): nothing was loaded", key, db, name)}
		}
		v, err := readObject(r, t, st)
		if err != nil {
			return info, wrap(err)
		}
		if v != nil { // nil: an empty collection, skipped as Valkey does
			if err := fn(Key{DB: db, Key: string(key), Value: v, ExpireAt: expireAt, IdleSec: idle}); err != nil {
				return info, err
			}
		}
		expireAt, idle = 0, -1
	}
eof:
	expected := r.crc
	if ver >= 5 {
		if err := r.read(r.buf[:8]); err != nil {
			return info, short()
		}
		got := binary.LittleEndian.Uint64(r.buf[:8])
		if checksum && got != 0 && got != expected {
			return info, &Error{Offset: r.off, Msg: fmt.Sprintf("Wrong RDB checksum expected: (%x) but got (%x). Aborting now.", expected, got)}
		}
	}
	return info, nil
}

// readObject reads a value of RDB type t (rdbLoadObject) into a new Value
// for st; nil, nil for an empty collection.
func readObject(r *reader, t byte, st *store.Store) (*store.Value, error) {
	switch t {
	case typeString:
		s, err := r.str()
		if err != nil {
			return nil, err
		}
		return store.NewString(s), nil
	case typeHash:
		n, err := r.plainLen()
		if err != nil {
			return nil, err
		}
		v := st.NewHashValue()
		for i := uint64(0); i < n; i++ {
			f, err := r.str()
			if err != nil {
				return nil, err
			}
			val, err := r.str()
			if err != nil {
				return nil, err
			}
			if !v.Hash().Set(string(f), val) {
				return nil, corrupt(r.off, "Duplicate hash fields detected")
			}
		}
		if n == 0 {
			return nil, nil
		}
		return v, nil
	case typeZSet, typeZSet2:
		n, err := r.plainLen()
		if err != nil {
			return nil, err
		}
		v := st.NewZSetValue()
		for i := uint64(0); i < n; i++ {
			m, err := r.str()
			if err != nil {
				return nil, err
			}
			var sc float64
			if t == typeZSet2 {
				sc, err = r.binaryDouble()
			} else {
				sc, err = r.textDouble()
			}
			if err != nil {
				return nil, err
			}
			if sc != sc {
				return nil, corrupt(r.off, "Zset with NAN score detected")
			}
			if !v.ZSet.Add(string(m), sc) {
				return nil, corrupt(r.off, "Duplicate zset fields detected")
			}
		}
		if n == 0 {
			return nil, nil
		}
		return v, nil
	case typeHashZipmap, typeHashZiplist, typeHashListpack, typeZSetZiplist, typeZSetListpack:
		blob, err := r.str()
		if err != nil {
			return nil, err
		}
		var elems [][]byte
		var ok bool
		what := map[byte]string{typeHashZipmap: "Zipmap", typeHashZiplist: "Hash ziplist", typeHashListpack: "Hash listpack",
			typeZSetZiplist: "Zset ziplist", typeZSetListpack: "Zset listpack"}[t]
		switch t {
		case typeHashZipmap:
			elems, ok = zipmapElems(blob)
		case typeHashZiplist, typeZSetZiplist:
			elems, ok = zlElems(blob)
		default:
			elems, ok = lpElems(blob)
		}
		if !ok || len(elems)%2 != 0 {
			return nil, corrupt(r.off, what+" integrity check failed.")
		}
		if len(elems) == 0 {
			return nil, nil
		}
		if t == typeHashZipmap || t == typeHashZiplist || t == typeHashListpack {
			v := st.NewHashValue()
			v.Hash().Reserve(elems)
			for i := 0; i < len(elems); i += 2 {
				if !v.Hash().Set(string(elems[i]), elems[i+1]) {
					return nil, corrupt(r.off, "Hash with dup elements")
				}
			}
			return v, nil
		}
		v := st.NewZSetValue()
		for i := 0; i < len(elems); i += 2 {
			sc, ok := num.ParseDouble(elems[i+1])
			if !ok || sc != sc {
				return nil, corrupt(r.off, what+" integrity check failed.")
			}
			if !v.ZSet.Add(string(elems[i]), sc) {
				return nil, corrupt(r.off, "Duplicate zset fields detected")
			}
		}
		return v, nil
	}
	return nil, corrupt(r.off, fmt.Sprintf("Unknown RDB encoding type %d", t))
}

// Restore decodes a DUMP payload (RESTORE) into a new Value for st. It
// checks the footer first, as Valkey's verifyDumpPayload: at least 10
// bytes, an RDB version not above Version, and the CRC-64 (skipped when
// checksum is false) — else "DUMP payload version or checksum are wrong";
// then the value — else "Bad data format" (also for an empty collection
// and a type emqd does not store).
func Restore(p []byte, st *store.Store) (*store.Value, string) {
	const errFooter = "ERR DUMP payload version or checksum are wrong"
	const errFormat = "ERR Bad data format"
	if len(p) < 10 {
		return nil, errFooter
	}
	footer := p[len(p)-10:]
	if binary.LittleEndian.Uint16(footer) > Version {
		return nil, errFooter
	}
	if CRC64(0, p[:len(p)-8]) != binary.LittleEndian.Uint64(footer[2:]) {
		return nil, errFooter
	}
	body := p[:len(p)-10]
	if len(body) == 0 {
		return nil, errFormat
	}
	r := &reader{r: bufio.NewReader(bytes.NewReader(body[1:])), remain: int64(len(body) - 1)}
	if lackedType(body[0]) != "" {
		return nil, errFormat
	}
	v, err := readObject(r, body[0], st)
	if err != nil || v == nil {
		return nil, errFormat
	}
	return v, ""
}
