package verbs

import (
	"github.com/emqd/emqd/internal/num"
	"github.com/emqd/emqd/internal/store"
)

// ---------------------------------------------------------------------------
// EMQ.LANE q name [WEIGHT w] [MAX_ACTIVE n] [RATE count per_ms] [PAUSE | RESUME] [RESET]

var (
	errNonNegMaxActive = errNonNegative("max_active")
	errNonNegRateCount = errNonNegative("count")
	errPosRatePer      = errPositive("per_ms")
)

// laneArgs are EMQ.LANE's parsed options (has*: given).
type laneArgs struct {
	name               string
	reset              bool
	hasWeight, hasMax  bool
	hasRate, hasPause  bool
	weight, maxActive  int64
	rateCount, ratePer int64
	pause              bool
}

// cmdLane configures one lane of a queue (docs/verbs.md §4.26.1).
func (vs *Verbs) cmdLane(c *store.Ctx) {
	k := vs.queueArg(c)
	if k == nil {
		return
	}
	argv := c.Argv
	if !validLane(argv[2]) {
		c.W.Error(ErrLaneName)
		return
	}
	a := laneArgs{name: string(argv[2])}
	if len(argv) == 3 {
		c.W.Error(store.ErrSyntax)
		return
	}
	for i := 3; i < len(argv); {
		var e string
		switch w := argv[i]; {
		case eqFold(w, "RESET") && !a.reset:
			a.reset = true
			i++
			continue
		case (eqFold(w, "PAUSE") || eqFold(w, "RESUME")) && !a.hasPause:
			a.hasPause, a.pause = true, eqFold(w, "PAUSE")
			i++
			continue
		case eqFold(w, "WEIGHT") && !a.hasWeight && i+1 < len(argv):
			a.hasWeight = true
			n, ok := num.ParseInt(argv[i+1])
			switch {
			case !ok:
				e = store.ErrNotInteger
			case n < 1 || n > MaxLaneWeight:
				e = ErrLaneWeight
			}
			a.weight = n
			i += 2
		case eqFold(w, "MAX_ACTIVE") && !a.hasMax && i+1 < len(argv):
			a.hasMax = true
			a.maxActive, e = intArg(argv[i+1], 0, errNonNegMaxActive)
			i += 2
		case eqFold(w, "RATE") && !a.hasRate && i+2 < len(argv):
			a.hasRate = true
			if a.rateCount, e = intArg(argv[i+1], 0, errNonNegRateCount); e == "" {
				a.ratePer, e = intArg(argv[i+2], 1, errPosRatePer)
			}
			i += 3
		default:
			e = store.ErrSyntax
		}
		if e != "" {
			c.W.Error(e)
			return
		}
	}
	lt, ref := readLanes(c.DB, k, c.NowMs)
	if ref.Refused() {
		vs.refuseReply(c, ref)
		return
	}
	ls, ref := lt.lane(a.name)
	if ref.Refused() {
		vs.refuseReply(c, ref)
		return
	}
	before := [5]int64{ls.weight, ls.maxActive, ls.rateCount, ls.ratePer, b2i(ls.paused)}
	if a.reset {
		ls.weight, ls.maxActive, ls.rateCount, ls.ratePer, ls.paused = 1, 0, 0, 0, false
	}
	if a.hasWeight {
		ls.weight = a.weight
	}
	if a.hasMax {
		ls.maxActive = a.maxActive
	}
	if a.hasRate {
		ls.rateCount, ls.ratePer = a.rateCount, a.ratePer
		if a.rateCount == 0 {
			ls.ratePer = 0
		}
	}
	if a.hasPause {
		ls.paused = a.pause
	}
	if ls.rateCount == 0 {
		ls.ratePer = 0
	}
	after := [5]int64{ls.weight, ls.maxActive, ls.rateCount, ls.ratePer, b2i(ls.paused)}
	if before != after || (!ls.existed && ls.configured()) {
		ls.cfgDirt = true
		if !ls.known && !lt.on {
			lt.turnOn = true
		}
		if ls.pend > 0 && !ls.existed {
			lt.joined(ls)
		}
	}
	if ls.rateCount > 0 && ls.ratePer != before[3] {
		// A new window: the log is judged against it from now on.
		ls.recount(lt)
	}
	vs.flushApply(c, k, lt, nil)
	c.W.OK()
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// recount re-reads ls's rate log for a changed window length.
func (ls *laneState) recount(lt *laneTx) {
	sz, _ := zsetKind(lt.d, ls.skey)
	ls.expired, ls.window, ls.oldest = nil, 0, 0
	if sz == nil {
		return
	}
	edge := float64(lt.now - ls.ratePer)
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

// ---------------------------------------------------------------------------
// EMQ.LANES q [offset count]

// LaneView is one lane as EMQ.LANES, INFO and /metrics show it.
type LaneView struct {
	Name               string
	Pending, Active    int64
	Weight, MaxActive  int64
	RateCount, RatePer int64
	Paused             bool
	State              string // ready, limited, full, paused, idle
	// Pass is the lane's virtual time (docs/verbs.md §4.26.2): an integer,
	// at most 2^63-1 (it saturates), as the lane hash's `pass` field.
	Pass int64
}

// readLaneViews reads the lanes of ranks offset to offset+count-1 of
// emq:{q}:lanes:known, by name (count < 0: to the end). A refusal: the
// first bad lane of the page (a page that ends before it is served).
func readLaneViews(d *store.DB, k *Keys, now, offset, count int64) ([]LaneView, refusal) {
	lt, ref := readLanes(d, k, now)
	if ref.Refused() {
		return nil, ref
	}
	if !lt.on || offset >= int64(lt.known.Len()) {
		return nil, noRefusal
	}
	n := int64(lt.known.Len()) - offset
	if count >= 0 {
		n = min(n, count)
	}
	out := make([]LaneView, 0, n)
	var bad refusal
	first, _ := lt.known.At(int(offset))
	lt.known.Ascend(first, func(it store.ZItem) bool {
		if int64(len(out)) >= n {
			return false
		}
		ls, ref := lt.lane(it.Member)
		if ref.Refused() {
			bad = ref
			return false
		}
		v := LaneView{Name: ls.name, Pending: ls.pend, Active: ls.active, Weight: ls.weight,
			MaxActive: ls.maxActive, RateCount: ls.rateCount, RatePer: ls.ratePer, Paused: ls.paused,
			Pass: ls.pass}
		switch {
		case ls.pend == 0:
			v.State = "idle"
		case ls.paused:
			v.State = "paused"
		case ls.full():
			v.State = "full"
		case ls.limited():
			v.State = "limited"
		default:
			v.State = "ready"
		}
		out = append(out, v)
		return true
	})
	if bad.Refused() {
		return nil, bad
	}
	return out, noRefusal
}

// LanesMax is the largest count EMQ.LANES accepts, lanesDefault its count
// when none is given (docs/verbs.md §4.26.5: EMQ.LIST's bounds, §4.18).
const (
	LanesMax     = ListMax
	lanesDefault = listDefault
)

// cmdLanes lists one page of a queue's lanes (docs/verbs.md §4.26.5):
// EMQ.LANES q [offset count], the arguments and errors of EMQ.LIST's page
// (§4.18).
func (vs *Verbs) cmdLanes(c *store.Ctx) {
	k := vs.queueArg(c)
	if k == nil {
		return
	}
	argv := c.Argv
	offset, count := int64(0), int64(lanesDefault)
	switch len(argv) {
	case 2:
	case 4:
		var e string
		if offset, e = intArg(argv[2], 0, errNonNegOffset); e == "" {
			count, e = intArg(argv[3], 1, errPosCount)
		}
		if e == "" && count > LanesMax {
			e = ErrListCount
		}
		if e != "" {
			c.W.Error(e)
			return
		}
	default:
		c.W.Error(store.ErrSyntax)
		return
	}
	views, ref := readLaneViews(c.DB, k, c.NowMs, offset, count)
	if ref.Refused() {
		vs.refuseReply(c, ref)
		return
	}
	w := c.W
	w.Array(len(views))
	for _, v := range views {
		w.Map(10)
		w.BulkString("lane")
		w.BulkString(v.Name)
		w.BulkString("state")
		w.BulkString(v.State)
		w.BulkString("pending")
		w.Int(v.Pending)
		w.BulkString("active")
		w.Int(v.Active)
		w.BulkString("weight")
		w.Int(v.Weight)
		w.BulkString("max_active")
		w.Int(v.MaxActive)
		w.BulkString("rate_count")
		w.Int(v.RateCount)
		w.BulkString("rate_per_ms")
		w.Int(v.RatePer)
		w.BulkString("paused")
		w.Int(b2i(v.Paused))
		w.BulkString("pass")
		w.Int(v.Pass)
	}
}

// LaneCounts calls fn (when not nil) for each lane of queue k's registry
// (emq:{q}:lanes:known), by name, with its pending jobs and slots held, and
// returns the number of lanes: what INFO (emq_lanes, emq_lane_slots) and
// /metrics (emqd_lane_jobs) count (docs/verbs.md §4.26.5). It reads two
// keys per lane, its pending set and its hash's `active`, with Peek (no
// access time, no client-tracking read), and nothing of the selection or
// the rate log, so it costs a fraction of EMQ.LANES' page per lane.
// Counters never refuse: a key of another type, or an `active` that is not
// an integer, counts 0. The default lane's pending are emq:{q}:pending's.
func LaneCounts(d *store.DB, k *Keys, fn func(name string, pending, active int64)) int {
	v := d.Peek(k.LanesKnown)
	if v == nil || v.Kind != store.KindZSet {
		return 0
	}
	if fn == nil {
		return v.ZSet.Len()
	}
	v.ZSet.AscendAll(func(it store.ZItem) bool {
		var pending, active int64
		hkey := k.LanePrefix + it.Member
		pkey := k.Pending
		if it.Member != DefaultLane {
			pkey = hkey + ":pending"
		}
		if z := d.Peek(pkey); z != nil && z.Kind == store.KindZSet {
			pending = int64(z.ZSet.Len())
		}
		if h := d.Peek(hkey); h != nil && h.Kind == store.KindHash {
			if b, ok := h.Hash.Get("active"); ok {
				if n, ok := num.ParseInt(b); ok && n > 0 {
					active = n
				}
			}
		}
		fn(it.Member, pending, active)
		return true
	})
	return v.ZSet.Len()
}
