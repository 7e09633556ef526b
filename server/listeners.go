package server

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Listeners (docs/operations.md §9): one listening socket per address of
// `bind`, as Valkey's listenToPort. An IPv4 address listens on IPv4 only
// and an IPv6 one on IPv6 only (IPV6_V6ONLY: `0.0.0.0` is not also `::`);
// `*` is every IPv4 address and `::*` every IPv6 one; a `-` prefix makes
// an address optional (skipped when the host does not have it). With
// port 0 the first listener picks a free port and the others use it.

// listener is one listening socket and what its clients speak.
type listener struct {
	ln   net.Listener
	name string // "tcp" or "tls"
	addr string // as configured (bind word without "-")
}

// listenAddr is one `bind` word.
type listenAddr struct {
	host     string
	network  string // tcp4, tcp6, or tcp for a host name
	optional bool
	word     string
}

// parseBind splits a bind value into its addresses.
func parseBind(v string) []listenAddr {
	var out []listenAddr
	for _, w := range strings.Fields(v) {
		a := listenAddr{word: w}
		if strings.HasPrefix(w, "-") {
			a.optional, w = true, w[1:]
		}
		switch {
		case w == "*":
			a.host, a.network = "0.0.0.0", "tcp4"
		case w == "::*":
			a.host, a.network = "::", "tcp6"
		default:
			a.host = w
			if ip := net.ParseIP(w); ip == nil {
				a.network = "tcp"
			} else if ip.To4() != nil {
				a.network = "tcp4"
			} else {
				a.network = "tcp6"
			}
		}
		out = append(out, a)
	}
	return out
}

// networkOf is the network for one host:port address given by the
// embedding program (Options.Addr).
func networkOf(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "tcp"
	}
	if ip := net.ParseIP(host); ip != nil {
		if ip.To4() != nil {
			return "tcp4"
		}
		return "tcp6"
	}
	if host == "" {
		return "tcp4" // every IPv4 address, as Valkey's *
	}
	return "tcp"
}

// ListenError is Start's error when a listening socket cannot be opened
// (Valkey: "Could not create server TCP listening socket ...", then
// "Failed listening on port N (tcp), aborting.").
type ListenError struct{ Msg string }

func (e *ListenError) Error() string { return e.Msg }

// strerror renders a socket error as C's strerror does (capitalized).
func strerror(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		t := errno.Error()
		if t != "" {
			return strings.ToUpper(t[:1]) + t[1:]
		}
	}
	return err.Error()
}

// listenOne opens one socket; op names the failing step as anet does.
func listenOne(network, host string, port int) (net.Listener, error) {
	return net.Listen(network, net.JoinHostPort(host, strconv.Itoa(port)))
}

// openListeners opens the RESP listeners: opts.Addr alone when given, else
// every bind address at the configured port (tcp), and tls-port's on the
// same addresses (tls).
func (s *Server) openListeners(optsAddr string, hasPortOrBind bool) error {
	if err := s.openPlain(optsAddr, hasPortOrBind); err != nil {
		return err
	}
	if tport := int(s.configInt("tls-port")); tport != 0 {
		addrs := parseBind(s.Config("bind"))
		if optsAddr != "" || !hasPortOrBind {
			host := "127.0.0.1"
			if optsAddr != "" {
				host, _, _ = net.SplitHostPort(optsAddr)
			}
			addrs = []listenAddr{{host: host, network: networkOf(net.JoinHostPort(host, "0")), word: host}}
		}
		if err := s.listenAll("tls", addrs, &tport); err != nil {
			return err
		}
		s.tlsPort = tport
	}
	if err := s.openUnix(); err != nil {
		return err
	}
	s.tcpShown, s.tlsShown = s.port != 0, s.tlsPort != 0
	if len(s.lns) == 0 {
		return &ListenError{Msg: "Configured to not listen anywhere, exiting."}
	}
	return nil
}

// openPlain opens the plain TCP listeners. With tls-port set, port 0 means
// no plain listener, as in Valkey; without it, port 0 picks a free port.
func (s *Server) openPlain(optsAddr string, hasPortOrBind bool) error {
	s.lnAddrs = parseBind(s.Config("bind"))
	if s.configInt("tls-port") != 0 && s.configInt("port") == 0 && optsAddr == "" {
		return nil
	}
	if optsAddr != "" || !hasPortOrBind {
		addr := optsAddr
		if addr == "" {
			addr = "127.0.0.1:0"
		}
		host, _, _ := net.SplitHostPort(addr)
		s.lnAddrs = []listenAddr{{host: host, network: networkOf(addr), word: host}}
		ln, err := net.Listen(networkOf(addr), addr)
		if err != nil {
			warn := fmt.Sprintf("Warning: Could not create server TCP listening socket %s: bind: %s", addr, strerror(err))
			s.log.Warn(warn)
			return &ListenError{Msg: warn + "\n" + fmt.Sprintf("Failed listening on port %s (tcp), aborting.", addrPort(addr))}
		}
		s.lns = append(s.lns, listener{ln: ln, name: "tcp", addr: addr})
		s.port = ln.Addr().(*net.TCPAddr).Port
		s.cfg.set(nil, "port", strconv.Itoa(s.port), true)
		return nil
	}
	port := int(s.configInt("port"))
	if port != 0 || len(s.lnAddrs) > 0 {
		if err := s.listenAll("tcp", s.lnAddrs, &port); err != nil {
			return err
		}
		s.port = port
		s.cfg.set(nil, "port", strconv.Itoa(port), true)
	}
	return nil
}

// listenAll opens one socket per address at *port (0: the first picks it)
// for clients speaking name (Start: a failure closes every listener
// opened so far and the server does not start).
func (s *Server) listenAll(name string, addrs []listenAddr, port *int) error {
	lns, err := s.openAt(name, addrs, port)
	if err != nil {
		for _, l := range s.lns {
			l.ln.Close()
		}
		s.lns = nil
		return err
	}
	s.lns = append(s.lns, lns...)
	return nil
}

// openAt opens one socket per address at *port (0: the first picks it)
// for clients speaking name, skipping what Valkey's listenToPort skips (an
// optional address the host does not have, an unsupported protocol), and
// returns them; on a failure it closes those it opened.
func (s *Server) openAt(name string, addrs []listenAddr, port *int) ([]listener, error) {
	var out []listener
	fail := func(err error) ([]listener, error) {
		for _, l := range out {
			l.ln.Close()
		}
		return nil, err
	}
	for _, a := range addrs {
		ln, err := listenOne(a.network, a.host, *port)
		if err != nil {
			warn := fmt.Sprintf("Warning: Could not create server TCP listening socket %s:%d: bind: %s", a.host, *port, strerror(err))
			s.log.Warn(warn)
			var errno syscall.Errno
			errors.As(err, &errno)
			if errno == syscall.EADDRNOTAVAIL && a.optional {
				continue
			}
			switch errno {
			case syscall.ENOPROTOOPT, syscall.EPROTONOSUPPORT, syscall.ESOCKTNOSUPPORT, syscall.EPFNOSUPPORT, syscall.EAFNOSUPPORT:
				continue
			}
			return fail(&ListenError{Msg: warn + "\n" + fmt.Sprintf("Failed listening on port %d (%s), aborting.", *port, name)})
		}
		if a.network == "tcp" { // a host name: its first address only
			ln.Close()
			ln, err = listenOne(networkOf(ln.Addr().String()), ln.Addr().(*net.TCPAddr).IP.String(), *port)
			if err != nil {
				return fail(&ListenError{Msg: fmt.Sprintf("Failed listening on port %d (%s), aborting.", *port, name)})
			}
		}
		if *port == 0 {
			*port = ln.Addr().(*net.TCPAddr).Port
		}
		out = append(out, listener{ln: ln, name: name, addr: strings.TrimPrefix(a.word, "-")})
	}
	return out, nil
}

// openUnix opens unixsocket's listener: a stale socket file is removed
// first, the mode is unixsocketperm (0: the umask's) and the group
// unixsocketgroup, as Valkey's anetUnixServer. Its clients are local
// (protected mode, enable-debug-command local).
func (s *Server) openUnix() error {
	path := s.Config("unixsocket")
	if path == "" {
		return nil
	}
	fail := func(err error) error {
		msg := fmt.Sprintf("Failed opening Unix socket: %s", strerror(err))
		s.log.Warn(msg)
		return &ListenError{Msg: msg}
	}
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSocket != 0 {
		os.Remove(path)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return fail(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(true)
	if perm, _ := strconv.ParseUint(s.Config("unixsocketperm"), 8, 32); perm != 0 {
		if err := os.Chmod(path, os.FileMode(perm)); err != nil {
			ln.Close()
			return fail(err)
		}
	}
	if g := s.Config("unixsocketgroup"); g != "" {
		gid := -1
		if grp, err := user.LookupGroup(g); err == nil {
			gid, _ = strconv.Atoi(grp.Gid)
		} else if n, err := strconv.Atoi(g); err == nil {
			gid = n
		}
		if gid < 0 {
			ln.Close()
			return fail(fmt.Errorf("no such group %q", g))
		}
		if err := os.Chown(path, -1, gid); err != nil {
			ln.Close()
			return fail(err)
		}
	}
	s.lns = append(s.lns, listener{ln: ln, name: "unix", addr: path})
	return nil
}

// connAddr is a client's addr or laddr as Valkey's CLIENT LIST shows it:
// host:port, or "path:0" on the unix socket (local is the listener's
// address, since the peer of a unix socket has no name).
func connAddr(a, local net.Addr) string {
	if u, ok := local.(*net.UnixAddr); ok {
		return u.Name + ":0"
	}
	return a.String()
}

// listenerInfo is INFO server's listenerN lines, as Valkey 8.0.1's
// getListensInfoString (connection.c): N is the kind's index in Valkey's
// connection types (tcp 0, unix 1, tls 2), and a kind's line is there
// once it has been configured (tcp: a port at start or a CONFIG SET of
// port or bind since; tls: likewise with tls-port), even while it listens
// nowhere (`listener0:name=tcp` after CONFIG SET port 0). Its bind words
// are the configured ones as written (`-::*` keeps its dash), as many as
// sockets are open, in order (Valkey prints the first count words: with
// `-192.0.2.1 127.0.0.1` and only the second open, `bind=-192.0.2.1`),
// then the port when it is not 0.
func (s *Server) listenerInfo() []listenerLine {
	s.lnMu.Lock()
	defer s.lnMu.Unlock()
	open := map[string]int{}
	unix := ""
	for _, l := range s.lns {
		open[l.name]++
		if l.name == "unix" {
			unix = l.addr
		}
	}
	line := func(name string, port int) string {
		var b strings.Builder
		b.WriteString("name=" + name)
		for i := 0; i < open[name] && i < len(s.lnAddrs); i++ {
			b.WriteString(",bind=" + s.lnAddrs[i].word)
		}
		if port != 0 {
			b.WriteString(",port=" + strconv.Itoa(port))
		}
		return b.String()
	}
	var out []listenerLine
	if s.tcpShown {
		out = append(out, listenerLine{0, line("tcp", s.port)})
	}
	if unix != "" {
		out = append(out, listenerLine{1, "name=unix,bind=" + unix})
	}
	if s.tlsShown {
		out = append(out, listenerLine{2, line("tls", s.tlsPort)})
	}
	return out
}

// listenerLine is one INFO listenerN line: N and its value.
type listenerLine struct {
	index int
	value string
}

// addrPort is the port of a host:port address.
func addrPort(addr string) string {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "0"
	}
	return p
}

// isLocalPeer is Valkey's connIsLocal: a loopback peer (127.0.0.0/8, ::1)
// or an in-process connection.
func isLocalPeer(a net.Addr) bool {
	switch a := a.(type) {
	case *net.TCPAddr:
		return a.IP.IsLoopback()
	case *net.UnixAddr, internalAddr:
		return true
	}
	return false
}

// errProtected is Valkey 8's protected-mode refusal (networking.c
// clientAcceptHandler), written before the connection is closed.
const errProtected = "-DENIED Running in protected mode because protected mode is enabled and no password is set for the default user. " +
	"In this mode connections are only accepted from the loopback interface. " +
	"If you want to connect from external computers, you may adopt one of the following solutions: " +
	"1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface " +
	"by connecting from the same host the server is running, however MAKE SURE it's not publicly accessible " +
	"from internet if you do so. Use CONFIG REWRITE to make this change permanent. " +
	"2) Alternatively you can just disable the protected mode by editing the configuration file, and setting the protected " +
	"mode option to 'no', and then restarting the server. " +
	"3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. " +
	"4) Set up an authentication password for the default user. " +
	"NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n"

// refuse writes msg (best effort, bounded) and closes nc.
func refuse(nc net.Conn, msg string) {
	nc.SetWriteDeadline(time.Now().Add(time.Second))
	nc.Write([]byte(msg))
	nc.Close()
}

// CONFIG SET port, tls-port and bind at run time, as Valkey 8.0.1's
// config.c (updatePort, applyTLSPort, applyBind, each through
// changeListener): the listeners of the kind close and new ones open at
// the new port or addresses, and the connections already accepted stay.
// Port 0 listens nowhere (Valkey: at run time it closes the listener; at
// start emqd's port 0 without tls-port picks a free port). A value that
// cannot be listened on is refused with Valkey's text, the old listeners
// open again and the old value stays (TestConfigSetPortAsValkey).

// Valkey's refusals (config.c).
var (
	errListenPort = errors.New("Unable to listen on this port. Check server logs.")
	errListenBind = errors.New("Failed to bind to specified addresses.")
	errTLSConfig  = errors.New("Unable to update TLS configuration. Check server logs.")
)

// watchListenConfig registers the hooks of port, tls-port and bind (Start,
// once the listeners are open).
func (s *Server) watchListenConfig() {
	s.OnConfigSet("port", func(v string) error {
		s.tcpShown = true
		port, _ := strconv.Atoi(v)
		if port == s.port {
			return nil
		}
		if err := s.relisten("tcp", s.lnAddrs, port); err != nil {
			s.restoreListeners("tcp", s.lnAddrs, s.port)
			return errListenPort
		}
		s.port = port
		return nil
	})
	s.OnConfigSet("tls-port", func(v string) error {
		port, _ := strconv.Atoi(v)
		if port == s.tlsPort {
			return nil
		}
		if port != 0 && s.tls.cfg.Load() == nil {
			cfg, err := s.loadTLS()
			if err != nil {
				s.log.Warn(err.Error())
				return errTLSConfig
			}
			s.tls.cfg.Store(cfg)
			s.watchTLSConfig()
		}
		s.tlsShown = true
		if err := s.relisten("tls", s.lnAddrs, port); err != nil {
			s.restoreListeners("tls", s.lnAddrs, s.tlsPort)
			return errListenPort
		}
		s.tlsPort = port
		return nil
	})
	s.OnConfigSet("bind", func(v string) error {
		s.tcpShown = true
		if s.tlsPort != 0 {
			s.tlsShown = true
		}
		addrs := parseBind(v)
		if err := s.relisten("tcp", addrs, s.port); err != nil {
			s.restoreListeners("tcp", s.lnAddrs, s.port)
			return errListenBind
		}
		if err := s.relisten("tls", addrs, s.tlsPort); err != nil {
			s.restoreListeners("tcp", s.lnAddrs, s.port)
			s.restoreListeners("tls", s.lnAddrs, s.tlsPort)
			return errListenBind
		}
		s.lnAddrs = addrs
		return nil
	})
}

// relisten closes the listeners of name ("tcp" or "tls") and opens new
// ones on addrs at port (none at port 0), each served by an accept loop of
// its own; on a failure none of name stays open.
func (s *Server) relisten(name string, addrs []listenAddr, port int) error {
	s.lnMu.Lock()
	kept := make([]listener, 0, len(s.lns))
	for _, l := range s.lns {
		if l.name == name {
			l.ln.Close() // its accept loop ends (net.ErrClosed)
		} else {
			kept = append(kept, l)
		}
	}
	s.lns = kept
	var opened []listener
	var err error
	if port != 0 {
		opened, err = s.openAt(name, addrs, &port)
	}
	s.lns = append(s.lns, opened...)
	s.lnMu.Unlock()
	for _, l := range opened {
		s.log.Info("Ready to accept connections "+l.name, "addr", l.ln.Addr().String())
		go s.acceptLoop(l)
	}
	return err
}

// restoreListeners opens the listeners of name again as they were before a
// refused change (Valkey's restoreBackupConfig applies the old value).
func (s *Server) restoreListeners(name string, addrs []listenAddr, port int) {
	if err := s.relisten(name, addrs, port); err != nil {
		s.log.Warn("Failed applying restored configuration", "listener", name, "port", port, "err", err)
	}
}
