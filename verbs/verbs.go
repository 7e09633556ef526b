// Package verbs implements the EMQ.* job verbs (spec: verbs.md; semantics:
// the seed, "Failures and recovery"): each verb parses its arguments, runs a
// read pass over the store, a pure judgement, and applies the resulting
// plan.Plan through store.Ctx.ApplyPlan.
package verbs

import "github.com/emqd/emqd/store"

// Commands returns the command specs of every EMQ.* verb, for the server's
// registry.
func Commands() []*store.CommandSpec { return nil }
