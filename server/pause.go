package server

import (
	"math"
	"strings"
	"time"

	"github.com/emqd/emqd/clock"
	"github.com/emqd/emqd/internal/num"
	"github.com/emqd/emqd/internal/store"
)

// CLIENT PAUSE / UNPAUSE (docs/compat.md §1.5), as Valkey 8.0.1's
// processCommand: while a pause is on, a command it covers is held, with
// every command behind it on that connection, until the pause ends (its
// timeout on the server clock, or CLIENT UNPAUSE); a held client whose
// connection closed meanwhile is not run when the pause ends: its held
// commands are dropped, as Valkey frees a disconnected client at once
// (a write held from a client that left never happens). WRITE covers the
// commands that write or may replicate (PUBLISH) and EXEC of a transaction
// that queued one, so the EMQ read verbs (EMQ.COUNTS, EMQ.JOB, EMQ.LIST)
// and every read go through; ALL covers every command, CLIENT UNPAUSE
// included, as in Valkey. The client that paused is held like any other.
// While a pause is on the active expiry cycle reclaims nothing (Valkey
// stops expiring keys during a pause so the dataset does not change), and
// emqd's own writers wait too: the stalled-job sweep skips its ticks and
// the schedules fire when the pause ends (sweeper.go, scheduler.go).

const (
	pauseNone = iota
	pauseWrite
	pauseAll
)

// pauseState is the server's pause (store lock).
type pauseState struct {
	mode  int
	until int64         // server clock ms
	done  chan struct{} // closed when the pause ends
	timer clock.Timer
}

func clientPauseCommands() []serverCmd {
	return []serverCmd{
		{spec: store.NewCommand("client|pause", -3, nil, store.FlagAdmin, store.FlagNoScript, store.FlagLoading, store.FlagStale), run: cmdClientPause},
		{spec: store.NewCommand("client|unpause", 2, nil, store.FlagAdmin, store.FlagNoScript, store.FlagLoading, store.FlagStale), run: cmdClientUnpause},
		{spec: store.NewCommand("client|no-evict", 3, nil, store.FlagAdmin, store.FlagNoScript, store.FlagLoading, store.FlagStale), run: cmdClientOnOff},
		{spec: store.NewCommand("client|no-touch", 3, nil, store.FlagNoScript, store.FlagLoading, store.FlagStale), run: cmdClientOnOff},
	}
}

// cmdClientPause is CLIENT PAUSE timeout [WRITE|ALL] (timeout in ms,
// 0..MaxInt64-now, else `ERR timeout is out of range` as Valkey). A
// pause already on keeps the later end and the wider mode, as Valkey's
// pauseActions.
func cmdClientPause(c *client, x *store.Ctx) {
	if len(x.Argv) > 4 {
		x.W.Error("ERR unknown subcommand or wrong number of arguments for 'PAUSE'. Try CLIENT HELP.")
		return
	}
	ms, ok := num.ParseInt(x.Argv[2])
	if !ok {
		x.W.Error("ERR timeout is not an integer or out of range")
		return
	}
	if ms < 0 {
		x.W.Error("ERR timeout is negative")
		return
	}
	if ms > 0 && ms > math.MaxInt64-x.NowMs {
		// Valkey 8.0.1's getTimeoutFromObjectOrReply: the end, now plus
		// the timeout in ms, must not overflow a signed 64-bit integer.
		x.W.Error("ERR timeout is out of range")
		return
	}
	mode := pauseAll
	if len(x.Argv) == 4 {
		switch strings.ToLower(string(x.Argv[3])) {
		case "write":
			mode = pauseWrite
		case "all":
		default:
			x.W.Error("ERR CLIENT PAUSE mode must be WRITE or ALL")
			return
		}
	}
	s := c.s
	p := &s.pause
	until := x.NowMs + min(ms, 1<<62-x.NowMs)
	if p.mode == pauseNone {
		p.done = make(chan struct{})
		p.until = until
	} else {
		p.until = max(p.until, until)
		p.timer.Stop()
	}
	p.mode = max(p.mode, mode)
	s.paused.Store(true)
	p.timer = s.clock.AfterFunc(max(p.until-x.NowMs, 0), func() {
		s.store.Lock()
		defer s.store.Unlock()
		if p.mode != pauseNone && s.clock.NowMs() >= p.until {
			s.unpauseLocked()
		}
	})
	x.W.OK()
}

// cmdClientUnpause ends the pause.
func cmdClientUnpause(c *client, x *store.Ctx) {
	c.s.unpauseLocked()
	x.W.OK()
}

// unpauseLocked ends the pause and lets the held clients go (store lock).
func (s *Server) unpauseLocked() {
	p := &s.pause
	if p.mode == pauseNone {
		return
	}
	p.timer.Stop()
	p.mode = pauseNone
	s.paused.Store(false)
	close(p.done)
	if s.sched != nil {
		s.schedArm() // fires the pause held (scheduler.go schedTick)
	}
}

// cmdClientOnOff is CLIENT NO-EVICT and CLIENT NO-TOUCH: ON or OFF, +OK.
// emqd evicts no client and keeps no access times for keys' LRU, so both
// are accepted without effect (docs/compat.md §1.5).
func cmdClientOnOff(c *client, x *store.Ctx) {
	switch strings.ToLower(string(x.Argv[2])) {
	case "on", "off":
		x.W.OK()
	default:
		x.W.Error(store.ErrSyntax)
	}
}

// heldByPause reports whether the pause holds cmd (store lock): ALL holds
// everything, WRITE the writes, the may-replicate commands and EXEC of a
// transaction that queued a write.
func (c *client) heldByPause(cmd *command) bool {
	p := &c.s.pause
	switch p.mode {
	case pauseAll:
		return true
	case pauseWrite:
		if cmd.flags&(store.FlagWrite|store.FlagMayReplicate) != 0 {
			return true
		}
		if cmd.name == "exec" {
			for _, q := range c.queue {
				if q.cmd.flags&(store.FlagWrite|store.FlagMayReplicate) != 0 {
					return true
				}
			}
		}
	}
	return false
}

// waitUnpause is where a held connection waits, outside the store lock,
// for the pause to end (or the server to stop, or the client to be
// killed), then its held commands run again.
func (c *client) waitUnpause(done <-chan struct{}) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-c.s.stopping:
			return
		case <-tick.C:
			if c.killed.Load() || c.gone() {
				return
			}
		}
	}
}
