package check

import (
	"fmt"
	"sort"
)

// The schedules' checks (docs/verbs.md §4.22). An occurrence is a job
// the server enqueues itself, with an id derived from its schedule and
// slot (§4.22.3), so the checker finds every slot that fired from the ids
// the history and the final rows name, and judges:
//
//   - at most once: the schedule's count `fired` equals the distinct
//     slots seen (a slot decided twice is counted twice: over a retained
//     row it writes nothing, over a deleted one it enqueues the job again,
//     which the job checks report as a resurrection);
//   - every occurrence seen is on the schedule's series, at or before its
//     last fired slot, and its row names the schedule and the slot;
//   - no occurrence is lost: one seen has a row at the end, or a COMPLETE
//     or REMOVE was sent for it;
//   - exactly once where no fault intervened: every slot of the series up
//     to the last fired one fired, or was missed (the schedule's `missed`
//     counts it) only under CATCHUP one or none and only when a fault
//     that stops or jumps the server clock (kill, pause, clock, a full
//     disk, failing fsyncs) came near its due time (§4.22.5: a slot fired
//     1000 ms or more late is late); under CATCHUP all nothing is missed;
//   - the timer kept up: within 5 s after the run no slot is due.
//
// The checker pauses the schedules before it reads the rows back, so the
// rows and the counts read after them describe the same slots.

// faultsThatDelay are the faults that may make a slot late.
var faultsThatDelay = map[string]bool{"kill": true, "pause": true, "clock": true, "diskfull": true, "fsync": true}

// lateMargin widens a fault's span when excusing a missed slot: the
// timer may fire a slot up to 1 s before it counts as late, and a loaded
// machine delays the restart and the retry.
const lateMargin = 2500 * 1e6

// occurrenceOf decodes id as an occurrence of one of scheds: the number
// of the id (docs/verbs.md §1.4) is slot*2^20 + sid, with the slot on the
// schedule's series (anchor + k*every, k >= 1) and not past end (a minted
// id whose low bits happen to equal a sid is far from every series).
func occurrenceOf(id string, scheds []Sched, end int64) (int, int64, bool) {
	n, ok := idNumber(id)
	if !ok {
		return 0, 0, false
	}
	sid, slot := int64(n&(1<<20-1)), int64(n>>20)
	for i, s := range scheds {
		if s.Sid == sid && s.EveryMs > 0 && slot > s.AnchorMs && slot <= end+s.EveryMs && (slot-s.AnchorMs)%s.EveryMs == 0 {
			return i, (slot - s.AnchorMs) / s.EveryMs, true
		}
	}
	return 0, 0, false
}

// idNumber is the number a job id encodes: JOB and 11 base-62 digits in
// ASCII order (docs/verbs.md §1.4).
func idNumber(id string) (uint64, bool) {
	if len(id) != 14 || id[:3] != "JOB" {
		return 0, false
	}
	var n uint64
	for i := 3; i < 14; i++ {
		c := id[i]
		var d uint64
		switch {
		case c >= '0' && c <= '9':
			d = uint64(c - '0')
		case c >= 'A' && c <= 'Z':
			d = uint64(c-'A') + 10
		case c >= 'a' && c <= 'z':
			d = uint64(c-'a') + 36
		default:
			return 0, false
		}
		n = n*62 + d
	}
	return n, true
}

// dueAt is when the server clock first reached ms, in ns since the start
// of the run, by the clock samples (the server clock runs at the
// checker's rate between samples; a jump or a restart starts a new
// segment). -1: never within the samples.
func dueAt(clock []ClockSample, ms int64) int64 {
	for i, c := range clock {
		if c.Ms >= ms {
			return c.At
		}
		t := c.At + (ms-c.Ms)*1e6
		if i+1 == len(clock) || t < clock[i+1].At {
			return t
		}
	}
	return -1
}

// schedChecks runs the checks above; it returns the violations and the
// slots judged, the occurrences seen and the slots the schedules counted
// as missed.
func schedChecks(h *History, jobs map[string]*jobOps) (out []Violation, slots, seenN, missedN int) {
	if len(h.Schedules) == 0 {
		return nil, 0, 0, 0
	}
	seen := make([]map[int64]string, len(h.Schedules))
	for i := range seen {
		seen[i] = map[int64]string{}
	}
	ids := make([]string, 0, len(jobs))
	for id := range jobs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		i, k, ok := occurrenceOf(id, h.Schedules, h.EndMs)
		if !ok {
			continue
		}
		s := h.Schedules[i]
		seen[i][k] = id
		slot := s.AnchorMs + k*s.EveryMs
		if s.LastSlotMs == 0 || slot > s.LastSlotMs {
			out = append(out, Violation{Kind: VSchedule, ID: id, Detail: fmt.Sprintf("schedule %s: an occurrence of slot %d, after the last slot the schedule fired (%d)", s.Name, slot, s.LastSlotMs)})
		}
		row, present := h.Final[id]
		if present && (row.Schedule != s.Name || row.SlotMs != slot) {
			out = append(out, Violation{Kind: VSchedule, ID: id, Detail: fmt.Sprintf("schedule %s slot %d: the row names schedule %q slot %d", s.Name, slot, row.Schedule, row.SlotMs)})
		}
		if !present {
			ended := false
			for _, o := range jobs[id].verbs {
				ended = ended || ((o.Kind == Complete || o.Kind == Remove) && o.Status != Refused)
			}
			if !ended {
				v := Violation{Kind: VLost, ID: id, Detail: fmt.Sprintf("occurrence of schedule %s slot %d has no row at the end and no COMPLETE or REMOVE was sent", s.Name, slot)}
				for _, o := range jobs[id].related {
					v.Ops = append(v.Ops, *o)
				}
				out = append(out, v)
			}
		}
	}
	for i, s := range h.Schedules {
		var last int64
		if s.LastSlotMs > s.AnchorMs {
			last = (s.LastSlotMs - s.AnchorMs) / s.EveryMs
		}
		slots += int(last)
		seenN += len(seen[i])
		missedN += int(s.Missed)
		bad := func(format string, args ...any) {
			out = append(out, Violation{Kind: VSchedule, ID: "schedule " + s.Name, Detail: fmt.Sprintf(format, args...)})
		}
		if s.State != "paused" {
			bad("state %q after the run, want paused (the checker paused it)", s.State)
		}
		if s.Fired != int64(len(seen[i])) {
			bad("fired %d slots by its count, %d distinct occurrences seen (a slot decided twice, or an occurrence lost)", s.Fired, len(seen[i]))
		}
		if s.Skipped != 0 {
			bad("skipped %d slots under OVERLAP allow", s.Skipped)
		}
		var missing []int64
		for k := int64(1); k <= last; k++ {
			if _, ok := seen[i][k]; !ok {
				missing = append(missing, k)
			}
		}
		if int64(len(missing)) != s.Missed {
			bad("%d of its %d slots never fired, its count of missed slots says %d", len(missing), last, s.Missed)
		}
		for _, k := range missing {
			slot := s.AnchorMs + k*s.EveryMs
			if s.Catchup == "all" {
				bad("slot %d never fired under CATCHUP all", slot)
				continue
			}
			due := dueAt(h.Clock, slot)
			excused := false
			for _, f := range h.Faults {
				excused = excused || (faultsThatDelay[f.Kind] && due >= f.At-lateMargin && due <= max(f.End, f.At)+lateMargin)
			}
			if !excused {
				bad("slot %d (due %.3fs) missed under CATCHUP %s with no fault near it", slot, float64(due)/1e9, s.Catchup)
			}
		}
		if !s.CaughtUp {
			bad("a slot still due 5 s after the run (next %d): the timer fell behind", s.NextMs)
		}
	}
	return out, slots, seenN, missedN
}
