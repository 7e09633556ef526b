package dashboard_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/emqd/emqd/clock"
	"github.com/emqd/emqd/internal/testsupport"
	"github.com/emqd/emqd/server"
)

// t0 is the manual clock's start (2023-11-14 22:13:20 UTC).
const t0 = int64(1_700_000_000_000)

// env is an embedded emqd with its metrics listener (and so the dashboard)
// on a free loopback port, a manual clock and a go-redis client.
type env struct {
	t    testing.TB
	srv  *server.Server
	clk  *clock.Manual
	rdb  *redis.Client
	base string // http://127.0.0.1:port
}

func newEnv(t testing.TB, config map[string]string) *env {
	t.Helper()
	cfg := map[string]string{"metrics-addr": "127.0.0.1:0"}
	for k, v := range config {
		cfg[k] = v
	}
	clk := clock.NewManual(t0)
	s := server.StartTest(t, server.Options{Clock: clk, Config: cfg})
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr(), Password: cfg["requirepass"], Protocol: 2, ReadTimeout: testsupport.ClientTimeout, WriteTimeout: testsupport.ClientTimeout})
	t.Cleanup(func() { rdb.Close() })
	return &env{t: t, srv: s, clk: clk, rdb: rdb, base: "http://" + s.MetricsAddr()}
}

// do sends a command through the RESP client and fails the test on error
// (a nil reply is returned as nil).
func (e *env) do(args ...any) any {
	e.t.Helper()
	v, err := e.rdb.Do(context.Background(), args...).Result()
	if err == redis.Nil {
		return nil
	}
	if err != nil {
		e.t.Fatalf("%v: %v", args, err)
	}
	return v
}

// jobField reads one field of a job through EMQ.JOB ("" when absent;
// "<gone>" when there is no row).
func (e *env) jobField(q, id, name string) string {
	e.t.Helper()
	v := e.do("EMQ.JOB", q, id)
	if v == nil {
		return "<gone>"
	}
	arr := v.([]any)
	for i := 0; i+1 < len(arr); i += 2 {
		if arr[i].(string) == name {
			return arr[i+1].(string)
		}
	}
	return ""
}

// counts reads EMQ.COUNTS as a map.
func (e *env) counts(q string) map[string]int64 {
	e.t.Helper()
	arr := e.do("EMQ.COUNTS", q).([]any)
	m := map[string]int64{}
	for i := 0; i+1 < len(arr); i += 2 {
		m[arr[i].(string)] = arr[i+1].(int64)
	}
	return m
}

// seed fills queue q with a known set: 10 jobs enqueued, 5 claimed of
// which 1 completed, 3 failed with max_attempts 1 (dead) and 1 still held;
// then 2 delayed jobs. So pending 5, active 1, scheduled 2, dead 3,
// completed 1, failed 3. It returns the dead ids in id order.
func (e *env) seed(q string) (dead []string) {
	e.t.Helper()
	for i := 0; i < 10; i++ {
		e.do("EMQ.ENQUEUE", q, "*", fmt.Sprintf(`{"n":%d}`, i))
	}
	claimed := e.do("EMQ.CLAIM", q, 60000, "COUNT", 5).([]any)
	if len(claimed) != 5 {
		e.t.Fatalf("claimed %d jobs, want 5", len(claimed))
	}
	for i, c := range claimed {
		id, tok := c.([]any)[0].(string), c.([]any)[2].(string)
		switch {
		case i == 0:
			e.do("EMQ.COMPLETE", q, id, tok)
		case i <= 3:
			e.do("EMQ.FAIL", q, id, tok, 1, 0, "boom "+id)
			dead = append(dead, id)
		}
	}
	e.do("EMQ.ENQUEUE", q, "*", "later-1", "DELAY", 60000)
	e.do("EMQ.ENQUEUE", q, "*", "later-2", "DELAY", 120000)
	return dead
}

// httpClient is a browser-like client: a cookie jar, no redirects
// followed (so tests see the 303s).
func httpClient(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
}

func get(t *testing.T, c *http.Client, u string) (int, string, http.Header) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func post(t *testing.T, c *http.Client, u string, form url.Values) (int, string, http.Header) {
	t.Helper()
	resp, err := c.PostForm(u, form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrfOf finds the CSRF token in a page.
func csrfOf(t *testing.T, page string) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token in the page:\n%s", clipText(page))
	}
	return m[1]
}

func clipText(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "..."
	}
	return strings.TrimSpace(s)
}

// newBenchEnv is newEnv with queue mail holding 100 pending jobs and
// another queue.
func newBenchEnv(b *testing.B) *env {
	e := newEnv(b, nil)
	for i := 0; i < 100; i++ {
		e.do("EMQ.ENQUEUE", "mail", "*", fmt.Sprintf(`{"to":"user%d@example.com","subject":"hello"}`, i))
	}
	e.do("EMQ.ENQUEUE", "reports", "*", "r")
	return e
}
