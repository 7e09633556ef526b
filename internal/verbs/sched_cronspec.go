package verbs

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// checkCronSpec refuses, in emqd's words, every spec robfig/cron/v3's
// parser (configured as cronParser) refuses, before robfig sees it: its
// own texts carry Go's strconv errors ("failed to parse int from L:
// strconv.Atoi: parsing "L": invalid syntax"). The grammar is robfig's,
// accepted and refused alike (TestCronCheckAgreesWithRobfig); the texts
// name the field and what it allows (docs/verbs.md §4.22.2). A nil error
// means robfig accepts the spec's syntax; whether it has a time is
// checked after.
func checkCronSpec(spec string) error {
	if spec == "" {
		return errors.New("the spec is empty")
	}
	if strings.HasPrefix(spec, "@") {
		return checkCronDescriptor(spec)
	}
	parts := strings.Fields(spec)
	if len(parts) != 5 && len(parts) != 6 {
		return fmt.Errorf("expected 5 fields (minute hour day-of-month month day-of-week) or 6 (second first), found %d", len(parts))
	}
	fields := cronFields[6-len(parts):]
	for i, p := range parts {
		if err := fields[i].check(p); err != nil {
			return err
		}
	}
	return nil
}

// cronDescriptors are the descriptors robfig accepts, spelled exactly.
var cronDescriptors = []string{"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}

func checkCronDescriptor(spec string) error {
	for _, d := range cronDescriptors {
		if spec == d {
			return nil
		}
	}
	if d, ok := strings.CutPrefix(spec, cronEvery); ok {
		if _, err := time.ParseDuration(d); err != nil {
			return fmt.Errorf("@every needs a duration such as 90s, 5m or 1h30m, not %q", d)
		}
		return nil
	}
	return fmt.Errorf("unknown descriptor %q (allowed: %s and @every <duration>)", spec, strings.Join(cronDescriptors, ", "))
}

// cronField is one field of a spec: its name in the texts, its bounds and
// names (robfig's), and what a text says it allows.
type cronField struct {
	name     string
	min, max int
	names    map[string]int
	allowed  string
}

// cronSyntax is the part of every field's "allowed" text that is the same.
const cronSyntax = "*, ?, ranges a-b, lists a,b and steps /n"

var (
	cronMonths = map[string]int{"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
		"jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12}
	cronDays = map[string]int{"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}
	// cronFields: a 6-field spec has them all, a 5-field spec the last five.
	cronFields = []cronField{
		{"second", 0, 59, nil, "0-59, " + cronSyntax},
		{"minute", 0, 59, nil, "0-59, " + cronSyntax},
		{"hour", 0, 23, nil, "0-23, " + cronSyntax},
		{"day-of-month", 1, 31, nil, "1-31, " + cronSyntax},
		{"month", 1, 12, cronMonths, "1-12 or jan-dec, " + cronSyntax},
		{"day-of-week", 0, 6, cronDays, "0-6 (0 is Sunday) or sun-sat, " + cronSyntax},
	}
	// cronQuartz matches the Quartz extensions a user may try: L (last),
	// W (nearest weekday), # (nth weekday of the month), alone or after a
	// number or day name.
	cronQuartz = regexp.MustCompile(`(?i)^([0-9]*|[a-z]{3})(L|W|LW|#[0-9]*)$`)
)

func (f *cronField) errf(part, format string, args ...any) error {
	return fmt.Errorf("%s field %q: %s (allowed: %s)", f.name, part, fmt.Sprintf(format, args...), f.allowed)
}

// check checks one field: a comma-separated list (empty items dropped,
// as robfig does) of ranges.
func (f *cronField) check(part string) error {
	for _, r := range strings.FieldsFunc(part, func(c rune) bool { return c == ',' }) {
		if err := f.checkRange(part, r); err != nil {
			return err
		}
	}
	return nil
}

// checkRange checks one range, robfig's getRange: (* | ? | v | v-v) with
// an optional /step, where v is a number or a name; "v/step" runs from v
// to the maximum, and after * or ? robfig ignores any "-...".
func (f *cronField) checkRange(part, r string) error {
	rangeAndStep := strings.Split(r, "/")
	if len(rangeAndStep) > 2 {
		return f.errf(part, `more than one "/" in %q`, r)
	}
	lowHigh := strings.Split(rangeAndStep[0], "-")
	start, end := f.min, f.max
	if lowHigh[0] != "*" && lowHigh[0] != "?" {
		if len(lowHigh) > 2 {
			return f.errf(part, `more than one "-" in %q`, r)
		}
		var err error
		if start, err = f.value(part, lowHigh[0]); err != nil {
			return err
		}
		end = start
		if len(lowHigh) == 2 {
			if end, err = f.value(part, lowHigh[1]); err != nil {
				return err
			}
		}
	}
	if len(rangeAndStep) == 2 {
		step, err := strconv.Atoi(rangeAndStep[1])
		switch {
		case errors.Is(err, strconv.ErrRange) && !strings.HasPrefix(rangeAndStep[1], "-"):
			return f.errf(part, "the step %s is too large", rangeAndStep[1])
		case err != nil || step <= 0:
			return f.errf(part, "the step must be a positive integer, not %q", rangeAndStep[1])
		}
		if len(lowHigh) == 1 {
			end = f.max
		}
	}
	if start > end {
		return f.errf(part, "the range %s runs backwards", rangeAndStep[0])
	}
	return nil
}

// value parses one value: a name of the field (any case), or a number
// (strconv.Atoi's syntax, as robfig's) within the bounds.
func (f *cronField) value(part, v string) (int, error) {
	if n, ok := f.names[strings.ToLower(v)]; ok {
		return n, nil
	}
	n, err := strconv.Atoi(v)
	switch {
	case errors.Is(err, strconv.ErrRange) && !strings.HasPrefix(v, "-"):
		return 0, f.errf(part, "%s is above the maximum, %d", v, f.max)
	case err != nil && cronQuartz.MatchString(v) && v != "":
		return 0, f.errf(part, "L, W and # (Quartz's last, weekday and nth) are not supported")
	case err != nil && v == "":
		return 0, f.errf(part, "a value is missing")
	case err != nil && f.names != nil:
		return 0, f.errf(part, "%q is not a number or a name", v)
	case err != nil:
		return 0, f.errf(part, "%q is not a number", v)
	case n < f.min:
		return 0, f.errf(part, "%d is below the minimum, %d", n, f.min)
	case n > f.max:
		return 0, f.errf(part, "%d is above the maximum, %d", n, f.max)
	}
	return n, nil
}
