package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/emqd/emqd/internal/testsupport"
)

// TestKill9MidBGSaveKeepsOldFile (docs/durability.md §9.3): the real
// binary, a dump.rdb from SAVE, the values changed, a slow BGSAVE
// (rdb-key-save-delay) killed with SIGKILL half way: dump.rdb is byte for
// byte the old one, the restarted server loads it (the old values) and
// removes the temporary file the killed save left.
func TestKill9MidBGSaveKeepsOldFile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and restarts the binary")
	}
	bin := testsupport.BuildEmqd(t)
	dir := t.TempDir()
	port := testsupport.FreePort(t)
	addr := "127.0.0.1:" + port
	ctx := context.Background()
	start := func() (*exec.Cmd, *redis.Client) {
		cmd := exec.Command(bin, "--port", port, "--dir", dir, "--appendonly", "no", "--save", "",
			"--rdb-key-save-delay", "2000")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		testsupport.DieWithParent(cmd)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, MaxRetries: -1, ReadTimeout: testsupport.ClientTimeout, WriteTimeout: testsupport.ClientTimeout})
		t.Cleanup(func() { c.Close() })
		for end := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if c.Ping(ctx).Err() == nil {
				return cmd, c
			}
			if time.Now().After(end) {
				t.Fatalf("emqd did not start: %s", out.String())
			}
		}
	}
	cmd, c := start()
	const n = 2000
	for i := 0; i < n; i++ {
		c.Set(ctx, "k"+strconv.Itoa(i), "old", 0)
	}
	if err := c.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	old, err := os.ReadFile(filepath.Join(dir, "dump.rdb"))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		c.Set(ctx, "k"+strconv.Itoa(i), "new", 0)
	}
	if got := c.BgSave(ctx).Val(); got != "Background saving started" {
		t.Fatalf("BGSAVE: %q", got)
	}
	// Wait until the save is under way (some keys written), then kill.
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		info := c.Info(ctx, "persistence").Val()
		if strings.Contains(info, "rdb_bgsave_in_progress:1") && !strings.Contains(info, "current_save_keys_processed:0\r") {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the save did not start: %s", info)
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	now, err := os.ReadFile(filepath.Join(dir, "dump.rdb"))
	if err != nil || !bytes.Equal(now, old) {
		t.Fatalf("dump.rdb changed by a killed save (%v)", err)
	}
	temps, _ := filepath.Glob(filepath.Join(dir, "temp-*.rdb"))
	if len(temps) != 1 {
		all, _ := os.ReadDir(dir)
		t.Fatalf("temporary files after the kill: %v (dir: %v)", temps, all)
	}
	_, c2 := start()
	for _, i := range []int{0, n / 2, n - 1} {
		if got := c2.Get(ctx, "k"+strconv.Itoa(i)).Val(); got != "old" {
			t.Fatalf("k%d after restart: %q", i, got)
		}
	}
	if got := c2.DBSize(ctx).Val(); got != n {
		t.Fatalf("DBSIZE %d", got)
	}
	if temps, _ := filepath.Glob(filepath.Join(dir, "temp-*.rdb")); len(temps) != 0 {
		t.Fatalf("temporary files after the restart: %v", temps)
	}
}

// TestValkeyStyleConfKeepsData (issue 20): a file as a Valkey user has it
// (appendonly no, no save line: Valkey's default save points), SET, a clean
// stop (SIGTERM), a start: GET answers the value, as on Valkey.
func TestValkeyStyleConfKeepsData(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and restarts the binary")
	}
	bin := testsupport.BuildEmqd(t)
	dir := t.TempDir()
	port := testsupport.FreePort(t)
	conf := filepath.Join(dir, "valkey.conf")
	os.WriteFile(conf, []byte("port "+port+"\ndir "+dir+"\nappendonly no\n"), 0o644)
	ctx := context.Background()
	run := func(f func(c *redis.Client)) {
		cmd := exec.Command(bin, conf)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		testsupport.DieWithParent(cmd)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + port, Protocol: 2, MaxRetries: -1, ReadTimeout: testsupport.ClientTimeout, WriteTimeout: testsupport.ClientTimeout})
		defer c.Close()
		for end := time.Now().Add(20 * time.Second); c.Ping(ctx).Err() != nil; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(end) {
				cmd.Process.Kill()
				t.Fatalf("no start: %s", out.String())
			}
		}
		f(c)
		cmd.Process.Signal(os.Interrupt)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("exit: %v\n%s", err, out.String())
		}
	}
	run(func(c *redis.Client) {
		if got := c.ConfigGet(ctx, "save").Val()["save"]; got != "3600 1 300 100 60 10000" {
			t.Fatalf("CONFIG GET save: %q", got)
		}
		c.Set(ctx, "k", "v", 0)
	})
	run(func(c *redis.Client) {
		if got := c.Get(ctx, "k").Val(); got != "v" {
			t.Fatalf("GET k after a restart: %q", got)
		}
	})
}
