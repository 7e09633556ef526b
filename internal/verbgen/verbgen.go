// Package verbgen draws random calls of the EMQ.* verbs, with arguments
// mixed from valid and invalid values, for the two property tests that
// drive every verb: the refusal property (internal/verbs/refusal_prop_test.go,
// docs/verbs.md §2.2) and the differential run of emqd against the cluster
// library (cluster/conformance/differential.go, docs/cluster.md).
//
// There is one generator per verb of the verb table
// (internal/cmdmeta/emq.go, docs/architecture.md §8.2), in Generators; a
// test fails when the two lists differ, so a new verb gets its generator
// here. The package is for tests only and imports no emqd package (its own
// test reads the table), so the verbs' own tests can use it (layer 1).
package verbgen

import (
	"math/rand"
	"strings"
)

// Gen draws calls from one random source. The zero value is not usable:
// set Rand.
type Gen struct {
	Rand *rand.Rand
	// IDs are the job ids the random states use; a call draws from them
	// and from a few ids that are not there or not ids ("nope", "*",
	// "JOBzzzzzzzzzzz").
	IDs []string
	// MaxResult is EMQ.COMPLETE's RESULT limit in bytes (verbs.MaxResult);
	// 0: no call sends an oversized result.
	MaxResult int
	// MintQueue, when not empty, is the only queue a call that mints ids
	// names (an `*` id, a schedule): the differential run needs it because
	// emqd orders minted ids across all queues of a database and the
	// library within each queue (docs/cluster.md, "minted ids across
	// queues").
	MintQueue string
}

// Generator draws one call of one verb: argv, the verb's name first.
type Generator struct {
	// Name is the command's lower-case name in the verb table ("emq.claim";
	// a container's own name, "emq.debug").
	Name string
	Call func(g *Gen) []string
}

// Generators lists one generator per verb of the verb table (a container,
// EMQ.DEBUG, has one for all its subcommands).
var Generators = []Generator{
	{"emq.enqueue", (*Gen).enqueue},
	{"emq.enqueue.many", (*Gen).enqueueMany},
	{"emq.claim", (*Gen).claim},
	{"emq.complete", (*Gen).complete},
	{"emq.fail", (*Gen).fail},
	{"emq.requeue", func(g *Gen) []string { return []string{"EMQ.REQUEUE", g.Queue(), g.ID(), g.Token()} }},
	{"emq.extend", func(g *Gen) []string { return []string{"EMQ.EXTEND", g.Queue(), g.ID(), g.Token(), g.Num()} }},
	{"emq.delay", func(g *Gen) []string {
		return []string{"EMQ.DELAY", g.Queue(), g.ID(), g.Token(), g.Pick("IN", "AT", "in", "SOON"), g.Num()}
	}},
	{"emq.progress", func(g *Gen) []string { return []string{"EMQ.PROGRESS", g.Queue(), g.ID(), g.Token(), "50%"} }},
	{"emq.stalled.check", (*Gen).stalledCheck},
	{"emq.promote", func(g *Gen) []string { return g.nums([]string{"EMQ.PROMOTE", g.Queue()}, 3) }},
	{"emq.reprocess", (*Gen).reprocess},
	{"emq.pause", func(g *Gen) []string { return g.Maybe([]string{"EMQ.PAUSE", g.Queue()}, "x") }},
	{"emq.resume", func(g *Gen) []string { return []string{"EMQ.RESUME", g.Queue()} }},
	{"emq.remove", func(g *Gen) []string { return []string{"EMQ.REMOVE", g.Queue(), g.ID()} }},
	{"emq.reprocess.all", func(g *Gen) []string {
		return g.bulkOpts([]string{"EMQ.REPROCESS.ALL", g.Queue()}, "RESET", "reset", "LIMIT", "limit", "NOW")
	}},
	{"emq.remove.all", func(g *Gen) []string {
		a := []string{"EMQ.REMOVE.ALL", g.Queue(), g.Pick("pending", "pending", "SCHEDULED", "dead", "completed", "active", "all")}
		return g.bulkOpts(a, "LIMIT", "limit", "RESET", "LANE", "lane")
	}},
	{"emq.promote.all", func(g *Gen) []string {
		return g.bulkOpts([]string{"EMQ.PROMOTE.ALL", g.Queue()}, "LIMIT", "limit", "ALL")
	}},
	{"emq.promote.job", func(g *Gen) []string { return []string{"EMQ.PROMOTE.JOB", g.Queue(), g.ID()} }},
	{"emq.lane", (*Gen).lane},
	{"emq.lanes", func(g *Gen) []string { return g.nums([]string{"EMQ.LANES", g.Queue()}, 4) }},
	{"emq.counts", func(g *Gen) []string { return []string{"EMQ.COUNTS", g.Queue()} }},
	{"emq.job", func(g *Gen) []string { return []string{"EMQ.JOB", g.Queue(), g.ID()} }},
	{"emq.wait", func(g *Gen) []string {
		return g.Maybe([]string{"EMQ.WAIT", g.Queue(), g.ID(), g.Pick("0", "-1", "x", "100", g.Num())}, "0")
	}},
	{"emq.retain", (*Gen).retain},
	{"emq.flow", (*Gen).flow},
	{"emq.children", func(g *Gen) []string {
		return []string{"EMQ.CHILDREN", g.Queue(), g.Pick(append([]string{"JOBF0000000001", "JOBF0000000002"}, g.IDs...)...)}
	}},
	{"emq.list", func(g *Gen) []string {
		a := []string{"EMQ.LIST", g.Queue(), g.Pick("pending", "pending", "ACTIVE", "scheduled", "dead", "schedule", "all", "completed", "done")}
		a = g.nums(a, 4)
		if g.Rand.Intn(3) == 0 {
			// LANE (docs/verbs.md §4.26.6): after the page, now and then
			// before it, without its name, or twice.
			a = append(a, g.Pick("LANE", "lane", "LANE"), g.LaneName())
			switch g.Rand.Intn(8) {
			case 0:
				a = a[:len(a)-1]
			case 1:
				a = append(a, g.Num(), g.Num())
			case 2:
				a = append(a, "LANE", "b")
			}
		}
		return a
	}},
	{"emq.schedule", (*Gen).schedule},
	{"emq.schedule.get", func(g *Gen) []string { return []string{"EMQ.SCHEDULE.GET", g.Queue(), g.Schedule()} }},
	{"emq.schedule.del", func(g *Gen) []string { return []string{"EMQ.SCHEDULE.DEL", g.Queue(), g.Schedule()} }},
	{"emq.schedule.list", func(g *Gen) []string { return g.Maybe([]string{"EMQ.SCHEDULE.LIST", g.Queue()}, g.Num(), g.Num()) }},
	{"emq.schedule.pause", func(g *Gen) []string { return []string{"EMQ.SCHEDULE.PAUSE", g.Queue(), g.Schedule()} }},
	{"emq.schedule.resume", func(g *Gen) []string { return []string{"EMQ.SCHEDULE.RESUME", g.Queue(), g.Schedule()} }},
	{"emq.schedule.fire", func(g *Gen) []string { return g.Maybe([]string{"EMQ.SCHEDULE.FIRE", g.Queue()}, g.Num()) }},
	{"emq.debug", func(g *Gen) []string {
		return g.Maybe([]string{"EMQ.DEBUG", "CLOCK", g.Pick("ADVANCE", "BACK"), g.Pick("0", "1", "700", g.Num())}, "x")
	}},
}

// Random draws one call: one time in ten the valid claim
// `EMQ.CLAIM q 1000 COUNT 3` (it keeps jobs moving), otherwise a call of a
// verb drawn evenly from Generators, leaving out the verbs skip names
// (lower case; nil skips none).
func (g *Gen) Random(skip map[string]string) []string {
	if g.Rand.Intn(10) == 0 {
		return []string{"EMQ.CLAIM", "q", "1000", "COUNT", "3"}
	}
	for {
		v := Generators[g.Rand.Intn(len(Generators))]
		if _, ok := skip[v.Name]; !ok {
			return v.Call(g)
		}
	}
}

// Pick returns one of xs, evenly.
func (g *Gen) Pick(xs ...string) string { return xs[g.Rand.Intn(len(xs))] }

// Queue is a queue name: mostly "q", sometimes invalid ("bad name", "emq",
// "") or another queue ("other").
func (g *Gen) Queue() string {
	return g.Pick("q", "q", "q", "q", "q", "q", "bad name", "emq", "", "other")
}

// ID is a job id: one of IDs, or one that is missing, a mint request or
// not an id.
func (g *Gen) ID() string {
	xs := append(append(make([]string, 0, len(g.IDs)+3), g.IDs...), "nope", "*", "JOBzzzzzzzzzzz")
	return g.Pick(xs...)
}

// LaneName is a lane name (docs/verbs.md §4.26): the lanes the random
// states and EMQ.LANE use, the default lane, one that is not there, and
// bad names.
func (g *Gen) LaneName() string { return g.Pick("a", "a", "b", "default", "c", "DEFAULT", "a:b", "") }

// Token is a lease token, valid or not.
func (g *Gen) Token() string { return g.Pick("1", "1", "2", "0", "01", "x") }

// Num is an integer argument: small, zero, negative, malformed, the int64
// edge and one past it.
func (g *Gen) Num() string {
	return g.Pick("1", "2", "3", "100", "1000", "0", "-1", "x", "01", "+1", "", "9223372036854775807", "9223372036854775808")
}

// Schedule is a schedule name, valid or not.
func (g *Gen) Schedule() string { return g.Pick("s1", "s2", "s3", "c1", "nope", "a:b", "") }

// Maybe appends extra to args one time in five.
func (g *Gen) Maybe(args []string, extra ...string) []string {
	if g.Rand.Intn(5) == 0 {
		return append(args, extra...)
	}
	return args
}

// nums appends up to max-1 Num arguments.
func (g *Gen) nums(a []string, max int) []string {
	for n := g.Rand.Intn(max); n > 0; n-- {
		a = append(a, g.Num())
	}
	return a
}

// mints puts a call that mints ids on MintQueue (a[1] is the queue).
func (g *Gen) mints(a []string) []string {
	if g.MintQueue != "" && a[1] == "other" {
		a[1] = g.MintQueue
	}
	return a
}

// when appends EMQ.ENQUEUE's and EMQ.ENQUEUE.MANY's DELAY/AT option, or a
// bad one, and sometimes a PRIORITY.
func (g *Gen) when(a []string) []string {
	switch g.Rand.Intn(6) {
	case 0:
		a = append(a, "DELAY", g.Num())
	case 1:
		a = append(a, g.Pick("AT", "at"), g.Num())
	case 2:
		a = append(a, g.Pick("DELAY", "AT", "FOO"), g.Num(), g.Pick("DELAY", "AT"), g.Num())
	}
	if g.Rand.Intn(4) == 0 {
		// PRIORITY (docs/verbs.md §4.2), now and then out of range.
		a = append(a, "PRIORITY", g.Pick("1", "-5", "0", "x", "9007199254740992", "-9007199254740991"))
	}
	if g.Rand.Intn(3) == 0 {
		// LANE (docs/verbs.md §4.26), the lanes EMQ.LANE configures, the
		// default lane, and bad names; now and then twice.
		a = append(a, "LANE", g.Pick("a", "a", "b", "default", "c", "a:b", ""))
		if g.Rand.Intn(10) == 0 {
			a = append(a, "LANE", "b")
		}
	}
	return a
}

func (g *Gen) enqueue() []string {
	a := g.when([]string{"EMQ.ENQUEUE", g.Queue(), g.ID(), "payload"})
	if g.Rand.Intn(8) == 0 {
		a = append(a, "DELAY")
	}
	if a[2] == "*" {
		a = g.mints(a)
	}
	return a
}

// enqueueMany is an EMQ.ENQUEUE.MANY call (docs/verbs.md §4.2.1): options,
// JOBS, pairs of valid and invalid ids, sometimes a bad shape.
func (g *Gen) enqueueMany() []string {
	a := g.when([]string{"EMQ.ENQUEUE.MANY", g.Queue()})
	if g.Rand.Intn(12) != 0 {
		a = append(a, "JOBS")
	}
	mints := false
	for n := 1 + g.Rand.Intn(4); n > 0; n-- {
		x := g.ID()
		mints = mints || x == "*"
		a = append(a, x, "p")
	}
	if mints {
		a = g.mints(a)
	}
	if g.Rand.Intn(10) == 0 {
		a = append(a, "*")
	}
	return a
}

func (g *Gen) claim() []string {
	a := []string{"EMQ.CLAIM", g.Queue(), g.Num()}
	if g.Rand.Intn(2) == 0 {
		a = append(a, "COUNT", g.Num())
	}
	if g.Rand.Intn(4) == 0 {
		a = append(a, g.Pick("COUNT", "FOO", "BLOCK"))
	}
	return a
}

func (g *Gen) complete() []string {
	a := []string{"EMQ.COMPLETE", g.Queue(), g.ID(), g.Token()}
	switch g.Rand.Intn(8) {
	case 0, 1:
		a = append(a, g.Pick("RESULT", "result"), "r")
	case 2:
		a = append(a, "RESULT", "r", "RESULT", "s")
	case 3:
		a = append(a, "RESULT")
	case 4:
		if g.MaxResult > 0 && g.Rand.Intn(20) == 0 {
			a = append(a, "RESULT", strings.Repeat("x", g.MaxResult+1))
		}
	}
	a = g.Maybe(a, "x")
	if g.Rand.Intn(3) == 0 {
		a = append(a, g.Pick("NEXT", "next", "COUNT"), g.Num())
	}
	if g.Rand.Intn(6) == 0 {
		a = append(a, "COUNT", g.Pick("1", "3"))
	}
	return a
}

func (g *Gen) fail() []string {
	a := []string{"EMQ.FAIL", g.Queue(), g.ID(), g.Token(), g.Num(), g.Num(), "err"}
	if g.Rand.Intn(3) == 0 {
		a = append(a, "NEXT", g.Num(), g.Pick("COUNT", "BLOCK"), g.Num())
	}
	return a
}

func (g *Gen) stalledCheck() []string {
	a := g.nums([]string{"EMQ.STALLED.CHECK", g.Queue()}, 4)
	if g.Rand.Intn(3) == 0 {
		a = append(a, g.Pick("EVERY", "every", "EVERY", "SOON"), g.Pick("1000", "1", "0", "x"))
	}
	return a
}

func (g *Gen) reprocess() []string {
	a := []string{"EMQ.REPROCESS", g.Queue(), g.ID()}
	if g.Rand.Intn(2) == 0 {
		a = append(a, g.Pick("RESET", "reset", "NOW"))
	}
	return g.Maybe(a, "RESET")
}

// bulkOpts appends up to two of the bulk verbs' option words (docs/verbs.md
// §4.24), LIMIT mostly with a value: valid, zero, past the maximum, bad.
func (g *Gen) bulkOpts(a []string, words ...string) []string {
	for n := g.Rand.Intn(3); n > 0; n-- {
		w := g.Pick(words...)
		a = append(a, w)
		if (w == "LIMIT" || w == "limit") && g.Rand.Intn(6) != 0 {
			a = append(a, g.Pick(g.Num(), "2", "10000", "10001"))
		}
		if (w == "LANE" || w == "lane") && g.Rand.Intn(6) != 0 {
			a = append(a, g.LaneName())
		}
	}
	return a
}

// flowIDs are the ids the flows of the random states use (verbs'
// refusal property: JOBF0000000001 waits on 2, 3 and 4).
var flowIDs = []string{"JOBF0000000001", "JOBF0000000002", "JOBF0000000003", "JOBF0000000004", "JOBF0000000005"}

// flow is an EMQ.FLOW call (docs/verbs.md §4.24.1): the random states'
// parents and children and new ones, some nested, some malformed.
func (g *Gen) flow() []string {
	fid := func() string { return g.Pick(append(append([]string{}, flowIDs...), g.ID())...) }
	a := []string{"EMQ.FLOW", g.Queue(), fid(), "pp"}
	if g.Rand.Intn(3) == 0 {
		a = append(a, g.Pick("ON_CHILD_FAIL", "on_child_fail"), g.Pick("fail", "IGNORE", "continue", "retry"))
	}
	var named [][2]string
	for n := g.Rand.Intn(4); n >= 0; n-- {
		c := [2]string{g.Pick("q", "q", "other", "bad name"), fid()}
		a = append(a, "CHILD", c[0], c[1], "cp")
		if len(named) > 0 && g.Rand.Intn(3) == 0 {
			u := named[g.Rand.Intn(len(named))]
			if g.Rand.Intn(6) == 0 {
				u = [2]string{"q", "JOBzzzzzzzzzzz"}
			}
			a = append(a, "UNDER", u[0], u[1])
		}
		if g.Rand.Intn(8) == 0 {
			a = append(a, "ON_CHILD_FAIL", g.Pick("fail", "ignore"))
		}
		named = append(named, c)
	}
	if g.Rand.Intn(10) == 0 {
		a = append(a, g.Pick("CHILD", "UNDER", "FOO"))
	}
	return a
}

func (g *Gen) retain() []string {
	a := []string{"EMQ.RETAIN", g.Queue()}
	if g.Rand.Intn(4) != 0 {
		a = append(a, g.Pick("COMPLETED", "dead", "DEAD", "completed", "ALL"), g.Num(), g.Num())
	} else if g.Rand.Intn(2) == 0 {
		a = append(a, "COMPLETED")
	}
	return a
}

func (g *Gen) schedule() []string {
	a := []string{"EMQ.SCHEDULE", g.Queue(), g.Schedule()}
	switch g.Rand.Intn(4) {
	case 0:
		a = append(a, "EVERY", g.Pick(g.Num(), "1000", "2500")) // below 1000: refused (docs/verbs.md §4.22.1)
	case 1:
		a = append(a, "CRON", g.Pick("*/2 * * * * *", "61 * * * *", "@hourly", "@nope"))
		if g.Rand.Intn(2) == 0 {
			a = append(a, "TZ", g.Pick("America/New_York", "Mars/Base", ""))
		}
	case 2:
		a = append(a, g.Pick("EVERY", "DAILY"), "1000")
	default:
		a = append(a, "EVERY", "1000")
	}
	a = append(a, "payload")
	for n := g.Rand.Intn(3); n > 0; n-- {
		a = append(a, g.Pick("START", "END", "LIMIT", "OVERLAP", "CATCHUP", "FOO"), g.Pick("1", "0", "skip", "all", "x", "9007199254740991"))
	}
	if g.Rand.Intn(8) == 0 {
		a = append(a, "START", "5", "END", "4")
	}
	return g.mints(a)
}

// lane is an EMQ.LANE call (docs/verbs.md §4.26.1): a lane name, valid or
// not, and some options with values drawn from valid and invalid ones.
func (g *Gen) lane() []string {
	a := []string{"EMQ.LANE", g.Queue(), g.Pick("a", "b", "default", "a:b", "")}
	for n := g.Rand.Intn(4); n > 0; n-- {
		switch g.Rand.Intn(6) {
		case 0:
			a = append(a, "WEIGHT", g.Pick("1", "3", "0", "1001", "x"))
		case 1:
			a = append(a, "MAX_ACTIVE", g.Pick("0", "1", "2", "-1"))
		case 2:
			a = append(a, "RATE", g.Pick("2", "0", "-1"), g.Pick("1000", "0", "x"))
		case 3:
			a = append(a, g.Pick("PAUSE", "RESUME", "pause"))
		case 4:
			a = append(a, "RESET")
		default:
			a = append(a, g.Pick("FOO", "RATE", "WEIGHT"))
		}
	}
	return a
}
