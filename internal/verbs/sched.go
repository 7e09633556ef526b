package verbs

import (
	"container/heap"
	"math"
	"strconv"

	"github.com/emqd/emqd/internal/num"
	"github.com/emqd/emqd/internal/plan"
	"github.com/emqd/emqd/internal/resp"
	"github.com/emqd/emqd/internal/store"
)

// Schedules (docs/verbs.md §4.22): EMQ.SCHEDULE (upsert), .GET, .DEL,
// .LIST, .PAUSE, .RESUME and .FIRE. A schedule is the hash
// emq:{q}:sched:<name>; the sorted set emq:{q}:sched holds every schedule
// of q scored by its next fire time (MaxScoreMs while paused or done), so
// the server arms one timer at the earliest score over all queues
// (server/scheduler.go) and runs EMQ.SCHEDULE.FIRE q when it passes. A
// slot's occurrence and the advance of its schedule are one plan, so one
// record in the append-only file: no crash fires a slot twice or skips it.

// Error texts of the schedule verbs (docs/verbs.md §4.22.1).
const (
	ErrSchedName     = "ERR invalid schedule name"
	ErrNoSchedule    = "ERR no such schedule"
	ErrSchedEnd      = "ERR end_ms must not be before start_ms"
	ErrSchedSpace    = "ERR schedule ids of the queue exhausted"
	ErrSchedBadRow   = "ERR schedule hash is malformed"
	errCronPrefix    = "ERR invalid cron spec: "
	errIntervalRange = "ERR interval_ms is out of range"
	errIntervalMin   = "ERR interval_ms must be at least 1000"
)

// MinEveryMs is the least interval_ms of EMQ.SCHEDULE ... EVERY, the same
// floor as @every's 1s (docs/verbs.md §4.22.1): one occurrence a second
// per schedule at most, so a typo (EVERY 1 for one second) cannot enqueue
// 1,000 jobs a second. A stored schedule with a smaller every_ms (an older
// emqd's) keeps firing at its period.
const MinEveryMs = 1000

// Schedule numbers and occurrence ids (docs/verbs.md §4.22.3): the id of
// the occurrence of slot s of the schedule numbered sid is the job id of
// the number s<<sidBits | sid, in the minter's alphabet (11 base-62
// digits hold any uint64).
const (
	sidBits = 20
	maxSID  = 1<<sidBits - 1
	// maxSlotMs is the last slot time an id can carry (year 2527); a
	// schedule whose next slot is later is done.
	maxSlotMs = 1<<(64-sidBits) - 1
	// lateMs: a slot fired this long or longer after its time is missed
	// (CATCHUP none and one, docs/verbs.md §4.22.5).
	lateMs = 1000
	// fireDefaultLimit is EMQ.SCHEDULE.FIRE's default limit: slots
	// examined per call.
	fireDefaultLimit = 100
	// schedNever is the score of a paused or done schedule.
	schedNever = MaxScoreMs
)

// OccurrenceID is the job id of the occurrence of slot slotMs (Unix ms,
// 0..2^44-1) of the schedule numbered sid (1..2^20-1) (docs/verbs.md
// §4.22.3).
func OccurrenceID(sid, slotMs int64) string {
	var b [idLen]byte
	copy(b[:], idPrefix)
	u := uint64(slotMs)<<sidBits | uint64(sid)
	for i := idLen - 1; i >= len(idPrefix); i-- {
		b[i] = b62[u%62]
		u /= 62
	}
	return string(b[:])
}

// Hash fields of a schedule, in the order the hash keeps them.
const (
	sfSID      = "sid"
	sfKind     = "kind"
	sfEvery    = "every_ms"
	sfAnchor   = "anchor_ms"
	sfCron     = "cron"
	sfTZ       = "tz"
	sfPayload  = "payload"
	sfStart    = "start_ms"
	sfEnd      = "end_ms"
	sfLimit    = "limit"
	sfOverlap  = "overlap"
	sfCatchup  = "catchup"
	sfState    = "state"
	sfNext     = "next_ms"
	sfLastSlot = "last_slot_ms"
	sfLastID   = "last_id"
	sfFired    = "fired"
	sfSkipped  = "skipped"
	sfMissed   = "missed"
	// metaSchedSeq is the field of the queue's meta hash holding the last
	// schedule number given out.
	metaSchedSeq = "sched_seq"
)

// schedule is a schedule as read from (or about to be written to) its hash.
type schedule struct {
	Name                       string
	Key                        string
	SID                        int64
	Cron                       bool
	Every                      int64 // EVERY: the period
	Anchor                     int64 // EVERY: the series origin (START, or the time of creation)
	Spec                       string
	TZ                         string
	cs                         *cronSched
	Payload                    []byte
	Start                      int64
	End                        int64
	Limit                      int64
	HasStart, HasEnd, HasLimit bool
	Skip                       bool   // OVERLAP skip
	Catchup                    string // none, one, all
	State                      string // active, paused, done
	Next                       int64
	HasNext                    bool
	Last                       int64 // last fired slot
	HasLast                    bool
	LastID                     string
	Fired                      int64
	Skipped                    int64
	Missed                     int64
}

// validSchedName: 1 to 128 of A-Z a-z 0-9 . _ - (the queue-name alphabet;
// `emq` allowed).
func validSchedName(b []byte) bool {
	return validQueue(b) || string(b) == "emq"
}

// slotAfter is the schedule's first slot strictly after prev.
func (s *schedule) slotAfter(prev int64) (int64, bool) {
	if !s.Cron {
		if prev < s.Anchor {
			return s.Anchor, true
		}
		k := (prev-s.Anchor)/s.Every + 1
		if k > (MaxScoreMs-s.Anchor)/s.Every {
			return 0, false
		}
		return s.Anchor + k*s.Every, true
	}
	return s.cs.slotAfter(prev)
}

// firstFrom is the first slot at or after t, not before START.
func (s *schedule) firstFrom(t int64) (int64, bool) {
	if s.HasStart && t < s.Start {
		t = s.Start
	}
	return s.slotAfter(t - 1)
}

// ended reports whether slot n (ok false: none) ends the schedule: past
// END, past the last slot an id can carry, or LIMIT reached.
func (s *schedule) ended(n int64, ok bool) bool {
	return !ok || n > maxSlotMs || (s.HasEnd && n > s.End) || (s.HasLimit && s.Fired >= s.Limit)
}

// setNext makes n the next slot, or the schedule done.
func (s *schedule) setNext(n int64, ok bool) {
	if s.ended(n, ok) {
		s.State, s.HasNext = "done", false
		return
	}
	s.Next, s.HasNext = n, true
}

// score is the schedule's score in emq:{q}:sched.
func (s *schedule) score() int64 {
	if s.State != "active" || !s.HasNext {
		return schedNever
	}
	return s.Next
}

func i64(n int64) []byte { return strconv.AppendInt(nil, n, 10) }

// fields is the whole hash of s, in order.
func (s *schedule) fields() [][]byte {
	fv := make([][]byte, 0, 40)
	add := func(f string, v []byte) { fv = append(fv, []byte(f), v) }
	add(sfSID, i64(s.SID))
	if s.Cron {
		add(sfKind, []byte("cron"))
		add(sfCron, []byte(s.Spec))
		if s.TZ != "" {
			add(sfTZ, []byte(s.TZ))
		}
	} else {
		add(sfKind, []byte("every"))
		add(sfEvery, i64(s.Every))
		add(sfAnchor, i64(s.Anchor))
	}
	add(sfPayload, s.Payload)
	if s.HasStart {
		add(sfStart, i64(s.Start))
	}
	if s.HasEnd {
		add(sfEnd, i64(s.End))
	}
	if s.HasLimit {
		add(sfLimit, i64(s.Limit))
	}
	if s.Skip {
		add(sfOverlap, []byte("skip"))
	} else {
		add(sfOverlap, []byte("allow"))
	}
	add(sfCatchup, []byte(s.Catchup))
	fv = append(fv, s.progress()...)
	return fv
}

// progress is the part of the hash a fire, a pause or a resume changes.
func (s *schedule) progress() [][]byte {
	fv := make([][]byte, 0, 14)
	add := func(f string, v []byte) { fv = append(fv, []byte(f), v) }
	add(sfState, []byte(s.State))
	if s.HasNext {
		add(sfNext, i64(s.Next))
	}
	if s.HasLast {
		add(sfLastSlot, i64(s.Last))
		add(sfLastID, []byte(s.LastID))
	}
	add(sfFired, i64(s.Fired))
	add(sfSkipped, i64(s.Skipped))
	add(sfMissed, i64(s.Missed))
	return fv
}

// writeProgress appends the ops that store s's progress and score.
func (s *schedule) writeProgress(p *plan.Plan, k *Keys) {
	p.HSetBytes(s.Key, s.progress()...)
	if !s.HasNext {
		p.HDel(s.Key, sfNext)
	}
	p.ZAdd(k.Sched, s.score(), s.Name)
}

// cron returns the parsed spec (cached per spec and zone).
func (vs *Verbs) cron(spec, tz string) (*cronSched, error) {
	key := spec + "\x00" + tz
	if cs := vs.crons[key]; cs != nil {
		return cs, nil
	}
	cs, err := parseCron(spec, tz)
	if err != nil {
		return nil, err
	}
	if vs.crons == nil || len(vs.crons) >= keyCacheMax {
		vs.crons = make(map[string]*cronSched)
	}
	vs.crons[key] = cs
	return cs, nil
}

// readSchedule reads the hash at key. ok is false with no hash; a refusal
// when it is not a hash or not a schedule's hash.
func (vs *Verbs) readSchedule(d *store.DB, key, name string) (*schedule, bool, refusal) {
	h, kind := hashKind(d, key)
	if kind == keyWrong {
		return nil, false, wrongType(key)
	}
	if h == nil {
		return nil, false, noRefusal
	}
	bad := badRow(ErrSchedBadRow, key)
	s := &schedule{Name: name, Key: key}
	intF := func(f string, min int64, need bool) (int64, bool, bool) {
		v, ok := h.Get(f)
		if !ok {
			return 0, false, !need
		}
		n, ok2 := num.ParseInt(v)
		return n, true, ok2 && n >= min
	}
	var ok bool
	if s.SID, _, ok = intF(sfSID, 1, true); !ok || s.SID > maxSID {
		return nil, false, bad
	}
	kv, _ := h.Get(sfKind)
	switch string(kv) {
	case "every":
		if s.Every, _, ok = intF(sfEvery, 1, true); !ok {
			return nil, false, bad
		}
		if s.Anchor, _, ok = intF(sfAnchor, 0, true); !ok {
			return nil, false, bad
		}
	case "cron":
		s.Cron = true
		spec, _ := h.Get(sfCron)
		tz, _ := h.Get(sfTZ)
		s.Spec, s.TZ = string(spec), string(tz)
		cs, err := vs.cron(s.Spec, s.TZ)
		if err != nil {
			return nil, false, bad
		}
		s.cs = cs
	default:
		return nil, false, bad
	}
	s.Payload, _ = h.Get(sfPayload)
	if s.Start, s.HasStart, ok = intF(sfStart, 0, false); !ok {
		return nil, false, bad
	}
	if s.End, s.HasEnd, ok = intF(sfEnd, 0, false); !ok {
		return nil, false, bad
	}
	if s.Limit, s.HasLimit, ok = intF(sfLimit, 1, false); !ok {
		return nil, false, bad
	}
	ov, _ := h.Get(sfOverlap)
	switch string(ov) {
	case "skip":
		s.Skip = true
	case "allow":
	default:
		return nil, false, bad
	}
	cv, _ := h.Get(sfCatchup)
	switch string(cv) {
	case "none", "one", "all":
		s.Catchup = string(cv)
	default:
		return nil, false, bad
	}
	st, _ := h.Get(sfState)
	switch string(st) {
	case "active", "paused", "done":
		s.State = string(st)
	default:
		return nil, false, bad
	}
	if s.Next, s.HasNext, ok = intF(sfNext, 0, false); !ok || (s.State != "done" && !s.HasNext) {
		return nil, false, bad
	}
	if s.Last, s.HasLast, ok = intF(sfLastSlot, 0, false); !ok {
		return nil, false, bad
	}
	if s.HasLast {
		id, _ := h.Get(sfLastID)
		s.LastID = string(id)
	}
	for _, c := range []struct {
		f string
		p *int64
	}{{sfFired, &s.Fired}, {sfSkipped, &s.Skipped}, {sfMissed, &s.Missed}} {
		if *c.p, _, ok = intF(c.f, 0, false); !ok {
			return nil, false, bad
		}
	}
	return s, true, noRefusal
}

// schedArgs validates argv[1] (queue) and argv[2] (schedule name).
func (vs *Verbs) schedArgs(c *store.Ctx) (*Keys, string, bool) {
	k := vs.queueArg(c)
	if k == nil {
		return nil, "", false
	}
	if !validSchedName(c.Argv[2]) {
		c.W.Error(ErrSchedName)
		return nil, "", false
	}
	return k, string(c.Argv[2]), true
}

// ---------------------------------------------------------------------------
// EMQ.SCHEDULE q name (EVERY interval_ms | CRON spec [TZ zone]) payload
//   [START ms] [END ms] [LIMIT n] [OVERLAP allow|skip] [CATCHUP none|one|all]

// ScheduleArgs are EMQ.SCHEDULE's arguments (docs/verbs.md §4.22.1): Queue
// (valid), Name (a valid schedule name), the series, EveryMs (EVERY
// interval_ms, MinEveryMs..MaxScoreMs) or, when EveryMs is 0, Cron and TZ (CRON
// spec [TZ zone]; TZ "": UTC), Payload, and the options: StartMs and EndMs
// with HasStart and HasEnd (>= 0, EndMs >= StartMs; 0 is a value), Limit
// (>= 1; 0: none), Skip (OVERLAP skip; false: allow) and Catchup (none,
// one or all; "": one, the default).
type ScheduleArgs struct {
	Queue, Name      string
	EveryMs          int64
	Cron, TZ         string
	Payload          []byte
	HasStart, HasEnd bool
	StartMs, EndMs   int64
	Limit            int64
	Skip             bool
	Catchup          string
}

// Argv is EMQ.SCHEDULE q name (EVERY ms | CRON spec [TZ zone]) payload,
// then the options given in the order START, END, LIMIT, OVERLAP,
// CATCHUP.
func (a *ScheduleArgs) Argv() [][]byte {
	argv := argvOf("EMQ.SCHEDULE", a.Queue, a.Name)
	if a.EveryMs != 0 {
		argv = append(argv, []byte("EVERY"), []byte(itoa(a.EveryMs)))
	} else {
		argv = append(argv, []byte("CRON"), []byte(a.Cron))
		if a.TZ != "" {
			argv = append(argv, []byte("TZ"), []byte(a.TZ))
		}
	}
	argv = append(argv, a.Payload)
	if a.HasStart {
		argv = append(argv, []byte("START"), []byte(itoa(a.StartMs)))
	}
	if a.HasEnd {
		argv = append(argv, []byte("END"), []byte(itoa(a.EndMs)))
	}
	if a.Limit != 0 {
		argv = append(argv, []byte("LIMIT"), []byte(itoa(a.Limit)))
	}
	if a.Skip {
		argv = append(argv, []byte("OVERLAP"), []byte("skip"))
	}
	if a.Catchup != "" {
		argv = append(argv, []byte("CATCHUP"), []byte(a.Catchup))
	}
	return argv
}

// parseSchedule parses EMQ.SCHEDULE's arguments after q and name (docs/verbs.md
// §4.22.1) into a; it returns an error text.
func (vs *Verbs) parseSchedule(argv [][]byte, a *ScheduleArgs) string {
	i := 3
	switch {
	case eqFold(argv[i], "EVERY"):
		n, e := intArg(argv[i+1], 1, errPosInterval)
		if e != "" {
			return e
		}
		if n > MaxScoreMs {
			return errIntervalRange
		}
		if n < MinEveryMs {
			return errIntervalMin
		}
		a.EveryMs = n
		i += 2
	case eqFold(argv[i], "CRON"):
		a.Cron = string(argv[i+1])
		i += 2
		if i+2 < len(argv) && eqFold(argv[i], "TZ") {
			a.TZ = string(argv[i+1])
			if a.TZ == "" {
				return errCronPrefix + "unknown time zone \"\""
			}
			i += 2
		}
		if _, err := vs.cron(a.Cron, a.TZ); err != nil {
			return errCronPrefix + err.Error()
		}
	default:
		return store.ErrSyntax
	}
	if i >= len(argv) {
		return store.ErrSyntax
	}
	a.Payload = argv[i]
	seen := map[string]bool{}
	for i++; i < len(argv); i += 2 {
		if i+1 >= len(argv) {
			return store.ErrSyntax
		}
		var word string
		for _, w := range []string{"START", "END", "LIMIT", "OVERLAP", "CATCHUP"} {
			if eqFold(argv[i], w) {
				word = w
			}
		}
		if word == "" || seen[word] {
			return store.ErrSyntax
		}
		seen[word] = true
		v := argv[i+1]
		var e string
		switch word {
		case "START":
			a.StartMs, e = intArg(v, 0, errNonNegative("start_ms"))
			a.HasStart = true
		case "END":
			a.EndMs, e = intArg(v, 0, errNonNegative("end_ms"))
			a.HasEnd = true
		case "LIMIT":
			a.Limit, e = intArg(v, 1, errPosLimit)
		case "OVERLAP":
			switch {
			case eqFold(v, "ALLOW"):
				a.Skip = false
			case eqFold(v, "SKIP"):
				a.Skip = true
			default:
				e = store.ErrSyntax
			}
		case "CATCHUP":
			switch {
			case eqFold(v, "NONE"):
				a.Catchup = "none"
			case eqFold(v, "ONE"):
				a.Catchup = "one"
			case eqFold(v, "ALL"):
				a.Catchup = "all"
			default:
				e = store.ErrSyntax
			}
		}
		if e != "" {
			return e
		}
	}
	if a.HasStart && a.HasEnd && a.EndMs < a.StartMs {
		return ErrSchedEnd
	}
	return ""
}

func (vs *Verbs) cmdSchedule(c *store.Ctx) {
	k, name, ok := vs.schedArgs(c)
	if !ok {
		return
	}
	a := ScheduleArgs{Queue: k.Queue, Name: name}
	if e := vs.parseSchedule(c.Argv, &a); e != "" {
		c.W.Error(e)
		return
	}
	if err := vs.Schedule(c, &a); err != nil {
		replyRefusal(c, err)
		return
	}
	c.W.OK()
}

// Schedule is EMQ.SCHEDULE (docs/verbs.md §4.22.1): it creates or
// replaces schedule a.Name of a.Queue (an upsert keeps the schedule's
// number, its last slot and a pause) and sets its next slot after now.
// Refusals: the schedules set, the schedule's hash or the meta hash of
// the wrong type (or a sched_seq that is not an integer), the queue's
// schedule numbers exhausted (ErrSchedSpace), or a cron spec or zone that
// does not parse (the adapter's text; the wire refuses it before).
func (vs *Verbs) Schedule(c *store.Ctx, a *ScheduleArgs) error {
	k := vs.keysOf(a.Queue)
	name := a.Name
	s := &schedule{Name: name, Key: k.SchedPref + name, Cron: a.EveryMs == 0, Every: a.EveryMs,
		Payload: a.Payload, Start: a.StartMs, End: a.EndMs, Limit: a.Limit, HasStart: a.HasStart,
		HasEnd: a.HasEnd, HasLimit: a.Limit != 0, Skip: a.Skip, Catchup: a.Catchup}
	if s.Catchup == "" {
		s.Catchup = "one"
	}
	if s.Cron {
		cs, err := vs.cron(a.Cron, a.TZ)
		if err != nil {
			return vs.refused(c, refusal{Text: errCronPrefix + err.Error()})
		}
		s.Spec, s.TZ, s.cs = a.Cron, a.TZ, cs
	}
	d := c.DB
	if _, kind := zsetKind(d, k.Sched); kind == keyWrong {
		return vs.refused(c, wrongType(k.Sched))
	}
	old, had, ref := vs.readSchedule(d, s.Key, name)
	if ref.Refused() {
		return vs.refused(c, ref)
	}
	meta, mk := hashKind(d, k.Meta)
	if mk == keyWrong {
		return vs.refused(c, wrongType(k.Meta))
	}
	p := newPlan(5)
	now := c.NowMs
	s.State = "active"
	if had {
		// Upsert (docs/verbs.md §4.22.1): the number, the last slot and
		// the pause survive; the definition, the next slot and the counts
		// are new.
		s.SID = old.SID
		s.Last, s.HasLast, s.LastID = old.Last, old.HasLast, old.LastID
		if old.State == "paused" {
			s.State = "paused"
		}
	} else {
		var seq int64
		if meta != nil {
			if v, ok := meta.Get(metaSchedSeq); ok {
				n, ok := num.ParseInt(v)
				if !ok || n < 0 {
					return vs.refused(c, badRow(store.ErrHashNotInt, k.Meta))
				}
				seq = n
			}
		}
		if seq >= maxSID {
			return vs.refused(c, refusal{Text: ErrSchedSpace})
		}
		s.SID = seq + 1
		p.HSet(k.Meta, metaSchedSeq, strconv.FormatInt(s.SID, 10))
	}
	s.Payload = clone(s.Payload)
	if !s.Cron {
		s.Anchor = now
		if s.HasStart {
			s.Anchor = s.Start
		}
	}
	from := now + 1
	if s.HasLast && s.Last >= from {
		from = s.Last + 1
	}
	s.setNext(s.firstFrom(from))
	p.Del(s.Key)
	p.HSetBytes(s.Key, s.fields()...)
	p.ZAdd(k.Sched, s.score(), name)
	apply(c, p)
	return nil
}

// ---------------------------------------------------------------------------
// EMQ.SCHEDULE.GET q name, EMQ.SCHEDULE.LIST q [offset count]

// ScheduleView is a schedule as EMQ.SCHEDULE.GET and .LIST show it
// (docs/verbs.md §4.22.6; the hash: §4.22.2): Name, and Found with the
// fields of its hash in the hash's order (views of the store,
// docs/architecture.md §2.5.1). Found is false when there is no hash
// (GET's nil reply; a LIST entry [name, nil] for a member of the set
// without one).
type ScheduleView struct {
	Name   string
	Found  bool
	Fields []Field
}

// scheduleView reads the schedule name's hash at key: a refusal when it
// is not a hash.
func scheduleView(d *store.DB, key, name string) (ScheduleView, refusal) {
	h, kind := hashKind(d, key)
	if kind == keyWrong {
		return ScheduleView{}, wrongType(key)
	}
	v := ScheduleView{Name: name}
	if h == nil {
		return v, noRefusal
	}
	v.Found = true
	v.Fields = make([]Field, 0, h.Len())
	h.Range(func(f string, b []byte) bool {
		v.Fields = append(v.Fields, Field{f, b})
		return true
	})
	return v, noRefusal
}

// write replies v as a map: name first, then the hash's fields in order
// (nil when not found).
func (v *ScheduleView) write(w *resp.Writer) {
	if !v.Found {
		w.Nil()
		return
	}
	w.Map(1 + len(v.Fields))
	w.BulkString("name")
	w.BulkString(v.Name)
	for _, f := range v.Fields {
		w.BulkString(f.Name)
		w.Bulk(f.Value)
	}
}

// ScheduleGet is EMQ.SCHEDULE.GET q name (docs/verbs.md §4.22.6): the
// schedule's hash; a hash key of the wrong type refuses.
func (vs *Verbs) ScheduleGet(c *store.Ctx, r *ScheduleRef) (ScheduleView, error) {
	k := vs.keysOf(r.Queue)
	v, ref := scheduleView(c.DB, k.SchedPref+r.Name, r.Name)
	if ref.Refused() {
		return ScheduleView{}, vs.refused(c, ref)
	}
	return v, nil
}

func (vs *Verbs) cmdScheduleGet(c *store.Ctx) {
	k, name, ok := vs.schedArgs(c)
	if !ok {
		return
	}
	v, err := vs.ScheduleGet(c, &ScheduleRef{Queue: k.Queue, Name: name})
	if err != nil {
		replyRefusal(c, err)
		return
	}
	v.write(c.W)
}

// ScheduleListArgs are EMQ.SCHEDULE.LIST's arguments (docs/verbs.md
// §4.22.6): Queue (valid), Offset (>= 0) and Count (1..1000; 0: the
// default, 100).
type ScheduleListArgs struct {
	Queue         string
	Offset, Count int64
}

// Argv is EMQ.SCHEDULE.LIST q, with offset and count when either is set.
func (a *ScheduleListArgs) Argv() [][]byte {
	argv := argvOf("EMQ.SCHEDULE.LIST", a.Queue)
	return appendPage(argv, a.Offset, a.Count)
}

// ScheduleList is EMQ.SCHEDULE.LIST (docs/verbs.md §4.22.6): the schedules
// of ranks Offset to Offset+Count-1 of the queue's schedules set (by next
// slot). The set, or a selected schedule's hash key, of the wrong type
// refuses (the first met).
func (vs *Verbs) ScheduleList(c *store.Ctx, a *ScheduleListArgs) ([]ScheduleView, error) {
	k := vs.keysOf(a.Queue)
	count := pageCount(a.Count)
	d := c.DB
	z, kind := zsetKind(d, k.Sched)
	if kind == keyWrong {
		return nil, vs.refused(c, wrongType(k.Sched))
	}
	var out []ScheduleView
	if z != nil {
		for i := a.Offset; i < int64(z.Len()) && i < a.Offset+count; i++ {
			it, _ := z.At(int(i))
			v, ref := scheduleView(d, k.SchedPref+it.Member, it.Member)
			if ref.Refused() {
				return nil, vs.refused(c, ref)
			}
			out = append(out, v)
		}
	}
	return out, nil
}

func (vs *Verbs) cmdScheduleList(c *store.Ctx) {
	k := vs.queueArg(c)
	if k == nil {
		return
	}
	argv := c.Argv
	a := ScheduleListArgs{Queue: k.Queue}
	switch len(argv) {
	case 2:
	case 4:
		var e string
		if a.Offset, e = intArg(argv[2], 0, errNonNegative("offset")); e == "" {
			a.Count, e = intArg(argv[3], 1, errPosCount)
		}
		if e == "" && a.Count > 1000 {
			e = "ERR count must be at most 1000"
		}
		if e != "" {
			c.W.Error(e)
			return
		}
	default:
		c.W.Error(store.ErrSyntax)
		return
	}
	out, err := vs.ScheduleList(c, &a)
	if err != nil {
		replyRefusal(c, err)
		return
	}
	w := c.W
	w.Array(len(out))
	for i := range out {
		w.Array(2)
		w.BulkString(out[i].Name)
		out[i].write(w)
	}
}

// ---------------------------------------------------------------------------
// EMQ.SCHEDULE.DEL q name, EMQ.SCHEDULE.PAUSE q name, EMQ.SCHEDULE.RESUME q name

// ScheduleRef names one schedule (docs/verbs.md §4.22): Queue (valid) and
// Name (a valid schedule name; the wire adapter checks both).
type ScheduleRef struct {
	Queue string
	Name  string
}

// EMQ.SCHEDULE.DEL q name
func (vs *Verbs) cmdScheduleDel(c *store.Ctx) {
	k, name, ok := vs.schedArgs(c)
	if !ok {
		return
	}
	deleted, err := vs.ScheduleDel(c, &ScheduleRef{Queue: k.Queue, Name: name})
	if err != nil {
		replyRefusal(c, err)
		return
	}
	if deleted {
		c.W.Int(1)
	} else {
		c.W.Int(0)
	}
}

// ScheduleDel is EMQ.SCHEDULE.DEL (docs/verbs.md §4.22): the schedule's
// hash and its member of the sched set go; occurrences already enqueued
// stay. It reports whether there was one (the wire reply 1 or 0). A
// *Refusal wrote nothing.
func (vs *Verbs) ScheduleDel(c *store.Ctx, r *ScheduleRef) (bool, error) {
	k, name := vs.keysOf(r.Queue), r.Name
	d := c.DB
	key := k.SchedPref + name
	z, zk := zsetKind(d, k.Sched)
	if zk == keyWrong {
		return false, vs.refused(c, wrongType(k.Sched))
	}
	_, hk := hashKind(d, key)
	if hk == keyWrong {
		return false, vs.refused(c, wrongType(key))
	}
	inSet := false
	if z != nil {
		_, inSet = z.Score(name)
	}
	if hk == keyAbsent && !inSet {
		return false, nil
	}
	p := newPlan(2)
	if hk == keyOK {
		p.Del(key)
	}
	if inSet {
		p.ZRem(k.Sched, name)
	}
	apply(c, p)
	return true, nil
}

// EMQ.SCHEDULE.PAUSE q name, EMQ.SCHEDULE.RESUME q name
func (vs *Verbs) cmdSchedulePause(c *store.Ctx)  { vs.cmdPauseResume(c, true) }
func (vs *Verbs) cmdScheduleResume(c *store.Ctx) { vs.cmdPauseResume(c, false) }

func (vs *Verbs) cmdPauseResume(c *store.Ctx, pause bool) {
	k, name, ok := vs.schedArgs(c)
	if !ok {
		return
	}
	if err := vs.pauseResume(c, &ScheduleRef{Queue: k.Queue, Name: name}, pause); err != nil {
		replyRefusal(c, err)
		return
	}
	c.W.OK()
}

// SchedulePause is EMQ.SCHEDULE.PAUSE (docs/verbs.md §4.22.6): an active
// schedule stops firing (a paused one stays so). A missing schedule is
// refused with ErrNoSchedule. A *Refusal wrote nothing.
func (vs *Verbs) SchedulePause(c *store.Ctx, r *ScheduleRef) error { return vs.pauseResume(c, r, true) }

// ScheduleResume is EMQ.SCHEDULE.RESUME (docs/verbs.md §4.22.6): a paused
// schedule fires again from its first slot at or after now. A missing
// schedule is refused with ErrNoSchedule. A *Refusal wrote nothing.
func (vs *Verbs) ScheduleResume(c *store.Ctx, r *ScheduleRef) error {
	return vs.pauseResume(c, r, false)
}

// pauseResume: PAUSE makes an active schedule paused (score never);
// RESUME makes a paused one active again at its first slot at or after
// now, counted from its previous target (slots that passed while paused
// are not fired, docs/verbs.md §4.22.6). Anything else: nothing written.
func (vs *Verbs) pauseResume(c *store.Ctx, r *ScheduleRef, pause bool) error {
	k, name := vs.keysOf(r.Queue), r.Name
	d := c.DB
	if _, zk := zsetKind(d, k.Sched); zk == keyWrong {
		return vs.refused(c, wrongType(k.Sched))
	}
	s, had, ref := vs.readSchedule(d, k.SchedPref+name, name)
	if ref.Refused() {
		return vs.refused(c, ref)
	}
	if !had {
		return &Refusal{Text: ErrNoSchedule}
	}
	switch {
	case pause && s.State == "active":
		s.State = "paused"
	case !pause && s.State == "paused":
		s.State = "active"
		if s.Next < c.NowMs {
			s.setNext(s.slotAfter(c.NowMs - 1))
		}
	default:
		return nil
	}
	p := newPlan(3)
	s.writeProgress(p, k)
	apply(c, p)
	return nil
}

// ---------------------------------------------------------------------------
// EMQ.SCHEDULE.FIRE q [limit]

// schedHeap orders the due schedules of one call by next slot, then name.
type schedHeap []*schedule

func (h schedHeap) Len() int { return len(h) }
func (h schedHeap) Less(i, j int) bool {
	if h[i].Next != h[j].Next {
		return h[i].Next < h[j].Next
	}
	return h[i].Name < h[j].Name
}
func (h schedHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *schedHeap) Push(x any)   { *h = append(*h, x.(*schedule)) }
func (h *schedHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// fireResult is what one EMQ.SCHEDULE.FIRE did.
type fireResult struct {
	Fired, Skipped, Missed int
	Lags                   []int64  // now - slot of each fired occurrence
	Created                []string // the occurrences whose rows the plan creates
}

// ScheduleFireArgs are EMQ.SCHEDULE.FIRE's arguments (docs/verbs.md
// §4.22.4): Queue (valid, the adapter checks it) and Limit (>= 1; 0: the
// default, fireDefaultLimit), the most slot decisions one call makes.
type ScheduleFireArgs struct {
	Queue string
	Limit int64
}

// Argv is the canonical command line: EMQ.SCHEDULE.FIRE q [limit].
func (a *ScheduleFireArgs) Argv() [][]byte {
	argv := argvOf("EMQ.SCHEDULE.FIRE", a.Queue)
	if a.Limit > 0 {
		argv = append(argv, []byte(itoa(a.Limit)))
	}
	return argv
}

// ScheduleFireResult counts one call's slot decisions: occurrences
// enqueued (the wire reply), slots skipped (overlap policy) and slots
// missed (catch-up policy).
type ScheduleFireResult struct {
	Fired, Skipped, Missed int
}

// EMQ.SCHEDULE.FIRE q [limit]
func (vs *Verbs) cmdScheduleFire(c *store.Ctx) {
	if !validQueue(c.Argv[1]) {
		c.W.Error(ErrInvalidQueue)
		return
	}
	a := ScheduleFireArgs{Queue: vs.keysFor(c.Argv[1]).Queue, Limit: fireDefaultLimit}
	switch len(c.Argv) {
	case 2:
	case 3:
		var e string
		if a.Limit, e = intArg(c.Argv[2], 1, errPosLimit); e != "" {
			c.W.Error(e)
			return
		}
	default:
		c.W.Error(store.ErrSyntax)
		return
	}
	res, err := vs.ScheduleFire(c, &a)
	if err != nil {
		replyRefusal(c, err)
		return
	}
	c.W.Int(int64(res.Fired))
}

// ScheduleFire is EMQ.SCHEDULE.FIRE (docs/verbs.md §4.22.4): the
// schedules of a.Queue due at c.NowMs enqueue their occurrences and
// advance. The server's schedule timer calls it directly. A *Refusal
// wrote nothing.
func (vs *Verbs) ScheduleFire(c *store.Ctx, a *ScheduleFireArgs) (ScheduleFireResult, error) {
	k := vs.keysOf(a.Queue)
	limit := a.Limit
	if limit <= 0 {
		limit = fireDefaultLimit
	}
	res, p, ref := vs.fire(c.DB, k, c.NowMs, limit)
	if ref.Refused() {
		return ScheduleFireResult{}, vs.refused(c, ref)
	}
	if p != nil {
		apply(c, p)
	}
	vs.count(c, k, SchedFired, res.Fired)
	vs.count(c, k, SchedSkipped, res.Skipped)
	vs.count(c, k, SchedMissed, res.Missed)
	if vs.stats != nil {
		for _, l := range res.Lags {
			vs.stats.schedLag(l)
		}
	}
	vs.events(c, k, EvEnqueued, res.Created)
	if res.Fired > 0 {
		vs.wake(c, k)
	}
	return ScheduleFireResult{Fired: res.Fired, Skipped: res.Skipped, Missed: res.Missed}, nil
}

// fire is EMQ.SCHEDULE.FIRE's read pass and judgement (docs/verbs.md
// §4.22.4): the schedules of q due at now, at most limit slot decisions
// in slot order over all of them. It writes nothing; the plan holds the
// occurrences and every advanced schedule (nil: nothing to write).
func (vs *Verbs) fire(d *store.DB, k *Keys, now, limit int64) (fireResult, *plan.Plan, refusal) {
	var res fireResult
	z, zk := zsetKind(d, k.Sched)
	if zk == keyWrong {
		return res, nil, wrongType(k.Sched)
	}
	if z == nil {
		return res, nil, noRefusal
	}
	var h schedHeap
	var bad refusal
	z.Ascend(store.ZItem{Score: math.Inf(-1)}, func(it store.ZItem) bool {
		if it.Score > float64(now) || int64(len(h)) >= limit {
			return false
		}
		s, ok, ref := vs.readSchedule(d, k.SchedPref+it.Member, it.Member)
		if ref.Refused() {
			bad = ref
			return false
		}
		if !ok || s.State != "active" {
			// A member without an active schedule: its score is fixed
			// below.
			s = &schedule{Name: it.Member, Key: ""}
		}
		h = append(h, s)
		return true
	})
	if bad.Refused() {
		return res, nil, bad
	}
	if len(h) == 0 {
		return res, nil, noRefusal
	}
	_, pk := zsetKind(d, k.Pending)
	if pk == keyWrong {
		return res, nil, wrongType(k.Pending)
	}
	// The occurrences enter the default lane through seam 1.
	lt, ref := readLanes(d, k, now)
	if ref.Refused() {
		return res, nil, ref
	}
	if lt.on {
		if _, ref := lt.lane(DefaultLane); ref.Refused() {
			return res, nil, ref
		}
	}
	p := newPlan(4 * len(h))
	var touched []*schedule
	var orphans []string
	live := h[:0]
	for _, s := range h {
		if s.Key == "" {
			orphans = append(orphans, s.Name)
			continue
		}
		if s.Next > now {
			// The set's score ran ahead of the hash (written by hand):
			// the hash wins.
			touched = append(touched, s)
			continue
		}
		live = append(live, s)
		touched = append(touched, s)
	}
	h = live
	heap.Init(&h)
	fired := map[string]bool{}
	running := func(id string) bool {
		if fired[id] {
			return true
		}
		row, kind := hashKind(d, k.Row(id))
		if kind != keyOK {
			return false
		}
		st, _ := row.Get("state")
		switch string(st) {
		case "pending", "active", "scheduled":
			return true
		}
		return false
	}
	budget := limit
	for budget > 0 && h.Len() > 0 {
		s := heap.Pop(&h).(*schedule)
		slot := s.Next
		budget--
		if s.ended(slot, true) {
			s.setNext(slot, false)
			continue
		}
		late := now-slot >= lateMs
		if late && s.Catchup != "all" {
			// The last slot that is late: for one it fires, the slots
			// before it are missed; for none all of them are.
			lastLate := now - lateMs
			if s.HasEnd && s.End < lastLate {
				lastLate = s.End
			}
			var L int64
			var cnt int64 // late slots before L
			if !s.Cron {
				cnt = (lastLate - slot) / s.Every
				L = slot + cnt*s.Every
			} else {
				// One slot per unit of the budget.
				n, ok := s.slotAfter(slot)
				if ok && n <= lastLate {
					s.Missed++
					res.Missed++
					s.Next = n
					heap.Push(&h, s)
					continue
				}
				L = slot
			}
			s.Missed += cnt
			res.Missed += int(cnt)
			if s.Catchup == "none" {
				s.Missed++
				res.Missed++
				s.setNext(s.slotAfter(L))
				if s.HasNext && s.Next <= now {
					heap.Push(&h, s)
				}
				continue
			}
			slot = L
		}
		id := OccurrenceID(s.SID, slot)
		if s.Skip && s.HasLast && running(s.LastID) {
			s.Skipped++
			res.Skipped++
		} else {
			rowKey := k.Row(id)
			if d.Get(rowKey) == nil && !fired[id] {
				addJobRow(p, k, lt, rowKey, id, vPending, s.Payload, now, nil, k.Pending, 0, nil,
					[]byte("schedule"), []byte(s.Name), []byte("slot_ms"), i64(slot))
				res.Created = append(res.Created, id)
			}
			fired[id] = true
			s.Fired++
			res.Fired++
			res.Lags = append(res.Lags, now-slot)
			s.Last, s.HasLast, s.LastID = slot, true, id
		}
		s.setNext(s.slotAfter(slot))
		if s.HasNext && s.Next <= now {
			heap.Push(&h, s)
		}
	}
	for _, s := range touched {
		s.writeProgress(p, k)
	}
	p = lt.flush(p)
	for _, name := range orphans {
		// A member whose hash is gone or not active: it must not keep
		// the timer due.
		s, ok, _ := vs.readSchedule(d, k.SchedPref+name, name)
		if !ok {
			p.ZRem(k.Sched, name)
		} else {
			p.ZAdd(k.Sched, s.score(), name)
		}
	}
	return res, p, noRefusal
}
