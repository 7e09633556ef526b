package emq_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/emqd/emqd/emq"
)

// TestEncodeDecodeKind: the envelope's bytes (docs/verbs.md §1.7) and its
// refusals.
func TestEncodeDecodeKind(t *testing.T) {
	p, err := emq.EncodeArgs(Email{To: "ada", Subject: "s"})
	if err != nil || string(p) != `{"kind":"email","args":{"to":"ada","subject":"s"}}` {
		t.Fatalf("EncodeArgs: %s %v", p, err)
	}
	kind, raw, err := emq.DecodeKind(p)
	if err != nil || kind != "email" || string(raw) != `{"to":"ada","subject":"s"}` {
		t.Fatalf("DecodeKind: %q %s %v", kind, raw, err)
	}
	for _, bad := range []string{``, `x`, `null`, `[]`, `{"args":{}}`, `{"kind":"","args":{}}`, `{"kind":"email"}`, `{"kind":7,"args":{}}`, `{"kind":"email","args":{}} {}`} {
		if _, _, err := emq.DecodeKind([]byte(bad)); !errors.Is(err, emq.ErrEnvelope) {
			t.Errorf("DecodeKind(%q): %v, want ErrEnvelope", bad, err)
		}
	}
	if _, err := emq.EncodeArgs(noKind{}); err == nil || err.Error() != "emq: emq_test.noKind has an empty Kind" {
		t.Fatalf("empty kind: %v", err)
	}
	if _, err := emq.EncodeArgs(badJSON{C: make(chan int)}); err == nil || !strings.Contains(err.Error(), `args of kind "bad"`) {
		t.Fatalf("unmarshalable args: %v", err)
	}
	if _, err := emq.EncodeArgs(nil); err == nil {
		t.Fatal("nil args accepted")
	}
}

type noKind struct{}

func (noKind) Kind() string { return "" }

type badJSON struct{ C chan int }

func (badJSON) Kind() string { return "bad" }

// TestEnqueueKindRefusalWritesNothing: args EncodeArgs refuses are not
// sent; the queue stays empty.
func TestEnqueueKindRefusalWritesNothing(t *testing.T) {
	e := newEnv(t)
	if id, err := e.c.EnqueueKind(e.ctx, "q", badJSON{C: make(chan int)}, nil); err == nil || id != "" {
		t.Fatalf("EnqueueKind: %q %v", id, err)
	}
	if n := e.counts("q"); n != (emq.Counts{}) {
		t.Fatalf("counts after a refusal %+v", n)
	}
	// With options: the envelope is the payload, the options apply.
	id, err := e.c.EnqueueKind(e.ctx, "q", Email{To: "bob"}, &emq.EnqueueOptions{ID: "JOB00000000007", Delay: time.Second})
	if err != nil || id != "JOB00000000007" {
		t.Fatalf("EnqueueKind: %q %v", id, err)
	}
	if j := e.job("q", id); j.State != emq.StateScheduled || string(j.Payload) != `{"kind":"email","args":{"to":"bob","subject":""}}` {
		t.Fatalf("row %+v", j)
	}
}

// TestKindsRouting: jobs of two kinds on one queue reach their handlers
// with their args; a handler's error retries; an unknown kind is retried
// (ErrUnknownKind); a payload that is no envelope, or args of the wrong
// shape, die at once (ErrEnvelope).
func TestKindsRouting(t *testing.T) {
	e := newEnv(t)
	kinds := emq.NewKinds()
	got := make(chan string, 10)
	emq.Handle(kinds, func(_ context.Context, j *emq.Job, a Email) error {
		got <- "email " + a.To
		if a.To == "fail" {
			return errors.New("smtp down")
		}
		return nil
	})
	emq.Handle(kinds, func(_ context.Context, j *emq.Job, a Resize) error {
		got <- "resize " + a.Image
		return nil
	})
	if n := kinds.Names(); len(n) != 2 || n[0] != "email" || n[1] != "resize" {
		t.Fatalf("names %v", n)
	}
	ids := map[string]string{}
	for name, args := range map[string]emq.JobArgs{"email": Email{To: "ada"}, "resize": Resize{Image: "cat.png"}, "fail": Email{To: "fail"}} {
		id, err := e.c.EnqueueKind(e.ctx, "q", args, nil)
		if err != nil {
			t.Fatal(err)
		}
		ids[name] = id
	}
	ids["unknown"] = e.enqueue("q", `{"kind":"fax","args":{}}`)
	ids["raw"] = e.enqueue("q", "not json")
	ids["shape"] = e.enqueue("q", `{"kind":"email","args":{"to":7}}`)

	wk := e.startWorker("q", emq.WorkerOptions{Concurrency: 1, Backoff: func(int64) time.Duration { return time.Hour }}, kinds.Handler)
	outs := map[string]emq.Outcome{}
	for range ids {
		o := wk.outcome(t)
		outs[o.job.ID] = o.o
	}
	wk.stop(t)
	seen := map[string]bool{}
	for len(got) > 0 {
		seen[<-got] = true
	}
	for _, s := range []string{"email ada", "resize cat.png", "email fail"} {
		if !seen[s] {
			t.Errorf("handler did not see %q (saw %v)", s, seen)
		}
	}
	check := func(name string, kind emq.OutcomeKind, state emq.JobState, lastErr string) {
		t.Helper()
		o := outs[ids[name]]
		if o.Kind != kind {
			t.Errorf("%s: outcome %v, want %v (%v)", name, o.Kind, kind, o.Err)
		}
		if state == "" {
			if _, err := e.in.Job(e.ctx, "q", ids[name]); !errors.Is(err, emq.ErrNoJob) {
				t.Errorf("%s: row left: %v", name, err)
			}
			return
		}
		if j := e.job("q", ids[name]); j.State != state || j.LastError != lastErr {
			t.Errorf("%s: row %s %q, want %s %q", name, j.State, j.LastError, state, lastErr)
		}
	}
	check("email", emq.Completed, "", "")
	check("resize", emq.Completed, "", "")
	check("fail", emq.Retried, emq.StateScheduled, "smtp down")
	check("unknown", emq.Retried, emq.StateScheduled, `emq: no handler for job kind "fax"`)
	check("raw", emq.DeadLettered, emq.StateDead, "emq: payload is not a kind envelope: invalid character 'o' in literal null (expecting 'u')")
	check("shape", emq.DeadLettered, emq.StateDead, `emq: payload is not a kind envelope: args of kind "email": json: cannot unmarshal number into Go struct field Email.to of type string`)
	if o := outs[ids["unknown"]]; !errors.Is(o.Err, emq.ErrUnknownKind) {
		t.Errorf("unknown: %v", o.Err)
	}
	if o := outs[ids["shape"]]; !errors.Is(o.Err, emq.ErrEnvelope) || !errors.Is(o.Err, emq.ErrNoRetry) {
		t.Errorf("shape: %v", o.Err)
	}
}

// TestHandlePanics: an empty kind, a nil handler and a kind registered
// twice are refused at registration.
func TestHandlePanics(t *testing.T) {
	mustPanic := func(what, want string, f func()) {
		t.Helper()
		defer func() {
			if r := recover(); r == nil || r.(string) != want {
				t.Errorf("%s: panic %v, want %q", what, r, want)
			}
		}()
		f()
	}
	k := emq.NewKinds()
	emq.Handle(k, func(context.Context, *emq.Job, Email) error { return nil })
	mustPanic("twice", `emq: Handle: kind "email" registered twice`, func() {
		emq.Handle(k, func(context.Context, *emq.Job, Email) error { return nil })
	})
	mustPanic("empty", "emq: Handle: emq_test.noKind has an empty Kind", func() {
		emq.Handle(k, func(context.Context, *emq.Job, noKind) error { return nil })
	})
	mustPanic("nil", `emq: Handle: nil handler for kind "resize"`, func() {
		emq.Handle[Resize](k, nil)
	})
	if n := k.Names(); len(n) != 1 {
		t.Fatalf("names after refusals %v", n)
	}
}
