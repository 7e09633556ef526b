package server

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/emqd/emqd/clock"
)

// startServer starts an in-process server for one test and closes it at
// the end.
func startServer(t testing.TB, cfg map[string]string, clk clock.Clock) *Server {
	t.Helper()
	s, err := Start(Options{Config: cfg, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

// rawConn is a test connection that writes bytes and reads reply frames.
type rawConn struct {
	t  testing.TB
	nc net.Conn
	br *bufio.Reader
}

func dial(t testing.TB, s *Server) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc, br: bufio.NewReader(nc)}
}

// encode renders args as a RESP multibulk request.
func encode(args ...string) []byte {
	var b []byte
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, "\r\n"...)
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, "\r\n"...)
		b = append(b, a...)
		b = append(b, "\r\n"...)
	}
	return b
}

func (c *rawConn) write(b []byte) {
	c.t.Helper()
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatal(err)
	}
}

// do sends one command and returns its reply frame.
func (c *rawConn) do(args ...string) string {
	c.t.Helper()
	c.write(encode(args...))
	return c.read()
}

// read returns the next complete reply frame (raw bytes), failing the test
// after 5 seconds.
func (c *rawConn) read() string {
	c.t.Helper()
	s, err := c.readErr(5 * time.Second)
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	return s
}

func (c *rawConn) readErr(d time.Duration) (string, error) {
	c.nc.SetReadDeadline(time.Now().Add(d))
	defer c.nc.SetReadDeadline(time.Time{})
	var buf bytes.Buffer
	err := readFrame(c.br, &buf)
	return buf.String(), err
}

// expectNothing checks that no reply arrives within d.
func (c *rawConn) expectNothing(d time.Duration) {
	c.t.Helper()
	if s, err := c.readErr(d); err == nil {
		c.t.Fatalf("unexpected reply %q", s)
	}
}

// expectClosed checks that the server closed the connection.
func (c *rawConn) expectClosed() {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, err := c.br.ReadByte()
	if err == nil {
		c.t.Fatalf("connection still open, got %q", b)
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		c.t.Fatal("connection not closed")
	}
}

// readFrame copies one RESP2/RESP3 frame from r to out.
func readFrame(r *bufio.Reader, out *bytes.Buffer) error {
	line, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	out.WriteString(line)
	if len(line) < 3 {
		return fmt.Errorf("short line %q", line)
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+', '-', ':', '_', ',', '#', '(':
		return nil
	case '$', '=', '!':
		n, err := strconv.Atoi(body)
		if err != nil {
			return err
		}
		if n < 0 {
			return nil
		}
		buf := make([]byte, n+2)
		if _, err := ioReadFull(r, buf); err != nil {
			return err
		}
		out.Write(buf)
		return nil
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(body)
		if err != nil {
			return err
		}
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		for i := 0; i < n; i++ {
			if err := readFrame(r, out); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("bad frame %q", line)
}

func ioReadFull(r *bufio.Reader, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := r.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// node is a parsed reply for shape and unordered comparisons.
type node struct {
	typ  byte
	text string // scalar payload
	kids []*node
}

// parseFrames splits b into parsed frames.
func parseFrames(b string) ([]*node, error) {
	var out []*node
	for len(b) > 0 {
		n, rest, err := parseNode(b)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
		b = rest
	}
	return out, nil
}

func parseNode(b string) (*node, string, error) {
	i := strings.Index(b, "\r\n")
	if i < 1 {
		return nil, "", fmt.Errorf("bad frame %q", b)
	}
	typ, body, rest := b[0], b[1:i], b[i+2:]
	switch typ {
	case '+', '-', ':', '_', ',', '#', '(':
		return &node{typ: typ, text: body}, rest, nil
	case '$', '=', '!':
		n, err := strconv.Atoi(body)
		if err != nil {
			return nil, "", err
		}
		if n < 0 {
			return &node{typ: '_'}, rest, nil // RESP2 null as RESP3 null
		}
		if len(rest) < n+2 {
			return nil, "", fmt.Errorf("short bulk")
		}
		return &node{typ: typ, text: rest[:n]}, rest[n+2:], nil
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(body)
		if err != nil {
			return nil, "", err
		}
		if n < 0 {
			return &node{typ: '_'}, rest, nil
		}
		if typ == '%' || typ == '|' {
			n *= 2
		}
		nd := &node{typ: typ}
		for k := 0; k < n; k++ {
			var kid *node
			kid, rest, err = parseNode(rest)
			if err != nil {
				return nil, "", err
			}
			nd.kids = append(nd.kids, kid)
		}
		return nd, rest, nil
	}
	return nil, "", fmt.Errorf("bad type %q", typ)
}

// shape renders the type structure of n (values left out).
func (n *node) shape() string {
	if n.kids == nil && n.typ != '*' && n.typ != '%' && n.typ != '~' && n.typ != '>' {
		return string(n.typ)
	}
	parts := make([]string, len(n.kids))
	for i, k := range n.kids {
		parts[i] = k.shape()
	}
	return string(n.typ) + "[" + strings.Join(parts, ",") + "]"
}

// canon renders n with every aggregate's elements sorted (unordered
// comparison).
func (n *node) canon() string {
	if n.kids == nil && n.typ != '*' && n.typ != '%' && n.typ != '~' && n.typ != '>' {
		return string(n.typ) + strconv.Quote(n.text)
	}
	parts := make([]string, len(n.kids))
	for i, k := range n.kids {
		parts[i] = k.canon()
	}
	sort.Strings(parts)
	return string(n.typ) + "[" + strings.Join(parts, ",") + "]"
}

// countFrames is the number of complete frames in b.
func countFrames(t testing.TB, b string) int {
	t.Helper()
	f, err := parseFrames(b)
	if err != nil {
		t.Fatalf("expected reply %q: %v", b, err)
	}
	return len(f)
}
