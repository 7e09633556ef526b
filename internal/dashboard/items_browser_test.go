package dashboard_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// noOverflow fails unless the page in the tab is no wider than the
// 1280 px window (no horizontal scroll bar).
func noOverflow(t *testing.T, ctx context.Context, what string) {
	t.Helper()
	w := eval[int](t, ctx, `document.documentElement.scrollWidth`)
	inner := eval[int](t, ctx, `window.innerWidth`)
	require.Equal(t, 1280, inner, "the test window is 1280 px wide")
	require.LessOrEqual(t, w, 1280, "%s: the page is %d px wide at a 1280 px window", what, w)
	// Nor does a table scroll inside its box (the .scroll wrapper is a
	// last resort, not the layout).
	inside := eval[[]int](t, ctx, `[...document.querySelectorAll('.scroll')].map(b => b.scrollWidth - b.clientWidth)`)
	for i, d := range inside {
		require.LessOrEqual(t, d, 0, "%s: table %d is %d px wider than its box", what, i, d)
	}
}

// TestBrowserNoOverflowAt1280: with error texts, payloads, results, a
// queue name and a schedule name far longer than a line (and without
// spaces to break at), no page and no tab is wider than a 1280 px window.
func TestBrowserNoOverflowAt1280(t *testing.T) {
	e := newEnv(t, nil)
	e.seed("other")
	long := strings.Repeat("x", 3000)
	words := strings.Repeat("a-rather-long-word ", 200)
	e.do("EMQ.RETAIN", "mail", "COMPLETED", 10, 0)
	for i, p := range []string{long, words, `{"k":"` + long + `"}`} {
		id := e.do("EMQ.ENQUEUE", "mail", "*", p).(string)
		job := e.do("EMQ.CLAIM", "mail", 60000).([]any)[0].([]any)
		require.Equal(t, id, job[0])
		if i == 0 {
			e.do("EMQ.COMPLETE", "mail", id, job[2], "RESULT", "result-"+long)
		} else {
			e.do("EMQ.FAIL", "mail", id, job[2], 1, 0, "error-"+long+" "+words)
		}
	}
	e.do("EMQ.ENQUEUE", "mail", "*", long, "DELAY", 5000)
	e.do("EMQ.ENQUEUE", "mail", "*", long)  // claimed below: active
	e.do("EMQ.ENQUEUE", "mail", "*", words) // pending
	e.do("EMQ.CLAIM", "mail", 60000)
	e.do("EMQ.SCHEDULE", "mail", "sched-"+strings.Repeat("s", 120), "EVERY", 60000, long)
	lq := "queue-" + strings.Repeat("q", 120)
	lid := e.do("EMQ.ENQUEUE", lq, "*", long).(string)
	job := e.do("EMQ.CLAIM", lq, 60000).([]any)[0].([]any)
	e.do("EMQ.FAIL", lq, lid, job[2], 1, 0, long)
	ctx := tab(t)

	run(t, ctx, chromedp.Navigate(e.base+"/dashboard/"), chromedp.WaitVisible(chromedp.ID("queues")))
	noOverflow(t, ctx, "server page")
	for s, n := range map[string]int64{"pending": 1, "active": 1, "scheduled": 1, "dead": 2, "retained": 1} {
		require.Equal(t, n, e.counts("mail")[s], s)
	}
	for _, q := range []string{"mail", lq, "other"} {
		for _, s := range []string{"pending", "active", "scheduled", "dead", "completed"} {
			run(t, ctx, chromedp.Navigate(e.base+"/dashboard/q/0/"+q+"?state="+s), chromedp.WaitVisible(chromedp.ID("counts")))
			noOverflow(t, ctx, q[:min(len(q), 12)]+" "+s+" tab")
			// Headings, ids and run durations stay on one line (a text line is
			// under 26 px high; words are not broken to fit).
			require.Less(t, eval[int](t, ctx, `Math.max(0, ...[...document.querySelectorAll('#jobs thead th, #jobs td.id, #jobs td.run')].map(c => { const r = document.createRange(); r.selectNodeContents(c); return r.getBoundingClientRect().height }))`), 26,
				"%s tab: a heading, an id or a run duration wraps", s)
			if q == "mail" && (s == "dead" || s == "completed") {
				screenshot(t, ctx, "overflow-"+s)
			}
		}
	}
	for _, s := range []string{"dead", "completed"} {
		id := listIDs(e, "mail", s)[0]
		run(t, ctx, chromedp.Navigate(e.base+"/dashboard/q/0/mail/job/"+id), chromedp.WaitVisible(chromedp.ID("fields")))
		noOverflow(t, ctx, "job page of a "+s+" job")
	}
	run(t, ctx, chromedp.Navigate(e.base+"/dashboard/q/0/"+lq+"/job/"+lid), chromedp.WaitVisible(chromedp.ID("fields")))
	noOverflow(t, ctx, "job page in the long-named queue")
	run(t, ctx, chromedp.Navigate(e.base+"/dashboard/q/0/mail/job/"+long[:500]), chromedp.WaitVisible(chromedp.ID("nojob")))
	noOverflow(t, ctx, "job page of an unknown long id")
	run(t, ctx, chromedp.Navigate(e.base+"/dashboard/q/0/mail/find?id="+long[:500]), chromedp.WaitVisible(chromedp.ID("flash")))
	noOverflow(t, ctx, "find message for an unknown long id")
}

// TestBrowserTimesResultAndFind: the completed tab shows the times, the
// run duration and the escaped result; the find form opens a job's page
// (whose result is shown, escaped) and says so for an unknown id.
func TestBrowserTimesResultAndFind(t *testing.T) {
	e := newEnv(t, nil)
	id := doneJob(e, "mail", "p", `<img src=x onerror="window.__pwned=1">`)
	e.clk.Advance(1000)
	ctx := tab(t)

	run(t, ctx, chromedp.Navigate(e.base+"/dashboard/q/0/mail?state=completed"), chromedp.WaitVisible(chromedp.CSS(`#jobs[data-state="completed"]`)))
	cells := eval[[]string](t, ctx, fmt.Sprintf(`[...document.querySelectorAll('#jobs tr[data-id="%s"] td.time, #jobs tr[data-id="%s"] td.run')].map(c => c.textContent.trim())`, id, id))
	require.Equal(t, []string{"4s ago", "3s ago", "1s ago", "2.25s"}, cells, "enqueued, claimed, finished, run")
	require.Equal(t, `<img src=x onerror="window.__pwned=1">`, eval[string](t, ctx, `document.querySelector('#jobs td.result .preview').textContent`))
	require.Equal(t, 0, eval[int](t, ctx, `document.querySelectorAll('#jobs td.result img').length`))
	screenshot(t, ctx, "queue-completed")

	run(t, ctx, chromedp.SendKeys(chromedp.CSS(`#find input[name="id"]`), id))
	click(t, ctx, `#find button`)
	run(t, ctx, chromedp.WaitVisible(chromedp.ID("result")))
	require.Equal(t, `<img src=x onerror="window.__pwned=1">`, eval[string](t, ctx, `document.getElementById('result').textContent`))
	require.True(t, eval[bool](t, ctx, `window.__pwned === undefined`))
	require.True(t, eval[bool](t, ctx, `!!(document.getElementById('payload').compareDocumentPosition(document.getElementById('result')) & Node.DOCUMENT_POSITION_FOLLOWING)`),
		"the result comes after the payload")
	screenshot(t, ctx, "job-completed")

	run(t, ctx, chromedp.Navigate(e.base+"/dashboard/q/0/mail"), chromedp.WaitVisible(chromedp.ID("find")))
	run(t, ctx, chromedp.SendKeys(chromedp.CSS(`#find input[name="id"]`), "JOBNOSUCH"))
	click(t, ctx, `#find button`)
	run(t, ctx, chromedp.WaitVisible(chromedp.ID("flash")))
	require.Equal(t, "Queue mail (db 0) has no job JOBNOSUCH: it was completed without retention or removed, or never existed.",
		eval[string](t, ctx, `document.getElementById('flash').textContent`))
}

// TestBrowserAutoRefresh: a page with ?refresh=1 reloads itself (a mark
// set on its window is gone) under the strict CSP, and does not while a
// form field on it is focused and typed into.
func TestBrowserAutoRefresh(t *testing.T) {
	e := newEnv(t, nil)
	e.seed("mail")
	ctx := tab(t)

	run(t, ctx, chromedp.Navigate(e.base+"/dashboard/q/0/mail?refresh=1"), chromedp.WaitVisible(chromedp.ID("counts")))
	eval[int](t, ctx, `window.__mark = 1`)
	reloaded := false
	for i := 0; i < 100 && !reloaded; i++ {
		time.Sleep(100 * time.Millisecond)
		reloaded = eval[bool](t, ctx, `window.__mark === undefined && !!document.getElementById('counts')`)
	}
	require.True(t, reloaded, "the page reloaded itself within 10 s of a 1 s period")

	run(t, ctx, chromedp.WaitVisible(chromedp.ID("find")))
	run(t, ctx, chromedp.SendKeys(chromedp.CSS(`#find input[name="id"]`), "JOB"))
	eval[int](t, ctx, `window.__mark = 2`)
	time.Sleep(3500 * time.Millisecond)
	require.Equal(t, 2, eval[int](t, ctx, `window.__mark`), "no reload while the find form is being filled")
	require.Equal(t, "JOB", eval[string](t, ctx, `document.querySelector('#find input[name="id"]').value`))
}
