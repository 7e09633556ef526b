package server

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/emqd/emqd/internal/store"
)

// INFO (docs/compat.md §1.5; Valkey 8 genValkeyInfoString): sections in
// Valkey's fixed order, "# Name" headers, fields "name:value\r\n", a blank
// line between sections; an unknown section gives an empty bulk. RESP3
// replies a verbatim string.

// infoSections is the output order and whether each belongs to "default".
var infoSections = []struct {
	name, title string
	dflt        bool
}{
	{"server", "Server", true},
	{"clients", "Clients", true},
	{"memory", "Memory", true},
	{"persistence", "Persistence", true},
	{"stats", "Stats", true},
	{"replication", "Replication", true},
	{"cpu", "CPU", true},
	{"module_list", "Modules", true},
	{"commandstats", "Commandstats", false},
	{"errorstats", "Errorstats", true},
	{"latencystats", "Latencystats", false},
	{"cluster", "Cluster", true},
	{"keyspace", "Keyspace", true},
	{"emq", "EMQ", true}, // emqd's own (emqstats.go), after keyspace as Valkey's module sections
}

func cmdInfo(c *client, x *store.Ctx) {
	want := map[string]bool{}
	if len(x.Argv) == 1 {
		want["default"] = true
	}
	for _, a := range x.Argv[1:] {
		want[strings.ToLower(string(a))] = true
	}
	all := want["all"] || want["everything"]
	var b strings.Builder
	n := 0
	for _, sec := range infoSections {
		if !(want[sec.name] || all || (want["default"] && sec.dflt) || (sec.name == "module_list" && want["modules"])) {
			continue
		}
		if n > 0 {
			b.WriteString("\r\n")
		}
		n++
		b.WriteString("# " + sec.title + "\r\n")
		c.s.infoSection(c, sec.name, func(k, v string) {
			b.WriteString(k)
			b.WriteByte(':')
			b.WriteString(v)
			b.WriteString("\r\n")
		})
	}
	x.W.Verbatim(b.String())
}

// InfoText renders INFO sections as the INFO command does (for tests and
// tools); it takes the store lock.
func (s *Server) InfoText(sections ...string) string {
	s.store.Lock()
	defer s.store.Unlock()
	var b strings.Builder
	for i, name := range sections {
		if i > 0 {
			b.WriteString("\r\n")
		}
		s.infoSection(nil, strings.ToLower(name), func(k, v string) { b.WriteString(k + ":" + v + "\r\n") })
	}
	return b.String()
}

func (s *Server) infoSection(c *client, name string, add func(k, v string)) {
	s.mu.Lock()
	gen := s.info[name]
	s.mu.Unlock()
	if gen != nil {
		gen(add)
		return
	}
	i := func(k string, v int64) { add(k, strconv.FormatInt(v, 10)) }
	now := time.Now()
	switch name {
	case "server":
		add("redis_version", "7.2.4")
		add("server_name", "emqd")
		add("emqd_version", Version)
		add("redis_git_sha1", "00000000")
		add("redis_git_dirty", "0")
		add("redis_build_id", "0")
		add("redis_mode", "standalone")
		add("server_mode", "standalone")
		add("os", runtime.GOOS+" "+runtime.GOARCH)
		add("arch_bits", strconv.Itoa(strconv.IntSize))
		add("monotonic_clock", "POSIX clock_gettime")
		add("multiplexing_api", "epoll")
		add("go_version", runtime.Version())
		i("process_id", int64(os.Getpid()))
		add("process_supervised", "no")
		add("run_id", s.runID)
		i("tcp_port", int64(s.port))
		i("server_time_usec", now.UnixMicro())
		up := int64(now.Sub(s.started) / time.Second)
		i("uptime_in_seconds", up)
		i("uptime_in_days", up/86400)
		add("hz", s.Config("hz"))
		add("configured_hz", s.Config("hz"))
		i("lru_clock", now.Unix()&(1<<24-1))
		exe, _ := os.Executable()
		add("executable", exe)
		add("config_file", s.configFile)
		add("io_threads_active", "0")
		for _, l := range s.listenerInfo() {
			add("listener"+strconv.Itoa(l.index), l.value)
		}
	case "clients":
		s.clientsMu.Lock()
		n := len(s.clients)
		watching, watched := 0, 0
		for _, cl := range s.clients {
			if k := cl.watcher.WatchCount(); k > 0 {
				watching++
				watched += k
			}
		}
		s.clientsMu.Unlock()
		i("connected_clients", int64(n))
		add("cluster_connections", "0")
		i("maxclients", s.maxClients.Load())
		peakIn, peakOut := s.recentPeaksLocked()
		i("client_recent_max_input_buffer", peakIn)
		i("client_recent_max_output_buffer", peakOut)
		i("blocked_clients", int64(s.blk.count))
		trkClients, _, _, _ := s.trackingInfo()
		i("tracking_clients", trkClients)
		i("pubsub_clients", int64(s.pubsub.clients))
		i("watching_clients", int64(watching))
		i("clients_in_timeout_table", int64(s.blk.count))
		i("total_watched_keys", int64(watched))
		i("total_blocking_keys", int64(len(s.blk.queues)))
		add("total_blocking_keys_on_nokey", "0")
	case "memory":
		// used_memory is the runtime's account (memory.go): heap objects
		// not yet freed plus goroutine stacks, what maxmemory is held to.
		used := s.measureMemory(nanotime())
		rss := rssBytes()
		i("used_memory", used)
		add("used_memory_human", humanBytes(uint64(used)))
		i("used_memory_rss", rss)
		add("used_memory_rss_human", humanBytes(uint64(rss)))
		i("used_memory_peak", s.mem.peak)
		add("used_memory_peak_human", humanBytes(uint64(s.mem.peak)))
		sys := totalSystemMemory()
		i("total_system_memory", sys)
		add("total_system_memory_human", humanBytes(uint64(sys)))
		// The directive's own value: maxmemory may be above 2^63-1
		// (Valkey keeps it unsigned), where s.maxMemory saturates.
		// Valkey prints it signed (%lld: 18446744073709551615 is -1)
		// and its human form unsigned.
		max, _ := strconv.ParseUint(s.Config("maxmemory"), 10, 64)
		i("maxmemory", int64(max))
		add("maxmemory_human", humanBytes(max))
		add("maxmemory_policy", s.Config("maxmemory-policy"))
		ratio := 0.0
		if used > 0 {
			ratio = float64(rss) / float64(used)
		}
		add("mem_fragmentation_ratio", strconv.FormatFloat(ratio, 'f', 2, 64))
		i("mem_clients_slaves", 0)
		i("mem_clients_normal", s.clientsMemory(c))
		add("mem_allocator", "go")
		add("lazyfree_pending_objects", "0")
		// emqd's own: the runtime's soft limit (none: -1) and the
		// collections forced at the limit.
		if lim := debug.SetMemoryLimit(-1); lim == math.MaxInt64 {
			i("go_memory_limit", -1)
		} else {
			i("go_memory_limit", lim)
		}
		i("go_gc_forced_at_maxmemory", s.mem.forced)
		s.memoryInfo(add)
	case "persistence":
		add("loading", "0")
		add("async_loading", "0")
		add("current_cow_peak", "0")
		i("rdb_changes_since_last_save", s.store.DirtyCount)
		add("rdb_bgsave_in_progress", "0")
		i("rdb_last_save_time", s.started.Unix())
		add("rdb_last_bgsave_status", "ok")
		add("rdb_last_bgsave_time_sec", "-1")
		add("rdb_current_bgsave_time_sec", "-1")
		aof := "0"
		if s.Config("appendonly") == "yes" {
			aof = "1"
		}
		add("aof_enabled", aof)
		add("aof_rewrite_in_progress", "0")
		add("aof_rewrite_scheduled", "0")
		add("aof_last_rewrite_time_sec", "-1")
		add("aof_current_rewrite_time_sec", "-1")
		add("aof_last_bgrewrite_status", "ok")
		add("aof_rewrites", "0")
		add("aof_last_write_status", "ok")
	case "stats":
		i("total_connections_received", s.statConns.Load())
		i("total_commands_processed", s.statCmds)
		add("instantaneous_ops_per_sec", "0")
		i("total_net_input_bytes", s.statNetIn.Load())
		i("total_net_output_bytes", s.statNetOut.Load())
		i("rejected_connections", s.statRejected.Load())
		s.expireInfo(add)
		add("evicted_keys", "0")
		add("keyspace_hits", "0")
		add("keyspace_misses", "0")
		i("pubsub_channels", int64(len(s.pubsub.channels)))
		i("pubsub_patterns", int64(len(s.pubsub.patterns)))
		add("pubsubshard_channels", "0")
		add("latest_fork_usec", "0")
		_, trkKeys, trkItems, trkPrefixes := s.trackingInfo()
		i("tracking_total_keys", trkKeys)
		i("tracking_total_items", trkItems)
		i("tracking_total_prefixes", trkPrefixes)
		i("total_blocking_keys", int64(len(s.blk.queues)))
		i("total_error_replies", s.statErrs)
		i("dump_payload_sanitizations", 0)
		i("total_reads_processed", s.statCmds)
		i("total_writes_processed", s.statCmds)
		i("client_query_buffer_limit_disconnections", s.statQbufClosed.Load())
		i("client_output_buffer_limit_disconnections", s.statObufClosed.Load())
		i("acl_access_denied_auth", s.statAuthDenied.Load())
		add("acl_access_denied_cmd", "0")
		add("acl_access_denied_key", "0")
		add("acl_access_denied_channel", "0")
	case "replication":
		add("role", "master")
		add("connected_slaves", "0")
		add("master_failover_state", "no-failover")
		add("master_replid", s.replID)
		add("master_replid2", "0000000000000000000000000000000000000000")
		add("master_repl_offset", "0")
		add("second_repl_offset", "-1")
		add("repl_backlog_active", "0")
		add("repl_backlog_size", "1048576")
		add("repl_backlog_first_byte_offset", "0")
		add("repl_backlog_histlen", "0")
	case "cpu":
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		tv := func(t syscall.Timeval) string {
			return fmt.Sprintf("%d.%06d", t.Sec, t.Usec)
		}
		add("used_cpu_sys", tv(ru.Stime))
		add("used_cpu_user", tv(ru.Utime))
		add("used_cpu_sys_children", "0.000000")
		add("used_cpu_user_children", "0.000000")
	case "commandstats":
		for _, e := range s.reg.allCommands() {
			if e.calls == 0 && e.rejected == 0 {
				continue
			}
			per := 0.0
			if e.calls > 0 {
				per = float64(e.usec) / float64(e.calls)
			}
			add("cmdstat_"+e.name, fmt.Sprintf("calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d",
				e.calls, e.usec, per, e.rejected, e.failed))
		}
	case "errorstats":
		codes := make([]string, 0, len(s.errStats))
		for k := range s.errStats {
			codes = append(codes, k)
		}
		sort.Strings(codes)
		for _, k := range codes {
			add("errorstat_"+k, "count="+strconv.FormatInt(s.errStats[k], 10))
		}
	case "cluster":
		add("cluster_enabled", "0")
	case "keyspace":
		for d := 0; d < s.store.NumDBs(); d++ {
			db := s.store.DB(d)
			if n := db.Len(); n > 0 {
				add("db"+strconv.Itoa(d), fmt.Sprintf("keys=%d,expires=%d,avg_ttl=%d", n, db.ExpiresLen(), db.AvgTTL()))
			}
		}
	}
}

// humanBytes is Valkey's bytesToHuman.
func humanBytes(n uint64) string {
	d := float64(n)
	switch {
	case n < 1024:
		return strconv.FormatUint(n, 10) + "B"
	case n < 1<<20:
		return fmt.Sprintf("%.2fK", d/1024)
	case n < 1<<30:
		return fmt.Sprintf("%.2fM", d/(1<<20))
	case n < 1<<40:
		return fmt.Sprintf("%.2fG", d/(1<<30))
	case n < 1<<50:
		return fmt.Sprintf("%.2fT", d/(1<<40))
	case n < 1<<60:
		return fmt.Sprintf("%.2fP", d/(1<<50))
	}
	return strconv.FormatUint(n, 10) + "B" // as Valkey's bytesToHuman
}
