package store

import "testing"

// Warm reads without an effect: an expired key stays (no lazy expiry), its
// access time and the mutation count do not move; it returns the value's
// first byte.
func TestDBWarmHasNoEffect(t *testing.T) {
	s := New(1)
	d := s.DB(0)
	d.Put("k", &Value{Kind: KindString, Str: []byte("xyz")})
	d.Put("gone", &Value{Kind: KindString, Str: []byte("old")})
	d.expires.put("gone", 1) // long past
	s.SetNow(1 << 40)
	v := d.keys.get("k")
	access, muts := v.access, s.mutations
	if got := d.Warm("k"); got != 'x' {
		t.Fatalf("Warm(k) = %q, want 'x'", got)
	}
	if got := d.Warm("gone"); got != 'o' || d.keys.get("gone") == nil {
		t.Fatalf("Warm(gone) = %q, key kept %v: want 'o' and the key left for the next read to expire", got, d.keys.get("gone") != nil)
	}
	if d.Warm("missing") != 0 {
		t.Fatal("Warm(missing) != 0")
	}
	if v.access != access || s.mutations != muts {
		t.Fatalf("access %d -> %d, mutations %d -> %d", access, v.access, muts, s.mutations)
	}
	if d.Get("gone") != nil {
		t.Fatal("Get(gone) after Warm: want the lazy expiry")
	}
}
