package server

import (
	"bytes"
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestSameReplyModes(t *testing.T) {
	cases := []struct {
		mode, got, want string
		ok              bool
	}{
		{"exact", ":1\r\n", ":1\r\n", true},
		{"exact", ":1\r\n", ":2\r\n", false},
		{"unordered", "*2\r\n$1\r\na\r\n$1\r\nb\r\n", "*2\r\n$1\r\nb\r\n$1\r\na\r\n", true},
		{"unordered", "*2\r\n$1\r\na\r\n$1\r\nc\r\n", "*2\r\n$1\r\nb\r\n$1\r\na\r\n", false},
		{"shape", ":5\r\n", ":241\r\n", true},
		{"shape", "$1\r\n5\r\n", ":241\r\n", false},
		{"shape", "*1\r\n:1\r\n", "*2\r\n:1\r\n:2\r\n", false},
	}
	for _, c := range cases {
		if got := sameReply(t, c.mode, c.got, c.want); got != c.ok {
			t.Errorf("%s %q vs %q: %v", c.mode, c.got, c.want, got)
		}
	}
}

// pipelineInput mixes multibulk, inline (with quotes and escapes), ignored
// frames and binary values.
var pipelineInput = string(encode("HSET", "h", "f", "x\r\ny*$z")) +
	"HSET h g \"a\\x41 b\" i 'it\\'s'\r\n" +
	"*0\r\n\r\n*-1\r\n" +
	string(encode("HGET", "h", "f")) +
	"HGET h g\n" +
	string(encode("ECHO", "")) +
	"PING\r\n" +
	string(encode("HGETALL", "h"))

const pipelineWant = ":1\r\n:2\r\n$7\r\nx\r\ny*$z\r\n$4\r\naA b\r\n$0\r\n\r\n+PONG\r\n" +
	"*6\r\n$1\r\nf\r\n$7\r\nx\r\ny*$z\r\n$1\r\ng\r\n$4\r\naA b\r\n$1\r\ni\r\n$4\r\nit's\r\n"

// TestPipelineSplitEverywhere sends the same pipeline cut in two at every
// byte boundary (with a pause between the parts so the server reads them
// separately): the replies are always identical.
func TestPipelineSplitEverywhere(t *testing.T) {
	s := startServer(t, nil, nil)
	in := pipelineInput
	// The last reply is HGETALL: the field set created by the pipeline.
	whole := dial(t, s)
	whole.Write([]byte(in))
	var ref strings.Builder
	for i := 0; i < 7; i++ {
		ref.WriteString(whole.Read())
	}
	if ref.String() != pipelineWant {
		t.Fatalf("reference replies %q", ref.String())
	}
	admin := dial(t, s)
	for cut := 1; cut < len(in); cut++ {
		admin.Do("DEL", "h")
		c := dial(t, s)
		c.Write([]byte(in[:cut]))
		time.Sleep(200 * time.Microsecond)
		c.Write([]byte(in[cut:]))
		var got strings.Builder
		for i := 0; i < 7; i++ {
			got.WriteString(c.Read())
		}
		// HSET h f counts 1 on a fresh key; the second HSET 2.
		if got.String() != ref.String() {
			t.Fatalf("cut %d: got %q want %q", cut, got.String(), ref.String())
		}
		c.NC.Close()
	}
}

// TestPipelineByteAtATime writes a pipeline one byte per write.
func TestPipelineByteAtATime(t *testing.T) {
	s := startServer(t, nil, nil)
	c := dial(t, s)
	for i := 0; i < len(pipelineInput); i++ {
		c.Write([]byte{pipelineInput[i]})
	}
	var got strings.Builder
	for i := 0; i < 7; i++ {
		got.WriteString(c.Read())
	}
	if got.String() != pipelineWant {
		t.Fatalf("got %q\nwant %q", got.String(), pipelineWant)
	}
}

func TestBinaryRoundTrip(t *testing.T) {
	s := startServer(t, nil, nil)
	c := dial(t, s)
	val := "\r\n*3\r\n$1\r\n\x00\xff-ERR x\r\n"
	if r := c.Do("SET", "k\r\n", val); r != "+OK\r\n" {
		t.Fatalf("SET: %q", r)
	}
	if r := c.Do("GET", "k\r\n"); r != "$"+itoa(int64(len(val)))+"\r\n"+val+"\r\n" {
		t.Fatalf("GET: %q", r)
	}
	if r := c.Do("HSET", "h", val, val); r != ":1\r\n" {
		t.Fatalf("HSET: %q", r)
	}
	if r := c.Do("HGET", "h", val); r != "$"+itoa(int64(len(val)))+"\r\n"+val+"\r\n" {
		t.Fatalf("HGET: %q", r)
	}
	if r := c.Do("ECHO", val); r != "$"+itoa(int64(len(val)))+"\r\n"+val+"\r\n" {
		t.Fatalf("ECHO: %q", r)
	}
}

// TestProtocolErrorClosesOnlyThatConnection: a malformed frame gets
// Valkey's text, then the connection closes; the commands before it ran;
// another connection is unaffected.
func TestProtocolErrorClosesOnlyThatConnection(t *testing.T) {
	s := startServer(t, nil, nil)
	other := dial(t, s)
	other.Do("PING")
	cases := []struct{ in, want string }{
		{"*1\r\n$4\r\nPING\r\n*1\r\nfoo\r\n", "+PONG\r\n-ERR Protocol error: expected '$', got 'f'\r\n"},
		{"*x\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
		{"*1\r\n$-1\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"*1\r\n$536870913\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"SET k \"abc\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n"},
		{strings.Repeat("x", 70000), "-ERR Protocol error: too big inline request\r\n"},
		// protocol.tcl "Protocol desync regression test": a NUL, then lines.
		{"\x00" + strings.Repeat(strings.Repeat("A", 1024)+"\n", 70), "-ERR Protocol error: too big inline request\r\n"},
		{"*\x00" + strings.Repeat(strings.Repeat("A", 1024)+"\n", 70), "-ERR Protocol error: too big mbulk count string\r\n"},
	}
	for _, cs := range cases {
		c := dial(t, s)
		c.Write([]byte(cs.in))
		var got strings.Builder
		for {
			fr, err := c.ReadTimeout(5 * time.Second)
			if err != nil {
				if ne, ok := err.(interface{ Timeout() bool }); ok && ne.Timeout() {
					t.Errorf("%.20q: connection not closed", cs.in)
				}
				break
			}
			got.WriteString(fr)
		}
		if got.String() != cs.want {
			t.Errorf("%.20q: got %q want %q", cs.in, got.String(), cs.want)
		}
		if r := other.Do("PING"); r != "+PONG\r\n" {
			t.Fatalf("other connection: %q", r)
		}
	}
}

func TestProtoMaxBulkLenConfig(t *testing.T) {
	s := startServer(t, map[string]string{"proto-max-bulk-len": "1mb"}, nil)
	c := dial(t, s)
	if r := c.Do("CONFIG", "GET", "proto-max-bulk-len"); r != "*2\r\n$18\r\nproto-max-bulk-len\r\n$7\r\n1048576\r\n" {
		t.Fatalf("config get: %q", r)
	}
	c.Write([]byte("*2\r\n$4\r\nECHO\r\n$1048577\r\n"))
	if r := c.Read(); r != "-ERR Protocol error: invalid bulk length\r\n" {
		t.Fatalf("got %q", r)
	}
	c.ExpectClosed()
	c = dial(t, s)
	big := strings.Repeat("z", 1<<20)
	if r := c.Do("ECHO", big); r != "$1048576\r\n"+big+"\r\n" {
		t.Fatalf("1 MiB echo: %d bytes", len(r))
	}
}

func TestQueryBufferLimitCloses(t *testing.T) {
	s := startServer(t, map[string]string{"client-query-buffer-limit": "1mb"}, nil)
	c := dial(t, s)
	// A 2 MiB bulk announced and sent: the unparsed buffer passes 1 MiB.
	c.Write([]byte("*2\r\n$4\r\nECHO\r\n$2097152\r\n"))
	go c.NC.Write(bytes.Repeat([]byte("a"), 2<<20))
	c.ExpectClosed()
	if r := dial(t, s).Do("PING"); r != "+PONG\r\n" {
		t.Fatal(r)
	}
}

func TestUnauthenticatedLimits(t *testing.T) {
	s := startServer(t, map[string]string{"requirepass": "pw"}, nil)
	c := dial(t, s)
	c.Write(encode("ECHO", strings.Repeat("a", 16385)))
	if r := c.Read(); r != "-ERR Protocol error: unauthenticated bulk length\r\n" {
		t.Fatalf("got %q", r)
	}
	c.ExpectClosed()
	c = dial(t, s)
	args := make([]string, 11)
	for i := range args {
		args[i] = "x"
	}
	c.Write(encode(args...))
	if r := c.Read(); r != "-ERR Protocol error: unauthenticated multibulk length\r\n" {
		t.Fatalf("got %q", r)
	}
	c.ExpectClosed()
	// AUTH first, in the same pipeline: the big command is parsed after it.
	c = dial(t, s)
	big := strings.Repeat("b", 20000)
	c.Write(append(encode("AUTH", "pw"), encode("ECHO", big)...))
	if r := c.Read(); r != "+OK\r\n" {
		t.Fatalf("AUTH: %q", r)
	}
	if r := c.Read(); r != "$20000\r\n"+big+"\r\n" {
		t.Fatalf("ECHO after AUTH: %.40q", r)
	}
}

func TestMaxClients(t *testing.T) {
	s := startServer(t, map[string]string{"maxclients": "2"}, nil)
	a, b := dial(t, s), dial(t, s)
	a.Do("PING")
	b.Do("PING")
	c := dial(t, s)
	if r := c.Read(); r != "-ERR max number of clients reached\r\n" {
		t.Fatalf("got %q", r)
	}
	c.ExpectClosed()
	if r := a.Do("INFO", "stats"); !strings.Contains(r, "rejected_connections:1\r\n") {
		t.Fatalf("INFO stats: %q", r)
	}
}

// TestOutputBufferLimit: a client whose pending replies pass the normal
// class hard limit is disconnected with a log line; others are fine.
func TestOutputBufferLimit(t *testing.T) {
	logs := &syncBuffer{}
	s, err := Start(Options{Config: map[string]string{"client-output-buffer-limit": "normal 1mb 0 0"},
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	c := dial(t, s)
	val := strings.Repeat("v", 100000)
	if r := c.Do("SET", "big", val); r != "+OK\r\n" {
		t.Fatal(r)
	}
	// 20 GETs of 100 kB in one pipeline: 2 MB of replies in one batch.
	var p []byte
	for i := 0; i < 20; i++ {
		p = append(p, encode("GET", "big")...)
	}
	c.Write(p)
	c.ExpectClosed()
	if r := dial(t, s).Do("CONFIG", "GET", "client-output-buffer-limit"); !strings.Contains(r, "normal 1048576 0 0 slave") {
		t.Fatalf("config: %q", r)
	}
	if !strings.Contains(logs.String(), "closed ASAP for overcoming of output buffer limits") {
		t.Fatalf("no log line: %q", logs.String())
	}
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestQuitClosesAfterReply(t *testing.T) {
	s := startServer(t, nil, nil)
	c := dial(t, s)
	c.Write([]byte("PING\r\nQUIT\r\nPING\r\n"))
	if r := c.Read(); r != "+PONG\r\n" {
		t.Fatal(r)
	}
	if r := c.Read(); r != "+OK\r\n" {
		t.Fatal(r)
	}
	c.ExpectClosed()
}

// TestSlowReaderDoesNotStallOthers: a client that does not read its (large)
// replies blocks only itself: the server writes outside the store lock.
// Every wait is a liveness bound of 60 s (a hang fails, a slow machine does
// not) and the fast client starts once CLIENT LIST shows the server ran
// the slow client's GETs, not after a guessed sleep.
func TestSlowReaderDoesNotStallOthers(t *testing.T) {
	s := startServer(t, nil, nil)
	slow := dial(t, s)
	val := strings.Repeat("v", 100000)
	slow.Do("SET", "big", val)
	id := strings.TrimSuffix(strings.TrimPrefix(slow.Do("CLIENT", "ID"), ":"), "\r\n")
	var p []byte
	for i := 0; i < 300; i++ { // 30 MB of replies, far more than socket buffers
		p = append(p, encode("GET", "big")...)
	}
	go slow.NC.Write(p)
	fast := dial(t, s)
	// Wait until the server has run the slow client's first GET (its
	// tot-cmds counts SET and CLIENT ID, then each GET): its 30 MB of
	// replies are on their way to a client that reads none of them.
	for deadline := time.Now().Add(60 * time.Second); ; {
		line := fast.Do("CLIENT", "LIST", "ID", id)
		if fieldInt(line, "tot-cmds") >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the slow client's GETs never ran: %q", line)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// If writing the stuck replies held the store (or anything the fast
	// client needs), the fast client's commands would hang until the slow
	// one reads; the deadline turns such a hang into a failure.
	for i := 0; i < 200; i++ {
		fast.Write(encode("HSET", "h", "f", itoa(int64(i))))
		r, err := fast.ReadTimeout(60 * time.Second)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		if r != ":1\r\n" && r != ":0\r\n" {
			t.Fatal(r)
		}
	}
	for i := 0; i < 300; i++ {
		r, err := slow.ReadTimeout(60 * time.Second)
		if err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
		if len(r) != len(val)+len("$100000\r\n\r\n") {
			t.Fatalf("reply %d: %d bytes", i, len(r))
		}
	}
}

// fieldInt is the integer value of field k in a CLIENT LIST line (-1 when
// absent).
func fieldInt(line, k string) int64 {
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, k+"="); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return -1
			}
			return n
		}
	}
	return -1
}
