package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// tcpAddr starts the daemon with --listen on a free loopback port and returns
// the address it reports and its token.
func (e *env) startTCP() (addr, token string) {
	e.t.Helper()
	out := e.Must("daemon", "start", "--listen", "127.0.0.1:0")
	if !strings.Contains(out, "listening on http://127.0.0.1:") {
		e.t.Fatalf("daemon start --listen: got %q, want the TCP address", out)
	}
	var st struct {
		Listen string `json:"listen"`
	}
	e.MustJSON(&st, "daemon", "status")
	if st.Listen == "" {
		e.t.Fatal("daemon status --json: no listen address")
	}
	b, err := os.ReadFile(filepath.Join(e.home, "token"))
	if err != nil {
		e.t.Fatalf("read token: %v", err)
	}
	return st.Listen, strings.TrimSpace(string(b))
}

// headerTransport adds headers to every request, as an MCP client configured
// with "headers" does.
type headerTransport struct {
	h    http.Header
	base http.RoundTripper
}

func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.h {
		r.Header[k] = v
	}
	return t.base.RoundTrip(r)
}

// TestTCPClientWithoutBridge connects a go-sdk client straight to the daemon's
// TCP listener the way Claude Code ("type": "http" with headers) or Cursor do.
func TestTCPClientWithoutBridge(t *testing.T) {
	e := newEnv(t)
	addr, token := e.startTCP()
	if out := e.Must("daemon", "status"); !strings.Contains(out, "tcp:        http://"+addr) {
		t.Errorf("daemon status: got %q, want the tcp line", out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	connect := func(h http.Header) (*mcp.ClientSession, error) {
		hc := &http.Client{Transport: &headerTransport{h: h, base: http.DefaultTransport}}
		return mcp.NewClient(&mcp.Implementation{Name: "e2e-tcp", Version: "1"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", HTTPClient: hc},
			&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	}
	if s, err := connect(http.Header{"Parley-Agent": {"mallory"}}); err == nil {
		s.Close()
		t.Fatal("connect without the token: got a session, want a refusal")
	}
	s, err := connect(http.Header{
		"Authorization":    {"Bearer " + token},
		"Parley-Agent":     {"alice"},
		"Parley-Workspace": {"tcp"},
	})
	if err != nil {
		t.Fatalf("connect with the token: %v", err)
	}
	defer s.Close()
	mustCall(t, s, "send_message", map[string]any{"to": "bob", "content": "over tcp"}, nil)
	out := e.Must("inbox", "--workspace", "tcp", "--agent", "bob")
	if !strings.Contains(out, "over tcp") || !strings.Contains(out, "alice") {
		t.Errorf("bob's inbox: got %q, want alice's message", out)
	}
	var agents struct {
		Agents []struct{ Name string } `json:"agents"`
	}
	e.MustJSON(&agents, "agents", "--workspace", "default")
	for _, a := range agents.Agents {
		if a.Name == "mallory" {
			t.Error("the refused session registered its agent")
		}
	}
}

// TestMCPServeSurvivesDaemonRestart kills the daemon (SIGKILL, or a clean
// `parley daemon stop` as for an upgrade) while two MCP clients are connected
// through `parley mcp serve`, one of them blocked in wait_for_message. The
// blocked call ends (with a clear error or a result) well before its timeout;
// the next calls work on the same client sessions, through a daemon the
// bridge restarted; messages sent before the kill are still there; identities
// are the same.
func TestMCPServeSurvivesDaemonRestart(t *testing.T) {
	for _, mode := range []string{"kill -9", "daemon stop"} {
		t.Run(mode, func(t *testing.T) { testSurviveRestart(t, mode) })
	}
}

func testSurviveRestart(t *testing.T, mode string) {
	e := newEnv(t)
	e.Must("daemon", "start")
	alice := e.Session(nil, "--workspace", "rs", "--agent", "alice", "--role", "planner")
	bob := e.Session(nil, "--workspace", "rs", "--agent", "bob", "--role", "dev")

	// Sent before the kill; bob's wait below only takes critical messages,
	// so this one stays in his inbox.
	mustCall(t, alice, "send_message", map[string]any{"to": "bob", "content": "before the kill"}, nil)

	const waitTimeout = 30
	type waitResult struct {
		res *mcp.CallToolResult
		err error
		at  time.Time
	}
	waited := make(chan waitResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), (waitTimeout+15)*time.Second)
		defer cancel()
		res, err := bob.CallTool(ctx, &mcp.CallToolParams{Name: "wait_for_message",
			Arguments: map[string]any{"timeout": waitTimeout, "priority_filter": "critical"}})
		waited <- waitResult{res, err, time.Now()}
	}()
	// Let the wait reach the daemon and block there.
	time.Sleep(500 * time.Millisecond)
	select {
	case w := <-waited:
		t.Fatalf("wait_for_message returned before the kill: %v %v", w.res, w.err)
	default:
	}
	oldPID := e.daemonPID()
	killed := time.Now()
	if mode == "kill -9" {
		e.kill9()
	} else {
		e.Must("daemon", "stop")
	}

	// alice had nothing in flight: her next call must simply work.
	var sent struct {
		MessageID string `json:"message_id"`
	}
	mustCall(t, alice, "send_message", map[string]any{"to": "bob", "content": "after the restart", "priority": "critical"}, &sent)
	newPID := e.daemonPID()
	if newPID == oldPID {
		t.Fatalf("daemon pid: got %d again, want a restarted daemon", newPID)
	}

	// bob's blocked wait ends long before its timeout: either with a clear
	// error, or resumed (then it delivers the critical message).
	var w waitResult
	select {
	case w = <-waited:
	case <-time.After((waitTimeout + 10) * time.Second):
		t.Fatal("wait_for_message hung past its timeout across the restart")
	}
	if w.at.Sub(killed) > waitTimeout*time.Second {
		t.Errorf("wait_for_message ended %s after the kill, past its %ds timeout", w.at.Sub(killed), waitTimeout)
	}
	resumed := false
	switch {
	case w.err != nil:
		if msg := w.err.Error(); !strings.Contains(msg, "retry") && !strings.Contains(msg, "restart") && !strings.Contains(msg, "lost") {
			t.Errorf("interrupted wait: got error %q, want one that says what happened", msg)
		}
	case w.res.IsError:
		if msg := text(w.res); !strings.Contains(msg, "retry") && !strings.Contains(msg, "restart") && !strings.Contains(msg, "lost") {
			t.Errorf("interrupted wait: got tool error %q, want one that says what happened", msg)
		}
	default:
		resumed = strings.Contains(text(w.res), "after the restart")
		if !resumed && !strings.Contains(text(w.res), "timeout") {
			t.Errorf("resumed wait: got %s", text(w.res))
		}
	}
	t.Logf("blocked wait after %s: err=%v resumed=%v", mode, w.err, resumed)

	// bob's session works again without reconnecting, as bob.
	var inbox struct {
		Messages []struct {
			From    string `json:"from"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	mustCall(t, bob, "check_messages", nil, &inbox)
	var got []string
	for _, m := range inbox.Messages {
		got = append(got, m.From+": "+m.Content)
	}
	want := []string{"alice: after the restart", "alice: before the kill"}
	if resumed {
		want = want[1:]
	}
	if strings.Join(got, " | ") != strings.Join(want, " | ") {
		t.Errorf("bob's inbox after the restart: got %q, want %q", got, want)
	}
	var agents struct {
		Agents []struct {
			Name, Role, Status string
		} `json:"agents"`
	}
	mustCall(t, alice, "list_agents", nil, &agents)
	roles := map[string]string{}
	for _, a := range agents.Agents {
		roles[a.Name] = a.Role + "/" + a.Status
	}
	if roles["alice"] != "planner/active" || roles["bob"] != "dev/active" {
		t.Errorf("agents after the restart: got %v, want alice planner and bob dev, both active", roles)
	}
}

// TestWatchJSON runs `parley watch --json` and checks one JSON object a line
// for each event, with the workspace and kinds filters applied.
func TestWatchJSON(t *testing.T) {
	e := newEnv(t)
	e.Must("daemon", "start")
	start := func(args ...string) (*bufio.Scanner, *exec.Cmd) {
		c := e.Cmd(append([]string{"watch", "--json", "--workspace", "wj"}, args...)...)
		stdout, err := c.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		stderr, err := c.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
		// The "watching" line on stderr means the subscription is live.
		line, err := bufio.NewReader(stderr).ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "watching workspace wj") {
			t.Fatalf("watch stderr: got %q, %v", line, err)
		}
		return bufio.NewScanner(stdout), c
	}
	everything, _ := start()
	messages, msgCmd := start("--kinds", "message.sent")

	e.Must("join", "--workspace", "wj", "--name", "alice", "--role", "planner")
	e.Must("join", "--workspace", "other", "--name", "zed")
	e.Must("send", "--workspace", "wj", "--agent", "alice", "alice", "note to self\nsecond line")
	e.Must("group", "create", "--workspace", "wj", "team")

	type event struct {
		Kind, Workspace, Agent, Role, From, To, Preview, Group, Change string
		Recipients                                                     []string
		Time                                                           time.Time
	}
	read := func(sc *bufio.Scanner) event {
		t.Helper()
		if !sc.Scan() {
			t.Fatalf("watch output ended: %v", sc.Err())
		}
		var ev event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("watch --json line %q: %v", sc.Text(), err)
		}
		if ev.Workspace != "wj" || ev.Time.IsZero() {
			t.Errorf("event %s: got workspace %q time %v, want wj and a time", sc.Text(), ev.Workspace, ev.Time)
		}
		return ev
	}
	if ev := read(everything); ev.Kind != "agent.joined" || ev.Agent != "alice" || ev.Role != "planner" {
		t.Errorf("first event: got %+v, want alice joined as planner", ev)
	}
	if ev := read(everything); ev.Kind != "message.sent" || ev.From != "alice" || ev.To != "alice" || ev.Preview != "note to self\nsecond line" || len(ev.Recipients) != 1 {
		t.Errorf("second event: got %+v, want alice's message", ev)
	}
	if ev := read(everything); ev.Kind != "group.changed" || ev.Group != "team" || ev.Change != "created" {
		t.Errorf("third event: got %+v, want group team created", ev)
	}
	if ev := read(messages); ev.Kind != "message.sent" {
		t.Errorf("--kinds message.sent: got %+v", ev)
	}
	// Interrupted, watch exits cleanly.
	msgCmd.Process.Signal(syscall.SIGINT)
	if err := msgCmd.Wait(); err != nil {
		t.Errorf("watch after SIGINT: %v, want exit 0", err)
	}
	if _, errs, code := e.Run("watch", "--workspace", "wj", "--kinds", "nope"); code == 0 || !strings.Contains(errs, `unknown event kind "nope"`) {
		t.Errorf("watch --kinds nope: got exit %d %q, want an error naming the kind", code, errs)
	}
}

// inspector returns the MCP Inspector CLI from test/conformance (installed by
// scripts/test-deps), or skips; under CI=true a missing inspector fails.
func inspector(t *testing.T) (bin string, path string) {
	t.Helper()
	dir, _ := filepath.Abs("../test/conformance/node_modules/.bin")
	bin = filepath.Join(dir, "mcp-inspector")
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("MCP Inspector not installed (%v): run scripts/test-deps", err)
		}
		t.Skipf("MCP Inspector not installed: run scripts/test-deps")
	}
	return bin, dir + string(os.PathListSeparator) + os.Getenv("PATH")
}

// TestInspectorCLI drives Parley with the official MCP Inspector CLI, through
// `parley mcp serve` (stdio) and straight at the TCP endpoint (Streamable HTTP).
func TestInspectorCLI(t *testing.T) {
	insp, path := inspector(t)
	e := newEnv(t)
	addr, token := e.startTCP()
	e.Must("join", "--workspace", "insp", "--name", "bob") // a name that joined: delivered, not queued
	run := func(args ...string) map[string]any {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		c := exec.CommandContext(ctx, insp, append([]string{"--cli"}, args...)...)
		// Node 22 from test/conformance first on PATH; the inspector's own
		// catalog under the test's home.
		c.Env = append(e.environ(), "PATH="+path)
		c.Dir = e.home
		out, err := c.Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("inspector %v: %v\n%s\n%s", args, err, out, stderr)
		}
		var v map[string]any
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("inspector %v output %q: %v", args, out, err)
		}
		return v
	}
	// The inspector hands a stdio server only a few variables (PATH, HOME...):
	// PARLEY_HOME must be passed explicitly, as in an MCP client's config.
	stdio := []string{"-e", "PARLEY_HOME=" + e.home, bin, "mcp", "serve", "--workspace", "insp", "--agent", "alice"}
	tools := run(append(stdio, "--method", "tools/list")...)
	var names []string
	for _, tl := range tools["tools"].([]any) {
		names = append(names, tl.(map[string]any)["name"].(string))
	}
	for _, want := range []string{"send_message", "check_messages", "wait_for_message", "list_agents"} {
		if !strings.Contains(strings.Join(names, " "), want) {
			t.Errorf("tools/list over stdio: got %v, want %s", names, want)
		}
	}
	res := run(append(stdio, "--method", "tools/call", "--tool-name", "send_message", "--tool-arg", "to=bob", "content=via inspector")...)
	if sc, _ := res["structuredContent"].(map[string]any); sc["status"] != "delivered" {
		t.Errorf("send_message over stdio: got %v", res)
	}
	httpArgs := []string{"http://" + addr + "/mcp", "--header", "Authorization: Bearer " + token,
		"--header", "Parley-Agent: bob", "--header", "Parley-Workspace: insp"}
	res = run(append(httpArgs, "--method", "tools/call", "--tool-name", "check_messages")...)
	b, _ := json.Marshal(res["structuredContent"])
	if !strings.Contains(string(b), `"content":"via inspector"`) || !strings.Contains(string(b), `"from":"alice"`) {
		t.Errorf("check_messages over HTTP: got %s, want alice's message", b)
	}
}

// TestInspectorStrict: every profile's tools/list passes the MCP Inspector's
// --strict schema portability checks (single-type dialects such as Gemini's
// reject type arrays and bare true schemas), over stdio.
func TestInspectorStrict(t *testing.T) {
	insp, path := inspector(t)
	e := newEnv(t)
	for _, p := range []string{"native", "lean", "identity", "sidechat", "agentmail", "manager", "self", "gateway"} {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		c := exec.CommandContext(ctx, insp, "--cli", "--strict", "-e", "PARLEY_HOME="+e.home,
			bin, "mcp", "serve", "--workspace", "strict", "--agent", "alice", "--profile", p, "--method", "tools/list")
		c.Env = append(e.environ(), "PATH="+path)
		c.Dir = e.home
		out, err := c.CombinedOutput()
		cancel()
		if err != nil || strings.Contains(string(out), "Warning: tool") || !strings.Contains(string(out), `"tools"`) {
			t.Errorf("profile %s: inspector --strict: %v\n%s", p, err, out)
		}
	}
}
