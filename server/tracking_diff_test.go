package server

import (
	"strings"
	"testing"

	"github.com/emqd/emqd/internal/testsupport"
	"github.com/emqd/emqd/internal/valkeyref"
)

// Client-side caching and Pub/Sub against the real redis-server (Debian's
// 7.0): the same scripts on both servers, every frame compared byte for
// byte. Only what Redis 7.0 shares with Valkey 8.0 is scripted: HELLO's
// reply (server name and version) is read but not compared, and
// UNSUBSCRIBE without a subscription (Valkey 8: -NOSUB; Redis 7.0: a frame)
// is left to TestPubSub.

// dstep is one step of a differential script: send args on conn (reading
// nothing), or read n frames from conn. skip reads without comparing.
type dstep struct {
	conn int
	args string // sent when not empty (split on spaces)
	n    int    // frames read after sending
	skip bool
}

func send(conn int, args string, n int) dstep { return dstep{conn: conn, args: args, n: n} }
func recv(conn int, n int) dstep              { return dstep{conn: conn, n: n} }

// runScript runs steps on conns of addr and returns the frames read, with
// each connection's client id replaced by $ID<k> in the replies of CLIENT
// GETREDIR and TRACKINGINFO (and $ID<k> in arguments replaced by the id).
func runScript(t *testing.T, addr string, nconns int, script []dstep) []string {
	t.Helper()
	conns := make([]*testsupport.Conn, nconns)
	ids := make([]string, nconns)
	for i := range conns {
		conns[i] = diffDial(t, addr)
		ids[i] = clientID(t, conns[i])
	}
	norm := func(f string) string {
		for i := len(ids) - 1; i >= 0; i-- {
			f = strings.ReplaceAll(f, ":"+ids[i]+"\r\n", ":$ID"+itoa(int64(i))+"\r\n")
			f = strings.ReplaceAll(f, "redir="+ids[i]+" ", "redir=$ID"+itoa(int64(i))+" ")
		}
		return f
	}
	var out []string
	for _, st := range script {
		c := conns[st.conn]
		if st.args != "" {
			args := strings.Fields(st.args)
			for j, a := range args {
				for i := len(ids) - 1; i >= 0; i-- {
					a = strings.ReplaceAll(a, "$ID"+itoa(int64(i)), ids[i])
				}
				args[j] = a
			}
			c.Write(encode(args...))
		}
		for range st.n {
			f := c.Read()
			if strings.Contains(st.args, "GETREDIR") || strings.Contains(st.args, "TRACKINGINFO") {
				f = norm(f) // the only replies that carry a client id
			}
			if !st.skip {
				out = append(out, st.args+" => "+f)
			}
		}
	}
	return out
}

func diffScript(t *testing.T, nconns int, script []dstep) {
	t.Helper()
	emqd, redis := diffStart(t)
	diffScriptAt(t, emqd, redis, nconns, script)
}

// diffScriptAt is diffScript with both addresses given (the reference
// Valkey 8.0.1 where Redis 7.0 differs from it).
func diffScriptAt(t *testing.T, emqd, redis string, nconns int, script []dstep) {
	t.Helper()
	got := runScript(t, emqd, nconns, script)
	want := runScript(t, redis, nconns, script)
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Fatalf("frame %d:\n emqd  %q\n redis %q", i, g, w)
		}
	}
}

func hello3(conn int) dstep { return dstep{conn: conn, args: "HELLO 3", n: 1, skip: true} }

func TestDiffTrackingModes(t *testing.T) {
	diffScript(t, 4, []dstep{
		hello3(0),
		// Default mode: others' writes, own writes (after the reply),
		// EXEC, an emptied key, flushes.
		send(0, "CLIENT TRACKING ON", 1), send(0, "GET a", 1), send(0, "HGET h f", 1), send(0, "ZRANGE z 0 -1", 1),
		send(1, "SET a 1", 1), recv(0, 1),
		send(1, "SET a 2", 1), send(0, "PING", 1),
		send(1, "HSET h f v", 1), recv(0, 1),
		send(0, "HGET h f", 1), send(0, "HSET h f w", 2),
		send(0, "HGET h f", 1), send(0, "MULTI", 1), send(0, "HDEL h f", 1), send(0, "EXEC", 2),
		send(1, "ZADD z 1 m", 1), send(0, "ZRANGE z 0 -1", 2), send(1, "ZREM z m", 1), recv(0, 1),
		send(0, "GET a", 1), send(1, "RENAME a b", 1), recv(0, 1),
		send(1, "FLUSHALL", 1), recv(0, 1), send(0, "FLUSHDB", 2),
		send(0, "CLIENT TRACKINGINFO", 1), send(0, "CLIENT GETREDIR", 1),
		send(0, "CLIENT TRACKING OFF", 1), send(0, "CLIENT TRACKINGINFO", 1),
		// BCAST with prefixes (one push per prefix, keys in order) and
		// NOLOOP.
		send(0, "CLIENT TRACKING ON BCAST PREFIX b: PREFIX a: NOLOOP", 1),
		send(1, "MSET b:1 x a:2 y a:1 z c:1 w", 1), recv(0, 2),
		send(0, "MSET a:3 x a:4 x", 1), send(1, "SET a:5 x", 1), recv(0, 1),
		send(0, "CLIENT TRACKINGINFO", 1),
		send(0, "CLIENT TRACKING OFF", 1),
		// OPTIN / OPTOUT with CLIENT CACHING.
		send(0, "CLIENT TRACKING ON OPTIN", 1), send(0, "GET k1", 1),
		send(0, "CLIENT CACHING YES", 1), send(0, "GET k2", 1), send(0, "GET k3", 1),
		send(1, "MSET k1 1 k2 2 k3 3", 1), recv(0, 1), send(0, "PING", 1),
		send(0, "CLIENT CACHING YES", 1), send(0, "MULTI", 1), send(0, "PTTL k1", 1), send(0, "GET k1", 1), send(0, "EXEC", 1),
		send(1, "SET k1 x", 1), recv(0, 1),
		send(0, "CLIENT TRACKING OFF", 1),
		send(0, "CLIENT TRACKING ON OPTOUT", 1), send(0, "CLIENT CACHING NO", 1), send(0, "CLIENT TRACKINGINFO", 1),
		send(0, "GET k1", 1), send(0, "GET k2", 1),
		send(1, "MSET k1 1 k2 2", 1), recv(0, 1), send(0, "PING", 1),
		send(0, "CLIENT TRACKING OFF", 1),
		// REDIRECT to a RESP2 subscriber; a RESP3 redirect target.
		send(2, "SUBSCRIBE __redis__:invalidate", 1),
		send(3, "CLIENT TRACKING ON REDIRECT $ID2", 1), send(3, "CLIENT GETREDIR", 1), send(3, "GET r", 1),
		send(1, "SET r 1", 1), recv(2, 1),
		send(1, "FLUSHALL", 1), recv(2, 1),
		send(2, "PING", 1), send(2, "PING hi", 1), send(2, "GET r", 1),
		send(3, "CLIENT TRACKING OFF", 1),
		send(3, "CLIENT TRACKING ON REDIRECT $ID0", 1), send(3, "GET r", 1),
		send(1, "SET r 2", 1), recv(0, 1),
	})
}

func TestDiffTrackingErrors(t *testing.T) {
	diffScript(t, 1, []dstep{
		send(0, "CLIENT TRACKING ON BCAST PREFIX a PREFIX ab", 1),
		send(0, "CLIENT TRACKING ON OPTIN OPTOUT", 1),
		send(0, "CLIENT TRACKING ON REDIRECT 999999", 1),
		send(0, "CLIENT TRACKING ON REDIRECT x", 1),
		send(0, "CLIENT TRACKING ON REDIRECT $ID0 REDIRECT $ID0", 1),
		send(0, "CLIENT CACHING YES", 1),
		send(0, "CLIENT TRACKING ON PREFIX a", 1),
		send(0, "CLIENT TRACKING ON BCAST OPTOUT", 1),
		send(0, "CLIENT TRACKING ON FOO", 1),
		send(0, "CLIENT TRACKING MAYBE", 1),
		send(0, "CLIENT TRACKING ON PREFIX", 1),
		send(0, "CLIENT TRACKING", 1),
		send(0, "CLIENT CACHING", 1),
		send(0, "CLIENT GETREDIR x", 1),
		send(0, "CLIENT TRACKINGINFO", 1),
		send(0, "CLIENT TRACKING ON", 1),
		send(0, "CLIENT CACHING YES", 1),
		send(0, "CLIENT CACHING NO", 1),
		send(0, "CLIENT CACHING MAYBE", 1),
		send(0, "CLIENT TRACKING ON BCAST", 1),
		send(0, "CLIENT TRACKING ON OPTIN", 1),
		send(0, "CLIENT TRACKING ON OPTOUT", 1),
		send(0, "CLIENT TRACKING OFF", 1),
		send(0, "CLIENT TRACKING ON BCAST PREFIX a", 1),
		send(0, "CLIENT TRACKING ON BCAST PREFIX ab", 1),
		send(0, "CLIENT TRACKING ON BCAST PREFIX a", 1),
		send(0, "CLIENT TRACKING ON BCAST PREFIX b", 1),
		send(0, "CLIENT TRACKINGINFO", 1),
		send(0, "CLIENT TRACKING OFF", 1),
		// Not the overlap of two new prefixes after the first: Valkey
		// answers the error and +OK, emqd the error only
		// (TestTrackingOverlapOneReply).
		send(0, "RESET", 1),
		send(0, "CLIENT TRACKINGINFO", 1),
	})
}

// TestDiffPubSub runs against the reference Valkey 8.0.1: a connection's
// own messages come after its command's reply there (Valkey's
// pending_push_messages; Redis 7.0 sends them first).
func TestDiffPubSub(t *testing.T) {
	ref := valkeyref.Start(t)
	s := startServer(t, nil, nil)
	diffScriptAt(t, s.Addr(), ref.Addr, 4, []dstep{
		send(0, "SUBSCRIBE a b a", 3),
		send(0, "PSUBSCRIBE h*", 1),
		send(0, "GET k", 1), send(0, "MULTI", 1), send(0, "PING", 1), send(0, "PING x", 1),
		send(1, "PUBLISH a hi", 1), recv(0, 1),
		send(1, "PUBLISH hello there", 1), recv(0, 1),
		send(1, "PUBLISH nobody x", 1),
		send(1, "PUBSUB NUMSUB a b c", 1), send(1, "PUBSUB NUMPAT", 1), // CHANNELS lists in hash order

		send(1, "PUBSUB CHANNELS a*", 1), send(1, "PUBSUB CHANNELS a b", 1),
		send(0, "UNSUBSCRIBE b", 1), send(0, "UNSUBSCRIBE x", 1),
		send(0, "PUNSUBSCRIBE", 1), send(0, "UNSUBSCRIBE", 1),
		send(0, "PING", 1), send(0, "GET k", 1),
		// RESP3: pushes, no restriction, and a publisher hearing itself.
		hello3(2),
		send(2, "SUBSCRIBE c", 1), send(2, "GET k", 1), send(2, "PING", 1),
		send(2, "PUBLISH c self", 2),
		send(2, "PSUBSCRIBE c*", 1), send(1, "PUBLISH c x", 1), recv(2, 2),
		send(2, "UNSUBSCRIBE", 1), send(2, "PUNSUBSCRIBE", 1),
		send(1, "SUBSCRIBE", 1), send(1, "PUBLISH", 1),
		// A connection's own messages follow its command's reply, and
		// inside a transaction EXEC's whole array (RESP3 and RESP2).
		send(2, "MULTI", 1), send(2, "SUBSCRIBE d", 1), send(2, "PUBLISH d one", 1),
		send(2, "PUBLISH d two", 1), send(2, "EXEC", 3),
		send(2, "UNSUBSCRIBE", 1),
		send(3, "MULTI", 1), send(3, "SUBSCRIBE e", 1), send(3, "PUBLISH e x", 1),
		send(3, "EXEC", 2), send(3, "UNSUBSCRIBE", 1),
	})
}
