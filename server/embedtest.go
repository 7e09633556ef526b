package server

import (
	"context"
	"time"
)

// TB is the part of testing.TB that StartTest uses (so this package does
// not import testing into the binary).
type TB interface {
	Helper()
	Cleanup(func())
	Fatalf(format string, args ...any)
}

// StartTest starts an in-process emqd for a test and stops it when the
// test ends (t.Cleanup: Close with a 10 s deadline, which also closes the
// clients still connected and unblocks their blocked claims). opts is
// optional (at most one): a zero Options listens on a free loopback port,
// keeps nothing on disk and reads the wall clock; pass Clock:
// clock.NewManual(ms) to move time by hand. A failure to start fails the
// test.
//
//	clk := clock.NewManual(1_700_000_000_000)
//	s := server.StartTest(t, server.Options{Clock: clk})
//	rdb := redis.NewClient(&redis.Options{Addr: s.Addr()})
//	// EMQ.ENQUEUE, EMQ.CLAIM ...; clk.Advance(lease) ...; EMQ.STALLED.CHECK
func StartTest(t TB, opts ...Options) *Server {
	t.Helper()
	var o Options
	switch len(opts) {
	case 0:
	case 1:
		o = opts[0]
	default:
		t.Fatalf("server.StartTest: at most one Options, got %d", len(opts))
		return nil
	}
	s, err := Start(o)
	if err != nil {
		t.Fatalf("server.StartTest: %v", err)
		return nil
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Fatalf("server.StartTest: close: %v", err)
		}
	})
	return s
}
