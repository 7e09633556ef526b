package store

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"unsafe"

	"github.com/emqd/emqd/internal/resp"
)

// zlpEnd is the end of a listpack set's allocation: it stays put while the
// set is edited in place (a front removal moves the slice's start, not its
// end), and moves when the listpack is copied.
func zlpEnd(z *ZSet) uintptr {
	return uintptr(unsafe.Pointer(unsafe.SliceData(z.lp))) + uintptr(cap(z.lp))
}

// zsetModel is a sorted set as a sorted slice (the reference the in-place
// edits are checked against).
type zsetModel []ZItem

func (m *zsetModel) add(member string, score float64) {
	m.rem(member)
	i, _ := slices.BinarySearchFunc(*m, ZItem{score, member}, zcmp)
	*m = slices.Insert(*m, i, ZItem{score, member})
}

func (m *zsetModel) rem(member string) bool {
	for i, it := range *m {
		if it.Member == member {
			*m = slices.Delete(*m, i, i+1)
			return true
		}
	}
	return false
}

func zcmp(a, b ZItem) int {
	switch {
	case zless(a, b):
		return -1
	case zless(b, a):
		return 1
	}
	return 0
}

// zsetItems lists z ascending.
func zsetItems(z *ZSet) []ZItem {
	var out []ZItem
	z.AscendAll(func(it ZItem) bool { out = append(out, it); return true })
	return out
}

// TestZSetInPlaceEdits: while no view is outstanding, removals (from the
// front, the middle, the end) and inserts that fit the capacity keep the
// listpack's buffer; after a Snapshot, or during a walk, the first write
// copies, and the copy is fresh (in place again).
func TestZSetInPlaceEdits(t *testing.T) {
	z := NewZSet()
	for i := range 20 {
		z.Add("m"+strconv.Itoa(i), float64(i))
	}
	z.lp = lpFresh(append(lpAlloc(len(z.lp)+64), z.lp...)) // room for the inserts below
	check := func(what string, inPlace bool, want []string) {
		t.Helper()
		var got []string
		for _, it := range zsetItems(z) {
			got = append(got, it.Member)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: members %q, want %q", what, got, want)
		}
		if lpCount(z.lp) != len(want) {
			t.Fatalf("%s: count %d, want %d", what, lpCount(z.lp), len(want))
		}
	}
	names := func(lo, hi int) []string {
		var out []string
		for i := lo; i < hi; i++ {
			out = append(out, "m"+strconv.Itoa(i))
		}
		return out
	}
	end := zlpEnd(z)
	for _, c := range []struct {
		what string
		do   func()
		want []string
	}{
		{"PopMin", func() { z.PopMin() }, names(1, 20)},
		{"Rem of the head", func() { z.Rem("m1") }, names(2, 20)},
		{"Rem of the middle", func() { z.Rem("m10") }, append(names(2, 10), names(11, 20)...)},
		{"PopMax", func() { z.PopMax() }, append(names(2, 10), names(11, 19)...)},
		{"Add in the middle", func() { z.Add("m10", 10) }, names(2, 19)},
		{"Add at the front", func() { z.Add("m0", 0) }, append([]string{"m0"}, names(2, 19)...)},
		{"Add of a new score", func() { z.Add("m0", 100) }, append(names(2, 19), "m0")},
		{"DeleteRankRange", func() { z.DeleteRankRange(0, 3) }, append(names(5, 19), "m0")},
	} {
		c.do()
		check(c.what, true, c.want)
		if zlpEnd(z) != end {
			t.Fatalf("%s: the listpack was copied with no view outstanding", c.what)
		}
	}

	// A snapshot shares the bytes and marks them: the next write copies,
	// the snapshot keeps what it saw, and the copy is written in place.
	snap := z.Snapshot()
	if !lpViewed(z.lp) {
		t.Fatal("Snapshot did not mark the listpack viewed")
	}
	var before []ZItem
	snap.AscendAll(func(it ZItem) bool { before = append(before, ZItem{it.Score, string([]byte(it.Member))}); return true })
	z.PopMin()
	if zlpEnd(z) == end {
		t.Fatal("after a Snapshot the front removal wrote the shared bytes")
	}
	if lpViewed(z.lp) {
		t.Fatal("the copy after a Snapshot is marked viewed")
	}
	var after []ZItem
	snap.AscendAll(func(it ZItem) bool { after = append(after, it); return true })
	if !slices.Equal(before, after) || len(after) != 15 {
		t.Fatalf("the snapshot changed: %v, then %v", before, after)
	}
	end = zlpEnd(z)
	z.PopMin()
	if zlpEnd(z) != end {
		t.Fatal("the copy made after a Snapshot was not edited in place")
	}

	// A walk whose callback writes the set sees the set as it was.
	var walked []string
	want := zsetItems(z)
	z.AscendAll(func(it ZItem) bool {
		walked = append(walked, it.Member)
		z.Rem(it.Member)
		z.Add(it.Member+"x", it.Score+0.5)
		return true
	})
	if len(walked) != len(want) {
		t.Fatalf("the walk saw %q, want %d members", walked, len(want))
	}
	for i, it := range want {
		if walked[i] != it.Member {
			t.Fatalf("the walk saw %q, want %v", walked, want)
		}
	}
	var desc []string
	z.DescendAll(func(it ZItem) bool {
		desc = append(desc, it.Member)
		z.PopMax()
		return true
	})
	if len(desc) != len(want) || z.Len() != 0 {
		t.Fatalf("the descending walk saw %q (%d left), want %d members", desc, z.Len(), len(want))
	}
	if z.walks != 0 {
		t.Fatalf("walks = %d after the walks", z.walks)
	}
}

// TestZSetInPlaceKeepsViews: random writes through the commands (ZADD of
// new and existing members, ZINCRBY, ZREM, ZPOPMIN, ZPOPMAX,
// ZREMRANGEBYRANK) interleaved with snapshots (BGSAVE's and the AOF
// rewrite's capture, DUMP) and AtView reads: every snapshot keeps the
// members and scores it had when taken, an AtView agrees with the set when
// read, and the set always equals the model; many writes are in place.
func TestZSetInPlaceKeepsViews(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 6))
	s := New(1)
	var model zsetModel
	var snaps []*ZSetSnapshot
	var snapWant [][]ZItem
	inPlace, copied := 0, 0
	for step := range 6000 {
		m := "m" + strconv.Itoa(rng.IntN(40))
		sc := float64(rng.IntN(30))
		var end uintptr
		if v := s.DB(0).Lookup("z"); v != nil && !v.ZSet.Big() {
			end = zlpEnd(v.ZSet)
		}
		wrote := true
		switch op := rng.IntN(12); {
		case op < 3:
			run(t, s, 2, "ZADD", "z", strconv.FormatFloat(sc, 'f', -1, 64), m)
			model.add(m, sc)
		case op < 4:
			old := 0.0
			for _, it := range model {
				if it.Member == m {
					old = it.Score
				}
			}
			run(t, s, 2, "ZINCRBY", "z", "2", m)
			model.add(m, old+2)
		case op < 6:
			run(t, s, 2, "ZREM", "z", m)
			model.rem(m)
		case op < 7:
			run(t, s, 2, "ZPOPMIN", "z")
			if len(model) > 0 {
				model = model[1:]
			}
		case op < 8:
			run(t, s, 2, "ZPOPMAX", "z")
			if len(model) > 0 {
				model = model[:len(model)-1]
			}
		case op < 9:
			lo, hi := rng.IntN(4), rng.IntN(4)+1
			run(t, s, 2, "ZREMRANGEBYRANK", "z", strconv.Itoa(lo), strconv.Itoa(lo+hi-1))
			if lo < len(model) {
				model = slices.Delete(model, lo, min(lo+hi, len(model)))
			}
		default:
			wrote = false
			v := s.DB(0).Lookup("z")
			if v == nil {
				continue
			}
			switch rng.IntN(3) {
			case 0, 1:
				snaps = append(snaps, v.ZSet.Snapshot())
				snapWant = append(snapWant, slices.Clone(model))
			case 2:
				i := rng.IntN(v.ZSet.Len())
				mb, sc, ok := v.ZSet.AtView(i)
				if !ok || string(mb) != model[i].Member || sc != model[i].Score {
					t.Fatalf("step %d: AtView(%d) = %q %v %v, want %v", step, i, mb, sc, ok, model[i])
				}
			}
		}
		for i, sn := range snaps {
			var got []ZItem
			sn.AscendAll(func(it ZItem) bool { got = append(got, it); return true })
			if !slices.Equal(got, snapWant[i]) {
				t.Fatalf("step %d: snapshot %d changed from %v to %v", step, i, snapWant[i], got)
			}
		}
		v := s.DB(0).Lookup("z")
		if v == nil {
			if len(model) != 0 {
				t.Fatalf("step %d: set gone, model %v", step, model)
			}
			continue
		}
		if got := zsetItems(v.ZSet); !slices.Equal(got, []ZItem(model)) {
			t.Fatalf("step %d: set %v, model %v", step, got, model)
		}
		if wrote && end != 0 && !v.ZSet.Big() {
			if zlpEnd(v.ZSet) == end {
				inPlace++
			} else {
				copied++
			}
		}
		if len(snaps) > 40 {
			snaps, snapWant = snaps[20:], snapWant[20:]
		}
	}
	if inPlace < 2000 || copied < 100 { // the copying path alone keeps about 1,000 (appends at the end)
		t.Fatalf("writes in place %d, copied %d: the test checked little", inPlace, copied)
	}
	if err := checkStoreInvariants(s); err != nil {
		t.Fatal(err)
	}
}

// TestZSetFrontRemovalAllocs guards the in-place front removal: ZREM of
// the head of a small set allocates nothing; a queue's steady state (ZREM
// of the head, ZADD at the tail) allocates nothing per job on average (the
// tail's occasional growth is amortised); ZPOPMIN allocates only the
// member's string (each was a copy of the whole listpack more).
func TestZSetFrontRemovalAllocs(t *testing.T) {
	z := NewZSet()
	heads := make([]string, 128)
	for i := range heads {
		heads[i] = "JOB" + strconv.Itoa(1000000+i)
		z.Add(heads[i], 1)
	}
	i := 0
	if n := testing.AllocsPerRun(100, func() {
		z.Rem(heads[i])
		i++
	}); n != 0 {
		t.Fatalf("Rem of the head: %v allocations, want 0", n)
	}
	if z.Len() != 128-101 {
		t.Fatalf("Len %d after 101 removals of 128", z.Len())
	}
	names := make([][]byte, 4000)
	for i := range names {
		names[i] = []byte("JOB" + strconv.Itoa(2000000+i))
	}
	z = NewZSet()
	for i := range 100 {
		z.AddBytes(names[i], 1)
	}
	head, tail := 0, 100
	if n := testing.AllocsPerRun(3000, func() {
		z.RemBytes(names[head])
		z.AddBytes(names[tail], 1)
		head++
		tail++
	}); n != 0 {
		t.Fatalf("queue steady state: %v allocations per job, want 0", n)
	}
	if z.Len() != 100 || z.Big() {
		t.Fatalf("Len %d Big %v after the steady state", z.Len(), z.Big())
	}

	s := New(1)
	for i := range 120 {
		run(t, s, 2, "ZADD", "q", "1", "JOB"+strconv.Itoa(3000000+i))
	}
	cs := harnessTable()["zpopmin"]
	argv := [][]byte{[]byte("ZPOPMIN"), []byte("q")}
	w := &resp.Writer{Proto: 2}
	x := &Ctx{S: s, DB: s.DB(0), W: w, NowMs: harnessNowMs}
	s.SetNow(harnessNowMs)
	if n := testing.AllocsPerRun(100, func() {
		w.Reset()
		x.ResetForCommand(argv)
		cs.Handler(x)
	}); n > 1 {
		t.Fatalf("ZPOPMIN: %v allocations, want 1 (the member's string)", n)
	}
	if !bytes.Contains(w.Buf, []byte("JOB3000100")) {
		t.Fatalf("the last ZPOPMIN answered %q, want JOB3000100", w.Buf)
	}
}

// zsetFuzzOps applies the ops in data to a and b alike (one byte an op,
// one a member, one a score) and checks after each that both listpacks
// are the same bytes and equal the model. b is held in the copying path
// (a walk under way for good), a edits in place.
func zsetFuzzOps(t *testing.T, data []byte) {
	if len(data) > 3*2000 {
		data = data[:3*2000] // 2,000 ops: longer inputs only slow the fuzzer
	}
	a, b := NewZSet(), NewZSet()
	b.walks = 1
	var model zsetModel
	for len(data) >= 3 {
		op, mi, si := data[0], data[1], data[2]
		data = data[3:]
		m := "m" + strconv.Itoa(int(mi%48))
		if mi&0x40 != 0 {
			m += "-longer-member-name" // another element size
		}
		sc := float64(si % 16)
		switch op % 8 {
		case 0, 1, 2:
			a.Add(m, sc)
			b.AddBytes([]byte(m), sc)
			model.add(m, sc)
		case 3:
			a.Rem(m)
			b.RemBytes([]byte(m))
			model.rem(m)
		case 4:
			x, okA := a.PopMin()
			y, okB := b.PopMin()
			if okA != okB || x != y || okA != (len(model) > 0) || okA && x != model[0] {
				t.Fatalf("PopMin: %v %v and %v %v, model %v", x, okA, y, okB, model)
			}
			if okA {
				model = model[1:]
			}
		case 5:
			x, okA := a.PopMax()
			y, okB := b.PopMax()
			if okA != okB || x != y || okA && x != model[len(model)-1] {
				t.Fatalf("PopMax: %v %v and %v %v, model %v", x, okA, y, okB, model)
			}
			if okA {
				model = model[:len(model)-1]
			}
		case 6:
			lo, n := int(mi%8), int(si%4)
			ra, rb := a.DeleteRankRange(lo, lo+n), b.DeleteRankRange(lo, lo+n)
			if ra != rb {
				t.Fatalf("DeleteRankRange: %d and %d", ra, rb)
			}
			if lo < len(model) {
				model = slices.Delete(model, lo, min(lo+n, len(model)))
			}
		case 7:
			// A snapshot of a: its next write copies, and the snapshot
			// keeps its bytes.
			sn := a.Snapshot()
			want := slices.Clone(model)
			a.Add(m, sc)
			b.AddBytes([]byte(m), sc)
			model.add(m, sc)
			var got []ZItem
			sn.AscendAll(func(it ZItem) bool { got = append(got, it); return true })
			if !slices.Equal(got, []ZItem(want)) {
				t.Fatalf("snapshot %v changed to %v", want, got)
			}
		}
		if a.Big() != b.Big() {
			t.Fatalf("encodings differ: %v and %v", a.Big(), b.Big())
		}
		if !a.Big() {
			if lpCount(a.lp) != lpCount(b.lp) || !bytes.Equal(a.lp[min(len(a.lp), lpHeader):], b.lp[min(len(b.lp), lpHeader):]) {
				t.Fatalf("listpacks differ:\n in place %x\n copied   %x", a.lp, b.lp)
			}
		}
		if got := zsetItems(a); !slices.Equal(got, []ZItem(model)) {
			t.Fatalf("set %v, model %v", got, model)
		}
	}
}

// FuzzZSetInPlace: the in-place edits of a listpack set against the
// copying path, byte for byte, and against a model. The seeds run in every
// `go test`; `go test -run=^$ -fuzz=FuzzZSetInPlace ./internal/store/`
// explores further.
func FuzzZSetInPlace(f *testing.F) {
	rng := rand.New(rand.NewPCG(6, 25))
	for range 16 {
		seed := make([]byte, 3*400)
		for i := range seed {
			seed[i] = byte(rng.Uint32())
		}
		f.Add(seed)
	}
	f.Add([]byte{0, 1, 1, 0, 2, 2, 0, 3, 3, 4, 0, 0, 4, 0, 0, 4, 0, 0})
	f.Fuzz(zsetFuzzOps)
}

// TestZSetSnapshotReadsWithoutTheLock: a snapshot read on another
// goroutine (as BGSAVE encodes one without the store lock) while the set
// is written: appends into the shared buffer's spare capacity and cuts of
// its tail rewrite the count header, which the snapshot must not read
// (run with -race), and the snapshot's members stay as taken.
func TestZSetSnapshotReadsWithoutTheLock(t *testing.T) {
	z := NewZSet()
	for i := range 30 {
		z.Add("m"+strconv.Itoa(100+i), float64(i))
	}
	z.lp = lpFresh(append(lpAlloc(len(z.lp)+4096), z.lp...)) // spare capacity the appends use
	snap := z.Snapshot()
	want := zsetItems(z)
	done := make(chan string)
	go func() {
		for range 200 {
			if snap.Len() != 30 {
				done <- "Len changed"
				return
			}
			var got []ZItem
			snap.AscendAll(func(it ZItem) bool { got = append(got, it); return true })
			if !slices.Equal(got, want) {
				done <- "members changed"
				return
			}
		}
		done <- ""
	}()
	for i := range 200 {
		z.Add("n"+strconv.Itoa(i), float64(1000+i)) // at the end: in the shared buffer's capacity
	}
	for range 100 {
		z.PopMax() // the first cuts the tail of the shared buffer, then a copy's
		z.PopMin()
	}
	if msg := <-done; msg != "" {
		t.Fatal(msg)
	}
}
