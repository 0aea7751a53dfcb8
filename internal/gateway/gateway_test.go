package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/config"
	"github.com/parley-dev/parley/internal/gateway"
	"github.com/parley-dev/parley/internal/gateway/gatewaytest"
	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/testenv"
)

// upstreamBin is testdata/upstream, built once for every suite.
var upstreamBin string

func TestMain(m *testing.M) {
	var err error
	if upstreamBin, err = testenv.Binary(testenv.Upstream); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// stdio is an upstream running testdata/upstream; mark, if not empty, is
// its directory of event marks.
func stdio(name, mark string, args ...string) config.Upstream {
	u := config.Upstream{Name: name, Command: upstreamBin, Args: args}
	if mark != "" {
		u.Env = map[string]string{"UPSTREAM_MARK": mark}
	}
	return u
}

// fixture is a Manager, an MCP server with the gateway profile, and a go-sdk
// client session connected to that server.
type fixture struct {
	t   testing.TB
	m   *gateway.Manager
	srv *mcp.Server
}

func newFixture(t testing.TB, opts *gateway.Options, ups ...config.Upstream) *fixture {
	t.Helper()
	m := gateway.New(opts)
	t.Cleanup(m.Close)
	srv := mcp.NewServer(&mcp.Implementation{Name: "parley-test"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}, Tools: &mcp.ToolCapabilities{ListChanged: true}},
	})
	m.Profile(srv)
	m.Apply(ups)
	return &fixture{t: t, m: m, srv: srv}
}

// connect opens a client session to the fixture's server.
func (f *fixture) connect(opts *mcp.ClientOptions) *mcp.ClientSession {
	f.t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := f.srv.Connect(ctx, st, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client"}, opts).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { cs.Close(); ss.Wait() })
	return cs
}

// status returns the named upstream's status.
func status(t testing.TB, m *gateway.Manager, name string) gateway.Status {
	t.Helper()
	for _, st := range m.Status() {
		if st.Name == name {
			return st
		}
	}
	t.Fatalf("no upstream %q in status %+v", name, m.Status())
	return gateway.Status{}
}

// waitFor polls until cond holds, failing the test after 15s.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func waitState(t testing.TB, m *gateway.Manager, name, state string) gateway.Status {
	t.Helper()
	var st gateway.Status
	waitFor(t, name+" to be "+state, func() bool {
		st = status(t, m, name)
		return st.State == state
	})
	return st
}

func callTool(t testing.TB, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func toolNames(t testing.TB, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

func structured(t testing.TB, res *mcp.CallToolResult, out any) {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("decode structured content %s: %v", b, err)
	}
}

var allTools = []string{"up__add_tool", "up__crash", "up__echo", "up__fail", "up__image", "up__log", "up__pid", "up__protocol_error", "up__remove_tool", "up__slow", "up__weather"}

func TestListAndCall(t *testing.T) {
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			var up config.Upstream
			if transport == "stdio" {
				up = stdio("up", "")
			} else {
				var mu sync.Mutex
				var auth []string
				h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return gatewaytest.NewServer(nil) }, nil)
				hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					mu.Lock()
					auth = append(auth, r.Header.Get("Authorization"))
					mu.Unlock()
					h.ServeHTTP(w, r)
				}))
				t.Cleanup(hs.Close)
				up = config.Upstream{Name: "up", URL: hs.URL + "/mcp", Headers: map[string]string{"Authorization": "Bearer s3cret"}}
				t.Cleanup(func() {
					mu.Lock()
					defer mu.Unlock()
					if len(auth) == 0 || slices.ContainsFunc(auth, func(a string) bool { return a != "Bearer s3cret" }) {
						t.Errorf("got Authorization headers %q, want every request to carry the configured one", auth)
					}
				})
			}
			f := newFixture(t, nil, up)
			st := waitState(t, f.m, "up", gateway.StateReady)
			if st.Tools != len(allTools) || st.Server != "gatewaytest 1.0.0" || st.Protocol != "2025-11-25" || st.Transport != transport {
				t.Errorf("got status %+v, want %d tools from gatewaytest 1.0.0 over %s, protocol 2025-11-25", st, len(allTools), transport)
			}
			cs := f.connect(nil)
			if got := toolNames(t, cs); !slices.Equal(got, allTools) {
				t.Fatalf("got tools %v, want %v", got, allTools)
			}

			// Schemas are the upstream's.
			res, _ := cs.ListTools(context.Background(), nil)
			for _, tl := range res.Tools {
				if tl.Name != "up__weather" {
					continue
				}
				in, _ := json.Marshal(tl.InputSchema)
				out, _ := json.Marshal(tl.OutputSchema)
				if !strings.Contains(string(in), `"city"`) || !strings.Contains(string(out), `"temperature"`) {
					t.Errorf("got weather schemas in=%s out=%s, want the upstream's city input and temperature output", in, out)
				}
			}

			tests := []struct {
				name  string
				tool  string
				args  any
				check func(t *testing.T, res *mcp.CallToolResult)
			}{
				{"text", "up__echo", map[string]any{"text": "hello"}, func(t *testing.T, res *mcp.CallToolResult) {
					if res.IsError || text(res) != "echo: hello" {
						t.Errorf("got %q (isError %v), want %q", text(res), res.IsError, "echo: hello")
					}
				}},
				{"structured", "up__weather", map[string]any{"city": "Oslo"}, func(t *testing.T, res *mcp.CallToolResult) {
					var w gatewaytest.WeatherOut
					structured(t, res, &w)
					if want := (gatewaytest.WeatherOut{City: "Oslo", Temperature: 21.5, Conditions: "sunny"}); w != want {
						t.Errorf("got structured %+v, want %+v", w, want)
					}
					if !strings.Contains(text(res), `"Oslo"`) {
						t.Errorf("got text %q, want the upstream's JSON rendering", text(res))
					}
				}},
				{"image", "up__image", nil, func(t *testing.T, res *mcp.CallToolResult) {
					if len(res.Content) != 2 {
						t.Fatalf("got %d contents, want 2", len(res.Content))
					}
					img, ok := res.Content[1].(*mcp.ImageContent)
					if !ok || img.MIMEType != "image/png" || !bytes.Equal(img.Data, gatewaytest.PNG) {
						t.Errorf("got content %#v, want the upstream's PNG", res.Content[1])
					}
				}},
				{"tool error", "up__fail", nil, func(t *testing.T, res *mcp.CallToolResult) {
					if !res.IsError || text(res) != "it failed, on purpose" {
						t.Errorf("got %q (isError %v), want the upstream's tool error", text(res), res.IsError)
					}
				}},
			}
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) { tc.check(t, callTool(t, cs, tc.tool, tc.args)) })
			}

			// Calls outside MCP (the JSON API) take the same path.
			r, err := f.m.Call(context.Background(), "up__echo", json.RawMessage(`{"text":"api"}`))
			if err != nil || text(r) != "echo: api" {
				t.Errorf("Call up__echo: got %v, %v; want echo: api", r, err)
			}
			// An upstream's protocol error comes back as one, code and all.
			_, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "up__protocol_error"})
			var je *jsonrpc.Error
			if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams || je.Message != "no good, on purpose" {
				t.Errorf("call up__protocol_error: got %v, want the upstream's JSON-RPC error", err)
			}
			// Arguments the upstream rejects get its own answer.
			r, err = f.m.Call(context.Background(), "up__echo", json.RawMessage(`{"text":7}`))
			if err == nil && (!r.IsError || !strings.Contains(text(r), "text")) {
				t.Errorf("Call up__echo with a bad argument: got %q (isError %v), want the upstream's complaint", text(r), r.IsError)
			}
		})
	}
}

func TestProgressForwarding(t *testing.T) {
	f := newFixture(t, nil, stdio("up", ""))
	waitState(t, f.m, "up", gateway.StateReady)
	var mu sync.Mutex
	var got []*mcp.ProgressNotificationParams
	cs := f.connect(&mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		got = append(got, req.Params)
		mu.Unlock()
	}})
	params := &mcp.CallToolParams{Name: "up__slow", Arguments: map[string]any{"steps": 4, "ms": 30}}
	params.SetProgressToken("my-token")
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || text(res) != "done after 4 steps" {
		t.Fatalf("call slow: got %v, %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	// The last one may trail the result; the others came before it.
	if len(got) < 3 {
		t.Fatalf("got %d progress notifications, want at least 3", len(got))
	}
	for i, p := range got[:3] {
		if p.ProgressToken != "my-token" || p.Progress != float64(i+1) || p.Total != 4 || p.Message != fmt.Sprintf("step %d", i+1) {
			t.Errorf("notification %d: got %+v, want token my-token, progress %d of 4", i, p, i+1)
		}
	}
}

func TestCancellation(t *testing.T) {
	mark := t.TempDir()
	f := newFixture(t, nil, stdio("up", mark))
	waitState(t, f.m, "up", gateway.StateReady)
	cs := f.connect(nil)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__slow", Arguments: map[string]any{"steps": 100, "ms": 100, "id": "c1"}})
		errc <- err
	}()
	time.Sleep(300 * time.Millisecond)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	waitFor(t, "the upstream to see the cancellation", func() bool {
		_, err := os.Stat(filepath.Join(mark, "cancelled-c1"))
		return err == nil
	})
	// The session survives a cancelled call.
	if res := callTool(t, cs, "up__echo", map[string]any{"text": "still here"}); text(res) != "echo: still here" {
		t.Errorf("got %q after a cancellation, want echo: still here", text(res))
	}
}

func TestTimeout(t *testing.T) {
	mark := t.TempDir()
	up := stdio("up", mark)
	up.Timeout = config.Duration(300 * time.Millisecond)
	f := newFixture(t, nil, up)
	waitState(t, f.m, "up", gateway.StateReady)
	cs := f.connect(nil)
	start := time.Now()
	res := callTool(t, cs, "up__slow", map[string]any{"steps": 100, "ms": 100, "id": "t1"})
	if !res.IsError || text(res) != "upstream up timed out after 300ms" {
		t.Errorf("got %q (isError %v), want the tool error %q", text(res), res.IsError, "upstream up timed out after 300ms")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the call took %s, want it ended by the 300ms timeout", d)
	}
	waitFor(t, "the upstream to see the cancellation", func() bool {
		_, err := os.Stat(filepath.Join(mark, "cancelled-t1"))
		return err == nil
	})
	_, err := f.m.Call(context.Background(), "up__slow", json.RawMessage(`{"steps":100,"ms":100}`))
	if hub.KindOf(err) != hub.Timeout {
		t.Errorf("Call: got %v (kind %v), want a Timeout error", err, hub.KindOf(err))
	}
}

func TestCrashAndRestart(t *testing.T) {
	mark := t.TempDir()
	// A 1s first backoff lets the test see the failed state.
	f := newFixture(t, &gateway.Options{MinBackoff: time.Second}, stdio("up", mark))
	waitState(t, f.m, "up", gateway.StateReady)
	cs := f.connect(nil)
	var before gatewaytest.PIDOut
	structured(t, callTool(t, cs, "up__pid", nil), &before)

	res := callTool(t, cs, "up__crash", nil)
	if !res.IsError || !strings.Contains(text(res), "not retried") {
		t.Errorf("got %q (isError %v), want a tool error saying the call was not retried", text(res), res.IsError)
	}
	st := waitState(t, f.m, "up", gateway.StateFailed)
	for _, want := range []string{"exit status 3", "crashing on purpose"} {
		if !strings.Contains(st.Error, want) {
			t.Errorf("got error %q in status, want it to mention %q", st.Error, want)
		}
	}
	if st.NextRetry == nil {
		t.Errorf("got no next_retry in a failed status")
	}
	// A call during the backoff waits for the restart and goes through.
	var after gatewaytest.PIDOut
	structured(t, callTool(t, cs, "up__pid", nil), &after)
	if after.PID == before.PID || after.Calls != 1 {
		t.Errorf("got pid %d (calls %d) after the crash, want a new process (was %d) on its first call", after.PID, after.Calls, before.PID)
	}
	st = status(t, f.m, "up")
	// Exactly one restart: the crashing call was not retried.
	if st.State != gateway.StateReady || st.Restarts != 1 || st.Error != "" {
		t.Errorf("got status %+v, want ready after exactly 1 restart", st)
	}
}

// TestBackoffGrows runs on a fake clock: each restart of an upstream that
// keeps failing comes exactly one backoff after the failure, and the backoff
// doubles from MinBackoff up to MaxBackoff.
func TestBackoffGrows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const least, most = 50 * time.Millisecond, 400 * time.Millisecond
		m := gateway.New(&gateway.Options{MinBackoff: least, MaxBackoff: most})
		defer m.Close()
		m.Apply([]config.Upstream{stdio("bad", "", "-exit", "2")})
		start := time.Now()
		var elapsed time.Duration
		for i, want := range []time.Duration{50, 100, 200, 400, 400, 400} {
			want *= time.Millisecond
			// The attempt fails (a real process exits) and the upstream
			// sleeps its backoff: the one thing left to wait for.
			synctest.Wait()
			st := status(t, m, "bad")
			if st.State != gateway.StateFailed || st.Restarts != i || st.NextRetry == nil {
				t.Fatalf("attempt %d: got state %s after %d restarts (next retry %v), want failed after %d", i+1, st.State, st.Restarts, st.NextRetry, i)
			}
			if got := st.Since.Sub(start); got != elapsed {
				t.Errorf("attempt %d failed at %s, want %s: a restart came later or sooner than its backoff", i+1, got, elapsed)
			}
			if got := st.NextRetry.Sub(st.Since); got != want {
				t.Errorf("after %d failures: got a %s backoff, want %s", i+1, got, want)
			}
			time.Sleep(want)
			elapsed += want
		}
	})
}

func TestBrokenCommandLine(t *testing.T) {
	f := newFixture(t, nil,
		config.Upstream{Name: "missing", Command: "/nonexistent/mcp-server"},
		stdio("exits", "", "-exit", "2"),
		stdio("good", ""),
	)
	waitState(t, f.m, "good", gateway.StateReady)
	tests := []struct{ name, want string }{
		{"missing", "no such file or directory"},
		{"exits", "refusing to start: bad configuration"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := waitState(t, f.m, tc.name, gateway.StateFailed)
			if !strings.Contains(st.Error, tc.want) {
				t.Errorf("got error %q, want it to mention %q", st.Error, tc.want)
			}
			_, err := f.m.Call(context.Background(), tc.name+"__x", nil)
			if hub.KindOf(err) != hub.Unavailable || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Call: got %v, want an unavailable error that says why", err)
			}
		})
	}
	cs := f.connect(nil)
	if res := callTool(t, cs, "good__echo", map[string]any{"text": "ok"}); text(res) != "echo: ok" {
		t.Errorf("got %q from the good upstream, want echo: ok", text(res))
	}
}

func TestListChangedPropagation(t *testing.T) {
	f := newFixture(t, nil, stdio("up", ""))
	waitState(t, f.m, "up", gateway.StateReady)
	changed := make(chan struct{}, 10)
	cs := f.connect(&mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }})
	waitNotified := func() {
		t.Helper()
		select {
		case <-changed:
		case <-time.After(10 * time.Second):
			t.Fatal("no notifications/tools/list_changed reached the client")
		}
	}
	callTool(t, cs, "up__add_tool", map[string]any{"name": "extra"})
	waitNotified()
	waitFor(t, "up__extra to be listed", func() bool { return slices.Contains(toolNames(t, cs), "up__extra") })
	if res := callTool(t, cs, "up__extra", nil); text(res) != "I am extra" {
		t.Errorf("got %q, want I am extra", text(res))
	}
	callTool(t, cs, "up__remove_tool", map[string]any{"name": "extra"})
	waitNotified()
	waitFor(t, "up__extra to be gone", func() bool { return !slices.Contains(toolNames(t, cs), "up__extra") })
}

func TestFilters(t *testing.T) {
	tests := []struct {
		name        string
		allow, deny []string
		want        []string
	}{
		{"allow", []string{"echo", "we*"}, nil, []string{"up__echo", "up__weather"}},
		{"deny", nil, []string{"*_tool", "crash", "s?ow", "protocol_*"}, []string{"up__echo", "up__fail", "up__image", "up__log", "up__pid", "up__weather"}},
		{"both", []string{"e*", "w*", "pi?"}, []string{"weather"}, []string{"up__echo", "up__pid"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			up := stdio("up", "")
			up.Tools = &config.ToolFilter{Allow: tc.allow, Deny: tc.deny}
			f := newFixture(t, nil, up)
			if st := waitState(t, f.m, "up", gateway.StateReady); st.Tools != len(tc.want) {
				t.Errorf("got %d tools in status, want %d", st.Tools, len(tc.want))
			}
			cs := f.connect(nil)
			if got := toolNames(t, cs); !slices.Equal(got, tc.want) {
				t.Errorf("got tools %v, want %v", got, tc.want)
			}
			for _, name := range allTools {
				if slices.Contains(tc.want, name) {
					continue
				}
				if _, err := f.m.Call(context.Background(), name, nil); hub.KindOf(err) != hub.NotFound {
					t.Errorf("Call %s (filtered out): got %v, want a NotFound error", name, err)
				}
			}
		})
	}
}

func TestApply(t *testing.T) {
	f := newFixture(t, nil, stdio("a", ""), stdio("b", ""))
	waitState(t, f.m, "a", gateway.StateReady)
	waitState(t, f.m, "b", gateway.StateReady)
	changed := make(chan struct{}, 10)
	cs := f.connect(&mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }})
	pid := func(name string) int {
		var p gatewaytest.PIDOut
		structured(t, callTool(t, cs, name+"__pid", nil), &p)
		return p.PID
	}
	pidA := pid("a")

	// A new filter applies without a restart.
	a := stdio("a", "")
	a.Tools = &config.ToolFilter{Allow: []string{"pid", "echo"}}
	off := false
	b := stdio("b", "")
	b.Enabled = &off
	f.m.Apply([]config.Upstream{a, b})
	waitFor(t, "the filter and the disabling to apply", func() bool {
		return slices.Equal(toolNames(t, cs), []string{"a__echo", "a__pid"})
	})
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no notifications/tools/list_changed after a reload")
	}
	if got := pid("a"); got != pidA {
		t.Errorf("got pid %d after a filter change, want the same process %d", got, pidA)
	}
	if st := status(t, f.m, "b"); st.State != gateway.StateDisabled || st.Enabled {
		t.Errorf("got %+v, want b disabled", st)
	}

	// A new command line restarts; a removed upstream goes away.
	a.Args = []string{"-mark", t.TempDir()}
	f.m.Apply([]config.Upstream{a})
	waitState(t, f.m, "a", gateway.StateReady)
	if got := pid("a"); got == pidA {
		t.Errorf("got the same pid %d after a command change, want a new process", got)
	}
	if got := f.m.Status(); len(got) != 1 {
		t.Errorf("got %d upstreams in status, want 1", len(got))
	}
}

func TestLogForwarding(t *testing.T) {
	f := newFixture(t, nil, stdio("up", ""))
	waitState(t, f.m, "up", gateway.StateReady)
	logs := make(chan *mcp.LoggingMessageParams, 10)
	cs := f.connect(&mcp.ClientOptions{LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) { logs <- req.Params }})
	if err := cs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	callTool(t, cs, "up__log", map[string]any{"level": "debug", "text": "below the level"})
	callTool(t, cs, "up__log", map[string]any{"level": "warning", "text": "hello from upstream"})
	select {
	case p := <-logs:
		if p.Data != "hello from upstream" || p.Level != "warning" || p.Logger != "up/test" {
			t.Errorf("got log %+v, want the warning from logger up/test", p)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream's log message did not reach the caller")
	}
}

func TestCallWaitsForConnecting(t *testing.T) {
	m := gateway.New(nil)
	t.Cleanup(m.Close)
	m.Apply([]config.Upstream{stdio("up", "")})
	// The call waits for the session and the tool list instead of failing.
	res, err := m.Call(context.Background(), "up__echo", json.RawMessage(`{"text":"early"}`))
	if err != nil || text(res) != "echo: early" {
		t.Errorf("got %v, %v; want echo: early", res, err)
	}
}

func TestHTTPReconnect(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	serve := func(ln net.Listener) *http.Server {
		srv := gatewaytest.NewServer(nil)
		hs := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)}
		go hs.Serve(ln)
		return hs
	}
	hs := serve(ln)
	f := newFixture(t, &gateway.Options{MinBackoff: 50 * time.Millisecond}, config.Upstream{Name: "up", URL: "http://" + addr + "/mcp"})
	waitState(t, f.m, "up", gateway.StateReady)
	cs := f.connect(nil)
	var before gatewaytest.PIDOut
	structured(t, callTool(t, cs, "up__pid", nil), &before)

	// The server restarts and forgets its sessions.
	hs.Close()
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	hs = serve(ln)
	t.Cleanup(func() { hs.Close() })
	waitFor(t, "a reconnect", func() bool { st := status(t, f.m, "up"); return st.Restarts >= 1 && st.State == gateway.StateReady })
	var after gatewaytest.PIDOut
	structured(t, callTool(t, cs, "up__pid", nil), &after)
	if after.Calls != 1 {
		t.Errorf("got call count %d, want 1 on the new server", after.Calls)
	}
}
