package server

import (
	"fmt"
	"runtime/metrics"
	"strconv"
	"strings"

	"github.com/emqd/emqd/internal/store"
)

// MEMORY STATS, DOCTOR and MALLOC-STATS (docs/compat.md §1.5): Valkey
// 8.0.1's reply shapes (memoryCommand, getMemoryDoctorReport) with the Go
// runtime's figures where Valkey reports jemalloc's. The MEMORY family is
// a server command here because these need the server's accounting;
// USAGE and PURGE keep the store's handlers.

// memoryCommand is the MEMORY container: USAGE and PURGE from storeCmds
// (the store's "memory" spec), STATS, DOCTOR, MALLOC-STATS and HELP here.
func memoryCommand(storeCmds []*store.CommandSpec) serverCmd {
	mc := serverCmd{spec: store.NewCommand("memory", -2, nil)}
	for _, cs := range storeCmds {
		if cs.Name == "memory" {
			for _, sub := range cs.Subcommands {
				mc.subs = append(mc.subs, serverCmd{spec: sub})
			}
		}
	}
	mc.subs = append(mc.subs,
		serverCmd{spec: store.NewCommand("memory|stats", 2, nil), run: cmdMemoryStats},
		serverCmd{spec: store.NewCommand("memory|doctor", 2, nil), run: cmdMemoryDoctor},
		serverCmd{spec: store.NewCommand("memory|malloc-stats", 2, nil), run: cmdMemoryMallocStats},
		serverCmd{spec: store.NewCommand("memory|help", 2, nil, store.FlagLoading, store.FlagStale), run: helpReply("MEMORY",
			"DOCTOR", "    Return memory problems reports.",
			"MALLOC-STATS", "    Return internal statistics report from the memory allocator.",
			"PURGE", "    Attempt to purge dirty pages for reclamation by the allocator.",
			"STATS", "    Return information about the memory usage of the server.",
			"USAGE <key> [SAMPLES <count>]", "    Return memory in bytes used by <key> and its value. Nested values are",
			"    sampled up to <count> times (default: 5, 0 means sample all).")},
	)
	return mc
}

// memOverhead is Valkey's serverMemOverhead, from the Go runtime.
type memOverhead struct {
	peak, total, startup, aofBuf, overheadTotal int64
	dbs                                         [][3]int64 // db, main, expires
	keys, bytesPerKey, dataset                  int64
	datasetPerc, peakPerc                       float64
	allocated, active, resident                 int64
	allocFrag, allocRSS, rssExtra, totalFrag    float64
	allocFragBytes, allocRSSBytes, rssExtraB    int64
	totalFragBytes                              int64
	clients                                     int64
	// clientsNormal is MEMORY STATS clients.normal (clientsMemory), set
	// by MEMORY DOCTOR for its client-buffer rule.
	clientsNormal int64
}

// runtimeBytes reads runtime/metrics byte counters by name.
func runtimeBytes(names ...string) []int64 {
	s := make([]metrics.Sample, len(names))
	for i, n := range names {
		s[i].Name = n
	}
	metrics.Read(s)
	out := make([]int64, len(names))
	for i, x := range s {
		if x.Value.Kind() == metrics.KindUint64 {
			out[i] = int64(x.Value.Uint64())
		}
	}
	return out
}

// memoryOverhead gathers MEMORY STATS (store lock held): total.allocated
// is used_memory (INFO memory), the allocator figures are the runtime's
// heap: allocated its live objects, active the spans in use, resident
// everything the runtime mapped minus what it released to the OS.
func (s *Server) memoryOverhead() memOverhead {
	var m memOverhead
	m.total = s.measureMemory(nanotime())
	m.peak = max(s.mem.peak, m.total)
	m.startup = min(s.startupMem, m.total)
	if a := s.AOF(); a != nil {
		for _, kv := range a.Info() {
			if kv[0] == "aof_buffer_length" {
				m.aofBuf, _ = strconv.ParseInt(kv[1], 10, 64)
			}
		}
	}
	m.overheadTotal = m.startup + m.aofBuf
	for i := 0; i < s.store.NumDBs(); i++ {
		db := s.store.DB(i)
		if db.Len() == 0 {
			continue
		}
		main, exp := db.TableBytes()
		m.dbs = append(m.dbs, [3]int64{int64(i), main, exp})
		m.overheadTotal += main + exp
		m.keys += int64(db.Len())
	}
	net := m.total - m.startup
	if m.keys > 0 {
		m.bytesPerKey = net / m.keys
	}
	m.dataset = max(0, m.total-m.overheadTotal)
	if net > 0 {
		m.datasetPerc = float64(float32(float64(m.dataset) * 100 / float64(net)))
	}
	if m.peak > 0 {
		m.peakPerc = float64(float32(float64(m.total) * 100 / float64(m.peak)))
	}
	r := runtimeBytes("/memory/classes/heap/objects:bytes", "/memory/classes/heap/unused:bytes",
		"/memory/classes/total:bytes", "/memory/classes/heap/released:bytes")
	m.allocated, m.active, m.resident = r[0], r[0]+r[1], r[2]-r[3]
	rss := rssBytes()
	ratio := func(a, b int64) float64 {
		if b <= 0 {
			return 0
		}
		return float64(float32(float64(a) / float64(b)))
	}
	m.allocFrag, m.allocFragBytes = ratio(m.active, m.allocated), m.active-m.allocated
	m.allocRSS, m.allocRSSBytes = ratio(m.resident, m.active), m.resident-m.active
	m.rssExtra, m.rssExtraB = ratio(rss, m.resident), rss-m.resident
	m.totalFrag, m.totalFragBytes = ratio(rss, m.total), rss-m.total
	s.clientsMu.Lock()
	m.clients = int64(len(s.clients))
	s.clientsMu.Unlock()
	return m
}

// replyDouble is Valkey's addReplyDouble of a float metric: the shortest
// text that reads back as the value.
func replyDouble(x *store.Ctx, v float64) {
	x.W.Double(strconv.FormatFloat(v, 'g', -1, 64))
}

// cmdMemoryStats is MEMORY STATS: Valkey 8.0.1's 31 fields and one map per
// database holding keys, in its order. Values that are process facts
// differ (docs/compat.md §1.5): replication.backlog, clients.slaves,
// cluster.links, lua.caches, functions.caches, the hashtable lut and
// rehashing fields and allocator.muzzy are 0 (emqd has none of these);
// clients.normal is every other client's memory (clientsMemory); the
// db.<n> overheads are the slot arrays of the keyspace's and the TTLs'
// tables (store.DB.TableBytes), as Valkey's are its two dicts' bucket
// arrays and entries.
func cmdMemoryStats(c *client, x *store.Ctx) {
	m := c.s.memoryOverhead()
	w := x.W
	w.Map(31 + len(m.dbs))
	kv := func(k string, v int64) { w.BulkString(k); w.Int(v) }
	kd := func(k string, v float64) { w.BulkString(k); replyDouble(x, v) }
	kv("peak.allocated", m.peak)
	kv("total.allocated", m.total)
	kv("startup.allocated", m.startup)
	kv("replication.backlog", 0)
	kv("clients.slaves", 0)
	kv("clients.normal", c.s.clientsMemory(c))
	kv("cluster.links", 0)
	kv("aof.buffer", m.aofBuf)
	kv("lua.caches", 0)
	kv("functions.caches", 0)
	for _, d := range m.dbs {
		w.BulkString("db." + strconv.FormatInt(d[0], 10))
		w.Map(2)
		kv("overhead.hashtable.main", d[1])
		kv("overhead.hashtable.expires", d[2])
	}
	kv("overhead.db.hashtable.lut", 0)
	kv("overhead.db.hashtable.rehashing", 0)
	kv("overhead.total", m.overheadTotal)
	kv("db.dict.rehashing.count", 0)
	kv("keys.count", m.keys)
	kv("keys.bytes-per-key", m.bytesPerKey)
	kv("dataset.bytes", m.dataset)
	kd("dataset.percentage", m.datasetPerc)
	kd("peak.percentage", m.peakPerc)
	kv("allocator.allocated", m.allocated)
	kv("allocator.active", m.active)
	kv("allocator.resident", m.resident)
	kv("allocator.muzzy", 0)
	kd("allocator-fragmentation.ratio", m.allocFrag)
	kv("allocator-fragmentation.bytes", m.allocFragBytes)
	kd("allocator-rss.ratio", m.allocRSS)
	kv("allocator-rss.bytes", m.allocRSSBytes)
	kd("rss-overhead.ratio", m.rssExtra)
	kv("rss-overhead.bytes", m.rssExtraB)
	kd("fragmentation", m.totalFrag)
	kv("fragmentation.bytes", m.totalFragBytes)
}

// Valkey 8.0.1's MEMORY DOCTOR texts (getMemoryDoctorReport).
const (
	doctorFine  = "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n"
	doctorEmpty = "Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. " +
		"Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting.\n"
	doctorHead = "Sam, I detected a few issues in this Valkey instance memory implants:\n\n"
	doctorPeak = " * Peak memory: In the past this instance used more than 150% the memory that is currently using. " +
		"The allocator is normally not able to release memory after a peak, so you can expect to see a big fragmentation ratio, " +
		"however this is actually harmless and is only due to the memory peak, and if the Valkey instance Resident Set Size (RSS) " +
		"is currently bigger than expected, the memory will be used as soon as you fill the Valkey instance with more data. " +
		"If the memory peak was only occasional and you want to try to reclaim memory, please try the MEMORY PURGE command, " +
		"otherwise the only other option is to shutdown and restart the instance.\n\n"
	doctorFrag = " * High total RSS: This instance has a memory fragmentation and RSS overhead greater than 1.4 (this means that the " +
		"Resident Set Size of the Valkey process is much larger than the sum of the logical allocations Valkey performed). " +
		"This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) " +
		"or may result from a workload that causes the allocator to fragment memory a lot. If the problem is a large peak memory, " +
		"then there is no issue. Otherwise, make sure you are using the Jemalloc allocator and not the default libc malloc. " +
		"Note: The currently used allocator is \"%s\".\n\n"
	doctorAllocFrag = " * High allocator fragmentation: This instance has an allocator external fragmentation greater than 1.1. " +
		"This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) " +
		"or may result from a workload that causes the allocator to fragment memory a lot. You can try enabling 'activedefrag' config option.\n\n"
	doctorAllocRSS = " * High allocator RSS overhead: This instance has an RSS memory overhead is greater than 1.1 (this means that the " +
		"Resident Set Size of the allocator is much larger than the sum what the allocator actually holds). This problem is usually " +
		"due to a large peak memory (check if there is a peak memory entry above in the report), you can try the MEMORY PURGE command to reclaim it.\n\n"
	doctorProcRSS = " * High process RSS overhead: This instance has non-allocator RSS memory overhead is greater than 1.1 (this means " +
		"that the Resident Set Size of the Valkey process is much larger than the RSS the allocator holds). This problem may be due to Lua scripts or Modules.\n\n"
	doctorClientBuf = " * Big client buffers: The clients output buffers in this instance are greater than 200K per client (on average). " +
		"This may result from different causes, like Pub/Sub clients subscribed to channels bot not receiving data fast enough, " +
		"so that data piles on the Valkey instance output buffer, or clients sending commands with large replies or very large " +
		"sequences of commands in the same pipeline. Please use the CLIENT LIST command in order to investigate the issue if it " +
		"causes problems in your instance, or to understand better why certain clients are using a big amount of memory.\n\n"
	doctorTail = "I'm here to keep you safe, Sam. I want to help you.\n"
)

// doctorClientBufMin is the client-buffer rule's bound: more than 200 KiB
// of client memory per connected client, on average (integer division,
// as Valkey's).
const doctorClientBufMin = 200 * 1024

// doctorReport is getMemoryDoctorReport's rules on emqd's figures: under
// 5 MB the instance is "empty"; otherwise a peak above 150% of the current
// use, each ratio above its bound with more than 10 MB behind it, and
// clients' memory (clients.normal, every client's query and output
// buffers: CLIENT LIST tot-mem) above 200 KiB per connected client on
// average (Valkey's big_client_buf: clients_normal / numclients, integer
// division) are reported, in Valkey 8.0.1's order. Its replica-buffer and
// script-cache rules never fire: emqd has no replicas and no script cache.
func doctorReport(m memOverhead) string {
	if m.total < 5<<20 {
		return doctorEmpty
	}
	var b strings.Builder
	if float64(float32(float64(m.peak)/float64(m.total))) > 1.5 {
		b.WriteString(doctorPeak)
	}
	if m.totalFrag > 1.4 && m.totalFragBytes > 10<<20 {
		fmt.Fprintf(&b, doctorFrag, "go")
	}
	if m.allocFrag > 1.1 && m.allocFragBytes > 10<<20 {
		b.WriteString(doctorAllocFrag)
	}
	if m.allocRSS > 1.1 && m.allocRSSBytes > 10<<20 {
		b.WriteString(doctorAllocRSS)
	}
	if m.rssExtra > 1.1 && m.rssExtraB > 10<<20 {
		b.WriteString(doctorProcRSS)
	}
	if m.clients > 0 && m.clientsNormal/m.clients > doctorClientBufMin {
		b.WriteString(doctorClientBuf)
	}
	if b.Len() == 0 {
		return doctorFine
	}
	return doctorHead + b.String() + doctorTail
}

// cmdMemoryDoctor is MEMORY DOCTOR: a verbatim string (txt) in RESP3, a
// bulk string in RESP2, as Valkey's.
func cmdMemoryDoctor(c *client, x *store.Ctx) {
	m := c.s.memoryOverhead()
	m.clientsNormal = c.s.clientsMemory(c)
	x.W.Verbatim(doctorReport(m))
}

// cmdMemoryMallocStats is MEMORY MALLOC-STATS: Valkey built with jemalloc
// answers jemalloc's own statistics text as a verbatim string; emqd
// answers the Go runtime's memory classes in the same shape, one
// "<runtime/metrics name>: <bytes>" line each, between a begin and an end
// line.
func cmdMemoryMallocStats(c *client, x *store.Ctx) {
	var names []string
	for _, d := range metrics.All() {
		if strings.HasPrefix(d.Name, "/memory/classes/") || strings.HasPrefix(d.Name, "/gc/heap/") {
			if d.Kind == metrics.KindUint64 {
				names = append(names, d.Name)
			}
		}
	}
	vals := runtimeBytes(names...)
	var b strings.Builder
	b.WriteString("___ Begin Go runtime memory statistics ___\n")
	for i, n := range names {
		fmt.Fprintf(&b, "%s: %d\n", n, vals[i])
	}
	b.WriteString("--- End Go runtime memory statistics ---\n")
	x.W.Verbatim(b.String())
}

// clientsMemory is MEMORY STATS clients.normal and INFO memory's
// mem_clients_normal, in bytes: the memory (client.memoryUsage) of every
// connected client, subscribers included, as Valkey 8.0.1 sums CLIENT
// LIST's tot-mem of its normal and pubsub clients. Valkey updates a
// client's figure once its command has run, so a connection's first
// command does not see its own: self, the client asking (nil: none), is
// left out until it has run a command before (docs/operations.md §4).
// Store lock.
func (s *Server) clientsMemory(self *client) int64 {
	s.clientsMu.Lock()
	defer s.clientsMu.Unlock()
	var n int64
	for _, c := range s.clients {
		if c != self || c.totCmds > 0 {
			n += c.memoryUsage()
		}
	}
	return n
}
