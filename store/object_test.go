package store

import (
	"testing"
	"unsafe"
)

// A Value is 48 bytes and a hash key's Value and Hash one 64-byte object
// (BenchmarkPendingJobMemory counts on it).
func TestValueSizes(t *testing.T) {
	if n := unsafe.Sizeof(Value{}); n != 48 {
		t.Errorf("Value is %d bytes", n)
	}
	if n := unsafe.Sizeof(hashValue{}); n != 64 {
		t.Errorf("hashValue is %d bytes", n)
	}
}

// OBJECT IDLETIME follows the server clock in whole seconds, from the
// last read or write, across the access field's 16 ms units; a clock set
// back answers 0. Under LFU, OBJECT FREQ starts at LFU_INIT_VAL and decays
// by lfu-decay-time minutes.
func TestObjectIdleAndFreq(t *testing.T) {
	s := New(16)
	now := int64(harnessNowMs + 7) // not on a unit boundary
	s.SetNow(now)
	run(t, s, 2, "SET", "k", "v")
	for _, c := range []struct {
		advance int64
		want    string
	}{{0, ":0\r\n"}, {999, ":0\r\n"}, {1500, ":2\r\n"}, {3_600_000, ":3602\r\n"}} {
		now += c.advance
		s.SetNow(now)
		if got := run(t, s, 2, "OBJECT", "IDLETIME", "k"); got != c.want {
			t.Fatalf("after +%d ms: IDLETIME %q, want %q", c.advance, got, c.want)
		}
	}
	run(t, s, 2, "GET", "k") // a read resets it
	if got := run(t, s, 2, "OBJECT", "IDLETIME", "k"); got != ":0\r\n" {
		t.Fatalf("after GET: %q", got)
	}
	s.SetNow(now - 10_000)
	if got := run(t, s, 2, "OBJECT", "IDLETIME", "k"); got != ":0\r\n" {
		t.Fatalf("clock set back: %q", got)
	}
	s.SetNow(now)
	s.SetLFU(true, 10, 1)
	if got := run(t, s, 2, "OBJECT", "FREQ", "k"); got != ":5\r\n" {
		t.Fatalf("FREQ of a key last touched under LRU: %q", got)
	}
	for range 200 {
		run(t, s, 2, "GET", "k")
	}
	v := s.DB(0).Peek("k")
	f := s.Freq(v)
	if f <= 5 || f > 255 {
		t.Fatalf("FREQ after 200 reads: %d", f)
	}
	s.SetNow(now + 3*60_000) // three minutes: three decay periods
	if got := s.Freq(v); got != f-3 {
		t.Fatalf("FREQ after 3 minutes: %d, want %d", got, f-3)
	}
}
