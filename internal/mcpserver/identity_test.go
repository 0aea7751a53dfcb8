package mcpserver_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/mcpserver"
	"github.com/parley-dev/parley/internal/ops"
)

func toolNames(t *testing.T, e *env, c ops.Caller) []string {
	t.Helper()
	res, err := e.session(c, nil).ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// Only a session whose name Parley derived sees set_identity, beside native
// or lean.
func TestIdentityProfileOnlyForDerivedNames(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name     string
		caller   ops.Caller
		wantTool bool
	}{
		{"given name", ops.Caller{Workspace: "w", Agent: "given"}, false},
		{"derived, native", ops.Caller{Workspace: "w", Agent: "claude-w-aaaaaa", NameFrom: api.NameSession}, true},
		{"derived, lean", ops.Caller{Workspace: "w", Agent: "claude-w-bbbbbb", NameFrom: api.NameSession, Profiles: []string{"lean"}}, true},
		{"derived, sidechat", ops.Caller{Workspace: "w", Agent: "claude-w-cccccc", NameFrom: api.NameSession, Profiles: []string{"sidechat"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			names := toolNames(t, e, tc.caller)
			if got := slices.Contains(names, "set_identity"); got != tc.wantTool {
				t.Errorf("tools %v: set_identity offered %v, want %v", names, got, tc.wantTool)
			}
		})
	}
	if !slices.Contains(e.mcp.Profiles(), mcpserver.IdentityProfile) {
		t.Errorf("profiles %v lack %s", e.mcp.Profiles(), mcpserver.IdentityProfile)
	}
}

// A derived name renames itself: mail queued for it follows, later mail to
// either name arrives, whoami says the new name, and the refusals say why.
func TestSetIdentity(t *testing.T) {
	e := newEnv(t)
	boss := e.session(ops.Caller{Workspace: "w", Agent: "boss"}, nil)
	old := "claude-w-3f9a1c"
	me := e.session(ops.Caller{Workspace: "w", Agent: old, NameFrom: api.NameSession}, nil)
	fixed := e.session(ops.Caller{Workspace: "w", Agent: "fixed", Profiles: []string{"native", mcpserver.IdentityProfile}}, nil)

	var who api.WhoamiResult
	call(t, me, "whoami", nil, &who)
	if !strings.Contains(who.Note, "set_identity") {
		t.Errorf("whoami of a derived name: note %q, want a hint at set_identity", who.Note)
	}
	call(t, boss, "send_message", map[string]any{"to": old, "content": "before"}, nil)

	for _, tc := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"a given name", map[string]any{"name": "fixed-2"}, "was given to it"},
		{"a taken name", map[string]any{"name": "boss"}, "taken"},
		{"a look-alike", map[string]any{"name": "b0ss"}, "looks like"},
		{"a bad name", map[string]any{"name": "two words"}, "agent name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := me
			if tc.name == "a given name" {
				s = fixed
			}
			res := call(t, s, "set_identity", tc.args, nil)
			if !res.IsError || !strings.Contains(text(res), tc.want) {
				t.Errorf("set_identity %v: %q (error %v), want an error saying %q", tc.args, text(res), res.IsError, tc.want)
			}
		})
	}

	var got api.SetIdentityResult
	if res := call(t, me, "set_identity", map[string]any{"name": "reviewer", "role": "reviewer"}, &got); res.IsError {
		t.Fatalf("set_identity: %s", text(res))
	}
	if got.Agent != "reviewer" || got.Role != "reviewer" || got.Previous != old || got.Unread != 1 {
		t.Errorf("set_identity: %+v, want reviewer (reviewer), previously %s, 1 unread", got, old)
	}
	call(t, me, "whoami", nil, &who)
	if who.Agent != "reviewer" || who.Role != "reviewer" {
		t.Errorf("whoami after the rename: %+v", who)
	}
	call(t, boss, "send_message", map[string]any{"to": "reviewer", "content": "to the new name"}, nil)
	call(t, boss, "send_message", map[string]any{"to": old, "content": "to the old name"}, nil)
	var inbox api.CheckResult
	call(t, me, "check_messages", nil, &inbox)
	var contents []string
	for _, m := range inbox.Messages {
		contents = append(contents, m.Content)
	}
	if !slices.Equal(contents, []string{"before", "to the new name", "to the old name"}) {
		t.Errorf("inbox after the rename: %q", contents)
	}
	var agents api.ListAgentsResult
	call(t, boss, "list_agents", nil, &agents)
	var names []string
	for _, a := range agents.Agents {
		names = append(names, a.Name)
	}
	if slices.Contains(names, old) || !slices.Contains(names, "reviewer") {
		t.Errorf("agents after the rename: %v", names)
	}
	// It may choose again; the names it had stay its own.
	if res := call(t, me, "set_identity", map[string]any{"name": "lead"}, &got); res.IsError || got.Role != "reviewer" {
		t.Fatalf("second set_identity: %s %+v", text(res), got)
	}
	call(t, boss, "send_message", map[string]any{"to": old, "content": "oldest name"}, nil)
	call(t, me, "check_messages", nil, &inbox)
	if len(inbox.Messages) != 1 || inbox.Messages[0].Content != "oldest name" {
		t.Errorf("mail to the first name after two renames: %+v", inbox.Messages)
	}
}
