package dashboard_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHostChecked (issue 27 item 5, DNS rebinding): without requirepass, a
// request whose Host names another site (a rebound name resolving to this
// listener) is refused with 421 before any page, session or action: no
// cookie, no CSRF token, and a POST carrying a token, that Host and a
// matching Origin pauses nothing. Loopback names, IP literals and the names
// of dashboard-allowed-hosts are served.
func TestHostChecked(t *testing.T) {
	e := newEnv(t, nil)
	e.seed("mail")
	port := e.base[strings.LastIndex(e.base, ":")+1:]
	c := httpClient(t)
	send := func(method, path, host string, form url.Values, origin string) (int, string, http.Header) {
		t.Helper()
		var body io.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		}
		req, err := http.NewRequest(method, e.base+path, body)
		require.NoError(t, err)
		req.Host = host
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := c.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}
	evil := "evil.example:" + port
	code, body, h := send("GET", "/dashboard/q/0/mail", evil, nil, "")
	require.Equal(t, http.StatusMisdirectedRequest, code)
	require.Empty(t, h.Values("Set-Cookie"), "no session for a foreign Host")
	require.NotContains(t, body, `name="csrf"`)

	// A token from a real page, sent with the rebound Host and Origin.
	code, page, _ := get(t, c, e.base+"/dashboard/q/0/mail")
	require.Equal(t, http.StatusOK, code)
	tok := csrfOf(t, page)
	code, _, _ = send("POST", "/dashboard/q/0/mail/pause", evil, url.Values{"csrf": {tok}}, "http://"+evil)
	require.Equal(t, http.StatusMisdirectedRequest, code)
	require.Nil(t, e.do("HGET", "emq:{mail}:meta", "paused"), "the queue was paused")
	require.NotContains(t, e.do("INFO", "commandstats").(string), "cmdstat_emq.pause")

	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "LOCALHOST", "app.localhost:" + port,
		"[::1]:" + port, "10.1.2.3:" + port, "127.0.0.1"} {
		code, _, _ := send("GET", "/dashboard/", host, nil, "")
		require.Equal(t, http.StatusOK, code, host)
	}
	for _, host := range []string{"ops.example.com:" + port, "a.corp.example", "corp.example", "localhost.evil.example"} {
		code, _, _ := send("GET", "/dashboard/", host, nil, "")
		require.Equal(t, http.StatusMisdirectedRequest, code, host)
	}
	e.do("CONFIG", "SET", "dashboard-allowed-hosts", "ops.example.com *.corp.example")
	for _, host := range []string{"ops.example.com:" + port, "OPS.example.com.", "a.corp.example", "b.a.corp.example:" + port} {
		code, _, _ := send("GET", "/dashboard/", host, nil, "")
		require.Equal(t, http.StatusOK, code, host)
	}
	for _, host := range []string{"corp.example", "xcorp.example", "evil.example"} {
		code, _, _ := send("GET", "/dashboard/", host, nil, "")
		require.Equal(t, http.StatusMisdirectedRequest, code, host)
	}
	// Allowed names may act.
	code, page, _ = send("GET", "/dashboard/q/0/mail", "ops.example.com:"+port, nil, "")
	require.Equal(t, http.StatusOK, code)
	code, _, _ = send("POST", "/dashboard/q/0/mail/pause", "ops.example.com:"+port, url.Values{"csrf": {csrfOf(t, page)}}, "http://ops.example.com:"+port)
	require.Equal(t, http.StatusSeeOther, code)
	require.Equal(t, "1", e.do("HGET", "emq:{mail}:meta", "paused"))
}
