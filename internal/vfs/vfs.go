// Package vfs is the file-system interface the append-only file and the
// RDB files are written through (internal/store/aof aliases it as aof.FS and
// aof.File): the server passes the OS one (aof.OSFS), tests a
// fault-injecting one (internal/faultfs). It imports nothing of emqd, so
// test packages below internal/store/aof can implement it.
package vfs

import "io"

// File is an open append-only file as the AOF uses it. Writes always go to
// the end of the file (O_APPEND), also after Truncate.
type File interface {
	// Write appends p. A short write returns n < len(p) and the error
	// (ENOSPC, EIO, ...).
	Write(p []byte) (n int, err error)
	// Sync makes everything written so far durable (fsync).
	Sync() error
	// Truncate cuts the file to size bytes.
	Truncate(size int64) error
	// Size is the file's current size in bytes.
	Size() (int64, error)
	Close() error
}

// FS is the file system the AOF works in: the OS one (aof.OSFS) for the
// server, a fault-injecting one (internal/faultfs) for tests.
type FS interface {
	// Open opens path for reading; a missing file gives an error for which
	// errors.Is(err, fs.ErrNotExist) holds.
	Open(path string) (io.ReadCloser, error)
	// OpenAppend opens path for appending, creating it (mode 0644) if missing.
	OpenAppend(path string) (File, error)
	// Create creates or truncates path and opens it for appending.
	Create(path string) (File, error)
	// Rename atomically replaces newPath with oldPath (rename(2)).
	Rename(oldPath, newPath string) error
	// Remove deletes path.
	Remove(path string) error
	// SyncDir fsyncs directory dir, making creates, renames and removes in
	// it durable.
	SyncDir(dir string) error
	// ReadDir lists the names (not paths) of the entries of dir.
	ReadDir(dir string) ([]string, error)
	// MkdirAll creates dir and its parents (mode 0755).
	MkdirAll(dir string) error
}

// DirLocker is what an FS may implement to lock a directory against a
// second server appending in it: LockDir takes an exclusive, advisory lock
// on dir without waiting and returns its release; an error when another
// holder has it. The OS one (aof.OSFS) uses flock(2) on the directory, so
// the lock goes with the process that holds it, kill -9 included; an FS
// without it (the in-memory one of tests) locks nothing.
type DirLocker interface {
	LockDir(dir string) (release func() error, err error)
}
