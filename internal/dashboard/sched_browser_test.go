package dashboard_test

import (
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestBrowserSchedules: a queue's page lists its schedules with their next
// fire time, last slot and counts (docs/verbs.md §4.22); Pause, Resume and
// Delete act through EMQ.SCHEDULE.PAUSE, .RESUME and .DEL.
func TestBrowserSchedules(t *testing.T) {
	e := newEnv(t, nil)
	e.do("EMQ.SCHEDULE", "mail", "digest", "EVERY", 60000, "d")
	e.do("EMQ.SCHEDULE", "mail", "nightly", "CRON", "0 3 * * *", "TZ", "Europe/Berlin", "n")
	e.clk.Advance(60000)
	e.clk.Wait()
	e.clk.Advance(30000) // digest fired once, its next slot in 30 s
	ctx := tab(t)

	run(t, ctx, chromedp.Navigate(e.base+"/dashboard/q/0/mail"), chromedp.WaitVisible(chromedp.ID("schedules")))
	names := eval[[]string](t, ctx, `[...document.querySelectorAll('#schedules tbody tr')].map(r => r.dataset.schedule)`)
	require.Equal(t, []string{"digest", "nightly"}, names, "next fire first")
	cell := func(name, cls string) string {
		return eval[string](t, ctx, "document.querySelector('#schedules tr[data-schedule=\""+name+"\"] td."+cls+"').textContent.trim()")
	}
	require.Equal(t, "in 30s", cell("digest", "next"))
	require.Equal(t, "30s ago", cell("digest", "last"))
	require.Equal(t, "1", cell("digest", "fired"))
	require.Equal(t, "0", cell("digest", "missed"))
	require.Equal(t, "active", cell("digest", "state"))
	require.Equal(t, "-", cell("nightly", "last"))
	require.Contains(t, eval[string](t, ctx, `document.querySelector('#schedules tr[data-schedule="nightly"]').textContent`), "cron 0 3 * * * (Europe/Berlin)")
	screenshot(t, ctx, "queue-schedules")

	click(t, ctx, `#schedules tr[data-schedule="digest"] button[data-action="sched-pause"]`)
	run(t, ctx, chromedp.WaitVisible(chromedp.ID("flash")))
	require.Equal(t, "Schedule digest paused: it fires nothing until it is resumed.", eval[string](t, ctx, `document.getElementById('flash').textContent`))
	require.Equal(t, "paused", schedField(e, "mail", "digest", "state"))
	require.Equal(t, "paused", cell("digest", "state"))

	click(t, ctx, `#schedules tr[data-schedule="digest"] button[data-action="sched-resume"]`)
	run(t, ctx, chromedp.WaitVisible(chromedp.ID("flash")))
	require.Equal(t, "active", schedField(e, "mail", "digest", "state"))
	require.Equal(t, strconv.FormatInt(t0+120000, 10), schedField(e, "mail", "digest", "next_ms"))

	eval[int](t, ctx, `(window.confirm = () => true, 0)`)
	click(t, ctx, `#schedules tr[data-schedule="nightly"] button[data-action="sched-delete"]`)
	run(t, ctx, chromedp.WaitVisible(chromedp.ID("flash")))
	require.Equal(t, "Schedule nightly deleted (the jobs it enqueued stay).", eval[string](t, ctx, `document.getElementById('flash').textContent`))
	require.Nil(t, e.do("EMQ.SCHEDULE.GET", "mail", "nightly"))
	names = eval[[]string](t, ctx, `[...document.querySelectorAll('#schedules tbody tr')].map(r => r.dataset.schedule)`)
	require.Equal(t, []string{"digest"}, names)
	screenshot(t, ctx, "queue-schedules-after")
}

// schedField is one field of EMQ.SCHEDULE.GET's RESP2 reply.
func schedField(e *env, q, name, f string) string {
	v, _ := e.do("EMQ.SCHEDULE.GET", q, name).([]any)
	for i := 0; i+1 < len(v); i += 2 {
		if v[i] == f {
			return v[i+1].(string)
		}
	}
	return ""
}
