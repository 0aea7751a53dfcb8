package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parley-dev/parley/internal/testenv/standin"
)

// hookRaw runs `parley hook CLIENT EVENT` with input and returns its stdout
// as it is (PreCompact's is plain text).
func (e *env) hookRaw(t *testing.T, client, event string, input map[string]any, args ...string) string {
	t.Helper()
	in := map[string]any{"session_id": "abc123", "transcript_path": "/tmp/t.jsonl", "cwd": e.home, "hook_event_name": event}
	for k, v := range input {
		in[k] = v
	}
	b, _ := json.Marshal(in)
	c := e.Cmd(append([]string{"hook", client, event}, args...)...)
	c.Stdin = bytes.NewReader(b)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Run(); err != nil {
		t.Fatalf("hook %s %s: %v (a hook must always exit 0); stderr %s", client, event, err, errb.String())
	}
	return out.String()
}

// TestWorkingSetSurvivesCompaction: the daemon keeps what an agent holds;
// the compaction hooks hand it back. PreCompact's output (the summarizer's
// instructions) and SessionStart's context after the compaction (Claude
// Code's, and Codex's) name the agent's claimed task and its reservation,
// and so does my_work.
func TestWorkingSetSurvivesCompaction(t *testing.T) {
	e := newEnv(t)
	const ws = "work"
	as := func(n string) []string { return []string{"--agent", n, "--workspace", ws} }
	e.Must(append(as("lead"), "join", "--name", "lead", "--role", "lead")...)
	e.Must(append(as("dev"), "join", "--name", "dev", "--role", "dev")...)
	e.Must(append(as("lead"), "send", "queue:build", "rebuild the search index with stemming")...)
	var claimed struct {
		Task struct {
			ID string `json:"message_id"`
		} `json:"task"`
	}
	e.MustJSON(&claimed, append(as("dev"), "queue", "claim", "build", "--timeout", "5s")...)
	e.Must(append(as("dev"), "reserve", "internal/search/**", "--reason", "stemming")...)
	var sent struct {
		ID string `json:"message_id"`
	}
	e.MustJSON(&sent, append(as("dev"), "send", "lead", "which stemmer: porter or snowball?")...)
	e.Run(append(as("dev"), "wait", "--reply-to", sent.ID, "--timeout", "1s")...) // no reply yet

	names := func(what, s string) {
		t.Helper()
		for _, want := range []string{claimed.Task.ID, "rebuild the search index with stemming", "internal/search/**", sent.ID} {
			if !strings.Contains(s, want) {
				t.Errorf("%s lacks %q:\n%s", what, want, s)
			}
		}
	}
	pre := e.hookRaw(t, "claude", "PreCompact", map[string]any{"trigger": "auto", "custom_instructions": nil}, as("dev")...)
	names("PreCompact's output", pre)
	if json.Valid([]byte(pre)) || !strings.HasPrefix(pre, "Keep in the summary") {
		t.Errorf("PreCompact's output: want plain text instructions for the summary, got %q", pre)
	}
	var start struct {
		HookSpecificOutput struct {
			HookEventName     string `json:"hookEventName"`
			AdditionalContext string `json:"additionalContext"`
		} `json:"hookSpecificOutput"`
	}
	for _, client := range []string{"claude", "codex"} {
		out := e.hookRaw(t, client, "SessionStart", map[string]any{"source": "compact"}, as("dev")...)
		if err := json.Unmarshal([]byte(out), &start); err != nil || start.HookSpecificOutput.HookEventName != "SessionStart" {
			t.Fatalf("%s SessionStart after a compaction: %q (%v)", client, out, err)
		}
		names(client+" SessionStart's context", start.HookSpecificOutput.AdditionalContext)
		// A fresh session starts afresh.
		if out := e.hookRaw(t, client, "SessionStart", map[string]any{"source": "startup"}, as("dev")...); strings.Contains(out, claimed.Task.ID) {
			t.Errorf("%s SessionStart at startup: got %q, want no working set", client, out)
		}
	}

	s := e.Session(nil, as("dev")...)
	res := call(t, s, "my_work", nil, nil)
	names("my_work", text(res))
	var w struct {
		Tasks []struct {
			TaskID string `json:"task_id"`
		} `json:"tasks"`
		Reservations []struct{ Path string }            `json:"reservations"`
		Asks         []struct{ Kind, MessageID string } `json:"asks"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	if json.Unmarshal(b, &w); len(w.Tasks) != 1 || w.Tasks[0].TaskID != claimed.Task.ID || len(w.Reservations) != 1 || len(w.Asks) != 1 || w.Asks[0].Kind != "reply" {
		t.Errorf("my_work: got %s", b)
	}

	// Done and released: nothing left to carry over.
	e.Must(append(as("dev"), "queue", "complete", claimed.Task.ID)...)
	e.Must(append(as("dev"), "reserve", "release", "internal/search/**")...)
	e.Must(append(as("lead"), "send", "dev", "porter", "--reply-to", sent.ID)...)
	if pre := e.hookRaw(t, "claude", "PreCompact", map[string]any{"trigger": "manual"}, as("dev")...); pre != "" {
		t.Errorf("PreCompact with nothing held: got %q, want nothing", pre)
	}
	if out := e.Must(append(as("dev"), "work")...); !strings.Contains(out, "no claimed tasks, no reservations, no outstanding asks") {
		t.Errorf("parley work: got %q", out)
	}
}

// TestCompactionWithClaudeCode: the real Claude Code, set up by `parley init
// claude`, compacts a session (/compact) with a stand-in model: the
// summarizer's request carries the PreCompact hook's working set (claimed
// task, reservation), and the first request after the compaction carries
// SessionStart's.
func TestCompactionWithClaudeCode(t *testing.T) {
	claude := standin.CLI(t, "claude")
	e := newEnv(t)
	repo := gitRepo(t)
	if out, errs, code := e.in(t, repo, "init", "claude", "--agent", "dev", "--yes"); code != 0 {
		t.Fatalf("init claude: exit %d\n%s%s", code, out, errs)
	}
	e.in(t, repo, "join", "--name", "lead", "--role", "lead")
	e.in(t, repo, "send", "queue:build", "rebuild the search index with stemming", "--agent", "lead")
	if out, errs, code := e.in(t, repo, "queue", "claim", "build", "--agent", "dev", "--timeout", "5s"); code != 0 {
		t.Fatalf("claim: exit %d\n%s%s", code, out, errs)
	}
	e.in(t, repo, "reserve", "src/**", "--agent", "dev", "--reason", "stemming")
	s := standin.Anthropic(t, func(r *standin.MessagesRequest) []standin.Block {
		if r.Has("<summary>") {
			return []standin.Block{standin.Text("<summary>We said hello.</summary>")}
		}
		return []standin.Block{standin.Text("OK")}
	})
	cfg := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		c := exec.Command(claude, append(args, "--output-format", "json")...)
		c.Dir = repo
		c.Env = append(standin.ClaudeEnv(s, cfg), "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"), "PARLEY_HOME="+e.home)
		out, err := c.Output()
		if err != nil {
			t.Fatalf("claude %v: %v\n%s", args, err, out)
		}
		var res struct {
			SessionID string `json:"session_id"`
		}
		json.Unmarshal(out, &res)
		return res.SessionID
	}
	sid := run("-p", "hello")
	before := len(s.Requests())
	run("-p", "--resume", sid, "/compact")
	run("-p", "--resume", sid, "go on")
	reqs := s.Requests()[before:]
	if len(reqs) < 2 {
		t.Fatalf("after /compact and a prompt the model was asked %d times, want the summary and the turn", len(reqs))
	}
	summary, next := string(reqs[0]), string(reqs[len(reqs)-1])
	for _, want := range []string{"Keep in the summary the agent's Parley working set", "rebuild the search index with stemming", "src/**"} {
		if !strings.Contains(summary, want) {
			t.Errorf("the summarizer's request lacks %q (PreCompact's instructions)", want)
		}
	}
	for _, want := range []string{"Call the parley my_work tool to see it again", "rebuild the search index with stemming", "src/**"} {
		if !strings.Contains(next, want) {
			t.Errorf("the request after the compaction lacks %q (SessionStart's context)", want)
		}
	}
}
