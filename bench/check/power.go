package check

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// PowerBound is how old an acknowledged write may be and still be lost to
// a power cut under appendfsync everysec: the policy's 1 s between two
// fsyncs, plus 1 s of slack for the fsync that covers the write to run and
// answer (on the loaded shared machine of the tests, the once-a-second
// timer and the fsync itself are late by hundreds of milliseconds). A
// write acknowledged at t was written before its reply; the first fsync to
// begin after t begins by t+1 s and covers it, so only a cut before that
// fsync answers loses it (docs/durability.md §2.3, bench/README.md "A power
// cut under everysec"). The age is measured from the reply the client
// received, later than the write: never larger than the true age.
const PowerBound = 2 * time.Second

// VLostBeyond: an acknowledged enqueue lost to a power cut under everysec,
// acknowledged longer than PowerBound before the cut.
const VLostBeyond = "lost-beyond-window"

// CutLoss is one power cut of an everysec run and what it lost inside the
// window.
type CutLoss struct {
	At   int64 // ns since the start: the SIGKILL and the drop of the unsynced bytes
	Lost int   // acknowledged enqueues lost (no row at the end, no REMOVE sent)
	// Window is the time between the earliest lost acknowledgement's reply
	// and the cut (0: the cut lost nothing acknowledged).
	Window time.Duration
}

// powerCuts lists the run's power cuts by time.
func powerCuts(h *History) []int64 {
	var cuts []int64
	for _, f := range h.Faults {
		if f.Kind == "power" && !strings.Contains(f.Note, "failed") {
			cuts = append(cuts, f.At)
		}
	}
	sort.Slice(cuts, func(a, b int) bool { return cuts[a] < cuts[b] })
	return cuts
}

// powerFilter applies the everysec window to the violations Check found.
// Under appendfsync always (or without a power cut) it changes nothing: a
// cut there must lose nothing acknowledged, and every property holds.
//
// Under everysec a cut may undo any operation acknowledged within
// PowerBound before it, so the history of a job such an operation touched
// is no longer one the model can replay (a COMPLETE undone brings the job
// back, a claim undone hands its token out again). For such a job:
//   - an acknowledged enqueue with no row at the end and no REMOVE sent
//     (under retention, a COMPLETE keeps the row) is a loss: inside the
//     window of the first cut after its call (its reply may arrive
//     after the process died), it is counted in that
//     cut's CutLoss; older than PowerBound, it is a violation
//     (VLostBeyond);
//   - its other violations are not judged (counted in rolled).
//
// A job no operation inside a window touched is judged in full; so are
// the properties that name no job (lanes, schedules).
func powerFilter(h *History, vs []Violation) (kept []Violation, cuts []CutLoss, rolled int) {
	at := powerCuts(h)
	if len(at) == 0 {
		return vs, nil, 0
	}
	if h.Fsync != "everysec" {
		for _, c := range at {
			cuts = append(cuts, CutLoss{At: c})
		}
		return vs, cuts, 0
	}
	bound := int64(PowerBound)
	cuts = make([]CutLoss, len(at))
	for i, c := range at {
		cuts[i].At = c
	}
	// firstCut: the index of the first cut at or after t (-1: none).
	firstCut := func(t int64) int {
		i := sort.Search(len(at), func(i int) bool { return at[i] >= t })
		if i == len(at) {
			return -1
		}
		return i
	}
	jobs, _, _ := index(h)
	touched := map[string]bool{}
	extra := []Violation{}
	for id, j := range jobs {
		for _, o := range j.related {
			if o.Status != OK {
				continue
			}
			if i := firstCut(o.Call); i >= 0 && at[i]-o.Return <= bound {
				touched[id] = true
				break
			}
		}
		if j.enq == nil {
			continue
		}
		if _, present := h.Final[id]; present {
			continue
		}
		var removed, completed bool
		for _, o := range j.verbs {
			if o.Kind == Remove && (o.Status == Unknown || o.Status == OK && o.Removed == 1) {
				removed = true
			}
			if o.Kind == Complete && o.Status != Refused {
				completed = true
			}
		}
		if removed || completed && !h.Retain {
			continue // gone by a verb that may have run
		}
		// The first cut after the call: the old process may have
		// written the reply to the socket just before it died, so the
		// client can read it (Return) after the cut's recorded time
		// (the final .ci/run: an enqueue answered at 6.096-6.097 s,
		// the cut recorded at 6.096 s, was reported lost outside every
		// window). Such an enqueue's age is 0.
		i := firstCut(j.enq.Call)
		if i < 0 {
			continue // no cut after it: Check's own violation stands
		}
		age := max(at[i]-j.enq.Return, 0)
		if age > bound {
			touched[id] = true // its other violations follow from the loss
			extra = append(extra, Violation{Kind: VLostBeyond, ID: id,
				Detail: fmt.Sprintf("acknowledged %v before the power cut at %.3fs, beyond the everysec bound of %v, and no row at the end", time.Duration(age).Round(time.Millisecond), float64(at[i])/1e9, PowerBound),
				Ops:    []Op{*j.enq}})
			continue
		}
		cuts[i].Lost++
		if d := time.Duration(age); d > cuts[i].Window {
			cuts[i].Window = d
		}
	}
	for _, v := range vs {
		if touched[v.ID] {
			continue
		}
		kept = append(kept, v)
	}
	for id := range touched {
		if !lostIn(extra, id) {
			rolled++
		}
	}
	kept = append(kept, extra...)
	sort.SliceStable(kept, func(a, b int) bool { return kept[a].ID < kept[b].ID })
	return kept, cuts, rolled
}

func lostIn(vs []Violation, id string) bool {
	for _, v := range vs {
		if v.ID == id {
			return true
		}
	}
	return false
}

// MaxWindow is the largest window of the cuts (0: none lost anything).
func MaxWindow(cuts []CutLoss) time.Duration {
	var m time.Duration
	for _, c := range cuts {
		m = max(m, c.Window)
	}
	return m
}

func powerSummary(cuts []CutLoss, rolled int) string {
	if len(cuts) == 0 {
		return ""
	}
	var b strings.Builder
	lost := 0
	fmt.Fprintf(&b, ", power cuts %d:", len(cuts))
	for _, c := range cuts {
		lost += c.Lost
		fmt.Fprintf(&b, " [%.1fs: %d acknowledged enqueues lost, window %v]", float64(c.At)/1e9, c.Lost, c.Window.Round(time.Millisecond))
	}
	fmt.Fprintf(&b, " (%d lost, max window %v, %d jobs touched inside a window not judged)", lost, MaxWindow(cuts).Round(time.Millisecond), rolled)
	return b.String()
}
