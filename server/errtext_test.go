package server

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAppendfilenameMustBeAFilename: appendfilename (and appenddirname,
// dbfilename) holding a path is refused at start with Valkey's texts
// (config.c isValidAOFfilename and friends), nothing is written outside
// dir, and CONFIG SET refuses the immutable directive as Valkey does.
func TestAppendfilenameMustBeAFilename(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "data")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, value, msg string }{
		{"appendfilename", "../x.aof", "appendfilename can't be a path, just a filename"},
		{"appendfilename", "/tmp/x.aof", "appendfilename can't be a path, just a filename"},
		{"appendfilename", `sub\x.aof`, "appendfilename can't be a path, just a filename"},
		{"appendfilename", "", "appendfilename can't be empty"},
		{"appenddirname", "../d", "appenddirname can't be a path, just a dirname"},
		{"appenddirname", "", "appenddirname can't be empty"},
		{"dbfilename", "../dump.rdb", "dbfilename can't be a path, just a filename"},
	} {
		_, err := Start(Options{Config: map[string]string{"appendonly": "yes", "dir": dir, c.name: c.value}})
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Name != c.name || ce.Msg != c.msg {
			t.Fatalf("%s %q: %v", c.name, c.value, err)
		}
	}
	for _, d := range []string{root, dir} {
		if ents, _ := os.ReadDir(d); (d == root && len(ents) != 1) || (d == dir && len(ents) != 0) {
			t.Fatalf("%s holds %v after refused starts", d, ents)
		}
	}

	s := startServer(t, map[string]string{"appendonly": "yes", "dir": dir, "appendfilename": "jobs.aof"}, nil)
	c := dial(t, s)
	c.Do("SET", "k", "v")
	before := readFile(t, filepath.Join(dir, "jobs.aof"))
	if r := c.Do("CONFIG", "SET", "appendfilename", "../x.aof"); r != "-ERR CONFIG SET failed (possibly related to argument 'appendfilename') - can't set immutable config\r\n" {
		t.Fatalf("CONFIG SET: %q", r)
	}
	if r := c.Do("CONFIG", "GET", "appendfilename"); r != "*2\r\n$14\r\nappendfilename\r\n$8\r\njobs.aof\r\n" {
		t.Fatalf("CONFIG GET: %q", r)
	}
	if got := readFile(t, filepath.Join(dir, "jobs.aof")); got != before {
		t.Fatalf("the refusal wrote to the AOF: %q -> %q", before, got)
	}
	if _, err := os.Stat(filepath.Join(root, "x.aof")); !os.IsNotExist(err) {
		t.Fatalf("x.aof outside dir: %v", err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDebugAllowedPeers: enable-debug-command local admits loopback and
// unix-socket peers only, as Valkey's islocalClient; yes admits all, no
// none.
func TestDebugAllowedPeers(t *testing.T) {
	peers := []struct {
		addr  net.Addr
		local bool
	}{
		{&net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 5000}, true},
		{&net.TCPAddr{IP: net.ParseIP("::1"), Port: 5000}, true},
		{&net.UnixAddr{Name: "/tmp/s", Net: "unix"}, true},
		{&net.TCPAddr{IP: net.ParseIP("10.7.7.7"), Port: 5000}, false},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8::1"), Port: 5000}, false},
	}
	for _, mode := range []string{"no", "yes", "local"} {
		s := startServer(t, map[string]string{"enable-debug-command": mode}, nil)
		for _, p := range peers {
			want := mode == "yes" || (mode == "local" && p.local)
			if got := s.debugAllowed(p.addr); got != want {
				t.Errorf("%s from %v: %v, want %v", mode, p.addr, got, want)
			}
		}
	}
}

// TestDebugCommandLocal: with enable-debug-command local, a loopback client
// moves the clock with EMQ.DEBUG CLOCK ADVANCE (the text of the refusal
// says so, and is true); a client from another address gets the refusal
// and the clock does not move.
func TestDebugCommandLocal(t *testing.T) {
	if inNetns(t, "TestDebugCommandLocal") {
		return
	}
	s := startBound(t, "127.0.0.1 "+nsAddr, "enable-debug-command", "local", "protected-mode", "no")
	local, err := dialFrom(t, "127.0.0.1", "127.0.0.1:7400")
	if err != nil {
		t.Fatal(err)
	}
	outside, err := dialFrom(t, nsAddr, nsAddr+":7400")
	if err != nil {
		t.Fatal(err)
	}
	const refusal = "-ERR EMQ.DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.\r\n"
	t0 := s.Clock().NowMs()
	if r := outside.Do("EMQ.DEBUG", "CLOCK", "ADVANCE", "3600000"); r != refusal {
		t.Fatalf("outside: %q", r)
	}
	if got := s.Clock().NowMs(); got-t0 >= 3600000 {
		t.Fatalf("the refused advance moved the clock by %d ms", got-t0)
	}
	if r := local.Do("EMQ.DEBUG", "CLOCK", "ADVANCE", "3600000"); r != "+OK\r\n" {
		t.Fatalf("loopback: %q", r)
	}
	if got := s.Clock().NowMs(); got-t0 < 3600000 {
		t.Fatalf("the clock moved by %d ms", got-t0)
	}
	if r := outside.Do("EMQ.DEBUG", "CLOCK", "ADVANCE", "0"); r != refusal {
		t.Fatalf("outside, after the loopback advance: %q", r)
	}
}

// TestConfigSetRefusedChangesNothing: when a later hook refuses
// `appendonly yes`, the AOF persistence started is stopped again and
// CONFIG GET, INFO and the write path agree on no; when one pair of a
// CONFIG SET is refused by its hook, the pairs applied before it are
// restored.
func TestConfigSetRefusedChangesNothing(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, map[string]string{"dir": dir}, nil)
	s.OnConfigSet("appendonly", func(v string) error {
		if v == "yes" {
			return errors.New("refused by the test")
		}
		return nil
	})
	c := dial(t, s)
	c.Do("SET", "k", "v")
	if r := c.Do("CONFIG", "SET", "appendonly", "yes"); r != "-ERR CONFIG SET failed (possibly related to argument 'appendonly') - refused by the test\r\n" {
		t.Fatalf("CONFIG SET appendonly yes: %q", r)
	}
	if r := c.Do("CONFIG", "SET", "maxclients", "77", "appendonly", "yes"); r != "-ERR CONFIG SET failed (possibly related to argument 'appendonly') - refused by the test\r\n" {
		t.Fatalf("CONFIG SET maxclients 77 appendonly yes: %q", r)
	}
	if r := c.Do("CONFIG", "GET", "appendonly"); r != "*2\r\n$10\r\nappendonly\r\n$2\r\nno\r\n" {
		t.Fatalf("CONFIG GET appendonly: %q", r)
	}
	if r := c.Do("CONFIG", "GET", "maxclients"); r != "*2\r\n$10\r\nmaxclients\r\n$5\r\n10000\r\n" {
		t.Fatalf("CONFIG GET maxclients: %q", r)
	}
	if got := s.maxClients.Load(); got != 10000 {
		t.Fatalf("maxclients in force: %d", got)
	}
	if r := c.Do("INFO", "persistence"); !strings.Contains(r, "\r\naof_enabled:0\r\n") {
		t.Fatalf("INFO persistence:\n%s", r)
	}
	s.store.Lock()
	feed := s.store.SetFeed(nil)
	s.store.SetFeed(feed)
	s.store.Unlock()
	if feed != nil {
		t.Fatalf("the store still feeds an AOF: %T", feed)
	}
	if r := c.Do("BGREWRITEAOF"); !strings.HasPrefix(r, "-ERR Background append only file rewriting is not available") {
		t.Fatalf("BGREWRITEAOF: %q", r)
	}
	if r := c.Do("SET", "k2", "v2"); r != "+OK\r\n" {
		t.Fatalf("SET after the refusal: %q", r)
	}
}
