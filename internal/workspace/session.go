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

// SessionName derives a stable, readable agent name for the client session
// a process runs in, for a session that was given no name (a client package
// such as the Claude Code plugin cannot bake one in, and two sessions in one
// checkout must be two agents): the client, the checkout's directory and a
// short hash of the session's id, such as "claude-parley-3f9a1c". getenv
// reads the environment (os.Getenv); root is the checkout. ok is false
// outside any session that names itself. The MCP server and the hooks of one
// session see the same id, so they speak as the same agent. This is the one
// place that decides it (doors and hooks call it too).
func SessionName(getenv func(string) string, root string) (name, from string, ok bool) {
	for _, k := range sessionKeys {
		id := strings.TrimSpace(getenv(k.env))
		if id == "" {
			continue
		}
		sum := sha256.Sum256([]byte(id))
		parts := []string{k.client}
		if d := cleanName(filepath.Base(root)); d != "" && root != "" {
			parts = append(parts, d)
		}
		parts = append(parts, hex.EncodeToString(sum[:3]))
		return strings.Join(parts, "-"), k.env, true
	}
	return "", "", false
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
