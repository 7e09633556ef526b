package server

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/emqd/emqd/internal/num"
	"github.com/emqd/emqd/internal/resp"
)

// The config table: valkey.conf directives, shared by the command line, the
// config file, Options.Config and CONFIG GET/SET (docs/architecture.md
// §8.3; docs/compat.md §1.5 CONFIG rows).

type paramKind uint8

const (
	kindString  paramKind = iota
	kindInt               // a decimal integer (string2ll) within [min, max]
	kindMem               // a memory value: an integer with an optional unit (k kb m mb g gb)
	kindBool              // yes | no
	kindEnum              // one of enums
	kindSpecial           // parsed by check
)

// param is one directive.
type param struct {
	name     string
	aliases  []string // older names (hash-max-ziplist-*); CONFIG GET patterns list them too
	kind     paramKind
	def      string
	min, max int64
	// unsigned: Valkey keeps the directive in an unsigned type (size_t,
	// unsigned long long, ...): a value is checked as unsigned against
	// [umin, umax] (numericBoundaryCheck), so -1 is out of range, not
	// negative. percent: Valkey's PERCENT_CONFIG ("10%", stored as -10).
	unsigned, percent bool
	umin, umax        uint64
	enums             []string
	immutable         bool // refused by CONFIG SET (still settable at boot)
	// protected is Valkey's PROTECTED_CONFIG (dir, dbfilename): CONFIG SET
	// refuses it with "can't set protected config" (enable-protected-configs
	// is stored without effect, so always).
	protected bool
	// check validates a value and returns its canonical form (kindSpecial;
	// for other kinds it runs after the generic parse).
	check func(v string) (string, error)
	// apply makes a new value take effect (runs at boot and on CONFIG SET).
	apply func(s *Server, v string)
	// noEffect, when set, is why the directive has no effect in emqd:
	// given at start (file, command line, Options), it is logged once with
	// this reason (directives.go; docs/operations.md §3.1).
	noEffect string
	// multi marks a directive taking several words (bind, save,
	// client-output-buffer-limit, ...); the others take exactly one, as in
	// Valkey ("wrong number of arguments").
	multi bool
	value string
	// num is value as an integer, parsed once whenever value is set (0 when
	// it is not one): what configInt reads, so nothing parses a directive
	// while the server runs.
	num int64
}

// setValue stores v, canonical, and its integer form.
func (p *param) setValue(v string) {
	p.value = v
	if pct, ok := strings.CutSuffix(v, "%"); ok && p.percent {
		n, _ := strconv.ParseInt(pct, 10, 64)
		p.num = -n
		return
	}
	// An unsigned value above 2^63-1 (maxmemory 18446744073709551615)
	// reads as 2^63-1: ParseInt saturates.
	p.num, _ = strconv.ParseInt(v, 10, 64)
}

const maxInt = 1<<31 - 1

// paramTable returns a fresh table with Valkey 8's defaults (emqd's where
// they differ: bind 127.0.0.1, save "").
func paramTable() []*param {
	cwd, _ := os.Getwd()
	ints := func(name, def string, min, max int64) *param {
		return &param{name: name, kind: kindInt, def: def, min: min, max: max}
	}
	mem := func(name, def string, min, max int64) *param {
		return &param{name: name, kind: kindMem, def: def, min: min, max: max}
	}
	// uints and umem are ints and mem for a directive Valkey keeps
	// unsigned (size_t, unsigned long, unsigned long long: config.c).
	uints := func(name, def string, min, max uint64) *param {
		return &param{name: name, kind: kindInt, def: def, unsigned: true, umin: min, umax: max}
	}
	umem := func(name, def string, min, max uint64) *param {
		return &param{name: name, kind: kindMem, def: def, unsigned: true, umin: min, umax: max}
	}
	pct := func(p *param) *param { p.percent = true; return p }
	boolean := func(name, def string) *param { return &param{name: name, kind: kindBool, def: def} }
	enum := func(name, def string, vals ...string) *param {
		return &param{name: name, kind: kindEnum, def: def, enums: vals}
	}
	str := func(name, def string) *param { return &param{name: name, kind: kindString, def: def} }
	immutable := func(p *param) *param { p.immutable = true; return p }
	protected := func(p *param) *param { p.protected = true; return p }
	alias := func(p *param, names ...string) *param { p.aliases = names; return p }
	apply := func(p *param, f func(s *Server, v string)) *param { p.apply = f; return p }
	checked := func(p *param, f func(v string) (string, error)) *param { p.check = f; return p }
	none := func(p *param, why string) *param { p.noEffect = why; return p }
	multi := func(p *param) *param { p.multi = true; return p }

	return []*param{
		immutable(ints("port", "6379", 0, 65535)),
		// TLS (tls.go): the port (0: none), the server's certificate and
		// key, the CA that signs clients' certificates, whether clients
		// must present one, the protocol versions.
		immutable(ints("tls-port", "0", 0, 65535)),
		str("tls-cert-file", ""),
		str("tls-key-file", ""),
		checked(str("tls-key-file-pass", ""), checkKeyPass),
		str("tls-ca-cert-file", ""),
		str("tls-ca-cert-dir", ""),
		enum("tls-auth-clients", "yes", "yes", "no", "optional"),
		checked(str("tls-protocols", ""), checkTLSProtocols),
		multi(immutable(checked(str("bind", "127.0.0.1"), checkBind))),
		apply(str("requirepass", ""), func(s *Server, v string) { s.requirepass.Store(&v) }),
		immutable(ints("databases", "16", 1, maxInt)),
		apply(uints("maxclients", "10000", 1, math.MaxUint32), func(s *Server, v string) { s.maxClients.Store(atoi(v)) }),
		// The binary's logger follows it through OnConfigSet (cmd/emqd).
		enum("loglevel", "notice", "debug", "verbose", "notice", "warning", "nothing"),
		immutable(str("logfile", "")),
		protected(str("dir", cwd)),
		immutable(boolean("appendonly", "no")),
		enum("appendfsync", "everysec", "always", "everysec", "no"),
		// A file name inside dir, never a path (Valkey's isValidAOFfilename).
		immutable(checked(str("appendfilename", "appendonly.aof"), baseName("appendfilename", "filename", false))),
		immutable(checked(str("appenddirname", "appendonlydir"), baseName("appenddirname", "dirname", false))),
		immutable(enum("enable-debug-command", "no", "no", "yes", "local")),
		apply(mem("proto-max-bulk-len", "536870912", 1<<20, math.MaxInt64), func(s *Server, v string) { s.maxBulk.Store(atoi(v)) }),
		apply(umem("client-query-buffer-limit", "1073741824", 1<<20, math.MaxInt64), func(s *Server, v string) { s.maxQuery.Store(atoi(v)) }),
		apply(&param{name: "client-output-buffer-limit", kind: kindSpecial, multi: true,
			def:   "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
			check: checkOutputLimit}, func(s *Server, v string) { s.setOutputLimits(v) }),
		{name: "save", kind: kindSpecial, def: "", check: checkSave, multi: true},
		apply(umem("maxmemory", "0", 0, math.MaxUint64), func(s *Server, v string) { s.setMaxmemory(atoi(v)) }),
		// The collector's target (memcron.go, docs/operations.md §5.1):
		// auto, or a fixed percentage as Go's GOGC.
		apply(&param{name: "gogc", kind: kindSpecial, def: "auto", check: checkGOGC}, func(s *Server, v string) { s.setGOGC(v) }),
		// Valkey's names are recognised; only noeviction is accepted
		// (memory.go).
		checked(enum("maxmemory-policy", "noeviction", "volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl",
			"allkeys-lru", "allkeys-lfu", "allkeys-random", "noeviction"), checkPolicy),
		// Stored without effect (no LFU policy is accepted, so OBJECT FREQ
		// always answers Valkey's error: docs/compat.md §2.5), and the
		// active expire cycle's effort (expiry.go).
		none(ints("lfu-log-factor", "10", 0, maxInt), "OBJECT FREQ needs an LFU policy, and emqd accepts only noeviction"),
		none(ints("lfu-decay-time", "1", 0, maxInt), "OBJECT FREQ needs an LFU policy, and emqd accepts only noeviction"),
		ints("active-expire-effort", "1", 1, 10),
		// Encoding thresholds: OBJECT ENCODING follows the hash and sorted-set
		// ones (expiry.go, docs/compat.md §3.6); the others are stored only.
		alias(uints("hash-max-listpack-entries", "512", 0, math.MaxInt64), "hash-max-ziplist-entries"),
		alias(umem("hash-max-listpack-value", "64", 0, math.MaxInt64), "hash-max-ziplist-value"),
		alias(uints("zset-max-listpack-entries", "128", 0, math.MaxInt64), "zset-max-ziplist-entries"),
		alias(umem("zset-max-listpack-value", "64", 0, math.MaxInt64), "zset-max-ziplist-value"),
		none(uints("set-max-intset-entries", "512", 0, math.MaxInt64), "emqd has no sets"),
		none(uints("set-max-listpack-entries", "128", 0, math.MaxInt64), "emqd has no sets"),
		none(uints("set-max-listpack-value", "64", 0, math.MaxInt64), "emqd has no sets"),
		none(alias(ints("list-max-listpack-size", "-2", -maxInt-1, maxInt), "list-max-ziplist-size"), "emqd has no lists"),
		none(ints("list-compress-depth", "0", 0, maxInt), "emqd has no lists"),
		ints("auto-aof-rewrite-percentage", "100", 0, maxInt),
		mem("auto-aof-rewrite-min-size", "67108864", 0, math.MaxInt64),
		// emqd's own: the opt-in stalled-job sweep (docs/verbs.md §4.11).
		ints("emq-sweep-interval-ms", "0", 0, 1<<62),
		ints("emq-max-stalled", "1", 1, maxInt),
		// emqd's own: the Prometheus endpoint ("" off; metrics.go) and the
		// binary's log format (logging.go).
		immutable(str("metrics-addr", "")),
		// emqd's own: the web dashboard on the metrics listener (dashboard.go).
		immutable(boolean("dashboard", "yes")),
		// emqd's own: host names the dashboard answers besides localhost
		// and IP literals (space-separated; "*.example.com" for
		// subdomains): the DNS-rebinding check (docs/operations.md §2.2).
		str("dashboard-allowed-hosts", ""),
		immutable(enum("log-format", "text", "text", "json")),
		apply(uints("tracking-table-max-keys", "1000000", 0, math.MaxInt64), func(s *Server, v string) { s.trkMaxKeys.Store(atoi(v)) }),
		apply(ints("slowlog-log-slower-than", "10000", -1, math.MaxInt64), func(s *Server, v string) { s.slowlogSlower.Store(atoi(v)) }),
		apply(uints("slowlog-max-len", "128", 0, math.MaxInt64), func(s *Server, v string) { s.slowlogMax.Store(atoi(v)) }),
		// The idle-client timeout (clients_cron.go). Several directives
		// below are accepted so valkey.conf files and valkey-server scripts
		// work, and stored without effect: docs/operations.md §3.1 says
		// which, for every directive (TestDirectivesTableComplete).
		apply(ints("timeout", "0", 0, maxInt), func(s *Server, v string) { s.idleTimeout.Store(atoi(v)) }),
		none(ints("tcp-keepalive", "300", 0, maxInt), "Go's own TCP keep-alive (15 s probes) is on for every connection"),
		// Valkey's range, 0 to INT_MAX, stored clamped to 1..500 as its
		// updateHZ does (CONFIG GET then shows the clamped value).
		checked(ints("hz", "10", 0, maxInt), func(v string) (string, error) {
			return strconv.FormatInt(min(max(atoi(v), 1), 500), 10), nil
		}),
		none(immutable(ints("tcp-backlog", "511", 0, maxInt)), "Go's listener uses the kernel's somaxconn"),
		immutable(boolean("daemonize", "no")),
		apply(enum("protected-mode", "yes", "yes", "no"), func(s *Server, v string) { s.protectedMode.Store(v == "yes") }),
		immutable(str("pidfile", "")),
		none(immutable(enum("supervised", "no", "upstart", "systemd", "auto", "no")), "emqd does not notify systemd or upstart; it is ready when the port accepts"),
		none(immutable(boolean("always-show-logo", "no")), "emqd prints no logo"),
		none(immutable(boolean("set-proc-title", "yes")), "the process title is the command line"),
		protected(checked(str("dbfilename", "dump.rdb"), baseName("dbfilename", "filename", true))),
		none(immutable(ints("io-threads", "1", 1, 128)), "every connection has its own goroutine and the Go runtime uses every core"),
		none(str("notify-keyspace-events", ""), "emqd sends no keyspace notifications"),
		none(boolean("lazyfree-lazy-user-del", "no"), "memory is freed by Go's collector either way"),
		none(boolean("lazyfree-lazy-user-flush", "no"), "memory is freed by Go's collector either way"),
		boolean("aof-load-truncated", "yes"),
		boolean("aof-use-rdb-preamble", "yes"),
		none(boolean("aof-timestamp-enabled", "no"), "no timestamp annotations are written"),
		none(boolean("no-appendfsync-on-rewrite", "no"), "fsync goes on during a rewrite, as with no"),
		apply(ints("latency-monitor-threshold", "0", 0, math.MaxInt64), func(s *Server, v string) { s.latencyThreshold.Store(atoi(v)) }),

		// The rest of Valkey 8.0.1's stock valkey.conf (docs/operations.md
		// §3.1 lists the file's directives and what emqd does with each).
		// The unix socket (listeners.go): its path, mode (octal) and group.
		immutable(str("unixsocket", "")),
		immutable(checked(str("unixsocketperm", "0"), checkOctalPerm)),
		immutable(str("unixsocketgroup", "")),
		none(boolean("hide-user-data-from-log", "yes"), "emqd's log lines carry no keys, values or arguments"),
		none(str("proc-title-template", "{title} {listen-addr} {server-mode}"), "the process title is the command line"),
		none(immutable(str("locale-collate", "")), "emqd compares strings byte by byte (it has no SORT)"),
		// RDB snapshots (rdb.go, docs/durability.md §9).
		boolean("stop-writes-on-bgsave-error", "yes"),
		boolean("rdbcompression", "yes"),
		boolean("rdbchecksum", "yes"),
		// Valkey's test hook: microseconds slept per key a background save
		// writes (a slow save for tests).
		ints("rdb-key-save-delay", "0", -maxInt-1, maxInt),
		none(boolean("rdb-del-sync-files", "no"), "emqd has no replication, so no RDB files for it"),
		none(boolean("rdb-save-incremental-fsync", "yes"), "a snapshot is fsynced once, when written whole (docs/durability.md §9)"),
		none(alias(boolean("replica-serve-stale-data", "yes"), "slave-serve-stale-data"), "emqd has no replication"),
		none(alias(boolean("replica-read-only", "yes"), "slave-read-only"), "emqd has no replication"),
		none(boolean("repl-diskless-sync", "yes"), "emqd has no replication"),
		none(ints("repl-diskless-sync-delay", "5", 0, maxInt), "emqd has no replication"),
		none(ints("repl-diskless-sync-max-replicas", "0", 0, maxInt), "emqd has no replication"),
		none(enum("repl-diskless-load", "disabled", "disabled", "on-empty-db", "swapdb"), "emqd has no replication"),
		none(boolean("dual-channel-replication-enabled", "no"), "emqd has no replication"),
		none(boolean("repl-disable-tcp-nodelay", "no"), "emqd has no replication"),
		none(alias(ints("replica-priority", "100", 0, maxInt), "slave-priority"), "emqd has no replication"),
		none(uints("acllog-max-len", "128", 0, math.MaxInt64), "emqd has no ACL users, so no ACL LOG"),
		none(boolean("lazyfree-lazy-eviction", "yes"), "emqd never evicts, and Go's collector frees memory either way"),
		none(boolean("lazyfree-lazy-expire", "yes"), "memory is freed by Go's collector either way"),
		none(boolean("lazyfree-lazy-server-del", "yes"), "memory is freed by Go's collector either way"),
		none(alias(boolean("replica-lazy-flush", "yes"), "slave-lazy-flush"), "emqd has no replication"),
		checked(enum("oom-score-adj", "no", "no", "yes", "relative", "absolute"), checkOOMScoreAdj),
		none(multi(checked(str("oom-score-adj-values", "0 200 800"), checkOOMScoreValues)), "oom-score-adj is always no in emqd"),
		none(boolean("disable-thp", "yes"), "emqd never forks, and transparent huge pages cost Valkey only in fork's copy-on-write"),
		none(umem("hll-sparse-max-bytes", "3000", 0, math.MaxInt64), "emqd has no HyperLogLog"),
		none(umem("stream-node-max-bytes", "4096", 0, math.MaxInt64), "emqd has no streams"),
		none(ints("stream-node-max-entries", "100", 0, math.MaxInt64), "emqd has no streams"),
		none(boolean("activerehashing", "yes"), "Go maps grow without a rehashing cycle"),
		none(boolean("dynamic-hz", "yes"), "the crons run hz times a second whatever the number of clients"),
		none(boolean("aof-rewrite-incremental-fsync", "yes"), "the rewrite fsyncs the new file once, before the rename"),
		none(boolean("jemalloc-bg-thread", "yes"), "emqd does not use jemalloc"),
		// Directives the stock file shows commented out that users often
		// turn on (cluster-enabled no, syslog-enabled no and replicaof
		// absent are what emqd is).
		none(ints("maxmemory-samples", "5", 1, 64), "only the eviction policies sample keys, and emqd accepts only noeviction"),
		none(ints("maxmemory-eviction-tenacity", "10", 0, 100), "emqd never evicts"),
		none(boolean("activedefrag", "no"), "Go's allocator has no defragmenter; mem_fragmentation_ratio shows the spread"),
		checked(boolean("cluster-enabled", "no"), onlyNo("cluster-enabled", "emqd is one node; to shard queues run Valkey's cluster with the cluster/emq.lua library (docs/cluster.md)")),
		checked(boolean("syslog-enabled", "no"), onlyNo("syslog-enabled", "emqd logs to logfile or standard error; have the supervisor (journald) forward it")),
		none(str("syslog-ident", "valkey"), "syslog-enabled is always no in emqd"),
		none(str("syslog-facility", "local0"), "syslog-enabled is always no in emqd"),
		none(boolean("crash-log-enabled", "yes"), "a panic is logged with its stack whatever the value (§6)"),
		none(boolean("crash-memcheck-enabled", "yes"), "Go has no memory test after a crash"),
		// emqd's own: how plain TCP connections are served (loop.go,
		// docs/operations.md §8).
		apply(enum("io-model", "goroutine", "goroutine", "loop"), func(s *Server, v string) { s.ioLoop.Store(v == "loop") }),
		apply(boolean("latency-tracking", "yes"), func(s *Server, v string) { s.latencyTracking.Store(v == "yes") }),
		none(multi(str("latency-tracking-info-percentiles", "50 99 99.9")), "as latency-tracking"),
		none(ints("shutdown-timeout", "10", 0, maxInt), "emqd has no replicas to wait for at shutdown"),
		none(pct(mem("maxmemory-clients", "0", -100, math.MaxInt64)), "clients are never evicted; client-output-buffer-limit and client-query-buffer-limit bound each one"),
		none(alias(ints("busy-reply-threshold", "5000", 0, math.MaxInt64), "lua-time-limit"), "emqd runs no scripts (the EMQ verbs replace the Lua scripts)"),
	}
}

// config is the live table. Values are read and written under mu.
type config struct {
	mu     sync.Mutex
	params []*param
	byName map[string]*param // lower-case name and aliases
	hooks  map[string][]func(v string) error
}

func newConfig() *config {
	c := &config{params: paramTable(), byName: make(map[string]*param), hooks: make(map[string][]func(string) error)}
	for _, p := range c.params {
		p.setValue(p.def)
		c.byName[p.name] = p
		for _, a := range p.aliases {
			c.byName[a] = p
		}
	}
	return c
}

// get returns the current value of a directive.
func (c *config) get(name string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.byName[strings.ToLower(name)]
	if p == nil {
		return "", false
	}
	return p.value, true
}

// int returns the current value of an integer directive (a kindInt or
// kindMem one: memory values in bytes), parsed when it was set. An unknown
// name panics: the callers name directives of the table.
func (c *config) int(name string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.byName[name]
	if p == nil {
		panic("config: no directive " + name)
	}
	return p.num
}

// errImmutable is CONFIG SET's refusal of a boot-only directive,
// errProtectedConfig of a protected one (Valkey's texts).
var (
	errImmutable       = errors.New("can't set immutable config")
	errProtectedConfig = errors.New("can't set protected config")
)

// normalize parses v for p and returns the canonical stored form, or the
// reason Valkey's CONFIG SET gives.
func (p *param) normalize(v string) (string, error) {
	switch p.kind {
	case kindInt, kindMem:
		n, err := p.parseNumeric(v)
		if err != nil {
			return "", err
		}
		v = n
	case kindBool:
		switch strings.ToLower(v) {
		case "yes":
			v = "yes"
		case "no":
			v = "no"
		default:
			return "", errors.New("argument must be 'yes' or 'no'")
		}
	case kindEnum:
		lv := strings.ToLower(v)
		found := false
		for _, e := range p.enums {
			if e == lv {
				found = true
			}
		}
		if !found {
			return "", errors.New("argument(s) must be one of the following: " + strings.Join(p.enums, ", "))
		}
		v = lv
	}
	if p.check != nil {
		return p.check(v)
	}
	return v, nil
}

// parseNumeric is Valkey's numericParseString and numericBoundaryCheck
// (config.c) for an integer or memory directive: the canonical value or
// Valkey's reason. A memory directive reads memtoull's way (a unit,
// wrapping on overflow as Valkey's does: 17179869184gb is 0), a percent
// one also "N%", an integer one string2ll's way; the bounds are compared
// as unsigned for a directive Valkey keeps unsigned (hash-max-listpack-
// entries -1 is "between 0 and 9223372036854775807"), else as signed.
func (p *param) parseNumeric(v string) (string, error) {
	var ll int64
	ok := false
	if p.kind == kindMem {
		var u uint64
		u, ok = memtoull(v)
		ll = int64(u)
	}
	if !ok && p.percent && len(v) > 1 && v[len(v)-1] == '%' {
		if n, ok2 := parseLL(v[:len(v)-1]); ok2 && n >= 0 {
			ll, ok = -n, true
		}
	}
	if !ok && p.kind == kindInt {
		ll, ok = parseLL(v)
	}
	if !ok {
		switch {
		case p.kind == kindMem && p.percent:
			return "", errors.New("argument must be a memory or percent value")
		case p.kind == kindMem:
			return "", errors.New("argument must be a memory value")
		}
		return "", errors.New("argument couldn't be parsed into an integer")
	}
	if p.unsigned {
		u := uint64(ll)
		if u < p.umin || u > p.umax {
			return "", fmt.Errorf("argument must be between %d and %d inclusive", p.umin, p.umax)
		}
		return strconv.FormatUint(u, 10), nil
	}
	if p.percent && ll < 0 {
		if ll < p.min {
			return "", fmt.Errorf("percentage argument must be less or equal to %d", -p.min)
		}
		return strconv.FormatInt(-ll, 10) + "%", nil
	}
	if ll < p.min || ll > p.max {
		return "", fmt.Errorf("argument must be between %d and %d inclusive", p.min, p.max)
	}
	return strconv.FormatInt(ll, 10), nil
}

// memtoull is Valkey's memtoull (util.c): digits (none reads as 0) and an
// optional unit b, k, kb, m, mb, g, gb (any case; k = 1000, kb = 1024); no
// sign, no space. As Valkey's, digits past 2^64-1 read as 2^64-1 (strtoull
// saturates and the overflow is not checked) and the unit's product wraps.
func memtoull(s string) (uint64, bool) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	var mul uint64
	switch strings.ToLower(s[i:]) {
	case "", "b":
		mul = 1
	case "k":
		mul = 1000
	case "kb":
		mul = 1024
	case "m":
		mul = 1000 * 1000
	case "mb":
		mul = 1024 * 1024
	case "g":
		mul = 1000 * 1000 * 1000
	case "gb":
		mul = 1024 * 1024 * 1024
	default:
		return 0, false
	}
	if i >= 128 {
		return 0, false // Valkey's digit buffer
	}
	var n uint64
	for _, ch := range s[:i] {
		d := uint64(ch - '0')
		if n > (math.MaxUint64-d)/10 {
			n = math.MaxUint64
			break
		}
		n = n*10 + d
	}
	return n * mul, true
}

// baseName is Valkey's isValidAOFfilename, isValidAOFdirname and
// isValidDBfilename (config.c): no '/' or '\' in the value (pathIsBaseName)
// and, unless mayBeEmpty, not empty. what names the kind ("filename",
// "dirname") in Valkey's text.
func baseName(name, what string, mayBeEmpty bool) func(v string) (string, error) {
	return func(v string) (string, error) {
		if v == "" && !mayBeEmpty {
			return "", errors.New(name + " can't be empty")
		}
		if strings.ContainsAny(v, "/\\") {
			return "", errors.New(name + " can't be a path, just a " + what)
		}
		return v, nil
	}
}

// checkSave accepts Valkey's save syntax ("" or pairs of seconds and
// changes, each an integer >= 0) and stores the pairs separated by single
// spaces, as CONFIG GET save shows them (rdb.go fires them).
func checkSave(v string) (string, error) {
	f := strings.Fields(v)
	if len(f)%2 != 0 {
		return "", errors.New("Invalid save parameters")
	}
	out := make([]string, 0, len(f))
	for _, x := range f {
		n, ok := parseLL(x)
		if !ok || n < 0 {
			return "", errors.New("Invalid save parameters")
		}
		out = append(out, strconv.FormatInt(n, 10))
	}
	return strings.Join(out, " "), nil
}

// checkOctalPerm is unixsocketperm: an octal mode, 0 to 0777 (Valkey's
// config.c: an octal integer up to 0777).
func checkOctalPerm(v string) (string, error) {
	n, err := strconv.ParseInt(v, 8, 64)
	if err != nil || n < 0 || n > 0o777 {
		return "", errors.New("argument must be between 0 and 511 inclusive")
	}
	return strconv.FormatInt(n, 8), nil
}

// checkOOMScoreAdj accepts only no: emqd leaves its oom_score_adj alone.
func checkOOMScoreAdj(v string) (string, error) {
	if v != "no" {
		return "", errors.New("emqd does not support oom-score-adj " + v + ": it leaves the process's oom_score_adj as the supervisor set it (systemd's OOMScoreAdjust=, a container's own setting)")
	}
	return v, nil
}

// checkOOMScoreValues is Valkey's syntax for oom-score-adj-values: three
// integers from -2000 to 2000.
func checkOOMScoreValues(v string) (string, error) {
	f := strings.Fields(v)
	if len(f) != 3 {
		return "", errors.New("wrong number of arguments")
	}
	for _, x := range f {
		if n, ok := parseLL(x); !ok || n < -2000 || n > 2000 {
			return "", errors.New("Invalid oom-score-adj-values, elements must be between -2000 and 2000.")
		}
	}
	return strings.Join(f, " "), nil
}

// onlyNo accepts no and refuses yes with emqd's reason.
func onlyNo(name, why string) func(v string) (string, error) {
	return func(v string) (string, error) {
		if v != "no" {
			return "", errors.New("emqd does not support " + name + " yes: " + why)
		}
		return v, nil
	}
}

// outClasses are client-output-buffer-limit's classes, in output order and
// with Valkey 8.0's names (CONFIG GET prints "slave"; "replica" is taken
// as input).
var outClasses = []string{"normal", "slave", "pubsub"}

// checkOutputLimit parses client-output-buffer-limit ("class hard soft
// seconds" groups) and returns the full setting with the changed classes.
func checkOutputLimit(v string) (string, error) { return checkOutputLimitWords(strings.Fields(v)) }

// checkOutputLimitWords is checkOutputLimit of the words of a value: a
// config file's or the command line's (split on any space, as Valkey's
// sdssplitargs) or CONFIG SET's (split on each single space, as Valkey's
// sdssplitlen: an empty word is a number read as 0, or no class).
func checkOutputLimitWords(f []string) (string, error) {
	if len(f) == 0 || len(f)%4 != 0 {
		return "", errors.New("Wrong number of arguments in buffer limit configuration.")
	}
	for i := 0; i < len(f); i += 4 {
		class := strings.ToLower(f[i])
		if class == "replica" {
			class = "slave"
		}
		if class != "normal" && class != "slave" && class != "pubsub" {
			return "", errors.New("Invalid client class specified in buffer limit configuration.")
		}
		hard, ok1 := memtoull(f[i+1])
		soft, ok2 := memtoull(f[i+2])
		secs, ok3 := softSeconds(f[i+3])
		if !ok1 || !ok2 || !ok3 {
			return "", errors.New("Error in hard, soft or soft_seconds setting in buffer limit configuration.")
		}
		f[i] = class
		f[i+1], f[i+2], f[i+3] = strconv.FormatUint(hard, 10), strconv.FormatUint(soft, 10), strconv.FormatInt(int64(secs), 10)
	}
	return strings.Join(f, " "), nil
}

// bindAddrMax is how many addresses bind takes (Valkey's
// CONFIG_BINDADDR_MAX).
const bindAddrMax = 16

// checkBind refuses more than bindAddrMax addresses with Valkey's text
// (setConfigBindOption), at start and at CONFIG SET.
func checkBind(v string) (string, error) {
	if len(strings.Fields(v)) > bindAddrMax {
		return "", errors.New("Too many bind addresses specified.")
	}
	return v, nil
}

// setWords splits a multi-word value given to CONFIG SET as Valkey 8.0.1's
// performInterfaceSet does (sdssplitlen on " "): on each single space, so
// two spaces make an empty word between them, a leading or trailing space
// one at that end; "" is no words.
func setWords(v string) []string {
	if v == "" {
		return nil
	}
	return strings.Split(v, " ")
}

// softSeconds reads client-output-buffer-limit's soft_seconds as Valkey
// 8.0.1's updateClientOutputBufferLimit (config.c) does: strtoll (an
// optional sign, decimal digits, saturating at the 64-bit bounds) that must
// take the whole word, stored in an int, so the value is its low 32 bits
// and a negative one is refused: 2147483647 is the most, 2147483648 and
// 9223372036854775807 are refused (they read as negative ints) and
// 4294967297 reads as 1, as there. Before, emqd took any 64-bit value, and
// one past 2^63/1000 overflowed the limit's milliseconds into "at once".
func softSeconds(w string) (int32, bool) {
	if w == "" {
		return 0, true // strtoll reads no digits and stops at the end
	}
	// strconv's base-10 syntax is strtoll's for a whole word (a sign,
	// digits), and out of range it returns the bound strtoll saturates to.
	v, err := strconv.ParseInt(w, 10, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	t := int32(v) // int soft_seconds = strtoll(...)
	return t, t >= 0
}

// mergeOutputLimit overlays the groups of set on the groups of cur.
func mergeOutputLimit(cur, set string) string {
	groups := map[string][]string{}
	for _, s := range []string{cur, set} {
		f := strings.Fields(s)
		for i := 0; i+3 < len(f); i += 4 {
			groups[f[i]] = f[i+1 : i+4]
		}
	}
	var out []string
	for _, c := range outClasses {
		if g, ok := groups[c]; ok {
			out = append(out, c, g[0], g[1], g[2])
		}
	}
	return strings.Join(out, " ")
}

// outputLimits are the limits client-output-buffer-limit sets for the two
// classes a client of emqd can be in (no replicas), in bytes (0: none) and
// seconds. Valkey's checkClientOutputBufferLimits: past hard, or past soft
// for more than softSecs, the client is closed.
type outputLimits struct {
	normal, pubsub classLimit
}

// classLimit is one class's hard and soft limits (bytes) and soft seconds.
type classLimit struct {
	hard, soft, softSecs int64
}

// parseOutputLimits reads the canonical setting (checkOutputLimit's form).
func parseOutputLimits(v string) *outputLimits {
	l := &outputLimits{}
	f := strings.Fields(v)
	for i := 0; i+3 < len(f); i += 4 {
		cl := classLimit{bytesLimit(f[i+1]), bytesLimit(f[i+2]), atoi(f[i+3])}
		switch f[i] {
		case "normal":
			l.normal = cl
		case "pubsub":
			l.pubsub = cl
		}
	}
	return l
}

// setOutputLimits makes a client-output-buffer-limit value take effect.
func (s *Server) setOutputLimits(v string) { s.outLimits.Store(parseOutputLimits(v)) }

// bytesLimit is a canonical limit in bytes (an unsigned decimal, up to
// 2^64-1 as Valkey's unsigned long long) as an int64 to compare with: a
// value past 2^63-1 is more than any output can reach.
func bytesLimit(s string) int64 {
	n, _ := strconv.ParseUint(s, 10, 64)
	return int64(min(n, math.MaxInt64))
}

func atoi(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// parseLL is Valkey's string2ll (num.ParseInt).
func parseLL(s string) (int64, bool) { return num.ParseInt([]byte(s)) }

// set validates and stores one value. boot allows immutable directives.
func (c *config) set(s *Server, name, value string, boot bool) error {
	c.mu.Lock()
	p := c.byName[strings.ToLower(name)]
	if p == nil {
		c.mu.Unlock()
		return errUnknownParam
	}
	if p.immutable && !boot && len(c.hooks[p.name]) == 0 {
		c.mu.Unlock()
		return errImmutable
	}
	if p.protected && !boot {
		c.mu.Unlock()
		return errProtectedConfig
	}
	v, err := p.normalize(value)
	if err != nil {
		c.mu.Unlock()
		return err
	}
	if p.name == "client-output-buffer-limit" {
		v = mergeOutputLimit(p.value, v)
	}
	old := p.value
	p.setValue(v)
	hooks := c.hooks[p.name]
	c.mu.Unlock()
	if !boot {
		for i, h := range hooks {
			if err := h(v); err != nil {
				// A refusal leaves everything as it was (Valkey's
				// restoreBackupConfig): the old value back, and the hooks
				// that already took the new one run again with the old.
				c.mu.Lock()
				p.setValue(old)
				c.mu.Unlock()
				for _, u := range hooks[:i] {
					if uerr := u(old); uerr != nil && s != nil {
						s.log.Warn("Failed applying restored configuration", "directive", p.name, "value", old, "err", uerr)
					}
				}
				return err
			}
		}
	}
	if p.apply != nil && s != nil {
		p.apply(s, v)
	}
	return nil
}

var errUnknownParam = errors.New("unknown parameter")

// ConfigError is Start's error for a directive it refuses: unknown (Msg
// "Bad directive or wrong number of arguments", Valkey's), or a value that
// is not valid or not supported (Msg is the reason, CONFIG SET's text).
type ConfigError struct {
	Name, Value, Msg string
	// Line and Text are the Directive's (0 and "" for Options.Config).
	Line int
	Text string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("directive %s %q: %s", e.Name, e.Value, e.Msg)
}

// lookup returns the param for a name (or alias).
func (c *config) lookup(name string) *param {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byName[strings.ToLower(name)]
}

// SplitConfigLine splits one valkey.conf line into its words with Valkey's
// sdssplitargs quoting (config.c loadServerConfigFromString); false for
// unbalanced quotes.
func SplitConfigLine(line string) ([]string, bool) { return resp.SplitArgs(line) }
