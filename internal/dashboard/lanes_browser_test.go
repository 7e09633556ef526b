package dashboard_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/emqd/emqd/internal/dashboard"
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

	// A lane's name opens the pending tab of that lane only (docs/verbs.md
	// §4.26.6): acme's two pending jobs, with the lane column and the way
	// back to every lane.
	click(t, ctx, `#lanes tr[data-lane="acme"] a.lane-jobs`)
	run(t, ctx, chromedp.WaitVisible(chromedp.ID("lane-filter")))
	require.Equal(t, []string{"acme", "acme"}, eval[[]string](t, ctx, `[...document.querySelectorAll('#jobs tbody td.lane')].map(c => c.textContent)`))
	require.Equal(t, "Drain lane acme", eval[string](t, ctx, `document.querySelector('#bulk a[data-bulk="drain"]').textContent`))
	screenshot(t, ctx, "queue-lane-filter")
	click(t, ctx, "#all-lanes")
	require.Equal(t, 4, eval[int](t, ctx, `document.querySelectorAll('#jobs tbody tr').length`), "every lane's pending jobs")

	// A queue without lanes shows no lanes section.
	e.do("EMQ.ENQUEUE", "other", "*", "x")
	run(t, ctx, chromedp.Navigate(e.base+"/dashboard/q/0/other"), chromedp.WaitVisible(chromedp.ID("jobs")))
	require.Equal(t, 0, eval[int](t, ctx, `document.querySelectorAll('#lanes').length`))
}

// TestBrowserLanesPaged: a queue of 2,500 lanes shows them 50 at a time
// (LanePageSize, EMQ.LANES q offset 50, docs/operations.md §2) with the
// number of lanes and a pager: the page stays small (25 KB with each
// lane linked to its pending jobs, 19 KB before; 700 KB at
// 4fbe120, every lane in one table), page 2 shows the next 50 names, the last page
// the last ones, and the pager keeps the job tab the operator is on.
func TestBrowserLanesPaged(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	pipe := e.rdb.Pipeline()
	for l := 0; l < 2500; l++ {
		pipe.Do(ctx, "EMQ.ENQUEUE", "mail", "*", "p", "LANE", fmt.Sprintf("t%04d", l))
	}
	_, err := pipe.Exec(ctx)
	require.NoError(t, err)
	names := func(from, to int) []string {
		var out []string
		for l := from; l < to; l++ {
			out = append(out, fmt.Sprintf("t%04d", l))
		}
		return out
	}

	// The active tab (no job): the page's size is the lanes section's (the
	// pending tab adds its 50 jobs of every lane, docs/verbs.md §4.26.6).
	code, body, _ := get(t, httpClient(t), e.base+"/dashboard/q/0/mail?state=active")
	require.Equal(t, http.StatusOK, code)
	t.Logf("queue page with 2,500 lanes: %d bytes", len(body))
	require.Less(t, len(body), 48<<10, "the queue page of a queue with 2,500 lanes")
	require.Equal(t, dashboard.LanePageSize, strings.Count(body, "<tr data-lane="))

	tb := tab(t)
	rows := `[...document.querySelectorAll('#lanes tbody tr')].map(r => r.dataset.lane)`
	pager := `document.querySelector('#lanes-pager').textContent.replace(/\s+/g, ' ').trim()`
	run(t, tb, chromedp.Navigate(e.base+"/dashboard/q/0/mail?state=active"), chromedp.WaitVisible(chromedp.ID("lanes")))
	require.Equal(t, names(0, 50), eval[[]string](t, tb, rows))
	require.Equal(t, "2500", eval[string](t, tb, `document.querySelector('#lanes-total').textContent`))
	require.Equal(t, "lanes 1–50 of 2500 · page 1 of 50 · next · last", eval[string](t, tb, pager))
	require.Equal(t, 0, eval[int](t, tb, `document.querySelectorAll('#lanes-prev').length`))

	click(t, tb, "#lanes-next")
	require.Equal(t, names(50, 100), eval[[]string](t, tb, rows))
	require.Equal(t, "lanes 51–100 of 2500 · page 2 of 50 · first · previous · next · last", eval[string](t, tb, pager))
	// The pager keeps the tab: still the active jobs.
	require.Equal(t, "active", eval[string](t, tb, `document.querySelector('.tabs .tab.on').dataset.tab`))
	screenshot(t, tb, "queue-lanes-page-2")

	click(t, tb, "#lanes-last")
	require.Equal(t, names(2450, 2500), eval[[]string](t, tb, rows))
	require.Equal(t, "lanes 2451–2500 of 2500 · page 50 of 50 · first · previous", eval[string](t, tb, pager))
	click(t, tb, "#lanes-prev")
	require.Equal(t, names(2400, 2450), eval[[]string](t, tb, rows))
	click(t, tb, "#lanes-first")
	require.Equal(t, names(0, 50), eval[[]string](t, tb, rows))

	// An offset past the end: no row, the count, a way back.
	run(t, tb, chromedp.Navigate(e.base+"/dashboard/q/0/mail?lanes=9000"), chromedp.WaitVisible(chromedp.ID("lanes-pager")))
	require.Equal(t, 0, eval[int](t, tb, `document.querySelectorAll('#lanes tbody tr').length`))
	click(t, tb, "#lanes-prev")
	require.Equal(t, names(2450, 2500), eval[[]string](t, tb, rows))
}
