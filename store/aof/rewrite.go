package aof

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/emqd/emqd/store"
)

// rewriteItemsPerCmd is how many field/value pairs or members one rewritten
// HSET/ZADD carries (Valkey's AOF_REWRITE_ITEMS_PER_CMD).
const rewriteItemsPerCmd = 64

// catchUpSmall: once the records appended during a rewrite that are still
// to be copied fit in this many bytes, the rewrite finishes with the writers
// paused (Append blocks) for one small write, two fsyncs and a rename.
const catchUpSmall = 256 << 10

var errRewriteCanceled = errors.New("rewrite canceled by shutdown")

// StartRewrite starts a background rewrite (BGREWRITEAOF): it returns
// ErrRewriteInProgress when one is running, nil when it started. The
// rewrite snapshots the keyspace under the store lock (store.Snapshot),
// writes it as HSET/ZADD/SET commands to a temporary file in Dir without the
// lock, copies the records appended meanwhile, fsyncs, renames the file over
// the AOF and fsyncs the directory. Until the rename the old file is the
// AOF, complete; after it the new one is. Outcome: RewriteStatus, the log.
func (a *AOF) StartRewrite() error {
	a.mu.Lock()
	if a.closed || a.cfg.Store == nil {
		a.mu.Unlock()
		return errClosed
	}
	if a.rewriting {
		a.mu.Unlock()
		return ErrRewriteInProgress
	}
	a.rewriting = true
	a.rwStart = time.Now()
	a.rwDone = make(chan struct{})
	done := a.rwDone
	a.mu.Unlock()
	a.log.Info("Background append only file rewriting started")
	go func() {
		err := a.rewrite()
		a.mu.Lock()
		a.rw = nil
		a.rewriting = false
		a.lastRwSec = int64(time.Since(a.rwStart) / time.Second)
		if err == nil {
			a.lastRwOK = true
			a.rewrites++
			a.rwFailures = 0
		} else {
			a.lastRwOK = false
			a.rwFailures++
			a.lastRwFailure = time.Now()
		}
		a.mu.Unlock()
		if err == nil {
			a.log.Info("Background AOF rewrite finished successfully")
		} else {
			a.log.Warn("Background AOF rewrite terminated with error: " + err.Error())
		}
		close(done)
	}()
	return nil
}

// WaitRewrite blocks until the running rewrite (if any) has finished.
func (a *AOF) WaitRewrite() {
	a.mu.Lock()
	done := a.rwDone
	a.mu.Unlock()
	if done != nil {
		<-done
	}
}

func (a *AOF) hook(step string) error {
	if a.cfg.Hook == nil {
		return nil
	}
	return a.cfg.Hook(step)
}

func (a *AOF) rewrite() (err error) {
	tmp := filepath.Join(a.cfg.Dir, fmt.Sprintf("temp-rewriteaof-bg-%d.aof", os.Getpid()))
	st := a.cfg.Store
	st.Lock()
	snap := st.Snapshot()
	a.mu.Lock()
	a.rw = &rewriteBuf{selDB: -1}
	a.mu.Unlock()
	st.Unlock()

	var f File
	switched := false
	defer func() {
		if switched {
			return
		}
		a.mu.Lock()
		a.rw = nil
		a.mu.Unlock()
		if f != nil {
			f.Close()
			_ = a.fs.Remove(tmp)
		}
	}()
	if err := a.hook("snapshot"); err != nil {
		return err
	}
	f, err = a.fs.Create(tmp)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(fileWriter{f}, 1<<20)
	if err := a.writeSnapshot(w, snap); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := a.hook("written"); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := a.hook("synced"); err != nil {
		return err
	}
	// Copy the records appended meanwhile until what is left is small.
	for range 16 {
		if a.rwCancel.Load() {
			return errRewriteCanceled
		}
		a.mu.Lock()
		chunk := a.rw.buf
		a.rw.buf = nil
		a.mu.Unlock()
		if _, err := f.Write(chunk); err != nil {
			return err
		}
		if len(chunk) <= catchUpSmall {
			break
		}
	}
	if err := a.hook("caught-up"); err != nil {
		return err
	}

	// The switch: writers wait (wmu, then mu, so Append blocks) while the
	// last records are copied, the file is made durable and renamed.
	a.wmu.Lock()
	defer a.wmu.Unlock()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f == nil {
		return errClosed
	}
	if _, err := f.Write(a.rw.buf); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	size, err := f.Size()
	if err != nil {
		return err
	}
	if err := a.hook("before-rename"); err != nil {
		return err
	}
	if err := a.fs.Rename(tmp, a.path); err != nil {
		return err
	}
	// From here the new file is the AOF: switch to it whatever happens.
	switched = true
	old := a.f
	a.f = f
	a.fileSize, a.syncedSize = size, size
	a.unsynced, a.complete, a.needRepair = nil, true, false
	a.buf = nil // every buffered record is in the new file
	a.written, a.synced = a.appended, a.appended
	a.selDB = a.rw.selDB
	a.rw = nil
	a.curSize, a.baseSize = size, size
	a.writeErr, a.syncErr, a.lastErr = nil, nil, nil
	a.needDirSync = true
	old.Close()
	if err := a.hook("renamed"); err != nil {
		return err
	}
	if err := a.fs.SyncDir(a.cfg.Dir); err != nil {
		// The rename may not survive a power loss: refuse writes until a
		// directory fsync succeeds (sync retries it).
		a.syncErr = err
		a.failLocked(err, "Fail to fsync the AOF directory: "+Strerror(err))
		return err
	}
	a.needDirSync = false
	return a.hook("done")
}

// writeSnapshot writes snap as commands: per non-empty database a SELECT,
// then per key SET, or HSET / ZADD with up to rewriteItemsPerCmd items each
// (Valkey's rewriteAppendOnlyFileRio, with HSET for HMSET).
func (a *AOF) writeSnapshot(w *bufio.Writer, snap *store.Snapshot) error {
	var b []byte
	argv := make([][]byte, 0, 2+2*rewriteItemsPerCmd)
	var scores []byte
	n := 0
	for _, d := range snap.DBs {
		b = appendSelect(b[:0], d.Index)
		if _, err := w.Write(b); err != nil {
			return err
		}
		for i := range d.Keys {
			k := &d.Keys[i]
			if n++; n%1024 == 0 && a.rwCancel.Load() {
				return errRewriteCanceled
			}
			key := []byte(k.Key)
			b = b[:0]
			switch k.Kind {
			case store.KindString:
				b = AppendCommand(b, [][]byte{[]byte("SET"), key, k.Str})
			case store.KindHash:
				argv = append(argv[:0], []byte("HSET"), key)
				k.RangeHash(func(field string, value []byte) bool {
					argv = append(argv, []byte(field), value)
					if len(argv) == 2+2*rewriteItemsPerCmd {
						b = AppendCommand(b, argv)
						argv = argv[:2]
					}
					return true
				})
				if len(argv) > 2 {
					b = AppendCommand(b, argv)
				}
			case store.KindZSet:
				argv = append(argv[:0], []byte("ZADD"), key)
				scores = scores[:0]
				k.RangeZSet(func(it store.ZItem) bool {
					st := len(scores)
					scores = FormatScore(scores, it.Score)
					argv = append(argv, scores[st:len(scores):len(scores)], []byte(it.Member))
					if len(argv) == 2+2*rewriteItemsPerCmd {
						b = AppendCommand(b, argv)
						argv = argv[:2]
						scores = scores[:0]
					}
					return true
				})
				if len(argv) > 2 {
					b = AppendCommand(b, argv)
				}
			}
			if _, err := w.Write(b); err != nil {
				return err
			}
		}
	}
	return nil
}

// fileWriter adapts File to io.Writer for bufio.
type fileWriter struct{ f File }

func (w fileWriter) Write(p []byte) (int, error) { return w.f.Write(p) }
