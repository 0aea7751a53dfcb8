package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/ops"
)

// Tool is one tool of a profile: what tools/list shows, and its handler.
type Tool struct {
	Tool    *mcp.Tool
	Handler mcp.ToolHandler
	// add, if set, registers the tool instead (mcp.AddTool, with the
	// "typed" workaround off).
	add func(*mcp.Server)
}

// Op is the shape of an operation: ops' functions, and the renamings the
// seed profiles put on them.
type Op[In, Out any] func(context.Context, *ops.Caller, In) (Out, error)

// toolOption adjusts a typed tool.
type toolOption func(*toolConfig)

type toolConfig struct {
	editIn   func(*jsonschema.Schema)
	noOutput bool
}

// hide leaves properties of the input type out of the tool's schema; the
// arguments then refuse them (a door may offer less than the operation).
func hide(props ...string) toolOption {
	return func(c *toolConfig) {
		prev := c.editIn
		c.editIn = func(s *jsonschema.Schema) {
			if prev != nil {
				prev(s)
			}
			for _, p := range props {
				delete(s.Properties, p)
			}
		}
	}
}

// editInput changes the inferred input schema.
func editInput(fn func(*jsonschema.Schema)) toolOption {
	return func(c *toolConfig) { c.editIn = fn }
}

// noOutputSchema declares no output schema, for a result a schema cannot
// describe: a nil result is then the text "null" without structured content.
func noOutputSchema() toolOption { return func(c *toolConfig) { c.noOutput = true } }

// texter is a result with its own text rendering (else the text is its JSON).
type texter interface{ Text() string }

// typed is the one way to make a tool of an operation: the input schema is
// inferred from In's json and jsonschema tags, the arguments are validated
// against it and decoded, fn runs for the session's caller, and its result
// becomes structured content (checked against Out's schema in tests) and text. An
// error becomes a tool result with isError, which a model reads; a
// *jsonrpc.Error stays a protocol error.
//
// It does what mcp.AddTool does with encoding/json: the SDK's decoder
// allocates a 32 KiB buffer for every value it decodes, and a typed call
// decodes several. Through mcp.AddTool a send_message call allocates about
// 100 KB more (docs/performance.md, "The go-sdk workarounds").
func typed[In, Out any](s *Server, name, desc string, fn Op[In, Out], opts ...toolOption) Tool {
	var cfg toolConfig
	for _, o := range opts {
		o(&cfg)
	}
	in := schemaFor[In]()
	dropNullUnions(in)
	if cfg.editIn != nil {
		cfg.editIn(in)
	}
	inRes, err := in.Resolve(nil)
	if err != nil {
		panic(fmt.Sprintf("tool %s: input schema: %v", name, err))
	}
	t := &mcp.Tool{Name: name, Description: desc, InputSchema: in}
	var outRes *jsonschema.Resolved
	if !cfg.noOutput {
		out := schemaFor[Out]()
		if outRes, err = out.Resolve(nil); err != nil {
			panic(fmt.Sprintf("tool %s: output schema: %v", name, err))
		}
		t.OutputSchema = out
		// The output schema is inferred from Out, and the output is Out
		// encoded: they agree by construction, so checking every result
		// only costs CPU on the path of every send. Tests, which call
		// every tool, still check each result against the schema.
		if !testing.Testing() {
			outRes = nil
		}
	}
	agentMay := ops.AgentMay(fn)
	if WorkaroundOff("typed") {
		return sdkTyped(s, t, cfg, agentMay, fn)
	}
	h := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if !agentMay && req.Extra != nil && req.Extra.Header.Get(api.HeaderAgentToken) != "" {
			return toolError(fmt.Errorf("tool %s is not open to an agent token; use the admin token", name)), nil
		}
		args := []byte(req.Params.Arguments)
		if len(args) == 0 || string(args) == "null" {
			args = []byte("{}")
		}
		var generic any
		if err := json.Unmarshal(args, &generic); err != nil {
			return toolError(fmt.Errorf("validating \"arguments\": %v", err)), nil
		}
		if err := inRes.Validate(generic); err != nil {
			return toolError(fmt.Errorf("validating \"arguments\": %v", err)), nil
		}
		var v In
		if err := json.Unmarshal(args, &v); err != nil {
			return toolError(fmt.Errorf("validating \"arguments\": %v", err)), nil
		}
		out, err := fn(ctx, s.callerOf(ctx, req), v)
		if err != nil {
			var rpcErr *jsonrpc.Error
			if errors.As(err, &rpcErr) && err == error(rpcErr) {
				return nil, rpcErr
			}
			return toolError(err), nil
		}
		b, err := json.Marshal(out)
		if err != nil {
			return nil, fmt.Errorf("marshal tool output: %w", err)
		}
		if outRes != nil {
			var check any
			if err := json.Unmarshal(b, &check); err != nil {
				return nil, fmt.Errorf("check tool output: %w", err)
			}
			if err := outRes.Validate(check); err != nil {
				return nil, fmt.Errorf("validating tool output: %w", err)
			}
		}
		text := string(b)
		if tx, ok := any(out).(texter); ok {
			text = tx.Text()
		}
		res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
		if string(b) != "null" {
			res.StructuredContent = json.RawMessage(b)
		}
		return res, nil
	}
	return Tool{Tool: t, Handler: h}
}

// sdkTyped is typed through mcp.AddTool: its decoder, validation and
// output, for measuring what typed saves.
func sdkTyped[In, Out any](s *Server, t *mcp.Tool, cfg toolConfig, agentMay bool, fn Op[In, Out]) Tool {
	if cfg.noOutput {
		t.OutputSchema = nil
	}
	add := func(srv *mcp.Server) {
		mcp.AddTool(srv, t, func(ctx context.Context, req *mcp.CallToolRequest, v In) (*mcp.CallToolResult, Out, error) {
			var zero Out
			if !agentMay && req.Extra != nil && req.Extra.Header.Get(api.HeaderAgentToken) != "" {
				return toolError(fmt.Errorf("tool %s is not open to an agent token; use the admin token", t.Name)), zero, nil
			}
			out, err := fn(ctx, s.callerOf(ctx, req), v)
			if tx, ok := any(out).(texter); ok && err == nil {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: tx.Text()}}}, out, nil
			}
			return nil, out, err
		})
	}
	return Tool{Tool: t, add: add}
}

// raw makes a tool whose handler reads its own arguments and builds its own
// result: agentmail's, which answers bad arguments with JSON-RPC -32602
// (the typed adapter validates first and reports a tool error).
func raw(s *Server, t *mcp.Tool, fn func(context.Context, *ops.Caller, *mcp.CallToolRequest) (*mcp.CallToolResult, error)) Tool {
	return Tool{Tool: t, Handler: func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return fn(ctx, s.callerOf(ctx, req), req)
	}}
}

// toolError is a tool result with isError.
func toolError(err error) *mcp.CallToolResult {
	var r mcp.CallToolResult
	r.SetError(err)
	return &r
}

// ---- schemas ----

var schemaOpts = &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[json.RawMessage](): {},
	reflect.TypeFor[time.Time]():       {Type: "string"},
}}

// schemaFor infers T's JSON schema, with json.RawMessage as "any JSON".
func schemaFor[T any]() *jsonschema.Schema {
	sch, err := jsonschema.For[T](schemaOpts)
	if err != nil {
		panic(fmt.Sprintf("schema for %v: %v", reflect.TypeFor[T](), err))
	}
	return sch
}

// dropNullUnions turns the ["null", T] types that optional pointer inputs
// infer into plain T: some clients (Gemini's among them) reject type unions in
// tool inputs, and an absent optional input means the same as null.
func dropNullUnions(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if len(s.Types) == 2 && s.Types[0] == "null" {
		s.Type, s.Types = s.Types[1], nil
	}
	for _, p := range s.Properties {
		dropNullUnions(p)
	}
	dropNullUnions(s.Items)
}
