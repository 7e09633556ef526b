package rdb

import "hash/crc64"

// The checksum of an RDB file and of a DUMP payload is Valkey's CRC-64
// (crc64.c): the Jones polynomial 0xad93d23594c935a9, reflected input and
// output, initial value 0 and no final xor; crc64("123456789") is
// 0xe9c6d914c4b8d9ca. Go's hash/crc64 runs the same reflected algorithm
// with an inverted start and end, so Valkey's value is ^Update(^crc, ...).

// jonesReflected is the Jones polynomial bit-reversed (the form
// crc64.MakeTable takes).
const jonesReflected = 0x95ac9329ac4bc9b5

var jonesTable = crc64.MakeTable(jonesReflected)

// CRC64 continues Valkey's CRC-64 crc over p.
func CRC64(crc uint64, p []byte) uint64 {
	return ^crc64.Update(^crc, jonesTable, p)
}
