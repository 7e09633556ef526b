package server

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/emqd/emqd/clock"
)

// startAuthServer starts a server with requirepass "right" on a manual
// clock, reporting each scheduled authentication delay on the channel.
func startAuthServer(t *testing.T, logs *syncBuffer) (*Server, *clock.Manual, chan int64) {
	t.Helper()
	clk := clock.NewManual(1_700_000_000_000)
	delays := make(chan int64, 64)
	opts := Options{Config: map[string]string{"requirepass": "right"}, Clock: clk,
		authDelayed: func(_, ms int64) { delays <- ms }}
	if logs != nil {
		opts.Logger = slog.New(slog.NewTextHandler(logs, nil))
	}
	s, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Close(ctx)
	})
	return s, clk, delays
}

// TestAuthBruteForceSlowed: a pipelined brute force of wrong passwords on
// one connection gets its first three answers at once, then each answer
// only after a delay the server schedules on its clock (100, 200, 400 ...
// 2000 ms); meanwhile another connection authenticates and writes without
// waiting; the right password after the failures still works; every
// failure is counted in INFO stats acl_access_denied_auth.
func TestAuthBruteForceSlowed(t *testing.T) {
	s, clk, delays := startAuthServer(t, nil)
	const wrongPass = "-WRONGPASS invalid username-password pair or user is disabled.\r\n"
	a := dial(t, s)
	var req []byte
	const guesses = 12
	for i := 0; i < guesses; i++ {
		req = append(req, encode("AUTH", fmt.Sprintf("guess%d", i))...)
	}
	req = append(req, encode("AUTH", "right")...)
	req = append(req, encode("PING")...)
	a.Write(req)
	for i := 0; i < 3; i++ {
		if r := a.Read(); r != wrongPass {
			t.Fatalf("guess %d: %q", i, r)
		}
	}
	want := []int64{100, 200, 400, 800, 1600, 2000, 2000, 2000, 2000}
	for k, d := range want {
		got := <-delays
		if got != d {
			t.Fatalf("failure %d: delay %d ms, want %d", k+4, got, d)
		}
		if k == 0 {
			// While a's reply waits, another client is served at once,
			// and sees the four failures counted.
			b := dial(t, s)
			if r := b.Do("AUTH", "right"); r != "+OK\r\n" {
				t.Fatalf("other client AUTH: %q", r)
			}
			if r := b.Do("SET", "k", "v"); r != "+OK\r\n" {
				t.Fatalf("other client SET: %q", r)
			}
			if r := b.Do("INFO", "stats"); !strings.Contains(r, "\r\nacl_access_denied_auth:4\r\n") {
				t.Fatalf("INFO stats:\n%s", r)
			}
		}
		clk.Advance(d)
		if r := a.Read(); r != wrongPass {
			t.Fatalf("guess %d: %q", k+3, r)
		}
	}
	if r := a.Read(); r != "+OK\r\n" {
		t.Fatalf("right password after %d failures: %q", guesses, r)
	}
	if r := a.Read(); r != "+PONG\r\n" {
		t.Fatalf("PING: %q", r)
	}
	select {
	case d := <-delays:
		t.Fatalf("a delay of %d ms after the success", d)
	default:
	}
	// The success cleared the count: three more failures are answered at
	// once, the fourth is delayed 100 ms again. HELLO AUTH counts too.
	for i := 0; i < 3; i++ {
		if r := a.Do("HELLO", "2", "AUTH", "default", "nope"); r != wrongPass {
			t.Fatalf("HELLO AUTH: %q", r)
		}
	}
	a.Write(encode("AUTH", "nope"))
	if d := <-delays; d != 100 {
		t.Fatalf("after a success, the 4th failure waits %d ms", d)
	}
	clk.Advance(100)
	if r := a.Read(); r != wrongPass {
		t.Fatalf("%q", r)
	}
	if r := a.Do("INFO", "stats"); !strings.Contains(r, "\r\nacl_access_denied_auth:16\r\n") {
		t.Fatalf("INFO stats:\n%s", r)
	}
	a.Do("CONFIG", "RESETSTAT")
	if r := a.Do("INFO", "stats"); !strings.Contains(r, "\r\nacl_access_denied_auth:0\r\n") {
		t.Fatalf("INFO stats after RESETSTAT:\n%s", r)
	}
}

// TestAuthFailureLog: failed authentications are logged once per second
// of the server clock, with the client's address, and the next line says
// how many were left out; the refusals leave the keyspace untouched.
func TestAuthFailureLog(t *testing.T) {
	logs := &syncBuffer{}
	s, clk, _ := startAuthServer(t, logs)
	a, b := dial(t, s), dial(t, s)
	aAddr := a.NC.LocalAddr().String()
	for i := 0; i < 3; i++ {
		a.Do("AUTH", "wrong")
	}
	for i := 0; i < 2; i++ {
		b.Do("HELLO", "3", "AUTH", "default", "wrong")
	}
	lines := func() []string {
		var out []string
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, `msg="Failed authentication"`) {
				out = append(out, l)
			}
		}
		return out
	}
	if l := lines(); len(l) != 1 || !strings.Contains(l[0], "addr="+aAddr+" command=auth failures=1 suppressed=0") {
		t.Fatalf("log lines in the first second: %q", l)
	}
	clk.Advance(999)
	b.Do("AUTH", "wrong")
	if l := lines(); len(l) != 1 {
		t.Fatalf("a second line within the second: %q", l)
	}
	clk.Advance(1)
	c := dial(t, s)
	c.Do("AUTH", "default", "wrong")
	if l := lines(); len(l) != 2 || !strings.Contains(l[1], "addr="+c.NC.LocalAddr().String()+" command=auth failures=1 suppressed=5") {
		t.Fatalf("log lines: %q", l)
	}
	s.store.Lock()
	keys := s.store.DB(0).Len()
	s.store.Unlock()
	if keys != 0 {
		t.Fatalf("%d keys after refused authentications", keys)
	}
}
