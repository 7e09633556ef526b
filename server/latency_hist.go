package server

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/emqd/emqd/internal/store"
)

// LATENCY HISTOGRAM (docs/compat.md §1.5), as Valkey 8.0.1's: with
// latency-tracking yes (the default) every call of a command adds its
// duration, whole microseconds as Valkey counts c->duration, to the
// command's histogram. Valkey keeps an HDR histogram (1 ns to 1 s, two
// significant digits) and replies it through a base-2 log iterator that
// starts at 1,024 ns; emqd keeps exactly the counts that iteration reports:
// bucket k holds the calls of at most upper(1024·2^k) ns, where upper(v)
// = v + v/128 - 1 is the HDR highest equivalent value at that precision,
// and is labelled upper/1000 µs (1, 2, 4, 8, 16, 33, 66, 132, 264, 528,
// 1056, ...). A duration above 1 s counts as 1 s, as Valkey clamps it.

const latBuckets = 21 // 1024·2^20 ns > 1 s

// latHist is one command's histogram (store lock).
type latHist struct {
	n     [latBuckets]int64
	calls int64
}

// latBounds are the buckets' upper values in ns.
var latBounds = func() (b [latBuckets]int64) {
	for k := range b {
		v := int64(1024) << k
		b[k] = v + v/128 - 1
	}
	return b
}()

// recordLatency adds one call of d to cmd's histogram (allocated at the
// first call: a command never called has none, as in Valkey).
func (cmd *command) recordLatency(d time.Duration) {
	if cmd.lat == nil {
		cmd.lat = &latHist{}
	}
	ns := min(d.Microseconds()*1000, int64(time.Second))
	k := 0
	for k < latBuckets-1 && ns > latBounds[k] {
		k++
	}
	cmd.lat.n[k]++
	cmd.lat.calls++
}

// writeLatency writes name => {calls, histogram_usec => {bucket µs =>
// cumulative calls}}, only the buckets where the count grows (Valkey's
// fillCommandCDF).
func writeLatency(x *store.Ctx, cmd *command) {
	h := cmd.lat
	x.W.BulkString(cmd.name)
	x.W.Map(2)
	x.W.BulkString("calls")
	x.W.Int(h.calls)
	x.W.BulkString("histogram_usec")
	n := 0
	for _, c := range h.n {
		if c > 0 {
			n++
		}
	}
	x.W.Map(n)
	var cum int64
	for k, c := range h.n {
		if c == 0 {
			continue
		}
		cum += c
		x.W.Int(latBounds[k] / 1000)
		x.W.Int(cum)
	}
}

// cmdLatencyHistogram is LATENCY HISTOGRAM [command ...]: every command
// called so far (by name: Valkey's order is its dict's), or the named
// ones, a container naming itself (when called bare) and each subcommand
// called; an unknown name is skipped; a name given twice is answered
// twice, as Valkey does.
func cmdLatencyHistogram(c *client, x *store.Ctx) {
	r := c.s.reg
	var cmds []*command
	if len(x.Argv) == 2 {
		for _, e := range r.allCommands() {
			if e.lat != nil {
				cmds = append(cmds, e)
			}
		}
	} else {
		for _, a := range x.Argv[2:] {
			e := r.commandByFullName(string(a))
			if e == nil {
				continue
			}
			if e.lat != nil {
				cmds = append(cmds, e)
			}
			for _, sub := range e.sortedSubs() {
				if sub.lat != nil {
					cmds = append(cmds, sub)
				}
			}
		}
	}
	x.W.Map(len(cmds))
	for _, e := range cmds {
		writeLatency(x, e)
	}
}

// commandByFullName finds "get" or "config|get" (any case), as Valkey's
// lookupCommandBySds.
func (r *registry) commandByFullName(name string) *command {
	base, sub, two := strings.Cut(strings.ToLower(name), "|")
	e := r.cmds[base]
	if e == nil || !two {
		return e
	}
	if e.subs == nil {
		return nil
	}
	return e.subs[sub]
}

// cmdLatencyGraph is LATENCY GRAPH <event>: Valkey 8.0.1's ASCII sparkline
// of the event's samples (latencyCommandGenSparkeline, sparklineRender with
// 80 columns, 4 rows, the fill charset), oldest first, each labelled with
// how long ago it was (Ns, Nm, Nh, Nd); a verbatim string. An event with no
// samples is Valkey's "No samples available" error.
func cmdLatencyGraph(c *client, x *store.Ctx) {
	event := string(x.Argv[2])
	e := c.s.latency[event]
	if e == nil || e.n == 0 {
		x.W.Error("ERR No samples available for event '" + event + "'")
		return
	}
	now := time.Now().Unix()
	vals := make([]float64, 0, e.n)
	labels := make([]string, 0, e.n)
	var lo, hi int64
	for i := 0; i < e.n; i++ {
		smp := e.samples[(e.next-e.n+i+2*latencySamples)%latencySamples]
		if i == 0 {
			lo, hi = smp.ms, smp.ms
		}
		lo, hi = min(lo, smp.ms), max(hi, smp.ms)
		el := now - smp.at
		var l string
		switch {
		case el < 60:
			l = strconv.FormatInt(el, 10) + "s"
		case el < 3600:
			l = strconv.FormatInt(el/60, 10) + "m"
		case el < 86400:
			l = strconv.FormatInt(el/3600, 10) + "h"
		default:
			l = strconv.FormatInt(el/86400, 10) + "d"
		}
		vals = append(vals, float64(smp.ms))
		labels = append(labels, l)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s - high %d ms, low %d ms (all time high %d ms)\n", event, hi, lo, e.max)
	b.WriteString(strings.Repeat("-", 80) + "\n")
	sparkline(&b, vals, labels, 80, 4)
	x.W.Verbatim(b.String())
}

// sparkline renders values as Valkey's sparkline with fill: rows rows of
// '_', 'o', '#' (a column's level) over '|' (below its level), then, after
// one blank line, each label written downwards under its column; more
// values than columns continue in further blocks separated by a newline.
func sparkline(b *strings.Builder, vals []float64, labels []string, columns, rows int) {
	const charset = "_o#"
	lo, hi := vals[0], vals[0]
	for _, v := range vals {
		lo, hi = min(lo, v), max(hi, v)
	}
	rel := hi - lo
	if rel == 0 {
		rel = 1
	}
	steps := len(charset) * rows
	for off := 0; off < len(vals); off += columns {
		if off != 0 {
			b.WriteByte('\n')
		}
		n := min(columns, len(vals)-off)
		line := make([]byte, n)
		for row := 0; ; row++ {
			more := false
			for j := range line {
				line[j] = ' '
			}
			if row < rows {
				more = true
				for j := 0; j < n; j++ {
					step := int(float64(int((vals[off+j]-lo)*float64(steps))) / rel)
					step = max(0, min(step, steps-1))
					idx := step - (rows-row-1)*len(charset)
					if idx >= 0 && idx < len(charset) {
						line[j] = charset[idx]
					} else if idx >= len(charset) {
						line[j] = '|'
					}
				}
			} else if row-rows < 1 {
				more = true // the blank line above the labels
			} else {
				k := row - rows - 1
				for j := 0; j < n; j++ {
					if l := labels[off+j]; len(l) > k {
						more = true
						line[j] = l[k]
					}
				}
			}
			if !more {
				break
			}
			b.Write(line)
			b.WriteByte('\n')
		}
	}
}
