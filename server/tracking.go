package server

import (
	"math/bits"
	"sort"
	"strconv"
	"strings"

	"github.com/emqd/emqd/internal/num"
	"github.com/emqd/emqd/internal/resp"
	"github.com/emqd/emqd/internal/store"
)

// Server-assisted client-side caching (docs/compat.md §1.8; Valkey 8's
// tracking.c and the CLIENT TRACKING family of networking.c).
//
// The tracking table maps a key (of any database: Valkey's table is global)
// to the ids of the clients that read it with tracking on. Every write
// reaches it through the store's one change hook (the store observer, observer.go, called by
// Store.Touch, which Ctx.Dirty, ApplyPlan, MOVE/COPY and expiry use, and by
// TouchDB for the flushes), so no command has its own invalidation code.
// The table exists only while some client tracks: until then the store
// observer finds s.trk nil and a command pays one nil check per changed key, and each
// connection one nil check per command (exec, call).
//
// Order of the frames (Valkey's trackingInvalidateKey and
// trackingHandlePendingKeyInvalidations): a client told about a key that
// its own running command changed gets the invalidation after that
// command's reply (after EXEC's whole array inside a transaction); every
// other client gets it at once, ahead of anything it is still to be sent.
// BCAST invalidations are gathered per prefix while the store lock is held
// and sent when it is released (Valkey sends them before it sleeps): one
// message per prefix listing the keys in byte order.

// trackingChannel is the Pub/Sub channel RESP2 clients receive
// invalidations on when another client redirects to them.
const trackingChannel = "__redis__:invalidate"

// clientTracking is one client's CLIENT TRACKING state (nil until its
// first CLIENT TRACKING ON).
type clientTracking struct {
	on, bcast, optin, optout, noloop bool
	// caching is CLIENT CACHING YES (OPTIN) / NO (OPTOUT) given for the
	// next command or transaction.
	caching     bool
	brokenRedir bool
	redirect    int64
	prefixes    []string // BCAST prefixes, in byte order
}

// trackedKey is one key of the table: the clients that may cache it.
type trackedKey struct {
	ids []int64
}

// bcastState is one BCAST prefix: the keys changed since the last send
// (with the client whose command changed each last, nil for none, for
// NOLOOP) and its clients.
type bcastState struct {
	keys    map[string]*client
	clients map[*client]struct{}
}

// pendingInv is an invalidation for the running client, sent after its
// reply: a key, or a flush (all keys).
type pendingInv struct {
	key   string
	flush bool
}

// tracker is the server's tracking state (store lock). s.trk points to it
// while it is installed (some client has tracking on).
type tracker struct {
	s        *Server
	keys     map[string]*trackedKey
	items    int64 // sum of the clients of every key (tracking_total_items)
	prefixes map[string]*bcastState
	clients  int // clients with tracking on (tracking_clients)
	// overLimit is Valkey's timeout_counter: rounds that ended still above
	// tracking-table-max-keys.
	overLimit int

	// The client whose command runs (Valkey's current_client) and the
	// writer of its replies; executing while its handler runs.
	cur       *client
	curW      *resp.Writer
	executing bool
	pending   []pendingInv
	bcastDue  bool
}

// installTracking makes the table live (the first CLIENT TRACKING ON). c is
// the client whose command installs it.
func (s *Server) installTracking(c *client) *tracker {
	if s.trk != nil {
		return s.trk
	}
	t := &tracker{s: s, keys: make(map[string]*trackedKey), prefixes: make(map[string]*bcastState)}
	t.cur, t.curW, t.executing = c, &c.w, true
	s.trk = t // the store observer (observer.go) now forwards to it
	return t
}

// maybeUninstall drops the table once no client tracks: the store observer
// then forwards nothing to it. Keys still remembered for clients that turned tracking
// off are forgotten then (they would only ever be sent to clients that
// tracked them, and none does).
func (t *tracker) maybeUninstall() {
	if t.clients > 0 || len(t.pending) > 0 {
		return
	}
	s := t.s
	if s.trk != t {
		return
	}
	s.trk = nil
	s.readNote = nil
}

// beforeCommand runs before each command a client sends (Valkey's
// processCommand): c becomes the current client and the table is brought
// back under tracking-table-max-keys.
func (t *tracker) beforeCommand(c *client) {
	t.cur, t.curW, t.executing = c, &c.w, false
	t.limitKeys()
	t.executing = true
}

// afterCommand runs after each command a client sends, once its reply is
// written (Valkey's afterCommand and resetClient): the invalidations of
// keys the command changed that this client tracks, then CLIENT CACHING's
// one-command scope ends unless the command was a CLIENT subcommand or the
// client is in MULTI.
func (t *tracker) afterCommand(c *client, cmd *command) {
	t.s.readNote = nil // normally cleared by call already
	t.flushPending()
	t.cur, t.curW, t.executing = nil, nil, false
	if ct := c.trk; ct != nil && ct.caching && !c.inMulti && !isClientCommand(cmd) {
		ct.caching = false
	}
	t.maybeUninstall()
}

// isClientCommand reports whether cmd is CLIENT or one of its
// subcommands (Valkey's clientCommand).
func isClientCommand(cmd *command) bool {
	if cmd == nil {
		return false
	}
	if cmd.parent != nil {
		cmd = cmd.parent
	}
	return cmd.name == "client"
}

// beginRetry and endRetry bracket a parked client's retry: it is the
// current client, its replies go to w.
func (t *tracker) beginRetry(c *client, w *resp.Writer) {
	t.cur, t.curW, t.executing = c, w, true
}

func (t *tracker) endRetry() {
	t.flushPending()
	t.cur, t.curW, t.executing = nil, nil, false
	t.maybeUninstall()
}

// abortRetry ends a retry that panicked: its pending invalidations are
// dropped with its reply.
func (t *tracker) abortRetry() {
	clear(t.pending)
	t.pending = t.pending[:0]
	t.cur, t.curW, t.executing = nil, nil, false
}

// flushPending sends the current client's pending invalidations after its
// reply.
func (t *tracker) flushPending() {
	if len(t.pending) == 0 {
		return
	}
	c := t.cur
	for _, p := range t.pending {
		if c == nil || c.trk == nil {
			break
		}
		if p.flush {
			t.sendTo(c, t.curW, nullBody(c.w.Proto))
		} else {
			t.sendTo(c, t.curW, keyBody(p.key))
		}
	}
	clear(t.pending)
	t.pending = t.pending[:0]
}

// remember records that c read key (Valkey's trackingRememberKeys; the
// OPTIN/OPTOUT gate is wantsKeys).
func (t *tracker) remember(c *client, key []byte) {
	tk := t.keys[string(key)] // no allocation for the lookup
	if tk == nil {
		tk = &trackedKey{}
		t.keys[string(key)] = tk
	}
	for _, id := range tk.ids {
		if id == c.id {
			return
		}
	}
	tk.ids = append(tk.ids, c.id)
	t.items++
}

// wantsKeys reports whether a read by c is remembered now.
func (ct *clientTracking) wantsKeys() bool {
	if !ct.on || ct.bcast {
		return false
	}
	return !((ct.optin && !ct.caching) || (ct.optout && ct.caching))
}

// trackRead remembers the keys a read-only command of c read: its
// declared keys (COMMAND GETKEYS), or, for the EMQ verbs, whose declared
// key is a queue name, the keys they looked up (DB.NoteRead).
func (c *client) trackRead(cmd *command, argv [][]byte) {
	t := c.s.trk
	if t == nil || !c.trk.wantsKeys() || strings.HasPrefix(cmd.name, "emq.") {
		return
	}
	if cmd.spec.Keys != nil {
		for _, i := range cmd.spec.Keys(argv) {
			t.remember(c, argv[i])
		}
		return
	}
	// keyPositions without its slice.
	cs := cmd.spec
	if cs.FirstKey <= 0 {
		return
	}
	last, step := cs.LastKey, max(cs.Step, 1)
	if last < 0 {
		last += len(argv)
	}
	for i := cs.FirstKey; i <= last && i < len(argv); i += step {
		t.remember(c, argv[i])
	}
}

// noteReads makes the store report the keys an EMQ verb of c looks up
// (DB.NoteRead) while it runs: their declared key is a queue name, not a
// key any write changes, so the keys they read are remembered instead.
func (c *client) noteReads(cmd *command) {
	t := c.s.trk
	if t == nil || !strings.HasPrefix(cmd.name, "emq.") {
		return
	}
	c.s.readNote = func(key string) { t.remember(c, []byte(key)) }
}

// KeyChanged is called by the store observer (observer.go) with every
// changed key while the table is installed: Valkey's trackingInvalidateKey with bcast
// set.
func (t *tracker) KeyChanged(key string, byCommand bool) {
	if len(t.prefixes) > 0 {
		var by *client
		if byCommand {
			by = t.cur
		}
		t.rememberBcast(key, by)
	}
	t.invalidate(key)
}

// invalidate tells every client that may cache key, and forgets key.
func (t *tracker) invalidate(key string) {
	tk := t.keys[key]
	if tk == nil {
		return
	}
	delete(t.keys, key)
	t.items -= int64(len(tk.ids))
	ids := tk.ids
	if len(ids) > 1 {
		// Valkey walks a radix tree keyed by the ids' bytes in memory
		// (little-endian): that order decides which message a shared
		// redirect target receives first.
		sort.Slice(ids, func(i, j int) bool { return bits.ReverseBytes64(uint64(ids[i])) < bits.ReverseBytes64(uint64(ids[j])) })
	}
	for _, id := range ids {
		c := t.s.clientByID(id)
		if c == nil || c.trk == nil || !c.trk.on || c.trk.bcast {
			continue
		}
		if c.trk.noloop && c == t.cur {
			continue
		}
		if c == t.cur && t.executing {
			t.pending = append(t.pending, pendingInv{key: key})
			continue
		}
		t.send(c, keyBody(key))
	}
}

// Flushed is called by the store observer (observer.go): FLUSHDB or FLUSHALL. Every tracking client
// (BCAST ones too, NOLOOP or not) is sent a null invalidation, the
// current client after its reply; the table is emptied (Valkey's
// trackingInvalidateKeysOnFlush).
func (t *tracker) Flushed() {
	if t.clients > 0 {
		for _, c := range t.s.sortedClients() {
			if c.trk == nil || !c.trk.on {
				continue
			}
			if c == t.cur {
				t.pending = append(t.pending, pendingInv{flush: true})
				continue
			}
			t.send(c, nullBody(c.w.Proto))
		}
	}
	t.keys = make(map[string]*trackedKey)
	t.items = 0
}

// limitKeys is Valkey's trackingLimitUsedSlots: above
// tracking-table-max-keys, keys are forgotten one after another (map order
// stands for Valkey's random walk), each with an invalidation to its
// clients as if it had changed, with an effort of 100 keys more for every
// earlier round that ended still above the limit.
func (t *tracker) limitKeys() {
	max := int(t.s.trkMaxKeys.Load())
	if max <= 0 || len(t.keys) <= max {
		t.overLimit = 0
		return
	}
	effort := 100 * (t.overLimit + 1)
	for key := range t.keys {
		t.invalidate(key)
		if len(t.keys) <= max {
			t.overLimit = 0
			return
		}
		if effort--; effort <= 0 {
			break
		}
	}
	t.overLimit++
}

// rememberBcast records key in every prefix it starts with (Valkey's
// trackingRememberKeyToBroadcast).
func (t *tracker) rememberBcast(key string, by *client) {
	for p, bs := range t.prefixes {
		if strings.HasPrefix(key, p) {
			bs.keys[key] = by
			t.bcastDue = true
		}
	}
}

// flushBcast sends the BCAST invalidations gathered while the store lock
// was held (store.Observer.BeforeUnlock; Valkey's
// trackingBroadcastInvalidationMessages): per prefix in byte order, one
// array of the changed keys in byte order to each of its clients, a NOLOOP
// client's without the keys its own commands changed last.
func (t *tracker) flushBcast() {
	if !t.bcastDue {
		return
	}
	t.bcastDue = false
	prefixes := make([]string, 0, len(t.prefixes))
	for p, bs := range t.prefixes {
		if len(bs.keys) > 0 {
			prefixes = append(prefixes, p)
		}
	}
	sort.Strings(prefixes)
	for _, p := range prefixes {
		bs := t.prefixes[p]
		keys := make([]string, 0, len(bs.keys))
		for k := range bs.keys {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		common := keysBody(keys, bs.keys, nil)
		clients := make([]*client, 0, len(bs.clients))
		for c := range bs.clients {
			clients = append(clients, c)
		}
		sort.Slice(clients, func(i, j int) bool { return clients[i].id < clients[j].id })
		for _, c := range clients {
			if c.trk.noloop {
				if body := keysBody(keys, bs.keys, c); body != nil {
					t.send(c, body)
				}
				continue
			}
			t.send(c, common)
		}
		bs.keys = make(map[string]*client)
	}
}

// keysBody is the RESP array of keys, without those last changed by
// skip (nil when that leaves none).
func keysBody(keys []string, by map[string]*client, skip *client) []byte {
	n := 0
	for _, k := range keys {
		if skip == nil || by[k] != skip {
			n++
		}
	}
	if n == 0 && skip != nil {
		return nil
	}
	b := append([]byte{'*'}, strconv.Itoa(n)...)
	b = append(b, '\r', '\n')
	for _, k := range keys {
		if skip != nil && by[k] == skip {
			continue
		}
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(k)), 10)
		b = append(b, '\r', '\n')
		b = append(b, k...)
		b = append(b, '\r', '\n')
	}
	return b
}

// keyBody is the one-key array of an invalidation.
func keyBody(key string) []byte { return keysBody([]string{key}, nil, nil) }

// nullBody is the null of a flush in the tracking client's own protocol
// (Valkey sends shared.null[c->resp], even to a redirect target).
func nullBody(proto int) []byte {
	if proto == 3 {
		return []byte("_\r\n")
	}
	return []byte("$-1\r\n")
}

// send delivers an invalidation of c (Valkey's sendTrackingMessage): to the
// client it redirects to, when it does, else to itself; as a RESP3 push
// `>2 invalidate <body>`, or, to a RESP2 redirect target subscribed to
// anything, as a Pub/Sub message on __redis__:invalidate. A RESP2 client
// without a redirect is sent nothing. A redirect target that is gone marks
// c broken_redirect and, if c speaks RESP3, tells c with
// `>2 tracking-redir-broken <id>`.
func (t *tracker) send(c *client, body []byte) { t.sendTo(c, nil, body) }

// sendTo is send; w, when set, is where c's own frames go (the current
// client's reply writer).
func (t *tracker) sendTo(c *client, w *resp.Writer, body []byte) {
	target := c
	redirected := false
	if id := c.trk.redirect; id != 0 {
		r := t.s.clientByID(id)
		if r == nil {
			c.trk.brokenRedir = true
			if c.w.Proto > 2 {
				out := t.sink(c, w)
				out.Push(2)
				out.BulkString("tracking-redir-broken")
				out.Int(id)
				t.deliver(c, out)
			}
			return
		}
		if r != c {
			target, redirected, w = r, true, nil
		} else {
			redirected = true
		}
	}
	switch {
	case target.w.Proto > 2:
		out := t.sink(target, w)
		out.Push(2)
		out.BulkString("invalidate")
		out.Raw(body)
		t.deliver(target, out)
	case redirected && target.subscriptions() > 0:
		out := t.sink(target, w)
		out.Array(3)
		out.BulkString("message")
		out.BulkString(trackingChannel)
		out.Raw(body)
		t.deliver(target, out)
	}
}

// sink is the writer a frame for c goes to: w when given, else the
// server's frame writer's choice.
func (t *tracker) sink(c *client, w *resp.Writer) *resp.Writer {
	if w != nil {
		return w
	}
	return t.s.frames.sink(c)
}

// deliver hands a frame to c (frameWriter.deliver).
func (t *tracker) deliver(c *client, out *resp.Writer) { t.s.frames.deliver(c, out) }

// clientByID is the connected client with id, or nil.
func (s *Server) clientByID(id int64) *client {
	s.clientsMu.Lock()
	c := s.clients[id]
	s.clientsMu.Unlock()
	return c
}

// disableTracking is CLIENT TRACKING OFF (and RESET, and a disconnect):
// Valkey's disableTracking. Keys c read stay in the table until they
// change (they are skipped then).
func (c *client) disableTracking() {
	ct := c.trk
	if ct == nil || !ct.on {
		return
	}
	t := c.s.trk
	if t != nil {
		for _, p := range ct.prefixes {
			if bs := t.prefixes[p]; bs != nil {
				delete(bs.clients, c)
				if len(bs.clients) == 0 {
					delete(t.prefixes, p)
				}
			}
		}
		t.clients--
	}
	*ct = clientTracking{}
	if t != nil && t.cur != c {
		t.maybeUninstall()
	}
}

// Tracking option bits as CLIENT TRACKING parses them.
type trackOpts struct {
	bcast, optin, optout, noloop bool
}

// cmdClientTracking is CLIENT TRACKING ON|OFF [REDIRECT id] [PREFIX p ...]
// [BCAST] [OPTIN] [OPTOUT] [NOLOOP] with Valkey 8's checks, order and
// texts (networking.c clientCommand).
func cmdClientTracking(c *client, x *store.Ctx) {
	argv := x.Argv
	var redir int64
	var o trackOpts
	var prefixes []string
	for j := 3; j < len(argv); j++ {
		more := len(argv) - 1 - j
		a := strings.ToLower(string(argv[j]))
		switch {
		case a == "redirect" && more > 0:
			j++
			if redir != 0 {
				x.W.Error("ERR A client can only redirect to a single other client")
				return
			}
			n, ok := num.ParseInt(argv[j])
			if !ok {
				x.W.Error(store.ErrNotInteger)
				return
			}
			redir = n
			if c.s.clientByID(redir) == nil {
				x.W.Error("ERR The client ID you want redirect to does not exist")
				return
			}
		case a == "bcast":
			o.bcast = true
		case a == "optin":
			o.optin = true
		case a == "optout":
			o.optout = true
		case a == "noloop":
			o.noloop = true
		case a == "prefix" && more > 0:
			j++
			prefixes = append(prefixes, string(argv[j]))
		default:
			x.W.Error(store.ErrSyntax)
			return
		}
	}
	switch strings.ToLower(string(argv[2])) {
	case "on":
		ct := c.trk
		if ct == nil {
			ct = &clientTracking{}
		}
		if !o.bcast && len(prefixes) > 0 {
			x.W.Error("ERR PREFIX option requires BCAST mode to be enabled")
			return
		}
		if ct.on && ct.bcast != o.bcast {
			x.W.Error("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.")
			return
		}
		if o.bcast && (o.optin || o.optout) {
			x.W.Error("ERR OPTIN and OPTOUT are not compatible with BCAST")
			return
		}
		if o.optin && o.optout {
			x.W.Error("ERR You can't specify both OPTIN mode and OPTOUT mode")
			return
		}
		if (o.optin && ct.optout) || (o.optout && ct.optin) {
			x.W.Error("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.")
			return
		}
		if o.bcast && !prefixCollisionsOK(x.W, ct.prefixes, prefixes) {
			return
		}
		c.enableTracking(ct, redir, o, prefixes)
	case "off":
		c.disableTracking()
	default:
		x.W.Error(store.ErrSyntax)
		return
	}
	x.W.OK()
}

// prefixCollisionsOK is Valkey's checkPrefixCollisionsOrReply: a new
// prefix may not share its shorter length with an existing prefix of the
// client nor with a later new one. Valkey 8.0.1 reports a collision
// between two new prefixes and then, unless the first of them is the first
// prefix given, answers +OK too and turns tracking on (two replies to one
// command). emqd answers only the error and leaves tracking as it was, so
// a client reading replies in order stays in step (docs/compat.md §1.8).
func prefixCollisionsOK(w *resp.Writer, existing, prefixes []string) bool {
	overlap := func(a, b string) bool {
		n := min(len(a), len(b))
		return a[:n] == b[:n]
	}
	for i, p := range prefixes {
		for _, e := range existing {
			if overlap(e, p) {
				w.Error("ERR Prefix '" + cstring(p) + "' overlaps with an existing prefix '" + cstring(e) +
					"'. Prefixes for a single client must not overlap.")
				return false
			}
		}
		for _, q := range prefixes[i+1:] {
			if overlap(p, q) {
				w.Error("ERR Prefix '" + cstring(p) + "' overlaps with another provided prefix '" + cstring(q) +
					"'. Prefixes for a single client must not overlap.")
				return false
			}
		}
	}
	return true
}

// cstring is what C's %s prints of s: up to its first NUL.
func cstring(s string) string { return string(cPrefix([]byte(s), -1)) }

// enableTracking is Valkey's enableTracking.
func (c *client) enableTracking(ct *clientTracking, redir int64, o trackOpts, prefixes []string) {
	s := c.s
	t := s.installTracking(c)
	if !ct.on {
		t.clients++
	}
	caching, old := ct.caching, ct.prefixes
	*ct = clientTracking{on: true, redirect: redir, caching: caching, prefixes: old}
	c.trk = ct
	if o.bcast {
		ct.bcast = true
		if len(prefixes) == 0 {
			t.enableBcastPrefix(c, "")
		}
		for _, p := range prefixes {
			t.enableBcastPrefix(c, p)
		}
	}
	ct.optin, ct.optout, ct.noloop = o.optin, o.optout, o.noloop
}

// enableBcastPrefix is Valkey's enableBcastTrackingForPrefix.
func (t *tracker) enableBcastPrefix(c *client, p string) {
	bs := t.prefixes[p]
	if bs == nil {
		bs = &bcastState{keys: make(map[string]*client), clients: make(map[*client]struct{})}
		t.prefixes[p] = bs
	}
	if _, ok := bs.clients[c]; ok {
		return
	}
	bs.clients[c] = struct{}{}
	i := sort.SearchStrings(c.trk.prefixes, p)
	if i < len(c.trk.prefixes) && c.trk.prefixes[i] == p {
		return
	}
	c.trk.prefixes = append(c.trk.prefixes, "")
	copy(c.trk.prefixes[i+1:], c.trk.prefixes[i:])
	c.trk.prefixes[i] = p
}

// cmdClientCaching is CLIENT CACHING YES|NO.
func cmdClientCaching(c *client, x *store.Ctx) {
	ct := c.trk
	if ct == nil || !ct.on {
		x.W.Error("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled")
		return
	}
	switch strings.ToLower(string(x.Argv[2])) {
	case "yes":
		if !ct.optin {
			x.W.Error("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
			return
		}
	case "no":
		if !ct.optout {
			x.W.Error("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
			return
		}
	default:
		x.W.Error(store.ErrSyntax)
		return
	}
	ct.caching = true
	x.W.OK()
}

// cmdClientGetRedir is CLIENT GETREDIR: the redirect id, 0 without one,
// -1 when tracking is off.
func cmdClientGetRedir(c *client, x *store.Ctx) {
	if c.trk == nil || !c.trk.on {
		x.W.Int(-1)
		return
	}
	x.W.Int(c.trk.redirect)
}

// cmdClientTrackingInfo is CLIENT TRACKINGINFO: a map of flags (a set),
// redirect and prefixes.
func cmdClientTrackingInfo(c *client, x *store.Ctx) {
	ct := c.trk
	if ct == nil {
		ct = &clientTracking{}
	}
	w := x.W
	w.Map(3)
	w.BulkString("flags")
	flags := []string{"off"}
	if ct.on {
		flags[0] = "on"
	}
	if ct.bcast {
		flags = append(flags, "bcast")
	}
	if ct.optin {
		flags = append(flags, "optin")
		if ct.caching {
			flags = append(flags, "caching-yes")
		}
	}
	if ct.optout {
		flags = append(flags, "optout")
		if ct.caching {
			flags = append(flags, "caching-no")
		}
	}
	if ct.noloop {
		flags = append(flags, "noloop")
	}
	if ct.brokenRedir {
		flags = append(flags, "broken_redirect")
	}
	w.Set(len(flags))
	for _, f := range flags {
		w.BulkString(f)
	}
	w.BulkString("redirect")
	if ct.on {
		w.Int(ct.redirect)
	} else {
		w.Int(-1)
	}
	w.BulkString("prefixes")
	w.Array(len(ct.prefixes))
	for _, p := range ct.prefixes {
		w.BulkString(p)
	}
}

// trackingInfo is INFO's tracking fields: tracking_clients (clients
// section) and the table's size (stats section).
func (s *Server) trackingInfo() (clients, keys, items, prefixes int64) {
	if t := s.trk; t != nil {
		return int64(t.clients), int64(len(t.keys)), t.items, int64(len(t.prefixes))
	}
	return 0, 0, 0, 0
}
