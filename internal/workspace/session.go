package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"strings"
)

// EnvSession names a client session for SessionName: any client (or its
// user) that sets it gets an agent of its own per value.
const EnvSession = "PARLEY_SESSION"

// sessionKeys are the variables through which clients name their session to
// the MCP servers and hooks they start, most specific first: Parley's own,
// then Claude Code's (CLAUDE_CODE_SESSION_ID, seen by its MCP servers, hooks
// and commands alike), then Codex's thread (EnvCodexThread).
var sessionKeys = []struct{ env, client string }{
	{EnvSession, "session"},
	{"CLAUDE_CODE_SESSION_ID", "claude"},
	{EnvCodexThread, "codex"},
}

// EnvCodexThread is the Codex thread a shell tool of Codex runs in. Codex's
// hooks get it as their input's session_id, and its MCP servers in every
// tool call's _meta.threadId (not in their environment): each passes it to
// SessionName under this key, so that a Codex thread's hooks, MCP server and
// shell commands speak as one agent.
const EnvCodexThread = "CODEX_THREAD_ID"

// CodexThreadEnv is SessionName's getenv for a Codex thread known from
// elsewhere than the environment (a hook's input, a tool call's _meta): the
// thread and no other session. A session variable inherited from a client
// that started Codex (CLAUDE_CODE_SESSION_ID, PARLEY_SESSION) names another
// session, and Codex does not pass one to its MCP servers.
func CodexThreadEnv(thread string) func(string) string {
	return func(k string) string {
		if k == EnvCodexThread {
			return thread
		}
		return ""
	}
}

// Session is the client session a process runs in, as its client names it
// to the MCP servers, hooks and commands it starts. The MCP server and the
// hooks of one session see the same one, so they speak as the same agent.
type Session struct {
	// Client is who named it: "claude" (Claude Code's session id), "codex"
	// (the thread), "session" ($PARLEY_SESSION, which `parley mcp serve`
	// also sets, to its client's process, for a client that names none).
	Client string
	ID     string
	// Env is the variable it came from.
	Env string
}

// FindSession reads the client session from getenv (os.Getenv or a
// stand-in such as CodexThreadEnv); ok is false outside any session that
// names itself.
func FindSession(getenv func(string) string) (s Session, ok bool) {
	if getenv == nil {
		return Session{}, false
	}
	for _, k := range sessionKeys {
		if id := strings.TrimSpace(getenv(k.env)); id != "" {
			return Session{Client: k.client, ID: id, Env: k.env}, true
		}
	}
	return Session{}, false
}

// Key names the session without its id (a digest of it), for identity
// files and the daemon's record of which session holds a name: "claude:"
// and 32 hex digits. It is "" for the zero Session.
func (s Session) Key() string {
	if s.ID == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(s.Client + "\x00" + s.ID))
	return s.Client + ":" + hex.EncodeToString(sum[:16])
}

// Name is a stable, readable agent name for the session, for a session
// that was given no name (a client package such as the Claude Code plugin
// cannot bake one in, and two sessions in one checkout must be two agents):
// the client, the checkout's directory (root) and a short hash of the
// session's id, such as "claude-parley-3f9a1c". This is the one place that
// decides it (doors and hooks call it too).
func (s Session) Name(root string) string {
	sum := sha256.Sum256([]byte(s.ID))
	parts := []string{s.Client}
	if d := cleanName(filepath.Base(root)); d != "" && root != "" {
		parts = append(parts, d)
	}
	parts = append(parts, hex.EncodeToString(sum[:3]))
	return strings.Join(parts, "-")
}

// SessionName is FindSession's session's Name in root, and the variable it
// came from; ok is false outside any session that names itself.
func SessionName(getenv func(string) string, root string) (name, from string, ok bool) {
	s, ok := FindSession(getenv)
	if !ok {
		return "", "", false
	}
	return s.Name(root), s.Env, true
}

// cleanName keeps what an agent name allows of s, at most 32 bytes.
func cleanName(s string) string {
	clean := strings.Map(func(r rune) rune {
		if r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return r
		}
		return '-'
	}, s)
	clean = strings.Trim(clean, "-_")
	if len(clean) > 32 {
		clean = strings.Trim(clean[:32], "-_")
	}
	return clean
}
