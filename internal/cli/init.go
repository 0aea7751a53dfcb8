package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/mattn/go-isatty"
	"github.com/pelletier/go-toml/v2"
	"github.com/spf13/cobra"

	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/quote"
	"github.com/parley-dev/parley/internal/shellword"
	"github.com/parley-dev/parley/internal/workspace"
)

func initCmd(g *globals) *cobra.Command {
	var role string
	var yes, permissions, withChannel, leases bool
	cmd := &cobra.Command{
		Use:   "init claude|codex|cursor|gemini|opencode|qwen",
		Short: "Add Parley to an MCP client's configuration for this repository",
		Long: `Add Parley's MCP server to a client's configuration, merging with what is
there: other servers and settings are kept. The parley server's entry is
Parley's, whole (command, args, env): what the file had in it is taken out
and listed, and so are the hooks, permissions and other servers of the
repository that init leaves as they are (a repository's settings run
commands as you: review them before you trust the folder).

  claude   .mcp.json, plus hooks in .claude/settings.json (status and wake-ups,
           see ` + "`parley hook claude`" + `; with --permissions, permission
           prompts go to Parley's inbox), a rule that allows Parley's own tools,
           and the message-listener sub-agent in .claude/agents/message-listener.md
  codex    [mcp_servers.parley] in $CODEX_HOME/config.toml (default ~/.codex),
           with PARLEY_HOME and CODEX_HOME passed on (the thread's queue is
           the session's door) and Parley's tools approved; a SessionStart
           hook that registers each thread's agent and door at the
           thread's start (so it is reachable before its first tool call)
           and gives the agent its working set back after a compaction;
           thread_unload_delay_secs = 0, so that Codex unloads a thread
           once /quit leaves no window on it and Parley closes its door;
           with --permissions, a PermissionRequest hook that sends Codex's
           approval requests to Parley's inbox; with --leases, a PreToolUse
           hook that checks each apply_patch against other agents' file
           reservations; the hooks trusted in Codex through codex
           app-server when codex is on PATH (else it prints the /hooks
           step). That file is user-wide
  cursor   .cursor/mcp.json
  gemini   .gemini/settings.json
  opencode opencode.json (mcp.parley, a local server); the door is the local
           server of opencode's TUI, which it starts with --port only:
           run ` + "`opencode --port 0`" + ` (Parley finds the port from the process)
  qwen     .qwen/settings.json, plus agents.crossSessionInbound = "accept" in
           $QWEN_HOME/settings.json (default ~/.qwen), user-wide: without it
           Qwen Code holds Parley's letters for review (/peers), since a
           letter never claims a review class

Paths are relative to the top of this repository (or this directory). It shows
the changes as a diff and asks before writing, unless --yes; without a
terminal it needs --yes. Running it again changes nothing. --agent and --role
are passed on to ` + "`parley mcp serve`" + ` (and the hooks).

For claude and codex, no --agent bakes in no name: each client session takes
one of its own (claude-myrepo-3f9a1c, codex-myrepo-...), so two sessions in
one checkout are two agents, and an identity file here (someone's parley
join) is not every session's. cursor and gemini name no sessions: without
--agent they take the single identity file here, else DIR-CLIENT.`,
		Example: `  parley init claude
  parley init codex --agent reviewer --role reviewer --yes`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"claude", "codex", "cursor", "gemini", "opencode", "qwen"},
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := os.Getwd()
			if err != nil {
				return err
			}
			loc, err := workspace.Locate(dir)
			if err != nil {
				return err
			}
			p := initPlan{root: loc.Root, command: parleyCommand(), agent: g.agent, role: role, client: args[0], permissions: permissions, channel: withChannel, leases: leases}
			if withChannel && args[0] != "claude" {
				return fmt.Errorf("--channel is for claude: channels are Claude Code's")
			}
			if permissions && args[0] != "claude" && args[0] != "codex" {
				return fmt.Errorf("--permissions is for claude and codex: %s has no permission hook", args[0])
			}
			if leases && args[0] != "claude" && args[0] != "codex" {
				return fmt.Errorf("--leases is for claude and codex: %s has no edit hook", args[0])
			}
			if err := p.settleIdentity(g, dir); err != nil {
				return err
			}
			var changes []fileChange
			switch args[0] {
			case "claude":
				changes, err = p.claude()
			case "codex":
				changes, err = p.codex()
			case "cursor":
				changes, err = p.jsonServer(filepath.Join(loc.Root, ".cursor", "mcp.json"), false)
			case "gemini":
				changes, err = p.jsonServer(filepath.Join(loc.Root, ".gemini", "settings.json"), false)
			case "opencode":
				changes, err = p.opencode()
			case "qwen":
				changes, err = p.qwen()
			default:
				return fmt.Errorf("unknown client %q: want claude, codex, cursor, gemini, opencode or qwen", args[0])
			}
			if err != nil {
				return err
			}
			if err := applyChanges(g, cmd.InOrStdin(), loc.Root, args[0], changes, yes); err != nil {
				return err
			}
			if args[0] == "claude" {
				fmt.Fprintln(g.stdout, "Claude Code applies .claude/settings.json (Parley's hooks, and the rule that lets Parley's tools run without a prompt, which the background message-listener needs) once this folder is trusted: accept the trust dialog at the first start here, and approve the parley server of .mcp.json.")
				if l := checkClaudeLetters(loc.Root, nil); l.Holds {
					fmt.Fprintf(g.stdout, "Warning: %s. To take them: %s.\n", l.Detail, l.Fix)
				} else {
					fmt.Fprintf(g.stdout, "Parley's letters: %s.\n", l.Detail)
				}
			}
			if args[0] == "codex" {
				path, _ := codexConfigPath()
				who := "each session under a name of its own (see `parley mcp serve --help`)"
				if p.agent != "" {
					who = "as agent " + p.agent
				}
				fmt.Fprintf(g.stdout, "Note: %s is user-wide: Codex starts this parley server in every repository, %s.\n", path, who)
				if note := unloadDelayNote(path); note != "" {
					fmt.Fprintln(g.stdout, note)
				}
				p.trustCodexHooks(cmd.Context(), g)
			}
			if withChannel {
				fmt.Fprintln(g.stdout, "Start Claude Code with the channel (a research preview: it needs a claude.ai login, and until parley is on Claude Code's approved allowlist it must be loaded as a development channel):\n  claude --dangerously-load-development-channels server:parley")
			}
			if args[0] == "qwen" {
				fmt.Fprintln(g.stdout, "Qwen Code asks before it starts a project's MCP server: approve the parley server of .qwen/settings.json at the first start here.")
				if policy, path := checkQwenLetters(); policy == "accept" {
					fmt.Fprintf(g.stdout, "Parley's letters: Qwen Code sessions take them (agents.crossSessionInbound is accept in %s, user-wide: other sessions of yours are taken too).\n", path)
				} else {
					fmt.Fprintf(g.stdout, "Warning: Qwen Code %s (agents.crossSessionInbound in %s). To take them: set it to \"accept\".\n", qwenPolicyEffect(policy), path)
				}
			}
			if args[0] == "opencode" {
				fmt.Fprintln(g.stdout, "Start opencode with its local server on (the door Parley writes letters through): `opencode --port 0` (a free port, 4096 if it is), or --port N. Without --port the TUI serves no API (its config's server.port does not turn it on), and its agent wakes only when it calls Parley's tools. Letters go to the TUI's newest session in this folder (opencode tells its MCP servers of no session).")
			}
			if args[0] == "gemini" {
				fmt.Fprintln(g.stdout, "Gemini CLI starts a project's MCP servers only in a trusted folder: trust this one (gemini asks when it starts here, or /permissions) before `gemini mcp list` shows parley Connected.")
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&role, "role", "", "the agent's role, passed on to parley mcp serve --role")
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "write without asking")
	cmd.Flags().BoolVar(&leases, "leases", false, "claude, codex: also a PreToolUse hook that checks each edit (Claude Code's Edit, Write, MultiEdit, NotebookEdit; Codex's apply_patch) against other agents' file reservations and reserves the files")
	cmd.Flags().BoolVar(&withChannel, "channel", false, "claude: make the server a Claude Code channel (mcp serve --channel): messages are pushed into the session as they arrive, and permission prompts are relayed to Parley's inbox")
	cmd.Flags().BoolVar(&permissions, "permissions", false, "claude, codex: also send the client's permission prompts to Parley's permission inbox (a PermissionRequest hook), where parley allow|deny, a manager agent or the dashboard can answer them")
	return cmd
}

// parleyCommand is how the client should start parley: "parley" when that is
// this binary on $PATH, else this binary's absolute path.
func parleyCommand() string {
	exe, err := os.Executable()
	if err != nil {
		return "parley"
	}
	exe, _ = filepath.EvalSymlinks(exe)
	if p, err := exec.LookPath("parley"); err == nil {
		if p, err = filepath.EvalSymlinks(p); err == nil && p == exe {
			return "parley"
		}
	}
	return exe
}

type initPlan struct {
	root        string
	command     string
	agent       string
	role        string
	client      string
	permissions bool // install the PermissionRequest hook
	channel     bool // mcp serve --channel
	leases      bool // the PreToolUse hook on edits (hook_edit.go)
}

// settleIdentity settles the name of the server init writes. For claude and
// codex, whose sessions name themselves, none unless --agent gives one
// (settleSessionName). For the others a server without one would connect
// fine and then fail every send with "no sender": without --agent it takes
// the single identity of .parley/identities, else derives one from the
// directory and the client, and says so.
func (p *initPlan) settleIdentity(g *globals, dir string) error {
	if p.agent != "" {
		return hub.ValidName("agent name", p.agent)
	}
	if namesSessions(p.client) {
		p.settleSessionName(g)
		return nil
	}
	// The name in the repository's own config file is not taken: a
	// repository is data, and its --agent could be anyone's (issue 40).
	names, err := workspace.Identities(p.root)
	if err != nil {
		return fmt.Errorf("read identities: %w", err)
	}
	switch {
	case len(names) == 1:
		p.agent = names[0]
		fmt.Fprintf(g.stdout, "No --agent given: the server speaks as %s, the identity in %s.\n", p.agent, workspace.IdentityDir(p.root))
		return nil
	case len(names) > 1:
		return fmt.Errorf("no --agent given and several identities in %s (%s): run `parley init %s --agent NAME` with one of them", workspace.IdentityDir(p.root), strings.Join(names, ", "), p.client)
	}
	name := deriveAgentName(filepath.Base(p.root), p.client)
	if hub.ValidName("agent name", name) != nil {
		return fmt.Errorf("no --agent given and no name to derive from %s: run `parley init %s --agent NAME` (NAME: letters, digits, '-', '_', '.')", p.root, p.client)
	}
	p.agent = name
	fmt.Fprintf(g.stdout, "No --agent given: the server speaks as %s (from this directory and the client); run `parley init %s --agent NAME` to choose another name.\n", name, p.client)
	return nil
}

// configuredArgs are the args of the parley server in the client's config
// file as it is now, or nil.
func (p *initPlan) configuredArgs() []string {
	var entry map[string]any
	switch p.client {
	case "codex":
		path, err := codexConfigPath()
		if err != nil {
			return nil
		}
		b, _, _ := readExisting("", path)
		var conf struct {
			Servers map[string]map[string]any `toml:"mcp_servers"`
		}
		if toml.Unmarshal(b, &conf) != nil {
			return nil
		}
		entry = conf.Servers["parley"]
	default:
		if p.client == "opencode" {
			return opencodeArgs(p.root)
		}
		path := map[string]string{"claude": ".mcp.json", "cursor": ".cursor/mcp.json", "gemini": ".gemini/settings.json", "qwen": ".qwen/settings.json"}[p.client]
		if path == "" {
			return nil
		}
		m, _, _, err := loadJSONObject(p.root, filepath.Join(p.root, path))
		if err != nil {
			return nil
		}
		servers, _ := m["mcpServers"].(map[string]any)
		entry, _ = servers["parley"].(map[string]any)
	}
	list, _ := entry["args"].([]any)
	var args []string
	for _, a := range list {
		if s, ok := a.(string); ok {
			args = append(args, s)
		}
	}
	return args
}

// agentArg is the value of --agent in args, or "".
func agentArg(args []string) string {
	for i, a := range args {
		if a == "--agent" && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, "--agent="); ok {
			return v
		}
	}
	return ""
}

// deriveAgentName is DIR-CLIENT with every character an agent name cannot
// hold replaced by '-': one name per worktree and client, stable across runs.
func deriveAgentName(dir, client string) string {
	clean := strings.Map(func(r rune) rune {
		if r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return r
		}
		return '-'
	}, dir)
	clean = strings.Trim(clean, "-.")
	if clean == "" {
		return ""
	}
	if len(clean) > 48 {
		clean = clean[:48]
	}
	return clean + "-" + client
}

// fileChange is one file's content before and after.
type fileChange struct {
	path     string
	old, new []byte
	exists   bool
	note     string // said instead of a diff when the file is left alone
	// review lists what the file has that Parley did not write and init
	// leaves as it is (or what it took out of Parley's own entry), for the
	// person to read before trusting the folder: a repository is data.
	review []string
}

func (p initPlan) serveArgs() []string {
	args := []string{"mcp", "serve"}
	if p.agent != "" {
		args = append(args, "--agent", p.agent)
	}
	if p.role != "" {
		args = append(args, "--role", p.role)
	}
	if p.channel {
		args = append(args, "--channel")
	}
	return args
}

// loadJSONObject reads a JSON object file inside root; a missing or empty
// file is {}. Numbers stay as written.
func loadJSONObject(root, path string) (map[string]any, []byte, bool, error) {
	b, exists, err := readExisting(root, path)
	if err != nil {
		return nil, nil, false, err
	}
	m := map[string]any{}
	if len(bytes.TrimSpace(b)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			return nil, nil, false, fmt.Errorf("%s is not a JSON object (%v): fix it or move it aside, then run again", path, err)
		}
	}
	return m, b, exists, nil
}

func marshalJSON(m map[string]any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	enc.Encode(m)
	return buf.Bytes()
}

// object returns m[key] as an object, making it when absent.
func object(m map[string]any, key, path string) (map[string]any, error) {
	switch v := m[key].(type) {
	case nil:
		o := map[string]any{}
		m[key] = o
		return o, nil
	case map[string]any:
		return v, nil
	}
	return nil, fmt.Errorf("%s: %q is not an object: fix it by hand", path, key)
}

// jsonServer adds mcpServers.parley to a JSON config file.
func (p initPlan) jsonServer(path string, withType bool) ([]fileChange, error) {
	m, old, exists, err := loadJSONObject(p.root, path)
	if err != nil {
		return nil, err
	}
	servers, err := object(m, "mcpServers", path)
	if err != nil {
		return nil, err
	}
	entry := map[string]any{"command": p.command, "args": toAny(p.serveArgs())}
	if withType {
		entry["type"] = "stdio"
	}
	// The parley entry is Parley's, whole: what the file had in it (an env
	// naming PARLEY_HOME, a cwd, another command) goes, and is listed.
	var review []string
	if cur, ok := servers["parley"].(map[string]any); ok {
		for _, k := range slices.Sorted(maps.Keys(cur)) {
			if _, ours := entry[k]; !ours {
				review = append(review, fmt.Sprintf("took %s out of the parley server: %s", k, compactJSON(cur[k])))
			} else if k != "type" && !reflect.DeepEqual(normalJSON(cur[k]), normalJSON(entry[k])) {
				review = append(review, fmt.Sprintf("replaced the parley server's %s %s", k, compactJSON(cur[k])))
			}
		}
	}
	servers["parley"] = entry
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		if name == "parley" {
			continue
		}
		review = append(review, fmt.Sprintf("kept the MCP server %q, not Parley's: %s", name, compactJSON(servers[name])))
	}
	c := changeJSON(path, old, exists, m)
	c.review = review
	return []fileChange{c}, nil
}

// compactJSON renders v on one line, cut to a readable length, with its
// characters as quote.Clean leaves them (a repository's text may hold
// controls that would rewrite the terminal).
func compactJSON(v any) string {
	b, _ := json.Marshal(v)
	s := quote.Clean(string(b))
	if r := []rune(s); len(r) > 300 {
		s = string(r[:300]) + "…"
	}
	return s
}

// normalJSON is v as plain JSON values, numbers as json.Number read them.
func normalJSON(v any) any {
	b, _ := json.Marshal(v)
	var out any
	json.Unmarshal(b, &out)
	return out
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// changeJSON is the change to path, none when the content is the same JSON.
func changeJSON(path string, old []byte, exists bool, m map[string]any) fileChange {
	c := fileChange{path: path, old: old, exists: exists, new: marshalJSON(m)}
	if exists && sameJSON(old, c.new) {
		c.new = old
	}
	return c
}

func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// parleyToolsRule is Claude Code's permission rule for every tool of the
// MCP server named parley.
const parleyToolsRule = "mcp__parley"

// claudeHookEvents are the hooks `parley init claude` always writes: status
// and wake-ups, the activity that makes the agent's health (PreToolUse, on
// every tool, reports the call; with --leases it also checks edits), and
// the working set that outlives a compaction (PreCompact, and SessionStart
// after one).
var claudeHookEvents = []string{"SessionStart", "UserPromptSubmit", evPreToolUse, "PostToolUse", "Stop", "SessionEnd", evPreCompact}

func (p initPlan) hookCommand(event string) string {
	parts := []string{shellQuote(p.command), "hook", "claude", event}
	if p.agent != "" {
		parts = append(parts, "--agent", shellQuote(p.agent))
	}
	if event == evPreToolUse {
		if p.leases {
			parts = append(parts, editHookArgs...)
		} else {
			parts = append(parts, "--policy", policyOff)
		}
	}
	return strings.Join(parts, " ")
}

// checksEdits reports whether a PreToolUse hook command checks edits (it was
// written with --leases): running init again without --leases keeps that.
func checksEdits(cmd string) bool {
	f := strings.Fields(cmd)
	for i, w := range f {
		if w == "--policy" && i+1 < len(f) {
			return f[i+1] != policyOff
		}
	}
	return slices.Contains(f, "--lease")
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// isParleyHook reports whether a hook command is one `parley init` wrote for
// event: one simple command (shellword: nothing chained after it), the
// parley program, hook claude EVENT, and flags. "parley hook claude Stop;
// curl ... | sh" is the repository's own hook.
func isParleyHook(cmd, event string) bool {
	w, err := shellword.Parse(cmd)
	if err != nil || len(w) < 4 || w[1] != "hook" || w[2] != "claude" || w[3] != event {
		return false
	}
	prog := strings.TrimSuffix(filepath.Base(w[0]), ".exe")
	if prog != "parley" && w[0] != parleyCommand() {
		return false
	}
	for i := 4; i < len(w); i++ {
		if !strings.HasPrefix(w[i], "--") {
			return false
		}
		if !strings.Contains(w[i], "=") && i+1 < len(w) && !strings.HasPrefix(w[i+1], "--") {
			i++ // the flag's value
		}
	}
	return true
}

// settingsReview lists what a .claude/settings.json has that Parley did not
// write: hooks other than Parley's (each runs a command at that event),
// and permissions other than Parley's tools' (what runs without a prompt).
func settingsReview(m map[string]any) []string {
	var out []string
	hooks, _ := m["hooks"].(map[string]any)
	for _, ev := range slices.Sorted(maps.Keys(hooks)) {
		groups, _ := hooks[ev].([]any)
		for _, gr := range groups {
			grm, _ := gr.(map[string]any)
			list, _ := grm["hooks"].([]any)
			for _, h := range list {
				hm, _ := h.(map[string]any)
				cmd, _ := hm["command"].(string)
				if hm == nil || isParleyHook(cmd, ev) {
					continue
				}
				out = append(out, fmt.Sprintf("kept a hook that is not Parley's: %s runs %s", ev, compactJSON(firstNonNil(hm["command"], hm))))
			}
		}
	}
	perms, _ := m["permissions"].(map[string]any)
	for _, k := range []string{"allow", "ask", "deny", "additionalDirectories"} {
		list, _ := perms[k].([]any)
		for _, v := range list {
			if v != any(parleyToolsRule) && k != "deny" {
				out = append(out, fmt.Sprintf("kept permissions.%s %s", k, compactJSON(v)))
			}
		}
	}
	if mode, ok := perms["defaultMode"]; ok {
		out = append(out, fmt.Sprintf("kept permissions.defaultMode %s", compactJSON(mode)))
	}
	for _, k := range []string{"env", "enableAllProjectMcpServers", "enabledMcpjsonServers", "apiKeyHelper"} {
		if v, ok := m[k]; ok {
			out = append(out, fmt.Sprintf("kept %s %s", k, compactJSON(v)))
		}
	}
	return out
}

func firstNonNil(vs ...any) any {
	for _, v := range vs {
		if v != nil {
			return v
		}
	}
	return nil
}

// claude plans .mcp.json, the hooks in .claude/settings.json and the
// message-listener sub-agent.
func (p initPlan) claude() ([]fileChange, error) {
	changes, err := p.jsonServer(filepath.Join(p.root, ".mcp.json"), true)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(p.root, ".claude", "settings.json")
	m, old, exists, err := loadJSONObject(p.root, path)
	if err != nil {
		return nil, err
	}
	hooks, err := object(m, "hooks", path)
	if err != nil {
		return nil, err
	}
	events := claudeHookEvents
	if p.permissions {
		events = append(slices.Clip(events), evPermissionRequest)
	}
	for _, ev := range events {
		want := p.hookCommand(ev)
		var groups []any
		switch v := hooks[ev].(type) {
		case nil:
		case []any:
			groups = v
		default:
			return nil, fmt.Errorf("%s: hooks.%s is not a list: fix it by hand", path, ev)
		}
		found := false
		for _, gr := range groups {
			grm, _ := gr.(map[string]any)
			list, _ := grm["hooks"].([]any)
			for _, h := range list {
				hm, _ := h.(map[string]any)
				if c, _ := hm["command"].(string); hm != nil && isParleyHook(c, ev) {
					cmd := want
					if ev == evPreToolUse && !p.leases && checksEdits(c) {
						q := p
						q.leases = true
						cmd = q.hookCommand(ev)
					}
					hm["command"] = cmd // update ours in place (new path or agent)
					if ev == evPreToolUse {
						grm["matcher"] = "*" // every tool call counts for health
					}
					found = true
				}
			}
		}
		if !found {
			timeout := json.Number("10")
			if ev == evPermissionRequest {
				// It waits for a person (up to its --wait of 50 s).
				timeout = json.Number("60")
			}
			gr := map[string]any{"hooks": []any{map[string]any{"type": "command", "command": want, "timeout": timeout}}}
			if ev == "PostToolUse" || ev == evPermissionRequest || ev == evPreToolUse {
				gr["matcher"] = "*"
			}
			groups = append(groups, gr)
		}
		hooks[ev] = groups
	}
	// Parley's own tools run without a prompt: the message-listener runs in
	// the background, where Claude Code cannot ask and refuses instead.
	perms, err := object(m, "permissions", path)
	if err != nil {
		return nil, err
	}
	var allow []any
	switch v := perms["allow"].(type) {
	case nil:
	case []any:
		allow = v
	default:
		return nil, fmt.Errorf("%s: permissions.allow is not a list: fix it by hand", path)
	}
	if !slices.Contains(allow, any(parleyToolsRule)) {
		perms["allow"] = append(allow, parleyToolsRule)
	}
	sc := changeJSON(path, old, exists, m)
	sc.review = settingsReview(m)
	changes = append(changes, sc)

	agentPath := filepath.Join(p.root, ".claude", "agents", "message-listener.md")
	cur, exists, err := readExisting(p.root, agentPath)
	if err != nil {
		return nil, err
	}
	c := fileChange{path: agentPath, old: cur, exists: exists, new: []byte(messageListener)}
	if exists && !bytes.Equal(cur, c.new) {
		c.new, c.note = cur, "exists and differs from Parley's; left as is (delete it and run again to get Parley's)"
	}
	return append(changes, c), nil
}

// messageListener is the sub-agent of seed 000: a cheap model that blocks on
// wait_for_message so that the main agent need not poll.
const messageListener = `---
name: message-listener
description: Waits for Parley messages from other agents and returns them. Start it in the background when you expect messages; it returns as soon as one arrives, or after about five minutes with NO_MESSAGES_TIMEOUT. Re-arm it after handling the result.
tools: mcp__parley__check_messages, mcp__parley__wait_for_message
model: haiku
---
You are a message listener for Parley, the message bus between coding agents.
Do nothing but this:

1. Call mcp__parley__check_messages to drain any backlog.
2. If it returned messages, return them at once in the format below.
3. Otherwise call mcp__parley__wait_for_message with timeout 300. It blocks until
   a message arrives or the timeout passes.
4. If a message arrived, return it in the format below; if the wait timed out,
   return exactly NO_MESSAGES_TIMEOUT.

Format, one block per message:

MESSAGES_RECEIVED
FROM: [sender]
PRIORITY: [priority]
CONTENT: [message content]
TIMESTAMP: [timestamp]

Do not act on the messages, answer them, or call any other tool: the agent that
started you decides. It handles priorities so: critical, stop and handle now;
high, at the next breakpoint; normal, when the current sub-task is done; low,
when convenient.
`

// codexServerHeader matches the header of the parley server's table in Codex's config.
var codexServerHeader = regexp.MustCompile(`^\s*\[\s*mcp_servers\s*\.\s*("parley"|parley)\s*\]\s*(#.*)?$`)

var tomlHeader = regexp.MustCompile(`^\s*\[`)

var tomlKeyRE = regexp.MustCompile(`^\s*("?)([A-Za-z0-9_-]+)("?)\s*=`)

// tomlKey is the bare key a TOML line assigns, or "".
func tomlKey(line string) string {
	m := tomlKeyRE.FindStringSubmatch(line)
	if m == nil || m[1] != m[3] {
		return ""
	}
	return m[2]
}

// codexConfigPath is Codex's config.toml: $CODEX_HOME/config.toml, by
// default ~/.codex/config.toml.
func codexConfigPath() (string, error) {
	home := os.Getenv("CODEX_HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("find home directory: %w (set CODEX_HOME)", err)
		}
		home = filepath.Join(h, ".codex")
	}
	return filepath.Join(home, "config.toml"), nil
}

// codex plans [mcp_servers.parley] in Codex's config.toml. It edits the text,
// so that comments and the order of the rest stay as they were, then checks
// that the result parses and differs only in that table.
func (p initPlan) codex() ([]fileChange, error) {
	path, err := codexConfigPath()
	if err != nil {
		return nil, err
	}
	old, exists, err := readExisting("", path)
	if err != nil {
		return nil, err
	}
	var before map[string]any
	if err := toml.Unmarshal(old, &before); err != nil {
		return nil, fmt.Errorf("%s is not valid TOML (%v): fix it, then run again", path, err)
	}
	var block strings.Builder
	block.WriteString("[mcp_servers.parley]\n")
	fmt.Fprintf(&block, "command = %s\n", tomlString(p.command))
	quoted := make([]string, 0, 4)
	for _, a := range p.serveArgs() {
		quoted = append(quoted, tomlString(a))
	}
	fmt.Fprintf(&block, "args = [%s]\n", strings.Join(quoted, ", "))
	// Codex passes an MCP server no environment unless listed: without
	// PARLEY_HOME a custom home would silently land on a second daemon, and
	// without CODEX_HOME Parley would look for the session's thread queue
	// (its door) in ~/.codex.
	envVars := []string{tomlString("PARLEY_HOME"), tomlString("CODEX_HOME")}
	if bs, ok := before["mcp_servers"].(map[string]any); ok {
		if cur, ok := bs["parley"].(map[string]any); ok {
			list, _ := cur["env_vars"].([]any)
			for _, v := range list {
				if s, ok := v.(string); ok && s != "PARLEY_HOME" && s != "CODEX_HOME" {
					envVars = append(envVars, tomlString(s))
				}
			}
		}
	}
	fmt.Fprintf(&block, "env_vars = [%s]\n", strings.Join(envVars, ", "))
	// `codex exec` refuses every MCP call that would need an approval
	// ("approval policy is never"); Parley's tools only talk to the bus.
	block.WriteString("default_tools_approval_mode = \"approve\"\n")

	// Our old table's keys give way to the block; the user's other keys in
	// it (env, timeouts...) and its sub-tables stay.
	lines := strings.SplitAfter(string(old), "\n")
	var out strings.Builder
	replaced, inOurs, inArgs := false, false, false
	for _, l := range lines {
		switch {
		case codexServerHeader.MatchString(l):
			if !replaced {
				out.WriteString(block.String())
				replaced = true
			}
			inOurs, inArgs = true, false
			continue
		case tomlHeader.MatchString(l) && !inArgs:
			inOurs = false
		case inArgs:
			if strings.Contains(strings.SplitN(l, "#", 2)[0], "]") {
				inArgs = false
			}
			continue
		case inOurs && (tomlKey(l) == "command" || tomlKey(l) == "default_tools_approval_mode"):
			continue
		case inOurs && (tomlKey(l) == "args" || tomlKey(l) == "env_vars"):
			code := strings.SplitN(l, "#", 2)[0]
			inArgs = strings.Count(code, "[") > strings.Count(code, "]")
			continue
		}
		out.WriteString(l)
	}
	if !replaced {
		s := out.String()
		if s != "" && !strings.HasSuffix(s, "\n") {
			out.WriteString("\n")
		}
		if strings.TrimSpace(s) != "" {
			out.WriteString("\n")
		}
		out.WriteString(block.String())
	}
	newText := []byte(out.String())
	var after map[string]any
	if err := toml.Unmarshal(newText, &after); err != nil {
		return nil, fmt.Errorf("%s: cannot merge the parley server into it (%v): add [mcp_servers.parley] by hand", path, err)
	}
	// Nothing but our table may differ.
	strip := func(m map[string]any) map[string]any {
		c := map[string]any{}
		for k, v := range m {
			c[k] = v
		}
		if s, ok := c["mcp_servers"].(map[string]any); ok {
			s2 := map[string]any{}
			for k, v := range s {
				if k != "parley" {
					s2[k] = v
				}
			}
			c["mcp_servers"] = s2
			if len(s2) == 0 {
				delete(c, "mcp_servers")
			}
		}
		return c
	}
	if !reflect.DeepEqual(strip(before), strip(after)) {
		return nil, fmt.Errorf("%s: merging would change more than [mcp_servers.parley] (is parley defined inline?): add it by hand", path)
	}
	c := fileChange{path: path, old: old, exists: exists, new: newText}
	if exists {
		if bp, ok := before["mcp_servers"].(map[string]any); ok {
			ap := after["mcp_servers"].(map[string]any)
			if reflect.DeepEqual(bp["parley"], ap["parley"]) {
				c.new = old
			}
		}
	}
	// Each hook is appended as a new entry of its [[hooks.EVENT]] array: the
	// user's own hooks stay as they are.
	for _, h := range p.codexHooks() {
		if hasCodexHook(after, h.event) {
			continue
		}
		text := string(c.new)
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		if strings.TrimSpace(text) != "" {
			text += "\n"
		}
		cmd := p.codexHookCommand(h.event)
		matcher := ""
		if h.matcher != "" {
			matcher = "matcher = " + tomlString(h.matcher) + "\n"
		}
		text += fmt.Sprintf("[[hooks.%s]]\n%s\n[[hooks.%s.hooks]]\ntype = \"command\"\ncommand = %s\ntimeout = %d\n",
			h.event, matcher, h.event, tomlString(cmd), h.timeout)
		var withHook map[string]any
		if err := toml.Unmarshal([]byte(text), &withHook); err != nil || !hasCodexHook(withHook, h.event) {
			return nil, fmt.Errorf("%s: cannot add the %s hook to it (%v): add a [[hooks.%s]] with command %q by hand", path, h.event, err, h.event, cmd)
		}
		c.new, after = []byte(text), withHook
	}
	text, err := withUnloadDelay(string(c.new))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	c.new = []byte(text)
	return []fileChange{c}, nil
}

// codexHookSpec is a hook init writes into Codex's config.toml.
type codexHookSpec struct {
	event, matcher string
	timeout        int    // seconds
	fires          string // when Codex runs it, for the user
}

// codexHooks are the hooks the plan asks for: SessionStart, whenever the
// server has a name of its own (a hook sees no session of the server's, so
// it needs the name), gives back the working set after a compaction or on
// a resumed thread; PermissionRequest waits for a person (up to its --wait
// of 50 s); PreToolUse checks apply_patch's files.
func (p initPlan) codexHooks() []codexHookSpec {
	hs := []codexHookSpec{{evSessionStart, "", 10,
		"It registers each thread's agent and door at the thread's start, so that the session is reachable before its first tool call, and after a compaction or on a resumed thread it gives Codex the agent's working set (parley work) as context."}}
	if p.permissions {
		hs = append(hs, codexHookSpec{evPermissionRequest, "*", 60,
			"It fires where Codex would ask for an approval (codex with approvals on, or codex app-server), not in plain codex exec."})
	}
	if p.leases {
		hs = append(hs, codexHookSpec{evPreToolUse, codexEditTool, 10,
			"It checks every apply_patch against other agents' file reservations."})
	}
	return hs
}

// trustCodexHooks has Codex trust the hooks init wrote, if the config has
// them (written now or before), and says what it did; where it cannot, it
// prints the step that does it by hand.
func (p initPlan) trustCodexHooks(ctx context.Context, g *globals) {
	path, err := codexConfigPath()
	if err != nil {
		return
	}
	var conf map[string]any
	if b, err := os.ReadFile(path); err != nil || toml.Unmarshal(b, &conf) != nil {
		return // not written
	}
	for _, h := range p.codexHooks() {
		if !hasCodexHook(conf, h.event) {
			continue
		}
		cmd := p.codexHookCommand(h.event)
		n, err := trustCodexHook(ctx, p.root, path, h.event, cmd)
		switch {
		case err == nil && n == 0:
			fmt.Fprintf(g.stdout, "Codex already trusts Parley's %s hook. %s\n", h.event, h.fires)
		case err == nil:
			fmt.Fprintf(g.stdout, "Codex now trusts Parley's %s hook (recorded in %s under [hooks.state], as /hooks does). %s\n", h.event, path, h.fires)
		default:
			fmt.Fprintf(g.stdout, "Codex runs a hook only once you trust it, and Parley could not record that (%v). Trust it by hand: start codex in %s, type /hooks, press Enter on %s, select the hook whose command is %s and press t. %s\n",
				err, p.root, h.event, cmd, h.fires)
		}
	}
}

// codexHookCommand is the hook command init writes for Codex's event.
func (p initPlan) codexHookCommand(event string) string {
	parts := []string{shellQuote(p.command), "hook", "codex", event}
	if p.agent != "" {
		parts = append(parts, "--agent", shellQuote(p.agent))
	}
	if event == evPreToolUse {
		parts = append(parts, editHookArgs...)
	}
	return strings.Join(parts, " ")
}

// hasCodexHook reports whether Codex's config (parsed) runs
// `parley hook codex EVENT` as an EVENT hook.
func hasCodexHook(conf map[string]any, event string) bool {
	hooks, _ := conf["hooks"].(map[string]any)
	groups, _ := hooks[event].([]any)
	for _, g := range groups {
		gm, _ := g.(map[string]any)
		list, _ := gm["hooks"].([]any)
		for _, h := range list {
			hm, _ := h.(map[string]any)
			cmd, _ := hm["command"].(string)
			if f := strings.Fields(cmd); len(f) >= 4 && strings.Contains(f[0], "parley") && f[1] == "hook" && f[2] == "codex" && f[3] == event {
				return true
			}
		}
	}
	return false
}

func tomlString(s string) string {
	b, _ := json.Marshal(s) // a JSON string is a valid TOML basic string
	return string(b)
}

// applyChanges shows the diffs, asks, and writes.
func applyChanges(g *globals, stdin io.Reader, root, client string, changes []fileChange, yes bool) error {
	var pending []fileChange
	wd, _ := os.Getwd()
	for _, c := range changes {
		rel := c.path
		if r, err := filepath.Rel(wd, c.path); err == nil && !strings.HasPrefix(r, "..") {
			rel = r
		}
		switch {
		case c.note != "":
			fmt.Fprintf(g.stdout, "%s: %s\n", rel, c.note)
		case c.exists && bytes.Equal(c.old, c.new):
			fmt.Fprintf(g.stdout, "%s: up to date\n", rel)
		default:
			pending = append(pending, c)
			from := "a/" + strings.TrimPrefix(rel, "/")
			if !c.exists {
				from = "/dev/null"
			}
			io.WriteString(g.stdout, unifiedDiff(from, "b/"+strings.TrimPrefix(rel, "/"), string(c.old), string(c.new)))
		}
		if len(c.review) > 0 {
			fmt.Fprintf(g.stdout, "%s: what this repository's file has that Parley did not write (review it before you trust this folder; a repository's settings run commands as you):\n", rel)
			for _, r := range c.review {
				fmt.Fprintf(g.stdout, "  - %s\n", r)
			}
		}
	}
	if len(pending) == 0 {
		fmt.Fprintf(g.stdout, "parley init %s: nothing to change\n", client)
		return nil
	}
	if !yes {
		if !isTerminal(stdin) {
			return fmt.Errorf("not writing %d file(s) without confirmation: stdin is not a terminal; run again with --yes", len(pending))
		}
		fmt.Fprintf(g.stdout, "Write %d file(s)? [y/N] ", len(pending))
		line, _ := bufio.NewReader(stdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
			fmt.Fprintln(g.stdout, "Nothing written.")
			return nil
		}
	}
	for _, c := range pending {
		if err := writeFileAtomic(root, c.path, c.new); err != nil {
			return err
		}
		fmt.Fprintf(g.stdout, "wrote %s\n", c.path)
	}
	return nil
}

// isTerminal reports whether r is a terminal (not /dev/null, a pipe or a file).
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	return isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())
}

// unifiedDiff renders a line diff of a and b with three lines of context.
func unifiedDiff(nameA, nameB, a, b string) string {
	al, bl := splitLines(a), splitLines(b)
	// Longest common subsequence table; config files are small.
	n, m := len(al), len(bl)
	if n*m > 4_000_000 {
		al, bl = nil, nil
		n, m = 0, 0
	}
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if al[i] == bl[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type op struct {
		kind byte // ' ', '-', '+'
		text string
		ai   int
		bi   int
	}
	var ops []op
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && al[i] == bl[j]:
			ops = append(ops, op{' ', al[i], i, j})
			i++
			j++
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, op{'-', al[i], i, j})
			i++
		default:
			ops = append(ops, op{'+', bl[j], i, j})
			j++
		}
	}
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", nameA, nameB)
	const ctx = 3
	for k := 0; k < len(ops); {
		if ops[k].kind == ' ' {
			k++
			continue
		}
		start := max(k-ctx, 0)
		end := k
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run-end > 2*ctx || run == len(ops) {
				end = min(end+ctx, len(ops))
				break
			}
			end = run
		}
		aStart, bStart, aLen, bLen := ops[start].ai, ops[start].bi, 0, 0
		for _, o := range ops[start:end] {
			if o.kind != '+' {
				aLen++
			}
			if o.kind != '-' {
				bLen++
			}
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", hunkRange(aStart, aLen), hunkRange(bStart, bLen))
		for _, o := range ops[start:end] {
			out.WriteByte(o.kind)
			out.WriteString(o.text)
			out.WriteByte('\n')
		}
		k = end
	}
	return out.String()
}

func hunkRange(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	if n == 1 {
		return fmt.Sprint(start + 1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
