package server

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The differential generators of the sorted-set algebra (ZUNION, ZINTER,
// ZDIFF and their STORE forms, ZINTERCARD), ZRANGESTORE, ZMPOP and the
// blocking pops, the rest of the string family, key expiry and the rest of
// the keyspace family (see the top of differential_test.go for the
// comparison rules). Differences between Valkey 8.0 and Redis 7.0 met
// here, where emqd follows Valkey (the golden transcripts are the
// authority, docs/compat.md §6.2):
//   - Redis is started with hash-max-listpack-entries 512 (Valkey 8.0's
//     default; Redis 7.0 says 128) so OBJECT ENCODING and the hash field
//     order agree;
//   - remaining times (TTL, PTTL, EXPIRETIME, PEXPIRETIME after a relative
//     expiry) are compared within diffTTLSlack: each server computes them
//     from its own clock reading;
//   - the main run sets only far (>= 100 s) or past expire times, so
//     nothing expires during it except at once; real short TTLs are in
//     TestDifferentialExpiry, which waits past them before comparing.

// valkeyOnlyReply reports whether emqd's reply e and Redis 7.0's r are a
// known difference where emqd follows Valkey 8.0: a blocking pop's timeout
// whose milliseconds overflow is "out of range" in Valkey (the transcript
// zset-algebra), "negative" in Redis 7.0 (its ceill conversion wraps).
func valkeyOnlyReply(e, r string) bool {
	return e == "-ERR timeout is out of range\r\n" && r == "-ERR timeout is negative\r\n"
}

// execValkeyOnly reports whether two EXEC replies differ only in
// elements where emqd follows Valkey (valkeyOnlyReply, for a sub-command
// with a huge timeout).
func execValkeyOnly(sub []dcmd, e, r string) bool {
	ne, err1 := diffParse(e)
	nr, err2 := diffParse(r)
	if err1 != nil || err2 != nil || ne.typ != '*' || nr.typ != '*' || len(ne.kids) != len(sub) || len(nr.kids) != len(sub) {
		return false
	}
	for i := range sub {
		if diffEqual(ne.kids[i], nr.kids[i], true) {
			continue
		}
		if !hugeTimeout(sub[i].args) || "-"+ne.kids[i].text+"\r\n" != "-ERR timeout is out of range\r\n" ||
			"-"+nr.kids[i].text+"\r\n" != "-ERR timeout is negative\r\n" {
			return false
		}
	}
	return true
}

// hugeTimeout reports whether a blocking pop's timeout argument is one of
// valkeyOnlyReply's: a number of seconds whose milliseconds pass 2^63.
func hugeTimeout(args []string) bool {
	var t string
	switch strings.ToLower(args[0]) {
	case "bzpopmin", "bzpopmax":
		t = args[len(args)-1]
	case "bzmpop":
		if len(args) < 2 {
			return false
		}
		t = args[1]
	default:
		return false
	}
	f, err := strconv.ParseFloat(t, 64)
	return err == nil && f*1000 >= 9.2e18
}

// diffTTLSlack is how far two remaining times may differ (ms; 2 for the
// second-valued replies).
const diffTTLSlack = 2000

// Compare kinds of this file (after those of differential_test.go).
const (
	dkTTL     dkind = 100 + iota // TTL family: integers within diffTTLSlack
	dkRandKey                    // RANDOMKEY: a key both hold, or nil on both
	dkSwapDB                     // SWAPDB: exact; the pair's keys move
)

// farSec is a relative time in seconds that cannot pass during a run.
func (g *diffGen) farSec() string { return strconv.Itoa(100 + g.r.IntN(1_000_000)) }

// relTime draws EXPIRE's / SET EX's time argument: far, none left (<= 0,
// deleting at once where allowed), or invalid.
func (g *diffGen) relTime(ms bool) string {
	switch x := g.r.IntN(20); {
	case x < 12:
		if ms {
			return strconv.Itoa(100_000 + g.r.IntN(1_000_000_000))
		}
		return g.farSec()
	case x < 15:
		return g.pick([]string{"0", "-1", "-100", "-9223372036854775808"})
	}
	return g.pick([]string{"abc", "", "1.5", " 1", "9223372036854775807", "9223372036854775808",
		"9223372036854775", "9223372036854776", "-9223372036854775809", "01", "+5"})
}

// absTime draws EXPIREAT's / SET EXAT's time: far in the future, in the
// past, or invalid.
func (g *diffGen) absTime(ms bool) string {
	now := time.Now().Unix()
	switch x := g.r.IntN(20); {
	case x < 11:
		t := now + 1_000_000 + int64(g.r.IntN(1_000_000))
		if ms {
			return strconv.FormatInt(t*1000+int64(g.r.IntN(1000)), 10)
		}
		return strconv.FormatInt(t, 10)
	case x < 15:
		return g.pick([]string{"1", "0", "-5", strconv.FormatInt(now-1000, 10)})
	}
	return g.pick([]string{"abc", "1.5", "9223372036854775807", "-9223372036854775808", "9223372036854775808", ""})
}

// expireCmd draws the expiry family.
func (g *diffGen) expireCmd() dcmd {
	key := g.pick(diffAllKeys)
	if g.chance(0.6) {
		key = g.key(append(append(diffStrKeys[:len(diffStrKeys):len(diffStrKeys)], diffHashKeys...), diffZKeys...))
	}
	switch g.r.IntN(10) {
	case 0, 1, 2, 3:
		name := g.pick([]string{"EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT"})
		ms := name[0] == 'P'
		var t string
		if strings.HasSuffix(name, "AT") {
			t = g.absTime(ms)
		} else {
			t = g.relTime(ms)
		}
		a := g.args(name, key, t)
		for n := g.r.IntN(3); n > 0; n-- {
			a = append(a, g.cs(g.pick([]string{"NX", "XX", "GT", "LT", "NX", "XX", "GT", "LT", "junk"})))
		}
		return dcmd{args: a}
	case 4, 5, 6:
		a := g.args(g.pick([]string{"TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME"}), key)
		if g.chance(0.03) {
			a = append(a, key)
		}
		return dcmd{args: a, kind: dkTTL}
	case 7:
		return dcmd{args: g.args("PERSIST", key)}
	}
	// GETEX
	a := g.args("GETEX", key)
	switch g.r.IntN(8) {
	case 0, 1:
	case 2:
		a = append(a, g.cs("PERSIST"))
	case 3:
		a = append(a, g.cs("EX"), g.relTime(false))
	case 4:
		a = append(a, g.cs("PX"), g.relTime(true))
	case 5:
		a = append(a, g.cs("EXAT"), g.absTime(false))
	case 6:
		a = append(a, g.cs("PXAT"), g.absTime(true))
	default:
		a = append(a, g.cs(g.pick([]string{"KEEPTTL", "NX", "EX", "PERSIST", "junk"})))
		if g.chance(0.5) {
			a = append(a, g.cs(g.pick([]string{"EX", "PERSIST", "PX"})), g.farSec())
		}
	}
	return dcmd{args: a}
}

// setExpireOpt draws one SET expiry option with its argument.
func (g *diffGen) setExpireOpt() []string {
	switch g.r.IntN(5) {
	case 0:
		return []string{g.cs("EX"), g.relTime(false)}
	case 1:
		return []string{g.cs("PX"), g.relTime(true)}
	case 2:
		return []string{g.cs("EXAT"), g.absTime(false)}
	case 3:
		return []string{g.cs("PXAT"), g.absTime(true)}
	}
	return []string{g.cs("KEEPTTL")}
}

// stringMoreCmd draws the string commands beyond GET/SET/INCR/MSET.
func (g *diffGen) stringMoreCmd() dcmd {
	key := g.key(diffStrKeys)
	switch g.r.IntN(13) {
	case 0:
		name := g.pick([]string{"SETEX", "PSETEX"})
		return dcmd{args: g.args(name, key, g.relTime(name[0] == 'P'), g.value())}
	case 1:
		return dcmd{args: g.args("SETNX", key, g.value())}
	case 2:
		return dcmd{args: g.args("GETDEL", key)}
	case 3:
		return dcmd{args: g.args("GETSET", key, g.value())}
	case 4, 5:
		return dcmd{args: g.args(g.pick([]string{"GETRANGE", "SUBSTR", "GETRANGE"}), key, g.rank(), g.rank())}
	case 6, 7:
		off := strconv.Itoa(g.r.IntN(80))
		val := g.value()
		switch g.r.IntN(10) {
		case 0:
			off = g.pick([]string{"-1", "abc", "1.5", "9223372036854775808", ""})
		case 1:
			// Too long for proto-max-bulk-len: refused before any allocation.
			off, val = g.pick([]string{"536870912", "536870911"}), "xy"
		case 2:
			val = ""
		}
		return dcmd{args: g.args("SETRANGE", key, off, val)}
	case 8, 9:
		inc := g.score()
		if g.chance(0.3) {
			inc = g.value()
		}
		return dcmd{args: g.args("INCRBYFLOAT", key, inc)}
	case 10:
		a := g.args("MSETNX")
		for n := 1 + g.r.IntN(3); n > 0; n-- {
			a = append(a, g.key(diffStrKeys), g.value())
		}
		if g.chance(0.05) {
			a = a[:len(a)-1]
		}
		return dcmd{args: a}
	case 11:
		a := g.args("LCS", g.key(diffStrKeys), g.key(diffStrKeys))
		for n := g.r.IntN(3); n > 0; n-- {
			switch g.r.IntN(5) {
			case 0:
				a = append(a, g.cs("LEN"))
			case 1:
				a = append(a, g.cs("IDX"))
			case 2:
				a = append(a, g.cs("WITHMATCHLEN"))
			case 3:
				a = append(a, g.cs("MINMATCHLEN"), g.pick([]string{"0", "1", "2", "4", "-1", "abc"}))
			default:
				a = append(a, "junk")
			}
		}
		return dcmd{args: a}
	}
	a := g.args("SET", key, g.value())
	a = append(a, g.setExpireOpt()...)
	for n := g.r.IntN(3); n > 0; n-- {
		switch g.r.IntN(4) {
		case 0:
			a = append(a, g.cs("NX"))
		case 1:
			a = append(a, g.cs("XX"))
		case 2:
			a = append(a, g.cs("GET"))
		default:
			a = append(a, g.setExpireOpt()...)
		}
	}
	return dcmd{args: a}
}

// numkeysArgs draws numkeys and keys for the algebra and ZMPOP: usually
// a right count of sorted-set keys, sometimes a wrong count, a key of
// another type or a missing key.
func (g *diffGen) numkeysArgs() []string {
	n := 1 + g.r.IntN(3)
	var keys []string
	for i := 0; i < n; i++ {
		k := g.pick(diffZKeys)
		if g.chance(0.1) {
			k = g.pick(diffAllKeys)
		}
		keys = append(keys, k)
	}
	num := strconv.Itoa(n)
	switch g.r.IntN(25) {
	case 0:
		num = g.pick([]string{"0", "-1", "abc", "1.5", "9223372036854775807"})
	case 1:
		num = strconv.Itoa(n + 1 + g.r.IntN(3))
	case 2:
		if n > 1 {
			num = strconv.Itoa(n - 1) // the last key reads as an option
		}
	}
	return append([]string{num}, keys...)
}

// zsetAlgebraCmd draws ZUNION, ZINTER, ZDIFF, their STORE forms and
// ZINTERCARD.
func (g *diffGen) zsetAlgebraCmd() dcmd {
	name := g.pick([]string{"ZUNION", "ZINTER", "ZDIFF", "ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE", "ZINTERCARD"})
	store := strings.HasSuffix(name, "STORE")
	a := g.args(name)
	if store {
		a = append(a, g.key(diffZKeys))
	}
	nk := g.numkeysArgs()
	a = append(a, nk...)
	n := len(nk) - 1 // the keys given (numkeys may be wrong)
	for m := g.r.IntN(3); m > 0; m-- {
		switch g.r.IntN(8) {
		case 0, 1:
			a = append(a, g.cs("WEIGHTS"))
			w := n
			if g.chance(0.1) {
				w += g.r.IntN(3) - 1
			}
			for i := 0; i < w; i++ {
				a = append(a, g.pick([]string{"1", "2", "-1", "0", "0.5", "inf", "-inf", "1e300", "3", g.score()}))
			}
		case 2, 3:
			a = append(a, g.cs("AGGREGATE"), g.cs(g.pick([]string{"SUM", "MIN", "MAX", "SUM", "MIN", "MAX", "avg"})))
		case 4, 5:
			a = append(a, g.cs("WITHSCORES"))
		case 6:
			a = append(a, g.cs("LIMIT"), g.pick([]string{"0", "1", "2", "5", "-1", "abc"}))
		default:
			a = append(a, g.pick([]string{"junk", "WEIGHTS", "AGGREGATE", "LIMIT"}))
		}
	}
	return dcmd{args: a, kind: dkScores}
}

// zrangestoreCmd draws ZRANGESTORE from a ZRANGE of zrangeCmd.
func (g *diffGen) zrangestoreCmd() dcmd {
	src := g.zrangeCmd(g.key(diffZKeys))
	a := g.args("ZRANGESTORE", g.key(diffZKeys))
	for _, x := range src.args[1:] {
		if strings.EqualFold(x, "withscores") && g.chance(0.8) {
			continue
		}
		a = append(a, x)
	}
	kind := dkExact
	for _, x := range a[5:] {
		if strings.EqualFold(x, "bylex") {
			kind = dkLex
		}
	}
	if kind == dkLex {
		// The lex check reads the source: move it to args[1].
		return dcmd{args: a, kind: dkLexStore}
	}
	return dcmd{args: a, kind: kind}
}

// dkLexStore is ZRANGESTORE ... BYLEX: compared when the lex range over
// the source (args[2]) is defined.
const dkLexStore dkind = 200

// popTimeout is a blocking pop's timeout: short (a real wait of at most
// 10 ms when nothing is there) or invalid; never 0, nor a small negative
// such as -0.001 (its milliseconds round up to 0 in long double: both
// servers would wait for ever on an empty key).
func (g *diffGen) popTimeout() string {
	if g.chance(0.8) {
		return g.pick([]string{"0.001", "0.002", "0.001", "0.0001", "0.01"})
	}
	return g.pick([]string{"-1", "-0.5", "abc", "", "nan", "inf", "1e300", "9223372036854775807", "-1.5"})
}

// popCmd draws ZMPOP, BZMPOP, BZPOPMIN and BZPOPMAX.
func (g *diffGen) popCmd() dcmd {
	switch g.r.IntN(4) {
	case 0, 1:
		var a []string
		if g.chance(0.5) {
			a = g.args("ZMPOP")
		} else {
			a = g.args("BZMPOP", g.popTimeout())
		}
		a = append(a, g.numkeysArgs()...)
		if g.chance(0.95) {
			a = append(a, g.cs(g.pick([]string{"MIN", "MAX", "MIN", "MAX", "MID"})))
		}
		if g.chance(0.4) {
			a = append(a, g.cs("COUNT"), g.pick([]string{"1", "2", "3", "10", "0", "-1", "abc", "9223372036854775807"}))
		}
		if g.chance(0.05) {
			a = append(a, g.pick([]string{"COUNT", "junk", "1"}))
		}
		return dcmd{args: a, kind: dkScores}
	}
	a := g.args(g.pick([]string{"BZPOPMIN", "BZPOPMAX"}))
	for n := 1 + g.r.IntN(3); n > 0; n-- {
		a = append(a, g.key(diffZKeys))
	}
	return dcmd{args: append(a, g.popTimeout()), kind: dkScores}
}

// keyspaceMoreCmd draws COPY, MOVE, SWAPDB, RANDOMKEY, TOUCH, OBJECT.
func (g *diffGen) keyspaceMoreCmd() dcmd {
	db := func() string { return g.pick([]string{"0", "1", "0", "1", "16", "-1", "abc", "2147483648"}) }
	switch g.r.IntN(12) {
	case 0, 1, 2:
		a := g.args("COPY", g.pick(diffAllKeys), g.pick(diffAllKeys))
		if g.chance(0.4) {
			a = append(a, g.cs("DB"), db())
		}
		if g.chance(0.4) {
			a = append(a, g.cs("REPLACE"))
		}
		if g.chance(0.05) {
			a = append(a, g.pick([]string{"junk", "DB"}))
		}
		return dcmd{args: a}
	case 3, 4:
		return dcmd{args: g.args("MOVE", g.pick(diffAllKeys), db())}
	case 5:
		x, y := g.pick([]string{"0", "1", "0", "1", "16", "-1", "x"}), g.pick([]string{"0", "1", "1", "0", "16", "y"})
		return dcmd{args: g.args("SWAPDB", x, y), kind: dkSwapDB}
	case 6:
		return dcmd{args: g.args("RANDOMKEY"), kind: dkRandKey}
	case 7:
		a := g.args("TOUCH")
		for n := 1 + g.r.IntN(3); n > 0; n-- {
			a = append(a, g.pick(diffAllKeys))
		}
		return dcmd{args: a}
	}
	sub := g.pick([]string{"ENCODING", "ENCODING", "ENCODING", "REFCOUNT", "FREQ", "junk"})
	a := g.args("OBJECT", g.cs(sub), g.pick(diffAllKeys))
	if g.chance(0.03) {
		a = a[:2]
	}
	return dcmd{args: a}
}

// noteEncoding tracks the sorted sets whose OBJECT ENCODING may differ
// between Valkey 8.0 and Redis 7.0: Valkey's ZADD converts a listpack to a
// skiplist when the command carries more pairs than
// zset-max-listpack-entries or a member longer than
// zset-max-listpack-value, even when it adds nothing (t_zset.c
// zsetTypeMaybeConvert); Redis 7.0 converts only on an actual insert. The
// mark follows RENAME, COPY and MOVE and is dropped by the STORE forms
// (both build a fresh set by the same rule).
func (d *diffRun) noteEncoding(args []string) {
	if len(args) < 2 {
		return
	}
	switch strings.ToLower(args[0]) {
	case "zadd", "zincrby":
		long := 0
		for _, a := range args[2:] {
			if len(a) > 64 {
				long++
			}
		}
		if long > 0 || len(args) > 2+2*128 {
			d.zdiverge[args[1]] = true
		}
	case "rename", "renamenx", "copy":
		if len(args) > 2 && d.zdiverge[args[1]] {
			d.zdiverge[args[2]] = true
		}
	case "zunionstore", "zinterstore", "zdiffstore", "zrangestore":
		delete(d.zdiverge, args[1])
	}
}

// encodingDiffers reports whether OBJECT ENCODING's replies differ only
// as noteEncoding allows.
func (d *diffRun) encodingDiffers(args []string, e, r string) bool {
	return len(args) == 3 && strings.EqualFold(args[0], "object") && strings.EqualFold(args[1], "encoding") &&
		d.zdiverge[args[2]] && e == "$8\r\nskiplist\r\n" && r == "$8\r\nlistpack\r\n"
}

// stepTTL compares two TTL-family replies: errors and -1/-2 exactly,
// times within diffTTLSlack (seconds: within 2).
func (d *diffRun) stepTTL(c dcmd) {
	e, r := d.pair.both(c.args)
	if e == r {
		return
	}
	ie, err1 := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(e, ":"), "\r\n"), 10, 64)
	ir, err2 := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(r, ":"), "\r\n"), 10, 64)
	slack := int64(diffTTLSlack)
	if name := strings.ToLower(c.args[0]); name == "ttl" || name == "expiretime" {
		slack = 2
	}
	if err1 != nil || err2 != nil || ie < 0 || ir < 0 || e[0] != ':' || r[0] != ':' || absDiff(ie, ir) > slack {
		d.fail(c.args, e, r, "remaining times differ")
	}
}

// stepRandKey: RANDOMKEY answers nil on both, or a key that both hold.
func (d *diffRun) stepRandKey(c dcmd) {
	e, r := d.pair.both(c.args)
	if e == r {
		return
	}
	ne, err1 := diffParse(e)
	nr, err2 := diffParse(r)
	if err1 != nil || err2 != nil || ne.typ != '$' || nr.typ != '$' || ne.null || nr.null {
		d.fail(c.args, e, r, "replies differ")
		return
	}
	for _, k := range []string{ne.text, nr.text} {
		if d.inspect(0, d.pair.db, "EXISTS", k) != ":1\r\n" || d.inspect(1, d.pair.db, "EXISTS", k) != ":1\r\n" {
			d.fail(c.args, e, r, fmt.Sprintf("random key %q is not in both", k))
			return
		}
	}
}

// stepLexStore is ZRANGESTORE ... BYLEX when the range is defined.
func (d *diffRun) stepLexStore(c dcmd) {
	if !d.lexDefined(c.args[2]) {
		d.stats.compared--
		d.stats.skipped++
		return
	}
	e, r := d.pair.both(c.args)
	if e != r {
		d.fail(c.args, e, r, "replies differ (lex range)")
	}
}

// compareTTLs checks that every key of databases 0 and 1 has the same
// remaining time on both servers (within diffTTLSlack).
func (d *diffRun) compareTTLs(when string) {
	for db := 0; db < 2; db++ {
		kn, _ := diffParse(d.inspect(0, db, "KEYS", "*"))
		keys, _ := diffItems(kn, false, false)
		for _, q := range keys {
			k, _ := strconv.Unquote(q)
			pe, pr := d.inspect(0, db, "PTTL", k), d.inspect(1, db, "PTTL", k)
			if pe == pr {
				continue
			}
			ie, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimPrefix(pe, ":")), 10, 64)
			ir, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimPrefix(pr, ":")), 10, 64)
			if ie < 0 || ir < 0 || absDiff(ie, ir) > diffTTLSlack {
				d.t.Errorf("seed %d, %s: db %d key %q PTTL emqd %q, redis %q", d.seed, when, db, k, pe, pr)
				d.failed = true
				return
			}
		}
	}
}

// settleStale makes both servers delete the keys that a SET with a past
// EXAT/PXAT left stored but expired (so DBSIZE, SCAN and RANDOMKEY, which
// may count or meet them until something deletes them, agree): an EXISTS
// on each server deletes them.
func (d *diffRun) settleStale() {
	for k := range d.stale {
		for db := 0; db < 2; db++ {
			d.inspect(0, db, "EXISTS", k)
			d.inspect(1, db, "EXISTS", k)
		}
	}
	clear(d.stale)
}

// noteStale records the keys a command may have left stored with an
// expire time already past (SET ... EXAT/PXAT in the past).
func (d *diffRun) noteStale(args []string) {
	if len(args) < 3 || !strings.EqualFold(args[0], "set") {
		return
	}
	for _, a := range args[3:] {
		if x := strings.ToLower(a); x == "exat" || x == "pxat" {
			d.stale[args[1]] = true
			return
		}
	}
}

// TestDifferentialExpiry compares key expiry with real short TTLs: each
// round gives some keys TTLs of 150 to 400 ms (SET PX, PEXPIRE, GETEX PX,
// SETEX-like), runs random commands on both servers while all of those
// are still well before their time, waits until all have passed, then
// compares every key (type, value, remaining time) and DBSIZE after both
// servers deleted what expired (EXISTS on each key; the active cycle may
// have got there first on either). The rounds are cut short when the
// machine is slow, so a seed reproduces the same commands but maybe not
// the same cut.
func TestDifferentialExpiry(t *testing.T) {
	emqdAddr, redisAddr := diffStart(t)
	rounds := 3
	if testing.Short() {
		rounds = 1
	}
	if s := os.Getenv("EMQD_DIFF_EXPIRY_ROUNDS"); s != "" {
		rounds, _ = strconv.Atoi(s)
	}
	trace := os.Getenv("EMQD_DIFF_TRACE") == "1"
	pair := &diffPair{proto: 2, e: diffDial(t, emqdAddr), r: diffDial(t, redisAddr)}
	insE, insR := diffDial(t, emqdAddr), diffDial(t, redisAddr)
	stats := &diffStats{}
	insDB := &[2]int{} // the inspectors' databases, across seeds
	for _, seed := range diffSeeds(t, 2) {
		stats.seeds = append(stats.seeds, seed)
		if e, r := pair.both([]string{"SELECT", "0"}); e != "+OK\r\n" || r != e {
			t.Fatalf("SELECT 0: %q %q", e, r)
		}
		pair.db = 0
		if e, r := pair.both([]string{"FLUSHALL"}); e != "+OK\r\n" || r != e {
			t.Fatalf("FLUSHALL: %q %q", e, r)
		}
		g := &diffGen{r: rand.New(rand.NewPCG(seed, 0x74746c))}
		d := &diffRun{t: t, seed: seed, pair: pair, insE: insE, insR: insR, insDB: insDB, stats: stats,
			stale: map[string]bool{}, zdiverge: map[string]bool{}}
		for round := 0; round < rounds && !d.failed; round++ {
			start := time.Now()
			minTTL := int64(math.MaxInt64)
			var last time.Duration
			for i := 0; i < 6; i++ {
				key := g.pick(diffAllKeys[:10])
				ttl := int64(150 + g.r.IntN(250))
				minTTL = min(minTTL, ttl)
				var a []string
				switch g.r.IntN(5) {
				case 0:
					a = []string{"SET", key, g.value(), "PX", strconv.FormatInt(ttl, 10)}
				case 1:
					a = []string{"PEXPIRE", key, strconv.FormatInt(ttl, 10)}
				case 2:
					a = []string{"PSETEX", key, strconv.FormatInt(ttl, 10), g.value()}
				case 3:
					a = []string{"GETEX", key, "PX", strconv.FormatInt(ttl, 10)}
				default:
					a = []string{"PEXPIREAT", key, strconv.FormatInt(time.Now().UnixMilli()+ttl, 10)}
				}
				d.idx++
				if trace {
					t.Logf("seed %d round %d: %q", seed, round, a)
				}
				d.step(dcmd{args: a})
				last = max(last, time.Duration(ttl)*time.Millisecond)
			}
			// Random commands while every short TTL is at least 100 ms away.
			for i := 0; i < 200 && !d.failed; i++ {
				if time.Since(start) > time.Duration(minTTL-100)*time.Millisecond {
					break
				}
				c := g.next()
				if c.kind == dkSwapDB || len(c.args) > 3 && strings.EqualFold(c.args[0], "set") {
					continue // keep the short-TTL keys where the final check looks
				}
				d.idx++
				if trace {
					t.Logf("seed %d round %d: %q", seed, round, c.args)
				}
				d.step(c)
			}
			// Past every short TTL (and a margin for a slow machine).
			time.Sleep(time.Until(start.Add(last + 150*time.Millisecond)))
			if d.failed {
				break
			}
			d.compareKeyspace(fmt.Sprintf("after round %d", round))
			for _, k := range diffAllKeys {
				for db := 0; db < 2; db++ {
					if e, r := d.inspect(0, db, "EXISTS", k), d.inspect(1, db, "EXISTS", k); e != r {
						t.Errorf("seed %d round %d: EXISTS %q in db %d: emqd %q, redis %q", seed, round, k, db, e, r)
						d.failed = true
					}
				}
			}
			for db := 0; db < 2; db++ {
				if e, r := d.inspect(0, db, "DBSIZE"), d.inspect(1, db, "DBSIZE"); e != r {
					t.Errorf("seed %d round %d: DBSIZE of db %d: emqd %q, redis %q", seed, round, db, e, r)
					d.failed = true
				}
			}
			d.compareTTLs(fmt.Sprintf("after round %d", round))
		}
	}
	t.Logf("compared %d commands over seeds %v", stats.compared, stats.seeds)
}

// TestDifferentialObjectEncoding compares OBJECT ENCODING along growing
// and shrinking hashes, sorted sets and strings against Redis 7.0 started
// with Valkey 8.0's thresholds.
func TestDifferentialObjectEncoding(t *testing.T) {
	emqdAddr, redisAddr := diffStart(t)
	e, r := diffDial(t, emqdAddr), diffDial(t, redisAddr)
	do := func(args ...string) {
		t.Helper()
		ge, gr := e.Do(args...), r.Do(args...)
		if !diffMatch(ge, gr, true) {
			t.Fatalf("%q: emqd %q, redis %q", args, ge, gr)
		}
	}
	enc := func(key string) {
		t.Helper()
		do("OBJECT", "ENCODING", key)
	}
	rnd := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 600; i++ {
		f := "f" + strconv.Itoa(rnd.IntN(700))
		do("HSET", "h", f, strings.Repeat("v", rnd.IntN(66)))
		do("ZADD", "z", strconv.Itoa(rnd.IntN(50)), "m"+strconv.Itoa(rnd.IntN(200)))
		if i%7 == 0 {
			do("HDEL", "h", f)
			do("ZPOPMIN", "z")
		}
		if i%50 == 0 {
			enc("h")
			enc("z")
			do("COPY", "h", "h2", "REPLACE")
			enc("h2")
			do("ZUNIONSTORE", "zu", "1", "z")
			enc("zu")
			do("ZRANGESTORE", "zr", "z", "0", strconv.Itoa(rnd.IntN(200)))
			enc("zr")
		}
	}
	for _, v := range []string{"1", "-1", "10000", "123456789012345678901", "01", "abc", strings.Repeat("x", 44),
		strings.Repeat("x", 45), "1.5", "-0", "9223372036854775807"} {
		do("SET", "s", v)
		enc("s")
		do("OBJECT", "REFCOUNT", "s")
		do("APPEND", "s", "")
		enc("s")
		do("SET", "s", v)
		do("SETRANGE", "s", "0", "1")
		enc("s")
		do("INCRBYFLOAT", "f", "1.5")
		enc("f")
		do("INCR", "i")
		enc("i")
		do("OBJECT", "REFCOUNT", "i")
	}
}
