package verbs

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// listIDs returns the ids of an EMQ.LIST reply, in order.
func listIDs(t *testing.T, v any) []string {
	t.Helper()
	ids := []string{}
	for _, e := range v.([]any) {
		pair := e.([]any)
		if len(pair) != 2 {
			t.Fatalf("entry %v is not [id, fields]", e)
		}
		ids = append(ids, pair[0].(string))
	}
	return ids
}

// TestListEachState lists every state of a queue built by the verbs and
// checks each entry against EMQ.JOB's reply for the same id (fields,
// order, lease_deadline_ms, run_at_ms), in RESP2 and RESP3.
func TestListEachState(t *testing.T) {
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			h := newTH(t)
			h.proto = proto
			id := func(n int) string { return fmt.Sprintf("JOB%011d", n) }
			for n := 1; n <= 6; n++ {
				h.ok("EMQ.ENQUEUE", "q", id(n), fmt.Sprintf("p%d", n))
			}
			h.ok("EMQ.ENQUEUE", "q", id(7), "later", "DELAY", "5000")
			h.ok("EMQ.ENQUEUE", "q", id(8), "sooner", "DELAY", "100")
			// 1 and 2 claimed (2 with a longer lease), 3 failed to scheduled,
			// 4 failed to dead; 5 and 6 stay pending.
			h.ok("EMQ.CLAIM", "q", "3000", "COUNT", "4")
			h.ok("EMQ.EXTEND", "q", id(1), "1", "9000")
			h.ok("EMQ.FAIL", "q", id(3), "1", "5", "200", "retry me")
			h.ok("EMQ.FAIL", "q", id(4), "1", "1", "0", "fatal <b>")
			want := map[string][]string{
				"pending":   {id(5), id(6)},
				"active":    {id(2), id(1)}, // by lease deadline: 3000 before 9000
				"scheduled": {id(8), id(3), id(7)},
				"dead":      {id(4)},
			}
			for state, ids := range want {
				got := h.ok("EMQ.LIST", "q", state)
				if g := listIDs(t, got); !reflect.DeepEqual(g, ids) {
					t.Fatalf("%s: ids %v, want %v", state, g, ids)
				}
				for _, e := range got.([]any) {
					pair := e.([]any)
					if job := h.ok("EMQ.JOB", "q", pair[0].(string)); !reflect.DeepEqual(pair[1], job) {
						t.Fatalf("%s %s: fields %v, EMQ.JOB %v", state, pair[0], pair[1], job)
					}
				}
			}
			// Exact bytes of one entry: a map in RESP3, a flat array in RESP2.
			out := h.raw("EMQ.LIST", "q", "DEAD")
			head := "*2\r\n$14\r\n" + id(4) + "\r\n"
			if proto == 3 {
				head += "%6\r\n"
			} else {
				head += "*12\r\n"
			}
			if !strings.HasPrefix(out, "*1\r\n"+head+"$5\r\nstate\r\n$4\r\ndead\r\n") {
				t.Fatalf("raw dead list %q", out)
			}
			v := h.ok("EMQ.LIST", "q", "active", "0", "1").([]any)[0].([]any)[1].([]any)
			if v[len(v)-2] != "lease_deadline_ms" || v[len(v)-1] != "1700000003000" {
				t.Fatalf("active entry %v", v)
			}
		})
	}
}

// TestListPaging walks a set page by page: offsets and counts as ZRANGE's,
// an offset past the end answers an empty array, the default count is 100
// and the largest accepted is ListMax.
func TestListPaging(t *testing.T) {
	h := newTH(t)
	var all []string
	for n := 1; n <= 250; n++ {
		all = append(all, h.ok("EMQ.ENQUEUE", "q", "*", "p").(string))
	}
	if got := listIDs(t, h.ok("EMQ.LIST", "q", "pending")); !reflect.DeepEqual(got, all[:100]) {
		t.Fatalf("default page: %d ids", len(got))
	}
	var paged []string
	for off := 0; ; off += 7 {
		page := listIDs(t, h.ok("EMQ.LIST", "q", "pending", fmt.Sprint(off), "7"))
		paged = append(paged, page...)
		if len(page) < 7 {
			break
		}
	}
	if !reflect.DeepEqual(paged, all) {
		t.Fatalf("paged %d ids, want %d in order", len(paged), len(all))
	}
	if got := listIDs(t, h.ok("EMQ.LIST", "q", "pending", "248", "1000")); !reflect.DeepEqual(got, all[248:]) {
		t.Fatalf("tail %v", got)
	}
	for _, off := range []string{"250", "251", "9223372036854775807"} {
		if got := h.ok("EMQ.LIST", "q", "pending", off, "10"); !reflect.DeepEqual(got, []any{}) {
			t.Fatalf("offset %s: %v", off, got)
		}
	}
	if out := h.raw("EMQ.LIST", "q", "pending", "250", "10"); out != "*0\r\n" {
		t.Fatalf("past the end %q", out)
	}
}

// TestListEmptyAndGhosts: a queue without keys lists nothing in every
// state; a member without a row is listed as [id, nil] (EMQ.JOB's nil),
// takes its place in the page and is not removed (EMQ.LIST writes nothing).
func TestListEmptyAndGhosts(t *testing.T) {
	h := newTH(t)
	for _, state := range []string{"pending", "active", "scheduled", "dead"} {
		if got := h.ok("EMQ.LIST", "empty", state); !reflect.DeepEqual(got, []any{}) {
			t.Fatalf("%s of an empty queue: %v", state, got)
		}
	}
	h.ok("EMQ.ENQUEUE", "q", tID, "a")
	h.zadd(tk.Pending, 0, tID2) // a ghost
	h.ok("EMQ.ENQUEUE", "q", tID3, "c")
	before, feed := digest(h.s), h.feed.n
	got := h.ok("EMQ.LIST", "q", "pending").([]any)
	if len(got) != 3 || got[1].([]any)[0] != tID2 || got[1].([]any)[1] != nil || got[2].([]any)[0] != tID3 {
		t.Fatalf("list with a ghost: %v", got)
	}
	if digest(h.s) != before || h.feed.n != feed {
		t.Fatal("EMQ.LIST wrote")
	}
	h.proto = 3
	if out := h.raw("EMQ.LIST", "q", "pending", "1", "1"); out != "*1\r\n*2\r\n$14\r\n"+tID2+"\r\n_\r\n" {
		t.Fatalf("RESP3 ghost %q", out)
	}
	// A lane row is shown as EMQ.JOB shows it, its group field included.
	h.hset(tk.Row(tID2), "state", "pending", "attempts", "0", "group", "g")
	if got := h.ok("EMQ.LIST", "q", "pending", "1", "1"); !reflect.DeepEqual(got,
		[]any{[]any{tID2, []any{"state", "pending", "attempts", "0", "group", "g"}}}) {
		t.Fatalf("lane row %v", got)
	}
}

// TestListArguments: every argument error comes before any key is read
// (the queue's keys all hold strings here), in the order of the grammar.
func TestListArguments(t *testing.T) {
	h := newTH(t)
	k := NewKeys("q")
	for _, key := range []string{k.Pending, k.Active, k.Schedule, k.Dead, k.Row(tID)} {
		h.setString(key, "wrong")
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"EMQ.LIST", "q"}, "ERR wrong number of arguments for 'emq.list' command"},
		{[]string{"EMQ.LIST", "bad name", "nope", "x"}, ErrInvalidQueue},
		{[]string{"EMQ.LIST", "emq", "pending"}, ErrInvalidQueue},
		{[]string{"EMQ.LIST", "q", "schedule"}, ErrListState},
		{[]string{"EMQ.LIST", "q", "completed", "0", "1"}, ErrListState},
		{[]string{"EMQ.LIST", "q", "", "x"}, ErrListState},
		{[]string{"EMQ.LIST", "q", "pending", "0"}, "ERR syntax error"},
		{[]string{"EMQ.LIST", "q", "pending", "0", "1", "2"}, "ERR syntax error"},
		{[]string{"EMQ.LIST", "q", "pending", "x", "1"}, "ERR value is not an integer or out of range"},
		{[]string{"EMQ.LIST", "q", "pending", "-1", "x"}, "ERR offset must be a non-negative integer"},
		{[]string{"EMQ.LIST", "q", "pending", "0", "x"}, "ERR value is not an integer or out of range"},
		{[]string{"EMQ.LIST", "q", "pending", "0", "0"}, "ERR count must be a positive integer"},
		{[]string{"EMQ.LIST", "q", "pending", "0", "-3"}, "ERR count must be a positive integer"},
		{[]string{"EMQ.LIST", "q", "pending", "0", "1001"}, ErrListCount},
		{[]string{"EMQ.LIST", "q", "pending", "1", "1000"}, "WRONGTYPE Operation against a key holding the wrong kind of value"},
	}
	bad := BadRowRefusals()
	for _, c := range cases {
		if got := h.do(c.args...); got != replyErr(c.want) {
			t.Errorf("%q: %v, want %q", c.args, got, c.want)
		}
	}
	if got := BadRowRefusals() - bad; got != 1 {
		t.Fatalf("bad-row refusals %d, want 1 (the WRONGTYPE)", got)
	}
}

// TestListRefusesBadRows: a row key holding another type refuses the whole
// call with WRONGTYPE, as EMQ.JOB does, and so do an active or schedule key
// of another type once a listed member has a row; each refusal counts as a
// bad row (docs/verbs.md §2.11) and writes nothing.
func TestListRefusesBadRows(t *testing.T) {
	const wrong = "WRONGTYPE Operation against a key holding the wrong kind of value"
	h := newTH(t)
	h.ok("EMQ.ENQUEUE", "q", tID, "a")
	h.setString(tk.Row(tID2), "not a hash")
	h.zadd(tk.Pending, 0, tID2)
	bad := BadRowRefusals()
	before := digest(h.s)
	if got := h.do("EMQ.LIST", "q", "pending"); got != replyErr(wrong) {
		t.Fatalf("wrong-type row: %v", got)
	}
	if digest(h.s) != before {
		t.Fatal("a refused EMQ.LIST wrote")
	}
	// The page that stops before the bad row is served.
	if got := listIDs(t, h.ok("EMQ.LIST", "q", "pending", "0", "1")); !reflect.DeepEqual(got, []string{tID}) {
		t.Fatalf("page before the bad row: %v", got)
	}
	h.s.DB(0).Remove(tk.Row(tID2))
	h.setString(tk.Active, "x")
	if got := h.do("EMQ.LIST", "q", "pending"); got != replyErr(wrong) {
		t.Fatalf("wrong-type active set: %v", got)
	}
	if got := h.do("EMQ.LIST", "q", "active"); got != replyErr(wrong) {
		t.Fatalf("wrong-type listed set: %v", got)
	}
	if got := BadRowRefusals() - bad; got != 3 {
		t.Fatalf("bad-row refusals %d, want 3", got)
	}
	h.s.DB(0).Remove(tk.Active)
	h.setString(tk.Schedule, "x")
	if got := h.do("EMQ.LIST", "q", "dead"); !reflect.DeepEqual(got, []any{}) {
		t.Fatalf("an empty dead set reads no other key: %v", got)
	}
	if got := h.do("EMQ.LIST", "q", "pending"); got != replyErr(wrong) {
		t.Fatalf("wrong-type schedule set: %v", got)
	}
	if h.feed.n != 1 {
		t.Fatalf("EMQ.LIST reached the Feed (%d records, want the one ENQUEUE)", h.feed.n)
	}
}
