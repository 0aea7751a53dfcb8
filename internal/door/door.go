// Package door writes letters into running client sessions through the doors
// the clients themselves open: Claude Code's inbox socket
// (CLAUDE_CODE_MESSAGING_SOCKET, one JSON line per letter) and the Codex
// app-server's thread queue (thread/queue/add, WebSocket over the daemon's
// Unix control socket). A letter starts a turn in an idle session; a busy
// one gets it between tool calls (Claude Code) or when its turn ends
// (Codex).
//
// It knows the wire formats and what their failures mean, nothing of
// Parley's messages: the daemon's doorman decides what to write and when.
// It writes only where it is told; which doors may be written is the
// caller's rule (a door is written only by the daemon of the user whose
// session registered it).
package door

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrGone means the session behind the door is gone: its socket is missing
// (the session exited) or refuses connections (it was killed and left its
// socket behind), or Codex no longer has its control socket. Nothing was
// written; the door should be closed.
var ErrGone = errors.New("the session is gone")

// ErrRefused means the client answered and refused the letter (Codex: an
// unknown thread, an invalid request). Nothing was queued.
var ErrRefused = errors.New("the client refused the letter")

// ErrNotLoaded means the Codex thread is not loaded on its app-server (no
// client runs it: a `codex exec` thread, or one the app-server unloaded),
// and it was not to be resumed: nothing was queued. A letter queued there
// would not run until some client resumes the thread, if ever.
var ErrNotLoaded = errors.New("the thread is not loaded")

// ErrDropped means the client took the letter and then let it go without
// a turn carrying it (a Codex queue that lost it).
var ErrDropped = errors.New("the client dropped the letter")

// Error is a door failure with what was being done and, for a refusal, the
// client's own words.
type Error struct {
	Op   string // "claude inbox", "codex queue"...
	Kind error  // ErrGone, ErrRefused, or nil for a transport failure
	Err  error
}

func (e *Error) Error() string {
	if e.Kind != nil && !errors.Is(e.Err, e.Kind) {
		return fmt.Sprintf("%s: %v: %v", e.Op, e.Kind, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Op, e.Err)
}

func (e *Error) Unwrap() []error {
	if e.Kind == nil {
		return []error{e.Err}
	}
	return []error{e.Kind, e.Err}
}

// IsGone reports whether err says the session is gone.
func IsGone(err error) bool { return errors.Is(err, ErrGone) }

// IsNotLoaded reports whether err says the thread is not loaded.
func IsNotLoaded(err error) bool { return errors.Is(err, ErrNotLoaded) }

// IsDropped reports whether err says the client dropped the letter.
func IsDropped(err error) bool { return errors.Is(err, ErrDropped) }

// IsRefused reports whether err says the client refused the letter.
func IsRefused(err error) bool { return errors.Is(err, ErrRefused) }

// MaxText bounds a letter's text. A letter is a short notice, never a
// message's content; Claude Code drops a connection whose line is too long.
const MaxText = 16 << 10

// Environment of a client session. A Claude Code session gives the
// processes it starts (MCP servers, hooks, commands) its inbox and its
// identity; Codex gives its commands the thread's. A process that outlives
// the session or serves other sessions (the daemon, a managed agent's CLI)
// must not inherit them: it would take another session's door for its own.
const (
	EnvClaudeSocket  = "CLAUDE_CODE_MESSAGING_SOCKET"
	EnvClaudeToken   = "CLAUDE_CODE_MESSAGING_TOKEN"
	EnvClaudeSession = "CLAUDE_CODE_SESSION_ID"
	EnvCodexHome     = "CODEX_HOME"
)

// SessionVars are the variables that tie a process to the client session
// that started it (its door and its identity).
var SessionVars = []string{
	EnvClaudeSocket, EnvClaudeToken, EnvClaudeSession,
	"CLAUDE_CODE_LAUNCHED_BY_SESSION_IDS", "CLAUDE_CODE_CHILD_SESSION", "CLAUDE_CODE_CHILD_NOTES_DIR",
	"CLAUDE_CODE_SESSION_ATTENDED", "CLAUDE_PID", "CLAUDE_ENV_FILE",
	"CODEX_THREAD_ID", "CODEX_SESSION_ID", "CODEX_TOOL_CALL_ID",
	EnvQwenSocket, EnvQwenToken, EnvQwenSession, "QWEN_CODE_PROJECT_DIR", "QWEN_CODE_LAUNCHER_PID",
	EnvOpencodePID, "OPENCODE",
}

// StripSession returns env (KEY=VALUE entries) without SessionVars.
func StripSession(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(SessionVars, k) {
			out = append(out, kv)
		}
	}
	return out
}

// LetterMarker starts every letter Parley writes through a door, followed
// by the letter's id and "]": a hook that sees a prompt carrying it (Claude
// Code's UserPromptSubmit) reports the letter seen.
const LetterMarker = "[Parley bus · letter "

// LetterID finds a letter's id in text (a prompt that carries a letter), or
// returns "".
func LetterID(text string) string {
	_, rest, ok := strings.Cut(text, LetterMarker)
	if !ok {
		return ""
	}
	id, _, ok := strings.Cut(rest, "]")
	if !ok || len(id) != 26 {
		return ""
	}
	return id
}
