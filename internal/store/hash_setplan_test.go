package store

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

// TestHashSetPlan: a plan's HSET (setPlan, one pass over a listpack) leaves
// the same fields, values, order, encoding and listpack bytes as Set pair by
// pair, for random rows and pairs: new and existing fields, unchanged values,
// listpack words, repeated fields, values past hash-max-listpack-value and
// writes past hash-max-listpack-entries; and values marked borrowed
// (setPlanBorrow), changed by their owner after the write, are kept as
// they were.
func TestHashSetPlan(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	names := []string{"state", "stalled", "last_error", "attempts", "payload", "f1", "f2", "x", "lease_epoch"}
	vals := []string{"pending", "dead", "active", "0", "1", "17", "", "some value", strings.Repeat("v", 64), strings.Repeat("w", 65)}
	for iter := 0; iter < 20000; iter++ {
		s := New(1)
		s.SetLimits(Limits{HashEntries: int64(4 + rng.Intn(6)), HashValue: 64, ZSetEntries: 128, ZSetValue: 64})
		d := s.DB(0)
		a, _ := d.HashForWrite("a")
		b, _ := d.HashForWrite("b")
		for i, n := 0, rng.Intn(7); i < n; i++ {
			f, v := names[rng.Intn(len(names))], []byte(vals[rng.Intn(len(vals)-1)])
			a.Set(f, v)
			b.Set(f, v)
		}
		var fv [][]byte
		for i, n := 0, 1+rng.Intn(4); i < n; i++ {
			fv = append(fv, []byte(names[rng.Intn(len(names))]), []byte(vals[rng.Intn(len(vals))]))
		}
		// Borrowed values (plan.Op.Borrow) are the caller's: they change
		// once the plan applied, and the hash must have kept a copy.
		borrow := uint8(rng.Intn(16))
		fvb := make([][]byte, len(fv))
		for i := range fv {
			fvb[i] = []byte(string(fv[i]))
		}
		a.setPlanBorrow(fv, 0, borrow)
		for i := 1; i < len(fv); i += 2 {
			if borrow&(1<<(i/2)) != 0 {
				for j := range fv[i] {
					fv[i][j] = '#'
				}
			}
		}
		for i := 0; i < len(fvb); i += 2 {
			b.Set(zview(fvb[i]), fvb[i+1])
		}
		if got, want := dumpHash(a), dumpHash(b); got != want {
			t.Fatalf("iter %d: HSET %q\n got %s\nwant %s", iter, fv, got, want)
		}
		if !a.Big() && string(a.Str) != string(b.Str) {
			t.Fatalf("iter %d: HSET %q: listpack bytes %q, want %q", iter, fv, a.Str, b.Str)
		}
	}
}

func dumpHash(h *Hash) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "big=%v len=%d:", h.Big(), h.Len())
	h.Range(func(f string, v []byte) bool {
		fmt.Fprintf(&sb, " %s=%q", f, v)
		return true
	})
	return sb.String()
}
