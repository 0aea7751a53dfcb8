package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
)

func demoCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "Show two agents talking through Parley over MCP",
		Long: `Run a short conversation between two agents, each an MCP client connected
through its own ` + "`parley mcp serve`" + `, exactly as Claude Code or Codex would be:
a planner hands a task to @implementer, who is blocked in wait_for_message and
wakes at once, answers in the same thread, and the planner reads the answer.
It uses the workspace "parley-demo" of the daemon in $PARLEY_HOME (started if
needed).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), 60*time.Second)
			defer cancel()
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			connect := func(agent, role string) (*mcp.ClientSession, error) {
				c := exec.Command(exe, "mcp", "serve", "--workspace", "parley-demo", "--agent", agent, "--role", role)
				c.Stderr = g.stderr
				client := mcp.NewClient(&mcp.Implementation{Name: "parley-demo", Version: daemonVersion()}, nil)
				return client.Connect(ctx, &mcp.CommandTransport{Command: c}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			}
			say := func(format string, a ...any) { fmt.Fprintf(g.stdout, format+"\n", a...) }
			t0 := time.Now()
			planner, err := connect("planner-1", "planner")
			if err != nil {
				return fmt.Errorf("connect planner: %w", err)
			}
			defer planner.Close()
			impl, err := connect("impl-1", "implementer")
			if err != nil {
				return fmt.Errorf("connect implementer: %w", err)
			}
			defer impl.Close()
			say("two MCP clients connected through `parley mcp serve` in %s", time.Since(t0).Round(time.Millisecond))
			// Empty the implementer's inbox from earlier demos.
			if _, err := callJSON(ctx, impl, "check_messages", map[string]any{"limit": 1000}); err != nil {
				return err
			}

			type waitOut struct {
				Status  string `json:"status"`
				Message *struct {
					ID       string `json:"message_id"`
					From     string `json:"from"`
					Content  string `json:"content"`
					Priority string `json:"priority"`
				} `json:"message"`
			}
			woke := make(chan waitOut, 1)
			var wokeAt time.Time
			go func() {
				var w waitOut
				raw, err := callJSON(ctx, impl, "wait_for_message", map[string]any{"timeout": 30})
				wokeAt = time.Now()
				if err == nil {
					json.Unmarshal(raw, &w)
				}
				woke <- w
			}()
			say("impl-1 (implementer) is blocked in wait_for_message...")
			time.Sleep(200 * time.Millisecond)

			task := "Add a --json flag to `parley history`. Reply in this thread when done."
			sentAt := time.Now()
			raw, err := callJSON(ctx, planner, "send_message", map[string]any{"to": "@implementer", "content": task, "priority": "high"})
			if err != nil {
				return err
			}
			var sent struct {
				ID         string   `json:"message_id"`
				Recipients []string `json:"recipients"`
			}
			json.Unmarshal(raw, &sent)
			say("planner-1 -> @implementer [high]: %s", task)
			w := <-woke
			if w.Message == nil {
				return fmt.Errorf("the implementer did not receive the task (%s)", w.Status)
			}
			say("impl-1 woke %s after the send with message %s from %s", wokeAt.Sub(sentAt).Round(time.Microsecond), w.Message.ID, w.Message.From)

			reply := "Done: `parley history --json` prints one JSON document. Tests added."
			if _, err := callJSON(ctx, impl, "send_message", map[string]any{"to": w.Message.From, "content": reply, "reply_to": w.Message.ID}); err != nil {
				return err
			}
			say("impl-1 -> planner-1 (reply): %s", reply)
			raw, err = callJSON(ctx, planner, "check_messages", nil)
			if err != nil {
				return err
			}
			var inbox struct {
				Messages []struct {
					From     string `json:"from"`
					Content  string `json:"content"`
					ThreadID string `json:"thread_id"`
				} `json:"messages"`
			}
			json.Unmarshal(raw, &inbox)
			if len(inbox.Messages) == 0 {
				return fmt.Errorf("the planner did not get the reply")
			}
			say("planner-1 read %d message(s): %q from %s, thread %s", len(inbox.Messages), inbox.Messages[0].Content, inbox.Messages[0].From, inbox.Messages[0].ThreadID)
			// This binary as a shell runs it: "parley" only when that is it
			// on $PATH.
			see := shellQuote(parleyCommand()) + " history --workspace parley-demo"
			if h := os.Getenv("PARLEY_HOME"); h != "" {
				see = "PARLEY_HOME=" + shellQuote(h) + " " + see
			}
			say("demo finished in %s; see it with `%s`", time.Since(t0).Round(time.Millisecond), see)
			return nil
		},
	}
}

// callJSON calls a tool and returns its structured result, turning a tool
// error into an error.
func callJSON(ctx context.Context, s *mcp.ClientSession, name string, args map[string]any) (json.RawMessage, error) {
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if res.IsError {
		msg := ""
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				msg += tc.Text
			}
		}
		return nil, fmt.Errorf("%s: %s", name, msg)
	}
	return json.Marshal(res.StructuredContent)
}
