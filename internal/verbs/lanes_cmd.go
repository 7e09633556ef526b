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

// LaneArgs are EMQ.LANE's arguments (docs/verbs.md §4.26.1): Queue (valid)
// and Name (a valid lane name), then the options, at least one (the wire
// answers a bare EMQ.LANE q name with a syntax error): Reset (the lane's
// defaults first), Weight (1..MaxLaneWeight; 0: left out), MaxActive (>=
// 0, with HasMaxActive: 0 is a value, no limit), RateCount (>= 0) and
// RatePerMs (>= 1) with HasRate (RateCount 0: no rate limit), and Pause or
// Resume (at most one).
type LaneArgs struct {
	Queue, Name          string
	Reset                bool
	Weight               int64
	HasMaxActive         bool
	MaxActive            int64
	HasRate              bool
	RateCount, RatePerMs int64
	Pause, Resume        bool
}

// Argv is EMQ.LANE q name with the options given, in the order RESET,
// WEIGHT, MAX_ACTIVE, RATE, PAUSE or RESUME (the command takes them in any
// order; RESET applies first wherever it stands).
func (a *LaneArgs) Argv() [][]byte {
	argv := argvOf("EMQ.LANE", a.Queue, a.Name)
	if a.Reset {
		argv = append(argv, []byte("RESET"))
	}
	if a.Weight != 0 {
		argv = append(argv, []byte("WEIGHT"), []byte(itoa(a.Weight)))
	}
	if a.HasMaxActive {
		argv = append(argv, []byte("MAX_ACTIVE"), []byte(itoa(a.MaxActive)))
	}
	if a.HasRate {
		argv = append(argv, []byte("RATE"), []byte(itoa(a.RateCount)), []byte(itoa(a.RatePerMs)))
	}
	switch {
	case a.Pause:
		argv = append(argv, []byte("PAUSE"))
	case a.Resume:
		argv = append(argv, []byte("RESUME"))
	}
	return argv
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
	a := LaneArgs{Queue: k.Queue, Name: string(argv[2])}
	if len(argv) == 3 {
		c.W.Error(store.ErrSyntax)
		return
	}
	hasWeight := false
	for i := 3; i < len(argv); {
		var e string
		switch w := argv[i]; {
		case eqFold(w, "RESET") && !a.Reset:
			a.Reset = true
			i++
			continue
		case (eqFold(w, "PAUSE") || eqFold(w, "RESUME")) && !a.Pause && !a.Resume:
			a.Pause, a.Resume = eqFold(w, "PAUSE"), eqFold(w, "RESUME")
			i++
			continue
		case eqFold(w, "WEIGHT") && !hasWeight && i+1 < len(argv):
			hasWeight = true
			n, ok := num.ParseInt(argv[i+1])
			switch {
			case !ok:
				e = store.ErrNotInteger
			case n < 1 || n > MaxLaneWeight:
				e = ErrLaneWeight
			}
			a.Weight = n
			i += 2
		case eqFold(w, "MAX_ACTIVE") && !a.HasMaxActive && i+1 < len(argv):
			a.HasMaxActive = true
			a.MaxActive, e = intArg(argv[i+1], 0, errNonNegMaxActive)
			i += 2
		case eqFold(w, "RATE") && !a.HasRate && i+2 < len(argv):
			a.HasRate = true
			if a.RateCount, e = intArg(argv[i+1], 0, errNonNegRateCount); e == "" {
				a.RatePerMs, e = intArg(argv[i+2], 1, errPosRatePer)
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
	if err := vs.Lane(c, &a); err != nil {
		replyRefusal(c, err)
		return
	}
	c.W.OK()
}

// Lane is EMQ.LANE (docs/verbs.md §4.26.1): it sets lane a.Name of
// a.Queue's options, registering the lane (and turning lanes on for the
// queue) when it becomes configured. A lanes key, or the lane's hash,
// pending set or rate log, of the wrong type (or a lane field that is not
// an integer) refuses.
func (vs *Verbs) Lane(c *store.Ctx, a *LaneArgs) error {
	k := vs.keysOf(a.Queue)
	lt, ref := readLanes(c.DB, k, c.NowMs)
	if ref.Refused() {
		return vs.refused(c, ref)
	}
	ls, ref := lt.lane(a.Name)
	if ref.Refused() {
		return vs.refused(c, ref)
	}
	before := [5]int64{ls.weight, ls.maxActive, ls.rateCount, ls.ratePer, b2i(ls.paused)}
	if a.Reset {
		ls.weight, ls.maxActive, ls.rateCount, ls.ratePer, ls.paused = 1, 0, 0, 0, false
	}
	if a.Weight != 0 {
		ls.weight = a.Weight
	}
	if a.HasMaxActive {
		ls.maxActive = a.MaxActive
	}
	if a.HasRate {
		ls.rateCount, ls.ratePer = a.RateCount, a.RatePerMs
		if a.RateCount == 0 {
			ls.ratePer = 0
		}
	}
	if a.Pause || a.Resume {
		ls.paused = a.Pause
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
	return nil
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

// LanesMax is the largest count EMQ.LANES accepts; its default count is
// EMQ.LIST's (pageCount) (docs/verbs.md §4.26.5: EMQ.LIST's bounds, §4.18).
const LanesMax = ListMax

// LanesArgs are EMQ.LANES' arguments (docs/verbs.md §4.26.5): Queue
// (valid), Offset (>= 0) and Count (1..LanesMax; 0: the default, 100).
type LanesArgs struct {
	Queue         string
	Offset, Count int64
}

// Argv is EMQ.LANES q, with offset and count when either is set.
func (a *LanesArgs) Argv() [][]byte {
	argv := argvOf("EMQ.LANES", a.Queue)
	return appendPage(argv, a.Offset, a.Count)
}

// Lanes is EMQ.LANES (docs/verbs.md §4.26.5): the lanes of ranks Offset
// to Offset+Count-1 of the queue's registry, by name; none when lanes are
// off for the queue. A lanes key of the wrong type, or a bad lane of the
// page, refuses (the first met).
func (vs *Verbs) Lanes(c *store.Ctx, a *LanesArgs) ([]LaneView, error) {
	count := pageCount(a.Count)
	views, ref := readLaneViews(c.DB, vs.keysOf(a.Queue), c.NowMs, a.Offset, count)
	if ref.Refused() {
		return nil, vs.refused(c, ref)
	}
	return views, nil
}

// cmdLanes lists one page of a queue's lanes (docs/verbs.md §4.26.5):
// EMQ.LANES q [offset count], the arguments and errors of EMQ.LIST's page
// (§4.18).
func (vs *Verbs) cmdLanes(c *store.Ctx) {
	k := vs.queueArg(c)
	if k == nil {
		return
	}
	argv := c.Argv
	a := LanesArgs{Queue: k.Queue}
	switch len(argv) {
	case 2:
	case 4:
		var e string
		if a.Offset, e = intArg(argv[2], 0, errNonNegOffset); e == "" {
			a.Count, e = intArg(argv[3], 1, errPosCount)
		}
		if e == "" && a.Count > LanesMax {
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
	views, err := vs.Lanes(c, &a)
	if err != nil {
		replyRefusal(c, err)
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
			if b, ok := h.Hash().Get("active"); ok {
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
