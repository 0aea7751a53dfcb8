package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Bounds on what one timeline event keeps: tool results can be whole files.
const (
	maxEventText = 16 << 10
	maxEventData = 16 << 10
)

// parser turns a provider's stdout, line by line, into timeline events, and
// collects what the run reports about itself.
type parser struct {
	format string // claude, codex or text

	sessionID string
	costUSD   float64
	// costBase is what the process had spent before this turn: Claude Code's
	// total_cost_usd counts from the process's start, so a turn of a process
	// kept across turns costs the difference.
	costBase    float64
	usage       json.RawMessage
	resultError string // the provider said the turn failed
	lastText    string
	// prompt holds the JSON lines of the turn's prompt: a provider that
	// echoes its prompt (mail it was given) must not have those lines
	// taken for its own report (a result, its cost).
	prompt map[string]bool
}

// echoes tells the parser the turn's prompt: its lines that look like JSON
// are text when the provider prints them back.
func (p *parser) echoes(prompt string) {
	for _, l := range strings.Split(prompt, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "{") {
			if p.prompt == nil {
				p.prompt = map[string]bool{}
			}
			p.prompt[l] = true
		}
	}
}

func newParser(format string) *parser { return &parser{format: format} }

// line parses one line of output (without its newline).
func (p *parser) line(b []byte) []*Event {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil
	}
	if p.prompt[string(b)] {
		return []*Event{p.text(string(b))}
	}
	switch p.format {
	case KindClaude:
		if evs, ok := p.claude(b); ok {
			return evs
		}
	case KindCodex:
		if evs, ok := p.codex(b); ok {
			return evs
		}
	default:
		// A command provider may speak Claude Code's stream-json.
		if b[0] == '{' && claudeTypes[peekType(b)] {
			if evs, ok := p.claude(b); ok {
				return evs
			}
		}
	}
	return []*Event{p.text(string(b))}
}

var claudeTypes = map[string]bool{"system": true, "assistant": true, "user": true, "result": true}

func peekType(b []byte) string {
	var v struct {
		Type string `json:"type"`
	}
	json.Unmarshal(b, &v)
	return v.Type
}

func (p *parser) text(s string) *Event {
	p.lastText = s
	return &Event{Kind: EvText, Text: s}
}

// Claude Code's stream-json messages, as far as the timeline needs them.
type claudeLine struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	SessionID string `json:"session_id"`
	Model     string `json:"model"`
	Message   *struct {
		Content json.RawMessage `json:"content"`
	} `json:"message"`
	// result
	IsError      bool            `json:"is_error"`
	Result       string          `json:"result"`
	TotalCostUSD *float64        `json:"total_cost_usd"`
	CostUSD      *float64        `json:"cost_usd"`
	Usage        json.RawMessage `json:"usage"`
	NumTurns     int             `json:"num_turns"`
	DurationMS   int64           `json:"duration_ms"`
	Error        string          `json:"error"`
}

type claudeBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// claude parses a stream-json line; ok is false when it is not one.
func (p *parser) claude(b []byte) ([]*Event, bool) {
	var l claudeLine
	if json.Unmarshal(b, &l) != nil {
		return nil, false
	}
	if l.SessionID != "" && (p.sessionID == "" || l.Type == "system") {
		p.sessionID = l.SessionID
	}
	switch l.Type {
	case "system":
		if l.Subtype == "init" {
			return []*Event{{Kind: EvNote, Text: fmt.Sprintf("session %s started%s", l.SessionID, ifSet(" (model ", l.Model, ")")),
				Data: mustJSON(map[string]string{"session_id": l.SessionID, "model": l.Model})}}, true
		}
		return nil, true
	case "assistant", "user":
		if l.Message == nil {
			return nil, true
		}
		var blocks []claudeBlock
		if json.Unmarshal(l.Message.Content, &blocks) != nil {
			// A plain string: the user's own prompt echoed back.
			return nil, true
		}
		var evs []*Event
		for _, bl := range blocks {
			switch bl.Type {
			case "text":
				if strings.TrimSpace(bl.Text) != "" && l.Type == "assistant" {
					p.lastText = bl.Text
					evs = append(evs, &Event{Kind: EvText, Text: bl.Text})
				}
			case "tool_use":
				evs = append(evs, &Event{Kind: EvToolUse, Tool: bl.Name, ToolUseID: bl.ID, Data: bl.Input})
			case "tool_result":
				evs = append(evs, &Event{Kind: EvToolResult, ToolUseID: bl.ToolUseID, Text: blockText(bl.Content), IsError: bl.IsError})
			}
		}
		return evs, true
	case "result":
		var evs []*Event
		if cost, ok, why := turnCost(l.TotalCostUSD, l.CostUSD, p.costBase); why != "" {
			evs = append(evs, &Event{Kind: EvNote, Text: "the provider's result line reports a cost Parley does not count: " + why, IsError: true})
		} else if ok {
			// A later result line of the turn cannot lower what an
			// earlier one reported.
			p.costUSD = max(p.costUSD, cost)
		}
		if len(l.Usage) > 0 && string(l.Usage) != "null" {
			p.usage = l.Usage
		}
		isErr := l.IsError || strings.HasPrefix(l.Subtype, "error")
		if isErr {
			p.resultError = firstNonEmpty(l.Result, l.Error, l.Subtype, "the provider reported an error")
		}
		if !isErr && l.Result != "" {
			p.lastText = l.Result
		}
		data := map[string]any{"subtype": l.Subtype, "cost_usd": p.costUSD, "num_turns": l.NumTurns, "duration_ms": l.DurationMS}
		if p.usage != nil {
			data["usage"] = p.usage
		}
		return append(evs, &Event{Kind: EvResult, Text: l.Result, IsError: isErr, Data: mustJSON(data)}), true
	case "error":
		msg := firstNonEmpty(l.Error, l.Result, string(b))
		return []*Event{{Kind: EvError, Text: msg, IsError: true}}, true
	case "":
		return nil, false
	}
	return nil, true // a stream-json type the timeline does not show
}

// blockText renders a tool_result's content: a string or text blocks.
func blockText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []claudeBlock
	if json.Unmarshal(raw, &blocks) == nil {
		var parts []string
		for _, b := range blocks {
			if b.Type == "text" {
				parts = append(parts, b.Text)
			} else if b.Type != "" {
				parts = append(parts, "["+b.Type+"]")
			}
		}
		return strings.Join(parts, "\n")
	}
	return string(raw)
}

// Codex's `exec --json` events.
type codexLine struct {
	Type     string          `json:"type"`
	ThreadID string          `json:"thread_id"`
	Usage    json.RawMessage `json:"usage"`
	Message  string          `json:"message"`
	Error    *struct {
		Message string `json:"message"`
	} `json:"error"`
	Item *struct {
		ID               string          `json:"id"`
		Type             string          `json:"type"`
		Text             string          `json:"text"`
		Command          string          `json:"command"`
		AggregatedOutput string          `json:"aggregated_output"`
		ExitCode         *int            `json:"exit_code"`
		Status           string          `json:"status"`
		Server           string          `json:"server"`
		Tool             string          `json:"tool"`
		Arguments        json.RawMessage `json:"arguments"`
		Result           json.RawMessage `json:"result"`
		Changes          json.RawMessage `json:"changes"`
		Query            string          `json:"query"`
		Message          string          `json:"message"`
		Error            *struct {
			Message string `json:"message"`
		} `json:"error"`
	} `json:"item"`
}

func (p *parser) codex(b []byte) ([]*Event, bool) {
	var l codexLine
	if json.Unmarshal(b, &l) != nil || l.Type == "" {
		return nil, false
	}
	switch l.Type {
	case "thread.started":
		p.sessionID = l.ThreadID
		return []*Event{{Kind: EvNote, Text: "session " + l.ThreadID + " started", Data: mustJSON(map[string]string{"session_id": l.ThreadID})}}, true
	case "turn.completed":
		if len(l.Usage) > 0 && string(l.Usage) != "null" {
			p.usage = l.Usage
		}
		return []*Event{{Kind: EvResult, Text: p.lastText, Data: mustJSON(map[string]any{"usage": p.usage})}}, true
	case "turn.failed":
		msg := "the turn failed"
		if l.Error != nil && l.Error.Message != "" {
			msg = l.Error.Message
		}
		p.resultError = msg
		return []*Event{{Kind: EvError, Text: msg, IsError: true}}, true
	case "error":
		return []*Event{{Kind: EvError, Text: firstNonEmpty(l.Message, string(b)), IsError: true}}, true
	case "item.completed":
		it := l.Item
		if it == nil {
			return nil, true
		}
		switch it.Type {
		case "agent_message":
			p.lastText = it.Text
			return []*Event{{Kind: EvText, Text: it.Text}}, true
		case "command_execution":
			failed := it.Status == "failed" || (it.ExitCode != nil && *it.ExitCode != 0)
			return []*Event{
				{Kind: EvToolUse, Tool: "shell", ToolUseID: it.ID, Data: mustJSON(map[string]string{"command": it.Command})},
				{Kind: EvToolResult, ToolUseID: it.ID, Text: it.AggregatedOutput, IsError: failed},
			}, true
		case "mcp_tool_call":
			res := &Event{Kind: EvToolResult, ToolUseID: it.ID, Data: it.Result, Text: mcpResultText(it.Result)}
			if it.Error != nil {
				res.Text, res.IsError = it.Error.Message, true
			}
			return []*Event{{Kind: EvToolUse, Tool: it.Server + "__" + it.Tool, ToolUseID: it.ID, Data: it.Arguments}, res}, true
		case "file_change":
			return []*Event{{Kind: EvToolUse, Tool: "file_change", ToolUseID: it.ID, Data: it.Changes}}, true
		case "web_search":
			return []*Event{{Kind: EvToolUse, Tool: "web_search", ToolUseID: it.ID, Data: mustJSON(map[string]string{"query": it.Query})}}, true
		case "error":
			return []*Event{{Kind: EvError, Text: it.Message, IsError: true}}, true
		}
		return nil, true
	}
	return nil, true
}

// mcpResultText renders Codex's MCP result ({"content":[...],
// "structured_content":...}) as the text of its content blocks, so that
// `agent logs` shows what the tool answered.
func mcpResultText(raw json.RawMessage) string {
	var r struct {
		Content    json.RawMessage `json:"content"`
		Structured json.RawMessage `json:"structured_content"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &r) != nil {
		return ""
	}
	if s := blockText(r.Content); s != "" {
		return s
	}
	if len(r.Structured) > 0 && string(r.Structured) != "null" {
		return string(r.Structured)
	}
	return ""
}

// bound truncates an event's text and data to the timeline's limits.
func bound(ev *Event) {
	if len(ev.Text) > maxEventText {
		ev.Text = truncUTF8(ev.Text, maxEventText)
		ev.Truncated = true
	}
	if len(ev.Data) > maxEventData {
		ev.Data = mustJSON(map[string]string{"truncated": truncUTF8(string(ev.Data), maxEventData)})
		ev.Truncated = true
	}
	if len(ev.Data) > 0 && !json.Valid(ev.Data) {
		ev.Data = mustJSON(string(ev.Data))
	}
}

func truncUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

func ifSet(pre, s, post string) string {
	if s == "" {
		return ""
	}
	return pre + s + post
}
