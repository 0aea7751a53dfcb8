package runner

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/parley-dev/parley/internal/door"
	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/safefile"
)

// ProviderConfig configures a provider, from config.toml's [providers.NAME].
// For claude and codex, Command is the executable and Args come before
// Parley's own arguments; for command providers, Command is a shell command
// template and Args are appended to it, shell-quoted.
type ProviderConfig struct {
	Kind    string            // claude, codex or command; default: NAME for built-ins, else command
	Command string            // executable or template
	Args    []string          // extra arguments
	Env     map[string]string // extra environment
	// Steer keeps one process per agent across turns (claude and codex): a
	// prompt that arrives during a run is streamed into it (session.go).
	// Nil means the kind's default (steers).
	Steer *bool
	// Budget is the default budget of the provider's agents (budget.go):
	// a create that sets no bound of its own takes these.
	Budget Budget
}

// steers is whether a provider of kind with setting set keeps one process
// per agent. Claude Code does by default: its stream-json input takes a
// prompt mid-turn at the next tool result and changes nothing else. Codex
// does not: `codex app-server` is marked experimental by codex-cli (0.169),
// and it changes more than steering, since its approvals ask (on-request)
// where `codex exec` refuses and goes on, so an unattended run would stop
// in the permission inbox. steer = true opts in; steer = false keeps Claude
// Code to one process per turn.
func steers(kind string, set *bool) bool {
	if set != nil {
		return *set && (kind == KindClaude || kind == KindCodex)
	}
	return kind == KindClaude
}

// Provider kinds.
const (
	KindClaude  = "claude"
	KindCodex   = "codex"
	KindCommand = "command"
)

// provider turns a prompt into the command line of one turn.
type provider struct {
	name string
	ProviderConfig
	steer bool // resolved from Steer and Kind
}

// permissionTool is the name Claude Code gives the self profile's
// request_permission tool: mcp__{server key}__{tool}.
const permissionTool = "mcp__parley-self__request_permission"

// providers merges the built-in providers with the configured ones.
func providers(conf map[string]ProviderConfig) (map[string]*provider, error) {
	ps := map[string]*provider{
		KindClaude:  {name: KindClaude, ProviderConfig: ProviderConfig{Kind: KindClaude, Command: "claude"}},
		KindCodex:   {name: KindCodex, ProviderConfig: ProviderConfig{Kind: KindCodex, Command: "codex"}},
		KindCommand: {name: KindCommand, ProviderConfig: ProviderConfig{Kind: KindCommand}},
	}
	for name, c := range conf {
		if err := hub.ValidName("provider name", name); err != nil {
			return nil, err
		}
		p := &provider{name: name, ProviderConfig: c}
		if base, ok := ps[name]; ok && p.Kind == "" {
			p.Kind = base.Kind
		}
		if p.Kind == "" {
			p.Kind = KindCommand
		}
		switch p.Kind {
		case KindClaude, KindCodex, KindCommand:
		default:
			return nil, fmt.Errorf("provider %s: invalid kind %q: want claude, codex or command", name, p.Kind)
		}
		if p.Command == "" && p.Kind != KindCommand {
			p.Command = p.Kind
		}
		if p.Command == "" && name != KindCommand {
			return nil, fmt.Errorf("provider %s: a command provider needs command = \"...\"", name)
		}
		ps[name] = p
	}
	for _, p := range ps {
		p.steer = steers(p.Kind, p.Steer)
	}
	return ps, nil
}

// turn is what a provider needs to build one turn.
type turn struct {
	Agent     Agent
	Prompt    string
	MCPConfig string // path of the agent's MCP config file
	Exe       string // the parley executable
	Home      string // PARLEY_HOME
	Run       int
}

// spec is one turn's process, or a steerable session's.
type spec struct {
	Argv   []string // Argv[0] is the executable, resolved
	Env    []string // added to the agent's environment
	Stdin  string
	Format string // claude, codex, app-server or text
}

// formatAppServer is the output of `codex app-server`: JSON-RPC.
const formatAppServer = "app-server"

// template returns the shell command of a command provider for agent a.
func (p *provider) template(a *Agent) string {
	t := p.Command
	if p.name == KindCommand && a.Command != "" {
		t = a.Command
	}
	if len(p.Args) > 0 {
		q := make([]string, len(p.Args))
		for i, s := range p.Args {
			q[i] = quoteArg(s)
		}
		t += " " + strings.Join(q, " ")
	}
	return t
}

// check reports a provider that cannot run: an executable missing from PATH
// or a command provider without a command.
func (p *provider) check(a *Agent) error {
	if p.Kind != KindCommand {
		if _, err := exec.LookPath(p.Command); err != nil {
			return hub.Errorf("create_agent", hub.Invalid, "provider %s: executable %q not found in the daemon's PATH (%s): the daemon looks it up, not your shell; install it there, restart the daemon from a shell whose PATH has it, or set [providers.%s] command to its absolute path in config.toml", p.name, p.Command, daemonPath(), p.name)
		}
		return nil
	}
	t := strings.TrimSpace(p.template(a))
	if t == "" {
		return hub.Errorf("create_agent", hub.Invalid, "provider %s needs a command: the shell command to run once per turn (the prompt comes on stdin, or as {prompt})", p.name)
	}
	if _, err := exec.LookPath("sh"); err != nil {
		return hub.Errorf("create_agent", hub.Invalid, "provider %s: sh not found: %v", p.name, err)
	}
	// The first word, when it is a plain word that is not a shell builtin,
	// must be an executable: a typo is reported now, not at the first turn.
	first := strings.Fields(t)[0]
	if plainWord.MatchString(first) && !shellWords[first] && !strings.Contains(first, "=") {
		if _, err := exec.LookPath(first); err != nil {
			return hub.Errorf("create_agent", hub.Invalid, "provider %s: executable %q not found in the daemon's PATH (%s): give its absolute path, or restart the daemon from a shell whose PATH has it", p.name, first, daemonPath())
		}
	}
	return nil
}

// daemonPath is the PATH the daemon (and so every provider) runs with, which
// may not be the PATH of the shell that asked for the agent.
func daemonPath() string {
	p := os.Getenv("PATH")
	if p == "" {
		return "empty"
	}
	return p
}

var plainWord = regexp.MustCompile(`^[A-Za-z0-9_./+-]+$`)

var shellWords = map[string]bool{
	"cd": true, "exec": true, "echo": true, "printf": true, "test": true, "[": true, "true": true, "false": true,
	"export": true, "set": true, "eval": true, "read": true, "if": true, "for": true, "while": true, "until": true,
	"case": true, "{": true, "(": true, ":": true, ".": true, "exit": true, "trap": true, "ulimit": true, "umask": true,
	"command": true,
}

// build returns the command line of turn t.
func (p *provider) build(t *turn) (*spec, error) {
	switch p.Kind {
	case KindClaude:
		return p.claude(t)
	case KindCodex:
		return p.codex(t)
	}
	return p.command(t)
}

// maxArgPrompt is the longest prompt passed as an argument; longer ones (and
// ones that look like flags) go on stdin. Linux bounds one argument to 128 KiB.
const maxArgPrompt = 64 << 10

// claude builds Claude Code's headless command line:
//
//	claude -p PROMPT --output-format stream-json --verbose [--resume SESSION]
//	  --permission-mode MODE --permission-prompt-tool mcp__parley-self__request_permission
//	  --mcp-config FILE
func (p *provider) claude(t *turn) (*spec, error) {
	path, err := exec.LookPath(p.Command)
	if err != nil {
		return nil, fmt.Errorf("provider %s: %w", p.name, err)
	}
	s := &spec{Format: KindClaude}
	argv := append([]string{path}, p.Args...)
	switch {
	case p.steer:
		// Prompts come as stream-json lines on stdin, which stays open
		// across turns; each is echoed back once Claude Code takes it, so
		// the session knows which turn a prompt streamed in joined.
		argv = append(argv, "-p", "--input-format", "stream-json", "--replay-user-messages")
	case len(t.Prompt) > maxArgPrompt || strings.HasPrefix(t.Prompt, "-"):
		argv = append(argv, "-p")
		s.Stdin = t.Prompt
	default:
		argv = append(argv, "-p", t.Prompt)
	}
	argv = append(argv, "--output-format", "stream-json", "--verbose")
	if t.Agent.SessionID != "" {
		argv = append(argv, "--resume", t.Agent.SessionID)
	}
	// Parley's own tools need no permission: without a rule every call,
	// even the send_message reply a wake-up turn asks for, would wait for a
	// person's `parley allow`.
	argv = append(argv,
		"--permission-mode", modeOr(t.Agent.Mode),
		"--permission-prompt-tool", permissionTool,
		"--mcp-config", t.MCPConfig,
		"--allowedTools", allowParley(t),
	)
	if !slices.Contains(p.Args, "--settings") {
		// The letters of Parley's doorman come from this daemon, which
		// runs the agent: Claude Code would hold them for a person in
		// bypassPermissions (they assert no permission mode, and never
		// will), and a headless run has no person to approve them. The
		// project's .claude/settings.json cannot say this (project scope
		// cannot loosen it). A provider that passes its own --settings
		// says it there.
		argv = append(argv, "--settings", acceptLetters)
	}
	s.Argv = argv
	s.Env = claudeWaitsForMCP(p.Env)
	return s, nil
}

// acceptLetters is the settings overlay that lets a Claude Code session
// take cross-session letters without holding them.
const acceptLetters = `{"crossSessionInbound":"accept"}`

// claudeWaitsForMCP is the environment that makes Claude Code wait for the
// agent's MCP servers before it asks the model. By default it starts them in
// the background and asks at once (or, told to wait, gives up after 5 s): on
// a loaded machine the first turn then lacks Parley's tools, the very ones a
// wake-up prompt asks the agent to call. Parley's servers are local
// processes that fail fast when they fail at all, so waiting costs nothing
// when they are up. A setting in the provider's env or the daemon's wins.
func claudeWaitsForMCP(env map[string]string) []string {
	var out []string
	for _, kv := range []string{"MCP_CONNECTION_NONBLOCKING=0", "MCP_CONNECT_TIMEOUT_MS=60000"} {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := env[k]; ok {
			continue
		}
		if _, ok := os.LookupEnv(k); ok {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// allowParley is Claude Code's --allowedTools rule list for every tool of
// the agent's Parley servers (mcp__SERVER matches all of a server's tools).
func allowParley(t *turn) string {
	var rules []string
	for _, srv := range mcpServers(t) {
		rules = append(rules, "mcp__"+srv.key)
	}
	return strings.Join(rules, ",")
}

// codex builds Codex's non-interactive command line. The sandbox, approval
// policy and MCP servers are -c overrides, which both `codex exec` and
// `codex exec resume` accept (resume refuses -s and -C):
//
//	codex exec --json --skip-git-repo-check -c ... -- PROMPT
//	codex exec resume --json --skip-git-repo-check -c ... -- SESSION PROMPT
//
// Codex has no permission-prompt tool: the agent's mode picks its sandbox.
func (p *provider) codex(t *turn) (*spec, error) {
	path, err := exec.LookPath(p.Command)
	if err != nil {
		return nil, fmt.Errorf("provider %s: %w", p.name, err)
	}
	argv := append([]string{path}, p.Args...)
	switch {
	case p.steer:
		// One app-server per agent: the thread, its turns, steering and
		// approvals are JSON-RPC on stdio (appserver.go).
		argv = append(argv, "app-server")
	case t.Agent.SessionID != "":
		// Outside a git repository resume refuses to run, as exec does,
		// unless told (0.171: "Not inside a trusted directory").
		argv = append(argv, "exec", "resume", "--json", "--skip-git-repo-check")
	default:
		argv = append(argv, "exec", "--json", "--skip-git-repo-check")
	}
	sandbox, approval := codexPolicy(t.Agent.Mode, p.steer)
	argv = append(argv,
		"-c", "sandbox_mode="+tomlString(sandbox),
		"-c", "approval_policy="+tomlString(approval),
	)
	for _, srv := range mcpServers(t) {
		argv = append(argv,
			"-c", "mcp_servers."+srv.key+".command="+tomlString(srv.Command),
			"-c", "mcp_servers."+srv.key+".args="+tomlArray(srv.Args),
			"-c", "mcp_servers."+srv.key+".env={PARLEY_HOME="+tomlString(t.Home)+"}",
			// exec runs with approvals off, so a tool that would need one
			// is refused ("approval policy is never"): Parley's are approved.
			"-c", "mcp_servers."+srv.key+`.default_tools_approval_mode="approve"`,
			// Codex asks the model while its MCP servers start, and answers
			// a call to one not up yet with "unsupported call" (on a loaded
			// machine, the first turn's send_message). A required server is
			// waited for, up to its startup timeout (10 s by default).
			"-c", "mcp_servers."+srv.key+".required=true",
			"-c", "mcp_servers."+srv.key+".startup_timeout_sec=60",
		)
	}
	if p.steer {
		return &spec{Argv: argv, Format: formatAppServer}, nil
	}
	argv = append(argv, "--")
	if t.Agent.SessionID != "" {
		argv = append(argv, t.Agent.SessionID)
	}
	argv = append(argv, t.Prompt)
	return &spec{Argv: argv, Format: KindCodex}, nil
}

// codexPolicy maps an agent's mode to Codex's sandbox and approval policy.
// `codex exec` cannot ask anyone, so it runs with approvals off; the
// app-server asks its client, which files each request in the permission
// inbox (except in bypassPermissions, which asks nothing).
func codexPolicy(mode string, appServer bool) (sandbox, approval string) {
	sandbox = map[string]string{
		"plan":              "read-only",
		"default":           "workspace-write",
		"acceptEdits":       "workspace-write",
		"bypassPermissions": "danger-full-access",
	}[modeOr(mode)]
	approval = "never"
	if appServer && modeOr(mode) != "bypassPermissions" {
		approval = "on-request"
	}
	return sandbox, approval
}

// command runs the template through sh -c with the prompt on stdin; {prompt},
// {session}, {agent}, {workspace}, {mode}, {mcp_config} and {cwd} are
// replaced by their values, shell-quoted.
func (p *provider) command(t *turn) (*spec, error) {
	tmpl := p.template(&t.Agent)
	if strings.TrimSpace(tmpl) == "" {
		return nil, fmt.Errorf("provider %s has no command", p.name)
	}
	vars := map[string]string{
		"prompt": t.Prompt, "session": t.Agent.SessionID, "agent": t.Agent.ID, "workspace": t.Agent.Workspace,
		"mode": modeOr(t.Agent.Mode), "mcp_config": t.MCPConfig, "cwd": t.Agent.Cwd,
	}
	cmd := placeholder.ReplaceAllStringFunc(tmpl, func(m string) string {
		if v, ok := vars[m[1:len(m)-1]]; ok {
			return shellQuote(v)
		}
		return m
	})
	sh, err := exec.LookPath("sh")
	if err != nil {
		return nil, err
	}
	return &spec{Argv: []string{sh, "-c", cmd}, Stdin: t.Prompt, Format: "text"}, nil
}

var placeholder = regexp.MustCompile(`\{[a-z_]+\}`)

// quoteArg shell-quotes a configured argument but leaves its placeholders
// bare, to be replaced by quoted values: --prompt={prompt} becomes
// --prompt=PROMPT as one word.
func quoteArg(s string) string {
	var b strings.Builder
	last := 0
	for _, m := range placeholder.FindAllStringIndex(s, -1) {
		if m[0] > last {
			b.WriteString(shellQuote(s[last:m[0]]))
		}
		b.WriteString(s[m[0]:m[1]])
		last = m[1]
	}
	if last < len(s) || last == 0 {
		b.WriteString(shellQuote(s[last:]))
	}
	return b.String()
}

// shellQuote quotes s for sh: one word, no expansion.
func shellQuote(s string) string {
	if s != "" && plainWord.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func tomlString(s string) string { return strconv.Quote(s) }

func tomlArray(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = tomlString(s)
	}
	return "[" + strings.Join(q, ",") + "]"
}

func modeOr(m string) string {
	if m == "" {
		return "default"
	}
	return m
}

// ValidMode checks a mode name.
func ValidMode(m string) error {
	for _, x := range Modes {
		if m == x {
			return nil
		}
	}
	return hub.Errorf("", hub.Invalid, "invalid mode %q: want %s", m, strings.Join(Modes, ", "))
}

// mcpServer is one entry of an agent's MCP configuration.
type mcpServer struct {
	key     string
	Type    string            `json:"type"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env,omitempty"`
}

// mcpServers are Parley's MCP servers for the agent of t, under its identity:
// "parley" with the native profile and "parley-self" with the self profile.
func mcpServers(t *turn) []mcpServer {
	mk := func(key, profile string) mcpServer {
		return mcpServer{key: key, Type: "stdio", Command: t.Exe,
			Args: []string{"mcp", "serve", "--agent", t.Agent.ID, "--workspace", t.Agent.Workspace, "--profile", profile},
			Env:  map[string]string{"PARLEY_HOME": t.Home}}
	}
	return []mcpServer{mk("parley", "native"), mk("parley-self", "self")}
}

// writeMCPConfig writes the agent's MCP config file (Claude Code's format) in
// its directory and returns its path.
func writeMCPConfig(dir string, t *turn) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("agent directory: %w", err)
	}
	servers := map[string]mcpServer{}
	for _, s := range mcpServers(t) {
		servers[s.key] = s
	}
	b, err := json.MarshalIndent(map[string]any{"mcpServers": servers}, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "mcp.json")
	if err := safefile.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		return "", fmt.Errorf("write MCP config: %w", err)
	}
	return path, nil
}

// EnvManagedAgent names, in the environment of a managed agent's client and
// so of every hook it runs, the agent the hooks speak for. The repository it
// works in may have hooks that `parley init --agent bob` wrote for a person's
// own session: `parley hook` prefers this variable to their --agent, so that
// a managed agent's edits are leased to it, and its stops and prompts set
// its own status, not bob's.
const EnvManagedAgent = "PARLEY_MANAGED_AGENT"

// agentEnv is the environment of an agent's process: the daemon's, without
// what belongs to the session that started the daemon (see inherited), plus
// the agent's identity, plus the provider's env (extra) and the spec's
// (more), which win.
func agentEnv(t *turn, extra map[string]string, more []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); inherited(k) {
			env = append(env, kv)
		}
	}
	env = append(env,
		"PARLEY_HOME="+t.Home,
		"PARLEY_AGENT="+t.Agent.ID,
		"PARLEY_WORKSPACE="+t.Agent.Workspace,
		EnvManagedAgent+"="+t.Agent.ID,
		"PARLEY_MCP_CONFIG="+t.MCPConfig,
		"PARLEY_MODE="+modeOr(t.Agent.Mode),
		"PARLEY_SESSION_ID="+t.Agent.SessionID,
		"PARLEY_RUN="+runMarker(t.Agent.ID, t.Run),
	)
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+extra[k])
	}
	return append(env, more...)
}

// inherited reports whether an agent's process gets the daemon's variable
// named k. The daemon is often started from inside a client's session (a
// Claude Code or Codex shell tool ran `parley`), and then carries that
// session's variables: its id, its inbox socket and token, its thread, the
// marker that it is a child session. A new agent given them would take
// itself for part of that session, or write to it; they are left out,
// with Parley's own identity and tmux's. What configures the clients
// (API keys, base URLs, CODEX_HOME, CLAUDE_CONFIG_DIR, proxies) is kept;
// a provider's env in config.toml sets anything else.
func inherited(k string) bool {
	// door.SessionVars names every client's door into its session (Qwen
	// Code's and opencode's too): one list, so that none is missed here.
	if sessionVars[k] || slices.Contains(door.SessionVars, k) {
		return false
	}
	for _, p := range sessionPrefixes {
		if strings.HasPrefix(k, p) {
			return false
		}
	}
	return true
}

var sessionVars = map[string]bool{
	// tmux: the daemon's pane is not the agent's.
	"TMUX": true, "TMUX_PANE": true,
	// Parley: the runner sets the agent's own.
	"PARLEY_DAEMON_CHILD": true, "PARLEY_AGENT": true, "PARLEY_ROLE": true, "PARLEY_WORKSPACE": true,
	"PARLEY_PROFILE": true, "PARLEY_NUDGE": true, "PARLEY_HOME": true, EnvManagedAgent: true,
	"PARLEY_MCP_CONFIG": true, "PARLEY_MODE": true, "PARLEY_SESSION_ID": true, "PARLEY_RUN": true,
	// Claude Code (2.1.332) sets these for its tools, hooks and MCP servers.
	"CLAUDECODE": true, "CLAUDE_PID": true, "CLAUDE_PROJECT_DIR": true, "CLAUDE_ENV_FILE": true, "AI_AGENT": true,
	"CLAUDE_CODE_ENTRYPOINT": true, "CLAUDE_CODE_EXECPATH": true, "CLAUDE_CODE_LAUNCHED_BY_SESSION_IDS": true,
	"CLAUDE_CODE_SSE_PORT": true, "CLAUDE_CODE_REMOTE_SESSION_ID": true,
	// Codex (0.171.0) sets these for its shell tools.
	"CODEX_THREAD_ID": true, "CODEX_SESSION_ID": true, "CODEX_TOOL_CALL_ID": true, "CODEX_CI": true,
	"CODEX_SANDBOX": true, "CODEX_SANDBOX_NETWORK_DISABLED": true, "CODEX_MANAGED_BY_NPM": true,
	"CODEX_MANAGED_PACKAGE_ROOT": true, "CODEX_VERSION": true, "CODEX_APPLY_PATCH_PRESERVE_LINE_ENDINGS": true,
}

// sessionPrefixes are families of Claude Code's session variables: the
// session's id, kind and attendance, its inbox (CLAUDE_CODE_MESSAGING_SOCKET
// and _TOKEN), the child-session marker and notes, a resumed or relaunched
// session's state, and background sessions'.
var sessionPrefixes = []string{
	"CLAUDE_CODE_SESSION_", "CLAUDE_CODE_MESSAGING_", "CLAUDE_CODE_CHILD_", "CLAUDE_CODE_RESUME_",
	"CLAUDE_CODE_RELAUNCH_", "CLAUDE_BG_",
}

// runMarker tags a run's processes so that a restarted daemon can find the
// orphans of an interrupted run without trusting a recycled pid.
func runMarker(agent string, run int) string { return agent + "/" + strconv.Itoa(run) }
