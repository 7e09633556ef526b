package verbs

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// libraryTexts are fragments of robfig's and strconv's error texts; none
// may reach a client (docs/verbs.md §4.22.2).
var libraryTexts = []string{"strconv", "Atoi", "failed to parse", "parsing", "invalid syntax",
	"expected 5 to 6", "beginning of range", "end of range", "too many", "unrecognized descriptor",
	"step of range", "empty spec string", "time: ", "negative number"}

// TestCronSpecTexts: the refusals of a spec name the field and what it
// allows, in emqd's words, for the specs a user is likely to try (Quartz's
// L, W, #; 7 for Sunday; a year field; typos).
func TestCronSpecTexts(t *testing.T) {
	const (
		dom = " (allowed: 1-31, *, ?, ranges a-b, lists a,b and steps /n)"
		dow = " (allowed: 0-6 (0 is Sunday) or sun-sat, *, ?, ranges a-b, lists a,b and steps /n)"
		min = " (allowed: 0-59, *, ?, ranges a-b, lists a,b and steps /n)"
		mon = " (allowed: 1-12 or jan-dec, *, ?, ranges a-b, lists a,b and steps /n)"
		lwh = "L, W and # (Quartz's last, weekday and nth) are not supported"
	)
	for spec, want := range map[string]string{
		"0 0 L * *":         `day-of-month field "L": ` + lwh + dom,
		"0 0 L-2 * *":       `day-of-month field "L-2": ` + lwh + dom,
		"0 0 15W * *":       `day-of-month field "15W": ` + lwh + dom,
		"0 0 LW * *":        `day-of-month field "LW": ` + lwh + dom,
		"0 0 * * 5L":        `day-of-week field "5L": ` + lwh + dow,
		"0 0 * * FRI#3":     `day-of-week field "FRI#3": ` + lwh + dow,
		"0 0 * * 1-5,5#2":   `day-of-week field "1-5,5#2": ` + lwh + dow,
		"0 0 * * 7":         `day-of-week field "7": 7 is above the maximum, 6` + dow,
		"0 0 0 * *":         `day-of-month field "0": 0 is below the minimum, 1` + dom,
		"0 0 1 foo *":       `month field "foo": "foo" is not a number or a name` + mon,
		"0 0 1 0 *":         `month field "0": 0 is below the minimum, 1` + mon,
		"60 * * * *":        `minute field "60": 60 is above the maximum, 59` + min,
		"*/0 * * * *":       `minute field "*/0": the step must be a positive integer, not "0"` + min,
		"*/-5 * * * *":      `minute field "*/-5": the step must be a positive integer, not "-5"` + min,
		"*/x * * * *":       `minute field "*/x": the step must be a positive integer, not "x"` + min,
		"1-2-3 * * * *":     `minute field "1-2-3": more than one "-" in "1-2-3"` + min,
		"*/5/2 * * * *":     `minute field "*/5/2": more than one "/" in "*/5/2"` + min,
		"30-10 * * * *":     `minute field "30-10": the range 30-10 runs backwards` + min,
		"1- * * * *":        `minute field "1-": a value is missing` + min,
		"H * * * *":         `minute field "H": "H" is not a number` + min,
		"0 0 12 * * * 2026": "expected 5 fields (minute hour day-of-month month day-of-week) or 6 (second first), found 7",
		"* * * *":           "expected 5 fields (minute hour day-of-month month day-of-week) or 6 (second first), found 4",
		"":                  "the spec is empty",
		"@every soon":       `@every needs a duration such as 90s, 5m or 1h30m, not "soon"`,
		"@DAILY":            `unknown descriptor "@DAILY" (allowed: @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly and @every <duration>)`,
	} {
		_, err := parseCron(spec, "")
		if err == nil || err.Error() != want {
			t.Errorf("%q:\n got %v\nwant %s", spec, err, want)
		}
	}
}

// TestCronCheckAgreesWithRobfig: checkCronSpec accepts exactly what
// robfig's parser accepts, over random specs built from the pieces users
// type (numbers at and past the bounds, names, *, ?, -, /, ",", L, W, #,
// signs), and no refusal of parseCron carries a library's text.
func TestCronCheckAgreesWithRobfig(t *testing.T) {
	pieces := []string{"*", "?", "-", "/", ",", "0", "1", "5", "6", "7", "12", "13", "23", "24", "31", "32",
		"59", "60", "+3", "00", "jan", "DEC", "Mon", "fri", "sun", "L", "W", "#", "x", "", "99999999999999999999"}
	n := 20000
	if testing.Short() {
		n = 2000
	}
	r := rand.New(rand.NewPCG(1, 2))
	agreedOK, agreedBad := 0, 0
	for range n {
		var spec string
		if r.IntN(20) == 0 {
			spec = []string{"@daily", "@every 1m", "@every x", "@hourly ", "@every", "@Weekly", "@annually"}[r.IntN(7)]
		} else {
			fields := make([]string, 4+r.IntN(4))
			for i := range fields {
				if r.IntN(4) != 0 {
					fields[i] = []string{"*", "?", "*/5", "1-5", "1", "0,6", "2/3", "*-3"}[r.IntN(8)]
					continue
				}
				var b strings.Builder
				for range 1 + r.IntN(4) {
					b.WriteString(pieces[r.IntN(len(pieces))])
				}
				fields[i] = b.String()
			}
			spec = strings.Join(fields, " ")
		}
		_, robErr := cronParser.Parse(spec)
		ourErr := checkCronSpec(spec)
		if (robErr == nil) != (ourErr == nil) {
			t.Fatalf("%q: robfig %v, checkCronSpec %v", spec, robErr, ourErr)
		}
		if ourErr == nil {
			agreedOK++
		} else {
			agreedBad++
		}
		if _, err := parseCron(spec, ""); err != nil {
			for _, lib := range libraryTexts {
				if strings.Contains(err.Error(), lib) {
					t.Fatalf("%q: %q carries the library's %q", spec, err, lib)
				}
			}
		}
	}
	t.Logf("accepted %d, refused %d", agreedOK, agreedBad)
	// Both sides must be exercised, or the test proves nothing.
	if agreedOK < n/50 || agreedBad < n/50 {
		t.Fatalf("accepted %d, refused %d of %d: the generator is lopsided", agreedOK, agreedBad, n)
	}
}
