package valkeyref

import (
	"bufio"
	"net"
	"testing"
)

// TestStart starts the reference server and checks it is Valkey 8.0.1.
func TestStart(t *testing.T) {
	s := Start(t)
	c, err := net.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n")); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	found := false
	for i := 0; i < 40; i++ {
		line, err := r.ReadString('\n')
		if err != nil {
			break
		}
		if line == "valkey_version:8.0.1\r\n" {
			found = true
			break
		}
	}
	if !found {
		t.Fatal("INFO server does not say valkey_version:8.0.1")
	}
}
