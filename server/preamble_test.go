package server

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/emqd/emqd/internal/testsupport"
	"github.com/emqd/emqd/internal/valkeyref"
	"github.com/redis/go-redis/v9"
)

// keyspaceText renders databases 0..3 of a server as sorted lines
// (testsupport.Keyspace), the same for emqd and valkey-server.
func keyspaceText(t *testing.T, addr string) string { return testsupport.Keyspace(t, addr, 4) }

// fillPreambleData writes every encoding of the three types over several
// databases (int-encoded and LZF-compressible strings, listpack and
// hashtable hashes, listpack and skiplist sorted sets, expire times).
func fillPreambleData(t *testing.T, addr string) {
	t.Helper()
	ctx := context.Background()
	for db := 0; db < 3; db++ {
		c := redis.NewClient(&redis.Options{Addr: addr, DB: db, Protocol: 2})
		p := c.Pipeline()
		p.Set(ctx, "int", 12345+db, 0)
		p.Set(ctx, "neg", -7, 0)
		p.Set(ctx, "long", strings.Repeat("abc", 100), 0)
		p.Set(ctx, "plain", "hello", 0)
		p.Set(ctx, "ttl", "soon", 0)
		p.Do(ctx, "PEXPIREAT", "ttl", 4102444800000+int64(db))
		p.HSet(ctx, "hsmall", "f", "1", "g", "two")
		for i := 0; i < 200; i++ {
			p.HSet(ctx, "hbig", fmt.Sprintf("field%d", i), fmt.Sprintf("v%d", i*i))
			p.ZAdd(ctx, "zbig", redis.Z{Score: float64(i) / 3, Member: fmt.Sprintf("m%d", i)})
		}
		p.ZAdd(ctx, "zsmall", redis.Z{Score: 1.5, Member: "a"}, redis.Z{Score: -2, Member: "b"})
		p.Do(ctx, "PEXPIREAT", "zsmall", 4102444900000)
		if _, err := p.Exec(ctx); err != nil {
			t.Fatalf("fill db %d: %v", db, err)
		}
		c.Close()
	}
}

// fillAfterRewrite writes after a rewrite (the commands after the
// preamble): a new key, a changed hash, a deleted key, a changed TTL.
func fillAfterRewrite(t *testing.T, addr string) {
	t.Helper()
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2})
	defer c.Close()
	for _, args := range [][]any{
		{"SET", "after", "1"}, {"HSET", "hsmall", "f", "changed"}, {"DEL", "plain"},
		{"ZADD", "zbig", "100", "new"}, {"PEXPIREAT", "int", "4102445000000"},
		{"SELECT", "1"}, {"SET", "after1", "x"},
	} {
		if err := c.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
}

func waitRewriteRaw(t *testing.T, c *testsupport.Conn) {
	t.Helper()
	eventually(t, func() bool {
		return strings.Contains(c.Do("INFO", "persistence"), "aof_rewrite_in_progress:0\r\naof_rewrite_scheduled:0")
	})
}

// TestAOFPreambleToValkey (aof-use-rdb-preamble, docs/durability.md §1.1):
// after BGREWRITEAOF emqd's appendonly.aof is an RDB (REDIS0011, aof-base
// 1) followed by the commands appended since; emqd replays it to the same
// keyspace, and valkey-server 8.0.1, given the file as an old-style AOF,
// loads the same keyspace from it.
func TestAOFPreambleToValkey(t *testing.T) {
	valkeyref.Dir(t)
	dir := t.TempDir()
	cfg := map[string]string{"appendonly": "yes", "appendfsync": "always", "dir": dir}
	s, err := Start(Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, s)
	if got := c.Do("CONFIG", "GET", "aof-use-rdb-preamble"); got != "*2\r\n$20\r\naof-use-rdb-preamble\r\n$3\r\nyes\r\n" {
		t.Fatalf("default: %q", got)
	}
	fillPreambleData(t, s.Addr())
	if r := c.Do("BGREWRITEAOF"); r != "+Background append only file rewriting started\r\n" {
		t.Fatalf("BGREWRITEAOF: %q", r)
	}
	waitRewriteRaw(t, c)
	fillAfterRewrite(t, s.Addr())
	want := keyspaceText(t, s.Addr())
	if n := strings.Count(want, "\n") + 1; n != 28 {
		t.Fatalf("%d keys written, want 28:\n%s", n, want)
	}
	s.Close(context.Background())

	b, err := os.ReadFile(filepath.Join(dir, "appendonly.aof"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("REDIS0011")) || !bytes.Contains(b[:200], []byte("aof-base\xc0\x01")) {
		t.Fatalf("the rewritten file does not start with an RDB preamble: %q", b[:min(len(b), 80)])
	}
	if !bytes.Contains(b, []byte("*3\r\n$3\r\nSET\r\n$5\r\nafter\r\n$1\r\n1\r\n")) {
		t.Fatal("the writes after the rewrite are not in the file as commands")
	}

	s2, err := Start(Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if got := keyspaceText(t, s2.Addr()); got != want {
		t.Fatalf("emqd replay of its preamble file:\n%s\nwant\n%s", got, want)
	}
	s2.Close(context.Background())

	vdir := t.TempDir()
	if err := os.WriteFile(filepath.Join(vdir, "appendonly.aof"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	v := valkeyref.StartIn(t, vdir, "--appendonly", "yes", "--appendfilename", "appendonly.aof")
	if got := keyspaceText(t, v.Addr); got != want {
		t.Fatalf("valkey-server loading emqd's preamble file:\n%s\nwant\n%s\nlog: %s", got, want, v.Log())
	}
}

// TestValkeyAOFPreambleToEmqd: valkey-server 8.0.1 with its defaults
// (aof-use-rdb-preamble yes) writes a base RDB and an incremental AOF;
// the two, concatenated (what an old-style single AOF with a preamble
// holds), replay in emqd to Valkey's keyspace.
func TestValkeyAOFPreambleToEmqd(t *testing.T) {
	valkeyref.Dir(t)
	v := valkeyref.Start(t, "--appendonly", "yes", "--appendfsync", "always")
	fillPreambleData(t, v.Addr)
	vc := redis.NewClient(&redis.Options{Addr: v.Addr, Protocol: 2})
	defer vc.Close()
	ctx := context.Background()
	if err := vc.Do(ctx, "BGREWRITEAOF").Err(); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() bool {
		info := vc.Info(ctx, "persistence").Val()
		return strings.Contains(info, "aof_rewrite_in_progress:0") && strings.Contains(info, "aof_rewrite_scheduled:0")
	})
	fillAfterRewrite(t, v.Addr)
	want := keyspaceText(t, v.Addr)
	adir := filepath.Join(v.Dir, "appendonlydir")
	names, err := os.ReadDir(adir)
	if err != nil {
		t.Fatal(err)
	}
	var base, incr []byte
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(adir, n.Name()))
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case strings.HasSuffix(n.Name(), ".base.rdb"):
			base = b
		case strings.HasSuffix(n.Name(), ".incr.aof"):
			incr = append(incr, b...)
		}
	}
	if !bytes.HasPrefix(base, []byte("REDIS0011")) || len(incr) == 0 {
		t.Fatalf("valkey wrote no RDB base and incr file: %v", names)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "appendonly.aof"), append(base, incr...), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Start(Options{Config: map[string]string{"appendonly": "yes", "dir": dir}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	if got := keyspaceText(t, s.Addr()); got != want {
		t.Fatalf("emqd loading Valkey's base+incr:\n%s\nwant\n%s", got, want)
	}
}

// TestAOFPreambleDamageRefused (issue 27 item 8): a byte flipped inside the
// RDB preamble of an AOF, which a command-only base would load as a
// different value, refuses the start with Valkey's checksum text, the same
// two numbers valkey-server 8.0.1 logs for the same file, and the file is
// left as it was; a preamble cut short refuses too (the torn-tail rule is
// for the commands after it), as Valkey refuses it.
func TestAOFPreambleDamageRefused(t *testing.T) {
	dir := t.TempDir()
	cfg := map[string]string{"appendonly": "yes", "dir": dir}
	s, err := Start(Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, s)
	c.Do("SET", "plain", "hello")
	c.Do("HSET", "h", "f", "v")
	c.Do("BGREWRITEAOF")
	waitRewriteRaw(t, c)
	c.Do("SET", "after", "1")
	s.Close(context.Background())
	path := filepath.Join(dir, "appendonly.aof")
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(good, []byte("hello"))
	end := bytes.Index(good, []byte("*2\r\n$6\r\nSELECT"))
	if i < 0 || end < 0 || i > end {
		t.Fatalf("no value in the preamble: %q", good)
	}
	for _, tc := range []struct {
		name string
		file []byte
		want string
	}{
		{"flipped", append(append(append([]byte(nil), good[:i]...), 'j'), good[i+1:]...), "Wrong RDB checksum expected: ("},
		{"truncated", good[:end-3], "Short read or OOM loading DB. Unrecoverable error, aborting now."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(path, tc.file, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Start(Options{Config: cfg})
			if err == nil || !strings.Contains(err.Error(), "Error reading the RDB preamble of the AOF file appendonly.aof, AOF loading aborted: "+tc.want) {
				t.Fatalf("start: %v", err)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, tc.file) {
				t.Fatal("the refused file was changed")
			}
			vdir := t.TempDir()
			if err := os.WriteFile(filepath.Join(vdir, "appendonly.aof"), tc.file, 0o644); err != nil {
				t.Fatal(err)
			}
			log := valkeyStartFails(t, vdir, "--appendonly", "yes")
			line := tc.want
			if tc.name == "flipped" {
				j := strings.Index(err.Error(), tc.want)
				line = err.Error()[j : j+strings.Index(err.Error()[j:], "Aborting now.")]
			}
			if !strings.Contains(log, line) {
				t.Fatalf("valkey-server's log has no %q:\n%s", line, log)
			}
		})
	}
}

// valkeyStartFails runs valkey-server in dir with args and returns its
// output once it has exited (it must refuse to start; the reference server
// is skipped without EMQD_VALKEY_DIR, valkeyref).
func valkeyStartFails(t *testing.T, dir string, args ...string) string {
	t.Helper()
	argv := append([]string{"--port", "0", "--unixsocket", filepath.Join(dir, "v.sock"), "--dir", dir, "--save", ""}, args...)
	cmd := exec.Command(valkeyref.File(t, "valkey-server"), argv...)
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

// TestValkeyMultiPartAOFLoads (docs/durability.md §8): a Valkey 8.0.1 data
// folder with appendonly yes holds appendonlydir/ (manifest, base RDB,
// incremental AOF) and no appendonly.aof: emqd started on it with
// appendonly yes replays Valkey's files in the manifest's order to
// Valkey's keyspace, leaves them unchanged, and makes its own
// appendonly.aof (with an RDB preamble) before serving, which the next
// start loads.
func TestValkeyMultiPartAOFLoads(t *testing.T) {
	valkeyref.Dir(t)
	v := valkeyref.Start(t, "--appendonly", "yes", "--appendfsync", "always")
	fillPreambleData(t, v.Addr)
	vc := redis.NewClient(&redis.Options{Addr: v.Addr, Protocol: 2})
	defer vc.Close()
	ctx := context.Background()
	if err := vc.Do(ctx, "BGREWRITEAOF").Err(); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() bool {
		info := vc.Info(ctx, "persistence").Val()
		return strings.Contains(info, "aof_rewrite_in_progress:0") && strings.Contains(info, "aof_rewrite_scheduled:0")
	})
	fillAfterRewrite(t, v.Addr)
	want := keyspaceText(t, v.Addr)
	v.Kill()
	dir := t.TempDir()
	adir := filepath.Join(dir, "appendonlydir")
	if err := os.MkdirAll(adir, 0o755); err != nil {
		t.Fatal(err)
	}
	names, _ := os.ReadDir(filepath.Join(v.Dir, "appendonlydir"))
	orig := map[string][]byte{}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(v.Dir, "appendonlydir", n.Name()))
		if err != nil {
			t.Fatal(err)
		}
		orig[n.Name()] = b
		os.WriteFile(filepath.Join(adir, n.Name()), b, 0o644)
	}
	if _, ok := orig["appendonly.aof.manifest"]; !ok {
		t.Fatalf("no manifest from valkey-server: %v", names)
	}
	cfg := map[string]string{"appendonly": "yes", "dir": dir}
	s, err := Start(Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if got := keyspaceText(t, s.Addr()); got != want {
		t.Fatalf("emqd loading Valkey's appendonlydir:\n%s\nwant\n%s", got, want)
	}
	c := dial(t, s)
	c.Do("SET", "emqd-write", "1")
	s.Close(context.Background())
	for name, b := range orig {
		if got, _ := os.ReadFile(filepath.Join(adir, name)); !bytes.Equal(got, b) {
			t.Fatalf("Valkey's %s was changed", name)
		}
	}
	own, err := os.ReadFile(filepath.Join(dir, "appendonly.aof"))
	if err != nil || !bytes.HasPrefix(own, []byte("REDIS0011")) {
		t.Fatalf("emqd's own file: %v %q", err, own[:min(len(own), 20)])
	}
	s2, err := Start(Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close(context.Background())
	c2 := dial(t, s2)
	if r := c2.Do("GET", "emqd-write"); r != "$1\r\n1\r\n" {
		t.Fatalf("the write after the migration: %q", r)
	}
	c2.Do("DEL", "emqd-write")
	if got := keyspaceText(t, s2.Addr()); got != want {
		t.Fatalf("after restart on emqd's own file:\n%s\nwant\n%s", got, want)
	}
}
