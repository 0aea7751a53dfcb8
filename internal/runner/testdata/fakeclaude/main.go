// Command fakeclaude stands in for Claude Code in the runner's tests. It takes
// Claude Code's headless flags (-p, --resume, --permission-mode,
// --mcp-config...), prints Claude Code's stream-json output, and does what
// its prompt asks, through the MCP servers of its --mcp-config exactly as
// Claude Code would spawn them:
//
//	need permission     call parley-self's request_permission for a Bash tool
//	set branch NAME     call parley-self's set_branch
//	set title TITLE     call parley-self's set_title
//	send to NAME: TEXT  call parley's send_message
//	sleep N             sleep N seconds (SIGINT ends it, unless "ignore interrupt")
//	please fail         end with an error result and exit status 1
//
// Without --mcp-config it uses $PARLEY_MCP_CONFIG; without a prompt argument
// it reads the prompt from stdin. With $FAKECLAUDE_LOG set it appends its
// argv, cwd, agent, mode, the session the turn continues (resume) and its pid
// to that file, one JSON line per turn.
//
// With --input-format stream-json it speaks Claude Code's stream-json input,
// as the real CLI (2.1.197) does: it stays up across turns, reading
// {"type":"user","message":{"role":"user","content":PROMPT}} lines; each turn
// starts with a system init line and ends with a result whose total_cost_usd
// counts from the process's start. A prompt that comes during a turn is taken
// in at the turn's next tool result (echoed with "isReplay":true under
// --replay-user-messages), and the turn ends with its answer; one that comes
// after the last is a turn of its own. A control_request interrupt is
// answered with a control_response at once and ends the turn in progress with
// "[Request interrupted by user]" and an error_during_execution result. An
// error result ends a turn, not the process, which exits when stdin closes.
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var (
	outMu sync.Mutex
	out   = json.NewEncoder(os.Stdout)
)

// emit writes one stream-json line; the stdin reader answers control
// requests while a turn writes.
func emit(v any) {
	outMu.Lock()
	defer outMu.Unlock()
	out.Encode(v)
}

// fake is one process: its flags, its session and what it has spent.
type fake struct {
	argv      []string
	mode      string
	mcpConfig string
	session   string
	resume    string // the session of --resume
	stream    bool   // --input-format stream-json
	replay    bool   // --replay-user-messages
	cost      float64
	turns     int

	prompts    chan string   // stream-json prompts, in order; closed at EOF
	interrupts chan struct{} // control_request interrupts
}

const turnCost = 0.0125

func main() {
	f := &fake{argv: os.Args}
	var prompt, inputFormat string
	havePrompt := false
	args := os.Args[1:]
	for i := 0; i < len(args); i++ {
		next := func() string {
			if i+1 < len(args) {
				i++
				return args[i]
			}
			return ""
		}
		switch args[i] {
		case "-p", "--print":
			if i+1 < len(args) && !strings.HasPrefix(args[i+1], "--") {
				prompt, havePrompt = next(), true
			}
		case "--resume":
			f.resume = next()
		case "--permission-mode":
			f.mode = next()
		case "--mcp-config":
			f.mcpConfig = next()
		case "--input-format":
			inputFormat = next()
		case "--replay-user-messages":
			f.replay = true
		case "--output-format", "--permission-prompt-tool", "--allowedTools":
			next()
		}
	}
	if f.mcpConfig == "" {
		f.mcpConfig = os.Getenv("PARLEY_MCP_CONFIG")
	}
	f.session = f.resume
	if f.session == "" {
		var b [8]byte
		rand.Read(b[:])
		f.session = "sess-" + hex.EncodeToString(b[:])
	}
	if inputFormat != "stream-json" {
		if !havePrompt {
			b, _ := io.ReadAll(os.Stdin)
			prompt = string(b)
		}
		if !f.turn(prompt) {
			os.Exit(1)
		}
		return
	}
	f.stream = true
	f.prompts, f.interrupts = make(chan string, 64), make(chan struct{}, 1)
	go f.readStdin()
	for p := range f.prompts {
		// An interrupt that came after the last turn ended is for nobody.
		select {
		case <-f.interrupts:
		default:
		}
		f.turn(p)
	}
}

// readStdin reads stream-json input: prompts go to f.prompts; an interrupt
// is answered at once and goes to f.interrupts.
func (f *fake) readStdin() {
	defer close(f.prompts)
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(nil, 8<<20)
	for sc.Scan() {
		var in struct {
			Type      string `json:"type"`
			RequestID string `json:"request_id"`
			Request   struct {
				Subtype string `json:"subtype"`
			} `json:"request"`
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		}
		if err := json.Unmarshal(sc.Bytes(), &in); err != nil {
			fmt.Fprintf(os.Stderr, "fakeclaude: bad stream-json input %q: %v\n", sc.Bytes(), err)
			os.Exit(1)
		}
		switch {
		case in.Type == "user":
			f.prompts <- in.Message.Content
		case in.Type == "control_request" && in.Request.Subtype == "interrupt":
			emit(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "success", "request_id": in.RequestID}})
			select {
			case f.interrupts <- struct{}{}:
			default:
			}
		}
	}
}

// logTurn appends the turn to $FAKECLAUDE_LOG.
func (f *fake) logTurn() {
	file := os.Getenv("FAKECLAUDE_LOG")
	if file == "" {
		return
	}
	resume := f.resume
	if f.turns > 0 {
		resume = f.session // a later turn of the process continues its session
	}
	cwd, _ := os.Getwd()
	b, _ := json.Marshal(map[string]any{"argv": f.argv, "cwd": cwd, "agent": os.Getenv("PARLEY_AGENT"), "mode": f.mode, "resume": resume, "pid": os.Getpid()})
	fh, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err == nil {
		fh.Write(append(b, '\n'))
		fh.Close()
	}
}

// result ends a turn: its cost, and a success or an error.
func (f *fake) result(subtype, text string) {
	f.cost += turnCost
	r := map[string]any{"type": "result", "subtype": subtype, "is_error": subtype != "success", "session_id": f.session,
		"total_cost_usd": f.cost, "num_turns": 1, "duration_ms": 5, "usage": map[string]any{"input_tokens": 10, "output_tokens": 5}}
	if text != "" {
		r["result"] = text
	}
	emit(r)
}

// turn runs one turn, starting with prompt and taking in the prompts that
// come during it; it reports whether it succeeded.
func (f *fake) turn(prompt string) bool {
	f.logTurn()
	first := f.turns == 0
	f.turns++
	emit(map[string]any{"type": "system", "subtype": "init", "session_id": f.session, "model": "fake-model", "permissionMode": f.mode})
	for {
		if f.replay {
			emit(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": prompt},
				"session_id": f.session, "parent_tool_use_id": nil, "isReplay": true})
		}
		if end, ok := f.work(prompt, first); end {
			return ok
		}
		first = false
		// The next tool result is where a prompt streamed in meanwhile
		// joins the turn.
		select {
		case p, ok := <-f.prompts:
			if ok {
				prompt = p
				continue
			}
		default:
		}
		line, _, _ := strings.Cut(strings.TrimSpace(prompt), "\n")
		say(f.session, "done: "+line)
		f.result("success", "done: "+line)
		return true
	}
}

// work does what prompt asks; end reports that the turn ended (ok: well).
func (f *fake) work(prompt string, first bool) (end, ok bool) {
	session := f.session
	line, _, _ := strings.Cut(strings.TrimSpace(prompt), "\n")
	say(session, "working on: "+line)
	if first && f.resume != "" {
		say(session, "resumed session "+f.resume)
	}
	toolUse(session, "toolu_1", "Bash", map[string]any{"command": "echo hi"})
	toolResult(session, "toolu_1", "hi", false)

	ctx := context.Background()
	if strings.Contains(prompt, "need permission") {
		input := map[string]any{"command": "rm -rf build"}
		toolUse(session, "toolu_2", "Bash", input)
		text, err := callTool(ctx, f.mcpConfig, "parley-self", "request_permission", map[string]any{"tool_name": "Bash", "input": input, "tool_use_id": "toolu_2"})
		if err != nil {
			return true, f.fatal("request_permission: " + err.Error())
		}
		var ans struct {
			Behavior     string         `json:"behavior"`
			UpdatedInput map[string]any `json:"updatedInput"`
			Message      string         `json:"message"`
		}
		if err := json.Unmarshal([]byte(text), &ans); err != nil {
			return true, f.fatal("request_permission answered " + text)
		}
		if ans.Behavior == "allow" {
			b, _ := json.Marshal(ans.UpdatedInput)
			toolResult(session, "toolu_2", "ran "+string(b), false)
			say(session, "permission allow: "+string(b))
		} else {
			toolResult(session, "toolu_2", "denied: "+ans.Message, true)
			say(session, "permission deny: "+ans.Message)
		}
	}
	if m := regexp.MustCompile(`set branch (\S+)`).FindStringSubmatch(prompt); m != nil {
		text, err := callTool(ctx, f.mcpConfig, "parley-self", "set_branch", map[string]any{"branch": m[1]})
		if err != nil {
			say(session, "set_branch failed: "+err.Error())
		} else {
			say(session, "set_branch: "+text)
		}
	}
	if m := regexp.MustCompile(`set title (.+)`).FindStringSubmatch(prompt); m != nil {
		if _, err := callTool(ctx, f.mcpConfig, "parley-self", "set_title", map[string]any{"title": m[1]}); err != nil {
			say(session, "set_title failed: "+err.Error())
		}
	}
	if m := regexp.MustCompile(`send to (\S+): (.+)`).FindStringSubmatch(prompt); m != nil {
		text, err := callTool(ctx, f.mcpConfig, "parley", "send_message", map[string]any{"to": m[1], "content": m[2]})
		if err != nil {
			return true, f.fatal("send_message: " + err.Error())
		}
		say(session, "sent: "+text)
	}
	if m := regexp.MustCompile(`sleep (\d+)`).FindStringSubmatch(prompt); m != nil {
		n, _ := strconv.Atoi(m[1])
		stubborn := strings.Contains(prompt, "ignore interrupt")
		sig := make(chan os.Signal, 1)
		if stubborn {
			signal.Ignore(syscall.SIGINT)
		} else {
			signal.Notify(sig, syscall.SIGINT)
			defer signal.Stop(sig)
		}
		interrupts := f.interrupts
		if stubborn {
			interrupts = nil
		}
		say(session, "sleeping "+m[1]+"s")
		select {
		case <-time.After(time.Duration(n) * time.Second):
		case <-sig:
			emit(map[string]any{"type": "result", "subtype": "error_during_execution", "is_error": true, "result": "interrupted", "session_id": session})
			os.Exit(130)
		case <-interrupts:
			emit(map[string]any{"type": "user", "session_id": session, "message": map[string]any{"role": "user",
				"content": []any{map[string]any{"type": "text", "text": "[Request interrupted by user]"}}}})
			f.result("error_during_execution", "")
			return true, false
		}
	}
	if strings.Contains(prompt, "please fail") {
		f.result("error_during_execution", "failed on purpose")
		return true, false
	}
	return false, true
}

// fatal ends the turn with an error result; one process per turn exits.
func (f *fake) fatal(msg string) bool {
	f.result("error_during_execution", msg)
	if !f.stream {
		os.Exit(2)
	}
	return false
}

func say(session, text string) {
	emit(map[string]any{"type": "assistant", "session_id": session, "message": map[string]any{"role": "assistant",
		"content": []any{map[string]any{"type": "text", "text": text}}}})
}

func toolUse(session, id, name string, input any) {
	emit(map[string]any{"type": "assistant", "session_id": session, "message": map[string]any{"role": "assistant",
		"content": []any{map[string]any{"type": "tool_use", "id": id, "name": name, "input": input}}}})
}

func toolResult(session, id, content string, isErr bool) {
	emit(map[string]any{"type": "user", "session_id": session, "message": map[string]any{"role": "user",
		"content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": content, "is_error": isErr}}}})
}

// callTool calls tool on the MCP server key of the config file, spawning it
// as Claude Code does, and returns the first text content.
func callTool(ctx context.Context, configPath, key, tool string, args map[string]any) (string, error) {
	b, err := os.ReadFile(configPath)
	if err != nil {
		return "", fmt.Errorf("read MCP config: %w", err)
	}
	var conf struct {
		MCPServers map[string]struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(b, &conf); err != nil {
		return "", err
	}
	srv, ok := conf.MCPServers[key]
	if !ok {
		return "", fmt.Errorf("no MCP server %q in %s", key, configPath)
	}
	cmd := exec.Command(srv.Command, srv.Args...)
	cmd.Env = os.Environ()
	for k, v := range srv.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "fakeclaude", Version: "1"}, nil)
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	s, err := client.Connect(cctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return "", fmt.Errorf("connect to %s: %w", key, err)
	}
	defer s.Close()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return "", err
	}
	var text string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text = tc.Text
			break
		}
	}
	if res.IsError {
		return "", fmt.Errorf("%s", text)
	}
	return text, nil
}
