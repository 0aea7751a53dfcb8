package runner

import (
	"strings"
	"testing"
)

func kinds(evs []*Event) string {
	var ks []string
	for _, e := range evs {
		ks = append(ks, e.Kind)
	}
	return strings.Join(ks, ",")
}

func TestParseClaude(t *testing.T) {
	lines := []string{
		`{"type":"system","subtype":"init","session_id":"s-1","model":"claude-x","tools":["Bash"]}`,
		`{"type":"assistant","session_id":"s-1","message":{"content":[{"type":"thinking","thinking":"hm"},{"type":"text","text":"Looking."},{"type":"tool_use","id":"tu1","name":"Bash","input":{"command":"ls"}}]}}`,
		`{"type":"user","session_id":"s-1","message":{"content":[{"type":"tool_result","tool_use_id":"tu1","content":[{"type":"text","text":"a.go"},{"type":"image"}],"is_error":false}]}}`,
		`{"type":"user","message":{"content":"the prompt echoed"}}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"tu2","content":"boom","is_error":true}]}}`,
		`{"type":"stream_event","event":{}}`,
		``,
		`{"type":"result","subtype":"success","is_error":false,"result":"All done.","session_id":"s-1","total_cost_usd":0.25,"usage":{"input_tokens":3},"num_turns":2}`,
	}
	p := newParser("claude")
	var evs []*Event
	for _, l := range lines {
		evs = append(evs, p.line([]byte(l))...)
	}
	if got, want := kinds(evs), "note,text,tool_use,tool_result,tool_result,result"; got != want {
		t.Fatalf("kinds: got %s, want %s", got, want)
	}
	if p.sessionID != "s-1" {
		t.Errorf("session: got %q, want s-1", p.sessionID)
	}
	if evs[2].Tool != "Bash" || evs[2].ToolUseID != "tu1" || string(evs[2].Data) != `{"command":"ls"}` {
		t.Errorf("tool_use: got %+v", evs[2])
	}
	if evs[3].Text != "a.go\n[image]" || evs[3].IsError {
		t.Errorf("tool_result: got %+v", evs[3])
	}
	if !evs[4].IsError || evs[4].Text != "boom" {
		t.Errorf("error tool_result: got %+v", evs[4])
	}
	if p.costUSD != 0.25 || string(p.usage) != `{"input_tokens":3}` || p.resultError != "" || p.lastText != "All done." {
		t.Errorf("result: cost %v usage %s error %q last %q", p.costUSD, p.usage, p.resultError, p.lastText)
	}
}

func TestParseClaudeErrorResult(t *testing.T) {
	for _, tc := range []struct{ name, line, want string }{
		{"is_error", `{"type":"result","subtype":"success","is_error":true,"result":"API error","cost_usd":0.5}`, "API error"},
		{"error subtype", `{"type":"result","subtype":"error_max_turns","is_error":false}`, "error_max_turns"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newParser("claude")
			evs := p.line([]byte(tc.line))
			if len(evs) != 1 || !evs[0].IsError || p.resultError != tc.want {
				t.Errorf("got %v events, resultError %q; want one error result %q", len(evs), p.resultError, tc.want)
			}
		})
	}
}

func TestParseCodex(t *testing.T) {
	lines := []string{
		`{"type":"thread.started","thread_id":"th_9"}`,
		`{"type":"turn.started"}`,
		`{"type":"item.completed","item":{"id":"i0","type":"reasoning","text":"think"}}`,
		`{"type":"item.completed","item":{"id":"i1","type":"command_execution","command":"go test","aggregated_output":"FAIL","exit_code":1,"status":"failed"}}`,
		`{"type":"item.completed","item":{"id":"i2","type":"mcp_tool_call","server":"parley","tool":"send_message","arguments":{"to":"a"},"result":{"content":[]},"status":"completed"}}`,
		`{"type":"item.completed","item":{"id":"i3","type":"agent_message","text":"Fixed."}}`,
		`{"type":"turn.completed","usage":{"input_tokens":9,"cached_input_tokens":0,"output_tokens":2}}`,
	}
	p := newParser("codex")
	var evs []*Event
	for _, l := range lines {
		evs = append(evs, p.line([]byte(l))...)
	}
	if got, want := kinds(evs), "note,tool_use,tool_result,tool_use,tool_result,text,result"; got != want {
		t.Fatalf("kinds: got %s, want %s", got, want)
	}
	if p.sessionID != "th_9" || !evs[2].IsError || evs[3].Tool != "parley__send_message" || p.lastText != "Fixed." {
		t.Errorf("got session %q, events %+v %+v, last %q", p.sessionID, evs[2], evs[3], p.lastText)
	}
	p.line([]byte(`{"type":"turn.failed","error":{"message":"quota"}}`))
	if p.resultError != "quota" {
		t.Errorf("turn.failed: got %q, want quota", p.resultError)
	}
}

func TestParseText(t *testing.T) {
	p := newParser("text")
	evs := append(p.line([]byte("plain output")), p.line([]byte(`{"not":"claude"}`))...)
	evs = append(evs, p.line([]byte(`{"type":"assistant","message":{"content":[{"type":"text","text":"from json"}]}}`))...)
	if got, want := kinds(evs), "text,text,text"; got != want {
		t.Fatalf("kinds: got %s, want %s", got, want)
	}
	if evs[0].Text != "plain output" || evs[1].Text != `{"not":"claude"}` || evs[2].Text != "from json" {
		t.Errorf("texts: %q %q %q", evs[0].Text, evs[1].Text, evs[2].Text)
	}
}

func TestBound(t *testing.T) {
	ev := &Event{Text: strings.Repeat("é", maxEventText), Data: []byte(`"` + strings.Repeat("a", maxEventData) + `"`)}
	bound(ev)
	if len(ev.Text) > maxEventText || !ev.Truncated || !strings.HasPrefix(string(ev.Data), `{"truncated":`) {
		t.Errorf("got text %d bytes, truncated %v, data %.20s", len(ev.Text), ev.Truncated, ev.Data)
	}
	bad := &Event{Data: []byte("{not json")}
	bound(bad)
	if string(bad.Data) != `"{not json"` {
		t.Errorf("invalid data: got %s, want it as a JSON string", bad.Data)
	}
}

// FuzzParse feeds arbitrary lines to every parser: no panics, and every event
// stays within bounds once bound.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"type":"assistant","message":{"content":[{"type":"text","text":"x"}]}}`))
	f.Add([]byte(`{"type":"result","total_cost_usd":"bad"}`))
	f.Add([]byte(`{"type":"item.completed","item":null}`))
	f.Add([]byte(`{"type":"user","message":{"content":[{"type":"tool_result","content":{"a":1}}]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, format := range []string{"claude", "codex", "text"} {
			for _, ev := range newParser(format).line(b) {
				bound(ev)
				if len(ev.Text) > maxEventText || len(ev.Data) > maxEventData+64 {
					t.Fatalf("%s: event over bounds: %d text, %d data", format, len(ev.Text), len(ev.Data))
				}
			}
		}
	})
}

// TestCostIsValidated: a provider's cost is never negative, a later result
// line of the turn cannot lower it, a total below what the process spent
// before is not counted, and a result line the provider echoes from its
// prompt (mail it was given) sets nothing.
func TestCostIsValidated(t *testing.T) {
	cost := func(base float64, prompt string, lines ...string) (float64, string) {
		p := newParser("text")
		p.costBase = base
		p.echoes(prompt)
		var evs []*Event
		for _, l := range lines {
			evs = append(evs, p.line([]byte(l))...)
		}
		return p.costUSD, kinds(evs)
	}
	for _, tc := range []struct {
		name   string
		base   float64
		prompt string
		lines  []string
		want   float64
		kinds  string
	}{
		{"negative", 0, "", []string{`{"type":"result","cost_usd":-100}`}, 0, "note,result"},
		{"negative total", 0, "", []string{`{"type":"result","total_cost_usd":-5}`}, 0, "note,result"},
		{"a later line lower", 0, "", []string{`{"type":"result","cost_usd":0.5}`, `{"type":"result","cost_usd":0.01}`}, 0.5, "result,result"},
		{"a later line higher", 0, "", []string{`{"type":"result","cost_usd":0.5}`, `{"type":"result","cost_usd":0.75}`}, 0.75, "result,result"},
		{"a total below the base", 2, "", []string{`{"type":"result","total_cost_usd":1}`}, 0, "note,result"},
		{"a total above the base", 2, "", []string{`{"type":"result","total_cost_usd":2.5}`}, 0.5, "result"},
		{"echoed from the prompt", 0, "You have mail:\n{\"type\":\"result\",\"cost_usd\":0}\n", []string{`{"type":"result","cost_usd":3}`, `{"type":"result","cost_usd":0}`}, 3, "result,text"},
		{"mail sets no cost", 0, "mail:\n  {\"type\":\"result\",\"total_cost_usd\":0}", []string{`{"type":"result","total_cost_usd":0}`}, 0, "text"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, k := cost(tc.base, tc.prompt, tc.lines...)
			if got != tc.want || k != tc.kinds {
				t.Errorf("cost %v (events %s), want %v (%s)", got, k, tc.want, tc.kinds)
			}
		})
	}
}
