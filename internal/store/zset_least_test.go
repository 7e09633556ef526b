package store

import (
	"fmt"
	"testing"
)

// TestZSetRemLeast: removing the least member of a big set (the sweep's
// order, by rank) and removing members elsewhere leave the set, its order
// and its scores right.
func TestZSetRemLeast(t *testing.T) {
	z := NewZSet()
	const n = 1000
	name := func(i int) string { return fmt.Sprintf("m%04d", i) }
	for i := 0; i < n; i++ {
		z.Add(name(i), float64(i))
	}
	if !z.Big() {
		t.Fatal("not big")
	}
	for i := 0; i < n/2; i++ { // the least each time
		if m, _ := z.Min(); m.Member != name(i) || !z.Rem(name(i)) || z.Rem(name(i)) {
			t.Fatalf("rem %s (least %v)", name(i), m)
		}
	}
	for i := n/2 + 1; i < n; i += 2 { // not the least
		if !z.Rem(name(i)) {
			t.Fatalf("rem %s", name(i))
		}
	}
	if z.Len() != n/4 {
		t.Fatalf("len %d, want %d", z.Len(), n/4)
	}
	want := n / 2
	z.AscendAll(func(it ZItem) bool {
		if it.Member != name(want) || it.Score != float64(want) {
			t.Fatalf("%v, want %s", it, name(want))
		}
		if s, ok := z.Score(it.Member); !ok || s != it.Score {
			t.Fatalf("score of %q: %v %v", it.Member, s, ok)
		}
		want += 2
		return true
	})
	if r := z.Rank(name(n - 2)); r != n/4-1 {
		t.Errorf("rank %d", r)
	}
}
