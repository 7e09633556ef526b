package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/emqd/emqd/emq"
)

// The operator's bulk actions on the queue page (docs/operations.md §2.4,
// docs/verbs.md §4.24). A bulk button is a link to a confirmation page
// (GET, reads only); its form POSTs with the CSRF token and the field
// confirm=<op>, which only that page carries: a POST without it is refused
// and sends nothing. Confirmed, the action sends its bounded verb until
// the set is empty, at most bulkMaxCalls calls within the page's time.

// bulkOp is one bulk action.
type bulkOp struct {
	Name     string   // the URL segment and the confirm value
	State    string   // the tab it is offered on
	Label    string   // the button
	Args     []string // the verb and its arguments after the queue name
	Done     string   // what happened to each job ("reprocessed")
	Question string   // the confirmation's question
	Danger   bool
}

var bulkOps = []bulkOp{
	{"reprocess-all", "dead", "Reprocess all", []string{"EMQ.REPROCESS.ALL"}, "reprocessed",
		"Return every dead job to pending? Their failures and stalled counts are kept.", false},
	{"reprocess-all-reset", "dead", "Reprocess all + reset", []string{"EMQ.REPROCESS.ALL", "RESET"}, "reprocessed with a fresh budget",
		"Return every dead job to pending with a fresh retry and stall budget (failures and stalled cleared)?", false},
	{"remove-dead", "dead", "Remove all dead", []string{"EMQ.REMOVE.ALL", "dead"}, "removed",
		"Remove every dead job for good?", true},
	{"promote-all", "scheduled", "Run all now", []string{"EMQ.PROMOTE.ALL"}, "moved to pending",
		"Move every scheduled job (delayed jobs, retries waiting for their backoff, schedule occurrences) to pending now, due or not?", false},
	{"remove-scheduled", "scheduled", "Remove all scheduled", []string{"EMQ.REMOVE.ALL", "scheduled"}, "removed",
		"Remove every scheduled job for good?", true},
	{"drain", "pending", "Drain", []string{"EMQ.REMOVE.ALL", "pending"}, "removed",
		"Drain the queue: remove every pending job, in every lane, for good? Held (active) and scheduled jobs stay.", true},
	{"remove-completed", "completed", "Remove all completed", []string{"EMQ.REMOVE.ALL", "completed"}, "removed",
		"Remove every retained completed job (and its result)?", true},
}

// bulkBatch and bulkMaxCalls bound one confirmed action: LIMIT per call,
// and calls (so at most 100,000 jobs per click; the flash says how many
// are left, and the button can be used again).
const (
	bulkBatch    = 1000
	bulkMaxCalls = 100
)

func findBulkOp(name string) (bulkOp, bool) {
	for _, o := range bulkOps {
		if o.Name == name {
			return o, true
		}
	}
	return bulkOp{}, false
}

// bulkButton is a bulk action offered on the queue page's tab.
type bulkButton struct {
	Name, Label, URL string
	Danger           bool
}

// bulkButtons are the actions of state's tab when it has n jobs; with a
// lane (the pending tab filtered to one lane, docs/verbs.md §4.26.6) the
// drain of that lane only.
func bulkButtons(q queueRef, state string, n int64, lane string) []bulkButton {
	if n == 0 {
		return nil
	}
	var out []bulkButton
	for _, o := range bulkOps {
		if o.State == state {
			b := bulkButton{o.Name, o.Label, queueURL(q) + "/bulk/" + o.Name, o.Danger}
			if lane != "" && o.Name == "drain" {
				b.Label, b.URL = "Drain lane "+lane, b.URL+"?lane="+url.QueryEscape(lane)
			}
			out = append(out, b)
		}
	}
	return out
}

// bulkLane is the lane a drain is narrowed to ("" for every lane and for
// the other actions): the lane field of the confirmation's query or form.
func bulkLane(op bulkOp, v string) string {
	if op.Name != "drain" {
		return ""
	}
	return v
}

// confirmPage is the bulk action's confirmation.
type confirmPage struct {
	Ref      queueRef
	Op       bulkOp
	Count    int64
	Command  string
	Action   string
	Back     string
	QueueURL string
	Lane     string // the drain of one lane ("": every lane)
}

// bulkConfirm renders the confirmation of one bulk action (GET: it reads
// EMQ.COUNTS and changes nothing).
func (d *Dashboard) bulkConfirm(rc *reqCtx) (string, error) {
	ref, err := parseRef(rc.r)
	if err != nil {
		return "", err
	}
	op, ok := findBulkOp(rc.r.PathValue("op"))
	if !ok {
		return "", &errStatus{http.StatusNotFound, "no such bulk action"}
	}
	n, err := rc.c.counts(rc.r.Context(), ref)
	if err != nil {
		return "", err
	}
	back := stateURL(ref, op.State, 0)
	count := n.state(op.State)
	command := append(append([]string{op.Args[0], ref.Name}, op.Args[1:]...), "LIMIT", strconv.Itoa(bulkBatch))
	lane := bulkLane(op, rc.r.URL.Query().Get("lane"))
	if lane != "" {
		back = laneURL(ref, lane, 0)
		if count, err = rc.c.lanePending(rc.r.Context(), ref, lane); err != nil {
			return "", err
		}
		command = append(command, "LANE", lane)
		op.Label = "Drain lane " + lane
		op.Question = "Drain lane " + lane + ": remove every pending job of this lane for good? The other lanes, held (active) and scheduled jobs stay."
	}
	p := confirmPage{Ref: ref, Op: op, Count: count,
		Command:  strings.Join(command, " "),
		Action:   queueURL(ref) + "/bulk/" + op.Name,
		Back:     back,
		QueueURL: queueURL(ref),
		Lane:     lane,
	}
	rc.view.Title = op.Label
	rc.view.Refresh = 0 // a confirmation never reloads itself
	rc.view.Crumbs = []crumb{{"Queues", Prefix}, {"db " + strconv.Itoa(ref.DB) + " · " + ref.Name, back}, {op.Label, ""}}
	rc.view.Body = p
	return "confirm", nil
}

// bulkRun is the confirmed action: the verb with LIMIT bulkBatch until
// the set is empty, at most bulkMaxCalls times.
func (d *Dashboard) bulkRun(ctx context.Context, c *conn, r *http.Request) (flash, error) {
	ref, err := parseRef(r)
	if err != nil {
		return flash{}, err
	}
	op, ok := findBulkOp(r.PathValue("op"))
	if !ok {
		return flash{}, &errStatus{http.StatusNotFound, "no such bulk action"}
	}
	if r.PostFormValue("confirm") != op.Name {
		return flash{Error: true, Text: "Refused: " + op.Label + " was not confirmed (use its confirmation page). Nothing was changed."}, nil
	}
	in, err := c.inspector(ctx, ref.DB)
	if err != nil {
		return flash{}, err
	}
	lane := bulkLane(op, r.PostFormValue("lane"))
	b, err := runBulk(ctx, in, ref.Name, op.Args, lane)
	done, left := b.Done, b.Left
	if err != nil {
		if done > 0 && isReplyError(err) {
			return flash{Error: true, Text: err.Error() + " (" + strconv.FormatInt(done, 10) + " jobs were " + op.Done +
				" by the calls before; the refused call changed nothing)"}, nil
		}
		return flash{}, err
	}
	of := " of queue " + ref.Name
	if lane != "" {
		of = " of lane " + lane + of
	}
	text := plural(done, "job") + of + " " + op.Done + "."
	if left > 0 {
		text += " " + plural(left, "job") + " left: use " + op.Label + " again."
	}
	return flash{Text: text}, nil
}

// runBulk sends op's verb (args: the verb and its words after the queue
// name, as bulkOps writes them; lane: the drain's LANE) through the emq
// Inspector's bulk method, LIMIT bulkBatch, at most bulkMaxCalls calls.
func runBulk(ctx context.Context, in *emq.Inspector, q string, args []string, lane string) (emq.Bulk, error) {
	o := emq.BulkOptions{BatchSize: bulkBatch, MaxCalls: bulkMaxCalls}
	switch {
	case args[0] == "EMQ.REPROCESS.ALL":
		return in.ReprocessAll(ctx, q, &emq.ReprocessAllOptions{ResetBudget: len(args) > 1 && args[1] == "RESET", BulkOptions: o})
	case args[0] == "EMQ.REMOVE.ALL" && len(args) == 2:
		return in.RemoveAll(ctx, q, emq.JobState(args[1]), &emq.RemoveAllOptions{Lane: lane, BulkOptions: o})
	case args[0] == "EMQ.PROMOTE.ALL":
		return in.PromoteAll(ctx, q, &o)
	}
	return emq.Bulk{}, fmt.Errorf("dashboard: no bulk method for %v", args)
}

func plural(n int64, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.FormatInt(n, 10) + " " + word + "s"
}

// runNow is a scheduled job's "Run now" (EMQ.PROMOTE.JOB q id).
func (d *Dashboard) runNow(ctx context.Context, c *conn, r *http.Request) (flash, error) {
	ref, err := parseRef(r)
	if err != nil {
		return flash{}, err
	}
	id := r.PathValue("id")
	in, err := c.inspector(ctx, ref.DB)
	if err != nil {
		return flash{}, err
	}
	if err := in.RunNow(ctx, ref.Name, id); err != nil {
		return flash{}, err
	}
	return flash{Text: "Job " + id + " is pending now: the next claim can take it."}, nil
}
