package profile

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
	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/ops"
	"github.com/parley-dev/parley/internal/workaround"
)

// Tool is one tool of a profile: what tools/list shows, and its handler.
type Tool struct {
	Tool    *mcp.Tool
	Handler mcp.ToolHandler
	// add, if set, registers the tool instead (mcp.AddTool, with the
	// "typed" workaround off).
	add func(*mcp.Server)
}

// toolOption adjusts a typed tool.
type toolOption func(*toolConfig)

type toolConfig struct {
	editIn   func(*jsonschema.Schema)
	noOutput bool
	textOnly bool
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

// textOnly answers with the text content alone, no structured content and
// no output schema, for a client that reads nothing else: Claude Code's
// --permission-prompt-tool takes a result with structured content as one
// JSON string instead of its content blocks, and refuses it ("Expected a
// single text block"), so the tool it asked about never runs.
func textOnly() toolOption { return func(c *toolConfig) { c.noOutput, c.textOnly = true, true } }

// texter is a result with its own text rendering (else the text is its JSON).
type texter interface{ Text() string }

// typed is the one way to make a tool of an operation (an entry of ops'
// table, or a seed profile's rendition of one: ops.Define): the input schema
// is inferred from its input type's json and jsonschema tags, the arguments
// are validated against it and decoded, the operation runs for the session's
// caller if the caller may call it, and its result becomes structured
// content (checked against the output type's schema in tests) and text. An
// error becomes a tool result with isError, which a model reads; a
// *jsonrpc.Error stays a protocol error.
//
// It does what mcp.AddTool does with encoding/json: the SDK's decoder
// allocates a 32 KiB buffer for every value it decodes, and a typed call
// decodes several. Through mcp.AddTool a send_message call allocates about
// 100 KB more (docs/performance.md, "The go-sdk workarounds").
func typed(h *Host, name, desc string, op ops.Op, opts ...toolOption) Tool {
	var cfg toolConfig
	for _, o := range opts {
		o(&cfg)
	}
	in := schemaFor(op.In)
	dropNullUnions(in)
	portableSchema(in)
	if cfg.editIn != nil {
		cfg.editIn(in)
	}
	inRes, err := in.Resolve(nil)
	if err != nil {
		panic(fmt.Sprintf("tool %s: input schema: %v", name, err))
	}
	quick := quickFor(in)
	t := &mcp.Tool{Name: name, Description: desc, InputSchema: in, Annotations: annotations(op)}
	var outRes *jsonschema.Resolved
	if !cfg.noOutput {
		out := schemaFor(op.Out)
		portableSchema(out)
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
	agentMay := op.Access == ops.Agent
	if workaround.Off("typed") {
		return sdkTyped(h, t, cfg, agentMay, op)
	}
	handler := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if !agentMay && req.Extra != nil && req.Extra.Header.Get(api.HeaderAgentToken) != "" {
			return toolError(fmt.Errorf("tool %s is not open to an agent token; use the admin token", name)), nil
		}
		args := []byte(req.Params.Arguments)
		if len(args) == 0 || string(args) == "null" {
			args = []byte("{}")
		}
		if quick == nil || !quick.valid(args) {
			var generic any
			if err := json.Unmarshal(args, &generic); err != nil {
				return toolError(fmt.Errorf("validating \"arguments\": %v", err)), nil
			}
			if err := inRes.Validate(generic); err != nil {
				return toolError(fmt.Errorf("validating \"arguments\": %v", err)), nil
			}
		}
		v := op.NewInput()
		if err := json.Unmarshal(args, v); err != nil {
			return toolError(fmt.Errorf("validating \"arguments\": %v", err)), nil
		}
		c := h.Caller(ctx, req)
		defer h.Ops.ToolCall(c)() // in flight, for the agent's health
		out, err := op.Call(ctx, h.Ops, c, v)
		if err != nil {
			var rpcErr *jsonrpc.Error
			if errors.As(err, &rpcErr) && err == error(rpcErr) {
				return nil, rpcErr
			}
			h.Ops.Failed(ctx, name, err)
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
		if tx, ok := out.(texter); ok {
			text = tx.Text()
		}
		res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
		if string(b) != "null" && !cfg.textOnly {
			res.StructuredContent = json.RawMessage(b)
		}
		return res, nil
	}
	return Tool{Tool: t, Handler: handler}
}

// quickFor is the quick check of an input schema (quickargs.go), unless
// PARLEY_SDK_WORKAROUNDS turned it off.
func quickFor(in *jsonschema.Schema) *quickArgs {
	if workaround.Off("quickargs") {
		return nil
	}
	return newQuickArgs(in)
}

// sdkTyped is typed through mcp.AddTool: its decoder, validation and
// output, for measuring what typed saves. (The SDK decodes the arguments
// into a map, which is encoded again for the operation's input: one encode
// more than a typed mcp.AddTool would cost.)
func sdkTyped(h *Host, t *mcp.Tool, cfg toolConfig, agentMay bool, op ops.Op) Tool {
	if cfg.noOutput {
		t.OutputSchema = nil
	}
	add := func(srv *mcp.Server) {
		mcp.AddTool(srv, t, func(ctx context.Context, req *mcp.CallToolRequest, args map[string]any) (*mcp.CallToolResult, any, error) {
			if !agentMay && req.Extra != nil && req.Extra.Header.Get(api.HeaderAgentToken) != "" {
				return toolError(fmt.Errorf("tool %s is not open to an agent token; use the admin token", t.Name)), nil, nil
			}
			b, _ := json.Marshal(args)
			v := op.NewInput()
			if err := json.Unmarshal(b, v); err != nil {
				return nil, nil, err
			}
			c := h.Caller(ctx, req)
			defer h.Ops.ToolCall(c)()
			out, err := op.Call(ctx, h.Ops, c, v)
			if tx, ok := out.(texter); ok && err == nil {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: tx.Text()}}}, out, nil
			}
			return nil, out, err
		})
	}
	return Tool{Tool: t, add: add}
}

// annotations say what a tool's operation does to the state, as MCP's tool
// annotations do, so that a client may run what only reads without asking
// and warn before what destroys (the table's, never a tool's own word).
func annotations(op ops.Op) *mcp.ToolAnnotations {
	world := op.OpenWorld
	a := &mcp.ToolAnnotations{ReadOnlyHint: op.ReadOnly, IdempotentHint: op.Idempotent, OpenWorldHint: &world}
	if !op.ReadOnly {
		destroys := op.Destructive
		a.DestructiveHint = &destroys
	}
	return a
}

// raw makes a tool whose handler reads its own arguments and builds its own
// result: agentmail's, which answers bad arguments with JSON-RPC -32602
// (the typed adapter validates first and reports a tool error). Its
// annotations are those of the operation like, which it renders.
func raw(h *Host, t *mcp.Tool, like ops.Op, fn func(context.Context, *ops.Caller, *mcp.CallToolRequest) (*mcp.CallToolResult, error)) Tool {
	t.Annotations = annotations(like)
	return Tool{Tool: t, Handler: func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		c := h.Caller(ctx, req)
		defer h.Ops.ToolCall(c)()
		return fn(ctx, c, req)
	}}
}

// toolError is a tool result with isError, its kind in _meta.
func toolError(err error) *mcp.CallToolResult {
	var r mcp.CallToolResult
	r.SetError(err)
	r.Meta = mcp.Meta{api.MetaErrorKind: hub.KindOf(err).String()}
	return &r
}

// ---- schemas ----

var schemaOpts = &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[json.RawMessage](): {},
	reflect.TypeFor[time.Time]():       {Type: "string"},
}}

// schemaFor infers t's JSON schema, with json.RawMessage as "any JSON".
func schemaFor(t reflect.Type) *jsonschema.Schema {
	sch, err := jsonschema.ForType(t, schemaOpts)
	if err != nil {
		panic(fmt.Sprintf("schema for %v: %v", t, err))
	}
	return sch
}

// portableSchema rewrites what single-type schema dialects (Gemini's
// function declarations, the OpenAPI subset) reject, and MCP Inspector's
// --strict flags, keeping the contract: a ["null", T] type (a nil slice or
// pointer, which encodes as null) becomes anyOf [null, T], and a schema
// that constrains nothing (json.RawMessage: any JSON value, a bare true) an
// anyOf of every single type.
func portableSchema(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	for _, p := range s.Properties {
		portableSchema(p)
	}
	portableSchema(s.Items)
	portableSchema(s.AdditionalProperties)
	for _, a := range s.AnyOf {
		portableSchema(a)
	}
	switch {
	case len(s.Types) == 2 && s.Types[0] == "null":
		t := *s
		t.Type, t.Types, t.Description = s.Types[1], nil, ""
		*s = jsonschema.Schema{Description: s.Description, AnyOf: []*jsonschema.Schema{{Type: "null"}, &t}}
	case reflect.ValueOf(jsonschema.Schema{Types: s.Types, Type: s.Type, AnyOf: s.AnyOf, OneOf: s.OneOf, AllOf: s.AllOf,
		Ref: s.Ref, Enum: s.Enum, Const: s.Const, Not: s.Not}).IsZero() && s.Properties == nil && s.Items == nil:
		for _, t := range []string{"object", "array", "string", "number", "boolean", "null"} {
			s.AnyOf = append(s.AnyOf, &jsonschema.Schema{Type: t})
		}
	}
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
