package server

import (
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/emqd/emqd/clock"
	"github.com/emqd/emqd/internal/testsupport"
	"github.com/emqd/emqd/internal/valkeyref"
)

// Client-side caching, raw RESP (docs/compat.md §1.8): every mode with the
// exact frames Valkey 8 sends, and every kind of write invalidating.
//
// "Nothing was sent" is checked with a synchronisation point, not a
// timeout: an invalidation for another client is queued before the
// writer's reply leaves the server, so once the writer has read its reply,
// a PING on the tracking connection answers PONG first only if no
// invalidation was queued for it.

// inv is the RESP3 push of an invalidation of keys.
func inv(keys ...string) string {
	b := "*" + strconv.Itoa(len(keys)) + "\r\n"
	for _, k := range keys {
		b += "$" + strconv.Itoa(len(k)) + "\r\n" + k + "\r\n"
	}
	return ">2\r\n$10\r\ninvalidate\r\n" + b
}

// invNull is the RESP3 push of a flush.
const invNull = ">2\r\n$10\r\ninvalidate\r\n_\r\n"

// redirMsg is the Pub/Sub message a RESP2 redirect target receives.
func redirMsg(body string) string {
	return "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n" + body
}

// steps runs "command", "want" pairs (commands split on spaces).
func steps(t *testing.T, c *testsupport.Conn, pairs ...string) {
	t.Helper()
	for i := 0; i+1 < len(pairs); i += 2 {
		if got := c.Do(strings.Fields(pairs[i])...); got != pairs[i+1] {
			t.Fatalf("%s: got %q, want %q", pairs[i], got, pairs[i+1])
		}
	}
}

// expectFrames reads len(want) frames and compares them in order.
func expectFrames(t *testing.T, c *testsupport.Conn, want ...string) {
	t.Helper()
	for i, w := range want {
		if got := c.Read(); got != w {
			t.Fatalf("frame %d: got %q, want %q", i, got, w)
		}
	}
}

// quiet checks that nothing is waiting for c: its next frame is PING's.
func quiet(t *testing.T, c *testsupport.Conn) {
	t.Helper()
	if got := c.Do("PING"); got != "+PONG\r\n" {
		t.Fatalf("expected no frame before PONG, got %q", got)
	}
}

func resp3(t *testing.T, s *Server) *testsupport.Conn {
	t.Helper()
	c := dial(t, s)
	if r := c.Do("HELLO", "3"); !strings.HasPrefix(r, "%7\r\n") {
		t.Fatalf("HELLO 3: %q", r)
	}
	return c
}

func clientID(t *testing.T, c *testsupport.Conn) string {
	t.Helper()
	r := c.Do("CLIENT", "ID")
	return strings.TrimSuffix(strings.TrimPrefix(r, ":"), "\r\n")
}

// Default mode: a key read is invalidated once when another client writes
// it, and forgotten then; the writer's own invalidation comes after its
// reply (after EXEC's whole array in a transaction).
func TestTrackingDefaultMode(t *testing.T) {
	s := startServer(t, nil, nil)
	c1, c2 := resp3(t, s), dial(t, s)
	steps(t, c2, "HSET h f v", ":1\r\n", "ZADD z 1 a", ":1\r\n")
	steps(t, c1, "CLIENT TRACKING ON", "+OK\r\n", "HGET h f", "$1\r\nv\r\n", "ZRANGE z 0 -1", "*1\r\n$1\r\na\r\n")
	steps(t, c2, "HSET h f w", ":0\r\n")
	expectFrames(t, c1, inv("h"))
	steps(t, c2, "HSET h f x", ":0\r\n") // forgotten after one invalidation
	quiet(t, c1)
	steps(t, c2, "ZADD z 2 b", ":1\r\n")
	expectFrames(t, c1, inv("z"))

	// The writer's own key: reply first, then the push.
	steps(t, c1, "HGET h f", "$1\r\nx\r\n")
	c1.Write(encode("HSET", "h", "f", "y"))
	expectFrames(t, c1, ":0\r\n", inv("h"))
	// Inside MULTI/EXEC: after EXEC's array.
	steps(t, c1, "HGET h f", "$1\r\ny\r\n", "MULTI", "+OK\r\n", "HSET h f z", "+QUEUED\r\n", "HDEL h nope", "+QUEUED\r\n")
	c1.Write(encode("EXEC"))
	expectFrames(t, c1, "*2\r\n:0\r\n:0\r\n", inv("h"))
	// A key deleted because it became empty.
	steps(t, c1, "ZRANGE z 0 -1", "*2\r\n$1\r\na\r\n$1\r\nb\r\n")
	steps(t, c2, "ZREM z a b", ":2\r\n", "EXISTS z", ":0\r\n")
	expectFrames(t, c1, inv("z"))
	// A read of a missing key is remembered too; an error reply as well.
	steps(t, c1, "GET nokey", "_\r\n", "HGET z f", "_\r\n")
	steps(t, c2, "SET nokey 1", "+OK\r\n")
	expectFrames(t, c1, inv("nokey"))
	steps(t, c1, "HGET nokey f", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n")
	steps(t, c2, "DEL nokey", ":1\r\n")
	expectFrames(t, c1, inv("nokey"))
	// A write that changes nothing invalidates nothing.
	steps(t, c1, "GET k", "_\r\n")
	steps(t, c2, "HDEL k f", ":0\r\n")
	quiet(t, c1)
	// OFF: no more invalidations for keys read before.
	steps(t, c1, "CLIENT TRACKING OFF", "+OK\r\n")
	steps(t, c2, "SET k 1", "+OK\r\n")
	quiet(t, c1)
}

// A RESP2 client without a redirect tracks keys but is sent nothing.
func TestTrackingRESP2WithoutRedirect(t *testing.T) {
	s := startServer(t, nil, nil)
	c1, c2 := dial(t, s), dial(t, s)
	steps(t, c1, "CLIENT TRACKING ON", "+OK\r\n", "GET k", "$-1\r\n")
	if r := s.InfoText("stats"); !strings.Contains(r, "tracking_total_keys:1\r\n") {
		t.Fatalf("INFO stats: %q", r)
	}
	steps(t, c2, "SET k v", "+OK\r\n")
	quiet(t, c1)
	if r := s.InfoText("stats"); !strings.Contains(r, "tracking_total_keys:0\r\n") {
		t.Fatalf("INFO stats after the write: %q", r)
	}
}

// FLUSHALL / FLUSHDB: a null invalidation to every tracking client (BCAST
// and NOLOOP ones too), the flusher's own after its +OK.
func TestTrackingFlush(t *testing.T) {
	s := startServer(t, nil, nil)
	c1, c2, c3 := resp3(t, s), resp3(t, s), dial(t, s)
	steps(t, c1, "CLIENT TRACKING ON NOLOOP", "+OK\r\n", "GET a", "_\r\n")
	steps(t, c2, "CLIENT TRACKING ON BCAST PREFIX x", "+OK\r\n")
	steps(t, c3, "FLUSHALL", "+OK\r\n")
	expectFrames(t, c1, invNull)
	expectFrames(t, c2, invNull)
	// The table is emptied: a later write of a is not sent.
	steps(t, c3, "SET a 1", "+OK\r\n")
	quiet(t, c1)
	c1.Write(encode("FLUSHDB"))
	expectFrames(t, c1, "+OK\r\n", invNull) // NOLOOP does not hold for flushes
	expectFrames(t, c2, invNull)
	steps(t, c3, "SELECT 3", "+OK\r\n", "FLUSHDB", "+OK\r\n") // any database
	expectFrames(t, c1, invNull)
}

// SWAPDB sends nothing (Valkey's dbSwapDatabases does not touch the
// tracking table); MOVE invalidates the key, COPY the destination, RENAME
// both names.
func TestTrackingKeyspaceCommands(t *testing.T) {
	s := startServer(t, nil, nil)
	c1, c2 := resp3(t, s), dial(t, s)
	steps(t, c2, "SET a 1", "+OK\r\n", "SET b 2", "+OK\r\n")
	steps(t, c1, "CLIENT TRACKING ON", "+OK\r\n", "GET a", "$1\r\n1\r\n", "GET b", "$1\r\n2\r\n", "GET c", "_\r\n")
	steps(t, c2, "SWAPDB 0 1", "+OK\r\n", "SWAPDB 0 1", "+OK\r\n")
	quiet(t, c1)
	steps(t, c2, "COPY a c", ":1\r\n")
	expectFrames(t, c1, inv("c"))
	steps(t, c2, "MOVE a 2", ":1\r\n")
	expectFrames(t, c1, inv("a"))
	steps(t, c1, "GET a", "_\r\n", "GET c", "$1\r\n1\r\n")
	steps(t, c2, "RENAME c b", "+OK\r\n")
	frames := []string{c1.Read(), c1.Read()}
	sort.Strings(frames)
	if frames[0] != inv("b") || frames[1] != inv("c") {
		t.Fatalf("RENAME: %q", frames)
	}
	// A key in another database has the same name in the table.
	steps(t, c2, "SELECT 2", "+OK\r\n", "SET a x", "+OK\r\n")
	expectFrames(t, c1, inv("a"))
}

// Expiry invalidates: lazily (the reader's own push after its nil reply,
// as a key deleted by its command) and by the active cycle.
func TestTrackingExpiry(t *testing.T) {
	clk := clock.NewManual(et0)
	s := startServer(t, map[string]string{"hz": "1"}, clk)
	c1, c2 := resp3(t, s), resp3(t, s)
	steps(t, c2, "SET k v PX 100", "+OK\r\n", "SET j v PX 100", "+OK\r\n")
	steps(t, c1, "CLIENT TRACKING ON", "+OK\r\n", "GET k", "$1\r\nv\r\n")
	steps(t, c2, "CLIENT TRACKING ON", "+OK\r\n", "GET j", "$1\r\nv\r\n")
	clk.Advance(101)
	c1.Write(encode("GET", "k"))
	expectFrames(t, c1, "_\r\n", inv("k"))
	// The active cycle deletes j: c2 is told at once.
	runs := s.exp.runs.Load()
	clk.Advance(1000)
	waitExpireCycles(t, s, runs)
	expectFrames(t, c2, inv("j"))
	// c1 read k again (its GET remembered k after the deletion).
	steps(t, c2, "SET k w", "+OK\r\n")
	expectFrames(t, c1, inv("k"))
}

// The EMQ verbs invalidate every key their plan touches, and their reads
// (EMQ.COUNTS, EMQ.JOB, EMQ.LIST) remember the keys they looked up.
func TestTrackingEMQVerbs(t *testing.T) {
	s := startServer(t, nil, nil)
	c1, c2 := resp3(t, s), dial(t, s)
	id := strings.TrimSuffix(strings.TrimPrefix(c2.Do("EMQ.ENQUEUE", "q", "*", "p"), "$14\r\n"), "\r\n")
	row := "emq:{q}:job:" + id
	steps(t, c1, "CLIENT TRACKING ON", "+OK\r\n")
	if r := c1.Do("HGETALL", row); !strings.HasPrefix(r, "%") {
		t.Fatalf("HGETALL row: %q", r)
	}
	steps(t, c1, "ZRANGE emq:{q}:pending 0 -1", "*1\r\n$14\r\n"+id+"\r\n")
	if r := c1.Do("EMQ.COUNTS", "q"); !strings.HasPrefix(r, "%9\r\n") {
		t.Fatalf("EMQ.COUNTS: %q", r)
	}
	// The claim moves the job: pending and active (and the row).
	if r := c2.Do("EMQ.CLAIM", "q", "30000"); !strings.HasPrefix(r, "*1\r\n") {
		t.Fatalf("EMQ.CLAIM: %q", r)
	}
	expectSet(t, c1, "EMQ.CLAIM", inv(row), inv("emq:{q}:pending"), inv("emq:{q}:active"))
	// EMQ.COMPLETE deletes the row and bumps the metrics hash.
	if r := c1.Do("EMQ.JOB", "q", id); !strings.HasPrefix(r, "%") {
		t.Fatalf("EMQ.JOB: %q", r)
	}
	if r := c1.Do("EMQ.COUNTS", "q"); !strings.HasPrefix(r, "%9\r\n") {
		t.Fatalf("EMQ.COUNTS: %q", r)
	}
	if r := c2.Do("EMQ.COMPLETE", "q", id, "1"); r != ":1\r\n" {
		t.Fatalf("EMQ.COMPLETE: %q", r)
	}
	expectSet(t, c1, "EMQ.COMPLETE", inv(row), inv("emq:{q}:active"), inv("emq:{q}:metrics:completed"))
}

// expectSet reads the frames waiting for c (up to a PING's PONG) and
// compares them with want as sets.
func expectSet(t *testing.T, c *testsupport.Conn, what string, want ...string) {
	t.Helper()
	c.Write(encode("PING"))
	var got []string
	for {
		f := c.Read()
		if f == "+PONG\r\n" {
			break
		}
		got = append(got, f)
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("%s: frames %q, want %q", what, got, want)
	}
}

// BCAST: every key under a prefix, one push per prefix (byte order) with
// the keys a batch changed (byte order), whoever reads what.
func TestTrackingBCAST(t *testing.T) {
	s := startServer(t, nil, nil)
	c1, c2 := resp3(t, s), dial(t, s)
	steps(t, c1, "CLIENT TRACKING ON BCAST PREFIX b: PREFIX a:", "+OK\r\n")
	steps(t, c2, "MSET b:1 x a:1 y c:1 z", "+OK\r\n")
	expectFrames(t, c1, inv("a:1"), inv("b:1"))
	// A pipeline is one batch: one push per prefix.
	c2.Write(append(append(encode("SET", "a:9", "1"), encode("SET", "a:2", "1")...), encode("SET", "a:9", "2")...))
	expectFrames(t, c2, "+OK\r\n", "+OK\r\n", "+OK\r\n")
	expectFrames(t, c1, inv("a:2", "a:9"))
	steps(t, c2, "SET c:2 1", "+OK\r\n")
	quiet(t, c1)
	// Its own writes too (no NOLOOP), after its reply.
	c1.Write(encode("SET", "b:2", "1"))
	expectFrames(t, c1, "+OK\r\n", inv("b:2"))
	steps(t, c1, "CLIENT TRACKINGINFO",
		"%3\r\n$5\r\nflags\r\n~2\r\n$2\r\non\r\n$5\r\nbcast\r\n$8\r\nredirect\r\n:0\r\n$8\r\nprefixes\r\n*2\r\n$2\r\na:\r\n$2\r\nb:\r\n")
	if r := s.InfoText("stats"); !strings.Contains(r, "tracking_total_prefixes:2\r\n") {
		t.Fatalf("INFO: %q", r)
	}
	// BCAST without a prefix: every key. NOLOOP: not the keys it changed.
	c3 := resp3(t, s)
	steps(t, c3, "CLIENT TRACKING ON BCAST NOLOOP", "+OK\r\n", "SET own 1", "+OK\r\n")
	quiet(t, c3)
	steps(t, c2, "SET other 1", "+OK\r\n")
	expectFrames(t, c3, inv("other"))
	c3.Write(append(encode("SET", "own", "2"), encode("SET", "a:own", "1")...))
	expectFrames(t, c3, "+OK\r\n", "+OK\r\n")
	quiet(t, c3)
	expectFrames(t, c1, inv("a:own"))
}

// OPTIN: only reads after CLIENT CACHING YES (that one command, or the
// whole transaction) are remembered; OPTOUT: all but those after CLIENT
// CACHING NO.
func TestTrackingOptInOptOut(t *testing.T) {
	s := startServer(t, nil, nil)
	c1, c2 := resp3(t, s), dial(t, s)
	steps(t, c1, "CLIENT TRACKING ON OPTIN", "+OK\r\n", "GET a", "_\r\n")
	steps(t, c2, "SET a 1", "+OK\r\n")
	quiet(t, c1)
	steps(t, c1, "CLIENT CACHING YES", "+OK\r\n", "CLIENT ID", c1.Do("CLIENT", "ID"), "GET a", "$1\r\n1\r\n", "GET b", "_\r\n")
	steps(t, c2, "MSET a 2 b 2", "+OK\r\n")
	expectFrames(t, c1, inv("a")) // b was read after the cached command
	quiet(t, c1)
	// valkey-go's DoCache: CACHING YES, MULTI, PTTL, GET, EXEC.
	steps(t, c1, "CLIENT CACHING YES", "+OK\r\n", "MULTI", "+OK\r\n", "PTTL b", "+QUEUED\r\n", "GET b", "+QUEUED\r\n",
		"EXEC", "*2\r\n:-1\r\n$1\r\n2\r\n", "CLIENT TRACKINGINFO",
		"%3\r\n$5\r\nflags\r\n~2\r\n$2\r\non\r\n$5\r\noptin\r\n$8\r\nredirect\r\n:0\r\n$8\r\nprefixes\r\n*0\r\n")
	steps(t, c2, "SET b 3", "+OK\r\n")
	expectFrames(t, c1, inv("b"))

	c3 := resp3(t, s)
	steps(t, c3, "CLIENT TRACKING ON OPTOUT", "+OK\r\n", "CLIENT CACHING NO", "+OK\r\n", "CLIENT TRACKINGINFO",
		"%3\r\n$5\r\nflags\r\n~3\r\n$2\r\non\r\n$6\r\noptout\r\n$10\r\ncaching-no\r\n$8\r\nredirect\r\n:0\r\n$8\r\nprefixes\r\n*0\r\n",
		"GET x", "_\r\n", "GET y", "_\r\n")
	steps(t, c2, "MSET x 1 y 1", "+OK\r\n")
	expectFrames(t, c3, inv("y"))
	quiet(t, c3)
}

// NOLOOP: no invalidation for keys the client changed itself.
func TestTrackingNoLoop(t *testing.T) {
	s := startServer(t, nil, nil)
	c1, c2 := resp3(t, s), dial(t, s)
	steps(t, c1, "CLIENT TRACKING ON NOLOOP", "+OK\r\n", "GET k", "_\r\n", "SET k 1", "+OK\r\n")
	quiet(t, c1)
	steps(t, c1, "GET k", "$1\r\n1\r\n")
	steps(t, c2, "SET k 2", "+OK\r\n")
	expectFrames(t, c1, inv("k"))
}

// REDIRECT to a RESP2 client subscribed to __redis__:invalidate: Pub/Sub
// messages (a null for flushes, in the tracking client's protocol); a RESP3
// target gets the push. A target that disconnected breaks the redirect.
func TestTrackingRedirect(t *testing.T) {
	s := startServer(t, nil, nil)
	sub, c1, c2 := dial(t, s), dial(t, s), dial(t, s)
	subID := clientID(t, sub)
	steps(t, sub, "SUBSCRIBE __redis__:invalidate", "*3\r\n$9\r\nsubscribe\r\n$20\r\n__redis__:invalidate\r\n:1\r\n")
	steps(t, c1, "CLIENT TRACKING ON REDIRECT "+subID, "+OK\r\n", "CLIENT GETREDIR", ":"+subID+"\r\n",
		"GET k", "$-1\r\n", "GET j", "$-1\r\n")
	steps(t, c2, "SET k 1", "+OK\r\n")
	expectFrames(t, sub, redirMsg("*1\r\n$1\r\nk\r\n"))
	steps(t, c2, "FLUSHALL", "+OK\r\n")
	expectFrames(t, sub, redirMsg("$-1\r\n"))
	steps(t, sub, "PING", "*2\r\n$4\r\npong\r\n$0\r\n\r\n")
	// A RESP3 tracking client redirecting: the null is RESP3's.
	c3 := resp3(t, s)
	steps(t, c3, "CLIENT TRACKING ON REDIRECT "+subID, "+OK\r\n")
	steps(t, c2, "FLUSHDB", "+OK\r\n")
	f := []string{sub.Read(), sub.Read()}
	sort.Strings(f)
	if f[0] != redirMsg("$-1\r\n") || f[1] != redirMsg("_\r\n") {
		t.Fatalf("flush messages %q", f)
	}
	// The target goes away: RESP2 c1 is told nothing, TRACKINGINFO says
	// broken_redirect, CLIENT LIST flags tR; RESP3 c3 gets
	// tracking-redir-broken.
	steps(t, c1, "GET k", "$-1\r\n")
	steps(t, c3, "GET k", "_\r\n")
	sub.NC.Close()
	waitClients(t, s, 3)
	steps(t, c2, "SET k 2", "+OK\r\n")
	quiet(t, c1)
	expectFrames(t, c3, ">2\r\n$21\r\ntracking-redir-broken\r\n:"+subID+"\r\n")
	steps(t, c1, "CLIENT TRACKINGINFO",
		"*6\r\n$5\r\nflags\r\n*2\r\n$2\r\non\r\n$15\r\nbroken_redirect\r\n$8\r\nredirect\r\n:"+subID+"\r\n$8\r\nprefixes\r\n*0\r\n")
	if r := c1.Do("CLIENT", "INFO"); !strings.Contains(r, " flags=tR ") || !strings.Contains(r, " redir="+subID+" ") {
		t.Fatalf("CLIENT INFO %q", r)
	}
	// A RESP3 target is sent the push itself.
	c4 := resp3(t, s)
	c5 := dial(t, s)
	steps(t, c5, "CLIENT TRACKING ON REDIRECT "+clientID(t, c4), "+OK\r\n", "GET r", "$-1\r\n")
	steps(t, c2, "SET r 1", "+OK\r\n")
	expectFrames(t, c4, inv("r"))
}

// waitClients waits until the server counts n connected clients (a closed
// connection's cleanup is its own goroutine's).
func waitClients(t *testing.T, s *Server, n int) {
	t.Helper()
	for i := 0; ; i++ {
		s.clientsMu.Lock()
		got := len(s.clients)
		s.clientsMu.Unlock()
		if got == n {
			return
		}
		if i > 5000 {
			t.Fatalf("clients %d, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// The CLIENT TRACKING family's errors, Valkey 8's texts.
func TestTrackingErrors(t *testing.T) {
	s := startServer(t, nil, nil)
	c := dial(t, s)
	own := clientID(t, c)
	steps(t, c,
		"CLIENT TRACKING ON BCAST PREFIX a PREFIX ab", "-ERR Prefix 'a' overlaps with another provided prefix 'ab'. Prefixes for a single client must not overlap.\r\n",
		"CLIENT TRACKING ON OPTIN OPTOUT", "-ERR You can't specify both OPTIN mode and OPTOUT mode\r\n",
		"CLIENT TRACKING ON REDIRECT 999999", "-ERR The client ID you want redirect to does not exist\r\n",
		"CLIENT TRACKING ON REDIRECT x", "-ERR value is not an integer or out of range\r\n",
		"CLIENT TRACKING ON REDIRECT "+own+" REDIRECT "+own, "-ERR A client can only redirect to a single other client\r\n",
		"CLIENT CACHING YES", "-ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled\r\n",
		"CLIENT TRACKING ON PREFIX a", "-ERR PREFIX option requires BCAST mode to be enabled\r\n",
		"CLIENT TRACKING ON BCAST OPTIN", "-ERR OPTIN and OPTOUT are not compatible with BCAST\r\n",
		"CLIENT TRACKING ON FOO", "-ERR syntax error\r\n",
		"CLIENT TRACKING MAYBE", "-ERR syntax error\r\n",
		"CLIENT TRACKING ON PREFIX", "-ERR syntax error\r\n",
		"CLIENT TRACKING", "-ERR wrong number of arguments for 'client|tracking' command\r\n",
		"CLIENT GETREDIR", ":-1\r\n",
		"CLIENT TRACKINGINFO", "*6\r\n$5\r\nflags\r\n*1\r\n$3\r\noff\r\n$8\r\nredirect\r\n:-1\r\n$8\r\nprefixes\r\n*0\r\n",
		"CLIENT TRACKING ON", "+OK\r\n",
		"CLIENT CACHING YES", "-ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.\r\n",
		"CLIENT CACHING NO", "-ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.\r\n",
		"CLIENT CACHING MAYBE", "-ERR syntax error\r\n",
		"CLIENT TRACKING ON BCAST", "-ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.\r\n",
		"CLIENT TRACKING ON OPTIN", "+OK\r\n",
		"CLIENT TRACKING ON OPTOUT", "-ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.\r\n",
		"CLIENT TRACKING OFF", "+OK\r\n",
		"CLIENT TRACKING ON BCAST PREFIX a", "+OK\r\n",
		"CLIENT TRACKING ON BCAST PREFIX ab", "-ERR Prefix 'ab' overlaps with an existing prefix 'a'. Prefixes for a single client must not overlap.\r\n",
		"CLIENT TRACKING ON BCAST PREFIX b", "+OK\r\n",
		"CLIENT TRACKINGINFO", "*6\r\n$5\r\nflags\r\n*2\r\n$2\r\non\r\n$5\r\nbcast\r\n$8\r\nredirect\r\n:0\r\n$8\r\nprefixes\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n",
		"CLIENT TRACKING OFF", "+OK\r\n",
	)
	// RESET turns tracking off.
	steps(t, c, "CLIENT TRACKING ON", "+OK\r\n", "RESET", "+RESET\r\n", "CLIENT GETREDIR", ":-1\r\n")
	if r := s.InfoText("clients"); !strings.Contains(r, "tracking_clients:0\r\n") {
		t.Fatalf("INFO clients %q", r)
	}
}

// tracking-table-max-keys: past the limit, keys are forgotten before the
// next command with an invalidation, as if they had changed.
func TestTrackingTableMaxKeys(t *testing.T) {
	s := startServer(t, nil, nil)
	c1 := resp3(t, s)
	steps(t, c1, "CONFIG SET tracking-table-max-keys 2", "+OK\r\n", "CLIENT TRACKING ON", "+OK\r\n",
		"GET a", "_\r\n", "GET b", "_\r\n", "GET c", "_\r\n")
	c1.Write(encode("PING"))
	f := c1.Read()
	if f != inv("a") && f != inv("b") && f != inv("c") {
		t.Fatalf("eviction push %q", f)
	}
	expectFrames(t, c1, "+PONG\r\n")
	r := s.InfoText("clients", "stats")
	for _, want := range []string{"tracking_clients:1\r\n", "tracking_total_keys:2\r\n", "tracking_total_items:2\r\n"} {
		if !strings.Contains(r, want) {
			t.Fatalf("INFO lacks %q: %q", want, r)
		}
	}
	steps(t, c1, "CONFIG GET tracking-table-max-keys", "%1\r\n$23\r\ntracking-table-max-keys\r\n$1\r\n2\r\n")
}

// The connection parked in a blocking command still receives its
// invalidations while it waits.
func TestTrackingWhileBlocked(t *testing.T) {
	s := startServer(t, nil, nil)
	c1, c2 := resp3(t, s), dial(t, s)
	steps(t, c1, "CLIENT TRACKING ON", "+OK\r\n", "GET k", "_\r\n")
	c1.Write(encode("BZPOPMIN", "z", "0"))
	waitBlocked(t, c2, 1)
	steps(t, c2, "SET k 1", "+OK\r\n")
	expectFrames(t, c1, inv("k"))
	steps(t, c2, "ZADD z 1 a", ":1\r\n")
	expectFrames(t, c1, "*3\r\n$1\r\nz\r\n$1\r\na\r\n,1\r\n")
}

// The AOF replay at boot has no clients: nothing is tracked or sent, and a
// client tracking after the boot is told about the replayed keys it reads.
func TestTrackingAfterAOFReplay(t *testing.T) {
	dir := t.TempDir()
	s := durable(t, dir, nil)
	c := dial(t, s)
	steps(t, c, "HSET h f v", ":1\r\n", "ZADD z 1 a", ":1\r\n", "DEL z", ":1\r\n")
	stop(t, s)
	s = durable(t, dir, nil)
	r := s.InfoText("clients", "stats")
	for _, want := range []string{"tracking_clients:0\r\n", "tracking_total_keys:0\r\n", "tracking_total_items:0\r\n"} {
		if !strings.Contains(r, want) {
			t.Fatalf("INFO after the replay lacks %q: %q", want, r)
		}
	}
	c1, c2 := resp3(t, s), dial(t, s)
	steps(t, c1, "CLIENT TRACKING ON", "+OK\r\n", "HGET h f", "$1\r\nv\r\n")
	steps(t, c2, "HDEL h f", ":1\r\n")
	expectFrames(t, c1, inv("h"))
}

// TestTrackingOverlapOneReply: two new prefixes that overlap, after the
// first prefix, get one reply, the error, and tracking stays off (Valkey
// 8.0.1 answers the error and then +OK with tracking on: two replies to
// one command, which puts a client reading replies in order out of step;
// docs/compat.md §1.8). The reference server shows the difference.
func TestTrackingOverlapOneReply(t *testing.T) {
	const overlap = "-ERR Prefix 'yyy' overlaps with another provided prefix 'yyy'. Prefixes for a single client must not overlap.\r\n"
	off := "*6\r\n$5\r\nflags\r\n*1\r\n$3\r\noff\r\n$8\r\nredirect\r\n:-1\r\n$8\r\nprefixes\r\n*0\r\n"
	args := []string{"CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "xxx", "PREFIX", "yyy", "PREFIX", "yyy"}
	s := startServer(t, nil, nil)
	for _, proto := range []string{"2", "3"} {
		c := dial(t, s)
		if proto == "3" {
			c.Do("HELLO", "3")
			off = "%3\r\n$5\r\nflags\r\n~1\r\n$3\r\noff\r\n$8\r\nredirect\r\n:-1\r\n$8\r\nprefixes\r\n*0\r\n"
		}
		c.Write(encode(args...))
		c.Write(encode("PING"))
		expectFrames(t, c, overlap, "+PONG\r\n")
		steps(t, c, "CLIENT TRACKINGINFO", off)
		if r := s.InfoText("clients"); !strings.Contains(r, "tracking_clients:0\r\n") {
			t.Fatalf("RESP%s: INFO clients %q", proto, r)
		}
	}
	ref := dialAddr(t, valkeyref.Start(t).Addr)
	ref.Write(encode(args...))
	ref.Write(encode("PING"))
	expectFrames(t, ref, overlap, "+OK\r\n", "+PONG\r\n")
}
