package server

// The clients cron (docs/operations.md §8): hz times a second of the server
// clock (so clock.Manual drives it in tests) it closes the clients idle for
// longer than `timeout` seconds, as Valkey's clientsCronHandleTimeout: idle
// means no byte read from them and none written to them; a client parked
// in a blocking command is never idle (its wait has its own timeout), and a
// client half-way through sending a command is (it holds a slot and a
// buffer for nothing).

// clientsCron is the cron's state (store lock).
type clientsCron struct {
	periodic
	// lastWall and lastMono are the server clock (ms) and the monotonic
	// clock (ns) at the previous tick: their difference moving is a jump
	// of the server clock (clockMoved).
	lastWall, lastMono int64
	jumps              int64 // jumps seen (tests)
	// peakIn and peakOut are the biggest input and output buffers seen
	// in each of the last peakSlots seconds (server clock s mod
	// peakSlots): INFO's client_recent_max_input_buffer and
	// client_recent_max_output_buffer are their maxima (trackPeaksLocked).
	peakIn, peakOut [peakSlots]int64
}

// peakSlots is how many seconds the recent client buffer peaks cover,
// Valkey's CLIENTS_PEAK_MEM_USAGE_SLOTS (server.c).
const peakSlots = 8

// clockJumpMs is how far the server clock may drift from the monotonic
// clock between two ticks before the due-time timers are re-armed: far
// above a tick's jitter, far below any delay a user would notice.
const clockJumpMs = 100

// startClientsCron arms the cron (Start).
func (s *Server) startClientsCron() {
	s.store.Lock()
	s.armClientsCronLocked()
	s.store.Unlock()
	s.OnClose(func() error {
		s.store.Lock()
		defer s.store.Unlock()
		s.ccron.halt()
		return nil
	})
}

func (s *Server) armClientsCronLocked() { s.ccron.arm(s.clock, s.hzPeriodMs(), s.clientsCronTick) }

func (s *Server) clientsCronTick() {
	s.store.Lock()
	defer s.store.Unlock()
	if s.ccron.stopped() {
		return
	}
	now := s.clock.NowMs()
	s.closeIdleClientsLocked(now)
	s.checkOutputLimitsLocked()
	s.trackPeaksLocked(now)
	s.demoteIdleClients(now)
	s.checkClockLocked(now)
	s.pruneQueuesLocked(now)
	s.armClientsCronLocked()
}

// checkClockLocked compares how far the server clock and the monotonic
// clock moved since the last tick. A timer runs on the monotonic clock,
// but a scheduled job's due time is a reading of the server clock, so when
// the server clock jumps (the system clock stepped, EMQ.DEBUG CLOCK
// ADVANCE) a timer armed for the old distance fires early or late: every
// due-time timer is then dropped and its queue retried at once, which
// claims what is due now and arms a new timer for the rest (docs/verbs.md
// §4.3.3).
func (s *Server) checkClockLocked(now int64) {
	mono := nanotime()
	c := &s.ccron
	if c.lastMono != 0 {
		drift := (now - c.lastWall) - (mono-c.lastMono)/1e6
		if drift > clockJumpMs || drift < -clockJumpMs {
			c.jumps++
			s.log.Debug("The server clock moved: due-time timers re-armed", "drift_ms", drift)
			s.blk.rearmDue(s)
		}
	}
	c.lastWall, c.lastMono = now, mono
}

// closeIdleClientsLocked closes every client idle for longer than timeout
// (store lock held: c.park and the subscriptions are read under it).
func (s *Server) closeIdleClientsLocked(now int64) {
	max := s.idleTimeout.Load() * 1000
	if max <= 0 {
		return
	}
	var idle []*client
	s.clientsMu.Lock()
	for _, c := range s.clients {
		// Blocked clients and subscribers (RESP2 and RESP3) are never
		// timed out, as Valkey's clientsCronHandleTimeout exempts
		// CLIENT_BLOCKED and CLIENT_PUBSUB (docs/operations.md §8).
		if c.park == nil && c.subscriptions() == 0 && now-c.lastIO.Load() > max {
			idle = append(idle, c)
		}
	}
	s.clientsMu.Unlock()
	for _, c := range idle {
		s.log.Debug("Closing idle client", "id", c.id, "addr", c.addr, "idle_ms", now-c.lastIO.Load())
		c.killed.Store(true)
		c.closeConn()
	}
}

// checkOutputLimitsLocked closes every client that has been over the soft
// output limit of its class for longer than its seconds, as Valkey's
// clientsCron does each tick (closeClientOnOutputBufferLimitReached with
// async 0): a client whose output stopped growing while over the soft
// limit (it stopped reading after its last request) is closed too, not
// only one whose output grows again (enqueueLocked's check). Nothing to do
// while no class has a soft limit. Store lock held.
func (s *Server) checkOutputLimitsLocked() {
	if l := s.outLimits.Load(); l.normal.soft <= 0 && l.pubsub.soft <= 0 {
		return
	}
	var over []*client
	s.clientsMu.Lock()
	for _, c := range s.clients {
		c.outMu.Lock()
		if c.overOutputLimit(int64(len(c.out) + len(c.wq) + c.inWrite)) {
			over = append(over, c)
		}
		c.outMu.Unlock()
	}
	s.clientsMu.Unlock()
	for _, c := range over {
		c.outputOverLimit()
	}
}

// trackPeaksLocked records the biggest input and output buffer of the
// connected clients in this second's slot, after zeroing the next slot, as
// Valkey's clientsCronTrackExpansiveClients: the input is the read buffer
// held, the bytes buffered unparsed (a big argument being received) and
// the arguments of a command so far (CLIENT LIST rbs, qbuf and argv-mem),
// the output is what the kernel has not taken (omem).
// Store lock held.
func (s *Server) trackPeaksLocked(now int64) {
	cc := &s.ccron
	slot := (now / 1000) % peakSlots
	if slot < 0 {
		slot += peakSlots
	}
	next := (slot + 1) % peakSlots
	cc.peakIn[next], cc.peakOut[next] = 0, 0
	s.clientsMu.Lock()
	defer s.clientsMu.Unlock()
	for _, c := range s.clients {
		cc.peakIn[slot] = max(cc.peakIn[slot], c.rbuf.Load()+c.qbuf.Load()+c.argvMem.Load())
		cc.peakOut[slot] = max(cc.peakOut[slot], c.outputMemory())
	}
}

// recentPeaksLocked is INFO's client_recent_max_input_buffer and
// client_recent_max_output_buffer: the biggest of the last peakSlots
// seconds (Valkey's getExpansiveClientsInfo). Store lock held.
func (s *Server) recentPeaksLocked() (in, out int64) {
	for i := range peakSlots {
		in, out = max(in, s.ccron.peakIn[i]), max(out, s.ccron.peakOut[i])
	}
	return in, out
}

// demoteIdleClients asks every plain TCP connection that has read and
// written nothing for idleShrinkMs (server clock) to give up its goroutine
// to the idle poller (client.sleep, idlepoll.go), so an idle connection
// holds no goroutine stack (docs/operations.md §8). The request is a flag
// and a read deadline in the past, as a wake-up's: the connection's
// goroutine sees it once it has flushed its output and has nothing
// unparsed. Connections already asleep are left alone.
func (s *Server) demoteIdleClients(now int64) {
	s.clientsMu.Lock()
	defer s.clientsMu.Unlock()
	for _, c := range s.clients {
		if !c.rawRead || c.asleep.Load() || c.demote.Load() || c.killed.Load() || now-c.lastIO.Load() < idleShrinkMs {
			continue
		}
		c.requestSleep()
	}
}
