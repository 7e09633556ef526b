package server

import (
	"fmt"
	"os"
	"runtime/debug"
	"time"
)

// Panics (docs/operations.md §6). Every unit of work that runs under the
// store lock is guarded: a client's command (EXEC with its queued commands
// is one unit), a parked client's retry, one queue of the stalled-job
// sweep. A panic inside a unit is judged by the store's Mutations counter:
//
//   - unchanged since the unit began (the panic came while parsing,
//     reading or judging): nothing was written, so the unit ends with an
//     error reply, the stack goes to the log, the panic is counted (INFO
//     emq contained_panics) and every other client carries on;
//   - changed (the panic came while applying a write): the keyspace may
//     hold half a command that the append-only file does not (the file
//     receives only whole units, after they are applied), so the server
//     logs the stack and stops with exit status 2. A restart replays the
//     file: a consistent keyspace without the half-applied command, whose
//     client never got a reply.
//
// A panic in a connection's own code (reading, parsing, writing replies),
// outside any unit, never touches the keyspace: that connection is closed
// with an error and the stack logged.

// crashExitStatus is the exit status after a panic in the middle of a
// write (that of an unrecovered Go panic).
const crashExitStatus = 2

// errPanicked is the reply to a unit that panicked before writing.
func errPanicked(name string) string {
	return "ERR internal error in '" + name + "': the command failed before writing anything and was not applied (the stack is in the server log)"
}

// contained reports whether the panic r of a unit that began at mutation
// count m0 is contained (nothing written: logged and counted) or, when the
// keyspace changed, stops the server (s.crash). what says which unit;
// under the store lock.
func (s *Server) contained(r any, m0 uint64, what, name, addr string) bool {
	stack := debug.Stack()
	if s.store.Mutations() == m0 {
		s.statPanics++
		s.log.Error("A "+what+" panicked before writing anything: it was answered with an error and the server carries on",
			"cmd", name, "client", addr, "panic", fmt.Sprint(r), "stack", string(stack))
		return true
	}
	s.crash(what, name, addr, r, stack)
	return false
}

// crash stops the server after a panic in the middle of a write: the stack
// is logged and the process exits (Options.onCrash, in tests, is called
// instead, and the unit's connection is closed).
func (s *Server) crash(what, name, addr string, r any, stack []byte) {
	s.log.Error("=== EMQD BUG REPORT: a "+what+" panicked after it began changing the keyspace; the server stops. "+
		"The append-only file holds only whole commands: a restart replays a consistent keyspace without this one, "+
		"whose client got no reply ===",
		"cmd", name, "client", addr, "panic", fmt.Sprint(r), "stack", string(stack))
	if s.onCrash != nil {
		s.onCrash(fmt.Sprint(r))
		return
	}
	os.Exit(crashExitStatus)
}

// commandName is argv[0] as Valkey quotes it in errors (at most 128 bytes).
func commandName(argv [][]byte) string {
	if len(argv) == 0 {
		return ""
	}
	return string(cPrefix(argv[0], 128))
}

// execUnit runs one command of a batch as a unit (see above).
func (c *client) execUnit(argv [][]byte) {
	m0, mark := c.s.store.Mutations(), c.w.Len()
	defer c.recoverCommand(m0, mark, argv)
	c.exec(argv)
}

// recoverCommand is execUnit's deferred guard.
func (c *client) recoverCommand(m0 uint64, mark int, argv [][]byte) {
	r := recover()
	if r == nil {
		return
	}
	// exec did not finish: the frames the command sent to this connection
	// go with its reply.
	c.executing = false
	c.pushes.Reset()
	name := commandName(argv)
	if !c.s.contained(r, m0, "command", name, c.addr) {
		c.killed.Store(true)
		c.closeAfter = true
		c.w.Buf = c.w.Buf[:mark]
		return
	}
	c.w.Buf = c.w.Buf[:mark]
	msg := errPanicked(name)
	c.w.Error(msg)
	c.countError(msg)
}

// recoverConn is serve's deferred guard: a panic in the connection's own
// code closes it, with an error reply when one can still be written.
func (c *client) recoverConn() {
	r := recover()
	if r == nil {
		return
	}
	c.panicked(r)
}

// panicked is recoverConn after the recover: r is the panic's value.
func (c *client) panicked(r any) {
	c.s.log.Error("A connection panicked outside any command: it is closed, the server carries on",
		"id", c.id, "client", c.addr, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
	c.outMu.Lock()
	c.out = append(c.out[:0], "-ERR internal error while serving this connection: it is closed (the stack is in the server log)\r\n"...)
	if !c.behind {
		c.writing = false // a write this goroutine began is over
	}
	c.outMu.Unlock()
	c.flushOut()
	// The error reply may be the writer goroutine's to write
	// (writeBehind): it gets a second, then the connection closes.
	c.nc.SetWriteDeadline(time.Now().Add(time.Second))
	c.waitWriter()
	c.nc.Close()
}
