package verbs

import (
	"github.com/emqd/emqd/internal/num"
	"github.com/emqd/emqd/internal/store"
)

// Error texts of the verbs (docs/verbs.md §2.8, §2.9, §4). Job-level
// refusals are typed: clients match the first word.
const (
	ErrInvalidQueue = "ERR invalid queue name"
	ErrKind         = "EMQKIND job id must be JOB followed by 11 characters from 0-9A-Za-z"
	ErrGone         = "EMQSTALE job gone"
	ErrLeaseLost    = "EMQSTALE lease lost"
	ErrLane         = "EMQLANE lane rows are not served natively"
	ErrDead         = "EMQSTATE job is dead"
	ErrNotDead      = "EMQSTATE job is not dead"
	ErrActive       = "EMQSTATE job is active"
	// ErrReplyLimit: the first job a claim would hand out does not fit in
	// what the client's output buffer limit leaves (docs/verbs.md §2.16).
	ErrReplyLimit    = "EMQLIMIT the next job's reply would pass this client's output buffer limit (client-output-buffer-limit); nothing was claimed"
	ErrMintNotID     = "EMQKIND {emq}:mint last is not a minted job id"
	ErrMintExhausted = "ERR job id space exhausted"
	// ErrDebugDisabled is Valkey's refusal of DEBUG when enable-debug-command
	// is no, or local and the client is not local (server.c processCommand;
	// docs/verbs.md §4.19), naming EMQ.DEBUG.
	ErrDebugDisabled = "ERR EMQ.DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server."
	// ErrClockRange answers EMQ.DEBUG CLOCK ADVANCE ms when now+ms would
	// pass MaxScoreMs (docs/verbs.md §4.19).
	ErrClockRange = "ERR ms is out of range"
)

// errStale is `EMQSTALE <verb> token mismatch` (docs/verbs.md §4.4, guard 3).
func errStale(verb string) string { return "EMQSTALE " + verb + " token mismatch" }

// errArity is Valkey's wrong-number-of-arguments text for name (lower case).
func errArity(name string) string {
	return "ERR wrong number of arguments for '" + name + "' command"
}

func errPositive(name string) string { return "ERR " + name + " must be a positive integer" }

func errNonNegative(name string) string { return "ERR " + name + " must be a non-negative integer" }

// Precomputed rule-8 texts.
var (
	errPosLease       = errPositive("lease_ms")
	errPosCount       = errPositive("count")
	errNonNegBlock    = errNonNegative("block_ms")
	errPosMaxAttempts = errPositive("max_attempts")
	errNonNegDelay    = errNonNegative("delay_ms")
	errNonNegRunAt    = errNonNegative("run_at_ms")
	errPosMaxStalled  = errPositive("max_stalled")
	errPosLimit       = errPositive("limit")
	errPosInterval    = errPositive("interval_ms")
	errNonNegMs       = errNonNegative("ms")
)

// intArg parses a numeric argument with Valkey's string2ll rule. min is 0
// (non-negative) or 1 (positive); rangeErr is the rule-8 text for a value
// below min. It returns "" on success, else the error text.
func intArg(b []byte, min int64, rangeErr string) (int64, string) {
	n, ok := num.ParseInt(b)
	if !ok {
		return 0, store.ErrNotInteger
	}
	if n < min {
		return 0, rangeErr
	}
	return n, ""
}

// eqFold reports whether b equals the upper-case ASCII word w, ignoring case.
func eqFold(b []byte, w string) bool {
	if len(b) != len(w) {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		if c != w[i] {
			return false
		}
	}
	return true
}
