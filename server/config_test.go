package server

import (
	"strings"
	"testing"
)

// configInt reads the integer form stored when a directive is set (boot
// or CONFIG SET, memory values in bytes), and a refused CONFIG SET leaves
// it as it was.
func TestConfigIntParsedAtSet(t *testing.T) {
	s := startServer(t, map[string]string{"hz": "25", "maxmemory": "2mb"}, nil)
	if got := s.configInt("hz"); got != 25 {
		t.Fatalf("hz at boot: %d", got)
	}
	if got := s.configInt("maxmemory"); got != 2<<20 {
		t.Fatalf("maxmemory at boot: %d", got)
	}
	c := dial(t, s)
	if r := c.Do("CONFIG", "SET", "maxmemory", "3mb"); r != "+OK\r\n" {
		t.Fatalf("CONFIG SET maxmemory: %q", r)
	}
	if r := c.Do("CONFIG", "SET", "hz", "x"); !strings.HasPrefix(r, "-ERR") {
		t.Fatalf("CONFIG SET hz x: %q", r)
	}
	if s.configInt("maxmemory") != 3<<20 || s.configInt("hz") != 25 {
		t.Fatalf("after CONFIG SET: maxmemory %d, hz %d", s.configInt("maxmemory"), s.configInt("hz"))
	}
	defer func() {
		if recover() == nil {
			t.Fatal("configInt of an unknown directive did not panic")
		}
	}()
	s.configInt("no-such-directive")
}
