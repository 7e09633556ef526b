// Package cluster carries the EMQ.* job verbs to a Valkey or Redis Cluster
// (7.0 or later): emq.lua is a FUNCTION library with one function per verb
// (EMQ.CLAIM -> emq_claim, called `FCALL emq_claim 1 <queue> <args...>`),
// with emqd's arguments, replies, refusal texts and order of checks
// (docs/verbs.md), and Load loads it on every primary.
//
// What the library does where emqd relies on being the server (the clock,
// the lease epoch, id minting, blocking claims), and the differences that
// remain, are in docs/cluster.md.
package cluster

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strings"

	"github.com/emqd/emqd/internal/cmdmeta"
	"github.com/redis/go-redis/v9"
)

//go:embed emq.lua
var source string

// LibraryName is the library's name in FUNCTION LIST (`#!lua name=emq`).
const LibraryName = "emq"

// debugLine is the line of emq.lua that DebugClock switches on.
const debugLine = "local DEBUG_CLOCK = false\n"

// Source is the library's Lua source, as FUNCTION LOAD takes it.
func Source() string { return source }

// Function is the library function of an EMQ.* verb: "EMQ.STALLED.CHECK"
// -> "emq_stalled_check" (lower case, dots to underscores; docs/cluster.md).
func Function(verb string) string {
	return strings.ReplaceAll(strings.ToLower(verb), ".", "_")
}

// Functions lists the library's functions, one per top-level command of
// the verb table (internal/cmdmeta/emq.go, docs/architecture.md §8.2) in
// its order: Function of its name. emq.lua must register exactly these
// (TestOneFunctionPerVerb).
var Functions = functions()

func functions() []string {
	var out []string
	for _, c := range cmdmeta.Verbs() {
		if !strings.Contains(c.Name, "|") {
			out = append(out, Function(c.Name))
		}
	}
	return out
}

// Slot is the cluster slot of queue q: CRC16/XMODEM of the bare name mod
// 16384 (Valkey's keyHashSlot), which is the slot of every emq:{q}:... key
// and of the key a function call declares (docs/verbs.md §1.1).
func Slot(q string) int {
	var crc uint16
	for i := 0; i < len(q); i++ {
		crc ^= uint16(q[i]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % 16384
}

// Option changes what Load loads.
type Option func(*options)

type options struct{ debugClock bool }

// DebugClock loads the test variant of the library: `FCALL emq_debug 0
// CLOCK ADVANCE ms` moves the node's clock forward (as EMQ.DEBUG CLOCK
// ADVANCE does on emqd with enable-debug-command yes) and `... CLOCK SET
// ms` pins it at ms (Unix ms) until the next SET or a restart. The clock
// lives in the node's Lua state, so it is the node's alone and resets when
// the library is loaded again or the process restarts. For tests only: the
// production library refuses emq_debug as Valkey refuses DEBUG when
// enable-debug-command is off.
func DebugClock() Option { return func(o *options) { o.debugClock = true } }

// SourceWith is the library's source with opts applied.
func SourceWith(opts ...Option) string {
	var o options
	for _, f := range opts {
		f(&o)
	}
	if !o.debugClock {
		return source
	}
	return strings.Replace(source, debugLine, "local DEBUG_CLOCK = true\n", 1)
}

// Load loads the library with FUNCTION LOAD REPLACE on every primary rdb
// reaches: each master of a *redis.ClusterClient, each shard of a
// *redis.Ring, or the one server of any other client. Replicas get it from
// their primary (FUNCTION LOAD is replicated), and a restarted node keeps it
// in its RDB/AOF. It returns the first error, naming the node.
func Load(ctx context.Context, rdb redis.UniversalClient, opts ...Option) error {
	src := SourceWith(opts...)
	load := func(ctx context.Context, c *redis.Client) error {
		if err := c.FunctionLoadReplace(ctx, src).Err(); err != nil {
			return fmt.Errorf("cluster: FUNCTION LOAD on %s: %w", c.Options().Addr, err)
		}
		return nil
	}
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, load)
	case *redis.Ring:
		return c.ForEachShard(ctx, load)
	case *redis.Client:
		return load(ctx, c)
	case nil:
		return errors.New("cluster: Load: nil client")
	}
	if err := rdb.FunctionLoadReplace(ctx, src).Err(); err != nil {
		return fmt.Errorf("cluster: FUNCTION LOAD: %w", err)
	}
	return nil
}
