package server

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/emqd/emqd/clock"
	"github.com/emqd/emqd/internal/testsupport"
)

// startServer starts an in-process server for one test and closes it at
// the end.
func startServer(t testing.TB, cfg map[string]string, clk clock.Clock) *Server {
	t.Helper()
	s, err := Start(Options{Config: cfg, Clock: clk, testCommands: fakeCommands})
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

// dial connects to s (testsupport.Dial: closed when t ends).
func dial(t testing.TB, s *Server) *testsupport.Conn {
	t.Helper()
	return testsupport.Dial(t, s.Addr())
}

// encode renders args as a RESP multibulk request (testsupport.Encode).
func encode(args ...string) []byte { return testsupport.Encode(args...) }

// diffNode is a parsed reply that keeps every header, so RESP2 and RESP3
// nulls, and null bulks and null arrays, stay distinct.
type diffNode struct {
	typ  byte
	text string // scalar payload, or the header count of an aggregate
	null bool   // $-1, *-1 (RESP2 nulls)
	kids []*diffNode
}

// diffParse parses b as exactly one frame (trailing bytes are an error).
func diffParse(b string) (*diffNode, error) {
	n, rest, err := diffParseOne(b)
	if err != nil {
		return nil, err
	}
	if rest != "" {
		return nil, fmt.Errorf("trailing bytes %q", rest)
	}
	return n, nil
}

// diffParseOne parses the first frame of b; rest is what follows it. It is
// the one RESP reply reader of the server tests (parseNode builds on it).
func diffParseOne(b string) (*diffNode, string, error) {
	i := strings.Index(b, "\r\n")
	if i < 1 {
		return nil, "", fmt.Errorf("bad frame %q", b)
	}
	typ, body, rest := b[0], b[1:i], b[i+2:]
	switch typ {
	case '+', '-', ':', '_', ',', '#', '(':
		return &diffNode{typ: typ, text: body}, rest, nil
	case '$', '=', '!':
		n, err := strconv.Atoi(body)
		if err != nil {
			return nil, "", err
		}
		if n < 0 {
			return &diffNode{typ: typ, text: body, null: true}, rest, nil
		}
		if len(rest) < n+2 || rest[n:n+2] != "\r\n" {
			return nil, "", fmt.Errorf("short bulk in %q", b)
		}
		return &diffNode{typ: typ, text: rest[:n]}, rest[n+2:], nil
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(body)
		if err != nil {
			return nil, "", err
		}
		nd := &diffNode{typ: typ, text: body, null: n < 0}
		if typ == '%' || typ == '|' {
			n *= 2
		}
		for k := 0; k < n; k++ {
			var kid *diffNode
			kid, rest, err = diffParseOne(rest)
			if err != nil {
				return nil, "", err
			}
			nd.kids = append(nd.kids, kid)
		}
		return nd, rest, nil
	}
	return nil, "", fmt.Errorf("bad type %q", typ)
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

// parseNode parses one frame with diffParseOne into a node: RESP2 null
// bulks and arrays become RESP3 nulls, aggregates keep no text.
func parseNode(b string) (*node, string, error) {
	d, rest, err := diffParseOne(b)
	if err != nil {
		return nil, "", err
	}
	return d.node(), rest, nil
}

func (d *diffNode) node() *node {
	if d.null {
		return &node{typ: '_'}
	}
	switch d.typ {
	case '*', '~', '>', '%', '|':
		n := &node{typ: d.typ}
		for _, k := range d.kids {
			n.kids = append(n.kids, k.node())
		}
		return n
	}
	return &node{typ: d.typ, text: d.text}
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
