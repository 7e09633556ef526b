package emq

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Schedules (docs/verbs.md §4.22): the server enqueues a job at each slot
// of a schedule, exactly once per slot. On emqd the server fires them on
// its own timer; on a cluster (the Functions target) something must call
// Inspector.FireSchedules (RunSweeper does with SweeperOptions.Schedules).

// CatchupPolicy is what a schedule does with slots that passed while
// nothing fired them (docs/verbs.md §4.22.5).
type CatchupPolicy string

// Catch-up policies of a schedule.
const (
	CatchupNone CatchupPolicy = "none" // late slots are missed
	CatchupOne  CatchupPolicy = "one"  // the latest late slot fires (the verb's default)
	CatchupAll  CatchupPolicy = "all"  // every late slot fires, in order
)

// ScheduleSpec is a schedule's definition (EMQ.SCHEDULE's arguments).
// Exactly one of Every (a whole number of milliseconds, at least 1s: the
// server refuses less with `ERR interval_ms must be at least 1000`,
// docs/verbs.md §4.22.1) and Cron (5 or 6 fields or a descriptor, in zone
// TZ, "" = UTC) is set; a negative Every counts as set and reaches the
// server, which refuses it. Zero Start, End and Limit mean none; any other
// value is sent as given, so a negative Limit or a Start before 1970 comes
// back as the server's refusal (as the worker's negative options do), never
// as "no limit" or 1970. Catchup "" is the verb's default (one).
type ScheduleSpec struct {
	Every       time.Duration
	Cron        string
	TZ          string
	Payload     []byte
	Start, End  time.Time
	Limit       int
	OverlapSkip bool
	Catchup     CatchupPolicy
}

// Schedule creates or replaces schedule name of queue q (EMQ.SCHEDULE,
// docs/verbs.md §4.22.1; the replace is atomic). Errors: the verb's
// refusals (`ERR invalid cron spec: ...`, `ERR invalid schedule name`,
// ...) as go-redis errors; a spec with both or neither of Every and Cron
// is refused here before anything is sent.
func (i *Inspector) Schedule(ctx context.Context, q, name string, s ScheduleSpec) error {
	var args []any
	switch {
	case s.Every != 0 && s.Cron == "":
		if s.TZ != "" {
			return errors.New("emq: Schedule: TZ is for Cron schedules")
		}
		if s.Every%time.Millisecond != 0 {
			// Rounding would send a period the caller did not ask for
			// (999ms+1ns went through as 1000, past the floor); the
			// server refuses `@every 1000500us` the same way.
			return fmt.Errorf("emq: Schedule: Every %v is not a whole number of milliseconds", s.Every)
		}
		args = append(args, name, "EVERY", s.Every.Milliseconds())
	case s.Every == 0 && s.Cron != "":
		args = append(args, name, "CRON", s.Cron)
		if s.TZ != "" {
			args = append(args, "TZ", s.TZ)
		}
	default:
		return errors.New("emq: Schedule: set exactly one of Every and Cron")
	}
	args = append(args, s.Payload)
	if !s.Start.IsZero() {
		args = append(args, "START", s.Start.UnixMilli())
	}
	if !s.End.IsZero() {
		args = append(args, "END", s.End.UnixMilli())
	}
	if s.Limit != 0 {
		args = append(args, "LIMIT", s.Limit)
	}
	if s.OverlapSkip {
		args = append(args, "OVERLAP", "skip")
	}
	if s.Catchup != "" {
		args = append(args, "CATCHUP", string(s.Catchup))
	}
	_, err := i.do(ctx, "EMQ.SCHEDULE", q, args...)
	return err
}

// ScheduleState is a schedule's state, the `state` field of its hash
// (docs/verbs.md §4.22.2), as JobState is a job's.
type ScheduleState string

// The states of a schedule.
const (
	// ScheduleActive: fires at its slots.
	ScheduleActive ScheduleState = "active"
	// SchedulePaused: paused by EMQ.SCHEDULE.PAUSE (PauseSchedule); fires
	// nothing until resumed (docs/verbs.md §4.22.6).
	SchedulePaused ScheduleState = "paused"
	// ScheduleDone: past END, at LIMIT, or past the last slot an id can
	// name (docs/verbs.md §4.22.4); fires nothing again.
	ScheduleDone ScheduleState = "done"
)

// Known reports whether s is one of the states above. A state this
// library does not know (a newer server's) is kept as sent in
// ScheduleInfo.State, never mapped to a known one, so a caller can tell.
func (s ScheduleState) Known() bool {
	switch s {
	case ScheduleActive, SchedulePaused, ScheduleDone:
		return true
	}
	return false
}

// ScheduleInfo is a schedule as EMQ.SCHEDULE.GET shows it (docs/verbs.md
// §4.22.2). Fields keeps every field as sent.
type ScheduleInfo struct {
	Name string
	// State is ScheduleActive, SchedulePaused or ScheduleDone; any other
	// value is the server's text as sent (State.Known reports false), and
	// "" when the reply has no state (Missing).
	State ScheduleState
	// Next is the next slot (zero when done); LastSlot and LastID the
	// last fired slot and its occurrence's job id (zero and "" before the
	// first).
	Next, LastSlot time.Time
	LastID         string
	// Fired, Skipped (OVERLAP skip) and Missed (late, CATCHUP none/one)
	// count the slots of the current definition.
	Fired, Skipped, Missed int64
	// Missing is true for a listed name without a definition
	// (EMQ.SCHEDULE.LIST's [name, nil]); the other fields are empty.
	Missing bool
	// Fields holds every field of the reply; FieldList the same in the
	// reply's order (as JobInfo.FieldList).
	Fields    map[string]string
	FieldList []Field
}

func parseSchedule(verb string, v any) (*ScheduleInfo, error) {
	pairs, ok := asPairs(v)
	if !ok {
		return nil, badReply(verb, v)
	}
	s := &ScheduleInfo{Fields: make(map[string]string, len(pairs)), FieldList: make([]Field, 0, len(pairs))}
	for _, p := range pairs {
		name, ok1 := asString(p[0])
		val, ok2 := asString(p[1])
		if !ok1 || !ok2 {
			return nil, badReply(verb, v)
		}
		s.Fields[name] = val
		s.FieldList = append(s.FieldList, Field{name, val})
		n, _ := asInt(val)
		switch name {
		case "name":
			s.Name = val
		case "state":
			s.State = ScheduleState(val)
		case "next_ms":
			s.Next = time.UnixMilli(n)
		case "last_slot_ms":
			s.LastSlot = time.UnixMilli(n)
		case "last_id":
			s.LastID = val
		case "fired":
			s.Fired = n
		case "skipped":
			s.Skipped = n
		case "missed":
			s.Missed = n
		}
	}
	return s, nil
}

// ErrNoSchedule is GetSchedule's answer for a schedule that does not exist.
var ErrNoSchedule = errors.New("emq: no such schedule")

// GetSchedule returns schedule name of queue q (EMQ.SCHEDULE.GET), or
// ErrNoSchedule.
func (i *Inspector) GetSchedule(ctx context.Context, q, name string) (*ScheduleInfo, error) {
	v, err := i.do(ctx, "EMQ.SCHEDULE.GET", q, name)
	if errors.Is(err, redis.Nil) || (err == nil && v == nil) {
		return nil, ErrNoSchedule
	}
	if err != nil {
		return nil, err
	}
	return parseSchedule("EMQ.SCHEDULE.GET", v)
}

// ListSchedules returns a page of the schedules of q, next fire first
// (EMQ.SCHEDULE.LIST).
func (i *Inspector) ListSchedules(ctx context.Context, q string, o *ListOptions) ([]ScheduleInfo, error) {
	v, err := i.do(ctx, "EMQ.SCHEDULE.LIST", q, o.page()...)
	if err != nil {
		return nil, err
	}
	list, ok := v.([]any)
	if !ok {
		return nil, badReply("EMQ.SCHEDULE.LIST", v)
	}
	out := make([]ScheduleInfo, 0, len(list))
	for _, e := range list {
		pair, ok := e.([]any)
		if !ok || len(pair) != 2 {
			return nil, badReply("EMQ.SCHEDULE.LIST", v)
		}
		name, _ := asString(pair[0])
		if pair[1] == nil {
			out = append(out, ScheduleInfo{Name: name, Missing: true})
			continue
		}
		s, err := parseSchedule("EMQ.SCHEDULE.LIST", pair[1])
		if err != nil {
			return nil, err
		}
		out = append(out, *s)
	}
	return out, nil
}

// DeleteSchedule deletes schedule name of q (EMQ.SCHEDULE.DEL): true when
// it existed. Its enqueued occurrences stay.
func (i *Inspector) DeleteSchedule(ctx context.Context, q, name string) (bool, error) {
	v, err := i.do(ctx, "EMQ.SCHEDULE.DEL", q, name)
	if err != nil {
		return false, err
	}
	n, ok := asInt(v)
	if !ok {
		return false, badReply("EMQ.SCHEDULE.DEL", v)
	}
	return n == 1, nil
}

// PauseSchedule pauses schedule name of q (EMQ.SCHEDULE.PAUSE); the server
// error `ERR no such schedule` when there is none.
func (i *Inspector) PauseSchedule(ctx context.Context, q, name string) error {
	_, err := i.do(ctx, "EMQ.SCHEDULE.PAUSE", q, name)
	return err
}

// ResumeSchedule resumes it (EMQ.SCHEDULE.RESUME) at its first slot from
// now; the slots passed while paused are not fired.
func (i *Inspector) ResumeSchedule(ctx context.Context, q, name string) error {
	_, err := i.do(ctx, "EMQ.SCHEDULE.RESUME", q, name)
	return err
}

// FireSchedules fires the due slots of q's schedules, at most Limit slot
// decisions, and returns the number of
// occurrences enqueued (EMQ.SCHEDULE.FIRE, docs/verbs.md §4.22.4). emqd
// does it by itself; on a cluster it is how schedules fire. Calling it
// more often, or from several processes, fires nothing twice.
func (i *Inspector) FireSchedules(ctx context.Context, q string, o *BatchOptions) (int, error) {
	return i.fireSchedules(ctx, q, o.limit())
}

func (c *core) fireSchedules(ctx context.Context, q string, limit int) (int, error) {
	var args []any
	if limit > 0 {
		args = append(args, limit)
	}
	v, err := c.do(ctx, "EMQ.SCHEDULE.FIRE", q, args...)
	if err != nil {
		return 0, err
	}
	n, ok := asInt(v)
	if !ok {
		return 0, badReply("EMQ.SCHEDULE.FIRE", v)
	}
	return int(n), nil
}

// fireAll repeats FireSchedules while a call hits its limit.
func (c *core) fireAll(ctx context.Context, q string) error {
	for range 1000 {
		n, err := c.fireSchedules(ctx, q, 100)
		if err != nil {
			return fmt.Errorf("emq: EMQ.SCHEDULE.FIRE %s: %w", q, err)
		}
		if n < 100 {
			return nil
		}
	}
	return nil
}
