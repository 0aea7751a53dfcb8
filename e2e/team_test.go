package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/api"
)

// selfSigned writes a self-signed certificate for 127.0.0.1 and localhost,
// and its key (0600), into dir, and returns their paths and a pool that
// trusts it.
func selfSigned(t *testing.T, dir string) (certPath, keyPath string, pool *x509.CertPool) {
	t.Helper()
	return selfSignedFor(t, dir, time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour))
}

// selfSignedFor is selfSigned, valid from notBefore to notAfter.
func selfSignedFor(t *testing.T, dir string, notBefore, notAfter time.Time) (certPath, keyPath string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "parley team server (test)"},
		NotBefore: notBefore, NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true,
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certPath, keyPath, pool
}

// freePort returns a loopback port nobody listens on now, for a daemon that
// must come back on the same one after a restart.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestTeamServerTLS: a team server's daemon serves TLS with a certificate
// made here; `parley token create` prints the line a teammate needs; a
// laptop-style client (`parley mcp serve --server https://...`, its own
// PARLEY_HOME, no daemon of its own) sends and receives as the token's agent,
// and carries on after the server restarts. The agent token rules hold on
// the TLS listener exactly as on loopback TCP.
func TestTeamServerTLS(t *testing.T) {
	srv := newEnv(t, "PARLEY_WORKSPACE=team")
	certPath, keyPath, pool := selfSigned(t, t.TempDir())
	port := freePort(t)
	conf := fmt.Sprintf("listen = \"127.0.0.1:%d\"\ntls_cert = %q\ntls_key = %q\n", port, certPath, keyPath)
	if err := os.WriteFile(filepath.Join(srv.home, "config.toml"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	base := fmt.Sprintf("https://127.0.0.1:%d", port)
	if out := srv.Must("daemon", "start"); !strings.Contains(out, "listening on "+base+" ") {
		t.Errorf("daemon start: %q, want it listening on %s", out, base)
	}
	var st api.Status
	srv.MustJSON(&st, "daemon", "status")
	if !st.TLS || st.ServerURL != base {
		t.Fatalf("daemon status: tls %v, server_url %q; want TLS at %s", st.TLS, st.ServerURL, base)
	}
	srv.Must("join", "--name", "boss", "--role", "lead")
	srv.Must("join", "--name", "laptop", "--role", "dev")

	var tok api.TokenInfo
	srv.MustJSON(&tok, "token", "create", "--agent", "laptop")
	if want := "PARLEY_TOKEN=" + tok.Token + " parley mcp serve --server " + base; tok.Line != want || tok.Server != base {
		t.Fatalf("token create: line %q, server %q; want %q", tok.Line, tok.Server, want)
	}
	if out := srv.Must("token", "create", "--agent", "other"); !strings.Contains(out, "parley mcp serve --server "+base) {
		t.Errorf("token create prints no line to connect with:\n%s", out)
	}

	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	// Plain HTTP to the TLS port gets nowhere; neither does a client that
	// does not trust the certificate.
	if resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/api/v1/health", port)); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Errorf("plain HTTP to the TLS listener: got 200")
		}
	}
	if _, err := http.Get(base + "/api/v1/health"); err == nil {
		t.Errorf("a client that does not trust the certificate got through")
	}
	if code, _ := urlCall(t, hc, base, "", "GET", "/api/v1/agents", ""); code != http.StatusUnauthorized {
		t.Errorf("no token over TLS: got %d, want 401", code)
	}

	// The laptop: no daemon, the token in its environment, the server's
	// certificate trusted through --ca-file.
	laptop := newEnv(t, "PARLEY_TOKEN="+tok.Token)
	s := laptop.Session(nil, "--server", base, "--ca-file", certPath)
	var who struct {
		Agent     string `json:"agent"`
		Workspace string `json:"workspace"`
	}
	mustCall(t, s, "whoami", nil, &who)
	if who.Agent != "laptop" || who.Workspace != "team" {
		t.Errorf("whoami through the team server: %+v, want laptop in team", who)
	}
	mustCall(t, s, "send_message", map[string]any{"to": "boss", "content": "hello from the laptop"}, nil)
	if out := srv.Must("inbox", "--agent", "boss"); !strings.Contains(out, "hello from the laptop") {
		t.Errorf("boss's inbox on the server: want the laptop's message in\n%s", out)
	}
	srv.Must("send", "laptop", "welcome aboard", "--agent", "boss")
	if got := waitText(t, s); !strings.Contains(got, "welcome aboard") {
		t.Errorf("the laptop's wait: got %s, want boss's message", got)
	}
	for _, f := range []string{"parley.sock", "parley.pid", "parley.db"} {
		if _, err := os.Stat(filepath.Join(laptop.home, f)); err == nil {
			t.Errorf("the laptop's PARLEY_HOME has %s: mcp serve --server started a daemon of its own", f)
		}
	}

	// The server restarts (on the same port); the session carries on.
	srv.Must("daemon", "stop")
	srv.Must("daemon", "start")
	srv.Must("send", "laptop", "after the restart", "--agent", "boss")
	var got string
	waitUntil(t, "the laptop's session back after the server's restart", func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "check_messages", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			return false // the call in flight when the connection went: the client retries
		}
		b, _ := json.Marshal(res.StructuredContent)
		got = string(b)
		return true
	})
	if !strings.Contains(got, "after the restart") {
		t.Errorf("check_messages after the restart: got %s, want boss's message", got)
	}
	mustCall(t, s, "send_message", map[string]any{"to": "boss", "content": "still here"}, nil)
	if out := srv.Must("inbox", "--agent", "boss"); !strings.Contains(out, "still here") {
		t.Errorf("boss's inbox after the restart: want the laptop's message in\n%s", out)
	}

	// The agent token's rules, over TLS.
	var toLaptop struct {
		MessageID string `json:"message_id"`
	}
	srv.MustJSON(&toLaptop, "send", "laptop", "ack this", "--agent", "bob")
	checkAgentTokenRules(t, "laptop", toLaptop.MessageID, func(method, path, body string, headers ...string) (int, string) {
		return urlCall(t, hc, base, tok.Token, method, path, body, headers...)
	})
}

// urlCall is tcpCall to the daemon at base (http:// or https://) through hc.
func urlCall(t *testing.T, hc *http.Client, base, tok, method, path, body string, headers ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	req.Header.Set("Content-Type", "application/json")
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitText calls wait_for_message and returns its structured result as JSON.
func waitText(t *testing.T, s *mcp.ClientSession) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "wait_for_message", Arguments: map[string]any{"timeout": 20}})
	if err != nil || res.IsError {
		t.Fatalf("wait_for_message: %v %v", err, res)
	}
	b, _ := json.Marshal(res.StructuredContent)
	return string(b)
}
