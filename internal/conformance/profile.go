// Package conformance is the test-only MCP profile `conformance`: the fixture
// tools, prompts and resources that the official MCP conformance suite
// (@modelcontextprotocol/conformance) calls, so that the suite can prove
// Parley's /mcp transport on every scenario, sampling and elicitation
// included. Only the conformance daemon (internal/conformance/daemon, run by
// scripts/conformance) registers it; the shipped binary does not link it.
//
// The fixtures follow the suite's own everything-server and the go-sdk's
// conformance/everything-server (MIT licence, The Go MCP SDK Authors).
// Only internal/conformance/daemon imports this package.
package conformance

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Name is the profile's name: /mcp?profile=conformance.
const Name = "conformance"

// Options sets the server options the suite needs: completion and resource
// subscription handlers.
func Options(o *mcp.ServerOptions) {
	o.CompletionHandler = func(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
		return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}, nil
	}
	// The SDK tracks subscriptions itself; accepting them is all that is asked.
	o.SubscribeHandler = func(context.Context, *mcp.SubscribeRequest) error { return nil }
	o.UnsubscribeHandler = func(context.Context, *mcp.UnsubscribeRequest) error { return nil }
}

// Profile adds the fixtures to srv.
func Profile(srv *mcp.Server) {
	addTools(srv)
	addResources(srv)
	addPrompts(srv)
}

type none struct{}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func addTools(srv *mcp.Server) {
	tool := func(name, desc string, h mcp.ToolHandlerFor[none, any]) {
		mcp.AddTool(srv, &mcp.Tool{Name: name, Description: desc}, h)
	}
	tool("test_simple_text", "Returns simple text content", func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		return text("This is a simple text response for testing."), nil, nil
	})
	tool("test_image_content", "Returns image content", func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: imageData, MIMEType: "image/png"}}}, nil, nil
	})
	tool("test_audio_content", "Returns audio content", func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.AudioContent{Data: audioData, MIMEType: "audio/wav"}}}, nil, nil
	})
	tool("test_embedded_resource", "Returns an embedded resource", func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
			URI: "test://embedded-resource", MIMEType: "text/plain", Text: "This is an embedded resource content.",
		}}}}, nil, nil
	})
	tool("test_multiple_content_types", "Returns text, image and resource content", func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "Multiple content types test:"},
			&mcp.ImageContent{Data: imageData, MIMEType: "image/png"},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
				URI: "test://mixed-content-resource", MIMEType: "application/json", Text: `{"test":"data","value":123}`,
			}},
		}}, nil, nil
	})
	tool("test_tool_with_logging", "Emits log messages while it runs", func(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
		for i, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
			if i > 0 {
				time.Sleep(50 * time.Millisecond)
			}
			req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: msg})
		}
		return text("Tool with logging executed successfully"), nil, nil
	})
	tool("test_tool_with_progress", "Reports progress while it runs", func(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
		tok := req.Params.GetProgressToken()
		for i, p := range []float64{0, 50, 100} {
			if i > 0 {
				time.Sleep(50 * time.Millisecond)
			}
			if tok != nil {
				req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: p, Total: 100,
					Message: fmt.Sprintf("Completed step %.0f of 100", p)})
			}
		}
		return text(fmt.Sprint(tok)), nil, nil
	})
	tool("test_error_handling", "Always fails, as a tool error", func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		return nil, nil, errors.New("This tool intentionally returns an error for testing")
	})
	tool("test_reconnection", "Closes the SSE stream mid-call; the result arrives after the client reconnects (SEP-1699)", func(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
		if req.Extra != nil && req.Extra.CloseSSEStream != nil {
			req.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: 10 * time.Millisecond})
		}
		time.Sleep(100 * time.Millisecond)
		return text("Reconnection test completed successfully. If you received this, the client properly reconnected after stream closure."), nil, nil
	})

	type samplingIn struct {
		Prompt string `json:"prompt" jsonschema:"the prompt to send to the LLM"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "test_sampling", Description: "Asks the client's LLM for a completion"}, func(ctx context.Context, req *mcp.CallToolRequest, in samplingIn) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{
			Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: in.Prompt}}},
			MaxTokens: 100,
		})
		if err != nil {
			return nil, nil, fmt.Errorf("sampling failed: %w", err)
		}
		out := "(non-text response)"
		if tc, ok := res.Content.(*mcp.TextContent); ok {
			out = tc.Text
		}
		return text("LLM response: " + out), nil, nil
	})

	type elicitIn struct {
		Message string `json:"message" jsonschema:"the message to show the user"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "test_elicitation", Description: "Asks the user for input"}, func(ctx context.Context, req *mcp.CallToolRequest, in elicitIn) (*mcp.CallToolResult, any, error) {
		return elicit(ctx, req, in.Message, &jsonschema.Schema{
			Type: "object",
			Properties: map[string]*jsonschema.Schema{
				"username": {Type: "string", Description: "User's response"},
				"email":    {Type: "string", Description: "User's email address"},
			},
			Required: []string{"username", "email"},
		})
	})
	tool("test_elicitation_sep1034_defaults", "Elicitation with default values (SEP-1034)", func(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
		return elicit(ctx, req, "Please review and update the form fields with defaults", map[string]any{
			"type": "object",
			"properties": map[string]any{
				"name":     map[string]any{"type": "string", "description": "User name", "default": "John Doe"},
				"age":      map[string]any{"type": "integer", "description": "User age", "default": 30},
				"score":    map[string]any{"type": "number", "description": "User score", "default": 95.5},
				"status":   map[string]any{"type": "string", "description": "User status", "enum": []string{"active", "inactive", "pending"}, "default": "active"},
				"verified": map[string]any{"type": "boolean", "description": "Verification status", "default": true},
			},
		})
	})
	tool("test_elicitation_sep1330_enums", "Elicitation with enum schemas (SEP-1330)", func(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
		titled := []map[string]any{
			{"const": "value1", "title": "First Option"},
			{"const": "value2", "title": "Second Option"},
			{"const": "value3", "title": "Third Option"},
		}
		plain := []string{"option1", "option2", "option3"}
		return elicit(ctx, req, "Please select options from the enum fields", map[string]any{
			"type": "object",
			"properties": map[string]any{
				"untitledSingle": map[string]any{"type": "string", "description": "Select one option", "enum": plain},
				"titledSingle":   map[string]any{"type": "string", "description": "Select one option with titles", "oneOf": titled},
				"legacyEnum": map[string]any{"type": "string", "description": "Select one option (legacy)",
					"enum": []string{"opt1", "opt2", "opt3"}, "enumNames": []string{"Option One", "Option Two", "Option Three"}},
				"untitledMulti": map[string]any{"type": "array", "description": "Select multiple options", "minItems": 1, "maxItems": 3,
					"items": map[string]any{"type": "string", "enum": plain}},
				"titledMulti": map[string]any{"type": "array", "description": "Select multiple options with titles", "minItems": 1, "maxItems": 3,
					"items": map[string]any{"anyOf": titled}},
			},
		})
	})

	// SEP-1613: the 2020-12 keywords must survive tools/list verbatim.
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "json_schema_2020_12_tool",
		Description: "Tool with JSON Schema 2020-12 features (SEP-1613)",
		InputSchema: json.RawMessage(`{
			"$schema": "https://json-schema.org/draft/2020-12/schema",
			"type": "object",
			"$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
			"properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
			"additionalProperties": false
		}`),
	}, func(_ context.Context, _ *mcp.CallToolRequest, in json.RawMessage) (*mcp.CallToolResult, any, error) {
		return text(fmt.Sprintf("JSON Schema 2020-12 tool called with: %s", in)), nil, nil
	})
}

func elicit(ctx context.Context, req *mcp.CallToolRequest, msg string, schema any) (*mcp.CallToolResult, any, error) {
	res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: msg, RequestedSchema: schema})
	if err != nil {
		return nil, nil, fmt.Errorf("elicitation failed: %w", err)
	}
	content, _ := json.Marshal(res.Content)
	return text(fmt.Sprintf("User response: action=%s, content=%s", res.Action, content)), nil, nil
}

var templateID = regexp.MustCompile(`^test://template/([^/]+)/data$`)

func addResources(srv *mcp.Server) {
	textRes := func(uri, name, desc, body string) {
		srv.AddResource(&mcp.Resource{URI: uri, Name: name, Description: desc, MIMEType: "text/plain"},
			func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: body}}}, nil
			})
	}
	textRes("test://static-text", "Static Text Resource", "A static text resource for testing", "This is the content of the static text resource.")
	textRes("test://watched-resource", "Watched Resource", "A resource for subscription tests", "Watched resource content")
	srv.AddResource(&mcp.Resource{URI: "test://static-binary", Name: "Static Binary Resource", Description: "A static binary resource (image) for testing", MIMEType: "image/png"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "image/png", Blob: imageData}}}, nil
		})
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "test://template/{id}/data", Name: "Resource Template", Description: "A resource template with parameter substitution", MIMEType: "application/json"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			id := ""
			if m := templateID.FindStringSubmatch(req.Params.URI); m != nil {
				id = m[1]
			}
			b, _ := json.Marshal(map[string]any{"id": id, "templateTest": true, "data": "Data for ID: " + id})
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "application/json", Text: string(b)}}}, nil
		})
}

func addPrompts(srv *mcp.Server) {
	srv.AddPrompt(&mcp.Prompt{Name: "test_simple_prompt", Description: "A simple prompt without arguments"},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "This is a simple prompt for testing."}}}}, nil
		})
	srv.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_arguments", Description: "A prompt with required arguments", Arguments: []*mcp.PromptArgument{
		{Name: "arg1", Description: "First test argument", Required: true},
		{Name: "arg2", Description: "Second test argument", Required: true},
	}}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		a := req.Params.Arguments
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{
			Text: fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", a["arg1"], a["arg2"])}}}}, nil
	})
	srv.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_embedded_resource", Description: "A prompt that includes an embedded resource", Arguments: []*mcp.PromptArgument{
		{Name: "resourceUri", Description: "URI of the resource to embed", Required: true},
	}}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
			{Role: "user", Content: &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
				URI: req.Params.Arguments["resourceUri"], MIMEType: "text/plain", Text: "Embedded resource content for testing."}}},
			{Role: "user", Content: &mcp.TextContent{Text: "Please process the embedded resource above."}},
		}}, nil
	})
	srv.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_image", Description: "A prompt that includes image content"},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.ImageContent{Data: imageData, MIMEType: "image/png"}},
				{Role: "user", Content: &mcp.TextContent{Text: "Please analyze the image above."}},
			}}, nil
		})
}

// A 1x1 red PNG and a silent WAV, as in the suite's own fixtures.
var (
	imageData = mustBase64("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==")
	audioData = mustBase64("UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=")
)

func mustBase64(s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}
