package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/api"
)

// hook runs `parley hook claude EVENT` with Claude Code's hook input.
func (e *env) hook(t *testing.T, event string, input map[string]any, args ...string) (stdout, stderr string) {
	t.Helper()
	in := map[string]any{"session_id": "abc123", "transcript_path": "/tmp/t.jsonl", "cwd": e.home, "hook_event_name": event}
	for k, v := range input {
		in[k] = v
	}
	b, _ := json.Marshal(in)
	c := e.Cmd(append([]string{"hook", "claude", event}, args...)...)
	c.Stdin = bytes.NewReader(b)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Run(); err != nil {
		t.Fatalf("hook %s: %v (a hook must always exit 0); stderr %s", event, err, errb.String())
	}
	if s := out.String(); s != "" && !json.Valid([]byte(s)) {
		t.Fatalf("hook %s printed non-JSON on stdout: %q", event, s)
	}
	return out.String(), errb.String()
}

func (e *env) workStatus(t *testing.T, ws, agent string) string {
	t.Helper()
	var list struct {
		Agents []struct {
			Name       string `json:"name"`
			WorkStatus string `json:"work_status"`
		} `json:"agents"`
	}
	e.MustJSON(&list, "agents", "--workspace", ws)
	for _, a := range list.Agents {
		if a.Name == agent {
			return a.WorkStatus
		}
	}
	return ""
}

func TestClaudeHooks(t *testing.T) {
	e := newEnv(t)
	const ws = "hooks"
	e.Must("join", "--name", "alice", "--role", "dev", "--workspace", ws)
	e.Must("join", "--name", "bob", "--role", "lead", "--workspace", ws)
	id := []string{"--agent", "alice", "--workspace", ws}
	send := func(text string, extra ...string) {
		t.Helper()
		e.Must(append([]string{"send", "alice", text, "--agent", "bob", "--workspace", ws}, extra...)...)
	}

	steps := []struct {
		name   string
		event  string
		input  map[string]any
		before func()
		status string // the agent's status afterwards
		golden string // "" means no output
	}{
		{name: "session start, empty inbox", event: "SessionStart", input: map[string]any{"source": "startup"}, status: "ready"},
		{name: "prompt with two new messages", event: "UserPromptSubmit", input: map[string]any{"prompt": "go on"},
			before: func() {
				send("please review PR 12\nIt touches the store.")
				send("prod is down", "--priority", "critical")
			}, status: "work", golden: "hook_user_prompt_submit.json"},
		{name: "already reported: silent", event: "PostToolUse", input: map[string]any{"tool_name": "Bash"}, status: "work"},
		{name: "one more after a tool", event: "PostToolUse", input: map[string]any{"tool_name": "Bash"},
			before: func() { send("also: lunch?", "--priority", "low") }, status: "work", golden: "hook_post_tool_use.json"},
		{name: "stop with a new message blocks", event: "Stop", input: map[string]any{"stop_hook_active": false},
			before: func() { send("one last thing") }, status: "work", golden: "hook_stop.json"},
		{name: "stop again: reported, so it stops", event: "Stop", input: map[string]any{"stop_hook_active": true}, status: "ready"},
		{name: "stop_hook_active never blocks", event: "Stop", input: map[string]any{"stop_hook_active": true},
			before: func() { send("and another") }, status: "ready"},
		{name: "session start reports what waits", event: "SessionStart", input: map[string]any{"source": "resume"},
			status: "ready", golden: "hook_session_start.json"},
		// Everything was reported by now, but it is still unread.
		{name: "stop with reported mail unread blocks", event: "Stop", input: map[string]any{"stop_hook_active": false},
			status: "ready", golden: "hook_stop_unread.json"},
		{name: "session end", event: "SessionEnd", input: map[string]any{"reason": "exit"}, status: "offline"},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if st.before != nil {
				st.before()
			}
			out, errs := e.hook(t, st.event, st.input, id...)
			if st.golden == "" {
				if out != "" {
					t.Errorf("got output %s, want none (stderr %s)", out, errs)
				}
			} else {
				var v any
				json.Unmarshal([]byte(out), &v)
				pretty, _ := json.MarshalIndent(v, "", "  ")
				golden(t, st.golden, append(pretty, '\n'))
			}
			if got := e.workStatus(t, ws, "alice"); got != st.status {
				t.Errorf("status after %s: got %q, want %q", st.event, got, st.status)
			}
		})
	}
	// The hook only peeks: every message is still unread.
	var inbox struct {
		Messages []any `json:"messages"`
	}
	e.MustJSON(&inbox, "inbox", "--agent", "alice", "--workspace", ws, "--peek")
	if len(inbox.Messages) != 5 {
		t.Errorf("inbox after the hooks: got %d messages, want all 5 still unread", len(inbox.Messages))
	}
}

func TestClaudeHookNeverFails(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name  string
		stdin string
		args  []string
		want  string // in stderr
	}{
		{"bad JSON", "{not json", []string{"UserPromptSubmit", "--agent", "a"}, "not Claude Code's hook JSON"},
		{"no daemon", `{"cwd":"/"}`, []string{"Stop", "--agent", "a"}, "not running"},
		{"no identity", `{"cwd":"/"}`, []string{"Stop"}, "no agent identity"},
		{"unknown event", `{}`, []string{"Notification", "--agent", "a"}, "not handled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := e.Cmd(append([]string{"hook", "claude"}, tc.args...)...)
			c.Stdin = strings.NewReader(tc.stdin)
			var out, errb bytes.Buffer
			c.Stdout, c.Stderr = &out, &errb
			if err := c.Run(); err != nil {
				t.Fatalf("got %v, want exit 0", err)
			}
			if out.Len() != 0 {
				t.Errorf("stdout: got %q, want nothing", out.String())
			}
			if !strings.Contains(errb.String(), tc.want) {
				t.Errorf("stderr: got %q, want a note containing %q", errb.String(), tc.want)
			}
		})
	}
}

// TestClaudeHookReportsReturnedMail: the hook reports a message that came
// back to the inbox after one with a later id was reported: it remembers
// the ids it reported, not the largest id seen (issue 11).
func TestClaudeHookReportsReturnedMail(t *testing.T) {
	e := newEnv(t)
	const ws = "hooks"
	e.Must("join", "--name", "alice", "--role", "dev", "--workspace", ws)
	e.Must("join", "--name", "bob", "--role", "lead", "--workspace", ws)
	id := []string{"--agent", "alice", "--workspace", ws}
	e.Must("send", "alice", "first, taken then given back", "--agent", "bob", "--workspace", ws)
	// A reader takes it, leased, and the hook does not see it.
	req, _ := http.NewRequest("POST", "http://parley/api/v1/inbox/check", strings.NewReader(`{"limit":10}`))
	req.Header = http.Header{"Parley-Workspace": {ws}, "Parley-Agent": {"alice"}, "Parley-Receipts": {"1"}, "Content-Type": {"application/json"}}
	resp, err := e.httpClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var taken struct {
		Messages []struct {
			MessageID string `json:"message_id"`
		} `json:"messages"`
	}
	json.NewDecoder(resp.Body).Decode(&taken)
	resp.Body.Close()
	reader := resp.Header.Get("Parley-Reader")
	if len(taken.Messages) != 1 || reader == "" {
		t.Fatalf("leased read: got %+v, reader %q", taken.Messages, reader)
	}
	e.Must("send", "alice", "second, later id", "--agent", "bob", "--workspace", ws)
	if out, _ := e.hook(t, "UserPromptSubmit", nil, id...); !strings.Contains(out, "second, later id") || strings.Contains(out, "first") {
		t.Fatalf("hook with the first message leased: got %s, want only the second", out)
	}
	// The reader gives it back: in the inbox again, with its earlier id.
	req, _ = http.NewRequest("POST", "http://parley/api/v1/inbox/receipts",
		strings.NewReader(`{"message_ids":["`+taken.Messages[0].MessageID+`"],"received":false}`))
	req.Header = http.Header{"Parley-Workspace": {ws}, "Parley-Agent": {"alice"}, "Parley-Reader": {reader}, "Content-Type": {"application/json"}}
	if resp, err := e.httpClient().Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("give back: %v %v", resp, err)
	}
	if out, _ := e.hook(t, "UserPromptSubmit", nil, id...); !strings.Contains(out, "first, taken then given back") {
		t.Errorf("hook after the first message came back: got %s, want it reported", out)
	}
}

// TestClaudeHookDoor: the hooks keep the session's door: SessionStart
// registers it from the session's environment (for a session whose MCP
// server did not), a prompt that is a Parley letter reports the copies it
// told of seen and names no message again, and SessionEnd closes the door.
// The session's inbox socket is a listener of the test's.
func TestClaudeHookDoor(t *testing.T) {
	dir, err := os.MkdirTemp("/tmp", "hs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "4242.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	letters := make(chan string, 10)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b, _ := io.ReadAll(c)
			c.Close()
			for _, l := range strings.Split(string(b), "\n") {
				var m struct {
					Type    string `json:"type"`
					Message struct {
						Content string `json:"content"`
					} `json:"message"`
				}
				if json.Unmarshal([]byte(l), &m) == nil && m.Type == "user" {
					letters <- m.Message.Content
				}
			}
		}
	}()
	e := newEnv(t, "CLAUDE_CODE_MESSAGING_SOCKET="+sock, "CLAUDE_CODE_MESSAGING_TOKEN=tok", "CLAUDE_CODE_SESSION_ID=sess-1")
	const ws = "hooks"
	e.Must("join", "--name", "alice", "--role", "dev", "--workspace", ws)
	id := []string{"--agent", "alice", "--workspace", ws}
	e.hook(t, "SessionStart", map[string]any{"source": "startup"}, id...)
	var doors api.DoorsResult
	e.MustJSON(&doors, "doors", "--agent", "alice", "--workspace", ws)
	if len(doors.Doors) != 1 || doors.Doors[0].Address != sock || doors.Doors[0].Session != "sess-1" || doors.Doors[0].ByMCP {
		t.Fatalf("doors after SessionStart: got %+v, want the session's socket, registered by a hook", doors.Doors)
	}
	var sent api.SendResult
	e.MustJSON(&sent, "send", "alice", "hello", "--agent", "bob", "--workspace", ws)
	var letter string
	select {
	case letter = <-letters:
	case <-time.After(20 * time.Second):
		t.Fatal("no letter through the hook's door")
	}
	// The session's turn starts with the letter: the hook reports it seen,
	// and names no message again.
	out, _ := e.hook(t, "UserPromptSubmit", map[string]any{"prompt": letter}, id...)
	if out != "" {
		t.Errorf("a letter's turn got context again: %s", out)
	}
	var st api.MessageStatusResult
	e.MustJSON(&st, "delivery", sent.MessageID, "--agent", "bob", "--workspace", ws)
	if r := st.Recipients[0]; r.State != "seen" || r.WakePath != "door:claude" || r.SeenAt == "" {
		t.Errorf("the copy after the letter's turn: got %+v, want seen through door:claude", r)
	}
	e.hook(t, "SessionEnd", map[string]any{"reason": "exit"}, id...)
	e.MustJSON(&doors, "doors", "--agent", "alice", "--workspace", ws, "--closed")
	if len(doors.Doors) != 1 || doors.Doors[0].CloseReason != "session ended" {
		t.Errorf("doors after SessionEnd: got %+v, want closed, session ended", doors.Doors)
	}
}
