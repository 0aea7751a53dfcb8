package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// HeaderHello carries, as JSON, what an MCP session says of itself when it
// starts (a Hello): on the POST of its initialize, or on the upgrade of a
// stream session. `parley mcp serve` sends it; a plain HTTP client may send
// Parley-Agent and Parley-Workspace (or ?agent=&workspace=&profile=)
// instead.
const HeaderHello = "Parley-Hello"

// Hello is what a session says of itself at its start: who it is, which
// tools it wants, where its client runs and which doors it opened. The
// daemon's admission (ops.OpenSession) reads it beside what the daemon
// attests itself (the agent token, the Unix socket).
type Hello struct {
	Workspace string   `json:"workspace,omitempty"`
	Agent     string   `json:"agent,omitempty"`
	Role      string   `json:"role,omitempty"`
	Module    string   `json:"module,omitempty"`
	Profiles  []string `json:"profiles,omitempty"`

	// How the name came about: "" when it was given (a flag, PARLEY_AGENT,
	// an identity file), else NameSession or NameProcess, a name Parley
	// derived for the client session, which it may replace (set_identity).
	NameFrom string `json:"name_from,omitempty"`
	// Root goes with NameProcess: the checkout the session works in, from
	// which the daemon derives the name of its Codex thread once a tool
	// call names it.
	Root string `json:"root,omitempty"`
	// The client session the server runs in (the naming rules of issue
	// 39, ops.Admission): its key (workspace.Session.Key, never its id),
	// its own name, whether the name is the runner's and not the session's
	// to give up (Fixed), and the name it was given and gave up for its own
	// (Asked).
	ClientSession string `json:"client_session,omitempty"`
	SessionName   string `json:"session_name,omitempty"`
	Fixed         bool   `json:"fixed,omitempty"`
	Asked         string `json:"asked,omitempty"`

	// Tmux is the session's tmux pane, when its client runs in tmux, and
	// Nudge the nudge it asked for ("tmux" or "").
	Tmux  *TmuxPane `json:"tmux,omitempty"`
	Nudge string    `json:"nudge,omitempty"`
	// Doors its client opened for it: Claude Code's inbox socket (Kind,
	// Address, Token, Session of the DoorRequest), and the CODEX_HOME whose
	// app-server holds a Codex session's threads (the thread id comes with
	// each tools/call, in _meta.threadId). Registered only for a session
	// over the daemon's Unix socket.
	ClaudeInbox *DoorRequest `json:"claude_inbox,omitempty"`
	CodexHome   string       `json:"codex_home,omitempty"`
	// Doors are the other doors its client opened, whole (Kind, Session,
	// Address): a Qwen Code session's inbox, an opencode instance's
	// server.
	Doors []DoorRequest `json:"doors,omitempty"`
	// Push asks a stream session to push the agent's messages once the
	// client has initialized (MethodMessage).
	Push bool `json:"push,omitempty"`
}

// TmuxPane locates a tmux pane: the server's socket and the pane id.
type TmuxPane struct {
	Socket string `json:"socket,omitempty"`
	Pane   string `json:"pane,omitempty"`
}

// How a session's name was derived (Hello.NameFrom).
const (
	// NameSession: from the client session's own id (PARLEY_SESSION,
	// CLAUDE_CODE_SESSION_ID, CODEX_THREAD_ID), as its hooks derive it.
	NameSession = "session"
	// NameProcess: from the client process that started the server, for a
	// client that names no session (Gemini CLI; Codex, until its first
	// tool call names its thread).
	NameProcess = "process"
)

// Header is h as the one header value that carries it.
func (h Hello) Header() string {
	b, _ := json.Marshal(h)
	return string(b)
}

// HelloOf reads the Hello of a request that starts a session: HeaderHello;
// what it leaves out, from Parley-Agent and Parley-Workspace, then from the
// query (agent, workspace, role, module, profile: comma-separated); and,
// for one release, from the headers that said it before HeaderHello.
func HelloOf(h http.Header, q url.Values) (Hello, error) {
	var hello Hello
	if v := h.Get(HeaderHello); v != "" {
		if err := json.Unmarshal([]byte(v), &hello); err != nil {
			return Hello{}, fmt.Errorf("%s is not a JSON object of a session's hello: %v", HeaderHello, err)
		}
	}
	fill := func(dst *string, header, query string) {
		if *dst == "" {
			*dst = h.Get(header)
		}
		if *dst == "" && query != "" {
			*dst = q.Get(query)
		}
	}
	fill(&hello.Agent, HeaderAgent, "agent")
	fill(&hello.Workspace, HeaderWorkspace, "workspace")
	fill(&hello.Role, "Parley-Role", "role")
	fill(&hello.Module, "Parley-Module", "module")
	if hello.Profiles == nil {
		p := h.Get("Parley-Profile")
		if p == "" {
			p = q.Get("profile")
		}
		for _, s := range strings.Split(p, ",") {
			if s = strings.TrimSpace(s); s != "" {
				hello.Profiles = append(hello.Profiles, s)
			}
		}
	}
	// The headers of before (parley mcp serve until this release).
	fill(&hello.NameFrom, "Parley-Agent-From", "")
	fill(&hello.Root, "Parley-Session-Root", "")
	fill(&hello.ClientSession, "Parley-Client-Session", "")
	fill(&hello.SessionName, "Parley-Session-Name", "")
	fill(&hello.Asked, "Parley-Asked-Agent", "")
	fill(&hello.Nudge, "Parley-Nudge", "")
	fill(&hello.CodexHome, "Parley-Codex-Home", "")
	hello.Fixed = hello.Fixed || h.Get("Parley-Fixed-Name") != ""
	hello.Push = hello.Push || h.Get("Parley-Push") != ""
	if hello.Tmux == nil && h.Get("Parley-Tmux-Pane") != "" {
		hello.Tmux = &TmuxPane{Socket: h.Get("Parley-Tmux-Socket"), Pane: h.Get("Parley-Tmux-Pane")}
	}
	if hello.ClaudeInbox == nil && h.Get("Parley-Door-Socket") != "" {
		hello.ClaudeInbox = &DoorRequest{Address: h.Get("Parley-Door-Socket"), Token: h.Get("Parley-Door-Token"), Session: h.Get("Parley-Door-Session")}
	}
	return hello, nil
}
