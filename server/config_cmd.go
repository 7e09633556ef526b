package server

import (
	"errors"
	"strings"

	"github.com/emqd/emqd/internal/store"
)

// CONFIG GET/SET/RESETSTAT/REWRITE (docs/compat.md §1.5; Valkey 8 config.c).

func configSubcommands() []serverCmd {
	return []serverCmd{
		{spec: store.NewCommand("config|get", -3, nil, store.FlagAdmin, store.FlagNoScript, store.FlagLoading, store.FlagStale), run: cmdConfigGet},
		{spec: store.NewCommand("config|set", -4, nil, store.FlagAdmin, store.FlagNoScript, store.FlagLoading, store.FlagStale), run: cmdConfigSet},
		{spec: store.NewCommand("config|rewrite", 2, nil, store.FlagAdmin, store.FlagNoScript, store.FlagLoading, store.FlagStale), run: cmdConfigRewrite},
		{spec: store.NewCommand("config|resetstat", 2, nil, store.FlagAdmin, store.FlagNoScript, store.FlagLoading, store.FlagStale), run: cmdConfigResetStat},
		{spec: store.NewCommand("config|help", 2, nil, store.FlagLoading, store.FlagStale), run: helpReply("CONFIG",
			"GET <pattern>", "    Return parameters matching the glob-like <pattern> and their values.",
			"SET <directive> <value>", "    Set the configuration <directive> to <value>.",
			"RESETSTAT", "    Reset statistics reported by the INFO command.",
			"REWRITE", "    Rewrite the configuration file.")},
	}
}

// cmdConfigGet replies name/value pairs (a RESP3 map): an exact name
// (or alias) is echoed in the case it was asked in; a glob pattern
// (containing * ? or [) matches the canonical names, case-insensitively.
// Duplicates (case-insensitive) are listed once.
func cmdConfigGet(c *client, x *store.Ctx) {
	cfg := c.s.cfg
	type kv struct{ k, v string }
	var out []kv
	seen := map[string]bool{}
	cfg.mu.Lock()
	for _, a := range x.Argv[2:] {
		name := string(a)
		if !strings.ContainsAny(name, "[*?") {
			p := cfg.byName[strings.ToLower(name)]
			if p == nil || seen[strings.ToLower(name)] {
				continue
			}
			seen[strings.ToLower(name)] = true
			out = append(out, kv{name, p.value})
			continue
		}
		// A pattern matches the older names too (hash-max-ziplist-*,
		// slave-*), each listed under its own name, as Valkey's configs
		// dict holds them.
		for _, p := range cfg.params {
			for _, n := range append([]string{p.name}, p.aliases...) {
				if seen[n] || !store.GlobMatch(name, n, true) {
					continue
				}
				seen[n] = true
				out = append(out, kv{n, p.value})
			}
		}
	}
	cfg.mu.Unlock()
	x.W.Map(len(out))
	for _, e := range out {
		x.W.BulkString(e.k)
		x.W.BulkString(e.v)
	}
}

// cmdConfigSet is CONFIG SET name value [name value ...]: every pair is
// checked before any is applied, and when a hook refuses one, the pairs
// already applied are restored (hooks and all), as Valkey's CONFIG SET:
// a refused CONFIG SET changes nothing.
func cmdConfigSet(c *client, x *store.Ctx) {
	argv := x.Argv
	if len(argv) < 4 {
		x.W.Error(arityError("config|set"))
		return
	}
	if len(argv)%2 != 0 {
		// A name without its value: Valkey's configSetCommand answers
		// the shared syntax error (the arity, -4, only counts to 4).
		x.W.Error("ERR syntax error")
		return
	}
	cfg := c.s.cfg
	// A duplicate is the same name twice (any case); an old name and its
	// new one (hash-max-ziplist-entries, hash-max-listpack-entries) are two
	// entries of Valkey's table and set in turn, the last winning.
	seen := map[string]bool{}
	for i := 2; i < len(argv); i += 2 {
		name := string(argv[i])
		p := cfg.lookup(name)
		if p == nil {
			x.W.Error("ERR Unknown option or number of arguments for CONFIG SET - '" + string(cPrefix(argv[i], -1)) + "'")
			return
		}
		fail := func(why string) {
			x.W.Error("ERR CONFIG SET failed (possibly related to argument '" + name + "') - " + why)
		}
		key := strings.ToLower(name)
		if seen[key] {
			fail("duplicate parameter")
			return
		}
		seen[key] = true
		cfg.mu.Lock()
		hooked := len(cfg.hooks[p.name]) > 0
		cfg.mu.Unlock()
		if p.immutable && !hooked {
			fail(errImmutable.Error())
			return
		}
		if p.protected {
			fail(errProtectedConfig.Error())
			return
		}
	}
	// The values only once every name passed, as Valkey's configSetCommand
	// (a duplicate or an immutable name after a bad value is what it
	// reports). A refused value is reported under the name of the table's
	// entry (lower case: `HZ abc` reports 'hz'), the names above as typed.
	failed := func(name, why string) {
		x.W.Error("ERR CONFIG SET failed (possibly related to argument '" + strings.ToLower(name) + "') - " + why)
	}
	values := make([]string, len(argv))
	for i := 2; i < len(argv); i += 2 {
		p := cfg.lookup(string(argv[i]))
		values[i+1] = string(argv[i+1])
		if keepsAll(p, argv[i+1]) {
			continue
		}
		if err := setValueWords(p, &values[i+1]); err != nil {
			failed(string(argv[i]), err.Error())
			return
		}
		if _, err := p.normalize(values[i+1]); err != nil {
			failed(string(argv[i]), err.Error())
			return
		}
	}
	var olds []string
	for i := 2; i < len(argv); i += 2 {
		old, _ := cfg.get(string(argv[i]))
		if keepsAll(cfg.lookup(string(argv[i])), argv[i+1]) {
			olds = append(olds, old)
			continue
		}
		if err := cfg.set(c.s, string(argv[i]), values[i+1], false); err != nil {
			for j := len(olds) - 1; j >= 0; j-- {
				name := string(argv[2+2*j])
				if rerr := cfg.set(c.s, name, olds[j], false); rerr != nil {
					c.s.log.Warn("Failed applying restored configuration", "directive", name, "value", olds[j], "err", rerr)
				}
			}
			failed(string(argv[i]), err.Error())
			return
		}
		olds = append(olds, old)
	}
	x.W.OK()
}

// setValueWords applies CONFIG SET's word splitting (setWords: on each
// single space) to the value of a directive whose words it changes, where
// a config file's value is split on any space: client-output-buffer-limit
// (an empty word is a number read as 0, or no class: *v becomes the
// canonical value) and bind (more than bindAddrMax words, empty ones
// counted, is Valkey's "Too many bind addresses specified.").
func setValueWords(p *param, v *string) error {
	switch p.name {
	case "client-output-buffer-limit":
		canon, err := checkOutputLimitWords(setWords(*v))
		if err != nil {
			return err
		}
		*v = canon
	case "bind":
		// An empty word is left to the listeners, which skip it: Valkey
		// hands "" to getaddrinfo, which fails, and then skips or refuses
		// the address by whatever errno an earlier call left (it took
		// "127.0.0.1  127.0.0.2" and refused "127.0.0.1  ::1" here).
		if len(setWords(*v)) > bindAddrMax {
			return errors.New("Too many bind addresses specified.")
		}
	}
	return nil
}

// keepsAll reports a CONFIG SET pair that changes nothing and is not
// refused: client-output-buffer-limit set to the empty string, which
// Valkey 8.0.1 splits into no class groups and answers OK (a value of
// spaces only is refused there, as here, and so is an empty value on a
// config-file line: checkOutputLimit).
func keepsAll(p *param, v []byte) bool {
	return p != nil && p.name == "client-output-buffer-limit" && len(v) == 0
}

func cmdConfigResetStat(c *client, x *store.Ctx) {
	s := c.s
	s.statCmds = 0
	s.statErrs = 0
	s.statConns.Store(0)
	s.statRejected.Store(0)
	s.statAuthDenied.Store(0)
	s.statQbufClosed.Store(0)
	s.statObufClosed.Store(0)
	s.statNetIn.Store(0)
	s.statNetOut.Store(0)
	for k := range s.errStats {
		delete(s.errStats, k)
	}
	for _, e := range s.reg.allCommands() {
		e.calls, e.usec, e.rejected, e.failed = 0, 0, 0, 0
		e.lat = nil // LATENCY HISTOGRAM, as Valkey's resetCommandTableStats
	}
	x.W.OK()
}
