package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/parley-dev/parley/internal/codexrpc"
)

// The Codex app-server protocol (`codex app-server`): JSON-RPC over stdio,
// one object per line, without the "jsonrpc" member. The client opens a
// thread (thread/start, or thread/resume with the agent's session id), then
// runs turns on it (turn/start), adds input to the turn in progress
// (turn/steer) and stops it (turn/interrupt). Codex asks the client for
// approvals with requests of its own, which the runner files in the
// permission inbox.

// rpcTimeout bounds one request to the app-server.
const rpcTimeout = 60 * time.Second

// newRPCConn is the client side of s's app-server's JSON-RPC, on its stdin.
func newRPCConn(s *session) *codexrpc.Conn {
	return codexrpc.New(func(_ context.Context, msg []byte) error { return s.write(msg) },
		&codexrpc.Options{Timeout: rpcTimeout, Peer: "codex app-server"})
}

// openThread does the app-server's handshake and opens the agent's thread:
// its previous one (thread/resume) when it has a session id, else a new one.
func (r *Runner) openThread(st *agent, s *session, t *turn) error {
	ctx := s.ctx
	if err := s.rpc.Call(ctx, "initialize", map[string]any{"clientInfo": map[string]string{"name": "parley", "version": "1"}}, nil); err != nil {
		return err
	}
	if err := s.rpc.Notify(ctx, "initialized"); err != nil {
		return err
	}
	sandbox, approval := codexPolicy(t.Agent.Mode, true)
	params := map[string]any{"cwd": t.Agent.Cwd, "approvalPolicy": approval, "sandbox": sandbox}
	method := "thread/start"
	if t.Agent.SessionID != "" {
		method, params["threadId"] = "thread/resume", t.Agent.SessionID
	}
	var res struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	if err := s.rpc.Call(ctx, method, params, &res); err != nil {
		return err
	}
	if res.Thread.ID == "" {
		return fmt.Errorf("%s: the codex app-server gave no thread id", method)
	}
	s.thread = res.Thread.ID
	if res.Thread.ID != t.Agent.SessionID {
		r.emit(st, &Event{Run: t.Run, Kind: EvNote, Text: "session " + res.Thread.ID + " started", Data: mustJSON(map[string]string{"session_id": res.Thread.ID})})
	}
	r.noteSession(st, res.Thread.ID)
	return nil
}

func textInput(s string) []map[string]string {
	return []map[string]string{{"type": "text", "text": s}}
}

// startTurn starts a turn with run's prompt.
func (r *Runner) startTurn(st *agent, s *session, run *Run) error {
	var res struct {
		Turn struct {
			ID string `json:"id"`
		} `json:"turn"`
	}
	if err := s.rpc.Call(s.ctx, "turn/start", map[string]any{"threadId": s.thread, "input": textInput(run.Prompt)}, &res); err != nil {
		return err
	}
	r.mu.Lock()
	s.turn = res.Turn.ID
	r.mu.Unlock()
	return nil
}

// steerTurn adds run's prompt to the turn in progress; it fails if that
// turn has ended meanwhile.
func (r *Runner) steerTurn(s *session, run *Run) error {
	r.mu.Lock()
	turn := s.turn
	r.mu.Unlock()
	if turn == "" {
		return errors.New("no turn in progress")
	}
	return s.rpc.Call(s.ctx, "turn/steer", map[string]any{"threadId": s.thread, "expectedTurnId": turn, "input": textInput(run.Prompt)}, nil)
}

// interruptTurn stops the turn in progress.
func (r *Runner) interruptTurn(s *session) error {
	r.mu.Lock()
	turn := s.turn
	r.mu.Unlock()
	if turn == "" {
		return errors.New("no turn in progress")
	}
	return s.rpc.Call(s.ctx, "turn/interrupt", map[string]any{"threadId": s.thread, "turnId": turn}, nil)
}

// appServerLine handles one message from the app-server.
func (r *Runner) appServerLine(st *agent, s *session, ps **parser, line []byte) {
	var m codexrpc.Message
	if json.Unmarshal(line, &m) != nil {
		r.emit(st, &Event{Run: r.runOf(st), Kind: EvText, Text: string(line)})
		return
	}
	switch {
	case m.IsAnswer():
		s.rpc.Answer(&m)
	case m.IsRequest():
		// Approvals wait for a person: never on the reading goroutine.
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.approve(st, s, &m)
		}()
	default:
		r.appServerNotification(st, s, ps, &m)
	}
}

// runOf is the seq of st's run in progress, or 0.
func (r *Runner) runOf(st *agent) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if st.run != nil {
		return st.run.run.Seq
	}
	return 0
}

// appItem is a thread item of the app-server (item/completed).
type appItem struct {
	Type             string          `json:"type"`
	ID               string          `json:"id"`
	Text             string          `json:"text"`
	Command          string          `json:"command"`
	AggregatedOutput string          `json:"aggregatedOutput"`
	ExitCode         *int            `json:"exitCode"`
	Status           string          `json:"status"`
	Server           string          `json:"server"`
	Tool             string          `json:"tool"`
	Arguments        json.RawMessage `json:"arguments"`
	Result           json.RawMessage `json:"result"`
	Changes          json.RawMessage `json:"changes"`
	Query            string          `json:"query"`
	Error            *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// appServerNotification turns the app-server's notifications into timeline
// events and turn ends.
func (r *Runner) appServerNotification(st *agent, s *session, ps **parser, m *codexrpc.Message) {
	p := *ps
	var evs []*Event
	switch m.Method {
	case "turn/started":
		var n struct {
			Turn struct {
				ID string `json:"id"`
			} `json:"turn"`
		}
		if json.Unmarshal(m.Params, &n) == nil && n.Turn.ID != "" {
			r.mu.Lock()
			s.turn = n.Turn.ID
			r.mu.Unlock()
		}
	case "item/completed":
		var n struct {
			Item appItem `json:"item"`
		}
		if json.Unmarshal(m.Params, &n) == nil {
			evs = p.appItem(&n.Item)
		}
	case "thread/tokenUsage/updated":
		var n struct {
			TokenUsage json.RawMessage `json:"tokenUsage"`
		}
		if json.Unmarshal(m.Params, &n) == nil && len(n.TokenUsage) > 0 {
			p.usage = n.TokenUsage
		}
	case "error":
		var n struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
			WillRetry bool `json:"willRetry"`
		}
		if json.Unmarshal(m.Params, &n) == nil && !n.WillRetry {
			evs = append(evs, &Event{Kind: EvError, Text: n.Error.Message, IsError: true})
		}
	case "turn/completed":
		var n struct {
			Turn struct {
				Status string `json:"status"`
				Error  *struct {
					Message string `json:"message"`
				} `json:"error"`
			} `json:"turn"`
		}
		json.Unmarshal(m.Params, &n)
		switch n.Turn.Status {
		case "failed":
			p.resultError = "the turn failed"
			if n.Turn.Error != nil && n.Turn.Error.Message != "" {
				p.resultError = n.Turn.Error.Message
			}
		case "interrupted":
			p.resultError = "interrupted"
		}
		evs = append(evs, &Event{Kind: EvResult, Text: firstNonEmpty(p.resultError, p.lastText), IsError: p.resultError != "",
			Data: mustJSON(map[string]any{"status": n.Turn.Status, "usage": p.usage})})
	}
	seq := r.runOf(st)
	for _, ev := range evs {
		ev.Run = seq
		r.emit(st, ev)
	}
	if m.Method == "turn/completed" {
		r.mu.Lock()
		s.turn = ""
		r.mu.Unlock()
		s.ends <- turnEnd{ps: p, took: -1}
		*ps = newParser(s.format)
	}
}

// appItem renders a completed thread item as timeline events.
func (p *parser) appItem(it *appItem) []*Event {
	switch it.Type {
	case "agentMessage":
		if it.Text == "" {
			return nil
		}
		p.lastText = it.Text
		return []*Event{{Kind: EvText, Text: it.Text}}
	case "commandExecution":
		res := &Event{Kind: EvToolResult, ToolUseID: it.ID, Text: it.AggregatedOutput,
			IsError: it.Status == "failed" || it.Status == "declined" || (it.ExitCode != nil && *it.ExitCode != 0)}
		if it.Status == "declined" {
			res.Text = "declined: the command did not run"
		}
		return []*Event{{Kind: EvToolUse, Tool: "shell", ToolUseID: it.ID, Data: mustJSON(map[string]string{"command": it.Command})}, res}
	case "mcpToolCall":
		res := &Event{Kind: EvToolResult, ToolUseID: it.ID, Data: it.Result, Text: mcpResultText(it.Result)}
		if it.Error != nil {
			res.Text, res.IsError = it.Error.Message, true
		}
		return []*Event{{Kind: EvToolUse, Tool: it.Server + "__" + it.Tool, ToolUseID: it.ID, Data: it.Arguments}, res}
	case "fileChange":
		evs := []*Event{{Kind: EvToolUse, Tool: "file_change", ToolUseID: it.ID, Data: it.Changes}}
		if it.Status == "declined" || it.Status == "failed" {
			evs = append(evs, &Event{Kind: EvToolResult, ToolUseID: it.ID, Text: it.Status + ": the change was not made", IsError: true})
		}
		return evs
	case "webSearch":
		return []*Event{{Kind: EvToolUse, Tool: "web_search", ToolUseID: it.ID, Data: mustJSON(map[string]string{"query": it.Query})}}
	}
	return nil
}

// approve answers one of the app-server's requests: approvals go to the
// permission inbox, where anyone may decide them; what Parley cannot answer
// gets an error.
func (r *Runner) approve(st *agent, s *session, m *codexrpc.Message) {
	var p struct {
		ItemID      string          `json:"itemId"`
		Command     string          `json:"command"`
		Cwd         string          `json:"cwd"`
		Reason      string          `json:"reason"`
		GrantRoot   string          `json:"grantRoot"`
		ServerName  string          `json:"serverName"`
		Message     string          `json:"message"`
		Permissions json.RawMessage `json:"permissions"`
		Meta        struct {
			Kind   string          `json:"codex_approval_kind"`
			Tool   string          `json:"tool_name"`
			Params json.RawMessage `json:"tool_params"`
		} `json:"_meta"`
	}
	json.Unmarshal(m.Params, &p)
	var tool string
	var input any
	switch m.Method {
	case "item/commandExecution/requestApproval":
		tool, input = "shell", map[string]string{"command": p.Command, "cwd": p.Cwd, "reason": p.Reason}
	case "item/fileChange/requestApproval":
		tool, input = "file_change", map[string]string{"reason": p.Reason, "grant_root": p.GrantRoot}
	case "item/permissions/requestApproval":
		tool, input = "permissions", map[string]any{"permissions": p.Permissions, "reason": p.Reason, "cwd": p.Cwd}
	case "mcpServer/elicitation/request":
		if p.Meta.Kind != "mcp_tool_call" {
			// A form for a person to fill in: no one here can.
			s.rpc.Reply(s.ctx, m.ID, map[string]any{"action": "decline"})
			return
		}
		tool, input = "mcp__"+p.ServerName+"__"+p.Meta.Tool, p.Meta.Params
	default:
		s.rpc.ReplyError(s.ctx, m.ID, -32601, "parley does not handle "+m.Method)
		return
	}
	raw, _ := json.Marshal(input)
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	r.mu.Lock()
	ws, id := st.rec.Workspace, st.rec.ID
	r.mu.Unlock()
	d, err := r.RequestPermission(s.ctx, ws, id, tool, raw, p.ItemID)
	allow := err == nil && d.Allow
	switch m.Method {
	case "mcpServer/elicitation/request":
		action := "decline"
		if allow {
			action = "accept"
		}
		s.rpc.Reply(s.ctx, m.ID, map[string]any{"action": action, "content": map[string]any{}})
	case "item/permissions/requestApproval":
		granted := json.RawMessage("{}")
		if allow && len(p.Permissions) > 0 {
			granted = p.Permissions
		}
		s.rpc.Reply(s.ctx, m.ID, map[string]any{"permissions": granted, "scope": "turn"})
	default:
		decision := "decline"
		if allow {
			decision = "accept"
		}
		s.rpc.Reply(s.ctx, m.ID, map[string]any{"decision": decision})
	}
}
