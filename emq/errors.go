package emq

import (
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The refusal classes of the EMQ verbs (docs/verbs.md §2.9: a job-level
// refusal is `EMQ<CLASS> <detail>`). Test for them with errors.Is; use
// errors.As with *Error for the detail:
//
//	err := c.Complete(ctx, "mail", id, token)
//	if errors.Is(err, emq.ErrStale) { /* the job is no longer ours */ }
//	var e *emq.Error
//	if errors.As(err, &e) && e.Detail == "lease lost" { ... }
var (
	// ErrStale (EMQSTALE): the caller no longer holds the job (job gone,
	// token mismatch, lease lost).
	ErrStale = errors.New("EMQSTALE")
	// ErrState (EMQSTATE): the job is in a state the verb does not act on
	// (job is dead, job is not dead, job is active).
	ErrState = errors.New("EMQSTATE")
	// ErrLane (EMQLANE): a lane row, which the native verbs do not serve.
	ErrLane = errors.New("EMQLANE")
	// ErrKind (EMQKIND): a job id that is not "JOB" followed by 11
	// characters from 0-9A-Za-z (docs/verbs.md §1.4).
	ErrKind = errors.New("EMQKIND")
	// ErrLimit (EMQLIMIT): a claim's first job does not fit in what the
	// connection's output buffer limit leaves (docs/verbs.md §2.16); nothing
	// was claimed. Raise client-output-buffer-limit to take that job.
	ErrLimit = errors.New("EMQLIMIT")
	// ErrFlow (EMQFLOW): a flow that conflicts with what is stored (the
	// parent exists and is not this flow, a child exists, a reprocess
	// under a dead parent; docs/verbs.md §4.25).
	ErrFlow = errors.New("EMQFLOW")
)

// Sentinels of the library itself.
var (
	// ErrDuplicate is returned by Client.Enqueue when a job with the given
	// id already exists (the verb replied nil and wrote nothing: an
	// idempotent admission that was already made). The id is still returned.
	ErrDuplicate = errors.New("emq: a job with this id already exists")
	// ErrNoJob is returned by Client.Job when there is no row for the id.
	ErrNoJob = errors.New("emq: no such job")
)

// Error is an EMQ refusal: Class is the first word of the reply
// (EMQSTALE, EMQSTATE, EMQLANE, EMQKIND, EMQLIMIT or EMQFLOW), Detail the rest
// ("lease lost", "complete token mismatch", "job is dead", ...). errors.Is
// matches it against ErrStale, ErrState, ErrLane, ErrKind, ErrLimit and ErrFlow;
// Unwrap gives the
// go-redis error reply it came from.
type Error struct {
	Class  string
	Detail string
	reply  error
}

// Error is the reply's text, as the server sent it.
func (e *Error) Error() string { return e.Class + " " + e.Detail }

// Is reports whether target is the sentinel of e's class.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrStale:
		return e.Class == "EMQSTALE"
	case ErrState:
		return e.Class == "EMQSTATE"
	case ErrLane:
		return e.Class == "EMQLANE"
	case ErrKind:
		return e.Class == "EMQKIND"
	case ErrLimit:
		return e.Class == "EMQLIMIT"
	case ErrFlow:
		return e.Class == "EMQFLOW"
	}
	return false
}

// Unwrap returns the go-redis error reply.
func (e *Error) Unwrap() error { return e.reply }

// typed turns an EMQ error reply into *Error and leaves every other error
// (other replies such as WRONGTYPE, transport errors, redis.Nil) as it is.
func typed(err error) error {
	var re redis.Error
	if err == nil || !errors.As(err, &re) {
		return err
	}
	msg := re.Error()
	class, detail, _ := strings.Cut(msg, " ")
	switch class {
	case "EMQSTALE", "EMQSTATE", "EMQLANE", "EMQKIND", "EMQLIMIT", "EMQFLOW":
		return &Error{Class: class, Detail: detail, reply: err}
	}
	return err
}

// IsReply reports whether err is a reply of the server (an error reply or
// a nil reply) rather than a transport failure (a connection refused,
// reset or timed out, whose command may or may not have been applied) or a
// transient refusal (IsTransient). The worker resends what is not a reply.
func IsReply(err error) bool {
	if err == nil || errors.Is(err, redis.Nil) {
		return true
	}
	var re redis.Error
	return errors.As(err, &re) && !IsTransient(err)
}

// transientClasses are the error classes with which a server says it could
// not run the command now, and did not: LOADING (reading its data after a
// start), BUSY (a script runs), and on a cluster CLUSTERDOWN (a node
// rejoining, slots not served), TRYAGAIN (keys moving), MASTERDOWN, READONLY
// (a primary demoted by a failover) and MOVED/ASK (redirections go-redis
// could not follow to the end). docs/cluster.md §2.
var transientClasses = []string{"LOADING", "BUSY", "CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN", "READONLY", "MOVED", "ASK"}

// IsTransient reports whether err is an error reply of one of those
// classes: the command was not applied, and the same command sent again
// later may be.
func IsTransient(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	class, _, _ := strings.Cut(re.Error(), " ")
	for _, c := range transientClasses {
		if class == c {
			return true
		}
	}
	return false
}
