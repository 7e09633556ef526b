package server

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTranscripts replays every golden transcript recorded from Valkey
// 8.0.1 (testdata/valkey, docs/compat.md §6.1) against emqd, each file on a
// fresh server (wall clock, default configuration) and one connection,
// comparing each reply as the line says: exact bytes, unordered
// (aggregates as multisets), or shape.
func TestTranscripts(t *testing.T) {
	files, err := filepath.Glob("testdata/valkey/*.jsonl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".jsonl"), func(t *testing.T) {
			s := startServer(t, nil, nil)
			replayTranscript(t, s, f)
		})
	}
}

type transcriptLine struct {
	Send    []string `json:"send"`
	Raw     *string  `json:"raw"`
	Reply   string   `json:"reply"`
	Compare string   `json:"compare"`
}

// latin1 turns a JSON string holding bytes as code points 0-255 back into
// those bytes.
func latin1(s string) string {
	b := make([]byte, 0, len(s))
	for _, r := range s {
		b = append(b, byte(r))
	}
	return string(b)
}

func replayTranscript(t *testing.T, s *Server, path string) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	admin := dial(t, s)
	if r := admin.Do("FLUSHALL"); r != "+OK\r\n" {
		t.Fatalf("FLUSHALL: %q", r)
	}
	c := dial(t, s)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	n, failed := 0, 0
	for sc.Scan() {
		n++
		var l transcriptLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %d: %v", n, err)
		}
		want := latin1(l.Reply)
		var label string
		if l.Raw != nil {
			raw := latin1(*l.Raw)
			label = "raw " + quoteShort(raw)
			c.Write([]byte(raw))
		} else {
			args := make([]string, len(l.Send))
			for i, a := range l.Send {
				args[i] = latin1(a)
			}
			label = quoteShort(strings.Join(args, " "))
			c.Write(encode(args...))
		}
		frames := countFrames(t, want)
		var got strings.Builder
		for i := 0; i < frames; i++ {
			fr, err := c.ReadTimeout(5 * time.Second)
			if err != nil {
				t.Fatalf("line %d %s: reading reply: %v (got so far %q)", n, label, err, got.String())
			}
			got.WriteString(fr)
		}
		if !sameReply(t, l.Compare, got.String(), want) {
			failed++
			t.Errorf("line %d %s [%s]:\n got  %q\n want %q", n, label, l.Compare, got.String(), want)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d lines, %d failed", filepath.Base(path), n, failed)
}

func quoteShort(s string) string {
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return strings.TrimSpace(strings.ReplaceAll(strings.ReplaceAll(s, "\r", "\\r"), "\n", "\\n"))
}

// sameReply compares per mode (docs/compat.md §6.1).
func sameReply(t *testing.T, mode, got, want string) bool {
	switch mode {
	case "exact", "":
		return got == want
	}
	g, err1 := parseFrames(got)
	w, err2 := parseFrames(want)
	if err1 != nil || err2 != nil || len(g) != len(w) {
		return false
	}
	for i := range g {
		switch mode {
		case "unordered":
			if g[i].canon() != w[i].canon() {
				return false
			}
		case "shape":
			if g[i].shape() != w[i].shape() {
				return false
			}
		default:
			t.Fatalf("unknown compare mode %q", mode)
		}
	}
	return true
}
