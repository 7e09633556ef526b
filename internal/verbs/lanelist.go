package verbs

import (
	"github.com/emqd/emqd/internal/store"
)

// The pending jobs of every lane as one listing (docs/verbs.md §4.26.6):
// EMQ.LIST q pending and EMQ.REMOVE.ALL q pending walk the default lane's
// set (emq:{q}:pending) first, then the pending set of each other lane of
// emq:{q}:lanes:known in the registry's rank order (by name, EMQ.LANES'
// order). An offset is a rank in that concatenation, so paging is exact
// across lanes; `LANE name` narrows the walk to one lane's set.

// ErrLaneState is the refusal of LANE with a state other than pending
// (docs/verbs.md §4.26.6).
const ErrLaneState = "ERR LANE applies to state pending only"

// pendingSet is one set of the walk: its key and its lane.
type pendingSet struct {
	key  string
	lane string
}

// walkPending calls f with each set a pending listing of queue k walks,
// in order (docs/verbs.md §4.26.6), until f answers false: lane "" is
// every lane (the default lane's set, then each other lane of
// lanes:known, which must be a sorted set, by rank), a lane name that
// lane's set only (DefaultLane: emq:{q}:pending). The sets themselves are
// not read here: f type-checks each one it reaches. Nothing is built for
// the lanes after the one f stops at.
func walkPending(d *store.DB, k *Keys, lane string, f func(s pendingSet) bool) refusal {
	switch lane {
	case "":
	case DefaultLane:
		f(pendingSet{key: k.Pending, lane: DefaultLane})
		return noRefusal
	default:
		f(pendingSet{key: k.LanePrefix + lane + ":pending", lane: lane})
		return noRefusal
	}
	known, kind := zsetKind(d, k.LanesKnown)
	if kind == keyWrong {
		return wrongType(k.LanesKnown)
	}
	if !f(pendingSet{key: k.Pending, lane: DefaultLane}) || known == nil {
		return noRefusal
	}
	known.AscendAll(func(it store.ZItem) bool {
		if it.Member == DefaultLane {
			return true
		}
		return f(pendingSet{key: k.LanePrefix + it.Member + ":pending", lane: it.Member})
	})
	return noRefusal
}

// laneOption judges a LANE option's value for a verb of state (docs/verbs.md
// §4.26.6): LANE only with state pending (any case), a valid lane name.
// It returns the error text or "".
func laneOption(state, lane []byte) string {
	if !eqFold(state, "PENDING") {
		return ErrLaneState
	}
	if !validLane(lane) {
		return ErrLaneName
	}
	return ""
}

// checkLaneArg is laneOption for a typed call: Lane "" is no option.
func checkLaneArg(state, lane string) error {
	if lane == "" {
		return nil
	}
	if e := laneOption([]byte(state), []byte(lane)); e != "" {
		return &Refusal{Text: e}
	}
	return nil
}

// laneArgv appends LANE name to argv when lane is set.
func laneArgv(argv [][]byte, lane string) [][]byte {
	if lane == "" {
		return argv
	}
	return append(argv, []byte("LANE"), []byte(lane))
}
