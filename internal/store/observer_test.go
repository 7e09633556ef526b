package store

import (
	"fmt"
	"github.com/emqd/emqd/internal/plan"
	"reflect"
	"testing"
)

// recObserver records every Observer call as a line.
type recObserver struct{ calls []string }

func (o *recObserver) KeyChanged(db int, key string, byCommand bool) {
	o.calls = append(o.calls, fmt.Sprintf("changed %d %s %v", db, key, byCommand))
}
func (o *recObserver) Flushed(db int) { o.calls = append(o.calls, fmt.Sprintf("flushed %d", db)) }
func (o *recObserver) Swapped(a, b int) {
	o.calls = append(o.calls, fmt.Sprintf("swapped %d %d", a, b))
}
func (o *recObserver) KeyRead(key string) { o.calls = append(o.calls, "read "+key) }
func (o *recObserver) BeforeUnlock()      { o.calls = append(o.calls, "unlock") }

// take returns the calls since the last take, without the harness's own
// Unlock.
func (o *recObserver) take() []string {
	var c []string
	for _, x := range o.calls {
		if x != "unlock" {
			c = append(c, x)
		}
	}
	o.calls = nil
	return c
}

// touchFeed is a Feed that is also a Toucher.
type touchFeed struct {
	captureFeed
	touched []string
}

func (f *touchFeed) Touched(db int, key string) {
	f.touched = append(f.touched, fmt.Sprintf("%d %q", db, key))
}

// The observer set at New learns each event once, as docs/architecture.md
// §1.2 lists them; a store without one runs the same commands.
func TestObserverEvents(t *testing.T) {
	o := &recObserver{}
	s := New(4, WithObserver(o))
	steps := []struct {
		db   int
		now  int64 // the store's time for the step (0: unchanged)
		args []string
		want []string
	}{
		{0, 1000, []string{"SET", "k", "v"}, []string{"changed 0 k true"}},
		{0, 0, []string{"GET", "k"}, nil},
		{0, 0, []string{"MOVE", "k", "1"}, []string{"changed 0 k true", "changed 1 k true"}},
		{1, 0, []string{"SET", "gone", "v", "PXAT", "2000"}, []string{"changed 1 gone true"}},
		{1, 3000, []string{"GET", "gone"}, []string{"changed 1 gone false"}}, // expired on lookup
		{0, 0, []string{"SWAPDB", "0", "1"}, []string{"swapped 0 1"}},
		{0, 0, []string{"FLUSHDB"}, []string{"flushed 0"}},
		{0, 0, []string{"FLUSHALL"}, []string{"flushed -1"}},
	}
	for _, st := range steps {
		if st.now != 0 {
			s.SetNow(st.now)
		}
		runDB(t, s, st.db, 2, st.args...)
		if got := o.take(); !reflect.DeepEqual(got, st.want) {
			t.Fatalf("%q: observer got %q, want %q", st.args, got, st.want)
		}
	}
	s.DB(2).NoteRead("emq:{q}:job:x")
	s.Lock()
	s.Unlock()
	if got := o.calls; !reflect.DeepEqual(got, []string{"read emq:{q}:job:x", "unlock"}) {
		t.Fatalf("NoteRead, Unlock: %q", got)
	}
	plain := New(4)
	for _, st := range steps {
		if st.now != 0 {
			plain.SetNow(st.now)
		}
		runDB(t, plain, st.db, 2, st.args...)
	}
	plain.DB(0).NoteRead("k")
	plain.Lock()
	plain.Unlock()
}

// A Feed that is a Toucher learns every changed key ("" for a flushed or
// swapped database, whose keys follow); SetFeed(nil) stops it, and returns
// the Feed it replaces.
func TestFeedToucher(t *testing.T) {
	s := New(4)
	f := &touchFeed{}
	if old := s.SetFeed(f); old != nil {
		t.Fatalf("a new store had a Feed: %T", old)
	}
	if !s.Persisting() {
		t.Fatal("Persisting with a Feed set")
	}
	run(t, s, 2, "SET", "a", "1")
	runDB(t, s, 1, 2, "SET", "b", "2")
	run(t, s, 2, "SWAPDB", "0", "1")
	run(t, s, 2, "FLUSHALL")
	want := []string{`0 "a"`, `1 "b"`, `0 ""`, `0 "b"`, `1 ""`, `1 "a"`, `-1 ""`}
	if !reflect.DeepEqual(f.touched, want) {
		t.Fatalf("touched %q, want %q", f.touched, want)
	}
	if old := s.SetFeed(nil); old != Feed(f) || s.Persisting() {
		t.Fatalf("SetFeed(nil) returned %T, Persisting %v", old, s.Persisting())
	}
	run(t, s, 2, "SET", "c", "3")
	if len(f.touched) != len(want) {
		t.Fatalf("touched after SetFeed(nil): %q", f.touched[len(want):])
	}
}

// Inside a group, Record holds the records and EndGroup sends one record
// per run of commands on one database, in order; EndGroup(true) drops them;
// without a Feed nothing is held; EndGroup outside a group does nothing.
func TestRecordGroup(t *testing.T) {
	s := New(4)
	f := &captureFeed{}
	s.SetFeed(f)
	x := &Ctx{S: s, DB: s.DB(0)}
	rec := func(db int, name string) { s.Record(db, [][][]byte{{[]byte(name)}}) }
	x.BeginGroup()
	rec(0, "a")
	rec(0, "b")
	rec(1, "c")
	rec(0, "d")
	s.Record(0, nil) // empty: nothing
	if len(f.recs) != 0 {
		t.Fatalf("records sent inside the group: %q", f.String())
	}
	x.EndGroup(false)
	var shape []int
	for _, r := range f.recs {
		shape = append(shape, len(r))
	}
	if f.String() != "a; b; c; d" || !reflect.DeepEqual(shape, []int{2, 1, 1}) {
		t.Fatalf("grouped records %q, shape %v (want a b | c | d)", f.String(), shape)
	}
	x.EndGroup(false) // outside a group
	rec(2, "e")       // not grouped: sent at once
	if len(f.recs) != 4 {
		t.Fatalf("ungrouped record not sent: %d records", len(f.recs))
	}
	x.BeginGroup()
	rec(0, "lost")
	x.EndGroup(true)
	if len(f.recs) != 4 {
		t.Fatalf("a discarded group was sent: %q", f.String())
	}
	s.SetFeed(nil)
	x.BeginGroup()
	rec(0, "none")
	s.SetFeed(f) // a Feed set inside the group gets only what follows
	rec(0, "after")
	x.EndGroup(false)
	if f.String() != "a; b; c; d; e; after" {
		t.Fatalf("feed %q", f.String())
	}
}

// BeginReplay removes the Feed and turns loading on until its end function
// restores both.
func TestBeginReplay(t *testing.T) {
	s := New(1)
	f := &captureFeed{}
	s.SetFeed(f)
	end := s.BeginReplay()
	if s.Persisting() || !s.Loading() {
		t.Fatalf("during the replay: persisting %v, loading %v", s.Persisting(), s.Loading())
	}
	run(t, s, 2, "SET", "k", "v")
	end()
	if !s.Persisting() || s.Loading() || f.String() != "" {
		t.Fatalf("after the replay: persisting %v, loading %v, feed %q", s.Persisting(), s.Loading(), f.String())
	}
}

// TestApplyPlanGroupedKeepsRecords: ApplyPlan renders a plan for the feed
// into the store's reused scratch, so inside a group (EXEC), which holds
// the records until EndGroup, it must render into new memory: two plans in
// one group reach the feed each as it was, and two plans outside a group
// each as it was when sent.
func TestApplyPlanGroupedKeepsRecords(t *testing.T) {
	s := New(1)
	f := &captureFeed{}
	s.SetFeed(f)
	x := &Ctx{S: s, DB: s.DB(0)}
	a := &plan.Plan{}
	a.HSet("ha", "f", "one")
	a.ZAdd("za", 1, "m1")
	b := &plan.Plan{}
	b.HSet("hb", "g", "two")
	b.ZAdd("zb", 22, "m2")
	x.BeginGroup()
	x.ApplyPlan(a)
	x.ApplyPlan(b)
	x.EndGroup(false)
	x.ApplyPlan(a)
	x.ApplyPlan(b)
	want := "HSET ha f one; ZADD za 1 m1; HSET hb g two; ZADD zb 22 m2; " +
		"HSET ha f one; ZADD za 1 m1; HSET hb g two; ZADD zb 22 m2"
	if got := f.String(); got != want {
		t.Fatalf("feed %q,\nwant %q", got, want)
	}
}
