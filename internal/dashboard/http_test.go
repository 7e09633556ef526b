package dashboard_test

import (
	"bufio"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The dashboard over plain HTTP (no browser): what is refused, and that a
// refusal changes nothing, neither in the keyspace nor in the AOF.

// dirBytes reads every file under dir.
func dirBytes(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = string(b)
		return err
	})
	require.NoError(t, err)
	return out
}

// TestRefusedPostsChangeNothing: POSTs without the CSRF token, with a
// wrong one, from another origin, or without a session are refused with
// 403 before any command is sent: the job stays dead and the AOF is the
// same bytes. The same form with its token then works.
func TestRefusedPostsChangeNothing(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, map[string]string{"appendonly": "yes", "appendfsync": "always", "dir": dir})
	dead := e.seed("mail")
	c := httpClient(t)
	code, page, _ := get(t, c, e.base+"/dashboard/q/0/mail?state=dead")
	require.Equal(t, http.StatusOK, code)
	tok := csrfOf(t, page)
	target := e.base + "/dashboard/q/0/mail/job/" + dead[0] + "/reprocess"
	before := dirBytes(t, dir)
	require.NotEmpty(t, before)
	infoBefore := e.do("INFO", "commandstats").(string)

	cases := map[string]func() (int, string){
		"no token": func() (int, string) {
			code, body, _ := post(t, c, target, url.Values{"back": {"/dashboard/"}})
			return code, body
		},
		"wrong token": func() (int, string) {
			code, body, _ := post(t, c, target, url.Values{"csrf": {tok + "x"}})
			return code, body
		},
		"other origin": func() (int, string) {
			req, _ := http.NewRequest("POST", target, strings.NewReader(url.Values{"csrf": {tok}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", "http://evil.example")
			resp, err := c.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			return resp.StatusCode, ""
		},
		"no session": func() (int, string) {
			code, body, _ := post(t, httpClient(t), target, url.Values{"csrf": {tok}})
			return code, body
		},
	}
	for name, f := range cases {
		code, body := f()
		require.Equal(t, http.StatusForbidden, code, name)
		if body != "" {
			require.Contains(t, body, "Nothing was changed", name)
		}
	}
	require.Equal(t, "dead", e.jobField("mail", dead[0], "state"))
	require.Equal(t, before, dirBytes(t, dir), "the AOF is untouched")
	// No EMQ.REPROCESS reached the server.
	require.NotContains(t, infoBefore, "cmdstat_emq.reprocess")
	require.NotContains(t, e.do("INFO", "commandstats").(string), "cmdstat_emq.reprocess")

	code, _, h := post(t, c, target, url.Values{"csrf": {tok}, "back": {"/dashboard/q/0/mail?state=dead"}})
	require.Equal(t, http.StatusSeeOther, code)
	require.Equal(t, "/dashboard/q/0/mail?state=dead", h.Get("Location"))
	require.Equal(t, "pending", e.jobField("mail", dead[0], "state"))
	require.NotEqual(t, before, dirBytes(t, dir), "the accepted action reached the AOF")
}

// TestRefusedVerbShowsItsError: an action the verb refuses (reprocess a
// job that is not dead, remove a held job) writes nothing and the next
// page shows the verb's own error text.
func TestRefusedVerbShowsItsError(t *testing.T) {
	e := newEnv(t, nil)
	e.seed("mail")
	pending := listIDs(e, "mail", "pending")[0]
	active := listIDs(e, "mail", "active")[0]
	c := httpClient(t)
	_, page, _ := get(t, c, e.base+"/dashboard/q/0/mail")
	tok := csrfOf(t, page)
	before := e.counts("mail")

	code, _, _ := post(t, c, e.base+"/dashboard/q/0/mail/job/"+pending+"/reprocess", url.Values{"csrf": {tok}, "back": {"/dashboard/q/0/mail"}})
	require.Equal(t, http.StatusSeeOther, code)
	_, page, _ = get(t, c, e.base+"/dashboard/q/0/mail")
	require.Contains(t, page, `<div class="flash error" id="flash" role="status">EMQSTATE job is not dead</div>`)

	post(t, c, e.base+"/dashboard/q/0/mail/job/"+active+"/remove", url.Values{"csrf": {tok}})
	_, page, _ = get(t, c, e.base+"/dashboard/")
	require.Contains(t, page, `id="flash" role="status">EMQSTATE job is active</div>`)
	require.Equal(t, before, e.counts("mail"))
	require.Equal(t, "active", e.jobField("mail", active, "state"))

	// The flash is shown once.
	_, page, _ = get(t, c, e.base+"/dashboard/")
	require.NotContains(t, page, `id="flash"`)
}

// TestPauseResumeAndRemove: the queue actions through the forms, checked
// through RESP.
func TestPauseResumeAndRemove(t *testing.T) {
	e := newEnv(t, nil)
	e.seed("mail")
	c := httpClient(t)
	_, page, _ := get(t, c, e.base+"/dashboard/q/0/mail")
	tok := csrfOf(t, page)
	require.Contains(t, page, `id="pause"`)

	code, _, _ := post(t, c, e.base+"/dashboard/q/0/mail/pause", url.Values{"csrf": {tok}, "back": {"/dashboard/q/0/mail"}})
	require.Equal(t, http.StatusSeeOther, code)
	require.Equal(t, int64(1), e.do("HEXISTS", "emq:{mail}:meta", "paused"))
	require.Empty(t, e.do("EMQ.CLAIM", "mail", 1000), "a paused queue hands out nothing")
	_, page, _ = get(t, c, e.base+"/dashboard/q/0/mail")
	require.Contains(t, page, `id="paused"`)
	require.Contains(t, page, `id="resume"`)

	post(t, c, e.base+"/dashboard/q/0/mail/resume", url.Values{"csrf": {tok}})
	require.Equal(t, int64(0), e.do("HEXISTS", "emq:{mail}:meta", "paused"))

	id := listIDs(e, "mail", "pending")[0]
	post(t, c, e.base+"/dashboard/q/0/mail/job/"+id+"/remove", url.Values{"csrf": {tok}})
	require.Nil(t, e.do("EMQ.JOB", "mail", id))
	require.Equal(t, int64(4), e.counts("mail")["pending"])
	_, page, _ = get(t, c, e.base+"/dashboard/")
	require.Contains(t, page, "Job "+id+" removed.")
}

var rowRE = regexp.MustCompile(`<tr data-id="([^"]+)">`)

// TestPaging: the job browser pages through EMQ.LIST in the set's order.
func TestPaging(t *testing.T) {
	e := newEnv(t, nil)
	for i := 0; i < 120; i++ {
		e.do("EMQ.ENQUEUE", "big", "*", strconv.Itoa(i))
	}
	all := []string{}
	for _, x := range e.do("EMQ.LIST", "big", "pending", 0, 1000).([]any) {
		all = append(all, x.([]any)[0].(string))
	}
	c := httpClient(t)
	var seen []string
	u := "/dashboard/q/0/big?state=pending"
	pages := 0
	for u != "" {
		_, page, _ := get(t, c, e.base+strings.ReplaceAll(u, "&amp;", "&"))
		for _, m := range rowRE.FindAllStringSubmatch(page, -1) {
			seen = append(seen, m[1])
		}
		pages++
		m := regexp.MustCompile(`<a href="([^"]+)" id="next">`).FindStringSubmatch(page)
		u = ""
		if m != nil {
			u = m[1]
		}
	}
	require.Equal(t, 3, pages, "50 + 50 + 20")
	require.Equal(t, all, seen)

	_, page, _ := get(t, c, e.base+"/dashboard/q/0/big?state=pending&offset=100")
	require.Contains(t, page, "jobs 101–120 of 120 pending")
	require.Len(t, rowRE.FindAllString(page, -1), 20)
	_, page, _ = get(t, c, e.base+"/dashboard/q/0/big?state=pending&offset=10&n=5")
	ids := rowRE.FindAllStringSubmatch(page, -1)
	require.Len(t, ids, 5)
	require.Equal(t, all[10], ids[0][1])
}

// TestBadInput: what the server refuses is shown with its text (an
// invalid queue name), an unknown state or database is a 404, and nothing
// is written.
func TestBadInput(t *testing.T) {
	e := newEnv(t, nil)
	c := httpClient(t)
	code, page, _ := get(t, c, e.base+"/dashboard/q/0/a:b")
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, page, "ERR invalid queue name")
	code, _, _ = get(t, c, e.base+"/dashboard/q/0/mail?state=done")
	require.Equal(t, http.StatusNotFound, code)
	code, _, _ = get(t, c, e.base+"/dashboard/q/x/mail")
	require.Equal(t, http.StatusNotFound, code)
	code, page, _ = get(t, c, e.base+"/dashboard/q/99/mail")
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, page, "ERR DB index is out of range")
	require.Equal(t, int64(0), e.do("DBSIZE"))
	// A job that is not there.
	code, page, _ = get(t, c, e.base+"/dashboard/q/0/mail/job/JOB00000000001")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, page, `id="nojob"`)
	// The static folder is no page: no listing of the embedded files
	// (the newcomer's finding), while a file is served.
	code, page, _ = get(t, c, e.base+"/dashboard/static/")
	require.Equal(t, http.StatusNotFound, code)
	require.NotContains(t, page, "app.js")
	code, _, _ = get(t, c, e.base+"/dashboard/static/app.js")
	require.Equal(t, http.StatusOK, code)
}

// TestLoginRequired: with requirepass, pages redirect to the login form
// and actions are refused without a login; a wrong password is refused by
// the server's AUTH; a password changed with CONFIG SET logs the sessions
// out at their next page.
func TestLoginRequired(t *testing.T) {
	e := newEnv(t, map[string]string{"requirepass": "s3cret"})
	dead := e.seed("mail")
	c := httpClient(t)
	code, _, h := get(t, c, e.base+"/dashboard/q/0/mail")
	require.Equal(t, http.StatusSeeOther, code)
	require.Equal(t, "/dashboard/login?next="+url.QueryEscape("/dashboard/q/0/mail"), h.Get("Location"))
	code, _, _ = get(t, c, e.base+"/dashboard/")
	require.Equal(t, http.StatusSeeOther, code)

	_, page, _ := get(t, c, e.base+"/dashboard/login")
	tok := csrfOf(t, page)
	// Without logging in, an action with the login form's token is
	// refused and writes nothing.
	code, _, _ = post(t, c, e.base+"/dashboard/q/0/mail/job/"+dead[0]+"/reprocess", url.Values{"csrf": {tok}})
	require.Equal(t, http.StatusForbidden, code)
	require.Equal(t, "dead", e.jobField("mail", dead[0], "state"))

	code, page, _ = post(t, c, e.base+"/dashboard/login", url.Values{"csrf": {tok}, "password": {"nope"}})
	require.Equal(t, http.StatusUnauthorized, code)
	require.Contains(t, page, "Wrong password.")
	code, _, h = post(t, c, e.base+"/dashboard/login", url.Values{"csrf": {tok}, "password": {"s3cret"}, "next": {"/dashboard/q/0/mail"}})
	require.Equal(t, http.StatusSeeOther, code)
	require.Equal(t, "/dashboard/q/0/mail", h.Get("Location"))
	code, page, _ = get(t, c, e.base+"/dashboard/q/0/mail")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, page, `data-count="dead">3<`)
	// Queue latency (EMQ.COUNTS latency_ms) has its card: a number of ms.
	require.Regexp(t, `class="card latency"[^>]*><span class="n" data-latency-ms="\d+">\d+ ms</span>`, page)
	// The login replaced the session: the token of the login form no
	// longer works.
	code, _, _ = post(t, c, e.base+"/dashboard/q/0/mail/pause", url.Values{"csrf": {tok}})
	require.Equal(t, http.StatusForbidden, code)

	// The operator changes the password: the next page asks again.
	e.do("CONFIG", "SET", "requirepass", "n3w")
	code, _, h = get(t, c, e.base+"/dashboard/q/0/mail")
	require.Equal(t, http.StatusSeeOther, code)
	require.True(t, strings.HasPrefix(h.Get("Location"), "/dashboard/login"))
}

// TestDashboardOff: the dashboard directive no leaves /metrics alone.
func TestDashboardOff(t *testing.T) {
	e := newEnv(t, map[string]string{"dashboard": "no"})
	c := httpClient(t)
	code, _, _ := get(t, c, e.base+"/dashboard/")
	require.Equal(t, http.StatusNotFound, code)
	code, body, _ := get(t, c, e.base+"/metrics")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "emqd_build_info")

	on := newEnv(t, nil)
	code, _, h := get(t, c, on.base+"/")
	require.Equal(t, http.StatusFound, code)
	require.Equal(t, "/dashboard/", h.Get("Location"))
}

// TestDashboardAtMaxclients: the dashboard's connections are in-process
// and not refused by maxclients, so it still answers when the clients are
// at their limit (while a new RESP client is refused).
func TestDashboardAtMaxclients(t *testing.T) {
	e := newEnv(t, map[string]string{"maxclients": "1"})
	e.do("EMQ.ENQUEUE", "mail", "*", "x") // e.rdb holds the one client
	nc, err := net.Dial("tcp", e.srv.Addr())
	require.NoError(t, err)
	defer nc.Close()
	line, err := bufio.NewReader(nc).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "-ERR max number of clients reached\r\n", line)
	code, page, _ := get(t, httpClient(t), e.base+"/dashboard/q/0/mail")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, page, `data-count="pending">1<`)
}

var windowRE = regexp.MustCompile(`<tr(?: title="[^"]*")?><th>([^<]+)</th><td>(\d+)</td><td class="ok">(\d+)</td><td class="[a-z]*">(\d+)</td><td class="[a-z]*">(\d+)</td></tr>`)

// windowsOf reads the throughput windows of a queue page: label ->
// enqueued, completed, failed, died.
func windowsOf(t *testing.T, page string) map[string][4]string {
	t.Helper()
	out := map[string][4]string{}
	for _, m := range windowRE.FindAllStringSubmatch(page, -1) {
		out[m[1]] = [4]string{m[2], m[3], m[4], m[5]}
	}
	return out
}

// TestThroughputWindows: the counts over the last 1, 5 and 15 minutes on
// the server clock, from the samples taken every 30 s.
func TestThroughputWindows(t *testing.T) {
	e := newEnv(t, nil)
	c := httpClient(t)
	// Every Advance is followed by a page before the next write, so each
	// sample (the timer's or the page's) sees the same totals.
	for i := 0; i < 4; i++ {
		e.do("EMQ.ENQUEUE", "mail", "*", "x")
	}
	e.clk.Advance(30_000)
	get(t, c, e.base+"/dashboard/q/0/mail") // sample at +30 s: 4 enqueued
	e.do("EMQ.ENQUEUE", "mail", "*", "y")
	e.clk.Advance(30_000)
	get(t, c, e.base+"/dashboard/q/0/mail") // sample at +60 s: 5
	for i := 0; i < 2; i++ {
		e.do("EMQ.ENQUEUE", "mail", "*", "z")
	}
	e.clk.Advance(30_000)
	_, page, _ := get(t, c, e.base+"/dashboard/q/0/mail") // sample at +90 s: 7
	w := windowsOf(t, page)
	// Now +90 s: the newest sample at least 60 s old is the one at +30 s
	// (4 enqueued), so the last minute saw 3; 5 and 15 minutes go back
	// to the start (marked *): 7.
	require.Equal(t, [4]string{"3", "0", "0", "0"}, w["1 min"], "%v", w)
	require.Equal(t, [4]string{"7", "0", "0", "0"}, w["5 min*"], "%v", w)
	require.Equal(t, [4]string{"7", "0", "0", "0"}, w["15 min*"], "%v", w)
	// One bar per interval: 3 complete ones and the one in progress.
	require.Equal(t, 4, strings.Count(page[strings.Index(page, `id="counts"`):], "<g><title>"))

	// Sixteen minutes later everything is out of the windows.
	e.clk.Advance(16 * 60_000)
	_, page, _ = get(t, c, e.base+"/dashboard/q/0/mail")
	w = windowsOf(t, page)
	require.Equal(t, [4]string{"0", "0", "0", "0"}, w["15 min"], "%v", w)
	require.Equal(t, [4]string{"0", "0", "0", "0"}, w["1 min"], "%v", w)
}

// TestDashboardIsAClient: the dashboard's commands are an ordinary
// client's, seen in SLOWLOG with its address and name.
func TestDashboardIsAClient(t *testing.T) {
	e := newEnv(t, map[string]string{"slowlog-log-slower-than": "0"})
	e.seed("mail")
	e.do("SLOWLOG", "RESET")
	code, _, _ := get(t, httpClient(t), e.base+"/dashboard/q/0/mail?state=dead")
	require.Equal(t, http.StatusOK, code)
	var cmds []string
	for _, x := range e.do("SLOWLOG", "GET", "-1").([]any) {
		entry := x.([]any)
		if entry[4] != "dashboard:0" {
			continue
		}
		require.Equal(t, "emqd-dashboard", entry[5])
		var argv []string
		for _, a := range entry[3].([]any) {
			argv = append(argv, a.(string))
		}
		cmds = append([]string{strings.Join(argv, " ")}, cmds...) // SLOWLOG is newest first
	}
	require.Equal(t, []string{"ping", "EMQ.COUNTS mail", "HEXISTS emq:{mail}:meta paused", "EMQ.LIST mail dead 0 50", "EMQ.SCHEDULE.LIST mail 0 100", "EMQ.LANES mail 0 50"}, cmds[len(cmds)-6:])
}

// TestGhostWithOddID: a dead-set member without a row, whose id holds a
// slash, a space and markup (written by hand with ZADD), is listed as a
// ghost, links to its job page, and Remove clears it.
func TestGhostWithOddID(t *testing.T) {
	e := newEnv(t, nil)
	odd := "a/b c<x>"
	e.do("ZADD", "emq:{mail}:dead", 0, odd)
	e.do("EMQ.PAUSE", "mail") // so the queue is known to the server page
	c := httpClient(t)
	_, page, _ := get(t, c, e.base+"/dashboard/q/0/mail?state=dead")
	require.Contains(t, page, `<tr data-id="a/b c&lt;x&gt;">`)
	require.Contains(t, page, `href="/dashboard/q/0/mail/job/a%2Fb%20c%3Cx%3E"`)
	require.Contains(t, page, "no row: a member of the set without its job row")
	code, jp, _ := get(t, c, e.base+"/dashboard/q/0/mail/job/a%2Fb%20c%3Cx%3E")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, jp, `<h1 class="mono">a/b c&lt;x&gt;</h1>`)
	tok := csrfOf(t, page)
	code, _, _ = post(t, c, e.base+"/dashboard/q/0/mail/job/a%2Fb%20c%3Cx%3E/remove", url.Values{"csrf": {tok}})
	require.Equal(t, http.StatusSeeOther, code)
	require.Equal(t, int64(0), e.do("EXISTS", "emq:{mail}:dead"))
}

// BenchmarkPages measures a page's cost end to end (HTTP request, an
// in-process connection, the commands, the template): the server page
// with 2 queues, a queue page of 50 pending jobs, a job page.
func BenchmarkPages(b *testing.B) {
	for _, page := range []string{"/dashboard/", "/dashboard/q/0/mail?state=pending", "/dashboard/q/0/mail/job/"} {
		b.Run(strings.Trim(strings.SplitN(page, "?", 2)[0], "/"), func(b *testing.B) {
			e := newBenchEnv(b)
			u := e.base + page
			if strings.HasSuffix(page, "/job/") {
				u += listIDs(e, "mail", "pending")[0]
			}
			c := &http.Client{}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				resp, err := c.Get(u)
				if err != nil || resp.StatusCode != 200 {
					b.Fatal(err, resp.StatusCode)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}

// TestCompletedTab: a queue that retains completed jobs (EMQ.RETAIN,
// docs/verbs.md §4.21) shows them on its completed tab, with the tab's
// count from EMQ.COUNTS' retained.
func TestCompletedTab(t *testing.T) {
	e := newEnv(t, nil)
	e.do("EMQ.RETAIN", "mail", "COMPLETED", 10, 0)
	id := e.do("EMQ.ENQUEUE", "mail", "*", "hello").(string)
	job := e.do("EMQ.CLAIM", "mail", 1000).([]any)[0].([]any)
	e.do("EMQ.COMPLETE", "mail", id, job[2], "RESULT", "ok")
	c := httpClient(t)
	code, page, _ := get(t, c, e.base+"/dashboard/q/0/mail?state=completed")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, page, `data-count="completed">1<`)
	require.Contains(t, page, id)
}
