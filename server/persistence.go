package server

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/emqd/emqd/server/resp"
	"github.com/emqd/emqd/store"
	"github.com/emqd/emqd/store/aof"
)

// Persistence (issue 4, architecture.md "Persistence"): with appendonly yes
// the append-only file in dir is replayed before the listener opens, a new
// run_id is drawn after the replay, and from then on every write reaches
// the file through store.Feed; a batch that wrote is committed (appendfsync)
// before its replies go out; writes are refused with MISCONF while the file
// fails; BGREWRITEAOF and the automatic rewrite compact it; Close (SHUTDOWN,
// SIGTERM) fsyncs it.

func init() { registerStartHook(startPersistence) }

// aofFS, when set (by tests), is the file system of the next servers'
// append-only files instead of the OS one.
var aofFS aof.FS

// aofs maps a running *Server to its *aof.AOF (for tests and tools).
var aofs sync.Map

// AOF returns the server's append-only file, nil with appendonly no.
func (s *Server) AOF() *aof.AOF {
	if a, ok := aofs.Load(s); ok {
		return a.(*aof.AOF)
	}
	return nil
}

// startPersistence is the start hook.
func startPersistence(s *Server) error {
	if s.Config("appendonly") != "yes" {
		s.SetInfoSection("persistence", func(add func(field, value string)) {
			for _, kv := range aof.PersistenceInfo(nil, s.store.DirtyCount, s.started.Unix()) {
				add(kv[0], kv[1])
			}
		})
		return nil
	}
	dir, err := filepath.Abs(s.Config("dir"))
	if err != nil {
		return err
	}
	s.cfg.set(nil, "dir", dir, true)
	policy, _ := aof.ParseFsync(s.Config("appendfsync"))
	a := aof.New(aof.Config{
		Dir:                   dir,
		Filename:              s.Config("appendfilename"),
		Fsync:                 policy,
		AutoRewritePercentage: int(atoi(s.Config("auto-aof-rewrite-percentage"))),
		AutoRewriteMinSize:    atoi(s.Config("auto-aof-rewrite-min-size")),
		Store:                 s.store,
		Logger:                s.log,
		FS:                    aofFS,
	})
	start := time.Now()
	res, err := s.replayAOF(a)
	if err != nil {
		return err
	}
	if !res.Missing {
		s.log.Info(fmt.Sprintf("DB loaded from append only file: %.3f seconds", time.Since(start).Seconds()),
			"commands", res.Commands, "bytes", res.Size)
	}
	// The run_id is drawn after the replay (verbs.md: leases granted before
	// the restart carry an old lease_epoch).
	s.runID = newRunID()
	if err := a.Start(); err != nil {
		return fmt.Errorf("can't open the append only file %s: %w", a.Path(), err)
	}
	s.store.Lock()
	s.store.Feed = a
	s.store.Unlock()
	aofs.Store(s, a)
	s.SetCommitHook(a.Commit)
	s.SetWriteGate(a.WriteError)
	s.SetRewriteHook(a.StartRewrite)
	s.SetInfoSection("persistence", func(add func(field, value string)) {
		for _, kv := range aof.PersistenceInfo(a, s.store.DirtyCount, s.started.Unix()) {
			add(kv[0], kv[1])
		}
	})
	s.OnConfigSet("appendfsync", func(v string) error {
		p, ok := aof.ParseFsync(v)
		if !ok {
			return fmt.Errorf("argument(s) must be one of the following: always, everysec, no")
		}
		a.SetFsync(p)
		return nil
	})
	autoRewrite := func(string) error {
		a.SetAutoRewrite(int(atoi(s.Config("auto-aof-rewrite-percentage"))), atoi(s.Config("auto-aof-rewrite-min-size")))
		return nil
	}
	s.OnConfigSet("auto-aof-rewrite-percentage", autoRewrite)
	s.OnConfigSet("auto-aof-rewrite-min-size", autoRewrite)
	s.OnClose(func() error {
		s.log.Info("Calling fsync() on the AOF file.")
		aofs.Delete(s)
		return a.Close()
	})
	return nil
}

// replayAOF replays the file through the command table, under the store
// lock, with no Feed (the replay writes nothing back). As Valkey's
// loadSingleAppendOnlyFile, a command the table does not know stops the
// boot, and error replies of known commands are ignored (counted in the
// log).
func (s *Server) replayAOF(a *aof.AOF) (aof.LoadResult, error) {
	st := s.store
	st.Lock()
	defer st.Unlock()
	feed := st.Feed
	st.Feed = nil
	defer func() { st.Feed = feed }()
	w := &resp.Writer{Proto: 2}
	x := &store.Ctx{S: st, W: w, RunID: s.runID, Clock: s.clock, DebugEnabled: s.debug, Server: s}
	errReplies := 0
	var firstErr string
	res, err := a.Load(func(db int, argv [][]byte) error {
		cmd, _ := s.reg.lookup(argv)
		if cmd == nil || cmd.handler == nil {
			return fmt.Errorf("unknown command '%s' reading the append only file", argv[0])
		}
		if !cmd.arityOK(len(argv)) {
			return fmt.Errorf("wrong number of arguments for '%s' reading the append only file", strings.ToLower(string(argv[0])))
		}
		w.Buf = w.Buf[:0]
		x.ResetForCommand(argv)
		x.DB = st.DB(db)
		x.NowMs = s.clock.NowMs()
		cmd.handler(x)
		if len(w.Buf) > 0 && w.Buf[0] == '-' {
			errReplies++
			if firstErr == "" {
				firstErr = strings.TrimSpace(string(w.Buf[1:]))
			}
		}
		return nil
	})
	if errReplies > 0 {
		s.log.Warn("Commands of the append only file replied with an error (ignored, as Valkey does)",
			"count", strconv.Itoa(errReplies), "first", firstErr)
	}
	return res, err
}
