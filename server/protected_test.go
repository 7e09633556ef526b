package server

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/emqd/emqd/internal/testsupport"
)

// The bind and protected-mode tests need a non-loopback address to connect
// from. They run in a child process (this test binary) inside a fresh
// network namespace (unshare -n, as root) whose loopback interface also
// carries 10.7.7.7, so nothing on the host changes.

const nsAddr = "10.7.7.7"

// inNetns runs the named test in a network namespace with nsAddr on lo; it
// reports false when this is that child (the caller runs the checks).
func inNetns(t *testing.T, name string) bool {
	t.Helper()
	if os.Getenv("EMQD_NETNS_CHILD") == "1" {
		return false
	}
	unshare, err1 := exec.LookPath("unshare")
	ip, err2 := exec.LookPath("ip")
	if err1 == nil && err2 == nil && exec.Command(unshare, "-n", "true").Run() != nil {
		err1 = errors.New("unshare -n failed (not root?)")
	}
	if err1 != nil || err2 != nil {
		msg := "needs unshare (util-linux) and ip (iproute2) as root for a network namespace"
		testsupport.Missing(t, msg)
	}
	script := ip + " link set lo up && " + ip + " addr add " + nsAddr + "/32 dev lo && exec \"$0\" -test.run='^" + name + "$' -test.v"
	cmd := exec.Command(unshare, "-n", "sh", "-c", script, os.Args[0])
	cmd.Env = append(os.Environ(), "EMQD_NETNS_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+name) {
		t.Fatalf("in the namespace: %v\n%s", err, out)
	}
	return true
}

// dialFrom connects to addr from the local address from (an IP).
func dialFrom(t *testing.T, from, addr string) (*testsupport.Conn, error) {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second}
	if from != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { nc.Close() })
	return testsupport.NewConn(t, nc), nil
}

func startBound(t *testing.T, bind string, extra ...string) *Server {
	t.Helper()
	cfg := map[string]string{"bind": bind, "port": "7400"}
	for i := 0; i+1 < len(extra); i += 2 {
		cfg[extra[i]] = extra[i+1]
	}
	return startServer(t, cfg, nil)
}

// TestProtectedMode: with protected mode on and no password, a client from
// a non-loopback address gets Valkey's DENIED text and is closed (counted
// in rejected_connections); loopback clients are served; a password or
// protected-mode no lets it in.
func TestProtectedMode(t *testing.T) {
	if inNetns(t, "TestProtectedMode") {
		return
	}
	f := newTLSFiles(t)
	startBound(t, "127.0.0.1 "+nsAddr, "tls-port", "7401", "tls-cert-file", f.serverCert, "tls-key-file", f.serverKey,
		"tls-auth-clients", "no")
	// Over TLS the refusal comes after the handshake, encrypted.
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(nsAddr)}, Timeout: 5 * time.Second}
	tc, err := tls.DialWithDialer(d, "tcp", nsAddr+":7401", &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(tc)
	tc.Close()
	if string(got) != errProtected {
		t.Fatalf("outside TLS client got %q", got)
	}
	local, err := dialFrom(t, "127.0.0.1", "127.0.0.1:7400")
	if err != nil {
		t.Fatal(err)
	}
	if r := local.Do("PING"); r != "+PONG\r\n" {
		t.Fatalf("loopback PING %q", r)
	}
	outside, err := dialFrom(t, nsAddr, nsAddr+":7400")
	if err != nil {
		t.Fatal(err)
	}
	if r := outside.Read(); r != errProtected {
		t.Fatalf("outside client got %q", r)
	}
	outside.ExpectClosed()
	if r := local.Do("INFO", "stats"); !strings.Contains(r, "\r\nrejected_connections:2\r\n") {
		t.Fatalf("INFO stats:\n%s", r)
	}
	if r := local.Do("INFO", "server"); !strings.Contains(r, "\r\nlistener0:name=tcp,bind=127.0.0.1,bind="+nsAddr+",port=7400\r\nlistener2:name=tls,bind=127.0.0.1,bind="+nsAddr+",port=7401\r\n") {
		t.Fatalf("INFO server:\n%s", r)
	}
	// A password set: the outside client may connect (and must AUTH).
	local.Do("CONFIG", "SET", "requirepass", "pw")
	outside, _ = dialFrom(t, nsAddr, nsAddr+":7400")
	if r := outside.Do("PING"); r != "-NOAUTH Authentication required.\r\n" {
		t.Fatalf("outside with a password: %q", r)
	}
	if r := outside.Do("AUTH", "pw"); r != "+OK\r\n" {
		t.Fatalf("AUTH %q", r)
	}
	// protected-mode no, no password: served.
	outside.Do("CONFIG", "SET", "protected-mode", "no", "requirepass", "")
	outside2, _ := dialFrom(t, nsAddr, nsAddr+":7400")
	if r := outside2.Do("PING"); r != "+PONG\r\n" {
		t.Fatalf("protected-mode no: %q", r)
	}
}

// TestBindExactly: an IPv4 address listens on IPv4 only (0.0.0.0 is not
// also ::), :: on IPv6 only, several addresses each get a socket, a -
// prefix skips an address the host lacks, and a missing address without
// it stops the start with Valkey's texts.
func TestBindExactly(t *testing.T) {
	if inNetns(t, "TestBindExactly") {
		return
	}
	ipv6 := true
	if ln, err := net.Listen("tcp6", "[::1]:0"); err != nil {
		ipv6 = false
	} else {
		ln.Close()
	}
	reach := func(addr string) bool {
		c, err := dialFrom(t, "", addr)
		if err != nil {
			return false
		}
		return c.Do("PING") == "+PONG\r\n"
	}
	cases := []struct {
		bind string
		yes  []string
		no   []string
		v6   bool
	}{
		{bind: "0.0.0.0", yes: []string{"127.0.0.1:7400", nsAddr + ":7400"}, no: []string{"[::1]:7400"}, v6: true},
		{bind: "*", yes: []string{"127.0.0.1:7400"}, no: []string{"[::1]:7400"}, v6: true},
		{bind: "::", yes: []string{"[::1]:7400"}, no: []string{"127.0.0.1:7400"}, v6: true},
		{bind: "127.0.0.1", yes: []string{"127.0.0.1:7400"}, no: []string{nsAddr + ":7400"}},
		{bind: "127.0.0.1 " + nsAddr, yes: []string{"127.0.0.1:7400", nsAddr + ":7400"}},
		{bind: "-10.9.9.9 127.0.0.1", yes: []string{"127.0.0.1:7400"}},
	}
	for _, c := range cases {
		if c.v6 && !ipv6 {
			t.Logf("%s: no IPv6 here, skipped", c.bind)
			continue
		}
		s, err := Start(Options{Config: map[string]string{"bind": c.bind, "port": "7400", "protected-mode": "no"}})
		if err != nil {
			t.Fatalf("bind %q: %v", c.bind, err)
		}
		for _, a := range c.yes {
			if !reach(a) {
				t.Errorf("bind %q: %s not served", c.bind, a)
			}
		}
		for _, a := range c.no {
			if reach(a) {
				t.Errorf("bind %q: %s served", c.bind, a)
			}
		}
		stop(t, s)
	}
	_, err := Start(Options{Config: map[string]string{"bind": "127.0.0.1 10.9.9.9", "port": "7400"}})
	var le *ListenError
	want := "Warning: Could not create server TCP listening socket 10.9.9.9:7400: bind: Cannot assign requested address\nFailed listening on port 7400 (tcp), aborting."
	if !errors.As(err, &le) || err.Error() != want {
		t.Fatalf("a missing address: %v", err)
	}
	// The address it did open was closed again.
	if reach("127.0.0.1:7400") {
		t.Fatal("127.0.0.1:7400 still served after the failed start")
	}
}
