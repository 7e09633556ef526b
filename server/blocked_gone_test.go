package server

import (
	"net"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/emqd/emqd/internal/resp"
	"github.com/emqd/emqd/internal/store"
	"github.com/emqd/emqd/internal/testsupport"
)

// blockingCases is how to block, wake and check every blocking command of
// the registry. A new blocking command (BZPOPMIN, ...) must be added here:
// TestEveryBlockingCommandHasADisconnectCase fails until it is.
var blockingCases = map[string]struct {
	setup []string // run first when set (the job EMQ.WAIT waits on)
	block []string // parks on an empty key/queue
	wake  []string // makes one item available and wakes the waiters
	left  []string // a read that shows the item is still there
	want  string   // its reply
}{
	"test.take": {
		block: []string{"TEST.TAKE", "q", "0"},
		wake:  []string{"TEST.PUT", "q", "1"},
		left:  []string{"TEST.ITEMS", "q"},
		want:  ":1\r\n",
	},
	"bzpopmin": {
		block: []string{"BZPOPMIN", "z", "0"},
		wake:  []string{"ZADD", "z", "1", "m"},
		left:  []string{"ZCARD", "z"},
		want:  ":1\r\n",
	},
	"bzpopmax": {
		block: []string{"BZPOPMAX", "z", "0"},
		wake:  []string{"ZADD", "z", "1", "m"},
		left:  []string{"ZCARD", "z"},
		want:  ":1\r\n",
	},
	"bzmpop": {
		block: []string{"BZMPOP", "0", "1", "z", "MIN"},
		wake:  []string{"ZADD", "z", "1", "m"},
		left:  []string{"ZCARD", "z"},
		want:  ":1\r\n",
	},
	"emq.wait": {
		setup: []string{"EMQ.ENQUEUE", "q", "JOB00000000001", "p"},
		block: []string{"EMQ.WAIT", "q", "JOB00000000001", "0"},
		wake:  []string{"EMQ.REMOVE", "q", "JOB00000000001"},
		left:  []string{"EXISTS", "emq:{q}:job:JOB00000000001"},
		want:  ":0\r\n",
	},
	"emq.claim": {
		block: []string{"EMQ.CLAIM", "q", "1000", "BLOCK", "0"},
		wake:  []string{"EMQ.ENQUEUE", "q", "JOB00000000001", "p"},
		left:  []string{"HMGET", "emq:{q}:job:JOB00000000001", "state", "attempts"},
		want:  "*2\r\n$7\r\npending\r\n$1\r\n0\r\n",
	},
}

func TestEveryBlockingCommandHasADisconnectCase(t *testing.T) {
	s := startServer(t, nil, nil)
	var missing []string
	for _, e := range s.reg.allCommands() {
		if e.flags&store.FlagBlocking != 0 {
			if _, ok := blockingCases[e.name]; !ok {
				missing = append(missing, e.name)
			}
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("blocking commands without a case in blockingCases: %v", missing)
	}
}

// infoClients returns INFO clients' connected_clients and blocked_clients
// lines.
func infoClients(c *testsupport.Conn) string {
	var out []string
	for _, l := range strings.Split(c.Do("INFO", "clients"), "\r\n") {
		if strings.HasPrefix(l, "connected_clients:") || strings.HasPrefix(l, "blocked_clients:") {
			out = append(out, l)
		}
	}
	return strings.Join(out, " ")
}

// waitInfoClients waits until INFO clients shows want.
func waitInfoClients(t *testing.T, c *testsupport.Conn, want string) {
	t.Helper()
	deadline := time.Now().Add(testsupport.ClientTimeout)
	for {
		got := infoClients(c)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("INFO clients: %s, want %s", got, want)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestBlockedClientDisconnects: for every blocking command, a client that
// closes its socket while blocked is noticed without any other event (the
// server keeps reading a blocked client): INFO clients drops it at once,
// and the item that arrives later stays.
func TestBlockedClientDisconnects(t *testing.T) {
	for name, bc := range blockingCases {
		t.Run(name, func(t *testing.T) {
			s := startServer(t, nil, nil)
			admin := dial(t, s)
			a := dial(t, s)
			if bc.setup != nil {
				admin.Do(bc.setup...)
			}
			a.Write(encode(bc.block...))
			waitInfoClients(t, admin, "connected_clients:2 blocked_clients:1")
			a.NC.Close()
			waitInfoClients(t, admin, "connected_clients:1 blocked_clients:0")
			admin.Do(bc.wake...)
			if got := admin.Do(bc.left...); got != bc.want {
				t.Fatalf("%v after the wake: %q, want %q", bc.left, got, bc.want)
			}
		})
	}
}

// TestBlockedPeerGoneBeforeItsGoroutineNoticed: the peer's close is in the
// kernel but its connection goroutine has not run yet (the test holds the
// store lock, so cleanup cannot) when a wake serves the queue: the waiter
// is checked before anything is handed to it and dropped, for every
// blocking command.
func TestBlockedPeerGoneBeforeItsGoroutineNoticed(t *testing.T) {
	for name, bc := range blockingCases {
		t.Run(name, func(t *testing.T) {
			s := startServer(t, nil, nil)
			admin := dial(t, s)
			a := dial(t, s)
			if bc.setup != nil {
				admin.Do(bc.setup...)
			}
			a.Write(encode(bc.block...))
			waitInfoClients(t, admin, "connected_clients:2 blocked_clients:1")
			var sc *client
			s.clientsMu.Lock()
			for _, c := range s.clients {
				if c.park != nil {
					sc = c
				}
			}
			s.clientsMu.Unlock()
			st := s.Store()
			st.Lock()
			if sc == nil || sc.park == nil {
				st.Unlock()
				t.Fatal("no parked client")
			}
			a.NC.Close()
			deadline := time.Now().Add(testsupport.ClientTimeout)
			for !peerClosed(sc.raw) && !sc.readEnded.Load() {
				if time.Now().After(deadline) {
					st.Unlock()
					t.Fatal("the close never reached the server")
				}
				time.Sleep(time.Millisecond)
			}
			// The wake, run as a batch would run it, under the lock.
			reply := runLocked(s, bc.wake...)
			blocked := s.blk.count
			st.Unlock()
			if strings.HasPrefix(reply, "-") {
				t.Fatalf("%v: %s", bc.wake, reply)
			}
			if blocked != 0 {
				t.Fatalf("blocked_clients %d after the wake", blocked)
			}
			if got := admin.Do(bc.left...); got != bc.want {
				t.Fatalf("%v after the wake: %q, want %q (handed to the closed connection)", bc.left, got, bc.want)
			}
			waitInfoClients(t, admin, "connected_clients:1 blocked_clients:0")
		})
	}
}

// runLocked runs one command's handler in database 0 under the store lock
// the caller holds, then serves the ready queues as the end of a batch does.
func runLocked(s *Server, args ...string) string {
	argv := make([][]byte, len(args))
	for i, a := range args {
		argv[i] = []byte(a)
	}
	cmd, _ := s.reg.lookup(argv)
	w := &resp.Writer{Proto: 2}
	ctx := s.newCtx(w)
	x := &ctx
	x.ResetForCommand(argv)
	x.DB = s.store.DB(0)
	x.NowMs = s.clock.NowMs()
	cmd.handler(x)
	s.blk.serveReady(s)
	return string(w.Buf)
}

// waitData waits until the socket has unread data (a peek of one byte).
func waitData(t *testing.T, rc syscall.RawConn) {
	t.Helper()
	deadline := time.Now().Add(testsupport.ClientTimeout)
	for {
		n := 0
		rc.Control(func(fd uintptr) {
			var b [1]byte
			n, _, _ = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		})
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no data arrived")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestPeerClosed: the look tells a closed or reset peer from a live one,
// with or without unread data, and never consumes the data; a peer that
// sent bytes and hung up reads as closed while its bytes still wait
// (TestPeerClosedBehindData's case: a peek saw the bytes, not the end).
func TestPeerClosed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	pair := func() (net.Conn, *net.TCPConn) {
		cl, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		sv, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		return cl, sv.(*net.TCPConn)
	}
	closedSoon := func(sv *net.TCPConn) bool {
		rc, _ := sv.SyscallConn()
		deadline := time.Now().Add(testsupport.ClientTimeout)
		for time.Now().Before(deadline) {
			if peerClosed(rc) {
				return true
			}
			time.Sleep(time.Millisecond)
		}
		return false
	}
	cl, sv := pair()
	rc, _ := sv.SyscallConn()
	if peerClosed(rc) {
		t.Fatal("an idle live peer reads as closed")
	}
	cl.Write([]byte("PING\r\n"))
	waitData(t, rc)
	if peerClosed(rc) {
		t.Fatal("a live peer with data waiting reads as closed")
	}
	buf := make([]byte, 16)
	if n, _ := sv.Read(buf); string(buf[:n]) != "PING\r\n" {
		t.Fatalf("the peek consumed data: %q", buf[:n])
	}
	cl.Close()
	if !closedSoon(sv) {
		t.Fatal("a closed peer reads as live")
	}
	sv.Close()
	if !peerClosed(rc) {
		t.Fatal("a socket closed here reads as live")
	}
	// Hung up behind unread data (TestPeerClosedBehindData).
	cl, sv = pair()
	rc, _ = sv.SyscallConn()
	cl.Write([]byte("*3\r\n$3\r\nSET\r\n$2\r\nk2\r\n$1\r\nx\r\n"))
	waitData(t, rc)
	cl.Close()
	if !closedSoon(sv) {
		t.Fatal("a peer that hung up behind unread data reads as live")
	}
	if n, _ := sv.Read(buf); n != 16 {
		t.Fatalf("the look consumed data: %d bytes left", n)
	}
	sv.Close()
	// Reset (SO_LINGER 0).
	cl, sv = pair()
	cl.(*net.TCPConn).SetLinger(0)
	cl.Close()
	if !closedSoon(sv) {
		t.Fatal("a reset peer reads as live")
	}
	sv.Close()
}
