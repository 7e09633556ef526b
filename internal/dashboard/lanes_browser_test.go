package dashboard_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestBrowserLanes: a queue's page lists its lanes (EMQ.LANES, docs/verbs.md
// §4.26.5) with their state, pending and active counts and limits.
func TestBrowserLanes(t *testing.T) {
	e := newEnv(t, nil)
	e.do("EMQ.LANE", "mail", "acme", "MAX_ACTIVE", 1, "WEIGHT", 3)
	e.do("EMQ.LANE", "mail", "globex", "RATE", 5, 60000)
	for i := 0; i < 3; i++ {
		e.do("EMQ.ENQUEUE", "mail", "*", "a", "LANE", "acme")
		e.do("EMQ.ENQUEUE", "mail", "*", "g", "LANE", "globex")
	}
	e.do("EMQ.ENQUEUE", "mail", "*", "plain")
	e.do("EMQ.CLAIM", "mail", 60000, "COUNT", 3)
	ctx := tab(t)

	run(t, ctx, chromedp.Navigate(e.base+"/dashboard/q/0/mail"), chromedp.WaitVisible(chromedp.ID("lanes")))
	names := eval[[]string](t, ctx, `[...document.querySelectorAll('#lanes tbody tr')].map(r => r.dataset.lane)`)
	require.Equal(t, []string{"acme", "default", "globex"}, names)
	cell := func(lane, cls string) string {
		return eval[string](t, ctx, "document.querySelector('#lanes tr[data-lane=\""+lane+"\"] td."+cls+"').textContent.trim()")
	}
	require.Equal(t, "full", cell("acme", "state"))
	require.Equal(t, "2", cell("acme", "pending"))
	require.Equal(t, "1", cell("acme", "active"))
	require.Equal(t, "3", cell("acme", "weight"))
	require.Equal(t, "1", cell("acme", "max"))
	require.Equal(t, "5 / 60000 ms", cell("globex", "rate"))
	require.Equal(t, "-", cell("globex", "max"))
	require.Equal(t, "2", cell("globex", "pending"))
	require.Equal(t, "idle", cell("default", "state"))
	screenshot(t, ctx, "queue-lanes")

	// A queue without lanes shows no lanes section.
	e.do("EMQ.ENQUEUE", "other", "*", "x")
	run(t, ctx, chromedp.Navigate(e.base+"/dashboard/q/0/other"), chromedp.WaitVisible(chromedp.ID("jobs")))
	require.Equal(t, 0, eval[int](t, ctx, `document.querySelectorAll('#lanes').length`))
}
