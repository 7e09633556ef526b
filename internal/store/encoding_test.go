package store

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// encodingOf is OBJECT ENCODING key's reply text.
func encodingOf(t *testing.T, s *Store, key string) string {
	t.Helper()
	r := run(t, s, 2, "OBJECT", "ENCODING", key)
	n, rest := parseRESP(t, r)
	if rest != "" || n.typ != '$' {
		t.Fatalf("OBJECT ENCODING %s = %q", key, r)
	}
	return n.text
}

// hashReplies are the full replies that show a hash's content and order.
func hashReplies(t *testing.T, s *Store, key string) []string {
	return []string{
		run(t, s, 2, "HGETALL", key),
		run(t, s, 3, "HGETALL", key),
		run(t, s, 2, "HSCAN", key, "0"),
		run(t, s, 2, "HSCAN", key, "0", "COUNT", "1000", "NOVALUES"),
		run(t, s, 2, "HLEN", key),
	}
}

// zsetReplies are the full replies that show a sorted set's content.
func zsetReplies(t *testing.T, s *Store, key string) []string {
	return []string{
		run(t, s, 2, "ZRANGE", key, "0", "-1", "WITHSCORES"),
		run(t, s, 3, "ZRANGE", key, "0", "-1", "WITHSCORES"),
		run(t, s, 2, "ZRANGE", key, "+inf", "-inf", "BYSCORE", "REV", "WITHSCORES"),
		run(t, s, 2, "ZSCAN", key, "0"),
		run(t, s, 2, "ZSCAN", key, "0", "COUNT", "1000", "NOSCORES"),
		run(t, s, 2, "ZCARD", key),
	}
}

// expectedHash is what HGETALL answers for pairs in insertion order.
func expectedHGetAll(pairs [][2]string) string {
	var items []string
	for _, p := range pairs {
		items = append(items, p[0], p[1])
	}
	return bulks(items...)
}

// Each threshold of hash-max-listpack-entries and hash-max-listpack-value
// (512 and 64 bytes, Valkey 8.0.1's defaults): the write that reaches it
// keeps the listpack, the one that crosses it converts the hash, and the
// replies before and after are those of the same content in insertion
// order. Lengths are bytes: "é" is two.
func TestHashEncodingThresholds(t *testing.T) {
	type step struct {
		args []string // an HSET (or HINCRBY, HSETNX) adding or changing one pair
		pair [2]string
		enc  string // OBJECT ENCODING after it
	}
	long := func(n int) string { return strings.Repeat("x", n) }
	multi := func(n int) string { return strings.Repeat("é", n) } // 2n bytes
	var fill []step
	for i := 0; i < 512; i++ {
		f := "f" + strconv.Itoa(i)
		fill = append(fill, step{[]string{"HSET", "h", f, "v"}, [2]string{f, "v"}, "listpack"})
	}
	cases := []struct {
		name  string
		setup []step
		cross step
	}{
		{"512 fields, then the 513th", fill,
			step{[]string{"HSET", "h", "f512", "v"}, [2]string{"f512", "v"}, "hashtable"}},
		{"a 64-byte value, then a 65-byte one",
			[]step{{[]string{"HSET", "h", "a", long(64)}, [2]string{"a", long(64)}, "listpack"}},
			step{[]string{"HSET", "h", "b", long(65)}, [2]string{"b", long(65)}, "hashtable"}},
		{"a 64-byte field, then a 65-byte one",
			[]step{{[]string{"HSET", "h", long(64), "v"}, [2]string{long(64), "v"}, "listpack"}},
			step{[]string{"HSET", "h", long(65), "v"}, [2]string{long(65), "v"}, "hashtable"}},
		{"a value grown past 64 bytes in place",
			[]step{{[]string{"HSET", "h", "a", "1"}, [2]string{"a", "1"}, "listpack"}, {[]string{"HSET", "h", "b", "2"}, [2]string{"b", "2"}, "listpack"}},
			step{[]string{"HSET", "h", "a", long(65)}, [2]string{"a", long(65)}, "hashtable"}},
		{"multi-byte: 32 two-byte characters, then 33",
			[]step{{[]string{"HSET", "h", multi(32), multi(32)}, [2]string{multi(32), multi(32)}, "listpack"}},
			step{[]string{"HSET", "h", "k", multi(33)}, [2]string{"k", multi(33)}, "hashtable"}},
		{"HSETNX of a long value on an existing field (converted, nothing written)",
			[]step{{[]string{"HSET", "h", "a", "1"}, [2]string{"a", "1"}, "listpack"}},
			step{[]string{"HSETNX", "h", "a", long(65)}, [2]string{"a", "1"}, "hashtable"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := New(16)
			var pairs [][2]string
			put := func(st step) {
				run(t, s, 2, st.args...)
				found := false
				for i := range pairs {
					if pairs[i][0] == st.pair[0] {
						pairs[i][1], found = st.pair[1], true
					}
				}
				if !found {
					pairs = append(pairs, st.pair)
				}
				if got := encodingOf(t, s, "h"); got != st.enc {
					t.Fatalf("after %.40q: encoding %s, want %s", st.args, got, st.enc)
				}
			}
			for _, st := range c.setup {
				put(st)
			}
			before := hashReplies(t, s, "h")
			if before[0] != expectedHGetAll(pairs) {
				t.Fatalf("listpack HGETALL %.200q", before[0])
			}
			put(c.cross)
			after := hashReplies(t, s, "h")
			if after[0] != expectedHGetAll(pairs) {
				t.Fatalf("hashtable HGETALL %.200q", after[0])
			}
			// The same content built straight into the big encoding
			// answers the same bytes.
			ref := New(16)
			ref.SetLimits(Limits{})
			for _, p := range pairs {
				run(t, ref, 2, "HSET", "h", p[0], p[1])
			}
			for i, r := range hashReplies(t, ref, "h") {
				if r != after[i] {
					t.Fatalf("reply %d differs from the hashtable-built hash:\n%.200q\n%.200q", i, after[i], r)
				}
			}
			// Deleting back below the limits does not convert back.
			run(t, s, 2, "HSET", "h", "extra", "1")
			run(t, s, 2, "HDEL", "h", pairs[len(pairs)-1][0])
			if got := encodingOf(t, s, "h"); got != "hashtable" {
				t.Fatalf("after HDEL: %s", got)
			}
		})
	}
}

// HSET of more pairs than the entries limit converts whatever they add
// (hashTypeTryConversion), and CONFIG SET of the limits applies to the
// next write of a listpack hash, never converting a hashtable back.
func TestHashEncodingBulkAndConfig(t *testing.T) {
	s := New(16)
	s.SetLimits(Limits{HashEntries: 2, HashValue: 64, ZSetEntries: 128, ZSetValue: 64})
	run(t, s, 2, "HSET", "h", "a", "1", "a", "2", "a", "3")
	if got := encodingOf(t, s, "h"); got != "hashtable" {
		t.Fatalf("3 pairs over a limit of 2 (one field): %s", got)
	}
	if got := run(t, s, 2, "HGETALL", "h"); got != bulks("a", "3") {
		t.Fatalf("HGETALL %q", got)
	}
	run(t, s, 2, "HSET", "small", "a", "1", "b", "2")
	if got := encodingOf(t, s, "small"); got != "listpack" {
		t.Fatalf("2 fields: %s", got)
	}
	s.SetLimits(Limits{HashEntries: 1, HashValue: 64, ZSetEntries: 128, ZSetValue: 64})
	if got := encodingOf(t, s, "small"); got != "listpack" {
		t.Fatalf("a CONFIG SET alone converted: %s", got)
	}
	run(t, s, 2, "HSET", "small", "a", "1") // an update, no new field
	if got := encodingOf(t, s, "small"); got != "hashtable" {
		t.Fatalf("the next write under the lower limit: %s", got)
	}
	s.SetLimits(DefaultLimits)
	run(t, s, 2, "HSET", "small", "c", "3")
	if got := encodingOf(t, s, "small"); got != "hashtable" {
		t.Fatalf("converted back: %s", got)
	}
	if got := run(t, s, 2, "HGETALL", "small"); got != bulks("a", "1", "b", "2", "c", "3") {
		t.Fatalf("HGETALL %q", got)
	}
}

// The sorted-set thresholds (zset-max-listpack-entries 128,
// zset-max-listpack-value 64 bytes), crossed by one member each, with the
// full replies before and after.
func TestZSetEncodingThresholds(t *testing.T) {
	long := func(n int) string { return strings.Repeat("m", n) }
	multi := func(n int) string { return strings.Repeat("é", n) }
	type member struct {
		m     string
		score string
	}
	var fill []member
	for i := 0; i < 128; i++ {
		fill = append(fill, member{"m" + strconv.Itoa(i), strconv.Itoa(i % 7)})
	}
	cases := []struct {
		name  string
		setup []member
		cross member
	}{
		{"128 members, then the 129th", fill, member{"new", "3"}},
		{"a 64-byte member, then a 65-byte one", []member{{long(64), "1"}}, member{long(65), "0"}},
		{"multi-byte: 32 two-byte characters, then 33", []member{{multi(32), "2"}, {"a", "-1"}}, member{multi(33), "1.5"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := New(16)
			for _, m := range c.setup {
				run(t, s, 2, "ZADD", "z", m.score, m.m)
			}
			if got := encodingOf(t, s, "z"); got != "listpack" {
				t.Fatalf("before: %s", got)
			}
			before := zsetReplies(t, s, "z")
			ref := New(16)
			ref.SetLimits(Limits{})
			for _, m := range c.setup {
				run(t, ref, 2, "ZADD", "z", m.score, m.m)
			}
			if got := encodingOf(t, ref, "z"); got != "skiplist" {
				t.Fatalf("reference: %s", got)
			}
			for i, r := range zsetReplies(t, ref, "z") {
				if r != before[i] {
					t.Fatalf("listpack reply %d differs from the skiplist-built set:\n%.200q\n%.200q", i, before[i], r)
				}
			}
			run(t, s, 2, "ZADD", "z", c.cross.score, c.cross.m)
			run(t, ref, 2, "ZADD", "z", c.cross.score, c.cross.m)
			if got := encodingOf(t, s, "z"); got != "skiplist" {
				t.Fatalf("after: %s", got)
			}
			after, want := zsetReplies(t, s, "z"), zsetReplies(t, ref, "z")
			for i := range after {
				if after[i] != want[i] {
					t.Fatalf("reply %d after the conversion:\n%.200q\n%.200q", i, after[i], want[i])
				}
			}
			if after[5] != integer(int64(len(c.setup)+1)) {
				t.Fatalf("ZCARD %q", after[5])
			}
			run(t, s, 2, "ZREM", "z", c.cross.m)
			if got := encodingOf(t, s, "z"); got != "skiplist" {
				t.Fatalf("after ZREM: %s", got)
			}
		})
	}
	// ZADD of more pairs than the limit converts even when they name one
	// member; so does one long member among short ones.
	s := New(16)
	s.SetLimits(Limits{HashEntries: 512, HashValue: 64, ZSetEntries: 2, ZSetValue: 64})
	run(t, s, 2, "ZADD", "z", "1", "a", "2", "a", "3", "a")
	if got := encodingOf(t, s, "z"); got != "skiplist" {
		t.Fatalf("3 pairs over a limit of 2: %s", got)
	}
	if got := run(t, s, 2, "ZRANGE", "z", "0", "-1", "WITHSCORES"); got != bulks("a", "3") {
		t.Fatalf("ZRANGE %q", got)
	}
}

// A random sequence of hash and sorted-set commands answers the same bytes
// whatever the encoding thresholds: 0 (every hash and set big from its
// first write), Valkey's defaults, tiny limits crossed all the time, and
// limits so high that everything stays a listpack. OBJECT ENCODING is the
// only command left out.
func TestEncodingIndependentReplies(t *testing.T) {
	limits := []Limits{
		{},
		DefaultLimits,
		{HashEntries: 3, HashValue: 4, ZSetEntries: 3, ZSetValue: 4},
		{HashEntries: 1 << 20, HashValue: 1 << 20, ZSetEntries: 1 << 20, ZSetValue: 1 << 20},
	}
	for seed := uint64(1); seed <= 4; seed++ {
		r := rand.New(rand.NewPCG(seed, 99))
		stores := make([]*Store, len(limits))
		for i, l := range limits {
			stores[i] = New(16)
			stores[i].SetLimits(l)
		}
		member := func() string {
			switch r.IntN(6) {
			case 0:
				return strings.Repeat("é", r.IntN(4))
			case 1:
				return "state" // a listpack word
			}
			return "m" + strconv.Itoa(r.IntN(30))
		}
		value := func() string {
			switch r.IntN(5) {
			case 0:
				return strconv.Itoa(r.IntN(100) - 50)
			case 1:
				return strings.Repeat("v", r.IntN(200))
			case 2:
				return "pending"
			}
			return "v" + strconv.Itoa(r.IntN(10))
		}
		score := func() string {
			return []string{"0", "-0", "1", "2.5", "-3", "inf", "-inf", strconv.Itoa(r.IntN(10))}[r.IntN(8)]
		}
		key := func() string { return []string{"h1", "h2", "z1", "z2"}[r.IntN(4)] }
		for step := 0; step < 3000; step++ {
			var args []string
			k := key()
			if k[0] == 'h' {
				switch r.IntN(10) {
				case 0, 1, 2:
					args = []string{"HSET", k}
					for n := 1 + r.IntN(4); n > 0; n-- {
						args = append(args, member(), value())
					}
				case 3:
					args = []string{"HDEL", k, member(), member()}
				case 4:
					args = []string{"HINCRBY", k, member(), strconv.Itoa(r.IntN(7) - 3)}
				case 5:
					args = []string{"HSETNX", k, member(), value()}
				case 6:
					args = []string{"HGETALL", k}
				case 7:
					args = []string{"HSCAN", k, "0", "COUNT", "2"}
				case 8:
					args = []string{"HGET", k, member()}
				default:
					args = []string{"HMGET", k, member(), member()}
				}
			} else {
				switch r.IntN(14) {
				case 0, 1, 2:
					args = []string{"ZADD", k}
					if r.IntN(4) == 0 {
						args = append(args, []string{"NX", "XX", "GT", "LT", "CH"}[r.IntN(5)])
					}
					for n := 1 + r.IntN(3); n > 0; n-- {
						args = append(args, score(), member())
					}
				case 3:
					args = []string{"ZREM", k, member()}
				case 4:
					args = []string{"ZINCRBY", k, score(), member()}
				case 5:
					args = []string{"ZRANGE", k, "0", "-1", "WITHSCORES"}
				case 6:
					args = []string{"ZRANGE", k, "(1", "+inf", "BYSCORE", "LIMIT", "1", "3"}
				case 7:
					args = []string{"ZREVRANGE", k, "0", strconv.Itoa(r.IntN(5)), "WITHSCORES"}
				case 8:
					args = []string{[]string{"ZPOPMIN", "ZPOPMAX"}[r.IntN(2)], k, strconv.Itoa(r.IntN(3))}
				case 9:
					args = []string{"ZRANK", k, member(), "WITHSCORE"}
				case 10:
					args = []string{"ZSCAN", k, "0", "COUNT", "2"}
				case 11:
					args = []string{"ZREMRANGEBYRANK", k, strconv.Itoa(r.IntN(3)), strconv.Itoa(r.IntN(3))}
				case 12:
					args = []string{"ZCOUNT", k, "-inf", score()}
				default:
					args = []string{"ZRANGEBYLEX", k, "-", "+"}
				}
			}
			want := run(t, stores[0], 2, args...)
			for i := 1; i < len(stores); i++ {
				if got := run(t, stores[i], 2, args...); got != want {
					t.Fatalf("seed %d step %d %.80q: limits %+v answer %.200q, big encodings %.200q",
						seed, step, args, limits[i], got, want)
				}
			}
		}
		for i, st := range stores {
			if err := checkStoreInvariants(st); err != nil {
				t.Fatalf("seed %d limits %+v: %v", seed, limits[i], err)
			}
			if dump(st) != dump(stores[0]) {
				t.Fatalf("seed %d limits %+v: keyspace differs", seed, limits[i])
			}
		}
	}
}

// A job row takes the listpack's one-byte words for its field names and
// states, and reads back the same bytes.
func TestListpackWords(t *testing.T) {
	s := New(16)
	var args []string
	for _, w := range lpWords {
		args = append(args, w, w)
	}
	run(t, s, 2, append([]string{"HSET", "row"}, args...)...)
	h := s.DB(0).Get("row").Hash()
	if h.Big() || len(h.Str) != lpHeader+2*len(lpWords) {
		t.Fatalf("%d words in %d bytes (big %v)", len(lpWords), len(h.Str), h.Big())
	}
	if got := run(t, s, 2, "HGETALL", "row"); got != bulks(args...) {
		t.Fatalf("HGETALL %q", got)
	}
	for _, w := range lpWords {
		if got := run(t, s, 2, "HGET", "row", w); got != bulk(w) {
			t.Fatalf("HGET %s = %q", w, got)
		}
	}
	// A word-length prefix or a longer string is not a word.
	run(t, s, 2, "HSET", "row", "stat", "states", "0", "00")
	if got := run(t, s, 2, "HMGET", "row", "stat", "0"); got != fmt.Sprint(bulks("states", "00")) {
		t.Fatalf("HMGET %q", got)
	}
}

// A pending job's row (docs/verbs.md §1.3: state pending, attempts 0, a
// 64-byte payload, enqueued_at in Unix ms) is one listpack of 89 bytes,
// inside the 96-byte size class: enqueued_at spelled out (12 bytes, not
// one word code) made it 100 bytes, the 112-byte class, 16 bytes more per
// pending job (BenchmarkPendingJobMemory, bench/README.md).
func TestPendingRowListpackSize(t *testing.T) {
	h := NewHash()
	fv := [][]byte{[]byte("state"), []byte("pending"), []byte("attempts"), []byte("0"),
		[]byte("payload"), bytes.Repeat([]byte("x"), 64), []byte("enqueued_at"), []byte("1764600000000")}
	h.Reserve(fv)
	h.setPlan(fv, 0)
	if n := len(h.Str); n != 89 {
		t.Fatalf("pending row listpack is %d bytes, want 89", n)
	}
	if c := cap(h.Str); c > 96 {
		t.Fatalf("pending row listpack holds %d bytes of capacity, want at most 96", c)
	}
	for i := 0; i < len(fv); i += 2 {
		if v, ok := h.Get(string(fv[i])); !ok || string(v) != string(fv[i+1]) {
			t.Fatalf("field %s: %q %v", fv[i], v, ok)
		}
	}
	for _, w := range []string{"enqueued_at", "claimed_at", "finished_at"} {
		if lpStrLen(w) != 1 {
			t.Fatalf("%s is not a one-byte word", w)
		}
	}
}
