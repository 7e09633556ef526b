package verbs_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emqd/emqd/clock"
	"github.com/emqd/emqd/internal/testsupport"
	"github.com/emqd/emqd/server"
	"github.com/redis/go-redis/v9"
)

const t0 = int64(1_700_000_000_000)

// env is one embedded emqd on a manual clock, with a go-redis client.
type env struct {
	t   *testing.T
	srv *server.Server
	clk *clock.Manual
	rdb *redis.Client
	ctx context.Context
}

func newEnv(t *testing.T) *env { return newEnvProto(t, 2) }

func newEnvProto(t *testing.T, proto int) *env {
	t.Helper()
	clk := clock.NewManual(t0)
	srv, err := server.Start(server.Options{Clock: clk, Config: map[string]string{"enable-debug-command": "yes"}})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, srv: srv, clk: clk, ctx: context.Background()}
	e.rdb = e.client(proto)
	t.Cleanup(func() {
		e.rdb.Close()
		srv.Close(context.Background())
	})
	return e
}

// client is a new go-redis client that waits as long as a blocked claim.
func (e *env) client(proto int) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: e.srv.Addr(), Protocol: proto, ReadTimeout: -1, PoolSize: 4})
	e.t.Cleanup(func() { c.Close() })
	return c
}

// do sends one command; a nil reply is (nil, nil).
func (e *env) do(args ...any) (any, error) {
	v, err := e.rdb.Do(e.ctx, args...).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	return v, err
}

// ok sends a command that must succeed.
func (e *env) ok(args ...any) any {
	e.t.Helper()
	v, err := e.do(args...)
	if err != nil {
		e.t.Fatalf("%v: %v", args, err)
	}
	return v
}

// refused sends a command that must be refused and returns the error text.
func (e *env) refused(args ...any) string {
	e.t.Helper()
	v, err := e.do(args...)
	if err == nil {
		e.t.Fatalf("%v: not refused, got %#v", args, v)
	}
	return err.Error()
}

// advance moves the server clock forward (the manual clock under it).
func (e *env) advance(ms int64) { e.clk.Advance(ms) }

// row returns the row of id in q as "f=v ..." in field order ("" when none).
func (e *env) row(q, id string) string {
	e.t.Helper()
	v := e.ok("HGETALL", "emq:{"+q+"}:job:"+id)
	var parts []string
	switch x := v.(type) {
	case []any:
		for i := 0; i+1 < len(x); i += 2 {
			parts = append(parts, fmt.Sprint(x[i])+"="+fmt.Sprint(x[i+1]))
		}
	case map[any]any:
		e.t.Fatal("row() expects RESP2")
	}
	return strings.Join(parts, " ")
}

// field is one field of a row ("<absent>" when missing).
func (e *env) field(q, id, f string) string {
	v, err := e.do("HGET", "emq:{"+q+"}:job:"+id, f)
	if err != nil {
		e.t.Fatal(err)
	}
	if v == nil {
		return "<absent>"
	}
	return v.(string)
}

// claim claims one job of q and returns id, token, failures.
func (e *env) claim(q string, lease int64) (string, string, int64) {
	e.t.Helper()
	v := e.ok("EMQ.CLAIM", q, lease).([]any)
	if len(v) != 1 {
		e.t.Fatalf("claim %s: %v", q, v)
	}
	j := v[0].([]any)
	return j[0].(string), j[2].(string), j[3].(int64)
}

// zmembers lists a sorted set's members in order.
func (e *env) zmembers(key string) []string {
	v := e.ok("ZRANGE", key, "0", "-1").([]any)
	out := make([]string, len(v))
	for i, x := range v {
		out[i] = x.(string)
	}
	return out
}

// recFeed records the Feed (AOF) records; install with e.recordFeed.
type recFeed struct {
	mu   sync.Mutex
	recs [][]string // one string per command of each record
}

func (f *recFeed) Append(db int, cmds [][][]byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var rec []string
	for _, c := range cmds {
		parts := make([]string, len(c))
		for i, b := range c {
			parts[i] = string(b)
		}
		rec = append(rec, strings.Join(parts, " "))
	}
	f.recs = append(f.recs, rec)
}

func (f *recFeed) n() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.recs)
}

func (f *recFeed) last() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.recs) == 0 {
		return nil
	}
	return f.recs[len(f.recs)-1]
}

func (e *env) recordFeed() *recFeed {
	f := &recFeed{}
	s := e.srv.Store()
	s.Lock()
	s.SetFeed(f)
	s.Unlock()
	return f
}

// blocked is INFO's blocked_clients.
func (e *env) blocked() int {
	e.t.Helper()
	info := e.ok("INFO", "clients").(string)
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, "blocked_clients:"); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	e.t.Fatalf("no blocked_clients in %q", info)
	return 0
}

// waitBlocked waits until n clients are blocked.
func (e *env) waitBlocked(n int) {
	e.t.Helper()
	deadline := time.Now().Add(testsupport.ClientTimeout)
	for e.blocked() != n {
		if time.Now().After(deadline) {
			e.t.Fatalf("blocked_clients never reached %d (is %d)", n, e.blocked())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// rawConn is a plain RESP2 connection for pipelining and disconnects.
type rawConn struct {
	t  *testing.T
	nc net.Conn
	br *bufio.Reader
}

func (e *env) raw() *rawConn {
	nc, err := net.Dial("tcp", e.srv.Addr())
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { nc.Close() })
	return &rawConn{t: e.t, nc: nc, br: bufio.NewReader(nc)}
}

func (r *rawConn) send(cmds ...[]string) {
	var b strings.Builder
	for _, c := range cmds {
		fmt.Fprintf(&b, "*%d\r\n", len(c))
		for _, a := range c {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
	}
	if _, err := r.nc.Write([]byte(b.String())); err != nil {
		r.t.Fatal(err)
	}
}

// readReply reads one reply and renders it compactly: bulks and simples as
// text, ints as :n, arrays as [a b], nil as (nil), errors as -text.
func (r *rawConn) readReply() string {
	r.t.Helper()
	r.nc.SetReadDeadline(time.Now().Add(testsupport.ClientTimeout))
	s, err := readRendered(r.br)
	if err != nil {
		r.t.Fatal(err)
	}
	return s
}

func readRendered(br *bufio.Reader) (string, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	switch line[0] {
	case '+':
		return line[1:], nil
	case '-':
		return line, nil
	case ':':
		return line, nil
	case '$':
		n, _ := strconv.Atoi(line[1:])
		if n < 0 {
			return "(nil)", nil
		}
		b := make([]byte, n+2)
		if _, err := ioReadFull(br, b); err != nil {
			return "", err
		}
		return string(b[:n]), nil
	case '*':
		n, _ := strconv.Atoi(line[1:])
		if n < 0 {
			return "(nil)", nil
		}
		parts := make([]string, n)
		for i := range parts {
			if parts[i], err = readRendered(br); err != nil {
				return "", err
			}
		}
		return "[" + strings.Join(parts, " ") + "]", nil
	}
	return "", fmt.Errorf("unexpected %q", line)
}

func ioReadFull(br *bufio.Reader, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := br.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
