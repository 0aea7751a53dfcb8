package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/parley-dev/parley/internal/hub"
)

func toolsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "List and call the gateway's tools (those of the upstream MCP servers)",
		Long: `The gateway re-exposes each enabled upstream's tools as {server}__{tool}
(see parley upstream). These commands list and call them through the daemon,
the way the MCP Inspector's CLI does.`,
	}
	cmd.AddCommand(toolsListCmd(g), toolsCallCmd(g))
	return cmd
}

func toolsListCmd(g *globals) *cobra.Command {
	var server string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the gateway's tools; --json prints them as MCP tools/list does",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := g.client(cmd.Context(), false)
			if err != nil {
				return err
			}
			res, err := c.Tools(cmd.Context(), server)
			if err != nil {
				return err
			}
			return g.out(res, func(w io.Writer) {
				if len(res.Tools) == 0 {
					fmt.Fprintln(w, "no tools: see `parley upstream list` for the upstreams and their state")
					return
				}
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tDESCRIPTION")
				for _, raw := range res.Tools {
					var t mcp.Tool
					json.Unmarshal(raw, &t)
					fmt.Fprintf(tw, "%s\t%s\n", t.Name, toolSummary(t.Description, 80))
				}
				tw.Flush()
			})
		},
	}
	cmd.Flags().StringVar(&server, "server", "", "only this upstream's tools")
	addJSON(cmd, g)
	return cmd
}

func toolSummary(s string, max int) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > max {
		s = string(r[:max-1]) + "…"
	}
	return s
}

func toolsCallCmd(g *globals) *cobra.Command {
	var (
		kv      []string
		rawJSON string
	)
	cmd := &cobra.Command{
		Use:   "call SERVER__TOOL [--arg KEY=VALUE]... [--json '{...}']",
		Short: "Call a gateway tool and print its result as JSON",
		Example: `  parley tools call everything__echo --arg message=hello
  parley tools call everything__get-sum --arg a=1 --arg b=2
  parley tools call fs__read_file --json '{"path": "/srv/docs/README.md"}'`,
		Long: `Calls the tool and prints the upstream's CallToolResult as JSON, unchanged
(content, structuredContent, isError), like the MCP Inspector's CLI.

--json gives all the arguments as one JSON object; --arg adds or overrides one.
An --arg value is a string when the tool's schema says so, otherwise it is
read as JSON when it parses (7, true, [1,2], {"a":1}) and as a string when not.

Exit status: 0 for a result, 1 when the result is a tool error (isError) or the
call failed (unknown tool, upstream down, timeout), 2 for bad arguments.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			server, _, ok := strings.Cut(name, "__")
			if !ok {
				return hub.Errorf("", hub.Invalid, "tool name %q is not SERVER__TOOL: see `parley tools list`", name)
			}
			argv := map[string]any{}
			if rawJSON != "" {
				dec := json.NewDecoder(strings.NewReader(rawJSON))
				dec.UseNumber()
				if err := dec.Decode(&argv); err != nil {
					return hub.Errorf("", hub.Invalid, "--json: want a JSON object of arguments: %v", err)
				}
			}
			c, _, err := g.client(cmd.Context(), false)
			if err != nil {
				return err
			}
			if len(kv) > 0 {
				var props map[string]any
				if tl, err := c.Tools(cmd.Context(), server); err == nil {
					props = inputProperties(tl.Tools, name)
				}
				for _, s := range kv {
					k, v, ok := strings.Cut(s, "=")
					if !ok || k == "" {
						return hub.Errorf("", hub.Invalid, "--arg %q: want KEY=VALUE", s)
					}
					argv[k] = argValue(props[k], v)
				}
			}
			b, err := json.Marshal(argv)
			if err != nil {
				return err
			}
			res, err := c.CallTool(cmd.Context(), name, b)
			if err != nil {
				return err
			}
			var out bytes.Buffer
			if err := json.Indent(&out, res, "", "  "); err != nil {
				return fmt.Errorf("decode result: %w", err)
			}
			fmt.Fprintln(g.stdout, out.String())
			var r struct {
				IsError bool `json:"isError"`
			}
			if json.Unmarshal(res, &r) == nil && r.IsError {
				return &exitError{code: 1}
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&kv, "arg", nil, "an argument, as KEY=VALUE (repeatable)")
	cmd.Flags().StringVar(&rawJSON, "json", "", "all the arguments, as a JSON object")
	return cmd
}

// inputProperties returns the input schema's properties of the tool named
// name among tools (raw MCP tool objects).
func inputProperties(tools []json.RawMessage, name string) map[string]any {
	for _, raw := range tools {
		var t struct {
			Name        string `json:"name"`
			InputSchema struct {
				Properties map[string]any `json:"properties"`
			} `json:"inputSchema"`
		}
		if json.Unmarshal(raw, &t) == nil && t.Name == name {
			return t.InputSchema.Properties
		}
	}
	return nil
}

// argValue reads an --arg value: a string when the property's schema says
// string, else JSON when it parses, else a string.
func argValue(schema any, v string) any {
	if s, ok := schema.(map[string]any); ok {
		switch t := s["type"].(type) {
		case string:
			if t == "string" {
				return v
			}
		case []any:
			if len(t) == 1 && t[0] == "string" {
				return v
			}
		}
	}
	dec := json.NewDecoder(strings.NewReader(v))
	dec.UseNumber()
	var x any
	if dec.Decode(&x) == nil && !dec.More() {
		return x
	}
	return v
}
