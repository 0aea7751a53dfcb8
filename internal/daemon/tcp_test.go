package daemon

import (
	"context"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// startDaemon opens and runs a daemon in a fresh state directory at a short
// path; it stops when the test ends.
func startDaemon(t testing.TB, cfg Config) *Daemon {
	t.Helper()
	if cfg.Home == "" {
		home, err := os.MkdirTemp("/tmp", "pl")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(home) })
		cfg.Home = home
	}
	cfg.ShutdownTimeout = time.Second
	d, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("open daemon: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		d.Close()
	})
	return d
}

// unixClient talks HTTP over the daemon's socket.
func unixClient(d *Daemon) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var nd net.Dialer
		return nd.DialContext(ctx, "unix", d.paths.Socket)
	}}}
}

func readToken(t testing.TB, d *Daemon) string {
	t.Helper()
	b, err := os.ReadFile(d.paths.Token)
	if err != nil {
		t.Fatalf("read token: %v", err)
	}
	return strings.TrimSpace(string(b))
}

func TestTokenFile(t *testing.T) {
	d := startDaemon(t, Config{})
	fi, err := os.Stat(d.paths.Token)
	if err != nil {
		t.Fatalf("token file: %v", err)
	}
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Errorf("token file mode: got %o, want 600", got)
	}
	tok := readToken(t, d)
	if b, err := hex.DecodeString(tok); err != nil || len(b) != 32 {
		t.Errorf("token: got %q, want 32 random bytes in hex", tok)
	}

	// A second start keeps the token; a loose mode is tightened.
	os.Chmod(d.paths.Token, 0o644)
	again, err := loadToken(d.paths.Token)
	if err != nil || again != tok {
		t.Errorf("reload token: got %q, %v; want %q", again, err, tok)
	}
	if fi, _ := os.Stat(d.paths.Token); fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode after reload: got %o, want 600", fi.Mode().Perm())
	}

	// A broken token file is an error that says what to do, not a silent new token.
	bad := filepath.Join(t.TempDir(), "token")
	os.WriteFile(bad, []byte("short\n"), 0o600)
	if _, err := loadToken(bad); err == nil || !strings.Contains(err.Error(), "delete it") {
		t.Errorf("short token: got %v, want an error saying to delete the file", err)
	}
	// An empty one is replaced.
	empty := filepath.Join(t.TempDir(), "token")
	os.WriteFile(empty, nil, 0o600)
	if tok, err := loadToken(empty); err != nil || len(tok) != 64 {
		t.Errorf("empty token file: got %q, %v; want a new token", tok, err)
	}
}

func TestListenNeedsAllowRemote(t *testing.T) {
	// An address that is not loopback (this host's own non-loopback address
	// would do; the unspecified address needs no network).
	_, _, err := listenTCP("0.0.0.0:0", false, "0123456789abcdef")
	if err == nil || !strings.Contains(err.Error(), "--allow-remote") {
		t.Fatalf("non-loopback without allow-remote: got %v, want an error naming --allow-remote", err)
	}
	ln, e, err := listenTCP("0.0.0.0:0", true, "0123456789abcdef")
	if err != nil {
		t.Fatalf("non-loopback with allow-remote: %v", err)
	}
	ln.Close()
	if len(e.token) == 0 {
		t.Error("a remote listener must still carry the token")
	}
	for _, addr := range []string{"127.0.0.1", "127.0.0.1:99999", "localhost:x"} {
		if _, _, err := listenTCP(addr, false, "0123456789abcdef"); err == nil {
			t.Errorf("listen %q: got no error, want an invalid address error", addr)
		}
	}
}

// TestTCPRefusals checks that the TCP listener serves nothing without the
// token, under a foreign Host or from a foreign Origin, on every endpoint.
func TestTCPRefusals(t *testing.T) {
	d := startDaemon(t, Config{Listen: "127.0.0.1:0"})
	addr := d.TCPAddr()
	if addr == "" {
		t.Fatal("no TCP address")
	}
	_, port, _ := net.SplitHostPort(addr)
	tok := readToken(t, d)
	hc := &http.Client{}
	const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

	type req struct {
		method, path, body string
	}
	endpoints := map[string]req{
		"health":  {"GET", "/api/v1/health", ""},
		"status":  {"GET", "/api/v1/status", ""},
		"join":    {"POST", "/api/v1/agents", `{"name":"mallory"}`},
		"mcp":     {"POST", "/mcp?agent=mallory", initBody},
		"events":  {"GET", "/api/v1/events?all=true", ""},
		"unknown": {"GET", "/nothing", ""},
	}
	cases := []struct {
		name   string
		host   string
		auth   string
		origin string
		want   int
	}{
		{name: "no token", auth: "", want: http.StatusUnauthorized},
		{name: "wrong token", auth: "Bearer " + strings.Repeat("0", len(tok)), want: http.StatusUnauthorized},
		{name: "token prefix", auth: "Bearer " + tok[:len(tok)-1], want: http.StatusUnauthorized},
		{name: "basic scheme", auth: "Basic " + tok, want: http.StatusUnauthorized},
		{name: "foreign host", host: "evil.example.com:" + port, auth: "Bearer " + tok, want: http.StatusForbidden},
		{name: "foreign host without token", host: "evil.example.com", want: http.StatusForbidden},
		{name: "right host, wrong port", host: "localhost:1", auth: "Bearer " + tok, want: http.StatusForbidden},
		{name: "foreign origin", auth: "Bearer " + tok, origin: "http://evil.example.com", want: http.StatusForbidden},
	}
	for _, c := range cases {
		for ename, ep := range endpoints {
			t.Run(c.name+"/"+ename, func(t *testing.T) {
				r, _ := http.NewRequest(ep.method, "http://"+addr+ep.path, strings.NewReader(ep.body))
				if c.host != "" {
					r.Host = c.host
				}
				if c.auth != "" {
					r.Header.Set("Authorization", c.auth)
				}
				if c.origin != "" {
					r.Header.Set("Origin", c.origin)
				}
				r.Header.Set("Content-Type", "application/json")
				r.Header.Set("Accept", "application/json, text/event-stream")
				if ename == "events" {
					r.Header.Set("Connection", "Upgrade")
					r.Header.Set("Upgrade", "websocket")
					r.Header.Set("Sec-WebSocket-Version", "13")
					r.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
				}
				resp, err := hc.Do(r)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != c.want {
					t.Fatalf("got %d, want %d: %s", resp.StatusCode, c.want, b)
				}
				if strings.Contains(string(b), `"pid"`) || resp.Header.Get("Mcp-Session-Id") != "" {
					t.Errorf("a refused request was served: %s", b)
				}
			})
		}
	}
	// Nothing the refused requests asked for happened.
	if n := d.mcp.Sessions(); n != 0 {
		t.Errorf("MCP sessions after refused initializes: got %d, want 0", n)
	}
	if _, err := d.hub.Agent(context.Background(), "default", "mallory"); err == nil {
		t.Error("a refused join registered the agent")
	}

	// With the token and a host the daemon answers as, everything is served.
	for _, host := range []string{addr, "localhost:" + port, "127.0.0.1:" + port, "[::1]:" + port} {
		t.Run("ok/"+host, func(t *testing.T) {
			r, _ := http.NewRequest("GET", "http://"+addr+"/api/v1/health", nil)
			r.Host = host
			r.Header.Set("Authorization", "Bearer "+tok)
			r.Header.Set("Origin", "http://localhost:"+port) // the daemon's own origin
			resp, err := hc.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("got %d, want 200", resp.StatusCode)
			}
		})
	}
	t.Run("ok/events", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		h := http.Header{"Authorization": {"Bearer " + tok}, "Origin": {"http://127.0.0.1:" + port}}
		c, _, err := websocket.Dial(ctx, "ws://"+addr+"/api/v1/events?all=true", &websocket.DialOptions{HTTPHeader: h})
		if err != nil {
			t.Fatalf("dial events over TCP with the token: %v", err)
		}
		c.CloseNow()
	})
	// The socket needs no token: its 0600 mode is the guard.
	resp, err := unixClient(d).Get("http://parley/api/v1/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("socket without token: got %d, want 200", resp.StatusCode)
	}
}

func TestListenFromConfig(t *testing.T) {
	cases := []struct {
		name, toml string
		wantErr    string // "" means it listens
	}{
		{name: "loopback", toml: `listen = "127.0.0.1:0"`},
		{name: "remote without allow_remote", toml: `listen = "0.0.0.0:0"`, wantErr: "allow_remote"},
		{name: "remote with allow_remote", toml: "listen = \"0.0.0.0:0\"\nallow_remote = true"},
		{name: "bad address", toml: `listen = "7474"`, wantErr: "invalid listen address"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			home, err := os.MkdirTemp("/tmp", "pl")
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(home)
			if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(c.toml+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			d, err := Open(context.Background(), Config{Home: home})
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					if d != nil {
						d.Close()
					}
					t.Fatalf("got %v, want an error with %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if d.TCPAddr() == "" {
				t.Error("got no TCP listener, want one from config.toml")
			}
		})
	}
}
