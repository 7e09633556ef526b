package server

import (
	"slices"
	"strings"
)

// Directives given in order (a valkey.conf file, then the command line):
// applied one by one so the first error is the first in the file, lines
// that repeat a directive act as in Valkey (client-output-buffer-limit
// merges classes, rename-command renames one command each), and each
// directive that has no effect in emqd is logged once at start with the
// reason (docs/operations.md §3).

// Directive is one "name arg..." line of a configuration.
type Directive struct {
	Name string
	Args []string
	// Line is its line in the file (the command line's directives count
	// after the file's lines, as Valkey appends them); Text the line as
	// written. Both only label errors (ConfigError).
	Line int
	Text string
}

// configKeywords are valkey.conf's words that are not config parameters
// (config.c loadServerConfigFromString), with what emqd does with them:
// rename-command is handled (applyRename); the others are refused with
// this reason. include is read by the binary (cmd/emqd) before the lines
// reach the server.
var configKeywords = map[string]string{
	"user":       "emqd has no ACL users: the default user's password is requirepass (docs/operations.md §11)",
	"loadmodule": "emqd loads no modules",
	"sentinel":   "emqd is not a Sentinel",
	"include":    "include is read by the emqd binary only, not through Options",
}

// valkeyOnly names Valkey 8.0.1 parameters emqd does not take, by prefix or
// name, with the reason; such a directive is refused with emqd's own text
// (never Valkey's "Bad directive" text, which says the name is a typo).
var valkeyOnly = []struct{ prefix, why string }{
	{"cluster-", "emqd is one node; to shard queues run Valkey's cluster with the cluster/emq.lua library (docs/cluster.md)"},
	{"replicaof", "emqd has no replication (durability is the append-only file, docs/durability.md)"},
	{"slaveof", "emqd has no replication (durability is the append-only file, docs/durability.md)"},
	{"masterauth", "emqd has no replication"},
	{"masteruser", "emqd has no replication"},
	{"primaryauth", "emqd has no replication"},
	{"primaryuser", "emqd has no replication"},
	{"repl-", "emqd has no replication"},
	{"replica-", "emqd has no replication"},
	{"slave-", "emqd has no replication"},
	{"min-replicas-", "emqd has no replication"},
	{"min-slaves-", "emqd has no replication"},
	{"tls-cluster", "emqd has no cluster bus"},
	{"tls-replication", "emqd has no replication"},
	{"tls-client-", "emqd opens no TLS connections of its own (no replication, no cluster bus)"},
	{"tls-ciphers", "emqd uses Go's TLS cipher suites (crypto/tls), which cannot be listed"},
	{"tls-ciphersuites", "emqd uses Go's TLS cipher suites (crypto/tls), which cannot be listed"},
	{"tls-prefer-server-ciphers", "Go's TLS chooses the cipher suite itself"},
	{"tls-dh-params-file", "Go's TLS has no finite-field Diffie-Hellman"},
	{"tls-session-", "Go's TLS keeps session tickets itself"},
	{"aclfile", "emqd has no ACL users: the default user's password is requirepass (docs/operations.md §11)"},
	{"acl-pubsub-default", "emqd has no ACL users"},
	{"active-defrag-", "Go's allocator has no defragmenter"},
	{"enable-module-command", "emqd loads no modules"},
	{"enable-protected-configs", "CONFIG SET always refuses the protected configs (dir, dbfilename) with Valkey's can't set protected config"},
	{"io-threads-do-reads", "every connection has its own goroutine"},
	{"events-per-io-thread", "every connection has its own goroutine"},
	{"prefetch-batch-max-size", "every connection has its own goroutine"},
	{"server-cpulist", "emqd pins no threads: set the CPU affinity with taskset or the supervisor"},
	{"server_cpulist", "emqd pins no threads: set the CPU affinity with taskset or the supervisor"},
	{"bio-cpulist", "emqd pins no threads"},
	{"bio_cpulist", "emqd pins no threads"},
	{"aof-rewrite-cpulist", "emqd pins no threads"},
	{"aof_rewrite_cpulist", "emqd pins no threads"},
	{"bgsave-cpulist", "emqd pins no threads"},
	{"bgsave_cpulist", "emqd pins no threads"},
	{"bind-source-addr", "emqd opens no outgoing connections"},
	{"socket-mark-id", "emqd does not mark its sockets"},
	{"shutdown-on-sig", "SIGINT and SIGTERM always close emqd cleanly (the append-only file flushed)"},
	{"sanitize-dump-payload", "emqd has no RESTORE"},
	{"propagation-error-behavior", "emqd has no replication"},
	{"availability-zone", "emqd has no cluster"},
	{"extended-redis-compatibility", "emqd answers as Valkey 8.0.1 only"},
	{"ignore-warnings", "emqd logs no kernel warnings to silence"},
	{"max-new-connections-per-cycle", "emqd accepts connections as they come, one goroutine each"},
	{"max-new-tls-connections-per-cycle", "emqd accepts connections as they come, one goroutine each"},
}

// notSupported is emqd's refusal of a Valkey directive it does not take
// ("" for a name Valkey does not know either).
func notSupported(name string) string {
	n := strings.ToLower(name)
	if why, ok := configKeywords[n]; ok {
		return "emqd does not support " + n + ": " + why
	}
	for _, v := range valkeyOnly {
		if strings.HasPrefix(n, v.prefix) {
			return "emqd does not support " + n + ": " + v.why
		}
	}
	return ""
}

// applyDirective sets one directive at start: rename-command on the
// registry, every other name in the config table. given records the
// no-effect directives for the start-up lines.
func (s *Server) applyDirective(d Directive, given map[string]Directive) error {
	name := strings.ToLower(d.Name)
	value := strings.Join(d.Args, " ")
	fail := func(msg string) error {
		return &ConfigError{Name: d.Name, Value: value, Msg: msg, Line: d.Line, Text: d.Text}
	}
	if name == "save" && d.Line > 0 {
		// As Valkey's config loader: the save lines of the file and the
		// command line add up (the first replaces the default), save ""
		// clears them.
		if strings.TrimSpace(value) != "" && s.saveLines > 0 {
			if cur := s.Config("save"); cur != "" {
				value = cur + " " + value
			}
		}
		s.saveLines++
	}
	if name == "rename-command" {
		if len(d.Args) != 2 {
			return fail("wrong number of arguments")
		}
		if msg := s.reg.rename(d.Args[0], d.Args[1]); msg != "" {
			return fail(msg)
		}
		return nil
	}
	p := s.cfg.lookup(name)
	if p == nil {
		if msg := notSupported(name); msg != "" {
			return fail(msg)
		}
		return fail("Bad directive or wrong number of arguments")
	}
	if !p.multi && len(d.Args) != 1 {
		return fail("wrong number of arguments")
	}
	// A multi-word directive given as one argument ("--save '900 1'") is
	// split, as Valkey's loader does (sdssplitargs).
	if err := s.cfg.set(s, name, value, true); err != nil {
		if err == errUnknownParam {
			return fail("Bad directive or wrong number of arguments")
		}
		return fail(err.Error())
	}
	if p.noEffect != "" {
		if _, seen := given[p.name]; !seen {
			s.noEffectOrder = append(s.noEffectOrder, p.name)
		}
		given[p.name] = d
	}
	return nil
}

// logNoEffect writes one line per directive given that has no effect in
// emqd, in the order first given, with its last value and the reason:
// "# directive io-threads 4 has no effect in emqd: ...".
func (s *Server) logNoEffect(given map[string]Directive) {
	for _, name := range s.noEffectOrder {
		p := s.cfg.lookup(name)
		v, _ := s.cfg.get(name)
		s.log.Warn("# directive " + p.name + " " + quoteIfNeeded(v) + " has no effect in emqd: " + p.noEffect)
	}
}

// quoteIfNeeded shows an empty or spaced value in quotes, as it would be
// written in valkey.conf.
func quoteIfNeeded(v string) string {
	if v == "" || strings.ContainsAny(v, " \t\"") {
		return `"` + strings.ReplaceAll(v, `"`, `\"`) + `"`
	}
	return v
}

// rename is valkey.conf's rename-command (config.c): the command takes the
// new name, or is removed when it is empty. It returns Valkey's text for
// an unknown command or a taken name ("" when done).
func (r *registry) rename(from, to string) string {
	old := strings.ToLower(from)
	e := r.cmds[old]
	if e == nil {
		return "No such command in rename-command"
	}
	delete(r.cmds, old)
	if to == "" {
		for i, x := range r.list {
			if x == e {
				r.list = append(r.list[:i:i], r.list[i+1:]...)
				break
			}
		}
		return ""
	}
	nn := strings.ToLower(to)
	if _, taken := r.cmds[nn]; taken {
		return "Target command name already exists"
	}
	r.cmds[nn] = e
	return ""
}

// KnownDirective reports whether name is a directive Valkey 8.0.1 knows:
// one of emqd's (its config table, aliases included, rename-command,
// include) or one emqd refuses as not supported. A config file line of
// one word is then "wrong number of arguments", and any other one word
// "Bad directive or wrong number of arguments", as Valkey's loader answers
// (config.c loadServerConfigFromString; TestConfigFileNulAsValkey).
func KnownDirective(name string) bool {
	n := strings.ToLower(name)
	if n == "rename-command" || n == "include" || notSupported(n) != "" {
		return true
	}
	for _, p := range paramTable() {
		if p.name == n || slices.Contains(p.aliases, n) {
			return true
		}
	}
	return false
}
