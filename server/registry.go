package server

import (
	"sort"
	"strings"

	"github.com/emqd/emqd/internal/cmdmeta"
	"github.com/emqd/emqd/internal/store"
)

// command is one registry entry: a store or verb CommandSpec, or a server
// command (run set).
type command struct {
	spec   *store.CommandSpec
	name   string // lower-case full name: "hget", "client|setname"
	arity  int
	flags  store.Flag // the union of spec.Flags
	parent *command
	subs   map[string]*command
	// run is a server command's handler (it needs the connection);
	// handler a store or verb handler.
	run     func(c *client, x *store.Ctx)
	handler store.Handler

	// meta is the command's metadata (internal/cmdmeta), info what COMMAND
	// INFO derives from it; synthMeta marks metadata made from the spec for
	// a command the table lacks (attachMeta).
	meta      *cmdmeta.Command
	info      cmdmeta.Info
	synthMeta bool

	// Statistics (store lock): INFO commandstats.
	calls, usec, rejected, failed int64
	// lat is LATENCY HISTOGRAM's (latency_hist.go), nil until the first
	// call with latency-tracking yes.
	lat *latHist
	// hist is the latency histogram (metrics.go); nil without metrics-addr.
	hist *cmdHist
}

// registry is the one command table: dispatch, arity, COMMAND.
type registry struct {
	cmds map[string]*command // top-level, by lower-case name
	list []*command          // top-level, sorted by name
}

// serverCmd is a command implemented in this package.
type serverCmd struct {
	spec *store.CommandSpec
	run  func(c *client, x *store.Ctx)
	subs []serverCmd
}

// newRegistry builds the table from the store's, the verbs' and the
// server's commands. A name defined twice keeps the server's definition,
// then the first one seen.
func newRegistry(storeCmds, verbCmds []*store.CommandSpec, own []serverCmd) *registry {
	r := &registry{cmds: make(map[string]*command)}
	for _, sc := range own {
		e := fromServerCmd(sc, nil)
		r.cmds[e.name] = e
	}
	for _, list := range [][]*store.CommandSpec{storeCmds, verbCmds} {
		for _, cs := range list {
			name := strings.ToLower(cs.Name)
			if _, dup := r.cmds[name]; dup {
				continue
			}
			r.cmds[name] = fromSpec(cs, nil)
		}
	}
	for _, e := range r.cmds {
		r.list = append(r.list, e)
	}
	sort.Slice(r.list, func(i, j int) bool { return r.list[i].name < r.list[j].name })
	return r
}

func fromSpec(cs *store.CommandSpec, parent *command) *command {
	e := &command{spec: cs, name: strings.ToLower(cs.Name), arity: cs.Arity, parent: parent, handler: cs.Handler}
	e.flags = cs.FlagSet()
	e.attachMeta()
	if len(cs.Subcommands) > 0 {
		e.subs = make(map[string]*command)
		for _, sub := range cs.Subcommands {
			se := fromSpec(sub, e)
			e.subs[subName(se.name)] = se
		}
	}
	return e
}

func fromServerCmd(sc serverCmd, parent *command) *command {
	e := fromSpec(sc.spec, parent)
	e.run = sc.run
	if len(sc.subs) > 0 {
		e.subs = make(map[string]*command)
		subspecs := make([]*store.CommandSpec, 0, len(sc.subs))
		for _, sub := range sc.subs {
			se := fromServerCmd(sub, e)
			e.subs[subName(se.name)] = se
			subspecs = append(subspecs, sub.spec)
		}
		e.spec.Subcommands = subspecs
	}
	return e
}

// subName is the part after "|" of a subcommand's full name.
func subName(full string) string {
	if i := strings.IndexByte(full, '|'); i >= 0 {
		return full[i+1:]
	}
	return full
}

// lookupName finds a top-level command by name, any case, without
// allocating for names up to 64 bytes.
func (r *registry) lookupName(name []byte) *command {
	if len(name) > 64 {
		return r.cmds[strings.ToLower(string(name))]
	}
	var buf [64]byte
	b := buf[:len(name)]
	for i, ch := range name {
		if ch >= 'A' && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		b[i] = ch
	}
	return r.cmds[string(b)]
}

// lookup resolves argv to a command or subcommand (Valkey's
// lookupCommand): a container with argc >= 2 resolves to its subcommand.
// It returns (nil, true) for an unknown subcommand of a known container.
func (r *registry) lookup(argv [][]byte) (*command, bool) {
	return resolveSub(r.lookupName(argv[0]), argv)
}

// resolveSub is lookup's second step: base is the command argv[0] names
// (nil: unknown).
func resolveSub(base *command, argv [][]byte) (*command, bool) {
	if base == nil {
		return nil, false
	}
	if len(argv) == 1 || base.subs == nil {
		return base, false
	}
	sub := base.subByName(argv[1])
	if sub == nil {
		return nil, true
	}
	return sub, false
}

func (e *command) subByName(name []byte) *command {
	if len(name) > 64 {
		return e.subs[strings.ToLower(string(name))]
	}
	var buf [64]byte
	b := buf[:len(name)]
	for i, ch := range name {
		if ch >= 'A' && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		b[i] = ch
	}
	return e.subs[string(b)]
}

// arityOK is Valkey's arity rule: n exact, -n at least n.
func (e *command) arityOK(argc int) bool {
	if e.arity > 0 {
		return argc == e.arity
	}
	return argc >= -e.arity
}

// sortedSubs lists the subcommands by name.
func (e *command) sortedSubs() []*command {
	out := make([]*command, 0, len(e.subs))
	for _, s := range e.subs {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// cPrefix is what C's "%.*s" prints of b: up to the first NUL, at most n
// bytes.
func cPrefix(b []byte, n int) []byte {
	for i, ch := range b {
		if ch == 0 {
			b = b[:i]
			break
		}
	}
	if n >= 0 && len(b) > n {
		b = b[:n]
	}
	return b
}

// unknownCommandError is Valkey's text for an unknown command: the name
// as typed (at most 128 bytes), then each argument quoted and followed by a
// space while the preview is shorter than 128 bytes, each cut to the room
// left (server.c processCommand).
func unknownCommandError(argv [][]byte) string {
	var args []byte
	for i := 1; i < len(argv) && len(args) < 128; i++ {
		args = append(args, '\'')
		args = append(args, cPrefix(argv[i], 128-len(args)+1)...)
		args = append(args, '\'', ' ')
	}
	return "ERR unknown command '" + string(cPrefix(argv[0], 128)) + "', with args beginning with: " + string(args)
}

// unknownSubcommandError is "unknown subcommand 'sub'. Try CONTAINER HELP."
func unknownSubcommandError(argv [][]byte) string {
	return "ERR unknown subcommand '" + string(cPrefix(argv[1], 128)) + "'. Try " +
		strings.ToUpper(string(cPrefix(argv[0], -1))) + " HELP."
}

// arityError is "wrong number of arguments for 'name' command".
func arityError(name string) string {
	return "ERR wrong number of arguments for '" + name + "' command"
}
