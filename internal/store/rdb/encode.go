package rdb

import (
	"bufio"
	"encoding/binary"
	"io"
	"math"
	"strconv"

	"github.com/emqd/emqd/internal/store"
)

// Object is one value as an RDB holds it, captured under the store lock
// (Capture) and encoded without it: exactly one of Str, Hash, ZSet is set.
type Object struct {
	Kind store.Kind
	Str  []byte
	Hash store.HashSnapshot
	ZSet *store.ZSetSnapshot
}

// Capture takes v as it is now (call under the store lock): O(1) for a
// string, a listpack hash and a sorted set (copy-on-write), a copy of the
// entry list for a hashtable hash (internal/store/snapshot.go).
func Capture(v *store.Value) Object {
	switch v.Kind {
	case store.KindString:
		return Object{Kind: v.Kind, Str: v.StrSnapshot()}
	case store.KindHash:
		return Object{Kind: v.Kind, Hash: v.Hash().Snapshot()}
	case store.KindZSet:
		return Object{Kind: v.Kind, ZSet: v.ZSet.Snapshot()}
	}
	return Object{}
}

// Options are the writer's settings.
type Options struct {
	// Compress is rdbcompression: strings longer than 20 bytes are stored
	// LZF-compressed when that makes them at least 4 bytes shorter.
	Compress bool
	// Checksum is rdbchecksum: the file ends with its CRC-64; without it,
	// eight zero bytes (which Valkey takes as "not checked").
	Checksum bool
}

// enc encodes objects into a byte slice (shared by the file writer and
// DUMP).
type enc struct {
	opts  Options
	b     []byte
	lp    lpWriter
	num   []byte
	htab  []int32
	items []store.ZItem
}

// length appends an RDB length (rdbSaveLen): 6 bits, 14 bits, or 0x80 and
// 4 bytes, or 0x81 and 8 bytes, big endian.
func (e *enc) length(n uint64) {
	switch {
	case n < 1<<6:
		e.b = append(e.b, byte(n))
	case n < 1<<14:
		e.b = append(e.b, byte(n>>8)|len14<<6, byte(n))
	case n <= math.MaxUint32:
		e.b = append(e.b, len32)
		e.b = binary.BigEndian.AppendUint32(e.b, uint32(n))
	default:
		e.b = append(e.b, len64)
		e.b = binary.BigEndian.AppendUint64(e.b, n)
	}
}

// str appends a string as rdbSaveRawString: an integer encoding for up to
// 11 bytes that string2ll takes back unchanged and that fits 32 bits, else
// LZF when compression is on, the string is longer than 20 bytes and the
// result is at least 4 bytes shorter, else its length and bytes.
func (e *enc) str(s []byte) {
	if len(s) <= 11 && len(s) > 0 {
		if v, err := strconv.ParseInt(string(s), 10, 64); err == nil && v >= math.MinInt32 && v <= math.MaxInt32 && strconv.FormatInt(v, 10) == string(s) {
			switch {
			case v >= math.MinInt8 && v <= math.MaxInt8:
				e.b = append(e.b, encVal<<6|encInt8, byte(v))
			case v >= math.MinInt16 && v <= math.MaxInt16:
				e.b = append(e.b, encVal<<6|encInt16)
				e.b = binary.LittleEndian.AppendUint16(e.b, uint16(v))
			default:
				e.b = append(e.b, encVal<<6|encInt32)
				e.b = binary.LittleEndian.AppendUint32(e.b, uint32(v))
			}
			return
		}
	}
	if e.opts.Compress && len(s) > 20 {
		if c := lzfCompress(s, len(s)-4, &e.htab); c != nil {
			e.b = append(e.b, encVal<<6|encLZF)
			e.length(uint64(len(c)))
			e.length(uint64(len(s)))
			e.b = append(e.b, c...)
			return
		}
	}
	e.length(uint64(len(s)))
	e.b = append(e.b, s...)
}

// objType is the RDB type Valkey writes for o's encoding: STRING,
// HASH_LISTPACK or HASH, ZSET_LISTPACK or ZSET_2.
func objType(o *Object) byte {
	switch o.Kind {
	case store.KindHash:
		if o.Hash.Big() {
			return typeHash
		}
		return typeHashListpack
	case store.KindZSet:
		if o.ZSet.Big() {
			return typeZSet2
		}
		return typeZSetListpack
	}
	return typeString
}

// object appends o's value (without its type byte), as rdbSaveObject.
func (e *enc) object(o *Object) {
	switch objType(o) {
	case typeString:
		e.str(o.Str)
	case typeHashListpack:
		e.lp.reset()
		o.Hash.Range(func(f string, v []byte) bool {
			e.lp.appendString([]byte(f))
			e.lp.appendString(v)
			return true
		})
		e.str(e.lp.finish())
	case typeHash:
		e.length(uint64(o.Hash.Len()))
		o.Hash.Range(func(f string, v []byte) bool {
			e.str([]byte(f))
			e.str(v)
			return true
		})
	case typeZSetListpack:
		e.lp.reset()
		o.ZSet.AscendAll(func(it store.ZItem) bool {
			e.lp.appendString([]byte(it.Member))
			e.num = e.lp.appendScore(it.Score, e.num)
			return true
		})
		e.str(e.lp.finish())
	case typeZSet2:
		// Greatest first, as Valkey writes a skiplist (its load then always
		// inserts at the head).
		e.length(uint64(o.ZSet.Len()))
		o.ZSet.DescendAll(func(it store.ZItem) bool {
			e.str([]byte(it.Member))
			e.b = binary.LittleEndian.AppendUint64(e.b, math.Float64bits(it.Score))
			return true
		})
	}
}

// Dump returns the DUMP payload of o: its type byte and value, the RDB
// version (2 bytes LE) and the CRC-64 of all that (8 bytes LE), Valkey's
// createDumpPayload. compress is rdbcompression.
func Dump(o Object, compress bool) []byte {
	e := &enc{opts: Options{Compress: compress}}
	e.b = append(e.b, objType(&o))
	e.object(&o)
	e.b = binary.LittleEndian.AppendUint16(e.b, Version)
	return binary.LittleEndian.AppendUint64(e.b, CRC64(0, e.b))
}

// Writer writes an RDB file: Header, then per database SelectDB and its
// keys (Key), then End. Errors are those of the underlying writer; after
// one, every call returns it.
type Writer struct {
	w   *bufio.Writer
	e   enc
	crc uint64
	n   int64
	err error
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer, opts Options) *Writer {
	return &Writer{w: bufio.NewWriterSize(w, 1<<20), e: enc{opts: opts}}
}

// flush hands the encoded bytes to the buffered writer, adding them to the
// checksum.
func (w *Writer) flush() error {
	if w.err != nil {
		return w.err
	}
	if w.e.opts.Checksum {
		w.crc = CRC64(w.crc, w.e.b)
	}
	w.n += int64(len(w.e.b))
	_, w.err = w.w.Write(w.e.b)
	w.e.b = w.e.b[:0]
	return w.err
}

// Header writes the magic "REDIS0011" and the aux fields in order (Valkey
// 8.0.1 writes valkey-ver, redis-bits, ctime, used-mem, aof-base).
func (w *Writer) Header(aux [][2]string) error {
	w.e.b = append(w.e.b[:0], "REDIS00"+strconv.Itoa(Version)...)
	for _, kv := range aux {
		w.e.b = append(w.e.b, opAux)
		w.e.str([]byte(kv[0]))
		w.e.str([]byte(kv[1]))
	}
	return w.flush()
}

// SelectDB starts database db, with its key count and the count of keys
// with an expire time (the RESIZEDB hint).
func (w *Writer) SelectDB(db, keys, expires int) error {
	w.e.b = append(w.e.b, opSelectDB)
	w.e.length(uint64(db))
	w.e.b = append(w.e.b, opResizeDB)
	w.e.length(uint64(keys))
	w.e.length(uint64(expires))
	return w.flush()
}

// Key writes one key: its expire time (Unix ms; 0: none) as
// EXPIRETIME_MS, its type, name and value.
func (w *Writer) Key(key string, o Object, expireAt int64) error {
	if expireAt != 0 {
		w.e.b = append(w.e.b, opExpireTimeMs)
		w.e.b = binary.LittleEndian.AppendUint64(w.e.b, uint64(expireAt))
	}
	w.e.b = append(w.e.b, objType(&o))
	w.e.str([]byte(key))
	w.e.object(&o)
	return w.flush()
}

// End writes EOF and the checksum (zero without rdbchecksum) and flushes.
func (w *Writer) End() error {
	w.e.b = append(w.e.b, opEOF)
	if err := w.flush(); err != nil {
		return err
	}
	var sum [8]byte
	if w.e.opts.Checksum {
		binary.LittleEndian.PutUint64(sum[:], w.crc)
	}
	if _, w.err = w.w.Write(sum[:]); w.err != nil {
		return w.err
	}
	w.n += 8
	w.err = w.w.Flush()
	return w.err
}

// Size is the number of bytes written so far.
func (w *Writer) Size() int64 { return w.n }
