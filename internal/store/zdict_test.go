package store

import (
	"runtime"
	"strconv"
	"testing"
)

// BenchmarkZDictTurnover: a big sorted set's member index under a job
// queue's turnover (the active set: every lease's member is new, the
// oldest leaves first), an oaTable[float64] against the Go map it
// replaced. 100,000 members are filled, then each op puts a new member,
// reads one and deletes the oldest; B/member is the heap the index holds
// afterwards per member (the members' strings are not counted: they live
// in a ring outside both).
func BenchmarkZDictTurnover(b *testing.B) {
	const n = 100_000
	ring := make([]string, 2*n)
	for i := range ring {
		ring[i] = "JOB" + strconv.Itoa(1e10+i)
	}
	b.Run("oatable", func(b *testing.B) {
		base := liveBytes()
		d := &oaTable[float64]{}
		for i := 0; i < n; i++ {
			d.put(ring[i], float64(i))
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			d.put(ring[(n+i)%(2*n)], float64(n+i))
			if _, ok := d.lookup(ring[(i+n/2)%(2*n)]); !ok {
				b.Fatal("missing")
			}
			d.del(ring[i%(2*n)])
		}
		b.StopTimer()
		b.ReportMetric(float64(liveBytes()-base)/n, "B/member")
		runtime.KeepAlive(d)
	})
	b.Run("gomap", func(b *testing.B) {
		base := liveBytes()
		m := map[string]float64{}
		for i := 0; i < n; i++ {
			m[ring[i]] = float64(i)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			m[ring[(n+i)%(2*n)]] = float64(n + i)
			if _, ok := m[ring[(i+n/2)%(2*n)]]; !ok {
				b.Fatal("missing")
			}
			delete(m, ring[i%(2*n)])
		}
		b.StopTimer()
		b.ReportMetric(float64(liveBytes()-base)/n, "B/member")
		runtime.KeepAlive(m)
	})
}

// FuzzZDict runs a byte string of operations on a big set's member index
// (zdict, the float64 table of keytable.go) and on a Go map as its
// oracle: put, delete and lookup of members from a small space (the empty
// member among them), asked for by the stored string itself or by a copy
// of its bytes (find matches a slot on its data pointer, or on its
// bytes), clone, fit and reserve. After every op the table's slots hold
// the oracle's entries at their recorded distances.
func FuzzZDict(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Add([]byte("\x00\x40\x80\xc0\x01\x41\x81\xc1\x3f\x7f\xbf\xff"))
	f.Fuzz(func(t *testing.T, ops []byte) {
		d := &zdict{}
		m := map[string]float64{}
		names := make([]string, 32)
		for i := range names {
			if i > 0 {
				names[i] = "m" + strconv.Itoa(i*7919%1000) // same lengths, other bytes
			}
		}
		for i, op := range ops {
			k := names[op&31]
			if op&32 != 0 {
				k = string([]byte(k)) // a copy: found by its bytes
			}
			sc := float64(i)
			switch op >> 6 {
			case 0: // put
				_, had := m[k]
				if added := d.put(k, sc); added == had {
					t.Fatalf("put(%q) added %v, oracle had it %v", k, added, had)
				}
				m[k] = sc
			case 1: // delete
				_, had := m[k]
				if got := d.del(k); got != had {
					t.Fatalf("del(%q) = %v, oracle %v", k, got, had)
				}
				delete(m, k)
			case 2: // lookup
				got, ok := d.lookup(k)
				want, had := m[k]
				if ok != had || got != want {
					t.Fatalf("lookup(%q) = %v %v, oracle %v %v", k, got, ok, want, had)
				}
			default: // clone, fit or reserve
				switch op & 3 {
				case 0:
					d = d.clone()
				case 1:
					d.fit()
				default:
					e := &zdict{}
					e.reserve(len(m) + int(op&15))
					if len(m) > 0 && len(e.slots) < ktCapFor(len(m)) {
						t.Fatalf("reserve(%d): %d slots", len(m), len(e.slots))
					}
					for k2, s2 := range d.all() {
						e.put(k2, s2)
					}
					d = e
				}
			}
			checkZDict(t, d, m)
		}
	})
}

// checkZDict is checkKeyTable for a member index.
func checkZDict(t *testing.T, d *zdict, m map[string]float64) {
	t.Helper()
	if d.len() != len(m) || d.dead != 0 {
		t.Fatalf("len %d (%d tombstones), oracle %d", d.len(), d.dead, len(m))
	}
	mask, full := len(d.slots)-1, 0
	for i := range d.slots {
		sl := &d.slots[i]
		if sl.tag() < ktFull {
			if *sl != (ktSlot[float64]{}) {
				t.Fatalf("empty slot %d holds %+v", i, *sl)
			}
			continue
		}
		full++
		k := sl.key()
		h := d.hash(k)
		if dist := (i - int(h)) & mask; dist != sl.dist() || sl.tag() != ktTag(h) {
			t.Fatalf("slot %d (%q): distance %d recorded %d", i, k, dist, sl.dist())
		}
		if want, ok := m[k]; !ok || want != sl.v {
			t.Fatalf("slot %d (%q) = %v, oracle %v %v", i, k, sl.v, want, ok)
		}
	}
	if full != len(m) {
		t.Fatalf("%d full slots, oracle %d", full, len(m))
	}
	for k, want := range m {
		if got, ok := d.lookup(k); !ok || got != want {
			t.Fatalf("lookup(%q) = %v %v, oracle %v", k, got, ok, want)
		}
	}
}
