package store

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Valkey's unit/type/hash.tcl, case by case (names as in the Tcl file).
// smallhash (8 fields) and bighash (1024 fields) are built as the Tcl
// builds them, from random field names, and the cases that walk them
// compare with the Go copy.
func TestTclHash(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	s := New(16)
	randstring := func(min, max int) string {
		b := make([]byte, min+rng.IntN(max-min+1))
		for i := range b {
			b[i] = byte('a' + rng.IntN(26))
		}
		return string(b)
	}
	build := func(key string, n int) map[string]string {
		h := map[string]string{}
		for len(h) < n {
			k, v := "__avoid_collisions__"+randstring(0, 8), "__avoid_collisions__"+randstring(0, 8)
			if _, ok := h[k]; ok {
				continue
			}
			run(t, s, 2, "HSET", key, k, v)
			h[k] = v
		}
		return h
	}
	tcl := func(name, steps string) { t.Helper(); runTcl(t, s, []tclCase{{name, steps}}) }
	// HSET/HLEN - Small hash creation; Is the small hash encoded with a listpack?
	small := build("smallhash", 8)
	tcl("HSET/HLEN - Small hash creation", `
		HLEN smallhash => 8
		OBJECT ENCODING smallhash => listpack`)
	// HSET/HLEN - Big hash creation; Is the big hash encoded with an hash table?
	big := build("bighash", 1024)
	tcl("HSET/HLEN - Big hash creation", `
		HLEN bighash => 1024
		OBJECT ENCODING bighash => hashtable`)
	sortedKeys := func(h map[string]string) []string {
		var ks []string
		for k := range h {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		return ks
	}
	fields := func(reply string) []string { return strings.Fields(tclRender(t, reply)) }
	for _, hc := range []struct {
		key string
		h   map[string]string
	}{{"smallhash", small}, {"bighash", big}} {
		// HGET against the small/big hash; HSTRLEN against the small/big hash.
		for k, v := range hc.h {
			if got := run(t, s, 2, "HGET", hc.key, k); got != bulk(v) {
				t.Fatalf("HGET against %s: %q, want %q", hc.key, got, v)
			}
			if got := run(t, s, 2, "HSTRLEN", hc.key, k); got != integer(int64(len(v))) {
				t.Fatalf("HSTRLEN against %s: %q", hc.key, got)
			}
		}
	}
	tcl("HGET against non existing key", `
		HGET smallhash __123123123__ =>
		HGET bighash __123123123__ =>`)
	ks, kb := sortedKeys(small)[0], sortedKeys(big)[0]
	tcl("HSET in update and insert mode", `
		HSET smallhash `+ks+` newval1 => 0
		HGET smallhash `+ks+` => newval1
		HSET smallhash __foobar123__ newval => 1
		HSET bighash `+kb+` newval2 => 0
		HGET bighash `+kb+` => newval2
		HSET bighash __foobar123__ newval => 1
		HDEL smallhash __foobar123__ => 1
		HDEL bighash __foobar123__ => 1`)
	small[ks], big[kb] = "newval1", "newval2"
	tcl("HSETNX target key missing/exists - small hash, big hash", `
		HSETNX smallhash __123123123__ foo => 1
		HGET smallhash __123123123__ => foo
		HSETNX smallhash __123123123__ bar => 0
		HGET smallhash __123123123__ => foo
		HDEL smallhash __123123123__ => 1
		HSETNX bighash __123123123__ foo => 1
		HGET bighash __123123123__ => foo
		HSETNX bighash __123123123__ bar => 0
		HGET bighash __123123123__ => foo
		HDEL bighash __123123123__ => 1`)
	tcl("HSET/HMSET wrong number of args", `
		HSET smallhash key1 val1 key2 => -*wrong number of arguments for 'hset' command
		HMSET smallhash key1 val1 key2 => -*wrong number of arguments for 'hmset' command`)
	for _, hc := range []struct {
		key string
		h   map[string]string
	}{{"smallhash", small}, {"bighash", big}} {
		// HMSET - small/big hash
		args := []string{"HMSET", hc.key}
		for _, k := range sortedKeys(hc.h) {
			hc.h[k] = randstring(0, 8)
			args = append(args, k, hc.h[k])
		}
		if got := run(t, s, 2, args...); got != okReply {
			t.Fatalf("HMSET - %s: %q", hc.key, got)
		}
		// HMGET - small/big hash
		args = []string{"HMGET", hc.key}
		var vals []string
		for _, k := range sortedKeys(hc.h) {
			args = append(args, k)
			vals = append(vals, hc.h[k])
		}
		if got := tclRender(t, run(t, s, 2, args...)); got != tclList(vals) {
			t.Fatalf("HMGET - %s: %q", hc.key, got)
		}
		// HKEYS, HVALS, HGETALL - small/big hash
		if got := fields(run(t, s, 2, "HKEYS", hc.key)); !slices.Equal(sortedCopy(got), sortedKeys(hc.h)) {
			t.Fatalf("HKEYS - %s", hc.key)
		}
		vals = nil
		for _, v := range hc.h {
			vals = append(vals, v)
		}
		slices.Sort(vals)
		gotVals := strings.Split(strings.TrimSuffix(run(t, s, 2, "HVALS", hc.key), "\r\n"), "\r\n")
		var hv []string
		for i := 2; i < len(gotVals); i += 2 {
			hv = append(hv, gotVals[i])
		}
		if slices.Sort(hv); !slices.Equal(hv, vals) {
			t.Fatalf("HVALS - %s", hc.key)
		}
		all := strings.Split(strings.TrimSuffix(run(t, s, 2, "HGETALL", hc.key), "\r\n"), "\r\n")
		got := map[string]string{}
		for i := 2; i+2 < len(all); i += 4 {
			got[all[i]] = all[i+2]
		}
		if len(got) != len(hc.h) {
			t.Fatalf("HGETALL - %s: %d fields", hc.key, len(got))
		}
		for k, v := range hc.h {
			if got[k] != v {
				t.Fatalf("HGETALL - %s: %s=%q want %q", hc.key, k, got[k], v)
			}
		}
	}
	tcl("HMGET against non existing key and fields", `
		HMGET doesntexist __123123123__ __456456456__ => {} {}
		HMGET smallhash __123123123__ __456456456__ => {} {}
		HMGET bighash __123123123__ __456456456__ => {} {}`)
	tcl("Hash commands against wrong type", `
		SET wrongtype somevalue
		HMGET wrongtype field1 field2 => -WRONGTYPE Operation against a key*
		HRANDFIELD wrongtype => -WRONGTYPE Operation against a key*
		HGET wrongtype field1 => -WRONGTYPE Operation against a key*
		HGETALL wrongtype => -WRONGTYPE Operation against a key*
		HDEL wrongtype field1 => -WRONGTYPE Operation against a key*
		HINCRBY wrongtype field1 2 => -WRONGTYPE Operation against a key*
		HINCRBYFLOAT wrongtype field1 2.5 => -WRONGTYPE Operation against a key*
		HSTRLEN wrongtype field1 => -WRONGTYPE Operation against a key*
		HVALS wrongtype => -WRONGTYPE Operation against a key*
		HKEYS wrongtype => -WRONGTYPE Operation against a key*
		HEXISTS wrongtype field1 => -WRONGTYPE Operation against a key*
		HSET wrongtype field1 val1 => -WRONGTYPE Operation against a key*
		HMSET wrongtype field1 val1 field2 val2 => -WRONGTYPE Operation against a key*
		HSETNX wrongtype field1 val1 => -WRONGTYPE Operation against a key*
		HLEN wrongtype => -WRONGTYPE Operation against a key*
		HSCAN wrongtype 0 => -WRONGTYPE Operation against a key*`)
	tcl("HGETALL against non-existing key", `
		DEL htest
		HGETALL htest =>`)
	ks, kb = sortedKeys(small)[0], sortedKeys(big)[0]
	tcl("HDEL and return value", `
		HDEL smallhash nokey => 0
		HDEL bighash nokey => 0
		HDEL smallhash `+ks+` => 1
		HDEL smallhash `+ks+` => 0
		HGET smallhash `+ks+` =>
		HDEL bighash `+kb+` => 1
		HDEL bighash `+kb+` => 0
		HGET bighash `+kb+` =>`)
	delete(small, ks)
	delete(big, kb)
	ks, kb = sortedKeys(small)[0], sortedKeys(big)[0]
	tcl("HDEL - more than a single value", `
		DEL myhash
		HMSET myhash a 1 b 2 c 3
		HDEL myhash x y => 0
		HDEL myhash a c f => 2
		HGETALL myhash => b 2`)
	tcl("HDEL - hash becomes empty before deleting all specified fields", `
		DEL myhash
		HMSET myhash a 1 b 2 c 3
		HDEL myhash a b c d e => 3
		EXISTS myhash => 0`)
	tcl("HEXISTS", `
		HEXISTS smallhash `+ks+` => 1
		HEXISTS smallhash nokey => 0
		HEXISTS bighash `+kb+` => 1
		HEXISTS bighash nokey => 0`)
	run(t, s, 2, "HSET", "smallhash", "foo", strings.Repeat("a", 1024))
	tcl("Is a ziplist encoded Hash promoted on big payload? (OBJECT ENCODING for DEBUG OBJECT)", `
		OBJECT ENCODING smallhash => hashtable`)
	run(t, s, 2, "HDEL", "smallhash", "foo")
	tcl("HINCRBY", `
		# HINCRBY against non existing database key
		DEL htest
		HINCRBY htest foo 2 => 2
		# HINCRBY HINCRBYFLOAT against non-integer increment value
		DEL incrhash
		HSET incrhash field 5
		HINCRBY incrhash field v => -*value is not an integer*
		HINCRBYFLOAT incrhash field v => -*value is not a*
		# HINCRBY against non existing hash key
		HDEL smallhash tmp
		HDEL bighash tmp
		HINCRBY smallhash tmp 2 => 2
		HGET smallhash tmp => 2
		HINCRBY bighash tmp 2 => 2
		HGET bighash tmp => 2
		# HINCRBY against hash key created by hincrby itself
		HINCRBY smallhash tmp 3 => 5
		HGET smallhash tmp => 5
		HINCRBY bighash tmp 3 => 5
		HGET bighash tmp => 5
		# HINCRBY against hash key originally set with HSET
		HSET smallhash tmp 100
		HSET bighash tmp 100
		HINCRBY smallhash tmp 2 => 102
		HINCRBY bighash tmp 2 => 102
		# HINCRBY over 32bit value
		HSET smallhash tmp 17179869184
		HSET bighash tmp 17179869184
		HINCRBY smallhash tmp 1 => 17179869185
		HINCRBY bighash tmp 1 => 17179869185
		# HINCRBY over 32bit value with over 32bit increment
		HSET smallhash tmp 17179869184
		HSET bighash tmp 17179869184
		HINCRBY smallhash tmp 17179869184 => 34359738368
		HINCRBY bighash tmp 17179869184 => 34359738368
		# HINCRBY fails against hash value with spaces (left)
		HSET smallhash str { 11}
		HSET bighash str { 11}
		HINCRBY smallhash str 1 => -ERR *not an integer*
		HINCRBY bighash str 1 => -ERR *not an integer*
		# HINCRBY fails against hash value with spaces (right)
		HSET smallhash str {11 }
		HSET bighash str {11 }
		HINCRBY smallhash str 1 => -ERR *not an integer*
		HINCRBY bighash str 1 => -ERR *not an integer*
		# HINCRBY can detect overflows
		HSET hash n -9223372036854775484
		HINCRBY hash n -1 => -9223372036854775485
		HINCRBY hash n -10000 => -*overflow*`)
	tcl("HINCRBYFLOAT", `
		# HINCRBYFLOAT against non existing database key
		DEL htest
		HINCRBYFLOAT htest foo 2.5 => 2.5
		# HINCRBYFLOAT against non existing hash key
		HDEL smallhash tmp
		HDEL bighash tmp
		HINCRBYFLOAT smallhash tmp 2.5 => 2.5
		HGET smallhash tmp => 2.5
		HINCRBYFLOAT bighash tmp 2.5 => 2.5
		HGET bighash tmp => 2.5
		# HINCRBYFLOAT against hash key created by hincrby itself
		HINCRBYFLOAT smallhash tmp 3.5 => 6
		HGET smallhash tmp => 6
		HINCRBYFLOAT bighash tmp 3.5 => 6
		HGET bighash tmp => 6
		# HINCRBYFLOAT against hash key originally set with HSET
		HSET smallhash tmp 100
		HSET bighash tmp 100
		HINCRBYFLOAT smallhash tmp 2.5 => 102.5
		HINCRBYFLOAT bighash tmp 2.5 => 102.5
		# HINCRBYFLOAT over 32bit value
		HSET smallhash tmp 17179869184
		HSET bighash tmp 17179869184
		HINCRBYFLOAT smallhash tmp 1 => 17179869185
		HINCRBYFLOAT bighash tmp 1 => 17179869185
		# HINCRBYFLOAT over 32bit value with over 32bit increment
		HSET smallhash tmp 17179869184
		HSET bighash tmp 17179869184
		HINCRBYFLOAT smallhash tmp 17179869184 => 34359738368
		HINCRBYFLOAT bighash tmp 17179869184 => 34359738368
		# HINCRBYFLOAT fails against hash value with spaces (left)
		HSET smallhash str { 11}
		HSET bighash str { 11}
		HINCRBYFLOAT smallhash str 1 => -ERR *not*float*
		HINCRBYFLOAT bighash str 1 => -ERR *not*float*
		# HINCRBYFLOAT fails against hash value with spaces (right)
		HSET smallhash str {11 }
		HSET bighash str {11 }
		HINCRBYFLOAT smallhash str 1 => -ERR *not*float*
		HINCRBYFLOAT bighash str 1 => -ERR *not*float*
		# Test HINCRBYFLOAT for correct float representation (issue #2846)
		DEL myhash
		HINCRBYFLOAT myhash float 1.23 => 1.23
		HINCRBYFLOAT myhash float 0.77 => 2
		HINCRBYFLOAT myhash float -0.1 => 1.9
		# HINCRBYFLOAT does not allow NaN or Infinity
		HINCRBYFLOAT hfoo field +inf => -*value is NaN or Infinity*
		EXISTS hfoo => 0`)
	// HINCRBYFLOAT fails against hash value that contains a null-terminator in the middle
	run(t, s, 2, "HSET", "h", "f", "1\x002")
	if got := run(t, s, 2, "HINCRBYFLOAT", "h", "f", "1"); !tclMatch("-ERR *not*float*\r\n", got) {
		t.Fatalf("HINCRBYFLOAT with a NUL: %q", got)
	}
	tcl("HSTRLEN against non existing field", `
		HSTRLEN smallhash __123123123__ => 0
		HSTRLEN bighash __123123123__ => 0`)
	for _, v := range []string{"-9223372036854775808", "9223372036854775807", "9223372036854775808", "", "0", "-1", "x"} {
		// HSTRLEN corner cases
		run(t, s, 2, "HMSET", "smallhash", "field", v)
		run(t, s, 2, "HMSET", "bighash", "field", v)
		for _, k := range []string{"smallhash", "bighash"} {
			if got := run(t, s, 2, "HSTRLEN", k, "field"); got != integer(int64(len(v))) {
				t.Fatalf("HSTRLEN corner case %q in %s: %q", v, k, got)
			}
		}
	}
	tcl("HINCRBYFLOAT over hash-max-listpack-value encoded with a listpack", `
		@hash 512 8
		DEL smallhash
		DEL bighash
		HSET smallhash tmp 0
		HSET bighash tmp 0
		HINCRBYFLOAT smallhash tmp 0.000005
		HINCRBYFLOAT bighash tmp 0.0000005
		OBJECT ENCODING smallhash => listpack
		OBJECT ENCODING bighash => hashtable
		DEL smallhash
		DEL bighash
		HINCRBYFLOAT smallhash abcdefgh 1
		HINCRBYFLOAT bighash abcdefghi 1
		OBJECT ENCODING smallhash => listpack
		OBJECT ENCODING bighash => hashtable
		@hash 512 64`)
	long := strings.Repeat("k", 500)
	tcl("Hash ziplist regression test for large keys", `
		HSET hash `+long+` a
		HSET hash `+long+` b
		HGET hash `+long+` => b`)
	// Hash fuzzing #1 and #2 - 10 and 512 fields.
	for _, size := range []int{10, 512} {
		for times := 0; times < 10; times++ {
			run(t, s, 2, "DEL", "hash")
			model := map[string]string{}
			for j := 0; j < size; j++ {
				switch rng.IntN(3) {
				case 0:
					f, v := randomValue(rng), randomValue(rng)
					run(t, s, 2, "HSET", "hash", f, v)
					model[f] = v
				case 1:
					f, v := strconv.Itoa(rng.IntN(1024)-512), strconv.Itoa(rng.IntN(1024)-512)
					run(t, s, 2, "HSET", "hash", f, v)
					model[f] = v
				default:
					f := strconv.Itoa(rng.IntN(1024) - 512)
					if rng.IntN(2) == 0 {
						f = randomValue(rng)
					}
					run(t, s, 2, "HDEL", "hash", f)
					delete(model, f)
				}
			}
			for k, v := range model {
				if got := run(t, s, 2, "HGET", "hash", k); got != bulk(v) {
					t.Fatalf("Hash fuzzing - %d fields: HGET %q = %q, want %q", size, k, got, v)
				}
			}
			if got := run(t, s, 2, "HLEN", "hash"); got != integer(int64(len(model))) {
				t.Fatalf("Hash fuzzing - %d fields: HLEN %q, want %d", size, got, len(model))
			}
		}
	}
	// Stress test the hash ziplist -> hashtable encoding conversion.
	s.SetLimits(Limits{HashEntries: 32, HashValue: 64, ZSetEntries: 128, ZSetValue: 64})
	for j := 0; j < 100; j++ {
		run(t, s, 2, "DEL", "myhash")
		for i := 0; i < 64; i++ {
			run(t, s, 2, "HSET", "myhash", randomValue(rng)+strconv.Itoa(i), randomValue(rng))
		}
		if got := run(t, s, 2, "OBJECT", "ENCODING", "myhash"); got != bulk("hashtable") {
			t.Fatalf("conversion stress: %q", got)
		}
	}
	s.SetLimits(DefaultLimits)
}

// hash.tcl's HRANDFIELD cases: every field comes back, the count forms and
// their RESP3 shape, count 0 and a missing key (empty arrays), the count
// overflow errors, in both encodings.
func TestTclHashRandField(t *testing.T) {
	s := New(16)
	for _, c := range []struct{ enc, content string }{
		{"listpack", "a 1 b 2 c 3"}, {"hashtable", "a 1 b 2 " + strings.Repeat("z", 80) + " 3"},
		{"hashtable", "a 1 b 2 c 3 d 4 e 5 6 f 7 g 8 h 9 i " + strings.Repeat("q", 80) + " 10"},
		{"listpack", "a 1 b 2 c 3 d 4 e 5 6 f 7 g 8 h 9 i 10 j"},
	} {
		s.SetLimits(Limits{HashEntries: 512, HashValue: 10, ZSetEntries: 128, ZSetValue: 64})
		run(t, s, 2, "DEL", "myhash")
		f := strings.Fields(c.content)
		for i := 0; i < len(f); i += 2 {
			run(t, s, 2, "HSET", "myhash", f[i], f[i+1])
		}
		if got := run(t, s, 2, "OBJECT", "ENCODING", "myhash"); got != bulk(c.enc) {
			t.Fatalf("HRANDFIELD - %s: encoding %q", c.enc, got)
		}
		dict := map[string]string{}
		for i := 0; i < len(f); i += 2 {
			dict[f[i]] = f[i+1]
		}
		seen := map[string]bool{}
		for i := 0; i < 200; i++ {
			seen[tclRender(t, run(t, s, 2, "HRANDFIELD", "myhash"))] = true
		}
		if len(seen) != len(dict) {
			t.Fatalf("HRANDFIELD - %s: saw %d of %d", c.enc, len(seen), len(dict))
		}
		if len(dict) == 10 {
			// Random uniform distribution (df = 9, 40 means 0.00001
			// probability): a negative count, and many positive ones.
			if x := chiSquare(strings.Fields(tclRender(t, run(t, s, 2, "HRANDFIELD", "myhash", "-1000")))); x >= 40 {
				t.Fatalf("HRANDFIELD -1000: chi-square %.1f", x)
			}
			for _, size := range []int{8, 2} {
				var all []string
				for i := 0; i < 1000/size; i++ {
					all = append(all, strings.Fields(tclRender(t, run(t, s, 2, "HRANDFIELD", "myhash", strconv.Itoa(size))))...)
				}
				if x := chiSquare(all); x >= 40 {
					t.Fatalf("HRANDFIELD %d: chi-square %.1f", size, x)
				}
			}
		}
		for _, n := range []int{-20, -1001, 10, 20, 8, 2, 1} {
			res := strings.Fields(tclRender(t, run(t, s, 2, "HRANDFIELD", "myhash", strconv.Itoa(n), "WITHVALUES")))
			want := n
			if n < 0 {
				want = -n
			} else if n > len(dict) {
				want = len(dict)
			}
			if len(res) != 2*want {
				t.Fatalf("HRANDFIELD %d WITHVALUES: %d items", n, len(res))
			}
			uniq := map[string]bool{}
			for i := 0; i < len(res); i += 2 {
				if dict[res[i]] != res[i+1] {
					t.Fatalf("HRANDFIELD %d: %s %s", n, res[i], res[i+1])
				}
				uniq[res[i]] = true
			}
			if n > 0 && len(uniq) != want {
				t.Fatalf("HRANDFIELD %d repeated fields", n)
			}
			if got := len(strings.Fields(tclRender(t, run(t, s, 2, "HRANDFIELD", "myhash", strconv.Itoa(n))))); got != want {
				t.Fatalf("HRANDFIELD %d: %d fields", n, got)
			}
		}
	}
	runTcl(t, s, []tclCase{
		{"HRANDFIELD with RESP3", `
			@resp 3
			HRANDFIELD myhash 3 withvalues => {* *} {* *} {* *}
			@resp 2`},
		{"HRANDFIELD count of 0 is handled correctly", `HRANDFIELD myhash 0 =>`},
		{"HRANDFIELD count overflow", `
			HMSET myhash a 1
			HRANDFIELD myhash -9223372036854770000 withvalues => -*value is out of range*
			HRANDFIELD myhash -9223372036854775808 withvalues => -*value is out of range*
			HRANDFIELD myhash -9223372036854775808 => -*value is out of range*`},
		{"HRANDFIELD with <count> against non existing key", `HRANDFIELD nonexisting_key 100 =>`},
	})
	for _, c := range [][2]string{{"HRANDFIELD myhash 0", "*0\r\n"}, {"HRANDFIELD nonexisting_key 100", "*0\r\n"}} {
		if got := run(t, s, 2, strings.Fields(c[0])...); got != c[1] {
			t.Fatalf("%s - emptyarray: %q", c[0], got)
		}
	}
	// RESP3 HRANDFIELD without values: a flat array of fields.
	if got := run(t, s, 3, "HRANDFIELD", "myhash", "3"); !strings.HasPrefix(got, "*3\r\n$") {
		t.Fatalf("HRANDFIELD 3 in RESP3: %q", got)
	}
}

// randomValue is the Tcl suite's randomValue: integers of several sizes,
// negative ones, and strings, some binary.
func randomValue(rng *rand.Rand) string {
	switch rng.IntN(5) {
	case 0:
		return strconv.FormatInt(rng.Int64N(1<<62), 10)
	case 1:
		return strconv.Itoa(rng.IntN(2000) - 1000)
	case 2:
		return strconv.FormatUint(rng.Uint64(), 10)
	case 3:
		b := make([]byte, rng.IntN(20))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return string(b)
	default:
		b := make([]byte, rng.IntN(30))
		for i := range b {
			b[i] = byte('a' + rng.IntN(26))
		}
		return string(b)
	}
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

// chiSquare is the Tcl suite's chi_square_value: how far the counts of
// each distinct item are from all being equal.
func chiSquare(items []string) float64 {
	counts := map[string]int{}
	for _, it := range items {
		counts[it]++
	}
	exp := float64(len(items)) / float64(len(counts))
	x := 0.0
	for _, n := range counts {
		d := float64(n) - exp
		x += d * d / exp
	}
	return x
}
