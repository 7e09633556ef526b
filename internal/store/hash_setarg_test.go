package store

import (
	"strconv"
	"strings"
	"testing"

	"github.com/emqd/emqd/internal/resp"
)

// TestHashSetArgCopies: SetArg copies the caller's field and value in both
// encodings, for a new field, a replaced value and a value long enough to
// convert the hash, so the caller may reuse its buffers at once.
func TestHashSetArgCopies(t *testing.T) {
	for _, big := range []bool{false, true} {
		h := NewHash()
		if big {
			for i := range 600 { // over hash-max-listpack-entries (512)
				h.Set("pad"+strconv.Itoa(i), []byte("v"))
			}
		}
		if h.Big() != big {
			t.Fatalf("big=%v: Big() = %v", big, h.Big())
		}
		field, value := []byte("f"), []byte("one")
		if !h.SetArg(field, value) {
			t.Fatalf("big=%v: SetArg of a new field reported an existing one", big)
		}
		copy(field, "g")
		copy(value, "two")
		if v, ok := h.Get("f"); !ok || string(v) != "one" {
			t.Fatalf("big=%v: after the caller reused its buffers, f = %q %v, want one", big, v, ok)
		}
		if _, ok := h.Get("g"); ok {
			t.Fatalf("big=%v: field g exists after the caller's buffer changed", big)
		}
		field, value = []byte("f"), []byte("three")
		if h.SetArg(field, value) {
			t.Fatalf("big=%v: SetArg of an existing field reported a new one", big)
		}
		copy(value, "xxxxx")
		if v, _ := h.Get("f"); string(v) != "three" {
			t.Fatalf("big=%v: replaced f = %q, want three", big, v)
		}
		long := make([]byte, 65) // over hash-max-listpack-value (64)
		for i := range long {
			long[i] = 'a'
		}
		h.SetArg([]byte("long"), long)
		long[0] = 'b'
		if v, _ := h.Get("long"); len(v) != 65 || v[0] != 'a' {
			t.Fatalf("big=%v: long value changed with the caller's buffer (%q)", big, v[:1])
		}
		if !h.Big() {
			t.Fatalf("big=%v: a 65-byte value left the hash a listpack", big)
		}
		if v, _ := h.Get("f"); string(v) != "three" {
			t.Fatalf("big=%v: after the conversion f = %q, want three", big, v)
		}
	}
}

// TestHashSetArgScratchOnStack: replacing a listpack value from a digits
// buffer on the caller's stack (HINCRBY, a plan's HINCRBY) allocates
// nothing while the digits keep their size (the value is rewritten in
// place, listpack.go) and only the new listpack when they grow; the buffer
// does not escape to the heap.
func TestHashSetArgScratchOnStack(t *testing.T) {
	h := NewHash()
	h.Set("n", []byte("1000"))
	field := []byte("n")
	n := int64(1000)
	allocs := testing.AllocsPerRun(200, func() {
		n++
		var buf [20]byte
		h.SetArg(field, strconv.AppendInt(buf[:0], n, 10))
	})
	if allocs != 0 {
		t.Fatalf("SetArg of same-size digits from a stack buffer: %v allocations per call, want 0", allocs)
	}
	if v, _ := h.Get("n"); string(v) != strconv.FormatInt(n, 10) {
		t.Fatalf("n = %q, want %d", v, n)
	}
	// Marked viewed by the Get: each replace copies the listpack once
	// (a new buffer, unmarked), then the next is in place again.
	allocs = testing.AllocsPerRun(200, func() {
		h.Get("n")
		n++
		var buf [20]byte
		h.SetArg(field, strconv.AppendInt(buf[:0], n, 10))
	})
	if allocs != 1 {
		t.Fatalf("SetArg after a Get: %v allocations per call, want 1 (the new listpack)", allocs)
	}
}

// TestReadKeyConversionOnStack: a read command's key, converted from its
// argument bytes for the lookup, stays on the stack (the lookups keep no
// key: the expired-key path copies the one it hands to WATCH and
// tracking), so HGET of a 7-byte key allocates nothing, and HINCRBY and HSET
// of an existing hash nothing either: they hand Dirty the keyspace's own
// key string (DB.lookupArg, DB.HashForWriteArg; 1 allocation each before,
// the key; the value is rewritten in place, listpack.go). Before, every lookup's key
// escaped: 1 and 3 allocations (redis-benchmark's `HGET bench:h f`,
// `HINCRBY bench:h n 1`). The same holds for the write commands that end
// up writing nothing: ZPOPMIN of a missing key and a ZADD that re-adds a
// member at its score (redis-benchmark's ZPOPMIN and ZADD tests, which pop
// an empty `myzset` and re-add one member) allocate nothing (1 each
// before: the key).
func TestReadKeyConversionOnStack(t *testing.T) {
	s := New(1)
	run(t, s, 2, "HSET", "bench:h", "f", "somevalue", "n", "0")
	run(t, s, 2, "ZADD", "bench:z", "1", "m")
	for _, c := range []struct {
		args []string
		want float64
	}{
		{[]string{"HGET", "bench:h", "f"}, 0},
		{[]string{"ZSCORE", "bench:z", "m"}, 0},
		{[]string{"HINCRBY", "bench:h", "n", "1"}, 0},
		{[]string{"HSET", "bench:h", "f", "othervalue"}, 0},
		{[]string{"ZPOPMIN", "myzset"}, 0},
		{[]string{"ZADD", "bench:z", "1", "m"}, 0},
	} {
		argv := make([][]byte, len(c.args))
		for i, a := range c.args {
			argv[i] = []byte(a)
		}
		cs := harnessTable()[strings.ToLower(c.args[0])]
		w := &resp.Writer{Proto: 2}
		x := &Ctx{S: s, DB: s.DB(0), W: w, NowMs: harnessNowMs}
		s.SetNow(harnessNowMs)
		allocs := testing.AllocsPerRun(200, func() {
			w.Reset()
			x.ResetForCommand(argv)
			cs.Handler(x)
		})
		if allocs != c.want {
			t.Errorf("%v: %v allocations per call, want %v (reply %q)", c.args, allocs, c.want, w.Buf)
		}
	}
}
