package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emqd/emqd/clock"
	"github.com/emqd/emqd/internal/testsupport"
	"github.com/redis/go-redis/v9"
)

// bigPipeline is n HGETALLs of key h, whose reply is replyLen bytes each:
// the request bytes and the whole expected reply stream.
func bigPipeline(n int) (req, want []byte) {
	one := encode("HGETALL", "h")
	req = bytes.Repeat(one, n)
	reply := "*4\r\n$6\r\nfield1\r\n$16\r\nvalue-one-123456\r\n$6\r\nfield2\r\n$2\r\nv2\r\n"
	return req, []byte(strings.Repeat(reply, n))
}

// pipelineBeforeReading writes all of req to nc before it reads a byte
// (the write must finish within 20 s), then reads len(want) bytes and
// compares them. Before the writer goroutine (writeBehind), emqd stopped
// reading once its socket to the client was full, the client's write
// never finished, and neither side read again.
func pipelineBeforeReading(t *testing.T, nc net.Conn, req, want []byte) {
	t.Helper()
	nc.SetWriteDeadline(time.Now().Add(20 * time.Second))
	if _, err := nc.Write(req); err != nil {
		t.Fatalf("writing %d bytes of pipeline before reading: %v (the server stopped reading)", len(req), err)
	}
	nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	got := make([]byte, len(want))
	if n, err := io.ReadFull(bufio.NewReaderSize(nc, 1<<16), got); err != nil {
		t.Fatalf("reading the replies: %v after %d of %d bytes", err, n, len(want))
	}
	if !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && got[i] == want[i] {
			i++
		}
		t.Fatalf("replies differ at byte %d of %d", i, len(want))
	}
}

// TestBigPipelineBeforeReading: a client that writes 400,000 HGETALLs
// (9.6 MB of requests, 23.6 MB of replies) before it reads any reply gets
// them all, under both io-models and over TLS, as from Valkey, which keeps
// reading a client whose replies pile up (docs/architecture.md §2.8). The
// client's socket buffers are fixed small (256 KiB to read, 64 KiB to
// write: not autotuned) so that the requests cannot all wait in socket
// buffers while the server's writes wait for the client: they did, up to
// about 10 MB, and the test passed without the writer goroutine.
func TestBigPipelineBeforeReading(t *testing.T) {
	req, want := bigPipeline(400_000)
	for _, model := range []string{"goroutine", "loop"} {
		t.Run(model, func(t *testing.T) {
			s := startServer(t, map[string]string{"io-model": model}, nil)
			if r := dial(t, s).Do("HSET", "h", "field1", "value-one-123456", "field2", "v2"); r != ":2\r\n" {
				t.Fatalf("HSET: %q", r)
			}
			nc := dialSmallBuffers(t, s)
			pipelineBeforeReading(t, nc, req, want)
			// The connection serves on as before: a round trip, and the
			// output accounting is back at zero.
			nc.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := nc.Write(encode("PING")); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 7)
			if _, err := io.ReadFull(nc, buf); err != nil || string(buf) != "+PONG\r\n" {
				t.Fatalf("PING after: %q %v", buf, err)
			}
			list := dial(t, s).Do("CLIENT", "LIST")
			for _, line := range strings.Split(list, "\n") {
				if strings.Contains(line, "cmd=ping") && !strings.Contains(line, " omem=0 ") {
					t.Fatalf("omem after all replies went out: %s", line)
				}
			}
		})
	}
	t.Run("tls", func(t *testing.T) {
		f := newTLSFiles(t)
		port := freePort(t)
		s := startServer(t, f.config(port), nil)
		dial(t, s).Do("HSET", "h", "field1", "value-one-123456", "field2", "v2")
		nc, err := tls.Dial("tcp", "127.0.0.1:"+port, &tls.Config{RootCAs: f.caPool, Certificates: []tls.Certificate{f.client}})
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		pipelineBeforeReading(t, nc, req, want)
	})
}

// TestGoRedisBigPipeline: go-redis's Pipeline writes every command before
// it reads a reply; 400,000 HGETALLs come back (they hung before).
func TestGoRedisBigPipeline(t *testing.T) {
	s := startServer(t, nil, nil)
	rc := redis.NewClient(&redis.Options{Addr: s.Addr(), ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second})
	defer rc.Close()
	ctx := context.Background()
	if err := rc.HSet(ctx, "h", "field1", "value-one-123456", "field2", "v2").Err(); err != nil {
		t.Fatal(err)
	}
	p := rc.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, 400_000)
	for i := range cmds {
		cmds[i] = p.HGetAll(ctx, "h")
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatalf("Exec: %v", err)
	}
	for i, c := range cmds {
		if m := c.Val(); m["field1"] != "value-one-123456" || m["field2"] != "v2" || len(m) != 2 {
			t.Fatalf("reply %d: %v", i, m)
		}
	}
}

// TestQuitBehindBigReplies: QUIT at the end of a pipeline whose replies
// wait for the client still answers +OK after all of them, then closes.
func TestQuitBehindBigReplies(t *testing.T) {
	s := startServer(t, nil, nil)
	dial(t, s).Do("HSET", "h", "field1", "value-one-123456", "field2", "v2")
	nc := dialSmallBuffers(t, s)
	req, want := bigPipeline(400_000)
	req = append(req, encode("QUIT")...)
	want = append(want, "+OK\r\n"...)
	pipelineBeforeReading(t, nc, req, want)
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := nc.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("after QUIT's reply: %d bytes, %v (want the end of the stream)", n, err)
	}
}

// TestKillWhileWritingBehind: CLIENT KILL of a client whose replies wait
// for it ends the connection and its writer goroutine; the server serves
// others on.
func TestKillWhileWritingBehind(t *testing.T) {
	s := startServer(t, nil, nil)
	admin := dial(t, s)
	admin.Do("HSET", "h", "field1", "value-one-123456", "field2", "v2")
	nc := dialSmallBuffers(t, s)
	req, _ := bigPipeline(400_000)
	nc.SetWriteDeadline(time.Now().Add(20 * time.Second))
	if _, err := nc.Write(append(encode("CLIENT", "SETNAME", "slow"), req...)); err != nil {
		t.Fatalf("write: %v", err)
	}
	var id string
	eventually(t, func() bool {
		for _, line := range strings.Split(admin.Do("CLIENT", "LIST"), "\n") {
			if strings.Contains(line, "name=slow") && !strings.Contains(line, " omem=0 ") {
				id = strings.TrimPrefix(strings.Fields(line)[0], "id=")
				return true
			}
		}
		return false
	})
	if _, err := strconv.Atoi(id); err != nil {
		t.Fatalf("id %q", id)
	}
	if r := admin.Do("CLIENT", "KILL", "ID", id); r != ":1\r\n" {
		t.Fatalf("CLIENT KILL: %q", r)
	}
	eventually(t, func() bool { return !strings.Contains(admin.Do("CLIENT", "LIST"), "name=slow") })
	if r := admin.Do("PING"); r != "+PONG\r\n" {
		t.Fatalf("PING: %q", r)
	}
}

// TestWriterBufferNotReused: the buffer a writer goroutine writes is
// never one the next replies are written in. flushAt kept client.spare
// when it handed client.out to a writer while client.out took the spare,
// so the two were one array; after a writer that ended with a buffer over
// 1 MiB (a big GET) that array came back as the reply writer's buffer
// while a later writer wrote it, and the client read Z's reply in place
// of Y's. Over an in-process pipe (every write behind, each waiting for
// the client to read).
func TestWriterBufferNotReused(t *testing.T) {
	s := startServer(t, nil, nil)
	big := strings.Repeat("g", 2<<20)
	if r := dial(t, s).Do("SET", "big", big); r != "+OK\r\n" {
		t.Fatalf("SET: %q", r)
	}
	a, b := net.Pipe()
	defer b.Close()
	s.clientsMu.Lock()
	c := newClient(s, a)
	s.clients[c.id] = c
	s.conns.Add(1)
	s.clientsMu.Unlock()
	go c.serve()
	b.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(b)
	bulk := func(v string) string { return "$" + strconv.Itoa(len(v)) + "\r\n" + v + "\r\n" }
	roundTrip := func(want string, args ...string) {
		t.Helper()
		if _, err := b.Write(encode(args...)); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(want))
		if _, err := io.ReadFull(r, got); err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Fatalf("%s: reply %.40q..., want %.40q...", args[0], got, want)
		}
	}
	// Two round trips give both output buffers room, then the big reply.
	x := strings.Repeat("x", 100<<10)
	roundTrip(bulk(x), "ECHO", x)
	roundTrip(bulk(x), "ECHO", x)
	roundTrip(bulk(big), "GET", "big")
	// After one more round trip, Y's reply waits for the client in the
	// writer; Z's is queued behind it, and PING's write returns once Z
	// has run.
	roundTrip(bulk(x), "ECHO", x)
	y, z := strings.Repeat("y", 50<<10), strings.Repeat("z", 50<<10)
	for _, cmd := range [][]byte{encode("ECHO", y), encode("ECHO", z), encode("PING")} {
		if _, err := b.Write(cmd); err != nil {
			t.Fatal(err)
		}
	}
	want := bulk(y) + bulk(z) + "+PONG\r\n"
	got := make([]byte, len(want))
	if _, err := io.ReadFull(r, got); err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("replies %.20q...%.20q, want %.20q...%.20q", got, got[len(bulk(y)):], want, want[len(bulk(y)):])
	}
}

// TestLoopNotHeldByWriter: under io-model loop, QUIT (or a protocol
// error) from a client whose replies wait in its writer goroutine is
// finished by the connection's goroutine, which waits for the writer; the
// event loop serves the others on. The loop ran the QUIT inline and
// waited there for the writer (client.waitWriter), so no other connection
// of the loop was served until the slow client read all its replies.
func TestLoopNotHeldByWriter(t *testing.T) {
	s := startServer(t, map[string]string{"io-model": "loop"}, nil)
	dial(t, s).Do("HSET", "h", "field1", "value-one-123456", "field2", "v2")
	nc := dialSmallBuffers(t, s)
	req, want := bigPipeline(200_000)
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := nc.Write(append(encode("CLIENT", "SETNAME", "slow"), req...)); err != nil {
		t.Fatalf("write: %v", err)
	}
	other, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	or := bufio.NewReader(other)
	clientList := func() string {
		t.Helper()
		other.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := other.Write(encode("CLIENT", "LIST")); err != nil {
			t.Fatal(err)
		}
		head, err := or.ReadString('\n')
		if err != nil || len(head) < 3 || head[0] != '$' {
			t.Fatalf("CLIENT LIST: %q %v (the event loop serves no one)", head, err)
		}
		n, _ := strconv.Atoi(strings.TrimSpace(head[1:]))
		body := make([]byte, n+2)
		if _, err := io.ReadFull(or, body); err != nil {
			t.Fatalf("CLIENT LIST: %v (the event loop serves no one)", err)
		}
		return string(body)
	}
	slow := func() string {
		for _, line := range strings.Split(clientList(), "\n") {
			if strings.Contains(line, "name=slow") {
				return line
			}
		}
		return ""
	}
	// Every request read and run, the replies waiting in the writer.
	eventually(t, func() bool {
		l := slow()
		return strings.Contains(l, "cmd=hgetall") && !strings.Contains(l, " omem=0 ") && strings.Contains(l, " qbuf=0 ")
	})
	if _, err := nc.Write(encode("QUIT")); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() bool { return strings.Contains(slow(), "cmd=quit") })
	other.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := other.Write(encode("PING")); err != nil {
		t.Fatal(err)
	}
	if line, err := or.ReadString('\n'); line != "+PONG\r\n" {
		t.Fatalf("PING while the slow client's writer waits: %q %v", line, err)
	}
	pipelineBeforeReading(t, nc, nil, append([]byte("+OK\r\n"), append(want, "+OK\r\n"...)...))
	if n, err := nc.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("after QUIT's reply: %d bytes, %v (want the end of the stream)", n, err)
	}
}

// dialSmallBuffers connects to s with the client's socket buffers fixed
// small (256 KiB to read, 64 KiB to write: not autotuned), so a big
// pipeline cannot wait in socket buffers (TestBigPipelineBeforeReading).
// The connection closes when the test ends.
func dialSmallBuffers(t *testing.T, s *Server) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	tc := nc.(*net.TCPConn)
	tc.SetReadBuffer(256 << 10)
	tc.SetWriteBuffer(64 << 10)
	return nc
}

// TestSlowReaderIsNotIdle: a client reading a 16 MB reply slowly, for far
// longer than `timeout`, is not closed as idle: every part of the reply the
// kernel takes counts as activity, as Valkey's writeToClient sets
// lastinteraction on each write. Before, only a whole buffer written did,
// and the clients cron closed the client halfway through the reply. The
// server clock moves 600 ms each time the server has sent more (two steps
// are past timeout 1 s).
func TestSlowReaderIsNotIdle(t *testing.T) {
	m := clock.NewManual(1_700_000_000_000)
	s := startServer(t, map[string]string{"timeout": "1"}, m)
	admin := dial(t, s)
	const size = 16 << 20
	if r := admin.Do("SET", "big", strings.Repeat("v", size)); r != "+OK\r\n" {
		t.Fatalf("SET: %q", r)
	}
	netOut := func() int64 {
		for _, line := range strings.Split(admin.Do("CLIENT", "LIST"), "\n") {
			if strings.Contains(line, "name=slow ") {
				_, v, _ := strings.Cut(line, " tot-net-out=")
				n, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
				return n
			}
		}
		return -1
	}
	nc := dialSmallBuffers(t, s)
	if _, err := nc.Write(append(encode("CLIENT", "SETNAME", "slow"), encode("GET", "big")...)); err != nil {
		t.Fatal(err)
	}
	want := len("+OK\r\n$16777216\r\n") + size + 2
	got, last, steps := 0, int64(0), 0
	buf := make([]byte, 256<<10)
	for got < want {
		nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, err := io.ReadFull(nc, buf[:min(len(buf), want-got)])
		got += n
		if err != nil {
			t.Fatalf("after %d of %d bytes, %d clock steps: %v (closed as idle?)", got, want, steps, err)
		}
		time.Sleep(2 * time.Millisecond) // the server's write takes the room just made
		if out := netOut(); out > last && got < want {
			last = out
			m.Advance(600)
			steps++
		}
	}
	if steps < 3 {
		t.Fatalf("only %d clock steps: the test proves nothing", steps)
	}
}

// TestCloseWaitsForWriter: Server.Close returns only once every writer
// goroutine has ended. The connection's cleanup closed the socket and went
// on; a writer still inside its last steps ran after Close had returned
// (after the test, or after an embedding program's shutdown, had moved on).
// The hook holds a writer's end for 300 ms so that the race cannot be won
// by luck.
func TestCloseWaitsForWriter(t *testing.T) {
	var ended atomic.Int32
	s, err := Start(Options{testCommands: fakeCommands, writerEnding: func() {
		time.Sleep(300 * time.Millisecond)
		ended.Add(1)
	}})
	if err != nil {
		t.Fatal(err)
	}
	admin := testsupport.Dial(t, s.Addr())
	admin.Do("HSET", "h", "field1", "value-one-123456", "field2", "v2")
	if r := admin.Do("CLIENT", "SETNAME", "admin"); r != "+OK\r\n" {
		t.Fatalf("CLIENT SETNAME: %q", r)
	}
	nc := dialSmallBuffers(t, s)
	req, _ := bigPipeline(400_000)
	nc.SetWriteDeadline(time.Now().Add(20 * time.Second))
	if _, err := nc.Write(append(encode("CLIENT", "SETNAME", "slow"), req...)); err != nil {
		t.Fatalf("write: %v", err)
	}
	eventually(t, func() bool {
		for _, line := range strings.Split(admin.Do("CLIENT", "LIST"), "\n") {
			if strings.Contains(line, "name=slow") && !strings.Contains(line, " omem=0 ") {
				return true
			}
		}
		return false
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
	if n := ended.Load(); n < 1 {
		t.Fatalf("Close returned while the writer goroutine was still ending (%d ended)", n)
	}
}
