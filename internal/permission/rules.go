package permission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/shellword"
)

// Time-boxed allow rules (issue 28): "allow npm test for this agent for 30
// minutes". A request that a live rule matches is allowed as soon as it is
// filed, by the rule; the asker need not wait for anyone. Rules live in the
// daemon's memory, bounded in number and time: a restart forgets them. A
// rule allows what the person approved and no more (issue 40): a command
// word for word, never what chains after it; a file inside the workspace,
// never one a link leads out of it (Rule.Match, Rule.Allows).

// Rule allows matching requests until it expires.
type Rule struct {
	ID        string
	Workspace string
	Agent     string // "" matches any agent of the workspace
	Tool      string // the tool's name, exactly
	// Match is what the person approved (what a rule allows: Allows):
	//   - a shell tool (Bash, Codex's shell...): one command, a program and
	//     its arguments as the shell would read them, matched word for word;
	//     an unquoted * is a wildcard within a word, and a last word of a
	//     lone * allows any further arguments (shellword.Pattern). A request
	//     whose command chains, substitutes, redirects or spans lines never
	//     matches. Required: "*" alone is any one simple command.
	//   - a file tool (Write, Edit, Read...): a path pattern relative to
	//     the workspace's directory (hub.PathPattern); empty, any file in
	//     it but its .git and the clients' settings (whose contents run
	//     commands). A path outside the directory, links resolved, never
	//     matches.
	//   - another tool: one of the input's top-level values, exactly; empty,
	//     any input.
	Match   string
	By      string // who made it
	Created time.Time
	Expires time.Time
	Uses    int // requests it allowed

	cmd   shellword.Pattern // a shell tool's Match
	paths *hub.PathPattern  // a file tool's Match, if any
}

// Rule limits.
const (
	MaxRuleTTL   = 24 * time.Hour
	maxRules     = 200
	maxRuleMatch = 1024
)

// A tool's kind decides how a rule's Match is read.
type toolKind int

const (
	otherTool toolKind = iota
	shellTool
	fileTool
)

// shellTools and fileTools are the clients' tools of those kinds: Claude
// Code's, Codex's, Gemini CLI's, and a managed agent's (as the runner names
// Codex's commands).
var (
	shellTools = []string{"Bash", "shell", "exec_command", "local_shell", "run_shell_command", "Shell"}
	fileTools  = []string{"Write", "Edit", "MultiEdit", "NotebookEdit", "Read", "write_file", "replace", "read_file"}
)

func kindOf(tool string) toolKind {
	switch {
	case slices.Contains(shellTools, tool):
		return shellTool
	case slices.Contains(fileTools, tool):
		return fileTool
	}
	return otherTool
}

// guarded are the files of a workspace that a file rule without a pattern
// leaves out: what git, the clients and Parley run commands from.
var guarded = []string{".git", ".claude", ".mcp.json", ".codex", ".gemini", ".cursor", ".parley", ".vscode"}

// matches reports whether the rule allows r at now.
func (u *Rule) matches(r *Request, now time.Time) bool {
	if now.After(u.Expires) || r.Workspace != u.Workspace || r.Tool != u.Tool || (u.Agent != "" && r.Agent != u.Agent) {
		return false
	}
	var in map[string]json.RawMessage
	if json.Unmarshal(r.Input, &in) != nil {
		return false
	}
	switch kindOf(u.Tool) {
	case shellTool:
		words, err := commandOf(in)
		return err == nil && u.cmd.Match(words)
	case fileTool:
		return u.allowsPath(pathOf(in))
	}
	if u.Match == "" {
		return true
	}
	for _, v := range in {
		var s string
		if json.Unmarshal(v, &s) == nil && s == u.Match {
			return true
		}
	}
	return false
}

// commandOf is the words of a shell tool's command: a command line
// ("command": "npm test"), or a program and its arguments ("command":
// ["bash", "-lc", "npm test"]).
func commandOf(in map[string]json.RawMessage) ([]string, error) {
	var line string
	if json.Unmarshal(in["command"], &line) == nil {
		return shellword.Parse(line)
	}
	var argv []string
	if json.Unmarshal(in["command"], &argv) == nil {
		return shellword.FromArgv(argv)
	}
	return nil, errors.New("no command")
}

// pathOf is a file tool's path, or "".
func pathOf(in map[string]json.RawMessage) string {
	for _, k := range []string{"file_path", "notebook_path", "absolute_path", "path"} {
		var s string
		if json.Unmarshal(in[k], &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

// allowsPath reports whether path is inside the rule's workspace directory,
// links resolved, and matches its pattern (or, with none, is not guarded).
func (u *Rule) allowsPath(path string) bool {
	if path == "" || !filepath.IsAbs(path) || strings.ContainsRune(path, 0) {
		return false
	}
	root, err := filepath.EvalSymlinks(u.Workspace)
	if err != nil {
		return false
	}
	real, err := resolve(filepath.Clean(path))
	if err != nil {
		return false
	}
	rel, err := filepath.Rel(root, real)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return false
	}
	rel = filepath.ToSlash(rel)
	if u.paths != nil {
		return u.paths.Match(rel)
	}
	top, _, _ := strings.Cut(rel, "/")
	return !slices.Contains(guarded, top)
}

// resolve is path with its links resolved: of its deepest part that
// exists, and the rest (to be made) as it is.
func resolve(path string) (string, error) {
	var rest []string
	for p := path; ; p = filepath.Dir(p) {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(append([]string{real}, rest...)...), nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		if filepath.Dir(p) == p {
			return "", fs.ErrNotExist
		}
		rest = append([]string{filepath.Base(p)}, rest...)
	}
}

// compile reads the rule's Match for its tool's kind, or says why it
// allows nothing a person could have meant.
func (u *Rule) compile() error {
	const op = "add permission rule"
	switch kindOf(u.Tool) {
	case shellTool:
		if u.Match == "" {
			return hub.Errorf(op, hub.Invalid, "a rule for %s needs the command it allows (match), or * for any one command", u.Tool)
		}
		p, err := shellword.ParsePattern(u.Match)
		if err != nil {
			return hub.Errorf(op, hub.Invalid, "match %q is not one command a rule can allow: %v", u.Match, err)
		}
		u.cmd = p
	case fileTool:
		if !filepath.IsAbs(u.Workspace) {
			return hub.Errorf(op, hub.Invalid, "workspace %q is no directory: a rule for %s allows only files inside the workspace's directory", u.Workspace, u.Tool)
		}
		if u.Match != "" {
			p, err := hub.ParsePathPattern(u.Match)
			if err != nil {
				return hub.Errorf(op, hub.Invalid, "match %q is not a path inside the workspace: %v", u.Match, err)
			}
			u.paths = &p
		}
	}
	return nil
}

// Allows says exactly what the rule allows, for the person to read before
// it is saved.
func (u *Rule) Allows() string {
	who := "any agent of the workspace"
	if u.Agent != "" {
		who = u.Agent
	}
	var what string
	switch kindOf(u.Tool) {
	case shellTool:
		switch {
		case u.Match == "*":
			what = "any one command (a program and its arguments)"
		case u.cmd.Exact():
			what = "exactly the command " + shellword.Quote(u.cmd.Words()) + " (program " + quoteWords(u.cmd.Words()[:1]) + withArgs(u.cmd.Words()[1:]) + ")"
		default:
			what = "the commands " + u.Match + ", where * in a word is any text in it" + ifRest(u.cmd)
		}
		what += ", run alone: never one that chains (; & && || |), substitutes ($, `), redirects (< >), spans lines, expands ~ or file names, or sets variables before the program"
	case fileTool:
		root := u.Workspace
		if u.paths != nil {
			what = "files matching " + u.paths.String() + " inside " + root + " (links resolved)"
		} else {
			what = "any file inside " + root + " (links resolved), but its " + strings.Join(guarded, ", ")
		}
	default:
		if u.Match == "" {
			what = "any input"
		} else {
			what = "an input with a value of exactly " + strconv.Quote(u.Match)
		}
	}
	return fmt.Sprintf("%s by %s: %s, until %s", u.Tool, who, what, u.Expires.UTC().Format(time.RFC3339))
}

func quoteWords(ws []string) string { return shellword.Quote(ws) }

func withArgs(args []string) string {
	switch len(args) {
	case 0:
		return ", no arguments"
	case 1:
		return ", argument " + shellword.Quote(args)
	}
	return ", arguments " + shellword.Quote(args)
}

func ifRest(p shellword.Pattern) string {
	if ws := p.Words(); len(ws) > 0 && ws[len(ws)-1] == "*" {
		return ", and a last * any further arguments"
	}
	return ""
}

// Check validates u as AddRule would, and fills in what it allows, without
// keeping it: the dashboard shows that before a person saves the rule.
func Check(u Rule, ttl time.Duration) (*Rule, error) {
	const op = "add permission rule"
	if err := hub.ValidWorkspace(u.Workspace); err != nil {
		return nil, err
	}
	if strings.TrimSpace(u.Tool) == "" {
		return nil, hub.Errorf(op, hub.Invalid, "a rule needs the tool it allows (tool_name)")
	}
	if u.Agent != "" {
		if err := hub.ValidName("agent name", u.Agent); err != nil {
			return nil, err
		}
	}
	if len(u.Match) > maxRuleMatch {
		return nil, hub.Errorf(op, hub.Invalid, "match is over %d bytes", maxRuleMatch)
	}
	if ttl <= 0 || ttl > MaxRuleTTL {
		return nil, hub.Errorf(op, hub.Invalid, "a rule lasts from a minute to %s, not %s", MaxRuleTTL, ttl)
	}
	if err := u.compile(); err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	u.Created, u.Expires, u.Uses = now, now.Add(ttl), 0
	return &u, nil
}

// AddRule makes a rule that allows u.Tool (for u.Agent, matching u.Match)
// for ttl.
func (in *Inbox) AddRule(u Rule, ttl time.Duration) (*Rule, error) {
	const op = "add permission rule"
	c, err := Check(u, ttl)
	if err != nil {
		return nil, err
	}
	u = *c
	u.ID = "rule-" + strings.TrimPrefix(NewID(), "perm-")
	now := u.Created
	in.mu.Lock()
	in.rules = slices.DeleteFunc(in.rules, func(x *Rule) bool { return now.After(x.Expires) })
	if len(in.rules) >= maxRules {
		in.mu.Unlock()
		return nil, hub.Errorf(op, hub.Conflict, "%d rules are live already: remove some first", maxRules)
	}
	in.rules = append(in.rules, &u)
	in.mu.Unlock()
	in.log.Info("permission rule added", "rule", u.ID, "workspace", u.Workspace, "agent", u.Agent, "tool", u.Tool, "match", u.Match, "until", u.Expires, "by", u.By)
	cp := u
	return &cp, nil
}

// Rules lists the live rules of ws ("" every workspace), oldest first.
func (in *Inbox) Rules(ws string) []Rule {
	now := time.Now()
	in.mu.Lock()
	defer in.mu.Unlock()
	var out []Rule
	for _, u := range in.rules {
		if !now.After(u.Expires) && (ws == "" || u.Workspace == ws) {
			out = append(out, *u)
		}
	}
	return out
}

// RemoveRule ends a rule now.
func (in *Inbox) RemoveRule(ws, id string) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	n := len(in.rules)
	in.rules = slices.DeleteFunc(in.rules, func(u *Rule) bool { return u.ID == id && (ws == "" || u.Workspace == ws) })
	if len(in.rules) == n {
		return hub.Errorf("remove permission rule", hub.NotFound, "no permission rule %q", id)
	}
	return nil
}

// ruleFor is the live rule that allows r, counted as used, or nil.
func (in *Inbox) ruleFor(r *Request) *Rule {
	now := time.Now()
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, u := range in.rules {
		if u.matches(r, now) {
			u.Uses++
			cp := *u
			return &cp
		}
	}
	return nil
}

// applyRules allows r, just filed, if a rule says so.
func (in *Inbox) applyRules(ctx context.Context, r *Request) *Request {
	u := in.ruleFor(r)
	if u == nil {
		return r
	}
	d, err := in.settle(ctx, "permission rule", r.Workspace, r.ID, Allowed, Decision{Allow: true,
		By: fmt.Sprintf("rule %s (%s, until %s)", u.ID, u.By, u.Expires.Format("15:04:05Z"))})
	if err != nil {
		// Someone decided first (it cannot be, so soon; but the first
		// decision wins): the request stands as it is.
		in.log.Warn("permission rule: settle", "request", r.ID, "rule", u.ID, "err", err)
		return r
	}
	return d
}
