package server

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"
)

// TLS (docs/operations.md §10), configured as Valkey's: tls-port opens a
// TLS listener on every bind address beside the plain one (port; 0 turns
// the plain one off when tls-port is set), with the server's certificate
// and key (tls-cert-file, tls-key-file, tls-key-file-pass for an encrypted
// key), the client authentication of tls-auth-clients (yes: a client must
// present a certificate tls-ca-cert-file or tls-ca-cert-dir signs; optional:
// checked when presented; no: none asked) and the protocol versions of
// tls-protocols. Certificates are read at start and again by CONFIG SET of
// any of these files (an error leaves the old ones in use); new
// connections see the new ones. Go's crypto/tls serves TLS 1.2 and 1.3 (and
// 1.0 and 1.1 when tls-protocols names them).

// tlsState is the running TLS configuration.
type tlsState struct {
	cfg atomic.Pointer[tls.Config]
}

// tlsDirectives are the directives a TLS reload reads.
var tlsDirectives = []string{"tls-cert-file", "tls-key-file", "tls-ca-cert-file", "tls-ca-cert-dir",
	"tls-auth-clients", "tls-protocols"}

// parseTLSProtocols maps tls-protocols to a version range (Go has no
// other way to pick versions).
func parseTLSProtocols(v string) (min, max uint16, err error) {
	if strings.TrimSpace(v) == "" {
		return tls.VersionTLS12, tls.VersionTLS13, nil // Valkey's default
	}
	versions := map[string]uint16{"tlsv1": tls.VersionTLS10, "tlsv1.1": tls.VersionTLS11, "tlsv1.2": tls.VersionTLS12, "tlsv1.3": tls.VersionTLS13}
	seen := map[uint16]bool{}
	for _, w := range strings.Fields(v) {
		ver, ok := versions[strings.ToLower(w)]
		if !ok {
			return 0, 0, errors.New("Invalid tls-protocols specified. Use a combination of 'TLSv1', 'TLSv1.1', 'TLSv1.2' and 'TLSv1.3'.")
		}
		seen[ver] = true
		if min == 0 || ver < min {
			min = ver
		}
		if ver > max {
			max = ver
		}
	}
	for ver := min; ver <= max; ver++ {
		if !seen[ver] {
			return 0, 0, errors.New("emqd serves a range of TLS versions: tls-protocols must not skip one between the oldest and the newest it names")
		}
	}
	return min, max, nil
}

// checkKeyPass is tls-key-file-pass's check: emqd reads unencrypted keys
// only.
func checkKeyPass(v string) (string, error) {
	if v != "" {
		return "", errors.New("emqd reads unencrypted private keys only: decrypt tls-key-file (openssl pkey -in key.pem -out plain.pem) and leave tls-key-file-pass empty")
	}
	return v, nil
}

// checkTLSProtocols is tls-protocols' check.
func checkTLSProtocols(v string) (string, error) {
	_, _, err := parseTLSProtocols(v)
	return v, err
}

// loadTLS builds the TLS configuration from the directives (start and
// CONFIG SET); an error names what is wrong, with Valkey's texts where it
// has them.
func (s *Server) loadTLS() (*tls.Config, error) {
	certFile, keyFile := s.Config("tls-cert-file"), s.Config("tls-key-file")
	if certFile == "" || keyFile == "" {
		return nil, errors.New("No tls-cert-file and tls-key-file configured (both are needed for tls-port)")
	}
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("Failed to load certificate: %s: %v", certFile, err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("Failed to load private key: %s: %v", keyFile, err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("Failed to load certificate and private key: %s, %s: %v", certFile, keyFile, err)
	}
	min, max, err := parseTLSProtocols(s.Config("tls-protocols"))
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: min, MaxVersion: max}
	auth := s.Config("tls-auth-clients")
	caFile, caDir := s.Config("tls-ca-cert-file"), s.Config("tls-ca-cert-dir")
	if caFile != "" || caDir != "" {
		pool := x509.NewCertPool()
		if caFile != "" {
			b, err := os.ReadFile(caFile)
			if err != nil {
				return nil, fmt.Errorf("Failed to configure CA certificate(s) file/directory: %s: %v", caFile, err)
			}
			if !pool.AppendCertsFromPEM(b) {
				return nil, fmt.Errorf("Failed to configure CA certificate(s) file/directory: %s holds no PEM certificate", caFile)
			}
		}
		if caDir != "" {
			ents, err := os.ReadDir(caDir)
			if err != nil {
				return nil, fmt.Errorf("Failed to configure CA certificate(s) file/directory: %s: %v", caDir, err)
			}
			for _, e := range ents {
				if b, err := os.ReadFile(caDir + "/" + e.Name()); err == nil {
					pool.AppendCertsFromPEM(b)
				}
			}
		}
		cfg.ClientCAs = pool
	} else if auth != "no" {
		return nil, errors.New("Either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-cluster, tls-replication or tls-auth-clients are enabled!")
	}
	switch auth {
	case "no":
		cfg.ClientAuth = tls.NoClientCert
	case "optional":
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	default:
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// startTLS loads the configuration when tls-port is set and wires the
// reload on CONFIG SET (Start, before the listeners open).
func (s *Server) startTLS() error {
	if s.configInt("tls-port") == 0 {
		return nil
	}
	cfg, err := s.loadTLS()
	if err != nil {
		s.log.Warn(err.Error())
		return errors.New(err.Error() + "\nFailed to configure TLS. Check logs for more info.")
	}
	s.tls.cfg.Store(cfg)
	s.watchTLSConfig()
	return nil
}

// watchTLSConfig makes CONFIG SET of a TLS directive reload the
// configuration (once TLS is on: at start, or at a CONFIG SET tls-port).
func (s *Server) watchTLSConfig() {
	for _, name := range tlsDirectives {
		s.OnConfigSet(name, func(string) error {
			cfg, err := s.loadTLS()
			if err != nil {
				return err
			}
			s.tls.cfg.Store(cfg)
			return nil
		})
	}
}

// serverTLSConfig hands each new connection the current configuration.
func (s *Server) serverTLSConfig() *tls.Config {
	return &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
		return s.tls.cfg.Load(), nil
	}}
}

// tlsHandshakeTimeout bounds a TLS client's handshake.
const tlsHandshakeTimeout = 10 * time.Second
