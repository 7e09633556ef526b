package dashboard

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"

	"github.com/emqd/emqd/emq"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// The dashboard's only way to the data: a RESP connection per HTTP request,
// authenticated with the operator's password, on which it sends the same
// commands any client would (EMQ.COUNTS, EMQ.LIST, EMQ.JOB, EMQ.PAUSE, ...).
// The EMQ replies are read through the users' library, emq.Inspector over
// that connection (docs/architecture.md §6.1), so the dashboard shows what
// a Go user's program reads. RESP2 keeps the field order of EMQ.JOB's map
// (a flat array), which is the row's order (docs/verbs.md §1.3, §4.17):
// emq.JobInfo.FieldList.

// conn is one request's connection.
type conn struct {
	rdb *redis.Client
	c   *redis.Conn
	in  *emq.Inspector // over c: the database selected on c is the one read
	db  int            // the database selected on c (-1: none yet)
}

// open dials a fresh connection authenticated with password ("" when the
// server requires none) and checks it with PING, so a wrong password or a
// server that now requires one is reported here (errAuth).
func (d *Dashboard) open(ctx context.Context, password string) (*conn, error) {
	select {
	case d.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	rdb := redis.NewClient(&redis.Options{
		Addr: "emqd-internal",
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return d.o.Dial(ctx, network, addr)
		},
		Password:        password,
		Protocol:        2,
		ClientName:      "emqd-dashboard",
		DisableIdentity: true,
		PoolSize:        1,
		MaxRetries:      -1,
		// Off: these are RESP3 push notifications emqd never sends, and
		// with them on go-redis resolves Addr in NewClient (a DNS lookup
		// of up to 2 s per page on a host without a resolver).
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	c := rdb.Conn()
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		rdb.Close()
		<-d.sem
		if isAuthError(err) {
			return nil, errAuth
		}
		return nil, err
	}
	return &conn{rdb: rdb, c: c, in: emq.NewInspector(c, nil), db: 0}, nil
}

// inspector is the Inspector over the connection with database db
// selected (SELECT, once per change).
func (c *conn) inspector(ctx context.Context, db int) (*emq.Inspector, error) {
	if err := c.use(ctx, db); err != nil {
		return nil, err
	}
	return c.in, nil
}

// close releases the connection (the server sees the client go away).
func (d *Dashboard) closeConn(c *conn) {
	c.c.Close()
	c.rdb.Close()
	<-d.sem
}

// errAuth is a refused or missing password (NOAUTH, WRONGPASS).
var errAuth = errors.New("authentication required")

// isAuthError reports whether err is the server asking for a password.
func isAuthError(err error) bool {
	if errors.Is(err, errAuth) {
		return true
	}
	var re redis.Error
	if errors.As(err, &re) {
		msg := re.Error()
		return strings.HasPrefix(msg, "NOAUTH") || strings.HasPrefix(msg, "WRONGPASS")
	}
	return false
}

// use selects database db on the connection (SELECT, once per change).
func (c *conn) use(ctx context.Context, db int) error {
	if c.db == db {
		return nil
	}
	if err := c.c.Select(ctx, db).Err(); err != nil {
		return err
	}
	c.db = db
	return nil
}

// do runs one command and returns its reply (go-redis's RESP2 values:
// string, int64, []any, nil for a nil reply) or the server's error.
func (c *conn) do(ctx context.Context, db int, args ...any) (any, error) {
	if err := c.use(ctx, db); err != nil {
		return nil, err
	}
	v, err := c.c.Do(ctx, args...).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	return v, err
}

// counts are EMQ.COUNTS' reply (docs/verbs.md §4.16) and the paused flag.
type counts struct {
	Pending, Active, Scheduled, Dead, Completed, Failed int64
	// Retained is EMQ.COUNTS' retained: the completed jobs the queue keeps
	// (EMQ.RETAIN, docs/verbs.md §4.21), the completed tab's size.
	Retained int64
	// LatencyMs is EMQ.COUNTS' latency_ms: how long the job the next
	// claim takes has waited, the longest among the lanes' heads
	// (docs/verbs.md §4.16).
	LatencyMs int64
	// Waiting is EMQ.COUNTS' waiting: flow parents waiting on their
	// children (docs/verbs.md §4.25), the waiting tab's size.
	Waiting int64
	Paused  bool
	Err     string // a refusal (WRONGTYPE, ...) instead of counts
	err     error  // that refusal
}

// state returns the size of a state's set.
func (n counts) state(s string) int64 {
	switch s {
	case "pending":
		return n.Pending
	case "active":
		return n.Active
	case "scheduled":
		return n.Scheduled
	case "dead":
		return n.Dead
	case "completed":
		return n.Retained
	case "waiting":
		return n.Waiting
	}
	return 0
}

// queueRef names one queue of one database.
type queueRef struct {
	DB   int
	Name string
}

// metaKey is the hash that holds a queue's paused flag (docs/verbs.md
// §1.1: emq:{q}:meta, field paused; EMQ.PAUSE writes it, §4.14).
func metaKey(q string) string { return "emq:{" + q + "}:meta" }

// countsOf reads EMQ.COUNTS (emq.Inspector.CountsMany) and the paused
// flag of every queue of qs, two pipelines per database. A refusal of one
// queue is kept in its Err; an error of the connection is returned.
func (c *conn) countsOf(ctx context.Context, qs []queueRef) ([]counts, error) {
	out := make([]counts, len(qs))
	byDB := map[int][]int{}
	var dbs []int
	for i, q := range qs {
		if _, ok := byDB[q.DB]; !ok {
			dbs = append(dbs, q.DB)
		}
		byDB[q.DB] = append(byDB[q.DB], i)
	}
	for _, db := range dbs {
		if err := c.use(ctx, db); err != nil {
			return nil, err
		}
		idx := byDB[db]
		names := make([]string, len(idx))
		for k, i := range idx {
			names[k] = qs[i].Name
		}
		ns, errs, err := c.in.CountsMany(ctx, names)
		if err != nil {
			return nil, err
		}
		cmds, err := c.c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, name := range names {
				p.Do(ctx, "HEXISTS", metaKey(name), "paused")
			}
			return nil
		})
		if err != nil && !isReplyError(err) {
			return nil, err
		}
		for k, i := range idx {
			if err := errs[k]; err != nil {
				if isAuthError(err) {
					return nil, errAuth
				}
				out[i].Err, out[i].err = err.Error(), err
				continue
			}
			n := fromEMQ(ns[k])
			if v, err := cmds[k].(*redis.Cmd).Int64(); err == nil {
				n.Paused = v == 1
			} else {
				n.Err, n.err = err.Error(), err
			}
			out[i] = n
		}
	}
	return out, nil
}

// fromEMQ is the page's copy of emq.Counts.
func fromEMQ(n emq.Counts) counts {
	return counts{
		Pending: n.Pending, Active: n.Active, Scheduled: n.Scheduled, Dead: n.Dead,
		Completed: n.Completed, Failed: n.Failed, Retained: n.Retained,
		LatencyMs: n.Latency.Milliseconds(), Waiting: n.Waiting,
	}
}

// isReplyError reports whether err is an error reply (the connection is
// fine) rather than a broken connection.
func isReplyError(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}

// counts reads one queue's counts and paused flag.
func (c *conn) counts(ctx context.Context, q queueRef) (counts, error) {
	r, err := c.countsOf(ctx, []queueRef{q})
	if err != nil {
		return counts{}, err
	}
	if r[0].err != nil {
		return counts{}, r[0].err
	}
	return r[0], nil
}

// field is one field of a job row, in the row's order.
type field struct{ Name, Value string }

// job is one entry of EMQ.LIST or EMQ.JOB's reply.
type job struct {
	ID     string
	Ghost  bool // a member of the set without a row (docs/verbs.md §4.18)
	Fields []field
}

// get returns a field's value ("" when absent).
func (j *job) get(name string) string {
	for _, f := range j.Fields {
		if f.Name == name {
			return f.Value
		}
	}
	return ""
}

// fieldsOf is the page's copy of a reply's fields, in the reply's order.
func fieldsOf(fl []emq.Field) []field {
	fs := make([]field, len(fl))
	for i, f := range fl {
		fs[i] = field{f.Name, f.Value}
	}
	return fs
}

// list runs EMQ.LIST q state offset count (docs/verbs.md §4.18).
func (c *conn) list(ctx context.Context, q queueRef, state string, offset, count int, lane string) ([]job, error) {
	if err := c.use(ctx, q.DB); err != nil {
		return nil, err
	}
	js, err := c.in.List(ctx, q.Name, emq.JobState(state), &emq.ListOptions{Offset: offset, Count: count, Lane: lane})
	if err != nil {
		return nil, err
	}
	out := make([]job, len(js))
	for i, j := range js {
		out[i] = job{ID: j.ID, Ghost: j.Missing, Fields: fieldsOf(j.FieldList)}
	}
	return out, nil
}

// schedules runs EMQ.SCHEDULE.LIST q 0 100 (docs/verbs.md §4.22.6): the
// queue's schedules, next fire first, each as its fields (name first).
func (c *conn) schedules(ctx context.Context, q queueRef) ([]job, error) {
	if err := c.use(ctx, q.DB); err != nil {
		return nil, err
	}
	ss, err := c.in.ListSchedules(ctx, q.Name, &emq.ListOptions{Offset: 0, Count: 100})
	if err != nil {
		return nil, err
	}
	out := make([]job, len(ss))
	for i, s := range ss {
		out[i] = job{ID: s.Name, Ghost: s.Missing, Fields: fieldsOf(s.FieldList)}
	}
	return out, nil
}

// laneRow is one lane on the queue page (docs/verbs.md §4.26.5); URL is
// the pending tab of that lane only (docs/verbs.md §4.26.6).
type laneRow struct {
	Name, State                  string
	Pending, Active              int64
	Weight, MaxActive, RateCount int64
	RatePerMs                    int64
	URL                          string
}

// lanePendingKey is the pending set of one lane of queue q (docs/verbs.md
// §4.26: emq:{q}:lane:<name>:pending; the default lane's is
// emq:{q}:pending).
func lanePendingKey(q, lane string) string {
	if lane == "default" {
		return "emq:{" + q + "}:pending"
	}
	return "emq:{" + q + "}:lane:" + lane + ":pending"
}

// lanePending is the number of pending jobs of one lane (ZCARD of its
// pending set; 0 for a lane without jobs), the total of the pending tab
// filtered to that lane.
func (c *conn) lanePending(ctx context.Context, q queueRef, lane string) (int64, error) {
	n, err := c.do(ctx, q.DB, "ZCARD", lanePendingKey(q.Name, lane))
	if err != nil {
		return 0, err
	}
	total, _ := n.(int64)
	return total, nil
}

// lanesKnownKey is the registry of a queue's lanes (docs/verbs.md §4.26:
// emq:{q}:lanes:known); its ZCARD is the number of lanes (§4.26.5).
func lanesKnownKey(q string) string { return "emq:{" + q + "}:lanes:known" }

// lanes runs EMQ.LANES q offset count (docs/verbs.md §4.26.5): one page of
// the queue's lanes by name, and the number of lanes (ZCARD of
// lanes:known, read only when the page is not the empty first one); none
// and 0 for a queue without lanes, or when the server refuses the verb
// (one older than lanes).
func (c *conn) lanes(ctx context.Context, q queueRef, offset, count int) ([]laneRow, int64, error) {
	if err := c.use(ctx, q.DB); err != nil {
		return nil, 0, err
	}
	ls, err := c.in.LanesPage(ctx, q.Name, &emq.ListOptions{Offset: offset, Count: count})
	if err != nil {
		if isReplyError(err) {
			return nil, 0, nil
		}
		return nil, 0, err
	}
	rows := make([]laneRow, len(ls))
	for i, l := range ls {
		rows[i] = laneRow{
			Name: l.Name, State: string(l.State), Pending: l.Pending, Active: l.Active,
			Weight: l.Weight, MaxActive: l.MaxActive, RateCount: l.RateCount,
			RatePerMs: l.RatePer.Milliseconds(),
		}
	}
	if len(rows) == 0 && offset == 0 {
		return rows, 0, nil
	}
	n, err := c.do(ctx, q.DB, "ZCARD", lanesKnownKey(q.Name))
	if err != nil {
		return nil, 0, err
	}
	total, _ := n.(int64)
	return rows, total, nil
}

// Limit is the lane's MAX_ACTIVE as shown ("-": no cap).
func (l laneRow) Limit() string {
	if l.MaxActive == 0 {
		return "-"
	}
	return strconv.FormatInt(l.MaxActive, 10)
}

// Rate is the lane's RATE as shown ("3 / 1000 ms"; "-": none).
func (l laneRow) Rate() string {
	if l.RateCount == 0 {
		return "-"
	}
	return strconv.FormatInt(l.RateCount, 10) + " / " + strconv.FormatInt(l.RatePerMs, 10) + " ms"
}

// job runs EMQ.JOB q id (docs/verbs.md §4.17); nil when there is no row.
func (c *conn) job(ctx context.Context, q queueRef, id string) (*job, error) {
	if err := c.use(ctx, q.DB); err != nil {
		return nil, err
	}
	j, err := c.in.Job(ctx, q.Name, id)
	if errors.Is(err, emq.ErrNoJob) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &job{ID: id, Fields: fieldsOf(j.FieldList)}, nil
}

// flowChild is one child of a flow parent as EMQ.CHILDREN shows it
// (docs/verbs.md §4.25.5), with its own children when it is an inner
// parent.
type flowChild struct {
	Queue, ID, State string
	Result, Error    string
	HasResult        bool
	URL              string
	Kids             []flowChild
}

// flowTreeMax bounds the EMQ.CHILDREN calls one job page sends (a flow of
// thousands of children is shown to that many nodes).
const flowTreeMax = 200

// children runs EMQ.CHILDREN q id (docs/verbs.md §4.25.5) and, for every
// child that is itself a parent, again, to depth 8 and at most
// flowTreeMax calls; nil when id has no roster. *budget counts the calls
// left.
func (c *conn) children(ctx context.Context, q queueRef, id string, depth int, budget *int) ([]flowChild, bool, error) {
	if *budget <= 0 || depth > 8 {
		return nil, false, nil
	}
	*budget--
	if err := c.use(ctx, q.DB); err != nil {
		return nil, false, err
	}
	kids, err := c.in.Children(ctx, q.Name, id)
	if errors.Is(err, emq.ErrNoFlow) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	out := make([]flowChild, len(kids))
	for i, k := range kids {
		out[i] = flowChild{Queue: k.Queue, ID: k.ID, State: string(k.State), Result: k.Result, Error: k.Error, HasResult: k.HasResult}
	}
	for i := range out {
		cq := queueRef{DB: q.DB, Name: out[i].Queue}
		out[i].URL = jobURL(cq, out[i].ID)
		kids, _, err := c.children(ctx, cq, out[i].ID, depth+1, budget)
		if err != nil {
			return nil, false, err
		}
		out[i].Kids = kids
	}
	return out, true, nil
}

// info reads INFO's fields of the given sections.
func (c *conn) info(ctx context.Context, sections ...string) (map[string]string, error) {
	args := []any{"INFO"}
	for _, s := range sections {
		args = append(args, s)
	}
	v, err := c.do(ctx, c.db, args...)
	if err != nil {
		return nil, err
	}
	text, _ := v.(string)
	out := map[string]string{}
	for _, line := range strings.Split(text, "\r\n") {
		if k, val, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, "#") {
			out[k] = val
		}
	}
	return out, nil
}
