// Package dashboard is emqd's web dashboard: server-rendered pages
// (html/template, assets embedded with go:embed, no script needed, nothing
// loaded from outside) that show every queue of a server, browse a queue's
// jobs by state and act on them: pause and resume a queue, reprocess a dead
// job (with or without RESET), remove a job.
//
// The dashboard holds no data and no privilege of its own: it is a RESP
// client of the server (go-redis), and every page and every action is an
// ordinary command sent over a connection that Options.Dial opens,
// authenticated with the password the operator typed (docs/architecture.md
// §6.1). So a refused action writes nothing, exactly as the verb refuses it
// (docs/verbs.md §2.2), and AUTH decides who may look. It imports no emqd
// package but clock; the server mounts it on the metrics listener under
// Prefix (docs/operations.md §2).
package dashboard

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/emqd/emqd/clock"
	"github.com/emqd/emqd/emq"
)

// Prefix is the path the dashboard is served under.
const Prefix = "/dashboard/"

// Queue is one queue the server knows, with its transition totals since the
// server started (the INFO emq / emqd_jobs_total counts of that queue).
type Queue struct {
	DB   int
	Name string
	// Enqueued: rows EMQ.ENQUEUE created; Completed: EMQ.COMPLETE;
	// Failed: EMQ.FAIL, either verdict; Died: jobs dead-lettered (by
	// EMQ.FAIL or by the stalled-job sweep).
	Enqueued, Completed, Failed, Died int64
}

// Options configure a Dashboard.
type Options struct {
	// Dial opens a RESP connection to the server (go-redis's
	// Options.Dialer; network and addr are not used by the server's own
	// in-process dialer). Required.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// AuthRequired reports whether the server requires a password now
	// (requirepass); nil means never. The dashboard then asks for it at
	// a login form and sends it with AUTH on each of its connections.
	AuthRequired func() bool
	// Queues lists the queues to show on the server page, with their
	// totals; nil lists none (a queue's page is still reachable by URL).
	Queues func() []Queue
	// Clock is the server clock (times shown relative to it; throughput
	// sampled on it); nil is the wall clock.
	Clock clock.Clock
	// Logger receives the dashboard's few log lines; nil discards them.
	Logger *slog.Logger
	// AllowedHosts are host names, besides localhost and IP literals,
	// that a request's Host header may name (compared without the port and
	// case; "*.example.com" matches its subdomains). nil allows only
	// localhost and IP literals. See hostAllowed.
	AllowedHosts func() []string
}

// Dashboard is an http.Handler serving Prefix.
type Dashboard struct {
	o     Options
	clk   clock.Clock
	log   *slog.Logger
	mux   *http.ServeMux
	pages map[string]*template.Template
	ss    *sessions
	samp  *sampler
	lim   *loginLimiter
	// sem bounds the connections the dashboard holds at once.
	sem chan struct{}
	// hostLogged is when a refused Host was last logged (server clock ms).
	hostLogged atomic.Int64
}

// maxConns is the most connections the dashboard opens at once (HTTP
// requests beyond it wait for one).
const maxConns = 8

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// New builds a dashboard and starts its throughput sampler; Close stops it.
func New(o Options) *Dashboard {
	d := &Dashboard{
		o:   o,
		clk: o.Clock,
		log: o.Logger,
		ss:  &sessions{m: map[string]*session{}},
		sem: make(chan struct{}, maxConns),
	}
	if d.clk == nil {
		d.clk = clock.Wall{}
	}
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	if d.o.AuthRequired == nil {
		d.o.AuthRequired = func() bool { return false }
	}
	if d.o.Queues == nil {
		d.o.Queues = func() []Queue { return nil }
	}
	d.pages = parsePages()
	d.samp = newSampler(d.clk, d.o.Queues)
	d.lim = newLoginLimiter(d.clk, loginMaxAddrs)

	static, _ := fs.Sub(staticFS, "static")
	m := http.NewServeMux()
	m.Handle("GET "+Prefix+"static/", http.StripPrefix(Prefix+"static/", staticHandler(http.FileServerFS(static))))
	m.HandleFunc("GET "+Prefix+"{$}", d.page(d.overview))
	m.HandleFunc("GET "+Prefix+"open", d.page(d.openQueue))
	m.HandleFunc("GET "+Prefix+"q/{db}/{queue}", d.page(d.queue))
	m.HandleFunc("GET "+Prefix+"q/{db}/{queue}/job/{id}", d.page(d.job))
	m.HandleFunc("GET "+Prefix+"q/{db}/{queue}/find", d.page(d.findJob))
	m.HandleFunc("POST "+Prefix+"q/{db}/{queue}/pause", d.action(d.pause))
	m.HandleFunc("POST "+Prefix+"q/{db}/{queue}/resume", d.action(d.resume))
	m.HandleFunc("POST "+Prefix+"q/{db}/{queue}/job/{id}/reprocess", d.action(d.reprocess))
	m.HandleFunc("POST "+Prefix+"q/{db}/{queue}/job/{id}/remove", d.action(d.remove))
	m.HandleFunc("POST "+Prefix+"q/{db}/{queue}/job/{id}/run", d.action(d.runNow))
	m.HandleFunc("GET "+Prefix+"q/{db}/{queue}/bulk/{op}", d.page(d.bulkConfirm))
	m.HandleFunc("POST "+Prefix+"q/{db}/{queue}/bulk/{op}", d.action(d.bulkRun))
	m.HandleFunc("POST "+Prefix+"q/{db}/{queue}/sched/{name}/{op}", d.action(d.schedAction))
	m.HandleFunc("GET "+Prefix+"login", d.loginForm)
	m.HandleFunc("POST "+Prefix+"login", d.login)
	m.HandleFunc("POST "+Prefix+"logout", d.logout)
	d.mux = m
	return d
}

// Close stops the throughput sampler.
func (d *Dashboard) Close() { d.samp.close() }

// ServeHTTP serves the dashboard's pages, with headers that keep a page
// from loading anything from elsewhere or being framed.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; "+
		"form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	if !d.hostAllowed(r.Host) {
		// DNS rebinding: a page of another site whose name now resolves
		// to this address would otherwise be served the dashboard, its
		// session cookie and its actions as same-origin.
		if now := d.clk.NowMs(); now-d.hostLogged.Load() >= 60_000 {
			d.hostLogged.Store(now)
			d.log.Warn("Dashboard request refused: its Host is not an allowed name (logged at most once a minute)",
				"host", r.Host, "remote", r.RemoteAddr)
		}
		http.Error(w, "Host not allowed: open the dashboard by an IP address or localhost, or add this name to dashboard-allowed-hosts.", http.StatusMisdirectedRequest)
		return
	}
	d.mux.ServeHTTP(w, r)
}

// hostAllowed reports whether a request naming host (the Host header, with
// or without a port) may be served: an IP literal (v4 or bracketed v6),
// localhost or a name under .localhost (RFC 6761: they never leave the
// machine), or a name of AllowedHosts. A DNS-rebinding page always names
// its own domain, never an address, so the rule keeps it out while an
// operator who opens http://10.0.0.5:9121/ or http://localhost:9121/ gets
// in. docs/operations.md §2.2.
func (d *Dashboard) hostAllowed(host string) bool {
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	name = strings.TrimSuffix(strings.ToLower(name), ".")
	if name == "" {
		return false
	}
	if strings.HasPrefix(name, "[") && strings.HasSuffix(name, "]") {
		name = name[1 : len(name)-1]
	}
	if net.ParseIP(name) != nil {
		return true
	}
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return true
	}
	if d.o.AllowedHosts == nil {
		return false
	}
	for _, a := range d.o.AllowedHosts() {
		a = strings.TrimSuffix(strings.ToLower(a), ".")
		if a == name || (strings.HasPrefix(a, "*.") && strings.HasSuffix(name, a[1:])) {
			return true
		}
	}
	return false
}

func staticHandler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The folder itself (or any folder) is not a page: no listing
		// of the embedded files.
		if r.URL.Path == "" || strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "public, max-age=3600")
		h.ServeHTTP(w, r)
	})
}

// view is what every page's layout shows.
type view struct {
	Title        string
	Prefix       string
	CSRF         string
	AuthRequired bool
	LoggedIn     bool // show the logout button
	Flash        *flash
	Crumbs       []crumb
	Now          string
	// Refresh is the page's auto-refresh period in seconds (0: off);
	// static/app.js reloads the page after it unless a form on it is
	// being filled (docs/operations.md §2.3).
	Refresh int
	Body    any
}

type crumb struct{ Label, URL string }

// reqCtx is one page's or action's request: its session and its connection.
type reqCtx struct {
	w    http.ResponseWriter
	r    *http.Request
	s    *session
	c    *conn
	now  int64
	view view
}

// errStatus is an error with the HTTP status to answer.
type errStatus struct {
	code int
	msg  string
}

func (e *errStatus) Error() string { return e.msg }

// page wraps a GET handler: a session (made on the first visit), the login
// when the server requires a password, one connection for the request, and
// the rendering of the template the handler names.
func (d *Dashboard) page(h func(rc *reqCtx) (string, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		s := d.ss.get(r)
		if s == nil {
			if d.o.AuthRequired() {
				d.toLogin(w, r)
				return
			}
			s = d.ss.create(w, r)
		}
		ok, pw := d.creds(s)
		if !ok {
			d.toLogin(w, r)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), pageTimeout)
		defer cancel()
		r = r.WithContext(ctx)
		c, err := d.open(ctx, pw)
		if err != nil {
			if isAuthError(err) {
				d.ss.logout(s)
				d.toLogin(w, r)
				return
			}
			d.fail(w, r, s, err)
			return
		}
		defer d.closeConn(c)
		rc := &reqCtx{w: w, r: r, s: s, c: c, now: d.clk.NowMs()}
		rc.view = view{Prefix: Prefix, CSRF: s.csrf, AuthRequired: d.o.AuthRequired(), LoggedIn: d.o.AuthRequired(),
			Flash: d.ss.takeFlash(s), Now: fmtMs(rc.now), Refresh: refreshOf(r)}
		name, err := h(rc)
		if err != nil {
			if isAuthError(err) {
				d.ss.logout(s)
				d.toLogin(w, r)
				return
			}
			d.fail(w, r, s, err)
			return
		}
		if name == "" {
			return // the handler answered (a redirect)
		}
		d.render(w, http.StatusOK, name, rc.view)
	}
}

// toLogin redirects to the login form, coming back here after it.
func (d *Dashboard) toLogin(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, Prefix+"login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
}

// fail renders the error page: a refusal of the server is a 400 with its
// text, a failed connection a 503.
func (d *Dashboard) fail(w http.ResponseWriter, r *http.Request, s *session, err error) {
	code := http.StatusServiceUnavailable
	var es *errStatus
	switch {
	case errors.As(err, &es):
		code = es.code
	case isReplyError(err):
		code = http.StatusBadRequest
	default:
		d.log.Warn("Dashboard request failed", "path", r.URL.Path, "err", err)
	}
	v := view{Title: "Error", Prefix: Prefix, AuthRequired: d.o.AuthRequired(), Body: err.Error()}
	if s != nil {
		v.CSRF = s.csrf
	}
	d.render(w, code, "error", v)
}

func (d *Dashboard) render(w http.ResponseWriter, code int, name string, v view) {
	var b strings.Builder
	if err := d.pages[name].ExecuteTemplate(&b, "layout", v); err != nil {
		d.log.Error("Dashboard template failed", "page", name, "err", err)
		http.Error(w, "template error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	w.Write([]byte(b.String()))
}

// parseRef reads the {db} and {queue} of a path.
func parseRef(r *http.Request) (queueRef, error) {
	db, err := strconv.Atoi(r.PathValue("db"))
	if err != nil || db < 0 {
		return queueRef{}, &errStatus{http.StatusNotFound, "no such database: " + r.PathValue("db")}
	}
	return queueRef{DB: db, Name: r.PathValue("queue")}, nil
}

// URLs of the pages (every dynamic part path-escaped).
func queueURL(q queueRef) string {
	return Prefix + "q/" + strconv.Itoa(q.DB) + "/" + url.PathEscape(q.Name)
}

func stateURL(q queueRef, state string, offset int) string {
	u := queueURL(q) + "?state=" + state
	if offset > 0 {
		u += "&offset=" + strconv.Itoa(offset)
	}
	return u
}

// laneURL is the pending tab of one lane of q (docs/verbs.md §4.26.6).
func laneURL(q queueRef, lane string, offset int) string {
	return stateURL(q, "pending", offset) + "&lane=" + url.QueryEscape(lane)
}

func jobURL(q queueRef, id string) string { return queueURL(q) + "/job/" + url.PathEscape(id) }

// overview is the server page: every queue with its counts, paused flag
// and throughput.
type overview struct {
	Info     map[string]string
	Filter   string
	Queues   []queueRow
	Total    int
	From, To int
	PrevURL  string
	NextURL  string
}

type queueRow struct {
	Ref    queueRef
	URL    string
	Counts counts
	Rates  rateView
}

const overviewPage = 100

func (d *Dashboard) overview(rc *reqCtx) (string, error) {
	ctx := rc.r.Context()
	info, err := rc.c.info(ctx, "server", "clients", "memory", "persistence", "emq")
	if err != nil {
		return "", err
	}
	filter := strings.TrimSpace(rc.r.URL.Query().Get("filter"))
	all := d.o.Queues()
	sort.Slice(all, func(i, j int) bool {
		if all[i].DB != all[j].DB {
			return all[i].DB < all[j].DB
		}
		return all[i].Name < all[j].Name
	})
	var qs []Queue
	for _, q := range all {
		if filter == "" || strings.Contains(q.Name, filter) {
			qs = append(qs, q)
		}
	}
	offset, _ := strconv.Atoi(rc.r.URL.Query().Get("offset"))
	offset = max(0, min(offset, len(qs)))
	end := min(len(qs), offset+overviewPage)
	page := qs[offset:end]
	refs := make([]queueRef, len(page))
	for i, q := range page {
		refs[i] = queueRef{q.DB, q.Name}
	}
	ns, err := rc.c.countsOf(ctx, refs)
	if err != nil {
		return "", err
	}
	d.samp.due(rc.now)
	ov := overview{Info: info, Filter: filter, Total: len(qs), From: offset + 1, To: end}
	for i, q := range page {
		ov.Queues = append(ov.Queues, queueRow{
			Ref: refs[i], URL: queueURL(refs[i]), Counts: ns[i],
			Rates: makeRateView(d.samp.rates(refs[i], countersOf(q), rc.now)),
		})
	}
	link := func(off int) string {
		u := Prefix + "?offset=" + strconv.Itoa(off)
		if filter != "" {
			u += "&filter=" + url.QueryEscape(filter)
		}
		return u
	}
	if offset > 0 {
		ov.PrevURL = link(max(0, offset-overviewPage))
	}
	if end < len(qs) {
		ov.NextURL = link(end)
	}
	rc.view.Title = "Queues"
	rc.view.Body = ov
	return "overview", nil
}

// defaultRefresh is the auto-refresh period of the server, queue and job
// pages, in seconds; maxRefresh the longest a ?refresh= may ask for.
const (
	defaultRefresh = 10
	maxRefresh     = 3600
)

// refreshOf reads a page's ?refresh=<seconds> (0 turns auto-refresh off);
// a missing or bad value gives defaultRefresh, a longer one maxRefresh.
func refreshOf(r *http.Request) int {
	n, err := strconv.Atoi(r.URL.Query().Get("refresh"))
	if err != nil || n < 0 {
		return defaultRefresh
	}
	return min(n, maxRefresh)
}

// findJob is the queue page's "find a job by id" form (GET ?id=): a
// redirect to the job's page when EMQ.JOB has a row for it, else back to
// the queue page with a flash that says so (nothing is written either way).
func (d *Dashboard) findJob(rc *reqCtx) (string, error) {
	ref, err := parseRef(rc.r)
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(rc.r.URL.Query().Get("id"))
	if id == "" {
		d.ss.setFlash(rc.s, flash{Error: true, Text: "Type a job id to find."})
		http.Redirect(rc.w, rc.r, queueURL(ref), http.StatusSeeOther)
		return "", nil
	}
	j, err := rc.c.job(rc.r.Context(), ref, id)
	if err != nil {
		return "", err
	}
	if j == nil {
		d.ss.setFlash(rc.s, flash{Error: true, Text: "Queue " + ref.Name + " (db " + strconv.Itoa(ref.DB) +
			") has no job " + clip(id, 200) + ": it was completed without retention or removed, or never existed."})
		http.Redirect(rc.w, rc.r, queueURL(ref), http.StatusSeeOther)
		return "", nil
	}
	http.Redirect(rc.w, rc.r, jobURL(ref, id), http.StatusSeeOther)
	return "", nil
}

// openQueue is the "open a queue" form: a redirect to the queue's page.
func (d *Dashboard) openQueue(rc *reqCtx) (string, error) {
	q := rc.r.URL.Query()
	db, err := strconv.Atoi(strings.TrimSpace(q.Get("db")))
	if err != nil || db < 0 {
		db = 0
	}
	name := strings.TrimSpace(q.Get("queue"))
	if name == "" {
		http.Redirect(rc.w, rc.r, Prefix, http.StatusSeeOther)
		return "", nil
	}
	http.Redirect(rc.w, rc.r, queueURL(queueRef{db, name}), http.StatusSeeOther)
	return "", nil
}

// states are the tabs of a queue page, in EMQ.COUNTS' order; completed
// lists the retained completed jobs (EMQ.LIST q completed, docs/verbs.md
// §4.21), empty unless the queue retains them; waiting lists the flow
// parents waiting on their children (EMQ.LIST q waiting, docs/verbs.md
// §4.25).
var states = []string{"pending", "active", "scheduled", "dead", "completed", "waiting"}

// queuePage is a queue's page: counts, throughput, and one state's jobs.
type queuePage struct {
	Ref        queueRef
	URL        string
	Counts     counts
	Rates      rateView
	State      string
	Tabs       []tab
	Jobs       []jobRow
	From, To   int64
	StateTotal int64
	PageSize   int
	PrevURL    string
	NextURL    string
	Back       string
	Schedules  []schedRow
	Lanes      []laneRow // one page of EMQ.LANES (docs/verbs.md §4.26.5)
	// LaneTotal is the queue's number of lanes (0: no lanes section);
	// LaneFrom..LaneTo the ranks shown (1-based), LanePage of LanePages;
	// the Lane*URL the pager's links ("" on the first / last page).
	LaneTotal, LaneFrom, LaneTo int64
	LanePage, LanePages         int64
	LaneFirstURL, LanePrevURL   string
	LaneNextURL, LaneLastURL    string
	// Bulk are the bulk actions of the shown tab (docs/operations.md §2.4).
	Bulk []bulkButton
	// Lane filters the pending tab to one lane's jobs (EMQ.LIST q pending
	// ... LANE name, docs/verbs.md §4.26.6; "": every lane's); AllLanesURL
	// is the unfiltered tab. ShowLane: the jobs table has a lane column
	// (the pending tab of a queue with lanes).
	Lane        string
	AllLanesURL string
	ShowLane    bool
}

// schedRow is one schedule on the queue page (docs/verbs.md §4.22).
type schedRow struct {
	Name, Every, State        string
	Next, NextRel             string
	LastSlot, LastRel, LastID string
	Fired, Skipped, Missed    string
	URL                       string // the forms post to URL + "/pause", "/resume", "/delete"
}

func makeSchedRow(q queueRef, s *job, now int64) schedRow {
	r := schedRow{Name: s.ID, URL: queueURL(q) + "/sched/" + url.PathEscape(s.ID)}
	if s.Ghost {
		r.State = "no hash"
		return r
	}
	if e := s.get("every_ms"); e != "" {
		r.Every = "every " + e + " ms"
	} else {
		r.Every = "cron " + s.get("cron")
		if tz := s.get("tz"); tz != "" {
			r.Every += " (" + tz + ")"
		}
	}
	r.State = s.get("state")
	if v := s.get("next_ms"); v != "" {
		r.Next, r.NextRel = fmtField(v, now)
	}
	if v := s.get("last_slot_ms"); v != "" {
		r.LastSlot, r.LastRel = fmtField(v, now)
	}
	r.LastID = s.get("last_id")
	r.Fired, r.Skipped, r.Missed = s.get("fired"), s.get("skipped"), s.get("missed")
	return r
}

type tab struct {
	Name   string
	Count  int64
	URL    string
	Active bool
}

// jobRow is one job of the browser's table.
type jobRow struct {
	ID          string
	URL         string
	Ghost       bool
	Attempts    string
	Failures    string
	Stalled     string
	LastError   string
	When        string // run_at_ms or lease_deadline_ms, formatted
	WhenRel     string
	Preview     string
	PayloadSize int
	// Enqueued, Claimed and Finished are the row's enqueued_at,
	// claimed_at and finished_at (server ms, docs/verbs.md §1.2) relative
	// to now, with the UTC time in the *Abs fields; "" when absent.
	Enqueued, EnqueuedAbs string
	Claimed, ClaimedAbs   string
	Finished, FinishedAbs string
	// Run is the last run's duration: finished_at - claimed_at, or for
	// an active job now - claimed_at ("" without claimed_at).
	Run string
	// Result is a one-line preview of the row's result (completed jobs
	// retained with COMPLETE ... RESULT); ResultSize its length in bytes.
	Result       string
	ResultSize   int
	CanReprocess bool
	CanRemove    bool
	CanRunNow    bool   // a scheduled job: "Run now" (EMQ.PROMOTE.JOB)
	Lane         string // the row's lane field ("default" without one, docs/verbs.md §4.26)
	ActionURL    string // jobURL: the forms post to ActionURL + "/reprocess", "/remove" or "/run"
}

// pageSizes are the page sizes offered; the default is the first.
const defaultPageSize = 50

func (d *Dashboard) queue(rc *reqCtx) (string, error) {
	ref, err := parseRef(rc.r)
	if err != nil {
		return "", err
	}
	ctx := rc.r.Context()
	n, err := rc.c.counts(ctx, ref)
	if err != nil {
		return "", err
	}
	q := rc.r.URL.Query()
	state := strings.ToLower(q.Get("state"))
	if state == "" {
		state = "pending"
	}
	valid := false
	for _, s := range states {
		valid = valid || s == state
	}
	if !valid {
		return "", &errStatus{http.StatusNotFound, "no such state: " + state}
	}
	size := defaultPageSize
	if v, err := strconv.Atoi(q.Get("n")); err == nil && v > 0 && v <= 500 {
		size = v
	}
	offset, _ := strconv.Atoi(q.Get("offset"))
	offset = max(offset, 0)
	// lane filters the pending tab (docs/verbs.md §4.26.6); a bad name is
	// the server's refusal, shown with its text.
	lane := ""
	if state == "pending" {
		lane = q.Get("lane")
	}
	jobs, err := rc.c.list(ctx, ref, state, offset, size, lane)
	if err != nil {
		return "", err
	}
	d.samp.due(rc.now)
	var cur counters
	for _, qq := range d.o.Queues() {
		if qq.DB == ref.DB && qq.Name == ref.Name {
			cur = countersOf(qq)
		}
	}
	p := queuePage{
		Ref: ref, URL: queueURL(ref), Counts: n, State: state,
		Rates:    makeRateView(d.samp.rates(ref, cur, rc.now)),
		PageSize: size,
		Back:     rc.r.URL.RequestURI(),
	}
	for _, s := range states {
		p.Tabs = append(p.Tabs, tab{Name: s, Count: n.state(s), URL: stateURL(ref, s, 0), Active: s == state})
	}
	for _, j := range jobs {
		p.Jobs = append(p.Jobs, makeJobRow(ref, state, &j, rc.now))
	}
	scheds, err := rc.c.schedules(ctx, ref)
	if err != nil {
		return "", err
	}
	laneOff, _ := strconv.Atoi(q.Get("lanes"))
	laneOff = max(laneOff, 0)
	if p.Lanes, p.LaneTotal, err = rc.c.lanes(ctx, ref, laneOff, LanePageSize); err != nil {
		return "", err
	}
	p.pageLanes(rc.r.URL, laneOff)
	for i := range p.Lanes {
		p.Lanes[i].URL = laneURL(ref, p.Lanes[i].Name, 0)
	}
	for _, sc := range scheds {
		p.Schedules = append(p.Schedules, makeSchedRow(ref, &sc, rc.now))
	}
	total := n.state(state)
	pageURL := func(off int) string { return stateURL(ref, state, off) }
	if lane != "" {
		if total, err = rc.c.lanePending(ctx, ref, lane); err != nil {
			return "", err
		}
		pageURL = func(off int) string { return laneURL(ref, lane, off) }
		p.Lane, p.AllLanesURL = lane, stateURL(ref, "pending", 0)
	}
	p.ShowLane = state == "pending" && (p.LaneTotal > 0 || lane != "")
	p.From, p.To, p.StateTotal = int64(offset+1), int64(offset+len(jobs)), total
	p.Bulk = bulkButtons(ref, state, total, lane)
	sized := func(u string) string {
		if size != defaultPageSize {
			u += "&n=" + strconv.Itoa(size)
		}
		return u
	}
	if offset > 0 {
		p.PrevURL = sized(pageURL(max(0, offset-size)))
	}
	if len(jobs) == size && int64(offset+size) < total {
		p.NextURL = sized(pageURL(offset + size))
	}
	rc.view.Title = ref.Name
	rc.view.Crumbs = []crumb{{"Queues", Prefix}, {"db " + strconv.Itoa(ref.DB) + " · " + ref.Name, ""}}
	rc.view.Body = p
	return "queue", nil
}

// LanePageSize is how many lanes the queue page shows at once (EMQ.LANES
// q offset 50, docs/operations.md §2): a queue with 10,000 tenants gets a
// page of 50 rows and a pager, not a table of 10,000.
const LanePageSize = 50

// pageLanes fills the lanes pager for the page at offset off of u (the
// request's URL): the links keep every other query parameter (the job
// tab, its offset and size) and set lanes=<offset>, anchored at #lanes.
func (p *queuePage) pageLanes(u *url.URL, off int) {
	if p.LaneTotal == 0 {
		return
	}
	link := func(o int64) string {
		q := u.Query()
		if o > 0 {
			q.Set("lanes", strconv.FormatInt(o, 10))
		} else {
			q.Del("lanes")
		}
		s := p.URL
		if e := q.Encode(); e != "" {
			s += "?" + e
		}
		return s + "#lanes"
	}
	size, o := int64(LanePageSize), int64(off)
	p.LaneFrom, p.LaneTo = o+1, o+int64(len(p.Lanes))
	p.LanePages = (p.LaneTotal + size - 1) / size
	p.LanePage = o/size + 1
	if o > 0 {
		p.LaneFirstURL = link(0)
		p.LanePrevURL = link(max(0, min(o, p.LaneTotal)-size))
	}
	if o+size < p.LaneTotal {
		p.LaneNextURL = link(o + size)
		p.LaneLastURL = link((p.LanePages - 1) * size)
	}
}

func makeJobRow(q queueRef, state string, j *job, now int64) jobRow {
	row := jobRow{ID: j.ID, URL: jobURL(q, j.ID), ActionURL: jobURL(q, j.ID), Ghost: j.Ghost}
	if j.Ghost {
		// A member without a row: EMQ.REMOVE clears it from every set.
		row.CanRemove = state != "active"
		return row
	}
	row.Attempts = j.get("attempts")
	row.Failures = j.get("failures")
	row.Stalled = j.get("stalled")
	row.LastError = clip(j.get("last_error"), 120)
	payload := j.get("payload")
	row.PayloadSize = len(payload)
	row.Preview = preview(payload, 100)
	row.EnqueuedAbs, row.Enqueued = fmtField(j.get("enqueued_at"), now)
	row.ClaimedAbs, row.Claimed = fmtField(j.get("claimed_at"), now)
	row.FinishedAbs, row.Finished = fmtField(j.get("finished_at"), now)
	row.Run = runDuration(j.get("claimed_at"), j.get("finished_at"), state == "active", now)
	if r := j.get("result"); r != "" {
		row.Result, row.ResultSize = preview(r, 80), len(r)
	}
	switch state {
	case "active":
		row.When, row.WhenRel = fmtField(j.get("lease_deadline_ms"), now)
	case "scheduled":
		row.When, row.WhenRel = fmtField(j.get("run_at_ms"), now)
	}
	row.CanReprocess = state == "dead"
	row.CanRemove = state != "active"
	row.CanRunNow = state == "scheduled"
	row.Lane = j.get("lane")
	if row.Lane == "" {
		row.Lane = "default"
	}
	return row
}

// jobPage is one job's page.
type jobPage struct {
	Ref          queueRef
	QueueURL     string
	ID           string
	Found        bool
	State        string
	Fields       []fieldView
	LastError    string
	Payload      payloadView
	HasResult    bool
	Result       payloadView
	CanReprocess bool
	CanRemove    bool
	CanRunNow    bool
	ActionURL    string
	Back         string
	// A flow (docs/verbs.md §4.25): the parent's link for a child, the
	// tree of a parent's children (each with its state, result or error).
	ParentURL, ParentRef string
	IsParent             bool
	Children             []flowChild
	ChildrenLeft         string
	ChildrenTotal        string
}

type fieldView struct {
	Name, Value, Note string
}

func (d *Dashboard) job(rc *reqCtx) (string, error) {
	ref, err := parseRef(rc.r)
	if err != nil {
		return "", err
	}
	id := rc.r.PathValue("id")
	j, err := rc.c.job(rc.r.Context(), ref, id)
	if err != nil {
		return "", err
	}
	p := jobPage{Ref: ref, QueueURL: queueURL(ref), ID: id, Found: j != nil, ActionURL: jobURL(ref, id),
		Back: stateURL(ref, "dead", 0)}
	if j != nil {
		p.State = j.get("state")
		p.Back = stateURL(ref, p.State, 0)
		for _, f := range j.Fields {
			switch f.Name {
			case "payload":
				p.Payload = makePayloadView(f.Value)
				p.Fields = append(p.Fields, fieldView{Name: f.Name, Value: strconv.Itoa(len(f.Value)) + " bytes", Note: "shown below"})
			case "last_error":
				p.LastError = f.Value
				p.Fields = append(p.Fields, fieldView{Name: f.Name, Value: clip(f.Value, 200)})
			case "result":
				p.HasResult, p.Result = true, makePayloadView(f.Value)
				p.Fields = append(p.Fields, fieldView{Name: f.Name, Value: strconv.Itoa(len(f.Value)) + " bytes", Note: "shown below"})
			case "lease_deadline_ms", "run_at_ms", "enqueued_at", "claimed_at", "finished_at":
				abs, rel := fmtField(f.Value, rc.now)
				note := abs
				if rel != "" {
					note += " (" + rel + ")"
				}
				p.Fields = append(p.Fields, fieldView{Name: f.Name, Value: f.Value, Note: note})
			default:
				p.Fields = append(p.Fields, fieldView{Name: f.Name, Value: f.Value})
			}
		}
		if run := runDuration(j.get("claimed_at"), j.get("finished_at"), p.State == "active", rc.now); run != "" {
			note := "finished_at - claimed_at"
			if p.State == "active" {
				note = "running: now - claimed_at"
			}
			p.Fields = append(p.Fields, fieldView{Name: "run duration", Value: run, Note: note})
		}
		p.CanReprocess = p.State == "dead"
		p.CanRemove = p.State != "active"
		p.CanRunNow = p.State == "scheduled"
		if ref2 := j.get("parent"); ref2 != "" {
			if i := strings.LastIndexByte(ref2, ':'); i > 0 {
				p.ParentRef = ref2
				p.ParentURL = jobURL(queueRef{DB: ref.DB, Name: ref2[:i]}, ref2[i+1:])
			}
		}
		if j.get("children") != "" {
			budget := flowTreeMax
			kids, ok, err := rc.c.children(rc.r.Context(), ref, id, 1, &budget)
			if err != nil {
				return "", err
			}
			p.IsParent, p.Children = ok, kids
			p.ChildrenLeft, p.ChildrenTotal = j.get("children_left"), j.get("children")
		}
	}
	if t, ok := mintedAt(id); ok {
		p.Fields = append([]fieldView{{Name: "id", Value: id, Note: "minted " + fmtMs(t)}}, p.Fields...)
	}
	rc.view.Title = id
	rc.view.Crumbs = []crumb{{"Queues", Prefix}, {"db " + strconv.Itoa(ref.DB) + " · " + ref.Name, p.QueueURL}, {id, ""}}
	rc.view.Body = p
	return "job", nil
}

// action wraps a POST handler: the session must exist, carry the CSRF
// token and be logged in when a password is required; otherwise 403 and
// nothing is sent to the server. The handler runs one verb; its outcome
// (or refusal) becomes the flash of the page it redirects to.
func (d *Dashboard) action(h func(ctx context.Context, c *conn, r *http.Request) (flash, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		s := d.ss.get(r)
		if !csrfOK(r, s) {
			d.refuse(w, r, s, "Refused: this form's CSRF token is missing or wrong (reload the page and try again). Nothing was changed.")
			return
		}
		ok, pw := d.creds(s)
		if !ok {
			d.refuse(w, r, s, "Refused: log in first. Nothing was changed.")
			return
		}
		back := safeBack(r.PostFormValue("back"))
		ctx, cancel := context.WithTimeout(r.Context(), pageTimeout)
		defer cancel()
		r = r.WithContext(ctx)
		c, err := d.open(ctx, pw)
		if err != nil {
			if isAuthError(err) {
				d.ss.logout(s)
				d.toLogin(w, r)
				return
			}
			d.fail(w, r, s, err)
			return
		}
		f, err := h(r.Context(), c, r)
		d.closeConn(c)
		if err != nil {
			if isAuthError(err) {
				d.ss.logout(s)
				d.toLogin(w, r)
				return
			}
			var es *errStatus
			if !isReplyError(err) && !errors.As(err, &es) {
				d.fail(w, r, s, err)
				return
			}
			f = flash{Error: true, Text: err.Error()}
		}
		d.ss.setFlash(s, f)
		http.Redirect(w, r, back, http.StatusSeeOther)
	}
}

// refuse answers 403 with a page that says why.
func (d *Dashboard) refuse(w http.ResponseWriter, r *http.Request, s *session, msg string) {
	d.log.Warn("Dashboard refused a request", "path", r.URL.Path, "why", msg)
	v := view{Title: "Refused", Prefix: Prefix, AuthRequired: d.o.AuthRequired(), Body: msg}
	if s != nil {
		v.CSRF = s.csrf
	}
	d.render(w, http.StatusForbidden, "error", v)
}

// safeBack keeps a redirect target inside the dashboard.
func safeBack(u string) string {
	if !strings.HasPrefix(u, Prefix) || strings.HasPrefix(u, "//") || strings.ContainsAny(u, "\\\r\n") {
		return Prefix
	}
	return u
}

func (d *Dashboard) pause(ctx context.Context, c *conn, r *http.Request) (flash, error) {
	ref, err := parseRef(r)
	if err != nil {
		return flash{}, err
	}
	in, err := c.inspector(ctx, ref.DB)
	if err != nil {
		return flash{}, err
	}
	if err := in.Pause(ctx, ref.Name); err != nil {
		return flash{}, err
	}
	return flash{Text: "Queue " + ref.Name + " paused: claims hand out nothing until it is resumed."}, nil
}

func (d *Dashboard) resume(ctx context.Context, c *conn, r *http.Request) (flash, error) {
	ref, err := parseRef(r)
	if err != nil {
		return flash{}, err
	}
	in, err := c.inspector(ctx, ref.DB)
	if err != nil {
		return flash{}, err
	}
	if err := in.Resume(ctx, ref.Name); err != nil {
		return flash{}, err
	}
	return flash{Text: "Queue " + ref.Name + " resumed."}, nil
}

// schedAction pauses, resumes or deletes one schedule of the queue
// (EMQ.SCHEDULE.PAUSE, .RESUME, .DEL).
func (d *Dashboard) schedAction(ctx context.Context, c *conn, r *http.Request) (flash, error) {
	ref, err := parseRef(r)
	if err != nil {
		return flash{}, err
	}
	name := r.PathValue("name")
	op := r.PathValue("op")
	if op != "pause" && op != "resume" && op != "delete" {
		return flash{}, &errStatus{http.StatusNotFound, "no such schedule action"}
	}
	in, err := c.inspector(ctx, ref.DB)
	if err != nil {
		return flash{}, err
	}
	var done string
	switch op {
	case "pause":
		err, done = in.PauseSchedule(ctx, ref.Name, name), "paused: it fires nothing until it is resumed"
	case "resume":
		err, done = in.ResumeSchedule(ctx, ref.Name, name), "resumed at its next slot from now"
	case "delete":
		var existed bool
		existed, err = in.DeleteSchedule(ctx, ref.Name, name)
		if err == nil && !existed {
			return flash{Error: true, Text: "Schedule " + name + " was not there: nothing deleted."}, nil
		}
		done = "deleted (the jobs it enqueued stay)"
	}
	if err != nil {
		return flash{}, err
	}
	return flash{Text: "Schedule " + name + " " + done + "."}, nil
}

func (d *Dashboard) reprocess(ctx context.Context, c *conn, r *http.Request) (flash, error) {
	ref, err := parseRef(r)
	if err != nil {
		return flash{}, err
	}
	id := r.PathValue("id")
	reset := r.PostFormValue("reset") == "1"
	in, err := c.inspector(ctx, ref.DB)
	if err != nil {
		return flash{}, err
	}
	if err := in.Reprocess(ctx, ref.Name, id, &emq.ReprocessOptions{ResetBudget: reset}); err != nil {
		return flash{}, err
	}
	if reset {
		return flash{Text: "Job " + id + " is pending again, with a fresh retry and stall budget (RESET)."}, nil
	}
	return flash{Text: "Job " + id + " is pending again."}, nil
}

func (d *Dashboard) remove(ctx context.Context, c *conn, r *http.Request) (flash, error) {
	ref, err := parseRef(r)
	if err != nil {
		return flash{}, err
	}
	id := r.PathValue("id")
	in, err := c.inspector(ctx, ref.DB)
	if err != nil {
		return flash{}, err
	}
	removed, err := in.Remove(ctx, ref.Name, id)
	if err != nil {
		return flash{}, err
	}
	if !removed {
		return flash{Error: true, Text: "Job " + id + " was not there: nothing removed."}, nil
	}
	return flash{Text: "Job " + id + " removed."}, nil
}

// login is the password form (only when the server requires one).
type loginPage struct {
	Next  string
	Error string
}

func (d *Dashboard) loginForm(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	next := safeBack(r.URL.Query().Get("next"))
	if !d.o.AuthRequired() {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	s := d.ss.get(r)
	if s == nil {
		s = d.ss.create(w, r)
	}
	d.render(w, http.StatusOK, "login", view{Title: "Log in", Prefix: Prefix, CSRF: s.csrf, AuthRequired: true,
		Body: loginPage{Next: next}})
}

// login checks the password with the server itself (AUTH on a fresh
// connection) and, when it is accepted, replaces the session with a new
// logged-in one (a new id, so a session id seen before login is worthless).
// Wrong passwords go through the sign-in limiter (limiter.go,
// docs/operations.md §2.2): an address refused by it gets 429 with
// Retry-After and the server is not contacted.
func (d *Dashboard) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	s := d.ss.get(r)
	if !csrfOK(r, s) {
		d.refuse(w, r, s, "Refused: this form's CSRF token is missing or wrong (reload the page and try again).")
		return
	}
	next := safeBack(r.PostFormValue("next"))
	pw := r.PostFormValue("password")
	addr := clientAddr(r.RemoteAddr)
	if ok, waitMs := d.lim.admit(addr); !ok {
		secs := (waitMs + 999) / 1000
		if ok, n := d.lim.logAllowed(logRefused); ok {
			d.log.Warn("Dashboard login refused: too many wrong passwords", "remote", r.RemoteAddr,
				"retry_after_s", secs, "suppressed", n)
		}
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
		d.render(w, http.StatusTooManyRequests, "login", view{Title: "Log in", Prefix: Prefix, CSRF: s.csrf,
			AuthRequired: true, Body: loginPage{Next: next, Error: fmt.Sprintf(
				"Too many wrong passwords from your address: try again in %d s. Nothing was sent to the server.", secs)}})
		return
	}
	c, err := d.open(r.Context(), pw)
	wrong := err != nil && isAuthError(err)
	fails := d.lim.done(addr, wrong, err == nil)
	if err != nil {
		msg := "The server refused: " + err.Error()
		if wrong {
			msg = "Wrong password."
			if ok, n := d.lim.logAllowed(logWrong); ok {
				d.log.Warn("Dashboard login: wrong password", "remote", r.RemoteAddr, "failures", fails,
					"suppressed", n)
			}
		}
		d.render(w, http.StatusUnauthorized, "login", view{Title: "Log in", Prefix: Prefix, CSRF: s.csrf,
			AuthRequired: true, Body: loginPage{Next: next, Error: msg}})
		return
	}
	d.closeConn(c)
	d.ss.drop(s)
	ns := d.ss.create(w, r)
	d.ss.mu.Lock()
	ns.authed, ns.password = true, pw
	d.ss.mu.Unlock()
	d.log.Info("Dashboard login", "remote", r.RemoteAddr)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (d *Dashboard) logout(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	s := d.ss.get(r)
	if !csrfOK(r, s) {
		d.refuse(w, r, s, "Refused: this form's CSRF token is missing or wrong.")
		return
	}
	d.ss.drop(s)
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: Prefix, MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, Prefix+"login", http.StatusSeeOther)
}

// pageTimeout bounds one request's work on the server.
const pageTimeout = 10 * time.Second

// creds says whether session s may use the server now, and with which
// password: without requirepass every session may (and sends none); with
// it, only a session logged in with a password.
func (d *Dashboard) creds(s *session) (bool, string) {
	if !d.o.AuthRequired() {
		return true, ""
	}
	authed, pw := d.ss.creds(s)
	return authed && pw != "", pw
}
