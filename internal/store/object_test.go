package store

import (
	"testing"
	"unsafe"
)

// A Value is 48 bytes (a Go size class) and a hash key's Value is its Hash:
// an empty hash is one allocation, and its Value and Hash one address
// (BenchmarkPendingJobMemory counts on it).
func TestValueSizes(t *testing.T) {
	if n := unsafe.Sizeof(Value{}); n != 48 {
		t.Errorf("Value is %d bytes", n)
	}
	var v *Value
	if n := testing.AllocsPerRun(100, func() { v = newHashValue(defaultLimitsTable) }); n != 1 {
		t.Errorf("a hash Value takes %v allocations, want 1", n)
	}
	if h := v.Hash(); unsafe.Pointer(h) != unsafe.Pointer(v) || h.val() != v {
		t.Errorf("Hash %p of Value %p", h, v)
	}
	if s := (&Value{Kind: KindString}); s.Hash() != nil {
		t.Errorf("a string's Hash() is %p, want nil", s.Hash())
	}
}

// OBJECT IDLETIME follows the server clock in whole seconds, from the
// last read or write, across the access field's 16 ms units; a clock set
// back answers 0; OBJECT FREQ answers Valkey's error under noeviction (the
// only policy accepted) and nil for a missing key.
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
	const freqErr = "-ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.\r\n"
	if got := run(t, s, 2, "OBJECT", "FREQ", "k"); got != freqErr {
		t.Fatalf("FREQ %q", got)
	}
	if got := run(t, s, 3, "OBJECT", "FREQ", "nokey"); got != "_\r\n" {
		t.Fatalf("FREQ of a missing key %q", got)
	}
}
