// Package verbs implements the EMQ.* job verbs (spec: verbs.md; semantics:
// the seed, "Failures and recovery"). Every verb runs the same steps: parse
// and validate all its arguments (args.go), a read pass over the store
// (read.go), a pure judgement that returns a plan.Plan or a refusal, then
// store.Ctx.ApplyPlan and the reply. A refusal writes nothing.
//
// One file per family holds each verb's arguments, read pass, judgement and
// handler, with its tests beside it: enqueue.go (EMQ.ENQUEUE), claim.go
// (EMQ.CLAIM), token.go (the six token verbs and their common guard),
// recovery.go (EMQ.STALLED.CHECK, EMQ.PROMOTE, EMQ.REPROCESS) and admin.go
// (EMQ.PAUSE, EMQ.RESUME, EMQ.REMOVE, EMQ.COUNTS, EMQ.JOB, EMQ.DEBUG). The
// key layout is keys.go; the command table is Commands below.
//
// There is deliberately no EMQ.REAP (verbs.md section 4, the seed's "The
// reaper has no native twin"): EMQ.STALLED.CHECK is the one recovery verb.
package verbs

import (
	"github.com/emqd/emqd/plan"
	"github.com/emqd/emqd/store"
)

// verb builds a spec whose first argument, the queue name, is the declared
// key (verbs.md section 2: the {q} tag puts every key of q in q's slot).
func verb(name string, arity int, h store.Handler, flags ...store.Flag) *store.CommandSpec {
	return store.NewCommand(name, arity, h, flags...).WithKeys(1, 1, 1)
}

// Commands returns the command specs of every EMQ.* verb, for the server's
// registry: names in lower case, Valkey-style arity (n exact, -n at least n,
// argv[0] counted) and flags, key position 1.
func Commands() []*store.CommandSpec {
	return []*store.CommandSpec{
		verb("emq.enqueue", -4, cmdEnqueue, store.FlagWrite, store.FlagDenyOOM, store.FlagFast),
		verb("emq.claim", -3, cmdClaim, store.FlagWrite, store.FlagBlocking),
		verb("emq.complete", 4, cmdComplete, store.FlagWrite, store.FlagFast),
		verb("emq.fail", 7, cmdFail, store.FlagWrite, store.FlagFast),
		verb("emq.requeue", 4, cmdRequeue, store.FlagWrite, store.FlagFast),
		verb("emq.extend", 5, cmdExtend, store.FlagWrite, store.FlagFast),
		verb("emq.delay", 6, cmdDelay, store.FlagWrite, store.FlagFast),
		verb("emq.progress", 5, cmdProgress, store.FlagWrite, store.FlagDenyOOM, store.FlagFast),
		verb("emq.stalled.check", -2, cmdStalledCheck, store.FlagWrite),
		verb("emq.promote", -2, cmdPromote, store.FlagWrite),
		verb("emq.reprocess", -3, cmdReprocess, store.FlagWrite, store.FlagFast),
		verb("emq.pause", 2, cmdPause, store.FlagWrite, store.FlagFast),
		verb("emq.resume", 2, cmdResume, store.FlagWrite, store.FlagFast),
		verb("emq.remove", 3, cmdRemove, store.FlagWrite, store.FlagFast),
		verb("emq.counts", 2, cmdCounts, store.FlagReadonly, store.FlagFast),
		verb("emq.job", 3, cmdJob, store.FlagReadonly, store.FlagFast),
		verb("emq.list", -3, cmdList, store.FlagReadonly),
		store.NewCommand("emq.debug", -2, cmdDebug, store.FlagAdmin, store.FlagNoScript, store.FlagLoading, store.FlagStale).WithSubcommands(
			store.NewCommand("emq.debug|clock", 4, cmdDebugClock, store.FlagAdmin, store.FlagNoScript, store.FlagLoading, store.FlagStale),
		),
	}
}

// Plumbing every family shares. The server has checked a command's arity
// before its handler runs.

// refuseReply answers r, counting and logging it when stored data caused it.
func refuseReply(c *store.Ctx, r refusal) {
	noteBadRow(c.DB.Index, r)
	c.W.Error(r.Text)
}

// wake tells the server a job of k's queue became pending (blocked claimers).
func wake(c *store.Ctx, k *Keys) {
	if c.S.OnReady != nil {
		c.S.OnReady(c.DB.Index, k.Queue)
	}
}

// clone copies an argument the store will keep (argv buffers are reused).
func clone(b []byte) []byte {
	out := make([]byte, len(b))
	copy(out, b)
	return out
}

// queueArg validates argv[1] as a queue name (rule 8) and returns its keys.
func queueArg(c *store.Ctx) *Keys {
	if !validQueue(c.Argv[1]) {
		c.W.Error(ErrInvalidQueue)
		return nil
	}
	return keysFor(c.Argv[1])
}

// apply applies p (nil: nothing to write).
func apply(c *store.Ctx, p *plan.Plan) {
	if p != nil {
		c.ApplyPlan(p)
	}
}
