// Package aof is emqd's append-only file (docs/durability.md,
// "Persistence"): every write the store makes is recorded as RESP commands
// in Valkey's AOF format, made durable per appendfsync (always, everysec,
// no), replayed at boot, and compacted by a rewrite that runs while the
// server keeps serving.
//
// Life cycle: New, Load (replay through the server's command table), then
// Start (open for appending; make the AOF the store's Feed, Store.SetFeed), then Append from the
// store (under its lock) and Commit from the server after each batch that
// wrote and before its replies go out; Close on shutdown.
//
// Durability promises, with the file system honest about fsync:
//   - always: Commit returns nil only once every record appended before the
//     call is fsynced. Concurrent Commits share one write+fsync (group
//     commit): one caller leads, the others wait for its fsync.
//   - everysec: Commit returns once the records are written (in the page
//     cache: a crash of the process loses nothing); a background fsync runs
//     every second, so a power loss loses at most about the last second
//     (plus the time the fsync itself takes). As Valkey's bio fsync it runs
//     beside the writers and Commit never waits for it: an fsync covers what
//     was written when it started. As Valkey's flushAppendOnlyFile, Commit
//     does not even write while that fsync is pending (on Linux, ext4 at
//     least, write(2) blocks behind an fsync of the same file for as long
//     as the fsync takes): the records stay buffered and are written as
//     soon as the fsync ends. So a crash of the process during an fsync can
//     lose the records acknowledged while it ran (Valkey's trade-off too);
//     once an fsync has been pending for 2 s Commit writes anyway, waiting,
//     and counts aof_delayed_fsync.
//   - no: as everysec but never fsynced by emqd: the kernel decides when
//     the data reaches the disk (typically within 30 s on Linux), so a power
//     loss can lose that much; a crash of the process still loses nothing.
//
// Errors: a failed write or fsync makes WriteError non-empty (Valkey's
// "MISCONF Errors writing to the AOF file: <strerror>"); the server then
// refuses write commands. The records stay buffered and are retried in the
// background; once a write (and, when due, an fsync) succeeds again the
// error clears. A failed fsync is treated as Linux reports it (the dirty
// pages may have been dropped), so the retry truncates the file back to the
// last good fsync and writes the unsynced records again before fsyncing.
package aof

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emqd/emqd/internal/store"
)

// Fsync is the appendfsync policy.
type Fsync int

// The appendfsync policies.
const (
	FsyncEverySec Fsync = iota // fsync once per second in the background (default)
	FsyncAlways                // fsync before Commit returns
	FsyncNo                    // never fsync; the kernel decides
)

// String is the policy's configuration name.
func (p Fsync) String() string {
	switch p {
	case FsyncAlways:
		return "always"
	case FsyncNo:
		return "no"
	}
	return "everysec"
}

// ParseFsync parses an appendfsync value (case-insensitive, as Valkey's
// enum configs are).
func ParseFsync(s string) (Fsync, bool) {
	switch strings.ToLower(s) {
	case "always":
		return FsyncAlways, true
	case "everysec":
		return FsyncEverySec, true
	case "no":
		return FsyncNo, true
	}
	return 0, false
}

// Config configures an AOF.
type Config struct {
	// Dir is the directory of the file (Valkey's dir).
	Dir string
	// Filename is the file's name in Dir (appendfilename; default
	// "appendonly.aof").
	Filename string
	// Fsync is appendfsync.
	Fsync Fsync
	// AutoRewritePercentage (auto-aof-rewrite-percentage, 0: off) and
	// AutoRewriteMinSize (auto-aof-rewrite-min-size, bytes): a rewrite starts
	// by itself when the file is larger than the min size and has grown by
	// the percentage since the last rewrite (or since boot).
	AutoRewritePercentage int
	AutoRewriteMinSize    int64
	// Store is the keyspace the rewrite snapshots; its NumDBs bounds SELECT
	// at load.
	Store *store.Store
	// FS is the file system (default OSFS).
	FS FS
	// Logger receives warnings (default slog.Default()).
	Logger *slog.Logger
	// RefuseTruncated is aof-load-truncated no: a file that ends inside a
	// record fails Load (a *LoadError) instead of being truncated to its
	// last complete record (docs/durability.md §3).
	RefuseTruncated bool

	// FsyncInterval is the everysec period (default 1 s); CronInterval is
	// the period of the background flush, retry and auto-rewrite check
	// (default 100 ms). Tests shorten them.
	FsyncInterval time.Duration
	CronInterval  time.Duration
	// now (tests: an injected clock; default time.Now) dates the everysec
	// fsyncs; manualCron (tests) starts no cron goroutine: the test calls
	// cronOnce itself.
	now        func() time.Time
	manualCron bool
	// Hook, for tests, is called at each step of a rewrite (see
	// RewriteSteps); a non-nil return aborts the rewrite there as if the
	// process had died (the test then simulates the power loss).
	Hook func(step string) error
	// Preamble, when set, reads an RDB preamble at replay and, when it is
	// Enabled, makes a rewrite write its copy as one (aof-use-rdb-preamble,
	// docs/durability.md §1.1). Nil: commands only, and a file starting
	// with an RDB is refused.
	Preamble Preamble
}

// RewriteSteps are the points of a rewrite where Config.Hook is called, in
// order: once it tracks changed keys, before copying; after the first copy
// of every key; after the cut's keys are written to the temporary file;
// after that file is fsynced; after the records appended since the cut are
// caught up; with the final records written and fsynced, before the rename
// (Append paused); after the rename, before the directory fsync (Append
// paused); when done (Append paused).
var RewriteSteps = []string{"snapshot", "copied", "written", "synced", "caught-up", "before-rename", "renamed", "done"}

// ErrRewriteInProgress is BGREWRITEAOF's refusal while a rewrite runs
// (Valkey's text).
var ErrRewriteInProgress = errors.New("ERR Background append only file rewriting already in progress")

var errClosed = errors.New("AOF is closed")

// AOF is an open append-only file. It implements store.Feed and
// store.Toucher (the keys changed while it rewrites).
type AOF struct {
	cfg  Config
	path string
	fs   FS
	log  *slog.Logger

	// mu guards the records buffer, the progress counters and the status.
	// Lock order: store lock, then smu, then wmu, then mu (smu is never
	// taken under the store lock by anything that then waits for it).
	mu         sync.Mutex
	policy     Fsync
	perc       int
	minSize    int64
	buf        []byte // records appended and not yet written
	selDB      int    // database of the last SELECT in the file stream (-1: none)
	appended   int64  // bytes ever appended (a logical position)
	written    int64  // logical position written to the file
	synced     int64  // logical position fsynced
	writeErr   error  // last write failed
	syncErr    error  // last fsync failed
	lastErr    error  // the most recent of the two (MISCONF text)
	errGen     uint64 // bumped on every failure
	lastErrAt  time.Time
	fsyncing   bool      // an fsync runs (aof_pending_bio_fsync)
	fsyncAt    time.Time // when it started (cfg.now)
	syncRuns   int64     // background fsyncs finished, good or not (tests wait on it)
	lastSyncAt time.Time // when the last fsync began (cfg.now)
	leading    bool      // a Commit is writing for everyone (group commit)
	followers  sync.Cond // on mu: the Commits waiting for the leader
	delayed    int64
	curSize    int64
	baseSize   int64
	closed     bool
	closing    bool // Cancel or Close: no rewrite starts or finishes
	waiting    bool // started from the keyspace: no file until a rewrite made one

	// Guarded by the store lock: the keys changed while a rewrite copies
	// the keyspace (see touch).
	tracking bool
	dirty    map[dkey]struct{}
	flushed  []bool
	// The running rewrite's own (StartRewrite resets them, under mu,
	// before the goroutine starts; it reads them back under mu).
	lockedAt  time.Time
	rwMaxHold time.Duration

	rw            *rewriteBuf // collects appends after a rewrite's cut
	rewriting     bool
	rwStart       time.Time
	rwDone        chan struct{}
	rwCancel      atomic.Bool
	lastRwSec     int64
	lastRwOK      bool
	rewrites      int64
	rwFailures    int64
	lastRwFailure time.Time

	// smu is the fsync role: whoever holds it may fsync the file, repair it
	// after a failed fsync, or switch it (rewrite, Close). The everysec
	// background fsync holds smu but not wmu while fsync(2) runs, so
	// writers go on meanwhile; the synchronous paths (always, repair,
	// Sync, Close) hold both.
	smu sync.Mutex
	// wmu is the writer role: whoever holds it writes the file; the fields
	// below are guarded by it.
	wmu         sync.Mutex
	f           File
	fileSize    int64
	syncedSize  int64
	unsynced    []byte // the bytes written since the last good fsync
	complete    bool   // unsynced holds every byte after syncedSize
	spare       []byte // a free records buffer (the one written last)
	needRepair  bool   // an fsync failed: rewrite the unsynced bytes
	needDirSync bool

	stop     chan struct{}
	done     chan struct{} // closed when cron returns
	syncReq  chan struct{} // cron asks syncer for an everysec fsync (capacity 1)
	syncDone chan struct{} // closed when syncer returns
}

type rewriteBuf struct {
	buf   []byte
	selDB int
}

// New returns an AOF for cfg; nothing is opened yet (see Load and Start).
func New(cfg Config) *AOF {
	if cfg.Filename == "" {
		cfg.Filename = "appendonly.aof"
	}
	if cfg.FS == nil {
		cfg.FS = OSFS{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.FsyncInterval <= 0 {
		cfg.FsyncInterval = time.Second
	}
	if cfg.CronInterval <= 0 {
		cfg.CronInterval = 100 * time.Millisecond
	}
	if cfg.now == nil {
		cfg.now = time.Now
	}
	a := &AOF{
		cfg:       cfg,
		path:      filepath.Join(cfg.Dir, cfg.Filename),
		fs:        cfg.FS,
		log:       cfg.Logger,
		policy:    cfg.Fsync,
		perc:      cfg.AutoRewritePercentage,
		minSize:   cfg.AutoRewriteMinSize,
		selDB:     -1,
		lastRwSec: -1,
		lastRwOK:  true,
		complete:  true,
	}
	a.followers.L = &a.mu
	return a
}

// Path is the file's path.
func (a *AOF) Path() string { return a.path }

// Load replays the file through exec (see LoadFile), before Start. The
// databases passed to exec are below cfg.Store.NumDBs().
func (a *AOF) Load(exec ExecFunc) (LoadResult, error) {
	n := 0
	if a.cfg.Store != nil {
		n = a.cfg.Store.NumDBs()
	}
	if err := a.fs.MkdirAll(a.cfg.Dir); err != nil {
		return LoadResult{}, err
	}
	return LoadFile(a.fs, a.path, LoadOptions{NumDBs: n, Log: a.log, RefuseTruncated: a.cfg.RefuseTruncated, Preamble: a.cfg.Preamble}, exec)
}

// LoadOther replays another file (a Valkey multi-part AOF's base or
// incremental file) as Load replays the AOF, reading its RDB preamble too,
// without changing it: a torn tail refuses the load.
func (a *AOF) LoadOther(path string, exec ExecFunc) (LoadResult, error) {
	n := 0
	if a.cfg.Store != nil {
		n = a.cfg.Store.NumDBs()
	}
	return LoadFile(a.fs, path, LoadOptions{NumDBs: n, Log: a.log, RefuseTruncated: true, Preamble: a.cfg.Preamble}, exec)
}

// Start opens the file for appending (creating it, durably, on a first
// boot), removes temporary files a crashed rewrite left, and starts the
// background goroutine (everysec fsync, flush retries, auto-rewrite).
func (a *AOF) Start() error {
	if err := a.prepareDir(); err != nil {
		return err
	}
	f, err := a.fs.OpenAppend(a.path)
	if err != nil {
		return err
	}
	size, err := f.Size()
	if err == nil {
		// The file may be new: make its directory entry durable.
		err = a.fs.SyncDir(a.cfg.Dir)
	}
	if err != nil {
		f.Close()
		return err
	}
	a.wmu.Lock()
	a.f = f
	a.fileSize, a.syncedSize = size, size
	a.wmu.Unlock()
	a.mu.Lock()
	a.curSize, a.baseSize = size, size
	a.lastSyncAt = a.cfg.now()
	a.mu.Unlock()
	a.startBackground()
	return nil
}

// startBackground starts the cron goroutine (unless cfg.manualCron) and
// the everysec fsync goroutine.
func (a *AOF) startBackground() {
	a.stop = make(chan struct{})
	a.done = make(chan struct{})
	a.syncReq = make(chan struct{}, 1)
	a.syncDone = make(chan struct{})
	if a.cfg.manualCron {
		close(a.done)
	} else {
		go a.cron()
	}
	go a.syncer()
}

// prepareDir creates Dir and removes temporary files a crashed rewrite left.
func (a *AOF) prepareDir() error {
	if err := a.fs.MkdirAll(a.cfg.Dir); err != nil {
		return err
	}
	if names, err := a.fs.ReadDir(a.cfg.Dir); err == nil {
		for _, n := range names {
			if strings.HasPrefix(n, "temp-rewriteaof-") && strings.HasSuffix(n, ".aof") {
				_ = a.fs.Remove(filepath.Join(a.cfg.Dir, n))
			}
		}
	}
	return nil
}

// probeDir checks that a file can be created in the directory, as the
// rewrite that StartFromKeyspace starts in the background must: Valkey's
// startAppendOnly creates its new file before it answers, so a directory
// it cannot write fails CONFIG SET appendonly yes at once instead of
// leaving the server acknowledging writes nothing records. The probe file
// is a rewrite temp file by name, so prepareDir removes one left behind.
func (a *AOF) probeDir() error {
	p := filepath.Join(a.cfg.Dir, fmt.Sprintf("temp-rewriteaof-probe-%d-%d.aof", os.Getpid(), tempSeq.Add(1)))
	f, err := a.fs.Create(p)
	if err != nil {
		return err
	}
	f.Close()
	return a.fs.Remove(p)
}

// StartFromKeyspace turns the AOF on while the server runs (CONFIG SET
// appendonly yes), as Valkey's startAppendOnly does: nothing is written
// until a rewrite has made a file from the live keyspace, which then
// replaces whatever file is at Path. Until then Commit returns at once (the
// writes are not durable yet, as under Valkey's AOF_WAIT_REWRITE); a failed
// rewrite is retried every second. Call it instead of Load and Start, with
// the store lock held; then make it the store's Feed (Store.SetFeed).
func (a *AOF) StartFromKeyspace() error {
	if a.cfg.Store == nil {
		return errClosed
	}
	if err := a.prepareDir(); err != nil {
		return err
	}
	if err := a.probeDir(); err != nil {
		return err
	}
	a.mu.Lock()
	a.waiting = true
	a.mu.Unlock()
	a.startBackground()
	return a.StartRewrite()
}

// Append records cmds, applied to database db, as one record: a single
// command as it is, several inside MULTI/EXEC (store.Feed). It is called
// under the store lock and only buffers; Commit (or the background flush)
// writes.
func (a *AOF) Append(db int, cmds [][][]byte) {
	if len(cmds) == 0 {
		return
	}
	a.mu.Lock()
	if a.waiting {
		// Only a rewrite past its cut records (the keyspace is the file).
		if rw := a.rw; rw != nil {
			if db != rw.selDB {
				rw.buf = appendSelect(rw.buf, db)
				rw.selDB = db
			}
			rw.buf = appendGroup(rw.buf, cmds)
		}
		a.mu.Unlock()
		return
	}
	before := len(a.buf)
	if db != a.selDB {
		a.buf = appendSelect(a.buf, db)
		a.selDB = db
	}
	start := len(a.buf)
	a.buf = appendGroup(a.buf, cmds)
	if rw := a.rw; rw != nil {
		if db != rw.selDB {
			rw.buf = appendSelect(rw.buf, db)
			rw.selDB = db
		}
		rw.buf = append(rw.buf, a.buf[start:]...)
	}
	a.appended += int64(len(a.buf) - before)
	a.mu.Unlock()
}

// Commit makes every record appended before the call as durable as the
// policy promises: written to the file (everysec, no) or written and fsynced
// (always). Call it after the store lock is released, after each batch that
// wrote and before sending that batch's replies; concurrent callers share
// one write and fsync. A non-nil error (the file failed; see WriteError)
// means the batch must not be acknowledged: its records stay buffered and
// are written when the file works again.
func (a *AOF) Commit() error {
	a.mu.Lock()
	if a.waiting {
		a.mu.Unlock()
		return nil
	}
	target := a.appended
	gen := a.errGen
	// Followers wait for the leader's write (and fsync) and are done if it
	// covered their records, as it does for every record appended before it
	// took the buffer; otherwise one of them leads the next round.
	for a.leading && !a.coveredLocked(target) {
		if a.postponeLocked() {
			a.mu.Unlock()
			return nil
		}
		a.followers.Wait()
	}
	if a.coveredLocked(target) {
		a.mu.Unlock()
		return nil
	}
	if a.errGen != gen && a.lastErr != nil {
		// The leader we waited for failed: report it rather than retry.
		err := a.lastErr
		a.mu.Unlock()
		return err
	}
	if a.postponeLocked() {
		a.mu.Unlock()
		return nil
	}
	policy := a.policy
	// everysec and no only write (one write(2) for the whole group); always,
	// and any policy while a failed fsync waits for its repair, take the
	// fsync role too.
	synchronous := policy == FsyncAlways || a.syncErr != nil
	if a.fsyncing && policy == FsyncEverySec && !synchronous {
		// Valkey's aof_delayed_fsync: the fsync has been pending for 2 s,
		// the write goes ahead (and waits for it).
		a.delayed++
	}
	a.leading = true
	a.mu.Unlock()

	var err error
	if synchronous {
		a.smu.Lock()
		a.wmu.Lock()
		err = a.flush(policy == FsyncAlways)
		a.wmu.Unlock()
		a.smu.Unlock()
	} else {
		a.wmu.Lock()
		err = a.write(policy, true)
		a.wmu.Unlock()
	}
	a.mu.Lock()
	a.leading = false
	a.followers.Broadcast()
	a.mu.Unlock()
	return err
}

// postponeLocked reports whether a write now is postponed, as in Valkey's
// flushAppendOnlyFile under everysec: a background fsync is pending (and has
// been for less than 2 s), so the records stay buffered for bgSync to
// write when it ends. Call with mu held.
func (a *AOF) postponeLocked() bool {
	return a.policy == FsyncEverySec && a.fsyncing && a.syncErr == nil &&
		a.cfg.now().Sub(a.fsyncAt) < delayedFsyncAfter
}

func (a *AOF) coveredLocked(target int64) bool {
	if a.policy == FsyncAlways {
		return a.synced >= target
	}
	return a.written >= target
}

// delayedFsyncAfter is how long a background fsync may be pending before a
// write beside it counts as delayed (Valkey's 2 s of aof_delayed_fsync).
const delayedFsyncAfter = 2 * time.Second

// flush writes the buffered records and, if doSync (or a failed fsync must
// be retried), fsyncs, repairing the file first after a failed fsync. Call
// with smu and wmu held.
func (a *AOF) flush(doSync bool) error {
	if a.f == nil {
		return a.noFile()
	}
	if a.needRepair {
		if err := a.repair(); err != nil {
			return err
		}
	}
	a.mu.Lock()
	retrySync := a.syncErr != nil
	policy := a.policy
	a.mu.Unlock()
	if err := a.write(policy, false); err != nil {
		return err
	}
	if (doSync || retrySync) && (a.syncedSize < a.fileSize || a.needDirSync || retrySync) {
		return a.sync()
	}
	return nil
}

// noFile is flush's and write's answer with no file open: nothing to do
// while waiting for the first rewrite, errClosed after Close.
func (a *AOF) noFile() error {
	a.mu.Lock()
	waiting := a.waiting
	a.mu.Unlock()
	if waiting {
		return nil
	}
	return errClosed
}

// write writes the buffered records with one write(2) and nothing else (no
// fsync, no repair: a failed fsync is repaired by flush, under smu). policy
// is appendfsync as the caller read it; postponable: nothing is written
// while postponeLocked says so. Call with wmu held.
func (a *AOF) write(policy Fsync, postponable bool) error {
	if a.f == nil {
		return a.noFile()
	}
	a.mu.Lock()
	if postponable && a.postponeLocked() {
		a.mu.Unlock()
		return nil
	}
	buf, upto := a.buf, a.appended
	a.buf, a.spare = a.spare[:0], nil
	a.mu.Unlock()
	if len(buf) > 0 {
		n, err := a.f.Write(buf)
		if err != nil {
			a.writeFailed(buf, n, upto, err)
			return err
		}
		a.fileSize += int64(n)
		// A buffer too big to be reused is handed to the unsynced copy
		// instead of being copied into it.
		a.keepUnsynced(buf, policy, cap(buf) > 1<<20)
	}
	if cap(buf) <= 1<<20 {
		a.spare = buf // reused by the next write
	}
	a.mu.Lock()
	a.written = upto
	a.curSize = a.fileSize
	if a.writeErr != nil {
		a.writeErr = nil
		if a.syncErr == nil {
			a.lastErr = nil
		}
		a.log.Warn("AOF write error looks solved, the server can write again.")
	}
	a.mu.Unlock()
	return nil
}

// keepUnsynced keeps a copy of written bytes until the next good fsync, so
// a failed fsync can be repaired; with appendfsync no nothing is kept. With
// own, chunk is no longer used by the caller: when nothing else is kept it
// becomes the copy itself (a 100 MB record is then held once). Call with
// wmu held.
func (a *AOF) keepUnsynced(chunk []byte, policy Fsync, own bool) {
	if policy != FsyncNo && a.complete {
		if own && len(a.unsynced) == 0 {
			a.unsynced = chunk
			return
		}
		a.unsynced = append(a.unsynced, chunk...)
	} else {
		a.unsynced = a.unsynced[:0]
		a.complete = false
	}
}

// writeFailed handles a failed write of buf (n bytes of it written), as
// Valkey's flushAppendOnlyFile does: the partial record is cut off again if
// the file can be truncated, otherwise those n bytes count as written; the
// rest goes back to the front of the buffer.
func (a *AOF) writeFailed(buf []byte, n int, upto int64, err error) {
	rest := buf
	if n > 0 {
		if terr := a.f.Truncate(a.fileSize); terr != nil {
			a.fileSize += int64(n)
			a.mu.Lock()
			policy := a.policy
			a.mu.Unlock()
			a.keepUnsynced(buf[:n], policy, false)
			rest = buf[n:]
		}
	}
	a.mu.Lock()
	nb := make([]byte, 0, len(rest)+len(a.buf))
	nb = append(nb, rest...)
	a.buf = append(nb, a.buf...)
	a.written = upto - int64(len(rest))
	a.curSize = a.fileSize
	a.writeErr = err
	a.failLocked(err, "Error writing to the AOF file: "+Strerror(err))
	a.mu.Unlock()
}

// failLocked records a failure and logs it at most every 30 s (Valkey's
// AOF_WRITE_LOG_ERROR_RATE).
func (a *AOF) failLocked(err error, msg string) {
	a.lastErr = err
	a.errGen++
	if time.Since(a.lastErrAt) >= 30*time.Second {
		a.lastErrAt = time.Now()
		a.log.Warn(msg)
	}
}

// sync fsyncs the file (and the directory after a rewrite's rename whose
// directory fsync failed), writers waiting. Call with smu and wmu held.
func (a *AOF) sync() error {
	a.mu.Lock()
	a.fsyncing, a.fsyncAt = true, a.cfg.now()
	a.mu.Unlock()
	var err error
	if a.needDirSync {
		err = a.fs.SyncDir(a.cfg.Dir)
		if err == nil {
			a.needDirSync = false
		}
	}
	if err == nil {
		err = a.f.Sync()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.fsyncing = false
	a.lastSyncAt = a.fsyncAt
	return a.syncedLocked(err, a.fileSize, a.written)
}

// syncedLocked records the outcome of an fsync that began when the file
// was fileSize bytes long, logically at position written: on success that
// prefix is durable (the unsynced copy keeps only the bytes after it); on
// failure the file needs a repair. Call with wmu and mu held.
func (a *AOF) syncedLocked(err error, fileSize, written int64) error {
	if err != nil {
		a.needRepair = true
		a.syncErr = err
		a.failLocked(err, "Fail to fsync the AOF file: "+Strerror(err))
		return err
	}
	if fileSize > a.syncedSize {
		if k := int(fileSize - a.syncedSize); a.complete && k <= len(a.unsynced) {
			// Drop the now durable front of the copy; what was written
			// during the fsync stays for the next one.
			n := copy(a.unsynced, a.unsynced[k:])
			a.unsynced = a.unsynced[:n]
		} else {
			a.unsynced, a.complete = a.unsynced[:0], false
		}
		a.syncedSize = fileSize
	}
	if a.syncedSize == a.fileSize {
		if cap(a.unsynced) > 16<<20 {
			a.unsynced = nil
		}
		a.unsynced = a.unsynced[:0]
		a.complete = true
	}
	a.synced = max(a.synced, written)
	if a.syncErr != nil {
		a.syncErr = nil
		if a.writeErr == nil {
			a.lastErr = nil
		}
		a.log.Warn("AOF fsync error looks solved, the server can write again.")
	}
	return nil
}

// bgSync is the everysec fsync, as Valkey's bio fsync job: it takes the
// fsync role (smu) and, holding the writer role (wmu) only to read the
// file's length before and to record the outcome after, runs fsync(2)
// while Commits keep writing. The fsync covers the bytes written before it
// started; the ones written during it wait for the next. After a failed
// fsync (or with one failed before) it repairs and fsyncs synchronously
// instead, as flush does.
func (a *AOF) bgSync() {
	a.smu.Lock()
	defer a.smu.Unlock()
	a.wmu.Lock()
	a.mu.Lock()
	failing := a.syncErr != nil || a.writeErr != nil
	policy := a.policy
	a.mu.Unlock()
	if a.f == nil || failing || a.needRepair || policy == FsyncAlways {
		if a.f != nil {
			_ = a.flush(true)
		}
		a.wmu.Unlock()
		a.finishBgSync()
		return
	}
	// Records nobody committed yet go in first, so the fsync covers them.
	if err := a.write(policy, false); err != nil {
		a.wmu.Unlock()
		a.finishBgSync()
		return
	}
	f, size, dirSync := a.f, a.fileSize, a.needDirSync
	a.mu.Lock()
	written := a.written
	a.fsyncing, a.fsyncAt = true, a.cfg.now()
	a.lastSyncAt = a.fsyncAt
	a.followers.Broadcast() // waiting Commits postpone now
	a.mu.Unlock()
	a.wmu.Unlock()
	var err error
	if size > a.syncedSize || dirSync { // syncedSize changes only under smu
		if dirSync {
			err = a.fs.SyncDir(a.cfg.Dir)
		}
		if err == nil {
			err = f.Sync()
		}
	}
	a.wmu.Lock()
	a.mu.Lock()
	if dirSync && err == nil {
		a.needDirSync = false
	}
	a.fsyncing = false
	_ = a.syncedLocked(err, size, written)
	a.syncRuns++
	a.mu.Unlock()
	// The records whose write Commit postponed during the fsync.
	_ = a.write(policy, false)
	a.wmu.Unlock()
}

func (a *AOF) finishBgSync() {
	a.mu.Lock()
	a.syncRuns++
	a.mu.Unlock()
}

// syncer runs the everysec fsyncs cron asks for, one at a time.
func (a *AOF) syncer() {
	defer close(a.syncDone)
	for {
		select {
		case <-a.stop:
			return
		case <-a.syncReq:
			a.bgSync()
		}
	}
}

// repair recovers from a failed fsync: the kernel may have dropped the
// pages written since the last good fsync, so they are written again
// (truncate to the last good size, rewrite the kept chunks) and fsynced.
// With appendfsync no the chunks are not kept and the fsync is only
// retried. Call with wmu held.
func (a *AOF) repair() error {
	if a.complete {
		if err := a.f.Truncate(a.syncedSize); err != nil {
			a.mu.Lock()
			a.syncErr = err
			a.failLocked(err, "Fail to fsync the AOF file: "+Strerror(err))
			a.mu.Unlock()
			return err
		}
		a.fileSize = a.syncedSize
		n, err := a.f.Write(a.unsynced)
		a.fileSize += int64(n)
		if err != nil {
			a.mu.Lock()
			a.syncErr = err
			a.failLocked(err, "Error writing to the AOF file: "+Strerror(err))
			a.mu.Unlock()
			return err
		}
	}
	if err := a.sync(); err != nil {
		return err
	}
	a.needRepair = false
	return nil
}

// WriteError is "" while the file works, otherwise the error the server
// answers write commands with: Valkey's "MISCONF Errors writing to the AOF
// file: <strerror>" (server.c writeCommandsGetDiskErrorMessage).
func (a *AOF) WriteError() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.lastErr == nil {
		return ""
	}
	return "MISCONF Errors writing to the AOF file: " + Strerror(a.lastErr)
}

// SetFsync changes appendfsync (CONFIG SET). Switching to always fsyncs
// what was written before the next Commit returns.
func (a *AOF) SetFsync(p Fsync) {
	a.mu.Lock()
	a.policy = p
	a.mu.Unlock()
}

// FsyncPolicy is the current appendfsync.
func (a *AOF) FsyncPolicy() Fsync {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.policy
}

// SetAutoRewrite changes auto-aof-rewrite-percentage and -min-size.
func (a *AOF) SetAutoRewrite(percentage int, minSize int64) {
	a.mu.Lock()
	a.perc, a.minSize = percentage, minSize
	a.mu.Unlock()
}

// cron is the background goroutine: it writes records nobody committed,
// fsyncs once per FsyncInterval under everysec, retries a failed write or
// fsync, and starts automatic rewrites.
func (a *AOF) cron() {
	defer close(a.done)
	t := time.NewTicker(a.cfg.CronInterval)
	defer t.Stop()
	for {
		select {
		case <-a.stop:
			return
		case <-t.C:
		}
		a.cronOnce()
	}
}

// cronOnce is one round of cron: under always, or while the file fails, it
// writes and fsyncs (retrying, repairing) synchronously; under everysec,
// once FsyncInterval has passed since the last fsync began, it asks syncer
// for a background fsync (none while one runs); otherwise it writes the
// records nobody committed. Then it checks for an automatic rewrite.
func (a *AOF) cronOnce() {
	a.mu.Lock()
	pending := len(a.buf) > 0
	failing := a.lastErr != nil
	policy := a.policy
	fsyncing := a.fsyncing
	a.mu.Unlock()
	switch {
	case policy == FsyncAlways || failing:
		a.smu.Lock()
		a.wmu.Lock()
		if pending || failing || a.needRepair || policy == FsyncAlways {
			_ = a.flush(policy == FsyncAlways)
		}
		a.wmu.Unlock()
		a.smu.Unlock()
	case policy == FsyncEverySec && !fsyncing && a.fsyncDue():
		select {
		case a.syncReq <- struct{}{}:
		default: // one is asked for already
		}
	case pending:
		a.wmu.Lock()
		_ = a.write(policy, true)
		a.wmu.Unlock()
	}
	a.maybeAutoRewrite()
}

// fsyncDue reports whether FsyncInterval has passed since the last fsync
// began.
func (a *AOF) fsyncDue() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cfg.now().Sub(a.lastSyncAt) >= a.cfg.FsyncInterval
}

func (a *AOF) maybeAutoRewrite() {
	a.mu.Lock()
	start := false
	if a.waiting && !a.rewriting && !a.closing && time.Since(a.lastRwFailure) >= time.Second {
		start = true // the first file of StartFromKeyspace, again
	} else if !a.rewriting && !a.closing && a.perc > 0 && a.curSize > a.minSize && a.cfg.Store != nil &&
		(a.rwFailures == 0 || time.Since(a.lastRwFailure) >= time.Minute) {
		base := max(a.baseSize, 1)
		growth := a.curSize*100/base - 100
		if growth >= int64(a.perc) {
			start = true
			a.log.Info(fmt.Sprintf("Starting automatic rewriting of AOF on %d%% growth", growth))
		}
	}
	a.mu.Unlock()
	if start {
		_ = a.StartRewrite()
	}
}

// Cancel stops any rewrite from starting or finishing (one past its last
// check finishes its rename first) and returns at once; it may be called
// under the store lock. Close must still be called (CONFIG SET appendonly
// no: Cancel under the lock, Close in the background).
func (a *AOF) Cancel() {
	a.mu.Lock()
	a.closing = true
	a.rwCancel.Store(true)
	a.mu.Unlock()
}

// Close stops the background work (a running rewrite is abandoned and its
// temporary file removed), writes and fsyncs everything buffered, whatever
// the policy (SHUTDOWN, SIGTERM), and closes the file. The error is the
// final write's or fsync's.
func (a *AOF) Close() error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil
	}
	a.closed, a.closing = true, true
	a.rwCancel.Store(true)
	rwDone := a.rwDone
	a.mu.Unlock()
	if a.stop != nil {
		close(a.stop)
		<-a.done
		<-a.syncDone
	}
	if rwDone != nil {
		<-rwDone
	}
	a.smu.Lock()
	defer a.smu.Unlock()
	a.wmu.Lock()
	defer a.wmu.Unlock()
	if a.f == nil {
		return nil
	}
	err := a.flush(true)
	if cerr := a.f.Close(); err == nil {
		err = cerr
	}
	a.f = nil
	return err
}

// Sync writes and fsyncs everything appended so far, whatever the policy.
func (a *AOF) Sync() error {
	a.smu.Lock()
	defer a.smu.Unlock()
	a.wmu.Lock()
	defer a.wmu.Unlock()
	return a.flush(true)
}
