package server

import (
	"errors"
	"time"
)

// The event loop (io-model loop; docs/architecture.md §2.1, docs/operations.md
// §8). Under io-model goroutine a plain TCP connection has a goroutine of
// its own while it is active: each round trip it parks in Go's netpoller
// and the scheduler wakes it (its pass was 11-12% of emqd's CPU at one
// request per round trip, against Valkey's epoll_wait at 8.1%:
// bench/README.md "The I/O model"). Under io-model loop a connection with
// nothing unparsed and nothing to write always waits in the idle poller's
// epoll set (idlepoll.go), not only after idleShrinkMs, and the poller's
// goroutine, the loop, serves a ready connection itself: it does what the
// connection's goroutine would in its read (rawReadOnce: read(2), the
// complete commands as one batch under the store lock, the reply by
// write(2) on the read's descriptor) and leaves the connection in the set.
// A round trip is then epoll_wait, read(2) and write(2) in one goroutine,
// as Valkey's event loop does, with no goroutine parked or woken.
//
// Anything that is not plain goes to a goroutine of the connection's own
// (serveFrom), as under io-model goroutine, which gives the connection
// back to the loop when it next waits with nothing unparsed (read answers
// errIdle, client.sleep): the end of the stream or a read error, a read
// that filled the buffer, a command not complete in it, a parked command
// (it waits asleep; unpark starts a goroutine), a batch that must wait (a
// delayed authentication reply, CLIENT PAUSE: loopDefer), a reply the
// socket did not take in full (loopBlocked), frames other goroutines
// queued meanwhile (a wake-up: woken), a kill, a demote. TLS and
// in-process connections never reach the loop.
//
// In the loop's set a socket is edge-triggered (EPOLLET, not EPOLLONESHOT):
// the loop leaves a connection it served in the set with no epoll_ctl of
// its own. That is safe because it stops only after a short read (the
// receive queue was emptied, so later bytes raise a new edge) or EAGAIN;
// an edge that comes while a goroutine serves the connection is dropped
// (the goroutine reads for itself), and a goroutine that gives the
// connection back re-arms it (EPOLL_CTL_MOD, which reports a socket
// already readable).

// loopServe serves c, whose socket the loop found ready: inline when the
// exchange is plain, else by handing c to a goroutine of its own. Called
// by the loop only.
func (c *client) loopServe() {
	c.wakeMu.Lock()
	if !c.asleep.Load() {
		c.wakeMu.Unlock()
		return // a goroutine serves c: it reads for itself
	}
	c.asleep.Store(false)
	c.wakeMu.Unlock()
	// The loop is c's goroutine from here until it sleeps again or hands
	// c over.
	defer c.loopRecover()
	c.inLoop = true
	c.rn, c.rerr = 0, nil
	c.loopWait = false
	if c.loopFn == nil {
		c.loopFn = c.loopRead
	}
	err := c.raw.Control(c.loopFn)
	c.inLoop = false
	if err != nil {
		go c.serveLoop() // closed: its read fails and cleanup runs
		return
	}
	if c.loopWait && !c.loopBlocked {
		// A socket armed one-shot (asleep from before a CONFIG SET
		// io-model loop) is not armed any more: its goroutine re-arms it.
		if c.armedET && c.loopSleep() {
			return
		}
		go c.serveLoop()
		return
	}
	c.loopBlocked = false
	n, rerr := c.rn, c.rerr
	if n > 0 {
		c.rbuf.Store(int64(c.rd.Held()))
	}
	if rerr != nil {
		c.rd.Release()
	}
	go c.serveFrom(true, n, rerr)
}

// loopRead is loopServe's callback for syscall.RawConn.Control (a method
// value made once per connection): rawReadOnce on the descriptor, and
// whether it ended plain (loopWait: the exchange is done, the reader holds
// nothing).
func (c *client) loopRead(fd uintptr) {
	c.loopWait = !c.rawReadOnce(fd)
}

// loopSleep leaves c asleep in the loop's set after the loop served it
// (its socket stays armed: edge-triggered), unless it was killed or woken
// meanwhile (frames queued by another goroutine: its goroutine writes
// them); false then, and the caller hands c over.
func (c *client) loopSleep() bool {
	c.wakeMu.Lock()
	defer c.wakeMu.Unlock()
	if c.killed.Load() {
		return false
	}
	if c.woken {
		c.woken = false
		c.nc.SetReadDeadline(time.Time{})
		return false
	}
	c.asleep.Store(true)
	return true
}

// loopRecover is loopServe's deferred guard: a panic outside any command
// while the loop served c closes c (recoverConn) and the loop carries on.
func (c *client) loopRecover() {
	r := recover()
	if r == nil {
		return
	}
	c.inLoop = false
	c.readFd = -1
	c.panicked(r)
	go c.cleanup()
}

// errLoopBlocked is client.write's answer in the loop when the socket did
// not take the whole reply: flushAt puts the rest back in the queue and
// the connection's goroutine writes it, waiting for the socket.
var errLoopBlocked = errors.New("reply left for the connection's goroutine")
