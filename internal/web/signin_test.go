package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// sessionCookie is the page's sign-in cookie (HttpOnly: read through the
// browser's own protocol, as a thief on the machine would get it off the
// wire): its name and value.
func sessionCookie(t *testing.T, ctx context.Context, port string) (string, string) {
	t.Helper()
	var name, value string
	must(t, chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		res, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{"http://127.0.0.1:" + port + "/"}})
		for _, c := range res.Cookies {
			if strings.HasPrefix(c.Name, "parley_session_") {
				name, value = c.Name, c.Value
			}
		}
		return err
	})))
	if value == "" {
		t.Fatal("the page holds no sign-in cookie")
	}
	return name, value
}

// signedIn reports whether cookie value, sent under the cookie name of
// port, signs in at the dashboard on port.
func signedIn(t *testing.T, port, value string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://127.0.0.1:"+port+"/auth/session", nil)
	req.AddCookie(&http.Cookie{Name: "parley_session_" + port, Value: value})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// impostor listens on addr as another program would while the daemon
// restarts, answering as it can, and records what the page sends it.
type impostor struct {
	srv     *http.Server
	mu      sync.Mutex
	proves  int
	cookies []string // requests that carried a cookie: path
}

func listenImpostor(t *testing.T, addr string) *impostor {
	t.Helper()
	var ln net.Listener
	var err error
	// The daemon has just let the port go; take it.
	for deadline := time.Now().Add(10 * time.Second); ; {
		if ln, err = net.Listen("tcp", addr); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond) // waiting for the kernel to free the port, not for our code
	}
	if err != nil {
		t.Fatalf("take the dashboard's port: %v", err)
	}
	im := &impostor{}
	im.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		im.mu.Lock()
		if r.Header.Get("Cookie") != "" {
			im.cookies = append(im.cookies, r.URL.Path)
		}
		if r.URL.Path == "/auth/prove" {
			im.proves++
		}
		im.mu.Unlock()
		if r.URL.Path == "/auth/prove" {
			json.NewEncoder(w).Encode(map[string]string{"proof": "I-am-the-daemon-trust-me"})
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	})}
	go im.srv.Serve(ln)
	t.Cleanup(func() { im.srv.Close() })
	return im
}

func (im *impostor) seen() (proves int, cookies []string) {
	im.mu.Lock()
	defer im.mu.Unlock()
	return im.proves, append([]string(nil), im.cookies...)
}

// TestSignInCannotBeBorrowed: while the daemon restarts, another local
// program takes the dashboard's port. The open page asks it to prove it is
// the daemon, without its cookie, and sends it nothing more: the page says
// so. The daemon comes back on another port, and the page's cookie,
// renamed for that port, signs in nothing there. Once the port is free
// again, a restart on it lets the page back in by itself.
func TestSignInCannotBeBorrowed(t *testing.T) {
	e := newEnv(t)
	e.Must("join", "--name", "alice", "--role", "planner")
	ctx := tabFor(t, 3*time.Minute)
	e.signIn(t, ctx)
	port := eval[string](t, ctx, `location.port`)
	_, value := sessionCookie(t, ctx, port)

	e.Must("daemon", "stop")
	waitJS(t, ctx, `document.getElementById("conn").textContent !== "live"`, 10*time.Second)
	im := listenImpostor(t, "127.0.0.1:"+port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		proves, cookies := im.seen()
		if len(cookies) > 0 {
			t.Fatalf("the page sent its cookie to the program on its port (%s)", strings.Join(cookies, ", "))
		}
		if proves >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page asked the program on its port to prove itself %d times in 30 s, want 2", proves)
		}
		time.Sleep(50 * time.Millisecond) // polling another process's requests
	}
	waitJS(t, ctx, `document.getElementById("conn").textContent === "impostor"`, 10*time.Second)

	// The daemon comes back, its port taken: on another, where the
	// borrowed cookie is worth nothing.
	e.Must("daemon", "start")
	var l struct{ Addr string }
	if err := json.Unmarshal([]byte(e.Must("dashboard", "--no-open", "--as", "ann", "--json")), &l); err != nil {
		t.Fatal(err)
	}
	_, newPort, _ := net.SplitHostPort(l.Addr)
	if newPort == port {
		t.Fatalf("the daemon listens on %s, which the other program holds", port)
	}
	if code := signedIn(t, newPort, value); code != http.StatusUnauthorized {
		t.Errorf("the page's cookie, renamed for the daemon's new port: %d, want 401", code)
	}
	if _, cookies := im.seen(); len(cookies) > 0 {
		t.Errorf("the page sent its cookie to the program on its port (%s)", strings.Join(cookies, ", "))
	}
}

// TestSignOutAll: `parley dashboard --sign-out-all` ends every sign-in at
// once, open pages included.
func TestSignOutAll(t *testing.T) {
	e := newEnv(t)
	a, b := tabFor(t, 2*time.Minute), tab(t)
	e.signIn(t, a)
	e.signIn(t, b)
	port := eval[string](t, a, `location.port`)
	_, value := sessionCookie(t, a, port)

	// parley dashboard --sign-out-all: both pages show the sign-in screen,
	// and the cookie signs in nothing.
	if out := e.Must("dashboard", "--sign-out-all"); !strings.Contains(out, "ended 2 dashboard sign-in") {
		t.Errorf("sign-out-all: %q", out)
	}
	for _, ctx := range []context.Context{a, b} {
		waitJS(t, ctx, `!document.getElementById("signin").hidden`, 15*time.Second)
	}
	if code := signedIn(t, port, value); code != http.StatusUnauthorized {
		t.Errorf("a cookie after sign-out-all: %d, want 401", code)
	}

}

// TestAdminTokenRotationEndsSignIns: a new admin token ($PARLEY_HOME/token)
// ends the sign-ins made under the old one, and the open page,
// reconnecting, hears so and shows the sign-in screen. (A restart with the
// same token keeps the page signed in: TestReconnectCatchesUp.)
func TestAdminTokenRotationEndsSignIns(t *testing.T) {
	e := newEnv(t)
	a := tabFor(t, 2*time.Minute)
	e.signIn(t, a)
	port := eval[string](t, a, `location.port`)
	_, value := sessionCookie(t, a, port)
	e.Must("daemon", "stop")
	if err := os.WriteFile(filepath.Join(e.home, "token"), []byte(fmt.Sprintf("%064x\n", time.Now().UnixNano())), 0o600); err != nil {
		t.Fatal(err)
	}
	e.Must("daemon", "start")
	waitJS(t, a, `!document.getElementById("signin").hidden`, 30*time.Second)
	if code := signedIn(t, port, value); code != http.StatusUnauthorized {
		t.Errorf("a cookie of the old admin token: %d, want 401", code)
	}
}
