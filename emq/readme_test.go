package emq_test

import (
	"os"
	"strings"
	"testing"
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
