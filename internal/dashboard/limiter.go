package dashboard

import (
	"container/list"
	"net"
	"net/netip"
	"sync"

	"github.com/emqd/emqd/clock"
)

// The sign-in limiter (docs/operations.md §2.2, §2.6). The login form
// checks a password by opening a connection with AUTH; the server's own
// per-connection delay (§11) never starts, since each attempt is a fresh
// connection, and the server sees the dashboard, not the browser. So the
// dashboard counts wrong passwords per client address itself: the first
// loginFreeFailures consecutive ones from an address are answered at
// once; after that the address is refused (HTTP 429, nothing sent to the
// server) for a delay that doubles from loginDelayBaseMs up to
// loginDelayCapMs, on the dashboard's clock. A successful login clears the
// address. At most loginMaxAddrs addresses are kept; the one touched
// longest ago is dropped first.

const (
	loginFreeFailures = 3
	loginDelayBaseMs  = 1000
	loginDelayCapMs   = 60_000
	loginMaxAddrs     = 10_000
	// loginLogEveryMs: at most one log line of each kind per second.
	loginLogEveryMs = 1000
)

// loginDelayMs is the delay (ms) after an address's fails-th consecutive
// wrong password: 0 below loginFreeFailures, then 1000, 2000, 4000, ...
// capped at 60000.
func loginDelayMs(fails int) int64 {
	if fails < loginFreeFailures {
		return 0
	}
	return min(int64(loginDelayBaseMs)<<min(fails-loginFreeFailures, 16), loginDelayCapMs)
}

type loginEntry struct {
	addr     string
	fails    int   // consecutive wrong passwords
	inflight int   // attempts admitted and not yet answered
	untilMs  int64 // refused before this time (server clock, ms)
	elem     *list.Element
}

type loginLimiter struct {
	clk clock.Clock
	max int

	mu    sync.Mutex
	m     map[string]*loginEntry
	order *list.List // of *loginEntry, most recently touched at the front
	// The log's rate limits (logWrong, logRefused): last line's time,
	// lines left out since.
	lastLogMs  [2]int64
	suppressed [2]int
}

// The dashboard's two rate-limited log lines.
const (
	logWrong   = iota // a wrong password the server refused
	logRefused        // an attempt refused here (429)
)

func newLoginLimiter(clk clock.Clock, max int) *loginLimiter {
	return &loginLimiter{clk: clk, max: max, m: map[string]*loginEntry{}, order: list.New(), lastLogMs: [2]int64{-1 << 62, -1 << 62}}
}

// clientAddr is the address a request is counted under: the IP of
// r.RemoteAddr (X-Forwarded-For and the like are not trusted: any client
// can send them), an IPv6 address cut to its /64 (one host commonly holds
// a whole /64).
func clientAddr(remote string) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	ip = ip.Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}

// admit reports whether an attempt from addr may go to the server now; if
// not, waitMs is how long (ms, at least 1) until it may. An admitted
// attempt must be followed by done. Once an address has reached
// loginFreeFailures (counting attempts in flight), only one attempt at a
// time is admitted, so parallel requests cannot get around the delay.
func (l *loginLimiter) admit(addr string) (ok bool, waitMs int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clk.NowMs()
	e := l.m[addr]
	if e == nil {
		e = &loginEntry{addr: addr}
		e.elem = l.order.PushFront(e)
		l.m[addr] = e
		l.evictLocked()
	} else {
		l.order.MoveToFront(e.elem)
	}
	if now < e.untilMs {
		return false, e.untilMs - now
	}
	if e.inflight > 0 && e.fails+e.inflight >= loginFreeFailures {
		return false, loginDelayBaseMs
	}
	e.inflight++
	return true, 0
}

// done records an admitted attempt's outcome: wrong (a wrong password)
// counts a failure and returns the address's consecutive failures; a
// success (wrong false, accepted) clears the address; any other outcome
// (the server unreachable) changes nothing but the in-flight count.
func (l *loginLimiter) done(addr string, wrong, accepted bool) (fails int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.m[addr]
	if e == nil { // dropped from the table meanwhile
		if !wrong {
			return 0
		}
		e = &loginEntry{addr: addr, inflight: 1}
		e.elem = l.order.PushFront(e)
		l.m[addr] = e
		l.evictLocked()
	}
	e.inflight = max(e.inflight-1, 0)
	switch {
	case wrong:
		e.fails++
		if d := loginDelayMs(e.fails); d > 0 {
			e.untilMs = l.clk.NowMs() + d
		}
	case accepted:
		e.fails, e.untilMs = 0, 0
		if e.inflight == 0 {
			l.order.Remove(e.elem)
			delete(l.m, addr)
		}
	}
	return e.fails
}

// evictLocked drops the addresses touched longest ago beyond max.
func (l *loginLimiter) evictLocked() {
	for len(l.m) > l.max {
		e := l.order.Remove(l.order.Back()).(*loginEntry)
		delete(l.m, e.addr)
	}
}

// size is the number of addresses kept.
func (l *loginLimiter) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.m)
}

// logAllowed rate-limits log line kind (logWrong, logRefused): true at
// most once per loginLogEveryMs of the clock, with the lines of that kind
// left out since the previous one.
func (l *loginLimiter) logAllowed(kind int) (ok bool, suppressed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clk.NowMs()
	if now-l.lastLogMs[kind] < loginLogEveryMs {
		l.suppressed[kind]++
		return false, 0
	}
	n := l.suppressed[kind]
	l.lastLogMs[kind], l.suppressed[kind] = now, 0
	return true, n
}
