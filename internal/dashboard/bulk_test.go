package dashboard_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestBulkNeedsConfirmation: the bulk buttons are links to a confirmation
// page that reads only; a POST without the page's confirm field (or with
// another action's) is refused and sends nothing; the confirmed POST runs
// the verb until the set is empty and says how many jobs it did.
func TestBulkNeedsConfirmation(t *testing.T) {
	e := newEnv(t, nil)
	dead := e.seed("mail")
	c := httpClient(t)
	_, page, _ := get(t, c, e.base+"/dashboard/q/0/mail?state=dead")
	require.Contains(t, page, `href="/dashboard/q/0/mail/bulk/reprocess-all" data-bulk="reprocess-all"`)
	require.Contains(t, page, `data-bulk="remove-dead"`)
	require.NotContains(t, page, `data-bulk="drain"`, "only the shown tab's actions")
	_, page, _ = get(t, c, e.base+"/dashboard/q/0/mail?state=active")
	require.NotContains(t, page, `data-bulk=`, "held jobs have no bulk action")

	code, page, _ := get(t, c, e.base+"/dashboard/q/0/mail/bulk/reprocess-all")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, page, `<b id="bulk-count">3</b> dead jobs`)
	require.Contains(t, page, `EMQ.REPROCESS.ALL mail LIMIT 1000`)
	require.Contains(t, page, `name="confirm" value="reprocess-all"`)
	require.NotContains(t, page, "data-refresh", "a confirmation does not reload itself")
	tok := csrfOf(t, page)
	code, _, _ = get(t, c, e.base+"/dashboard/q/0/mail/bulk/obliterate")
	require.Equal(t, http.StatusNotFound, code)

	target := e.base + "/dashboard/q/0/mail/bulk/reprocess-all"
	for _, form := range []url.Values{
		{"csrf": {tok}},
		{"csrf": {tok}, "confirm": {"remove-dead"}},
		{"csrf": {tok}, "confirm": {"yes"}},
	} {
		code, _, _ := post(t, c, target, form)
		require.Equal(t, http.StatusSeeOther, code)
		_, page, _ := get(t, c, e.base+"/dashboard/")
		require.Contains(t, page, `<div class="flash error" id="flash" role="status">Refused: Reprocess all was not confirmed (use its confirmation page). Nothing was changed.</div>`)
	}
	code, _, _ = post(t, c, target, url.Values{"confirm": {"reprocess-all"}})
	require.Equal(t, http.StatusForbidden, code, "the CSRF token is still required")
	require.NotContains(t, e.do("INFO", "commandstats").(string), "cmdstat_emq.reprocess.all")
	require.Equal(t, int64(3), e.counts("mail")["dead"])

	code, _, h := post(t, c, target, url.Values{"csrf": {tok}, "confirm": {"reprocess-all"}, "back": {"/dashboard/q/0/mail?state=dead"}})
	require.Equal(t, http.StatusSeeOther, code)
	require.Equal(t, "/dashboard/q/0/mail?state=dead", h.Get("Location"))
	_, page, _ = get(t, c, e.base+"/dashboard/q/0/mail?state=dead")
	require.Contains(t, page, `id="flash" role="status">3 jobs of queue mail reprocessed.</div>`)
	require.Equal(t, int64(0), e.counts("mail")["dead"])
	require.Equal(t, "1", e.jobField("mail", dead[0], "failures"), "without reset the budget stays spent")

	// Drain: 8 pending go, the held job and the scheduled ones stay.
	post(t, c, e.base+"/dashboard/q/0/mail/bulk/drain", url.Values{"csrf": {tok}, "confirm": {"drain"}})
	_, page, _ = get(t, c, e.base+"/dashboard/")
	require.Contains(t, page, `id="flash" role="status">8 jobs of queue mail removed.</div>`)
	n := e.counts("mail")
	require.Equal(t, [3]int64{0, 1, 2}, [3]int64{n["pending"], n["active"], n["scheduled"]})

	// Run all now, then remove the retained completed jobs.
	post(t, c, e.base+"/dashboard/q/0/mail/bulk/promote-all", url.Values{"csrf": {tok}, "confirm": {"promote-all"}})
	n = e.counts("mail")
	require.Equal(t, [2]int64{2, 0}, [2]int64{n["pending"], n["scheduled"]})
	e.do("EMQ.RETAIN", "mail", "COMPLETED", 10, 0)
	for i := 0; i < 2; i++ {
		job := e.do("EMQ.CLAIM", "mail", 1000).([]any)[0].([]any)
		e.do("EMQ.COMPLETE", "mail", job[0], job[2])
	}
	require.Equal(t, int64(2), e.counts("mail")["retained"])
	post(t, c, e.base+"/dashboard/q/0/mail/bulk/remove-completed", url.Values{"csrf": {tok}, "confirm": {"remove-completed"}})
	_, page, _ = get(t, c, e.base+"/dashboard/")
	require.Contains(t, page, `id="flash" role="status">2 jobs of queue mail removed.</div>`)
	require.Equal(t, int64(0), e.counts("mail")["retained"])
}

// TestBulkRefusalShowsItsError: a lane row among the dead refuses the
// whole call: nothing is reprocessed and the verb's error is shown.
func TestBulkRefusalShowsItsError(t *testing.T) {
	e := newEnv(t, nil)
	dead := e.seed("mail")
	e.do("HSET", "emq:{mail}:job:"+dead[1], "group", "g")
	c := httpClient(t)
	_, page, _ := get(t, c, e.base+"/dashboard/q/0/mail/bulk/reprocess-all-reset")
	post(t, c, e.base+"/dashboard/q/0/mail/bulk/reprocess-all-reset", url.Values{"csrf": {csrfOf(t, page)}, "confirm": {"reprocess-all-reset"}})
	_, page, _ = get(t, c, e.base+"/dashboard/")
	require.Contains(t, page, `<div class="flash error" id="flash" role="status">EMQLANE lane rows are not served natively</div>`)
	require.Equal(t, int64(3), e.counts("mail")["dead"])
	require.Equal(t, "1", e.jobField("mail", dead[0], "failures"))
}

// TestBrowserBulkActions: in Chromium, Reprocess all on the dead tab goes
// through its confirmation page (Cancel comes back and changes nothing),
// Run now on one scheduled job, Run all now for the rest; the queue page
// with its bulk bar stays within 1280 px.
func TestBrowserBulkActions(t *testing.T) {
	e := newEnv(t, nil)
	dead := e.seed("mail")
	ctx := tab(t)

	run(t, ctx, chromedp.Navigate(e.base+"/dashboard/q/0/mail?state=dead"), chromedp.WaitVisible(chromedp.ID("bulk")))
	noOverflow(t, ctx, "dead tab with its bulk actions")
	labels := eval[[]string](t, ctx, `[...document.querySelectorAll('#bulk a')].map(a => a.textContent)`)
	require.Equal(t, []string{"Reprocess all", "Reprocess all + reset", "Remove all dead"}, labels)
	screenshot(t, ctx, "queue-dead-bulk")

	click(t, ctx, `#bulk a[data-bulk="reprocess-all-reset"]`)
	run(t, ctx, chromedp.WaitVisible(chromedp.ID("confirm")))
	require.Equal(t, "3", eval[string](t, ctx, `document.getElementById('bulk-count').textContent`))
	require.Contains(t, eval[string](t, ctx, `document.getElementById('question').textContent`), "fresh retry and stall budget")
	noOverflow(t, ctx, "confirmation")
	screenshot(t, ctx, "bulk-confirm")
	click(t, ctx, `#confirm-no`)
	run(t, ctx, chromedp.WaitVisible(chromedp.CSS(`#jobs[data-state="dead"]`)))
	require.Equal(t, int64(3), e.counts("mail")["dead"], "Cancel changes nothing")

	click(t, ctx, `#bulk a[data-bulk="reprocess-all-reset"]`)
	run(t, ctx, chromedp.WaitVisible(chromedp.ID("confirm-yes")))
	click(t, ctx, `#confirm-yes`)
	run(t, ctx, chromedp.WaitVisible(chromedp.ID("flash")))
	require.Equal(t, "3 jobs of queue mail reprocessed with a fresh budget.", eval[string](t, ctx, `document.getElementById('flash').textContent`))
	require.Equal(t, int64(0), e.counts("mail")["dead"])
	require.Equal(t, "", e.jobField("mail", dead[2], "failures"))
	require.True(t, eval[bool](t, ctx, `document.getElementById('jobs-empty') !== null`), "the dead tab is empty")

	// Run now on the first scheduled job.
	run(t, ctx, chromedp.Navigate(e.base+"/dashboard/q/0/mail?state=scheduled"), chromedp.WaitVisible(chromedp.CSS(`#jobs[data-state="scheduled"]`)))
	sched := listIDs(e, "mail", "scheduled")
	require.Len(t, sched, 2)
	click(t, ctx, fmt.Sprintf(`#jobs tr[data-id="%s"] button[data-action="run-now"]`, sched[0]))
	run(t, ctx, chromedp.WaitVisible(chromedp.ID("flash")))
	require.Equal(t, "Job "+sched[0]+" is pending now: the next claim can take it.", eval[string](t, ctx, `document.getElementById('flash').textContent`))
	require.Equal(t, "pending", e.jobField("mail", sched[0], "state"))
	require.Equal(t, []string{sched[1]}, eval[[]string](t, ctx, `[...document.querySelectorAll('#jobs tbody tr')].map(r => r.dataset.id)`))

	click(t, ctx, `#bulk a[data-bulk="promote-all"]`)
	run(t, ctx, chromedp.WaitVisible(chromedp.ID("confirm-yes")))
	click(t, ctx, `#confirm-yes`)
	run(t, ctx, chromedp.WaitVisible(chromedp.ID("flash")))
	require.Equal(t, "1 job of queue mail moved to pending.", eval[string](t, ctx, `document.getElementById('flash').textContent`))
	require.Equal(t, "pending", e.jobField("mail", sched[1], "state"))
	screenshot(t, ctx, "queue-after-run-all")
}

// TestRunNowOnJobPage: a scheduled job's page offers Run now; the POST
// sends EMQ.PROMOTE.JOB and a second one (the job is pending now) shows
// the verb's refusal and changes nothing.
func TestRunNowOnJobPage(t *testing.T) {
	e := newEnv(t, nil)
	e.seed("mail")
	id := listIDs(e, "mail", "scheduled")[0]
	c := httpClient(t)
	_, page, _ := get(t, c, e.base+"/dashboard/q/0/mail/job/"+id)
	require.Contains(t, page, `action="/dashboard/q/0/mail/job/`+id+`/run"`)
	tok := csrfOf(t, page)
	code, _, _ := post(t, c, e.base+"/dashboard/q/0/mail/job/"+id+"/run", url.Values{"csrf": {tok}})
	require.Equal(t, http.StatusSeeOther, code)
	require.Equal(t, "pending", e.jobField("mail", id, "state"))
	_, page, _ = get(t, c, e.base+"/dashboard/q/0/mail/job/"+id)
	require.NotContains(t, page, `/run"`, "a pending job has no Run now")
	before := e.counts("mail")
	post(t, c, e.base+"/dashboard/q/0/mail/job/"+id+"/run", url.Values{"csrf": {tok}})
	_, page, _ = get(t, c, e.base+"/dashboard/")
	require.Contains(t, page, `<div class="flash error" id="flash" role="status">EMQSTATE job is not scheduled</div>`)
	require.Equal(t, before, e.counts("mail"))
}
