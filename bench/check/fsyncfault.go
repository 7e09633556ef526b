package check

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// fsyncFS is the checker's fault-injecting file system for a real emqd
// process: a FUSE loopback (github.com/hanwen/go-fuse/v2) of a backing
// directory, mounted on the server's data directory, whose fsync answers
// EIO while failing is set. The binary is the one users run; only the
// kernel's answer to its fsync(2) changes. internal/faultfs does the same
// in-process for the aof and server tests; a separate process cannot use
// it.
//
// A failed fsync is taken the pessimistic way Linux allows after a
// writeback error (docs/durability.md §5): the bytes written to the file
// since its last good fsync are dropped (the backing file is truncated
// back to that length), so a server that acknowledged them, or did not
// write them again before its next good fsync, loses them at its next
// restart, where the checker's final read sees it. A file never fsynced
// through the mount counts as synced at length 0.
type fsyncFS struct {
	backing string
	server  *fuse.Server
	failing atomic.Bool
	// lies turns the fault into a disk that lies: the bytes are dropped
	// as above, and the fsync answers success (the checker's own test
	// that it finds what such a disk loses).
	lies bool
	// Injected counts the fsyncs answered EIO.
	injected atomic.Int64

	mu     sync.Mutex
	synced map[uint64]int64 // backing inode -> length at its last good fsync
	// cut: the power is off (powerCut to resume): an fsync answering now
	// makes nothing durable and answers EIO (no process is left to see it).
	cut bool
}

// powerCut is a power loss under the running server: from this instant no
// fsync makes anything durable, kill (SIGKILL, waits for the exit) ends
// the process, then every regular file of the backing directory is
// truncated to its length at its last good fsync (0 if never fsynced
// through the mount), what a power loss leaves of a file whose unsynced
// pages were lost. Directory entries are not rolled back (a rename is
// kept even when its directory was not fsynced): the fault is about the
// AOF's bytes, not the file system's metadata. It returns the bytes
// dropped, and makes fsync work again for the next process.
func (ff *fsyncFS) powerCut(kill func()) (dropped int64, err error) {
	ff.mu.Lock()
	ff.cut = true
	ff.mu.Unlock()
	kill()
	ff.mu.Lock()
	defer ff.mu.Unlock()
	err = filepath.WalkDir(ff.backing, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		var st syscall.Stat_t
		if err := syscall.Stat(path, &st); err != nil {
			return err
		}
		if keep := ff.synced[st.Ino]; keep < st.Size {
			dropped += st.Size - keep
			return os.Truncate(path, keep)
		}
		return nil
	})
	ff.cut = false
	return dropped, err
}

// FuseAvailable says whether the fsync fault can run here: root and
// /dev/fuse (the mount is made with mount(2) directly, no fusermount).
func FuseAvailable() error {
	if os.Geteuid() != 0 {
		return errors.New("the fsync fault mounts a FUSE file system: it needs root")
	}
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("the fsync fault needs /dev/fuse: %w", err)
	}
	f.Close()
	return nil
}

// mountFsyncFS mounts the loopback of backing (created) on dir.
func mountFsyncFS(dir, backing string) (*fsyncFS, error) {
	if err := FuseAvailable(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(backing, 0o755); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	ff := &fsyncFS{backing: backing, synced: map[uint64]int64{}}
	root := &fs.LoopbackRoot{Path: backing}
	root.NewNode = func(r *fs.LoopbackRoot, _ *fs.Inode, _ string, _ *syscall.Stat_t) fs.InodeEmbedder {
		return &fsyncNode{LoopbackNode: fs.LoopbackNode{RootData: r}, ff: ff}
	}
	var st syscall.Stat_t
	if err := syscall.Stat(backing, &st); err != nil {
		return nil, err
	}
	root.Dev = uint64(st.Dev)
	rootNode := root.NewNode(root, nil, "", &st)
	root.RootNode = rootNode
	zero := time.Duration(0) // no attribute cache: the backing file may shrink under the kernel
	srv, err := fs.Mount(dir, rootNode, &fs.Options{
		EntryTimeout: &zero, AttrTimeout: &zero, NegativeTimeout: &zero,
		MountOptions: fuse.MountOptions{DirectMount: true, DirectMountStrict: true, FsName: "emqcheck-fsync", Name: "emqcheck"},
	})
	if err != nil {
		return nil, fmt.Errorf("check: mount the fsync fault's FUSE file system on %s: %w", dir, err)
	}
	ff.server = srv
	return ff, nil
}

// unmount unmounts it (the server using it must have exited).
func (ff *fsyncFS) unmount() {
	ff.failing.Store(false)
	for i := 0; i < 50; i++ {
		if ff.server.Unmount() == nil {
			ff.server.Wait()
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// fsyncNode is a loopback node whose Fsync the fault controls.
type fsyncNode struct {
	fs.LoopbackNode
	ff *fsyncFS
}

var _ = (fs.NodeFsyncer)((*fsyncNode)(nil))

func (n *fsyncNode) backingPath() string {
	return filepath.Join(n.RootData.Path, n.EmbeddedInode().Path(nil))
}

// Fsync is fsync(2) and fdatasync(2) of a file on the mount (and of the
// directory: FSYNCDIR comes here too; a directory is not truncated).
func (n *fsyncNode) Fsync(ctx context.Context, f fs.FileHandle, flags uint32) syscall.Errno {
	path := n.backingPath()
	var st syscall.Stat_t
	isFile := syscall.Stat(path, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFREG
	ino := st.Ino
	n.ff.mu.Lock()
	cut := n.ff.cut
	n.ff.mu.Unlock()
	if cut {
		return syscall.EIO
	}
	if n.ff.failing.Load() {
		n.ff.injected.Add(1)
		if isFile {
			n.ff.mu.Lock()
			keep := n.ff.synced[ino]
			n.ff.mu.Unlock()
			if keep < st.Size {
				_ = os.Truncate(path, keep) // the dirty pages are gone
			}
		}
		if n.ff.lies {
			return 0
		}
		return syscall.EIO
	}
	var errno syscall.Errno
	if fsy, ok := f.(fs.FileFsyncer); ok && f != nil {
		errno = fsy.Fsync(ctx, flags)
	} else {
		fd, err := syscall.Open(path, syscall.O_RDONLY, 0)
		if err != nil {
			return fs.ToErrno(err)
		}
		errno = fs.ToErrno(syscall.Fsync(fd))
		syscall.Close(fd)
	}
	if errno == 0 && isFile {
		// What was written before the fsync began is durable now (the size
		// was read before it: writes racing it stay undecided, kept), unless
		// the power went off before it answered.
		n.ff.mu.Lock()
		if n.ff.cut {
			errno = syscall.EIO
		} else {
			n.ff.synced[ino] = st.Size
		}
		n.ff.mu.Unlock()
	}
	return errno
}
