package server

import "time"

// Failed authentication (docs/operations.md §11). Every failed AUTH or
// HELLO ... AUTH is counted (INFO stats acl_access_denied_auth, Valkey 8's
// field) and logged at warning level with the client's address, at most one
// line per second of the server clock carrying how many failures were left
// out. A connection's first authFreeFailures consecutive failures are
// answered at once; each further one holds that connection (its reply and
// the commands behind it) for a delay that doubles from authDelayBaseMs up
// to authDelayCapMs, on the server clock and outside the store lock, so
// other clients go on. A success clears the count.

const (
	authFreeFailures = 3
	authDelayBaseMs  = 100
	authDelayCapMs   = 2000
)

// authDelayMs is the delay (ms) of a connection's fails-th consecutive
// failed authentication: 0 up to authFreeFailures, then 100, 200, 400, ...
// capped at 2000.
func authDelayMs(fails int) int64 {
	if fails <= authFreeFailures {
		return 0
	}
	return min(int64(authDelayBaseMs)<<min(fails-authFreeFailures-1, 16), authDelayCapMs)
}

// authFailed records a failed authentication by c's command cmd ("auth",
// "hello"), under the store lock: the counter, the rate-limited log line,
// and the delay of the connection's next reply (waitAuthDelay).
func (c *client) authFailed(cmd string) {
	s := c.s
	s.statAuthDenied.Add(1)
	c.authFails++
	if s.obs != nil {
		if ok, n := s.obs.authLog.allow(time.UnixMilli(s.clock.NowMs())); ok {
			s.log.Warn("Failed authentication", "id", c.id, "addr", c.addr, "command", cmd,
				"failures", c.authFails, "suppressed", n)
		}
	}
	c.authDelay = authDelayMs(c.authFails)
}

// waitAuthDelay holds the connection's goroutine for the delay its last
// failed authentication scheduled, before its replies go out (not under
// the store lock). Server shutdown ends the wait early.
func (c *client) waitAuthDelay() {
	d := c.authDelay
	if d == 0 {
		return
	}
	c.authDelay = 0
	fired := make(chan struct{})
	t := c.s.clock.AfterFunc(d, func() { close(fired) })
	if h := c.s.authDelayed; h != nil {
		h(c.id, d)
	}
	select {
	case <-fired:
	case <-c.s.stopping:
		t.Stop()
	}
}
