package server

import (
	"strings"

	"github.com/emqd/emqd/store"
)

// COMMAND, COMMAND COUNT/INFO/DOCS/GETKEYS/LIST (docs/compat.md §1.5).

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
			"DOCS [<command-name> ...]", "    Return documentation details about multiple commands (emqd: none).",
			"GETKEYS <full-command>", "    Return the keys from a full command.")},
	}
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

// cmdCommandDocs answers an empty map: emqd ships no command docs
// (docs/compat.md §2.6: every client checked copes).
func cmdCommandDocs(c *client, x *store.Ctx) { x.W.Map(0) }

// cmdCommandGetKeys is COMMAND GETKEYS (and GETKEYSANDFLAGS) with
// Valkey 8's texts.
func cmdCommandGetKeys(c *client, x *store.Ctx) {
	args := x.Argv[2:]
	e, _ := c.s.reg.lookup(args)
	if e == nil {
		x.W.Error("ERR Invalid command specified")
		return
	}
	if e.spec.FirstKey == 0 && e.spec.Keys == nil {
		x.W.Error("ERR The command has no key arguments")
		return
	}
	if !e.arityOK(len(args)) {
		x.W.Error("ERR Invalid number of arguments specified for command")
		return
	}
	keys := keyPositions(e.spec, len(args))
	if e.spec.Keys != nil {
		keys = e.spec.Keys(args)
		if len(keys) == 0 {
			x.W.Error("ERR Invalid arguments specified for command")
			return
		}
	}
	withFlags := strings.EqualFold(string(x.Argv[1]), "getkeysandflags")
	x.W.Array(len(keys))
	for _, k := range keys {
		if withFlags {
			x.W.Array(2)
			x.W.Bulk(args[k])
			fl := keyFlags(e)
			x.W.Set(len(fl))
			for _, f := range fl {
				x.W.Simple(f)
			}
			continue
		}
		x.W.Bulk(args[k])
	}
}

// keyPositions are the argv indexes of the keys (first, last, step; a
// negative last counts from the end).
func keyPositions(cs *store.CommandSpec, argc int) []int {
	if cs.FirstKey <= 0 {
		return nil
	}
	last := cs.LastKey
	if last < 0 {
		last = argc + last
	}
	step := cs.Step
	if step <= 0 {
		step = 1
	}
	var out []int
	for i := cs.FirstKey; i <= last && i < argc; i += step {
		out = append(out, i)
	}
	return out
}

func keyFlags(e *command) []string {
	switch {
	case e.flags&store.FlagWrite != 0:
		return []string{"RW", "update"}
	default:
		return []string{"RO", "access"}
	}
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
			match = func(e *command) bool {
				for _, cat := range aclCategories(e) {
					if strings.EqualFold(cat[1:], v) {
						return true
					}
				}
				return false
			}
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

// aclCategories derives Valkey-style ACL categories from the flags and the
// command's family.
func aclCategories(e *command) []string {
	var out []string
	if e.flags&store.FlagWrite != 0 {
		out = append(out, "@write")
	}
	if e.flags&store.FlagReadonly != 0 {
		out = append(out, "@read")
	}
	if e.flags&store.FlagAdmin != 0 {
		out = append(out, "@admin", "@dangerous")
	}
	if e.flags&store.FlagFast != 0 {
		out = append(out, "@fast")
	} else {
		out = append(out, "@slow")
	}
	if e.flags&store.FlagBlocking != 0 {
		out = append(out, "@blocking")
	}
	name := e.name
	if e.parent != nil {
		name = e.parent.name
	}
	switch {
	case strings.HasPrefix(name, "emq."):
		out = append(out, "@emq")
	case e.spec.FirstKey > 0 && name[0] == 'h':
		out = append(out, "@hash")
	case e.spec.FirstKey > 0 && name[0] == 'z':
		out = append(out, "@sortedset")
	case e.flags&store.FlagPubSub != 0 || name == "pubsub":
		out = append(out, "@pubsub")
	case name == "multi" || name == "exec" || name == "discard" || name == "watch" || name == "unwatch":
		out = append(out, "@transaction")
	case name == "ping" || name == "echo" || name == "hello" || name == "auth" || name == "client" ||
		name == "quit" || name == "reset" || name == "select":
		out = append(out, "@connection")
	case e.spec.FirstKey > 0:
		out = append(out, "@keyspace")
	}
	return out
}

// writeCommandInfo writes Valkey's COMMAND INFO entry: name, arity, flags
// (set), first key, last key, step, ACL categories (set), tips (set), key
// specs, subcommands.
func writeCommandInfo(x *store.Ctx, e *command) {
	w := x.W
	cs := e.spec
	w.Array(10)
	w.BulkString(e.name)
	w.Int(int64(e.arity))
	w.Set(len(cs.Flags))
	for _, f := range cs.Flags {
		w.Simple(f.String())
	}
	w.Int(int64(cs.FirstKey))
	w.Int(int64(cs.LastKey))
	w.Int(int64(cs.Step))
	cats := aclCategories(e)
	w.Set(len(cats))
	for _, cat := range cats {
		w.Simple(cat)
	}
	w.Set(0)
	if cs.FirstKey > 0 {
		w.Array(1)
		w.Map(3)
		w.BulkString("flags")
		fl := keyFlags(e)
		w.Set(len(fl))
		for _, f := range fl {
			w.Simple(f)
		}
		w.BulkString("begin_search")
		w.Map(2)
		w.BulkString("type")
		w.BulkString("index")
		w.BulkString("spec")
		w.Map(1)
		w.BulkString("index")
		w.Int(int64(cs.FirstKey))
		w.BulkString("find_keys")
		w.Map(2)
		w.BulkString("type")
		w.BulkString("range")
		w.BulkString("spec")
		w.Map(3)
		last := cs.LastKey
		if last >= 0 {
			last -= cs.FirstKey
		}
		w.BulkString("lastkey")
		w.Int(int64(last))
		w.BulkString("keystep")
		w.Int(int64(cs.Step))
		w.BulkString("limit")
		w.Int(0)
	} else {
		w.Array(0)
	}
	if e.subs == nil {
		w.Array(0)
		return
	}
	subs := e.sortedSubs()
	w.Array(len(subs))
	for _, s := range subs {
		writeCommandInfo(x, s)
	}
}
