package server

import (
	"sort"
	"strings"

	"github.com/emqd/emqd/resp"
	"github.com/emqd/emqd/store"
)

// Pub/Sub (docs/compat.md §1.9; Valkey 8's pubsub.c): SUBSCRIBE,
// UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, PUBLISH and PUBSUB CHANNELS /
// NUMSUB / NUMPAT / SHARDCHANNELS / SHARDNUMSUB, with Valkey's frames in
// RESP2 and RESP3. It exists first for client-side caching: a RESP2 client
// that redirects its invalidations to another connection needs that one
// subscribed to __redis__:invalidate. Sharded channels (SSUBSCRIBE,
// SPUBLISH) and keyspace notifications are not implemented. Everything
// here runs under the store lock.

// clientPubSub is one client's subscriptions, in subscription order.
type clientPubSub struct {
	channels []string
	patterns []string
}

// count is Valkey's clientSubscriptionsCount: channels plus patterns.
func (p *clientPubSub) count() int { return len(p.channels) + len(p.patterns) }

// pubsubState is the server's side: who listens to what, in
// subscription order.
type pubsubState struct {
	channels map[string][]*client
	patterns map[string][]*client
	clients  int // clients with a subscription (pubsub_clients)
}

// frameWriter writes frames (invalidations, messages) for a client other
// than the one whose command writes them, under the store lock.
type frameWriter struct {
	scratch resp.Writer
}

// sink is the writer a frame for c goes to: c's batch writer while c's own
// batch runs (after the replies written so far), else a scratch writer
// that deliver moves to c's output queue.
func (f *frameWriter) sink(c *client) *resp.Writer {
	if c.inBatch {
		return &c.w
	}
	f.scratch.Proto = c.w.Proto
	f.scratch.Reset()
	return &f.scratch
}

// deliver queues a frame written to the scratch writer and wakes c's
// goroutine to write it.
func (f *frameWriter) deliver(c *client, out *resp.Writer) {
	if out != &f.scratch {
		return
	}
	c.enqueueLocked(out)
	c.wake()
}

// subscriptions is the client's number of channels and patterns (0: not in
// Pub/Sub mode).
func (c *client) subscriptions() int {
	if c.sub == nil {
		return 0
	}
	return c.sub.count()
}

func (c *client) pubsub() *clientPubSub {
	if c.sub == nil {
		c.sub = &clientPubSub{}
	}
	return c.sub
}

// subscribedFrame writes `subscribe|psubscribe|unsubscribe|punsubscribe
// <name> <count>` (a push in RESP3); name nil for an UNSUBSCRIBE of
// nothing.
func subscribedFrame(x *store.Ctx, kind string, name *string, count int) {
	if x.W.Proto == 3 {
		x.W.Push(3)
	} else {
		x.W.Array(3)
	}
	x.W.BulkString(kind)
	if name == nil {
		x.W.Nil()
	} else {
		x.W.BulkString(*name)
	}
	x.W.Int(int64(count))
}

// markPubSub keeps pubsub_clients in step with the client's subscriptions.
func (c *client) markPubSub(was int) {
	now := c.subscriptions()
	ps := &c.s.pubsub
	switch {
	case was == 0 && now > 0:
		ps.clients++
	case was > 0 && now == 0:
		ps.clients--
	}
	c.inPubSub.Store(now > 0)
}

func removeClient(list []*client, c *client) []*client {
	for i, x := range list {
		if x == c {
			copy(list[i:], list[i+1:])
			list[len(list)-1] = nil
			return list[:len(list)-1]
		}
	}
	return list
}

func removeName(list []string, name string) ([]string, bool) {
	for i, x := range list {
		if x == name {
			return append(list[:i], list[i+1:]...), true
		}
	}
	return list, false
}

func hasName(list []string, name string) bool {
	for _, x := range list {
		if x == name {
			return true
		}
	}
	return false
}

// cmdSubscribe is SUBSCRIBE channel [channel ...].
func cmdSubscribe(c *client, x *store.Ctx) { c.subscribe(x, false) }

// cmdPSubscribe is PSUBSCRIBE pattern [pattern ...].
func cmdPSubscribe(c *client, x *store.Ctx) { c.subscribe(x, true) }

func (c *client) subscribe(x *store.Ctx, patterns bool) {
	ps := &c.s.pubsub
	was := c.subscriptions()
	sub := c.pubsub()
	kind, list, table := "subscribe", &sub.channels, &ps.channels
	if patterns {
		kind, list, table = "psubscribe", &sub.patterns, &ps.patterns
	}
	if *table == nil {
		*table = make(map[string][]*client)
	}
	for _, a := range x.Argv[1:] {
		name := string(a)
		if !hasName(*list, name) {
			*list = append(*list, name)
			(*table)[name] = append((*table)[name], c)
		}
		subscribedFrame(x, kind, &name, sub.count())
	}
	c.markPubSub(was)
}

// cmdUnsubscribe is UNSUBSCRIBE [channel ...]: every channel when none is
// named (one frame each, then none left; a single frame with a null name
// when there was none).
func cmdUnsubscribe(c *client, x *store.Ctx) { c.unsubscribe(x, false) }

// cmdPUnsubscribe is PUNSUBSCRIBE [pattern ...].
func cmdPUnsubscribe(c *client, x *store.Ctx) { c.unsubscribe(x, true) }

func (c *client) unsubscribe(x *store.Ctx, patterns bool) {
	was := c.subscriptions()
	sub := c.pubsub()
	kind, list := "unsubscribe", &sub.channels
	if patterns {
		kind, list = "punsubscribe", &sub.patterns
	}
	if len(x.Argv) == 1 {
		names := append([]string(nil), (*list)...)
		for _, name := range names {
			c.dropSubscription(name, patterns)
			subscribedFrame(x, kind, &name, sub.count())
		}
		if len(names) == 0 {
			subscribedFrame(x, kind, nil, sub.count())
		}
	} else {
		for _, a := range x.Argv[1:] {
			name := string(a)
			c.dropSubscription(name, patterns)
			subscribedFrame(x, kind, &name, sub.count())
		}
	}
	c.markPubSub(was)
}

// dropSubscription removes one channel (or pattern) of c.
func (c *client) dropSubscription(name string, pattern bool) {
	sub := c.sub
	ps := &c.s.pubsub
	list, table := &sub.channels, ps.channels
	if pattern {
		list, table = &sub.patterns, ps.patterns
	}
	var ok bool
	if *list, ok = removeName(*list, name); !ok {
		return
	}
	if l := removeClient(table[name], c); len(l) == 0 {
		delete(table, name)
	} else {
		table[name] = l
	}
}

// unsubscribeAll drops every subscription of c without a reply (RESET,
// disconnect).
func (c *client) unsubscribeAll(bool) {
	if c.sub == nil {
		return
	}
	was := c.subscriptions()
	for _, n := range append([]string(nil), c.sub.channels...) {
		c.dropSubscription(n, false)
	}
	for _, n := range append([]string(nil), c.sub.patterns...) {
		c.dropSubscription(n, true)
	}
	c.markPubSub(was)
}

// cmdPublish is PUBLISH channel message: `:n` clients it reached (channel
// subscribers, then pattern subscribers, each match counting once).
func cmdPublish(c *client, x *store.Ctx) {
	x.W.Int(int64(c.s.publish(string(x.Argv[1]), x.Argv[2])))
}

// publish delivers message on channel and returns the receivers.
func (s *Server) publish(channel string, message []byte) int {
	ps := &s.pubsub
	t := &s.frames
	n := 0
	for _, r := range ps.channels[channel] {
		out := t.sink(r)
		if out.Proto == 3 {
			out.Push(3)
		} else {
			out.Array(3)
		}
		out.BulkString("message")
		out.BulkString(channel)
		out.Bulk(message)
		t.deliver(r, out)
		n++
	}
	if len(ps.patterns) > 0 {
		pats := make([]string, 0, len(ps.patterns))
		for p := range ps.patterns {
			pats = append(pats, p)
		}
		sort.Strings(pats)
		for _, p := range pats {
			if !store.GlobMatch(p, channel, false) {
				continue
			}
			for _, r := range ps.patterns[p] {
				out := t.sink(r)
				if out.Proto == 3 {
					out.Push(4)
				} else {
					out.Array(4)
				}
				out.BulkString("pmessage")
				out.BulkString(p)
				out.BulkString(channel)
				out.Bulk(message)
				t.deliver(r, out)
				n++
			}
		}
	}
	return n
}

// pubsubSubcommands are PUBSUB's subcommands.
func pubsubSubcommands() []serverCmd {
	flags := []store.Flag{store.FlagPubSub, store.FlagLoading, store.FlagStale}
	return []serverCmd{
		{spec: store.NewCommand("pubsub|channels", -2, nil, flags...), run: cmdPubsubChannels},
		{spec: store.NewCommand("pubsub|numsub", -2, nil, flags...), run: cmdPubsubNumsub},
		{spec: store.NewCommand("pubsub|numpat", 2, nil, flags...), run: cmdPubsubNumpat},
		{spec: store.NewCommand("pubsub|shardchannels", -2, nil, flags...), run: func(c *client, x *store.Ctx) { x.W.Array(0) }},
		{spec: store.NewCommand("pubsub|shardnumsub", -2, nil, flags...), run: func(c *client, x *store.Ctx) {
			x.W.Array(2 * (len(x.Argv) - 2))
			for _, a := range x.Argv[2:] {
				x.W.Bulk(a)
				x.W.Int(0)
			}
		}},
		{spec: store.NewCommand("pubsub|help", 2, nil, store.FlagLoading, store.FlagStale), run: helpReply("PUBSUB",
			"CHANNELS [<pattern>]", "    Return the currently active channels matching a <pattern> (default: '*').",
			"NUMPAT", "    Return number of subscriptions to patterns.",
			"NUMSUB [<channel> ...]", "    Return the number of subscribers for the specified channels, excluding",
			"    pattern subscriptions(default: no channels).",
			"SHARDCHANNELS [<pattern>]", "    Return the currently active shard level channels matching a <pattern> (default: '*').",
			"SHARDNUMSUB [<shardchannel> ...]", "    Return the number of subscribers for the specified shard level channel(s)")},
	}
}

// cmdPubsubChannels is PUBSUB CHANNELS [pattern]: active channels (byte
// order).
func cmdPubsubChannels(c *client, x *store.Ctx) {
	if len(x.Argv) > 3 {
		x.W.Error(unknownSubcommandOrArity(x.Argv))
		return
	}
	var out []string
	for ch := range c.s.pubsub.channels {
		if len(x.Argv) == 2 || store.GlobMatch(string(x.Argv[2]), ch, false) {
			out = append(out, ch)
		}
	}
	sort.Strings(out)
	x.W.Array(len(out))
	for _, ch := range out {
		x.W.BulkString(ch)
	}
}

// cmdPubsubNumsub is PUBSUB NUMSUB [channel ...]: name, count pairs.
func cmdPubsubNumsub(c *client, x *store.Ctx) {
	x.W.Array(2 * (len(x.Argv) - 2))
	for _, a := range x.Argv[2:] {
		x.W.Bulk(a)
		x.W.Int(int64(len(c.s.pubsub.channels[string(a)])))
	}
}

// cmdPubsubNumpat is PUBSUB NUMPAT: the number of distinct patterns.
func cmdPubsubNumpat(c *client, x *store.Ctx) { x.W.Int(int64(len(c.s.pubsub.patterns))) }

// unknownSubcommandOrArity is Valkey's addReplySubcommandSyntaxError.
func unknownSubcommandOrArity(argv [][]byte) string {
	return "ERR unknown subcommand or wrong number of arguments for '" + string(cPrefix(argv[1], 128)) +
		"'. Try " + strings.ToUpper(string(argv[0])) + " HELP."
}
