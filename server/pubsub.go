package server

import (
	"sort"
	"strings"

	"github.com/emqd/emqd/internal/resp"
	"github.com/emqd/emqd/internal/store"
)

// Pub/Sub (docs/compat.md §1.9; Valkey 8's pubsub.c): SUBSCRIBE,
// UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, PUBLISH and PUBSUB CHANNELS /
// NUMSUB / NUMPAT / SHARDCHANNELS / SHARDNUMSUB, with Valkey's frames in
// RESP2 and RESP3. It exists first for client-side caching: a RESP2 client
// that redirects its invalidations to another connection needs that one
// subscribed to __redis__:invalidate. Sharded channels (SSUBSCRIBE,
// SPUBLISH) and keyspace notifications are not implemented. Everything
// here runs under the store lock.

// clientPubSub is one client's subscriptions: each name with the sequence
// number of its subscription, so membership, subscription and removal
// cost one map operation whatever the client holds (issue 27: a slice made
// one SUBSCRIBE of 100,000 channels quadratic), and UNSUBSCRIBE without
// names still answers in subscription order (sorted by sequence once).
type clientPubSub struct {
	channels map[string]uint64
	patterns map[string]uint64
	seq      uint64
}

// count is Valkey's clientSubscriptionsCount: channels plus patterns.
func (p *clientPubSub) count() int { return len(p.channels) + len(p.patterns) }

// inOrder returns the names of m in subscription order.
func inOrder(m map[string]uint64) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return m[names[i]] < m[names[j]] })
	return names
}

// subscribers are the clients of one channel or pattern in subscription
// order. order may hold nil holes (removed clients), compacted once they
// are half of it; at holds each client's index once the channel has more
// than subscribersScan of them, so removal is O(1) amortized whatever the
// count (below that a scan is cheaper than a map).
type subscribers struct {
	order []*client
	at    map[*client]int
	live  int
}

const subscribersScan = 8

func (l *subscribers) add(c *client, work *int64) {
	l.order = append(l.order, c)
	l.live++
	if l.at != nil {
		l.at[c] = len(l.order) - 1
	} else if len(l.order) > subscribersScan {
		l.at = make(map[*client]int, len(l.order))
		for i, x := range l.order {
			if x != nil {
				l.at[x] = i
			}
		}
		*work += int64(len(l.order))
	}
}

// remove drops c (present) and reports whether the list is empty.
func (l *subscribers) remove(c *client, work *int64) bool {
	i := -1
	if l.at != nil {
		i = l.at[c]
		delete(l.at, c)
		*work++
	} else {
		for j, x := range l.order {
			*work++
			if x == c {
				i = j
				break
			}
		}
	}
	l.order[i] = nil
	l.live--
	if l.live == 0 {
		return true
	}
	if l.live*2 < len(l.order) {
		k := 0
		for _, x := range l.order {
			if x != nil {
				l.order[k] = x
				if l.at != nil {
					l.at[x] = k
				}
				k++
			}
		}
		*work += int64(len(l.order))
		clear(l.order[k:])
		l.order = l.order[:k]
	}
	return false
}

// each calls f for every subscriber in subscription order.
func (l *subscribers) each(f func(*client)) {
	for _, x := range l.order {
		if x != nil {
			f(x)
		}
	}
}

// pubsubState is the server's side: who listens to what, in
// subscription order.
type pubsubState struct {
	channels map[string]*subscribers
	patterns map[string]*subscribers
	// sortedPats is the patterns in byte order (PUBLISH matches them in
	// that order), rebuilt by the first PUBLISH after a pattern came or
	// went.
	sortedPats []string
	patsDirty  bool
	clients    int // clients with a subscription (pubsub_clients)
	// work counts the elements visited to keep these tables (scans,
	// compactions, index builds): the tests bound it per call.
	work int64
}

// frameWriter writes frames (invalidations, messages) for a client other
// than the one whose command writes them, under the store lock.
type frameWriter struct {
	scratch resp.Writer
}

// sink is the writer a frame for c goes to: while one of c's own commands
// runs, c's pushes (exec appends them after that command's reply:
// client.executing), between the commands of c's batch its batch writer
// (after the replies written so far), else a scratch writer that deliver
// moves to c's output queue.
func (f *frameWriter) sink(c *client) *resp.Writer {
	if c.inBatch {
		if c.executing {
			c.pushes.Proto = c.w.Proto
			return &c.pushes
		}
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
		*table = make(map[string]*subscribers)
	}
	if *list == nil {
		*list = make(map[string]uint64)
	}
	for _, a := range x.Argv[1:] {
		name := string(a)
		if _, ok := (*list)[name]; !ok {
			sub.seq++
			(*list)[name] = sub.seq
			l := (*table)[name]
			if l == nil {
				l = &subscribers{}
				(*table)[name] = l
				if patterns {
					ps.patsDirty = true
				}
			}
			l.add(c, &ps.work)
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
		names := inOrder(*list)
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
	list, table := sub.channels, ps.channels
	if pattern {
		list, table = sub.patterns, ps.patterns
	}
	if _, ok := list[name]; !ok {
		return
	}
	delete(list, name)
	if table[name].remove(c, &ps.work) {
		delete(table, name)
		if pattern {
			ps.patsDirty = true
		}
	}
}

// unsubscribeAll drops every subscription of c without a reply (RESET,
// disconnect).
func (c *client) unsubscribeAll(bool) {
	if c.sub == nil {
		return
	}
	was := c.subscriptions()
	for n := range c.sub.channels {
		c.dropSubscription(n, false)
	}
	for n := range c.sub.patterns {
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
	if l := ps.channels[channel]; l != nil {
		l.each(func(r *client) {
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
		})
	}
	if len(ps.patterns) > 0 {
		if ps.patsDirty {
			ps.sortedPats = ps.sortedPats[:0]
			for p := range ps.patterns {
				ps.sortedPats = append(ps.sortedPats, p)
			}
			sort.Strings(ps.sortedPats)
			ps.patsDirty = false
		}
		for _, p := range ps.sortedPats {
			if !store.GlobMatch(p, channel, false) {
				continue
			}
			ps.patterns[p].each(func(r *client) {
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
			})
		}
	}
	return n
}

// listening reports whether a PUBLISH on channel would reach anyone: a
// channel subscriber, or a pattern that matches (the verbs' events,
// docs/verbs.md §1.6, are built only then). With no subscription at all it
// is one map lookup.
func (s *Server) listening(channel string) bool {
	ps := &s.pubsub
	if l := ps.channels[channel]; l != nil && l.live > 0 {
		return true
	}
	for p, l := range ps.patterns {
		if l != nil && l.live > 0 && store.GlobMatch(p, channel, false) {
			return true
		}
	}
	return false
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
		n := 0
		if l := c.s.pubsub.channels[string(a)]; l != nil {
			n = l.live
		}
		x.W.Int(int64(n))
	}
}

// cmdPubsubNumpat is PUBSUB NUMPAT: the number of distinct patterns.
func cmdPubsubNumpat(c *client, x *store.Ctx) { x.W.Int(int64(len(c.s.pubsub.patterns))) }

// unknownSubcommandOrArity is Valkey's addReplySubcommandSyntaxError.
func unknownSubcommandOrArity(argv [][]byte) string {
	return "ERR unknown subcommand or wrong number of arguments for '" + string(cPrefix(argv[1], 128)) +
		"'. Try " + strings.ToUpper(string(argv[0])) + " HELP."
}
