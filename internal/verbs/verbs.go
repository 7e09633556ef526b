// Package verbs implements the EMQ.* job verbs (the contract:
// docs/verbs.md). Every verb runs the same steps (docs/verbs.md §2): parse
// and validate all its arguments (args.go), a read pass over the store
// (read.go), a pure judgement that returns a plan.Plan or a refusal, then
// store.Ctx.ApplyPlan and the reply. A refusal writes nothing.
//
// One file per family holds each verb's arguments, read pass, judgement and
// handler, with its tests beside it: enqueue.go (EMQ.ENQUEUE), claim.go
// (EMQ.CLAIM), token.go (the six token verbs and their common guard),
// recovery.go (EMQ.STALLED.CHECK, EMQ.PROMOTE, EMQ.REPROCESS), bulk.go (the
// operator bulk actions, EMQ.PROMOTE.JOB) and admin.go
// (EMQ.PAUSE, EMQ.RESUME, EMQ.REMOVE, EMQ.COUNTS, EMQ.JOB, EMQ.DEBUG). The
// key layout is keys.go; the command specs (Commands below) are derived from
// the verb table, internal/cmdmeta/emq.go (docs/architecture.md §8.2).
//
// There is deliberately no EMQ.REAP (docs/verbs.md
// §4.20): EMQ.STALLED.CHECK is the one recovery verb.
package verbs

import (
	"log/slog"
	"strings"
	"unsafe"

	"github.com/emqd/emqd/internal/cmdmeta"
	"github.com/emqd/emqd/internal/plan"
	"github.com/emqd/emqd/internal/store"
)

// Verbs are the EMQ.* verbs of one server, bound to what they report to it:
// the wake-up of blocked claimers, the transition accounting and the
// refusals caused by stored data. Every method runs under the store lock.
type Verbs struct {
	ready   func(db int, queue string)
	stats   *Stats // nil: nothing is counted (the append-only file's replay)
	badRows badRowLog
	// keys caches the Keys of recently used queues, so a verb does not
	// build eight strings per call (the measurement: bench/README.md, "Measured design decisions").
	keys map[string]*Keys
	// sweep is EMQ.STALLED.CHECK's scratch, reused from call to call
	// (verbs run under the store lock, one at a time).
	sweep sweepScratch
	// lanes is the lane state of EMQ.ENQUEUE, EMQ.ENQUEUE.MANY, EMQ.CLAIM
	// and the token verbs (laneScratch), reused from call to call so a
	// queue without lanes allocates none (bench/README.md, "Measured
	// design decisions").
	lanes laneTx
	// publish and listens are the server's Pub/Sub (Config); evbuf is the
	// message scratch (events.go).
	publish func(channel string, msg []byte)
	listens func(channel string) bool
	evbuf   []byte
	// crons caches parsed cron specs by spec and zone (schedules re-read
	// their hash at every fire).
	crons map[string]*cronSched
	// clock is what EMQ.DEBUG CLOCK ADVANCE moves (Config.Clock).
	clock ClockAdvancer
	// runIDS and runIDB are the last run id and its bytes (runIDBytes);
	// nowMs and nowB the last time rendered for a row (msNow); nextOv is
	// NEXT's overlay (docs/verbs.md §4.5.1), one per finishing call.
	runIDS string
	runIDB []byte
	nowMs  int64
	nowB   []byte
	nextOv rowOverlay
	// cands is the claim's read pass's candidates (claimArgs.Cands), reused
	// from claim to claim: a dueJob holds a whole jobRow (344 bytes), and
	// a claim of one job made one for each call (candScratch).
	cands []dueJob
	// jobs is the claimed jobs' list a wire adapter's claim fills
	// (jobScratch).
	jobs []ClaimedJob
	// activeFV is the claimed rows' HSET for activeMs and activeRun
	// (activeFields).
	activeFV  [][]byte
	activeMs  int64
	activeRun string
}

// activeFields is the field list a claim writes into each claimed row
// (docs/verbs.md §4.3: state active, lease_epoch <run id>, claimed_at
// <now>), made once per ms and run id and shared by the plans of that ms,
// read-only as their values are (msNow).
func (vs *Verbs) activeFields(ms int64, runID string) [][]byte {
	if vs.activeFV == nil || vs.activeMs != ms || vs.activeRun != runID {
		vs.activeMs, vs.activeRun = ms, runID
		vs.activeFV = [][]byte{fState, vActive, fLeaseEpoch, vs.runIDBytes(runID), fClaimedAt, vs.msNow(ms)}
	}
	return vs.activeFV
}

// runIDBytes is id (the server's run id, a lease's lease_epoch) as bytes,
// made once per run id rather than once per claim. The plans share the
// slice: plan bytes are never written again (the store's hashtable keeps
// views of them, internal/store/hash.go), so neither is it.
func (vs *Verbs) runIDBytes(id string) []byte {
	if vs.runIDB == nil || vs.runIDS != id {
		vs.runIDS, vs.runIDB = id, []byte(id)
	}
	return vs.runIDB
}

// msNow is msBytes(ms), made once per ms rather than once per row: the
// rows written within one ms share the slice (enqueued_at, claimed_at), as
// the jobs of one claim already shared their claimed_at; read-only, as
// runIDBytes. At 22 jobs per ms (the job cycle's rate) that is one
// allocation per ms instead of two per job.
func (vs *Verbs) msNow(ms int64) []byte {
	if vs.nowB == nil || vs.nowMs != ms {
		vs.nowMs, vs.nowB = ms, msBytes(ms)
	}
	return vs.nowB
}

// Config is what a server lends its verbs.
type Config struct {
	// Ready is called (under the store lock) when a job of queue in db may
	// have become claimable: the server retries its blocked claims of that
	// queue after the batch. Nil: nobody waits.
	Ready func(db int, queue string)
	// Logger receives the rate-limited warnings of refusals caused by
	// stored data (docs/verbs.md §1); nil discards them.
	Logger *slog.Logger
	// Publish delivers msg on a Pub/Sub channel as PUBLISH does (under the
	// store lock; msg is only valid during the call), and Listening
	// reports whether a message on channel would reach any subscriber
	// (channel or pattern). The verbs publish their transitions through
	// them (docs/verbs.md §1.6); nil: nothing is published.
	Publish   func(channel string, msg []byte)
	Listening func(channel string) bool
	// Clock is the server clock EMQ.DEBUG CLOCK ADVANCE moves
	// (DebugClockAdvance); nil: the verb refuses as with debug off.
	Clock ClockAdvancer
}

// New returns the verbs of one server. They count nothing until SetStats.
func New(cfg Config) *Verbs {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	vs := &Verbs{ready: cfg.Ready, badRows: badRowLog{log: log}, clock: cfg.Clock}
	if cfg.Publish != nil && cfg.Listening != nil {
		vs.publish, vs.listens = cfg.Publish, cfg.Listening
	}
	return vs
}

// SetStats makes the verbs count the transitions they apply into st (nil:
// stop counting). Call it under the store lock.
func (vs *Verbs) SetStats(st *Stats) { vs.stats = st }

// BadRowRefusals is the number of refusals caused by stored data since New
// (INFO's emq_bad_row_refusals).
func (vs *Verbs) BadRowRefusals() int64 { return vs.badRows.n.Load() }

// handlers binds every command of the verb table (internal/cmdmeta/emq.go,
// docs/architecture.md §8.2) to its handler in vs: a new verb adds its
// entry there and its line here.
func (vs *Verbs) handlers() map[string]store.Handler {
	return map[string]store.Handler{
		"emq.enqueue":         vs.cmdEnqueue,
		"emq.enqueue.many":    vs.cmdEnqueueMany,
		"emq.claim":           vs.cmdClaim,
		"emq.complete":        vs.cmdComplete,
		"emq.fail":            vs.cmdFail,
		"emq.requeue":         vs.cmdRequeue,
		"emq.extend":          vs.cmdExtend,
		"emq.delay":           vs.cmdDelay,
		"emq.progress":        vs.cmdProgress,
		"emq.stalled.check":   vs.cmdStalledCheck,
		"emq.promote":         vs.cmdPromote,
		"emq.reprocess":       vs.cmdReprocess,
		"emq.pause":           vs.cmdPause,
		"emq.resume":          vs.cmdResume,
		"emq.remove":          vs.cmdRemove,
		"emq.reprocess.all":   vs.cmdReprocessAll,
		"emq.remove.all":      vs.cmdRemoveAll,
		"emq.promote.all":     vs.cmdPromoteAll,
		"emq.promote.job":     vs.cmdPromoteJob,
		"emq.lane":            vs.cmdLane,
		"emq.lanes":           vs.cmdLanes,
		"emq.counts":          vs.cmdCounts,
		"emq.job":             vs.cmdJob,
		"emq.list":            vs.cmdList,
		"emq.schedule":        vs.cmdSchedule,
		"emq.schedule.get":    vs.cmdScheduleGet,
		"emq.schedule.del":    vs.cmdScheduleDel,
		"emq.schedule.list":   vs.cmdScheduleList,
		"emq.schedule.pause":  vs.cmdSchedulePause,
		"emq.schedule.resume": vs.cmdScheduleResume,
		"emq.schedule.fire":   vs.cmdScheduleFire,
		"emq.wait":            vs.cmdWait,
		"emq.retain":          vs.cmdRetain,
		"emq.flow":            vs.cmdFlow,
		"emq.children":        vs.cmdChildren,
		"emq.debug":           vs.cmdDebug,
		"emq.debug|clock":     vs.cmdDebugClock,
		"emq.debug|help":      vs.cmdDebugHelp,
	}
}

// Commands returns the command specs of every EMQ.* verb bound to vs, for
// the server's registry, derived from the verb table (cmdmeta.Verbs, in
// its order): names in lower case, Valkey-style arity (n exact, -n at
// least n, argv[0] counted), the table's flags, key position 1 for a verb
// (docs/verbs.md §1.1: the {q} tag puts every key of q in q's slot), a
// container's subcommands. It panics when the table and handlers differ
// (a programming error every test that builds a server finds).
func (vs *Verbs) Commands() []*store.CommandSpec {
	hs := vs.handlers()
	var out []*store.CommandSpec
	top := map[string]*store.CommandSpec{}
	for _, m := range cmdmeta.Verbs() {
		h, ok := hs[m.Name]
		if !ok {
			panic("verbs: " + m.Name + " is in the verb table (internal/cmdmeta/emq.go) but has no handler (verbs.go)")
		}
		delete(hs, m.Name)
		cs := store.NewCommand(m.Name, m.Arity, h, store.FlagsFromMeta(m.Flags)...)
		if in := m.Derive(); in.FirstKey > 0 {
			cs.WithKeys(in.FirstKey, in.LastKey, in.Step)
		}
		if parent, _, sub := strings.Cut(m.Name, "|"); sub {
			top[parent].Subcommands = append(top[parent].Subcommands, cs)
			continue
		}
		top[m.Name] = cs
		out = append(out, cs)
	}
	for name := range hs {
		panic("verbs: " + name + " has a handler (verbs.go) but no entry in the verb table (internal/cmdmeta/emq.go)")
	}
	return out
}

// Plumbing every family shares. The server has checked a command's arity
// before its handler runs.

// wake tells the server a job of k's queue may have become claimable
// (blocked claimers).
func (vs *Verbs) wake(c *store.Ctx, k *Keys) {
	if vs.ready != nil {
		vs.ready(c.DB.Index, k.Queue)
	}
}

// strBytes is s's bytes, not a copy: read-only, for a plan's value when the
// value is a string the verb already has (a minted id, the tail of its row
// key). Plan bytes are never written (runIDBytes), and s is immutable.
func strBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// clone copies an argument the store will keep (argv buffers are reused).
func clone(b []byte) []byte {
	out := make([]byte, len(b))
	copy(out, b)
	return out
}

// queueArg validates argv[1] as a queue name (docs/verbs.md §2.8) and returns its keys.
func (vs *Verbs) queueArg(c *store.Ctx) *Keys {
	if !validQueue(c.Argv[1]) {
		c.W.Error(ErrInvalidQueue)
		return nil
	}
	return vs.keysFor(c.Argv[1])
}

// laneScratch is the laneTx the hot verbs read their queue's lanes into
// (readLanesInto overwrites it). One verb call uses it for one queue at a
// time: verbs run under the store lock, one at a time, and a verb that
// needs a second queue's lanes (a flow parent's release, a schedule's
// fire, the bulk verbs) reads them with readLanes.
func (vs *Verbs) laneScratch() *laneTx { return &vs.lanes }

// candScratchKeep bounds the candidates a claim's scratch keeps between
// claims (a claim of COUNT 1,000 reads at least as many; the common ones
// 1 to 100).
const candScratchKeep = 128

// candScratch is the claim's candidate list for its read pass (an empty
// slice of vs.cands); candsDone takes it back, cleared, once the claim's
// judgement is done with it (nothing it returns points into it: a
// claimed job copies its candidate's strings and views).
func (vs *Verbs) candScratch() []dueJob { return vs.cands[:0] }

// jobScratch is an empty list of claimed jobs for a wire adapter's claim
// (claimArgs.Jobs): the adapter writes the reply from it and hands it
// back with jobsDone before any other claim runs (a claim of one job made
// a 96-byte list per call). A typed caller gets a list of its own.
func (vs *Verbs) jobScratch() []ClaimedJob { return vs.jobs[:0] }

// jobsDone takes back the list jobScratch lent, once the reply is written.
func (vs *Verbs) jobsDone(j []ClaimedJob) {
	if j == nil {
		return
	}
	clear(j) // the payload views: no stored bytes are kept alive
	if cap(j) <= candScratchKeep {
		vs.jobs = j[:0]
	}
}

// candsDone is candScratch's return: the list the read pass grew.
func (vs *Verbs) candsDone(c []dueJob) {
	if c == nil {
		return // the read pass stopped before the candidates
	}
	clear(c) // the rows' views: no stored bytes are kept alive
	if cap(c) <= candScratchKeep {
		vs.cands = c[:0]
	}
}

// flushApply appends lt's lane writes to p (lanes.go), applies it, and
// wakes k's blocked claimers when a lane entered the selection (a slot or
// a token came back: docs/verbs.md §4.25.3).
func (vs *Verbs) flushApply(c *store.Ctx, k *Keys, lt *laneTx, p *plan.Plan) {
	p = lt.flush(p)
	apply(c, p)
	if lt != nil && lt.woke {
		vs.wake(c, k)
	}
}

// apply applies p (nil: nothing to write) and gives a plan from newPlan
// back to the pool: nothing may use it after (a verb's own scratch plan,
// the sweep's, is not pooled and stays with its owner).
func apply(c *store.Ctx, p *plan.Plan) {
	if p != nil {
		c.ApplyPlan(p)
		plan.Put(p)
	}
}
