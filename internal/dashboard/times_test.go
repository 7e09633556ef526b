package dashboard_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// doneJob retains completed jobs of q, enqueues one at t0, claims it 1.5 s
// later and completes it 2.25 s after that with result; it returns the id.
func doneJob(e *env, q, payload, result string) string {
	e.t.Helper()
	e.do("EMQ.RETAIN", q, "COMPLETED", 10, 0)
	id := e.do("EMQ.ENQUEUE", q, "*", payload).(string)
	e.clk.Advance(1500)
	job := e.do("EMQ.CLAIM", q, 60000).([]any)[0].([]any)
	e.clk.Advance(2250)
	e.do("EMQ.COMPLETE", q, id, job[2], "RESULT", result)
	return id
}

// cell is the text of the first <td class="cls ..."> of a page's row id.
func cell(t *testing.T, page, id, cls string) string {
	t.Helper()
	i := strings.Index(page, `<tr data-id="`+id+`">`)
	require.GreaterOrEqual(t, i, 0, "row %s", id)
	row := page[i:]
	row = row[:strings.Index(row, "</tr>")]
	m := regexp.MustCompile(`<td class="` + cls + `[^"]*"[^>]*>(.*?)</td>`).FindStringSubmatch(row)
	require.NotNil(t, m, "cell %s of %s in %s", cls, id, row)
	return m[1]
}

// TestJobListTimesAndResult: the completed tab shows each row's enqueued,
// claimed and finished times relative to the server clock (the UTC time on
// hover), the run duration finished_at - claimed_at, and the result,
// escaped; the job page shows the same times and the result in full.
func TestJobListTimesAndResult(t *testing.T) {
	e := newEnv(t, nil)
	id := doneJob(e, "mail", "p", `<b>done</b> & "ok"`)
	e.clk.Advance(10_000)
	c := httpClient(t)
	code, page, _ := get(t, c, e.base+"/dashboard/q/0/mail?state=completed")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "13s ago", cell(t, page, id, "time enqueued"))
	require.Equal(t, "12s ago", cell(t, page, id, "time claimed"))
	require.Equal(t, "10s ago", cell(t, page, id, "time finished"))
	require.Equal(t, "2.25s", cell(t, page, id, "num run"))
	require.Contains(t, page, `title="2023-11-14 22:13:21.500 UTC">12s ago<`, "claimed_at in UTC on hover")
	res := cell(t, page, id, "result")
	require.Contains(t, res, `&lt;b&gt;done&lt;/b&gt; &amp; &#34;ok&#34;`)
	require.NotContains(t, res, "<b>")
	require.Contains(t, res, "18 B")

	// The pending tab: enqueued is shown, claimed and run are "-", no
	// finished column.
	id2 := e.do("EMQ.ENQUEUE", "mail", "*", "q").(string)
	e.clk.Advance(3000)
	_, page, _ = get(t, c, e.base+"/dashboard/q/0/mail")
	require.Equal(t, "3s ago", cell(t, page, id2, "time enqueued"))
	require.Equal(t, "-", cell(t, page, id2, "time claimed"))
	require.Equal(t, "-", cell(t, page, id2, "num run"))
	require.NotContains(t, page, `class="time finished"`)
	// Claimed and running: run is now - claimed_at.
	job := e.do("EMQ.CLAIM", "mail", 60000).([]any)[0].([]any)
	require.Equal(t, id2, job[0])
	e.clk.Advance(65_000)
	_, page, _ = get(t, c, e.base+"/dashboard/q/0/mail?state=active")
	require.Equal(t, "1m 5s", cell(t, page, id2, "num run"))

	_, page, _ = get(t, c, e.base+"/dashboard/q/0/mail/job/"+id)
	require.Contains(t, page, `<pre class="box" id="result">&lt;b&gt;done&lt;/b&gt; &amp; &#34;ok&#34;</pre>`)
	require.Regexp(t, `<th>enqueued_at</th><td class="mono">1700000000000</td><td class="muted">2023-11-14 22:13:20.000 UTC \(1m 21s ago\)</td>`, page)
	require.Regexp(t, `<th>finished_at</th><td class="mono">1700000003750</td>`, page)
	require.Regexp(t, `<th>run duration</th><td class="mono">2.25s</td><td class="muted">finished_at - claimed_at</td>`, page)
}

// TestFindJob: the queue page's find form opens the job's page for a job
// that has a row, and comes back to the queue page with a message for an
// unknown id or an empty one.
func TestFindJob(t *testing.T) {
	e := newEnv(t, nil)
	dead := e.seed("mail")
	c := httpClient(t)
	_, page, _ := get(t, c, e.base+"/dashboard/q/0/mail")
	require.Contains(t, page, `<form method="get" action="/dashboard/q/0/mail/find" class="search find" id="find">`)

	code, _, h := get(t, c, e.base+"/dashboard/q/0/mail/find?id="+url.QueryEscape(" "+dead[0]+" "))
	require.Equal(t, http.StatusSeeOther, code)
	require.Equal(t, "/dashboard/q/0/mail/job/"+dead[0], h.Get("Location"))

	code, _, h = get(t, c, e.base+"/dashboard/q/0/mail/find?id=NOPE%3Cb%3E")
	require.Equal(t, http.StatusSeeOther, code)
	require.Equal(t, "/dashboard/q/0/mail", h.Get("Location"))
	_, page, _ = get(t, c, e.base+"/dashboard/q/0/mail")
	require.Contains(t, page, "Queue mail (db 0) has no job NOPE&lt;b&gt;: it was completed without retention or removed, or never existed.")
	// The flash is shown once.
	_, page, _ = get(t, c, e.base+"/dashboard/q/0/mail")
	require.NotContains(t, page, "has no job")

	code, _, h = get(t, c, e.base+"/dashboard/q/0/mail/find?id=")
	require.Equal(t, http.StatusSeeOther, code)
	require.Equal(t, "/dashboard/q/0/mail", h.Get("Location"))
	_, page, _ = get(t, c, e.base+"/dashboard/q/0/mail")
	require.Contains(t, page, "Type a job id to find.")
	require.Equal(t, int64(5), e.counts("mail")["pending"], "finding wrote nothing")
}

// TestRefreshAttribute: the server, queue and job pages carry
// data-refresh (10 s by default, ?refresh=0 turns it off, at most 3600);
// the login page does not.
func TestRefreshAttribute(t *testing.T) {
	e := newEnv(t, nil)
	dead := e.seed("mail")
	c := httpClient(t)
	for _, u := range []string{"/dashboard/", "/dashboard/q/0/mail?state=dead", "/dashboard/q/0/mail/job/" + dead[0]} {
		_, page, _ := get(t, c, e.base+u)
		require.Contains(t, page, `<body data-refresh="10">`, u)
	}
	_, page, _ := get(t, c, e.base+"/dashboard/?refresh=0")
	require.Contains(t, page, "<body>")
	_, page, _ = get(t, c, e.base+"/dashboard/?refresh=99999")
	require.Contains(t, page, `<body data-refresh="3600">`)
	_, page, _ = get(t, c, e.base+"/dashboard/?refresh=x")
	require.Contains(t, page, `<body data-refresh="10">`)

	l := newEnv(t, map[string]string{"requirepass": "pw"})
	code, page, _ := get(t, httpClient(t), l.base+"/dashboard/login")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, page, "<body>")
}
