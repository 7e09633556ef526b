// Package conformance is one suite of job-verb scenarios (docs/verbs.md:
// its worked cases, the guard order, refusal-writes-nothing, the counters
// table, the restart exemption, the three recoveries) written once against
// a small Target and run against two: emqd embedded (EmqdTarget, a manual
// clock) and a redis-server 7 with the emq FUNCTION library loaded
// (LibraryTarget, EMQ.X q ... sent as FCALL emq_x 1 q ...). Differences
// that remain between the two are listed in Differences and in
// docs/cluster.md; a scenario asserts them, never skips them silently.
package conformance

import (
	"context"
	"strings"
	"testing"

	"github.com/emqd/emqd/clock"
	"github.com/emqd/emqd/cluster"
	"github.com/emqd/emqd/cluster/clustertest"
	"github.com/emqd/emqd/server"
	"github.com/redis/go-redis/v9"
)

// T0 is the time (Unix ms) every target's clock starts at.
const T0 = int64(1_700_000_000_000)

// Target is a server speaking the EMQ.* verbs, with a controllable clock
// and a restart.
type Target interface {
	// Name is "emqd" or "library".
	Name() string
	// Native reports whether EMQ.* are the server's own commands (emqd).
	Native() bool
	// Client is a new client speaking proto (2 or 3); EMQ.* commands sent
	// through it reach the verbs (on the library target: rewritten to FCALL
	// by Adapter). Closed when the test ends.
	Client(proto int) *redis.Client
	// Now is the server clock (Unix ms); SetClock sets it; Advance moves it
	// by ms (negative: back).
	Now() int64
	SetClock(ms int64)
	Advance(ms int64)
	// Restart stops the server process and starts it again on the same
	// address with its data: a new run_id.
	Restart()
	// RunID is the server's run_id, the lease epoch.
	RunID() string
	// MintKey is the key whose field `last` holds the last id minted for
	// queue q.
	MintKey(q string) string
}

// ---------------------------------------------------------------------------
// emqd

type emqdTarget struct {
	t    testing.TB
	clk  *clock.Manual
	sclk *clock.Shifted
	opts server.Options
	srv  *server.Server
}

// EmqdTarget starts emqd in process on a manual clock at T0 (debug on, so
// EMQ.DEBUG CLOCK ADVANCE works) with the AOF on in a temporary directory,
// so Restart (a clean Close, then Start) keeps the data.
func EmqdTarget(t testing.TB) Target {
	t.Helper()
	clk := clock.NewManual(T0)
	e := &emqdTarget{t: t, clk: clk, sclk: clock.NewShifted(clk)}
	e.opts = server.Options{Clock: e.sclk, Config: map[string]string{
		"enable-debug-command": "yes", "appendonly": "yes", "appendfsync": "everysec", "dir": t.TempDir(),
	}}
	e.start()
	e.opts.Addr = e.srv.Addr()
	t.Cleanup(func() { e.srv.Close(context.Background()) })
	return e
}

func (e *emqdTarget) start() {
	e.t.Helper()
	srv, err := server.Start(e.opts)
	if err != nil {
		e.t.Fatalf("emqd: %v", err)
	}
	e.srv = srv
}

func (e *emqdTarget) Name() string  { return "emqd" }
func (e *emqdTarget) Native() bool  { return true }
func (e *emqdTarget) Now() int64    { return e.sclk.NowMs() }
func (e *emqdTarget) RunID() string { return e.srv.RunID() }

func (e *emqdTarget) SetClock(ms int64) { e.clk.Advance(ms - e.sclk.NowMs()) }
func (e *emqdTarget) Advance(ms int64)  { e.clk.Advance(ms) }

func (e *emqdTarget) MintKey(string) string { return "{emq}:mint" }

func (e *emqdTarget) Client(proto int) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: e.srv.Addr(), Protocol: proto, ReadTimeout: -1})
	e.t.Cleanup(func() { c.Close() })
	return c
}

func (e *emqdTarget) Restart() {
	e.t.Helper()
	if err := e.srv.Close(context.Background()); err != nil {
		e.t.Fatalf("emqd: close: %v", err)
	}
	e.start()
}

// ---------------------------------------------------------------------------
// redis-server with the library

type libraryTarget struct {
	t    testing.TB
	node *clustertest.Node
	now  int64
	ctl  *redis.Client
}

// LibraryTarget starts a redis-server (clustertest.StartNode, AOF on) with
// the test variant of the library (cluster.DebugClock) and pins its clock
// at T0. Restart is a clean shutdown (SIGTERM) and a start.
func LibraryTarget(t testing.TB) Target {
	t.Helper()
	n := clustertest.StartLibraryNode(t, clustertest.NodeOptions{Extra: []string{"--appendfsync", "everysec"}}, cluster.DebugClock())
	l := &libraryTarget{t: t, node: n}
	l.ctl = n.Client(2)
	l.SetClock(T0)
	return l
}

func (l *libraryTarget) Name() string  { return "library" }
func (l *libraryTarget) Native() bool  { return false }
func (l *libraryTarget) Now() int64    { return l.now }
func (l *libraryTarget) RunID() string { return l.node.RunID() }

func (l *libraryTarget) MintKey(q string) string { return "emq:{" + q + "}:mint" }

func (l *libraryTarget) debugClock(sub string, ms int64) {
	l.t.Helper()
	if err := l.ctl.Do(context.Background(), "FCALL", "emq_debug", 0, "CLOCK", sub, ms).Err(); err != nil {
		l.t.Fatalf("library: emq_debug CLOCK %s %d: %v", sub, ms, err)
	}
}

func (l *libraryTarget) SetClock(ms int64) {
	l.debugClock("SET", ms)
	l.now = ms
}

func (l *libraryTarget) Advance(ms int64) { l.SetClock(l.now + ms) }

func (l *libraryTarget) Client(proto int) *redis.Client {
	c := l.node.Client(proto)
	c.AddHook(Adapter{})
	return c
}

func (l *libraryTarget) Restart() {
	l.t.Helper()
	l.node.Stop()
	l.node.Start()
	l.SetClock(l.now) // the pinned clock lived in the old process's Lua state
}

// ---------------------------------------------------------------------------
// The adapter

// Adapter is a go-redis hook that sends `EMQ.X q args...` as `FCALL emq_x 1
// q args...` (`EMQ.DEBUG args...` as `FCALL emq_debug 0 args...`, a verb
// without a queue as `FCALL emq_x 0`) and hands the reply back to the
// original command. Other commands pass unchanged.
type Adapter struct{}

// Translate is the FCALL form of args, and whether args is an EMQ.* verb.
func Translate(args []any) ([]any, bool) {
	if len(args) == 0 {
		return nil, false
	}
	name, ok := args[0].(string)
	if !ok || len(name) < 4 || !strings.EqualFold(name[:4], "EMQ.") {
		return nil, false
	}
	fn := cluster.Function(name)
	if len(args) == 1 || fn == "emq_debug" {
		return append([]any{"FCALL", fn, 0}, args[1:]...), true
	}
	return append([]any{"FCALL", fn, 1}, args[1:]...), true
}

func (Adapter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (Adapter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args, ok := Translate(cmd.Args())
		if !ok {
			return next(ctx, cmd)
		}
		fc := redis.NewCmd(ctx, args...)
		err := next(ctx, fc)
		copyResult(cmd, fc)
		return err
	}
}

func (Adapter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		sent := make([]redis.Cmder, len(cmds))
		var moved []int
		for i, c := range cmds {
			sent[i] = c
			if args, ok := Translate(c.Args()); ok {
				sent[i] = redis.NewCmd(ctx, args...)
				moved = append(moved, i)
			}
		}
		err := next(ctx, sent)
		for _, i := range moved {
			copyResult(cmds[i], sent[i].(*redis.Cmd))
		}
		return err
	}
}

func copyResult(dst redis.Cmder, src *redis.Cmd) {
	if c, ok := dst.(*redis.Cmd); ok {
		c.SetVal(src.Val())
	}
	dst.SetErr(src.Err())
}
