package server

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/emqd/emqd/internal/resp"
	"github.com/emqd/emqd/internal/store/aof"
)

// Persistence (docs/durability.md; docs/architecture.md §5): with appendonly yes
// the append-only file in dir is replayed before the listener opens, a new
// run_id is drawn after the replay, and from then on every write reaches
// the file through the store's Feed (Store.SetFeed); a batch that wrote is committed (appendfsync)
// before its replies go out; writes are refused with MISCONF while the file
// fails; BGREWRITEAOF and the automatic rewrite compact it; Close (SHUTDOWN,
// SIGTERM) fsyncs it. CONFIG SET appendonly turns it on (from a rewrite of
// the live keyspace, as Valkey) and off while serving.

// persistence is a server's append-only file state (Server.persist): cur
// is nil while appendonly is no.
type persistence struct {
	s   *Server
	fs  aof.FS // nil: the OS's file system
	cur atomic.Pointer[aof.AOF]
	// unlock releases the append-only file's directory lock (lockDir),
	// nil while none is held. Set before the first append, cleared by
	// close; the store lock or Start's single goroutine orders them.
	unlock func() error
}

// lockDir locks the directory the append-only file a lives in against a
// second server appending in it (docs/durability.md §1.1.1), once: the lock
// is held from the first append until the server closes, across CONFIG
// SET appendonly no and yes. Two servers appending to one file would
// interleave their records, and the next boot would replay neither
// history. A file system without locks (the tests' in-memory one) locks
// nothing.
func (p *persistence) lockDir(a *aof.AOF) error {
	if p.unlock != nil {
		return nil
	}
	fsys := p.fs
	if fsys == nil {
		fsys = aof.OSFS{}
	}
	l, ok := fsys.(aof.DirLocker)
	if !ok {
		return nil
	}
	dir := filepath.Dir(a.Path())
	if err := fsys.MkdirAll(dir); err != nil {
		return err
	}
	release, err := l.LockDir(dir)
	if errors.Is(err, aof.ErrDirLocked) {
		return fmt.Errorf("another server appends to the append only file in %s (the directory is locked): two servers must not share one dir", dir)
	}
	if err != nil {
		return fmt.Errorf("can't lock the append only file's directory %s: %w", dir, err)
	}
	p.unlock = release
	return nil
}

// AOF returns the server's append-only file, nil with appendonly no.
func (s *Server) AOF() *aof.AOF {
	if s.persist == nil {
		return nil
	}
	return s.persist.cur.Load()
}

// IsAOFLoadError reports whether err, from Start, says the append-only file
// could not be replayed (damaged or truncated beyond what aof-load-truncated
// allows).
func IsAOFLoadError(err error) bool {
	var le *aof.LoadError
	return errors.As(err, &le)
}

// startPersistence replays the append-only file (appendonly yes) and wires
// persistence into the server: the commit hook, the write gate, the
// BGREWRITEAOF hook, INFO persistence, the CONFIG SET hooks and the close
// hook. Start calls it before the listener opens; fsys nil is the OS's
// file system.
func (s *Server) startPersistence(fsys aof.FS) error {
	p := &persistence{s: s, fs: fsys}
	if s.Config("appendonly") == "yes" {
		a, err := p.boot()
		if err != nil {
			// A refused boot leaves the directory unlocked: an embedding
			// process may start a server on it again.
			if p.unlock != nil {
				p.unlock()
				p.unlock = nil
			}
			return err
		}
		p.cur.Store(a)
	}
	s.persist = p
	// dump.rdb is loaded when there is no AOF to replay (Valkey's
	// loadDataFromDisk).
	if err := s.startRDB(fsys, s.Config("appendonly") != "yes"); err != nil {
		return err
	}
	s.SetCommitHook(func() error {
		if a := p.cur.Load(); a != nil {
			return a.Commit()
		}
		return nil
	})
	s.SetWriteGate(func() string {
		if a := p.cur.Load(); a != nil {
			if msg := a.WriteError(); msg != "" {
				return msg
			}
		}
		return s.rdb.writeError()
	})
	s.SetRewriteHook(func() error {
		if a := p.cur.Load(); a != nil {
			return a.StartRewrite()
		}
		return errors.New("ERR Background append only file rewriting is not available: appendonly is off")
	})
	s.SetInfoSection("persistence", func(add func(field, value string)) {
		for _, kv := range s.rdb.info(aof.PersistenceInfo(p.cur.Load(), s.store.DirtyCount, s.started.Unix())) {
			add(kv[0], kv[1])
		}
	})
	s.OnConfigSet("appendonly", p.setAppendOnly)
	s.OnConfigSet("appendfsync", func(v string) error {
		pol, ok := aof.ParseFsync(v)
		if !ok {
			return fmt.Errorf("argument(s) must be one of the following: always, everysec, no")
		}
		if a := p.cur.Load(); a != nil {
			a.SetFsync(pol)
		}
		return nil
	})
	autoRewrite := func(string) error {
		if a := p.cur.Load(); a != nil {
			a.SetAutoRewrite(int(s.configInt("auto-aof-rewrite-percentage")), s.configInt("auto-aof-rewrite-min-size"))
		}
		return nil
	}
	s.OnConfigSet("auto-aof-rewrite-percentage", autoRewrite)
	s.OnConfigSet("auto-aof-rewrite-min-size", autoRewrite)
	s.OnClose(func() error {
		a := p.cur.Swap(nil)
		var err error
		if a != nil {
			s.log.Info("Calling fsync() on the AOF file.")
			err = a.Close()
		}
		if p.unlock != nil {
			err = errors.Join(err, p.unlock())
			p.unlock = nil
		}
		return err
	})
	return nil
}

// newAOF configures an AOF from the server's directives (dir made absolute,
// as Valkey reports it).
func (p *persistence) newAOF() (*aof.AOF, error) {
	s := p.s
	dir, err := filepath.Abs(s.Config("dir"))
	if err != nil {
		return nil, err
	}
	s.cfg.set(nil, "dir", dir, true)
	policy, _ := aof.ParseFsync(s.Config("appendfsync"))
	return aof.New(aof.Config{
		Dir:                   dir,
		Filename:              s.Config("appendfilename"),
		Fsync:                 policy,
		AutoRewritePercentage: int(s.configInt("auto-aof-rewrite-percentage")),
		AutoRewriteMinSize:    s.configInt("auto-aof-rewrite-min-size"),
		Store:                 s.store,
		Logger:                s.log,
		FS:                    p.fs,
		RefuseTruncated:       s.Config("aof-load-truncated") == "no",
		Preamble:              aofPreamble{s},
	}), nil
}

// boot replays the file and opens it for appending.
func (p *persistence) boot() (*aof.AOF, error) {
	s := p.s
	a, err := p.newAOF()
	if err != nil {
		return nil, err
	}
	if err := p.lockDir(a); err != nil {
		return nil, err
	}
	start := time.Now()
	// A Valkey 7+ multi-part AOF (appenddirname with its manifest) and no
	// file of emqd's own: the Valkey files are replayed, left as they are,
	// and emqd's file is made from the keyspace (docs/durability.md §8).
	valkeyFiles, err := p.valkeyAOFFiles(a.Path())
	if err != nil {
		return nil, err
	}
	var res aof.LoadResult
	if valkeyFiles != nil {
		res, err = s.replayValkeyAOF(a, valkeyFiles)
	} else {
		res, err = s.replayAOF(a)
	}
	if err != nil {
		return nil, err
	}
	if !res.Missing {
		s.log.Info(fmt.Sprintf("DB loaded from append only file: %.3f seconds", time.Since(start).Seconds()),
			"commands", res.Commands, "bytes", res.Size)
	}
	// The run_id is drawn after the replay (docs/verbs.md §1.5: leases
	// granted before the restart carry an old lease_epoch).
	s.runID = newRunID()
	if valkeyFiles != nil {
		s.store.Lock()
		err := a.StartFromKeyspace()
		if err == nil {
			s.store.SetFeed(a)
			s.store.SetNow(s.clock.NowMs())
			s.store.PurgeExpired()
		}
		s.store.Unlock()
		if err != nil {
			return nil, fmt.Errorf("can't create the append only file %s: %w", a.Path(), err)
		}
		// Serve only once emqd's own file holds the keyspace.
		a.WaitRewrite()
		s.log.Info("The append only file was made from Valkey's multi-part AOF", "file", a.Path(), "from", filepath.Dir(valkeyFiles[0]))
		return a, nil
	}
	if err := a.Start(); err != nil {
		return nil, fmt.Errorf("can't open the append only file %s: %w", a.Path(), err)
	}
	s.store.Lock()
	s.store.SetFeed(a)
	// Keys whose TTL passed while the server was down go now, recorded as
	// DEL (docs/durability.md §3).
	s.store.SetNow(s.clock.NowMs())
	if n := s.store.PurgeExpired(); n > 0 {
		s.log.Info("Expired keys deleted after loading the append only file", "keys", n)
	}
	s.store.Unlock()
	return a, nil
}

// errAOFOn is CONFIG SET appendonly yes's refusal when the file cannot be
// written (Valkey's text).
var errAOFOn = errors.New("Unable to turn on AOF. Check server logs.")

// setAppendOnly is CONFIG SET appendonly (under the store lock): yes starts
// an AOF from a rewrite of the keyspace; no stops writing it (the last
// records are written and fsynced in the background).
func (p *persistence) setAppendOnly(v string) error {
	s := p.s
	cur := p.cur.Load()
	switch {
	case v == "yes" && cur == nil:
		a, err := p.newAOF()
		if err != nil {
			return err
		}
		if err := p.lockDir(a); err != nil {
			s.log.Warn("Can't open the append-only file for writing: AOF not turned on", "dir", s.Config("dir"), "err", err)
			return errAOFOn
		}
		if err := a.StartFromKeyspace(); err != nil {
			// Valkey's startAppendOnly: the reason goes to the log, the
			// client gets "Unable to turn on AOF. Check server logs.",
			// and appendonly stays no.
			s.log.Warn("Can't open the append-only file for writing: AOF not turned on", "dir", s.Config("dir"), "err", err)
			return errAOFOn
		}
		s.store.SetFeed(a)
		p.cur.Store(a)
	case v == "no" && cur != nil:
		s.store.SetFeed(nil)
		p.cur.Store(nil)
		cur.Cancel()
		go func() {
			if err := cur.Close(); err != nil {
				s.log.Warn("Closing the append only file", "err", err)
			}
		}()
	}
	return nil
}

// valkeyAOFFiles returns the files of a Valkey 7+ multi-part AOF to
// replay, base first then the incremental ones in the manifest's order
// (dir/appenddirname/appendfilename.manifest: lines "file <name> seq <n>
// type b|h|i"; history files skipped), when emqd's own file (path) does
// not exist and the manifest does; nil otherwise.
func (p *persistence) valkeyAOFFiles(path string) ([]string, error) {
	s := p.s
	fsys := p.fs
	if fsys == nil {
		fsys = aof.OSFS{}
	}
	dir := filepath.Dir(path)
	names, err := fsys.ReadDir(dir)
	if err != nil || slices.Contains(names, filepath.Base(path)) {
		return nil, nil
	}
	adir := filepath.Join(dir, s.Config("appenddirname"))
	manifest := filepath.Join(adir, s.Config("appendfilename")+".manifest")
	rc, err := fsys.Open(manifest)
	if err != nil {
		return nil, nil
	}
	b, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		return nil, err
	}
	var base string
	var incr []string
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		argv, ok := SplitConfigLine(line)
		kv := map[string]string{}
		for j := 0; ok && j+1 < len(argv); j += 2 {
			kv[argv[j]] = argv[j+1]
		}
		name := kv["file"]
		if !ok || len(argv)%2 != 0 || name == "" || strings.ContainsRune(name, '/') || kv["type"] == "" {
			return nil, fmt.Errorf("Invalid AOF manifest file format: %s line %d", manifest, i+1)
		}
		switch kv["type"] {
		case "b":
			base = filepath.Join(adir, name)
		case "i":
			incr = append(incr, filepath.Join(adir, name))
		}
	}
	files := incr
	if base != "" {
		files = append([]string{base}, incr...)
	}
	if len(files) == 0 {
		return nil, nil
	}
	return files, nil
}

// replayValkeyAOF replays Valkey's multi-part AOF files in order into the
// store, as replayAOF replays emqd's file. The files are only read: a torn
// tail refuses the start (aof-load-truncated would cut Valkey's file);
// valkey-server fixes it.
func (s *Server) replayValkeyAOF(a *aof.AOF, files []string) (aof.LoadResult, error) {
	var total aof.LoadResult
	for _, f := range files {
		res, err := s.replayAOFFile(a, f)
		if err != nil {
			return total, err
		}
		if res.Missing {
			return total, fmt.Errorf("the AOF manifest names %s, which does not exist", f)
		}
		total.Commands += res.Commands
		total.Size += res.Size
	}
	return total, nil
}

// replayAOF replays the file through the command table, under the store
// lock, with no Feed (the replay writes nothing back). As Valkey's
// loadSingleAppendOnlyFile, a command the table does not know stops the
// boot, and error replies of known commands are ignored (counted in the
// log).
func (s *Server) replayAOF(a *aof.AOF) (aof.LoadResult, error) { return s.replayAOFFile(a, "") }

// replayAOFFile is replayAOF of path ("": the AOF's own file, which a torn
// tail may be cut from; another path is only read).
func (s *Server) replayAOFFile(a *aof.AOF, path string) (aof.LoadResult, error) {
	st := s.store
	st.Lock()
	defer st.Unlock()
	defer st.BeginReplay()() // no Feed, nothing expires (Valkey's server.loading)
	w := &resp.Writer{Proto: 2}
	x := s.newCtx(w)
	errReplies := 0
	var firstErr string
	exec := func(db int, argv [][]byte) error {
		cmd, _ := s.reg.lookup(argv)
		if cmd == nil {
			return fmt.Errorf("unknown command '%s' reading the append only file", argv[0])
		}
		if cmd.handler == nil {
			// A connection or server command (CONFIG SET, SHUTDOWN,
			// BGREWRITEAOF, CLIENT ...): nothing emqd writes, but a file
			// edited or appended by hand may hold one. Valkey runs it for
			// its loading client, which gets an error and the load goes
			// on; emqd skips it the same way, counted and logged below,
			// so it changes nothing.
			errReplies++
			if firstErr == "" {
				firstErr = "'" + cmd.name + "' is a server command, not run from the append only file"
			}
			return nil
		}
		if !cmd.arityOK(len(argv)) {
			// Valkey 8.0.1 runs such a record and may crash on it (SET
			// with one argument: signal 11); emqd stops the boot.
			return fmt.Errorf("wrong number of arguments for '%s' reading the append only file", strings.ToLower(string(argv[0])))
		}
		w.Buf = w.Buf[:0]
		x.ResetForCommand(argv)
		x.DB = st.DB(db)
		x.NowMs = s.clock.NowMs()
		st.SetNow(x.NowMs)
		cmd.handler(&x)
		if len(w.Buf) > 0 && w.Buf[0] == '-' {
			errReplies++
			if firstErr == "" {
				firstErr = strings.TrimSpace(string(w.Buf[1:]))
			}
		}
		return nil
	}
	var res aof.LoadResult
	var err error
	if path == "" {
		res, err = a.Load(exec)
	} else {
		res, err = a.LoadOther(path, exec)
	}
	if errReplies > 0 {
		s.log.Warn("Commands of the append only file replied with an error (ignored, as Valkey does)",
			"count", strconv.Itoa(errReplies), "first", firstErr)
	}
	return res, err
}
