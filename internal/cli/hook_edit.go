package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/client"
	"github.com/parley-dev/parley/internal/home"
	"github.com/parley-dev/parley/internal/hub"
)

// The PreToolUse hook checks every file edit against other agents'
// reservations (issue 15): the edits themselves take and respect leases, so
// agents need not remember to. Claude Code edits through Edit, Write,
// MultiEdit and NotebookEdit, each naming one file; Codex through
// apply_patch, whose patch names any number.

const evPreToolUse = "PreToolUse"

// editTools are the Claude Code tools that change files, and the input field
// that names the file.
var editTools = map[string]string{
	"Edit":         "file_path",
	"Write":        "file_path",
	"MultiEdit":    "file_path",
	"NotebookEdit": "notebook_path",
}

// codexEditTool is Codex's file-editing tool, and the PreToolUse matcher
// that `parley init codex --leases` writes. Its hook input carries the patch
// as tool_input.command.
const codexEditTool = "apply_patch"

// Edit policies: what the hook does when an edit runs into another agent's
// exclusive reservation.
const (
	policyDeny = "deny" // refuse the edit, telling the model who holds it and why
	policyWarn = "warn" // let it through, with the same words as context
)

// editHookOptions are the PreToolUse hook's flags.
type editHookOptions struct {
	policy string
	lease  time.Duration // 0: take no lease
}

// preToolUseInput is the PreToolUse hook input; Claude Code and Codex send
// the same shape.
type preToolUseInput struct {
	SessionID string                     `json:"session_id"`
	Cwd       string                     `json:"cwd"`
	ToolName  string                     `json:"tool_name"`
	ToolInput map[string]json.RawMessage `json:"tool_input"`
}

// preToolUseSpecific is the PreToolUse answer, the same for both clients.
type preToolUseSpecific struct {
	HookEventName            string `json:"hookEventName"`
	PermissionDecision       string `json:"permissionDecision,omitempty"`
	PermissionDecisionReason string `json:"permissionDecisionReason,omitempty"`
	AdditionalContext        string `json:"additionalContext,omitempty"`
}

type preToolUseOutput struct {
	HookSpecificOutput preToolUseSpecific `json:"hookSpecificOutput"`
}

// editedFiles are the files a tool call changes, as it names them (absolute,
// or relative to the session's directory); none when the tool edits none.
func editedFiles(clientName string, in preToolUseInput) []string {
	var s string
	if clientName == "codex" {
		if in.ToolName != codexEditTool || json.Unmarshal(in.ToolInput["command"], &s) != nil {
			return nil
		}
		return patchFiles(s)
	}
	field, ok := editTools[in.ToolName]
	if !ok || json.Unmarshal(in.ToolInput[field], &s) != nil || s == "" {
		return nil
	}
	return []string{s}
}

// patchFiles are the files an apply_patch patch adds, updates, deletes or
// moves to: the paths of its "*** Add File: ", "*** Update File: ",
// "*** Delete File: " and "*** Move to: " lines, each once.
func patchFiles(patch string) []string {
	var files []string
	for line := range strings.Lines(patch) {
		for _, p := range []string{"*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "} {
			if f, ok := strings.CutPrefix(line, p); ok {
				if f = strings.TrimSpace(f); f != "" && !slices.Contains(files, f) {
					files = append(files, f)
				}
				break
			}
		}
	}
	return files
}

// runEditHook answers a PreToolUse of clientName (claude or codex) that edits
// files. It prints nothing (nil) to let the edit through untouched.
func runEditHook(ctx context.Context, g *globals, clientName string, o editHookOptions, stdin io.Reader) (*preToolUseOutput, error) {
	if o.policy != policyDeny && o.policy != policyWarn {
		return nil, fmt.Errorf("invalid --policy %q: want deny or warn", o.policy)
	}
	b, err := io.ReadAll(io.LimitReader(stdin, maxHookInput))
	if err != nil {
		return nil, fmt.Errorf("read hook input: %w", err)
	}
	var in preToolUseInput
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, fmt.Errorf("hook input is not %s's PreToolUse JSON: %v", clientName, err)
	}
	files := editedFiles(clientName, in)
	if len(files) == 0 {
		return nil, nil // not an edit: the matcher was wider than ours
	}
	dir := in.Cwd
	if dir == "" {
		if dir, err = os.Getwd(); err != nil {
			return nil, err
		}
	}
	id, _, err := g.hookIdentity(ctx, dir, clientName, in.SessionID)
	if err != nil {
		return nil, err
	}
	var pats, rels []string
	for _, f := range files {
		// Files outside the repository: no reservation covers them.
		if rel, ok := repoPath(id.Root, dir, f); ok {
			rels = append(rels, rel)
			pats = append(pats, hub.EscapePath(rel))
		}
	}
	if len(pats) == 0 {
		return nil, nil
	}
	paths, err := home.Resolve("")
	if err != nil {
		return nil, err
	}
	c := client.New(paths).As(id.Workspace, id.Agent)
	res, err := c.CheckPaths(ctx, pats)
	if err != nil {
		return nil, err
	}
	if len(res.Conflicts) > 0 {
		var lines []string
		for _, c := range res.Conflicts {
			lines = append(lines, c.Message)
		}
		holder := res.Conflicts[0].Reservation.Agent
		text := fmt.Sprintf("Parley: %s. Another agent is working on this file; coordinate before you change it: "+
			"send %s a message (parley send_message), work on something else, or wait for the reservation to end.",
			strings.Join(lines, "; "), holder)
		out := &preToolUseOutput{HookSpecificOutput: preToolUseSpecific{HookEventName: evPreToolUse}}
		if o.policy == policyDeny {
			out.HookSpecificOutput.PermissionDecision = "deny"
			out.HookSpecificOutput.PermissionDecisionReason = text
		} else {
			out.HookSpecificOutput.AdditionalContext = text
		}
		return out, nil
	}
	if o.lease > 0 && id.Agent != "" {
		excl := true
		_, err := c.Reserve(ctx, api.ReserveRequest{Paths: pats, TTLSeconds: int(o.lease / time.Second),
			Exclusive: &excl, Reason: "editing it (" + in.ToolName + ")"})
		if err != nil {
			// The edit goes on: the lease is a courtesy to others.
			fmt.Fprintf(g.stderr, "parley hook: lease on %s not taken: %v\n", strings.Join(rels, ", "), err)
		}
	}
	return nil, nil
}

// repoPath turns the file an edit names (absolute, or relative to dir) into a
// path relative to root, the top of the working tree. Symbolic links in the
// directories are resolved on both sides, so /tmp and /private/tmp agree.
func repoPath(root, dir, file string) (string, bool) {
	if !filepath.IsAbs(file) {
		file = filepath.Join(dir, file)
	}
	file = filepath.Clean(file)
	if d, err := filepath.EvalSymlinks(filepath.Dir(file)); err == nil {
		file = filepath.Join(d, filepath.Base(file))
	}
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	rel, err := filepath.Rel(root, file)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// editHookArgs are the flags `parley init claude --leases` gives the hook:
// refuse edits of files another agent holds, and hold each edited file for
// ten minutes, renewed by every edit.
var editHookArgs = []string{"--policy", policyDeny, "--lease", "10m"}
