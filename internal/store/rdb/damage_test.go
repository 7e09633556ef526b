package rdb

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/emqd/emqd/internal/store"
	"github.com/emqd/emqd/internal/valkeyref"
)

// valkeyLoadLog runs valkey-server on dir's dump.rdb, which it must refuse,
// and returns its log.
func valkeyLoadLog(t *testing.T, dir string) string {
	t.Helper()
	cmd := exec.Command(valkeyref.File(t, "valkey-server"), "--port", "0", "--unixsocket", filepath.Join(dir, "v.sock"), "--dir", dir, "--save", "", "--appendonly", "no")
	cmd.Dir = dir
	done := make(chan struct{})
	var out []byte
	go func() { out, _ = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("valkey-server did not refuse the file: %s", out)
	}
	return string(out)
}

func emqdFile(t *testing.T) []byte {
	st := fillStore(t, dataset())
	path := filepath.Join(t.TempDir(), "dump.rdb")
	writeFile(t, st, path, Options{Compress: true, Checksum: true})
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func load(b []byte) (int, error) {
	n := 0
	_, err := Load(bytes.NewReader(b), int64(len(b)), store.New(16), Limits{DBs: 16}, true, func(Key) error { n++; return nil })
	return n, err
}

// TestDamagedRDBRefused: a truncated file is refused with Valkey's short
// read text, a bit flipped in a value with Valkey's checksum text (the same
// expected and stored sums valkey-server 8.0.1 reports for that file), and
// bad magic and version with Valkey's texts; nothing is handed over from a
// refused file.
func TestDamagedRDBRefused(t *testing.T) {
	good := emqdFile(t)
	if n, err := load(good); err != nil || n != len(dataset()) {
		t.Fatalf("good file: %d keys, %v", n, err)
	}
	for cut := 0; cut < len(good); cut += 1 + cut/20 {
		_, err := load(good[:cut])
		if err == nil || !strings.HasPrefix(err.Error(), msgShortRead) && !strings.Contains(err.Error(), "Internal error in RDB") && cut >= 9 {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		if cut < 9 && (err == nil || !strings.HasPrefix(err.Error(), msgShortRead)) {
			t.Fatalf("cut at %d: %v", cut, err)
		}
	}
	// Valkey's text for a truncated file.
	dir := t.TempDir()
	cut := good[:len(good)*2/3]
	os.WriteFile(filepath.Join(dir, "dump.rdb"), cut, 0o644)
	_, ourErr := load(cut)
	vlog := valkeyLoadLog(t, dir)
	if ourErr == nil || !strings.Contains(vlog, msgShortRead) || !strings.HasPrefix(ourErr.Error(), msgShortRead) {
		t.Fatalf("truncated: emqd %v; valkey log:\n%s", ourErr, vlog)
	}

	// A flipped bit in the middle of a string value: the checksum.
	flipped := bytes.Clone(good)
	i := bytes.Index(flipped, []byte("long key"))
	flipped[i] ^= 0x01
	_, ourErr = load(flipped)
	if ourErr == nil || !strings.HasPrefix(ourErr.Error(), "Wrong RDB checksum expected: (") {
		t.Fatalf("bit flip: %v", ourErr)
	}
	dir = t.TempDir()
	os.WriteFile(filepath.Join(dir, "dump.rdb"), flipped, 0o644)
	vlog = valkeyLoadLog(t, dir)
	if !strings.Contains(vlog, ourErr.Error()) {
		t.Fatalf("bit flip: emqd %q not in valkey's log:\n%s", ourErr, vlog)
	}
	// rdbchecksum no skips the check, as Valkey's.
	if _, err := Load(bytes.NewReader(flipped), int64(len(flipped)), store.New(16), Limits{DBs: 16}, false, func(Key) error { return nil }); err != nil {
		t.Fatalf("rdbchecksum no: %v", err)
	}

	bad := bytes.Clone(good)
	copy(bad, "REDIX")
	if _, err := load(bad); err == nil || err.Error() != "Wrong signature trying to load DB from file" {
		t.Fatalf("magic: %v", err)
	}
	copy(bad, "REDIS0012")
	if _, err := load(bad); err == nil || err.Error() != "Can't handle RDB format version 12" {
		t.Fatalf("version: %v", err)
	}
	dir = t.TempDir()
	os.WriteFile(filepath.Join(dir, "dump.rdb"), bad, 0o644)
	if vlog := valkeyLoadLog(t, dir); !strings.Contains(vlog, "Can't handle RDB format version 12") {
		t.Fatalf("valkey: %s", vlog)
	}
}

// TestLackedTypeRefused: a Valkey file holding a list, a set or a stream
// is refused naming the key and its type, and no key is handed over.
func TestLackedTypeRefused(t *testing.T) {
	for _, tc := range []struct{ typ, cmd string }{
		{"list", "RPUSH"}, {"set", "SADD"}, {"stream", "XADD"},
	} {
		v := valkeyref.Start(t)
		fillValkey(t, v.Addr, dataset()[:5])
		args := []any{tc.cmd, "the:" + tc.typ}
		if tc.typ == "stream" {
			args = append(args, "*", "f", "v")
		} else {
			args = append(args, "a", "b")
		}
		rdo(t, v.Addr, args...)
		rdo(t, v.Addr, "SAVE")
		b, err := os.ReadFile(filepath.Join(v.Dir, "dump.rdb"))
		if err != nil {
			t.Fatal(err)
		}
		n, err := load(b)
		want := "The RDB file holds key 'the:" + tc.typ + "' in db 0 of type " + tc.typ
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Fatalf("%s: %v", tc.typ, err)
		}
		_ = n // keys seen before the refusal are the caller's to drop: Load's callers install nothing on error
	}
}

// FuzzLoad: the decoder never panics and never allocates beyond a small
// multiple of its input on hostile files.
func FuzzLoad(f *testing.F) {
	f.Add([]byte("REDIS0011\xff\x00\x00\x00\x00\x00\x00\x00\x00"))
	f.Add([]byte("REDIS0011\xfe\x00\x04\x01h\x81\xff\xff\xff\xff\xff\xff\xff\xff"))
	f.Add([]byte("REDIS0011\x00\x01k\xc3\x05\xff\xff\xff\x0f\x00abcde"))
	f.Fuzz(func(t *testing.T, b []byte) {
		load(b)
		st := store.New(1)
		Restore(b, st)
		if len(b) > 10 {
			// Give the body a valid footer so the decoder itself runs.
			p := append(bytes.Clone(b), 0, 0)
			p[len(p)-2] = Version
			p = appendCRC(p)
			Restore(p, st)
		}
	})
}

func appendCRC(p []byte) []byte {
	c := CRC64(0, p)
	for i := 0; i < 8; i++ {
		p = append(p, byte(c>>(8*i)))
	}
	return p
}
