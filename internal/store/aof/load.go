package aof

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
)

// LoadResult describes one replay.
type LoadResult struct {
	// Size is the size of the file after the replay (after any truncation).
	Size int64
	// Commands is the number of commands passed to exec.
	Commands int
	// Dropped is the number of bytes of a torn tail cut from the file (0
	// when the file ended cleanly).
	Dropped int64
	// Missing is true when there was no file (a first boot).
	Missing bool
	// PreambleKeys and PreambleSize are the keys and bytes of the file's
	// RDB preamble (0, 0: none).
	PreambleKeys int
	PreambleSize int64
}

// fileSize is the size of an opened file, when the reader can tell.
func fileSize(rc io.ReadCloser) (int64, bool) {
	switch f := rc.(type) {
	case interface{ Stat() (fs.FileInfo, error) }:
		if fi, err := f.Stat(); err == nil {
			return fi.Size(), true
		}
	case interface{ Size() int64 }:
		return f.Size(), true
	}
	return 0, false
}

// ExecFunc runs one replayed command against database db. argv[0] is the
// command name as recorded. argv and its arguments are valid only during
// the call (as a connection's request buffer is): the callee copies what it
// keeps. A non-nil error stops the replay (the boot fails).
type ExecFunc func(db int, argv [][]byte) error

// maxBulk is the longest argument accepted (Valkey's proto-max-bulk-len).
const maxBulk = 512 << 20

// LoadOptions configure LoadFile.
type LoadOptions struct {
	// NumDBs bounds SELECT (0: any database number).
	NumDBs int
	// Log receives the truncation warnings (nil: slog.Default()).
	Log *slog.Logger
	// RefuseTruncated is aof-load-truncated no: a torn tail fails the load
	// and the file is left as it is.
	RefuseTruncated bool
	// Preamble reads a file that starts with an RDB (its magic "REDIS");
	// nil refuses such a file.
	Preamble Preamble
}

// LoadFile replays the append-only file at path through exec, as Valkey's
// loadSingleAppendOnlyFile does:
//
//   - SELECT switches the database passed to exec (0..NumDBs-1); MULTI ...
//     EXEC groups are passed to exec only once their EXEC has been read, so a
//     group is replayed all or nothing.
//   - A torn final record (the file ends inside a command, or inside a
//     MULTI without its EXEC, or the rest of the file after the last good
//     record is only NUL bytes): with aof-load-truncated yes (the default)
//     it is dropped, the file is truncated to the end of the last complete
//     record and warnings name the offset and the bytes dropped; when the
//     dropped bytes hold what look like whole records (a length damaged in
//     the middle of the file swallows the records after it), a warning says
//     so and they are first copied to "<file>.dropped-<offset>". With
//     aof-load-truncated no (RefuseTruncated) the load fails with Valkey's
//     "Unexpected end of file" text and the file is left as it is.
//   - Any other damage (a record that does not parse, followed by more data)
//     fails with an error naming the byte offset of the bad record; the file
//     is left as it is.
//
// A missing file is an empty keyspace (Missing true, no error).
func LoadFile(fsys FS, path string, opt LoadOptions, exec ExecFunc) (LoadResult, error) {
	var res LoadResult
	log := opt.Log
	if log == nil {
		log = slog.Default()
	}
	numDBs := opt.NumDBs
	rc, err := fsys.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			res.Missing = true
			return res, nil
		}
		return res, err
	}
	p := &parser{r: bufio.NewReaderSize(rc, 1<<20)}
	name := filepath.Base(path)
	var preambleEnd int64
	if magic, _ := p.r.Peek(5); string(magic) == "REDIS" {
		// An RDB preamble (aof-use-rdb-preamble): read it whole, then the
		// commands that follow it. Damage in it, a truncation included,
		// refuses the file as Valkey's loadSingleAppendOnlyFile does: the
		// torn-tail rule (§3.2) is for the commands, whose last write may
		// be cut; the preamble was fsynced before the file was renamed.
		if opt.Preamble == nil {
			rc.Close()
			return res, loadErr(0, "Bad file format reading the append only file %s: it starts with an RDB preamble and no RDB reader is configured", name)
		}
		remain := int64(1) << 62
		if sz, ok := fileSize(rc); ok {
			remain = sz
		}
		n, keys, err := opt.Preamble.Load(p.r, remain)
		if err != nil {
			rc.Close()
			return res, loadErr(0, "Error reading the RDB preamble of the AOF file %s, AOF loading aborted: %v", name, err)
		}
		p.off, preambleEnd = n, n
		res.PreambleKeys, res.PreambleSize = keys, n
		log.Info(fmt.Sprintf("Reading RDB base file on AOF loading... (%s, %d keys, %d bytes)", name, keys, n))
	}
	db := 0
	var (
		inMulti    bool
		multiStart int64
		queued     []queuedCmd
		validUpTo  = preambleEnd
		torn       bool
		tornAt     int64 // start of the record the file ends inside
	)
	for {
		start := p.off
		argv, perr := p.command()
		if perr == io.EOF {
			break // clean end of file
		}
		if perr != nil {
			var t tornError
			if errors.As(perr, &t) {
				torn, tornAt = true, start
				break
			}
			rc.Close()
			return res, loadErr(start, "Bad file format reading the append only file %s at offset %d: %v (make a backup of the file; valkey-check-aof --fix truncates it there, losing what follows)", name, start, perr)
		}
		cmd := strings.ToLower(string(argv[0]))
		switch {
		case cmd == "select":
			n, ok := parseDB(argv, numDBs)
			if !ok {
				rc.Close()
				return res, loadErr(start, "Bad file format reading the append only file %s at offset %d: invalid SELECT", name, start)
			}
			db = n
		case cmd == "multi" && len(argv) == 1:
			if inMulti {
				rc.Close()
				return res, loadErr(start, "Bad file format reading the append only file %s at offset %d: MULTI inside MULTI", name, start)
			}
			inMulti, multiStart, queued = true, start, queued[:0]
		case cmd == "exec" && len(argv) == 1:
			if !inMulti {
				rc.Close()
				return res, loadErr(start, "Bad file format reading the append only file %s at offset %d: EXEC without MULTI", name, start)
			}
			for _, q := range queued {
				if err := exec(q.db, q.argv); err != nil {
					rc.Close()
					return res, loadErr(q.off, "Error replaying the append only file %s at offset %d: %v", name, q.off, err)
				}
				res.Commands++
			}
			inMulti, queued = false, queued[:0]
		case inMulti:
			queued = append(queued, queuedCmd{db: db, argv: argv, off: start})
		default:
			if err := exec(db, argv); err != nil {
				rc.Close()
				return res, loadErr(start, "Error replaying the append only file %s at offset %d: %v", name, start, err)
			}
			res.Commands++
		}
		if !inMulti {
			validUpTo = p.off
			p.reset() // the executed commands' memory is reused
		}
	}
	rc.Close()
	if inMulti {
		torn = true
		validUpTo = multiStart
	}
	res.Size = p.off
	if !torn {
		return res, nil
	}
	// p.off is where reading stopped: the end of the file, except when a
	// NUL tail was recognised early (restIsZero read it all) -- the end too.
	dropped := p.off - validUpTo
	if opt.RefuseTruncated {
		return res, loadErr(validUpTo, "Unexpected end of file reading the append only file %s: the record at offset %d is incomplete (%d bytes to the end of the file). "+
			"You can: 1) Make a backup of your AOF file, then use ./valkey-check-aof --fix <filename>. "+
			"2) Alternatively you can set the 'aof-load-truncated' configuration option to yes and restart the server.",
			name, validUpTo, dropped)
	}
	res.Dropped = dropped
	res.Size = validUpTo
	records, saved, serr := keepDropped(fsys, path, validUpTo, tornAt)
	log.Warn("!!! Warning: short read while loading the AOF file "+name+"!!!", "file", name, "offset", validUpTo, "dropped_bytes", dropped)
	if records > 0 {
		msg := fmt.Sprintf("!!! The %d dropped bytes of %s hold what look like %d more whole records: a length damaged at offset %d, not a torn last write, may be the cause !!!",
			dropped, name, records, validUpTo)
		if serr != nil {
			log.Warn(msg, "file", name, "offset", validUpTo, "records", records, "save_error", serr.Error())
		} else {
			log.Warn(msg+" They are kept in "+filepath.Base(saved)+".", "file", name, "offset", validUpTo, "records", records, "saved_to", saved)
		}
	}
	log.Warn(fmt.Sprintf("!!! Truncating the AOF %s at offset %d !!!", name, validUpTo), "file", name, "offset", validUpTo, "dropped_bytes", dropped)
	f, err := fsys.OpenAppend(path)
	if err != nil {
		return res, fmt.Errorf("truncating the torn tail of %s: %w", name, err)
	}
	err = f.Truncate(validUpTo)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return res, fmt.Errorf("truncating the torn tail of %s at offset %d: %w", name, validUpTo, err)
	}
	log.Warn(TruncatedMessage(name, validUpTo, res.Dropped),
		"file", name, "offset", validUpTo, "dropped_bytes", res.Dropped)
	return res, nil
}

// TruncatedMessage is the warning logged once a torn tail was cut (with
// aof-load-truncated yes: Valkey's "loaded anyway" line, with the numbers).
func TruncatedMessage(name string, offset, dropped int64) string {
	return fmt.Sprintf("AOF %s loaded anyway because aof-load-truncated is enabled: truncated at offset %d, %d bytes dropped", name, offset, dropped)
}

// keepDropped looks at the bytes of path from offset on (the tail about to
// be dropped): when what follows the start of the incomplete record (at
// tornAt) holds what look like whole records ("*<n>\r\n$" at a line
// start), the length of that record swallowed them; it then copies the tail,
// fsynced, to "<path>.dropped-<offset>" and returns how many such records it
// saw and the copy's path. An ordinary torn write (the file ends inside its
// last record, or inside a MULTI group's last record) saves nothing.
func keepDropped(fsys FS, path string, offset, tornAt int64) (records int, saved string, err error) {
	rc, err := fsys.Open(path)
	if err != nil {
		return 0, "", err
	}
	defer rc.Close()
	br := bufio.NewReaderSize(rc, 1<<20)
	if _, err := io.CopyN(io.Discard, br, offset); err != nil {
		return 0, "", err
	}
	tail, err := io.ReadAll(br)
	if err != nil {
		return 0, "", err
	}
	if rel := tornAt - offset; rel >= 0 && rel < int64(len(tail)) {
		records = countRecordStarts(tail[rel:])
	}
	if records == 0 {
		return 0, "", nil
	}
	saved = fmt.Sprintf("%s.dropped-%d", path, offset)
	f, err := fsys.Create(saved)
	if err != nil {
		return records, "", err
	}
	_, err = f.Write(tail)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.SyncDir(filepath.Dir(path))
	}
	return records, saved, err
}

// countRecordStarts counts "*<digits>\r\n$" at the start of a line after
// the first byte of b.
func countRecordStarts(b []byte) int {
	n := 0
	for i := 1; i < len(b); i++ {
		if b[i] != '*' || b[i-1] != '\n' {
			continue
		}
		j := i + 1
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		if j > i+1 && j+2 < len(b) && b[j] == '\r' && b[j+1] == '\n' && b[j+2] == '$' {
			n++
		}
	}
	return n
}

type queuedCmd struct {
	db   int
	argv [][]byte
	off  int64
}

func parseDB(argv [][]byte, numDBs int) (int, bool) {
	if len(argv) != 2 {
		return 0, false
	}
	n, err := strconv.Atoi(string(argv[1]))
	if err != nil || n < 0 || (numDBs > 0 && n >= numDBs) {
		return 0, false
	}
	return n, true
}

// LoadError is a replay that failed: the file is damaged before its tail
// (Bad file format ...) or a command in it could not run. Offset is the byte
// offset of the record at fault.
type LoadError struct {
	Offset int64
	Msg    string
}

func (e *LoadError) Error() string { return e.Msg }

func loadErr(off int64, format string, args ...any) error {
	return &LoadError{Offset: off, Msg: fmt.Sprintf(format, args...)}
}

// tornError: the file ended inside a record (or the rest is NUL bytes).
type tornError struct{}

func (tornError) Error() string { return "torn record" }

// parser reads records. Arguments are read into an arena of large chunks
// and argv arrays are carved from a pool, both reused once the commands
// read so far have been executed (reset), so a replay allocates little.
type parser struct {
	r     *bufio.Reader
	off   int64
	arena []byte
	args  [][]byte
}

const arenaChunk = 1 << 20

// reset makes the arena and the argv pool reusable.
func (p *parser) reset() {
	p.arena = p.arena[:0]
	p.args = p.args[:0]
}

// argvs returns an empty argv with room for n arguments from the pool.
func (p *parser) argvs(n int) [][]byte {
	if n > 1024 {
		return make([][]byte, 0, 1024)
	}
	if cap(p.args)-len(p.args) < n {
		p.args = make([][]byte, 0, max(4096, n))
	}
	st := len(p.args)
	p.args = p.args[:st+n]
	return p.args[st : st : st+n]
}

// space returns n writable bytes from the arena; earlier slices stay
// valid (a full chunk is replaced, never grown).
func (p *parser) space(n int) []byte {
	if n > arenaChunk/4 {
		return make([]byte, n)
	}
	if cap(p.arena)-len(p.arena) < n {
		p.arena = make([]byte, 0, arenaChunk)
	}
	st := len(p.arena)
	p.arena = p.arena[:st+n]
	return p.arena[st : st+n : st+n]
}

// command reads one record. io.EOF: clean end before a record; tornError:
// the record is incomplete at the end of the file; other errors: damage.
func (p *parser) command() ([][]byte, error) {
	line, err := p.line()
	if err != nil {
		if err == io.EOF && len(line) == 0 {
			return nil, io.EOF
		}
		if err == io.EOF && !partialHeader(line, '*') {
			// Bytes at the end that cannot begin a record ("abc"): Valkey's
			// loader reads the line and refuses it (Bad file format); only
			// the start of a record, or NUL bytes, is a torn tail.
			return nil, p.badOrTorn(line, nil, fmt.Sprintf("expected '*', got %q at the end of the file", abbrev(line)))
		}
		return nil, p.badOrTorn(line, err, "incomplete header")
	}
	if line[0] != '*' {
		return nil, p.badOrTorn(line, nil, fmt.Sprintf("expected '*', got %q", abbrev(line)))
	}
	argc, ok := parseLen(line[1:])
	if !ok || argc < 1 {
		return nil, p.badOrTorn(line, nil, fmt.Sprintf("invalid multibulk length %q", abbrev(line)))
	}
	argv := p.argvs(argc)
	for range argc {
		line, err := p.line()
		if err != nil {
			if err == io.EOF && len(line) > 0 && !partialHeader(line, '$') {
				return nil, p.badOrTorn(line, nil, fmt.Sprintf("expected '$', got %q at the end of the file", abbrev(line)))
			}
			return nil, p.badOrTorn(line, err, "incomplete bulk header")
		}
		if line[0] != '$' {
			return nil, p.badOrTorn(line, nil, fmt.Sprintf("expected '$', got %q", abbrev(line)))
		}
		n, ok := parseLen(line[1:])
		if !ok || n > maxBulk {
			return nil, p.badOrTorn(line, nil, fmt.Sprintf("invalid bulk length %q", abbrev(line)))
		}
		arg, err := p.bulk(n)
		if err != nil {
			return nil, err
		}
		argv = append(argv, arg)
	}
	return argv, nil
}

// line reads up to and including "\n" and returns it without "\r\n". A line
// that does not end in "\r\n" is reported as damage by the caller.
func (p *parser) line() ([]byte, error) {
	b, err := p.r.ReadSlice('\n')
	p.off += int64(len(b))
	if err != nil {
		if err == bufio.ErrBufferFull {
			return b, errLineTooLong
		}
		return b, err
	}
	if len(b) < 3 || b[len(b)-2] != '\r' {
		return b, errBadLine
	}
	return b[:len(b)-2], nil
}

var (
	errLineTooLong = errors.New("header line too long")
	errBadLine     = errors.New("malformed header line")
)

// bulk reads n bytes and the "\r\n" after them, growing the buffer as the
// data arrives so that a damaged length does not allocate up front.
func (p *parser) bulk(n int) ([]byte, error) {
	if n <= arenaChunk/4 {
		buf := p.space(n)
		k, err := io.ReadFull(p.r, buf)
		p.off += int64(k)
		if err != nil {
			return nil, tornError{}
		}
		return buf, p.crlf()
	}
	buf := make([]byte, 0, min(n, 1<<20))
	for len(buf) < n {
		chunk := min(n-len(buf), 1<<20)
		if cap(buf)-len(buf) < chunk {
			buf = append(buf, make([]byte, chunk)...)[:len(buf)]
		}
		k, err := io.ReadFull(p.r, buf[len(buf):len(buf)+chunk])
		p.off += int64(k)
		buf = buf[:len(buf)+k]
		if err != nil {
			return nil, tornError{}
		}
	}
	return buf, p.crlf()
}

// crlf reads the "\r\n" after a bulk.
func (p *parser) crlf() error {
	var crlf [2]byte
	k, err := io.ReadFull(p.r, crlf[:])
	p.off += int64(k)
	if err != nil {
		return tornError{}
	}
	if crlf != [2]byte{'\r', '\n'} {
		return p.badOrTorn(crlf[:], nil, "bulk not terminated by CRLF")
	}
	return nil
}

// partialHeader reports whether b, the last bytes of the file, can be the
// start of a header line `<mark><digits>\r\n` cut short: the mark, then
// digits, then at most the CR. NUL bytes are left to badOrTorn.
func partialHeader(b []byte, mark byte) bool {
	if allZero(b) {
		return true
	}
	if b[0] != mark {
		return false
	}
	for i, c := range b[1:] {
		if c == '\r' && i == len(b)-2 {
			return true
		}
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// badOrTorn classifies a parse failure: the end of the file inside the
// record is a torn tail, and so is a failure where the offending bytes and
// everything after them are NUL (a tail whose size reached the disk before
// its data); anything else is damage described by msg.
func (p *parser) badOrTorn(tok []byte, err error, msg string) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return tornError{}
	}
	if allZero(tok) && p.restIsZero() {
		return tornError{}
	}
	if err != nil && err != errBadLine && err != errLineTooLong {
		return err
	}
	if err != nil {
		return fmt.Errorf("%s: %v", msg, err)
	}
	return errors.New(msg)
}

func (p *parser) restIsZero() bool {
	for {
		b, err := p.r.ReadByte()
		if err != nil {
			return err == io.EOF
		}
		p.off++
		if b != 0 {
			return false
		}
	}
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func abbrev(b []byte) string {
	if len(b) > 32 {
		return string(b[:32]) + "..."
	}
	return string(b)
}

// parseLen parses a non-negative decimal length.
func parseLen(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 10 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}
