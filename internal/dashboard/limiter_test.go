package dashboard_test

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/emqd/emqd/clock"
	"github.com/emqd/emqd/server"
)

// The sign-in limiter (docs/operations.md §2.2): wrong passwords at the
// login form counted per client address, refusals sent nowhere.

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newLoggedEnv is newEnv with requirepass s3cret and the server's log kept.
func newLoggedEnv(t *testing.T) (*env, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	cfg := map[string]string{"metrics-addr": "127.0.0.1:0", "requirepass": "s3cret"}
	clk := clock.NewManual(t0)
	s := server.StartTest(t, server.Options{Clock: clk, Config: cfg,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr(), Password: "s3cret", Protocol: 2})
	t.Cleanup(func() { rdb.Close() })
	return &env{t: t, srv: s, clk: clk, rdb: rdb, base: "http://" + s.MetricsAddr()}, logs
}

// clientFrom is httpClient connecting from source address ip (another
// loopback address, so the dashboard sees another browser).
func clientFrom(t *testing.T, ip string) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Jar: jar, Transport: &http.Transport{DialContext: d.DialContext},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// authDenied reads INFO stats acl_access_denied_auth.
func (e *env) authDenied() string {
	e.t.Helper()
	info, err := e.rdb.Info(context.Background(), "stats").Result()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "acl_access_denied_auth:"); ok {
			return v
		}
	}
	e.t.Fatalf("no acl_access_denied_auth in INFO stats:\n%s", info)
	return ""
}

// loginAs posts password at the login form from client c (a fresh form
// for its CSRF token) and returns the status, page and Retry-After.
func loginAs(t *testing.T, e *env, c *http.Client, password string) (int, string, string) {
	t.Helper()
	_, page, _ := get(t, c, e.base+"/dashboard/login")
	code, page, h := post(t, c, e.base+"/dashboard/login", url.Values{"csrf": {csrfOf(t, page)},
		"password": {password}, "next": {"/dashboard/"}})
	return code, page, h.Get("Retry-After")
}

func TestLoginLimiter(t *testing.T) {
	e, logs := newLoggedEnv(t)
	c := clientFrom(t, "127.0.0.1")

	// Three wrong passwords are answered (and counted by the server: two
	// each, as go-redis tries HELLO ... AUTH, then AUTH).
	for i := 1; i <= 3; i++ {
		code, page, _ := loginAs(t, e, c, "guess")
		require.Equal(t, http.StatusUnauthorized, code, "attempt %d", i)
		require.Contains(t, page, "Wrong password.")
	}
	require.Equal(t, "6", e.authDenied())

	// The 4th, even with the right password, is refused without reaching
	// the server: no AUTH, the counter stays at 6.
	code, page, retry := loginAs(t, e, c, "s3cret")
	require.Equal(t, http.StatusTooManyRequests, code)
	require.Contains(t, page, "Too many wrong passwords from your address: try again in 1 s.")
	require.Equal(t, "1", retry)
	require.Equal(t, "6", e.authDenied())
	require.Contains(t, logs.String(), `msg="Dashboard login: wrong password" remote=127.0.0.1:`)
	require.Contains(t, logs.String(), `msg="Dashboard login refused: too many wrong passwords" remote=127.0.0.1:`)

	// Another address is not affected: its right password works at once.
	other := clientFrom(t, "127.0.0.2")
	code, _, _ = loginAs(t, e, other, "s3cret")
	require.Equal(t, http.StatusSeeOther, code)

	// Still refused 1 ms before the delay ends, answered when it has.
	e.clk.Advance(999)
	code, _, retry = loginAs(t, e, c, "s3cret")
	require.Equal(t, http.StatusTooManyRequests, code)
	require.Equal(t, "1", retry)
	e.clk.Advance(1)
	// A 4th wrong password: answered, then the delay doubles (2 s).
	code, _, _ = loginAs(t, e, c, "guess")
	require.Equal(t, http.StatusUnauthorized, code)
	require.Equal(t, "8", e.authDenied())
	code, page, retry = loginAs(t, e, c, "s3cret")
	require.Equal(t, http.StatusTooManyRequests, code)
	require.Contains(t, page, "try again in 2 s.")
	require.Equal(t, "2", retry)
	require.Equal(t, "8", e.authDenied())

	// After the delay the right password works and clears the address:
	// three wrong passwords are again answered before a refusal.
	e.clk.Advance(2000)
	code, _, _ = loginAs(t, e, c, "s3cret")
	require.Equal(t, http.StatusSeeOther, code)
	code, _, _ = get(t, c, e.base+"/dashboard/")
	require.Equal(t, http.StatusOK, code)
	c = clientFrom(t, "127.0.0.1") // a new browser on the same address
	for i := 1; i <= 3; i++ {
		code, _, _ := loginAs(t, e, c, "guess")
		require.Equal(t, http.StatusUnauthorized, code, "attempt %d after the reset", i)
	}
	code, _, retry = loginAs(t, e, c, "s3cret")
	require.Equal(t, http.StatusTooManyRequests, code)
	require.Equal(t, "1", retry)
	require.Equal(t, "14", e.authDenied())
}

// TestLoginLimiterDelayGrows: 1, 2, 4, ... 32, then 60 s for every
// further wrong password.
func TestLoginLimiterDelayGrows(t *testing.T) {
	e, _ := newLoggedEnv(t)
	c := clientFrom(t, "127.0.0.1")
	for i := 0; i < 2; i++ {
		code, _, _ := loginAs(t, e, c, "guess")
		require.Equal(t, http.StatusUnauthorized, code)
	}
	for _, want := range []string{"1", "2", "4", "8", "16", "32", "60", "60"} {
		code, _, _ := loginAs(t, e, c, "guess")
		require.Equal(t, http.StatusUnauthorized, code)
		code, _, retry := loginAs(t, e, c, "guess")
		require.Equal(t, http.StatusTooManyRequests, code)
		require.Equal(t, want, retry)
		n := map[string]int64{"1": 1, "2": 2, "4": 4, "8": 8, "16": 16, "32": 32, "60": 60}[want]
		e.clk.Advance(n * 1000)
	}
	require.Equal(t, "20", e.authDenied()) // 10 attempts, 2 each
}
