package emq

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Flows (docs/verbs.md §4.25): a parent job that waits until its child
// jobs have ended, added with its children in one atomic call.

// ChildFailPolicy is what a child's death does to its waiting parent
// (docs/verbs.md §4.25.2).
type ChildFailPolicy string

// The policies. The zero value sends none: the server's default, fail.
const (
	// FailParent: a dead child makes the parent dead at once, its error
	// naming the child (the default).
	FailParent ChildFailPolicy = "fail"
	// IgnoreFailure: a dead child counts as ended; the parent runs once
	// every child ended and sees the death in Children.
	IgnoreFailure ChildFailPolicy = "ignore"
	// ContinueParent: a dead child releases the parent at once (BullMQ's
	// continueParentOnFailure).
	ContinueParent ChildFailPolicy = "continue"
)

// FlowJob is one job of a flow: the root (the parent Flow adds) or a
// child. Children, when not empty, make it a parent: the root, or an
// inner parent (a nested flow, at most 8 levels below the root) with its
// own OnChildFail.
type FlowJob struct {
	Queue       string
	ID          string // a job id (docs/verbs.md §1.4); flows take no minted ids
	Payload     []byte
	OnChildFail ChildFailPolicy // "": the server's default, FailParent
	Children    []FlowJob
}

// Flow adds the flow parent root (in queue root.Queue) and its children,
// all in one atomic call (EMQ.FLOW, docs/verbs.md §4.25.1), and returns
// the number of jobs in the flow. The same flow sent again creates
// nothing and answers the same; a flow that conflicts with what is stored
// is an *Error matching ErrFlow. On the Functions target every job must be
// in root's queue (docs/cluster.md §7).
func (c *Client) Flow(ctx context.Context, root FlowJob) (int, error) {
	args := []any{root.ID, root.Payload}
	if root.OnChildFail != "" {
		args = append(args, "ON_CHILD_FAIL", string(root.OnChildFail))
	}
	var add func(upQ, upID string, top bool, kids []FlowJob)
	add = func(upQ, upID string, top bool, kids []FlowJob) {
		for _, k := range kids {
			args = append(args, "CHILD", k.Queue, k.ID, k.Payload)
			if !top {
				args = append(args, "UNDER", upQ, upID)
			}
			if k.OnChildFail != "" {
				args = append(args, "ON_CHILD_FAIL", string(k.OnChildFail))
			}
		}
		for _, k := range kids {
			add(k.Queue, k.ID, false, k.Children)
		}
	}
	add(root.Queue, root.ID, true, root.Children)
	v, err := c.do(ctx, "EMQ.FLOW", root.Queue, args...)
	if err != nil {
		return 0, err
	}
	n, ok := asInt(v)
	if !ok {
		return 0, badReply("EMQ.FLOW", v)
	}
	return int(n), nil
}

// Child is one child of a flow parent as EMQ.CHILDREN shows it
// (docs/verbs.md §4.25.5).
type Child struct {
	Queue, ID string
	// State is the child's outcome once it ended (StateCompleted,
	// StateDead, StateRemoved), else its row's state (StatePending,
	// StateActive, StateScheduled, StateWaiting).
	State JobState
	// Result is a completed child's RESULT (HasResult false: none); Error a
	// dead child's error.
	Result    string
	HasResult bool
	Error     string
}

// ErrNoFlow is Children's error for a parent with no roster (not a flow
// parent, or gone).
var ErrNoFlow = errors.New("emq: no such flow parent")

// Children returns the children of flow parent id of queue q, in the
// flow's order (EMQ.CHILDREN, docs/verbs.md §4.25.5). Errors: ErrNoFlow.
// The parent's own handler reads them with Job.Children to fan in.
func (i *Inspector) Children(ctx context.Context, q, id string) ([]Child, error) {
	return i.children(ctx, q, id)
}

// Children returns the children of the flow parent l holds (as
// Inspector.Children): what the parent's holder reads to fan in.
func (l *Lease) Children(ctx context.Context) ([]Child, error) {
	return l.c.children(ctx, l.Queue, l.ID)
}

func (c *core) children(ctx context.Context, q, id string) ([]Child, error) {
	v, err := c.do(ctx, "EMQ.CHILDREN", q, id)
	if errors.Is(err, redis.Nil) || (err == nil && v == nil) {
		return nil, ErrNoFlow
	}
	if err != nil {
		return nil, err
	}
	list, ok := v.([]any)
	if !ok {
		return nil, badReply("EMQ.CHILDREN", v)
	}
	out := make([]Child, 0, len(list))
	for _, e := range list {
		pairs, ok := asPairs(e)
		if !ok {
			return nil, badReply("EMQ.CHILDREN", v)
		}
		var ch Child
		for _, p := range pairs {
			name, _ := p[0].(string)
			val, _ := asString(p[1])
			switch name {
			case "queue":
				ch.Queue = val
			case "id":
				ch.ID = val
			case "state":
				ch.State = JobState(val)
			case "result":
				ch.Result, ch.HasResult = val, true
			case "error":
				ch.Error = val
			}
		}
		if ch.ID == "" {
			return nil, fmt.Errorf("%w to EMQ.CHILDREN: an entry without id", errReply)
		}
		out = append(out, ch)
	}
	return out, nil
}
