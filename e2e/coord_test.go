package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/testenv/standin"
)

// gitRepo makes a git repository with one commit of src/a.go, src/b.go and
// README.md, and returns its directory.
func gitRepo(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"src/a.go", "src/b.go", "README.md"} {
		p := filepath.Join(dir, f)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("v1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	runGit(t, dir, nil, "init", "-q", "-b", "main")
	runGit(t, dir, nil, "add", ".")
	runGit(t, dir, nil, "commit", "-q", "-m", "initial")
	return dir
}

// runGit runs git in dir with the test's author, and fails the test if it fails.
func runGit(t testing.TB, dir string, env []string, args ...string) string {
	t.Helper()
	out, errs, err := tryGit(dir, env, args...)
	if err != nil {
		t.Fatalf("git %s: %v\n%s%s", strings.Join(args, " "), err, out, errs)
	}
	return out
}

func tryGit(dir string, env []string, args ...string) (string, string, error) {
	c := exec.Command("git", args...)
	c.Dir = dir
	c.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
	c.Env = append(c.Env, env...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	return out.String(), errb.String(), err
}

// in runs the CLI in dir.
func (e *env) in(t *testing.T, dir string, args ...string) (string, string, int) {
	t.Helper()
	c := e.Cmd(args...)
	c.Dir = dir
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), errb.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), 0
}

func TestReserveCLI(t *testing.T) {
	e := newEnv(t)
	repo := gitRepo(t)
	src := filepath.Join(repo, "src")
	// Paths are relative to the directory the command runs in.
	if out, errs, code := e.in(t, src, "reserve", "a.go", "--agent", "alice", "--reason", "refactoring a"); code != 0 {
		t.Fatalf("alice reserves src/a.go: exit %d\n%s%s", code, out, errs)
	}
	out, _, code := e.in(t, repo, "reserve", "src/", "--agent", "bob", "--reason", "moving src")
	if code != 5 || !strings.Contains(out, "src/** overlaps src/a.go, reserved by alice") || !strings.Contains(out, "refactoring a") {
		t.Fatalf("bob reserves src/: exit %d, %q; want exit 5 (conflict) naming alice and her reason", code, out)
	}
	if _, _, code := e.in(t, repo, "reserve", "docs/*.md", "--shared", "--agent", "bob"); code != 0 {
		t.Fatalf("bob reserves docs/*.md shared: exit %d", code)
	}
	var who struct {
		Reservations []struct{ Agent, Path string } `json:"reservations"`
	}
	o, _, _ := e.in(t, repo, "reserve", "who", "src/a.go", "--json")
	if json.Unmarshal([]byte(o), &who) != nil || len(who.Reservations) != 1 || who.Reservations[0].Agent != "alice" {
		t.Errorf("who has src/a.go: %s; want alice", o)
	}
	o, _, _ = e.in(t, repo, "reserve", "release", "--all", "--agent", "alice", "--json")
	if !strings.Contains(o, "src/a.go") {
		t.Errorf("alice releases all: %s; want src/a.go released", o)
	}
	if _, errs, code := e.in(t, repo, "reserve", "src/", "--agent", "bob"); code != 0 {
		t.Errorf("bob reserves src/ after alice released: exit %d %s", code, errs)
	}
	// renew takes the ids as arguments, as force-release does.
	var mine struct {
		Reservations []struct {
			ID        string `json:"id"`
			ExpiresAt string `json:"expires_at"`
		} `json:"reservations"`
	}
	o, _, _ = e.in(t, repo, "reserve", "list", "--agent", "bob", "--json")
	if json.Unmarshal([]byte(o), &mine) != nil || len(mine.Reservations) == 0 {
		t.Fatalf("bob's reservations: %s", o)
	}
	id := mine.Reservations[0].ID
	if o, errs, code := e.in(t, repo, "reserve", "renew", id, "--ttl", "3h", "--agent", "bob", "--json"); code != 0 || !strings.Contains(o, id) {
		t.Errorf("reserve renew %s: exit %d, %s %s; want it renewed", id, code, o, errs)
	}
	if _, errs, code := e.in(t, repo, "reserve", "/etc/passwd", "--agent", "bob"); code == 0 || !strings.Contains(errs, "outside the repository") {
		t.Errorf("reserve /etc/passwd: exit %d %q; want refused", code, errs)
	}
}

func TestGuard(t *testing.T) {
	e := newEnv(t)
	repo := gitRepo(t)
	e.Must("daemon", "start")
	// The repository's own pre-commit hook, which the guard must keep.
	hooks := filepath.Join(repo, ".git", "hooks")
	own := "#!/bin/sh\necho own-hook-ran >> \"$(git rev-parse --git-dir)/own-hook.log\"\n"
	if err := os.WriteFile(filepath.Join(hooks, "pre-commit"), []byte(own), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, errs, code := e.in(t, repo, "guard", "install"); code != 0 || !strings.Contains(out, "pre-commit.parley-chained") {
		t.Fatalf("guard install: exit %d, %q %s", code, out, errs)
	}
	if out, _, _ := e.in(t, repo, "guard", "install"); strings.Count(out, "up to date") != 3 {
		t.Errorf("guard install again: %q; want every hook up to date", out)
	}
	gitEnv := []string{"PARLEY_HOME=" + e.home, "PATH=" + os.Getenv("PATH")}
	ownRuns := func() int {
		b, _ := os.ReadFile(filepath.Join(repo, ".git", "own-hook.log"))
		return strings.Count(string(b), "own-hook-ran")
	}

	e.in(t, repo, "reserve", "src/**", "--agent", "alice", "--reason", "rewriting the parser")
	os.WriteFile(filepath.Join(repo, "src", "a.go"), []byte("v2 by bob\n"), 0o644)
	runGit(t, repo, nil, "add", "src/a.go")
	_, errs, err := tryGit(repo, append(gitEnv, "PARLEY_AGENT=bob"), "commit", "-m", "bob's change")
	if err == nil {
		t.Fatal("bob's commit of src/a.go went through alice's exclusive src/**")
	}
	for _, want := range []string{"src/a.go is reserved by alice (src/**): rewriting the parser", "PARLEY_GUARD=off"} {
		if !strings.Contains(errs, want) {
			t.Errorf("refusal lacks %q:\n%s", want, errs)
		}
	}
	if n := ownRuns(); n != 0 {
		t.Errorf("the repository's own hook ran %d times for a refused commit, want 0", n)
	}
	// Without an identity, the refusal says so (not "you are you").
	if _, errs, err := tryGit(repo, gitEnv, "commit", "-m", "nobody's change"); err == nil || !strings.Contains(errs, "(no agent: no --agent, $PARLEY_AGENT or single identity file here") {
		t.Errorf("commit with no identity: err %v, stderr %s; want a refusal saying there is no agent", err, errs)
	}
	// alice may commit her own files.
	runGit(t, repo, append(gitEnv, "PARLEY_AGENT=alice"), "commit", "-q", "-m", "alice's change")
	if n := ownRuns(); n != 1 {
		t.Errorf("the repository's own hook ran %d times, want 1 (chained after the guard)", n)
	}
	// The bypass.
	os.WriteFile(filepath.Join(repo, "src", "b.go"), []byte("v2\n"), 0o644)
	runGit(t, repo, nil, "add", "src/b.go")
	_, errs = runGitBoth(t, repo, append(gitEnv, "PARLEY_AGENT=bob", "PARLEY_GUARD=off"), "commit", "-q", "-m", "bypass")
	if !strings.Contains(errs, "not checking reservations") {
		t.Errorf("bypass: stderr %q; want a note", errs)
	}
	// Files nobody holds pass.
	os.WriteFile(filepath.Join(repo, "README.md"), []byte("v2\n"), 0o644)
	runGit(t, repo, nil, "add", "README.md")
	runGit(t, repo, append(gitEnv, "PARLEY_AGENT=bob"), "commit", "-q", "-m", "readme")

	// post-commit releases the committer's reservations of committed files.
	e.in(t, repo, "reserve", "README.md", "--agent", "bob")
	os.WriteFile(filepath.Join(repo, "README.md"), []byte("v3\n"), 0o644)
	runGit(t, repo, nil, "add", "README.md")
	_, errs = runGitBoth(t, repo, append(gitEnv, "PARLEY_AGENT=bob"), "commit", "-q", "-m", "readme again")
	if !strings.Contains(errs, "released 1 reservation") {
		t.Errorf("post-commit: stderr %q; want bob's README.md reservation released", errs)
	}
	if o, _, _ := e.in(t, repo, "reserve", "who", "README.md"); !strings.Contains(o, "nobody holds") {
		t.Errorf("who has README.md after bob committed it: %q", o)
	}

	// pre-push refuses commits that touch reserved files, even when the
	// reservation came after the commit.
	remote := t.TempDir()
	runGit(t, remote, nil, "init", "-q", "--bare")
	runGit(t, repo, nil, "remote", "add", "origin", remote)
	runGit(t, repo, append(gitEnv, "PARLEY_GUARD=off"), "push", "-q", "origin", "main")
	os.WriteFile(filepath.Join(repo, "README.md"), []byte("v4\n"), 0o644)
	runGit(t, repo, nil, "add", "README.md")
	runGit(t, repo, append(gitEnv, "PARLEY_AGENT=bob"), "commit", "-q", "-m", "readme 4")
	e.in(t, repo, "reserve", "*.md", "--agent", "carol", "--reason", "docs freeze")
	_, errs, err = tryGit(repo, append(gitEnv, "PARLEY_AGENT=bob"), "push", "origin", "main")
	if err == nil || !strings.Contains(errs, "README.md is reserved by carol (*.md): docs freeze") {
		t.Errorf("push touching carol's *.md: err %v, stderr %s; want refused naming carol", err, errs)
	}

	if out, _, code := e.in(t, repo, "guard", "uninstall"); code != 0 || !strings.Contains(out, "restored") {
		t.Errorf("guard uninstall: %q", out)
	}
	if b, _ := os.ReadFile(filepath.Join(hooks, "pre-commit")); string(b) != own {
		t.Errorf("pre-commit after uninstall: %q, want the repository's own", b)
	}
}

func runGitBoth(t *testing.T, dir string, env []string, args ...string) (string, string) {
	t.Helper()
	out, errs, err := tryGit(dir, env, args...)
	if err != nil {
		t.Fatalf("git %s: %v\n%s%s", strings.Join(args, " "), err, out, errs)
	}
	return out, errs
}

// TestEditHookWithClaudeCode runs the real Claude Code against a scripted
// model that edits a file alice holds: the PreToolUse hook that `parley init
// claude --leases` installs refuses the edit, and the model reads why.
func TestEditHookWithClaudeCode(t *testing.T) {
	claude := standin.CLI(t, "claude")
	e := newEnv(t)
	repo := gitRepo(t)
	// New files: Claude Code refuses to overwrite a file it has not read.
	target := filepath.Join(repo, "src", "new.go")
	free := filepath.Join(repo, "src", "other.go")
	if out, errs, code := e.in(t, repo, "init", "claude", "--leases", "--agent", "bob", "--yes"); code != 0 {
		t.Fatalf("init claude --leases: exit %d\n%s%s", code, out, errs)
	}
	settings, _ := os.ReadFile(filepath.Join(repo, ".claude", "settings.json"))
	// One PreToolUse hook for every tool: it reports each call (the agent's
	// health) and checks the edits.
	if !strings.Contains(string(settings), `"matcher": "*"`) ||
		!strings.Contains(string(settings), "hook claude PreToolUse --agent bob --policy deny --lease 10m") {
		t.Fatalf(".claude/settings.json lacks the edit hook:\n%s", settings)
	}
	e.in(t, repo, "reserve", "src/new.go", "--agent", "alice", "--reason", "alice is writing new.go")

	s := standin.Anthropic(t, func(r *standin.MessagesRequest) []standin.Block {
		if out, ok := r.ToolResult("toolu_2"); ok {
			return []standin.Block{standin.Text("SECOND " + out)}
		}
		if out, ok := r.ToolResult("toolu_1"); ok {
			return []standin.Block{standin.Text("FIRST " + out), standin.ToolUse("toolu_2", "Write", map[string]any{"file_path": free, "content": "v2 by bob\n"})}
		}
		return []standin.Block{standin.ToolUse("toolu_1", "Write", map[string]any{"file_path": target, "content": "v2 by bob\n"})}
	})
	c := exec.Command(claude, "-p", "change the files", "--allowedTools", "Write")
	c.Dir = repo
	c.Env = append(standin.ClaudeEnv(s, t.TempDir()), "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"), "PARLEY_HOME="+e.home)
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("claude: %v\n%s", err, out)
	}
	if _, err := os.Stat(target); err == nil {
		t.Errorf("src/new.go was written despite alice's reservation")
	}
	if !s.Saw("src/new.go is reserved by alice: alice is writing new.go") {
		t.Errorf("the model was not told who holds src/new.go and why; claude said:\n%s", out)
	}
	if b, _ := os.ReadFile(free); string(b) != "v2 by bob\n" {
		t.Errorf("src/other.go, which nobody held, was not written: %q; claude said:\n%s", b, out)
	}
	// The edit of the free file leased it to bob.
	o, _, _ := e.in(t, repo, "reserve", "who", "src/other.go")
	if !strings.Contains(o, "by bob") || !strings.Contains(o, "editing it (Write)") {
		t.Errorf("who has src/other.go after bob's edit: %q; want bob's lease", o)
	}
}

// TestEditHookWarn: with --policy warn the edit goes through and the model
// gets the holder as context.
func TestEditHookWarn(t *testing.T) {
	e := newEnv(t)
	repo := gitRepo(t)
	e.in(t, repo, "reserve", "src/**", "--agent", "alice", "--reason", "big refactor")
	in := map[string]any{"cwd": repo, "tool_name": "Edit", "tool_input": map[string]any{"file_path": filepath.Join(repo, "src", "a.go")}}
	out, _ := e.hook(t, "PreToolUse", in, "--agent", "bob", "--policy", "warn")
	var res struct {
		HookSpecificOutput map[string]string `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("hook output %q: %v", out, err)
	}
	h := res.HookSpecificOutput
	if h["permissionDecision"] != "" || !strings.Contains(h["additionalContext"], "reserved by alice (src/**): big refactor") {
		t.Errorf("warn: got %v; want context naming alice and no decision", h)
	}
	// Files outside the repository, and other tools, pass silently.
	for _, in := range []map[string]any{
		{"cwd": repo, "tool_name": "Edit", "tool_input": map[string]any{"file_path": "/etc/hosts"}},
		{"cwd": repo, "tool_name": "Bash", "tool_input": map[string]any{"command": "ls"}},
	} {
		if out, _ := e.hook(t, "PreToolUse", in, "--agent", "bob"); out != "" {
			t.Errorf("hook for %v: printed %q, want nothing", in, out)
		}
	}
}

// BenchmarkEditHook measures the PreToolUse hooks' process time (a check
// and a lease, against a running daemon), Claude Code's for an Edit and
// Codex's for an apply_patch of two files, beside the floor of the same
// binary printing its version. It reports the median besides the mean.
func BenchmarkEditHook(b *testing.B) {
	e := newEnv(b)
	dir := gitRepo(b)
	e.Must("daemon", "start")
	edit, _ := json.Marshal(map[string]any{"cwd": dir, "tool_name": "Edit", "tool_input": map[string]any{"file_path": filepath.Join(dir, "a.go")}})
	patch, _ := json.Marshal(map[string]any{"cwd": dir, "tool_name": "apply_patch", "tool_input": map[string]any{
		"command": "*** Begin Patch\n*** Update File: src/a.go\n@@\n-v1\n+v2\n*** Add File: src/c.go\n+v1\n*** End Patch\n"}})
	run := func(b *testing.B, in []byte, args ...string) {
		var lat []time.Duration
		for b.Loop() {
			c := e.Cmd(args...)
			c.Stdin = bytes.NewReader(in)
			start := time.Now()
			if out, err := c.CombinedOutput(); err != nil {
				b.Fatalf("%v: %s", err, out)
			}
			lat = append(lat, time.Since(start))
		}
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-us")
	}
	b.Run("floor=version", func(b *testing.B) { run(b, nil, "--version") })
	b.Run("hook=claude", func(b *testing.B) { run(b, edit, "hook", "claude", "PreToolUse", "--agent", "bob", "--lease", "10m") })
	b.Run("hook=codex", func(b *testing.B) { run(b, patch, "hook", "codex", "PreToolUse", "--agent", "bob", "--lease", "10m") })
}

// TestEditHookWithCodex runs the real Codex against a scripted model whose
// apply_patch adds a file alice holds: the PreToolUse hook that `parley init
// codex --leases` installs (and has Codex trust) refuses the whole patch, and the model reads who
// holds the file and why. A second patch, of a file nobody holds, goes
// through and leases that file to the editing agent.
func TestEditHookWithCodex(t *testing.T) {
	codex := standin.CLI(t, "codex")
	e := newEnv(t)
	repo := gitRepo(t)
	codexHome := e.withCodex(t)
	if out, errs, code := e.in(t, repo, "init", "codex", "--leases", "--agent", "bob", "--yes"); code != 0 || !strings.Contains(out, "Codex now trusts Parley's PreToolUse hook") {
		t.Fatalf("init codex --leases: exit %d, want 0 and the hook trusted\n%s%s", code, out, errs)
	}
	conf, _ := os.ReadFile(filepath.Join(codexHome, "config.toml"))
	if !strings.Contains(string(conf), "[[hooks.PreToolUse]]\nmatcher = \"apply_patch\"") ||
		!strings.Contains(string(conf), "hook codex PreToolUse --agent bob --policy deny --lease 10m") {
		t.Fatalf("config.toml lacks the edit hook:\n%s", conf)
	}
	if out, _, _ := e.in(t, repo, "init", "codex", "--leases", "--agent", "bob", "--yes"); !strings.Contains(out, "nothing to change") || !strings.Contains(out, "already trusts") {
		t.Errorf("init codex --leases again: %q; want nothing to change, the hook already trusted", out)
	}
	e.in(t, repo, "reserve", "src/new.go", "--agent", "alice", "--reason", "alice is writing new.go")

	// The first patch touches a free file and alice's: none of it may land.
	held := "*** Begin Patch\n*** Update File: src/b.go\n@@\n-v1\n+v2 by bob\n*** Add File: src/new.go\n+v2 by bob\n*** End Patch\n"
	free := "*** Begin Patch\n*** Update File: src/a.go\n@@\n-v1\n+v2 by bob\n*** End Patch\n"
	patch := func(id, input string) standin.Item {
		return standin.Item{"type": "custom_tool_call", "call_id": id, "name": "apply_patch", "input": input}
	}
	s := standin.OpenAI(t, func(r *standin.ResponsesRequest) []standin.Item {
		if out, ok := r.Output("call_2"); ok {
			return []standin.Item{standin.Message("SECOND " + out)}
		}
		if out, ok := r.Output("call_1"); ok {
			return []standin.Item{patch("call_2", free), standin.Message("FIRST " + out)}
		}
		return []standin.Item{patch("call_1", held)}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	// No --dangerously-bypass-hook-trust: the hook runs because init had
	// Codex trust it.
	args := append([]string{"exec", "--json", "--skip-git-repo-check", "-s", "workspace-write"}, standin.CodexArgs(s)...)
	c := exec.CommandContext(ctx, codex, append(args, "change the files")...)
	c.Dir, c.Env, c.WaitDelay = repo, e.environ(), 5*time.Second
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("codex: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(repo, "src", "new.go")); err == nil {
		t.Errorf("src/new.go was written despite alice's reservation")
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "src", "b.go")); string(b) != "v1\n" {
		t.Errorf("src/b.go, in the refused patch, changed: %q", b)
	}
	if !s.Saw("src/new.go is reserved by alice: alice is writing new.go") {
		t.Errorf("the model was not told who holds src/new.go and why; codex said:\n%s", out)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "src", "a.go")); string(b) != "v2 by bob\n" {
		t.Errorf("src/a.go, which nobody held, was not patched: %q; codex said:\n%s", b, out)
	}
	o, _, _ := e.in(t, repo, "reserve", "who", "src/a.go")
	if !strings.Contains(o, "by bob") || !strings.Contains(o, "editing it (apply_patch)") {
		t.Errorf("who has src/a.go after bob's patch: %q; want bob's lease", o)
	}
}

// TestSearchCLI: parley search finds messages by word forms and prefixes,
// best first; an agent sees only what it sent or received, a person the
// whole workspace.
func TestSearchCLI(t *testing.T) {
	e := newEnv(t)
	w := []string{"--workspace", "srch"}
	e.Must(append([]string{"send", "bob", "the deployment failed on staging", "--agent", "alice"}, w...)...)
	e.Must(append([]string{"send", "dave", "deploying the parser fix", "--agent", "carol"}, w...)...)
	type result struct {
		Results []struct {
			From    string `json:"from"`
			Snippet string `json:"snippet"`
		} `json:"results"`
	}
	search := func(args ...string) result {
		t.Helper()
		var r result
		e.MustJSON(&r, append(append(args, "--json"), w...)...)
		return r
	}
	if r := search("search", "deploy*"); len(r.Results) != 2 {
		t.Errorf("a person's deploy*: got %+v, want both messages", r.Results)
	}
	if r := search("search", "deploy*", "--agent", "bob"); len(r.Results) != 1 || r.Results[0].From != "alice" || !strings.Contains(r.Results[0].Snippet, "**deployment**") {
		t.Errorf("bob's deploy*: got %+v, want alice's message only, deployment marked", r.Results)
	}
	if r := search("search", "fails", "--agent", "carol"); len(r.Results) != 0 {
		t.Errorf("carol's fails: got %+v, want nothing (she neither sent nor received it)", r.Results)
	}
	if r := search("search", "fails", "--agent", "alice"); len(r.Results) != 1 {
		t.Errorf("alice's fails (stemmed: failed): got %+v, want her message", r.Results)
	}
	if out := e.Must(append([]string{"search", "zebra"}, w...)...); !strings.Contains(out, "no messages match") {
		t.Errorf("search zebra: %q, want no messages match", out)
	}
}
