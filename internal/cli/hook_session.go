package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/client"
	"github.com/parley-dev/parley/internal/door"
	"github.com/parley-dev/parley/internal/home"
	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/profile"
	"github.com/parley-dev/parley/internal/workspace"
)

// A client session is reachable from its first second: its hooks register
// its agent and its door at its start (ops.StartSession), before any tool
// call. Codex names its thread to a hook only (its MCP server learns it at
// its first tool call), so Codex's SessionStart hook is where a Codex
// session becomes reachable; Claude Code's MCP server registers its
// session at start too, and its SessionStart hook does the same for a
// session whose server started later or restarted.

// startSession registers id's agent, named after its session or given, and
// the door, if any. It is best effort: the hook goes on without it.
func startSession(ctx context.Context, g *globals, c *client.Client, id workspace.Resolved, d *api.DoorRequest) {
	_, err := c.StartSession(ctx, api.SessionStartRequest{Role: id.Role, Module: id.Module,
		Derived: strings.HasPrefix(id.Source, "session"), Door: d})
	if err != nil && hub.KindOf(err) != hub.Unavailable {
		// (A daemon that is not running is said once, by the caller.)
		fmt.Fprintf(g.stderr, "parley hook: register the session: %v\n", err)
	}
}

// claudeDoor is the Claude Code session's inbox socket, from the hook's
// environment, or nil.
func claudeDoor(session string) *api.DoorRequest {
	sock := os.Getenv(door.EnvClaudeSocket)
	if s := os.Getenv(door.EnvClaudeSession); s != "" {
		session = s
	}
	if sock == "" || session == "" {
		return nil
	}
	return &api.DoorRequest{Kind: string(hub.DoorClaude), Session: session, Address: sock, Token: os.Getenv(door.EnvClaudeToken)}
}

// codexDoor is the thread's door: its queue on the app-server of the
// hook's CODEX_HOME, when one runs there (an interactive codex; `codex
// exec` runs none, and its thread takes no letters), or nil.
func codexDoor(thread string) *api.DoorRequest {
	codexHome := door.Home(os.Getenv)
	if thread == "" || codexHome == "" || !filepath.IsAbs(codexHome) {
		return nil
	}
	if _, err := os.Stat(door.ControlSocket(codexHome)); err != nil {
		return nil
	}
	return &api.DoorRequest{Kind: string(hub.DoorCodex), Session: thread, Address: codexHome}
}

// runCodexSessionStart answers Codex's SessionStart: it registers the
// thread's agent (the thread's own name, codex-myrepo-3f9a1c, unless one
// is given) and its door, and after a compaction or on a resumed thread
// gives Codex the agent's working set as context.
func runCodexSessionStart(ctx context.Context, g *globals, stdin io.Reader) (*claudeHookOutput, error) {
	var in compactHookInput
	b, err := io.ReadAll(io.LimitReader(stdin, maxHookInput))
	if err != nil {
		return nil, fmt.Errorf("read hook input: %w", err)
	}
	if len(strings.TrimSpace(string(b))) > 0 {
		if err := json.Unmarshal(b, &in); err != nil {
			return nil, fmt.Errorf("hook input is not Codex's hook JSON: %v", err)
		}
	}
	dir := in.Cwd
	if dir == "" {
		if dir, err = os.Getwd(); err != nil {
			return nil, err
		}
	}
	id, managed, err := g.hookIdentity(ctx, dir, "codex", in.SessionID)
	if err != nil {
		return nil, err
	}
	if id.Agent == "" {
		return nil, errors.New("no agent identity here: pass --agent NAME in the hook command, set PARLEY_AGENT, or run `parley join`")
	}
	paths, err := home.Resolve("")
	if err != nil {
		return nil, err
	}
	c := client.New(paths).As(id.Workspace, id.Agent)
	if !managed {
		// (A managed agent's runner registers it, and drives its thread.)
		startSession(ctx, g, c, id, codexDoor(in.SessionID))
	}
	if !restoresWork(in.Source) {
		return nil, nil
	}
	return withWork(ctx, g, c, evSessionStart, nil), nil
}

// runClaudePreToolUse is Claude Code's PreToolUse hook: with allowReads,
// a call of one of Parley's own tools that only read (profile.ReadTools,
// through any parley server: mcp__parley__..., the plugin's
// mcp__plugin_parley_parley__...) is allowed without a prompt: a Claude
// Code plugin can carry no permission rules, and a session that a letter
// woke must read its mail without stopping at a dialog. Anything else goes
// on to the activity report and the edit check (runPreToolUse).
func runClaudePreToolUse(ctx context.Context, g *globals, edit editHookOptions, allowReads bool, stdin io.Reader) (*preToolUseOutput, error) {
	b, err := io.ReadAll(io.LimitReader(stdin, maxHookInput))
	if err != nil {
		return nil, fmt.Errorf("read hook input: %w", err)
	}
	out, err := runPreToolUse(ctx, g, "claude", edit, bytes.NewReader(b))
	if err != nil || out != nil || !allowReads {
		return out, err
	}
	var in struct {
		ToolName string `json:"tool_name"`
	}
	if json.Unmarshal(b, &in) != nil || !isParleyReadTool(in.ToolName) {
		return nil, nil
	}
	return &preToolUseOutput{HookSpecificOutput: preToolUseSpecific{HookEventName: evPreToolUse, PermissionDecision: "allow",
		PermissionDecisionReason: "Parley's own read tool: it reads this session's inbox or the team, nothing else"}}, nil
}

// isParleyReadTool reports whether a Claude Code tool name is a read tool of
// a parley MCP server: mcp__parley__NAME, or the plugin's
// mcp__plugin_parley_parley__NAME.
func isParleyReadTool(tool string) bool {
	for _, prefix := range []string{"mcp__parley__", "mcp__plugin_parley_parley__"} {
		if name, ok := strings.CutPrefix(tool, prefix); ok {
			return profile.IsReadTool(name)
		}
	}
	return false
}
