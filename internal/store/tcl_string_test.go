package store

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// Valkey's unit/type/string.tcl, case by case, on the store clock (the
// Tcl's "after" is @advance). Cases that use lists or sets for a key of
// the wrong type use a hash: the reply is the same WRONGTYPE error.
var tclStringCases = []tclCase{
	{"SET and GET an item", `
		SET x foobar
		GET x => foobar`},
	{"SET and GET an empty item", `
		SET x ""
		GET x =>`},
	{"SETNX target key missing", `
		DEL novar
		SETNX novar foobared => 1
		GET novar => foobared`},
	{"SETNX target key exists", `
		SET novar foobared
		SETNX novar blabla => 0
		GET novar => foobared`},
	{"SETNX against not-expired volatile key", `
		SET x 10
		EXPIRE x 10000
		SETNX x 20 => 0
		GET x => 10`},
	{"SETNX against expired volatile key", `
		SET x 10
		EXPIRE x 1
		@advance 2000
		SETNX x 20 => 1
		GET x => 20`},
	{"GETEX EX option", `
		DEL foo
		SET foo bar
		GETEX foo ex 10 => bar
		TTL foo => 10`},
	{"GETEX PX option", `
		DEL foo
		SET foo bar
		GETEX foo px 10000
		PTTL foo => 10000`},
	{"GETEX EXAT option", `
		DEL foo
		SET foo bar
		GETEX foo exat $S+10
		TTL foo => 10`},
	{"GETEX PXAT option", `
		DEL foo
		SET foo bar
		GETEX foo pxat $MS+10000
		PTTL foo => 10000`},
	{"GETEX PERSIST option", `
		DEL foo
		SET foo bar ex 10
		TTL foo => 10
		GETEX foo persist
		TTL foo => -1`},
	{"GETEX no option", `
		DEL foo
		SET foo bar
		GETEX foo
		GETEX foo => bar`},
	{"GETEX syntax errors", `GETEX foo nonexistent-option => -*syntax*`},
	{"GETEX and GET expired key or not exist", `
		DEL foo
		SET foo bar px 1
		@advance 2
		GETEX foo =>
		GET foo =>`},
	{"GETEX no arguments", `GETEX => -*wrong number of arguments for 'getex' command`},
	{"GETDEL command", `
		DEL foo
		SET foo bar
		GETDEL foo => bar
		GETDEL foo =>`},
	{"MGET", `
		FLUSHDB
		SET foo BAR
		SET bar FOO
		MGET foo bar => BAR FOO`},
	{"MGET against nonexistent key", `MGET foo baazz bar => BAR {} FOO`},
	{"MGET against non-string key (a hash for the Tcl's set)", `
		HSET myset ciao bau
		MGET foo baazz bar myset => BAR {} FOO {}`},
	{"GETSET (set new value)", `
		DEL foo
		GETSET foo xyz =>
		GET foo => xyz`},
	{"GETSET (replace old value)", `
		SET foo bar
		GETSET foo xyz => bar
		GET foo => xyz`},
	{"MSET base case", `
		MSET x 10 y {foo bar} z zz
		MGET x y z => 10 {foo bar} zz`},
	{"MSET/MSETNX wrong number of args", `
		MSET x 10 y {foo bar} z => -*wrong number of arguments for 'mset' command
		MSETNX x 20 y {foo bar} z => -*wrong number of arguments for 'msetnx' command`},
	{"MSET with already existing - same key twice", `
		SET x x
		MSET x xxx x yyy => OK
		GET x => yyy`},
	{"MSETNX with already existent key", `
		MSETNX x1 xxx y2 yyy x 20 => 0
		EXISTS x1 => 0
		EXISTS y2 => 0`},
	{"MSETNX with not existing keys", `
		MSETNX x1 xxx y2 yyy => 1
		GET x1 => xxx
		GET y2 => yyy`},
	{"MSETNX with not existing keys - same key twice", `
		DEL x1
		MSETNX x1 xxx x1 yyy => 1
		GET x1 => yyy`},
	{"MSETNX with already existing keys - same key twice", `
		MSETNX x1 xxx x1 zzz => 0
		GET x1 => yyy`},
	{"STRLEN against non-existing key", `STRLEN notakey => 0`},
	{"STRLEN against integer-encoded value", `
		SET myinteger -555
		STRLEN myinteger => 4`},
	{"STRLEN against plain string", `
		SET mystring {foozzz0123456789 baz}
		STRLEN mystring => 20`},
	{"SETRANGE against non-existing key", `
		DEL mykey
		SETRANGE mykey 0 foo => 3
		GET mykey => foo
		DEL mykey
		SETRANGE mykey 0 "" => 0
		EXISTS mykey => 0`},
	{"SETRANGE against string-encoded key", `
		SET mykey foo
		SETRANGE mykey 0 b => 3
		GET mykey => boo
		SET mykey foo
		SETRANGE mykey 0 "" => 3
		GET mykey => foo
		SET mykey foo
		SETRANGE mykey 1 b => 3
		GET mykey => fbo`},
	{"SETRANGE against integer-encoded key", `
		SET mykey 1234
		OBJECT ENCODING mykey => int
		SETRANGE mykey 0 2 => 4
		OBJECT ENCODING mykey => raw
		GET mykey => 2234
		SET mykey 1234
		SETRANGE mykey 0 "" => 4
		OBJECT ENCODING mykey => int
		GET mykey => 1234
		SET mykey 1234
		SETRANGE mykey 1 3 => 4
		OBJECT ENCODING mykey => raw
		GET mykey => 1334`},
	{"SETRANGE against key with wrong type", `
		DEL mykey
		HSET mykey foo bar
		SETRANGE mykey 0 bar => -WRONGTYPE*`},
	{"SETRANGE with out of range offset", `
		DEL mykey
		SETRANGE mykey 536870908 world => -*maximum allowed size*
		SET mykey hello
		SETRANGE mykey -1 world => -*out of range*
		SETRANGE mykey 536870908 world => -*maximum allowed size*`},
	{"GETRANGE against non-existing key", `
		DEL mykey
		GETRANGE mykey 0 -1 =>`},
	{"GETRANGE against wrong key type", `
		HSET lkey1 list x
		GETRANGE lkey1 0 -1 => -WRONGTYPE Operation against a key holding the wrong kind of value*`},
	{"GETRANGE against string value", `
		SET mykey {Hello World}
		GETRANGE mykey 0 3 => Hell
		GETRANGE mykey 0 -1 => Hello World
		GETRANGE mykey -4 -1 => orld
		GETRANGE mykey 5 3 =>
		GETRANGE mykey 5 5000 =>  World
		GETRANGE mykey -5000 10000 => Hello World`},
	{"GETRANGE against integer-encoded value", `
		SET mykey 1234
		GETRANGE mykey 0 2 => 123
		GETRANGE mykey 0 -1 => 1234
		GETRANGE mykey -3 -1 => 234
		GETRANGE mykey 5 3 =>
		GETRANGE mykey 3 5000 => 4
		GETRANGE mykey -5000 10000 => 1234`},
	{"Coverage: SUBSTR", `
		SET key abcde
		SUBSTR key 0 0 => a
		SUBSTR key 0 3 => abcd
		SUBSTR key -4 -1 => bcde
		SUBSTR key -1 -3 =>
		SUBSTR key 7 8 =>
		SUBSTR nokey 0 1 =>`},
	{"Extended SET can detect syntax errors", `SET foo bar non-existing-option => -*syntax*`},
	{"Extended SET NX option", `
		DEL foo
		SET foo 1 nx => OK
		SET foo 2 nx =>
		GET foo => 1`},
	{"Extended SET XX option", `
		DEL foo
		SET foo 1 xx =>
		SET foo bar
		SET foo 2 xx => OK
		GET foo => 2`},
	{"Extended SET GET option", `
		DEL foo
		SET foo bar
		SET foo bar2 GET => bar
		GET foo => bar2`},
	{"Extended SET GET option with no previous value", `
		DEL foo
		SET foo bar GET =>
		GET foo => bar`},
	{"Extended SET GET option with XX", `
		DEL foo
		SET foo bar
		SET foo baz GET XX => bar
		GET foo => baz`},
	{"Extended SET GET option with XX and no previous value", `
		DEL foo
		SET foo bar GET XX =>
		GET foo =>`},
	{"Extended SET GET option with NX", `
		DEL foo
		SET foo bar GET NX =>
		GET foo => bar`},
	{"Extended SET GET option with NX and previous value", `
		DEL foo
		SET foo bar
		SET foo baz GET NX => bar
		GET foo => bar`},
	{"Extended SET GET with incorrect type should result in wrong type error", `
		DEL foo
		HSET foo waffle x
		SET foo bar GET => -*WRONGTYPE*
		HGET foo waffle => x`},
	{"Extended SET EX option", `
		DEL foo
		SET foo bar ex 10
		TTL foo => 10`},
	{"Extended SET PX option", `
		DEL foo
		SET foo bar px 10000
		TTL foo => 10`},
	{"Extended SET EXAT option", `
		DEL foo
		SET foo bar exat $S+10
		TTL foo => 10`},
	{"Extended SET PXAT option", `
		DEL foo
		SET foo bar pxat $MS+10000
		TTL foo => 10`},
	{"SET EXAT / PXAT Expiration time is expired (without DEBUG: EXISTS)", `
		SET foo bar
		SET foo bar exat $S-100 => OK
		EXISTS foo => 0
		SET foo bar
		SET foo bar pxat $MS-10000 => OK
		EXISTS foo => 0
		DEL foo
		SET foo bar exat $S-100 => OK
		EXISTS foo => 0
		INCR foo => 1`},
	{"Extended SET using multiple options at once", `
		SET foo val
		SET foo bar xx px 10000 => OK
		TTL foo => 10`},
	{"GETRANGE with huge ranges, Github issue #1844", `
		SET foo bar
		GETRANGE foo 0 4294967297 => bar`},
	{"APPEND modifies the encoding from int to raw", `
		DEL foo
		SET foo 1
		OBJECT ENCODING foo => int
		APPEND foo 2
		GET foo => 12
		OBJECT ENCODING foo => raw
		SET bar 12
		OBJECT ENCODING bar => int
		GET bar => 12`},
}

// Valkey's unit/type/incr.tcl (the Valkey 8.0.1 part: INCREX is newer).
var tclIncrCases = []tclCase{
	{"INCR against nonexistent key", `
		INCR novar => 1
		GET novar => 1`},
	{"INCR against key created by incr itself", `INCR novar => 2`},
	{"DECR against key created by incr", `DECR novar => 1`},
	{"DECR against key is not exist and incr", `
		DEL novar_not_exist
		DECR novar_not_exist => -1
		INCR novar_not_exist => 0`},
	{"INCR against key originally set with SET", `
		SET novar 100
		INCR novar => 101`},
	{"INCR over 32bit value", `
		SET novar 17179869184
		INCR novar => 17179869185`},
	{"INCRBY over 32bit value with over 32bit increment", `
		SET novar 17179869184
		INCRBY novar 17179869184 => 34359738368`},
	{"INCR fails against key with spaces (left)", `
		SET novar {    11}
		INCR novar => -ERR*`},
	{"INCR fails against key with spaces (right)", `
		SET novar {11    }
		INCR novar => -ERR*`},
	{"INCR fails against key with spaces (both)", `
		SET novar {    11    }
		INCR novar => -ERR*`},
	{"DECRBY negation overflow", `
		SET x 0
		DECRBY x -9223372036854775808 => -ERR*`},
	{"INCR fails against a key holding a list (a hash here)", `
		HSET mylist 1 1
		INCR mylist => -WRONGTYPE*`},
	{"DECRBY over 32bit value with over 32bit increment, negative res", `
		SET novar 17179869184
		DECRBY novar 17179869185 => -1`},
	{"DECRBY against key is not exist", `
		DEL key_not_exist
		DECRBY key_not_exist 1 => -1`},
	{"INCRBYFLOAT against nonexistent key", `
		DEL novar
		INCRBYFLOAT novar 1 => 1
		GET novar => 1
		INCRBYFLOAT novar 0.25 => 1.25
		GET novar => 1.25`},
	{"INCRBYFLOAT against key originally set with SET", `
		SET novar 1.5
		INCRBYFLOAT novar 1.5 => 3`},
	{"INCRBYFLOAT over 32bit value", `
		SET novar 17179869184
		INCRBYFLOAT novar 1.5 => 17179869185.5`},
	{"INCRBYFLOAT over 32bit value with over 32bit increment", `
		SET novar 17179869184
		INCRBYFLOAT novar 17179869184 => 34359738368`},
	{"INCRBYFLOAT fails against key with spaces (left)", `
		SET novar {    11}
		INCRBYFLOAT novar 1.0 => -ERR *valid*`},
	{"INCRBYFLOAT fails against key with spaces (right)", `
		SET novar {11    }
		INCRBYFLOAT novar 1.0 => -ERR *valid*`},
	{"INCRBYFLOAT fails against key with spaces (both)", `
		SET novar { 11 }
		INCRBYFLOAT novar 1.0 => -ERR *valid*`},
	{"INCRBYFLOAT fails against a key holding a list (a hash here)", `
		DEL mylist
		HSET mylist 1 1
		INCRBYFLOAT mylist 1.0 => -WRONGTYPE*
		DEL mylist`},
	{"INCRBYFLOAT does not allow NaN or Infinity", `
		SET foo 0
		INCRBYFLOAT foo +inf => -ERR *would produce*`},
	{"INCRBYFLOAT decrement", `
		SET foo 1
		INCRBYFLOAT foo -1.1 => -0.1`},
	{"string to double with null terminator", `
		SET foo 1
		SETRANGE foo 2 2
		INCRBYFLOAT foo 1 => -ERR *valid*`},
	{"No negative zero", `
		DEL foo
		INCRBYFLOAT foo 0.024390243902439025
		INCRBYFLOAT foo -0.024390243902439025
		GET foo => 0`},
	{"INCRBY INCRBYFLOAT DECRBY against unhappy path", `
		DEL mykeyincr
		INCR mykeyincr v => -*ERR wrong number of arguments*
		DECR mykeyincr v => -*ERR wrong number of arguments*
		INCRBY mykeyincr v => -*value is not an integer or out of range*
		INCRBY mykeyincr 1.5 => -*value is not an integer or out of range*
		DECRBY mykeyincr v => -*value is not an integer or out of range*
		DECRBY mykeyincr 1.5 => -*value is not an integer or out of range*
		INCRBYFLOAT mykeyincr v => -*value is not a valid float*`},
	{"incr operation should update encoding from raw to int", encodingCase("INCR", "13")},
	{"decr operation should update encoding from raw to int", encodingCase("DECR", "11")},
	{"incrby operation should update encoding from raw to int", encodingCase("INCRBY foo 1", "13")},
	{"decrby operation should update encoding from raw to int", encodingCase("DECRBY foo 1", "11")},
}

func encodingCase(cmd, want string) string {
	if !strings.Contains(cmd, " ") {
		cmd += " foo"
	}
	return `
		SET foo 1
		OBJECT ENCODING foo => int
		GET foo => 1
		APPEND foo 2
		OBJECT ENCODING foo => raw
		GET foo => 12
		` + cmd + `
		OBJECT ENCODING foo => int
		GET foo => ` + want
}

// Valkey's unit/expire.tcl on the store clock: "after N" is @advance N,
// so the timing cases are exact instead of retried.
var tclExpireCases = []tclCase{
	{"EXPIRE - set timeouts multiple times", `
		SET x foobar
		EXPIRE x 5 => 1
		TTL x => 5
		EXPIRE x 10 => 1
		TTL x => 10
		EXPIRE x 2`},
	{"EXPIRE - It should be still possible to read 'x'", `GET x => foobar`},
	{"EXPIRE - After 2.1 seconds the key should no longer be here", `
		@advance 2100
		GET x =>
		EXISTS x => 0`},
	{"EXPIRE - write on expire should work (a hash for the Tcl's list)", `
		DEL x
		HSET x a foo
		EXPIRE x 1000
		HSET x b bar
		HGETALL x => a foo b bar
		TTL x => 1000`},
	{"EXPIREAT - Check for EXPIRE alike behavior", `
		DEL x
		SET x foo
		EXPIREAT x $S+15
		TTL x => 15`},
	{"SETEX - Set + Expire combo operation. Check for TTL", `
		SETEX x 12 test
		TTL x => 12`},
	{"SETEX - Check value", `GET x => test`},
	{"SETEX - Overwrite old key", `
		SETEX y 1 foo
		GET y => foo`},
	{"SETEX - Wait for the key to expire", `
		@advance 1100
		GET y =>`},
	{"SETEX - Wrong time parameter", `SETEX z -10 foo => -*invalid expire*`},
	{"PERSIST can undo an EXPIRE", `
		SET x foo
		EXPIRE x 50
		TTL x => 50
		PERSIST x => 1
		TTL x => -1
		GET x => foo`},
	{"PERSIST returns 0 against non existing or non volatile keys", `
		SET x foo
		PERSIST foo => 0
		PERSIST nokeyatall => 0`},
	{"EXPIRE precision is now the millisecond", `
		DEL x
		SETEX x 1 somevalue
		@advance 800
		GET x => somevalue
		# at its time exactly the key is still there (Valkey: now > when)
		@advance 200
		GET x => somevalue
		@advance 1
		GET x =>`},
	{"PSETEX can set sub-second expires", `
		DEL x
		PSETEX x 100 somevalue
		GET x => somevalue
		@advance 101
		GET x =>`},
	{"PEXPIRE can set sub-second expires", `
		SET x somevalue
		PEXPIRE x 100
		GET x => somevalue
		@advance 101
		GET x =>`},
	{"PEXPIREAT can set sub-second expires", `
		SET x somevalue
		PEXPIREAT x $MS+200
		GET x => somevalue
		@advance 201
		GET x =>`},
	{"TTL returns time to live in seconds", `
		DEL x
		SETEX x 10 somevalue
		TTL x => 10`},
	{"PTTL returns time to live in milliseconds", `
		DEL x
		SETEX x 1 somevalue
		PTTL x => 1000`},
	{"TTL / PTTL / EXPIRETIME / PEXPIRETIME return -1 if key has no expire", `
		DEL x
		SET x hello
		TTL x => -1
		PTTL x => -1
		EXPIRETIME x => -1
		PEXPIRETIME x => -1`},
	{"TTL / PTTL / EXPIRETIME / PEXPIRETIME return -2 if key does not exit", `
		DEL x
		TTL x => -2
		PTTL x => -2
		EXPIRETIME x => -2
		PEXPIRETIME x => -2`},
	{"EXPIRETIME returns absolute expiration time in seconds", `
		DEL x
		SET x somevalue exat $S+100
		EXPIRETIME x => $S+100`},
	{"PEXPIRETIME returns absolute expiration time in milliseconds", `
		DEL x
		SET x somevalue pxat $MS+100000
		PEXPIRETIME x => $MS+100000`},
	{"5 keys in, 5 keys out", `
		FLUSHDB
		SET a c
		EXPIRE a 5
		SET t c
		SET e c
		SET s c
		SET foo b
		DBSIZE => 5
		DEL a`},
	{"EXPIRE with empty string as TTL should report an error", `
		SET foo bar
		EXPIRE foo "" => -*not an integer*`},
	{"SET with EX with big integer should report an error", `SET foo bar EX 10000000000000000 => -ERR invalid expire time in 'set' command`},
	{"SET with EX with smallest integer should report an error", `SET foo bar EX -9999999999999999 => -ERR invalid expire time in 'set' command`},
	{"GETEX with big integer should report an error", `
		SET foo bar
		GETEX foo EX 10000000000000000 => -ERR invalid expire time in 'getex' command`},
	{"GETEX with smallest integer should report an error", `
		SET foo bar
		GETEX foo EX -9999999999999999 => -ERR invalid expire time in 'getex' command`},
	{"GETEX with error expiration time", `
		DEL foo
		GETEX foo ex abcd =>
		SET foo bar
		GETEX foo px -abcd => -ERR value is not an integer or out of range
		DEL foo
		HSET foo f v
		GETEX foo exat -abcd => -WRONGTYPE*
		DEL foo`},
	{"EXPIRE with big integer overflows when converted to milliseconds", `
		SET foo bar
		EXPIRE foo 9223370399119966 => -ERR invalid expire time in 'expire' command
		EXPIRE foo 9223372036854776 => -ERR invalid expire time in 'expire' command
		EXPIRE foo 10000000000000000 => -ERR invalid expire time in 'expire' command
		EXPIRE foo 18446744073709561 => -ERR invalid expire time in 'expire' command
		TTL foo => -1`},
	{"PEXPIRE with big integer overflow when basetime is added", `
		SET foo bar
		PEXPIRE foo 9223372036854770000 => -ERR invalid expire time in 'pexpire' command`},
	{"EXPIRE with big negative integer", `
		SET foo bar
		EXPIRE foo -9223372036854776 => -ERR invalid expire time in 'expire' command
		EXPIRE foo -9999999999999999 => -ERR invalid expire time in 'expire' command
		TTL foo => -1`},
	{"PEXPIREAT with big integer works", `
		SET foo bar
		PEXPIREAT foo 9223372036854770000 => 1`},
	{"PEXPIREAT with big negative integer works", `
		SET foo bar
		PEXPIREAT foo -9223372036854770000
		TTL foo => -2`},
	{"SET command will remove expire", `
		SET foo bar EX 100
		SET foo bar
		TTL foo => -1`},
	{"SET - use KEEPTTL option, TTL should not be removed", `
		SET foo bar EX 100
		SET foo bar KEEPTTL
		TTL foo => 100`},
	{"GETEX use of PERSIST option should remove TTL", `
		SET foo bar EX 100
		GETEX foo PERSIST
		TTL foo => -1`},
	{"EXPIRE with NX option on a key with ttl", `
		SET foo bar EX 100
		EXPIRE foo 200 NX => 0
		TTL foo => 100`},
	{"EXPIRE with NX option on a key without ttl", `
		SET foo bar
		EXPIRE foo 200 NX => 1
		TTL foo => 200`},
	{"EXPIRE with XX option on a key with ttl", `
		SET foo bar EX 100
		EXPIRE foo 200 XX => 1
		TTL foo => 200`},
	{"EXPIRE with XX option on a key without ttl", `
		SET foo bar
		EXPIRE foo 200 XX => 0
		TTL foo => -1`},
	{"EXPIRE with GT option on a key with lower ttl", `
		SET foo bar EX 100
		EXPIRE foo 200 GT => 1
		TTL foo => 200`},
	{"EXPIRE with GT option on a key with higher ttl", `
		SET foo bar EX 200
		EXPIRE foo 100 GT => 0
		TTL foo => 200`},
	{"EXPIRE with GT option on a key without ttl", `
		SET foo bar
		EXPIRE foo 200 GT => 0
		TTL foo => -1`},
	{"EXPIRE with LT option on a key with higher ttl", `
		SET foo bar EX 100
		EXPIRE foo 200 LT => 0
		TTL foo => 100`},
	{"EXPIRE with LT option on a key with lower ttl", `
		SET foo bar EX 200
		EXPIRE foo 100 LT => 1
		TTL foo => 100`},
	{"EXPIRE with LT option on a key without ttl", `
		SET foo bar
		EXPIRE foo 100 LT => 1
		TTL foo => 100`},
	{"EXPIRE with LT and XX option on a key with ttl", `
		SET foo bar EX 200
		EXPIRE foo 100 LT XX => 1
		TTL foo => 100`},
	{"EXPIRE with LT and XX option on a key without ttl", `
		SET foo bar
		EXPIRE foo 200 LT XX => 0
		TTL foo => -1`},
	{"EXPIRE with conflicting options: LT GT", `EXPIRE foo 200 LT GT => -ERR GT and LT options at the same time are not compatible`},
	{"EXPIRE with conflicting options: NX GT", `EXPIRE foo 200 NX GT => -ERR NX and XX, GT or LT options at the same time are not compatible`},
	{"EXPIRE with conflicting options: NX LT", `EXPIRE foo 200 NX LT => -ERR NX and XX, GT or LT options at the same time are not compatible`},
	{"EXPIRE with conflicting options: NX XX", `EXPIRE foo 200 NX XX => -ERR NX and XX, GT or LT options at the same time are not compatible`},
	{"EXPIRE with unsupported options", `EXPIRE foo 200 AB => -ERR Unsupported option AB`},
	{"EXPIRE with unsupported options (after XX)", `EXPIRE foo 200 XX AB => -ERR Unsupported option AB`},
	{"EXPIRE with negative expiry", `
		SET foo bar EX 100
		EXPIRE foo -10 LT => 1
		TTL foo => -2`},
	{"EXPIRE with negative expiry on a non-valitale key", `
		SET foo bar
		EXPIRE foo -10 LT => 1
		TTL foo => -2`},
	{"EXPIRE with non-existed key", `
		EXPIRE none 100 NX => 0
		EXPIRE none 100 XX => 0
		EXPIRE none 100 GT => 0
		EXPIRE none 100 LT => 0`},
}

func TestTclString(t *testing.T) {
	s := New(16)
	runTcl(t, s, tclStringCases)
	// Very big payload in GET/SET; Very big payload random access.
	buf := strings.Repeat("abcd", 1000000)
	run(t, s, 2, "SET", "foo", buf)
	if got := run(t, s, 2, "GET", "foo"); got != bulk(buf) {
		t.Fatal("Very big payload in GET/SET")
	}
	rng := rand.New(rand.NewPCG(31, 32))
	payload := map[int]string{}
	for j := 0; j < 100; j++ {
		payload[j] = strings.Repeat("pl-"+strconv.Itoa(j), 1+rng.IntN(100000))
		run(t, s, 2, "SET", "bigpayload_"+strconv.Itoa(j), payload[j])
	}
	for j := 0; j < 1000; j++ {
		i := rng.IntN(100)
		if got := run(t, s, 2, "GET", "bigpayload_"+strconv.Itoa(i)); got != bulk(payload[i]) {
			t.Fatalf("Very big payload random access: %d differs", i)
		}
	}
	// SET 10000 numeric keys and access all them in reverse order; DBSIZE.
	run(t, s, 2, "FLUSHDB")
	for x := 0; x < 10000; x++ {
		run(t, s, 2, "SET", strconv.Itoa(x), strconv.Itoa(x))
	}
	for x := 9999; x >= 0; x-- {
		if got := run(t, s, 2, "GET", strconv.Itoa(x)); got != bulk(strconv.Itoa(x)) {
			t.Fatalf("Element at position %d is %q", x, got)
		}
	}
	if got := run(t, s, 2, "DBSIZE"); got != integer(10000) {
		t.Fatalf("DBSIZE should be 10000 now: %q", got)
	}
	// memoryusage of string: at least key + value bytes.
	for _, kv := range [][2]string{{"key", "value"}, {"key", strings.Repeat("A", 100000)}, {strings.Repeat("A", 100000), "value"}} {
		run(t, s, 2, "SET", kv[0], kv[1])
		n, _ := strconv.Atoi(strings.TrimSpace(run(t, s, 2, "MEMORY", "USAGE", kv[0])[1:]))
		if n < len(kv[0])+len(kv[1]) {
			t.Fatalf("memoryusage of string: %d < %d", n, len(kv[0])+len(kv[1]))
		}
	}
	bkey := strings.Repeat("B", 100000)
	run(t, s, 2, "INCR", bkey)
	if n, _ := strconv.Atoi(strings.TrimSpace(run(t, s, 2, "MEMORY", "USAGE", bkey)[1:])); n < len(bkey) {
		t.Fatalf("memoryusage of an int string: %d", n)
	}
	// SETRANGE against non-existing key (offset 1), against string-encoded
	// key (offset 4), against integer-encoded key (offset 5): the NUL gap.
	runExpect(t, s, 2, []expectStep{
		ex(":4\r\n", "SETRANGE", "mykey", "1", "foo"),
		ex(bulk("\x00foo"), "GET", "mykey"),
		ex(okReply, "SET", "mykey", "foo"),
		ex(":7\r\n", "SETRANGE", "mykey", "4", "bar"),
		ex(bulk("foo\x00bar"), "GET", "mykey"),
		ex(okReply, "SET", "mykey", "1234"),
		ex(":6\r\n", "SETRANGE", "mykey", "5", "2"),
		ex(bulk("raw"), "OBJECT", "ENCODING", "mykey"),
		ex(bulk("1234\x002"), "GET", "mykey"),
		ex(okReply, "MSET", "z", "x x x x x x x\n\n\r\n"),
		ex(bulk("x x x x x x x\n\n\r\n"), "GET", "z"),
	})
	// LCS indexes with match len (IDX WITHMATCHLEN without MINMATCHLEN;
	// the other LCS cases are in TestStringTclCases).
	rna1 := "CACCTTCCCAGGTAACAAACCAACCAACTTTCGATCTCTTGTAGATCTGTTCTCTAAACGAACTTTAAAATCTGTGTGGCTGTCACTCGGCTGCATGCTTAGTGCACTCACGCAGTATAATTAATAACTAATTACTGTCGTTGACAGGACACGAGTAACTCGTCTATCTTCTGCAGGCTGCTTACGGTTTCGTCCGTGTTGCAGCCGATCATCAGCACATCTAGGTTTCGTCCGGGTGTG"
	rna2 := "ATTAAAGGTTTATACCTTCCCAGGTAACAAACCAACCAACTTTCGATCTCTTGTAGATCTGTTCTCTAAACGAACTTTAAAATCTGTGTGGCTGTCACTCGGCTGCATGCTTAGTGCACTCACGCAGTATAATTAATAACTAATTACTGTCGTTGACAGGACACGAGTAACTCGTCTATCTTCTGCAGGCTGCTTACGGTTTCGTCCGTGTTGCAGCCGATCATCAGCACATCTAGGTTT"
	run(t, s, 2, "SET", "virus1", rna1)
	run(t, s, 2, "SET", "virus2", rna2)
	if got := tclRender(t, run(t, s, 2, "LCS", "virus1", "virus2", "IDX", "WITHMATCHLEN")); got != "matches {{{238 238} {239 239} 1} {{236 236} {238 238} 1} {{229 230} {236 237} 2} {{224 224} {235 235} 1} {{1 222} {13 234} 222}} len 227" {
		t.Fatalf("LCS indexes with match len: %q", got)
	}
	// GETRANGE fuzzing against Tcl's string range.
	for i := 0; i < 1000; i++ {
		b := make([]byte, rng.IntN(1025))
		for k := range b {
			b[k] = byte(rng.IntN(256))
		}
		run(t, s, 2, "SET", "bin", string(b))
		start, end := rng.IntN(1500), rng.IntN(1500)
		want := ""
		if start < len(b) && start <= end {
			want = string(b[start:min(end+1, len(b))])
		}
		if got := run(t, s, 2, "GETRANGE", "bin", strconv.Itoa(start), strconv.Itoa(end)); got != bulk(want) {
			t.Fatalf("GETRANGE fuzzing %d %d", start, end)
		}
	}
}

func TestTclIncr(t *testing.T) {
	runTcl(t, New(16), tclIncrCases)
}

func TestTclExpire(t *testing.T) {
	s := New(16)
	runTcl(t, s, tclExpireCases)
	// EXPIRE / EXPIREAT / PEXPIRE / PEXPIREAT Expiration time is already
	// expired: each deletes the key and counts in expired_keys.
	s2 := New(16)
	runTcl(t, s2, []tclCase{{"EXPIRE / EXPIREAT / PEXPIRE / PEXPIREAT Expiration time is already expired", `
		SET x somevalue
		EXPIRE x -1
		EXISTS x => 0
		@expired 1
		SET x somevalue
		EXPIREAT x $S-1
		EXISTS x => 0
		@expired 2
		SET x somevalue
		PEXPIRE x -1000
		EXISTS x => 0
		@expired 3
		SET x somevalue
		PEXPIREAT x $MS-1000
		EXISTS x => 0
		@expired 4
		# SET with a past time over a key counts too; over no key, and
		# GETEX with a past EXAT, do not (Valkey 8.0.1)
		SET x somevalue
		SET x v exat $S-1 => OK
		EXISTS x => 0
		@expired 5
		SET nokey v pxat $MS-1 => OK
		@expired 5
		SET x somevalue
		GETEX x exat $S-1 => somevalue
		EXISTS x => 0
		@expired 5`}})
}

// expire.tcl's "All time-to-live(TTL) in commands are propagated as
// absolute timestamp in milliseconds in AOF" (without RESTORE, which emqd
// lacks): what each command leaves for the AOF, its own record or, when
// it sends none, its argv as the server records it.
func TestTclExpireAOFAbsolute(t *testing.T) {
	s := New(16)
	f := &captureFeed{}
	s.SetFeed(f)
	now := int64(harnessNowMs)
	s.SetNow(now)
	at := func(ms int64) string { return strconv.FormatInt(ms, 10) }
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"SET", "foo1", "bar", "EX", "100"}, "SET foo1 bar PXAT " + at(now+100000)},
		{[]string{"SET", "foo2", "bar", "PX", "100000"}, "SET foo2 bar PXAT " + at(now+100000)},
		{[]string{"SET", "foo3", "bar", "EXAT", at(now/1000 + 100)}, "SET foo3 bar PXAT " + at((now/1000+100)*1000)},
		{[]string{"SET", "foo4", "bar", "PXAT", at(now + 100000)}, "SET foo4 bar PXAT " + at(now+100000)},
		{[]string{"SETEX", "foo5", "100", "bar"}, "SET foo5 bar PXAT " + at(now+100000)},
		{[]string{"PSETEX", "foo6", "100000", "bar"}, "SET foo6 bar PXAT " + at(now+100000)},
		{[]string{"SET", "foo7", "bar"}, "SET foo7 bar"},
		{[]string{"EXPIRE", "foo7", "100"}, "PEXPIREAT foo7 " + at(now+100000)},
		{[]string{"SET", "foo8", "bar"}, "SET foo8 bar"},
		{[]string{"PEXPIRE", "foo8", "100000"}, "PEXPIREAT foo8 " + at(now+100000)},
		{[]string{"SET", "foo9", "bar"}, "SET foo9 bar"},
		{[]string{"EXPIREAT", "foo9", at(now/1000 + 100)}, "PEXPIREAT foo9 " + at((now/1000+100)*1000)},
		{[]string{"SET", "foo10", "bar"}, "SET foo10 bar"},
		{[]string{"PEXPIREAT", "foo10", at(now + 100000)}, "PEXPIREAT foo10 " + at(now+100000)},
		{[]string{"SET", "foo11", "bar"}, "SET foo11 bar"},
		{[]string{"EXPIREAT", "foo11", at(now/1000 - 100)}, "DEL foo11"},
		{[]string{"SET", "foo12", "bar"}, "SET foo12 bar"},
		{[]string{"GETEX", "foo12", "EX", "100"}, "PEXPIREAT foo12 " + at(now+100000)},
		{[]string{"SET", "foo13", "bar"}, "SET foo13 bar"},
		{[]string{"GETEX", "foo13", "PX", "100000"}, "PEXPIREAT foo13 " + at(now+100000)},
		{[]string{"SET", "foo14", "bar"}, "SET foo14 bar"},
		{[]string{"GETEX", "foo14", "EXAT", at(now/1000 + 100)}, "PEXPIREAT foo14 " + at((now/1000+100)*1000)},
		{[]string{"SET", "foo15", "bar"}, "SET foo15 bar"},
		{[]string{"GETEX", "foo15", "PXAT", at(now + 100000)}, "PEXPIREAT foo15 " + at(now+100000)},
		// GETEX propagate as to replica as PERSIST, UNLINK, or nothing
		{[]string{"SET", "foo", "bar", "EX", "100"}, "SET foo bar PXAT " + at(now+100000)},
		{[]string{"GETEX", "foo", "PERSIST"}, "PERSIST foo"},
		{[]string{"GETEX", "foo"}, ""},
		{[]string{"GETEX", "foo", "EXAT", at(now/1000 - 100)}, "DEL foo"},
		// SET - use KEEPTTL option: the TTL is kept and the record keeps it too
		{[]string{"SET", "k", "bar", "EX", "100"}, "SET k bar PXAT " + at(now+100000)},
		{[]string{"SET", "k", "bar2", "KEEPTTL"}, "SET k bar2 KEEPTTL"},
	} {
		f.recs = nil
		_, ctx := runCtx(t, s, 0, 2, c.args...)
		got := f.String()
		if !ctx.Propagated() && ctx.Changed() {
			got = strings.Join(c.args, " ")
		}
		if got != c.want {
			t.Errorf("%v recorded as %q, want %q", c.args, got, c.want)
		}
	}
	if got := run(t, s, 2, "PTTL", "k"); got != integer(100000) {
		t.Fatalf("KEEPTTL: %q", got)
	}
}
