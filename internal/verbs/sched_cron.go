package verbs

import (
	"errors"
	"strings"
	"time"
	_ "time/tzdata" // zones from the IANA database on a host without zoneinfo (docs/verbs.md §4.22.2)

	"github.com/robfig/cron/v3"
)

// Cron specs of EMQ.SCHEDULE ... CRON (docs/verbs.md §4.22.2). The spec is
// parsed by robfig/cron/v3 (the parser River and Asynq use): 5 fields, 6
// with seconds first, and the descriptors (@yearly, @monthly, @weekly,
// @daily, @midnight, @hourly, @every <duration>). Its Next is used only on
// wall-clock times in UTC, where no day has a gap or a repeat: across a DST
// change it skips a local time that does not exist and fires a repeated
// one twice, while the rule here is once each. slotAfter maps the wall
// times back to instants of the zone itself.

var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// cronSched is a parsed spec in its zone.
type cronSched struct {
	spec  *cron.SpecSchedule // Location UTC: wall-clock arithmetic
	every int64              // @every: the period in ms (spec nil)
	loc   *time.Location
}

// errNoCronTime is returned when a spec has no time within robfig's search
// window (five years) of 1970-01-01 UTC, such as "0 0 30 2 *"
// (docs/verbs.md §4.22.1).
var errNoCronTime = errors.New("it has no time within five years")

// cronEvery is robfig's prefix of the @every descriptor.
const cronEvery = "@every "

// parseCron parses spec in zone tz ("" is UTC). Errors are texts for the
// client.
func parseCron(spec, tz string) (*cronSched, error) {
	if strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ=") {
		return nil, errors.New("give the zone with TZ, not inside the spec")
	}
	if err := checkCronSpec(spec); err != nil {
		return nil, err
	}
	s, err := cronParser.Parse(spec)
	if err != nil {
		// checkCronSpec refuses what robfig refuses
		// (TestCronCheckAgreesWithRobfig); its text is not the client's.
		return nil, errors.New("unsupported spec")
	}
	// robfig rounds an @every duration down to whole seconds and raises
	// one below 1s to 1s; the rule here (docs/verbs.md §4.22.2) is at
	// least 1s, kept to the millisecond.
	var everyMs int64
	if d, ok := strings.CutPrefix(spec, cronEvery); ok {
		dur, err := time.ParseDuration(d)
		if err != nil {
			return nil, errors.New("unsupported spec") // checked by checkCronSpec
		}
		if dur < time.Second {
			return nil, errors.New("@every must be at least 1s")
		}
		if dur%time.Millisecond != 0 {
			return nil, errors.New("@every must be a whole number of milliseconds")
		}
		everyMs = dur.Milliseconds()
	}
	cs := &cronSched{loc: time.UTC}
	if tz != "" {
		if tz == "Local" {
			return nil, errors.New("unknown time zone Local")
		}
		loc, err := time.LoadLocation(tz)
		if err != nil {
			return nil, errors.New("unknown time zone " + tz)
		}
		cs.loc = loc
	}
	switch x := s.(type) {
	case *cron.SpecSchedule:
		c := *x
		c.Location = time.UTC
		if c.Next(time.Unix(0, 0).UTC()).IsZero() {
			return nil, errNoCronTime
		}
		cs.spec = &c
	case cron.ConstantDelaySchedule:
		if everyMs == 0 {
			return nil, errors.New("@every must be at least 1s")
		}
		cs.every = everyMs
	default:
		return nil, errors.New("unsupported spec")
	}
	return cs, nil
}

// slotAfter is the first slot strictly after the instant prev (Unix ms);
// ok is false when the spec has no time within five years. The rules
// (docs/verbs.md §4.22.2): a matching local time that does not exist that
// day (a gap) fires once, at the first instant after the gap; a matching
// local time that occurs twice fires once, at its first occurrence.
func (cs *cronSched) slotAfter(prev int64) (int64, bool) {
	if cs.spec == nil {
		return addMs(prev, cs.every), true
	}
	p := time.UnixMilli(prev).In(cs.loc)
	w := wallOf(p)
	for range 100000 {
		w2 := cs.spec.Next(w)
		if w2.IsZero() {
			return 0, false
		}
		if at := firstInstant(w2, cs.loc); at > prev {
			return at, true
		}
		w = w2
	}
	return 0, false
}

// wallOf is t's local date and time as the same fields in UTC.
func wallOf(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}

// firstInstant is the first instant (Unix ms) whose local time in loc is
// the wall time w (given in UTC fields); for a wall time inside a gap, the
// first instant after the gap (the transition).
func firstInstant(w time.Time, loc *time.Location) int64 {
	u0 := w.Unix()
	_, oA := time.Unix(u0-86400, 0).In(loc).Zone()
	_, oB := time.Unix(u0+86400, 0).In(loc).Zone()
	best, found := int64(0), false
	for _, o := range [2]int{oA, oB} {
		u := u0 - int64(o)
		if _, off := time.Unix(u, 0).In(loc).Zone(); off == o && (!found || u < best) {
			best, found = u, true
		}
	}
	ms := int64(w.Nanosecond() / 1e6)
	if found {
		return best*1000 + ms
	}
	start, _ := time.Unix(u0-int64(oA), 0).In(loc).ZoneBounds()
	return start.UnixMilli()
}
