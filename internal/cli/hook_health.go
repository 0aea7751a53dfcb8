package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/parley-dev/parley/internal/client"
	"github.com/parley-dev/parley/internal/home"
	"github.com/parley-dev/parley/internal/hub"
)

// The hooks tell the daemon what the agent is doing, for its health (issue
// 28): a prompt starts a turn, a tool call is in flight from PreToolUse to
// PostToolUse, Stop ends the turn, SessionEnd the session. A turn with none
// of these for stall_after is stalled.

// policyOff is the PreToolUse policy that only reports the tool call: the
// hook `parley init claude` writes for every tool when it writes no edit
// check (--leases).
const policyOff = "off"

// evPreCompact is Claude Code's and Codex's hook before a compaction.
const evPreCompact = "PreCompact"

// hookActivity is what a hook event says the agent is doing. source is
// SessionStart's (a compaction's SessionStart comes in the middle of a
// turn); blocked says that Stop kept the agent going.
func hookActivity(event, source string, blocked bool) hub.Activity {
	switch event {
	case evSessionStart:
		if source == "compact" {
			return hub.ActProgress
		}
		return hub.ActSessionStart
	case evUserPromptSubmit:
		return hub.ActTurnStart
	case evPreToolUse:
		return hub.ActToolStart
	case evPostToolUse:
		return hub.ActToolEnd
	case evStop:
		if blocked {
			return hub.ActProgress
		}
		return hub.ActTurnEnd
	case evSessionEnd:
		return hub.ActSessionEnd
	}
	return hub.ActProgress // PreCompact, and what else comes during a turn
}

// reportActivity tells the daemon, and notes on stderr what it could not: a
// hook never fails the session over it.
func reportActivity(ctx context.Context, g *globals, c *client.Client, act hub.Activity, toolID string) {
	if _, err := c.ReportActivity(ctx, string(act), toolID); err != nil && !hub.IsNotFound(err) {
		fmt.Fprintf(g.stderr, "parley hook: report %s: %v\n", act, err)
	}
}

// runPreToolUse reports the tool call, then, unless the policy is off,
// checks the edit it makes against other agents' reservations (runEditHook).
func runPreToolUse(ctx context.Context, g *globals, clientName string, o editHookOptions, stdin io.Reader) (*preToolUseOutput, error) {
	if o.policy != policyDeny && o.policy != policyWarn && o.policy != policyOff {
		return nil, fmt.Errorf("invalid --policy %q: want deny, warn or off", o.policy)
	}
	b, err := io.ReadAll(io.LimitReader(stdin, maxHookInput))
	if err != nil {
		return nil, fmt.Errorf("read hook input: %w", err)
	}
	var in struct {
		SessionID string `json:"session_id"`
		Cwd       string `json:"cwd"`
		ToolUseID string `json:"tool_use_id"`
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, fmt.Errorf("hook input is not %s's PreToolUse JSON: %v", clientName, err)
	}
	if err := reportTool(ctx, g, clientName, in.SessionID, in.Cwd, in.ToolUseID); err != nil {
		fmt.Fprintf(g.stderr, "parley hook: report the tool call: %v\n", err)
	}
	if o.policy == policyOff {
		return nil, nil
	}
	return runEditHook(ctx, g, clientName, o, bytes.NewReader(b))
}

// reportTool reports a tool call of the agent of the client's session (in
// dir).
func reportTool(ctx context.Context, g *globals, clientName, session, dir, toolID string) error {
	if dir == "" {
		var err error
		if dir, err = os.Getwd(); err != nil {
			return err
		}
	}
	id, _, err := g.hookIdentity(ctx, dir, clientName, session)
	if err != nil {
		return err
	}
	if id.Agent == "" {
		return errors.New("no agent identity here: pass --agent NAME in the hook command, set PARLEY_AGENT, or run `parley join`")
	}
	paths, err := home.Resolve("")
	if err != nil {
		return err
	}
	reportActivity(ctx, g, client.New(paths).As(id.Workspace, id.Agent), hub.ActToolStart, toolID)
	return nil
}
