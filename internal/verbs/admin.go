package verbs

import (
	"github.com/emqd/emqd/internal/num"
	"github.com/emqd/emqd/internal/plan"
	"github.com/emqd/emqd/internal/store"
)

// ---------------------------------------------------------------------------
// EMQ.PAUSE q, EMQ.RESUME q

// EMQ.PAUSE q
func (vs *Verbs) cmdPause(c *store.Ctx) {
	k := vs.queueArg(c)
	if k == nil {
		return
	}
	if err := vs.Pause(c, k.Queue); err != nil {
		replyRefusal(c, err)
		return
	}
	c.W.OK()
}

// Pause is EMQ.PAUSE q (docs/verbs.md §4.14): claims of q hand out
// nothing until Resume. A *Refusal wrote nothing.
func (vs *Verbs) Pause(c *store.Ctx, q string) error {
	k := vs.keysOf(q)
	_, kind := hashKind(c.DB, k.Meta)
	p, ref := judgePause(kind, k)
	if ref.Refused() {
		return vs.refused(c, ref)
	}
	apply(c, p)
	return nil
}

// judgePause is EMQ.PAUSE: HSET meta paused 1.
func judgePause(meta keyKind, k *Keys) (*plan.Plan, refusal) {
	if meta == keyWrong {
		return nil, wrongType(k.Meta)
	}
	p := newPlan(1)
	hset(p, k.Meta, fvPausedOne)
	return p, noRefusal
}

// EMQ.RESUME q
func (vs *Verbs) cmdResume(c *store.Ctx) {
	k := vs.queueArg(c)
	if k == nil {
		return
	}
	if err := vs.Resume(c, k.Queue); err != nil {
		replyRefusal(c, err)
		return
	}
	c.W.OK()
}

// Resume is EMQ.RESUME q (docs/verbs.md §4.14): claims of q hand out jobs
// again (nothing to write when q is not paused). A *Refusal wrote
// nothing.
func (vs *Verbs) Resume(c *store.Ctx, q string) error {
	k := vs.keysOf(q)
	h, kind := hashKind(c.DB, k.Meta)
	paused := false
	if h != nil {
		_, paused = h.Get("paused")
	}
	p, ref := judgeResume(kind, paused, k)
	if ref.Refused() {
		return vs.refused(c, ref)
	}
	apply(c, p)
	vs.wake(c, k)
	return nil
}

// judgeResume is EMQ.RESUME: HDEL meta paused (nothing to write when the
// queue is not paused).
func judgeResume(meta keyKind, paused bool, k *Keys) (*plan.Plan, refusal) {
	if meta == keyWrong {
		return nil, wrongType(k.Meta)
	}
	if !paused {
		return nil, noRefusal
	}
	p := newPlan(1)
	hdel(p, k.Meta, fvPaused)
	return p, noRefusal
}

// ---------------------------------------------------------------------------
// EMQ.REMOVE q id

// EMQ.REMOVE q id
func (vs *Verbs) cmdRemove(c *store.Ctx) {
	j, ok := vs.parseJobRef(c)
	if !ok {
		return
	}
	removed, err := vs.Remove(c, &j)
	if err != nil {
		replyRefusal(c, err)
		return
	}
	if removed {
		c.W.Int(1)
	} else {
		c.W.Int(0)
	}
}

// Remove is EMQ.REMOVE q id (docs/verbs.md §4.15): the job is deleted
// from every set and its row, unless it is active (ErrActive). It reports
// whether there was a job to remove (the wire reply 1 or 0). A *Refusal
// wrote nothing.
func (vs *Verbs) Remove(c *store.Ctx, j *JobRef) (bool, error) {
	k, rowKey := vs.jobRefKeys(j)
	id := j.ID
	r := readRemove(c.DB, k, id, rowKey)
	p, ref := judgeRemove(&r, k, id, rowKey)
	if ref.Refused() {
		return false, vs.refused(c, ref)
	}
	if p == nil {
		return false, nil
	}
	lt, ref := removeLanes(vs.laneScratch(), c.DB, k, c.NowMs)
	if !ref.Refused() {
		ref = removeLeaves(lt, &r)
	}
	if ref.Refused() {
		plan.Put(p)
		return false, vs.refused(c, ref)
	}
	var fe *flowEnds
	if r.Row.Kind == keyOK && r.Row.Parent.Present {
		// A removed flow child has ended (docs/verbs.md §4.25.2).
		vs.endRow(&fe, c, p, lt, &r.Row, k, id, vRemoved, nil)
		planFlow(fe, p)
	}
	vs.flushApply(c, k, lt, p)
	fe.after(c)
	vs.count(c, k, Removed, 1)
	vs.event(c, k, EvRemoved, id)
	return true, nil
}

// removeRead is what EMQ.REMOVE's read pass saw: the row and the id's
// membership of each set.
type removeRead struct {
	Active, Pending, Schedule, Dead, Done, Waiting             keyKind
	InActive, InPending, InSchedule, InDead, InDone, InWaiting bool
	Row                                                        jobRow
	LanePend                                                   string // the job's lane set ("": the default lane)
	InLanePend, LanePendWrong                                  bool
}

// readRemove is EMQ.REMOVE's read pass for one id; EMQ.REMOVE.ALL reads
// each job it removes through it (docs/verbs.md §4.24: the same path).
func readRemove(d *store.DB, k *Keys, id, rowKey string) removeRead {
	var r removeRead
	r.Active, r.InActive, _ = member(d, k.Active, id)
	r.Row = readRow(d, rowKey)
	r.Pending, r.InPending, _ = member(d, k.Pending, id)
	r.Schedule, r.InSchedule, _ = member(d, k.Schedule, id)
	r.Dead, r.InDead, _ = member(d, k.Dead, id)
	r.Done, r.InDone, _ = member(d, k.Done, id)
	r.Waiting, r.InWaiting, _ = member(d, k.Waiting, id)
	if name := laneOf(&r.Row); name != DefaultLane {
		// A pending job of a lane is in its lane's set (docs/verbs.md
		// §4.26); removeLanes keeps the lane's state.
		r.LanePend = k.LanePrefix + name + ":pending"
		var kind keyKind
		if kind, r.InLanePend, _ = member(d, r.LanePend, id); kind == keyWrong {
			r.LanePendWrong = true
		}
	}
	return r
}

// removeLanes reads queue k's lane state for a removal (docs/verbs.md
// §4.26.4) into buf (readLanesInto; the verb's scratch, so a queue
// without lanes allocates nothing): nil without lanes; a refusal: the
// lane state is unreadable.
func removeLanes(buf *laneTx, d *store.DB, k *Keys, now int64) (*laneTx, refusal) {
	lt, ref := readLanesInto(buf, d, k, now)
	if ref.Refused() || !lt.on {
		return nil, ref
	}
	return lt, noRefusal
}

// removeLeaves records r's job leaving the pending set of its lane (the
// default one, or its lane's) in lt (leavesPending), so the verb's flush
// leaves the lanes right at once.
func removeLeaves(lt *laneTx, r *removeRead) refusal {
	if lt == nil {
		return noRefusal
	}
	if r.InPending {
		if ref := leavesPending(lt, DefaultLane); ref.Refused() {
			return ref
		}
	}
	if r.InLanePend {
		return leavesPending(lt, laneOf(&r.Row))
	}
	return noRefusal
}

// judgeRemove is EMQ.REMOVE: a held job (in active) is refused, a lane row
// is refused; otherwise the id leaves pending, schedule and dead and the row
// is deleted. A nil plan means there was no such job (reply 0).
func judgeRemove(r *removeRead, k *Keys, id, rowKey string) (*plan.Plan, refusal) {
	switch {
	case r.Active == keyWrong:
		return nil, wrongType(k.Active)
	case r.InActive:
		return nil, refuse(ErrActive)
	case r.Row.Kind == keyWrong:
		return nil, wrongType(rowKey)
	case r.Row.Lane:
		return nil, badRow(ErrLane, rowKey)
	case r.Pending == keyWrong:
		return nil, wrongType(k.Pending)
	case r.Schedule == keyWrong:
		return nil, wrongType(k.Schedule)
	case r.Dead == keyWrong:
		return nil, wrongType(k.Dead)
	case r.Done == keyWrong:
		return nil, wrongType(k.Done)
	case r.Waiting == keyWrong:
		return nil, wrongType(k.Waiting)
	}
	if r.LanePendWrong {
		return nil, wrongType(r.LanePend)
	}
	p := newPlan(5)
	if r.InPending {
		p.ZRem(k.Pending, id)
	}
	if r.InLanePend {
		p.ZRem(r.LanePend, id)
	}
	if r.InSchedule {
		p.ZRem(k.Schedule, id)
	}
	if r.InDead {
		p.ZRem(k.Dead, id)
	}
	if r.InDone {
		p.ZRem(k.Done, id)
	}
	if r.InWaiting {
		p.ZRem(k.Waiting, id)
	}
	if r.Row.Kind == keyOK {
		p.Del(rowKey)
		if r.Row.Children {
			// A flow parent's roster goes with it (docs/verbs.md §4.25.4).
			delRoster(p, k, id)
		}
	}
	if len(p.Ops) == 0 {
		return nil, noRefusal
	}
	return p, noRefusal
}

// ---------------------------------------------------------------------------
// EMQ.COUNTS q

// QueueLatencyMs is queue k's latency at now (docs/verbs.md §4.16): the
// largest age, in ms on the server clock, of a job a claim takes next in
// its lane (the first member of pending, and of each lane's pending set,
// §4.26), now - its row's enqueued_at. A head counts 0 when its set is
// empty or not a sorted set, or its row has no readable enqueued_at (a
// ghost, a row of another type or written without it), or one in the
// future; so the latency is 0 when nothing readable waits. It reads two
// keys per lane head with Peek (no access time, no client-tracking read:
// INFO and /metrics call it too, and a scrape must not make a queue's keys
// look recently used to OBJECT IDLETIME or an LRU policy) and writes
// nothing.
func QueueLatencyMs(d *store.DB, k *Keys, now int64) int64 {
	lat := headAgeMs(d, k, k.Pending, now)
	if known := peekZSet(d, k.LanesKnown); known != nil {
		known.AscendAll(func(it store.ZItem) bool {
			if it.Member != DefaultLane {
				lat = max(lat, headAgeMs(d, k, k.LanePrefix+it.Member+":pending", now))
			}
			return true
		})
	}
	return lat
}

// headAgeMs is the age at now of the first member of the pending set at
// key (QueueLatencyMs), 0 when unknown.
func headAgeMs(d *store.DB, k *Keys, key string, now int64) int64 {
	z := peekZSet(d, key)
	if z == nil {
		return 0
	}
	it, ok := z.At(0)
	if !ok {
		return 0
	}
	h := peekHash(d, k.Row(it.Member))
	if h == nil {
		return 0
	}
	v, ok := h.Get(string(fEnqueuedAt))
	if !ok {
		return 0
	}
	t, ok := num.ParseInt(v)
	if !ok || t >= now {
		return 0
	}
	return now - t
}

// countsRead is what EMQ.COUNTS's read pass saw: the four sets (kind and
// size) and the two metrics hashes.
type countsRead struct {
	Sets        [4]keyKind // pending, active, schedule, dead
	Sizes       [4]int64
	Completed   counter
	Failed      counter
	Done        keyKind // the retained completed jobs' set (docs/verbs.md §4.21)
	DoneSize    int64
	Waiting     keyKind // flow parents waiting on children (docs/verbs.md §4.25)
	WaitingSize int64
}

// queueCounts is EMQ.COUNTS's reply, in reply order.
type queueCounts struct {
	Pending, Active, Scheduled, Dead, Completed, Failed, Retained, Waiting int64
}

// judgeCounts is EMQ.COUNTS: set sizes and metric counts; a wrong type or a
// count that is not an integer refuses.
func judgeCounts(r *countsRead, k *Keys) (queueCounts, refusal) {
	keys := [4]string{k.Pending, k.Active, k.Schedule, k.Dead}
	for i, kk := range r.Sets {
		if kk == keyWrong {
			return queueCounts{}, wrongType(keys[i])
		}
	}
	metric := func(c counter, key string) (int64, refusal) {
		if c.Kind == keyWrong {
			return 0, wrongType(key)
		}
		if !c.Count.Present {
			return 0, noRefusal
		}
		n, ok := num.ParseInt(c.Count.Val)
		if !ok {
			return 0, badRow(store.ErrHashNotInt, key)
		}
		return n, noRefusal
	}
	done, ref := metric(r.Completed, k.Completed)
	if ref.Refused() {
		return queueCounts{}, ref
	}
	failed, ref := metric(r.Failed, k.Failed)
	if ref.Refused() {
		return queueCounts{}, ref
	}
	if r.Done == keyWrong {
		return queueCounts{}, wrongType(k.Done)
	}
	if r.Waiting == keyWrong {
		return queueCounts{}, wrongType(k.Waiting)
	}
	return queueCounts{r.Sizes[0], r.Sizes[1], r.Sizes[2], r.Sizes[3], done, failed, r.DoneSize, r.WaitingSize}, noRefusal
}

// ---------------------------------------------------------------------------
// EMQ.DEBUG CLOCK ADVANCE ms (docs/verbs.md §4.19)

// ClockAdvancer is the server clock as EMQ.DEBUG CLOCK ADVANCE sees it
// (Config.Clock): its reading, Unix ms, and a step forward of ms >= 0
// milliseconds (clock.Manual and clock.Shifted have both). With
// enable-debug-command yes or local the server clock is always one: Start
// wraps any other clock in clock.Shifted, and the directive cannot change
// while the server runs.
type ClockAdvancer interface {
	NowMs() int64
	Advance(ms int64)
}

// debugHelp is EMQ.DEBUG HELP's text, laid out as Valkey's container
// HELP replies (addReplyHelp: the usage line, each subcommand with its
// indented description, then HELP itself).
var debugHelp = []string{
	"EMQ.DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"CLOCK ADVANCE <ms>",
	"    Move the server clock forward by <ms> milliseconds (leases, due times,",
	"    minted ids and BLOCK timeouts follow it). Needs enable-debug-command yes.",
	"HELP",
	"    Print this help.",
}

// cmdDebug is the container alone or with a subcommand the server did not
// route. The server answers both before any proc runs (Valkey's
// processCommand: existence, then arity, then the protected-command check,
// as for MODULE), so the order here is the same whether or not debug is
// on.
func (vs *Verbs) cmdDebug(c *store.Ctx) {
	if len(c.Argv) < 2 {
		c.W.Error(errArity("emq.debug"))
		return
	}
	c.W.Error("ERR unknown subcommand '" + string(c.Argv[1]) + "'. Try EMQ.DEBUG HELP.")
}

// cmdDebugHelp is EMQ.DEBUG HELP (docs/verbs.md §4.19): answered whether
// or not debug is on, as Valkey answers MODULE HELP while the MODULE
// subcommands that act are protected.
func (vs *Verbs) cmdDebugHelp(c *store.Ctx) {
	c.W.Array(len(debugHelp))
	for _, l := range debugHelp {
		c.W.Simple(l)
	}
}

// EMQ.DEBUG CLOCK ADVANCE ms: the permission (enable-debug-command, per
// connection) and the arguments here, the step in DebugClockAdvance.
func (vs *Verbs) cmdDebugClock(c *store.Ctx) {
	if !c.DebugEnabled {
		c.W.Error(ErrDebugDisabled)
		return
	}
	if !eqFold(c.Argv[2], "ADVANCE") {
		c.W.Error(store.ErrSyntax)
		return
	}
	ms, e := intArg(c.Argv[3], 0, errNonNegMs)
	if e != "" {
		c.W.Error(e)
		return
	}
	if err := vs.DebugClockAdvance(ms); err != nil {
		replyRefusal(c, err)
		return
	}
	c.W.OK()
}

// DebugClockAdvance is EMQ.DEBUG CLOCK ADVANCE (docs/verbs.md §4.19): it
// moves the clock of Config.Clock forward by ms >= 0 milliseconds. The
// clock stops at the last time a score holds (MaxScoreMs, docs/verbs.md
// §2.12): a larger step is refused with ErrClockRange and moves nothing,
// as is any step when the verbs were given no clock. It writes nothing to
// the keyspace.
func (vs *Verbs) DebugClockAdvance(ms int64) error {
	if vs.clock == nil {
		return &Refusal{Text: ErrDebugDisabled}
	}
	if ms > MaxScoreMs-max(vs.clock.NowMs(), 0) {
		return &Refusal{Text: ErrClockRange}
	}
	if ms > 0 {
		vs.clock.Advance(ms)
	}
	return nil
}
