package server

import (
	"net"
	"os"
	"syscall"
	"unsafe"
)

// Socket reads and writes of a plain TCP connection are made with
// syscall.RawSyscall, not syscall.Read/Write (which go through the
// runtime's entersyscall/exitsyscall). The socket is non-blocking (Go's
// netpoller owns it: a read with nothing there returns EAGAIN and the
// goroutine waits in syscall.RawConn), so neither call blocks, and a call
// that does not tell the runtime it is in a system call:
//   - costs no entersyscall/exitsyscall pair (three per round trip: the
//     read, the read that finds EAGAIN, the reply's write);
//   - never wakes the runtime's monitor thread (sysmon) from its deep sleep
//     when the process comes back from idle: entersyscall does, and the
//     monitor then polls every 20 us for 1 ms before it backs off, which
//     at one request per round trip made it 11% of emqd's CPU per request
//     (bench/README.md, "`-P 1`: raw socket system calls");
//   - never lets the monitor hand the P to another thread while a write is
//     in the kernel (a second thread waking on the same core).
// Under the race detector they are syscall.Read and syscall.Write
// (rawio_race.go). docs/architecture.md §2.1 and §2.8 state the rule.

// rawRead is read(2) of fd into p: the bytes read, or the errno (0: none).
func rawRead(fd int, p []byte) (int, syscall.Errno) {
	if !rawSyscalls {
		return errnoOf(syscall.Read(fd, p))
	}
	var ptr unsafe.Pointer
	if len(p) > 0 {
		ptr = unsafe.Pointer(&p[0])
	}
	r, _, e := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(ptr), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(r), 0
}

// rawWrite is write(2) of p to fd: the bytes the kernel took, or the errno
// (0: none).
func rawWrite(fd int, p []byte) (int, syscall.Errno) {
	if !rawSyscalls {
		return errnoOf(syscall.Write(fd, p))
	}
	var ptr unsafe.Pointer
	if len(p) > 0 {
		ptr = unsafe.Pointer(&p[0])
	}
	r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(fd), uintptr(ptr), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(r), 0
}

// errnoOf is syscall.Read's or syscall.Write's result as rawRead's.
func errnoOf(n int, err error) (int, syscall.Errno) {
	if err != nil {
		return 0, err.(syscall.Errno)
	}
	return n, 0
}

// write writes what the socket takes of data now, without waiting: for a
// plain TCP connection with rawWrite (inside the read callback on the
// descriptor the read holds, else through syscall.RawConn.Write, which
// also honours a write deadline). It returns the bytes written and the
// first error; errWriteBlocked (the event loop: errLoopBlocked) when the
// socket did not take it all, or at once for a connection that is not
// plain TCP, and flushAt hands the rest to the writer goroutine
// (writeBehind, docs/architecture.md §2.8). Only the goroutine that set
// writing (flushAt) calls it.
func (c *client) write(data []byte) (int, error) {
	if !c.rawRead {
		// TLS, a Unix socket, an in-process pipe: net.Conn.Write cannot
		// be tried without waiting, so the writer goroutine makes every
		// write (flushAt; writeBehind).
		return 0, errWriteBlocked
	}
	c.wdata, c.wn, c.werr = data, 0, nil
	if c.readFd >= 0 {
		// Inside the read callback (rawReadOnce), whose read holds the
		// descriptor, the reply goes out without syscall.RawConn.Write
		// (its descriptor lock, its deadline check): a round trip's reply
		// costs write(2) alone. Plain TCP connections have no write
		// deadline (only TLS and the listeners' refusals set one).
		c.rawWriteSome(uintptr(c.readFd))
	} else {
		if c.tryWriteFn == nil {
			c.tryWriteFn = c.rawTryWrite
		}
		if err := c.raw.Write(c.tryWriteFn); err != nil && c.werr == nil {
			c.werr = err
		}
	}
	n, werr := c.wn, c.werr
	c.wdata = nil
	if werr == nil && n < len(data) {
		// The socket is full. The event loop (inLoop) hands the rest to
		// the connection's goroutine, which hands it to a writer
		// goroutine: neither waits for the client to read.
		werr = errWriteBlocked
		if c.inLoop {
			werr = errLoopBlocked
		}
	}
	return n, werr
}

// rawTryWrite is write's callback for syscall.RawConn.Write outside the
// read callback: rawWriteSome, and done even when the socket is full (no
// wait in the netpoller: the writer goroutine waits, writeBehind).
func (c *client) rawTryWrite(fd uintptr) bool {
	c.rawWriteSome(fd)
	return true
}

// writeWait writes all of data, waiting while the socket is full (the
// writer goroutine, writeBehind): through syscall.RawConn with rawWrite for
// a plain TCP connection, through net.Conn otherwise. It returns the bytes
// written and the first error.
func (c *client) writeWait(data []byte) (int, error) {
	if !c.rawRead {
		n, err := c.nc.Write(data)
		c.sent(n, false)
		return n, err
	}
	c.wdata, c.wn, c.werr = data, 0, nil
	if c.writeFn == nil {
		c.writeFn = c.rawWriteSome
	}
	err := c.raw.Write(c.writeFn)
	n, werr := c.wn, c.werr
	c.wdata = nil
	if err == nil {
		err = werr
	}
	return n, err
}

// sent counts n bytes the kernel took from the buffer being written: into
// tot-net-out and INFO's total_net_output_bytes, and, while more of the
// buffer is still to go (more), out of omem (client.inWrite), so a client
// that stops reading a big reply shows what it has taken and what is left
// while the write waits, as Valkey's CLIENT LIST does (docs/operations.md
// §4). A write that took the rest of the buffer leaves inWrite alone:
// flushAt zeroes it under outMu as soon as the write returns, so the reply
// of a round trip costs no lock of its own here.
func (c *client) sent(n int, more bool) {
	if n <= 0 {
		return
	}
	if more {
		c.outMu.Lock()
		c.inWrite -= n
		c.outMu.Unlock()
		// A client reading a big reply slowly is not idle: every part
		// the kernel takes counts, as Valkey's writeToClient sets
		// lastinteraction on each write (the idle timeout,
		// clients_cron.go). Only a write the socket did not take at
		// once reads the clock here.
		c.lastIO.Store(c.s.clock.NowMs())
	}
	c.netOut.Add(int64(n))
	c.s.statNetOut.Add(int64(n))
}

// rawWriteSome is write's callback for syscall.RawConn.Write: write(2)
// until all of c.wdata is taken (true), the socket buffer is full (false:
// the runtime waits until it is writable and calls again) or an error
// (true, c.werr set). A method value made once per connection, as
// rawReadOnce.
func (c *client) rawWriteSome(fd uintptr) bool {
	for c.wn < len(c.wdata) {
		m, e := rawWrite(int(fd), c.wdata[c.wn:])
		switch e {
		case 0:
			c.wn += m
			c.sent(m, c.wn < len(c.wdata))
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			c.werr = &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", e)}
			return true
		}
	}
	return true
}
