package server

import (
	"errors"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"
)

// maxmemory with the noeviction policy (docs/operations.md §5). Memory is
// the Go runtime's own account (runtime/metrics): the bytes of heap objects
// not yet freed plus goroutine stacks, the figure INFO memory reports as
// used_memory. A command flagged denyoom (and, inside MULTI, any command
// but EXEC, DISCARD, QUIT and RESET; EXEC when it holds a denyoom command)
// is refused with Valkey's OOM text while used_memory is above maxmemory;
// everything else, reads and deletes and the verbs that drain a queue,
// goes on. The runtime's soft memory limit (debug.SetMemoryLimit) is set
// 1/8 above maxmemory, so the collector works harder as the limit nears.
//
// Reading runtime/metrics costs microseconds, so a reading serves for up to
// memFresh, plus the argument bytes of the denyoom commands run since (what
// they may have stored). Above the limit the reading is taken again, and
// when the excess may be garbage (a write ran, or the heap grew, since the
// last collection the server forced) a collection is forced first, at most
// one per ten times the last one's duration, so refusals stay cheap and
// collections take a bounded share of the time at the limit.

// atMemoryLimit is store.Ctx.AtMemoryLimit: maxmemory is set and used
// memory is above it (the measure the OOM refusals use; store lock held).
func (s *Server) atMemoryLimit() bool {
	return s.maxMemory.Load() > 0 && s.overMaxmemory(nanotime(), 0)
}

// errOOM is Valkey's shared.oomerr.
const errOOM = "OOM command not allowed when used memory > 'maxmemory'."

// memFresh is how long a memory reading is reused.
const memFresh = int64(time.Millisecond)

// memGuard is the maxmemory state; guarded by the store lock.
type memGuard struct {
	measured   int64 // used_memory at the last reading
	at         int64 // when (nanotime); 0: never
	since      int64 // argument bytes of denyoom commands since
	peak       int64
	forcedAt   int64 // nanotime of the last forced collection
	forcedDur  int64
	forcedMuts uint64  // store mutations then
	forcedHeap int64   // used_memory right after it
	forced     int64   // collections forced
	cron       memCron // memcron.go
}

var memSamples = []string{"/memory/classes/heap/objects:bytes", "/memory/classes/heap/stacks:bytes"}

// usedMemory reads the runtime's account: heap objects plus stacks.
func usedMemory() int64 {
	s := make([]metrics.Sample, len(memSamples))
	for i, n := range memSamples {
		s[i].Name = n
	}
	metrics.Read(s)
	var n int64
	for _, x := range s {
		if x.Value.Kind() == metrics.KindUint64 {
			n += int64(x.Value.Uint64())
		}
	}
	return n
}

// measure takes a fresh reading (store lock).
func (s *Server) measureMemory(now int64) int64 {
	g := &s.mem
	g.measured, g.at, g.since = usedMemory(), now, 0
	if g.measured > g.peak {
		g.peak = g.measured
	}
	return g.measured
}

// overMaxmemory reports whether used_memory is above maxmemory (false when
// maxmemory is 0), for a command about to run with args bytes of
// arguments that may be stored. Store lock.
func (s *Server) overMaxmemory(now int64, args int64) bool {
	limit := s.maxMemory.Load()
	if limit <= 0 {
		return false
	}
	g := &s.mem
	if now-g.at > memFresh {
		s.measureMemory(now)
	}
	if g.measured+g.since <= limit {
		g.since += args
		return false
	}
	if g.at != now {
		s.measureMemory(now)
		if g.measured <= limit {
			g.since += args
			return false
		}
	}
	// Above the limit: is some of it garbage a collection would free?
	muts := s.store.Mutations()
	mayFree := muts != g.forcedMuts || g.measured-g.forcedHeap > limit/16
	if mayFree && (g.forcedAt == 0 || now-g.forcedAt >= 10*g.forcedDur) {
		start := nanotime()
		runtime.GC()
		end := nanotime()
		g.forced++
		g.forcedAt, g.forcedDur, g.forcedMuts = end, end-start, muts
		g.forcedHeap = s.measureMemory(end)
		if g.measured <= limit {
			g.since += args
			return false
		}
	}
	return true
}

// argBytes is the total length of argv's arguments.
func argBytes(argv [][]byte) int64 {
	var n int64
	for _, a := range argv[1:] {
		n += int64(len(a))
	}
	return n
}

// setMaxmemory applies maxmemory: the limit the dispatcher checks and the
// runtime's soft memory limit (1/8 above it; none when 0).
func (s *Server) setMaxmemory(v int64) {
	old := s.maxMemory.Swap(v)
	switch {
	case v > 0:
		lim := v + v/8
		if lim < v {
			lim = math.MaxInt64 // maxmemory near 2^63 and above (it reads as 2^63-1)
		}
		debug.SetMemoryLimit(lim)
	case old > 0:
		debug.SetMemoryLimit(math.MaxInt64)
	}
	if v > 0 && v < 1<<20 {
		s.log.Warn("WARNING: You specified a maxmemory value that is less than 1MB (current value is " +
			strconv.FormatInt(v, 10) + " bytes). Are you sure this is what you really want?")
	}
}

// errPolicy refuses every maxmemory-policy but noeviction.
var errPolicy = errors.New("emqd supports only the noeviction policy: a job queue never evicts keys (an evicted key is a lost job); writes that need memory are refused with OOM at the limit instead")

// checkPolicy is maxmemory-policy's check (after the enum's).
func checkPolicy(v string) (string, error) {
	if v != "noeviction" {
		return "", errPolicy
	}
	return v, nil
}

// rssBytes is the resident set size (/proc/self/statm), 0 when unknown.
func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

// totalSystemMemory is MemTotal of /proc/meminfo in bytes, 0 when unknown.
func totalSystemMemory() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "MemTotal:"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n * 1024
			}
		}
	}
	return 0
}
