package verbs

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// lanePage is the lane names of one EMQ.LANES reply, each entry checked to
// have the ten fields of docs/verbs.md §4.26.5 with integer numbers.
func lanePage(t *testing.T, h *th, args ...string) []string {
	t.Helper()
	v, ok := h.ok(append([]string{"EMQ.LANES", "q"}, args...)...).([]any)
	if !ok {
		t.Fatalf("EMQ.LANES %v: not an array", args)
	}
	var names []string
	for _, x := range v {
		kv := x.([]any)
		if len(kv) != 20 {
			t.Fatalf("entry %v: %d elements, want 20", kv, len(kv))
		}
		for i := 4; i < 20; i += 2 {
			if _, ok := kv[i+1].(int64); !ok {
				t.Fatalf("entry %v: %v is %T, want an integer", kv, kv[i], kv[i+1])
			}
		}
		names = append(names, kv[1].(string))
	}
	return names
}

// TestLanesPaging: EMQ.LANES q [offset count] pages the lanes of
// emq:{q}:lanes:known by name, 100 by default, at most 1000, with
// EMQ.LIST's argument errors (docs/verbs.md §4.26.5, §4.18); a refused
// call writes nothing.
func TestLanesPaging(t *testing.T) {
	h := newTH(t)
	for l := 0; l < 250; l++ {
		h.ok("EMQ.ENQUEUE", "q", "*", "p", "LANE", fmt.Sprintf("t%03d", 249-l))
	}
	var all []string
	for _, m := range h.members("emq:{q}:lanes:known") {
		all = append(all, strings.TrimSuffix(m, "@0"))
	}
	if len(all) != 250 || all[0] != "t000" || all[249] != "t249" {
		t.Fatalf("lanes:known %d members %v...", len(all), all[:3])
	}
	if got := lanePage(t, h); !reflect.DeepEqual(got, all[:100]) {
		t.Fatalf("default page: %d lanes %v..., want the first 100 by name", len(got), got[:2])
	}
	var paged []string
	for off := 0; off < 300; off += 70 {
		p := lanePage(t, h, strconv.Itoa(off), "70")
		if want := min(70, max(0, 250-off)); len(p) != want {
			t.Fatalf("offset %d: %d lanes, want %d", off, len(p), want)
		}
		paged = append(paged, p...)
	}
	if !reflect.DeepEqual(paged, all) {
		t.Fatalf("pages of 70 give %d lanes, not lanes:known's 250 in order", len(paged))
	}
	if got := lanePage(t, h, "0", "1000"); !reflect.DeepEqual(got, all) {
		t.Fatalf("count 1000: %d lanes", len(got))
	}
	if got := lanePage(t, h, "249", "5"); !reflect.DeepEqual(got, []string{"t249"}) {
		t.Fatalf("last page %v", got)
	}
	if got := lanePage(t, h, "250", "5"); len(got) != 0 {
		t.Fatalf("past the end %v", got)
	}
	if got := lanePage(t, h, "9223372036854775807", "1"); len(got) != 0 {
		t.Fatalf("offset 2^63-1 %v", got)
	}

	records, digestBefore := h.feed.n, digest(h.s)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"0"}, "ERR syntax error"},
		{[]string{"0", "10", "x"}, "ERR syntax error"},
		{[]string{"-1", "10"}, "ERR offset must be a non-negative integer"},
		{[]string{"x", "10"}, "ERR value is not an integer or out of range"},
		{[]string{"0", "0"}, "ERR count must be a positive integer"},
		{[]string{"0", "-5"}, "ERR count must be a positive integer"},
		{[]string{"0", "1001"}, ErrListCount},
		{[]string{"0", "9223372036854775808"}, "ERR value is not an integer or out of range"},
		{[]string{"-1", "x"}, "ERR offset must be a non-negative integer"},
	} {
		if got := h.do(append([]string{"EMQ.LANES", "q"}, c.args...)...); got != replyErr(c.want) {
			t.Errorf("EMQ.LANES q %v: %v, want %s", c.args, got, c.want)
		}
	}
	// The queue name is checked first, as EMQ.LIST's.
	if got := h.do("EMQ.LANES", "bad name", "-1", "0"); got != replyErr(ErrInvalidQueue) {
		t.Errorf("bad queue: %v", got)
	}
	if h.feed.n != records || digest(h.s) != digestBefore {
		t.Fatal("a refused EMQ.LANES wrote")
	}

	// A bad lane hash refuses the page that holds it; a page that ends
	// before it is served (as EMQ.LIST's pages, §4.18).
	h.hset("emq:{q}:lane:t100", "pass", "soon")
	if got := lanePage(t, h, "0", "100"); len(got) != 100 || got[99] != "t099" {
		t.Fatalf("page before the bad lane: %d lanes", len(got))
	}
	if got := h.do("EMQ.LANES", "q", "100", "10"); got != replyErr("ERR hash value is not an integer") {
		t.Fatalf("page with the bad lane: %v", got)
	}
	if got := lanePage(t, h, "101", "10"); len(got) != 10 || got[0] != "t101" {
		t.Fatalf("page after the bad lane: %v", got)
	}
}

// TestLanesReplyShape: EMQ.LANES' entry is a map in RESP3 and a flat array
// in RESP2, every number an integer reply, pass included (docs/verbs.md
// §4.26.5: a pass is an integer, saturating at 2^63-1).
func TestLanesReplyShape(t *testing.T) {
	for _, proto := range []int{2, 3} {
		t.Run("RESP"+strconv.Itoa(proto), func(t *testing.T) {
			h := newTH(t)
			h.proto = proto
			h.ok("EMQ.LANE", "q", "a", "WEIGHT", "4", "MAX_ACTIVE", "2", "RATE", "5", "60000")
			h.ok("EMQ.ENQUEUE", "q", "*", "p", "LANE", "a")
			h.ok("EMQ.ENQUEUE", "q", "*", "p", "LANE", "a")
			h.ok("EMQ.CLAIM", "q", "1000")
			head := "*20\r\n"
			if proto == 3 {
				head = "%10\r\n"
			}
			// a's stride is 2^20/4 = 262144: one pick takes its pass there.
			want := "*1\r\n" + head +
				"$4\r\nlane\r\n$1\r\na\r\n$5\r\nstate\r\n$5\r\nready\r\n$7\r\npending\r\n:1\r\n$6\r\nactive\r\n:1\r\n" +
				"$6\r\nweight\r\n:4\r\n$10\r\nmax_active\r\n:2\r\n$10\r\nrate_count\r\n:5\r\n$11\r\nrate_per_ms\r\n:60000\r\n" +
				"$6\r\npaused\r\n:0\r\n$4\r\npass\r\n:262144\r\n"
			if out := h.raw("EMQ.LANES", "q"); out != want {
				t.Fatalf("EMQ.LANES q\n got %q\nwant %q", out, want)
			}
			// A pass written near the top is shown as stored, an integer.
			h.hset("emq:{q}:lane:a", "pass", "9223372036854775807")
			if out := h.raw("EMQ.LANES", "q", "0", "1"); !strings.HasSuffix(out, "$4\r\npass\r\n:9223372036854775807\r\n") {
				t.Fatalf("saturated pass %q", out)
			}
		})
	}
}
