package e2e

// A first run that always works: what a new user meets in the first minutes.

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/parley-dev/parley/internal/testenv/standin"
)

// serverArgs returns the args of the parley server in a JSON client config.
func serverArgs(t *testing.T, path string) []string {
	t.Helper()
	m := readJSON(t, path)
	p, _ := m["mcpServers"].(map[string]any)["parley"].(map[string]any)
	var args []string
	b, _ := json.Marshal(p["args"])
	json.Unmarshal(b, &args)
	return args
}

// TestInitNeverWritesAServerWithoutIdentity: init claude without --agent
// bakes in no name (each Claude Code session is an agent of its own, named
// after it) and says so, and drops a name an older init derived from the
// directory; cursor and gemini, whose clients name no sessions, take the
// single identity of the repository, and stop with the exact command when
// the choice is not clear.
func TestInitNeverWritesAServerWithoutIdentity(t *testing.T) {
	e := newEnv(t)
	repo := initRepo(t, e)
	// What an older init wrote: a name derived from the directory.
	writeFile(t, filepath.Join(repo, ".mcp.json"), `{"mcpServers":{"parley":{"type":"stdio","command":"parley","args":["mcp","serve","--agent","repo-claude"]}}}`)
	out, errs, code := e.runIn(repo, "init", "claude", "--yes")
	if code != 0 {
		t.Fatalf("init claude: exit %d\n%s%s", code, out, errs)
	}
	if got := strings.Join(serverArgs(t, filepath.Join(repo, ".mcp.json")), " "); got != "mcp serve" {
		t.Errorf("args: got %q, want mcp serve, no name", got)
	}
	if !strings.Contains(out, "derived by an older parley init") || !strings.Contains(out, "each claude session takes a name of its own") || !strings.Contains(out, "--agent NAME") {
		t.Errorf("init did not say that each session names itself and how to fix a name:\n%s", out)
	}
	settings, _ := os.ReadFile(filepath.Join(repo, ".claude", "settings.json"))
	if !strings.Contains(string(settings), "hook claude Stop\"") || strings.Contains(string(settings), "--agent") {
		t.Errorf("hooks name an agent:\n%s", settings)
	}
	// The server as written works in a Claude Code session: it speaks as
	// the session.
	e.extra = []string{"CLAUDE_CODE_SESSION_ID=6f1c9a52-0000-4000-8000-000000000001"}
	s := e.SessionIn(repo, nil, serverArgs(t, filepath.Join(repo, ".mcp.json"))[2:]...)
	e.extra = nil
	var who struct{ Agent string }
	mustCall(t, s, "whoami", nil, &who)
	if !strings.HasPrefix(who.Agent, "claude-repo-") {
		t.Errorf("whoami: %+v, want the session's own name", who)
	}
	mustCall(t, s, "send_message", map[string]any{"to": "bob", "content": "hi"}, nil)

	// Again, without --agent: nothing changes.
	out, _, _ = e.runIn(repo, "init", "claude")
	if !strings.Contains(out, "nothing to change") {
		t.Errorf("second run: %q, want nothing to change", out)
	}

	// Cursor in a repository with one identity takes it.
	repo2 := filepath.Join(e.home, "repo2")
	os.MkdirAll(filepath.Join(repo2, ".git"), 0o755)
	if out, errs, code := e.runIn(repo2, "join", "--name", "dave", "--role", "dev"); code != 0 {
		t.Fatalf("join: %s %s", out, errs)
	}
	out, _, code = e.runIn(repo2, "init", "cursor", "--yes")
	if got := serverArgs(t, filepath.Join(repo2, ".cursor", "mcp.json")); code != 0 || strings.Join(got, " ") != "mcp serve --agent dave" || !strings.Contains(out, "speaks as dave") {
		t.Errorf("init cursor with one identity: exit %d, args %v, output %q; want --agent dave", code, got, out)
	}
	// Two identities: stop, with the command to run.
	e.runIn(repo2, "join", "--name", "erin", "--role", "dev")
	_, errs, code = e.runIn(repo2, "init", "gemini", "--yes")
	if code == 0 || !strings.Contains(errs, "parley init gemini --agent NAME") || !strings.Contains(errs, "dave, erin") {
		t.Errorf("init with two identities: exit %d, stderr %q; want a stop naming them and the command", code, errs)
	}
	if _, err := os.Stat(filepath.Join(repo2, ".gemini", "settings.json")); err == nil {
		t.Errorf("init wrote a config although it stopped")
	}
	// Gemini: folder trust is said.
	out, _, code = e.runIn(repo2, "init", "gemini", "--agent", "dave", "--yes")
	if code != 0 || !strings.Contains(out, "trust") {
		t.Errorf("init gemini: exit %d, output %q; want a note on folder trust", code, out)
	}
}

// TestInitCodexPassesHomeAndApproves: the Codex server gets PARLEY_HOME
// (Codex forwards no environment by default) and runs its tools without an
// approval, and the real Codex reads the result.
func TestInitCodexPassesHomeAndApproves(t *testing.T) {
	codex := standin.CLI(t, "codex")
	e := newEnv(t)
	repo := initRepo(t, e)
	codexHome := filepath.Join(e.home, "codex")
	e.extra = append(e.extra, "CODEX_HOME="+codexHome)
	writeFile(t, filepath.Join(codexHome, "config.toml"), "[mcp_servers.parley]\ncommand = \"old\"\nenv_vars = [\"MINE\"]\n")
	if out, errs, code := e.runIn(repo, "init", "codex", "--yes"); code != 0 {
		t.Fatalf("init codex: exit %d\n%s%s", code, out, errs)
	}
	b, _ := os.ReadFile(filepath.Join(codexHome, "config.toml"))
	var conf struct {
		Servers map[string]struct {
			Args     []string `toml:"args"`
			EnvVars  []string `toml:"env_vars"`
			Approval string   `toml:"default_tools_approval_mode"`
		} `toml:"mcp_servers"`
	}
	if err := toml.Unmarshal(b, &conf); err != nil {
		t.Fatalf("config.toml: %v\n%s", err, b)
	}
	p := conf.Servers["parley"]
	// No name baked into a user-wide file: each session names itself.
	if strings.Join(p.EnvVars, ",") != "PARLEY_HOME,CODEX_HOME,MINE" || p.Approval != "approve" || strings.Join(p.Args, " ") != "mcp serve" {
		t.Errorf("parley server: got %+v, want env_vars PARLEY_HOME, CODEX_HOME and MINE, approval approve, no --agent\n%s", p, b)
	}
	// The real Codex reads the table as written.
	c := exec.Command(codex, "mcp", "get", "parley", "--json")
	c.Dir, c.Env = repo, append(e.environ(), "CODEX_HOME="+codexHome)
	got, err := c.CombinedOutput()
	if err != nil || !strings.Contains(string(got), "PARLEY_HOME") {
		t.Errorf("codex mcp get parley: %v\n%s", err, got)
	}
}

// TestMCPServeWithoutNameTakesSessionName: a server given no name takes one
// of its client session's own (here the client process's, as for Gemini CLI
// and Codex), says so on stderr, and whoami names it.
func TestMCPServeWithoutNameTakesSessionName(t *testing.T) {
	e := newEnv(t)
	c := e.Cmd("mcp", "serve", "--workspace", "w")
	stderr := &syncBuffer{}
	c.Stderr = stderr
	stdin, _ := c.StdinPipe()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); c.Wait() }()
	waitUntil(t, "the name on stderr", func() bool { return strings.Contains(stderr.String(), "speaking as session-") })
	if !strings.Contains(stderr.String(), "--agent NAME") {
		t.Errorf("stderr %q does not say how to fix a name", stderr.String())
	}
	s := e.Session(nil, "--workspace", "w")
	var who struct {
		Agent string `json:"agent"`
		Note  string `json:"note"`
	}
	mustCall(t, s, "whoami", nil, &who)
	if !strings.HasPrefix(who.Agent, "session-") || !strings.Contains(who.Note, "set_identity") {
		t.Errorf("whoami without a name: got %+v, want a session name and a hint that it may choose another", who)
	}
	mustCall(t, e.Session(nil, "--workspace", "w", "--agent", "ann"), "whoami", nil, &who)
	if who.Agent != "ann" {
		t.Errorf("whoami with --agent ann: got %+v", who)
	}
}

// TestSendTakesTmuxWindowName: inside tmux, with no other name, every
// command speaks as the window's name, as mcp serve and the hooks do.
func TestSendTakesTmuxWindowName(t *testing.T) {
	tm := newTmux(t)
	e := newEnv(t, tm.window("agents", "alice")...)
	e.Must("send", "bob", "from the window", "--workspace", "w")
	var inbox struct {
		Messages []struct {
			From string `json:"from"`
		} `json:"messages"`
	}
	e.MustJSON(&inbox, "inbox", "--agent", "bob", "--workspace", "w")
	if len(inbox.Messages) != 1 || inbox.Messages[0].From != "alice" {
		t.Errorf("bob's inbox: got %+v, want one message from alice", inbox.Messages)
	}
}

// TestMCPServeBadFlagFailsAtStart: a bad --profile or --nudge stops mcp
// serve at once with the reason on stderr, before any client speaks (a
// client shows only "Failed to connect").
func TestMCPServeBadFlagFailsAtStart(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--profile", "native,bogus"}, `unknown profile "bogus": want one of `},
		{[]string{"--nudge", "screen"}, `invalid --nudge "screen"`},
	} {
		_, errs, code := e.Run(append([]string{"mcp", "serve", "--agent", "a", "--workspace", "w"}, tc.args...)...)
		if code == 0 || !strings.Contains(errs, tc.want) {
			t.Errorf("mcp serve %v: exit %d, stderr %q; want a failure saying %q", tc.args, code, errs, tc.want)
		}
	}
	if _, errs, code := e.Run("mcp", "serve", "--agent", "a", "--workspace", "w", "--profile", "native,manager"); code != 0 {
		t.Errorf("mcp serve with good profiles: exit %d, %s", code, errs)
	}
}

// TestInitCodexPermissions: init codex --permissions adds a
// PermissionRequest hook that runs `parley hook codex PermissionRequest`,
// next to the user's own hooks, once; the real Codex reads it. Codex runs a
// hook only once it is trusted: init records that through Codex's
// app-server when codex is on PATH (the user's own hooks stay as they were),
// and otherwise prints the step that does it by hand.
func TestInitCodexPermissions(t *testing.T) {
	codex := standin.CLI(t, "codex")
	e := newEnv(t)
	repo := initRepo(t, e)
	codexHome := filepath.Join(e.home, "codex")
	e.extra = append(e.extra, "CODEX_HOME="+codexHome)
	path := filepath.Join(codexHome, "config.toml")
	writeFile(t, path, "# mine\n[[hooks.PermissionRequest]]\nmatcher = \"Bash\"\n\n[[hooks.PermissionRequest.hooks]]\ntype = \"command\"\ncommand = \"my-own-hook\"\n")
	out, errs, code := e.runIn(repo, "init", "codex", "--permissions", "--yes")
	if code != 0 || !strings.Contains(out, "type /hooks") || !strings.Contains(out, "press t") {
		t.Fatalf("init codex --permissions without codex on PATH: exit %d, want 0 and the step that trusts the hook by hand\n%s%s", code, out, errs)
	}
	b, _ := os.ReadFile(path)
	var conf struct {
		Hooks struct {
			PermissionRequest []struct {
				Matcher string `toml:"matcher"`
				Hooks   []struct {
					Type    string `toml:"type"`
					Command string `toml:"command"`
					Timeout int    `toml:"timeout"`
				} `toml:"hooks"`
			} `toml:"PermissionRequest"`
		} `toml:"hooks"`
	}
	if err := toml.Unmarshal(b, &conf); err != nil {
		t.Fatalf("config.toml: %v\n%s", err, b)
	}
	groups := conf.Hooks.PermissionRequest
	if len(groups) != 2 || groups[0].Hooks[0].Command != "my-own-hook" || groups[1].Matcher != "*" || len(groups[1].Hooks) != 1 ||
		!strings.HasSuffix(groups[1].Hooks[0].Command, " hook codex PermissionRequest") || groups[1].Hooks[0].Timeout != 60 {
		t.Fatalf("hooks: got %+v, want the user's hook, then parley's, naming no agent, with timeout 60\n%s", groups, b)
	}
	if !strings.HasPrefix(string(b), "# mine\n") {
		t.Errorf("the user's comment is gone:\n%s", b)
	}
	// The real Codex reads the hook, and does not trust it yet.
	trust := func() (mine, ours string) {
		t.Helper()
		for _, h := range codexHooks(t, codex, repo, append(e.environ(), "CODEX_HOME="+codexHome)) {
			switch {
			case h.EventName != "permissionRequest":
			case h.Command == "my-own-hook":
				mine = h.TrustStatus
			case strings.Contains(h.Command, "hook codex PermissionRequest") && h.TimeoutSec == 60:
				ours = h.TrustStatus
			}
		}
		return mine, ours
	}
	if mine, ours := trust(); mine != "untrusted" || ours != "untrusted" {
		t.Fatalf("codex hooks/list before the trust: the user's hook %q, parley's %q; want both untrusted", mine, ours)
	}

	// With codex on PATH, init has Codex trust its hook, and only its hook.
	e.extra = append(e.extra, "PATH="+filepath.Dir(codex)+string(os.PathListSeparator)+os.Getenv("PATH"))
	if out, errs, code := e.runIn(repo, "init", "codex", "--permissions", "--yes"); code != 0 || !strings.Contains(out, "nothing to change") || !strings.Contains(out, "Codex now trusts") {
		t.Fatalf("init codex --permissions with codex on PATH: exit %d, want 0, nothing to change and the hook trusted\n%s%s", code, out, errs)
	}
	if mine, ours := trust(); mine != "untrusted" || ours != "trusted" {
		t.Fatalf("codex hooks/list after the trust: the user's hook %q, parley's %q; want the user's untrusted, parley's trusted", mine, ours)
	}
	trusted, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(trusted), "# mine\n") || !strings.Contains(string(trusted), "trusted_hash") {
		t.Errorf("config.toml after the trust: want the user's comment kept and a trusted_hash\n%s", trusted)
	}
	// Running it again changes nothing.
	if out, _, code := e.runIn(repo, "init", "codex", "--permissions", "--yes"); code != 0 || !strings.Contains(out, "nothing to change") || !strings.Contains(out, "already trusts") {
		t.Errorf("init codex --permissions again: exit %d\n%s", code, out)
	}
	if b2, _ := os.ReadFile(path); string(b2) != string(trusted) {
		t.Errorf("the third init changed config.toml:\n%s", b2)
	}
}

// codexHook is a hook as the Codex app-server's hooks/list reports it.
type codexHook struct {
	EventName   string `json:"eventName"`
	Command     string `json:"command"`
	TimeoutSec  int    `json:"timeoutSec"`
	TrustStatus string `json:"trustStatus"`
}

// codexHooks asks the real `codex app-server`, started in dir with env, for
// the hooks it would run there.
func codexHooks(t *testing.T, codex, dir string, env []string) []codexHook {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, codex, "app-server")
	c.Dir, c.Env = dir, env
	in, _ := c.StdinPipe()
	out, _ := c.StdoutPipe()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); c.Wait() }()
	for _, l := range []string{`{"id":1,"method":"initialize","params":{"clientInfo":{"name":"parley-test","version":"1"}}}`,
		`{"method":"initialized"}`, `{"id":2,"method":"hooks/list","params":{"cwds":[` + strconv.Quote(dir) + `]}}`} {
		io.WriteString(in, l+"\n")
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m struct {
			ID     int `json:"id"`
			Result struct {
				Data []struct {
					Hooks []codexHook `json:"hooks"`
				} `json:"data"`
			} `json:"result"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil || m.ID != 2 {
			continue
		}
		var hs []codexHook
		for _, d := range m.Result.Data {
			hs = append(hs, d.Hooks...)
		}
		return hs
	}
	t.Fatalf("codex app-server gave no answer to hooks/list: %v", sc.Err())
	return nil
}
