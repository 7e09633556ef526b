package verbs

import (
	"testing"
	"time"

	"github.com/robfig/cron/v3"
)

// cronMatch reports whether the wall time w (UTC fields) matches s: the
// spec's bit sets, with cron's day rule (day of month OR day of week when
// neither is *), written here independently of robfig's Next.
func cronMatch(s *cron.SpecSchedule, w time.Time) bool {
	const star = 1 << 63
	bit := func(set uint64, v int) bool { return set&(1<<uint(v)) != 0 }
	if !bit(s.Second, w.Second()) || !bit(s.Minute, w.Minute()) || !bit(s.Hour, w.Hour()) || !bit(s.Month, int(w.Month())) {
		return false
	}
	dom, dow := bit(s.Dom, w.Day()), bit(s.Dow, int(w.Weekday()))
	if s.Dom&star != 0 || s.Dow&star != 0 {
		return dom && dow
	}
	return dom || dow
}

// bruteSlots walks every second of [from, to) in loc with Go's time
// package and lists the instants the DST rules say fire: a matching local
// time at its first occurrence, and the first instant after a gap when a
// local time inside the gap matched (once, even if that instant matches
// too).
func bruteSlots(s *cron.SpecSchedule, loc *time.Location, from, to time.Time) []int64 {
	seen := map[time.Time]bool{}
	var out []int64
	prevWall := wallOf(from.Add(-time.Second).In(loc))
	for u := from; u.Before(to); u = u.Add(time.Second) {
		w := wallOf(u.In(loc))
		fire := cronMatch(s, w) && !seen[w]
		if d := w.Sub(prevWall); d > time.Second {
			for g := prevWall.Add(time.Second); g.Before(w); g = g.Add(time.Second) {
				if cronMatch(s, g) {
					fire = true
					break
				}
			}
		}
		// A repeated wall time was seen the first time round.
		seen[w] = true
		if fire {
			out = append(out, u.UnixMilli())
		}
		prevWall = w
	}
	return out
}

// transitions lists the instants in year y at which loc's offset changes.
func transitions(t *testing.T, loc *time.Location, y int) []time.Time {
	var out []time.Time
	u := time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC)
	end := time.Date(y+1, 1, 1, 0, 0, 0, 0, time.UTC)
	for {
		_, e := u.In(loc).ZoneBounds()
		if e.IsZero() || !e.Before(end) {
			break
		}
		out = append(out, e)
		u = e
	}
	if len(out) != 2 {
		t.Fatalf("%s: %d transitions in %d, want 2", loc, len(out), y)
	}
	return out
}

// TestCronDSTAgainstGoTime checks slotAfter across both DST changes of
// 2026 in four zones (one with a 30-minute offset, one with a 30-minute
// shift) against bruteSlots, second by second over two days around each
// change.
func TestCronDSTAgainstGoTime(t *testing.T) {
	zones := []string{"America/New_York", "Europe/Berlin", "Australia/Sydney", "Australia/Adelaide", "Australia/Lord_Howe"}
	specs := []string{
		"30 2 * * *",      // inside the spring gap (New York, Sydney, Adelaide, Berlin's is 02:00-03:00)
		"30 1 * * *",      // repeated in New York's autumn
		"0 2 * * *",       // the first minute of Berlin's and Sydney's gaps and repeats
		"*/15 * * * *",    // every quarter hour
		"0 * * * *",       // hourly
		"45 2,3 * * *",    // two local times, one in a gap
		"0 30 2 * * *",    // six fields: seconds first
		"10 */20 * * * *", // seconds and a minute step
		"@hourly",
		"@daily",
	}
	checked := 0
	for _, zn := range zones {
		loc, err := time.LoadLocation(zn)
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range transitions(t, loc, 2026) {
			from, to := tr.Add(-26*time.Hour), tr.Add(26*time.Hour)
			for _, sp := range specs {
				cs, err := parseCron(sp, zn)
				if err != nil {
					t.Fatalf("%s: %v", sp, err)
				}
				want := bruteSlots(cs.spec, loc, from, to)
				var got []int64
				at := from.UnixMilli() - 1
				for {
					n, ok := cs.slotAfter(at)
					if !ok {
						t.Fatalf("%s %s: no slot after %d", zn, sp, at)
					}
					if n >= to.UnixMilli() {
						break
					}
					got = append(got, n)
					at = n
				}
				if len(got) != len(want) {
					t.Fatalf("%s %q around %s: %d slots, want %d\n got %v\nwant %v", zn, sp, tr, len(got), len(want), fmtMs(got, loc), fmtMs(want, loc))
				}
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("%s %q around %s: slot %d is %s, want %s", zn, sp, tr, i, fmtMs(got[i:i+1], loc), fmtMs(want[i:i+1], loc))
					}
				}
				if len(want) == 0 {
					t.Fatalf("%s %q: no slots at all", zn, sp)
				}
				checked++
			}
		}
	}
	if checked != len(zones)*2*len(specs) {
		t.Fatalf("checked %d cases", checked)
	}
}

// TestCronDSTNamedCases pins the two rules on New York's 2026 changes.
func TestCronDSTNamedCases(t *testing.T) {
	ny, _ := time.LoadLocation("America/New_York")
	ms := func(y int, m time.Month, d, h, mi int, off int) int64 {
		return time.Date(y, m, d, h, mi, 0, 0, time.FixedZone("", off*3600)).UnixMilli()
	}
	cs, _ := parseCron("30 2 * * *", "America/New_York")
	// 8 March 2026: 02:00 EST jumps to 03:00 EDT; 02:30 does not exist and
	// fires once at 03:00 EDT.
	got, _ := cs.slotAfter(ms(2026, 3, 7, 12, 0, -5))
	if got != ms(2026, 3, 8, 2, 30, -5) && got != ms(2026, 3, 8, 3, 0, -4) {
		t.Fatalf("gap: %s", time.UnixMilli(got).In(ny))
	}
	if got != ms(2026, 3, 8, 3, 0, -4) {
		t.Fatalf("gap slot %s, want 03:00 EDT", time.UnixMilli(got).In(ny))
	}
	next, _ := cs.slotAfter(got)
	if next != ms(2026, 3, 9, 2, 30, -4) {
		t.Fatalf("after the gap %s", time.UnixMilli(next).In(ny))
	}
	// 1 November 2026: 02:00 EDT falls back to 01:00 EST; 01:30 happens
	// twice and fires once, at 01:30 EDT.
	cs, _ = parseCron("30 1 * * *", "America/New_York")
	got, _ = cs.slotAfter(ms(2026, 10, 31, 12, 0, -4))
	if got != ms(2026, 11, 1, 1, 30, -4) {
		t.Fatalf("repeat: %s", time.UnixMilli(got).In(ny))
	}
	next, _ = cs.slotAfter(got)
	if next != ms(2026, 11, 2, 1, 30, -5) {
		t.Fatalf("after the repeat %s, want 2 Nov 01:30 EST", time.UnixMilli(next).In(ny))
	}
	// robfig's own Next fires the repeated time twice and skips the gap:
	// the reason slotAfter wraps it.
	raw, _ := cron.ParseStandard("CRON_TZ=America/New_York 30 1 * * *")
	r1 := raw.Next(time.UnixMilli(ms(2026, 10, 31, 12, 0, -4)))
	r2 := raw.Next(r1)
	if r2.UnixMilli() != ms(2026, 11, 1, 1, 30, -5) {
		t.Logf("robfig's Next after %s: %s (no longer the repeat)", r1, r2)
	}
}

func fmtMs(v []int64, loc *time.Location) []string {
	out := make([]string, len(v))
	for i, x := range v {
		out[i] = time.UnixMilli(x).In(loc).Format("2006-01-02 15:04:05 MST")
	}
	return out
}

func TestParseCronRefusals(t *testing.T) {
	for _, c := range [][2]string{
		{"* * *", ""}, {"61 * * * *", ""}, {"@weird", ""}, {"* * * * *", "Mars/Olympus"},
		{"TZ=UTC * * * * *", ""}, {"* * * * *", "Local"},
	} {
		if _, err := parseCron(c[0], c[1]); err == nil {
			t.Errorf("parseCron(%q, %q) accepted", c[0], c[1])
		}
	}
	if _, err := parseCron("0 0 30 2 *", ""); err != errNoCronTime {
		t.Fatalf("30 February: %v", err)
	}
	cs, err := parseCron("@every 1500ms", "")
	if err != nil {
		t.Fatal(err)
	}
	if at, ok := cs.slotAfter(1000); !ok || at != 2500 {
		t.Fatalf("@every 1500ms after 1000: %d %v", at, ok)
	}
}
