package testsupport

import (
	"bufio"
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeTB records whether the gate skipped or failed; both stop the caller
// as testing.T's do (a panic the test recovers).
type fakeTB struct{ skipped, failed string }

type stopped struct{}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
	panic(stopped{})
}
func (f *fakeTB) Skipf(format string, args ...any) {
	f.skipped = fmt.Sprintf(format, args...)
	panic(stopped{})
}

// Missing skips, and fails only under EMQD_REQUIRE_REFERENCE=1.
func TestMissingGate(t *testing.T) {
	for _, c := range []struct{ env, skipped, failed string }{
		{"", "x not found", ""},
		{"0", "x not found", ""},
		{"1", "", "x not found (EMQD_REQUIRE_REFERENCE=1)"},
	} {
		t.Setenv(RequireEnv, c.env)
		f := &fakeTB{}
		func() {
			defer func() {
				if _, ok := recover().(stopped); !ok {
					t.Errorf("env %q: Missing returned without skipping or failing", c.env)
				}
			}()
			Missing(f, "x not found")
		}()
		if f.skipped != c.skipped || f.failed != c.failed {
			t.Errorf("env %q: skipped %q failed %q, want %q %q", c.env, f.skipped, f.failed, c.skipped, c.failed)
		}
	}
}

// ReadFrame reads exactly one frame of every RESP2/RESP3 type, leaving the
// next one; Encode is a multibulk.
func TestReadFrame(t *testing.T) {
	frames := []string{"+OK\r\n", "-ERR x\r\n", ":12\r\n", "$3\r\na\r\n\r\n", "$-1\r\n", "*2\r\n$1\r\na\r\n:1\r\n",
		"%1\r\n+k\r\n*1\r\n_\r\n", "~1\r\n,1.5\r\n", ">2\r\n+message\r\n#t\r\n", "*-1\r\n"}
	br := bufio.NewReader(strings.NewReader(strings.Join(frames, "")))
	for _, want := range frames {
		var out bytes.Buffer
		if err := ReadFrame(br, &out); err != nil || out.String() != want {
			t.Fatalf("frame %q: got %q, %v", want, out.String(), err)
		}
	}
	var out bytes.Buffer
	if err := ReadFrame(bufio.NewReader(strings.NewReader("?x\r\n")), &out); err == nil {
		t.Fatal("a bad frame type was accepted")
	}
	if got := string(Encode("SET", "k", "")); got != "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n" {
		t.Fatalf("Encode %q", got)
	}
}

// Launch reports a process that exits before it answers, and kills one
// that is not ready in time (the whole group: the sleep behind sh -c).
func TestLaunchFailures(t *testing.T) {
	addr := "127.0.0.1:" + FreePort(t)
	log := filepath.Join(t.TempDir(), "log")
	_, err := Launch{Argv: []string{"sh", "-c", "echo booting; exit 3"}, Addr: addr, LogPath: log}.Start()
	if err == nil || !strings.Contains(err.Error(), "exited before answering PING") || !strings.Contains(err.Error(), "booting") {
		t.Fatalf("a process that exits at boot: %v", err)
	}
	start := time.Now()
	_, err = Launch{Argv: []string{"sh", "-c", "sleep 30; true"}, Addr: addr, Ready: 300 * time.Millisecond}.Start()
	if err == nil || !strings.Contains(err.Error(), "not ready after 300ms") {
		t.Fatalf("a process that never answers: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the unready process group was not killed: Start took %v", d)
	}
}

// The emqd binary through Launch behind a wrapper: ready on PING, Stop
// and Kill reach the server itself.
func TestLaunchEmqd(t *testing.T) {
	bin := BuildEmqd(t)
	port := FreePort(t)
	dir := t.TempDir() // emqd's default dir is ./data: never the package folder
	p, err := Launch{Argv: []string{"sh", "-c", "exec " + bin + " --port " + port + " --save '' --appendonly no --dir " + dir}, Addr: "127.0.0.1:" + port}.Start()
	if err != nil {
		t.Fatal(err)
	}
	if err := Ping(p.Addr); err != nil {
		t.Fatal(err)
	}
	if code := p.StopWithin(10 * time.Second); code != 0 {
		t.Fatalf("SIGTERM: exit code %d, want 0 (a clean shutdown)", code)
	}
	p = StartEmqd(t, bin, port, filepath.Join(dir, "log"), "--save", "", "--appendonly", "no", "--dir", dir)
	p.Kill()
	if ws, ok := p.Cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("Kill: %v, want killed by SIGKILL", p.Cmd.ProcessState)
	}
	if Ping(p.Addr) == nil {
		t.Fatal("something still answers after Kill")
	}
}
