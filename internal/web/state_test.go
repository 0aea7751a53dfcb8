package web

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A dashboard with a state file comes back, after a restart, on the same
// port with the same sign-ins; the file keeps no cookie; a damaged file
// costs the sign-ins only.
func TestStateSurvivesRestart(t *testing.T) {
	state := filepath.Join(t.TempDir(), "dashboard.json")
	s := New(Options{State: state})
	link, _, err := s.Login("ann")
	if err != nil {
		t.Fatal(err)
	}
	r := getNoRedirect(t, link)
	cookie := r.Header.Get("Set-Cookie")
	if cookie == "" {
		t.Fatal("no session cookie")
	}
	cookie = strings.Split(cookie, ";")[0]
	addr := s.Addr()
	s.Close()

	b, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	if value := strings.SplitN(cookie, "=", 2)[1]; strings.Contains(string(b), value) {
		t.Errorf("the state file holds the cookie itself: %s", b)
	}
	if fi, _ := os.Stat(state); fi.Mode().Perm() != 0o600 {
		t.Errorf("state file mode %v, want 0600", fi.Mode().Perm())
	}

	again := New(Options{State: state})
	t.Cleanup(again.Close)
	if err := again.Resume(); err != nil {
		t.Fatal(err)
	}
	if again.Addr() != addr {
		t.Fatalf("after a restart: listening on %q, want the same %q", again.Addr(), addr)
	}
	req, _ := http.NewRequest("GET", "http://"+addr+"/auth/session", nil)
	req.Header.Set("Cookie", cookie)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("the old cookie after a restart: %d, want 200 (still signed in)", resp.StatusCode)
	}

	// A damaged file: a fresh start, nobody signed in, nothing started.
	if err := os.WriteFile(state, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	fresh := New(Options{State: state})
	t.Cleanup(fresh.Close)
	if err := fresh.Resume(); err != nil || fresh.Addr() != "" {
		t.Errorf("a damaged state: Resume %v, listening on %q; want nothing started", err, fresh.Addr())
	}
}

func getNoRedirect(t *testing.T, url string) *http.Response {
	t.Helper()
	r, err := noRedirect.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	return r
}
