package dashboard

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/emqd/emqd/clock"
)

// TestLoginLimiterBounded: the table keeps at most loginMaxAddrs
// addresses; the one touched longest ago goes first.
func TestLoginLimiterBounded(t *testing.T) {
	clk := clock.NewManual(1_700_000_000_000)
	l := newLoginLimiter(clk, loginMaxAddrs)
	fail := func(addr string) {
		ok, _ := l.admit(addr)
		require.True(t, ok, addr)
		l.done(addr, true, false)
	}
	for range 3 {
		fail("192.0.2.1")
	}
	ok, wait := l.admit("192.0.2.1")
	require.False(t, ok)
	require.Equal(t, int64(1000), wait)
	for i := 0; i < loginMaxAddrs-1; i++ {
		fail(fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255))
	}
	require.Equal(t, loginMaxAddrs, l.size())
	// 192.0.2.1 was touched last by the refusal, before all of these:
	// one more address drops it (and it starts afresh).
	fail("198.51.100.7")
	require.Equal(t, loginMaxAddrs, l.size())
	ok, _ = l.admit("192.0.2.1")
	require.True(t, ok)
	l.done("192.0.2.1", false, true)
	require.Equal(t, loginMaxAddrs-1, l.size(), "a success removes the address")
	// The oldest of the rest (10.0.0.0) went with it; 10.0.0.1 is still there.
	_, in0 := l.m["10.0.0.0"]
	_, in1 := l.m["10.0.0.1"]
	require.False(t, in0)
	require.True(t, in1)
}

// TestLoginLimiterParallel: once an address has reached the free
// failures counting attempts in flight, only one attempt at a time goes.
func TestLoginLimiterParallel(t *testing.T) {
	l := newLoginLimiter(clock.NewManual(0), loginMaxAddrs)
	for i := 0; i < loginFreeFailures; i++ {
		ok, _ := l.admit("a")
		require.True(t, ok, "attempt %d in flight", i)
	}
	ok, _ := l.admit("a")
	require.False(t, ok, "a 4th in parallel")
	require.Equal(t, 1, l.done("a", true, false))
	ok, _ = l.admit("a")
	require.False(t, ok, "still 3 counting the 2 in flight")
}

func TestClientAddr(t *testing.T) {
	require.Equal(t, "127.0.0.1", clientAddr("127.0.0.1:5555"))
	require.Equal(t, "192.0.2.9", clientAddr("[::ffff:192.0.2.9]:80"))
	require.Equal(t, "2001:db8:1:2::/64", clientAddr("[2001:db8:1:2:3:4:5:6]:443"))
	require.Equal(t, clientAddr("[2001:db8:1:2::1]:1"), clientAddr("[2001:db8:1:2::ffff]:2"))
}
