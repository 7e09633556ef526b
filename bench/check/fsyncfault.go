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
	synced map[uint64]int64 // inode -> length at its last good fsync
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
	ino := n.EmbeddedInode().StableAttr().Ino
	var st syscall.Stat_t
	isFile := syscall.Stat(path, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFREG
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
		// was read before it: writes racing it stay undecided, kept).
		n.ff.mu.Lock()
		n.ff.synced[ino] = st.Size
		n.ff.mu.Unlock()
	}
	return errno
}
