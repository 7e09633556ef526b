package server

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emqd/emqd/internal/store"
	"github.com/emqd/emqd/internal/store/aof"
	"github.com/emqd/emqd/internal/store/rdb"
)

// RDB snapshots (docs/durability.md §9): dump.rdb in dir, written by SAVE
// (in the foreground, under the store lock, as Valkey's SAVE blocks),
// BGSAVE and the save points (a copy-on-write capture under the lock, the
// file written without it), and the final save at shutdown when save
// points are set; loaded at start when appendonly is no. A save writes
// temp-<pid>.rdb, fsyncs it, renames it over dbfilename and fsyncs the
// directory, so a failure at any step (a full disk, a torn write, kill -9)
// leaves the previous snapshot as it was.

// errMisconfRDB is Valkey's refusal of writes after a failed background
// save with stop-writes-on-bgsave-error yes (server.c).
const errMisconfRDB = "MISCONF Valkey is configured to save RDB snapshots, but it's currently unable to persist to disk. " +
	"Commands that may modify the data set are disabled, because this instance is configured to report errors during " +
	"writes if RDB snapshotting fails (stop-writes-on-bgsave-error option). Please check the Valkey logs for details about the RDB error."

// bgsaveRetryMs is how long after a failed background save the save points
// wait before trying again (Valkey's CONFIG_BGSAVE_RETRY_DELAY, 5 s).
const bgsaveRetryMs = 5000

// saver is a server's RDB state (Server.rdb).
type saver struct {
	s  *Server
	fs aof.FS

	mu        sync.Mutex // guards what follows
	running   bool
	cur       *bgSave // the running background save, nil when none
	scheduled bool
	bgStart   time.Time
	lastSave  int64 // Unix s of the last successful save (or of the start)
	// lastOK is rdb_last_bgsave_status: written under mu, read without it
	// by the write gate (writeError), which every write command asks.
	lastOK    atomic.Bool
	lastBgSec int64
	lastTryMs int64 // server clock of the last background save begun
	saves     int64
	dirtyBase int64 // store.DirtyCount as of the last successful save
	loaded    int64
	expired   int64
	keysTotal int64
	keysDone  atomic.Int64
	finalDone atomic.Bool // the final save before exiting ran (finalSaveLocked)
	// capturing is the background save that captures the keyspace in
	// chunks, nil when none (guarded by the store lock, not mu): FLUSHALL,
	// which runs under that lock, aborts that capture at once
	// (stopBGLocked).
	capturing *bgSave
	stop      chan struct{}
	stopped   bool
	// beforeStep, when set (tests only), runs before each capture chunk
	// takes the store lock: a test holds a save in its capture with it.
	beforeStep func()
}

// bgSave is one background save: each has its own stop flag, so a save
// stopped while capturing, whose goroutine has not yet noticed, cannot stop
// or be mistaken for the next one.
type bgSave struct {
	cancel atomic.Bool // stops it (FLUSHALL, the final save)
	capt   *rdb.Capturer
	done   chan struct{} // closed when its goroutine ends
}

// savePoint is one "seconds changes" pair of the save directive.
type savePoint struct{ sec, changes int64 }

// savePoints parses the save directive's value (checked already).
func savePoints(v string) []savePoint {
	f := strings.Fields(v)
	var out []savePoint
	for i := 0; i+1 < len(f); i += 2 {
		out = append(out, savePoint{atoi(f[i]), atoi(f[i+1])})
	}
	return out
}

// startRDB wires RDB persistence (startPersistence calls it): the load at
// start when appendonly is no, SAVE/BGSAVE/LASTSAVE, the save points, the
// write gate's RDB part, INFO's rdb_* fields, the final save at shutdown.
func (s *Server) startRDB(fsys aof.FS, loadFile bool) error {
	r := &saver{s: s, fs: fsys, lastBgSec: -1, stop: make(chan struct{})}
	r.lastOK.Store(true)
	if r.fs == nil {
		r.fs = aof.OSFS{}
	}
	s.rdb = r
	s.dumpCompress.Store(s.Config("rdbcompression") == "yes")
	s.OnConfigSet("rdbcompression", func(v string) error { s.dumpCompress.Store(v == "yes"); return nil })
	dir, err := filepath.Abs(s.Config("dir"))
	if err != nil {
		return err
	}
	s.cfg.set(nil, "dir", dir, true)
	r.removeTemps(dir)
	if loadFile {
		if err := r.load(); err != nil {
			return err
		}
	}
	r.lastSave = s.clock.NowMs() / 1000
	r.dirtyBase = s.store.DirtyCount
	go r.cron()
	s.OnClose(r.close)
	return nil
}

func (r *saver) path() string {
	return filepath.Join(r.s.Config("dir"), r.s.Config("dbfilename"))
}

// tempRe matches the temporary files of saves (temp-<pid>.rdb).
var tempRe = regexp.MustCompile(`^temp-[0-9]+\.rdb$`)

// removeTemps removes temporary files a killed save left in dir.
func (r *saver) removeTemps(dir string) {
	names, err := r.fs.ReadDir(dir)
	if err != nil {
		return
	}
	for _, n := range names {
		if tempRe.MatchString(n) {
			_ = r.fs.Remove(filepath.Join(dir, n))
		}
	}
}

// load reads dbfilename into the empty store: the whole file is read and
// checked first, then stored, so a refused file stores nothing. Keys whose
// expire time has passed are dropped (Valkey's rdb_last_load_keys_expired).
func (r *saver) load() error {
	s := r.s
	path := r.path()
	names, err := r.fs.ReadDir(s.Config("dir"))
	if err != nil || !slices.Contains(names, s.Config("dbfilename")) {
		return nil // no file: an empty keyspace (first start)
	}
	f, err := r.fs.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("Fatal error: can't open the RDB file %s for reading: %w", path, err)
	}
	defer f.Close()
	var in io.Reader = f
	size := int64(-1)
	if st, ok := f.(interface{ Stat() (os.FileInfo, error) }); ok {
		if fi, err := st.Stat(); err == nil {
			size = fi.Size()
		}
	}
	if size < 0 {
		b, err := io.ReadAll(f)
		if err != nil {
			return err
		}
		in, size = bytes.NewReader(b), int64(len(b))
	}
	start := time.Now()
	var keys []rdb.Key
	_, err = rdb.Load(bufio.NewReaderSize(in, 1<<16), size, s.store, rdb.Limits{DBs: s.store.NumDBs()},
		s.Config("rdbchecksum") == "yes", func(k rdb.Key) error {
			keys = append(keys, k)
			return nil
		})
	if err != nil {
		return &RDBLoadError{Path: path, Err: err}
	}
	st := s.store
	st.Lock()
	now := s.clock.NowMs()
	st.SetNow(now)
	for _, k := range keys {
		db := st.DB(k.DB)
		if k.ExpireAt != 0 && k.ExpireAt < now {
			r.expired++
			continue
		}
		if db.Peek(k.Key) != nil {
			st.Unlock()
			return &RDBLoadError{Path: path, Err: fmt.Errorf("RDB has duplicated key '%s' in DB %d", k.Key, k.DB)}
		}
		db.Put(k.Key, k.Value)
		if k.ExpireAt != 0 {
			db.SetExpire(k.Key, k.ExpireAt)
		}
		if k.IdleSec >= 0 {
			st.SetIdleMs(k.Value, k.IdleSec*1000)
		}
		r.loaded++
	}
	st.Unlock()
	s.log.Info(fmt.Sprintf("Done loading RDB, keys loaded: %d, keys expired: %d.", r.loaded, r.expired))
	s.log.Info(fmt.Sprintf("DB loaded from disk: %.3f seconds", time.Since(start).Seconds()))
	return nil
}

// RDBLoadError is Start's error for a dump.rdb it refuses to load.
type RDBLoadError struct {
	Path string
	Err  error
}

func (e *RDBLoadError) Error() string { return e.Err.Error() + " (loading " + e.Path + ")" }
func (e *RDBLoadError) Unwrap() error { return e.Err }

// aux is the header's aux fields, as Valkey 8.0.1 writes them.
func (r *saver) aux() [][2]string { return r.s.rdbAux(false) }

// rdbAux is an RDB header's aux fields, as Valkey 8.0.1 writes them
// (rdbSaveInfoAuxFields), then emqd-ver: aof-base is 1 in an AOF's RDB
// preamble.
func (s *Server) rdbAux(aofBase bool) [][2]string {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := "0"
	if aofBase {
		base = "1"
	}
	// valkey-ver is the Valkey release whose format and behaviour the file
	// has (what tools reading it gate on, docs/durability.md §9.3); emqd's
	// own version goes in emqd-ver, an aux field Valkey skips.
	return [][2]string{
		{"valkey-ver", valkeyVersion},
		{"redis-bits", strconv.Itoa(strconv.IntSize)},
		{"ctime", strconv.FormatInt(s.clock.NowMs()/1000, 10)},
		{"used-mem", strconv.FormatUint(ms.HeapAlloc, 10)},
		{"aof-base", base},
		{"emqd-ver", Version},
	}
}

// write writes snap to a temporary file in dir, fsyncs it, renames it over
// dbfilename and fsyncs the directory; on any error the temporary file is
// removed and the old dump.rdb is left as it was.
func (r *saver) write(snap *rdb.Snapshot, delayUs int64, bg *bgSave) (err error) {
	s := r.s
	dir := s.Config("dir")
	tmp := filepath.Join(dir, fmt.Sprintf("temp-%d.rdb", os.Getpid()))
	// dir is created as the AOF creates it (docs/durability.md §9.3):
	// emqd's default dir, ./data, does not exist until something is
	// written, and with appendonly no the save points are the first
	// writer (without this every save failed and writes answered MISCONF).
	if err := r.fs.MkdirAll(dir); err != nil {
		s.log.Warn(fmt.Sprintf("Failed creating the server root dir %s for saving: %s", dir, aof.Strerror(err)))
		return err
	}
	f, err := r.fs.Create(tmp)
	if err != nil {
		s.log.Warn(fmt.Sprintf("Failed opening the temp RDB file %s (in server root dir %s) for saving: %s", filepath.Base(tmp), dir, aof.Strerror(err)))
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			_ = r.fs.Remove(tmp)
		}
	}()
	opts := rdb.Options{Compress: s.Config("rdbcompression") == "yes", Checksum: s.Config("rdbchecksum") == "yes"}
	progress := func(n int) bool {
		r.keysDone.Store(int64(n))
		if delayUs > 0 {
			time.Sleep(time.Duration(delayUs) * time.Microsecond)
		}
		// Only a background save is stopped by cancel (FLUSHALL, the
		// shutdown); SAVE and the final save run to the end.
		return bg == nil || !bg.cancel.Load()
	}
	if _, err = snap.WriteTo(fileWriter{f}, opts, r.aux(), progress); err != nil {
		s.log.Warn("Write error saving DB on disk: " + aof.Strerror(err))
		return err
	}
	if err = f.Sync(); err != nil {
		s.log.Warn("Write error saving DB on disk: " + aof.Strerror(err))
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = r.fs.Rename(tmp, r.path()); err != nil {
		s.log.Warn(fmt.Sprintf("Error moving temp DB file %s on the final destination %s (in server root dir %s): %s",
			filepath.Base(tmp), s.Config("dbfilename"), dir, aof.Strerror(err)))
		_ = r.fs.Remove(tmp)
		return err
	}
	if err := r.fs.SyncDir(dir); err != nil {
		// The file is complete under its name; only the rename may not
		// survive a power loss.
		s.log.Warn("Failed to fsync the directory after saving the DB: " + aof.Strerror(err))
	}
	return nil
}

// saveNow is SAVE and the shutdown save: capture and write in the
// foreground. Call under the store lock (SAVE) or with it free (locked
// false).
func (r *saver) saveNow(locked bool) error {
	s := r.s
	if !locked {
		s.store.Lock()
	}
	snap := rdb.Take(s.store)
	dirty := s.store.DirtyCount
	if !locked {
		s.store.Unlock()
	}
	r.mu.Lock()
	r.keysTotal = int64(snap.Keys())
	r.mu.Unlock()
	err := r.write(snap, 0, nil)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		return err
	}
	r.lastSave = s.clock.NowMs() / 1000
	r.lastOK.Store(true)
	r.saves++
	r.dirtyBase = dirty
	s.log.Info("DB saved on disk")
	return nil
}

// startBG starts a background save (call under the store lock): false
// when one is running.
func (r *saver) startBG() bool {
	s := r.s
	r.mu.Lock()
	if r.running {
		r.mu.Unlock()
		return false
	}
	// The capture runs in chunks (docs/durability.md §9.2): the store lock
	// is taken for one chunk at a time, and the snapshot is the keyspace
	// at the cut.
	me := &bgSave{capt: rdb.Begin(s.store), done: make(chan struct{})}
	r.running, r.scheduled, r.cur = true, false, me
	r.keysDone.Store(0) // before INFO can see running: no count of the last save
	r.bgStart = time.Now()
	r.lastTryMs = s.clock.NowMs()
	r.mu.Unlock()
	r.capturing = me
	delay := s.configInt("rdb-key-save-delay")
	s.log.Info(fmt.Sprintf("Background saving started by pid %d", os.Getpid()))
	go func() {
		defer close(me.done)
		snap, dirty, err := r.capture(me)
		if err == nil {
			err = r.write(snap, delay, me)
		}
		r.mu.Lock()
		if r.cur != me {
			// Stopped while capturing (stopBGLocked already ended it).
			r.mu.Unlock()
			return
		}
		r.running, r.cur = false, nil
		r.lastBgSec = int64(time.Since(r.bgStart) / time.Second)
		switch {
		case err == nil:
			r.lastOK.Store(true)
			r.lastSave = s.clock.NowMs() / 1000
			r.saves++
			r.dirtyBase = dirty
		case errors.Is(err, rdb.ErrCanceled):
			// Stopped by FLUSHALL, as Valkey's killRDBChild: the status
			// stays as it was.
		default:
			r.lastOK.Store(false)
		}
		r.mu.Unlock()
		if err == nil {
			s.log.Info("DB saved on disk")
			s.log.Info("Background saving terminated with success")
		} else if errors.Is(err, rdb.ErrCanceled) {
			s.log.Info("Background saving stopped: the data set was flushed")
		} else {
			s.log.Warn("Background saving error: " + aof.Strerror(err))
		}
	}()
	return true
}

// stopBGLocked stops the running background save, if any (store lock
// held), as Valkey's killRDBChild: when it returns no save runs
// (rdb_bgsave_in_progress is 0 and BGSAVE may start another) and none will
// write dump.rdb. A save still capturing needs the store lock for its next
// chunk, so it is aborted here at once and its goroutine, on waking, finds
// its stop flag and ends without touching the saver; a save already
// writing stops at its next key and is waited for.
func (r *saver) stopBGLocked() {
	r.mu.Lock()
	cur := r.cur
	if cur == nil {
		r.mu.Unlock()
		return
	}
	cur.cancel.Store(true)
	if r.capturing == cur {
		cur.capt.Abort()
		r.capturing = nil
		r.running, r.cur = false, nil
		r.lastBgSec = int64(time.Since(r.bgStart) / time.Second)
		r.mu.Unlock()
		r.s.log.Info("Background saving stopped: the data set was flushed")
		return
	}
	r.mu.Unlock()
	<-cur.done
}

// capture runs a chunked capture to its cut, taking the store lock per
// chunk; it returns the snapshot and the change count at the cut, or
// rdb.ErrCanceled when FLUSHALL stopped the save meanwhile. The log line
// gives the keys, the whole capture's time and the longest lock hold.
func (r *saver) capture(me *bgSave) (*rdb.Snapshot, int64, error) {
	s := r.s
	c := me.capt
	start := time.Now()
	var longest time.Duration
	for steps := 1; ; steps++ {
		if r.beforeStep != nil {
			r.beforeStep()
		}
		s.store.Lock()
		t := time.Now()
		if me.cancel.Load() {
			c.Abort()
			if r.capturing == me {
				r.capturing = nil
			}
			s.store.Unlock()
			return nil, 0, rdb.ErrCanceled
		}
		var snap *rdb.Snapshot
		var dirty int64
		if c.Step() {
			snap, dirty = c.Finish(), s.store.DirtyCount
			r.capturing = nil
		}
		longest = max(longest, time.Since(t))
		s.store.Unlock()
		if snap != nil {
			n := snap.Keys()
			r.mu.Lock()
			r.keysTotal = int64(n)
			r.mu.Unlock()
			s.log.Info("Background saving captured the keyspace", "keys", n, "steps", steps,
				"capture_ms", fmt.Sprintf("%.1f", float64(time.Since(start).Microseconds())/1000),
				"longest_lock_ms", fmt.Sprintf("%.2f", float64(longest.Microseconds())/1000))
			return snap, dirty, nil
		}
	}
}

// wait blocks until the running background save (if any) ends.
func (r *saver) wait() {
	r.mu.Lock()
	cur := r.cur
	r.mu.Unlock()
	if cur != nil {
		<-cur.done
	}
}

// changes is rdb_changes_since_last_save (it reads the store's count
// under the store lock).
func (r *saver) changes() int64 {
	r.s.store.Lock()
	dirty := r.s.store.DirtyCount
	r.s.store.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	return dirty - r.dirtyBase
}

// stat reads one field under r.mu (the metrics).
func (r *saver) stat(f func(r *saver) int64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return f(r)
}

// cron checks the save points and a scheduled BGSAVE ten times a second
// (on the server clock: EMQ.DEBUG CLOCK ADVANCE or a manual clock moves
// them), as Valkey's serverCron does.
func (r *saver) cron() {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
		}
		r.tick()
	}
}

// tick is one pass of cron: a background save starts when one is
// scheduled, or when a save point is reached (at least its changes since
// the last save, at least its seconds since the last save) and the last
// background save succeeded or was tried more than 5 s ago.
func (r *saver) tick() {
	s := r.s
	s.store.Lock()
	defer s.store.Unlock()
	now := s.clock.NowMs()
	r.mu.Lock()
	if r.running || r.stopped {
		r.mu.Unlock()
		return
	}
	due := r.scheduled
	changes := s.store.DirtyCount - r.dirtyBase
	for _, p := range savePoints(s.Config("save")) {
		if changes >= p.changes && now/1000-r.lastSave > p.sec && (r.lastOK.Load() || now-r.lastTryMs > bgsaveRetryMs) {
			s.log.Info(fmt.Sprintf("%d changes in %d seconds. Saving...", p.changes, p.sec))
			due = true
			break
		}
	}
	r.mu.Unlock()
	if due {
		r.startBG()
	}
}

// writeError is the RDB part of the write gate: Valkey's MISCONF after a
// failed background save, with stop-writes-on-bgsave-error yes and save
// points set. Without a lock: it runs before every write command.
func (r *saver) writeError() string {
	if r.lastOK.Load() || r.s.Config("stop-writes-on-bgsave-error") != "yes" || r.s.Config("save") == "" {
		return ""
	}
	return errMisconfRDB
}

// close is the shutdown: the running background save is waited for, then
// with save points set (or SHUTDOWN SAVE), unless SHUTDOWN NOSAVE, a final
// save.
func (r *saver) close() error {
	r.mu.Lock()
	r.stopped = true
	r.mu.Unlock()
	close(r.stop)
	r.wait()
	mode := r.s.shutdownSave.Load()
	if r.finalDone.Load() || mode < 0 || (mode == 0 && r.s.Config("save") == "") {
		return nil
	}
	r.s.log.Info("Saving the final RDB snapshot before exiting.")
	if err := r.saveNow(false); err != nil {
		r.s.log.Warn("Error trying to save the DB, can't exit: " + aof.Strerror(err))
		return err
	}
	return nil
}

// finalSaveLocked is the save before exiting as Valkey's
// prepareForShutdown does it, before anything is closed (store lock held):
// with save points set (or SHUTDOWN SAVE), unless SHUTDOWN NOSAVE, a
// running background save is stopped and the snapshot written in the
// foreground. When that fails, without force the shutdown is cancelled
// and the server goes on serving, as Valkey's ("Error trying to save the
// DB, can't exit."): the caller answers SHUTDOWN with Valkey's error, or
// keeps running after SIGTERM; with force (SHUTDOWN FORCE) it exits anyway.
// Once it has run, close does not save again.
func (r *saver) finalSaveLocked(mode int32, force bool) error {
	s := r.s
	if mode < 0 || (mode == 0 && s.Config("save") == "") {
		r.finalDone.Store(true)
		return nil
	}
	r.stopBGLocked()
	s.log.Info("Saving the final RDB snapshot before exiting.")
	if err := r.saveNow(true); err != nil {
		if force {
			s.log.Warn("Error trying to save the DB. Exit anyway.")
			r.finalDone.Store(true)
			return nil
		}
		s.log.Warn("Error trying to save the DB, can't exit.")
		s.log.Warn("Errors trying to shut down the server. Check the logs for more information.")
		return err
	}
	r.finalDone.Store(true)
	return nil
}

// PrepareShutdown is the first step of a shutdown by signal (SIGTERM,
// SIGINT; cmd/emqd), as Valkey's prepareForShutdown: the final RDB save
// (docs/durability.md §9.1). A non-nil error means that save failed: the
// shutdown is cancelled and the server keeps serving (Valkey 8.0.1 does
// the same, logging "Error trying to save the DB, can't exit."); the
// caller does not Close it.
func (s *Server) PrepareShutdown() error {
	if s.rdb == nil {
		return nil
	}
	s.store.Lock()
	defer s.store.Unlock()
	return s.rdb.finalSaveLocked(s.shutdownSave.Load(), false)
}

// info overrides the rdb_* fields of INFO persistence.
func (r *saver) info(kv [][2]string) [][2]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := func(v bool) string {
		if v {
			return "1"
		}
		return "0"
	}
	status := "ok"
	if !r.lastOK.Load() {
		status = "err"
	}
	cur := int64(-1)
	processed, total := int64(0), int64(0)
	if r.running {
		cur = int64(time.Since(r.bgStart) / time.Second)
		processed, total = r.keysDone.Load(), r.keysTotal
	}
	i := func(n int64) string { return strconv.FormatInt(n, 10) }
	vals := map[string]string{
		"current_save_keys_processed": i(processed),
		"current_save_keys_total":     i(total),
		"rdb_changes_since_last_save": i(r.s.store.DirtyCount - r.dirtyBase),
		"rdb_bgsave_in_progress":      b(r.running),
		"rdb_last_save_time":          i(r.lastSave),
		"rdb_last_bgsave_status":      status,
		"rdb_last_bgsave_time_sec":    i(r.lastBgSec),
		"rdb_current_bgsave_time_sec": i(cur),
		"rdb_saves":                   i(r.saves),
		"rdb_last_load_keys_expired":  i(r.expired),
		"rdb_last_load_keys_loaded":   i(r.loaded),
	}
	for j := range kv {
		if v, ok := vals[kv[j][0]]; ok {
			kv[j][1] = v
		}
	}
	return kv
}

// fileWriter adapts aof.File to io.Writer.
type fileWriter struct{ f aof.File }

func (w fileWriter) Write(p []byte) (int, error) { return w.f.Write(p) }

// SAVE: the snapshot written in the foreground (the server waits, as
// Valkey's SAVE blocks it); "Background save already in progress" while a
// BGSAVE runs; "ERR" when the write failed.
func cmdSave(c *client, x *store.Ctx) {
	r := c.s.rdb
	r.mu.Lock()
	running := r.running
	r.mu.Unlock()
	if running {
		x.W.Error("ERR Background save already in progress")
		return
	}
	if err := r.saveNow(true); err != nil {
		x.W.Error("ERR")
		return
	}
	x.W.OK()
}

// BGSAVE [SCHEDULE]: "Background saving started"; while one runs,
// "Background save already in progress" (also with SCHEDULE, as Valkey);
// inside EXEC it is scheduled ("Background saving scheduled") and starts
// at the next check.
func cmdBGSave(c *client, x *store.Ctx) {
	if len(x.Argv) > 2 || (len(x.Argv) == 2 && !strings.EqualFold(string(x.Argv[1]), "schedule")) {
		x.W.Error(store.ErrSyntax)
		return
	}
	r := c.s.rdb
	r.mu.Lock()
	running := r.running
	if !running && x.InMulti {
		r.scheduled = true
	}
	r.mu.Unlock()
	switch {
	case running:
		x.W.Error("ERR Background save already in progress")
	case x.InMulti:
		x.W.Simple("Background saving scheduled")
	case r.startBG():
		x.W.Simple("Background saving started")
	default:
		x.W.Error("ERR Background save already in progress")
	}
}

// LASTSAVE: the Unix time (s, server clock) of the last successful save,
// or of the start.
func cmdLastSave(c *client, x *store.Ctx) {
	r := c.s.rdb
	r.mu.Lock()
	defer r.mu.Unlock()
	x.W.Int(r.lastSave)
}

// wrapFlushAll makes FLUSHALL persist at once when save points are set,
// as Valkey's flushAllDataAndResetRDB: a running background save is
// stopped (its snapshot predates the flush) and an empty dump.rdb is
// written in the foreground, so a restart does not bring the flushed keys
// back.
func (s *Server) wrapFlushAll() {
	e := s.reg.cmds["flushall"]
	if e == nil || e.handler == nil {
		return
	}
	orig := e.handler
	e.handler = func(x *store.Ctx) {
		orig(x)
		if len(x.W.Buf) > 0 && x.W.Buf[len(x.W.Buf)-1] == '\n' && strings.HasSuffix(string(x.W.Buf), "+OK\r\n") &&
			s.rdb != nil && s.Config("save") != "" && !s.store.Loading() {
			s.rdb.stopBGLocked()
			if err := s.rdb.saveNow(true); err != nil {
				s.log.Warn("Saving the flushed data set failed: " + aof.Strerror(err))
			}
		}
	}
}
