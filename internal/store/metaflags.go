package store

import "github.com/emqd/emqd/internal/cmdmeta"

// metaFlags pairs the command metadata's flags (internal/cmdmeta, what
// COMMAND answers) with the store flags the dispatcher and the specs
// carry.
var metaFlags = [...]struct {
	m cmdmeta.Flag
	s Flag
}{
	{cmdmeta.FlagWrite, FlagWrite}, {cmdmeta.FlagReadonly, FlagReadonly},
	{cmdmeta.FlagDenyOOM, FlagDenyOOM}, {cmdmeta.FlagAdmin, FlagAdmin},
	{cmdmeta.FlagNoScript, FlagNoScript}, {cmdmeta.FlagBlocking, FlagBlocking},
	{cmdmeta.FlagLoading, FlagLoading}, {cmdmeta.FlagStale, FlagStale},
	{cmdmeta.FlagSkipSlowlog, FlagSkipSlowlog}, {cmdmeta.FlagFast, FlagFast},
	{cmdmeta.FlagNoAuth, FlagNoAuth}, {cmdmeta.FlagSentinel, FlagSentinel},
	{cmdmeta.FlagNoAsyncLoading, FlagNoAsyncLoading}, {cmdmeta.FlagNoMulti, FlagNoMulti},
	{cmdmeta.FlagAllowBusy, FlagAllowBusy}, {cmdmeta.FlagMovableKeys, FlagMovableKeys},
	{cmdmeta.FlagPubSub, FlagPubSub}, {cmdmeta.FlagMayReplicate, FlagMayReplicate},
}

// FlagsFromMeta returns the store flags of the metadata flags m, one by
// one in the order of the Flag constants; a metadata flag with no store
// flag (COMMAND-only ones such as no_mandatory_keys) is left out.
func FlagsFromMeta(m cmdmeta.Flag) []Flag {
	var out []Flag
	for _, p := range metaFlags {
		if m&p.m != 0 {
			out = append(out, p.s)
		}
	}
	return out
}

// FlagSetFromMeta is the union of FlagsFromMeta(m).
func FlagSetFromMeta(m cmdmeta.Flag) Flag {
	var f Flag
	for _, p := range metaFlags {
		if m&p.m != 0 {
			f |= p.s
		}
	}
	return f
}

// MetaFromFlags is the inverse of FlagSetFromMeta: the metadata flags of
// the store flags f.
func MetaFromFlags(f Flag) cmdmeta.Flag {
	var m cmdmeta.Flag
	for _, p := range metaFlags {
		if f&p.s != 0 {
			m |= p.m
		}
	}
	return m
}
