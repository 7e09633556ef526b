package aof

import "strconv"

// The AOF is a sequence of RESP multibulk commands, exactly as Valkey writes
// its append-only file (and as redis-check-aof reads it):
//
//	*<argc>\r\n  then, per argument, $<len>\r\n<bytes>\r\n
//
// A SELECT <db> precedes the first command and every command whose
// database differs from the previous one; a group of commands that must be
// replayed all or nothing is wrapped in MULTI ... EXEC.

var (
	multiRecord = []byte("*1\r\n$5\r\nMULTI\r\n")
	execRecord  = []byte("*1\r\n$4\r\nEXEC\r\n")
)

// AppendCommand appends argv to b as one RESP multibulk record.
func AppendCommand(b []byte, argv [][]byte) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(argv)), 10)
	b = append(b, '\r', '\n')
	for _, a := range argv {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, '\r', '\n')
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return b
}

// appendSelect appends SELECT db.
func appendSelect(b []byte, db int) []byte {
	var num [20]byte
	n := strconv.AppendInt(num[:0], int64(db), 10)
	b = append(b, "*2\r\n$6\r\nSELECT\r\n$"...)
	b = strconv.AppendInt(b, int64(len(n)), 10)
	b = append(b, '\r', '\n')
	b = append(b, n...)
	return append(b, '\r', '\n')
}

// commandLen is the length of argv's record (AppendCommand).
func commandLen(argv [][]byte) int {
	n := 1 + decimalLen(len(argv)) + 2
	for _, a := range argv {
		n += 1 + decimalLen(len(a)) + 2 + len(a) + 2
	}
	return n
}

// decimalLen is the number of decimal digits of n >= 0.
func decimalLen(n int) int {
	d := 1
	for n >= 10 {
		n /= 10
		d++
	}
	return d
}

// groupLen is the length appendGroup adds for cmds.
func groupLen(cmds [][][]byte) int {
	n := 0
	if len(cmds) > 1 {
		n = len(multiRecord) + len(execRecord)
	}
	for _, c := range cmds {
		n += commandLen(c)
	}
	return n
}

// appendGroup appends cmds: one command as it is, several inside MULTI/EXEC.
// b grows once, to the exact length, when it lacks room: a command of a
// million arguments is not encoded through a series of doubling copies.
func appendGroup(b []byte, cmds [][][]byte) []byte {
	if n := groupLen(cmds); cap(b)-len(b) < n {
		nb := make([]byte, len(b), len(b)+n)
		copy(nb, b)
		b = nb
	}
	if len(cmds) > 1 {
		b = append(b, multiRecord...)
	}
	for _, c := range cmds {
		b = AppendCommand(b, c)
	}
	if len(cmds) > 1 {
		b = append(b, execRecord...)
	}
	return b
}
