package aof

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/emqd/emqd/internal/vfs"
)

// File and FS are the file-system interfaces the AOF (and the RDB files)
// work through (internal/vfs): the OS one (OSFS) for the server, a
// fault-injecting one (internal/faultfs) for tests.
type (
	File = vfs.File
	FS   = vfs.FS
	// DirLocker is vfs.DirLocker (OSFS implements it).
	DirLocker = vfs.DirLocker
)

// OSFS is the operating system's file system.
type OSFS struct{}

type osFile struct{ *os.File }

func (f osFile) Size() (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// Open is os.Open.
func (OSFS) Open(path string) (io.ReadCloser, error) { return os.Open(path) }

// OpenAppend opens path with O_WRONLY|O_CREATE|O_APPEND.
func (OSFS) OpenAppend(path string) (File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

// Create opens path with O_WRONLY|O_CREATE|O_TRUNC|O_APPEND.
func (OSFS) Create(path string) (File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

// Rename is os.Rename.
func (OSFS) Rename(oldPath, newPath string) error { return os.Rename(oldPath, newPath) }

// Remove is os.Remove.
func (OSFS) Remove(path string) error { return os.Remove(path) }

// SyncDir opens dir and fsyncs it.
func (OSFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// ReadDir lists dir's entry names.
func (OSFS) ReadDir(dir string) ([]string, error) {
	es, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Name()
	}
	return out, nil
}

// MkdirAll is os.MkdirAll with mode 0755.
func (OSFS) MkdirAll(dir string) error { return os.MkdirAll(dir, 0o755) }

// ErrDirLocked is LockDir's error when another holder (another process,
// or another server in this one) has dir's lock.
var ErrDirLocked = errors.New("the directory is locked by another server")

// LockDir takes flock(2) LOCK_EX|LOCK_NB on dir itself (no lock file, so
// nothing is left behind and a rewrite's rename cannot move the lock away):
// vfs.DirLocker. The release closes the descriptor, which drops the lock;
// so does the end of the process. A lock held elsewhere: ErrDirLocked.
func (OSFS) LockDir(dir string) (func() error, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(d.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		d.Close()
		if err == syscall.EWOULDBLOCK {
			return nil, ErrDirLocked
		}
		return nil, err
	}
	return d.Close, nil
}

// Strerror renders err as C's strerror(3) does for an errno ("No space left
// on device", "Input/output error"), which is what Valkey prints in its
// MISCONF error and logs; other errors print as they are.
func Strerror(err error) string {
	var no syscall.Errno
	if errors.As(err, &no) {
		s := no.Error()
		if s != "" {
			return strings.ToUpper(s[:1]) + s[1:]
		}
	}
	if err == nil {
		return ""
	}
	return err.Error()
}

// renamedFile is a File opened under a name it no longer has (a rewrite's
// temporary file, renamed over the AOF): an error it returns names path,
// the file's name now, so a log line after a rewrite names the AOF rather
// than a temporary file that no longer exists.
type renamedFile struct {
	File
	path string
}

func (f renamedFile) fix(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path != f.path {
		c := *pe
		c.Path = f.path
		return &c
	}
	return err
}

func (f renamedFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	return n, f.fix(err)
}

func (f renamedFile) Sync() error { return f.fix(f.File.Sync()) }

func (f renamedFile) Truncate(size int64) error { return f.fix(f.File.Truncate(size)) }

func (f renamedFile) Size() (int64, error) {
	n, err := f.File.Size()
	return n, f.fix(err)
}
