package store

import (
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"
)

// liveBytes is the heap in use after two full collections.
func liveBytes() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// The keyspace and the TTL table of a database given back after mass
// deletion (issue 27 item 4: deleting 1M keys left 55 MB counted): 200,000
// keys with TTLs, all but 1,000 deleted, then ShrinkMaps rebuilds both maps;
// what remains reads back with its value and TTL, and the heap falls by
// most of the two tables (about 12 MB for 200,000 entries; asserted: 6 MB).
func TestShrinkKeyspaceAfterMassDelete(t *testing.T) {
	s := New(1)
	d := s.DB(0)
	const n, keep = 200_000, 1_000
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "key:" + strconv.Itoa(i)
		d.Put(keys[i], NewString([]byte("v")))
		d.SetExpire(keys[i], int64(1e15+i))
	}
	for _, k := range keys[keep:] {
		if !d.Remove(k) {
			t.Fatalf("Remove(%s) false", k)
		}
	}
	keys = keys[:keep]
	before := liveBytes()
	if got := s.ShrinkMaps(); got != 2 {
		t.Fatalf("ShrinkMaps rebuilt %d maps, want 2 (keys and expires)", got)
	}
	after := liveBytes()
	if before-after < 6<<20 {
		t.Fatalf("heap %d -> %d bytes: the tables were not given back", before, after)
	}
	if s.ShrinkMaps() != 0 {
		t.Fatal("a second ShrinkMaps rebuilt again")
	}
	if d.Len() != keep || d.ExpiresLen() != keep || s.MapsShrunk != 2 {
		t.Fatalf("%d keys, %d TTLs, %d shrunk", d.Len(), d.ExpiresLen(), s.MapsShrunk)
	}
	for i, k := range keys {
		v := d.Peek(k)
		if v == nil || string(v.Str) != "v" {
			t.Fatalf("%s lost", k)
		}
		if at, ok := d.ExpireAt(k); !ok || at != int64(1e15+i) {
			t.Fatalf("%s TTL %d %v", k, at, ok)
		}
	}
	runtime.KeepAlive(keys)
}

// A map that never held shrinkMinPeak entries, or that still holds an
// eighth of its peak, is left alone.
func TestShrinkLeavesFullMaps(t *testing.T) {
	s := New(1)
	d := s.DB(0)
	for i := 0; i < 8000; i++ {
		d.Put(strconv.Itoa(i), NewString(nil))
	}
	for i := 0; i < 7000; i++ { // 1000 left: exactly 1/8 of 8000
		d.Remove(strconv.Itoa(i))
	}
	if got := s.ShrinkMaps(); got != 0 {
		t.Fatalf("rebuilt %d maps at 1/8 of the peak", got)
	}
	d.Remove("7000")
	if got := s.ShrinkMaps(); got != 1 {
		t.Fatalf("rebuilt %d maps below 1/8 of the peak, want 1", got)
	}
	s2 := New(1)
	for i := 0; i < shrinkMinPeak-1; i++ {
		s2.DB(0).Put(strconv.Itoa(i), NewString(nil))
	}
	for i := 0; i < shrinkMinPeak-1; i++ {
		s2.DB(0).Remove(strconv.Itoa(i))
	}
	if got := s2.ShrinkMaps(); got != 0 {
		t.Fatalf("rebuilt %d maps that never held %d entries", got, shrinkMinPeak)
	}
}

// A big sorted set's member map is rebuilt by the deletion that leaves
// fewer than 1/8 of its peak; the set reads back the same through every
// way members leave (ZREM of the least, ZREM, ZPOPMIN, ZPOPMAX, a rank
// range), and the heap falls by most of the member map.
func TestShrinkZSetDict(t *testing.T) {
	s := New(1)
	const n = 100_000
	for i := 0; i < n; i += 1000 {
		args := []string{"ZADD", "z"}
		for j := i; j < i+1000; j++ {
			args = append(args, strconv.Itoa(j), "m"+strconv.Itoa(j))
		}
		run(t, s, 2, args...)
	}
	z, _ := s.DB(0).LookupZSet("z")
	if z.tree.dictPeak != n {
		t.Fatalf("dictPeak %d", z.tree.dictPeak)
	}
	run(t, s, 2, "ZREM", "z", "m0")    // the least
	run(t, s, 2, "ZREM", "z", "m500")  // by score lookup
	run(t, s, 2, "ZPOPMIN", "z", "10") // m1..m10
	run(t, s, 2, "ZPOPMAX", "z", "10") // m99990..m99999
	run(t, s, 2, "ZREMRANGEBYRANK", "z", "0", "79999")
	before := liveBytes()
	// 19,979 left; remove down to 12,000 (below 100,000/8 = 12,500).
	args := []string{"ZREM", "z"}
	for j := 80_011; j < 87_990; j++ {
		args = append(args, "m"+strconv.Itoa(j))
	}
	run(t, s, 2, args...)
	after := liveBytes()
	if z.tree.dictPeak >= n || z.dict.len() != z.tree.Len() || z.dict.len() != 12_000 {
		t.Fatalf("peak %d, dict %d, tree %d", z.tree.dictPeak, z.dict.len(), z.tree.Len())
	}
	if before-after < 1<<20 {
		t.Fatalf("heap %d -> %d: the member map was not rebuilt", before, after)
	}
	if got := run(t, s, 2, "ZSCORE", "z", "m87990"); got != "$5\r\n87990\r\n" {
		t.Fatalf("ZSCORE %q", got)
	}
	if got := run(t, s, 2, "ZRANGE", "z", "0", "0"); got != "*1\r\n$6\r\nm87990\r\n" {
		t.Fatalf("ZRANGE %q", got)
	}
	if got := run(t, s, 2, "ZSCORE", "z", "m87989"); got != "$-1\r\n" {
		t.Fatalf("removed member %q", got)
	}
}

// Random inserts and deletions across the rebuild line, with ShrinkMaps
// between batches, keep the keyspace, the TTLs and a big set's members
// equal to a model.
func TestShrinkRandomAgainstModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	s := New(1)
	d := s.DB(0)
	keys := map[string]int64{}
	members := map[string]bool{}
	for round := 0; round < 40; round++ {
		if round%2 == 0 {
			for i := 0; i < 3000+r.IntN(6000); i++ {
				k := strconv.Itoa(r.IntN(20000))
				d.Put(k, NewString([]byte(k)))
				at := int64(1e15 + r.IntN(1000))
				d.SetExpire(k, at)
				keys[k] = at
				run(t, s, 2, "ZADD", "z", "1", "m"+k)
				members["m"+k] = true
			}
		} else {
			// Most keys go (sometimes all but a few), so the maps cross
			// the line in some rounds and not in others.
			keepOne := 1 + r.IntN(12)
			for k := range keys {
				if r.IntN(keepOne+1) == 0 && r.IntN(2) == 0 {
					continue
				}
				if !d.Remove(k) {
					t.Fatalf("Remove(%s) false", k)
				}
				delete(keys, k)
				if got := run(t, s, 2, "ZREM", "z", "m"+k); got != ":1\r\n" {
					t.Fatalf("ZREM m%s: %q", k, got)
				}
				delete(members, "m"+k)
			}
		}
		s.ShrinkMaps()
		if d.Len() != len(keys)+1 && !(len(members) == 0 && d.Len() == len(keys)) {
			t.Fatalf("round %d: %d keys, model %d", round, d.Len(), len(keys))
		}
		for k, at := range keys {
			if v := d.Peek(k); v == nil || string(v.Str) != k {
				t.Fatalf("round %d: %s lost", round, k)
			}
			if got, _ := d.ExpireAt(k); got != at {
				t.Fatalf("round %d: %s TTL %d, want %d", round, k, got, at)
			}
		}
		if z, _ := d.LookupZSet("z"); len(members) > 0 && (z == nil || z.Len() != len(members)) {
			t.Fatalf("round %d: set has %v members, model %d", round, z, len(members))
		}
	}
	if s.MapsShrunk == 0 {
		t.Fatal("no map was rebuilt: the test did not cross the line")
	}
}

// A keyspace whose count stays constant while its keys turn over (a job
// queue's rows) keeps its table (keytable.go; a Go map doubled it: 35.0 ->
// 69.9 B a key, BenchmarkKeyTableTurnover): 100,000 keys turned over three
// times hold the heap of the fill (a Go map grew it by 3.5 MB: asserted
// under 1 MB), keep every key, and need no ShrinkMaps rebuild.
func TestChurnedKeyspaceKeepsItsTable(t *testing.T) {
	s := New(1)
	d := s.DB(0)
	const n = 100_000
	key := func(i int) string { return "row:" + strconv.Itoa(i) }
	v := NewString([]byte("v")) // one value: the table is what is measured
	for i := 0; i < n; i++ {
		d.Put(key(i), v)
	}
	cap0 := len(d.keys.slots)
	filled := liveBytes()
	next := n
	for ; next < 4*n; next++ {
		d.Put(key(next), v)
		if !d.Remove(key(next - n)) {
			t.Fatalf("Remove(%s) false", key(next-n))
		}
	}
	churned := liveBytes()
	t.Logf("heap after the fill %d, after %d turnovers %d bytes (%+.1f B a key)", filled, 3*n, churned, float64(churned-filled)/n)
	if churned-filled > 1<<20 {
		t.Fatalf("heap %d -> %d bytes over %d turnovers: the table grew", filled, churned, 3*n)
	}
	if got := len(d.keys.slots); got != cap0 || d.keys.dead != 0 {
		t.Fatalf("table of %d slots (%d tombstones) after the turnover, %d after the fill", got, d.keys.dead, cap0)
	}
	if s.ShrinkMaps() != 0 || d.Len() != n {
		t.Fatalf("%d keys; shrunk %d", d.Len(), s.MapsShrunk)
	}
	for i := next - n; i < next; i++ {
		if d.Peek(key(i)) != v {
			t.Fatalf("%s lost", key(i))
		}
	}
	if d.Peek(key(next-n-1)) != nil || d.Peek(key(0)) != nil {
		t.Fatal("a removed key is still there")
	}
}
