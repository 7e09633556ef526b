package server

import "github.com/emqd/emqd/clock"

// periodic is the arm/tick/stop state of a task that re-arms itself on the
// server clock (the clients cron, the active expire cycle, the opt-in
// sweeper): the pending timer and whether the server stopped it. Every
// method runs under the store lock, and a tick checks stopped under it
// before doing anything, so no tick runs its work after halt returns.
type periodic struct {
	t    clock.Timer
	stop bool
}

// arm schedules tick after ms milliseconds of the server clock c, unless
// halted (store lock held).
func (p *periodic) arm(c clock.Clock, ms int64, tick func()) {
	if p.stop {
		return
	}
	p.t = c.AfterFunc(ms, tick)
}

// halt stops the task for good: the pending timer is cancelled and arm does
// nothing any more (store lock held).
func (p *periodic) halt() {
	p.stop = true
	if p.t != nil {
		p.t.Stop()
		p.t = nil
	}
}

// stopped reports whether halt ran (store lock held): a tick that finds it
// true returns without working or re-arming.
func (p *periodic) stopped() bool { return p.stop }

// hzPeriodMs is the period of a task that runs hz times a second: 1000/hz
// ms of the server clock, hz at least 1.
func (s *Server) hzPeriodMs() int64 { return 1000 / max(s.configInt("hz"), 1) }
