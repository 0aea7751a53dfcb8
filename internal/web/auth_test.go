package web

import (
	"io"
	"io/fs"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// clock is a settable time for the server's Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// noRedirect keeps the login's redirect and cookie to look at.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func TestLoginLink(t *testing.T) {
	clk := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	s := New(Options{Now: clk.now})
	t.Cleanup(s.Close)

	link, exp, err := s.Login("ann")
	if err != nil {
		t.Fatal(err)
	}
	if want := clk.now().Add(DefaultLoginTTL); !exp.Equal(want) {
		t.Errorf("expires: got %v, want %v", exp, want)
	}
	// The listener is started once and reused.
	link2, _, err := s.Login("ann")
	if err != nil {
		t.Fatal(err)
	}
	origin := strings.Split(link, "/login")[0]
	if !strings.HasPrefix(link, "http://127.0.0.1:") || !strings.HasPrefix(link2, origin+"/login?token=") || link2 == link {
		t.Errorf("second link %q, want a new token on the same listener as %q", link2, link)
	}

	// A link past its five minutes is refused.
	clk.add(DefaultLoginTTL + time.Second)
	if r := get(t, link); r.StatusCode != http.StatusForbidden || r.Header.Get("Set-Cookie") != "" {
		t.Errorf("expired link: %d, cookie %q; want 403 and no cookie", r.StatusCode, r.Header.Get("Set-Cookie"))
	}
	link3, _, err := s.Login("ann")
	if err != nil {
		t.Fatal(err)
	}
	r := get(t, link3)
	if r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != "/" {
		t.Fatalf("fresh link: %d to %q, want 303 to /", r.StatusCode, r.Header.Get("Location"))
	}
	c := r.Cookies()
	if len(c) != 1 || !c[0].HttpOnly || c[0].SameSite != http.SameSiteStrictMode || c[0].Path != "/" || c[0].MaxAge != int(DefaultSessionTTL/time.Second) {
		t.Errorf("session cookie: got %+v, want one HttpOnly SameSite=Strict cookie for / lasting the session", c)
	}
	if r := get(t, link3); r.StatusCode != http.StatusForbidden {
		t.Errorf("the same link again: %d, want 403", r.StatusCode)
	}
}

// TestPageHeaders: every answer carries the policy that lets the page load
// and reach only this listener, and the page names nothing elsewhere.
func TestPageHeaders(t *testing.T) {
	s := New(Options{})
	t.Cleanup(s.Close)
	link, _, err := s.Login("ann")
	if err != nil {
		t.Fatal(err)
	}
	origin := strings.Split(link, "/login")[0]
	for _, path := range []string{"/", "/app.js", "/login?token=x", "/api/v1/agents", "/auth/session"} {
		r := get(t, origin+path)
		csp := r.Header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: Content-Security-Policy %q lacks %q", path, csp, want)
			}
		}
		if r.Header.Get("X-Frame-Options") != "DENY" || r.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: headers %v", path, r.Header)
		}
	}
	// The embedded files name no other origin: no CDN, font or script
	// from elsewhere (links in text would be written as such).
	url := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := fs.ReadFile(static, p)
		if m := url.Find(b); m != nil && !strings.HasSuffix(p, ".svg") {
			t.Errorf("%s refers to %s: the page must load only what the daemon serves", p, m)
		}
		return nil
	})
}

func get(t *testing.T, url string) *http.Response {
	t.Helper()
	r, err := noRedirect.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, r.Body)
	r.Body.Close()
	return r
}
