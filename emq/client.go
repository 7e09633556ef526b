// Package emq is the Go client and worker library of emqd's job queue
// (the EMQ.* verbs, docs/verbs.md). It runs over go-redis v9: give it any
// redis.UniversalClient (*redis.Client, *redis.ClusterClient, with TLS and
// AUTH configured there).
//
// Four parts, as a job-queue user expects them (asynq's Client, Server and
// Inspector; River's Client and workers):
//
//   - Client is the producer's and the holder's side: Enqueue,
//     EnqueueMany, Flow and Wait put jobs in and wait for their outcome;
//     Claim hands out leases, and each *Lease carries its holder verbs
//     (lease.Complete, Fail, Requeue, Extend, Delay, DelayUntil,
//     Progress, and Children for a flow parent), so a hand-written loop
//     never passes a queue, an id and a token side by side. StalledCheck and RunSweeper recover expired
//     leases.
//   - Inspector is the operator's side: Counts and CountsMany, Job, List,
//     Lanes, LanesPage and SetLane, Pause and Resume, Reprocess, Remove, Promote and RunNow, the
//     bulk actions (ReprocessAll, RemoveAll, Drain, PromoteAll), the
//     schedules, the retention settings and a flow parent's Children.
//   - Worker is the claim loop, done once: blocking claims, heartbeats,
//     retries with backoff, panics turned into failures, and a shutdown
//     that gives back what it holds. Its Handler gets a *Job.
//   - Kinds is the optional typed layer over the []byte one: a job kind
//     (a Go type with a Kind method) and a handler of that type, its
//     payload JSON in an envelope that names the kind (see Kinds).
//
// A worker in a few lines:
//
//	c := emq.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"}), nil)
//	w := emq.NewWorker(c, &emq.WorkerOptions{Concurrency: 8})
//	err := w.Run(ctx, "emails", func(ctx context.Context, j *emq.Job) error {
//		return send(ctx, j.Payload) // nil completes; an error retries with backoff
//	})
//
// # Options
//
// One rule for every call (the style of go-redis's *redis.Options and of
// River's *InsertOpts): the arguments a call cannot do without are
// positional; everything optional is one struct named after what it
// configures (ClientOptions, EnqueueOptions, ClaimOptions,
// CompleteOptions, FailOptions, ReprocessOptions, BulkOptions,
// ReprocessAllOptions, ListOptions, StalledCheckOptions, BatchOptions,
// WorkerOptions, SweeperOptions), passed by pointer as the call's last
// argument. nil means every default; a zero field means that field's
// default, which its comment states. A value a verb writes (LaneSettings,
// ScheduleSpec, Retention) is a plain argument, not an option.
//
// # Targets
//
// Two targets: Native (the default) sends the EMQ.* verbs to emqd;
// Functions sends `FCALL emq_<verb> 1 <queue> ...` to Valkey or Redis with
// emqd's FUNCTION library loaded (cluster/), where a blocking claim becomes
// a poll with backoff.
package emq

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Target is what the client sends its verbs to.
type Target int

const (
	// Native sends the EMQ.* verbs (emqd). The default.
	Native Target = iota
	// Functions sends `FCALL emq_<verb> 1 <queue> <args...>` (Valkey or
	// Redis 7+ with emqd's FUNCTION library `emq` loaded): the verb's name
	// in lower case with dots as underscores, the queue as the one key.
	// EMQ.CLAIM's BLOCK is not sent: the worker polls instead.
	Functions
)

func (t Target) String() string {
	if t == Functions {
		return "functions"
	}
	return "native"
}

// ClientOptions configure a Client or an Inspector (nil: the defaults).
type ClientOptions struct {
	// Target selects Native (the zero value) or Functions.
	Target Target
}

// Doer is what an Inspector needs of go-redis: any
// redis.UniversalClient (*redis.Client, *redis.ClusterClient), or one
// *redis.Conn (its AUTH, its SELECTed database), for a tool that holds a
// connection (emqd's dashboard does).
type Doer interface {
	Do(ctx context.Context, args ...any) *redis.Cmd
	Pipelined(ctx context.Context, fn func(redis.Pipeliner) error) ([]redis.Cmder, error)
}

// core is what a Client and an Inspector share: the go-redis client they
// send through and the target. It holds no connection of its own.
type core struct {
	rdb    Doer
	target Target
}

func newCore(rdb Doer, o *ClientOptions) core {
	c := core{rdb: rdb}
	if o != nil {
		c.target = o.Target
	}
	return c
}

// Target returns the target the verbs are sent to.
func (c *core) Target() Target { return c.target }

// Client sends the producer's and the holder's verbs (see the package
// doc). It is safe for concurrent use.
type Client struct {
	core
	redis redis.UniversalClient
}

// New returns a client over rdb (o nil: the Native target).
//
// go-redis resends a command whose reply was lost when its MaxRetries is
// above 0 (the default is 3). The verbs are written so that a resend is
// harmless (a resent COMPLETE answers `EMQSTALE job gone`, a resent
// ENQUEUE with the same id answers nil), but the caller then cannot tell a
// lost reply from a refusal. The Worker resends its outcome verbs itself
// and reads such answers right when it knows a reply was lost; set
// MaxRetries: -1 on rdb for exact accounting (the load driver does).
func New(rdb redis.UniversalClient, o *ClientOptions) *Client {
	return &Client{core: newCore(rdb, o), redis: rdb}
}

// Redis returns the go-redis client underneath.
func (c *Client) Redis() redis.UniversalClient { return c.redis }

// Inspector returns the Inspector over c's go-redis client and target.
func (c *Client) Inspector() *Inspector { return &Inspector{core: c.core} }

// Inspector sends the operator's verbs (see the package doc): what a
// dashboard or an admin tool reads and does. It is safe for concurrent
// use.
type Inspector struct {
	core
}

// NewInspector returns an inspector over rdb (o nil: the Native target).
func NewInspector(rdb Doer, o *ClientOptions) *Inspector {
	return &Inspector{core: newCore(rdb, o)}
}

// FunctionName is the FUNCTION library name of verb ("EMQ.STALLED.CHECK"
// -> "emq_stalled_check").
func FunctionName(verb string) string {
	return strings.ReplaceAll(strings.ToLower(verb), ".", "_")
}

// argv builds the command of verb on queue q for c's target.
func (c *core) argv(verb, q string, args ...any) []any {
	var out []any
	if c.target == Functions {
		out = make([]any, 0, 4+len(args))
		out = append(out, "FCALL", FunctionName(verb), 1, q)
	} else {
		out = make([]any, 0, 2+len(args))
		out = append(out, verb, q)
	}
	return append(out, args...)
}

// do sends verb and returns its reply; EMQ refusals come back as *Error.
func (c *core) do(ctx context.Context, verb, q string, args ...any) (any, error) {
	v, err := c.rdb.Do(ctx, c.argv(verb, q, args...)...).Result()
	return v, typed(err)
}

// ms is d in whole milliseconds, rounded up (a lease of 1.5 ms is 2 ms).
func ms(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// posMs is ms(d) but at least 1 (lease_ms must be positive).
func posMs(d time.Duration) int64 { return max(ms(d), 1) }

// Reply decoding. go-redis gives RESP2 arrays and RESP3 maps as []any and
// map[any]any; strings as string; integers as int64.

var errReply = errors.New("emq: unexpected reply")

func badReply(verb string, v any) error {
	return fmt.Errorf("%w to %s: %T %v", errReply, verb, v, v)
}

func asString(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case []byte:
		return string(x), true
	}
	return "", false
}

func asInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case string:
		n, err := strconv.ParseInt(x, 10, 64)
		return n, err == nil
	}
	return 0, false
}

// asPairs turns a RESP3 map or a RESP2 flat array of names and values into
// name/value pairs (map order is go-redis's: unordered).
func asPairs(v any) ([][2]any, bool) {
	switch x := v.(type) {
	case map[any]any:
		out := make([][2]any, 0, len(x))
		for k, val := range x {
			out = append(out, [2]any{k, val})
		}
		return out, true
	case map[string]any:
		out := make([][2]any, 0, len(x))
		for k, val := range x {
			out = append(out, [2]any{k, val})
		}
		return out, true
	case []any:
		if len(x)%2 != 0 {
			return nil, false
		}
		out := make([][2]any, 0, len(x)/2)
		for i := 0; i < len(x); i += 2 {
			out = append(out, [2]any{x[i], x[i+1]})
		}
		return out, true
	}
	return nil, false
}
