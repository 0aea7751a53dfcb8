package e2e

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// The rough edges a new user hit (issue 25), each held by a test.

// TestUnknownSubcommandsFail: a command that only groups others refuses an
// unknown subcommand (it printed its help and exited 0).
func TestUnknownSubcommandsFail(t *testing.T) {
	e := newEnv(t)
	for _, parent := range []string{"agent", "group", "token", "daemon", "upstream", "tools", "guard", "mcp", "hook"} {
		_, errs, code := e.Run(parent, "nope")
		if code != 2 || !strings.Contains(errs, `unknown command "nope" for "parley `+parent+`"`) {
			t.Errorf("parley %s nope: exit %d, stderr %q; want exit 2 and an unknown command error", parent, code, errs)
		}
	}
	if _, errs, code := e.Run("daemon", "statu"); code != 2 || !strings.Contains(errs, "did you mean status?") {
		t.Errorf("parley daemon statu: exit %d, stderr %q; want a suggestion", code, errs)
	}
	// Bare, a group prints its help.
	if out, _, code := e.Run("group"); code != 0 || !strings.Contains(out, "Available Commands") {
		t.Errorf("parley group: exit %d, %q; want its help", code, out)
	}
	// The README's `agent activity` is a name of `agent logs`.
	if _, errs, code := e.Run("agent", "activity", "nobody"); code == 0 || strings.Contains(errs, "unknown command") {
		t.Errorf("parley agent activity nobody: exit %d, %q; want logs' own error", code, errs)
	}
}

// TestPurgeAgeArgument: `parley purge 30d`, as its summary suggests.
func TestPurgeAgeArgument(t *testing.T) {
	e := newEnv(t)
	if out, errs, code := e.Run("purge", "30d"); code != 0 || !strings.Contains(out, "purged 0 read messages") {
		t.Errorf("purge 30d: exit %d, %q %q", code, out, errs)
	}
	if out, errs, code := e.Run("purge", "--older-than", "30d"); code != 0 || !strings.Contains(out, "purged") {
		t.Errorf("purge --older-than 30d: exit %d, %q %q", code, out, errs)
	}
	if _, errs, code := e.Run("purge"); code != 2 || !strings.Contains(errs, "parley purge 30d") {
		t.Errorf("purge with no age: exit %d, %q; want exit 2 showing how", code, errs)
	}
	if _, errs, code := e.Run("purge", "30d", "--older-than", "2d"); code != 2 || !strings.Contains(errs, "two ages") {
		t.Errorf("purge with two ages: exit %d, %q; want exit 2", code, errs)
	}
}

// TestHistoryUnknownThread: an unknown thread is an error, not an empty page.
func TestHistoryUnknownThread(t *testing.T) {
	e := newEnv(t)
	e.Must("send", "--workspace", "w", "--agent", "alice", "bob", "hi")
	out, errs, code := e.Run("history", "--workspace", "w", "--thread", "nope")
	if code != 4 || out != "" || !strings.Contains(errs, `no thread "nope"`) {
		t.Errorf("history --thread nope: exit %d, stdout %q, stderr %q; want exit 4 (not found) naming the thread", code, out, errs)
	}
}

// TestOversizedSendSaysSo: a send far over the size limit gets the size
// error's terms, not "decode request", and stores nothing.
func TestOversizedSendSaysSo(t *testing.T) {
	e := newEnv(t)
	c := e.Cmd("send", "--workspace", "w", "--agent", "alice", "bob", "-")
	c.Stdin = bytes.NewReader(bytes.Repeat([]byte("x"), 20<<20))
	var errb bytes.Buffer
	c.Stderr = &errb
	err := c.Run()
	if err == nil || !strings.Contains(errb.String(), "more than any message may carry") || !strings.Contains(errb.String(), "max_message_bytes") {
		t.Errorf("20 MB send: %v, stderr %q; want the size limit explained", err, errb.String())
	}
	if out := e.Must("history", "--workspace", "w"); strings.TrimSpace(out) != "" {
		t.Errorf("history after the refused send: %q, want nothing", out)
	}
}

// TestGroupShowWithoutCreator: a group made without an agent says so.
func TestGroupShowWithoutCreator(t *testing.T) {
	e := newEnv(t)
	e.Must("group", "create", "ops", "--workspace", "w")
	out := e.Must("group", "show", "ops", "--workspace", "w")
	if strings.Contains(out, "by \n") || !strings.Contains(out, "by no agent") {
		t.Errorf("group show: %q; want the missing creator said", out)
	}
}

// TestMCPOverHTTPNeedsAWorkspace: a session that names no workspace is
// refused with a clear error, not put in "default".
func TestMCPOverHTTPNeedsAWorkspace(t *testing.T) {
	e := newEnv(t)
	e.Must("daemon", "start")
	req, _ := http.NewRequest(http.MethodPost, "http://parley/mcp", strings.NewReader(initializeLine))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Parley-Agent", "alice")
	resp, err := e.httpClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "no workspace: name one with the Parley-Workspace header") {
		t.Errorf("initialize without a workspace: %d %s; want 400 saying how to name one", resp.StatusCode, b)
	}
	if out := e.Must("agents", "--workspace", "default"); strings.Contains(out, "alice") {
		t.Errorf("alice landed in workspace default: %q", out)
	}
}

// TestWatchSurvivesRestart: `parley watch` reconnects when the daemon
// restarts, and goes on printing.
func TestWatchSurvivesRestart(t *testing.T) {
	e := newEnv(t)
	e.Must("daemon", "start")
	w := e.Cmd("watch", "--workspace", "w", "--kinds", "message.sent")
	var out, errb syncBuffer
	w.Stdout, w.Stderr = &out, &errb
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Process.Kill(); w.Wait() })
	waitUntil(t, "watch to subscribe", func() bool { return strings.Contains(errb.String(), "watching workspace w") })
	e.Must("send", "--workspace", "w", "--agent", "alice", "bob", "before the restart")
	waitUntil(t, "the first message", func() bool { return strings.Contains(out.String(), "before the restart") })
	e.kill9()
	waitUntil(t, "watch to resubscribe", func() bool { return strings.Contains(errb.String(), "watching workspace w again") })
	e.Must("send", "--workspace", "w", "--agent", "alice", "bob", "after the restart")
	waitUntil(t, "the message after the restart", func() bool { return strings.Contains(out.String(), "after the restart") })
	if w.ProcessState != nil {
		t.Fatalf("watch exited: %s", errb.String())
	}
}

// TestDemoHintWorks: the command the demo's last line suggests shows the
// conversation.
func TestDemoHintWorks(t *testing.T) {
	e := newEnv(t)
	out, errs, code := e.Run("demo")
	if code != 0 {
		t.Fatalf("demo: exit %d\n%s%s", code, out, errs)
	}
	// The hint runs as written, in a shell whose PATH has no parley (the
	// test's binary is not on it).
	m := regexp.MustCompile("see it with `(PARLEY_HOME=(\\S+) \\S+ history --workspace parley-demo)`").FindStringSubmatch(out + errs)
	if m == nil || m[2] != e.home {
		t.Fatalf("demo's hint: %q; want one naming PARLEY_HOME=%s", out+errs, e.home)
	}
	c := exec.Command("sh", "-c", m[1])
	c.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + e.home}
	hist, err := c.CombinedOutput()
	if err != nil || strings.Count(string(hist), "── ") < 2 {
		t.Errorf("the hinted command %q: %v %q; want the demo's messages", m[1], err, hist)
	}
}

// TestInitSaysUserWide: `parley init codex` writes a user-wide file and says
// so, with what it means for the name.
func TestInitSaysUserWide(t *testing.T) {
	e := newEnv(t)
	repo := initRepo(t, e)
	c := e.Cmd("init", "codex", "--yes")
	c.Dir = repo
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	if err := c.Run(); err != nil {
		t.Fatalf("init codex: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "user-wide") {
		t.Errorf("init codex: %q; want it to say the file is user-wide", out.String())
	}
	conf, err := os.ReadFile(e.home + "/.codex/config.toml")
	if err != nil {
		t.Fatalf("codex config: %v", err)
	}
	// No directory-derived name in a file every repository shares.
	if !strings.Contains(string(conf), `args = ["mcp", "serve"]`) || strings.Contains(string(conf), "--agent") {
		t.Errorf("codex config:\n%s\nwant parley mcp serve with no --agent", conf)
	}
}
