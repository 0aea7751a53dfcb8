// Package mcptest is the environment of the tests of internal/mcpserver and
// internal/profile: a real hub on a SQLite file, with a runner of managed
// agents and a permission inbox over the same file, and the operations
// served through both doors, MCP sessions (over in-memory transports) and
// the JSON API. A test fixture: the parley binary does not link it
// (e2e.TestLayering).
package mcptest

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/httpapi"
	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/mcpserver"
	"github.com/parley-dev/parley/internal/ops"
	"github.com/parley-dev/parley/internal/permission"
	"github.com/parley-dev/parley/internal/profile"
	"github.com/parley-dev/parley/internal/runner"
	"github.com/parley-dev/parley/internal/store/sqlite"
)

// Env is a real hub on a SQLite file, with a runner of managed agents and
// a permission inbox over the same file, and the operations served through
// both doors: MCP sessions over in-memory transports, and the JSON API.
type Env struct {
	T      *testing.T
	Hub    *hub.Hub
	Ops    *ops.Ops
	Runner *runner.Runner
	MCP    *mcpserver.Server
	API    *httptest.Server
}

// New returns an Env whose MCP endpoint also has the manager and self
// profiles; it ends with the test.
func New(t *testing.T) *Env {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "p.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	h := hub.New(db, nil)
	perms := permission.New(db, nil)
	// Managed agents run real processes: the command provider's shell
	// commands. A cancelled run gets a short grace before its SIGKILL.
	rn, err := runner.New(h, db, runner.Options{Home: t.TempDir(), Permissions: perms, CancelGrace: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := rn.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rn.Close() })
	o := ops.New(h, &ops.Options{ProgressEvery: 10 * time.Millisecond, Runner: rn, Permissions: perms})
	srv := mcpserver.New(o, nil)
	srv.Register("manager", profile.Manager)
	srv.Register("self", profile.Self)
	mux := http.NewServeMux()
	httpapi.Routes(mux, o, httpapi.Endpoints{MCP: srv})
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	return &Env{T: t, Hub: h, Ops: o, Runner: rn, MCP: srv, API: hs}
}

// Session opens an MCP session of caller over in-memory transports.
func (e *Env) Session(c ops.Caller, opts *mcp.ClientOptions) *mcp.ClientSession {
	e.T.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := e.MCP.Connect(ctx, st, c)
	if err != nil {
		e.T.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		e.T.Fatal(err)
	}
	e.T.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

// Call calls a tool and decodes its structured result into out; it returns
// the result, whose IsError the caller checks.
func Call(t *testing.T, s *mcp.ClientSession, name string, args any, out any) *mcp.CallToolResult {
	t.Helper()
	res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if out != nil && !res.IsError {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: decode %s: %v", name, b, err)
		}
	}
	return res
}

// Text is the text of a tool result's first content.
func Text(res *mcp.CallToolResult) string {
	if len(res.Content) == 0 {
		return ""
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}

// Do makes a JSON API request as agent of ws; it returns the status and body.
func (e *Env) Do(method, path, ws, agent string, body any) (int, []byte) {
	e.T.Helper()
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, _ := http.NewRequest(method, e.API.URL+api.Prefix+path, rd)
	req.Header.Set(api.HeaderWorkspace, ws)
	if agent != "" {
		req.Header.Set(api.HeaderAgent, agent)
	}
	resp, err := e.API.Client().Do(req)
	if err != nil {
		e.T.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	buf.ReadFrom(resp.Body)
	return resp.StatusCode, buf.Bytes()
}

// WaitFor waits for cond, polling, and fails the test after 10 s.
func WaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
