// Package rdb reads and writes Valkey 8.0.1's RDB format (rdb.c, rdb.h):
// dump.rdb snapshots (SAVE, BGSAVE, save points, the load at start) and the
// DUMP/RESTORE payload, for the types emqd stores: strings, hashes and
// sorted sets, with expire times, several databases, aux fields, LZF
// compression and the CRC-64 checksum (docs/durability.md §9, docs/compat.md
// §1.10 say what is read and written). The format is emqd's own code.
package rdb

// Version is the RDB version emqd writes: Valkey 8.0.1's RDB_VERSION.
// Files of versions 1 to Version are read (Redis 7.0 writes 10, Redis 6.2
// writes 9).
const Version = 11

// Opcodes (rdb.h RDB_OPCODE_*).
const (
	opSlotInfo     = 244
	opFunction2    = 245
	opFunctionPre  = 246
	opModuleAux    = 247
	opIdle         = 248
	opFreq         = 249
	opAux          = 250
	opResizeDB     = 251
	opExpireTimeMs = 252
	opExpireTime   = 253
	opSelectDB     = 254
	opEOF          = 255
)

// Object types (rdb.h RDB_TYPE_*).
const (
	typeString          = 0
	typeList            = 1
	typeSet             = 2
	typeZSet            = 3
	typeHash            = 4
	typeZSet2           = 5
	typeModulePreGA     = 6
	typeModule2         = 7
	typeHashZipmap      = 9
	typeListZiplist     = 10
	typeSetIntset       = 11
	typeZSetZiplist     = 12
	typeHashZiplist     = 13
	typeListQuicklist   = 14
	typeStreamListpacks = 15
	typeHashListpack    = 16
	typeZSetListpack    = 17
	typeListQuicklist2  = 18
	typeStreamLP2       = 19
	typeSetListpack     = 20
	typeStreamLP3       = 21
)

// Length encodings (rdb.h RDB_6BITLEN ... RDB_ENCVAL) and the special
// string encodings (RDB_ENC_INT8 ... RDB_ENC_LZF).
const (
	len6     = 0
	len14    = 1
	len32    = 0x80
	len64    = 0x81
	encVal   = 3
	encInt8  = 0
	encInt16 = 1
	encInt32 = 2
	encLZF   = 3
)

// lackedType names the type of an RDB object type emqd does not store, ""
// for the ones it does.
func lackedType(t byte) string {
	switch t {
	case typeList, typeListZiplist, typeListQuicklist, typeListQuicklist2:
		return "list"
	case typeSet, typeSetIntset, typeSetListpack:
		return "set"
	case typeStreamListpacks, typeStreamLP2, typeStreamLP3:
		return "stream"
	case typeModulePreGA, typeModule2:
		return "module"
	}
	return ""
}
