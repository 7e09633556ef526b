package server

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAOFDirLocked: a second server appending in the directory of a
// running server's append-only file is refused at boot with a clear
// error, and CONFIG SET appendonly yes into it is refused with Valkey's
// text, writing nothing; the lock goes with the server that holds it
// (Close), and a boot refused for another reason leaves the directory
// unlocked (docs/durability.md §1.1.1).
func TestAOFDirLocked(t *testing.T) {
	dir := t.TempDir()
	a := durableFS(t, nil, dir, nil)
	must(t, rclient(t, a, 0), "SET", "k", "a")
	aofPath := filepath.Join(dir, "appendonly.aof")
	before, _ := os.ReadFile(aofPath)

	_, err := Start(Options{Config: map[string]string{"appendonly": "yes", "dir": dir, "port": "0"}})
	if err == nil || !strings.Contains(err.Error(), "two servers must not share one dir") || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second server on the same dir: %v", err)
	}
	// Without an AOF the second server runs, and cannot turn one on there.
	b, err := Start(Options{Config: map[string]string{"appendonly": "no", "dir": dir, "port": "0", "save": ""}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	cb := rclient(t, b, 0)
	if err := cb.Do(context.Background(), "CONFIG", "SET", "appendonly", "yes").Err(); err == nil ||
		err.Error() != "ERR CONFIG SET failed (possibly related to argument 'appendonly') - Unable to turn on AOF. Check server logs." {
		t.Fatalf("CONFIG SET appendonly yes into a locked dir: %v", err)
	}
	if v := must(t, cb, "CONFIG", "GET", "appendonly"); !strings.Contains(strings.Join(toStrings(v), " "), "no") {
		t.Fatalf("appendonly after the refusal: %v", v)
	}
	if after, _ := os.ReadFile(aofPath); string(after) != string(before) {
		t.Fatalf("the refusals wrote to the AOF: %d bytes before, %d after", len(before), len(after))
	}
	// Once the holder closes, the directory is free.
	stop(t, a)
	must(t, cb, "CONFIG", "SET", "appendonly", "yes")
	must(t, cb, "SET", "k", "b")
	stop(t, b)

	// A boot refused for damage releases the lock it took.
	os.WriteFile(aofPath, []byte("*1\r\n#garbage\r\n"), 0o644)
	os.RemoveAll(filepath.Join(dir, "dump.rdb"))
	if _, err := Start(Options{Config: map[string]string{"appendonly": "yes", "dir": dir, "port": "0"}}); err == nil {
		t.Fatal("a damaged AOF booted")
	}
	os.Remove(aofPath)
	c := durableFS(t, nil, dir, nil)
	stop(t, c)
}

// toStrings is a reply array's elements as strings.
func toStrings(v any) []string {
	arr, _ := v.([]any)
	out := make([]string, 0, len(arr))
	for _, x := range arr {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}
