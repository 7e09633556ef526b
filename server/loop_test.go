package server

import (
	"strconv"
	"strings"
	"testing"

	"github.com/emqd/emqd/clock"
)

// CONFIG SET io-model moves a connection between the two models at its
// next wait: one asleep in the poller armed one-shot under io-model
// goroutine is served by the loop after the switch and stays served (its
// goroutine re-arms it edge-triggered: a loop that left it as it was
// answered the first command and never saw the second), and back under
// io-model goroutine it is resumed as before.
func TestIOModeSwitchKeepsServing(t *testing.T) {
	clk := clock.NewManual(1_000_000)
	s := startServer(t, map[string]string{"io-model": "goroutine"}, clk)
	admin := dial(t, s)
	c := dial(t, s)
	id := strings.TrimSuffix(strings.TrimPrefix(c.Do("CLIENT", "ID"), ":"), "\r\n")
	clk.Advance(idleShrinkMs + 100)
	eventually(t, func() bool { return asleep(s, id) })
	echo := func(round string) {
		t.Helper()
		for i := 0; i < 5; i++ {
			v := round + strconv.Itoa(i)
			if r := c.Do("ECHO", v); r != "$"+strconv.Itoa(len(v))+"\r\n"+v+"\r\n" {
				t.Fatalf("%s: ECHO %s answered %q", round, v, r)
			}
		}
	}
	if r := admin.Do("CONFIG", "SET", "io-model", "loop"); r != "+OK\r\n" {
		t.Fatal(r)
	}
	echo("loop")
	eventually(t, func() bool { return asleep(s, id) }) // between round trips, in the loop's set
	if r := admin.Do("CONFIG", "SET", "io-model", "goroutine"); r != "+OK\r\n" {
		t.Fatal(r)
	}
	echo("goroutine")
	if r := admin.Do("CONFIG", "GET", "io-model"); r != "*2\r\n$8\r\nio-model\r\n$9\r\ngoroutine\r\n" {
		t.Fatal(r)
	}
	if r := admin.Do("CONFIG", "SET", "io-model", "epoll"); !strings.HasPrefix(r, "-ERR CONFIG SET failed (possibly related to argument 'io-model')") {
		t.Fatal(r)
	}
}
