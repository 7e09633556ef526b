package server

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/emqd/emqd/internal/store"
)

// The latency monitor (docs/compat.md §1.5), as Valkey's latency.c: with
// latency-monitor-threshold N (ms; 0 off), every command that takes N ms
// or more is a sample of the event "command" ("fast-command" for a command
// flagged fast), and an active expiry cycle that does, of "expire-cycle".
// Each event keeps its last 160 samples, one per second (the largest of
// that second), and its all-time largest. LATENCY LATEST, HISTORY and
// RESET answer as Valkey; DOCTOR is emqd's own summary.

const latencySamples = 160

type latencySample struct{ at, ms int64 }

// latencyEvent is one event's samples (store lock).
type latencyEvent struct {
	samples [latencySamples]latencySample
	next    int // where the next sample goes
	n       int // samples held
	max     int64
}

func (e *latencyEvent) last() *latencySample {
	return &e.samples[(e.next+latencySamples-1)%latencySamples]
}

// latencySample records ms for event when it reaches the threshold
// (store lock held).
func (s *Server) latencySample(event string, ms int64) {
	th := s.latencyThreshold.Load()
	if th <= 0 || ms < th {
		return
	}
	if s.latency == nil {
		s.latency = map[string]*latencyEvent{}
	}
	e := s.latency[event]
	if e == nil {
		e = &latencyEvent{}
		s.latency[event] = e
	}
	now := time.Now().Unix()
	if e.n > 0 && e.last().at == now {
		e.last().ms = max(e.last().ms, ms)
	} else {
		e.samples[e.next] = latencySample{at: now, ms: ms}
		e.next = (e.next + 1) % latencySamples
		e.n = min(e.n+1, latencySamples)
	}
	e.max = max(e.max, ms)
}

func latencyCommands() serverCmd {
	return serverCmd{spec: store.NewCommand("latency", -2, nil), subs: []serverCmd{
		{spec: store.NewCommand("latency|latest", 2, nil, store.FlagAdmin, store.FlagNoScript, store.FlagLoading, store.FlagStale), run: cmdLatencyLatest},
		{spec: store.NewCommand("latency|history", 3, nil, store.FlagAdmin, store.FlagNoScript, store.FlagLoading, store.FlagStale), run: cmdLatencyHistory},
		{spec: store.NewCommand("latency|reset", -2, nil, store.FlagAdmin, store.FlagNoScript, store.FlagLoading, store.FlagStale), run: cmdLatencyReset},
		{spec: store.NewCommand("latency|doctor", 2, nil, store.FlagAdmin, store.FlagNoScript, store.FlagLoading, store.FlagStale), run: cmdLatencyDoctor},
		{spec: store.NewCommand("latency|histogram", -2, nil, store.FlagAdmin, store.FlagNoScript, store.FlagLoading, store.FlagStale), run: cmdLatencyHistogram},
		{spec: store.NewCommand("latency|graph", 3, nil, store.FlagAdmin, store.FlagNoScript, store.FlagLoading, store.FlagStale), run: cmdLatencyGraph},
		{spec: store.NewCommand("latency|help", 2, nil, store.FlagLoading, store.FlagStale), run: helpReply("LATENCY",
			"DOCTOR", "    Return a human readable latency analysis report.",
			"GRAPH <event>", "    Return an ASCII latency graph for the <event> class.",
			"HISTORY <event>", "    Return time-latency samples for the <event> class.",
			"LATEST", "    Return the latest latency samples for all events.",
			"RESET [<event> ...]", "    Reset latency data of one or more <event> classes.",
			"    (default: reset all data for all event classes)",
			"HISTOGRAM [COMMAND ...]", "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
			"    If no commands are specified then all histograms are replied.")},
	}}
}

// latencyNames are the events with samples, by name.
func (s *Server) latencyNames() []string {
	names := make([]string, 0, len(s.latency))
	for n := range s.latency {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func cmdLatencyLatest(c *client, x *store.Ctx) {
	s := c.s
	names := s.latencyNames()
	x.W.Array(len(names))
	for _, n := range names {
		e := s.latency[n]
		x.W.Array(4)
		x.W.BulkString(n)
		x.W.Int(e.last().at)
		x.W.Int(e.last().ms)
		x.W.Int(e.max)
	}
}

func cmdLatencyHistory(c *client, x *store.Ctx) {
	e := c.s.latency[string(x.Argv[2])]
	if e == nil {
		x.W.Array(0)
		return
	}
	x.W.Array(e.n)
	for i := 0; i < e.n; i++ {
		smp := e.samples[(e.next-e.n+i+2*latencySamples)%latencySamples]
		x.W.Array(2)
		x.W.Int(smp.at)
		x.W.Int(smp.ms)
	}
}

func cmdLatencyReset(c *client, x *store.Ctx) {
	s := c.s
	n := 0
	if len(x.Argv) == 2 {
		n = len(s.latency)
		s.latency = nil
	} else {
		for _, a := range x.Argv[2:] {
			if _, ok := s.latency[string(a)]; ok {
				delete(s.latency, string(a))
				n++
			}
		}
	}
	x.W.Int(int64(n))
}

// cmdLatencyDoctor is emqd's own report: one line per event.
func cmdLatencyDoctor(c *client, x *store.Ctx) {
	s := c.s
	var b strings.Builder
	th := s.latencyThreshold.Load()
	if th <= 0 {
		b.WriteString("The latency monitor is off: CONFIG SET latency-monitor-threshold <milliseconds> turns it on.\n")
	}
	names := s.latencyNames()
	if len(names) == 0 {
		b.WriteString("No latency spikes recorded.\n")
	} else {
		fmt.Fprintf(&b, "Latency spikes recorded (events of %d ms or more):\n", th)
		for _, n := range names {
			e := s.latency[n]
			var sum int64
			for i := 0; i < e.n; i++ {
				sum += e.samples[(e.next-e.n+i+2*latencySamples)%latencySamples].ms
			}
			fmt.Fprintf(&b, "- %s: %d spikes, average %d ms, latest %d ms, largest %d ms.\n", n, e.n, sum/int64(e.n), e.last().ms, e.max)
		}
		b.WriteString("SLOWLOG GET names the slow commands.\n")
	}
	x.W.BulkString(b.String())
}
