package server

import (
	"bytes"
	"sort"
	"strings"

	"github.com/emqd/emqd/internal/cmdmeta"
	"github.com/emqd/emqd/internal/num"
	"github.com/emqd/emqd/internal/store"
)

// COMMAND, COMMAND COUNT/INFO/DOCS/GETKEYS/GETKEYSANDFLAGS/LIST
// (docs/compat.md §1.5). Every reply is built from the command metadata
// table (internal/cmdmeta: Valkey 8.0.1's generated entries, emqd's own in
// internal/cmdmeta/emq.go) in the shapes of Valkey 8.0.1's src/server.c
// (addReplyCommandInfo, addReplyCommandDocs, getKeysSubcommandImpl,
// commandListWithFilter).

func commandSubcommands() []serverCmd {
	return []serverCmd{
		{spec: store.NewCommand("command|count", 2, nil, store.FlagLoading, store.FlagStale), run: cmdCommandCount},
		{spec: store.NewCommand("command|info", -2, nil, store.FlagLoading, store.FlagStale), run: cmdCommandInfo},
		{spec: store.NewCommand("command|docs", -2, nil, store.FlagLoading, store.FlagStale), run: cmdCommandDocs},
		{spec: store.NewCommand("command|getkeys", -3, nil, store.FlagLoading, store.FlagStale), run: cmdCommandGetKeys},
		{spec: store.NewCommand("command|getkeysandflags", -3, nil, store.FlagLoading, store.FlagStale), run: cmdCommandGetKeys},
		{spec: store.NewCommand("command|list", -2, nil, store.FlagLoading, store.FlagStale), run: cmdCommandList},
		{spec: store.NewCommand("command|help", 2, nil, store.FlagLoading, store.FlagStale), run: helpReply("COMMAND",
			"(no subcommand)", "    Return details about all commands.",
			"COUNT", "    Return the total number of commands in this server.",
			"LIST", "    Return a list of all commands in this server.",
			"INFO [<command-name> ...]", "    Return details about multiple commands.",
			"    If no command names are given, documentation details for all",
			"    commands are returned.",
			"DOCS [<command-name> ...]", "    Return documentation details about multiple commands.",
			"    If no command names are given, documentation details for all",
			"    commands are returned.",
			"GETKEYS <full-command>", "    Return the keys from a full command.",
			"GETKEYSANDFLAGS <full-command>", "    Return the keys and the access flags from a full command.")},
	}
}

// clusterSubcommands are Valkey 8.0.1's CLUSTER subcommands, taken from the
// metadata table, each answering that cluster support is disabled (a
// standalone Valkey's reply; docs/compat.md §2.3): CLUSTER is a container,
// so an unknown subcommand and a wrong argument count get Valkey's texts.
func clusterSubcommands() []serverCmd {
	var names []string
	for _, n := range cmdmeta.ValkeyNames() {
		if strings.HasPrefix(n, "cluster|") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	out := make([]serverCmd, len(names))
	for i, n := range names {
		out[i] = serverCmd{spec: store.NewCommand(n, cmdmeta.Valkey(n).Arity, nil), run: cmdCluster}
	}
	return out
}

// dispatchExtras are the flags emqd's dispatcher keeps beyond Valkey's
// table, each an emqd rule of docs/compat.md ("Command metadata"): AUTH and
// HELLO stay out of SLOWLOG (Valkey logs them with the arguments
// redacted), CLIENT REPLY is refused inside MULTI. COMMAND INFO shows
// Valkey's flags.
var dispatchExtras = map[string]store.Flag{
	"auth":         store.FlagSkipSlowlog,
	"hello":        store.FlagSkipSlowlog,
	"client|reply": store.FlagNoMulti,
}

// attachMeta gives e its metadata (cmdmeta.Lookup by full name) and takes
// the dispatcher's flags from it. A command without an entry (the tests'
// own commands) gets one made from its spec, marked synthetic
// (TestCommandMetadataComplete lists those of the real table).
func (e *command) attachMeta() {
	m := cmdmeta.Lookup(e.name)
	if m == nil {
		e.meta, e.synthMeta = specMeta(e.spec), true
		e.info = e.meta.Derive()
		return
	}
	e.meta = m
	e.info = m.Derive()
	e.flags = store.FlagSetFromMeta(e.info.Flags) | dispatchExtras[e.name]
}

// specMeta is the metadata of a command that has no entry: its spec's
// flags, one range key spec from its key positions (RW update for a write
// command, RO access otherwise).
func specMeta(cs *store.CommandSpec) *cmdmeta.Command {
	m := &cmdmeta.Command{Name: strings.ToLower(cs.Name), Arity: cs.Arity, Group: "emq"}
	set := cs.FlagSet()
	m.Flags = store.MetaFromFlags(set)
	if cs.FirstKey > 0 {
		kf := cmdmeta.KeyRO | cmdmeta.KeyAccess
		if set&store.FlagWrite != 0 {
			kf = cmdmeta.KeyRW | cmdmeta.KeyUpdate
		}
		last := cs.LastKey
		if last > 0 {
			last -= cs.FirstKey
		}
		m.KeySpecs = []cmdmeta.KeySpec{{Flags: kf,
			BeginSearch: cmdmeta.BeginSearch{Type: "index", Index: cs.FirstKey},
			FindKeys:    cmdmeta.FindKeys{Type: "range", LastKey: last, KeyStep: max(cs.Step, 1)}}}
	}
	return m
}

// allCommands lists every command and subcommand.
func (r *registry) allCommands() []*command {
	var out []*command
	for _, e := range r.list {
		out = append(out, e)
		if e.subs != nil {
			out = append(out, e.sortedSubs()...)
		}
	}
	return out
}

func cmdCommand(c *client, x *store.Ctx) {
	r := c.s.reg
	x.W.Array(len(r.list))
	for _, e := range r.list {
		writeCommandInfo(x, e)
	}
}

func cmdCommandCount(c *client, x *store.Ctx) { x.W.Int(int64(len(c.s.reg.list))) }

// cmdCommandInfo replies, per name, Valkey's 10-element description or
// a null bulk ($-1, RESP3 _) for an unknown name; with no names, every
// command.
func cmdCommandInfo(c *client, x *store.Ctx) {
	r := c.s.reg
	if len(x.Argv) == 2 {
		cmdCommand(c, x)
		return
	}
	x.W.Array(len(x.Argv) - 2)
	for _, a := range x.Argv[2:] {
		e := r.lookupFullName(string(a))
		if e == nil {
			x.W.Nil() // addReplyNull: $-1 (RESP3 _), as Valkey's COMMAND INFO
			continue
		}
		writeCommandInfo(x, e)
	}
}

// lookupFullName finds "name" or "container|sub".
func (r *registry) lookupFullName(name string) *command {
	name = strings.ToLower(name)
	if i := strings.IndexByte(name, '|'); i >= 0 {
		base := r.cmds[name[:i]]
		if base == nil || base.subs == nil {
			return nil
		}
		return base.subs[name[i+1:]]
	}
	return r.cmds[name]
}

// cmdCommandDocs is COMMAND DOCS [name ...]: a map of full name to the
// command's docs; unknown names are left out.
func cmdCommandDocs(c *client, x *store.Ctx) {
	r := c.s.reg
	if len(x.Argv) == 2 {
		x.W.Map(len(r.list))
		for _, e := range r.list {
			x.W.BulkString(e.name)
			writeCommandDocs(x, e)
		}
		return
	}
	var found []*command
	for _, a := range x.Argv[2:] {
		if e := r.lookupFullName(string(a)); e != nil {
			found = append(found, e)
		}
	}
	x.W.Map(len(found))
	for _, e := range found {
		x.W.BulkString(e.name)
		writeCommandDocs(x, e)
	}
}

// cmdCommandGetKeys is COMMAND GETKEYS and GETKEYSANDFLAGS with Valkey
// 8.0.1's texts and key rules (getKeysSubcommandImpl).
func cmdCommandGetKeys(c *client, x *store.Ctx) {
	args := x.Argv[2:]
	e, _ := c.s.reg.lookup(args)
	if e == nil {
		x.W.Error("ERR Invalid command specified")
		return
	}
	if !hasKeys(e.meta) {
		x.W.Error("ERR The command has no key arguments")
		return
	}
	if !e.arityOK(len(args)) {
		x.W.Error("ERR Invalid number of arguments specified for command")
		return
	}
	keys := commandKeys(e.meta, args)
	if len(keys) == 0 {
		if e.info.Flags&cmdmeta.FlagNoMandatoryKeys != 0 {
			x.W.Array(0)
		} else {
			x.W.Error("ERR Invalid arguments specified for command")
		}
		return
	}
	withFlags := strings.EqualFold(string(x.Argv[1]), "getkeysandflags")
	x.W.Array(len(keys))
	for _, k := range keys {
		if withFlags {
			x.W.Array(2)
			x.W.Bulk(args[k.pos])
			writeFlagSet(x, k.flags.ReplyNames())
			continue
		}
		x.W.Bulk(args[k.pos])
	}
}

// keyRef is one key of a command line: its argv index and flags.
type keyRef struct {
	pos   int
	flags cmdmeta.KeyFlag
}

// hasKeys is Valkey's doesCommandHaveKeys: a get-keys function, or a key
// spec not marked not_key.
func hasKeys(m *cmdmeta.Command) bool {
	if m.GetKeys != "" {
		return true
	}
	for _, ks := range m.KeySpecs {
		if ks.Flags&cmdmeta.KeyNotKey == 0 {
			return true
		}
	}
	return false
}

// commandKeys is Valkey's getKeysFromCommandWithSpecs: the key specs when
// they are reliable (some key, no variable flags) and succeed, otherwise
// the command's get-keys function.
func commandKeys(m *cmdmeta.Command, argv [][]byte) []keyRef {
	hasSpec, varFlags := false, false
	for _, ks := range m.KeySpecs {
		hasSpec = hasSpec || ks.Flags&cmdmeta.KeyNotKey == 0
		varFlags = varFlags || ks.Flags&cmdmeta.KeyVariableFlags != 0
	}
	if hasSpec && !varFlags {
		if keys, ok := keysFromSpecs(m, argv); ok {
			return keys
		}
	}
	return getKeysFunc(m.GetKeys, argv)
}

// keysFromSpecs is Valkey's getKeysUsingKeySpecs (no flags): ok is false
// for an unknown, incomplete or out-of-range spec.
func keysFromSpecs(m *cmdmeta.Command, argv [][]byte) ([]keyRef, bool) {
	argc := len(argv)
	var keys []keyRef
	for _, ks := range m.KeySpecs {
		if ks.Flags&cmdmeta.KeyNotKey != 0 {
			continue
		}
		first := 0
		switch ks.BeginSearch.Type {
		case "index":
			first = ks.BeginSearch.Index
		case "keyword":
			sf := ks.BeginSearch.StartFrom
			start, end := sf, argc-1
			if sf <= 0 {
				start, end = argc+sf, 1
			}
			for i := start; i != end; {
				if i >= argc || i < 1 {
					break
				}
				if cEqualFold(argv[i], ks.BeginSearch.Keyword) {
					first = i + 1
					break
				}
				if start <= end {
					i++
				} else {
					i--
				}
			}
			if first == 0 {
				continue
			}
		default:
			return nil, false
		}
		var last, step int
		switch fk := ks.FindKeys; fk.Type {
		case "range":
			step = fk.KeyStep
			switch {
			case fk.LastKey >= 0:
				last = first + fk.LastKey
			case fk.Limit == 0:
				last = argc + fk.LastKey
			default:
				last = first + ((argc-first)/fk.Limit + fk.LastKey)
			}
		case "keynum":
			step = fk.KeyStep
			if fk.KeyNumIdx >= argc || first+fk.KeyNumIdx >= argc {
				return nil, false
			}
			n, ok := num.ParseInt(argv[first+fk.KeyNumIdx])
			if !ok || n < 0 {
				return nil, false
			}
			first += fk.FirstKey
			last = first + int(int32(n)) - 1 // Valkey's (int)numkeys
		default:
			return nil, false
		}
		if last >= argc || last < first || first >= argc {
			return nil, false
		}
		for i := first; i <= last; i += step {
			if i >= argc || i < first {
				continue // a negative-arity command's short line: no key here
			}
			keys = append(keys, keyRef{pos: i, flags: ks.Flags})
		}
		if ks.Flags&cmdmeta.KeyIncomplete != 0 {
			return nil, false
		}
	}
	return keys, true
}

// getKeysFunc runs Valkey's get-keys function name (src/db.c) on argv:
// nil when it finds no key or Valkey has no such function.
func getKeysFunc(name string, argv [][]byte) []keyRef {
	switch name {
	case "zunionInterDiffStoreGetKeys":
		return genericGetKeys(1, 2, 3, 1, argv)
	case "zunionInterDiffGetKeys", "sintercardGetKeys", "lmpopGetKeys", "zmpopGetKeys":
		return genericGetKeys(0, 1, 2, 1, argv)
	case "evalGetKeys", "functionGetKeys", "blmpopGetKeys", "bzmpopGetKeys":
		return genericGetKeys(0, 2, 3, 1, argv)
	case "setGetKeys":
		for _, a := range argv[3:] {
			if cEqualFold(a, "get") {
				return []keyRef{{1, cmdmeta.KeyRW | cmdmeta.KeyAccess | cmdmeta.KeyUpdate}}
			}
		}
		return []keyRef{{1, cmdmeta.KeyOW | cmdmeta.KeyUpdate}}
	case "sortROGetKeys":
		return []keyRef{{1, cmdmeta.KeyRO | cmdmeta.KeyAccess}}
	case "sortGetKeys":
		return sortGetKeys(argv)
	case "bitfieldGetKeys":
		return bitfieldGetKeys(argv)
	case "migrateGetKeys":
		return migrateGetKeys(argv)
	case "georadiusGetKeys":
		return georadiusGetKeys(argv)
	case "xreadGetKeys":
		return xreadGetKeys(argv)
	}
	return nil
}

// cEqualFold is strcasecmp(b, s) == 0 as Valkey calls it on an argument:
// the comparison stops at a NUL byte of b.
func cEqualFold(b []byte, s string) bool {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return strings.EqualFold(string(b), s)
}

// sortGetKeys is Valkey's: the sort key, and the key after the last STORE
// (LIMIT skips two arguments, GET and BY one).
func sortGetKeys(argv [][]byte) []keyRef {
	keys := []keyRef{{1, cmdmeta.KeyRO | cmdmeta.KeyAccess}}
	store := -1
	for i := 2; i < len(argv); i++ {
		switch {
		case cEqualFold(argv[i], "limit"):
			i += 2
		case cEqualFold(argv[i], "store") && i+1 < len(argv):
			store = i + 1
		case cEqualFold(argv[i], "get"), cEqualFold(argv[i], "by"):
			i++
		}
	}
	if store >= 0 {
		keys = append(keys, keyRef{store, cmdmeta.KeyOW | cmdmeta.KeyUpdate})
	}
	return keys
}

// bitfieldGetKeys is Valkey's: the key, RO access when only GET (and
// OVERFLOW) subcommands come before the first SET or INCRBY.
func bitfieldGetKeys(argv [][]byte) []keyRef {
	readonly := true
	for i := 2; i < len(argv); i++ {
		rem := len(argv) - i - 1
		switch {
		case cEqualFold(argv[i], "get") && rem >= 2:
			i += 2
		case (cEqualFold(argv[i], "set") || cEqualFold(argv[i], "incrby")) && rem >= 3:
			readonly = false
			i = len(argv)
		case cEqualFold(argv[i], "overflow") && rem >= 1:
			i++
		default:
			readonly = false
			i = len(argv)
		}
	}
	if readonly {
		return []keyRef{{1, cmdmeta.KeyRO | cmdmeta.KeyAccess}}
	}
	return []keyRef{{1, cmdmeta.KeyRW | cmdmeta.KeyAccess | cmdmeta.KeyUpdate}}
}

// migrateGetKeys is Valkey's: argv[3], or with KEYS (and an empty
// argv[3]) every argument after it.
func migrateGetKeys(argv [][]byte) []keyRef {
	first, n := 3, 1
	if len(argv) > 6 {
	scan:
		for i := 6; i < len(argv); i++ {
			switch {
			case cEqualFold(argv[i], "keys"):
				if len(argv[3]) > 0 {
					n = 0
				} else {
					first, n = i+1, len(argv)-i-1
				}
				break scan
			case cEqualFold(argv[i], "auth"):
				i++
			case cEqualFold(argv[i], "auth2"):
				i += 2
			}
		}
	}
	var keys []keyRef
	for i := 0; i < n; i++ {
		keys = append(keys, keyRef{first + i, cmdmeta.KeyRW | cmdmeta.KeyAccess | cmdmeta.KeyDelete})
	}
	return keys
}

// georadiusGetKeys is Valkey's: the key, and the key after the last STORE
// or STOREDIST, with no flags.
func georadiusGetKeys(argv [][]byte) []keyRef {
	stored := -1
	for i := 5; i < len(argv); i++ {
		if (cEqualFold(argv[i], "store") || cEqualFold(argv[i], "storedist")) && i+1 < len(argv) {
			stored = i + 1
			i++
		}
	}
	keys := []keyRef{{pos: 1}}
	if stored >= 0 {
		keys = append(keys, keyRef{pos: stored})
	}
	return keys
}

// xreadGetKeys is Valkey's: the first half of the arguments after
// STREAMS, with no flags; none when they are not an even number.
func xreadGetKeys(argv [][]byte) []keyRef {
	pos := -1
scan:
	for i := 1; i < len(argv); i++ {
		switch {
		case cEqualFold(argv[i], "block"), cEqualFold(argv[i], "count"):
			i++
		case cEqualFold(argv[i], "group"):
			i += 2
		case cEqualFold(argv[i], "noack"):
		case cEqualFold(argv[i], "streams"):
			pos = i
			break scan
		default:
			break scan
		}
	}
	if pos < 0 {
		return nil
	}
	n := len(argv) - pos - 1
	if n == 0 || n%2 != 0 {
		return nil
	}
	var keys []keyRef
	for i := pos + 1; i < len(argv)-n/2; i++ {
		keys = append(keys, keyRef{pos: i})
	}
	return keys
}

// genericGetKeys is Valkey's: the count at keyCountOfs read as atoi, keys
// from firstKeyOfs every keyStep, then the destination at storeKeyOfs (0:
// none), all with no flags.
func genericGetKeys(storeKeyOfs, keyCountOfs, firstKeyOfs, keyStep int, argv [][]byte) []keyRef {
	n := cAtoi(argv[keyCountOfs])
	if n < 1 || n > (len(argv)-firstKeyOfs)/keyStep {
		return nil
	}
	var keys []keyRef
	for i := 0; i < n; i++ {
		keys = append(keys, keyRef{pos: firstKeyOfs + i*keyStep})
	}
	if storeKeyOfs != 0 {
		keys = append(keys, keyRef{pos: storeKeyOfs})
	}
	return keys
}

// cAtoi is C's atoi: leading blanks, a sign, then digits up to the first other
// byte; 0 when there are none (saturating instead of overflowing).
func cAtoi(b []byte) int {
	i := 0
	for i < len(b) && (b[i] == ' ' || (b[i] >= '\t' && b[i] <= '\r')) {
		i++
	}
	neg := false
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	n := 0
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		if n < 1<<31 {
			n = n*10 + int(b[i]-'0')
		}
	}
	if neg {
		return -n
	}
	return n
}

// cmdCommandList is COMMAND LIST [FILTERBY MODULE m | ACLCAT c |
// PATTERN p]: every command and subcommand name.
func cmdCommandList(c *client, x *store.Ctx) {
	argv := x.Argv
	var match func(e *command) bool
	switch {
	case len(argv) == 2:
		match = func(*command) bool { return true }
	case len(argv) == 5 && strings.EqualFold(string(argv[2]), "filterby"):
		v := string(argv[4])
		switch strings.ToLower(string(argv[3])) {
		case "module":
			match = func(*command) bool { return false }
		case "aclcat":
			cat := cmdmeta.CategoryByName(v)
			match = func(e *command) bool { return cat != 0 && e.info.ACLCategories&cat != 0 }
		case "pattern":
			match = func(e *command) bool { return store.GlobMatch(v, e.name, true) }
		default:
			x.W.Error(store.ErrSyntax)
			return
		}
	default:
		x.W.Error(store.ErrSyntax)
		return
	}
	var names []string
	for _, e := range c.s.reg.allCommands() {
		if match(e) {
			names = append(names, e.name)
		}
	}
	x.W.Array(len(names))
	for _, n := range names {
		x.W.BulkString(n)
	}
}

func writeFlagSet(x *store.Ctx, names []string) {
	x.W.Set(len(names))
	for _, n := range names {
		x.W.Simple(n)
	}
}

// writeCommandInfo writes Valkey's COMMAND INFO entry: name, arity, flags
// (set), first key, last key, step, ACL categories (set), tips (set), key
// specs (set), subcommands (array; an empty set for none).
func writeCommandInfo(x *store.Ctx, e *command) {
	w := x.W
	m, in := e.meta, e.info
	w.Array(10)
	w.BulkString(e.name)
	w.Int(int64(m.Arity))
	writeFlagSet(x, in.Flags.ReplyNames())
	w.Int(int64(in.FirstKey))
	w.Int(int64(in.LastKey))
	w.Int(int64(in.Step))
	writeFlagSet(x, in.ACLCategories.ReplyNames())
	w.Set(len(m.Tips))
	for _, t := range m.Tips {
		w.BulkString(t)
	}
	w.Set(len(m.KeySpecs))
	for _, ks := range m.KeySpecs {
		writeKeySpec(x, ks)
	}
	if e.subs == nil {
		w.Set(0)
		return
	}
	subs := e.sortedSubs()
	w.Array(len(subs))
	for _, s := range subs {
		writeCommandInfo(x, s)
	}
}

func writeKeySpec(x *store.Ctx, ks cmdmeta.KeySpec) {
	w := x.W
	if ks.Notes != "" {
		w.Map(4)
		w.BulkString("notes")
		w.BulkString(ks.Notes)
	} else {
		w.Map(3)
	}
	w.BulkString("flags")
	writeFlagSet(x, ks.Flags.ReplyNames())
	w.BulkString("begin_search")
	w.Map(2)
	w.BulkString("type")
	w.BulkString(ks.BeginSearch.Type)
	w.BulkString("spec")
	switch ks.BeginSearch.Type {
	case "index":
		w.Map(1)
		w.BulkString("index")
		w.Int(int64(ks.BeginSearch.Index))
	case "keyword":
		w.Map(2)
		w.BulkString("keyword")
		w.BulkString(ks.BeginSearch.Keyword)
		w.BulkString("startfrom")
		w.Int(int64(ks.BeginSearch.StartFrom))
	default:
		w.Map(0)
	}
	w.BulkString("find_keys")
	w.Map(2)
	w.BulkString("type")
	w.BulkString(ks.FindKeys.Type)
	w.BulkString("spec")
	switch fk := ks.FindKeys; fk.Type {
	case "range":
		w.Map(3)
		w.BulkString("lastkey")
		w.Int(int64(fk.LastKey))
		w.BulkString("keystep")
		w.Int(int64(fk.KeyStep))
		w.BulkString("limit")
		w.Int(int64(fk.Limit))
	case "keynum":
		w.Map(3)
		w.BulkString("keynumidx")
		w.Int(int64(fk.KeyNumIdx))
		w.BulkString("firstkey")
		w.Int(int64(fk.FirstKey))
		w.BulkString("keystep")
		w.Int(int64(fk.KeyStep))
	default:
		w.Map(0)
	}
}

// writeCommandDocs writes Valkey's COMMAND DOCS map of one command:
// summary, since, group, complexity, doc_flags, deprecated_since,
// replaced_by, history, arguments, subcommands, each when present (group
// always).
func writeCommandDocs(x *store.Ctx, e *command) {
	w := x.W
	m := e.meta
	n := 1
	for _, s := range []string{m.Summary, m.Since, m.Complexity, m.DeprecatedSince, m.ReplacedBy} {
		if s != "" {
			n++
		}
	}
	if m.DocFlags != 0 {
		n++
	}
	if len(m.History) > 0 {
		n++
	}
	if len(m.Args) > 0 {
		n++
	}
	if e.subs != nil {
		n++
	}
	w.Map(n)
	str := func(k, v string) {
		if v != "" {
			w.BulkString(k)
			w.BulkString(v)
		}
	}
	str("summary", m.Summary)
	str("since", m.Since)
	w.BulkString("group")
	w.BulkString(m.Group)
	str("complexity", m.Complexity)
	if m.DocFlags != 0 {
		w.BulkString("doc_flags")
		writeFlagSet(x, m.DocFlags.ReplyNames())
	}
	str("deprecated_since", m.DeprecatedSince)
	str("replaced_by", m.ReplacedBy)
	if len(m.History) > 0 {
		w.BulkString("history")
		w.Set(len(m.History))
		for _, h := range m.History {
			w.Array(2)
			w.BulkString(h.Version)
			w.BulkString(h.Change)
		}
	}
	if len(m.Args) > 0 {
		w.BulkString("arguments")
		writeArgs(x, m.Args)
	}
	if e.subs != nil {
		w.BulkString("subcommands")
		subs := e.sortedSubs()
		w.Map(len(subs))
		for _, s := range subs {
			w.BulkString(s.name)
			writeCommandDocs(x, s)
		}
	}
}

// writeArgs writes Valkey's addReplyCommandArgList.
func writeArgs(x *store.Ctx, args []cmdmeta.Arg) {
	w := x.W
	w.Array(len(args))
	for _, a := range args {
		nested := a.Type == "oneof" || a.Type == "block"
		n := 3 // name, type, display_text or arguments
		if a.HasKeySpec {
			n++
		}
		for _, s := range []string{a.Token, a.Summary, a.Since, a.Deprecated} {
			if s != "" {
				n++
			}
		}
		if a.Flags != 0 {
			n++
		}
		w.Map(n)
		w.BulkString("name")
		w.BulkString(a.Name)
		w.BulkString("type")
		w.BulkString(a.Type)
		if !nested {
			w.BulkString("display_text")
			if a.Display != "" {
				w.BulkString(a.Display)
			} else {
				w.BulkString(a.Name)
			}
		}
		if a.HasKeySpec {
			w.BulkString("key_spec_index")
			w.Int(int64(a.KeySpecIndex))
		}
		for _, kv := range [][2]string{{"token", a.Token}, {"summary", a.Summary}, {"since", a.Since},
			{"deprecated_since", a.Deprecated}} {
			if kv[1] != "" {
				w.BulkString(kv[0])
				w.BulkString(kv[1])
			}
		}
		if a.Flags != 0 {
			w.BulkString("flags")
			writeFlagSet(x, a.Flags.ReplyNames())
		}
		if nested {
			w.BulkString("arguments")
			writeArgs(x, a.Args)
		}
	}
}
