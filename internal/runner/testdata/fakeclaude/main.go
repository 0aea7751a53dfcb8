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
// argv, cwd and agent to that file, one JSON line per run.
package main

import (
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
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var out = json.NewEncoder(os.Stdout)

func emit(v any) { out.Encode(v) }

func main() {
	var prompt, resume, mode, mcpConfig string
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
			resume = next()
		case "--permission-mode":
			mode = next()
		case "--mcp-config":
			mcpConfig = next()
		case "--output-format", "--permission-prompt-tool":
			next()
		}
	}
	if !havePrompt {
		b, _ := io.ReadAll(os.Stdin)
		prompt = string(b)
	}
	if mcpConfig == "" {
		mcpConfig = os.Getenv("PARLEY_MCP_CONFIG")
	}
	if f := os.Getenv("FAKECLAUDE_LOG"); f != "" {
		cwd, _ := os.Getwd()
		b, _ := json.Marshal(map[string]any{"argv": os.Args, "cwd": cwd, "agent": os.Getenv("PARLEY_AGENT"), "mode": mode, "resume": resume, "pid": os.Getpid()})
		fh, err := os.OpenFile(f, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			fh.Write(append(b, '\n'))
			fh.Close()
		}
	}

	session := resume
	if session == "" {
		var b [8]byte
		rand.Read(b[:])
		session = "sess-" + hex.EncodeToString(b[:])
	}
	emit(map[string]any{"type": "system", "subtype": "init", "session_id": session, "model": "fake-model", "permissionMode": mode})
	first, _, _ := strings.Cut(strings.TrimSpace(prompt), "\n")
	say(session, "working on: "+first)
	if resume != "" {
		say(session, "resumed session "+resume)
	}
	toolUse(session, "toolu_1", "Bash", map[string]any{"command": "echo hi"})
	toolResult(session, "toolu_1", "hi", false)

	ctx := context.Background()
	if strings.Contains(prompt, "need permission") {
		input := map[string]any{"command": "rm -rf build"}
		toolUse(session, "toolu_2", "Bash", input)
		text, err := callTool(ctx, mcpConfig, "parley-self", "request_permission", map[string]any{"tool_name": "Bash", "input": input, "tool_use_id": "toolu_2"})
		if err != nil {
			fatal(session, "request_permission: "+err.Error())
		}
		var ans struct {
			Behavior     string         `json:"behavior"`
			UpdatedInput map[string]any `json:"updatedInput"`
			Message      string         `json:"message"`
		}
		if err := json.Unmarshal([]byte(text), &ans); err != nil {
			fatal(session, "request_permission answered "+text)
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
		text, err := callTool(ctx, mcpConfig, "parley-self", "set_branch", map[string]any{"branch": m[1]})
		if err != nil {
			say(session, "set_branch failed: "+err.Error())
		} else {
			say(session, "set_branch: "+text)
		}
	}
	if m := regexp.MustCompile(`set title (.+)`).FindStringSubmatch(prompt); m != nil {
		if _, err := callTool(ctx, mcpConfig, "parley-self", "set_title", map[string]any{"title": m[1]}); err != nil {
			say(session, "set_title failed: "+err.Error())
		}
	}
	if m := regexp.MustCompile(`send to (\S+): (.+)`).FindStringSubmatch(prompt); m != nil {
		text, err := callTool(ctx, mcpConfig, "parley", "send_message", map[string]any{"to": m[1], "content": m[2]})
		if err != nil {
			fatal(session, "send_message: "+err.Error())
		}
		say(session, "sent: "+text)
	}
	if m := regexp.MustCompile(`sleep (\d+)`).FindStringSubmatch(prompt); m != nil {
		n, _ := strconv.Atoi(m[1])
		sig := make(chan os.Signal, 1)
		if strings.Contains(prompt, "ignore interrupt") {
			signal.Ignore(syscall.SIGINT)
		} else {
			signal.Notify(sig, syscall.SIGINT)
		}
		say(session, "sleeping "+m[1]+"s")
		select {
		case <-time.After(time.Duration(n) * time.Second):
		case <-sig:
			emit(map[string]any{"type": "result", "subtype": "error_during_execution", "is_error": true, "result": "interrupted", "session_id": session})
			os.Exit(130)
		}
	}
	if strings.Contains(prompt, "please fail") {
		emit(map[string]any{"type": "result", "subtype": "error_during_execution", "is_error": true, "result": "failed on purpose", "session_id": session, "total_cost_usd": 0.001})
		os.Exit(1)
	}
	say(session, "done: "+first)
	emit(map[string]any{"type": "result", "subtype": "success", "is_error": false, "result": "done: " + first, "session_id": session,
		"total_cost_usd": 0.0125, "num_turns": 1, "duration_ms": 5, "usage": map[string]any{"input_tokens": 10, "output_tokens": 5}})
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

func fatal(session, msg string) {
	emit(map[string]any{"type": "result", "subtype": "error_during_execution", "is_error": true, "result": msg, "session_id": session})
	os.Exit(2)
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
