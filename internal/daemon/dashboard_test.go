package daemon

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/parley-dev/parley/internal/api"
)

// TestDashboardLoginOnlyOnSocket: a sign-in link is the OS user's to mint.
// The admin token over TCP is refused (it may sit in an agent's
// environment); the socket gets a link to the loopback dashboard.
func TestDashboardLoginOnlyOnSocket(t *testing.T) {
	d := startDaemon(t, Config{Listen: "127.0.0.1:0"})
	const body = `{"user":"ann"}`

	r, _ := http.NewRequest("POST", "http://"+d.TCPAddr()+"/api/v1/dashboard/login", strings.NewReader(body))
	r.Header.Set("Authorization", "Bearer "+readToken(t, d))
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("login over TCP with the admin token: got %d, want 403", resp.StatusCode)
	}
	if a := d.web.Addr(); a != "" {
		t.Errorf("the refused login started the dashboard on %s", a)
	}

	resp, err = unixClient(d).Post("http://parley/api/v1/dashboard/login", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var l api.DashboardLogin
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("login over the socket: %d, %v", resp.StatusCode, err)
	}
	if want := "http://127.0.0.1:"; !strings.HasPrefix(l.URL, want) || !strings.Contains(l.URL, "/login?token=") || l.User != "ann" || l.Addr != d.web.Addr() {
		t.Errorf("login over the socket: got %+v, want a link to the loopback dashboard for ann", l)
	}
}
