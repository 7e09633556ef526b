package store

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// zsetBasics is the "basics" block of Valkey's unit/type/zset.tcl, run once
// per encoding (TestTclZSetBasics).
var zsetBasics = []tclCase{
	{"ZSET basic ZADD and score update", `
		DEL ztmp
		ZADD ztmp 10 x
		ZADD ztmp 20 y
		ZADD ztmp 30 z
		ZRANGE ztmp 0 -1 => x y z
		ZADD ztmp 1 y
		ZRANGE ztmp 0 -1 => y x z`},
	{"ZSET element can't be set to NaN with ZADD", `ZADD myzset nan abc => -*not*float*`},
	{"ZSET element can't be set to NaN with ZINCRBY", `ZINCRBY myzset nan abc => -*not*float*`},
	{"ZADD with options syntax error with incomplete pair", `
		DEL ztmp
		ZADD ztmp xx 10 x 20 => -ERR*`},
	{"ZADD XX option without key", `
		DEL ztmp
		ZADD ztmp xx 10 x => 0
		TYPE ztmp => none`},
	{"ZADD XX existing key", `
		DEL ztmp
		ZADD ztmp 10 x
		ZADD ztmp xx 20 y => 0
		ZCARD ztmp => 1`},
	{"ZADD XX returns the number of elements actually added", `
		DEL ztmp
		ZADD ztmp 10 x
		ZADD ztmp 10 x 20 y 30 z => 2`},
	{"ZADD XX updates existing elements score", `
		DEL ztmp
		ZADD ztmp 10 x 20 y 30 z
		ZADD ztmp xx 5 foo 11 x 21 y 40 zap
		ZCARD ztmp => 3
		ZSCORE ztmp x => 11
		ZSCORE ztmp y => 21`},
	{"ZADD GT updates existing elements when new scores are greater", `
		DEL ztmp
		ZADD ztmp 10 x 20 y 30 z
		ZADD ztmp gt ch 5 foo 11 x 21 y 29 z => 3
		ZCARD ztmp => 4
		ZSCORE ztmp x => 11
		ZSCORE ztmp y => 21
		ZSCORE ztmp z => 30`},
	{"ZADD LT updates existing elements when new scores are lower", `
		DEL ztmp
		ZADD ztmp 10 x 20 y 30 z
		ZADD ztmp lt ch 5 foo 11 x 21 y 29 z => 2
		ZCARD ztmp => 4
		ZSCORE ztmp x => 10
		ZSCORE ztmp y => 20
		ZSCORE ztmp z => 29`},
	{"ZADD GT XX updates existing elements when new scores are greater and skips new elements", `
		DEL ztmp
		ZADD ztmp 10 x 20 y 30 z
		ZADD ztmp gt xx ch 5 foo 11 x 21 y 29 z => 2
		ZCARD ztmp => 3
		ZSCORE ztmp x => 11
		ZSCORE ztmp y => 21
		ZSCORE ztmp z => 30`},
	{"ZADD LT XX updates existing elements when new scores are lower and skips new elements", `
		DEL ztmp
		ZADD ztmp 10 x 20 y 30 z
		ZADD ztmp lt xx ch 5 foo 11 x 21 y 29 z => 1
		ZCARD ztmp => 3
		ZSCORE ztmp x => 10
		ZSCORE ztmp y => 20
		ZSCORE ztmp z => 29`},
	{"ZADD XX and NX are not compatible", `
		DEL ztmp
		ZADD ztmp xx nx 10 x => -ERR*`},
	{"ZADD NX with non existing key", `
		DEL ztmp
		ZADD ztmp nx 10 x 20 y 30 z
		ZCARD ztmp => 3`},
	{"ZADD NX only add new elements without updating old ones", `
		DEL ztmp
		ZADD ztmp 10 x 20 y 30 z
		ZADD ztmp nx 11 x 21 y 100 a 200 b => 2
		ZSCORE ztmp x => 10
		ZSCORE ztmp y => 20
		ZSCORE ztmp a => 100
		ZSCORE ztmp b => 200`},
	{"ZADD GT and NX are not compatible", `ZADD ztmp gt nx 10 x => -ERR*`},
	{"ZADD LT and NX are not compatible", `ZADD ztmp lt nx 10 x => -ERR*`},
	{"ZADD LT and GT are not compatible", `ZADD ztmp lt gt 10 x => -ERR*`},
	{"ZADD INCR LT/GT replies with nill if score not updated", `
		DEL ztmp
		ZADD ztmp 28 x
		ZADD ztmp lt incr 1 x =>
		ZSCORE ztmp x => 28
		ZADD ztmp gt incr -1 x =>
		ZSCORE ztmp x => 28`},
	{"ZADD INCR LT/GT with inf", `
		DEL ztmp
		ZADD ztmp +inf x -inf y
		ZADD ztmp lt incr 1 x =>
		ZSCORE ztmp x => inf
		ZADD ztmp gt incr -1 x =>
		ZSCORE ztmp x => inf
		ZADD ztmp lt incr -1 x =>
		ZSCORE ztmp x => inf
		ZADD ztmp gt incr 1 x =>
		ZSCORE ztmp x => inf
		ZADD ztmp lt incr 1 y =>
		ZSCORE ztmp y => -inf
		ZADD ztmp gt incr -1 y =>
		ZSCORE ztmp y => -inf
		ZADD ztmp lt incr -1 y =>
		ZSCORE ztmp y => -inf
		ZADD ztmp gt incr 1 y =>
		ZSCORE ztmp y => -inf`},
	{"ZADD INCR works like ZINCRBY", `
		DEL ztmp
		ZADD ztmp 10 x 20 y 30 z
		ZADD ztmp INCR 15 x
		ZSCORE ztmp x => 25`},
	{"ZADD INCR works with a single score-element pair", `ZADD ztmp INCR 15 x 10 y => -ERR*`},
	{"ZADD CH option changes return value to all changed elements", `
		DEL ztmp
		ZADD ztmp 10 x 20 y 30 z
		ZADD ztmp 11 x 21 y 30 z => 0
		ZADD ztmp ch 12 x 22 y 30 z => 2`},
	{"ZINCRBY calls leading to NaN result in error", `
		ZINCRBY myzset +inf abc
		ZINCRBY myzset -inf abc => -*NaN*`},
	{"ZINCRBY against invalid incr value", `
		DEL zincr
		ZADD zincr 1 one
		ZINCRBY zincr v one => -*value is not a valid*`},
	{"ZADD - Variadic version base case", `
		DEL myzset
		ZADD myzset 10 a 20 b 30 c => 3
		ZRANGE myzset 0 -1 withscores => a 10 b 20 c 30`},
	{"ZADD - Return value is the number of actually added items", `
		ZADD myzset 5 x 20 b 30 c => 1
		ZRANGE myzset 0 -1 withscores => x 5 a 10 b 20 c 30`},
	{"ZADD - Variadic version does not add nothing on single parsing err", `
		DEL myzset
		ZADD myzset 10 a 20 b 30.badscore c => -*ERR*not*float*
		EXISTS myzset => 0`},
	{"ZADD - Variadic version will raise error on missing arg", `
		DEL myzset
		ZADD myzset 10 a 20 b 30 c 40 => -*ERR*syntax*`},
	{"ZINCRBY does not work variadic even if shares ZADD implementation", `
		DEL myzset
		ZINCRBY myzset 10 a 20 b 30 c => -*ERR*wrong*number*arg*`},
	{"ZCARD basics", `
		DEL ztmp
		ZADD ztmp 10 a 20 b 30 c
		ZCARD ztmp => 3
		ZCARD zdoesntexist => 0`},
	{"ZREM removes key after last element is removed", `
		DEL ztmp
		ZADD ztmp 10 x
		ZADD ztmp 20 y
		EXISTS ztmp => 1
		ZREM ztmp z => 0
		ZREM ztmp y => 1
		ZREM ztmp x => 1
		EXISTS ztmp => 0`},
	{"ZREM variadic version", `
		DEL ztmp
		ZADD ztmp 10 a 20 b 30 c
		ZREM ztmp x y a b k => 2
		ZREM ztmp foo bar => 0
		ZREM ztmp c => 1
		EXISTS ztmp => 0`},
	{"ZREM variadic version -- remove elements after key deletion", `
		DEL ztmp
		ZADD ztmp 10 a 20 b 30 c
		ZREM ztmp a b c d e f g => 3`},
	{"ZRANGE basics", `
		DEL ztmp
		ZADD ztmp 1 a
		ZADD ztmp 2 b
		ZADD ztmp 3 c
		ZADD ztmp 4 d
		ZRANGE ztmp 0 -1 => a b c d
		ZRANGE ztmp 0 -2 => a b c
		ZRANGE ztmp 1 -1 => b c d
		ZRANGE ztmp 1 -2 => b c
		ZRANGE ztmp -2 -1 => c d
		ZRANGE ztmp -2 -2 => c
		ZRANGE ztmp -5 2 => a b c
		ZRANGE ztmp -5 1 => a b
		ZRANGE ztmp 5 -1 =>
		ZRANGE ztmp 5 -2 =>
		ZRANGE ztmp 0 5 => a b c d
		ZRANGE ztmp 1 5 => b c d
		ZRANGE ztmp 0 -5 =>
		ZRANGE ztmp 1 -5 =>
		ZRANGE ztmp 0 -1 withscores => a 1 b 2 c 3 d 4`},
	{"ZREVRANGE basics", `
		ZREVRANGE ztmp 0 -1 => d c b a
		ZREVRANGE ztmp 0 -2 => d c b
		ZREVRANGE ztmp 1 -1 => c b a
		ZREVRANGE ztmp 1 -2 => c b
		ZREVRANGE ztmp -2 -1 => b a
		ZREVRANGE ztmp -2 -2 => b
		ZREVRANGE ztmp -5 2 => d c b
		ZREVRANGE ztmp -5 1 => d c
		ZREVRANGE ztmp 5 -1 =>
		ZREVRANGE ztmp 5 -2 =>
		ZREVRANGE ztmp 0 5 => d c b a
		ZREVRANGE ztmp 1 5 => c b a
		ZREVRANGE ztmp 0 -5 =>
		ZREVRANGE ztmp 1 -5 =>
		ZREVRANGE ztmp 0 -1 withscores => d 4 c 3 b 2 a 1`},
	{"ZRANK/ZREVRANK basics", `
		DEL zranktmp
		ZADD zranktmp 10 x
		ZADD zranktmp 20 y
		ZADD zranktmp 30 z
		ZRANK zranktmp x => 0
		ZRANK zranktmp y => 1
		ZRANK zranktmp z => 2
		ZREVRANK zranktmp x => 2
		ZREVRANK zranktmp y => 1
		ZREVRANK zranktmp z => 0
		ZRANK zranktmp foo =>
		ZREVRANK zranktmp foo =>
		ZRANK zranktmp x withscore => 0 10
		ZRANK zranktmp y withscore => 1 20
		ZRANK zranktmp z withscore => 2 30
		ZREVRANK zranktmp x withscore => 2 10
		ZREVRANK zranktmp y withscore => 1 20
		ZREVRANK zranktmp z withscore => 0 30
		ZRANK zranktmp foo withscore =>
		ZREVRANK zranktmp foo withscore =>`},
	{"ZRANK - after deletion", `
		ZREM zranktmp y
		ZRANK zranktmp x => 0
		ZRANK zranktmp z => 1
		ZRANK zranktmp x withscore => 0 10
		ZRANK zranktmp z withscore => 1 30`},
	{"ZINCRBY - can create a new sorted set", `
		DEL zset
		ZINCRBY zset 1 foo
		ZRANGE zset 0 -1 => foo
		ZSCORE zset foo => 1`},
	{"ZINCRBY - increment and decrement", `
		ZINCRBY zset 2 foo
		ZINCRBY zset 1 bar
		ZRANGE zset 0 -1 => bar foo
		ZINCRBY zset 10 bar
		ZINCRBY zset -5 foo
		ZINCRBY zset -5 bar
		ZRANGE zset 0 -1 => foo bar
		ZSCORE zset foo => -2
		ZSCORE zset bar => 6`},
	{"ZINCRBY return value", `
		DEL ztmp
		ZINCRBY ztmp 1.0 x => 1`},
	{"ZRANGEBYSCORE/ZREVRANGEBYSCORE/ZCOUNT basics", `
		DEL zset
		ZADD zset -inf a 1 b 2 c 3 d 4 e 5 f +inf g
		ZRANGEBYSCORE zset -inf 2 => a b c
		ZRANGEBYSCORE zset 0 3 => b c d
		ZRANGEBYSCORE zset 3 6 => d e f
		ZRANGEBYSCORE zset 4 +inf => e f g
		ZREVRANGEBYSCORE zset 2 -inf => c b a
		ZREVRANGEBYSCORE zset 3 0 => d c b
		ZREVRANGEBYSCORE zset 6 3 => f e d
		ZREVRANGEBYSCORE zset +inf 4 => g f e
		ZCOUNT zset 0 3 => 3
		ZRANGEBYSCORE zset (-inf (2 => b
		ZRANGEBYSCORE zset (0 (3 => b c
		ZRANGEBYSCORE zset (3 (6 => e f
		ZRANGEBYSCORE zset (4 (+inf => f
		ZREVRANGEBYSCORE zset (2 (-inf => b
		ZREVRANGEBYSCORE zset (3 (0 => c b
		ZREVRANGEBYSCORE zset (6 (3 => f e
		ZREVRANGEBYSCORE zset (+inf (4 => f
		ZCOUNT zset (0 (3 => 2
		ZREM zset a
		ZREM zset g
		ZRANGEBYSCORE zset 4 2 =>
		ZRANGEBYSCORE zset 6 +inf =>
		ZRANGEBYSCORE zset -inf -6 =>
		ZREVRANGEBYSCORE zset +inf 6 =>
		ZREVRANGEBYSCORE zset -6 -inf =>
		ZRANGEBYSCORE zset (4 (2 =>
		ZRANGEBYSCORE zset 2 (2 =>
		ZRANGEBYSCORE zset (2 2 =>
		ZRANGEBYSCORE zset (6 (+inf =>
		ZRANGEBYSCORE zset (-inf (-6 =>
		ZREVRANGEBYSCORE zset (+inf (6 =>
		ZREVRANGEBYSCORE zset (-6 (-inf =>
		ZRANGEBYSCORE zset 2.4 2.6 =>
		ZRANGEBYSCORE zset (2.4 2.6 =>
		ZRANGEBYSCORE zset 2.4 (2.6 =>
		ZRANGEBYSCORE zset (2.4 (2.6 =>`},
	{"ZRANGEBYSCORE with WITHSCORES", `
		DEL zset
		ZADD zset -inf a 1 b 2 c 3 d 4 e 5 f +inf g
		ZRANGEBYSCORE zset 0 3 withscores => b 1 c 2 d 3
		ZREVRANGEBYSCORE zset 3 0 withscores => d 3 c 2 b 1`},
	{"ZRANGEBYSCORE with LIMIT", `
		ZRANGEBYSCORE zset 0 10 LIMIT 0 2 => b c
		ZRANGEBYSCORE zset 0 10 LIMIT 2 3 => d e f
		ZRANGEBYSCORE zset 0 10 LIMIT 2 10 => d e f
		ZRANGEBYSCORE zset 0 10 LIMIT 20 10 =>
		ZREVRANGEBYSCORE zset 10 0 LIMIT 0 2 => f e
		ZREVRANGEBYSCORE zset 10 0 LIMIT 2 3 => d c b
		ZREVRANGEBYSCORE zset 10 0 LIMIT 2 10 => d c b
		ZREVRANGEBYSCORE zset 10 0 LIMIT 20 10 =>
		DEL zset
		ZADD zset 0 i0 1 i1 2 i2 3 i3 4 i4 5 i5 6 i6 7 i7 8 i8 9 i9 10 i10 11 i11 12 i12 13 i13 14 i14
		ZADD zset 15 i15 16 i16 17 i17 18 i18 19 i19 20 i20 21 i21 22 i22 23 i23 24 i24 25 i25 26 i26 27 i27 28 i28 29 i29
		ZRANGEBYSCORE zset 0 20 LIMIT 12 3 => i12 i13 i14
		ZRANGEBYSCORE zset 0 20 LIMIT 14 2 => i14 i15
		ZRANGEBYSCORE zset 0 30 LIMIT 19 3 => i19 i20 i21
		ZRANGEBYSCORE zset 10 30 LIMIT 19 2 => i29
		ZREVRANGEBYSCORE zset 30 10 LIMIT 12 3 => i17 i16 i15
		ZREVRANGEBYSCORE zset 20 0 LIMIT 14 2 => i6 i5
		ZREVRANGEBYSCORE zset 20 0 LIMIT 18 5 => i2 i1 i0
		ZREVRANGEBYSCORE zset 20 0 LIMIT 20 5 => i0`},
	{"ZRANGEBYSCORE with LIMIT and WITHSCORES", `
		DEL zset
		ZADD zset -inf a 1 b 2 c 3 d 4 e 5 f +inf g
		ZRANGEBYSCORE zset 2 5 LIMIT 2 3 WITHSCORES => e 4 f 5
		ZREVRANGEBYSCORE zset 5 2 LIMIT 2 3 WITHSCORES => d 3 c 2
		ZRANGEBYSCORE zset 2 5 LIMIT 12 13 WITHSCORES =>`},
	{"ZRANGEBYSCORE with non-value min or max", `
		ZRANGEBYSCORE fooz str 1 => -*not*float*
		ZRANGEBYSCORE fooz 1 str => -*not*float*
		ZRANGEBYSCORE fooz 1 NaN => -*not*float*`},
	{"ZRANGEBYLEX/ZREVRANGEBYLEX/ZLEXCOUNT basics", `
		DEL zset
		ZADD zset 0 alpha 0 bar 0 cool 0 down 0 elephant 0 foo 0 great 0 hill 0 omega
		ZRANGEBYLEX zset - [cool => alpha bar cool
		ZRANGEBYLEX zset [bar [down => bar cool down
		ZRANGEBYLEX zset [g + => great hill omega
		ZREVRANGEBYLEX zset [cool - => cool bar alpha
		ZREVRANGEBYLEX zset [down [bar => down cool bar
		ZREVRANGEBYLEX zset + [d => omega hill great foo elephant down
		ZLEXCOUNT zset [ele [h => 3
		ZRANGEBYLEX zset - (cool => alpha bar
		ZRANGEBYLEX zset (bar (down => cool
		ZRANGEBYLEX zset (great + => hill omega
		ZREVRANGEBYLEX zset (cool - => bar alpha
		ZREVRANGEBYLEX zset (down (bar => cool
		ZREVRANGEBYLEX zset + (great => omega hill
		ZLEXCOUNT zset (ele (great => 2
		ZRANGEBYLEX zset (az (b =>
		ZRANGEBYLEX zset (z + =>
		ZRANGEBYLEX zset - [aaaa =>
		ZREVRANGEBYLEX zset [elez [elex =>
		ZREVRANGEBYLEX zset (hill (omega =>`},
	{"ZLEXCOUNT advanced", `
		ZLEXCOUNT zset - + => 9
		ZLEXCOUNT zset + - => 0
		ZLEXCOUNT zset + [c => 0
		ZLEXCOUNT zset [c - => 0
		ZLEXCOUNT zset [bar + => 8
		ZLEXCOUNT zset [bar [foo => 5
		ZLEXCOUNT zset [bar (foo => 4
		ZLEXCOUNT zset (bar [foo => 4
		ZLEXCOUNT zset (bar (foo => 3
		ZLEXCOUNT zset - (foo => 5
		ZLEXCOUNT zset (maxstring + => 1`},
	{"ZRANGEBYLEX with LIMIT", `
		ZRANGEBYLEX zset - [cool LIMIT 0 2 => alpha bar
		ZRANGEBYLEX zset - [cool LIMIT 1 2 => bar cool
		ZRANGEBYLEX zset [bar [down LIMIT 0 0 =>
		ZRANGEBYLEX zset [bar [down LIMIT 2 0 =>
		ZRANGEBYLEX zset [bar [down LIMIT 0 1 => bar
		ZRANGEBYLEX zset [bar [down LIMIT 1 1 => cool
		ZRANGEBYLEX zset [bar [down LIMIT 0 100 => bar cool down
		ZREVRANGEBYLEX zset + [d LIMIT 0 5 => omega hill great foo elephant
		ZREVRANGEBYLEX zset + [d LIMIT 0 4 => omega hill great foo
		ZREVRANGEBYLEX zset + [d LIMIT 2 3 => great foo elephant
		DEL zset
		ZADD zset 0 alpha 0 bar 0 cool 0 down 0 elephant 0 foo 0 great 0 hill 0 island 0 jacket
		ZADD zset 0 key 0 lip 0 max 0 null 0 omega 0 point 0 query 0 result 0 sea 0 tree
		ZRANGEBYLEX zset - [tree LIMIT 12 2 => max null
		ZRANGEBYLEX zset - [tree LIMIT 15 2 => point query
		ZRANGEBYLEX zset [max [tree LIMIT 10 0 =>
		ZRANGEBYLEX zset [max [tree LIMIT 12 0 =>
		ZRANGEBYLEX zset [max [null LIMIT 0 1 => max
		ZRANGEBYLEX zset [max [null LIMIT 1 1 => null
		ZRANGEBYLEX zset [max [point LIMIT 0 100 => max null omega point
		ZREVRANGEBYLEX zset + [o LIMIT 0 5 => tree sea result query point
		ZREVRANGEBYLEX zset + [o LIMIT 0 4 => tree sea result query
		ZREVRANGEBYLEX zset + [l LIMIT 5 4 => omega null max lip
		ZREVRANGEBYLEX zset + [a LIMIT 15 2 => elephant down
		ZREVRANGEBYLEX zset + - LIMIT 18 6 => bar alpha
		ZREVRANGEBYLEX zset + [c LIMIT 12 3 => hill great foo`},
	{"ZRANGEBYLEX with invalid lex range specifiers", `
		ZRANGEBYLEX fooz foo bar => -*not*string*
		ZRANGEBYLEX fooz [foo bar => -*not*string*
		ZRANGEBYLEX fooz foo [bar => -*not*string*
		ZRANGEBYLEX fooz +x [bar => -*not*string*
		ZRANGEBYLEX fooz -x [bar => -*not*string*`},
	{"ZREMRANGEBYSCORE basics", zremrange("ZREMRANGEBYSCORE", "1 a 2 b 3 c 4 d 5 e", [][3]string{
		{"2 4", "3", "a e"}, {"-10 1", "1", "b c d e"}, {"5 10", "1", "a b c d"}, {"4 2", "0", "a b c d e"},
		{"-inf 3", "3", "d e"}, {"3 +inf", "3", "a b"}, {"-inf +inf", "5", ""}, {"(1 5", "4", "a"},
		{"(2 5", "3", "a b"}, {"1 (5", "4", "e"}, {"1 (4", "3", "d e"}, {"(1 (5", "3", "a e"}, {"1 5", "5", ""},
	}) + "\nEXISTS zset => 0"},
	{"ZREMRANGEBYSCORE with non-value min or max", `
		ZREMRANGEBYSCORE fooz str 1 => -*not*float*
		ZREMRANGEBYSCORE fooz 1 str => -*not*float*
		ZREMRANGEBYSCORE fooz 1 NaN => -*not*float*`},
	{"ZREMRANGEBYRANK basics", zremrange("ZREMRANGEBYRANK", "1 a 2 b 3 c 4 d 5 e", [][3]string{
		{"1 3", "3", "a e"}, {"-10 0", "1", "b c d e"}, {"10 -1", "0", "a b c d e"}, {"0 -10", "0", "a b c d e"},
		{"0 10", "5", ""}, {"0 4", "5", ""},
	}) + "\nEXISTS zset => 0"},
	{"ZREMRANGEBYLEX basics", zremrange("ZREMRANGEBYLEX", "0 alpha 0 bar 0 cool 0 down 0 elephant 0 foo 0 great 0 hill 0 omega", [][3]string{
		{"- [cool", "3", "down elephant foo great hill omega"}, {"[bar [down", "3", "alpha elephant foo great hill omega"},
		{"[g +", "3", "alpha bar cool down elephant foo"}, {"- (cool", "2", "cool down elephant foo great hill omega"},
		{"(bar (down", "1", "alpha bar down elephant foo great hill omega"}, {"(great +", "2", "alpha bar cool down elephant foo great"},
		{"(az (b", "0", "alpha bar cool down elephant foo great hill omega"}, {"(z +", "0", "alpha bar cool down elephant foo great hill omega"},
		{"- [aaaa", "0", "alpha bar cool down elephant foo great hill omega"}, {"- +", "9", ""},
	}) + "\nZCARD zset => 0\nEXISTS zset => 0"},
	{"ZUNIONSTORE against non-existing key doesn't set destination", `
		DEL zseta
		ZUNIONSTORE dst_key 1 zseta => 0
		EXISTS dst_key => 0`},
	{"ZUNION/ZINTER/ZINTERCARD/ZDIFF against non-existing key", `
		ZUNION 1 zseta =>
		ZINTER 1 zseta =>
		ZINTERCARD 1 zseta => 0
		ZINTERCARD 1 zseta limit 0 => 0
		ZDIFF 1 zseta =>`},
	{"ZUNIONSTORE with empty set", `
		DEL zseta zsetb
		ZADD zseta 1 a
		ZADD zseta 2 b
		ZUNIONSTORE zsetc 2 zseta zsetb
		ZRANGE zsetc 0 -1 withscores => a 1 b 2`},
	{"ZUNION/ZINTER/ZINTERCARD/ZDIFF with empty set", `
		ZUNION 2 zseta zsetb withscores => a 1 b 2
		ZINTER 2 zseta zsetb withscores =>
		ZINTERCARD 2 zseta zsetb => 0
		ZINTERCARD 2 zseta zsetb limit 0 => 0
		ZDIFF 2 zseta zsetb withscores => a 1 b 2`},
	{"ZUNIONSTORE basics", `
		DEL zseta zsetb zsetc
		ZADD zseta 1 a
		ZADD zseta 2 b
		ZADD zseta 3 c
		ZADD zsetb 1 b
		ZADD zsetb 2 c
		ZADD zsetb 3 d
		ZUNIONSTORE zsetc 2 zseta zsetb => 4
		ZRANGE zsetc 0 -1 withscores => a 1 b 3 d 3 c 5`},
	{"ZUNION/ZINTER/ZINTERCARD/ZDIFF with integer members", `
		DEL zsetd zsetf
		ZADD zsetd 1 1
		ZADD zsetd 2 2
		ZADD zsetd 3 3
		ZADD zsetf 1 1
		ZADD zsetf 3 3
		ZADD zsetf 4 4
		ZUNION 2 zsetd zsetf withscores => 1 2 2 2 4 4 3 6
		ZINTER 2 zsetd zsetf withscores => 1 2 3 6
		ZINTERCARD 2 zsetd zsetf => 2
		ZINTERCARD 2 zsetd zsetf limit 0 => 2
		ZDIFF 2 zsetd zsetf withscores => 2 2`},
	{"ZUNIONSTORE with weights", `
		ZUNIONSTORE zsetc 2 zseta zsetb weights 2 3 => 4
		ZRANGE zsetc 0 -1 withscores => a 2 b 7 d 9 c 12`},
	{"ZUNION with weights", `
		ZUNION 2 zseta zsetb weights 2 3 withscores => a 2 b 7 d 9 c 12
		ZINTER 2 zseta zsetb weights 2 3 withscores => b 7 c 12`},
	{"ZUNIONSTORE with AGGREGATE MIN", `
		ZUNIONSTORE zsetc 2 zseta zsetb aggregate min => 4
		ZRANGE zsetc 0 -1 withscores => a 1 b 1 c 2 d 3`},
	{"ZUNION/ZINTER with AGGREGATE MIN", `
		ZUNION 2 zseta zsetb aggregate min withscores => a 1 b 1 c 2 d 3
		ZINTER 2 zseta zsetb aggregate min withscores => b 1 c 2`},
	{"ZUNIONSTORE with AGGREGATE MAX", `
		ZUNIONSTORE zsetc 2 zseta zsetb aggregate max => 4
		ZRANGE zsetc 0 -1 withscores => a 1 b 2 c 3 d 3`},
	{"ZUNION/ZINTER with AGGREGATE MAX", `
		ZUNION 2 zseta zsetb aggregate max withscores => a 1 b 2 c 3 d 3
		ZINTER 2 zseta zsetb aggregate max withscores => b 2 c 3`},
	{"ZINTERSTORE basics", `
		ZINTERSTORE zsetc 2 zseta zsetb => 2
		ZRANGE zsetc 0 -1 withscores => b 3 c 5`},
	{"ZINTER basics", `ZINTER 2 zseta zsetb withscores => b 3 c 5`},
	{"ZINTERCARD with illegal arguments", `
		ZINTERCARD 1 zseta zseta => -ERR syntax error*
		ZINTERCARD 1 zseta bar_arg => -ERR syntax error*
		ZINTERCARD 1 zseta LIMIT => -ERR syntax error*
		ZINTERCARD 1 myset LIMIT -1 => -ERR LIMIT*
		ZINTERCARD 1 myset LIMIT a => -ERR LIMIT*`},
	{"ZINTERCARD basics", `
		ZINTERCARD 2 zseta zsetb => 2
		ZINTERCARD 2 zseta zsetb limit 0 => 2
		ZINTERCARD 2 zseta zsetb limit 1 => 1
		ZINTERCARD 2 zseta zsetb limit 10 => 2`},
	{"ZINTER RESP3", `
		@resp 3
		ZINTER 2 zseta zsetb withscores => {b 3.0} {c 5.0}
		@resp 2`},
	{"ZINTERSTORE with weights", `
		ZINTERSTORE zsetc 2 zseta zsetb weights 2 3 => 2
		ZRANGE zsetc 0 -1 withscores => b 7 c 12`},
	{"ZINTER with weights", `ZINTER 2 zseta zsetb weights 2 3 withscores => b 7 c 12`},
	{"ZINTERSTORE with AGGREGATE MIN", `
		ZINTERSTORE zsetc 2 zseta zsetb aggregate min => 2
		ZRANGE zsetc 0 -1 withscores => b 1 c 2`},
	{"ZINTERSTORE with AGGREGATE MAX", `
		ZINTERSTORE zsetc 2 zseta zsetb aggregate max => 2
		ZRANGE zsetc 0 -1 withscores => b 2 c 3`},
	{"ZUNIONSTORE with +inf/-inf scores", infCase("ZUNIONSTORE")},
	{"ZUNIONSTORE with NaN weights", nanWeights("ZUNIONSTORE")},
	{"ZINTERSTORE with +inf/-inf scores", infCase("ZINTERSTORE")},
	{"ZINTERSTORE with NaN weights", nanWeights("ZINTERSTORE")},
	{"ZDIFFSTORE basics", `
		ZDIFFSTORE zsetc 2 zseta zsetb => 1
		ZRANGE zsetc 0 -1 withscores => a 1`},
	{"ZDIFF basics", `ZDIFF 2 zseta zsetb withscores => a 1`},
	{"ZDIFF subtracting set from itself", `
		ZDIFFSTORE zsetc 2 zseta zseta => 0
		ZRANGE zsetc 0 -1 withscores =>`},
	{"ZDIFF algorithm 1", `
		DEL zseta zsetb zsetc
		ZADD zseta 1 a
		ZADD zseta 2 b
		ZADD zseta 3 c
		ZADD zsetb 1 b
		ZADD zsetb 2 c
		ZADD zsetb 3 d
		ZDIFFSTORE zsetc 2 zseta zsetb => 1
		ZRANGE zsetc 0 -1 withscores => a 1`},
	{"ZDIFF algorithm 2", `
		DEL zseta zsetb zsetc zsetd zsete
		ZADD zseta 1 a
		ZADD zseta 2 b
		ZADD zseta 3 c
		ZADD zseta 5 e
		ZADD zsetb 1 b
		ZADD zsetc 1 c
		ZADD zsetd 1 d
		ZDIFFSTORE zsete 4 zseta zsetb zsetc zsetd => 2
		ZRANGE zsete 0 -1 withscores => a 1 e 5`},
	{"ZDIFF algorithm 2 empty result early", `
		DEL zseta zsetb zsetc
		ZADD zseta 1 a 2 b
		ZADD zsetb 1 a 2 b
		ZDIFFSTORE zsetc 2 zseta zsetb => 0
		ZRANGE zsetc 0 -1 withscores =>`},
	{"ZPOPMIN with the count 0 returns an empty array", `
		DEL zset
		ZADD zset 1 a 2 b 3 c
		ZPOPMIN zset 0 =>
		ZCARD zset => 3`},
	{"ZPOPMIN with negative count", `
		SET zset foo
		ZPOPMIN zset -1 => -ERR *must be positive
		DEL zset
		ZPOPMIN zset -2 => -ERR *must be positive
		ZADD zset 1 a 2 b 3 c
		ZPOPMIN zset -3 => -ERR *must be positive`},
	{"ZPOPMAX with the count 0 returns an empty array", `
		DEL zset
		ZADD zset 1 a 2 b 3 c
		ZPOPMAX zset 0 =>
		ZCARD zset => 3`},
	{"ZPOPMAX with negative count", `
		SET zset foo
		ZPOPMAX zset -1 => -ERR *must be positive
		DEL zset
		ZPOPMAX zset -2 => -ERR *must be positive
		ZADD zset 1 a 2 b 3 c
		ZPOPMAX zset -3 => -ERR *must be positive`},
	{"Basic ZPOPMIN/ZPOPMAX with a single key", `
		DEL zset
		ZPOPMIN zset =>
		ZADD zset -1 a 1 b 2 c 3 d 4 e
		ZPOPMIN zset => a -1
		ZPOPMIN zset => b 1
		ZPOPMAX zset => e 4
		ZPOPMAX zset => d 3
		ZPOPMIN zset => c 2
		EXISTS zset => 0`},
	{"ZPOPMIN/ZPOPMAX with count", `
		DEL z1
		ZPOPMIN z1 2 =>
		ZADD z1 0 a 1 b 2 c 3 d
		ZPOPMIN z1 2 => a 0 b 1
		ZPOPMAX z1 2 => d 3 c 2`},
	{"Basic ZMPOP_MIN/ZMPOP_MAX with a single key", `
		DEL zset
		ZMPOP 1 zset MIN =>
		ZADD zset -1 a 1 b 2 c 3 d 4 e
		ZMPOP 1 zset MIN => zset {{a -1}}
		ZMPOP 1 zset MIN => zset {{b 1}}
		ZMPOP 1 zset MAX => zset {{e 4}}
		ZMPOP 1 zset MAX => zset {{d 3}}
		ZMPOP 1 zset MIN => zset {{c 2}}
		EXISTS zset => 0`},
	{"ZMPOP_MIN/ZMPOP_MAX with count", `
		DEL z1
		ZMPOP 1 z1 MIN COUNT 2 =>
		ZADD z1 0 a 1 b 2 c 3 d
		ZMPOP 1 z1 MIN COUNT 2 => z1 {{a 0} {b 1}}
		ZMPOP 1 z1 MAX COUNT 2 => z1 {{d 3} {c 2}}`},
	{"Basic ZPOPMIN/ZPOPMAX - RESP3", `
		@resp 3
		DEL z1
		ZADD z1 0 a 1 b 2 c 3 d
		ZPOPMIN z1 => a 0.0
		ZPOPMAX z1 => d 3.0
		@resp 2`},
	{"ZPOPMIN/ZPOPMAX with count - RESP3", `
		@resp 3
		DEL z1
		ZADD z1 0 a 1 b 2 c 3 d
		ZPOPMIN z1 2 => {a 0.0} {b 1.0}
		ZPOPMAX z1 2 => {d 3.0} {c 2.0}
		@resp 2`},
	{"Basic ZMPOP_MIN/ZMPOP_MAX - RESP3", `
		@resp 3
		DEL z1
		ZADD z1 0 a 1 b 2 c 3 d
		ZMPOP 1 z1 MIN => z1 {{a 0.0}}
		ZMPOP 1 z1 MAX => z1 {{d 3.0}}
		@resp 2`},
	{"ZMPOP_MIN/ZMPOP_MAX with count - RESP3", `
		@resp 3
		DEL z1
		ZADD z1 0 a 1 b 2 c 3 d
		ZMPOP 1 z1 MIN COUNT 2 => z1 {{a 0.0} {b 1.0}}
		ZMPOP 1 z1 MAX COUNT 2 => z1 {{d 3.0} {c 2.0}}
		@resp 2`},
}

// zremrange builds a ZREMRANGEBY* case: each row recreates zset from
// content, removes the range (want count) and checks what is left.
func zremrange(cmd, content string, rows [][3]string) string {
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "DEL zset\nZADD zset %s\nEXISTS zset => 1\n%s zset %s => %s\nZRANGE zset 0 -1 => %s\n", content, cmd, r[0], r[1], r[2])
	}
	return b.String()
}

func infCase(cmd string) string {
	return strings.ReplaceAll(`
		DEL zsetinf1 zsetinf2
		ZADD zsetinf1 +inf key
		ZADD zsetinf2 +inf key
		CMD zsetinf3 2 zsetinf1 zsetinf2
		ZSCORE zsetinf3 key => inf
		ZADD zsetinf1 -inf key
		ZADD zsetinf2 +inf key
		CMD zsetinf3 2 zsetinf1 zsetinf2
		ZSCORE zsetinf3 key => 0
		ZADD zsetinf1 +inf key
		ZADD zsetinf2 -inf key
		CMD zsetinf3 2 zsetinf1 zsetinf2
		ZSCORE zsetinf3 key => 0
		ZADD zsetinf1 -inf key
		ZADD zsetinf2 -inf key
		CMD zsetinf3 2 zsetinf1 zsetinf2
		ZSCORE zsetinf3 key => -inf`, "CMD", cmd)
}

func nanWeights(cmd string) string {
	return `
		DEL zsetinf1 zsetinf2
		ZADD zsetinf1 1.0 key
		ZADD zsetinf2 1.0 key
		` + cmd + ` zsetinf3 2 zsetinf1 zsetinf2 weights nan nan => -*weight*not*float*`
}

// zsetAfterBasics are the cases after the two basics runs, in file order
// (the blocking ones are in server/tcl_zset_test.go).
var zsetAfterBasics = []tclCase{
	{"ZPOP/ZMPOP against wrong type", `
		SET foo bar
		ZPOPMIN foo => -*WRONGTYPE*
		ZPOPMIN foo 0 => -*WRONGTYPE*
		ZPOPMAX foo => -*WRONGTYPE*
		ZPOPMAX foo 0 => -*WRONGTYPE*
		ZPOPMIN foo 2 => -*WRONGTYPE*
		ZMPOP 1 foo min => -*WRONGTYPE*
		ZMPOP 1 foo max => -*WRONGTYPE*
		ZMPOP 1 foo max count 200 => -*WRONGTYPE*
		DEL foo
		SET foo2 bar
		ZMPOP 2 foo foo2 min => -*WRONGTYPE*
		ZMPOP 2 foo2 foo1 max count 1 => -*WRONGTYPE*`},
	{"ZMPOP with illegal argument", `
		ZMPOP 1 => -ERR wrong number of arguments for 'zmpop' command
		ZMPOP 1 myzset => -ERR wrong number of arguments for 'zmpop' command
		ZMPOP 0 myzset MIN => -ERR numkeys*
		ZMPOP a myzset MIN => -ERR numkeys*
		ZMPOP -1 myzset MAX => -ERR numkeys*
		ZMPOP 1 myzset bad_where => -ERR syntax error*
		ZMPOP 1 myzset MIN bar_arg => -ERR syntax error*
		ZMPOP 1 myzset MAX MIN => -ERR syntax error*
		ZMPOP 1 myzset COUNT => -ERR syntax error*
		ZMPOP 1 myzset MAX COUNT 1 COUNT 2 => -ERR syntax error*
		ZMPOP 2 myzset myzset2 bad_arg => -ERR syntax error*
		ZMPOP 1 myzset MIN COUNT 0 => -ERR count*
		ZMPOP 1 myzset MAX COUNT a => -ERR count*
		ZMPOP 1 myzset MIN COUNT -1 => -ERR count*
		ZMPOP 2 myzset myzset2 MAX COUNT -1 => -ERR count*`},
	{"ZUNIONSTORE regression, should not create NaN in scores", `
		ZADD z -inf neginf
		ZUNIONSTORE out 1 z weights 0
		ZRANGE out 0 -1 withscores => neginf 0`},
	{"ZUNIONSTORE/ZINTERSTORE/ZDIFFSTORE error if using WITHSCORES ", `
		ZUNIONSTORE foo 2 zsetd zsetf withscores => -*ERR*syntax*
		ZINTERSTORE foo 2 zsetd zsetf withscores => -*ERR*syntax*
		ZDIFFSTORE foo 2 zsetd zsetf withscores => -*ERR*syntax*`},
	{"ZMSCORE retrieve", `
		DEL zmscoretest
		ZADD zmscoretest 10 x
		ZADD zmscoretest 20 y
		ZMSCORE zmscoretest x y => 10 20`},
	{"ZMSCORE retrieve from empty set", `
		DEL zmscoretest
		ZMSCORE zmscoretest x y => {} {}`},
	{"ZMSCORE retrieve with missing member", `
		ZADD zmscoretest 10 x
		ZMSCORE zmscoretest x y => 10 {}`},
	{"ZMSCORE retrieve single member", `
		ZADD zmscoretest 20 y
		ZMSCORE zmscoretest x => 10`},
	{"ZMSCORE retrieve requires one or more members", `ZMSCORE zmscoretest => -*ERR*wrong*number*arg*`},
	{"ZSET commands don't accept the empty strings as valid score", `ZADD myzset "" abc => -*not*float*`},
	{"zunionInterDiffGenericCommand at least 1 input key", `
		ZUNION 0 key => -*at least 1 input key * 'zunion' command
		ZUNIONSTORE dst_key 0 key => -*at least 1 input key * 'zunionstore' command
		ZINTER 0 key => -*at least 1 input key * 'zinter' command
		ZINTERSTORE dst_key 0 key => -*at least 1 input key * 'zinterstore' command
		ZDIFF 0 key => -*at least 1 input key * 'zdiff' command
		ZDIFFSTORE dst_key 0 key => -*at least 1 input key * 'zdiffstore' command
		ZINTERCARD 0 key => -*at least 1 input key * 'zintercard' command`},
	{"ZRANGESTORE basic", `
		FLUSHALL
		ZADD z1 1 a 2 b 3 c 4 d
		ZRANGESTORE z2 z1 0 -1 => 4
		ZRANGE z2 0 -1 withscores => a 1 b 2 c 3 d 4`},
	{"ZRANGESTORE RESP3", `
		@resp 3
		ZRANGE z2 0 -1 withscores => {a 1.0} {b 2.0} {c 3.0} {d 4.0}
		@resp 2`},
	{"ZRANGESTORE range", `
		ZRANGESTORE z2 z1 1 2 => 2
		ZRANGE z2 0 -1 withscores => b 2 c 3`},
	{"ZRANGESTORE BYLEX", `
		ZRANGESTORE z3 z1 [b [c BYLEX => 2
		OBJECT ENCODING z3 => listpack
		ZRANGESTORE z2 z1 [b [c BYLEX => 2
		ZRANGE z2 0 -1 withscores => b 2 c 3`},
	{"ZRANGESTORE BYSCORE", `
		ZRANGESTORE z4 z1 1 2 BYSCORE => 2
		OBJECT ENCODING z4 => listpack
		ZRANGESTORE z2 z1 1 2 BYSCORE => 2
		ZRANGE z2 0 -1 withscores => a 1 b 2`},
	{"ZRANGESTORE BYSCORE LIMIT", `
		ZRANGESTORE z2 z1 0 5 BYSCORE LIMIT 0 2 => 2
		ZRANGE z2 0 -1 withscores => a 1 b 2`},
	{"ZRANGESTORE BYSCORE REV LIMIT", `
		ZRANGESTORE z2 z1 5 0 BYSCORE REV LIMIT 0 2 => 2
		ZRANGE z2 0 -1 withscores => c 3 d 4`},
	{"ZRANGE BYSCORE REV LIMIT", `ZRANGE z1 5 0 BYSCORE REV LIMIT 0 2 WITHSCORES => d 4 c 3`},
	{"ZRANGESTORE - src key missing", `
		ZRANGESTORE z2 missing 0 -1 => 0
		EXISTS z2 => 0`},
	{"ZRANGESTORE - src key wrong type", `
		ZADD z2 1 a
		SET foo bar
		ZRANGESTORE z2 foo 0 -1 => -*WRONGTYPE*
		ZRANGE z2 0 -1 => a`},
	{"ZRANGESTORE - empty range", `
		ZRANGESTORE z2 z1 5 6 => 0
		EXISTS z2 => 0`},
	{"ZRANGESTORE BYLEX - empty range", `
		ZRANGESTORE z2 z1 [f [g BYLEX => 0
		EXISTS z2 => 0`},
	{"ZRANGESTORE BYSCORE - empty range", `
		ZRANGESTORE z2 z1 5 6 BYSCORE => 0
		EXISTS z2 => 0`},
	{"ZRANGE BYLEX", `ZRANGE z1 [b [c BYLEX => b c`},
	{"ZRANGESTORE invalid syntax", `
		ZRANGESTORE z2 z1 0 -1 limit 1 2 => -*syntax*
		ZRANGESTORE z2 z1 0 -1 WITHSCORES => -*syntax*`},
	{"ZRANGESTORE with zset-max-listpack-entries 0 #10767 case", `
		@zset 0 64
		DEL z1 z2
		ZADD z1 1 a
		OBJECT ENCODING z1 => skiplist
		ZRANGESTORE z2 z1 0 -1 => 1
		OBJECT ENCODING z2 => skiplist
		@zset 128 64`},
	{"ZRANGESTORE with zset-max-listpack-entries 1 dst key should use skiplist encoding", `
		@zset 1 64
		DEL z1 z2 z3
		ZADD z1 1 a 2 b
		ZRANGESTORE z2 z1 0 0 => 1
		OBJECT ENCODING z2 => listpack
		ZRANGESTORE z3 z1 0 1 => 2
		OBJECT ENCODING z3 => skiplist
		@zset 128 64`},
	{"ZRANGE invalid syntax", `
		ZRANGE z1 0 -1 limit 1 2 => -*syntax*
		ZRANGE z1 0 -1 BYLEX WITHSCORES => -*syntax*
		ZREVRANGE z1 0 -1 BYSCORE => -*syntax*
		ZRANGEBYSCORE z1 0 -1 REV => -*syntax*`},
	{"ZRANDMEMBER count of 0 is handled correctly", `
		DEL myzset
		ZADD myzset 1 a 2 b 3 c
		ZRANDMEMBER myzset 0 =>`},
	{"ZRANDMEMBER with <count> against non existing key", `ZRANDMEMBER nonexisting_key 100 =>`},
	{"ZRANDMEMBER count overflow", `
		ZADD myzset 0 a
		ZRANDMEMBER myzset -9223372036854770000 withscores => -*value is out of range*
		ZRANDMEMBER myzset -9223372036854775808 withscores => -*value is out of range*
		ZRANDMEMBER myzset -9223372036854775808 => -*value is out of range*`},
	{"zset score double range", `
		DEL zz
		ZADD zz 179769313486231570814527423731704356798070567525844996598917476803157260780028538760589558632766878171540458953514382464234321326889464182768467546703537516986049910576551282076245490090389328944075868508455133942304583236903222948165808559332123348274797826204144723168738177180919299881250404026184124858368.00000000000000000 dblmax
		OBJECT ENCODING zz => listpack
		ZSCORE zz dblmax => 1.7976931348623157e+308`},
}

// TestTclZSetBasics runs zset.tcl's basics block under listpack (128/64) and
// skiplist (0/0) thresholds, as the Tcl file does, then the cases after it.
func TestTclZSetBasics(t *testing.T) {
	for _, enc := range []struct {
		name string
		e, v int64
	}{{"listpack", 128, 64}, {"skiplist", 0, 0}} {
		t.Run(enc.name, func(t *testing.T) {
			s := New(16)
			s.SetLimits(Limits{HashEntries: 512, HashValue: 64, ZSetEntries: enc.e, ZSetValue: enc.v})
			runTcl(t, s, []tclCase{{"Check encoding", `
				DEL ztmp
				ZADD ztmp 10 x
				OBJECT ENCODING ztmp => ` + enc.name}})
			runTcl(t, s, zsetBasics)
		})
	}
	s := New(16)
	runTcl(t, s, zsetAfterBasics)
}

// zset.tcl's readraw cases (ZPOPMIN/ZPOPMAX and ZMPOP readraw in RESP2 and
// RESP3) and the null/empty distinctions, byte for byte.
func TestTclZSetReadraw(t *testing.T) {
	s := New(16)
	for _, c := range []struct {
		proto int
		args  string
		want  string
	}{
		{2, "DEL zset zset3 zset4", ":0\r\n"},
		{2, "ZADD zset2 1 a 2 b 3 c 4 d 5 e", ":5\r\n"},
		{2, "ZPOPMIN zset", "*0\r\n"},
		{2, "ZPOPMIN zset 1", "*0\r\n"},
		{2, "ZPOPMIN zset2", "*2\r\n$1\r\na\r\n$1\r\n1\r\n"},
		{2, "ZPOPMAX zset2 1", "*2\r\n$1\r\ne\r\n$1\r\n5\r\n"},
		{3, "ZPOPMIN zset", "*0\r\n"},
		{3, "ZPOPMIN zset2", "*2\r\n$1\r\nb\r\n,2\r\n"},
		{3, "ZPOPMAX zset2 1", "*1\r\n*2\r\n$1\r\nd\r\n,4\r\n"},
		{2, "ZPOPMIN zset2 0", "*0\r\n"},
		{2, "ZMPOP 1 zset min", "*-1\r\n"},
		{2, "ZMPOP 2 zset zset2x max count 1", "*-1\r\n"},
		{3, "ZMPOP 1 zset min", "_\r\n"},
		{3, "ZMPOP 2 zset zset2x max count 1", "_\r\n"},
		{2, "ZADD zset3 1 a", ":1\r\n"},
		{2, "ZADD zset4 1 a 2 b 3 c 4 d 5 e", ":5\r\n"},
		{2, "ZMPOP 1 zset3 max", "*2\r\n$5\r\nzset3\r\n*1\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n"},
		{3, "ZMPOP 2 zset3 zset4 min count 2", "*2\r\n$5\r\nzset4\r\n*2\r\n*2\r\n$1\r\na\r\n,1\r\n*2\r\n$1\r\nb\r\n,2\r\n"},
		{2, "ZRANK zset4 foo", "$-1\r\n"},
		{2, "ZRANK zset4 foo withscore", "*-1\r\n"},
		{3, "ZRANK zset4 foo withscore", "_\r\n"},
		{2, "ZRANDMEMBER zset4 0", "*0\r\n"},
		{2, "ZRANDMEMBER nonexisting_key 100", "*0\r\n"},
	} {
		if got := run(t, s, c.proto, strings.Fields(c.args)...); got != c.want {
			t.Errorf("RESP%d %s: %q, want %q", c.proto, c.args, got, c.want)
		}
	}
}

// zset.tcl's random and stress cases in both encodings against a model:
// ZSCORE/ZMSCORE round trip of random doubles (17 digits), the sorting
// stresser (random and integer scores, random updates), ZRANGEBYSCORE and
// ZRANGEBYLEX fuzzy ranges with ZCOUNT/ZLEXCOUNT, ZREMRANGEBYLEX fuzzy
// (through a ZUNIONSTORE copy), the backlink test (ZRANGE = reversed
// ZREVRANGE), ZRANK stress, ZDIFF fuzzing, ZUNIONSTORE result sorted, the
// skiplist order consistency test, ZRANDMEMBER paths, and the listpack
// overflow by ZADD (single, multiple, single_multiple).
func TestTclZSetStressers(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, enc := range []struct {
		name     string
		e, v     int64
		elements int
	}{{"listpack", 256, 64, 128}, {"skiplist", 0, 0, 100}} {
		t.Run(enc.name, func(t *testing.T) {
			s := New(16)
			s.SetLimits(Limits{HashEntries: 512, HashValue: 64, ZSetEntries: enc.e, ZSetValue: enc.v})
			checkEnc := func(key string) {
				t.Helper()
				if got := run(t, s, 2, "OBJECT", "ENCODING", key); got != bulk(enc.name) {
					t.Fatalf("%s encoding %q", key, got)
				}
			}
			// ZSCORE / ZMSCORE: random doubles read back exactly.
			run(t, s, 2, "DEL", "zscoretest")
			aux := make([]float64, enc.elements)
			for i := range aux {
				aux[i] = rng.Float64()
				run(t, s, 2, "ZADD", "zscoretest", strconv.FormatFloat(aux[i], 'g', -1, 64), strconv.Itoa(i))
			}
			checkEnc("zscoretest")
			args := []string{"ZMSCORE", "zscoretest"}
			for i := range aux {
				got, _ := strconv.ParseFloat(strings.TrimSpace(strings.Split(run(t, s, 2, "ZSCORE", "zscoretest", strconv.Itoa(i)), "\r\n")[1]), 64)
				if got != aux[i] {
					t.Fatalf("ZSCORE %d: %v, want %v", i, got, aux[i])
				}
				args = append(args, strconv.Itoa(i))
			}
			ms := strings.Fields(tclRender(t, run(t, s, 2, args...)))
			for i := range aux {
				if got, _ := strconv.ParseFloat(ms[i], 64); got != aux[i] {
					t.Fatalf("ZMSCORE %d: %v", i, got)
				}
			}
			// ZSET sorting stresser.
			for test := 0; test < 2; test++ {
				run(t, s, 2, "DEL", "myzset")
				model := map[string]float64{}
				score := func() float64 {
					if test == 0 {
						return rng.Float64()
					}
					return float64(rng.IntN(10))
				}
				for i := 0; i < enc.elements; i++ {
					sc := score()
					model[strconv.Itoa(i)] = sc
					run(t, s, 2, "ZADD", "myzset", strconv.FormatFloat(sc, 'g', -1, 64), strconv.Itoa(i))
					if rng.Float64() < .2 {
						j := strconv.Itoa(rng.IntN(1000))
						sc := score()
						model[j] = sc
						run(t, s, 2, "ZADD", "myzset", strconv.FormatFloat(sc, 'g', -1, 64), j)
					}
				}
				checkEnc("myzset")
				if got, want := tclRender(t, run(t, s, 2, "ZRANGE", "myzset", "0", "-1")), strings.Join(modelOrder(model), " "); got != want {
					t.Fatalf("sorting stresser %d:\n%s\nwant\n%s", test, got, want)
				}
			}
			// ZRANGEBYSCORE fuzzy test with ZCOUNT.
			run(t, s, 2, "DEL", "zset")
			model := map[string]float64{}
			for i := 0; i < enc.elements; i++ {
				sc := rng.Float64()
				model[strconv.Itoa(i)] = sc
				run(t, s, 2, "ZADD", "zset", strconv.FormatFloat(sc, 'g', -1, 64), strconv.Itoa(i))
			}
			checkEnc("zset")
			order := modelOrder(model)
			for i := 0; i < 100; i++ {
				lo, hi := rng.Float64(), rng.Float64()
				if lo > hi {
					lo, hi = hi, lo
				}
				los, his := strconv.FormatFloat(lo, 'g', -1, 64), strconv.FormatFloat(hi, 'g', -1, 64)
				for _, r := range []struct {
					min, max string
					in       func(float64) bool
				}{
					{"-inf", los, func(x float64) bool { return x <= lo }},
					{los, his, func(x float64) bool { return x >= lo && x <= hi }},
					{his, "+inf", func(x float64) bool { return x >= hi }},
					{"-inf", "(" + los, func(x float64) bool { return x < lo }},
					{"(" + los, "(" + his, func(x float64) bool { return x > lo && x < hi }},
					{"(" + his, "+inf", func(x float64) bool { return x > hi }},
				} {
					var want []string
					for _, m := range order {
						if r.in(model[m]) {
							want = append(want, m)
						}
					}
					if got := tclRender(t, run(t, s, 2, "ZRANGEBYSCORE", "zset", r.min, r.max)); got != strings.Join(want, " ") {
						t.Fatalf("ZRANGEBYSCORE %s %s: %q, want %q", r.min, r.max, got, want)
					}
					if got := run(t, s, 2, "ZCOUNT", "zset", r.min, r.max); got != integer(int64(len(want))) {
						t.Fatalf("ZCOUNT %s %s: %q, want %d", r.min, r.max, got, len(want))
					}
				}
			}
			// ZRANGEBYLEX / ZREMRANGEBYLEX fuzzy tests.
			run(t, s, 2, "DEL", "zset", "zsetcopy")
			var lexset []string
			randstr := func() string {
				b := make([]byte, rng.IntN(31))
				for i := range b {
					b[i] = byte('a' + rng.IntN(26))
				}
				return string(b)
			}
			for j := 0; j < enc.elements; j++ {
				e := randstr()
				lexset = append(lexset, e)
				run(t, s, 2, "ZADD", "zset", "0", e)
			}
			slices.Sort(lexset)
			lexset = slices.Compact(lexset)
			for j := 0; j < 100; j++ {
				lo, hi := randstr(), randstr()
				loInc, hiInc := rng.IntN(2) == 1, rng.IntN(2) == 1
				bound := func(s string, inc bool) string {
					if inc {
						return "[" + s
					}
					return "(" + s
				}
				var want []string
				for _, e := range lexset {
					if (loInc && e >= lo || !loInc && e > lo) && (hiInc && e <= hi || !hiInc && e < hi) {
						want = append(want, e)
					}
				}
				cmin, cmax := bound(lo, loInc), bound(hi, hiInc)
				if got := tclRender(t, run(t, s, 2, "ZRANGEBYLEX", "zset", cmin, cmax)); got != tclList(want) {
					t.Fatalf("ZRANGEBYLEX %s %s: %q, want %q", cmin, cmax, got, want)
				}
				rev := slices.Clone(want)
				slices.Reverse(rev)
				if got := tclRender(t, run(t, s, 2, "ZREVRANGEBYLEX", "zset", cmax, cmin)); got != tclList(rev) {
					t.Fatalf("ZREVRANGEBYLEX %s %s: %q", cmax, cmin, got)
				}
				if got := run(t, s, 2, "ZLEXCOUNT", "zset", cmin, cmax); got != integer(int64(len(want))) {
					t.Fatalf("ZLEXCOUNT %s %s: %q", cmin, cmax, got)
				}
				run(t, s, 2, "ZUNIONSTORE", "zsetcopy", "1", "zset")
				run(t, s, 2, "ZREMRANGEBYLEX", "zsetcopy", cmin, cmax)
				var left []string
				for _, e := range lexset {
					if !slices.Contains(want, e) {
						left = append(left, e)
					}
				}
				if got := tclRender(t, run(t, s, 2, "ZRANGE", "zsetcopy", "0", "-1")); got != tclList(left) {
					t.Fatalf("ZREMRANGEBYLEX %s %s left %q", cmin, cmax, got)
				}
			}
			// Backlink consistency: ZRANGE is ZREVRANGE reversed.
			run(t, s, 2, "DEL", "myzset")
			for j := 0; j < enc.elements; j++ {
				run(t, s, 2, "ZADD", "myzset", strconv.FormatFloat(rng.Float64(), 'g', -1, 64), "Element-"+strconv.Itoa(j))
				run(t, s, 2, "ZREM", "myzset", "Element-"+strconv.Itoa(rng.IntN(enc.elements)))
			}
			checkEnc("myzset")
			l1 := strings.Fields(tclRender(t, run(t, s, 2, "ZRANGE", "myzset", "0", "-1")))
			l2 := strings.Fields(tclRender(t, run(t, s, 2, "ZREVRANGE", "myzset", "0", "-1")))
			slices.Reverse(l2)
			if !slices.Equal(l1, l2) {
				t.Fatal("ZRANGE and ZREVRANGE disagree")
			}
			// ZRANK augmented skip list stress testing.
			run(t, s, 2, "DEL", "myzset")
			for k := 0; k < 2000; k++ {
				i := strconv.Itoa(k % enc.elements)
				if rng.Float64() < .2 {
					run(t, s, 2, "ZREM", "myzset", i)
				} else {
					run(t, s, 2, "ZADD", "myzset", strconv.FormatFloat(rng.Float64(), 'g', -1, 64), i)
				}
				card, _ := strconv.Atoi(strings.TrimSpace(run(t, s, 2, "ZCARD", "myzset")[1:]))
				if card > 0 {
					idx := strconv.Itoa(rng.IntN(card))
					ele := tclRender(t, run(t, s, 2, "ZRANGE", "myzset", idx, idx))
					if got := run(t, s, 2, "ZRANK", "myzset", ele); got != ":"+idx+"\r\n" {
						t.Fatalf("%s RANK is wrong: %q != %s", ele, got, idx)
					}
				}
			}
		})
	}

	s := New(16)
	// ZDIFF fuzzing.
	for j := 0; j < 100; j++ {
		in := map[string]bool{}
		numSets := rng.IntN(10) + 1
		args := []string{"ZDIFF", strconv.Itoa(numSets)}
		for i := 0; i < numSets; i++ {
			key := "zset_" + strconv.Itoa(i)
			run(t, s, 2, "DEL", key)
			args = append(args, key)
			for n := rng.IntN(100); n > 0; n-- {
				ele := strconv.Itoa(rng.IntN(300))
				run(t, s, 2, "ZADD", key, strconv.Itoa(rng.IntN(100)), ele)
				if i == 0 {
					in[ele] = true
				} else {
					delete(in, ele)
				}
			}
		}
		got := strings.Fields(tclRender(t, run(t, s, 2, args...)))
		sort.Strings(got)
		var want []string
		for e := range in {
			want = append(want, e)
		}
		sort.Strings(want)
		if !slices.Equal(got, want) {
			t.Fatalf("ZDIFF fuzz %d: %v, want %v", j, got, want)
		}
	}
	// ZUNIONSTORE result is sorted.
	a1, a2 := []string{"ZADD", "one"}, []string{"ZADD", "two"}
	for j := 0; j < 1000; j++ {
		a1 = append(a1, strconv.FormatFloat(rng.Float64(), 'g', -1, 64), strconv.Itoa(rng.IntN(1000)))
		a2 = append(a2, strconv.FormatFloat(rng.Float64(), 'g', -1, 64), strconv.Itoa(rng.IntN(1000)))
	}
	run(t, s, 2, a1...)
	run(t, s, 2, a2...)
	run(t, s, 2, "ZUNIONSTORE", "dest", "2", "one", "two")
	ws := strings.Fields(tclRender(t, run(t, s, 2, "ZRANGE", "dest", "0", "-1", "WITHSCORES")))
	if len(ws) < 200 {
		t.Fatalf("union of %d", len(ws)/2)
	}
	old := 0.0
	for i := 1; i < len(ws); i += 2 {
		f, _ := strconv.ParseFloat(ws[i], 64)
		if f < old {
			t.Fatalf("ZUNIONSTORE result unsorted at %d", i)
		}
		old = f
	}
	// ZSET skiplist order consistency when elements are moved.
	s.SetLimits(Limits{HashEntries: 512, HashValue: 64, ZSetEntries: 0, ZSetValue: 64})
	for times := 0; times < 10; times++ {
		run(t, s, 2, "DEL", "zset")
		for j := 0; j < 1000; j++ {
			run(t, s, 2, "ZADD", "zset", strconv.Itoa(rng.IntN(50)), "ele-"+strconv.Itoa(rng.IntN(10)))
		}
		ws := strings.Fields(tclRender(t, run(t, s, 2, "ZRANGE", "zset", "0", "-1", "WITHSCORES")))
		prevE, prevS := "", -1.0
		for i := 0; i < len(ws); i += 2 {
			sc, _ := strconv.ParseFloat(ws[i+1], 64)
			if !(prevS < sc || prevS == sc && prevE < ws[i]) {
				t.Fatalf("order broken at %s %s", ws[i], ws[i+1])
			}
			prevE, prevS = ws[i], sc
		}
	}
	// ZADD overflows the maximum allowed elements in a listpack.
	for _, typ := range []string{"single", "multiple", "single_multiple"} {
		s.SetLimits(Limits{HashEntries: 512, HashValue: 64, ZSetEntries: 64, ZSetValue: 64})
		run(t, s, 2, "DEL", "myzset")
		switch typ {
		case "single":
			for i := 0; i < 64; i++ {
				run(t, s, 2, "ZADD", "myzset", strconv.Itoa(i), strconv.Itoa(i))
			}
		default:
			if typ == "single_multiple" {
				run(t, s, 2, "ZADD", "myzset", "1", "1")
			}
			args := []string{"ZADD", "myzset"}
			for i := 0; i < 128; i++ {
				args = append(args, strconv.Itoa(i))
			}
			run(t, s, 2, args...)
		}
		runTcl(t, s, []tclCase{{"ZADD overflows the maximum allowed elements in a listpack - " + typ, `
			OBJECT ENCODING myzset => listpack
			ZCARD myzset => 64
			ZADD myzset 1 b => 1
			OBJECT ENCODING myzset => skiplist`}})
	}
	// ZRANDMEMBER (both encodings; the "-" paths repeat, the positive
	// ones are distinct and capped at the set size).
	for _, c := range []struct{ enc, content string }{
		{"listpack", "1 a 2 b 3 c"}, {"skiplist", "1 a 2 b 3 " + strings.Repeat("x", 80)},
		{"skiplist", "1 a 2 b 3 c 4 d 5 e 6 f 7 g 7 h 9 i 10 " + strings.Repeat("y", 80)},
		{"listpack", "1 a 2 b 3 c 4 d 5 e 6 f 7 g 7 h 9 i 10 j"},
	} {
		s.SetLimits(Limits{HashEntries: 512, HashValue: 64, ZSetEntries: 128, ZSetValue: 10})
		run(t, s, 2, "DEL", "myzset")
		run(t, s, 2, append([]string{"ZADD", "myzset"}, strings.Fields(c.content)...)...)
		if got := run(t, s, 2, "OBJECT", "ENCODING", "myzset"); got != bulk(c.enc) {
			t.Fatalf("ZRANDMEMBER set encoding %q", got)
		}
		f := strings.Fields(c.content)
		dict := map[string]string{}
		for i := 0; i < len(f); i += 2 {
			dict[f[i+1]] = f[i]
		}
		seen := map[string]bool{}
		for i := 0; i < 100; i++ {
			seen[tclRender(t, run(t, s, 2, "ZRANDMEMBER", "myzset"))] = true
		}
		if len(seen) != len(dict) {
			t.Fatalf("ZRANDMEMBER saw %d of %d", len(seen), len(dict))
		}
		if len(dict) == 10 {
			// Random uniform distribution (chi-square, df = 9, under 40).
			if x := chiSquare(strings.Fields(tclRender(t, run(t, s, 2, "ZRANDMEMBER", "myzset", "-1000")))); x >= 40 {
				t.Fatalf("ZRANDMEMBER -1000: chi-square %.1f", x)
			}
			for _, size := range []int{1, 2, 8} {
				var all []string
				for i := 0; i < 1000/size; i++ {
					all = append(all, strings.Fields(tclRender(t, run(t, s, 2, "ZRANDMEMBER", "myzset", strconv.Itoa(size))))...)
				}
				if x := chiSquare(all); x >= 40 {
					t.Fatalf("ZRANDMEMBER %d: chi-square %.1f", size, x)
				}
			}
		}
		for _, n := range []int{-20, -1001, 10, 20, 1, 2, 8} {
			res := strings.Fields(tclRender(t, run(t, s, 2, "ZRANDMEMBER", "myzset", strconv.Itoa(n), "WITHSCORES")))
			want := n
			if n < 0 {
				want = -n
			} else if n > len(dict) {
				want = len(dict)
			}
			if len(res) != 2*want {
				t.Fatalf("ZRANDMEMBER %d WITHSCORES: %d items", n, len(res))
			}
			uniq := map[string]bool{}
			for i := 0; i < len(res); i += 2 {
				if dict[res[i]] != res[i+1] {
					t.Fatalf("ZRANDMEMBER %d: %s %s", n, res[i], res[i+1])
				}
				uniq[res[i]] = true
			}
			if n > 0 && len(uniq) != want {
				t.Fatalf("ZRANDMEMBER %d repeated members", n)
			}
		}
	}
	runTcl(t, s, []tclCase{{"ZRANDMEMBER with RESP3", `
		@resp 3
		ZRANDMEMBER myzset 3 withscores => *{* *} {* *} {* *}
		@resp 2`}})
}

// modelOrder is the members of model in sorted-set order (score, then
// member bytes).
func modelOrder(model map[string]float64) []string {
	var out []string
	for m := range model {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := model[out[i]], model[out[j]]
		if a != b {
			return a < b
		}
		return out[i] < out[j]
	})
	return out
}

// tclList is items as a Tcl list (empty items in braces).
func tclList(items []string) string {
	out := make([]string, len(items))
	for i, it := range items {
		if it == "" {
			it = "{}"
		}
		out[i] = it
	}
	return strings.Join(out, " ")
}
