package store

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/emqd/emqd/internal/resp"
)

// lpData is the address of a listpack hash's bytes (which buffer it is).
func lpData(h *Hash) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(h.Str)) }

// TestHashInPlaceRewrite: a new value of an existing field, of the same
// encoded size or smaller, is written into the same buffer while no view
// of the listpack was handed out; a bigger one, or any change after a Get,
// Range, At or Snapshot, builds a new buffer, whose bit is clear again.
func TestHashInPlaceRewrite(t *testing.T) {
	h := NewHash()
	h.Set("f", []byte("somevalue"))
	h.Set("n", []byte("10"))
	h.Set("z", []byte("tail"))
	for _, c := range []struct {
		field, value string
		inPlace      bool
	}{
		{"n", "11", true},            // same size
		{"f", "othervalu", true},     // same size, a longer element
		{"f", "short", true},         // smaller: the tail moves left
		{"n", "0", true},             // a word (one byte)
		{"n", "123456789012", false}, // bigger: a new buffer
		{"n", "123456789013", true},  // that one is fresh
	} {
		before := lpData(h)
		h.SetArg([]byte(c.field), []byte(c.value))
		if v, _ := h.peek(c.field); string(v) != c.value {
			t.Fatalf("%s = %q after setting %q", c.field, v, c.value)
		}
		if got := lpData(h) == before; got != c.inPlace {
			t.Fatalf("%s=%q: in place %v, want %v", c.field, c.value, got, c.inPlace)
		}
	}
	if v, _ := h.peek("z"); string(v) != "tail" {
		t.Fatalf("z = %q after the rewrites, want tail", v)
	}
	if h.Len() != 3 {
		t.Fatalf("Len = %d, want 3", h.Len())
	}
	for _, view := range []struct {
		name string
		take func()
	}{
		{"Get", func() { h.Get("f") }},
		{"Range", func() { h.Range(func(string, []byte) bool { return true }) }},
		{"At", func() { h.At(0) }},
		{"Snapshot", func() { h.Snapshot() }},
	} {
		cur, _ := h.peek("n")
		h.SetArg([]byte("n"), append([]byte("1"), cur...)) // one byte longer: a new buffer
		next := []byte("1" + string(cur))
		if lpViewed(h.Str) {
			t.Fatalf("%s: a buffer just copied is marked viewed", view.name)
		}
		view.take()
		if !lpViewed(h.Str) {
			t.Fatalf("%s did not mark the listpack viewed", view.name)
		}
		before := lpData(h)
		next[0] = '2'
		h.SetArg([]byte("n"), next)
		if lpData(h) == before {
			t.Fatalf("after %s a same-size value was written in place", view.name)
		}
		before = lpData(h)
		next[0] = '3'
		h.SetArg([]byte("n"), next)
		if lpData(h) != before {
			t.Fatalf("after %s and one copy, the next same-size value was not in place", view.name)
		}
	}
}

// TestHashInPlaceKeepsViews: random writes (HSET of new and existing
// fields, HINCRBY, HDEL) interleaved with views taken through Get, Range,
// At and Snapshot: every view keeps the bytes it had when taken, and the
// hash always equals a plain map.
func TestHashInPlaceKeepsViews(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 1))
	s := New(1)
	type view struct {
		got  []byte
		want string
	}
	var views []view
	keep := func(v []byte) { views = append(views, view{v, string(v)}) }
	var snaps []HashSnapshot
	var snapWant [][]string
	model := map[string]string{}
	values := []string{"", "0", "1", "7", "12", "99", "123", "state", "pending", "abc", "somevalue"}
	long := "x" + string(make([]byte, 70)) // over hash-max-listpack-value: the hashtable encoding
	inPlace := 0                           // writes that kept the listpack's buffer
	for step := range 4000 {
		f := "f" + strconv.Itoa(rng.IntN(6))
		var before unsafe.Pointer // the buffer before an HSET or HINCRBY of an existing field
		if v := s.DB(0).Lookup("h"); v != nil && !v.Hash().Big() {
			if _, ok := model[f]; ok {
				before = lpData(v.Hash())
			}
		}
		switch op := rng.IntN(10); {
		case op < 3:
			v := values[rng.IntN(len(values))]
			if rng.IntN(300) == 0 {
				v = long
			}
			run(t, s, 2, "HSET", "h", f, v)
			model[f] = v
		case op < 6:
			if cur, ok := model[f]; ok {
				if _, err := strconv.ParseInt(cur, 10, 64); err != nil || cur == "" {
					continue
				}
			}
			d := rng.IntN(19) - 9
			run(t, s, 2, "HINCRBY", "h", f, strconv.Itoa(d))
			cur, _ := strconv.ParseInt(model[f], 10, 64)
			model[f] = strconv.FormatInt(cur+int64(d), 10)
		case op < 7:
			before = nil
			run(t, s, 2, "HDEL", "h", f)
			delete(model, f)
		default:
			before = nil
			v := s.DB(0).Lookup("h")
			if v == nil {
				continue
			}
			h := v.Hash()
			switch rng.IntN(4) {
			case 0:
				if b, ok := h.Get(f); ok {
					keep(b)
				}
			case 1:
				h.Range(func(_ string, b []byte) bool { keep(b); return true })
			case 2:
				_, b := h.At(rng.IntN(h.Len()))
				keep(b)
			case 3:
				snaps = append(snaps, h.Snapshot())
				var pairs []string
				h.Range(func(f string, b []byte) bool { pairs = append(pairs, f, string(b)); return true })
				snapWant = append(snapWant, pairs)
			}
		}
		for i, v := range views {
			if string(v.got) != v.want {
				t.Fatalf("step %d: view %d changed from %q to %q", step, i, v.want, v.got)
			}
		}
		for i, sn := range snaps {
			var pairs []string
			sn.Range(func(f string, b []byte) bool { pairs = append(pairs, f, string(b)); return true })
			if !equalStrings(pairs, snapWant[i]) {
				t.Fatalf("step %d: snapshot %d changed from %q to %q", step, i, snapWant[i], pairs)
			}
		}
		v := s.DB(0).Lookup("h")
		if v != nil && !v.Hash().Big() && before != nil && lpData(v.Hash()) == before {
			inPlace++
		}
		if v == nil {
			if len(model) != 0 {
				t.Fatalf("step %d: hash gone, model %v", step, model)
			}
			continue
		}
		if v.Hash().Len() != len(model) {
			t.Fatalf("step %d: Len %d, model %d", step, v.Hash().Len(), len(model))
		}
		for f, want := range model {
			if got, ok := v.Hash().peek(f); !ok || string(got) != want {
				t.Fatalf("step %d: %s = %q %v, want %q", step, f, got, ok, want)
			}
		}
	}
	if len(views) < 100 || len(snaps) < 50 || inPlace < 100 {
		t.Fatalf("too few views taken (%d, %d snapshots) or writes in place (%d): the test checked little", len(views), len(snaps), inPlace)
	}
	if err := checkStoreInvariants(s); err != nil {
		t.Fatal(err)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// benchHashCmd runs one hash command through its handler b.N times on a
// hash shaped as redis-benchmark's bench:h (f somevalue, n a counter);
// next may change argv between calls.
func benchHashCmd(b *testing.B, next func(i int, argv [][]byte), args ...string) {
	s := New(1)
	run(b, s, 2, "HSET", "bench:h", "f", "somevalue", "n", "1000000")
	argv := make([][]byte, len(args))
	for i, a := range args {
		argv[i] = []byte(a)
	}
	cs := harnessTable()[strings.ToLower(args[0])]
	w := &resp.Writer{Proto: 2}
	x := &Ctx{S: s, DB: s.DB(0), W: w, NowMs: harnessNowMs}
	s.SetNow(harnessNowMs)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if next != nil {
			next(i, argv)
		}
		w.Reset()
		x.ResetForCommand(argv)
		cs.Handler(x)
	}
}

// BenchmarkHIncrBy: `HINCRBY bench:h n 1` (redis-benchmark's -t hincrby
// shape), the value rewritten in place (listpack.go).
func BenchmarkHIncrBy(b *testing.B) { benchHashCmd(b, nil, "HINCRBY", "bench:h", "n", "1") }

// BenchmarkHSetSameSize: HSET of an existing field with a new value of the
// same size each time (redis-benchmark's HSET writes the same value, which
// is skipped; this one must write).
func BenchmarkHSetSameSize(b *testing.B) {
	benchHashCmd(b, func(i int, argv [][]byte) { argv[3][0] = 'a' + byte(i%26) }, "HSET", "bench:h", "f", "somevalue")
}

// FuzzHashSetPlanInPlace: a plan's HSET (setPlan) on a listpack row nobody
// holds a view of writes the row in place when every changed value keeps
// its encoded size and the new fields fit in the spare capacity, and
// copies it otherwise; either way the row's bytes are, byte for byte, what
// the copying path (a store with in-place rewrites off) gives, the values
// of the fields the write does not set, viewed before it, are unchanged
// after it, and a row that was viewed (Get) is never written in place.
// The input picks the row (fields from the row's words and others, values
// of every length), the pairs set (existing fields with values of the same
// size or not, new fields), the room left and whether a view was taken.
func FuzzHashSetPlanInPlace(f *testing.F) {
	f.Add([]byte("\x05\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a"), uint16(19), false)
	f.Add([]byte("\x09\x00\x10\x20\x30\x01\x11\x21\x31\x02\x12"), uint16(0), true)
	f.Add([]byte("\x03\xff\xfe\xfd\x81\x82\x83\x84\x85"), uint16(40), false)
	// A smaller value and then one that converts the hash: the conversion
	// comes first (it moved an unmarked view's bytes before).
	f.Add([]byte("10010220077\xff000000000"), uint16(5), true)
	fields := []string{"state", "attempts", "payload", "stalled", "last_error", "finished_at", "lease_epoch", "claimed_at", "f", "other", "lane"}
	values := []string{"", "0", "1", "5", "42", "99", "100", "active", "dead", "pending", "stalled", "1700000000000", "1700000000005", "abcdef", "x"}
	f.Fuzz(func(t *testing.T, in []byte, room uint16, viewed bool) {
		if len(in) == 0 {
			return
		}
		at := 0
		next := func() int {
			if at >= len(in) {
				return 0
			}
			at++
			return int(in[at-1])
		}
		value := func() string {
			b := next()
			if b >= 0xF0 {
				return string(make([]byte, (b-0xF0)*9)) // 0..135 bytes: some convert the hash
			}
			return values[b%len(values)]
		}
		nFields := 1 + next()%8
		build := func(s *Store) *Hash {
			h, _ := s.DB(0).HashForWrite("row")
			at = 1
			for i := 0; i < nFields; i++ {
				h.Set(fields[next()%len(fields)], []byte(value()))
			}
			return h
		}
		sa, sb := New(1), New(1)
		sb.SetListpackInPlace(false)
		ha, hb := build(sa), build(sb)
		if ha.Big() {
			return
		}
		start := at
		// Room beyond the row, as a claim leaves it (plan.Op.Room).
		ha.Str = lpFresh(append(lpAlloc(len(ha.Str)+int(room%64)), ha.Str...))
		if viewed {
			ha.Range(func(string, []byte) bool { return true }) // a holder's view: marked
		}
		at = start
		nPairs := 1 + next()%6
		var fv [][]byte
		seen := map[string]bool{}
		for i := 0; i < nPairs; i++ {
			fld := fields[next()%len(fields)]
			if seen[fld] {
				continue
			}
			seen[fld] = true
			fv = append(fv, []byte(fld), []byte(value()))
		}
		// Views of the fields the write leaves alone, taken before it
		// without marking (as the sweep's read pass takes them).
		type view struct {
			got  []byte
			want string
		}
		var views []view
		ha.RangeForPlan(func(fld string, v []byte) bool {
			if !seen[fld] {
				views = append(views, view{v, string(v)})
			}
			return true
		})
		wasViewed, before, capBefore, lenBefore := lpViewed(ha.Str), lpData(ha), cap(ha.Str), len(ha.Str)
		oldView, orig := ha.Str, append([]byte(nil), ha.Str...)
		ha.setPlan(fv, int(room))
		hb.setPlan(fv, int(room))
		if ha.Big() != hb.Big() {
			t.Fatalf("encodings differ: %v and %v", ha.Big(), hb.Big())
		}
		for _, v := range views {
			if string(v.got) != v.want {
				t.Fatalf("a view of an untouched field changed: %q, was %q", v.got, v.want)
			}
		}
		if ha.Big() {
			return
		}
		if !bytes.Equal(lpBody(ha.Str), lpBody(hb.Str)) || lpCount(ha.Str) != lpCount(hb.Str) {
			t.Fatalf("in place %q, copying %q", ha.Str, hb.Str)
		}
		if lpData(ha) == before && len(ha.Str) > lenBefore && cap(ha.Str) != capBefore {
			t.Fatal("the buffer changed capacity in place")
		}
		if wasViewed && !bytes.Equal(lpBody(oldView), lpBody(orig)) {
			t.Fatalf("a viewed row's bytes changed: %q, were %q", oldView, orig)
		}
	})
}

// lpBody is a listpack's elements (its bytes after the header).
func lpBody(lp []byte) []byte { return lp[lpHeader:] }
