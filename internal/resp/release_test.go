package resp

import (
	"strings"
	"testing"
)

// Release gives the read buffer back only when every byte was parsed and
// no big bulk is being received; the commands already returned keep their
// bytes after the buffer is reused by another reader (they live in the
// Parse call's arena), and a reader that released reads on as before.
func TestReleaseKeepsParsedCommands(t *testing.T) {
	var r Reader
	r.Write([]byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nvalue\r\n*1\r\n$4\r\nPI"))
	cmds, err := r.Parse(0, false)
	if err != nil || len(cmds) != 1 {
		t.Fatalf("%v %v", render(cmds), err)
	}
	set := cmds[0] // the result slice itself is reused by the next Parse
	if r.Release() {
		t.Fatal("released with half a command buffered")
	}
	r.Write([]byte("NG\r\n"))
	more, err := r.Parse(0, false)
	if err != nil || len(more) != 1 {
		t.Fatalf("%v %v", render(more), err)
	}
	ping := more[0]
	if !r.Release() || cap(r.buf) != 0 {
		t.Fatalf("not released: cap %d", cap(r.buf))
	}
	// Other readers take pooled buffers and scribble over them.
	for i := 0; i < 8; i++ {
		var o Reader
		o.Write([]byte(strings.Repeat("x", readChunk)))
		o.pos = len(o.buf)
		o.Release()
	}
	if got := render([][][]byte{set}); strings.Join(got, "|") != `"SET" "k" "value"` {
		t.Fatalf("parsed command changed after Release: %v", got)
	}
	if got := render([][][]byte{ping}); strings.Join(got, "|") != `"PING"` {
		t.Fatalf("%v", got)
	}
	r.Write([]byte("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"))
	again, err := r.Parse(0, false)
	if err != nil || strings.Join(render(again), "|") != `"GET" "k"` {
		t.Fatalf("after Release: %v %v", render(again), err)
	}
}

// A big bulk being received is never released, even with nothing else
// buffered.
func TestReleaseHoldsBigBulk(t *testing.T) {
	var r Reader
	r.Write([]byte("*2\r\n$3\r\nSET\r\n$40000\r\n" + strings.Repeat("a", 1000)))
	if cmds, err := r.Parse(0, false); err != nil || len(cmds) != 0 {
		t.Fatalf("%v %v", render(cmds), err)
	}
	if r.Release() {
		t.Fatal("released while a big bulk is being received")
	}
	r.Write([]byte(strings.Repeat("a", 39000) + "\r\n"))
	cmds, err := r.Parse(0, false)
	if err != nil || len(cmds) != 1 || len(cmds[0][1]) != 40000 {
		t.Fatalf("%d commands, %v", len(cmds), err)
	}
}
