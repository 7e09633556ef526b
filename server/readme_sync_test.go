package server_test

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeEmbeddingSnippet keeps the README's embedding example and
// readme_example_test.go identical (after the package clause, which the
// README spells as a user's package): the README shows a test that go test
// runs here, so its assertions hold.
func TestReadmeEmbeddingSnippet(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("readme_example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	const open = "```go\npackage myservice_test\n"
	text := string(readme)
	i := strings.Index(text, open)
	if i < 0 {
		t.Fatalf("README has no Go block starting with %q", "package myservice_test")
	}
	block := text[i+len(open):]
	j := strings.Index(block, "```\n")
	if j < 0 {
		t.Fatal("the README's embedding block is not closed")
	}
	block = block[:j]
	body := string(src)
	if k := strings.IndexByte(body, '\n'); k >= 0 && strings.HasPrefix(body, "package server_test") {
		body = body[k+1:]
	} else {
		t.Fatal("readme_example_test.go must start with `package server_test`")
	}
	if block != body {
		t.Errorf("the README's embedding example differs from server/readme_example_test.go; copy the file (after its package line) into the README\nREADME:\n%s\nfile:\n%s", block, body)
	}
}
