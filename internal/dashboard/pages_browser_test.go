package dashboard_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestBrowserServerAndQueuePages opens the server page and a queue page
// and reads the counts the seeded set must give (pending 5, active 1,
// scheduled 2, dead 3, completed 1, died 3), the paused flag of another
// queue, and the throughput since start.
func TestBrowserServerAndQueuePages(t *testing.T) {
	e := newEnv(t, nil)
	e.seed("mail")
	e.do("EMQ.ENQUEUE", "reports", "*", "r1")
	e.do("EMQ.PAUSE", "reports")
	ctx := tab(t)

	run(t, ctx, chromedp.Navigate(e.base+"/dashboard/"), chromedp.WaitVisible(chromedp.ID("queues")))
	row := eval[[]string](t, ctx, `[...document.querySelectorAll('#queues tr[data-queue="mail"] td.num')].map(td => td.textContent.trim())`)
	require.Equal(t, []string{"5", "1", "2", "3", "1", "3"}, row, "mail's pending, active, scheduled, dead, completed, died")
	require.True(t, eval[bool](t, ctx, `!!document.querySelector('#queues tr[data-queue="reports"] .badge.paused')`), "reports shows paused")
	require.False(t, eval[bool](t, ctx, `!!document.querySelector('#queues tr[data-queue="mail"] .badge.paused')`), "mail is not paused")
	screenshot(t, ctx, "server")

	click(t, ctx, `#queues tr[data-queue="mail"] a.qname`)
	run(t, ctx, chromedp.WaitVisible(chromedp.ID("counts")))
	counts := eval[map[string]string](t, ctx, `Object.fromEntries([...document.querySelectorAll('#counts [data-count]')].map(n => [n.dataset.count, n.textContent.trim()]))`)
	require.Equal(t, map[string]string{"pending": "5", "active": "1", "scheduled": "2", "dead": "3", "completed": "1", "failed": "3"}, counts)
	// The queue latency card (EMQ.COUNTS latency_ms) is shown, in ms.
	require.Regexp(t, `^\d+ ms$`, eval[string](t, ctx, `document.querySelector('#counts [data-latency-ms]').textContent.trim()`))
	// The pending tab lists the five pending jobs, in id order.
	ids := eval[[]string](t, ctx, `[...document.querySelectorAll('#jobs tbody tr')].map(r => r.dataset.id)`)
	want := listIDs(e, "mail", "pending")
	require.Len(t, want, 5)
	require.Equal(t, want, ids)
	// Throughput since start (less than a minute of history: marked *):
	// 12 enqueued, 1 completed, 3 failed, 3 died.
	first := eval[[]string](t, ctx, `[...document.querySelectorAll('#counts table.windows tr')[1].children].map(c => c.textContent.trim())`)
	require.Equal(t, []string{"1 min*", "12", "1", "3", "3"}, first)
	screenshot(t, ctx, "queue-pending")

	click(t, ctx, `a[data-tab="scheduled"]`)
	run(t, ctx, chromedp.WaitVisible(chromedp.CSS(`#jobs[data-state="scheduled"]`)))
	when := eval[[]string](t, ctx, `[...document.querySelectorAll('#jobs td.when')].map(c => c.textContent.trim())`)
	require.Equal(t, []string{"in 1m 0s", "in 2m 0s"}, when, "run-at times on the server clock")
	screenshot(t, ctx, "queue-scheduled")
}

// listIDs is EMQ.LIST's ids of one state.
func listIDs(e *env, q, state string) []string {
	var ids []string
	for _, x := range e.do("EMQ.LIST", q, state).([]any) {
		ids = append(ids, x.([]any)[0].(string))
	}
	return ids
}

// TestBrowserReprocessDead opens the dead tab, clicks Reprocess on a dead
// job and Reprocess + reset on another, and checks through RESP that both
// are pending again, the second with its budgets cleared.
func TestBrowserReprocessDead(t *testing.T) {
	e := newEnv(t, nil)
	dead := e.seed("mail")
	ctx := tab(t)

	run(t, ctx, chromedp.Navigate(e.base+"/dashboard/q/0/mail"), chromedp.WaitVisible(chromedp.ID("counts")))
	click(t, ctx, `a[data-tab="dead"]`)
	run(t, ctx, chromedp.WaitVisible(chromedp.CSS(`#jobs[data-state="dead"]`)))
	rows := eval[[]string](t, ctx, `[...document.querySelectorAll('#jobs tbody tr')].map(r => r.dataset.id)`)
	require.Equal(t, dead, rows)
	errs := eval[[]string](t, ctx, `[...document.querySelectorAll('#jobs td.err')].map(c => c.textContent.trim())`)
	require.Equal(t, []string{"boom " + dead[0], "boom " + dead[1], "boom " + dead[2]}, errs)
	screenshot(t, ctx, "queue-dead")

	require.Equal(t, "dead", e.jobField("mail", dead[0], "state"))
	click(t, ctx, fmt.Sprintf(`#jobs tr[data-id="%s"] button[data-action="reprocess"]`, dead[0]))
	run(t, ctx, chromedp.WaitVisible(chromedp.ID("flash")))
	flash := eval[string](t, ctx, `document.getElementById('flash').textContent`)
	require.Equal(t, "Job "+dead[0]+" is pending again.", flash)
	require.Equal(t, "pending", e.jobField("mail", dead[0], "state"))
	require.Equal(t, "1", e.jobField("mail", dead[0], "failures"), "plain reprocess keeps the budget spent")
	require.Contains(t, listIDs(e, "mail", "pending"), dead[0])
	// Back on the dead tab, two jobs are left.
	rows = eval[[]string](t, ctx, `[...document.querySelectorAll('#jobs tbody tr')].map(r => r.dataset.id)`)
	require.Equal(t, dead[1:], rows)

	click(t, ctx, fmt.Sprintf(`#jobs tr[data-id="%s"] button[data-action="reprocess-reset"]`, dead[1]))
	run(t, ctx, chromedp.WaitVisible(chromedp.ID("flash")))
	require.Equal(t, "pending", e.jobField("mail", dead[1], "state"))
	require.Equal(t, "", e.jobField("mail", dead[1], "failures"), "RESET deletes failures")
	require.Equal(t, "", e.jobField("mail", dead[1], "last_error"))
	c := e.counts("mail")
	require.Equal(t, int64(7), c["pending"])
	require.Equal(t, int64(1), c["dead"])
	screenshot(t, ctx, "queue-after-reprocess")
}

// TestBrowserPayloadShownAsText: a payload and an error text holding
// markup are shown as text on the job page and in the list; nothing of
// them runs or becomes an element.
func TestBrowserPayloadShownAsText(t *testing.T) {
	e := newEnv(t, nil)
	payload := `<script>window.__pwned=1;document.title="pwned"</script><img src=x onerror="window.__pwned=2"><b>bold</b> & "quotes"`
	errText := `<script>window.__pwned=3</script><i>err</i>`
	e.do("EMQ.ENQUEUE", "xss", "JOB0000000000A", payload)
	claimed := e.do("EMQ.CLAIM", "xss", 60000).([]any)[0].([]any)
	e.do("EMQ.FAIL", "xss", "JOB0000000000A", claimed[2], 1, 0, errText)
	ctx := tab(t)

	run(t, ctx, chromedp.Navigate(e.base+"/dashboard/q/0/xss/job/JOB0000000000A"), chromedp.WaitVisible(chromedp.ID("payload")))
	require.Equal(t, payload, eval[string](t, ctx, `document.getElementById('payload').textContent`))
	require.Equal(t, errText, eval[string](t, ctx, `document.getElementById('last-error').textContent`))
	require.Equal(t, 0, eval[int](t, ctx, `document.querySelectorAll('#payload *, #last-error *, #fields * script, #fields img').length`))
	require.True(t, eval[bool](t, ctx, `window.__pwned === undefined`), "no script of the payload ran")
	require.Equal(t, "JOB0000000000A · emqd", eval[string](t, ctx, `document.title`))
	require.Equal(t, "dead", eval[string](t, ctx, `document.getElementById('state').textContent`))
	screenshot(t, ctx, "job")

	run(t, ctx, chromedp.Navigate(e.base+"/dashboard/q/0/xss?state=dead"), chromedp.WaitVisible(chromedp.ID("jobs")))
	require.Equal(t, 0, eval[int](t, ctx, `document.querySelectorAll('#jobs td.payload b, #jobs td.payload img, #jobs td.err i, #jobs script').length`))
	require.True(t, strings.HasPrefix(eval[string](t, ctx, `document.querySelector('#jobs .preview').textContent`), `<script>window.__pwned=1`))
	require.True(t, eval[bool](t, ctx, `window.__pwned === undefined`))
}

// TestBrowserLogin: with requirepass set, a page leads to the login form
// and shows nothing else; a wrong password is refused; the right one opens
// the page asked for.
func TestBrowserLogin(t *testing.T) {
	e := newEnv(t, map[string]string{"requirepass": "s3cret"})
	e.seed("mail")
	ctx := tab(t)

	run(t, ctx, chromedp.Navigate(e.base+"/dashboard/q/0/mail?state=dead"), chromedp.WaitVisible(chromedp.ID("login")))
	loc, err := chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	require.Contains(t, loc, "/dashboard/login?next=")
	require.False(t, eval[bool](t, ctx, `!!document.getElementById('counts') || !!document.getElementById('jobs')`))
	screenshot(t, ctx, "login")

	run(t, ctx, chromedp.SendKeys(chromedp.ID("password"), "wrong"))
	click(t, ctx, "#login-submit")
	run(t, ctx, chromedp.WaitVisible(chromedp.ID("login-error")))
	require.Equal(t, "Wrong password.", eval[string](t, ctx, `document.getElementById('login-error').textContent`))

	run(t, ctx, chromedp.SendKeys(chromedp.ID("password"), "s3cret"))
	click(t, ctx, "#login-submit")
	run(t, ctx, chromedp.WaitVisible(chromedp.CSS(`#jobs[data-state="dead"]`)))
	require.Equal(t, "3", eval[string](t, ctx, `document.querySelector('[data-count="dead"]').textContent`))
	screenshot(t, ctx, "queue-dead-logged-in")

	// Log out: the next page asks for the password again.
	click(t, ctx, `header form[action$="logout"] button`)
	run(t, ctx, chromedp.WaitVisible(chromedp.ID("login")))
	run(t, ctx, chromedp.Navigate(e.base+"/dashboard/"), chromedp.WaitVisible(chromedp.ID("login")))
}

// TestBrowserCSRF: a form whose CSRF token was taken out is refused (403)
// and the job stays dead.
func TestBrowserCSRF(t *testing.T) {
	e := newEnv(t, nil)
	dead := e.seed("mail")
	ctx := tab(t)

	run(t, ctx, chromedp.Navigate(e.base+"/dashboard/q/0/mail?state=dead"), chromedp.WaitVisible(chromedp.ID("jobs")))
	eval[int](t, ctx, `document.querySelectorAll('input[name="csrf"]').forEach(i => i.remove()), 0`)
	resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(fmt.Sprintf(`#jobs tr[data-id="%s"] button[data-action="reprocess"]`, dead[0]))))
	require.NoError(t, err)
	require.Equal(t, int64(403), resp.Status)
	require.Contains(t, eval[string](t, ctx, `document.getElementById('error').textContent`), "CSRF token is missing or wrong")
	require.Equal(t, "dead", e.jobField("mail", dead[0], "state"))
	require.Equal(t, int64(3), e.counts("mail")["dead"])
	screenshot(t, ctx, "refused-csrf")
}

// TestBrowserFlowTree: a flow parent's job page shows its children as a
// tree, each child with its state and its result or error, an inner
// parent's children nested under it; a child's page links to its parent
// (docs/verbs.md §4.25, docs/operations.md §2).
func TestBrowserFlowTree(t *testing.T) {
	e := newEnv(t, nil)
	const p, a, b, g = "JOBP0000000001", "JOBA0000000001", "JOBB0000000001", "JOBG0000000001"
	require.Equal(t, int64(4), e.do("EMQ.FLOW", "album", p, "build", "ON_CHILD_FAIL", "ignore",
		"CHILD", "img", a, "a", "CHILD", "img", b, "b", "ON_CHILD_FAIL", "ignore", "CHILD", "img", g, "g", "UNDER", "img", b))
	claimed := e.do("EMQ.CLAIM", "img", 60000).([]any)[0].([]any)
	require.Equal(t, a, claimed[0])
	e.do("EMQ.COMPLETE", "img", a, claimed[2], "RESULT", "thumb-a.png")
	claimed = e.do("EMQ.CLAIM", "img", 60000).([]any)[0].([]any)
	require.Equal(t, g, claimed[0])
	e.do("EMQ.FAIL", "img", g, claimed[2], 1, 0, "bad pixel")
	ctx := tab(t)

	run(t, ctx, chromedp.Navigate(e.base+"/dashboard/q/0/album/job/"+p), chromedp.WaitVisible(chromedp.ID("children")))
	require.Equal(t, "waiting", eval[string](t, ctx, `document.getElementById('state').textContent`))
	require.Equal(t, "1 of 2 not ended", eval[string](t, ctx, `document.getElementById('children-left').textContent`))
	tree := eval[[]string](t, ctx, `[...document.querySelectorAll('#children li')].map(li => li.dataset.job + ' ' + li.querySelector('.badge').textContent + ' ' + (li.querySelector(':scope > .result, :scope > .err') || {textContent: ''}).textContent)`)
	require.Equal(t, []string{
		"img:" + a + " completed thumb-a.png",
		"img:" + b + " pending ",
		"img:" + g + " dead bad pixel",
	}, tree)
	// g is nested under b.
	require.Equal(t, "img:"+b, eval[string](t, ctx, `document.querySelector('#children li[data-job="img:`+g+`"]').parentElement.closest('li').dataset.job`))
	screenshot(t, ctx, "flow-tree")

	// The queue page's waiting tab lists the waiting parent.
	run(t, ctx, chromedp.Navigate(e.base+"/dashboard/q/0/album?state=waiting"), chromedp.WaitVisible(chromedp.ID("jobs")))
	require.Equal(t, "waiting 1", eval[string](t, ctx, `document.querySelector('.tab[data-tab="waiting"]').textContent.trim()`))
	require.Equal(t, []string{p}, listIDs(e, "album", "waiting"))
	require.Equal(t, 1, eval[int](t, ctx, `document.querySelectorAll('#jobs tbody tr').length`))

	// A child's page links to its parent: g to the inner parent b, b to p.
	run(t, ctx, chromedp.Navigate(e.base+"/dashboard/q/0/img/job/"+g), chromedp.WaitVisible(chromedp.ID("parent")))
	click(t, ctx, "#parent a")
	run(t, ctx, chromedp.WaitVisible(chromedp.ID("children")))
	require.Equal(t, b, eval[string](t, ctx, `document.querySelector('h1').textContent`))
	require.Equal(t, []string{"img:" + g}, eval[[]string](t, ctx, `[...document.querySelectorAll('#children li')].map(li => li.dataset.job)`))
	click(t, ctx, "#parent a")
	run(t, ctx, chromedp.WaitVisible(chromedp.ID("children")))
	require.Equal(t, p, eval[string](t, ctx, `document.querySelector('h1').textContent`))
}
