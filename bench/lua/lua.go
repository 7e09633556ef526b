// Package lua holds the scripted job transitions the benchmarks run on a real
// redis-server through EVALSHA, over the same keyspace as the native EMQ.*
// verbs (docs/verbs.md §1.1): enqueue, claim, complete, a scripted retry
// (capped on attempts, where EMQ.FAIL caps on failures: docs/verbs.md §4.6)
// and the scripted sweep of docs/verbs.md §5 (every expiry counted).
package lua

import (
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
)

// Script is a Lua script and its SHA1 (the EVALSHA handle).
type Script struct {
	Name string
	Src  string
	SHA  string
}

func mk(name, src string) Script {
	h := sha1.Sum([]byte(src))
	return Script{Name: name, Src: src, SHA: hex.EncodeToString(h[:])}
}

var (
	//go:embed enqueue.lua
	enqueueSrc string
	//go:embed claim.lua
	claimSrc string
	//go:embed complete.lua
	completeSrc string
	//go:embed retry.lua
	retrySrc string
	//go:embed sweep_stalled.lua
	sweepSrc string
)

// The scripts; see each file's header for KEYS, ARGV and the reply.
var (
	Enqueue      = mk("enqueue", enqueueSrc)
	Claim        = mk("claim", claimSrc)
	Complete     = mk("complete", completeSrc)
	Retry        = mk("retry", retrySrc)
	SweepStalled = mk("sweep_stalled", sweepSrc)
)

// All lists every script, for SCRIPT LOAD.
func All() []Script { return []Script{Enqueue, Claim, Complete, Retry, SweepStalled} }

// Keys of queue q (docs/verbs.md §1.1).
type Keys struct{ Q string }

// Prefix is "emq:{q}:".
func (k Keys) Prefix() string { return "emq:{" + k.Q + "}:" }

// Pending, Active, Schedule, Dead are the queue's sorted sets.
func (k Keys) Pending() string  { return k.Prefix() + "pending" }
func (k Keys) Active() string   { return k.Prefix() + "active" }
func (k Keys) Schedule() string { return k.Prefix() + "schedule" }
func (k Keys) Dead() string     { return k.Prefix() + "dead" }

// Row is the key of job id's hash.
func (k Keys) Row(id string) string { return k.Prefix() + "job:" + id }

// Completed and Failed are the metric hashes (field count).
func (k Keys) Completed() string { return k.Prefix() + "metrics:completed" }
func (k Keys) Failed() string    { return k.Prefix() + "metrics:failed" }
