package server

import (
	"errors"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/emqd/emqd/internal/store"
)

// The memory cron (docs/operations.md §5.1): what the collector keeps and
// gives back without MEMORY PURGE.
//
// Go's collector lets the heap grow to twice the live data before it
// collects (GOGC 100), and the free pages it keeps after a burst are
// returned to the system only slowly, so the resident set of a server that
// took a burst stays near twice its data for minutes. Valkey's allocator
// (jemalloc with its background thread) returns dirty pages within seconds.
// Three rules, every tick (hz times a second of the server clock, so
// clock.Manual and EMQ.DEBUG CLOCK drive them in tests):
//
//   - The collector's target follows the data: the heap may grow by
//     gcHeadroomFloor or by an eighth of the live data, whichever is more
//     (GOGC 100 at gcHeadroomFloor of live data, gcMinPercent from eight
//     times that, more for a smaller heap), so a big keyspace keeps about
//     1.12 times itself resident, not twice. The live data is the least
//     heap the last gcMarkRing collections marked while the keyspace held
//     about as many keys as now (liveBase): a collection under load also
//     marks what was allocated while it marked, and that floating garbage
//     gets no headroom of its own (gcPercentAbove);
//     with maxmemory set the runtime's soft limit (an eighth above it) also
//     applies (memory.go). The directive gogc (default auto) replaces the
//     derived percentage with a fixed one, for a user who would rather
//     spend memory than the collector's CPU (the measured trade is in
//     docs/operations.md §5.1). Under auto a GOGC in the environment wins:
//     the server then keeps the percentage it found. An embedded server
//     sets the process's percentage while it runs and puts back the one it
//     found when it closes.
//   - Idle purge: once no command ran for purgeIdleMs and the collector has
//     at least purgeMinBytes (and a sixteenth of the live data) it could give
//     back (free pages kept, plus what was allocated since the last
//     collection beyond the live data), the server runs a full collection
//     and returns every free page (debug.FreeOSMemory, as MEMORY PURGE), on
//     its own goroutine, without the store lock. Cost: one collection, a
//     mark of the live data (about 1 ms of CPU per 10 MB of pointers), once
//     per idle period at most, and only after enough churn. (A keyspace
//     whose keys turned over needs no rebuild first: its table keeps its
//     size, internal/store/keytable.go.)
//   - After FLUSHALL or FLUSHDB of a heap of purgeMinBytes or more, the
//     same purge runs at once (Valkey frees the flushed data at once): the
//     flushed values are garbage the collector would otherwise reach only
//     when the heap grew to its old target again.
//
// INFO memory shows the collector's share (info.go): the live data at the
// last collection, the heap's target, the GOGC in force, the free pages
// kept and returned, the collector's CPU fraction and the purges.

const (
	gcHeadroomFloor = 4 << 20
	// gcMinPercent is the GOGC of a big heap: an eighth of the live data
	// (12.5%, rounded down), measured in docs/operations.md §5.1.
	gcMinPercent  = 12
	purgeIdleMs   = 2000
	purgeMinBytes = 4 << 20
	// gcMarkRing is how many collections' marks liveBase takes the least
	// of.
	gcMarkRing = 4
)

// memCron is the cron's state (store lock, but for the atomics).
type memCron struct {
	periodic
	lastCmds   int64 // total_commands_processed at the previous tick
	lastActive int64 // server clock (ms) when commands last ran
	purgedCmds int64 // total_commands_processed at the last purge
	gcPercent  int   // the GOGC set (0: not yet)
	gcFound    int   // the GOGC found at start, put back at Close
	gcEnv      bool  // GOGC is in the environment (auto then keeps gcFound)
	// marks are the heaps the last collections marked and the keys the
	// keyspace held then (a ring, markN filled), seen at ticks when
	// /gc/cycles/total moved past gcCycles: auto's live data is the least
	// mark of about the same keys (liveBase).
	marks    [gcMarkRing]gcMark
	markN    int
	markAt   int
	gcCycles uint64
	keys     uint64 // the keyspace's keys at the last tick
	started  bool   // startMemCron ran (setGOGC applies at once)
	// gcFixed is the directive gogc: a percentage, or 0 for auto.
	gcFixed    atomic.Int64
	purging    atomic.Bool
	purges     atomic.Int64 // purges run (INFO mem_purges)
	purgeNs    atomic.Int64 // the last one's duration
	flushPurge atomic.Int64 // purges run after a flush (tests)
}

// startMemCron arms the cron (Start).
func (s *Server) startMemCron() {
	g := &s.mem.cron
	s.store.Lock()
	g.lastActive = s.clock.NowMs()
	g.gcEnv = os.Getenv("GOGC") != ""
	x := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(x)
	g.gcFound = 100
	if x[0].Value.Kind() == metrics.KindUint64 {
		g.gcFound = int(x[0].Value.Uint64())
	}
	g.started = true
	live, _, _ := heapState()
	s.setGCPercentLocked(live)
	s.armMemCronLocked()
	s.store.Unlock()
	s.OnClose(func() error {
		s.store.Lock()
		defer s.store.Unlock()
		g.halt()
		if g.gcPercent != 0 && g.gcPercent != g.gcFound {
			debug.SetGCPercent(g.gcFound)
		}
		return nil
	})
}

// checkGOGC is the directive gogc's check: auto (any case), or a
// percentage from 1 to 10000 as Go's GOGC (100: the heap may grow by its
// live data before a collection; 25: by a quarter).
func checkGOGC(v string) (string, error) {
	if strings.EqualFold(v, "auto") {
		return "auto", nil
	}
	n, ok := parseLL(v)
	if !ok || n < 1 || n > 10000 {
		return "", errors.New("argument must be 'auto' or a percentage between 1 and 10000")
	}
	return strconv.FormatInt(n, 10), nil
}

// setGOGC applies the directive gogc (checked): at once once the cron
// runs (CONFIG SET, store lock held), else at its start.
func (s *Server) setGOGC(v string) {
	n, _ := strconv.ParseInt(v, 10, 64) // auto: 0
	s.mem.cron.gcFixed.Store(n)
	if s.mem.cron.started {
		live, _, _ := heapState()
		s.setGCPercentLocked(live)
	}
}

// gcTarget is the GOGC the cron keeps for a live heap of live bytes: the
// directive's percentage, else (auto) the one found in the environment's
// GOGC, else gcPercentFor(live).
func (g *memCron) gcTarget(live uint64) int {
	switch f := g.gcFixed.Load(); {
	case f > 0:
		return int(f)
	case g.gcEnv:
		return g.gcFound
	}
	return gcPercentAbove(live, g.liveBase(live, g.keys))
}

// gcMark is one collection's mark (bytes) and the keys of every
// database when the cron saw it.
type gcMark struct{ live, keys uint64 }

// noteMark records the heap the last collection marked, with the keys the
// keyspace holds, when a collection ran since the previous call (cycles:
// /gc/cycles/total).
func (g *memCron) noteMark(live, keys, cycles uint64) {
	if cycles == g.gcCycles || live == 0 {
		return
	}
	g.gcCycles = cycles
	g.marks[g.markAt] = gcMark{live, keys}
	g.markAt = (g.markAt + 1) % gcMarkRing
	g.markN = min(g.markN+1, gcMarkRing)
}

// liveBase is auto's estimate of the live data: the least of live (the
// last mark) and the marks of the last gcMarkRing collections taken while
// the keyspace held about as many keys as now (within a sixty-fourth:
// keys). A collection marks the live data and everything allocated while
// it marked (allocated black: floating garbage, kept until the next
// collection), which under a sustained job cycle is 1-3% of a big heap
// and more when the mark is slow (a loaded machine); the least mark of the
// same keyspace is the nearest to the data itself. A keyspace that grew
// or shrank since (a fill, a mass deletion) has no such marks: its last
// mark is the estimate, as before (docs/operations.md §5.1).
func (g *memCron) liveBase(live, keys uint64) uint64 {
	b := live
	for _, m := range g.marks[:g.markN] {
		if m.keys+m.keys/64 >= keys && m.keys <= keys+keys/64 {
			b = min(b, m.live)
		}
	}
	return b
}

// gcPercentAbove is the GOGC that puts the heap's target where
// gcPercentFor(base) puts it for a heap that marked base: base times
// (100 + gcPercentFor(base))/100, expressed over live (the heap the
// last collection marked, at least base), and at least gcMinPercent/2, so
// that a heap growing fast (a fill: the least of the recent marks lags
// behind) is not collected after every few allocations. With live ==
// base it is gcPercentFor(live).
func gcPercentAbove(live, base uint64) int {
	p := gcPercentFor(base)
	if live <= base || base == 0 {
		return gcPercentFor(live)
	}
	q := int((float64(base)*float64(100+p))/float64(live)) - 100
	return max(gcMinPercent/2, min(p, q))
}

// setGCPercentLocked sets the process's GOGC to gcTarget(live) when it
// differs from the one set (store lock held).
func (s *Server) setGCPercentLocked(live uint64) {
	g := &s.mem.cron
	if p := g.gcTarget(live); p != g.gcPercent {
		if g.gcPercent != 0 || p != g.gcFound {
			debug.SetGCPercent(p)
		}
		g.gcPercent = p
	}
}

func (s *Server) armMemCronLocked() { s.mem.cron.arm(s.clock, s.hzPeriodMs(), s.memCronTick) }

var cronSamples = []string{
	"/gc/heap/live:bytes",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/free:bytes",
	"/gc/cycles/total:gc-cycles",
	"/memory/classes/heap/stacks:bytes",
}

// heapState reads the live data at the last collection, the heap objects
// now (live and not yet freed) and the free pages kept.
func heapState() (live, objects, free uint64) {
	live, objects, free, _, _ = heapStateCycles()
	return
}

// heapStateCycles is heapState, the collections run since start and the
// goroutine stacks (objects plus stacks is used_memory, usedMemory).
func heapStateCycles() (live, objects, free, cycles, stacks uint64) {
	s := make([]metrics.Sample, len(cronSamples))
	for i, n := range cronSamples {
		s[i].Name = n
	}
	metrics.Read(s)
	v := func(i int) uint64 {
		if s[i].Value.Kind() == metrics.KindUint64 {
			return s[i].Value.Uint64()
		}
		return 0
	}
	return v(0), v(1), v(2), v(3), v(4)
}

// gcPercentFor is the GOGC that lets the heap grow by the larger of
// gcHeadroomFloor and an eighth of live (bytes) before the next collection:
// gcMinPercent (12) from eight times the floor (32 MB of live data), 100 at
// the floor, more below it, at most 400. Below the floor the heap's target
// is the larger of live plus 4 MB and the runtime's minimum heap (4 MB at
// GOGC 100, scaled by GOGC): 6.7 to 16 MB for 1 to 4 MB of live data (the
// least, 6.7 MB, at 2.7 MB live), so a small heap is not collected every
// few hundred KB allocated.
func gcPercentFor(live uint64) int {
	if live == 0 {
		return 400
	}
	return int(max(gcMinPercent, min(400, 100*gcHeadroomFloor/live)))
}

// reclaimable is what a purge could give back: the free pages kept plus
// the heap objects beyond the live data of the last collection.
func reclaimable(live, objects, free uint64) uint64 {
	r := free
	if objects > live {
		r += objects - live
	}
	return r
}

// worthPurge is the idle purge's threshold: r bytes to give back are
// worth a full collection of live bytes when they are purgeMinBytes or
// more and a sixteenth of live or more. A sixteenth, not more: the
// collector's headroom is an eighth of a big heap (gcPercentFor), so right
// after a fill the garbage and free pages are about a twelfth of the live
// data (200,000 jobs: 5.6 MB over 48 MB; docs/operations.md §5.1).
func worthPurge(r, live uint64) bool {
	return r >= purgeMinBytes && r >= live/16
}

func (s *Server) memCronTick() {
	s.store.Lock()
	g := &s.mem.cron
	if g.stopped() {
		s.store.Unlock()
		return
	}
	now := s.clock.NowMs()
	if s.statCmds != g.lastCmds {
		g.lastCmds, g.lastActive = s.statCmds, now
	}
	live, objects, free, cycles, stacks := heapStateCycles()
	// used_memory_peak is sampled here too, from the same reading, as
	// Valkey's serverCron does (cronUpdateMemoryStats, every 100 ms), not
	// only when INFO or maxmemory reads the memory.
	s.mem.peak = max(s.mem.peak, int64(objects+stacks))
	g.keys = s.keyCountLocked()
	g.noteMark(live, g.keys, cycles)
	s.setGCPercentLocked(live)
	purge := false
	if now-g.lastActive >= purgeIdleMs && g.purgedCmds != s.statCmds {
		if worthPurge(reclaimable(live, objects, free), live) {
			purge = true
		}
		// Nothing worth a collection: look again only after more commands.
		g.purgedCmds = s.statCmds
	}
	s.armMemCronLocked()
	s.store.Unlock()
	if purge {
		s.purgeMemory(false)
	}
}

// keyCountLocked is the keys of every database (store lock held).
func (s *Server) keyCountLocked() uint64 {
	n := 0
	for i := 0; i < s.store.NumDBs(); i++ {
		n += s.store.DB(i).Len()
	}
	return uint64(n)
}

// purgeSoon runs a purge after a flush when the heap is big enough to be
// worth one (store lock held; the purge runs on its own goroutine).
func (s *Server) purgeSoon() {
	_, objects, free := heapState()
	if objects+free < purgeMinBytes {
		return
	}
	go s.purgeMemory(true)
}

// purgeMemory is a full collection that returns every free page to the
// system; one at a time (a purge asked for while one runs is dropped: the
// running one collects what it was for, unless it was allocated after it
// started, which the next idle tick sees).
func (s *Server) purgeMemory(flush bool) {
	g := &s.mem.cron
	if !g.purging.CompareAndSwap(false, true) {
		return
	}
	defer g.purging.Store(false)
	start := time.Now()
	debug.FreeOSMemory()
	g.purgeNs.Store(int64(time.Since(start)))
	g.purges.Add(1)
	if flush {
		g.flushPurge.Add(1)
	}
}

// wrapFlushPurge makes FLUSHALL and FLUSHDB purge once they answered +OK.
func (s *Server) wrapFlushPurge() {
	for _, name := range []string{"flushall", "flushdb"} {
		e := s.reg.cmds[name]
		if e == nil || e.handler == nil {
			continue
		}
		orig := e.handler
		e.handler = func(x *store.Ctx) {
			orig(x)
			if b := x.W.Buf; len(b) >= 5 && string(b[len(b)-5:]) == "+OK\r\n" && !s.store.Loading() {
				s.purgeSoon()
			}
		}
	}
}

var infoSamples = []string{
	"/memory/classes/heap/objects:bytes",  // 0
	"/memory/classes/heap/unused:bytes",   // 1
	"/memory/classes/heap/free:bytes",     // 2
	"/memory/classes/heap/released:bytes", // 3
	"/memory/classes/heap/stacks:bytes",   // 4
	"/memory/classes/total:bytes",         // 5
	"/gc/heap/live:bytes",                 // 6
	"/gc/heap/goal:bytes",                 // 7
	"/gc/cycles/total:gc-cycles",          // 8
	"/cpu/classes/gc/total:cpu-seconds",   // 9
	"/cpu/classes/total:cpu-seconds",      // 10
	"/gc/gogc:percent",                    // 11
}

// memoryInfo adds the collector's fields of INFO memory (store lock held;
// docs/operations.md §5.1 lists them): Valkey's allocator_* fields read
// from the Go runtime, and emqd's own go_* and mem_* fields.
func (s *Server) memoryInfo(add func(field, value string)) {
	x := make([]metrics.Sample, len(infoSamples))
	for i, n := range infoSamples {
		x[i].Name = n
	}
	metrics.Read(x)
	u := func(i int) uint64 {
		switch x[i].Value.Kind() {
		case metrics.KindUint64:
			return x[i].Value.Uint64()
		case metrics.KindFloat64:
			return uint64(x[i].Value.Float64())
		}
		return 0
	}
	f := func(i int) float64 {
		if x[i].Value.Kind() == metrics.KindFloat64 {
			return x[i].Value.Float64()
		}
		return 0
	}
	ui := func(name string, v uint64) { add(name, strconv.FormatUint(v, 10)) }
	ratio := func(a, b uint64) string {
		if b == 0 {
			return "0.00"
		}
		return strconv.FormatFloat(float64(a)/float64(b), 'f', 2, 64)
	}
	allocated := u(0) + u(4)
	active := allocated + u(1)
	resident := u(5) - u(3)
	ui("allocator_allocated", allocated)
	ui("allocator_active", active)
	ui("allocator_resident", resident)
	add("allocator_frag_ratio", ratio(active, allocated))
	ui("allocator_frag_bytes", active-allocated)
	add("allocator_rss_ratio", ratio(resident, active))
	ui("allocator_rss_bytes", resident-active)
	live, goal := u(6), u(7)
	ui("go_heap_live", live)
	ui("go_heap_goal", goal)
	garbage := uint64(0)
	if u(0) > live {
		garbage = u(0) - live
	}
	ui("go_heap_unreclaimed", garbage)
	ui("go_heap_free_kept", u(2))
	ui("go_heap_released", u(3))
	// The runtime reports GOGC=off as -1 in a uint64: shown as -1.
	add("go_gc_percent", strconv.FormatInt(int64(u(11)), 10))
	ui("go_gc_cycles", u(8))
	share := 0.0
	if t := f(10); t > 0 {
		share = f(9) / t
	}
	add("go_gc_cpu_fraction", strconv.FormatFloat(share, 'f', 4, 64))
	g := &s.mem.cron
	ui("mem_purges", uint64(g.purges.Load()))
	add("mem_purge_last_ms", strconv.FormatFloat(float64(g.purgeNs.Load())/1e6, 'f', 1, 64))
	ui("mem_maps_shrunk", uint64(s.store.MapsShrunk))
}
