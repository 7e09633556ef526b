package store

import (
	"sort"
	"strconv"
	"strings"
	"testing"
)

// keys.jsonl up to its first SELECT (the rest is server commands).
func TestKeysGoldenTranscript(t *testing.T) {
	n := replayGolden(t, "keys.jsonl", func(args []string) bool { return !has(strings.ToLower(args[0])) })
	if n != 23 {
		t.Fatalf("replayed %d lines of keys.jsonl, want 23", n)
	}
}

func TestKeysBasics(t *testing.T) {
	s := New(16)
	runExpect(t, s, 2, []expectStep{
		ex(okReply, "SET", "s", "v"),
		ex(":1\r\n", "HSET", "h", "f", "v"),
		ex("+string\r\n", "TYPE", "s"),
		ex("+hash\r\n", "TYPE", "h"),
		ex("+none\r\n", "TYPE", "nokey"),
		ex(":3\r\n", "EXISTS", "s", "s", "h", "nokey"),
		ex(":0\r\n", "EXISTS", "nokey"),
		ex(":2\r\n", "DBSIZE"),
		ex(":1\r\n", "DEL", "s", "s", "nokey"), // a repeated key counts once
		ex(":0\r\n", "DEL", "s"),
		ex(":1\r\n", "UNLINK", "h"),
		ex(":0\r\n", "DBSIZE"),
		ex(emptyArray, "KEYS", "*"),
	})
	runExpect(t, s, 3, []expectStep{
		ex("+none\r\n", "TYPE", "nokey"),
		ex(emptyScanReply, "SCAN", "0"),
	})
}

func TestKeysPattern(t *testing.T) {
	s := New(16)
	for _, k := range []string{"", "hello", "hallo", "hxllo", "a/b/c", "a*", "h]"} {
		run(t, s, 2, "SET", k, "1")
	}
	keys := func(pat string) string {
		node, _ := parseRESP(t, run(t, s, 2, "KEYS", pat))
		var out []string
		for _, k := range node.kids {
			out = append(out, k.text)
		}
		sort.Strings(out)
		return strings.Join(out, ",")
	}
	for pat, want := range map[string]string{
		"*":         ",a*,a/b/c,h],hallo,hello,hxllo", // "*" includes the empty key
		"h?llo":     "hallo,hello,hxllo",
		"h[ae]llo":  "hallo,hello",
		"h[^e]llo":  "hallo,hxllo",
		"h[a-e]llo": "hallo,hello",
		"h[e-a]llo": "hallo,hello",
		"a*":        "a*,a/b/c",
		`a\*`:       "a*",
		"a*c":       "a/b/c",
		"h]":        "h]",
		"h[]]":      "",
		"":          "",
		"**":        "a*,a/b/c,h],hallo,hello,hxllo",
	} {
		if got := keys(pat); got != want {
			t.Errorf("KEYS %q = %q, want %q", pat, got, want)
		}
	}
}

// scanAll runs SCAN to the end with extra options, calling between(page)
// after each page, and returns how often each key was returned.
func scanAll(t *testing.T, s *Store, opts []string, between func(page int)) (map[string]int, int) {
	t.Helper()
	seen := map[string]int{}
	cursor := "0"
	pages := 0
	for {
		args := append([]string{"SCAN", cursor}, opts...)
		node, rest := parseRESP(t, run(t, s, 2, args...))
		if rest != "" || node.typ != '*' || len(node.kids) != 2 || node.kids[0].typ != '$' || node.kids[1].typ != '*' {
			t.Fatalf("SCAN reply %+v", node)
		}
		for _, k := range node.kids[1].kids {
			seen[k.text]++
		}
		cursor = node.kids[0].text
		if _, err := strconv.ParseInt(cursor, 10, 64); err != nil {
			t.Fatalf("cursor %q does not fit int64", cursor)
		}
		pages++
		if between != nil {
			between(pages)
		}
		if cursor == "0" {
			return seen, pages
		}
		if pages > 100000 {
			t.Fatal("SCAN does not terminate")
		}
	}
}

func TestScanCoversKeyspace(t *testing.T) {
	s := New(16)
	const n = 1000
	for i := 0; i < n; i++ {
		switch i % 3 {
		case 0:
			run(t, s, 2, "SET", "s:"+strconv.Itoa(i), "v")
		case 1:
			run(t, s, 2, "HSET", "h:"+strconv.Itoa(i), "f", "v")
		default:
			if has("zadd") {
				run(t, s, 2, "ZADD", "z:"+strconv.Itoa(i), "1", "m")
			} else {
				z, _ := s.DB(0).ZSetForWrite("z:" + strconv.Itoa(i))
				z.Add("m", 1)
			}
		}
	}
	seen, pages := scanAll(t, s, []string{"COUNT", "7"}, nil)
	if len(seen) != n {
		t.Fatalf("SCAN returned %d distinct keys of %d", len(seen), n)
	}
	for k, c := range seen {
		if c != 1 {
			t.Errorf("key %s returned %d times", k, c)
		}
	}
	if pages < n/7 || pages > n/7+2 {
		t.Errorf("COUNT 7 over %d keys took %d pages", n, pages)
	}
	// Default COUNT is 10.
	if _, pages := scanAll(t, s, nil, nil); pages < n/10 || pages > n/10+2 {
		t.Errorf("default COUNT over %d keys took %d pages", n, pages)
	}
	// TYPE and MATCH filter, case-insensitively for TYPE.
	for typ, prefix := range map[string]string{"string": "s:", "HASH": "h:", "zSet": "z:"} {
		seen, _ := scanAll(t, s, []string{"TYPE", typ, "COUNT", "50"}, nil)
		if len(seen) != n/3 && len(seen) != n/3+1 {
			t.Errorf("SCAN TYPE %s returned %d keys", typ, len(seen))
		}
		for k := range seen {
			if !strings.HasPrefix(k, prefix) {
				t.Errorf("SCAN TYPE %s returned %s", typ, k)
			}
		}
	}
	for _, typ := range []string{"list", "set", "stream"} {
		if seen, _ := scanAll(t, s, []string{"TYPE", typ, "COUNT", "100"}, nil); len(seen) != 0 {
			t.Errorf("SCAN TYPE %s returned %d keys", typ, len(seen))
		}
	}
	seen, _ = scanAll(t, s, []string{"MATCH", "h:1*", "COUNT", "1000"}, nil)
	want := 0
	for i := 0; i < n; i++ {
		if i%3 == 1 && strings.HasPrefix(strconv.Itoa(i), "1") {
			want++
		}
	}
	if len(seen) != want {
		t.Errorf("SCAN MATCH h:1* returned %d keys, want %d", len(seen), want)
	}
}

// Keys present for the whole scan are returned even while other keys come
// and go, and deleted keys are not returned after their deletion.
func TestScanUnderChurn(t *testing.T) {
	s := New(16)
	const n = 600
	for i := 0; i < n; i++ {
		run(t, s, 2, "SET", "k"+strconv.Itoa(i), "v")
	}
	deleted := map[string]bool{}
	seen, _ := scanAll(t, s, []string{"COUNT", "5"}, func(page int) {
		// Each page: delete one old key, add two new ones, and start a
		// second scan (cursor 0) that rebuilds the snapshot.
		k := "k" + strconv.Itoa(page*7%n)
		if !deleted[k] && page*7 < n {
			run(t, s, 2, "DEL", k)
			deleted[k] = true
		}
		run(t, s, 2, "SET", "new"+strconv.Itoa(page), "v")
		run(t, s, 2, "HSET", "newh"+strconv.Itoa(page), "f", "v")
		if page%10 == 0 {
			run(t, s, 2, "SCAN", "0", "COUNT", "3")
		}
	})
	for i := 0; i < n; i++ {
		k := "k" + strconv.Itoa(i)
		if !deleted[k] && seen[k] != 1 {
			t.Fatalf("key %s present throughout was returned %d times", k, seen[k])
		}
	}
	if len(deleted) < 50 {
		t.Fatalf("only %d deletions happened", len(deleted))
	}
	// After a FLUSHDB mid-scan the old cursor just ends with what exists.
	run(t, s, 2, "SET", "a", "1")
	node, _ := parseRESP(t, run(t, s, 2, "SCAN", "0", "COUNT", "2"))
	run(t, s, 2, "FLUSHDB")
	run(t, s, 2, "SET", "only", "1")
	seen2 := map[string]bool{}
	for cursor := node.kids[0].text; cursor != "0"; {
		node, _ := parseRESP(t, run(t, s, 2, "SCAN", cursor, "COUNT", "1000"))
		for _, k := range node.kids[1].kids {
			seen2[k.text] = true
		}
		cursor = node.kids[0].text
	}
	for k := range seen2 {
		if k != "only" {
			t.Fatalf("SCAN after FLUSHDB returned %s", k)
		}
	}
}

func TestScanErrors(t *testing.T) {
	s := New(16)
	run(t, s, 2, "SET", "a", "1")
	runExpect(t, s, 2, []expectStep{
		ex("*2\r\n"+bulk("0")+bulks("a"), "SCAN", "01"),
		ex("*2\r\n"+bulk("0")+bulks("a"), "SCAN", "-0"),
		ex("*2\r\n"+bulk("0")+bulks("a"), "SCAN", "0", "count", "1", "match", "*", "type", "STRING"),
		ex("*2\r\n"+bulk("0")+"*0\r\n", "SCAN", "18446744073709551615"),
		ex("*2\r\n"+bulk("0")+"*0\r\n", "SCAN", "0", "MATCH", "b*"),
	})
	for _, c := range []struct {
		want string
		args []string
	}{
		{ErrInvalidCur, []string{"SCAN", "x"}},
		{ErrInvalidCur, []string{"SCAN", "-1"}},
		{ErrInvalidCur, []string{"SCAN", ""}},
		{ErrInvalidCur, []string{"SCAN", "1x"}},
		{ErrInvalidCur, []string{"SCAN", "18446744073709551616"}},
		{ErrInvalidCur, []string{"SCAN", "x", "COUNT", "0"}},
		{ErrNotInteger, []string{"SCAN", "0", "COUNT", "x"}},
		{ErrSyntax, []string{"SCAN", "0", "COUNT", "0"}},
		{ErrSyntax, []string{"SCAN", "0", "COUNT"}},
		{ErrSyntax, []string{"SCAN", "0", "MATCH"}},
		{ErrSyntax, []string{"SCAN", "0", "TYPE"}},
		{ErrSyntax, []string{"SCAN", "0", "foo"}},
		{"ERR unknown type name 'foo'", []string{"SCAN", "0", "TYPE", "foo"}},
		{"ERR unknown type name 'Foo'", []string{"SCAN", "0", "COUNT", "5", "TYPE", "Foo", "COUNT", "0"}},
		{ErrSyntax, []string{"SCAN", "0", "COUNT", "0", "TYPE", "foo"}},
		{"ERR NOVALUES option can only be used in HSCAN", []string{"SCAN", "0", "NOVALUES"}},
		{"ERR NOSCORES option can only be used in ZSCAN", []string{"SCAN", "0", "noscores"}},
	} {
		refuse(t, s, 2, errReply(c.want), c.args...)
	}
}

func TestParseScanCursor(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "1": 1, "01": 1, "-0": 0, " 5": 5, "\t5": 5, "+5": 5, "9223372036854775807": 9223372036854775807,
		"-18446744073709551615": 1, "5\x00junk": 5,
	} {
		if got, ok := ParseScanCursor([]byte(in)); !ok || got != uint64(want) {
			t.Errorf("ParseScanCursor(%q) = %d, %v", in, got, ok)
		}
	}
	if got, ok := ParseScanCursor([]byte("18446744073709551615")); !ok || got != 1<<64-1 {
		t.Errorf("max cursor = %d, %v", got, ok)
	}
	for _, in := range []string{"", "-1", "x", "1 ", "- 1", "0x10", "18446744073709551616", " ", "+", "\x00", "1.0"} {
		if _, ok := ParseScanCursor([]byte(in)); ok {
			t.Errorf("ParseScanCursor(%q) accepted", in)
		}
	}
}

func TestRename(t *testing.T) {
	s := New(16)
	run(t, s, 2, "SET", "a", "1")
	run(t, s, 2, "HSET", "h", "f", "v")
	refuse(t, s, 2, errReply(ErrNoSuchKey), "RENAME", "nokey", "x")
	refuse(t, s, 2, errReply(ErrNoSuchKey), "RENAME", "nokey", "nokey")
	refuse(t, s, 2, errReply(ErrNoSuchKey), "RENAMENX", "nokey", "a")
	refuse(t, s, 2, okReply, "RENAME", "a", "a")
	refuse(t, s, 2, ":0\r\n", "RENAMENX", "a", "a")
	refuse(t, s, 2, ":0\r\n", "RENAMENX", "a", "h")
	runExpect(t, s, 2, []expectStep{
		ex(okReply, "RENAME", "a", "h"), // overwrites a hash with a string
		ex("+string\r\n", "TYPE", "h"),
		ex(":0\r\n", "EXISTS", "a"),
		ex(":1\r\n", "RENAMENX", "h", "b"),
		ex(bulk("1"), "GET", "b"),
		ex(":1\r\n", "DBSIZE"),
	})
	_, c := runCtx(t, s, 0, 2, "RENAME", "b", "c")
	if !c.Changed() {
		t.Fatal("RENAME recorded no change")
	}
}

func TestFlush(t *testing.T) {
	s := New(16)
	run(t, s, 2, "SET", "a", "1")
	runDB(t, s, 1, 2, "SET", "b", "1")
	for _, c := range [][]string{
		{"FLUSHDB", "x"}, {"FLUSHDB", "ASYNC", "SYNC"}, {"FLUSHDB", "sync", "x"}, {"FLUSHALL", "now"}, {"FLUSHALL", "async", "async"},
	} {
		refuse(t, s, 2, errReply(ErrSyntax), c...)
	}
	w := &Watcher{}
	wMissing := &Watcher{}
	wOther := &Watcher{}
	s.Watch(w, 0, "a")
	s.Watch(wMissing, 0, "missing")
	s.Watch(wOther, 1, "b")
	before := s.DirtyCount
	got, c := runCtx(t, s, 0, 2, "FLUSHDB", "async")
	if got != okReply || !c.Changed() || s.DirtyCount == before {
		t.Fatalf("FLUSHDB = %q changed=%v", got, c.Changed())
	}
	if !w.Touched || wMissing.Touched || wOther.Touched {
		t.Fatalf("FLUSHDB touched: a=%v missing=%v db1=%v", w.Touched, wMissing.Touched, wOther.Touched)
	}
	if s.DB(0).Len() != 0 || s.DB(1).Len() != 1 {
		t.Fatal("FLUSHDB flushed the wrong databases")
	}
	// An empty database still counts a change (always propagated).
	if _, c := runCtx(t, s, 0, 2, "flushdb"); !c.Changed() {
		t.Fatal("FLUSHDB on an empty database recorded no change")
	}
	got, c = runCtx(t, s, 0, 2, "FLUSHALL", "SYNC")
	if got != okReply || !c.Changed() || !wOther.Touched || s.DB(1).Len() != 0 {
		t.Fatalf("FLUSHALL = %q changed=%v touched=%v", got, c.Changed(), wOther.Touched)
	}
}

func TestMemoryUsage(t *testing.T) {
	s := New(16)
	run(t, s, 2, "SET", "s", "v")
	run(t, s, 2, "SET", "n", "12345")
	run(t, s, 2, "SET", "long", strings.Repeat("x", 1000))
	args := []string{"HSET", "big"}
	for i := 0; i < 1000; i++ {
		args = append(args, "field"+strconv.Itoa(i), "value")
	}
	run(t, s, 2, args...)
	run(t, s, 2, "HSET", "small", "f", "v")
	usage := func(args ...string) int64 {
		got := run(t, s, 2, append([]string{"MEMORY", "USAGE"}, args...)...)
		if got[0] != ':' {
			t.Fatalf("MEMORY USAGE %q = %q", args, got)
		}
		n, _ := strconv.ParseInt(got[1:len(got)-2], 10, 64)
		if n <= 0 {
			t.Fatalf("MEMORY USAGE %q = %d", args, n)
		}
		return n
	}
	if usage("long") < 1000 || usage("long") <= usage("s") {
		t.Errorf("a 1000-byte string is estimated at %d bytes", usage("long"))
	}
	if usage("big") <= 1000*16 || usage("big") <= usage("small") {
		t.Errorf("a 1000-field hash is estimated at %d bytes", usage("big"))
	}
	if all, sampled := usage("big", "SAMPLES", "0"), usage("big"); all != sampled {
		t.Errorf("uniform hash: SAMPLES 0 gives %d, default %d", all, sampled)
	}
	usage("n")
	usage("small", "samples", "3", "SAMPLES", "1")
	runExpect(t, s, 2, []expectStep{
		ex(nilBulk, "MEMORY", "USAGE", "nokey"),
		ex(nilBulk, "memory", "usage", "nokey", "SAMPLES", "5"),
		ex(errReply(ErrNotInteger), "MEMORY", "USAGE", "s", "SAMPLES", "x"),
		ex(errReply(ErrNotInteger), "MEMORY", "USAGE", "nokey", "SAMPLES", "x"),
		ex(errReply(ErrSyntax), "MEMORY", "USAGE", "s", "SAMPLES", "-1"),
		ex(errReply(ErrSyntax), "MEMORY", "USAGE", "s", "SAMPLES"),
		ex(errReply(ErrSyntax), "MEMORY", "USAGE", "nokey", "foo"),
		ex("-ERR wrong number of arguments for 'memory' command\r\n", "MEMORY"),
		ex("-ERR wrong number of arguments for 'memory|usage' command\r\n", "MEMORY", "USAGE"),
		ex("-ERR unknown subcommand 'foo'. Try MEMORY HELP.\r\n", "MEMORY", "foo"),
		ex("+OK\r\n", "MEMORY", "PURGE"),
		ex("+OK\r\n", "memory", "purge"),
		ex("-ERR wrong number of arguments for 'memory|purge' command\r\n", "MEMORY", "PURGE", "x"),
	})
	if got := run(t, s, 2, "HGET", "big", "field0"); got != "$5\r\nvalue\r\n" {
		t.Errorf("MEMORY PURGE lost data: HGET big f0 = %q", got)
	}
	runExpect(t, s, 3, []expectStep{ex(nilResp3, "MEMORY", "USAGE", "nokey")})
}

// The flags and key positions COMMAND INFO reports for each command
// (Valkey 8.0's command table).
func TestCommandSpecs(t *testing.T) {
	want := map[string]string{
		"hset": "-4 write,denyoom,fast 1 1 1", "hsetnx": "4 write,denyoom,fast 1 1 1",
		"hmset": "-4 write,denyoom,fast 1 1 1", "hget": "3 readonly,fast 1 1 1",
		"hmget": "-3 readonly,fast 1 1 1", "hgetall": "2 readonly 1 1 1",
		"hkeys": "2 readonly 1 1 1", "hvals": "2 readonly 1 1 1", "hdel": "-3 write,fast 1 1 1",
		"hexists": "3 readonly,fast 1 1 1", "hlen": "2 readonly,fast 1 1 1",
		"hstrlen": "3 readonly,fast 1 1 1", "hincrby": "4 write,denyoom,fast 1 1 1",
		"hincrbyfloat": "4 write,denyoom,fast 1 1 1", "hscan": "-3 readonly 1 1 1",
		"hrandfield": "-2 readonly 1 1 1",
		"get":        "2 readonly,fast 1 1 1", "set": "-3 write,denyoom 1 1 1",
		"incr": "2 write,denyoom,fast 1 1 1", "decr": "2 write,denyoom,fast 1 1 1",
		"incrby": "3 write,denyoom,fast 1 1 1", "decrby": "3 write,denyoom,fast 1 1 1",
		"mget": "-2 readonly,fast 1 -1 1", "mset": "-3 write,denyoom 1 -1 2",
		"strlen": "2 readonly,fast 1 1 1", "append": "3 write,denyoom,fast 1 1 1",
		"del": "-2 write 1 -1 1", "unlink": "-2 write,fast 1 -1 1", "exists": "-2 readonly,fast 1 -1 1",
		"type": "2 readonly,fast 1 1 1", "keys": "2 readonly 0 0 0", "scan": "-2 readonly 0 0 0",
		"rename": "3 write 1 2 1", "renamenx": "3 write,fast 1 2 1", "dbsize": "1 readonly,fast 0 0 0",
		"flushdb": "-1 write 0 0 0", "flushall": "-1 write 0 0 0", "memory": "-2  0 0 0",
		"memory|usage": "-3 readonly 2 2 1", "memory|purge": "2 loading 0 0 0",
	}
	tab := harnessTable()
	for name, w := range want {
		cs := tab[name]
		if cs == nil {
			t.Errorf("%s is not registered", name)
			continue
		}
		names := make([]string, len(cs.Flags))
		for i, f := range cs.Flags {
			names[i] = f.String()
		}
		got := strconv.Itoa(cs.Arity) + " " + strings.Join(names, ",") + " " +
			strconv.Itoa(cs.FirstKey) + " " + strconv.Itoa(cs.LastKey) + " " + strconv.Itoa(cs.Step)
		if got != w {
			t.Errorf("%s: %q, want %q", name, got, w)
		}
	}
}

// A scan whose snapshot was built before most keys were deleted still moves
// about COUNT live keys a call (docs/compat.md: COUNT samples present names,
// looking at no more than 10*COUNT positions, and a scan rebuilds its
// snapshot when eight in nine of its names are gone), and returns every
// survivor once. Before these rules, 5,000 snapshot names at COUNT 10 took
// 500 calls however few keys were left.
func TestScanAfterMassDeletion(t *testing.T) {
	for _, c := range []struct {
		keep       int // keep every keep-th key after the first page
		minC, maxC int // calls wanted
		why        string
	}{
		{5, 95, 110, "1,000 survivors, no rebuild (a fifth are left): about 10 a call"},
		{10, 45, 60, "500 survivors, the snapshot rebuilt: about 10 a call"},
		{5000, 2, 2, "one survivor, the snapshot rebuilt: the next call ends the scan"},
	} {
		s := New(16)
		const n = 5000
		for i := 0; i < n; i++ {
			run(t, s, 2, "SET", "k"+strconv.Itoa(i), "v")
		}
		seen, pages := scanAll(t, s, []string{"COUNT", "10"}, func(page int) {
			if page == 1 {
				for i := 0; i < n; i++ {
					if i%c.keep != 0 {
						run(t, s, 2, "DEL", "k"+strconv.Itoa(i))
					}
				}
			}
		})
		for i := 0; i < n; i += c.keep {
			if k := "k" + strconv.Itoa(i); seen[k] != 1 {
				t.Fatalf("keep 1 in %d: survivor %s returned %d times", c.keep, k, seen[k])
			}
		}
		if pages < c.minC || pages > c.maxC {
			t.Fatalf("keep 1 in %d: the scan took %d calls at COUNT 10, want %d-%d (%s)", c.keep, pages, c.minC, c.maxC, c.why)
		}
	}
}

// HSCAN and ZSCAN of big collections follow the same rule.
func TestCollScanAfterMassDeletion(t *testing.T) {
	s := New(16)
	const n = 3000
	for i := 0; i < n; i++ {
		run(t, s, 2, "HSET", "h", "f"+strconv.Itoa(i), "v")
		run(t, s, 2, "ZADD", "z", strconv.Itoa(i), "m"+strconv.Itoa(i))
	}
	for _, c := range []struct{ cmd, key, pre, only, del string }{
		{"HSCAN", "h", "f", "NOVALUES", "HDEL"}, {"ZSCAN", "z", "m", "NOSCORES", "ZREM"},
	} {
		cursor, calls, seen := "0", 0, map[string]int{}
		for {
			node, _ := parseRESP(t, run(t, s, 2, c.cmd, c.key, cursor, "COUNT", "10", c.only))
			for _, k := range node.kids[1].kids {
				seen[k.text]++
			}
			cursor = node.kids[0].text
			calls++
			if calls == 1 { // keep every tenth name
				for i := 0; i < n; i++ {
					if i%10 != 0 {
						run(t, s, 2, c.del, c.key, c.pre+strconv.Itoa(i))
					}
				}
			}
			if cursor == "0" || calls > 10000 {
				break
			}
		}
		for i := 0; i < n; i += 10 {
			if m := c.pre + strconv.Itoa(i); seen[m] != 1 {
				t.Fatalf("%s: survivor %s returned %d times", c.cmd, m, seen[m])
			}
		}
		// 300 survivors at about 10 a call, against 300 calls by snapshot size.
		if calls > 36 || calls < 28 {
			t.Fatalf("%s took %d calls over 300 survivors at COUNT 10, want about 30", c.cmd, calls)
		}
	}
}

// A page looks at no more than 10*COUNT snapshot names, live or not, as
// Valkey's SCAN visits at most 10*COUNT buckets a call.
func TestScanPageLooksAtTenTimesCount(t *testing.T) {
	sn := buildScanSnapshot(nil, 0, 1000, func(yield func(string)) {
		for i := 0; i < 1000; i++ {
			yield("n" + strconv.Itoa(i))
		}
	})
	only := sn.names[500].name
	looked := 0
	live := func(name string) bool { looked++; return name == only }
	names, next := sn.page(0, 10, live)
	if len(names) < 100 || len(names) > 101 || looked != 100 || next == 0 {
		t.Fatalf("page over dead names: %d names, %d looked at, next %d; want 100 (ties aside), 100, non-zero", len(names), looked, next)
	}
	looked = 0
	names, next = sn.page(sn.names[450].pos, 3, live)
	if looked != 30 || next == 0 {
		t.Fatalf("page from 450 at COUNT 3: %d looked at, next %d", looked, next)
	}
	looked = 0
	names, _ = sn.page(sn.names[495].pos, 1, live)
	if looked != 6 || names[len(names)-1].pos != sn.names[500].pos {
		t.Fatalf("page from 495 at COUNT 1 looked at %d names, ended at %q; want 6, ending on the live one", looked, names[len(names)-1].name)
	}
}
