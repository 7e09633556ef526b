// Package faultfs is an in-memory vfs.FS for tests that fails the
// operations a test names (ENOSPC, EIO, EROFS, ...), delays or hooks fsync,
// and loses power (what was not fsynced is gone, optionally torn): the
// file system the internal/store/aof, internal/store/rdb and server tests run the
// append-only and RDB files on. Product code never uses it.
package faultfs

import (
	"bytes"
	"io"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/emqd/emqd/internal/vfs"
)

// cleanPath is filepath.Clean, used as the FS key.
func cleanPath(p string) string { return filepath.Clean(p) }

// Op names a file system operation, for FS.SetFault.
type Op string

// The operations FS can fail.
const (
	OpOpen     Op = "open"
	OpCreate   Op = "create"
	OpWrite    Op = "write"
	OpSync     Op = "sync"
	OpTruncate Op = "truncate"
	OpRename   Op = "rename"
	OpRemove   Op = "remove"
	OpSyncDir  Op = "syncdir"
)

// FS is an in-memory file system that models what survives a power
// loss, for tests. Every file has two contents: what reads see (the page
// cache) and what is on the disk. Sync copies the first to the second; a
// directory's entries (creates, renames, removes) reach the disk only with
// SyncDir. PowerLoss throws away everything not on the disk and invalidates
// every open handle (their operations then fail with EIO).
//
// Faults: SetFault makes chosen operations fail with a chosen error (ENOSPC,
// EIO, ...), and SetSpace limits the bytes the files may hold (a write past
// the limit is short and fails with ENOSPC, as on a full disk). A failed
// Sync behaves as Linux does after a writeback error: the pages written since
// the last good Sync are marked clean without reaching the disk, so a later
// good Sync does not save them (their range reads as zeros on the disk) unless
// they are written again. As fsync(2), a Sync makes durable what was written
// before it began; bytes written while it runs stay dirty.
//
// Safe for concurrent use.
type FS struct {
	mu      sync.Mutex
	names   map[string]*memNode // the directory entries reads see
	durable map[string]*memNode // the directory entries on the disk
	dirs    map[string]bool
	gen     int
	fault   func(op Op, path string) error
	space   int64
	delay   time.Duration
	onSync  func(path string)
	// Syncs counts successful File.Sync calls (tests assert group commit).
	syncs int
}

type memNode struct {
	data      []byte // the page cache
	disk      []byte // on the disk
	dirtyFrom int    // lowest offset changed since the last Sync
	holes     []span // ranges whose pages were dropped by a failed Sync
}

type span struct{ from, to int }

// New returns an empty FS with no faults and unlimited space.
func New() *FS {
	return &FS{
		names:   make(map[string]*memNode),
		durable: make(map[string]*memNode),
		dirs:    make(map[string]bool),
		space:   -1,
	}
}

// SetFault installs fn, called before every operation; a non-nil return
// fails the operation with that error (wrapped in *fs.PathError) and leaves
// the file untouched. nil removes the fault.
func (m *FS) SetFault(fn func(op Op, path string) error) {
	m.mu.Lock()
	m.fault = fn
	m.mu.Unlock()
}

// FailOps makes every listed operation fail with err until Heal.
func (m *FS) FailOps(err error, ops ...Op) {
	m.SetFault(func(op Op, _ string) error {
		if slices.Contains(ops, op) {
			return err
		}
		return nil
	})
}

// Heal removes the fault and the space limit.
func (m *FS) Heal() {
	m.mu.Lock()
	m.fault = nil
	m.space = -1
	m.mu.Unlock()
}

// SetSpace limits the total size of the visible files to n bytes (n < 0: no
// limit).
func (m *FS) SetSpace(n int64) {
	m.mu.Lock()
	m.space = n
	m.mu.Unlock()
}

// SetSyncDelay makes every File.Sync take d (a slow disk).
func (m *FS) SetSyncDelay(d time.Duration) {
	m.mu.Lock()
	m.delay = d
	m.mu.Unlock()
}

// SetSyncHook installs fn (nil: none), called by every File.Sync after it
// has noted what it covers and before it completes, outside FS's lock:
// a test can hold an fsync there while writes go on.
func (m *FS) SetSyncHook(fn func(path string)) {
	m.mu.Lock()
	m.onSync = fn
	m.mu.Unlock()
}

// Syncs is the number of successful File.Sync calls so far.
func (m *FS) Syncs() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.syncs
}

// PowerLoss simulates a power cut: every file and directory entry reverts to
// what is on the disk and every open handle becomes invalid.
func (m *FS) PowerLoss() { m.powerLoss(nil) }

// PowerLossTorn is PowerLoss, except that for each file a random prefix of
// the bytes appended since the last Sync reaches the disk, as when the kernel
// wrote back part of the page cache before the cut.
func (m *FS) PowerLossTorn(rng *rand.Rand) { m.powerLoss(rng) }

func (m *FS) powerLoss(rng *rand.Rand) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gen++
	m.names = make(map[string]*memNode, len(m.durable))
	for p, n := range m.durable {
		if rng != nil && len(n.holes) == 0 && n.dirtyFrom >= len(n.disk) && len(n.data) > len(n.disk) {
			k := rng.IntN(len(n.data) - len(n.disk) + 1)
			n.disk = append(n.disk, n.data[len(n.disk):len(n.disk)+k]...)
		}
		n.data = bytes.Clone(n.disk)
		n.dirtyFrom = len(n.data)
		n.holes = nil
		m.names[p] = n
	}
}

// Contents returns what a read of path sees now (nil, false if missing).
func (m *FS) Contents(path string) ([]byte, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.names[cleanPath(path)]
	if n == nil {
		return nil, false
	}
	return bytes.Clone(n.data), true
}

// WriteFile creates path with data, durable (synced, directory synced).
func (m *FS) WriteFile(path string, data []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := cleanPath(path)
	n := &memNode{data: bytes.Clone(data), disk: bytes.Clone(data), dirtyFrom: len(data)}
	m.names[p] = n
	m.durable[p] = n
}

func (m *FS) check(op Op, path string) error {
	if m.fault == nil {
		return nil
	}
	if err := m.fault(op, path); err != nil {
		return &fs.PathError{Op: string(op), Path: path, Err: err}
	}
	return nil
}

func (m *FS) used() int64 {
	var t int64
	for _, n := range m.names {
		t += int64(len(n.data))
	}
	return t
}

// Open opens path for reading.
func (m *FS) Open(path string) (io.ReadCloser, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := cleanPath(path)
	if err := m.check(OpOpen, p); err != nil {
		return nil, err
	}
	n := m.names[p]
	if n == nil {
		return nil, &fs.PathError{Op: "open", Path: p, Err: fs.ErrNotExist}
	}
	return faultReader{bytes.NewReader(bytes.Clone(n.data))}, nil
}

// faultReader is an opened FS file: its Size lets a replay bound an
// RDB preamble's lengths by what is left of the file.
type faultReader struct{ *bytes.Reader }

func (faultReader) Close() error { return nil }

// OpenAppend opens path for appending, creating it when missing.
func (m *FS) OpenAppend(path string) (vfs.File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := cleanPath(path)
	if err := m.check(OpOpen, p); err != nil {
		return nil, err
	}
	n := m.names[p]
	if n == nil {
		n = &memNode{}
		m.names[p] = n
	}
	return &faultFile{m: m, n: n, path: p, gen: m.gen}, nil
}

// Create creates or truncates path and opens it for appending.
func (m *FS) Create(path string) (vfs.File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := cleanPath(path)
	if err := m.check(OpCreate, p); err != nil {
		return nil, err
	}
	n := m.names[p]
	if n == nil {
		n = &memNode{}
		m.names[p] = n
	} else {
		n.truncate(0)
	}
	return &faultFile{m: m, n: n, path: p, gen: m.gen}, nil
}

// Rename moves oldPath's entry to newPath, replacing what was there.
func (m *FS) Rename(oldPath, newPath string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, nw := cleanPath(oldPath), cleanPath(newPath)
	if err := m.check(OpRename, o); err != nil {
		return err
	}
	n := m.names[o]
	if n == nil {
		return &fs.PathError{Op: "rename", Path: o, Err: fs.ErrNotExist}
	}
	delete(m.names, o)
	m.names[nw] = n
	return nil
}

// Remove deletes path's entry.
func (m *FS) Remove(path string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := cleanPath(path)
	if err := m.check(OpRemove, p); err != nil {
		return err
	}
	if m.names[p] == nil {
		return &fs.PathError{Op: "remove", Path: p, Err: fs.ErrNotExist}
	}
	delete(m.names, p)
	return nil
}

// SyncDir makes dir's current entries the durable ones.
func (m *FS) SyncDir(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d := cleanPath(dir)
	if err := m.check(OpSyncDir, d); err != nil {
		return err
	}
	for p := range m.durable {
		if filepath.Dir(p) == d && m.names[p] == nil {
			delete(m.durable, p)
		}
	}
	for p, n := range m.names {
		if filepath.Dir(p) == d {
			m.durable[p] = n
		}
	}
	return nil
}

// ReadDir lists the names in dir.
func (m *FS) ReadDir(dir string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d := cleanPath(dir)
	var out []string
	for p := range m.names {
		if filepath.Dir(p) == d {
			out = append(out, filepath.Base(p))
		}
	}
	sort.Strings(out)
	return out, nil
}

// MkdirAll records dir (directories themselves are always durable here).
func (m *FS) MkdirAll(dir string) error {
	m.mu.Lock()
	m.dirs[cleanPath(dir)] = true
	m.mu.Unlock()
	return nil
}

func (n *memNode) truncate(size int) {
	if size < len(n.data) {
		n.data = n.data[:size:size]
	} else {
		n.data = append(n.data, make([]byte, size-len(n.data))...)
	}
	n.dirtyFrom = min(n.dirtyFrom, size)
	var hs []span
	for _, h := range n.holes {
		if h.from < size {
			hs = append(hs, span{h.from, min(h.to, size)})
		}
	}
	n.holes = hs
}

type faultFile struct {
	m      *FS
	n      *memNode
	path   string
	gen    int
	closed bool
}

var errStale = syscall.EIO

func (f *faultFile) live(op Op) error {
	if f.closed {
		return &fs.PathError{Op: string(op), Path: f.path, Err: fs.ErrClosed}
	}
	if f.gen != f.m.gen {
		return &fs.PathError{Op: string(op), Path: f.path, Err: errStale}
	}
	return f.m.check(op, f.path)
}

func (f *faultFile) Write(p []byte) (int, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.live(OpWrite); err != nil {
		return 0, err
	}
	n := len(p)
	if f.m.space >= 0 {
		free := f.m.space - f.m.used()
		if int64(n) > free {
			n = int(max(free, 0))
		}
	}
	nd := f.n
	nd.dirtyFrom = min(nd.dirtyFrom, len(nd.data))
	nd.data = append(nd.data, p[:n]...)
	if n < len(p) {
		return n, &fs.PathError{Op: "write", Path: f.path, Err: syscall.ENOSPC}
	}
	return n, nil
}

func (f *faultFile) Sync() error {
	f.m.mu.Lock()
	d, hook := f.m.delay, f.m.onSync
	upto := len(f.n.data) // what this fsync covers
	f.m.mu.Unlock()
	if hook != nil {
		hook(f.path)
	}
	if d > 0 {
		time.Sleep(d) // a slow disk; other operations proceed meanwhile
	}
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	nd := f.n
	if err := f.live(OpSync); err != nil {
		if f.gen == f.m.gen && !f.closed && nd.dirtyFrom < len(nd.data) {
			// Writeback failed: the dirty pages are dropped, marked clean.
			nd.holes = append(nd.holes, span{nd.dirtyFrom, len(nd.data)})
			nd.dirtyFrom = len(nd.data)
		}
		return err
	}
	upto = min(upto, len(nd.data))
	disk := bytes.Clone(nd.data[:upto])
	for _, h := range nd.holes {
		if h.from < upto {
			clear(disk[h.from:min(h.to, upto)])
		}
	}
	nd.disk = disk
	nd.dirtyFrom = upto
	f.m.syncs++
	return nil
}

func (f *faultFile) Truncate(size int64) error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.live(OpTruncate); err != nil {
		return err
	}
	f.n.truncate(int(size))
	return nil
}

func (f *faultFile) Size() (int64, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if f.gen != f.m.gen {
		return 0, &fs.PathError{Op: "stat", Path: f.path, Err: errStale}
	}
	return int64(len(f.n.data)), nil
}

func (f *faultFile) Close() error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if f.closed {
		return &fs.PathError{Op: "close", Path: f.path, Err: fs.ErrClosed}
	}
	f.closed = true
	return nil
}
