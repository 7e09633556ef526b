package server

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/emqd/emqd/clock"
	"github.com/emqd/emqd/internal/testsupport"
	"github.com/emqd/emqd/internal/valkeyref"
)

// statsShape renders a MEMORY STATS reply as its keys in order, each with
// its value's type (a nested map as its own keys), values left out.
func statsShape(t *testing.T, reply string) string {
	t.Helper()
	nodes, err := parseFrames(reply)
	if err != nil || len(nodes) != 1 {
		t.Fatalf("MEMORY STATS %q: %v", reply, err)
	}
	kids := nodes[0].kids
	var parts []string
	for i := 0; i+1 < len(kids); i += 2 {
		v := kids[i+1]
		typ := string(v.typ)
		if v.kids != nil {
			var sub []string
			for j := 0; j+1 < len(v.kids); j += 2 {
				sub = append(sub, v.kids[j].text+"="+string(v.kids[j+1].typ))
			}
			typ += "{" + strings.Join(sub, " ") + "}"
		}
		parts = append(parts, kids[i].text+"="+typ)
	}
	return string(nodes[0].typ) + " " + strings.Join(parts, " ")
}

// TestMemoryCommandsAsValkey (issue 20 item 4): MEMORY STATS has Valkey
// 8.0.1's keys in its order, a db.<n> map for each database holding keys,
// integers and doubles where Valkey has them, in RESP2 and RESP3; MEMORY
// DOCTOR answers one of Valkey's report texts (verbatim in RESP3); MEMORY
// MALLOC-STATS a verbatim text; MEMORY HELP and the errors byte for byte.
func TestMemoryCommandsAsValkey(t *testing.T) {
	ref := valkeyref.Start(t)
	s := startServer(t, nil, nil)
	setup := [][]string{{"SET", "a", "b"}, {"PEXPIRE", "a", "100000"}, {"SELECT", "2"}, {"SET", "c", "d"}}
	for _, addr := range []string{ref.Addr, s.Addr()} {
		c := dialAddr(t, addr)
		for _, cmd := range setup {
			c.Do(cmd...)
		}
	}
	for _, proto := range []string{"2", "3"} {
		vc, ec := dialAddr(t, ref.Addr), dial(t, s)
		vc.Do("HELLO", proto)
		ec.Do("HELLO", proto)
		want, got := statsShape(t, vc.Do("MEMORY", "STATS")), statsShape(t, ec.Do("MEMORY", "STATS"))
		if got != want {
			t.Fatalf("RESP%s MEMORY STATS shape:\nemqd   %s\nValkey %s", proto, got, want)
		}
		for _, cmd := range [][]string{{"MEMORY", "HELP"}, {"MEMORY", "STATS", "x"}, {"MEMORY", "DOCTOR", "x"},
			{"MEMORY", "MALLOC-STATS", "x"}, {"MEMORY", "FOO"}} {
			if w, g := vc.Do(cmd...), ec.Do(cmd...); g != w {
				t.Errorf("RESP%s %v: emqd %q, Valkey %q", proto, cmd, g, w)
			}
		}
		doc := ec.Do("MEMORY", "DOCTOR")
		prefix := "$"
		if proto == "3" {
			prefix = "="
		}
		if !strings.HasPrefix(doc, prefix) || !(strings.Contains(doc, doctorEmpty) || strings.Contains(doc, doctorFine) || strings.Contains(doc, doctorTail)) {
			t.Errorf("RESP%s MEMORY DOCTOR %q", proto, doc)
		}
		if w := vc.Do("MEMORY", "DOCTOR"); !strings.HasPrefix(w, prefix) || !strings.Contains(w, "Sam") {
			t.Errorf("reference MEMORY DOCTOR %q", w)
		}
		ms := ec.Do("MEMORY", "MALLOC-STATS")
		if !strings.HasPrefix(ms, prefix) || !strings.Contains(ms, "/memory/classes/heap/objects:bytes: ") {
			t.Errorf("RESP%s MEMORY MALLOC-STATS %.200q", proto, ms)
		}
	}
	// The figures are the runtime's and consistent with INFO memory.
	m := startServer(t, nil, nil)
	ms := m.memoryOverheadLocked()
	if ms.total <= 0 || ms.peak < ms.total || ms.allocated <= 0 || ms.active < ms.allocated || ms.dataset < 0 {
		t.Fatalf("figures %+v", ms)
	}
}

// memoryOverheadLocked is memoryOverhead under the store lock.
func (s *Server) memoryOverheadLocked() memOverhead {
	s.store.Lock()
	defer s.store.Unlock()
	return s.memoryOverhead()
}

// TestMemoryDoctorRules: getMemoryDoctorReport's rules on given figures.
func TestMemoryDoctorRules(t *testing.T) {
	for _, tc := range []struct {
		m    memOverhead
		want []string
	}{
		{memOverhead{total: 1 << 20, peak: 100 << 20}, []string{doctorEmpty}},
		{memOverhead{total: 50 << 20, peak: 60 << 20, totalFrag: 1.2, allocFrag: 1.05, allocRSS: 1.05, rssExtra: 1.05}, []string{doctorFine}},
		{memOverhead{total: 50 << 20, peak: 100 << 20, totalFrag: 2, totalFragBytes: 50 << 20}, []string{doctorHead, doctorPeak, `Note: The currently used allocator is "go".`, doctorTail}},
		{memOverhead{total: 50 << 20, peak: 50 << 20, allocFrag: 1.5, allocFragBytes: 20 << 20, allocRSS: 1.2, allocRSSBytes: 11 << 20, rssExtra: 1.2, rssExtraB: 9 << 20},
			[]string{doctorHead, doctorAllocFrag, doctorAllocRSS, doctorTail}},
		// big_client_buf: above 200 KiB per client, integer division,
		// after the process RSS paragraph.
		{memOverhead{total: 50 << 20, peak: 50 << 20, rssExtra: 1.2, rssExtraB: 20 << 20, clients: 2, clientsNormal: 2*200*1024 + 2},
			[]string{doctorHead, doctorProcRSS, doctorClientBuf, doctorTail}},
		{memOverhead{total: 50 << 20, peak: 50 << 20, clients: 3, clientsNormal: 3*200*1024 + 2}, []string{doctorFine}},
		{memOverhead{total: 50 << 20, peak: 50 << 20, clients: 0, clientsNormal: 1 << 30}, []string{doctorFine}},
		{memOverhead{total: 1 << 20, peak: 1 << 20, clients: 1, clientsNormal: 1 << 30}, []string{doctorEmpty}},
	} {
		got := doctorReport(tc.m)
		rest := got
		for _, w := range tc.want {
			i := strings.Index(rest, w)
			if i < 0 {
				t.Fatalf("%+v: %q lacks %q (in order)", tc.m, got, w)
			}
			rest = rest[i+len(w):]
		}
		if !slices.Contains(tc.want, doctorProcRSS) && strings.Contains(got, "process RSS") {
			t.Fatalf("%+v: %q reports the process RSS under 10 MB", tc.m, got)
		}
		if !slices.Contains(tc.want, doctorClientBuf) && strings.Contains(got, "Big client buffers") {
			t.Fatalf("%+v: %q reports big client buffers", tc.m, got)
		}
	}
}

// TestLatencyHistogramGraphAsValkey (issue 20 item 4): LATENCY HISTOGRAM
// after the same commands has Valkey's shape: the named commands that were
// called, calls, and cumulative counts under Valkey's bucket labels, the
// last equal to calls; unknown names are skipped; LATENCY GRAPH renders
// Valkey's sparkline (digits aside) and its no-samples error; LATENCY HELP
// and LOLWUT byte for byte, in RESP2 and RESP3.
func TestLatencyHistogramGraphAsValkey(t *testing.T) {
	// A threshold far above a loaded machine's stalls (TestLatencyAsValkey):
	// LATENCY GRAPH draws one column per sample, so a spurious one differs.
	ref := valkeyref.Start(t, "--enable-debug-command", "yes", "--latency-monitor-threshold", "500")
	s := startServer(t, map[string]string{"enable-debug-command": "yes", "latency-monitor-threshold": "500"}, nil)
	labels := map[string]bool{}
	for _, l := range []string{"1", "2", "4", "8", "16", "33", "66", "132", "264", "528", "1056", "2113", "4227", "8454", "16908", "33816", "67633", "135266", "270532", "541065", "1082130"} {
		labels[l] = true
	}
	digits := regexp.MustCompile(`\d+`)
	for _, proto := range []string{"2", "3"} {
		vc, ec := dialAddr(t, ref.Addr), dial(t, s)
		for _, c := range []*testsupport.Conn{vc, ec} {
			c.Do("HELLO", proto)
			c.Do("LATENCY", "RESET")
			c.Do("CONFIG", "RESETSTAT")
		}
		for _, cmd := range [][]string{{"SET", "k", "v"}, {"SET", "k", "w"}, {"GET", "k"}, {"CONFIG", "GET", "hz"}, {"DEBUG", "SLEEP", "0.6"}} {
			vc.Do(cmd...)
			ec.Do(cmd...)
		}
		for _, cmd := range [][]string{{"LATENCY", "HISTOGRAM", "nosuch"}, {"LATENCY", "HISTOGRAM", "lpush"}, {"LATENCY", "HELP"},
			{"LATENCY", "GRAPH"}, {"LATENCY", "GRAPH", "nosuch"}, {"LOLWUT"}, {"LOLWUT", "VERSION", "7"}, {"LOLWUT", "VERSION", "x"},
			{"LOLWUT", "VERSION", "5", "x"}, {"LOLWUT", "VERSION", "6", "1", "y"}, {"LOLWUT", "foo"}} {
			if w, g := vc.Do(cmd...), ec.Do(cmd...); g != w {
				t.Errorf("RESP%s %v: emqd %q, Valkey %q", proto, cmd, g, w)
			}
		}
		shape := func(c *testsupport.Conn) (string, string) {
			r := c.Do("LATENCY", "HISTOGRAM", "set", "get", "nosuch", "config|get")
			nodes, err := parseFrames(r)
			if err != nil || len(nodes) != 1 {
				t.Fatalf("LATENCY HISTOGRAM %q", r)
			}
			var names []string
			for i := 0; i+1 < len(nodes[0].kids); i += 2 {
				name, body := nodes[0].kids[i].text, nodes[0].kids[i+1]
				calls := body.kids[1].text
				hist := body.kids[3].kids
				if len(hist) == 0 || hist[len(hist)-2+1].text != calls {
					t.Fatalf("%s: the last cumulative count is not calls %s: %q", name, calls, r)
				}
				for j := 0; j < len(hist); j += 2 {
					if !labels[hist[j].text] {
						t.Fatalf("%s: bucket %s is not one of Valkey's labels: %q", name, hist[j].text, r)
					}
				}
				names = append(names, name+":"+calls+":"+body.kids[0].text+","+body.kids[2].text)
			}
			return strings.Join(names, " "), string(nodes[0].typ) + nodes[0].shape()
		}
		wn, ws := shape(vc)
		gn, gs := shape(ec)
		if gn != wn || gs[:2] != ws[:2] {
			t.Errorf("RESP%s LATENCY HISTOGRAM: emqd %s %s, Valkey %s %s", proto, gn, gs, wn, ws)
		}
		if wn != "set:2:calls,histogram_usec get:1:calls,histogram_usec config|get:1:calls,histogram_usec" {
			t.Fatalf("reference histogram names %q", wn)
		}
		w, g := vc.Do("LATENCY", "GRAPH", "command"), ec.Do("LATENCY", "GRAPH", "command")
		if digits.ReplaceAllString(g, "N") != digits.ReplaceAllString(w, "N") {
			t.Errorf("RESP%s LATENCY GRAPH:\nemqd\n%s\nValkey\n%s", proto, g, w)
		}
	}
	// latency-tracking no records nothing.
	c := dial(t, s)
	c.Do("CONFIG", "SET", "latency-tracking", "no")
	c.Do("CONFIG", "RESETSTAT")
	c.Do("INCR", "n")
	if r := c.Do("LATENCY", "HISTOGRAM", "incr"); r != "*0\r\n" {
		t.Fatalf("with latency-tracking no: %q", r)
	}
}

// TestSparklineAsValkey: the graph of three samples, checked against the
// text Valkey's sparklineRender gives for 1, 5 and 10 ms labelled 3s, 2s,
// 1s (worked out from its rules: 12 steps over 4 rows of "_o#", 5 ms is
// step int(4*12)/9 = 5, '#' on the third row; '|' below a column's level;
// a blank line, then the labels downwards).
func TestSparklineAsValkey(t *testing.T) {
	var b strings.Builder
	sparkline(&b, []float64{1, 5, 10}, []string{"3s", "2s", "1s"}, 80, 4)
	want := "  #\n" + "  |\n" + " #|\n" + "_||\n" + "   \n" + "321\n" + "sss\n"
	if b.String() != want {
		t.Fatalf("sparkline:\n%q\nwant\n%q", b.String(), want)
	}
}

// TestLolwut5AsValkey: LOLWUT VERSION 5 draws Schotter as Valkey 8.0.1's:
// with two rows of squares (no random turn) byte for byte, for several
// sizes and the clamped ones; with the defaults the first two rows of
// squares (the first six text lines) byte for byte and every line as long
// as Valkey's, in RESP2 and RESP3.
func TestLolwut5AsValkey(t *testing.T) {
	ref := valkeyref.Start(t)
	s := startServer(t, nil, nil)
	for _, proto := range []string{"2", "3"} {
		vc, ec := dialAddr(t, ref.Addr), dial(t, s)
		vc.Do("HELLO", proto)
		ec.Do("HELLO", proto)
		for _, args := range [][]string{{"40", "4", "2"}, {"1", "1", "1"}, {"-5", "0", "1"}, {"66", "8", "1"}, {"3", "7", "2"}, {"2000", "300", "1"}} {
			cmd := append([]string{"LOLWUT", "VERSION", "5"}, args...)
			if w, g := vc.Do(cmd...), ec.Do(cmd...); g != w {
				t.Errorf("RESP%s %v:\nemqd   %q\nValkey %q", proto, cmd, g[:min(len(g), 300)], w[:min(len(w), 300)])
			}
		}
		w, g := strings.Split(vc.Do("LOLWUT", "VERSION", "5"), "\n"), strings.Split(ec.Do("LOLWUT", "VERSION", "5"), "\n")
		if len(w) != len(g) || len(w) < 50 {
			t.Fatalf("RESP%s: %d lines, Valkey %d", proto, len(g), len(w))
		}
		for i := range w {
			if len(g[i]) != len(w[i]) || (i < 6 && g[i] != w[i]) {
				t.Fatalf("RESP%s line %d: emqd %q, Valkey %q", proto, i, g[i], w[i])
			}
		}
	}
}

// TestLolwut6AsValkey: LOLWUT VERSION 6 draws Valkey 8.0.1's skyline: one
// pixel row (the white sky alone, no randomness) byte for byte for several
// widths and the clamped ones; the default's shape (20 lines of 80 pixels,
// each one of the four color escapes, Valkey's closing text).
func TestLolwut6AsValkey(t *testing.T) {
	ref := valkeyref.Start(t)
	s := startServer(t, nil, nil)
	vc, ec := dialAddr(t, ref.Addr), dial(t, s)
	for _, args := range [][]string{{"30", "1"}, {"1", "1"}, {"-3", "0"}, {"1500", "1"}} {
		cmd := append([]string{"LOLWUT", "VERSION", "6"}, args...)
		if w, g := vc.Do(cmd...), ec.Do(cmd...); g != w {
			t.Errorf("%v:\nemqd   %.300q\nValkey %.300q", cmd, g, w)
		}
	}
	pixel := regexp.MustCompile(`\x1b\[0;(30;40|90;100|37;47|97;107)m \x1b\[0m`)
	for name, r := range map[string]string{"emqd": ec.Do("LOLWUT", "VERSION", "6"), "Valkey": vc.Do("LOLWUT", "VERSION", "6")} {
		lines := strings.Split(r, "\n")
		// The bulk header, 20 pixel rows, two lines of text, the CRLF.
		if len(lines) != 25 || !strings.HasPrefix(lines[21], "Dedicated to the 8 bit game developers") {
			var heads []string
			for _, l := range lines {
				heads = append(heads, fmt.Sprintf("%d:%.12q", len(l), l))
			}
			t.Fatalf("%s: %d lines: %s", name, len(lines), strings.Join(heads, " "))
		}
		for i := 1; i <= 20; i++ {
			if rest := pixel.ReplaceAllString(lines[i], ""); rest != "" || len(pixel.FindAllString(lines[i], -1)) != 80 {
				t.Fatalf("%s line %d: %q", name, i, lines[i])
			}
		}
	}
}

// TestMemoryDoctorBigClientBuffers: Valkey 8.0.1's big_client_buf rule
// (getMemoryDoctorReport: clients' memory above 200 KiB per connected
// client on average) on emqd and on the reference in the same state: a 6
// MB key (so neither is "empty"), then a client stopped halfway through a
// 4 MB argument, whose query buffer holds it. Both reports gain the same
// paragraph, byte for byte, once the client is there, and lose it once it
// is gone; neither has it before. Valkey refreshes a client's memory
// figure in its cron, so each report is polled (a generous deadline, no
// timing assumed).
func TestMemoryDoctorBigClientBuffers(t *testing.T) {
	ref := valkeyref.Start(t)
	s := startServer(t, nil, nil)
	const para = " * Big client buffers: "
	paragraph := func(report string) string {
		i := strings.Index(report, para)
		if i < 0 {
			return ""
		}
		j := strings.Index(report[i:], "\n\n")
		if j < 0 {
			return report[i:]
		}
		return report[i : i+j+2]
	}
	big := strings.Repeat("v", 6<<20)
	for _, tg := range []struct{ name, addr string }{{"Valkey", ref.Addr}, {"emqd", s.Addr()}} {
		// The key through a connection of its own, closed: the one asking
		// holds no big buffer of its own.
		w := dialAddr(t, tg.addr)
		if r := w.Do("SET", "big", big); r != "+OK\r\n" {
			t.Fatalf("%s: SET %q", tg.name, r)
		}
		w.NC.Close()
		c := dialAddr(t, tg.addr)
		doctor := func() string {
			r := c.Do("MEMORY", "DOCTOR")
			if !strings.HasPrefix(r, "$") || !strings.Contains(r, "Sam") {
				t.Fatalf("%s: MEMORY DOCTOR %.200q", tg.name, r)
			}
			return r
		}
		waitFor := func(what string, ok func(string) bool) string {
			t.Helper()
			deadline := time.Now().Add(30 * time.Second)
			for {
				r := doctor()
				if ok(r) {
					return r
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s: after 30 s, %s: %q", tg.name, what, r)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		// Before: no paragraph once the writer's close is seen (Valkey
		// frees a closed client on its next event-loop turn).
		waitFor("the paragraph with no client holding a buffer", func(r string) bool { return paragraph(r) == "" })
		if r := doctor(); !strings.Contains(r, doctorFine) && !strings.Contains(r, doctorHead) {
			t.Fatalf("%s: not a report of a non-empty instance: %q", tg.name, r)
		}
		stuck := dialAddr(t, tg.addr)
		stuck.Write([]byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$4194304\r\n" + strings.Repeat("x", 4<<20-1000)))
		r := waitFor("no big client buffers paragraph", func(r string) bool { return paragraph(r) != "" })
		if got := paragraph(r); got != doctorClientBuf {
			t.Errorf("%s: the paragraph\n %q\nwant\n %q", tg.name, got, doctorClientBuf)
		}
		if !strings.Contains(r, doctorHead) || !strings.HasSuffix(r, doctorTail+"\r\n") {
			t.Errorf("%s: report %q", tg.name, r)
		}
		stuck.NC.Close()
		waitFor("the paragraph after the client left", func(r string) bool { return paragraph(r) == "" })
	}
}

// TestUsedMemoryPeakSampledByCron: used_memory_peak catches a peak that
// no INFO read saw (the memory cron samples it every 100 ms, as Valkey's
// serverCron does): 30 MB of strings set, one cron tick, FLUSHALL and a
// purge, and only then INFO.
func TestUsedMemoryPeakSampledByCron(t *testing.T) {
	clk := clock.NewManual(1_700_000_000_000)
	s := startServer(t, nil, clk)
	c := dial(t, s)
	val := strings.Repeat("v", 100_000)
	for i := range 300 {
		if r := c.Do("SET", fmt.Sprintf("k%d", i), val); r != "+OK\r\n" {
			t.Fatalf("SET %q", r)
		}
	}
	clk.Advance(200)
	clk.Wait() // the memory cron's tick due by now has run
	if r := c.Do("FLUSHALL"); r != "+OK\r\n" {
		t.Fatalf("FLUSHALL %q", r)
	}
	if r := c.Do("MEMORY", "PURGE"); r != "+OK\r\n" {
		t.Fatalf("MEMORY PURGE %q", r)
	}
	info := c.Do("INFO", "memory")
	peak, used := infoInt64(t, info, "used_memory_peak"), infoInt64(t, info, "used_memory")
	if peak < 25_000_000 || used > 20_000_000 {
		t.Fatalf("used_memory_peak %d, used_memory %d: want the 30 MB peak kept after the flush", peak, used)
	}
}
