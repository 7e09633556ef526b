package main

// The lean client (--client raw, the default): RESP2 over one net.Conn per
// worker, commands encoded straight into a reused buffer, replies parsed
// into a reused flat table. go-redis builds an []any per command, boxes
// every argument and allocates every reply; on a 2-core machine that the
// driver shares with the server it spent most of the CPU, so both servers
// looked alike. Both sides use this same client, so the comparison stays
// fair: what differs is what the server does per job.

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emqd/emqd/bench/lua"
)

// enc appends RESP2 multibulk commands to a buffer.
type enc struct{ b []byte }

func (e *enc) array(n int) {
	e.b = append(e.b, '*')
	e.b = strconv.AppendInt(e.b, int64(n), 10)
	e.b = append(e.b, '\r', '\n')
}

// bulk appends one bulk string made of the concatenation of parts.
func (e *enc) bulk(parts ...string) {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	e.b = append(e.b, '$')
	e.b = strconv.AppendInt(e.b, int64(n), 10)
	e.b = append(e.b, '\r', '\n')
	for _, p := range parts {
		e.b = append(e.b, p...)
	}
	e.b = append(e.b, '\r', '\n')
}

// cmd appends one command of whole-string arguments (array and bulks).
func (e *enc) cmd(args ...string) {
	e.array(len(args))
	for _, a := range args {
		e.bulk(a)
	}
}

// val is one parsed reply: kind is the RESP2 type byte ('+' '-' ':' '$'
// '*'), or '_' for a nil bulk or array. An array's elements are
// vals[first : first+count] of the same table.
type val struct {
	kind         byte
	s            []byte
	n            int64
	first, count int
}

// rawConn is one connection of the lean client.
type rawConn struct {
	nc    net.Conn
	br    *bufio.Reader
	e     enc
	vals  []val
	arena []byte
	tops  []int
	// trips counts the round trips made, batches the batches of job
	// numbers the worker took (cycle.stats reads them after a run).
	trips, batches int
}

func dialRaw(addr string) (*rawConn, error) {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &rawConn{nc: nc, br: bufio.NewReaderSize(nc, 64<<10)}, nil
}

// roundTrip writes the n commands encoded in c.e and reads their n replies
// (c.tops indexes them in c.vals). The encoder is emptied.
func (c *rawConn) roundTrip(n int) error {
	c.trips++
	_, err := c.nc.Write(c.e.b)
	c.e.b = c.e.b[:0]
	if err != nil {
		return err
	}
	c.vals = c.vals[:0]
	c.arena = c.arena[:0]
	c.tops = c.tops[:0]
	for i := 0; i < n; i++ {
		idx := len(c.vals)
		c.vals = append(c.vals, val{})
		if err := c.read(idx); err != nil {
			return err
		}
		c.tops = append(c.tops, idx)
	}
	return nil
}

// read parses one reply into c.vals[idx].
func (c *rawConn) read(idx int) error {
	line, err := c.br.ReadSlice('\n')
	if err != nil {
		return err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return fmt.Errorf("bad reply line %q", line)
	}
	kind, body := line[0], line[1:len(line)-2]
	switch kind {
	case '+', '-':
		start := len(c.arena)
		c.arena = append(c.arena, body...)
		c.vals[idx] = val{kind: kind, s: c.arena[start:len(c.arena):len(c.arena)]}
	case ':':
		n, err := strconv.ParseInt(string(body), 10, 64)
		if err != nil {
			return fmt.Errorf("bad integer reply %q", line)
		}
		c.vals[idx] = val{kind: kind, n: n}
	case '$':
		n, err := strconv.Atoi(string(body))
		if err != nil {
			return fmt.Errorf("bad bulk length %q", line)
		}
		if n < 0 {
			c.vals[idx] = val{kind: '_'}
			return nil
		}
		start := len(c.arena)
		c.arena = append(c.arena, make([]byte, n+2)...)
		if _, err := io.ReadFull(c.br, c.arena[start:]); err != nil {
			return err
		}
		c.arena = c.arena[:start+n]
		c.vals[idx] = val{kind: kind, s: c.arena[start : start+n : start+n]}
	case '*':
		n, err := strconv.Atoi(string(body))
		if err != nil {
			return fmt.Errorf("bad array length %q", line)
		}
		if n < 0 {
			c.vals[idx] = val{kind: '_'}
			return nil
		}
		first := len(c.vals)
		for i := 0; i < n; i++ {
			c.vals = append(c.vals, val{})
		}
		c.vals[idx] = val{kind: kind, first: first, count: n}
		for i := 0; i < n; i++ {
			if err := c.read(first + i); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("unexpected reply %q", line)
	}
	return nil
}

// reply is the i-th reply of the last round trip.
func (c *rawConn) reply(i int) val { return c.vals[c.tops[i]] }

// elem is element j of array v.
func (c *rawConn) elem(v val, j int) val { return c.vals[v.first+j] }

// describe renders v for error messages.
func (c *rawConn) describe(v val) string {
	switch v.kind {
	case '+', '$', '-':
		return fmt.Sprintf("%c%q", v.kind, v.s)
	case ':':
		return fmt.Sprintf(":%d", v.n)
	case '_':
		return "nil"
	}
	var b bytes.Buffer
	b.WriteByte('[')
	for j := 0; j < v.count; j++ {
		if j > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(c.describe(c.elem(v, j)))
	}
	b.WriteByte(']')
	return b.String()
}

func (c *rawConn) isStr(v val, s string) bool {
	return (v.kind == '$' || v.kind == '+') && string(v.s) == s
}

// qkeys are the names one worker's commands use, built once.
type qkeys struct {
	q, prefix, pending, active, schedule, dead, completed, jobPrefix string
	leaseMs                                                          string
}

func newQKeys(q string, leaseMs int) *qkeys {
	k := lua.Keys{Q: q}
	return &qkeys{q: q, prefix: k.Prefix(), pending: k.Pending(), active: k.Active(), schedule: k.Schedule(),
		dead: k.Dead(), completed: k.Completed(), jobPrefix: k.Prefix() + "job:", leaseMs: strconv.Itoa(leaseMs)}
}

// rawSide encodes the transitions of one side. The failure of the
// variant is always max_attempts 3, delay 0, message "boom".
type rawSide interface {
	enqueue(e *enc, k *qkeys, id, payload string)
	claim(e *enc, k *qkeys)
	complete(e *enc, k *qkeys, id, token string)
	fail(e *enc, k *qkeys, id, token string)
	// hasNext reports whether the side has the finishing verbs' NEXT form
	// (docs/verbs.md §4.5.1); completeNext and failNext encode it (complete
	// or fail, then claim one job with lease_ms, in one command). A side
	// without it is never asked to encode it.
	hasNext() bool
	completeNext(e *enc, k *qkeys, id, token string)
	failNext(e *enc, k *qkeys, id, token string)
}

type rawNative struct{}

func (rawNative) enqueue(e *enc, k *qkeys, id, payload string) {
	e.cmd("EMQ.ENQUEUE", k.q, id, payload)
}
func (rawNative) claim(e *enc, k *qkeys) {
	e.cmd("EMQ.CLAIM", k.q, k.leaseMs)
}
func (rawNative) complete(e *enc, k *qkeys, id, token string) {
	e.cmd("EMQ.COMPLETE", k.q, id, token)
}
func (rawNative) fail(e *enc, k *qkeys, id, token string) {
	e.cmd("EMQ.FAIL", k.q, id, token, "3", "0", "boom")
}
func (rawNative) hasNext() bool { return true }
func (rawNative) completeNext(e *enc, k *qkeys, id, token string) {
	e.cmd("EMQ.COMPLETE", k.q, id, token, "NEXT", k.leaseMs)
}
func (rawNative) failNext(e *enc, k *qkeys, id, token string) {
	e.cmd("EMQ.FAIL", k.q, id, token, "3", "0", "boom", "NEXT", k.leaseMs)
}

// rawLanes is rawNative with lanes on (docs/verbs.md §4.26): each job is
// enqueued with LANE l<n>, n a hash of its id over the side's lanes, so
// every claim is a weighted fair pick among up to len(names) backlogged
// lanes; the other transitions are rawNative's.
type rawLanes struct {
	rawNative
	names []string
}

func newRawLanes(n int) rawLanes {
	r := rawLanes{names: make([]string, n)}
	for i := range r.names {
		r.names[i] = "l" + strconv.Itoa(i)
	}
	return r
}

func (r rawLanes) enqueue(e *enc, k *qkeys, id, payload string) {
	h := uint32(2166136261) // FNV-1a of the id
	for i := 0; i < len(id); i++ {
		h = (h ^ uint32(id[i])) * 16777619
	}
	e.cmd("EMQ.ENQUEUE", k.q, id, payload, "LANE", r.names[h%uint32(len(r.names))])
}

// rawScripted sends the same EVALSHA calls as scriptExec. The scripts have
// no combined verb (bench/lua is one script per transition), so the side
// has no NEXT form: its NEXT cells are its plain ones (runSide).
type rawScripted struct{}

func (rawScripted) hasNext() bool { return false }
func (rawScripted) completeNext(*enc, *qkeys, string, string) {
	panic("jobcycle: the scripted side has no NEXT form")
}
func (rawScripted) failNext(*enc, *qkeys, string, string) {
	panic("jobcycle: the scripted side has no NEXT form")
}

func (rawScripted) enqueue(e *enc, k *qkeys, id, payload string) {
	e.array(7)
	e.bulk("EVALSHA")
	e.bulk(lua.Enqueue.SHA)
	e.bulk("2")
	e.bulk(k.jobPrefix, id)
	e.bulk(k.pending)
	e.bulk(id)
	e.bulk(payload)
}
func (rawScripted) claim(e *enc, k *qkeys) {
	e.cmd("EVALSHA", lua.Claim.SHA, "3", k.pending, k.active, k.schedule, k.prefix, k.leaseMs)
}
func (rawScripted) complete(e *enc, k *qkeys, id, token string) {
	e.array(8)
	e.bulk("EVALSHA")
	e.bulk(lua.Complete.SHA)
	e.bulk("3")
	e.bulk(k.active)
	e.bulk(k.jobPrefix, id)
	e.bulk(k.completed)
	e.bulk(id)
	e.bulk(token)
}
func (rawScripted) fail(e *enc, k *qkeys, id, token string) {
	e.array(13)
	e.bulk("EVALSHA")
	e.bulk(lua.Retry.SHA)
	e.bulk("4")
	e.bulk(k.active)
	e.bulk(k.schedule)
	e.bulk(k.dead)
	e.bulk(k.jobPrefix, id)
	e.bulk(id)
	e.bulk(token)
	e.bulk("0")
	e.bulk("3")
	e.bulk("boom")
	e.bulk(k.prefix)
}

// runRaw is cycle.run with the lean client: the workers' connections are
// opened before the clock starts, each to the address route gives for its
// queue; the outcome is checked by check.
func (cy cycle) runRaw(route func(q string) string, side rawSide, q string, check func(q string) error) (float64, error) {
	conns := make([]*rawConn, cy.workers)
	for w := range conns {
		c, err := dialRaw(route(cy.qname(q, w)))
		if err != nil {
			return 0, err
		}
		defer c.nc.Close()
		conns[w] = c
	}
	var next atomic.Int64
	base := uint64(time.Now().UnixMilli()) << 20
	var wg sync.WaitGroup
	errs := make(chan error, cy.workers)
	var cpu0 int64
	if cy.cpuNs != nil {
		var err error
		if cpu0, err = cy.cpuNs(); err != nil {
			return 0, err
		}
	}
	start := time.Now()
	for w := 0; w < cy.workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			k := newQKeys(cy.qname(q, w), cy.leaseMs)
			work := cy.workerRaw
			if cy.next {
				work = cy.workerRawNext
			}
			if err := work(conns[w], side, k, base, &next); err != nil {
				errs <- err
			}
		}(w)
	}
	wg.Wait()
	elapsed := time.Since(start)
	if cy.cpuNs != nil {
		cpu1, err := cy.cpuNs()
		if err != nil {
			return 0, err
		}
		*cy.cpuPerJob = float64(cpu1-cpu0) / 1e3 / float64(cy.jobs)
	}
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	if err := check(q); err != nil {
		return 0, err
	}
	if cy.stats != nil {
		for _, c := range conns {
			cy.stats(c.batches, c.trips)
		}
	}
	return float64(cy.jobs) / elapsed.Seconds(), nil
}

// takeIDs takes up to batch job numbers of the run for c's worker and
// returns their ids (none once the run's jobs are all taken).
func (cy cycle) takeIDs(c *rawConn, ids []string, base uint64, next *atomic.Int64) []string {
	ids = ids[:0]
	first := next.Add(int64(cy.batch)) - int64(cy.batch)
	if first >= int64(cy.jobs) {
		return ids
	}
	n := int(min(int64(cy.batch), int64(cy.jobs)-first))
	for i := 0; i < n; i++ {
		ids = append(ids, jobID(base, uint64(first)+uint64(i)))
	}
	c.batches++
	return ids
}

// heldJob is a job a NEXT worker holds: its id and its lease's token.
type heldJob struct {
	id  string
	tok byte // '1' for a first claim, '2' for the claim of its retry
}

// workerRawNext is the cycle as a worker with the NEXT form runs it
// (docs/verbs.md §4.5.1): it enqueues a batch, then finishes the jobs it
// holds with COMPLETE ... NEXT (or, in the failure variant, FAIL ... NEXT
// first), each finishing command claiming the next job. Per batch (one
// command per round trip: per job) that is ENQUEUE, COMPLETE NEXT: two
// round trips instead of three; with the failure ENQUEUE, FAIL NEXT,
// COMPLETE NEXT: three instead of five. The first batch is claimed with
// plain CLAIMs, and the last finishing commands claim nothing.
//
// Which job a NEXT claims is the queue's order: on a queue without lanes
// FAIL's due retry (the oldest id) comes back to the worker that failed it
// and COMPLETE's claim takes the next batch's job, so every pass finishes
// the whole batch alike; with lanes the pick is fair among the lanes, so a
// pass may hold fresh jobs and retries at once. The worker therefore keeps
// each held job's token and fails a first claim (token 1, failure variant)
// or completes it (token 2, or no failure variant), and runs passes until
// it holds no retry; every job is failed once (in the variant) and
// completed once either way. Every reply is checked: each claim's token is
// 1 for a job never claimed and 2 for one this worker failed, FAIL's
// verdict is scheduled, and a claim is empty only when nothing is left.
func (cy cycle) workerRawNext(c *rawConn, side rawSide, k *qkeys, base uint64, next *atomic.Int64) error {
	if !side.hasNext() {
		return fmt.Errorf("the side has no NEXT form")
	}
	ids := make([]string, 0, cy.batch)
	var held, got []heldJob
	var failed map[string]bool // the retries not yet claimed again
	if cy.retry {
		failed = map[string]bool{}
	}
	// claimedJob reads a claim array (the NEXT form's or CLAIM's reply):
	// nothing, or one job whose token must fit its history. hint is the id
	// the claim is expected to take on a queue without lanes, whose string
	// is kept instead of a new one; what and whose name the command in an
	// error.
	claimedJob := func(v val, what, whose, hint string) (heldJob, bool, error) {
		if v.kind != '*' {
			return heldJob{}, false, fmt.Errorf("%s %s: unexpected reply %s", what, whose, c.describe(v))
		}
		if v.count == 0 {
			return heldJob{}, false, nil
		}
		job := c.elem(v, 0)
		if v.count != 1 || job.kind != '*' || job.count < 3 {
			return heldJob{}, false, fmt.Errorf("%s %s: unexpected reply %s", what, whose, c.describe(v))
		}
		idv, tok := c.elem(job, 0), c.elem(job, 2)
		retried := failed[string(idv.s)]
		var t byte
		switch {
		case c.isStr(tok, "1") && !retried:
			t = '1'
		case c.isStr(tok, "2") && retried:
			t = '2'
			delete(failed, string(idv.s))
		default:
			return heldJob{}, false, fmt.Errorf("%s %s: claimed %s with token %s (failed by this worker: %v)", what, whose, idv.s, c.describe(tok), retried)
		}
		if hint != "" && c.isStr(idv, hint) {
			return heldJob{hint, t}, true, nil
		}
		return heldJob{string(idv.s), t}, true, nil
	}
	for {
		ids = cy.takeIDs(c, ids, base, next)
		if len(ids) > 0 {
			for _, id := range ids {
				side.enqueue(&c.e, k, id, cy.payload)
			}
			if err := c.roundTrip(len(ids)); err != nil {
				return err
			}
			for i, id := range ids {
				if v := c.reply(i); !c.isStr(v, id) {
					return fmt.Errorf("enqueue %s: %s", id, c.describe(v))
				}
			}
		}
		if len(held) == 0 {
			if len(ids) == 0 {
				return nil
			}
			// The first batch: plain claims.
			for range ids {
				side.claim(&c.e, k)
			}
			if err := c.roundTrip(len(ids)); err != nil {
				return err
			}
			for i := range ids {
				j, ok, err := claimedJob(c.reply(i), "claim", k.q, ids[i])
				if err != nil {
					return err
				}
				if !ok {
					return fmt.Errorf("claim: nothing claimed after enqueueing %d jobs", len(ids))
				}
				held = append(held, j)
			}
			continue
		}
		// Passes over the held jobs until none is a retry (and, once the
		// run's jobs are all taken, until none is held).
		for len(held) > 0 {
			for _, j := range held {
				if cy.retry && j.tok == '1' {
					side.failNext(&c.e, k, j.id, "1")
				} else {
					side.completeNext(&c.e, k, j.id, string(j.tok))
				}
			}
			if err := c.roundTrip(len(held)); err != nil {
				return err
			}
			got = got[:0]
			retries := false
			for i, j := range held {
				v := c.reply(i)
				what, hint := "complete NEXT", ""
				if i < len(ids) {
					hint = ids[i]
				}
				if cy.retry && j.tok == '1' {
					// [verdict, failures, claim array]; the claim takes
					// the retry back on a queue without lanes.
					what, hint = "fail NEXT", j.id
					if v.kind != '*' || v.count != 3 || !c.isStr(c.elem(v, 0), "scheduled") {
						return fmt.Errorf("%s %s: %s, want [scheduled 1 [...]]", what, j.id, c.describe(v))
					}
					failed[j.id] = true
					v = c.elem(v, 2)
				}
				n, ok, err := claimedJob(v, what, j.id, hint)
				if err != nil {
					return err
				}
				if ok {
					got = append(got, n)
					retries = retries || n.tok == '2'
				}
			}
			held, got = got, held
			if !retries && len(ids) > 0 {
				break
			}
		}
		if len(held) == 0 && len(ids) == 0 {
			if len(failed) > 0 {
				return fmt.Errorf("%d failed jobs never claimed again", len(failed))
			}
			return nil
		}
	}
}

func (cy cycle) workerRaw(c *rawConn, side rawSide, k *qkeys, base uint64, next *atomic.Int64) error {
	ids := make([]string, 0, cy.batch)
	jobs := make([]string, 0, cy.batch) // the claimed ids, in reply order
	for {
		ids = cy.takeIDs(c, ids, base, next)
		n := len(ids)
		if n == 0 {
			return nil
		}
		for _, id := range ids {
			side.enqueue(&c.e, k, id, cy.payload)
		}
		if err := c.roundTrip(n); err != nil {
			return err
		}
		for i, id := range ids {
			if v := c.reply(i); !c.isStr(v, id) {
				return fmt.Errorf("enqueue %s: %s", id, c.describe(v))
			}
		}
		claim := func(wantTok string) error {
			for range ids {
				side.claim(&c.e, k)
			}
			if err := c.roundTrip(n); err != nil {
				return err
			}
			jobs = jobs[:0]
			for i := range ids {
				v := c.reply(i)
				if v.kind != '*' || v.count == 0 || c.elem(v, 0).kind != '*' || c.elem(v, 0).count < 3 {
					return fmt.Errorf("claim: unexpected reply %s", c.describe(v))
				}
				job := c.elem(v, 0)
				id, tok := c.elem(job, 0), c.elem(job, 2)
				if !c.isStr(tok, wantTok) {
					return fmt.Errorf("claim %s: token %s, want %q", id.s, c.describe(tok), wantTok)
				}
				// The ids come back in mint order; keep the string already made.
				if i < len(ids) && c.isStr(id, ids[i]) {
					jobs = append(jobs, ids[i])
				} else {
					jobs = append(jobs, string(id.s))
				}
			}
			return nil
		}
		if err := claim("1"); err != nil {
			return err
		}
		if cy.retry {
			for _, id := range jobs {
				side.fail(&c.e, k, id, "1")
			}
			if err := c.roundTrip(n); err != nil {
				return err
			}
			for i := range jobs {
				v := c.reply(i)
				verdict := v
				if v.kind == '*' && v.count > 0 { // native: ["scheduled", f]
					verdict = c.elem(v, 0)
				}
				if !c.isStr(verdict, "scheduled") {
					return fmt.Errorf("fail %s: %s, want scheduled", jobs[i], c.describe(v))
				}
			}
			if err := claim("2"); err != nil {
				return err
			}
		}
		tok := "1"
		if cy.retry {
			tok = "2"
		}
		for _, id := range jobs {
			side.complete(&c.e, k, id, tok)
		}
		if err := c.roundTrip(n); err != nil {
			return err
		}
		for i := range jobs {
			if v := c.reply(i); v.kind != ':' || v.n != 1 {
				return fmt.Errorf("complete %s: %s", jobs[i], c.describe(v))
			}
		}
	}
}
