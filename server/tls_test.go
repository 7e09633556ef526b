package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/emqd/emqd/internal/testsupport"
)

// tlsFiles is a CA, a server certificate for 127.0.0.1 and a client
// certificate it signed, written as PEM files, plus a second CA's client.
type tlsFiles struct {
	dir                             string
	ca, serverCert, serverKey       string
	clientCert, clientKey           string
	strangerCert, strangerKey       string
	caPool                          *x509.CertPool
	client, stranger, serverKeyPair tls.Certificate
}

func newCA(t *testing.T, name string) (*x509.Certificate, *ecdsa.PrivateKey, []byte) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return cert, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func leaf(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, name string, server bool) (certPEM, keyPEM []byte) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature,
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		tmpl.DNSNames = []string{"localhost"}
	} else {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
}

func newTLSFiles(t *testing.T) *tlsFiles {
	t.Helper()
	dir := t.TempDir()
	ca, caKey, caPEM := newCA(t, "emqd test CA")
	other, otherKey, _ := newCA(t, "another CA")
	f := &tlsFiles{dir: dir}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	f.ca = write("ca.crt", caPEM)
	sc, sk := leaf(t, ca, caKey, "emqd", true)
	f.serverCert, f.serverKey = write("server.crt", sc), write("server.key", sk)
	cc, ck := leaf(t, ca, caKey, "client", false)
	f.clientCert, f.clientKey = write("client.crt", cc), write("client.key", ck)
	oc, ok := leaf(t, other, otherKey, "stranger", false)
	f.strangerCert, f.strangerKey = write("stranger.crt", oc), write("stranger.key", ok)
	f.caPool = x509.NewCertPool()
	f.caPool.AppendCertsFromPEM(caPEM)
	f.client, _ = tls.X509KeyPair(cc, ck)
	f.stranger, _ = tls.X509KeyPair(oc, ok)
	return f
}

// freePort returns a port free on 127.0.0.1 now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return itoa(int64(ln.Addr().(*net.TCPAddr).Port))
}

func (f *tlsFiles) config(port string, extra ...string) map[string]string {
	cfg := map[string]string{"tls-port": port, "tls-cert-file": f.serverCert, "tls-key-file": f.serverKey, "tls-ca-cert-file": f.ca}
	for i := 0; i+1 < len(extra); i += 2 {
		cfg[extra[i]] = extra[i+1]
	}
	return cfg
}

// tlsPing connects with go-redis over TLS and PINGs.
func tlsPing(addr string, cfg *tls.Config) error {
	c := redis.NewClient(&redis.Options{Addr: addr, TLSConfig: cfg, MaxRetries: -1, DialTimeout: 5 * time.Second})
	defer c.Close()
	return c.Ping(context.Background()).Err()
}

// TestTLS: the TLS port serves go-redis with a certificate the CA signed,
// beside the plain port; tls-auth-clients yes refuses a client without a
// certificate or with one from another CA; optional takes a client
// without one but not a stranger; no asks none; INFO lists both listeners.
func TestTLS(t *testing.T) {
	f := newTLSFiles(t)
	port := freePort(t)
	s := startServer(t, f.config(port), nil)
	addr := "127.0.0.1:" + port
	withCert := &tls.Config{RootCAs: f.caPool, Certificates: []tls.Certificate{f.client}}
	if err := tlsPing(addr, withCert); err != nil {
		t.Fatalf("TLS with a client certificate: %v", err)
	}
	plain := dial(t, s)
	if r := plain.Do("PING"); r != "+PONG\r\n" {
		t.Fatalf("plain port: %q", r)
	}
	if err := tlsPing(addr, &tls.Config{RootCAs: f.caPool}); err == nil {
		t.Fatal("tls-auth-clients yes served a client without a certificate")
	}
	if err := tlsPing(addr, &tls.Config{RootCAs: f.caPool, GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		return &f.stranger, nil
	}}); err == nil {
		t.Fatal("tls-auth-clients yes served another CA's client")
	}
	info := plain.Do("INFO", "server")
	if !strings.Contains(info, "\r\nlistener2:name=tls,bind=127.0.0.1,port="+port+"\r\n") {
		t.Fatalf("INFO server:\n%s", info)
	}
	// The same keyspace on both ports.
	c := redis.NewClient(&redis.Options{Addr: addr, TLSConfig: withCert})
	defer c.Close()
	if err := c.Set(context.Background(), "k", "over tls", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if r := plain.Do("GET", "k"); r != "$8\r\nover tls\r\n" {
		t.Fatalf("GET over plain: %q", r)
	}
	// optional: no certificate is fine, a stranger's is not.
	if r := plain.Do("CONFIG", "SET", "tls-auth-clients", "optional"); r != "+OK\r\n" {
		t.Fatalf("CONFIG SET tls-auth-clients optional: %q", r)
	}
	if err := tlsPing(addr, &tls.Config{RootCAs: f.caPool}); err != nil {
		t.Fatalf("optional without a certificate: %v", err)
	}
	// (Go's client sends a certificate only when its issuer is among the
	// CAs the server names; this one insists, as OpenSSL's clients do.)
	insist := &tls.Config{RootCAs: f.caPool, GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		return &f.stranger, nil
	}}
	if err := tlsPing(addr, insist); err == nil {
		t.Fatal("optional served another CA's client")
	}
	plain.Do("CONFIG", "SET", "tls-auth-clients", "no")
	if err := tlsPing(addr, &tls.Config{RootCAs: f.caPool, Certificates: []tls.Certificate{f.stranger}}); err != nil {
		t.Fatalf("no: %v", err)
	}
}

// TestTLSProtocols: tls-protocols picks the versions served.
func TestTLSProtocols(t *testing.T) {
	f := newTLSFiles(t)
	port := freePort(t)
	startServer(t, f.config(port, "tls-protocols", "TLSv1.3"), nil)
	addr := "127.0.0.1:" + port
	c12 := &tls.Config{RootCAs: f.caPool, Certificates: []tls.Certificate{f.client}, MaxVersion: tls.VersionTLS12}
	if err := tlsPing(addr, c12); err == nil {
		t.Fatal("TLSv1.3 only served a TLS 1.2 client")
	}
	c13 := &tls.Config{RootCAs: f.caPool, Certificates: []tls.Certificate{f.client}, MinVersion: tls.VersionTLS13}
	if err := tlsPing(addr, c13); err != nil {
		t.Fatalf("TLS 1.3: %v", err)
	}
	s := startServer(t, nil, nil)
	c := dial(t, s)
	expectReplies(t, c, [][2]any{
		{a("CONFIG", "SET", "tls-protocols", "TLSv9"), "-ERR CONFIG SET failed (possibly related to argument 'tls-protocols') - Invalid tls-protocols specified. Use a combination of 'TLSv1', 'TLSv1.1', 'TLSv1.2' and 'TLSv1.3'.\r\n"},
		{a("CONFIG", "SET", "tls-key-file-pass", "secret"), "-ERR CONFIG SET failed (possibly related to argument 'tls-key-file-pass') - " + mustErr(checkKeyPass("secret")) + "\r\n"},
	})
}

func mustErr(_ string, err error) string { return err.Error() }

// TestTLSConfigErrors: a TLS port without a CA while clients must present
// certificates, or with a certificate file that is not one, does not start
// (Valkey's texts); CONFIG SET of a bad file keeps the old certificate.
func TestTLSConfigErrors(t *testing.T) {
	f := newTLSFiles(t)
	port := freePort(t)
	cfg := f.config(port)
	delete(cfg, "tls-ca-cert-file")
	_, err := Start(Options{Config: cfg})
	if err == nil || !strings.HasPrefix(err.Error(), "Either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-cluster, tls-replication or tls-auth-clients are enabled!") {
		t.Fatalf("no CA: %v", err)
	}
	_, err = Start(Options{Config: f.config(port, "tls-cert-file", f.ca+".missing")})
	if err == nil || !strings.Contains(err.Error(), "Failed to configure TLS") {
		t.Fatalf("missing certificate: %v", err)
	}
	s := startServer(t, f.config(port, "tls-ca-cert-dir", f.dir, "tls-ca-cert-file", ""), nil)
	c := dial(t, s)
	if r := c.Do("CONFIG", "SET", "tls-cert-file", f.clientKey); !strings.HasPrefix(r, "-ERR CONFIG SET failed (possibly related to argument 'tls-cert-file') - Failed to load certificate and private key") {
		t.Fatalf("CONFIG SET of a key as the certificate: %q", r)
	}
	if err := tlsPing("127.0.0.1:"+port, &tls.Config{RootCAs: f.caPool, Certificates: []tls.Certificate{f.client}}); err != nil {
		t.Fatalf("after the refused reload: %v", err)
	}
}

// TestTLSRedisCLI: the real redis-cli speaks to the TLS port with the
// generated certificates.
func TestTLSRedisCLI(t *testing.T) {
	cli := testsupport.LookPath(t, "redis-cli", "redis-tools")
	f := newTLSFiles(t)
	port := freePort(t)
	startServer(t, f.config(port), nil)
	out, err := exec.Command(cli, "-h", "127.0.0.1", "-p", port, "--tls", "--cacert", f.ca,
		"--cert", f.clientCert, "--key", f.clientKey, "HSET", "h", "f", "v").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "1" {
		t.Fatalf("redis-cli --tls HSET: %v %q", err, out)
	}
	out, _ = exec.Command(cli, "-h", "127.0.0.1", "-p", port, "--tls", "--cacert", f.ca, "PING").CombinedOutput()
	if strings.Contains(string(out), "PONG") {
		t.Fatalf("redis-cli without a client certificate: %q", out)
	}
}

// TestTLSBlockedClientDisconnects: a TLS client that closes while parked
// in a blocking claim is dropped at once and takes no job (the peer check
// peeks at the socket under the TLS layer).
func TestTLSBlockedClientDisconnects(t *testing.T) {
	f := newTLSFiles(t)
	port := freePort(t)
	s := startServer(t, f.config(port), nil)
	admin := dial(t, s)
	tc, err := tls.Dial("tcp", "127.0.0.1:"+port, &tls.Config{RootCAs: f.caPool, Certificates: []tls.Certificate{f.client}})
	if err != nil {
		t.Fatal(err)
	}
	tc.Write(encode("EMQ.CLAIM", "q", "1000", "BLOCK", "0"))
	waitInfoClients(t, admin, "connected_clients:2 blocked_clients:1")
	tc.Close()
	waitInfoClients(t, admin, "connected_clients:1 blocked_clients:0")
	admin.Do("EMQ.ENQUEUE", "q", "JOB00000000001", "p")
	if r := admin.Do("HGET", "emq:{q}:job:JOB00000000001", "state"); r != "$7\r\npending\r\n" {
		t.Fatalf("state %q", r)
	}
}
