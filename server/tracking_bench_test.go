package server

import (
	"net"
	"testing"
)

// The per-command cost of client-side caching, without the network: one
// client's commands run through exec (dispatch, call, reply) under the
// store lock, as a batch does.
//
//	off:       no client tracks (the table is not installed)
//	other:     another client tracks keys; this one writes a key nobody
//	           tracks
//	reader:    this client tracks and reads (the key is remembered)
//	invalidate: this client reads the key (tracked) and another client's
//	           write invalidates it, one read+write pair per op
func benchExec(b *testing.B, setup func(s *Server, c, other *client), argvs ...[][]byte) {
	s := startServer(b, nil, nil)
	mk := func() *client {
		a, z := net.Pipe()
		b.Cleanup(func() { a.Close(); z.Close() })
		c := newClient(s, a)
		s.clientsMu.Lock()
		s.clients[c.id] = c
		s.clientsMu.Unlock()
		return c
	}
	c, other := mk(), mk()
	st := s.store
	st.Lock()
	defer st.Unlock()
	c.inBatch, other.inBatch = true, true
	b.ReportAllocs()
	if setup != nil {
		setup(s, c, other)
	}
	if len(argvs) == 0 {
		return
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, argv := range argvs {
			c.exec(argv)
		}
		if len(c.w.Buf) > 1<<16 {
			c.w.Reset()
		}
		if len(other.w.Buf) > 1<<16 {
			other.w.Reset()
		}
	}
}

func argv(args ...string) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = []byte(a)
	}
	return out
}

func trackOn(c *client, args ...string) {
	c.exec(argv(append([]string{"CLIENT", "TRACKING", "ON"}, args...)...))
}

func BenchmarkTrackingOffHSet(b *testing.B) {
	benchExec(b, nil, argv("HSET", "h", "f", "v"))
}

func BenchmarkTrackingOffHGet(b *testing.B) {
	benchExec(b, nil, argv("HGET", "h", "f"))
}

func BenchmarkTrackingOtherHSet(b *testing.B) {
	benchExec(b, func(s *Server, c, other *client) {
		trackOn(other)
		other.exec(argv("GET", "elsewhere"))
	}, argv("HSET", "h", "f", "v"))
}

func BenchmarkTrackingReaderHGet(b *testing.B) {
	benchExec(b, func(s *Server, c, other *client) { trackOn(c) }, argv("HGET", "h", "f"))
}

func BenchmarkTrackingBCASTOtherHSet(b *testing.B) {
	benchExec(b, func(s *Server, c, other *client) { trackOn(other, "BCAST", "PREFIX", "user:") }, argv("HSET", "h", "f", "v"))
}

// One read by a RESP3 tracking client and one write by another client
// invalidating it (the write's cost includes the push written to the
// reader); against the same pair with tracking off.
func benchPair(b *testing.B, track bool) {
	benchExec(b, func(s *Server, c, other *client) {
		c.w.Proto = 3
		if track {
			trackOn(c)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			c.exec(argv("HGET", "h", "f"))
			other.exec(argv("HSET", "h", "f", "v"))
			if len(c.w.Buf) > 1<<16 {
				c.w.Reset()
			}
			if len(other.w.Buf) > 1<<16 {
				other.w.Reset()
			}
		}
		b.StopTimer()
	})
}

func BenchmarkTrackingOffPair(b *testing.B)        { benchPair(b, false) }
func BenchmarkTrackingInvalidatePair(b *testing.B) { benchPair(b, true) }
