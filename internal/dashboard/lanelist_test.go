package dashboard_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLanePendingFilter: the pending tab of a queue with lanes lists every
// lane's pending jobs with a lane column (EMQ.LIST q pending, docs/verbs.md
// §4.26.6); each lane of the lanes table links to that lane's pending jobs
// (EMQ.LIST ... LANE name), paged by the lane's own count; the drain of
// the filtered tab drains that lane only, after its confirmation, and the
// plain drain every lane. A bad lane name is the server's refusal.
func TestLanePendingFilter(t *testing.T) {
	e := newEnv(t, nil)
	var acme []string
	for i := 0; i < 3; i++ {
		acme = append(acme, e.do("EMQ.ENQUEUE", "mail", "*", "a", "LANE", "acme").(string))
		e.do("EMQ.ENQUEUE", "mail", "*", "g", "LANE", "globex")
	}
	plain := e.do("EMQ.ENQUEUE", "mail", "*", "plain").(string)
	c := httpClient(t)
	_, page, _ := get(t, c, e.base+"/dashboard/q/0/mail")
	rows := rowRE.FindAllStringSubmatch(page, -1)
	require.Len(t, rows, 7, "every lane's pending jobs")
	require.Equal(t, plain, rows[0][1], "the default lane first")
	require.Equal(t, acme[0], rows[1][1], "then the lanes by name")
	require.Contains(t, page, "jobs 1–7 of 7 pending")
	require.Contains(t, page, `<td class="mono lane">globex</td>`)
	require.Contains(t, page, `<td class="mono lane">default</td>`)
	link := regexp.MustCompile(`<tr data-lane="acme">\s*<td class="mono wrap"><a href="([^"]+)#jobs" class="lane-jobs"`).FindStringSubmatch(page)
	require.NotNil(t, link, "the lanes table links each lane to its pending jobs")
	require.Equal(t, "/dashboard/q/0/mail?state=pending&amp;lane=acme", link[1])

	_, page, _ = get(t, c, e.base+"/dashboard/q/0/mail?state=pending&lane=acme&n=2")
	rows = rowRE.FindAllStringSubmatch(page, -1)
	require.Equal(t, []string{acme[0], acme[1]}, []string{rows[0][1], rows[1][1]})
	require.Len(t, rows, 2)
	require.Contains(t, page, `id="lane-filter"`)
	require.Contains(t, page, "jobs 1–2 of 3 pending in lane acme")
	next := regexp.MustCompile(`<a href="([^"]+)" id="next">`).FindStringSubmatch(page)
	require.NotNil(t, next)
	_, page, _ = get(t, c, e.base+strings.ReplaceAll(next[1], "&amp;", "&"))
	rows = rowRE.FindAllStringSubmatch(page, -1)
	require.Len(t, rows, 1)
	require.Equal(t, acme[2], rows[0][1])
	require.Contains(t, page, "jobs 3–3 of 3 pending in lane acme")
	require.NotContains(t, page, `id="next"`)

	_, page, _ = get(t, c, e.base+"/dashboard/q/0/mail?state=pending&lane=nobody")
	require.Contains(t, page, "No pending job in lane nobody.")
	code, page, _ := get(t, c, e.base+"/dashboard/q/0/mail?state=pending&lane="+url.QueryEscape("a b"))
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, page, "ERR invalid lane name")

	// Drain lane acme: its confirmation names the lane and its count.
	_, page, _ = get(t, c, e.base+"/dashboard/q/0/mail?state=pending&lane=acme")
	require.Contains(t, page, `href="/dashboard/q/0/mail/bulk/drain?lane=acme" data-bulk="drain">Drain lane acme</a>`)
	_, page, _ = get(t, c, e.base+"/dashboard/q/0/mail/bulk/drain?lane=acme")
	require.Contains(t, page, `<b id="bulk-count">3</b> pending jobs`)
	require.Contains(t, page, `EMQ.REMOVE.ALL mail pending LIMIT 1000 LANE acme`)
	require.Contains(t, page, `<input type="hidden" name="lane" value="acme">`)
	tok := csrfOf(t, page)
	post(t, c, e.base+"/dashboard/q/0/mail/bulk/drain", url.Values{"csrf": {tok}, "confirm": {"drain"}, "lane": {"acme"}})
	_, page, _ = get(t, c, e.base+"/dashboard/")
	require.Contains(t, page, `id="flash" role="status">3 jobs of lane acme of queue mail removed.</div>`)
	require.Equal(t, int64(4), e.counts("mail")["pending"])
	for _, id := range acme {
		require.Nil(t, e.do("EMQ.JOB", "mail", id))
	}

	// The plain drain: every lane's pending jobs.
	_, page, _ = get(t, c, e.base+"/dashboard/q/0/mail/bulk/drain")
	require.Contains(t, page, `<b id="bulk-count">4</b> pending jobs`)
	require.NotContains(t, page, `name="lane"`)
	post(t, c, e.base+"/dashboard/q/0/mail/bulk/drain", url.Values{"csrf": {tok}, "confirm": {"drain"}})
	_, page, _ = get(t, c, e.base+"/dashboard/")
	require.Contains(t, page, `id="flash" role="status">4 jobs of queue mail removed.</div>`)
	require.Equal(t, int64(0), e.counts("mail")["pending"])
	require.Equal(t, []any{}, e.do("EMQ.LANES", "mail"), "no lane left")
}
