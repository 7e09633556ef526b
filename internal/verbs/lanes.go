package verbs

import (
	"math"
	"sort"
	"strconv"

	"github.com/emqd/emqd/internal/num"
	"github.com/emqd/emqd/internal/plan"
	"github.com/emqd/emqd/internal/store"
)

// Lanes (docs/verbs.md §4.26): a queue's pending work split into named
// lanes served by weighted fair selection (stride scheduling), each lane
// with an optional MAX_ACTIVE (leases held) and RATE (claims per window).
// The plain pending set is the default lane. All lane state lives in the
// queue's own keys (Keys.Lane*), every one carrying the hash tag {q}.
//
// One laneTx holds what one verb read of the lane state and what it
// changed; flush appends the writes (hash fields, the selection sets, the
// rate log, garbage removal) to the verb's plan. A verb reads it in its
// read pass (readLanes), judges through the seams (intoPending,
// leavesActive), and flushes just before applying: a refusal writes
// nothing.

// DefaultLane is the name of the plain pending set as a lane.
const DefaultLane = "default"

// Lane limits (docs/verbs.md §4.26.1).
const (
	MaxLaneWeight = 1000
	// laneStride1 is the stride of a weight-1 lane: a lane of weight w
	// advances its pass by laneStride1/w per job. 2^20 keeps passes exact
	// as scores (below 2^53) for 2^33 jobs of a weight-1 lane.
	laneStride1 = 1 << 20
)

// Error texts of the lane verbs and options.
const (
	ErrLaneName   = "ERR invalid lane name"
	ErrLaneWeight = "ERR weight must be an integer between 1 and 1000"
	// ErrLaneHash: a lane hash field is not what the lane verbs write.
	ErrLaneHash = "ERR hash value is not an integer"
)

var (
	fLane      = []byte("lane")
	fLaneSlot  = []byte("lane_slot")
	fvLaneSlot = [][]byte{fLaneSlot}
	fLaneVT    = "lane_vt"
	bLaneVT    = []byte(fLaneVT)
	fLaneAct   = []byte("active")
	fLanePass  = []byte("pass")
)

// validLane reports whether b is a lane name: the queue-name alphabet
// (docs/verbs.md §1.2), 1 to 128 bytes.
func validLane(b []byte) bool {
	if len(b) == 0 || len(b) > 128 {
		return false
	}
	for _, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// laneOf is the lane a row belongs to (DefaultLane without a lane field).
func laneOf(row *jobRow) string {
	if row == nil || !row.LaneName.Present || len(row.LaneName.Val) == 0 {
		return DefaultLane
	}
	return string(row.LaneName.Val)
}

// laneState is one lane as a verb sees and changes it.
type laneState struct {
	name      string
	hkey      string // emq:{q}:lane:<name>
	pkey      string // its pending set (emq:{q}:pending for the default lane)
	skey      string // emq:{q}:lane:<name>:spent, the rate log
	existed   bool   // the hash existed when read
	known     bool   // a member of emq:{q}:lanes:known when read
	weight    int64
	maxActive int64
	rateCount int64
	ratePer   int64
	paused    bool
	cfg       uint8 // settings fields present in the hash as read (cfgBit)
	active    int64
	pass      int64
	pend      int64 // pending jobs, as the verb will leave them
	pendZ     *store.ZSet
	inLanes   bool
	lanesSc   float64
	inLimited bool
	limSc     float64
	// The rate log: spent members read that left the window (to drop),
	// how many are in the window (now-per, now], the oldest of them.
	expired  []string
	window   int64
	oldest   int64
	spentLen int
	newSpent []string
	// Claim cursor over pendZ and the jobs the verb added.
	cur      int
	added    []pendItem
	addedIDs []string        // every id the verb added (isAdded), the map once past laneLinear
	inAdded  map[string]bool // nil while addedIDs is scanned
	added1   [1]pendItem     // added's first backing array
	ids1     [2]string       // addedIDs' first backing array
	dirty    bool            // active or pass changed
	cfgDirt  bool            // settings changed (EMQ.LANE)
	// fv is flush's HSET of active and pass (the plan holds it until the
	// verb applies; the store copies or keeps the values, never the list).
	fv [4][]byte
}

// isAdded reports whether the verb put id into this lane's pending set.
func (ls *laneState) isAdded(id string) bool {
	if ls.inAdded != nil {
		return ls.inAdded[id]
	}
	for _, x := range ls.addedIDs {
		if x == id {
			return true
		}
	}
	return false
}

// add records it as put into the lane by the verb, once per id.
func (ls *laneState) add(it pendItem) {
	if ls.isAdded(it.id) {
		return
	}
	if ls.inAdded != nil {
		ls.inAdded[it.id] = true
	} else {
		if ls.addedIDs == nil {
			ls.addedIDs = ls.ids1[:0]
		}
		ls.addedIDs = append(ls.addedIDs, it.id)
		if len(ls.addedIDs) > laneLinear {
			ls.inAdded = make(map[string]bool, 2*len(ls.addedIDs))
			for _, x := range ls.addedIDs {
				ls.inAdded[x] = true
			}
		}
	}
	if ls.added == nil {
		ls.added = ls.added1[:0]
	}
	ls.added = append(ls.added, it)
}

// pendItem is a pending job of a lane: a member of its set, or one the
// verb added (key "" until the claim needs it).
type pendItem struct {
	id    string
	score float64
	row   jobRow
	key   string
}

// cfgBit is the bit of laneState.cfg for a settings field of the lane hash
// (0 for the state fields, active and pass).
func cfgBit(f string) uint8 {
	switch f {
	case "weight":
		return 1
	case "max_active":
		return 2
	case "rate_count":
		return 4
	case "rate_per_ms":
		return 8
	case "paused":
		return 16
	}
	return 0
}

func (ls *laneState) configured() bool {
	return ls.weight != 1 || ls.maxActive != 0 || ls.rateCount != 0 || ls.paused
}

func (ls *laneState) stride() int64 {
	w := ls.weight
	if w < 1 {
		w = 1
	}
	return laneStride1 / w
}

// full: at MAX_ACTIVE.
func (ls *laneState) full() bool { return ls.maxActive > 0 && ls.active >= ls.maxActive }

// limited: out of rate tokens at now.
func (ls *laneState) limited() bool {
	return ls.rateCount > 0 && ls.window >= ls.rateCount
}

// nextToken is when the next token arrives (valid when limited).
func (ls *laneState) nextToken() int64 {
	return addMs(ls.oldest, ls.ratePer)
}

// eligible: the selection may pick the lane now.
func (ls *laneState) eligible() bool {
	return ls.pend > 0 && !ls.paused && !ls.full() && !ls.limited()
}

// laneTx is the lane state of one queue within one verb.
type laneTx struct {
	d       *store.DB
	k       *Keys
	now     int64
	on      bool // the queue had lane state (emq:{q}:lanes:known) when read
	known   *store.ZSet
	lanesZ  *store.ZSet
	limZ    *store.ZSet
	vt      int64
	vtDirty bool
	lanes   map[string]*laneState // by name, once order outgrows laneLinear
	order   []*laneState
	plain   int64         // jobs added to the default lane while lanes were off
	turnOn  bool          // a lane was created: lanes go on
	woke    bool          // a lane entered the selection (wake claimers)
	zi      int           // the claim's cursor over lanesZ
	order1  [2]*laneState // order's first backing array (most verbs touch one or two lanes)
	// st holds the first lanes the verb loads (lane); it survives the
	// reset of a reused laneTx (readLanesInto), so the hot verbs' scratch
	// allocates it once, and each lane a verb loads costs no allocation
	// (TestLaneCycleAllocs).
	st  *[laneInline]laneState
	nst int
	// vtFV is flush's HSET of lane_vt (as laneState.fv).
	vtFV [2][]byte
}

// laneInline is how many lanes a laneTx holds without an allocation each;
// laneLinear how many it finds by a scan of order before it keeps a map.
const (
	laneInline = 2
	laneLinear = 8
)

// find is the lane name loaded by this verb, or nil.
func (lt *laneTx) find(name string) *laneState {
	if lt.lanes != nil {
		return lt.lanes[name]
	}
	for _, ls := range lt.order {
		if ls.name == name {
			return ls
		}
	}
	return nil
}

// newState is a zeroed laneState for the verb: one of st while they last.
func (lt *laneTx) newState() *laneState {
	if lt.nst < laneInline {
		if lt.st == nil {
			lt.st = new([laneInline]laneState)
		}
		ls := &lt.st[lt.nst]
		lt.nst++
		*ls = laneState{}
		return ls
	}
	return new(laneState)
}

// readLanes reads queue k's lane state at now (docs/verbs.md §4.26): the
// registry of lanes, the selection sets and the virtual time. The laneTx
// is a new one on the heap; the hot verbs use readLanesInto.
func readLanes(d *store.DB, k *Keys, now int64) (*laneTx, refusal) {
	return readLanesInto(nil, d, k, now)
}

// readLanesInto is readLanes into buf (nil: a new laneTx), which it
// overwrites and returns (nil with a refusal). EMQ.ENQUEUE, EMQ.CLAIM and
// the token verbs pass a laneTx of their own frame, so a queue without
// lanes, whose state is one key lookup (emq:{q}:lanes:known absent),
// costs its job cycle no allocation (bench/README.md, "Measured design
// decisions"; TestPlainCycleAllocs).
func readLanesInto(buf *laneTx, d *store.DB, k *Keys, now int64) (*laneTx, refusal) {
	lt := buf
	if lt == nil {
		lt = new(laneTx)
	}
	*lt = laneTx{d: d, k: k, now: now, st: lt.st}
	var kind keyKind
	if lt.known, kind = zsetKind(d, k.LanesKnown); kind == keyWrong {
		return nil, wrongType(k.LanesKnown)
	}
	lt.on = lt.known != nil
	if !lt.on {
		return lt, noRefusal
	}
	if lt.lanesZ, kind = zsetKind(d, k.Lanes); kind == keyWrong {
		return nil, wrongType(k.Lanes)
	}
	if lt.limZ, kind = zsetKind(d, k.LanesLimited); kind == keyWrong {
		return nil, wrongType(k.LanesLimited)
	}
	meta, mk := hashKind(d, k.Meta)
	if mk == keyWrong {
		return nil, wrongType(k.Meta)
	}
	if meta != nil {
		if v, ok := meta.Peek(fLaneVT); ok { // parsed here
			n, ok := num.ParseInt(v)
			if !ok {
				return nil, badRow(store.ErrHashNotInt, k.Meta)
			}
			lt.vt = n
		}
	}
	return lt, noRefusal
}

// lane loads lane name (once per verb).
func (lt *laneTx) lane(name string) (*laneState, refusal) {
	if ls := lt.find(name); ls != nil {
		return ls, noRefusal
	}
	k := lt.k
	ls := lt.newState()
	lk := k.laneKeys(name)
	ls.name, ls.hkey, ls.pkey, ls.skey, ls.weight = lk.name, lk.hkey, lk.pkey, lk.skey, 1
	if lt.known != nil {
		_, ls.known = lt.known.Score(name)
	}
	h, kind := hashKind(lt.d, ls.hkey)
	if kind == keyWrong {
		return nil, wrongType(ls.hkey)
	}
	if h != nil {
		ls.existed = true
		var bad bool
		h.Visit(func(f string, v []byte) bool { // parsed here, kept nowhere
			n, ok := num.ParseInt(v)
			switch f {
			case "weight", "max_active", "rate_count", "rate_per_ms", "paused", "active", "pass":
				if !ok {
					bad = true
					return false
				}
			default:
				return true
			}
			switch f {
			case "weight":
				ls.weight = min(max(n, 1), MaxLaneWeight)
			case "max_active":
				ls.maxActive = max(n, 0)
			case "rate_count":
				ls.rateCount = max(n, 0)
			case "rate_per_ms":
				ls.ratePer = max(n, 1)
			case "paused":
				ls.paused = n != 0
			case "active":
				ls.active = max(n, 0)
			case "pass":
				ls.pass = n
			}
			ls.cfg |= cfgBit(f)
			return true
		})
		if bad {
			return nil, badRow(ErrLaneHash, ls.hkey)
		}
		if ls.rateCount > 0 && ls.ratePer < 1 {
			ls.ratePer = 1
		}
	}
	z, zk := zsetKind(lt.d, ls.pkey)
	if zk == keyWrong {
		return nil, wrongType(ls.pkey)
	}
	ls.pendZ = z
	if z != nil {
		ls.pend = int64(z.Len())
	}
	if name == DefaultLane {
		ls.pend += lt.plain
	}
	if lt.lanesZ != nil {
		ls.lanesSc, ls.inLanes = lt.lanesZ.Score(name)
	}
	if lt.limZ != nil {
		ls.limSc, ls.inLimited = lt.limZ.Score(name)
	}
	sz, sk := zsetKind(lt.d, ls.skey)
	if sk == keyWrong {
		return nil, wrongType(ls.skey)
	}
	if sz != nil {
		ls.spentLen = sz.Len()
		edge := float64(lt.now)
		if ls.ratePer > 0 {
			edge = float64(lt.now - ls.ratePer)
		}
		if ls.rateCount == 0 {
			edge = math.Inf(1) // no rate: the whole log is garbage
		}
		sz.RangeByScore(store.NegInf, edge, func(it store.ZItem) bool {
			ls.expired = append(ls.expired, it.Member)
			return true
		})
		ls.window = int64(sz.Len() - len(ls.expired))
		if ls.window > 0 {
			it, _ := sz.At(len(ls.expired))
			ls.oldest = int64(it.Score)
		}
	}
	if lt.order == nil {
		lt.order = lt.order1[:0]
	}
	lt.order = append(lt.order, ls)
	if lt.lanes != nil {
		lt.lanes[ls.name] = ls
	} else if len(lt.order) > laneLinear {
		lt.lanes = make(map[string]*laneState, 2*len(lt.order))
		for _, o := range lt.order {
			lt.lanes[o.name] = o
		}
	}
	return ls, noRefusal
}

// intoPending is seam 1 (internal/verbs/pending.go) with lanes: it appends the
// write that puts id (row: its row; nil: a new row of the default lane
// without priority) into the pending set of its lane at its priority, and
// records the lane's change in lt (nil: lanes are not looked at, the
// tables' judgements). The caller judged the row with checkIntoPending.
func intoPendingLane(p *plan.Plan, k *Keys, lt *laneTx, id string, row *jobRow, prio int64) refusal {
	name := laneOf(row)
	if lt == nil || (!lt.on && !lt.turnOn && name == DefaultLane) {
		p.ZAdd(k.Pending, prio, id)
		if lt != nil {
			lt.plain++
		}
		return noRefusal
	}
	ls, ref := lt.lane(name)
	if ref.Refused() {
		return ref
	}
	if !ls.known && !lt.on {
		lt.turnOn = true
	}
	p.ZAdd(ls.pkey, prio, id)
	lt.joined(ls)
	ls.pend++
	it := pendItem{id: id, score: float64(prio)}
	if row != nil {
		it.row = *row
	}
	ls.add(it)
	return noRefusal
}

// joined: ls gets a job; when it had none it rejoins the selection at the
// current virtual time (docs/verbs.md §4.26.2): its pass is
// max(its pass, vt), so an idle lane neither hoards credit nor starves.
func (lt *laneTx) joined(ls *laneState) {
	if ls.pend == 0 && ls.pass < lt.vt {
		ls.pass = lt.vt
		ls.dirty = true
	}
	if !ls.existed {
		ls.dirty = true
	}
}

// leavesActive is seam 2: every exit from active (COMPLETE, FAIL, REQUEUE,
// DELAY, the sweep's recovery, restart exemption and dead-letter) calls it
// with the job's row as read. A row holding a lane slot (`lane_slot`)
// gives it back exactly once: HDEL lane_slot and the lane's active count
// down by one; the lane may re-enter the selection (flush).
func leavesActive(p *plan.Plan, lt *laneTx, rowKey string, row *jobRow, deleted bool) refusal {
	if row == nil || !row.LaneSlot || lt == nil {
		return noRefusal
	}
	ls, ref := lt.lane(laneOf(row))
	if ref.Refused() {
		return ref
	}
	if !deleted {
		hdel(p, rowKey, fvLaneSlot)
	}
	if ls.active > 0 {
		ls.active--
	}
	ls.dirty = true
	return noRefusal
}

// leavesPending records that a pending job leaves the pending set of lane
// name other than by a claim: EMQ.REMOVE and
// EMQ.REMOVE.ALL pending (docs/verbs.md §4.26.4). The lane's count goes
// down by one, so flush takes an emptied lane out of the selection (and
// deletes its keys when it is idle and not configured) in the same plan.
// The caller has written the ZREM. On a queue without lanes it records
// nothing (no lane state to keep). A refusal: the lane's state is
// unreadable (the verb writes nothing).
func leavesPending(lt *laneTx, name string) refusal {
	if lt == nil || !lt.on {
		return noRefusal
	}
	ls, ref := lt.lane(name)
	if ref.Refused() {
		return ref
	}
	ls.pend--
	return noRefusal
}

// checkLeavesActive judges the lane a slot goes back to.
func checkLeavesActive(lt *laneTx, row *jobRow) refusal {
	if row == nil || !row.LaneSlot || lt == nil {
		return noRefusal
	}
	_, ref := lt.lane(laneOf(row))
	return ref
}

// flush appends lt's writes to p (nil: a new plan when there are any) and
// returns the plan: for each lane touched, its state fields, its rate log,
// its place in the selection (emq:{q}:lanes at its pass, or
// emq:{q}:lanes:limited at its next token time, or neither), and the
// removal of every key of a lane that is empty, idle and not configured
// (docs/verbs.md §4.26.4).
func (lt *laneTx) flush(p *plan.Plan) *plan.Plan {
	if lt == nil {
		return p
	}
	if lt.turnOn && !lt.on {
		// Lanes go on: the default lane joins with the plain pending jobs.
		if ls, ref := lt.lane(DefaultLane); !ref.Refused() && ls.pend > 0 {
			ls.pass = max(ls.pass, lt.vt)
			ls.dirty = true
		}
	}
	if len(lt.order) == 0 && !lt.vtDirty {
		return p
	}
	get := func() *plan.Plan {
		if p == nil {
			p = newPlan(8)
		}
		return p
	}
	k := lt.k
	knownN := 0
	if lt.known != nil {
		knownN = lt.known.Len()
	}
	for _, ls := range lt.order {
		garbage := ls.pend <= 0 && ls.active == 0 && !ls.configured()
		if garbage {
			if ls.existed {
				get().Del(ls.hkey)
			}
			if ls.known {
				get().ZRem(k.LanesKnown, ls.name)
				knownN--
			}
			if ls.inLanes {
				get().ZRem(k.Lanes, ls.name)
			}
			if ls.inLimited {
				get().ZRem(k.LanesLimited, ls.name)
			}
			if ls.spentLen > 0 {
				get().Del(ls.skey)
			}
			if ls.pend < 0 && ls.pendZ != nil && ls.pendZ.Len() > 0 {
				// Ghost-only lanes were emptied by the verb's own ZREMs.
			}
			continue
		}
		// A lane missing from the registry is (re-)registered whether or
		// not its hash exists: a registry deleted by hand must not strand
		// the lane's jobs (docs/verbs.md §4.26.4).
		if !ls.known {
			get().ZAdd(k.LanesKnown, 0, ls.name)
			knownN++
			ls.dirty = true
		}
		if ls.cfgDirt {
			lt.writeSettings(get(), ls)
		}
		if ls.dirty {
			ls.fv = [4][]byte{fLaneAct, countBytes(ls.active), fLanePass, countBytes(ls.pass)}
			hset(get(), ls.hkey, ls.fv[:])
		}
		if ls.rateCount == 0 && ls.spentLen > 0 {
			get().Del(ls.skey)
		} else {
			for _, m := range ls.expired {
				get().ZRem(ls.skey, m)
			}
			for _, m := range ls.newSpent {
				get().ZAdd(ls.skey, lt.now, m)
			}
		}
		switch {
		case ls.eligible():
			if !ls.inLanes || ls.lanesSc != float64(ls.pass) {
				get().ZAdd(k.Lanes, ls.pass, ls.name)
			}
			if !ls.inLanes {
				lt.woke = true
			}
			if ls.inLimited {
				get().ZRem(k.LanesLimited, ls.name)
			}
		case ls.pend > 0 && !ls.paused && !ls.full() && ls.limited():
			if ls.inLanes {
				get().ZRem(k.Lanes, ls.name)
			}
			if t := ls.nextToken(); !ls.inLimited || ls.limSc != float64(t) {
				get().ZAdd(k.LanesLimited, t, ls.name)
				lt.woke = true // the blocking layer re-reads the earliest token time
			}
		default:
			if ls.inLanes {
				get().ZRem(k.Lanes, ls.name)
			}
			if ls.inLimited {
				get().ZRem(k.LanesLimited, ls.name)
			}
		}
	}
	if knownN <= 0 {
		if lt.on || lt.vtDirty {
			if meta, _ := hashKind(lt.d, k.Meta); meta != nil {
				if _, ok := meta.Peek(fLaneVT); ok {
					get().HDel(k.Meta, fLaneVT)
				}
			}
		}
	} else if lt.vtDirty {
		lt.vtFV = [2][]byte{bLaneVT, countBytes(lt.vt)}
		hset(get(), k.Meta, lt.vtFV[:])
	}
	return p
}

// writeSettings writes ls's settings: HSET the ones that differ from the
// defaults, HDEL the ones present that went back to them.
func (lt *laneTx) writeSettings(p *plan.Plan, ls *laneState) {
	type kv struct {
		f  string
		v  int64
		on bool
	}
	var set []string
	var del []string
	for _, x := range []kv{
		{"weight", ls.weight, ls.weight != 1},
		{"max_active", ls.maxActive, ls.maxActive != 0},
		{"rate_count", ls.rateCount, ls.rateCount != 0},
		{"rate_per_ms", ls.ratePer, ls.rateCount != 0},
		{"paused", 1, ls.paused},
	} {
		if x.on {
			set = append(set, x.f, strconv.FormatInt(x.v, 10))
		} else if ls.cfg&cfgBit(x.f) != 0 {
			del = append(del, x.f)
		}
	}
	if len(del) > 0 {
		p.HDel(ls.hkey, del...)
	}
	if len(set) > 0 {
		p.HSet(ls.hkey, set...)
	}
}

// ---------------------------------------------------------------------------
// The claim with lanes on (docs/verbs.md §4.26.2).

// pickLane is the eligible lane of lowest (pass, name): the first member of
// emq:{q}:lanes the verb has not touched, or a touched eligible lane
// (O(log lanes) for the set's member, plus the few lanes the verb
// touched).
func (lt *laneTx) pickLane() (*laneState, refusal) {
	var best *laneState
	for _, ls := range lt.order {
		if ls.eligible() && (best == nil || ls.pass < best.pass || (ls.pass == best.pass && ls.name < best.name)) {
			best = ls
		}
	}
	if lt.lanesZ != nil {
		for {
			it, ok := lt.lanesZ.At(lt.zi)
			if !ok {
				break
			}
			if lt.find(it.Member) != nil {
				lt.zi++
				continue
			}
			if best == nil || it.Score < float64(best.pass) || (it.Score == float64(best.pass) && it.Member < best.name) {
				ls, ref := lt.lane(it.Member)
				if ref.Refused() {
					return nil, ref
				}
				lt.zi++
				if !ls.eligible() {
					// Stale membership (a lane emptied by hand): flush
					// takes it out; look further.
					continue
				}
				return ls, noRefusal
			}
			break
		}
	}
	return best, noRefusal
}

// nextJob takes the next pending member of ls: the lower (score, id) of the
// set's next member and the verb's own additions.
func (ls *laneState) nextJob(d *store.DB, k *Keys) (pendItem, bool) {
	if len(ls.added) > 1 && ls.cur == 0 {
		sort.Slice(ls.added, func(i, j int) bool {
			a, b := ls.added[i], ls.added[j]
			if a.score != b.score {
				return a.score < b.score
			}
			return a.id < b.id
		})
	}
	var st pendItem
	haveSt := false
	if ls.pendZ != nil {
		for {
			it, ok := ls.pendZ.At(ls.cur)
			if !ok {
				break
			}
			if ls.isAdded(it.Member) {
				ls.cur++
				continue
			}
			st = pendItem{id: it.Member, score: it.Score}
			haveSt = true
			break
		}
	}
	if len(ls.added) > 0 {
		a := ls.added[0]
		if !haveSt || a.score < st.score || (a.score == st.score && a.id < st.id) {
			ls.added = ls.added[1:]
			ls.cur += 0
			return a, true
		}
	}
	if !haveSt {
		return pendItem{}, false
	}
	ls.cur++
	st.key = k.Row(st.id)
	st.row = readRow(d, st.key)
	return st, true
}

// lanesTurnedOn readies a claim whose promotion turned lanes on (the queue
// had no lanes when read) for the lane selection (docs/verbs.md §4.26.4):
// it loads the default lane with the jobs this call put into pending
// while lanes were still off, which the store does not hold yet: the
// promoted jobs of the default lane (due, at their priority) and the flow
// parents a finishing verb released (ov.Released, at their pending
// score). A refusal: the default lane's state is unreadable.
func (lt *laneTx) lanesTurnedOn(due []dueJob, ov *rowOverlay) refusal {
	ls, ref := lt.lane(DefaultLane)
	if ref.Refused() {
		return ref
	}
	add := func(id string, score float64, row jobRow) {
		ls.add(pendItem{id: id, score: score, row: row})
	}
	for i := range due {
		d := &due[i]
		if d.Row.Kind == keyOK && laneOf(&d.Row) == DefaultLane {
			prio, _ := rowPriority(&d.Row, "")
			add(d.ID, float64(prio), d.Row)
		}
	}
	if ov != nil {
		for _, it := range ov.Released {
			add(it.Member, it.Score, readRow(lt.d, lt.k.Row(it.Member)))
		}
	}
	if ls.pend > 0 && ls.pass < lt.vt {
		ls.pass = lt.vt
		ls.dirty = true
	}
	return noRefusal
}

// laneClaimed is one job the lane claim takes, with its lane.
type laneClaimed struct {
	claimedJob
	lane *laneState
}

// judgeClaimLanes is EMQ.CLAIM on a queue with lanes: count fair picks
// (docs/verbs.md §4.26.2). Each pick takes the eligible lane of lowest
// pass, hands out its best pending job (priority, then id), advances the
// lane's pass by its stride, takes a MAX_ACTIVE slot (lane_slot on the
// row) and a rate token. Ghosts met are removed and do not count.
func judgeClaimLanes(r *claimRead, now int64, runID []byte, a *claimArgs, p *plan.Plan, promoted []string) (claimVerdict, *plan.Plan, refusal) {
	k := a.K
	lt := r.Lanes
	var v claimVerdict
	v.Jobs = a.Jobs[:0]
	// Lanes whose next token came due re-enter the selection.
	if lt.limZ != nil {
		for i := 0; ; i++ {
			it, ok := lt.limZ.At(i)
			if !ok || it.Score > float64(now) {
				break
			}
			if _, ref := lt.lane(it.Member); ref.Refused() {
				return v, nil, ref
			}
		}
	}
	room := a.Room
	if room <= 0 {
		room = math.MaxInt64
	}
	size := arrayHeaderBytes(a.Count)
	var jobs1 [1]laneClaimed // the usual claim of one job, on the stack
	jobs := jobs1[:0]
	for int64(len(jobs)) < a.Count {
		ls, ref := lt.pickLane()
		if ref.Refused() {
			return claimVerdict{}, nil, ref
		}
		if ls == nil {
			break
		}
		c, ok := ls.nextJob(lt.d, k)
		if !ok {
			ls.pend = 0 // the set was emptier than counted (hand writes)
			continue
		}
		if r.Ov != nil && c.id == r.Ov.ID {
			c.row = r.Ov.Row
		}
		if c.key == "" {
			c.key = k.Row(c.id)
		}
		switch {
		case c.row.Kind == keyAbsent:
			p.ZRem(ls.pkey, c.id)
			ls.pend--
			continue
		case c.row.Kind == keyWrong:
			return claimVerdict{}, nil, wrongType(c.key)
		case c.row.Lane:
			return claimVerdict{}, nil, badRow(ErrLane, c.key)
		}
		tok, e := nextCount(c.row.Attempts, 1)
		if e != "" {
			return claimVerdict{}, nil, badRow(e, c.key)
		}
		var failures int64
		if c.row.Failures.Present {
			n, ok := num.ParseInt(c.row.Failures.Val)
			if !ok {
				return claimVerdict{}, nil, badRow(store.ErrHashNotInt, c.key)
			}
			failures = n
		}
		jb := claimedJob{ID: c.id, Key: c.key, Payload: c.row.Payload.Val, Token: tokenBytes(tok), Failures: failures}
		if n := jb.replyBytes(); n > room-size {
			if len(jobs) == 0 {
				return claimVerdict{}, nil, refuse(ErrReplyLimit)
			}
			break
		} else {
			size += n
		}
		jobs = append(jobs, laneClaimed{jb, ls})
		ls.pend--
		ls.active++
		if ls.pass > lt.vt {
			lt.vt = ls.pass
		}
		lt.vtDirty = true
		// Saturate (as computed times do, docs/verbs.md §2.12): a pass
		// written by hand near 2^63 must not wrap to the lowest pass and
		// win every pick.
		if st := ls.stride(); ls.pass > math.MaxInt64-st {
			ls.pass = math.MaxInt64
		} else {
			ls.pass += st
		}
		ls.dirty = true
		if ls.rateCount > 0 {
			if ls.window == 0 {
				ls.oldest = now
			}
			ls.window++
			ls.newSpent = append(ls.newSpent, c.id+":"+string(jb.Token))
		}
	}
	v.Promoted = len(promoted)
	v.Prom = promoted
	if len(promoted) > 0 {
		var taken map[string]bool // by a scan of jobs while they are few
		if len(jobs) > laneLinear {
			taken = make(map[string]bool, len(jobs))
			for _, j := range jobs {
				taken[j.ID] = true
			}
		}
		for _, id := range promoted {
			if !claimedAmong(jobs, taken, id) {
				v.Woken = append(v.Woken, id)
			}
		}
	}
	deadline := addMs(now, a.LeaseMs)
	var claimedAt []byte
	if len(jobs) > 0 {
		if claimedAt = a.NowB; claimedAt == nil {
			claimedAt = msBytes(now)
		}
	}
	for _, j := range jobs {
		p.ZRem(j.lane.pkey, j.ID)
		hincr1(p, j.Key, fvAttempts)
		p.HSetBytes(j.Key, fState, vActive, fLeaseEpoch, runID, fClaimedAt, claimedAt, fLaneSlot, vOne)
		p.ZAdd(k.Active, deadline, j.ID)
		v.Jobs = append(v.Jobs, j.claimedJob)
	}
	if len(p.Ops) == 0 {
		p = nil
	}
	return v, p, noRefusal
}

// claimedAmong reports whether id is one of jobs (taken: their ids, or nil
// to scan them).
func claimedAmong(jobs []laneClaimed, taken map[string]bool, id string) bool {
	if taken != nil {
		return taken[id]
	}
	for _, j := range jobs {
		if j.ID == id {
			return true
		}
	}
	return false
}

// nextTokenDue is the earliest time a rate-limited lane of k gets a token
// (false: none), for the blocking layer's wake-up (docs/verbs.md §4.26.3).
func nextTokenDue(d *store.DB, k *Keys) (int64, bool) {
	z, _ := zsetKind(d, k.LanesLimited)
	if z == nil {
		return 0, false
	}
	m, ok := z.Min()
	if !ok {
		return 0, false
	}
	return int64(math.Ceil(m.Score)), true
}

// lanesPending is the number of pending jobs of k's lanes other than the
// default one (EMQ.COUNTS adds it to pending).
func lanesPending(d *store.DB, k *Keys) int64 {
	known, _ := zsetKind(d, k.LanesKnown)
	if known == nil {
		return 0
	}
	var n int64
	known.AscendAll(func(it store.ZItem) bool {
		if it.Member != DefaultLane {
			if z, _ := zsetKind(d, k.LanePrefix+it.Member+":pending"); z != nil {
				n += int64(z.Len())
			}
		}
		return true
	})
	return n
}
