package store

import (
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// Tests of the families this file's neighbours added (string_set_cmds.go,
// expire*.go, keyspace_db_cmds.go, zset_algebra.go, zset_pop.go,
// encoding.go, object.go), many after Valkey's unit/type and unit/expire
// Tcl tests that use only these families.

// refuseAll runs each refused command and checks that it left the store
// (values and TTLs) and the feed untouched.
func refuseAll(t *testing.T, s *Store, cases [][]string, want func(args []string) string) {
	t.Helper()
	f := &captureFeed{}
	s.SetFeed(f)
	defer s.SetFeed(nil)
	for _, args := range cases {
		refuse(t, s, 2, want(args), args...)
		if len(f.recs) != 0 {
			t.Fatalf("%q refused but fed the AOF %q", args, f.String())
		}
	}
}

// Every refusal of the new commands leaves the store and the AOF as they
// were, TTLs included.
func TestRefusalsLeaveStoreAndFeed(t *testing.T) {
	s := New(16)
	for _, a := range [][]string{
		{"SET", "s", "v", "EX", "100"}, {"HSET", "h", "f", "v"}, {"ZADD", "z", "1", "a", "2", "b"},
		{"EXPIRE", "h", "100"}, {"SET", "n", "10"},
	} {
		run(t, s, 2, a...)
	}
	cases := map[string][][]string{
		"ERR syntax error": {
			{"SET", "s", "x", "EX", "10", "PX", "10"}, {"SET", "s", "x", "KEEPTTL", "EX", "1"}, {"GETEX", "s", "EX", "10", "PERSIST"},
			{"GETEX", "s", "KEEPTTL"}, {"ZUNION", "3", "z", "z"}, {"ZUNIONSTORE", "d", "2", "z", "z", "WITHSCORES"},
			{"ZMPOP", "2", "z", "MIN"}, {"ZRANGESTORE", "d", "z", "0", "-1", "WITHSCORES"}, {"COPY", "s", "d", "FOO"},
			{"LCS", "s", "n", "FOO"}, {"ZMPOP", "9223372036854775807", "z", "MIN"},
		},
		"ERR invalid expire time in 'set' command":                            {{"SET", "s", "x", "EX", "0"}, {"SET", "s", "x", "PX", "9223372036854775807"}},
		"ERR invalid expire time in 'getex' command":                          {{"GETEX", "s", "EX", "-1"}},
		"ERR invalid expire time in 'expire' command":                         {{"EXPIRE", "s", "9223372036854775807"}, {"EXPIRE", "s", "-9223372036854776"}},
		"ERR invalid expire time in 'pexpire' command":                        {{"PEXPIRE", "s", "9223372036854770000"}},
		"ERR invalid expire time in 'setex' command":                          {{"SETEX", "s", "0", "x"}},
		"ERR Unsupported option AB":                                           {{"EXPIRE", "s", "10", "XX", "AB"}},
		"ERR GT and LT options at the same time are not compatible":           {{"EXPIRE", "s", "10", "GT", "LT"}},
		"ERR NX and XX, GT or LT options at the same time are not compatible": {{"PEXPIREAT", "s", "10", "NX", "GT"}},
		ErrNotInteger: {{"EXPIRE", "s", ""}, {"SETRANGE", "s", "x", "y"}, {"GETRANGE", "s", "1.5", "2"}, {"COPY", "s", "d", "DB", "x"}},
		"ERR value is out of range, value must between -2147483648 and 2147483647": {{"MOVE", "s", "2147483648"}},
		"ERR offset is out of range": {{"SETRANGE", "s", "-1", "x"}},
		"ERR string exceeds maximum allowed size (proto-max-bulk-len)": {
			{"SETRANGE", "s", "536870911", "xy"}, {"SETRANGE", "new", strconv.Itoa(512*1024*1024 - 4), "world"},
		},
		ErrWrongType: {
			{"GETEX", "h", "EX", "10"}, {"GETDEL", "h"}, {"GETSET", "h", "x"}, {"SET", "h", "x", "GET"}, {"SETRANGE", "h", "0", "x"},
			{"INCRBYFLOAT", "h", "1"}, {"ZUNIONSTORE", "d", "2", "z", "h"}, {"ZMPOP", "2", "nokey", "h", "MIN"},
			{"ZRANGESTORE", "d", "h", "0", "-1"}, {"BZPOPMIN", "h", "z", "1"},
		},
		ErrNotFloat:                            {{"INCRBYFLOAT", "s", "1"}, {"INCRBYFLOAT", "n", "abc"}},
		errIncrNaNInf:                          {{"INCRBYFLOAT", "n", "inf"}},
		"ERR weight value is not a float":      {{"ZINTER", "2", "z", "z", "WEIGHTS", "nan", "1"}},
		"ERR LIMIT can't be negative":          {{"ZINTERCARD", "1", "z", "LIMIT", "-1"}},
		"ERR timeout is negative":              {{"BZPOPMIN", "z", "-1"}},
		"ERR timeout is out of range":          {{"BZMPOP", "inf", "1", "z", "MIN"}},
		"ERR numkeys should be greater than 0": {{"ZMPOP", "0", "z", "MIN"}},
		ErrSameObject:                          {{"COPY", "s", "s"}, {"MOVE", "s", "0"}},
		ErrDBRange:                             {{"COPY", "s", "d", "DB", "16"}, {"SWAPDB", "0", "16"}},
		"ERR The specified keys must contain string values":                 {{"LCS", "s", "h"}},
		"ERR If you want both the length and indexes, please just use IDX.": {{"LCS", "s", "n", "LEN", "IDX"}},
		"ERR unknown subcommand 'FOO'. Try OBJECT HELP.":                    {{"OBJECT", "FOO", "s"}},
	}
	for want, cs := range cases {
		refuseAll(t, s, cs, func([]string) string { return errReply(want) })
	}
}

// SET with an expire time already past stores nothing and deletes the key
// that was there (Valkey 8.0's fast path), recorded as DEL; other writes keep
// or clear a TTL as Valkey does.
func TestSetPastExpireAndTTLRules(t *testing.T) {
	s := New(16)
	f := &captureFeed{}
	s.SetFeed(f)
	runExpect(t, s, 2, []expectStep{
		ex(okReply, "SET", "k", "v"),
		ex(okReply, "SET", "k", "v2", "EXAT", "1"),
		ex(":0\r\n", "DBSIZE"),
		ex(okReply, "SET", "nokey", "v", "PXAT", "1"),
		ex(":0\r\n", "DBSIZE"),
		ex(nilBulk, "SET", "nokey", "v", "PXAT", "1", "GET"),
	})
	if got := f.String(); got != "DEL k" { // a plain SET is recorded by the server
		t.Fatalf("feed %q", got)
	}
	at := strconv.FormatInt(int64(harnessNowMs)+100000, 10)
	runExpect(t, s, 2, []expectStep{
		ex(okReply, "SET", "s", "1", "PXAT", at),
		ex(":2\r\n", "INCR", "s"),
		ex(bulk("3.5"), "INCRBYFLOAT", "s", "1.5"),
		ex(":4\r\n", "APPEND", "s", "x"),
		ex(":4\r\n", "SETRANGE", "s", "0", "y"),
		ex(":"+at+"\r\n", "PEXPIRETIME", "s"),
		ex(okReply, "SET", "s", "v", "KEEPTTL"),
		ex(":"+at+"\r\n", "PEXPIRETIME", "s"),
		ex(bulk("v"), "GETSET", "s", "w"),
		ex(":-1\r\n", "PEXPIRETIME", "s"),
		ex(":1\r\n", "HSET", "h", "f", "v"),
		ex(":1\r\n", "PEXPIREAT", "h", at),
		ex(":1\r\n", "HSET", "h", "g", "w"),
		ex(okReply, "RENAME", "h", "h2"),
		ex(":1\r\n", "COPY", "h2", "h3"),
		ex(":"+at+"\r\n", "PEXPIRETIME", "h3"),
		ex(":1\r\n", "MOVE", "h3", "1"),
		ex(":2\r\n", "HDEL", "h2", "f", "g"),
		ex(":-2\r\n", "PEXPIRETIME", "h2"),
	})
	if got := runDB(t, s, 1, 2, "PEXPIRETIME", "h3"); got != ":"+at+"\r\n" {
		t.Fatalf("MOVE lost the TTL: %q", got)
	}
}

// Valkey's unit/expire.tcl cases that need no DEBUG: overflow and
// negative times, NX/XX/GT/LT, no resurrection of an expired key.
func TestExpireTclCases(t *testing.T) {
	s := New(16)
	runExpect(t, s, 2, []expectStep{
		ex(okReply, "SET", "foo", "bar"),
		ex(":1\r\n", "PEXPIREAT", "foo", "9223372036854770000"),
		ex(":1\r\n", "PEXPIREAT", "foo", "-9223372036854770000"),
		ex(":-2\r\n", "TTL", "foo"),
		ex(okReply, "SET", "foo", "bar"),
		ex(errReply("ERR invalid expire time in 'expire' command"), "EXPIRE", "foo", "9223370399119966"),
		ex(errReply("ERR invalid expire time in 'expire' command"), "EXPIRE", "foo", "18446744073709561"),
		ex(errReply("ERR invalid expire time in 'set' command"), "SET", "foo", "bar", "EX", "10000000000000000"),
		ex(errReply("ERR invalid expire time in 'set' command"), "SET", "foo", "bar", "EX", "-9999999999999999"),
		ex(":-1\r\n", "TTL", "foo"),
		ex(":1\r\n", "EXPIRE", "foo", "-10", "LT"),
		ex(":-2\r\n", "TTL", "foo"),
		ex(okReply, "SET", "foo", "bar", "EX", "100"),
		ex(":0\r\n", "EXPIRE", "foo", "200", "NX"),
		ex(":1\r\n", "EXPIRE", "foo", "200", "XX"),
		ex(":0\r\n", "EXPIRE", "foo", "100", "GT"),
		ex(":1\r\n", "EXPIRE", "foo", "50", "LT"),
		ex(":50\r\n", "TTL", "foo"),
		ex(nilBulk, "GETEX", "nokey", "EX", "abcd"), // 8.0.1 looks the key up first
	})
	// EXPIRE should not resurrect keys: a key whose time passed is gone for
	// EXPIRE too.
	run(t, s, 2, "SET", "r", "bar")
	run(t, s, 2, "PEXPIRE", "r", "500")
	s.SetNow(harnessNowMs + 1000)
	runExpect(t, s, 2, []expectStep{
		ex(":0\r\n", "EXPIRE", "r", "10"),
		ex(":0\r\n", "EXISTS", "r"),
	})
	// The lazy deletion of r, after PEXPIREAT into the past and EXPIRE -10
	// LT, which count as Valkey's deleteExpiredKeyFromOverwriteAndPropagate.
	if s.ExpiredKeys != 3 {
		t.Fatalf("expired_keys %d", s.ExpiredKeys)
	}
}

// Valkey's incr.tcl and string.tcl cases: no negative zero, a NUL in the
// stored number, SETRANGE and APPEND encodings, GETRANGE with a huge range,
// LCS on the RNA example, SUBSTR.
func TestStringTclCases(t *testing.T) {
	s := New(16)
	runExpect(t, s, 2, []expectStep{
		ex(bulk("0.02439024390243902"), "INCRBYFLOAT", "foo", "0.024390243902439025"), // %.17Lf
		ex(bulk("0"), "INCRBYFLOAT", "foo", "-0.024390243902439025"),
		ex(okReply, "SET", "nul", "1"),
		ex(":3\r\n", "SETRANGE", "nul", "2", "2"),
		ex(errReply(ErrNotFloat), "INCRBYFLOAT", "nul", "1"),
		ex(okReply, "SET", "m", "1234"),
		ex(bulk("int"), "OBJECT", "ENCODING", "m"),
		ex(":4\r\n", "SETRANGE", "m", "0", ""),
		ex(bulk("int"), "OBJECT", "ENCODING", "m"), // nothing set: encoding kept
		ex(":6\r\n", "SETRANGE", "m", "5", "2"),
		ex(bulk("raw"), "OBJECT", "ENCODING", "m"),
		ex(bulk("1234\x002"), "GET", "m"),
		ex(okReply, "SET", "foo", "1"),
		ex(":2\r\n", "APPEND", "foo", "2"),
		ex(bulk("raw"), "OBJECT", "ENCODING", "foo"),
		ex(":13\r\n", "INCR", "foo"),
		ex(bulk("int"), "OBJECT", "ENCODING", "foo"),
		ex(okReply, "SET", "bar", "bar"),
		ex(bulk("bar"), "GETRANGE", "bar", "0", "4294967297"),
		ex(okReply, "SET", "key", "abcde"),
		ex(bulk("bcde"), "SUBSTR", "key", "-4", "-1"),
		ex(bulk(""), "SUBSTR", "key", "-1", "-3"),
		ex(bulk(""), "SUBSTR", "nokey", "0", "1"),
		ex(errReply("ERR string exceeds maximum allowed size (proto-max-bulk-len)"), "SETRANGE", "K", "9223372036854775807", "A"),
		ex(errReply("ERR string exceeds maximum allowed size (proto-max-bulk-len)"), "SETRANGE", "K", "2147483647", "A"),
	})
	rna1 := "CACCTTCCCAGGTAACAAACCAACCAACTTTCGATCTCTTGTAGATCTGTTCTCTAAACGAACTTTAAAATCTGTGTGGCTGTCACTCGGCTGCATGCTTAGTGCACTCACGCAGTATAATTAATAACTAATTACTGTCGTTGACAGGACACGAGTAACTCGTCTATCTTCTGCAGGCTGCTTACGGTTTCGTCCGTGTTGCAGCCGATCATCAGCACATCTAGGTTTCGTCCGGGTGTG"
	rna2 := "ATTAAAGGTTTATACCTTCCCAGGTAACAAACCAACCAACTTTCGATCTCTTGTAGATCTGTTCTCTAAACGAACTTTAAAATCTGTGTGGCTGTCACTCGGCTGCATGCTTAGTGCACTCACGCAGTATAATTAATAACTAATTACTGTCGTTGACAGGACACGAGTAACTCGTCTATCTTCTGCAGGCTGCTTACGGTTTCGTCCGTGTTGCAGCCGATCATCAGCACATCTAGGTTT"
	lcs := "ACCTTCCCAGGTAACAAACCAACCAACTTTCGATCTCTTGTAGATCTGTTCTCTAAACGAACTTTAAAATCTGTGTGGCTGTCACTCGGCTGCATGCTTAGTGCACTCACGCAGTATAATTAATAACTAATTACTGTCGTTGACAGGACACGAGTAACTCGTCTATCTTCTGCAGGCTGCTTACGGTTTCGTCCGTGTTGCAGCCGATCATCAGCACATCTAGGTTT"
	run(t, s, 2, "SET", "v1", rna1)
	run(t, s, 2, "SET", "v2", rna2)
	match := func(a1, a2, b1, b2 int, n int) string {
		out := "*2\r\n" + arr(integer(int64(a1)), integer(int64(a2))) + arr(integer(int64(b1)), integer(int64(b2)))
		if n > 0 {
			out = "*3\r\n" + arr(integer(int64(a1)), integer(int64(a2))) + arr(integer(int64(b1)), integer(int64(b2))) + integer(int64(n))
		}
		return out
	}
	runExpect(t, s, 2, []expectStep{
		ex(bulk(lcs), "LCS", "v1", "v2"),
		ex(integer(int64(len(lcs))), "LCS", "v1", "v2", "LEN"),
		ex("*4\r\n"+bulk("matches")+"*5\r\n"+match(238, 238, 239, 239, 0)+match(236, 236, 238, 238, 0)+
			match(229, 230, 236, 237, 0)+match(224, 224, 235, 235, 0)+match(1, 222, 13, 234, 0)+bulk("len")+integer(227),
			"LCS", "v1", "v2", "IDX"),
		ex("*4\r\n"+bulk("matches")+"*1\r\n"+match(1, 222, 13, 234, 222)+bulk("len")+integer(227),
			"LCS", "v1", "v2", "IDX", "WITHMATCHLEN", "MINMATCHLEN", "5"),
	})
}

// OBJECT ENCODING follows Valkey's conversion rules at the thresholds in
// force (the Tcl tests' config-set cases), and COPY keeps the encoding.
func TestObjectEncodingThresholds(t *testing.T) {
	s := New(16)
	s.SetLimits(Limits{HashEntries: 4, HashValue: 8, ZSetEntries: 3, ZSetValue: 8})
	enc := func(key, want string) {
		t.Helper()
		if got := run(t, s, 2, "OBJECT", "ENCODING", key); got != bulk(want) {
			t.Fatalf("OBJECT ENCODING %s = %q, want %s", key, got, want)
		}
	}
	run(t, s, 2, "HSET", "smallhash", "tmp", "0")
	run(t, s, 2, "HSET", "bighash", "tmp", "0")
	run(t, s, 2, "HINCRBYFLOAT", "smallhash", "tmp", "0.000005")
	run(t, s, 2, "HINCRBYFLOAT", "bighash", "tmp", "0.0000005")
	enc("smallhash", "listpack")
	enc("bighash", "hashtable")
	run(t, s, 2, "HINCRBYFLOAT", "h2", "abcdefgh", "1")
	run(t, s, 2, "HINCRBYFLOAT", "h3", "abcdefghi", "1")
	enc("h2", "listpack")
	enc("h3", "hashtable")
	run(t, s, 2, "HSET", "h4", "a", "1", "b", "2", "c", "3", "d", "4")
	enc("h4", "listpack")
	run(t, s, 2, "HSET", "h4", "e", "5")
	enc("h4", "hashtable")
	run(t, s, 2, "HDEL", "h4", "a", "b", "c", "d")
	enc("h4", "hashtable") // never back
	run(t, s, 2, "HSET", "h5", "a", "1", "a", "1", "a", "1", "a", "1", "a", "1")
	enc("h5", "hashtable") // more pairs than the limit, even as duplicates
	run(t, s, 2, "HSET", "h6", "a", "1")
	run(t, s, 2, "HSETNX", "h6", "a", "123456789")
	enc("h6", "hashtable") // hashTypeTryConversion before the existence check
	run(t, s, 2, "ZADD", "z", "1", "a", "2", "b", "3", "c")
	enc("z", "listpack")
	run(t, s, 2, "ZADD", "z", "XX", "1", "longmember")
	enc("z", "skiplist") // a long member converts even when nothing is added
	run(t, s, 2, "ZADD", "z2", "1", "a", "2", "b", "3", "c", "4", "d")
	enc("z2", "skiplist")
	run(t, s, 2, "ZUNIONSTORE", "zu", "1", "z")
	enc("zu", "listpack") // a fresh set within the limits
	run(t, s, 2, "ZRANGESTORE", "zr", "z2", "0", "-1")
	enc("zr", "skiplist")
	run(t, s, 2, "COPY", "z", "zc")
	enc("zc", "skiplist")
	s.SetLimits(Limits{HashEntries: 0, HashValue: 64, ZSetEntries: 0, ZSetValue: 64})
	run(t, s, 2, "ZADD", "z0", "1", "a")
	enc("z0", "skiplist")
	run(t, s, 2, "ZRANGESTORE", "z0b", "z0", "0", "-1")
	enc("z0b", "skiplist")
}

// OBJECT IDLETIME counts from the last read or write on the server clock;
// TYPE, EXISTS, TTL and OBJECT do not count; TOUCH does.
func TestObjectIdletime(t *testing.T) {
	s := New(16)
	run(t, s, 2, "SET", "k", "v")
	s.SetNow(harnessNowMs + 10_500)
	for _, a := range [][]string{{"TYPE", "k"}, {"EXISTS", "k"}, {"TTL", "k"}, {"OBJECT", "ENCODING", "k"}} {
		run(t, s, 2, a...)
	}
	runExpect(t, s, 2, []expectStep{
		ex(":10\r\n", "OBJECT", "IDLETIME", "k"),
		ex(":1\r\n", "TOUCH", "k"),
		ex(":0\r\n", "OBJECT", "IDLETIME", "k"),
		ex(nilBulk, "OBJECT", "IDLETIME", "nokey"),
	})
}

// The active cycle is bounded: with a zero budget it stops after its first
// clock check (16 sampling loops) and says so; repeated, it removes every
// expired key and counts them.
func TestActiveExpireCycleBounded(t *testing.T) {
	s := New(16)
	d := s.DB(0)
	s.SetNow(1000)
	for i := 0; i < 20000; i++ {
		k := "k" + strconv.Itoa(i)
		d.Put(k, NewString([]byte("v")))
		d.SetExpire(k, 1500)
	}
	d.Put("keep", NewString([]byte("v")))
	s.SetNow(2000)
	if !s.ActiveExpireCycle(0, 1) {
		t.Fatal("a zero budget did not hit the time limit")
	}
	if n := d.Len(); n <= 1 || n >= 20001 || s.ExpiredKeys != int64(20001-n) {
		t.Fatalf("after one bounded run: %d keys, expired_keys %d", n, s.ExpiredKeys)
	}
	for i := 0; i < 1000 && d.Len() > 1; i++ {
		s.ActiveExpireCycle(time.Second, 1)
	}
	if d.Len() != 1 || s.ExpiredKeys != 20000 || d.ExpiresLen() != 0 {
		t.Fatalf("keys %d, expired_keys %d, expires %d", d.Len(), s.ExpiredKeys, d.ExpiresLen())
	}
	if s.ExpiredTimeCapCount == 0 {
		t.Fatal("expired_time_cap_reached_count not counted")
	}
}

// The cycle walks the TTL table from where its last sample stopped
// (expire.go): one unhurried run over 4,000 expired keys among 2,000 that
// live on deletes them all, its walk ending at the table's end; the next run
// starts again at the first slot and finds what was set behind the walk.
// With a Go map sampled from random starts (until round 7) one run ended at
// the first sample that began in an already cleaned stretch, leaving most
// of the expired keys.
func TestActiveExpireCycleWalksTheTable(t *testing.T) {
	s := New(16)
	d := s.DB(0)
	s.SetNow(1000)
	for i := 0; i < 6000; i++ {
		k := "k" + strconv.Itoa(i)
		d.Put(k, NewString([]byte("v")))
		at := int64(1500) // expires before the run
		if i%3 == 0 {
			at = 1 << 50
		}
		d.SetExpire(k, at)
	}
	s.SetNow(2000)
	s.ActiveExpireCycle(time.Hour, 1)
	if d.Len() != 2000 || s.ExpiredKeys != 4000 || d.ExpiresLen() != 2000 || d.expCursor != 0 {
		t.Fatalf("after one run: %d keys (want 2000), expired_keys %d, %d TTLs, cursor %d (want 0: the walk came to the end)",
			d.Len(), s.ExpiredKeys, d.ExpiresLen(), d.expCursor)
	}
	// Keys set behind a walk under way are met when it comes round again.
	s.ActiveExpireCycle(time.Hour, 1) // a sample of live keys: the walk moves on
	if d.expCursor == 0 {
		t.Fatal("a run over live keys did not move the walk")
	}
	for i := 0; i < 1000; i++ {
		k := "late" + strconv.Itoa(i)
		d.Put(k, NewString([]byte("v")))
		d.SetExpire(k, 2500)
	}
	s.SetNow(3000)
	for i := 0; i < 200 && d.Len() > 2000; i++ {
		s.ActiveExpireCycle(time.Hour, 1)
	}
	if d.Len() != 2000 || s.ExpiredKeys != 5000 {
		t.Fatalf("after the late keys expired: %d keys, expired_keys %d", d.Len(), s.ExpiredKeys)
	}
}

// The TTL table keeps the keyspace's own string of each key (a key with a
// TTL costs its bytes once), and TableBytes reports both tables' slot
// arrays (MEMORY STATS db.<n>).
func TestTTLTableSharesKeyStrings(t *testing.T) {
	s := New(16)
	d := s.DB(0)
	for i := 0; i < 1000; i++ {
		k := "key:" + strconv.Itoa(i)
		d.Put(k, NewString([]byte("v")))
		if i%2 == 0 {
			d.SetExpire(strings.Clone(k), 1<<50) // another string, same bytes
		}
	}
	for k := range d.expires.all() {
		ks := d.keys.slots[d.keys.find(k)].key()
		if unsafe.StringData(k) != unsafe.StringData(ks) {
			t.Fatalf("the TTL table holds its own copy of %q", k)
		}
	}
	main, exp := d.TableBytes()
	if main != int64(ktCapFor(1000))*24 || exp != int64(ktCapFor(500))*24 {
		t.Fatalf("TableBytes %d, %d; want %d, %d", main, exp, ktCapFor(1000)*24, ktCapFor(500)*24)
	}
}

// Nothing expires while the AOF is replayed; PurgeExpired then removes what
// passed, as expired keys recorded as DEL.
func TestLoadingKeepsExpiredKeysUntilPurge(t *testing.T) {
	s := New(16)
	f := &captureFeed{}
	s.SetNow(5000)
	s.SetFeed(f)
	end := s.BeginReplay()
	runExpect(t, s, 2, []expectStep{
		ex(okReply, "SET", "k", "v", "PXAT", "1000"),
		ex(":2\r\n", "APPEND", "k", "x"),
	})
	if got := run(t, s, 2, "PEXPIRETIME", "k"); got != ":1000\r\n" {
		t.Fatalf("during the replay: %q", got)
	}
	if f.String() != "" || !s.Loading() {
		t.Fatalf("the replay fed %q, loading %v", f.String(), s.Loading())
	}
	end()
	if s.Loading() {
		t.Fatal("still loading after the replay")
	}
	if n := s.PurgeExpired(); n != 1 || s.DB(0).Len() != 0 || f.String() != "DEL k" || s.ExpiredKeys != 1 {
		t.Fatalf("purge %d, keys %d, feed %q, expired %d", n, s.DB(0).Len(), f.String(), s.ExpiredKeys)
	}
}
