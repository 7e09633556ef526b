package emq_test

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/emqd/emqd/server"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// TestReadmeWorker keeps the README's worker block identical to the lines
// between the README markers of example_test.go (less one tab of
// indentation), so the README's code is the code Example compiles and runs.
func TestReadmeWorker(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	const open = "```go\nc := emq.New("
	text := string(readme)
	i := strings.Index(text, open)
	if i < 0 {
		t.Fatalf("README has no Go block starting with %q", "c := emq.New(")
	}
	block := text[i+len("```go\n"):]
	j := strings.Index(block, "```\n")
	if j < 0 {
		t.Fatal("the README's worker block is not closed")
	}
	block = block[:j]

	body := string(src)
	b := strings.Index(body, "\t// README begin\n")
	e := strings.Index(body, "\t// README end\n")
	if b < 0 || e < b {
		t.Fatal("example_test.go has no README markers")
	}
	var want strings.Builder
	for _, line := range strings.SplitAfter(body[b+len("\t// README begin\n"):e], "\n") {
		want.WriteString(strings.TrimPrefix(line, "\t"))
	}
	if block != want.String() {
		t.Errorf("the README's worker block differs from example_test.go's README lines; copy them (one tab less)\nREADME:\n%s\nfile:\n%s", block, want.String())
	}
}

// TestReadmeMaintNotificationsOff: the README's options that turn go-redis's
// maintenance notifications off skip its endpoint detection (the DNS lookup
// of a host-name Addr in NewClient), which go-redis's defaults run; the
// client still works against emqd.
func TestReadmeMaintNotificationsOff(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"import \"github.com/redis/go-redis/v9/maintnotifications\"\n",
		"\tMaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},\n",
	} {
		if !strings.Contains(string(readme), line) {
			t.Fatalf("README lacks %q", line)
		}
	}
	s := server.StartTest(t, server.Options{})
	_, port, _ := net.SplitHostPort(s.Addr())
	addr := net.JoinHostPort("localhost", port)

	def := redis.NewClient(&redis.Options{Addr: addr})
	defer def.Close()
	if got := def.Options().MaintNotificationsConfig; got == nil || got.Mode != maintnotifications.ModeAuto || got.EndpointType == maintnotifications.EndpointTypeAuto {
		t.Fatalf("go-redis defaults: %+v (want auto mode and a detected endpoint type)", got)
	}

	rdb := redis.NewClient(&redis.Options{
		Addr:                     addr,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	defer rdb.Close()
	if got := rdb.Options().MaintNotificationsConfig; got.Mode != maintnotifications.ModeDisabled || got.EndpointType != maintnotifications.EndpointTypeAuto {
		t.Fatalf("disabled: %+v (want the endpoint type left undetected, auto)", got)
	}
	if got, err := rdb.Ping(context.Background()).Result(); err != nil || got != "PONG" {
		t.Fatalf("PING: %q %v", got, err)
	}
}
