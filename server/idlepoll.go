package server

import (
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The idle poller (docs/operations.md §8, "Memory per connection"): a plain
// TCP connection that has waited idleShrinkMs for its next command gives up
// its goroutine. Its socket goes into one epoll set of the server's
// (EPOLLONESHOT) and its goroutine ends, so an idle connection holds no
// goroutine stack (2-8 KiB: 7,505 resident bytes per idle connection
// before, against Valkey 8.0.1's 5,233); the poller's one goroutine starts
// a new one for it when the socket is readable, hung up or failed. Anything
// else that needs the connection's goroutine (a wake-up, an unpark, a close
// from another goroutine) starts it too (client.resume).
//
// A descriptor is in Go's own poller as well; two epoll sets may hold one
// descriptor, and closing it removes it from both, which is why a close
// from outside must resume the connection (client.closeConn): no event
// would come.
type idlePoller struct {
	once sync.Once
	err  error
	epfd int
	// file is the epoll set as a non-blocking file in Go's own poller (an
	// epoll descriptor is readable while it has events): the poller's
	// goroutine waits there, parked like any goroutine waiting for a
	// socket, instead of blocking a thread in epoll_wait(2) (which, at
	// GOMAXPROCS 1, kept the runtime's monitor polling every 20 us for the
	// processor stuck in the system call: a third of the loop's CPU at one
	// request per round trip). rc is its syscall.RawConn, waitFn the
	// callback (drain) and evs its events.
	file   *os.File
	rc     syscall.RawConn
	waitFn func(uintptr) bool
	evs    [128]syscall.EpollEvent
	srv    *Server
	// stop is a pipe: Close writes a byte to its write end (stop[1]) and the
	// poller, which watches the read end, ends.
	stop [2]int
	done chan struct{}
}

// epollET is EPOLLET as the event mask's type (syscall's constant is
// negative: the sign bit).
const epollET = 1 << 31

// stopToken is the epoll data of the stop pipe; a client's is its id (> 0).
const stopToken = 0

// start creates the epoll set and the poller's goroutine on first use.
func (p *idlePoller) start(s *Server) error {
	p.once.Do(func() {
		epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
		if err != nil {
			p.err = err
			return
		}
		if err := syscall.Pipe2(p.stop[:], syscall.O_CLOEXEC|syscall.O_NONBLOCK); err != nil {
			syscall.Close(epfd)
			p.err = err
			return
		}
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN}
		setToken(&ev, stopToken)
		if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, p.stop[0], &ev); err != nil {
			syscall.Close(epfd)
			syscall.Close(p.stop[0])
			syscall.Close(p.stop[1])
			p.err = err
			return
		}
		if err := syscall.SetNonblock(epfd, true); err != nil {
			syscall.Close(epfd)
			syscall.Close(p.stop[0])
			syscall.Close(p.stop[1])
			p.err = err
			return
		}
		p.file = os.NewFile(uintptr(epfd), "epoll")
		rc, err := p.file.SyscallConn()
		if err != nil {
			p.file.Close()
			syscall.Close(p.stop[0])
			syscall.Close(p.stop[1])
			p.err = err
			return
		}
		p.epfd, p.rc, p.srv = epfd, rc, s
		p.waitFn = p.drain
		p.done = make(chan struct{})
		go p.run(s)
	})
	return p.err
}

// setToken stores a 64-bit token in the event's data (Fd and Pad are its
// two halves).
func setToken(ev *syscall.EpollEvent, tok int64) {
	ev.Fd = int32(uint32(tok))
	ev.Pad = int32(uint32(uint64(tok) >> 32))
}

func token(ev *syscall.EpollEvent) int64 {
	return int64(uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32)
}

// run is the poller's goroutine: it waits in Go's poller until the epoll
// set has events and drains them (drain) until the stop pipe is read or
// the set fails.
func (p *idlePoller) run(s *Server) {
	defer close(p.done)
	if err := p.rc.Read(p.waitFn); err != nil {
		s.log.Warn("The idle connection poller failed: idle connections keep their goroutines", "err", err)
	}
}

// drain is run's callback for syscall.RawConn.Read: epoll_wait(2) without
// a timeout (a raw system call: it never blocks) until it returns fewer
// events than it has room for, each event naming a client by id, which is
// served (io-model loop: client.loopServe) or resumed if it is still
// connected and asleep; false then (Go's poller waits for the set to be
// readable again: an event that came after the last epoll_wait makes it
// so), true once the stop pipe is read or the set failed.
func (p *idlePoller) drain(fd uintptr) bool {
	s := p.srv
	for {
		n, e := epollWaitNow(int(fd), p.evs[:])
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			s.log.Warn("The idle connection poller failed: idle connections keep their goroutines", "err", e)
			return true
		}
		for i := 0; i < n; i++ {
			id := token(&p.evs[i])
			if id == stopToken {
				return true
			}
			s.clientsMu.Lock()
			c := s.clients[id]
			s.clientsMu.Unlock()
			if c == nil {
				continue
			}
			if s.ioLoop.Load() {
				c.loopServe() // the event loop (loop.go)
			} else {
				c.resume()
			}
		}
		if n < len(p.evs) {
			return false
		}
	}
}

// epollWaitNow is epoll_wait(2) of fd into evs with a zero timeout, as a
// raw system call (rawio.go: it does not block): the events, or the errno.
func epollWaitNow(fd int, evs []syscall.EpollEvent) (int, syscall.Errno) {
	r, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_WAIT, uintptr(fd), uintptr(unsafe.Pointer(&evs[0])), uintptr(len(evs)), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), 0
}

// close ends the poller's goroutine, if it was started, and waits for it.
func (p *idlePoller) close() {
	started := false
	p.once.Do(func() { p.err = syscall.EINVAL }) // never start after close
	if p.done != nil {
		started = true
	}
	if !started {
		return
	}
	syscall.Write(p.stop[1], []byte{1})
	<-p.done
	p.file.Close()
	syscall.Close(p.stop[0])
	syscall.Close(p.stop[1])
}

// sleep parks c's socket in the poller and reports whether the calling
// goroutine, c's, must end: true once the socket is armed (or another
// goroutine already resumed c), false when c must carry on in this
// goroutine (the poller is off, or the socket is closed).
func (c *client) sleep() bool {
	p := &c.s.idle
	if p.start(c.s) != nil {
		return false
	}
	c.wakeMu.Lock()
	if c.killed.Load() {
		c.wakeMu.Unlock()
		return false
	}
	if c.woken {
		// A wake-up came after the goroutine last looked at its output
		// (the cron's own demote sets one when it finds the goroutine
		// between a reply and its next read): it looks again first, then
		// sleeps. The wake-up is consumed here and the demote kept; under
		// a manual clock the cron ticks only when the clock moves, so a
		// dropped demote left the connection awake for good
		// (TestDemoteRightAfterReplySleeps).
		c.woken = false
		c.nc.SetReadDeadline(time.Time{})
		c.demote.Store(true)
		c.wakeMu.Unlock()
		return false
	}
	c.asleep.Store(true)
	c.wakeMu.Unlock()
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLONESHOT}
	c.armedET = c.s.ioLoop.Load()
	if c.armedET {
		// The event loop leaves a socket it served armed (loop.go).
		ev.Events = syscall.EPOLLIN | syscall.EPOLLRDHUP | epollET
	}
	setToken(&ev, c.id)
	var cerr error
	err := c.raw.Control(func(fd uintptr) {
		// Re-armed after the first time (one shot), added the first.
		if cerr = syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_MOD, int(fd), &ev); cerr == syscall.ENOENT {
			cerr = syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_ADD, int(fd), &ev)
		}
	})
	if err == nil && cerr == nil {
		return true
	}
	c.wakeMu.Lock()
	defer c.wakeMu.Unlock()
	if c.asleep.Load() {
		c.asleep.Store(false)
		return false
	}
	return true // resumed meanwhile: that goroutine serves c
}

// requestSleep asks c's goroutine to sleep (the clients cron's demote): the
// request and the interrupt of its blocked read are set under wakeMu, and
// an asleep c is left asleep. Setting demote first and calling wake after,
// as the cron did, let the goroutine take the request and fall asleep in
// between, and the wake then resumed it with no request left: awake for
// good under a manual clock, where the cron ticks only when the clock
// moves (TestDemoteRightAfterReplySleeps, 1 run in 20 under -race).
func (c *client) requestSleep() {
	c.wakeMu.Lock()
	defer c.wakeMu.Unlock()
	if c.asleep.Load() {
		return
	}
	c.demote.Store(true)
	c.woken = true
	c.nc.SetReadDeadline(time.Unix(1, 0))
}

// resume starts c's goroutine again if c is asleep (the poller saw its
// socket, or something else needs it). Any goroutine may call it.
func (c *client) resume() {
	c.wakeMu.Lock()
	defer c.wakeMu.Unlock()
	c.resumeLocked()
}

// resumeLocked is resume with wakeMu held; it reports whether c was asleep.
func (c *client) resumeLocked() bool {
	if !c.asleep.Load() {
		return false
	}
	c.asleep.Store(false)
	go c.serveLoop()
	return true
}

// closeConn closes c's connection from any goroutine; an asleep c is
// resumed, so its goroutine sees the close and cleans up.
func (c *client) closeConn() {
	c.hangUp()
	c.resume()
}

// hangUp ends c's connection without waiting, from any goroutine, the
// connection's own too. A plain TCP socket is shut down both ways
// (shutdown(2): the peer sees the end at once, a read or write of the
// connection's goroutine fails or ends, and cleanup closes the descriptor):
// net.Conn.Close would wait for the socket's read in progress, and the
// connection's goroutine runs its commands inside that read (rawReadOnce),
// so a command that closes its own connection, or a command of another
// client that closes this one under the store lock this one waits for,
// would never return. Other connections are closed.
func (c *client) hangUp() {
	if !c.rawRead {
		c.nc.Close()
		return
	}
	if err := c.raw.Control(func(fd uintptr) { unix.Shutdown(int(fd), unix.SHUT_RDWR) }); err != nil {
		c.nc.Close() // already closing: Close returns at once
	}
}
