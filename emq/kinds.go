package emq

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
)

// The typed layer (docs/verbs.md §1.7): a job kind is a Go type with a
// Kind method; its job's payload is the JSON envelope
//
//	{"kind":"<Kind()>","args":<the value as encoding/json writes it>}
//
// so one queue carries several kinds and a Kinds router hands each job to
// the handler of its kind (River's Worker[T] and Kind(), asynq's ServeMux
// by task type). The kind travels in the payload, not in the queue name:
// a queue stays a unit of capacity (its pause, lanes, retention and
// counts), and a producer that sends a new kind needs no new queue. The
// []byte layer underneath is unchanged: the server sees an opaque
// payload, EMQ.JOB shows the envelope, and a consumer in another language
// reads it with any JSON parser.

// JobArgs is the arguments of a job kind: its JSON is the envelope's args
// and Kind names the kind. Kind is called on the zero value (by Handle),
// so give it a value receiver that returns a constant:
//
//	type Email struct{ To string `json:"to"` }
//
//	func (Email) Kind() string { return "email" }
type JobArgs interface {
	Kind() string
}

// envelope is a typed job's payload.
type envelope struct {
	Kind string          `json:"kind"`
	Args json.RawMessage `json:"args"`
}

// ErrEnvelope is the cause of a failure of a payload that is not a kind
// envelope (not a JSON object with a non-empty string "kind" and an
// "args"), or whose args do not decode into the kind's type: the Kinds
// handler dead-letters such a job at once (it is wrapped in NoRetry), as
// no retry can change its bytes.
var ErrEnvelope = errors.New("emq: payload is not a kind envelope")

// ErrUnknownKind is the cause of a failure of a job whose kind has no
// handler in the Kinds router. Such a job is retried with the worker's
// backoff (a rolling deploy may start the producers of a new kind before
// its workers, as River and asynq retry it too) and dies once its
// MaxAttempts are spent.
var ErrUnknownKind = errors.New("emq: no handler for job kind")

// EncodeArgs returns the payload of a job of args' kind: the envelope
// {"kind":...,"args":...}. Errors: an empty Kind, or what json.Marshal
// refuses in args.
func EncodeArgs(args JobArgs) ([]byte, error) {
	if args == nil {
		return nil, errors.New("emq: EncodeArgs of nil args")
	}
	kind := args.Kind()
	if kind == "" {
		return nil, fmt.Errorf("emq: %T has an empty Kind", args)
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("emq: args of kind %q: %w", kind, err)
	}
	return json.Marshal(envelope{Kind: kind, Args: raw})
}

// DecodeKind returns the kind and the raw args of payload, a kind
// envelope. Errors: ErrEnvelope (wrapped, with the reason).
func DecodeKind(payload []byte) (kind string, args json.RawMessage, err error) {
	var e envelope
	dec := json.NewDecoder(bytes.NewReader(payload))
	if err := dec.Decode(&e); err != nil {
		return "", nil, fmt.Errorf("%w: %v", ErrEnvelope, err)
	}
	if dec.More() {
		return "", nil, fmt.Errorf("%w: data after the JSON object", ErrEnvelope)
	}
	if e.Kind == "" {
		return "", nil, fmt.Errorf("%w: no \"kind\"", ErrEnvelope)
	}
	if len(e.Args) == 0 {
		return "", nil, fmt.Errorf("%w: no \"args\"", ErrEnvelope)
	}
	return e.Kind, e.Args, nil
}

// EnqueueKind admits a job of args' kind on queue q (Enqueue with
// EncodeArgs(args) as its payload) and returns its id. Errors: those of
// EncodeArgs, before anything is sent; those of Enqueue.
func (c *Client) EnqueueKind(ctx context.Context, q string, args JobArgs, o *EnqueueOptions) (string, error) {
	payload, err := EncodeArgs(args)
	if err != nil {
		return "", err
	}
	return c.Enqueue(ctx, q, payload, o)
}

// Kinds routes jobs to handlers by kind: register each kind with Handle,
// then give Kinds.Handler to Worker.Run. It is safe for concurrent use;
// register before Run starts.
type Kinds struct {
	mu sync.RWMutex
	h  map[string]func(ctx context.Context, j *Job, args json.RawMessage) error
}

// NewKinds returns an empty router.
func NewKinds() *Kinds {
	return &Kinds{h: make(map[string]func(context.Context, *Job, json.RawMessage) error)}
}

// Handle registers h for the jobs of T's kind (the zero T's Kind). h gets
// the job and its args decoded into a T (encoding/json; unknown fields
// are ignored, so a producer may add fields before its workers know
// them); what it returns is what a Handler returns (nil completes, an
// error retries, NoRetry dead-letters). Handle panics on an empty kind or
// a kind registered twice, as http.ServeMux does on a pattern registered
// twice: both are mistakes of the program, found at its start.
func Handle[T JobArgs](k *Kinds, h func(ctx context.Context, j *Job, args T) error) {
	var zero T
	kind := zero.Kind()
	if kind == "" {
		panic(fmt.Sprintf("emq: Handle: %T has an empty Kind", zero))
	}
	if h == nil {
		panic(fmt.Sprintf("emq: Handle: nil handler for kind %q", kind))
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, dup := k.h[kind]; dup {
		panic(fmt.Sprintf("emq: Handle: kind %q registered twice", kind))
	}
	k.h[kind] = func(ctx context.Context, j *Job, raw json.RawMessage) error {
		var args T
		if err := json.Unmarshal(raw, &args); err != nil {
			return NoRetry(fmt.Errorf("%w: args of kind %q: %v", ErrEnvelope, kind, err))
		}
		return h(ctx, j, args)
	}
}

// Names returns the registered kinds, sorted.
func (k *Kinds) Names() []string {
	k.mu.RLock()
	defer k.mu.RUnlock()
	out := make([]string, 0, len(k.h))
	for name := range k.h {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// Handler is the Handler that routes j by its payload's kind: a payload
// that is not an envelope is dead-lettered at once (ErrEnvelope), a kind
// without a handler retried (ErrUnknownKind).
func (k *Kinds) Handler(ctx context.Context, j *Job) error {
	kind, raw, err := DecodeKind(j.Payload)
	if err != nil {
		return NoRetry(err)
	}
	k.mu.RLock()
	h := k.h[kind]
	k.mu.RUnlock()
	if h == nil {
		return fmt.Errorf("%w %q", ErrUnknownKind, kind)
	}
	return h(ctx, j, raw)
}
