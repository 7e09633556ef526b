package resp

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
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

func TestReaderBigBulkGrowsOnce(t *testing.T) {
	var r Reader
	payload := bytes.Repeat([]byte("x"), 3<<20)
	r.Write([]byte(fmt.Sprintf("*2\r\n$4\r\nECHO\r\n$%d\r\n", len(payload))))
	if cmds, err := r.Parse(0, false); len(cmds) != 0 || err != nil {
		t.Fatal("early command")
	}
	if sp := r.Space(); len(sp) < len(payload)+2 {
		t.Fatalf("space %d for a %d-byte bulk", len(sp), len(payload))
	}
	r.Write(payload)
	r.Write([]byte("\r\n"))
	cmds, err := r.Parse(0, false)
	if err != nil || len(cmds) != 1 || !bytes.Equal(cmds[0][1], payload) {
		t.Fatal("big bulk lost")
	}
	if r.Buffered() != 0 {
		t.Fatalf("buffered %d", r.Buffered())
	}
}
