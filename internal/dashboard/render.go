package dashboard

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// parsePages parses each page's template with the layout.
func parsePages() map[string]*template.Template {
	funcs := template.FuncMap{
		"inc": func(i int) int { return i + 1 },
		// uptime prints INFO's uptime_in_seconds as 3h12m5s.
		"uptime": func(secs string) string {
			n, err := strconv.ParseInt(secs, 10, 64)
			if err != nil {
				return secs
			}
			return (time.Duration(n) * time.Second).String()
		},
		// args builds a template's argument from name, value pairs.
		"args": func(kv ...any) (map[string]any, error) {
			if len(kv)%2 != 0 {
				return nil, fmt.Errorf("args: odd number of arguments")
			}
			m := make(map[string]any, len(kv)/2)
			for i := 0; i < len(kv); i += 2 {
				k, ok := kv[i].(string)
				if !ok {
					return nil, fmt.Errorf("args: name %v is not a string", kv[i])
				}
				m[k] = kv[i+1]
			}
			return m, nil
		},
	}
	pages := map[string]*template.Template{}
	for _, name := range []string{"overview", "queue", "job", "login", "error", "confirm"} {
		t := template.Must(template.New(name).Funcs(funcs).ParseFS(templateFS,
			"templates/layout.html", "templates/parts.html", "templates/"+name+".html"))
		pages[name] = t
	}
	return pages
}

// fmtMs formats a Unix time in ms as UTC.
func fmtMs(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000 UTC")
}

// fmtField formats a time field (a decimal ms value as EMQ.JOB prints it)
// and says how far it is from now ("in 25s", "3m ago").
func fmtField(v string, now int64) (abs, rel string) {
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return v, ""
	}
	return fmtMs(ms), relative(ms - now)
}

// runDuration is a job's last run as a span ("1.25s", "3m 2s"):
// finished - claimed (Unix ms, the row's finished_at and claimed_at), or
// now - claimed while it runs. "" when claimed is absent or not a number,
// or the job finished before this claim (a dead job reprocessed and
// claimed again carries its old finished_at) and is not running.
func runDuration(claimed, finished string, running bool, now int64) string {
	c, err := strconv.ParseInt(claimed, 10, 64)
	if err != nil {
		return ""
	}
	end := now
	if !running {
		f, err := strconv.ParseInt(finished, 10, 64)
		if err != nil || f < c {
			return ""
		}
		end = f
	}
	return span(max(end-c, 0))
}

// span writes a non-negative duration in ms: "850ms", "1.25s", "3m 2s",
// "2h 5m".
func span(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d < time.Second:
		return strconv.FormatInt(ms, 10) + "ms"
	case d < time.Minute:
		return strconv.FormatFloat(float64(ms)/1000, 'f', -1, 64) + "s"
	case d < time.Hour:
		return fmt.Sprintf("%dm %ds", int64(d/time.Minute), int64(d%time.Minute/time.Second))
	default:
		return fmt.Sprintf("%dh %dm", int64(d/time.Hour), int64(d%time.Hour/time.Minute))
	}
}

// relative writes a signed span in ms as "in 2m 5s" or "2m 5s ago".
func relative(d int64) string {
	if d == 0 {
		return "now"
	}
	span := d
	if span < 0 {
		span = -span
	}
	dur := time.Duration(span) * time.Millisecond
	var s string
	switch {
	case dur < time.Second:
		s = strconv.FormatInt(span, 10) + "ms"
	case dur < time.Minute:
		s = strconv.FormatInt(int64(dur/time.Second), 10) + "s"
	case dur < time.Hour:
		s = fmt.Sprintf("%dm %ds", int64(dur/time.Minute), int64(dur%time.Minute/time.Second))
	case dur < 48*time.Hour:
		s = fmt.Sprintf("%dh %dm", int64(dur/time.Hour), int64(dur%time.Hour/time.Minute))
	default:
		s = strconv.FormatInt(int64(dur/(24*time.Hour)), 10) + "d"
	}
	if d > 0 {
		return "in " + s
	}
	return s + " ago"
}

// clip cuts s to at most n runes, with an ellipsis.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

// preview is a one-line view of a payload: its text with control
// characters shown as spaces, or a hex prefix when it is not UTF-8.
func preview(p string, n int) string {
	if p == "" {
		return ""
	}
	if !utf8.ValidString(p) {
		b := []byte(p)
		if len(b) > n/3 {
			return "binary: " + hex.EncodeToString(b[:n/3]) + "…"
		}
		return "binary: " + hex.EncodeToString(b)
	}
	s := strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, clip(p, n))
	return s
}

// payloadView is a payload as the job page shows it: pretty JSON, text,
// or a hex dump of a binary payload; the template escapes it.
type payloadView struct {
	Size      int
	Kind      string // "json", "text", "binary", "empty"
	Text      string
	Truncated bool
}

// maxShown is the most payload bytes a job page shows.
const maxShown = 256 << 10

func makePayloadView(p string) payloadView {
	v := payloadView{Size: len(p)}
	if p == "" {
		v.Kind = "empty"
		return v
	}
	shown := p
	if len(shown) > maxShown {
		shown, v.Truncated = shown[:maxShown], true
	}
	if !v.Truncated && (p[0] == '{' || p[0] == '[') && json.Valid([]byte(p)) {
		var b bytes.Buffer
		if json.Indent(&b, []byte(p), "", "  ") == nil {
			v.Kind, v.Text = "json", b.String()
			return v
		}
	}
	if v.Truncated && !utf8.ValidString(shown) {
		shown = shown[:lastRuneStart(shown)] // a rune cut by the limit
	}
	if utf8.ValidString(shown) {
		v.Kind, v.Text = "text", shown
		return v
	}
	v.Kind, v.Text = "binary", hex.Dump([]byte(shown))
	return v
}

// lastRuneStart is where a cut string's last (maybe partial) rune begins.
func lastRuneStart(s string) int {
	for i := len(s) - 1; i >= 0 && i >= len(s)-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			return i
		}
	}
	return len(s)
}

// mintedAt decodes the time a minted id carries (docs/verbs.md §1.4: "JOB"
// and 11 characters of 0-9A-Za-z encoding a number of ms). Ids that encode
// no time in 2000-2200 (chosen by a client) are not shown as times.
func mintedAt(id string) (int64, bool) {
	if len(id) != 14 || !strings.HasPrefix(id, "JOB") {
		return 0, false
	}
	var n int64
	for _, c := range []byte(id[3:]) {
		var d int64
		switch {
		case c >= '0' && c <= '9':
			d = int64(c - '0')
		case c >= 'A' && c <= 'Z':
			d = int64(c-'A') + 10
		case c >= 'a' && c <= 'z':
			d = int64(c-'a') + 36
		default:
			return 0, false
		}
		if n > (1<<62)/62 {
			return 0, false
		}
		n = n*62 + d
	}
	if n < 946_684_800_000 || n > 7_258_118_400_000 {
		return 0, false
	}
	return n, true
}

// rateView is a queue's throughput as a page shows it.
type rateView struct {
	Windows []windowView
	Bars    []bar
	Width   int
	Height  int
	Max     int64
}

type windowView struct {
	Label                             string
	Partial                           bool
	Enqueued, Completed, Failed, Died int64
}

// bar is one interval of the sparkline: completed jobs (and failures
// stacked above them), in SVG user units.
type bar struct {
	X, Y, H, FY, FH int
	Title           string
}

const (
	barW   = 4
	barGap = 1
	sparkH = 28
)

func makeRateView(r rates) rateView {
	labels := [...]string{"1 min", "5 min", "15 min"}
	v := rateView{Height: sparkH}
	for w := range r.Over {
		o := r.Over[w]
		v.Windows = append(v.Windows, windowView{Label: labels[w], Partial: r.Partial[w],
			Enqueued: o[0], Completed: o[1], Failed: o[2], Died: o[3]})
	}
	for _, b := range r.Bars {
		v.Max = max(v.Max, b[1]+b[2])
	}
	slots := SampleSlots + 1
	v.Width = slots * (barW + barGap)
	off := slots - len(r.Bars)
	for i, b := range r.Bars {
		x := (off + i) * (barW + barGap)
		h, fh := 0, 0
		if v.Max > 0 {
			h = int(b[1] * (sparkH - 2) / v.Max)
			fh = int(b[2] * (sparkH - 2) / v.Max)
			if b[1] > 0 && h == 0 {
				h = 1
			}
			if b[2] > 0 && fh == 0 {
				fh = 1
			}
		}
		v.Bars = append(v.Bars, bar{X: x, Y: sparkH - h, H: h, FY: sparkH - h - fh, FH: fh,
			Title: fmt.Sprintf("%d completed, %d failed", b[1], b[2])})
	}
	return v
}
