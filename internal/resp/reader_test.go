package resp

import (
	"bytes"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/emqd/emqd/internal/num"
)

// parseAll feeds in to a fresh Reader in one piece and returns the commands
// (each argv joined for easy comparison) and the error text, if any.
func parseAll(t *testing.T, in string, unauth bool) ([]string, string) {
	t.Helper()
	var r Reader
	r.Write([]byte(in))
	cmds, err := r.Parse(0, unauth)
	return render(cmds), errText(err)
}

func render(cmds [][][]byte) []string {
	var out []string
	for _, c := range cmds {
		parts := make([]string, len(c))
		for i, a := range c {
			parts[i] = fmt.Sprintf("%q", a)
		}
		out = append(out, strings.Join(parts, " "))
	}
	return out
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestReaderMultibulk(t *testing.T) {
	cmds, err := parseAll(t, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n*1\r\n$4\r\nPING\r\n", false)
	if err != "" {
		t.Fatal(err)
	}
	want := []string{`"SET" "k" ""`, `"PING"`}
	if fmt.Sprint(cmds) != fmt.Sprint(want) {
		t.Fatalf("got %v want %v", cmds, want)
	}
}

func TestReaderBinarySafe(t *testing.T) {
	cmds, err := parseAll(t, "*2\r\n$4\r\nECHO\r\n$8\r\nx\ry\r\n*$z\r\n", false)
	if err != "" || len(cmds) != 1 || cmds[0] != `"ECHO" "x\ry\r\n*$z"` {
		t.Fatalf("got %v %q", cmds, err)
	}
}

func TestReaderIgnored(t *testing.T) {
	cmds, err := parseAll(t, "*0\r\n*-1\r\n\r\n   \r\n*-7\r\n\n*1\r\n$4\r\nPING\r\n", false)
	if err != "" || len(cmds) != 1 || cmds[0] != `"PING"` {
		t.Fatalf("got %v %q", cmds, err)
	}
}

func TestReaderTrailingBytesUnchecked(t *testing.T) {
	// Valkey skips the two bytes after a bulk without looking at them.
	cmds, err := parseAll(t, "*1\r\n$4\r\nPINGxx*1\rX$4\r\nPING\r\n", false)
	if err != "" || len(cmds) != 2 {
		t.Fatalf("got %v %q", cmds, err)
	}
}

func TestReaderInline(t *testing.T) {
	cases := []struct{ in, want string }{
		{"PING\r\n", `"PING"`},
		{"PING\n", `"PING"`},
		{`HSET h f "hello world"` + "\r\n", `"HSET" "h" "f" "hello world"`},
		{`HSET h g 'single quoted'` + "\r\n", `"HSET" "h" "g" "single quoted"`},
		{`HSET h e "a\x41\n"` + "\r\n", `"HSET" "h" "e" "aA\n"`},
		{`SET k "\r\t\b\a\"\\\q\xZZ"` + "\r\n", `"SET" "k" "\r\t\b\a\"\\qxZZ"`},
		{`SET k 'it\'s \n'` + "\r\n", `"SET" "k" "it's \\n"`},
		{`SET k ab"c d"` + "\r\n", `"SET" "k" "abc d"`},
		{`SET k ""` + "\r\n", `"SET" "k" ""`},
		{"  SET\t k\x0bv  \r\n", `"SET" "k\vv"`},
		{"SET k a\rb\r\n", `"SET" "k" "a" "b"`},
		{"+PING\r\n", `"+PING"`},
	}
	for _, c := range cases {
		cmds, err := parseAll(t, c.in, false)
		if err != "" || len(cmds) != 1 || cmds[0] != c.want {
			t.Errorf("%q: got %v %q, want %s", c.in, cmds, err, c.want)
		}
	}
}

func TestReaderErrors(t *testing.T) {
	big := strings.Repeat("a", MaxInline+1)
	cases := []struct {
		in     string
		unauth bool
		want   string
	}{
		{"\"abc\r\n", false, "ERR Protocol error: unbalanced quotes in request"},
		{"SET \"a\"b\r\n", false, "ERR Protocol error: unbalanced quotes in request"},
		{"SET 'a'b\r\n", false, "ERR Protocol error: unbalanced quotes in request"},
		{"SET 'ab\r\n", false, "ERR Protocol error: unbalanced quotes in request"},
		{"*x\r\n", false, "ERR Protocol error: invalid multibulk length"},
		{"*2147483648\r\n", false, "ERR Protocol error: invalid multibulk length"},
		{"*01\r\n", false, "ERR Protocol error: invalid multibulk length"},
		{"*1\r\nx\r\n", false, "ERR Protocol error: expected '$', got 'x'"},
		{"*1\r\n$x\r\n", false, "ERR Protocol error: invalid bulk length"},
		{"*1\r\n$-1\r\n", false, "ERR Protocol error: invalid bulk length"},
		{"*1\r\n$536870913\r\n", false, "ERR Protocol error: invalid bulk length"},
		{"*11\r\n", true, "ERR Protocol error: unauthenticated multibulk length"},
		{"*1\r\n$16385\r\n", true, "ERR Protocol error: unauthenticated bulk length"},
		{big, false, "ERR Protocol error: too big inline request"},
		{"*" + big, false, "ERR Protocol error: too big mbulk count string"},
		{"*1\r\n$" + big, false, "ERR Protocol error: too big bulk count string"},
		// A NUL ends Valkey's strchr: the line never ends (protocol.tcl's
		// desync regression tests send these, then lines of "A"s).
		{"\x00" + strings.Repeat("A\n", MaxInline/2+1), false, "ERR Protocol error: too big inline request"},
		{"*\x00" + strings.Repeat("A\r\n", MaxInline/3+1), false, "ERR Protocol error: too big mbulk count string"},
		{"$\x00" + strings.Repeat("A\n", MaxInline/2+1), false, "ERR Protocol error: too big inline request"},
	}
	for _, c := range cases {
		cmds, err := parseAll(t, c.in, c.unauth)
		if err != c.want || len(cmds) != 0 {
			t.Errorf("%.40q: got %v %q, want %q", c.in, cmds, err, c.want)
		}
	}
	// A NUL before the line end: Valkey waits for more.
	for _, in := range []string{"SET \"a\x00\"\r\n", "*1\r\n\x00\r\n", "PING\x00\r\n"} {
		if cmds, err := parseAll(t, in, false); len(cmds) != 0 || err != "" {
			t.Errorf("%q: got %v %q, want nothing yet", in, cmds, err)
		}
	}
	// Limits that are not exceeded.
	if _, err := parseAll(t, "*10\r\n", true); err != "" {
		t.Errorf("*10 unauth: %s", err)
	}
	if _, err := parseAll(t, "*1\r\n$16384\r\n", true); err != "" {
		t.Errorf("$16384 unauth: %s", err)
	}
	if _, err := parseAll(t, "*1\r\n$536870912\r\n", false); err != "" {
		t.Errorf("$512MiB: %s", err)
	}
}

func TestReaderMaxBulkLen(t *testing.T) {
	r := Reader{MaxBulkLen: 10}
	r.Write([]byte("*1\r\n$10\r\n0123456789\r\n*1\r\n$11\r\n"))
	cmds, err := r.Parse(0, false)
	if len(cmds) != 1 || errText(err) != "ERR Protocol error: invalid bulk length" {
		t.Fatalf("got %v %v", render(cmds), err)
	}
}

func TestReaderCommandsBeforeError(t *testing.T) {
	cmds, err := parseAll(t, "PING\r\n*1\r\n$4\r\nPING\r\n*1\r\nfoo\r\nPING\r\n", false)
	if len(cmds) != 2 || err != "ERR Protocol error: expected '$', got 'f'" {
		t.Fatalf("got %v %q", cmds, err)
	}
}

func TestReaderMax(t *testing.T) {
	var r Reader
	r.Write([]byte("PING\r\n*1\r\n$4\r\nECHO\r\nQUIT\r\n"))
	var got []string
	for {
		cmds, err := r.Parse(1, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(cmds) == 0 {
			break
		}
		if len(cmds) != 1 {
			t.Fatalf("max 1 gave %d", len(cmds))
		}
		got = append(got, render(cmds)...)
	}
	if strings.Join(got, ",") != `"PING","ECHO","QUIT"` {
		t.Fatalf("got %v", got)
	}
}

// TestReaderSplitEverywhere feeds a mixed pipeline one byte at a time and
// split in two at every boundary: the commands are always the same.
func TestReaderSplitEverywhere(t *testing.T) {
	in := "*3\r\n$4\r\nHSET\r\n$1\r\nh\r\n$0\r\n\r\n" + `HSET h f "a\x41 b"` + "\r\n*0\r\n\r\n" +
		"*2\r\n$4\r\nECHO\r\n$5\r\n\r\n*$\n\r\nPING\n"
	want, werr := parseAll(t, in, false)
	if werr != "" || len(want) != 4 {
		t.Fatalf("whole: %v %q", want, werr)
	}
	for cut := 0; cut <= len(in); cut++ {
		var r Reader
		var got []string
		r.Write([]byte(in[:cut]))
		cmds, err := r.Parse(0, false)
		got = append(got, render(cmds)...)
		r.Write([]byte(in[cut:]))
		cmds, err2 := r.Parse(0, false)
		got = append(got, render(cmds)...)
		if err != nil || err2 != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("cut %d: %v %v %v", cut, got, err, err2)
		}
	}
	var r Reader
	var got []string
	for i := 0; i < len(in); i++ {
		r.Write([]byte{in[i]})
		cmds, err := r.Parse(0, false)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, render(cmds)...)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("bytewise: %v", got)
	}
}

// TestReaderArgsSurviveReuse checks that argument bytes handed out are not
// overwritten by later reads (handlers may keep them).
// TestReaderFrameOfManyChunks: a frame longer than one argv chunk, split
// at every chunk boundary and beyond, comes out whole and in order.
func TestReaderFrameOfManyChunks(t *testing.T) {
	for _, n := range []int{argChunk - 1, argChunk, argChunk + 1, 3*argChunk + 7} {
		var b []byte
		b = fmt.Appendf(b, "*%d\r\n", n)
		for i := range n {
			s := fmt.Sprint(i)
			b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(s), s)
		}
		var r Reader
		r.Write(b[:len(b)/2])
		cmds, _ := r.Parse(0, false)
		if len(cmds) != 0 {
			t.Fatal("early command")
		}
		r.Write(b[len(b)/2:])
		cmds, err := r.Parse(0, false)
		if err != nil || len(cmds) != 1 || len(cmds[0]) != n || cap(cmds[0]) != n {
			t.Fatalf("%d arguments: %d commands, %v", n, len(cmds), err)
		}
		for i, a := range cmds[0] {
			if string(a) != fmt.Sprint(i) {
				t.Fatalf("%d arguments: argument %d is %q", n, i, a)
			}
		}
		if r.Pending() != 0 {
			t.Fatalf("pending %d after the frame", r.Pending())
		}
	}
}

func TestReaderArgsSurviveReuse(t *testing.T) {
	var r Reader
	r.Write([]byte("*2\r\n$4\r\nECHO\r\n$3\r\nabc\r\n"))
	cmds, _ := r.Parse(0, false)
	kept := cmds[0][1]
	for i := 0; i < 100; i++ {
		r.Write([]byte("*2\r\n$4\r\nECHO\r\n$3\r\nxyz\r\n"))
		r.Parse(0, false)
	}
	if string(kept) != "abc" {
		t.Fatalf("kept arg changed to %q", kept)
	}
}

// TestReaderBigBulkGrowsAsBytesArrive: a header announcing 512 MiB
// reserves 64 KiB; the bulk's buffer then doubles with the bytes received
// (at most twice them), and the argument handed out is that buffer (no
// copy).
func TestReaderBigBulkGrowsAsBytesArrive(t *testing.T) {
	var r Reader
	r.Write([]byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$536870912\r\n"))
	if cmds, err := r.Parse(0, false); len(cmds) != 0 || err != nil {
		t.Fatal("early command")
	}
	if p := r.Pending(); p > bigFirst+2*ArgvHeaderBytes*3+16 {
		t.Fatalf("a 512 MiB header holds %d bytes", p)
	}
	if sp := r.Space(); len(sp) > bigFirst {
		t.Fatalf("space %d for a header alone", len(sp))
	}
	chunk := bytes.Repeat([]byte("x"), 100_000)
	for received := 0; received < 5<<20; received += len(chunk) {
		r.Write(chunk)
		if cmds, _ := r.Parse(0, false); len(cmds) != 0 {
			t.Fatal("early command")
		}
		if p, lim := r.Pending(), int64(2*(received+len(chunk))+bigFirst+1024); p > lim {
			t.Fatalf("after %d bytes: pending %d > %d", received+len(chunk), p, lim)
		}
	}

	var r2 Reader
	payload := bytes.Repeat([]byte("y"), 3<<20)
	r2.Write([]byte(fmt.Sprintf("*2\r\n$4\r\nECHO\r\n$%d\r\n", len(payload))))
	r2.Parse(0, false)
	r2.Write(payload[:1000])
	r2.Parse(0, false)
	r2.Write(payload[1000:])
	r2.Write([]byte("\r\n*1\r\n$4\r\nPING\r\n"))
	cmds, err := r2.Parse(0, false)
	if err != nil || len(cmds) != 2 || !bytes.Equal(cmds[0][1], payload) || string(cmds[1][0]) != "PING" {
		t.Fatalf("big bulk lost: %d commands, %v", len(cmds), err)
	}
	if r2.Buffered() != 0 || r2.Pending() != 0 {
		t.Fatalf("buffered %d pending %d", r2.Buffered(), r2.Pending())
	}
}

// allocated runs f and returns the bytes it allocated.
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// TestReaderAllocationFollowsBytes: what a reader allocates is bounded by
// the bytes it received, whatever the lengths and counts announced: the
// SET of 512 MiB announced by 40 bytes, and *2147483647 followed by empty
// arguments (each costs its 24-byte argv slot; Valkey about 32 plus its
// argv's doubling).
func TestReaderAllocationFollowsBytes(t *testing.T) {
	header := []byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$536870912\r\n")
	if n := allocated(func() {
		for range 16 {
			var r Reader
			r.Write(header)
			r.Parse(0, false)
		}
	}); n > 16*128<<10 {
		t.Fatalf("16 readers of a 512 MiB header allocated %d bytes", n)
	}

	const args = 200_000
	empty := bytes.Repeat([]byte("$0\r\n\r\n"), 1000)
	var r Reader
	n := allocated(func() {
		r.Write([]byte("*2147483647\r\n"))
		for range args / 1000 {
			r.Write(empty)
			if cmds, err := r.Parse(0, false); len(cmds) != 0 || err != nil {
				t.Fatal("early command")
			}
		}
	})
	if per := float64(n) / args; per > 2*ArgvHeaderBytes {
		t.Fatalf("%.1f bytes allocated per empty argument", per)
	}
	if per := float64(r.Pending()) / args; per < ArgvHeaderBytes || per > ArgvHeaderBytes+1 {
		t.Fatalf("pending %.1f bytes per empty argument", per)
	}
	if r.Buffered() != 0 {
		t.Fatalf("parsed bytes kept: %d", r.Buffered())
	}
}

// TestReaderBigBulkSplitEverywhere: a frame with a big bulk and commands
// around it parses the same whatever the read boundaries.
func TestReaderBigBulkSplitEverywhere(t *testing.T) {
	payload := make([]byte, BigArg+3)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	in := "PING\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$" + fmt.Sprint(len(payload)) + "\r\n" + string(payload) + "\r\n*1\r\n$4\r\nPING\r\n"
	want, werr := parseAll(t, in, false)
	if werr != "" || len(want) != 3 {
		t.Fatalf("whole: %d %q", len(want), werr)
	}
	for cut := 0; cut <= len(in); cut += 1009 {
		for _, cut2 := range []int{cut, min(cut+5, len(in)), min(cut+BigArg/2, len(in))} {
			var r Reader
			var got []string
			for _, part := range []string{in[:cut], in[cut:cut2], in[cut2:]} {
				r.Write([]byte(part))
				cmds, err := r.Parse(0, false)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, render(cmds)...)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("cuts %d %d: %d commands", cut, cut2, len(got))
			}
		}
	}
}

// TestReaderBytesPerEmptyArgument: a frame of empty arguments holds its
// argv slots only, 24 bytes per argument plus less than one chunk of 1024
// slots; -v prints the figures (docs/operations.md).
func TestReaderBytesPerEmptyArgument(t *testing.T) {
	for _, args := range []int{1000, 100_000, 1_000_000} {
		var r Reader
		r.Write([]byte("*2147483647\r\n"))
		r.Write(bytes.Repeat([]byte("$0\r\n\r\n"), args))
		r.Parse(0, false)
		per := float64(r.Pending()) / float64(args)
		t.Logf("%d empty arguments: pending %.1f bytes per argument", args, per)
		if per < ArgvHeaderBytes || per > ArgvHeaderBytes+1 {
			t.Fatalf("%d empty arguments: %.1f bytes each", args, per)
		}
	}
}

// TestReaderBigArgumentsNotPinned: a big argument the caller dropped is
// garbage, even while the small commands of its batch use the header
// arena (an argv cut from the arena would keep it alive).
func TestReaderBigArgumentsNotPinned(t *testing.T) {
	var r Reader
	payload := bytes.Repeat([]byte("z"), 1<<20)
	frame := append([]byte("*3\r\n$4\r\nHSET\r\n$1\r\nk\r\n$1048576\r\n"), payload...)
	frame = append(frame, "\r\n*1\r\n$4\r\nPING\r\n"...)
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	for range 20 {
		r.Write(frame)
		cmds, err := r.Parse(0, false)
		if err != nil || len(cmds) != 2 || len(cmds[0][2]) != 1<<20 {
			t.Fatal("frame lost")
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	if grown := int64(ms.HeapAlloc) - int64(base); grown > 4<<20 {
		t.Fatalf("20 dropped 1 MiB arguments left %d MiB live", grown>>20)
	}
	runtime.KeepAlive(&r)
}

// TestReaderMaxBulkLenHuge: with proto-max-bulk-len at its maximum
// (LONG_MAX, 9223372036854775807), a bulk header near 2^63 must not
// overflow the reader's length-plus-CRLF arithmetic: the bulk waits for
// bytes that never come (the query buffer limit ends such a client), and
// a normal frame still parses.
func TestReaderMaxBulkLenHuge(t *testing.T) {
	for _, n := range []string{"9223372036854775807", "9223372036854775806", "9223372036854775805", "4611686018427387904"} {
		r := Reader{MaxBulkLen: math.MaxInt64}
		r.Write([]byte("*1\r\n$4\r\nPING\r\n*1\r\n$" + n + "\r\nabc"))
		cmds, err := r.Parse(0, false)
		if err != nil || len(cmds) != 1 || string(cmds[0][0]) != "PING" {
			t.Fatalf("$%s: got %v %v", n, render(cmds), err)
		}
		for range 3 { // the big bulk's buffer grows as bytes arrive
			sp := r.Space()
			if len(sp) == 0 {
				t.Fatalf("$%s: no space", n)
			}
			r.Commit(copy(sp, bytes.Repeat([]byte("x"), len(sp))))
			cmds, err = r.Parse(0, false)
			if err != nil || len(cmds) != 0 {
				t.Fatalf("$%s: got %v %v", n, render(cmds), err)
			}
		}
		if p := r.Pending(); p < 3*bigFirst {
			t.Fatalf("$%s: pending %d", n, p)
		}
	}
}

// TestReaderRecycleReusesArgvs: after Recycle the next batch's argvs are
// cut from the same header arena (the released ones are cleared); without
// it, and while a frame is half received, they are not; argument bytes are
// never reused either way.
func TestReaderRecycleReusesArgvs(t *testing.T) {
	var r Reader
	r.Write([]byte("*2\r\n$4\r\nECHO\r\n$3\r\nabc\r\n*1\r\n$4\r\nPING\r\n"))
	first, _ := r.Parse(0, false)
	if got := render(first); len(got) != 2 {
		t.Fatalf("first batch: %v", got)
	}
	a1 := first[0]
	arg := a1[1]

	// No Recycle: fresh argvs, the old one intact.
	r.Write([]byte("*2\r\n$4\r\nECHO\r\n$3\r\ndef\r\n"))
	second, _ := r.Parse(0, false)
	a2 := second[0]
	if &a2[0] == &a1[0] {
		t.Fatal("argv reused without Recycle")
	}
	if string(a1[0]) != "ECHO" || string(a1[1]) != "abc" {
		t.Fatalf("old argv changed: %q", a1)
	}

	// Recycle, then an empty Parse (no bytes yet), then a batch: reused.
	r.Recycle()
	if cmds, _ := r.Parse(0, false); len(cmds) != 0 {
		t.Fatalf("empty parse gave %v", render(cmds))
	}
	r.Write([]byte("*3\r\n$4\r\nHSET\r\n$1\r\nh\r\n$1\r\nf\r\n"))
	third, _ := r.Parse(0, false)
	if got, want := render(third), []string{`"HSET" "h" "f"`}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("third batch %v, want %v", got, want)
	}
	if &third[0][0] != &a2[0] {
		t.Fatal("argv not reused after Recycle")
	}
	// A smaller batch after Recycle: the released slots it does not take
	// are cleared, so they pin no argument bytes.
	h3 := third[0]
	r.Recycle()
	r.Write([]byte("*1\r\n$4\r\nPING\r\n"))
	fifth, _ := r.Parse(0, false)
	if &fifth[0][0] != &a2[0] {
		t.Fatal("argv not reused after the second Recycle")
	}
	if string(h3[0]) != "PING" || h3[1] != nil || h3[2] != nil {
		t.Fatalf("released argv slots not cleared: %q", h3)
	}
	if string(arg) != "abc" {
		t.Fatalf("argument bytes reused: %q", arg)
	}

	// A frame half received when Recycle is called keeps its argv.
	r.Recycle()
	r.Write([]byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n"))
	if cmds, _ := r.Parse(0, false); len(cmds) != 0 {
		t.Fatalf("half frame gave %v", render(cmds))
	}
	r.Recycle() // the server calls it after every batch that kept nothing
	r.Write([]byte("$5\r\nvalue\r\n*1\r\n$4\r\nPING\r\n"))
	fourth, _ := r.Parse(0, false)
	if got, want := render(fourth), []string{`"SET" "k" "value"`, `"PING"`}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("fourth batch %v, want %v", got, want)
	}
}

// TestReaderRecycleKeepsHalfFrameSplitEverywhere: a pipeline cut at every
// byte, with Recycle after every Parse (as the server does after a batch
// that kept nothing), parses to the same commands.
func TestReaderRecycleKeepsHalfFrameSplitEverywhere(t *testing.T) {
	in := "*3\r\n$4\r\nHSET\r\n$1\r\nh\r\n$2\r\nfv\r\nPING a b\r\n*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n*1\r\n$4\r\nPING\r\n"
	want := fmt.Sprint([]string{`"HSET" "h" "fv"`, `"PING" "a" "b"`, `"GET" "key"`, `"PING"`})
	for cut := 1; cut < len(in); cut++ {
		var r Reader
		var got []string
		for _, part := range []string{in[:cut], in[cut:]} {
			r.Write([]byte(part))
			cmds, err := r.Parse(0, false)
			if err != nil {
				t.Fatalf("cut %d: %v", cut, err)
			}
			got = append(got, render(cmds)...) // copied before the argvs are released
			r.Recycle()
		}
		if fmt.Sprint(got) != want {
			t.Fatalf("cut %d: %v, want %s", cut, got, want)
		}
	}
}

// TestCIndexIsStrchr: cIndex answers as C's strchr bounded by the slice
// (the first c, or -1 when a NUL byte or the end comes first), on both
// sides of its 32-byte short-line loop.
func TestCIndexIsStrchr(t *testing.T) {
	ref := func(b []byte, c byte) int {
		for i, ch := range b {
			if ch == c {
				return i
			}
			if ch == 0 {
				return -1
			}
		}
		return -1
	}
	alphabet := []byte{'a', '\r', '\n', 0, '$'}
	seed := uint32(1)
	for n := 0; n < 80; n++ {
		for trial := 0; trial < 200; trial++ {
			b := make([]byte, n)
			for i := range b {
				seed = seed*1664525 + 1013904223
				// Mostly plain bytes, so the target often lies far in.
				if seed>>24 < 230 {
					b[i] = 'x'
				} else {
					b[i] = alphabet[(seed>>8)%uint32(len(alphabet))]
				}
			}
			for _, c := range []byte{'\r', '\n'} {
				if got, want := cIndex(b, c), ref(b, c); got != want {
					t.Fatalf("cIndex(%q, %q) = %d, want %d", b, c, got, want)
				}
			}
		}
	}
}

// TestShortHeaderMatchesGeneral: wherever shortHeader reads a header line
// (the fast path of one or two digits), the general path (the search for
// \r, then num.ParseInt) reads the same line end and count: every line of
// two to four bytes after the lead over digits, signs, CR, LF, NUL and a
// letter, both leads, with and without a byte after it.
func TestShortHeaderMatchesGeneral(t *testing.T) {
	alpha := []byte("0123456789\r\n-+\x00a")
	fast := 0
	for _, lead := range []byte{'$', '*'} {
		for _, c1 := range alpha {
			for _, c2 := range alpha {
				for _, c3 := range alpha {
					for _, c4 := range alpha {
						for n := 3; n <= 5; n++ {
							b := []byte{lead, c1, c2, c3, c4}[:n]
							nl, ll, ok := shortHeader(b, lead)
							if !ok {
								continue
							}
							fast++
							gnl := cIndex(b, '\r')
							if gnl < 0 || gnl > len(b)-2 {
								t.Fatalf("%q: shortHeader read a line the general path waits on", b)
							}
							gll, gok := num.ParseInt(b[1:gnl])
							if !gok || gnl != nl || gll != ll {
								t.Fatalf("%q: shortHeader (%d, %d), general (%d, %d, %v)", b, nl, ll, gnl, gll, gok)
							}
						}
					}
				}
			}
		}
	}
	// Per lead: 4 bytes, a digit then CR then any byte (repeated by the
	// unused c4 loop); 5 bytes, that with any fifth byte, or two digits
	// without a leading zero then CR then any byte.
	a := len(alpha)
	if want := 2 * (10*a*a + 10*a*a + 9*10*a); fast != want {
		t.Fatalf("the fast path read %d lines, want %d", fast, want)
	}
}

// TestFirstFrameArenaExact: the byte arena of a batch of one frame is its
// arguments' exact size (the frame's header line and each argument's
// framing are not counted in the first chunk's size), and a batch of
// several frames still cuts every argument from one arena.
func TestFirstFrameArenaExact(t *testing.T) {
	for _, c := range []struct {
		in   string
		args int // bytes of all arguments
		cap  int // the arena's capacity asked for (before the runtime's rounding)
	}{
		{"*2\r\n$7\r\nZPOPMIN\r\n$6\r\nmyzset\r\n", 13, 13},
		// "$20" is one byte longer than the 6 counted per argument.
		{"*4\r\n$4\r\nZADD\r\n$6\r\nmyzset\r\n$1\r\n0\r\n$20\r\nelement:__rand_int__\r\n", 31, 32},
		{"*1\r\n$0\r\n\r\n", 0, 0},
		// Two frames: the first frame's framing (4 + 2*6 bytes) is taken
		// off the 58 bytes buffered, which still hold all 26 argument bytes.
		{"*2\r\n$7\r\nZPOPMIN\r\n$6\r\nmyzset\r\n*2\r\n$7\r\nZPOPMIN\r\n$6\r\nmyzset\r\n", 26, 42},
	} {
		var r Reader
		r.Write([]byte(c.in))
		cmds, err := r.Parse(0, false)
		if err != nil || len(cmds) == 0 {
			t.Fatalf("%q: %d commands, %v", c.in, len(cmds), err)
		}
		n := 0
		for _, argv := range cmds {
			for _, a := range argv {
				n += len(a)
			}
		}
		want := cap(make([]byte, 0, c.cap)) // as the runtime rounds it
		if n != c.args || cap(r.arena) != want || len(r.arena) != c.args {
			t.Errorf("%q: arguments %d bytes, arena %d of %d, want %d of %d", c.in, n, len(r.arena), cap(r.arena), c.args, want)
		}
	}
}
