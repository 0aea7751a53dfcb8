package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/testenv"
)

// The gateway's end-to-end tests: the real daemon fronting real upstream MCP
// servers (internal/gateway/testdata/upstream, a go-sdk server, and npm's
// server-everything), driven by the real CLI and go-sdk clients through
// `parley mcp serve --profile gateway`.

// upstreamBin is the go-sdk test upstream, built once for every suite.
func upstreamBin(t testing.TB) string {
	t.Helper()
	bin, err := testenv.Binary(testenv.Upstream)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

type upstreamStatus struct {
	Name      string  `json:"name"`
	State     string  `json:"state"`
	Error     string  `json:"error"`
	Restarts  int     `json:"restarts"`
	Tools     int     `json:"tools"`
	Enabled   bool    `json:"enabled"`
	NextRetry *string `json:"next_retry"`
}

func (e *env) upstreams(t testing.TB) map[string]upstreamStatus {
	t.Helper()
	var res struct {
		Upstreams []upstreamStatus `json:"upstreams"`
	}
	e.MustJSON(&res, "upstream", "list")
	m := map[string]upstreamStatus{}
	for _, u := range res.Upstreams {
		m[u.Name] = u
	}
	return m
}

// waitUpstream polls `parley upstream list` until cond holds for name.
func (e *env) waitUpstream(t testing.TB, name, what string, cond func(upstreamStatus) bool) upstreamStatus {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		u, ok := e.upstreams(t)[name]
		if ok && cond(u) {
			return u
		}
		if time.Now().After(deadline) {
			t.Fatalf("upstream %s: timed out waiting for %s; last %+v", name, what, u)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func isReady(u upstreamStatus) bool { return u.State == "ready" }

func TestGatewayCLI(t *testing.T) {
	up := upstreamBin(t)
	e := newEnv(t)
	e.Must("daemon", "start")

	out := e.Must("upstream", "add", "up", "--", up)
	if !strings.Contains(out, "upstream up is ready: 11 tools (gatewaytest 1.0.0)") {
		t.Errorf("upstream add: got %q, want it to report the server ready with 11 tools", out)
	}

	t.Run("tools list", func(t *testing.T) {
		var res struct {
			Tools []mcp.Tool `json:"tools"`
		}
		e.MustJSON(&res, "tools", "list", "--server", "up")
		var names []string
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
		}
		if len(names) != 11 || !slices.Contains(names, "up__echo") || !slices.Contains(names, "up__weather") {
			t.Errorf("got tools %v, want up's 11 tools", names)
		}
		if text := e.Must("tools", "list"); !strings.Contains(text, "up__echo") || !strings.Contains(text, "Echoes text back.") {
			t.Errorf("tools list: got %q, want a table with up__echo and its description", text)
		}
	})

	t.Run("tools call", func(t *testing.T) {
		tests := []struct {
			name     string
			args     []string
			wantCode int
			check    func(t *testing.T, res map[string]any, stderr string)
		}{
			{"arg", []string{"up__echo", "--arg", "text=42"}, 0, func(t *testing.T, res map[string]any, _ string) {
				// The schema says string: 42 stays "42".
				if got := fmt.Sprint(res["content"]); !strings.Contains(got, "echo: 42") {
					t.Errorf("got content %s, want echo: 42", got)
				}
			}},
			{"json", []string{"up__weather", "--json", `{"city": "Oslo"}`}, 0, func(t *testing.T, res map[string]any, _ string) {
				sc, _ := res["structuredContent"].(map[string]any)
				if sc["city"] != "Oslo" || sc["temperature"] != 21.5 {
					t.Errorf("got structuredContent %v, want Oslo at 21.5", sc)
				}
			}},
			{"image", []string{"up__image"}, 0, func(t *testing.T, res map[string]any, _ string) {
				if got := fmt.Sprint(res["content"]); !strings.Contains(got, "image/png") {
					t.Errorf("got content %s, want an image/png", got)
				}
			}},
			{"tool error", []string{"up__fail"}, 1, func(t *testing.T, res map[string]any, _ string) {
				if res["isError"] != true {
					t.Errorf("got %v, want isError", res)
				}
			}},
			{"unknown tool", []string{"up__nope"}, 4, func(t *testing.T, _ map[string]any, stderr string) {
				if !strings.Contains(stderr, `upstream "up" has no tool "nope"`) {
					t.Errorf("got stderr %q, want it to name the missing tool", stderr)
				}
			}},
			{"protocol error", []string{"up__protocol_error"}, 2, func(t *testing.T, _ map[string]any, stderr string) {
				if !strings.Contains(stderr, "no good, on purpose") {
					t.Errorf("got stderr %q, want the upstream's message", stderr)
				}
			}},
			{"bad json", []string{"up__echo", "--json", "{nope"}, 2, func(t *testing.T, _ map[string]any, stderr string) {
				if !strings.Contains(stderr, "--json") {
					t.Errorf("got stderr %q, want it to blame --json", stderr)
				}
			}},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				stdout, stderr, code := e.Run(append([]string{"tools", "call"}, tc.args...)...)
				if code != tc.wantCode {
					t.Fatalf("got exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.wantCode, stdout, stderr)
				}
				var res map[string]any
				if tc.wantCode != 2 && stdout != "" {
					if err := json.Unmarshal([]byte(stdout), &res); err != nil {
						t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
					}
				}
				tc.check(t, res, stderr)
			})
		}
	})

	t.Run("broken command line", func(t *testing.T) {
		out := e.Must("upstream", "add", "broken", "--", "/nonexistent/mcp-server", "--flag")
		if !strings.Contains(out, "upstream broken failed") || !strings.Contains(out, "no such file or directory") {
			t.Errorf("upstream add: got %q, want a failure that says why", out)
		}
		list := e.Must("upstream", "list")
		if !strings.Contains(list, "broken: connect: fork/exec /nonexistent/mcp-server: no such file or directory") {
			t.Errorf("upstream list: got %q, want the broken upstream's error", list)
		}
		u := e.upstreams(t)["broken"]
		if u.State != "failed" || u.NextRetry == nil {
			t.Errorf("got %+v, want failed with a next retry", u)
		}
		// The rest still works.
		e.Must("tools", "call", "up__echo", "--arg", "text=fine")
		e.Must("upstream", "remove", "broken")
	})

	t.Run("bad input changes nothing", func(t *testing.T) {
		cfg := filepath.Join(e.home, "config.toml")
		before, err := os.ReadFile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			args []string
			want string
		}{
			{[]string{"upstream", "add", "bad name", "--", "x"}, "use letters, digits"},
			{[]string{"upstream", "add", "a__b", "--", "x"}, `must not contain "__"`},
			{[]string{"upstream", "add", "up", "--", "x"}, "exists already"},
			{[]string{"upstream", "add", "none"}, "set command"},
			{[]string{"upstream", "add", "both", "--url", "http://127.0.0.1:1/mcp", "--", "x"}, "only one of command and url"},
			{[]string{"upstream", "add", "pat", "--deny", "[", "--", "x"}, "bad tool pattern"},
			{[]string{"upstream", "add", "env", "--env", "NOVALUE", "--", "x"}, "KEY=VALUE"},
			{[]string{"upstream", "remove", "ghost"}, `no upstream named "ghost"`},
			{[]string{"upstream", "disable", "ghost"}, `no upstream named "ghost"`},
		}
		for _, tc := range tests {
			_, stderr, code := e.Run(tc.args...)
			if code == 0 || !strings.Contains(stderr, tc.want) {
				t.Errorf("parley %s: got exit %d, stderr %q; want a failure mentioning %q", strings.Join(tc.args, " "), code, stderr, tc.want)
			}
		}
		after, _ := os.ReadFile(cfg)
		if string(after) != string(before) {
			t.Errorf("config.toml changed:\n%s\nwant\n%s", after, before)
		}
	})
}

func TestGatewayReloadKeepsSessions(t *testing.T) {
	up := upstreamBin(t)
	e := newEnv(t)
	e.Must("upstream", "add", "one", "--", up) // the daemon is not running yet
	changed := make(chan struct{}, 10)
	gw := e.Session(&mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }},
		"--profile", "gateway")
	native := e.Session(nil, "--workspace", "w", "--agent", "alice")
	e.waitUpstream(t, "one", "ready", isReady)
	if got := toolNames(t, gw); !slices.Contains(got, "one__echo") || slices.Contains(got, "send_message") {
		t.Fatalf("got gateway tools %v, want one's tools and no native ones", got)
	}
	expectChange := func(what string) {
		t.Helper()
		select {
		case <-changed:
		case <-time.After(15 * time.Second):
			t.Fatalf("no notifications/tools/list_changed after %s", what)
		}
	}
	waitTools := func(what string, cond func([]string) bool) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for names := toolNames(t, gw); !cond(names); names = toolNames(t, gw) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; tools %v", what, names)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	// CLI edit: add, disable, enable, remove; each reaches the open session.
	e.Must("upstream", "add", "two", "--allow", "echo", "--", up)
	expectChange("upstream add")
	waitTools("two__echo", func(n []string) bool { return slices.Contains(n, "two__echo") && !slices.Contains(n, "two__pid") })
	if res := call(t, gw, "two__echo", map[string]any{"text": "via two"}, nil); text(res) != "echo: via two" {
		t.Errorf("got %q, want echo: via two", text(res))
	}
	e.Must("upstream", "disable", "two")
	waitTools("two's tools to go", func(n []string) bool { return !slices.Contains(n, "two__echo") })
	if u := e.upstreams(t)["two"]; u.State != "disabled" || u.Enabled {
		t.Errorf("got %+v, want two disabled", u)
	}
	e.Must("upstream", "enable", "two")
	waitTools("two's tools to return", func(n []string) bool { return slices.Contains(n, "two__echo") })
	e.Must("upstream", "remove", "two")
	waitTools("two's tools to go for good", func(n []string) bool { return !slices.Contains(n, "two__echo") })

	// A hand edit is picked up by the file watch.
	cfg := filepath.Join(e.home, "config.toml")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hand := string(b) + fmt.Sprintf("\n[[upstream]]\nname = \"three\"\ncommand = %q\ntimeout = \"5s\"\n[upstream.tools]\ndeny = [\"*_tool\"]\n", up)
	if err := os.WriteFile(cfg, []byte(hand), 0o600); err != nil {
		t.Fatal(err)
	}
	waitTools("three's tools", func(n []string) bool {
		return slices.Contains(n, "three__echo") && !slices.Contains(n, "three__add_tool")
	})

	// A broken hand edit changes nothing, and reload says why.
	if err := os.WriteFile(cfg, []byte(hand+"\n[[upstream]]\nname = \"bad\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := e.Run("daemon", "reload")
	if code != 2 || !strings.Contains(stderr, `upstream "bad": set command`) || !strings.Contains(stderr, "nothing changed") {
		t.Errorf("daemon reload: got exit %d, stderr %q; want exit 2 naming the problem", code, stderr)
	}
	if u := e.upstreams(t); u["three"].State != "ready" || u["one"].State != "ready" {
		t.Errorf("got %+v after a bad reload, want one and three still ready", u)
	}

	// The sessions lived through all of it.
	if res := call(t, gw, "one__echo", map[string]any{"text": "still"}, nil); text(res) != "echo: still" {
		t.Errorf("gateway session: got %q, want echo: still", text(res))
	}
	mustCall(t, native, "list_agents", map[string]any{}, nil)
}

func TestGatewayCallsThroughDaemon(t *testing.T) {
	up := upstreamBin(t)
	mark := t.TempDir()
	e := newEnv(t)
	e.Must("upstream", "add", "up", "--env", "UPSTREAM_MARK="+mark, "--", up)
	e.Must("upstream", "add", "quick", "--timeout", "300ms", "--env", "UPSTREAM_MARK="+mark, "--", up)
	var mu sync.Mutex
	var progress []*mcp.ProgressNotificationParams
	gw := e.Session(&mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		progress = append(progress, req.Params)
		mu.Unlock()
	}}, "--profile", "gateway")
	e.waitUpstream(t, "up", "ready", isReady)
	e.waitUpstream(t, "quick", "ready", isReady)
	waitMark := func(name string) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			if _, err := os.Stat(filepath.Join(mark, name)); err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the upstream never wrote mark %s", name)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	t.Run("progress", func(t *testing.T) {
		params := &mcp.CallToolParams{Name: "up__slow", Arguments: map[string]any{"steps": 4, "ms": 50}}
		params.SetProgressToken(77)
		res, err := gw.CallTool(context.Background(), params)
		if err != nil || text(res) != "done after 4 steps" {
			t.Fatalf("got %v, %v", res, err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(progress) < 3 {
			t.Fatalf("got %d progress notifications, want at least 3", len(progress))
		}
		for i, p := range progress[:3] {
			if fmt.Sprint(p.ProgressToken) != "77" || p.Progress != float64(i+1) || p.Total != 4 {
				t.Errorf("notification %d: got %+v, want token 77 and progress %d of 4", i, p, i+1)
			}
		}
	})

	t.Run("cancellation", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			_, err := gw.CallTool(ctx, &mcp.CallToolParams{Name: "up__slow", Arguments: map[string]any{"steps": 100, "ms": 100, "id": "e2e"}})
			errc <- err
		}()
		time.Sleep(300 * time.Millisecond)
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want context.Canceled", err)
		}
		waitMark("cancelled-e2e")
	})

	t.Run("timeout", func(t *testing.T) {
		res := call(t, gw, "quick__slow", map[string]any{"steps": 100, "ms": 100, "id": "late"}, nil)
		if !res.IsError || text(res) != "upstream quick timed out after 300ms" {
			t.Errorf("got %q (isError %v), want the timeout tool error", text(res), res.IsError)
		}
		waitMark("cancelled-late")
		_, stderr, code := e.Run("tools", "call", "quick__slow", "--json", `{"steps": 100, "ms": 100}`)
		if code != 3 || !strings.Contains(stderr, "upstream quick timed out after 300ms") {
			t.Errorf("tools call: got exit %d, stderr %q; want exit 3 (timed out) with the timeout", code, stderr)
		}
	})

	t.Run("crash and come back", func(t *testing.T) {
		var before, after struct {
			PID int `json:"pid"`
		}
		call(t, gw, "up__pid", nil, &before)
		res := call(t, gw, "up__crash", nil, nil)
		if !res.IsError || !strings.Contains(text(res), "not retried") {
			t.Errorf("got %q (isError %v), want a tool error saying the call was not retried", text(res), res.IsError)
		}
		// The next call waits out the short first backoff.
		if res := call(t, gw, "up__pid", nil, &after); res.IsError || after.PID == before.PID || after.PID == 0 {
			t.Errorf("got %q, pid %d (was %d); want a new process", text(res), after.PID, before.PID)
		}
		u := e.waitUpstream(t, "up", "ready", isReady)
		if u.Restarts != 1 {
			t.Errorf("got %d restarts, want 1 (the crashing call must not be retried)", u.Restarts)
		}
	})
}

func TestGatewayServerEverything(t *testing.T) {
	script, _ := filepath.Abs("../test/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	if _, err := os.Stat(script); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("server-everything is not installed (run scripts/test-deps): %v", err)
		}
		t.Skipf("server-everything is not installed (run scripts/test-deps): %v", err)
	}
	e := newEnv(t)
	e.Must("upstream", "add", "everything", "--", "node", script, "stdio")
	gw := e.Session(nil, "--profile", "gateway")
	e.waitUpstream(t, "everything", "ready", isReady)
	if got := text(call(t, gw, "everything__echo", map[string]any{"message": "hi"}, nil)); got != "Echo: hi" {
		t.Errorf("got %q, want Echo: hi", got)
	}
	var w struct {
		Temperature float64 `json:"temperature"`
	}
	call(t, gw, "everything__get-structured-content", map[string]any{"location": "New York"}, &w)
	if w.Temperature != 33 {
		t.Errorf("got temperature %v, want New York's 33", w.Temperature)
	}
	out := e.Must("tools", "call", "everything__get-sum", "--arg", "a=2", "--arg", "b=40")
	if !strings.Contains(out, "The sum of 2 and 40 is 42.") {
		t.Errorf("tools call get-sum: got %s", out)
	}
}

// TestUpstreamEditKeepsComments: the CLI asks the daemon, which alone writes
// config.toml, and edits it in place: the user's comments and settings stay,
// and removing what was added gives back the file byte for byte.
func TestUpstreamEditKeepsComments(t *testing.T) {
	up := upstreamBin(t)
	e := newEnv(t)
	cfg := filepath.Join(e.home, "config.toml")
	const mine = `# My Parley settings.
retention = "30d" # a month is plenty

# Notes on upstreams go here.
`
	if err := os.WriteFile(cfg, []byte(mine), 0o600); err != nil {
		t.Fatal(err)
	}
	read := func() string {
		t.Helper()
		b, err := os.ReadFile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	e.Must("upstream", "add", "one", "--wait", "0", "--", up) // starts the daemon
	added := read()
	if !strings.HasPrefix(added, mine) || !strings.Contains(added, "[[upstream]]\nname = 'one'\n") {
		t.Fatalf("after add: got\n%s\nwant the file as it was, then one's table", added)
	}
	e.Must("upstream", "disable", "one")
	if got, want := read(), strings.Replace(added, "name = 'one'\n", "enabled = false\nname = 'one'\n", 1); got != want {
		t.Errorf("after disable: got\n%s\nwant\n%s", got, want)
	}
	if u := e.upstreams(t)["one"]; u.State != "disabled" {
		t.Errorf("got %+v, want one disabled at once", u)
	}
	e.Must("upstream", "remove", "one")
	if got := read(); got != mine {
		t.Errorf("after remove: got\n%s\nwant the file as the user wrote it:\n%s", got, mine)
	}
}
