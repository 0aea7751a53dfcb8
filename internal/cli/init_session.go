package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/parley-dev/parley/internal/workspace"
)

// `parley init claude` and `init codex` with no --agent bake no name: each
// client session is an agent of its own, named after the session
// (workspace.Session.Name), so two sessions in one checkout are two agents.
// A name in the config that an older init derived (DIR-CLIENT) goes the
// same way; one the user chose stays.

// namesSessions reports whether a zero-flag init of client leaves the
// naming to each session.
func namesSessions(client string) bool { return client == "claude" || client == "codex" }

// settleSessionName is settleIdentity for claude and codex. Running init
// again keeps a name the user chose in Codex's config (the user's own
// file), but not one in the repository's .mcp.json (a repository is data:
// its --agent could be anyone's), nor one an older init derived.
func (p *initPlan) settleSessionName(g *globals) {
	if name := agentArg(p.configuredArgs()); name != "" {
		switch {
		case name == deriveAgentName(filepath.Base(p.root), p.client):
			fmt.Fprintf(g.stdout, "The server's name %s was derived by an older parley init from this directory, which made every %s session here one agent: it goes, and each session takes a name of its own.\n", name, p.client)
		case p.client == "codex":
			p.agent = name
			return
		default:
			fmt.Fprintf(g.stdout, "The repository's server names %s: not kept (a repository's config could name anyone); run `parley init %s --agent %s` to keep it.\n", name, p.client, name)
		}
	}
	if names, err := workspace.Identities(p.root); err == nil && len(names) > 0 {
		fmt.Fprintf(g.stdout, "Not baking in %s of %s: an identity file is its owner's, not every session's; run `parley init %s --agent NAME` to make every session here NAME.\n",
			strings.Join(names, ", "), workspace.IdentityDir(p.root), p.client)
	}
	fmt.Fprintf(g.stdout, "No --agent given: each %s session takes a name of its own (such as %s-%s-3f9a1c; see `parley mcp serve --help`), so two sessions here are two agents; run `parley init %s --agent NAME` for a fixed one.\n",
		p.client, p.client, filepath.Base(p.root), p.client)
}

// codexUnloadKey is the Codex setting (top-level in config.toml) that says
// how long its app-server keeps a thread loaded once no client shows it and
// no turn runs (default 30 minutes). Parley needs 0: an interactive codex's
// app-server outlives /quit, and while the thread stays loaded a letter
// through its door would run a turn that nobody sees. Unloaded, the thread
// announces thread/closed, and Parley closes the door (door.WatchCodex).
const codexUnloadKey = "thread_unload_delay_secs"

// withUnloadDelay adds codexUnloadKey = 0 to config text that has no
// setting of its own, before its first table.
func withUnloadDelay(text string) (string, error) {
	var conf map[string]any
	if err := toml.Unmarshal([]byte(text), &conf); err != nil {
		return text, err
	}
	if _, ok := conf[codexUnloadKey]; ok {
		return text, nil // the user's (unloadDelayNote)
	}
	add := "# Parley: unload a thread once no Codex shows it, so that /quit ends the session\n# and its door closes (else a letter would start a turn that nobody sees).\n" + codexUnloadKey + " = 0\n"
	lines := strings.SplitAfter(text, "\n")
	at := len(lines)
	for i, l := range lines {
		if tomlHeader.MatchString(l) {
			at = i
			break
		}
	}
	head := strings.Join(lines[:at], "")
	if head != "" && !strings.HasSuffix(head, "\n") {
		head += "\n"
	}
	out := head + add
	if at < len(lines) {
		out += "\n" + strings.Join(lines[at:], "")
	}
	var check map[string]any
	if err := toml.Unmarshal([]byte(out), &check); err != nil || check[codexUnloadKey] == nil {
		return text, fmt.Errorf("cannot add %s = 0 (%v): add it at the top by hand", codexUnloadKey, err)
	}
	return out, nil
}

// unloadDelayNote warns of a codexUnloadKey of the user's that keeps a quit
// session's thread loaded, reading the config at path; "" when all is well.
func unloadDelayNote(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	var conf map[string]any
	if toml.Unmarshal(b, &conf) != nil {
		return ""
	}
	if n, _ := conf[codexUnloadKey].(int64); n > 0 {
		return fmt.Sprintf("Your %s = %d is kept: for that long after /quit, Codex keeps the thread loaded and a letter through its door would start a turn that nobody sees (Parley closes the door once Codex unloads it); 0 closes it at once.", codexUnloadKey, n)
	}
	return ""
}
