// Package httpapi is the daemon's one HTTP route table: /mcp, the live event
// stream (events.go), and the JSON API, /api/v1, over the operations of
// package ops. Each API endpoint is a thin adapter: it finds the caller in
// the request's headers, decodes the operation's input from the body, the
// query and the path (by the fields' json names), runs the operation and
// writes its result, or its error with the status of its kind. The daemon
// imports it; it imports ops, hub and api.
package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/ops"
)

// MaxBody bounds a JSON API request body: a message at the size limit plus
// room for its envelope. Bigger bodies are refused before they are parsed.
const MaxBody = 4 << 20

// Endpoints are the routes that are no operation of ops; nil ones are not
// served.
type Endpoints struct {
	MCP    http.Handler // /mcp, every profile (mcpserver)
	Events *Events      // GET /api/v1/events
}

// Mux is where Routes adds the endpoints: an *http.ServeMux.
type Mux interface {
	Handle(pattern string, handler http.Handler)
}

// Routes adds every endpoint of the daemon to mux: e's and the operations'.
// docs/api.md lists them all (TestRoutesDocumented).
func Routes(mux Mux, o *ops.Ops, e Endpoints) {
	p := api.Prefix
	if e.MCP != nil {
		mux.Handle("/mcp", e.MCP)
	}
	if e.Events != nil {
		mux.Handle("GET "+p+"/events", e.Events)
	}
	Handle(mux, "GET "+p+"/health", o.Health)
	Handle(mux, "GET "+p+"/status", o.Status)
	Handle(mux, "POST "+p+"/agents", o.Join)
	Handle(mux, "GET "+p+"/agents", o.ListAgents)
	Handle(mux, "GET "+p+"/agents/{name}", o.GetAgent)
	// The path names the agent whose status changes: the caller itself.
	handle(mux, "PUT "+p+"/agents/{name}/status", ops.AgentMay(o.SetStatus), func(ctx context.Context, c *ops.Caller, in api.StatusRequest) (api.StatusResult, error) {
		name := pathValue(ctx, "name")
		if r, _ := ctx.Value(requestKey{}).(*http.Request); r != nil && r.Header.Get(api.HeaderAgentToken) != "" && name != c.Agent {
			return api.StatusResult{}, hub.Errorf("set status", hub.Forbidden, "this token speaks for agent %q only; it cannot set the status of %q", c.Agent, name)
		}
		c.Agent = name
		return o.SetStatus(ctx, c, in)
	})
	Handle(mux, "POST "+p+"/messages", o.Send)
	Handle(mux, "GET "+p+"/messages", o.History)
	Handle(mux, "GET "+p+"/messages/{id}", o.GetMessage)
	Handle(mux, "GET "+p+"/inbox", o.Peek)
	Handle(mux, "POST "+p+"/inbox/check", o.Check)
	Handle(mux, "POST "+p+"/inbox/wait", o.Wait)
	Handle(mux, "POST "+p+"/inbox/receipts", o.Receipt)
	Handle(mux, "POST "+p+"/inbox/reply", o.WaitForReply)
	Handle(mux, "GET "+p+"/messages/{message_id}/status", o.MessageStatus)
	Handle(mux, "POST "+p+"/acks", o.Ack)
	Handle(mux, "POST "+p+"/inbox/woken", o.NoteWake)
	Handle(mux, "POST "+p+"/inbox/seen", o.Seen)
	Handle(mux, "GET "+p+"/bounced", o.Bounced)
	Handle(mux, "POST "+p+"/doors", o.OpenDoor)
	Handle(mux, "GET "+p+"/doors", o.ListDoors)
	Handle(mux, "POST "+p+"/doors/{id}/close", o.CloseDoor)
	Handle(mux, "GET "+p+"/overdue", o.Overdue)
	Handle(mux, "POST "+p+"/broadcast", o.Broadcast)
	Handle(mux, "POST "+p+"/purge", o.Purge)
	Handle(mux, "GET "+p+"/groups", o.ListGroups)
	Handle(mux, "POST "+p+"/groups", o.CreateGroup)
	Handle(mux, "GET "+p+"/groups/{name}", o.GetGroup)
	Handle(mux, "DELETE "+p+"/groups/{name}", o.DeleteGroup)
	Handle(mux, "POST "+p+"/groups/{group}/members", o.AddMember)
	Handle(mux, "DELETE "+p+"/groups/{group}/members", o.RemoveMember)
	coordRoutes(mux, o)
	Handle(mux, "POST "+p+"/tokens", o.CreateToken)
	Handle(mux, "GET "+p+"/tokens", o.ListTokens)
	Handle(mux, "DELETE "+p+"/tokens/{id}", o.RevokeToken)
	Handle(mux, "GET "+p+"/upstreams", o.ListUpstreams)
	Handle(mux, "POST "+p+"/upstreams", o.AddUpstream)
	Handle(mux, "DELETE "+p+"/upstreams/{name}", o.RemoveUpstream)
	Handle(mux, "PUT "+p+"/upstreams/{name}/enabled", o.EnableUpstream)
	Handle(mux, "POST "+p+"/reload", o.Reload)
	Handle(mux, "GET "+p+"/tools", o.Tools)
	Handle(mux, "POST "+p+"/tools/call", o.CallTool)
	dashboardRoutes(mux, o)

	m := p + "/managed/agents"
	Handle(mux, "GET "+m, o.ListManaged)
	Handle(mux, "POST "+m, o.CreateAgent)
	Handle(mux, "GET "+m+"/{agent_id}", o.AgentDetail)
	Handle(mux, "POST "+m+"/{agent_id}/prompt", o.PromptAgent)
	Handle(mux, "POST "+m+"/{agent_id}/wait", o.WaitAgent)
	Handle(mux, "POST "+m+"/{agent_id}/cancel", o.CancelAgent)
	Handle(mux, "POST "+m+"/{agent_id}/kill", o.KillAgent)
	Handle(mux, "GET "+m+"/{agent_id}/activity", o.Activity)
	Handle(mux, "PUT "+m+"/{agent_id}/mode", o.SetMode)
	Handle(mux, "GET "+p+"/permissions", o.Permissions)
	Handle(mux, "POST "+p+"/permissions", o.AskPermission)
	// A request is answered by its id in any workspace: ids are unique, and
	// the people at the CLI and the dashboard watch every workspace.
	handle(mux, "POST "+p+"/permissions/{request_id}", ops.AgentMay(o.Respond), func(ctx context.Context, c *ops.Caller, in api.PermissionDecision) (api.SuccessResult, error) {
		c.Workspace = ""
		return o.Respond(ctx, c, in)
	})
}

// Handle adds the endpoint pattern (a ServeMux pattern with a method) that
// runs fn. fn's input is decoded from the JSON body, then the query, then the
// path's wildcards, each matched to the input's fields by their json names.
// An agent token may reach the endpoint when fn is an operation that ops
// opens to agent tokens (ops.AgentMay); see AgentMay.
func Handle[In, Out any](mux Mux, pattern string, fn func(context.Context, *ops.Caller, In) (Out, error)) {
	handle(mux, pattern, ops.AgentMay(fn), fn)
}

// agentRoutes records whether an agent token may reach each pattern that
// handle served.
var agentRoutes sync.Map // pattern -> bool

// AgentMay reports whether an agent token may reach the endpoint of pattern
// (as http.ServeMux.Handler names it): only one whose operation is open to
// agent tokens. Endpoints that are no operation are refused.
func AgentMay(pattern string) bool {
	ok, _ := agentRoutes.Load(pattern)
	return ok == true
}

// handle is Handle for an fn that wraps an operation, whose access the
// caller passes.
func handle[In, Out any](mux Mux, pattern string, agentMay bool, fn func(context.Context, *ops.Caller, In) (Out, error)) {
	agentRoutes.Store(pattern, agentMay)
	wild := wildcards(pattern)
	mux.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := CallerOf(r)
		var in In
		if err == nil {
			err = decodeInput(w, r, wild, &in)
		}
		if err != nil {
			WriteError(w, err)
			return
		}
		// The messages a read hands out are leased to this request's reader
		// (ops opens it, CallerOf says how) until its response is written;
		// they go back if it cannot be.
		ctx := context.WithValue(r.Context(), requestKey{}, r)
		out, err := fn(ctx, c, in)
		settle := context.WithoutCancel(r.Context())
		if err != nil {
			WriteError(w, err)
			c.Reader.Written(settle, "", err, nil)
			return
		}
		if c.Reader.HandedIn("") == nil {
			WriteJSON(w, http.StatusOK, out)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if c.ReadAs.Confirm == hub.ConfirmOnReceipt {
			w.Header().Set(api.HeaderReader, c.Reader.Key())
		}
		w.WriteHeader(http.StatusOK)
		werr := json.NewEncoder(w).Encode(out)
		if werr == nil {
			werr = http.NewResponseController(w).Flush()
		}
		// Written whole: it has them, or (receipts) will say so. Only a
		// failed write says otherwise: a client may hang up as soon as it
		// has read its answer.
		c.Reader.Written(settle, "", werr, nil)
	}))
}

// receiptLease is how long a reader that confirms by itself (api.HeaderReceipts)
// holds what it was handed: it confirms as soon as it handed it on, so a
// reader that died gives it back soon.
const receiptLease = time.Minute

type requestKey struct{}

// pathValue is a wildcard of the request an endpoint serves.
func pathValue(ctx context.Context, name string) string {
	r, _ := ctx.Value(requestKey{}).(*http.Request)
	if r == nil {
		return ""
	}
	return r.PathValue(name)
}

var wildcardRE = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*)(\.\.\.)?\}`)

func wildcards(pattern string) []string {
	var names []string
	for _, m := range wildcardRE.FindAllStringSubmatch(pattern, -1) {
		names = append(names, m[1])
	}
	return names
}

// CallerOf is the caller a JSON API request speaks for: the workspace and
// agent of its headers (or query). Each request is its own reader.
func CallerOf(r *http.Request) (*ops.Caller, error) {
	q := r.URL.Query()
	get := func(header, query string) string {
		if v := r.Header.Get(header); v != "" {
			return v
		}
		return q.Get(query)
	}
	c := &ops.Caller{Workspace: get(api.HeaderWorkspace, "workspace"), Agent: get(api.HeaderAgent, "agent"),
		Token: r.Header.Get(api.HeaderAgentToken)}
	c.Door = hub.DoorTCP
	if a, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr); a != nil && a.Network() == "unix" {
		c.Local, c.Door = true, hub.DoorCLI
	}
	if d := api.DoorOf(r.Context()); d != "" {
		c.Door = d // the dashboard, which forwards its person's requests
	}
	if c.Workspace == "" {
		c.Workspace = ops.DefaultWorkspace
	}
	if err := hub.ValidWorkspace(c.Workspace); err != nil {
		return nil, err
	}
	if c.Agent != "" {
		if err := hub.ValidSender(c.Agent); err != nil {
			return nil, hub.Errorf("", hub.Invalid, "agent header: %v", err)
		}
	}
	if v := r.Header.Get(api.HeaderWakePath); v != "" {
		c.Via = hub.WakePath(v)
		if err := hub.ValidWakePath(c.Via); err != nil {
			return nil, err
		}
	}
	// Each request is a reader of its own, opened at its first read.
	c.ReadAs = &hub.ReaderOptions{Kind: "api", Confirm: hub.ConfirmOnWrite, OneRequest: true}
	if r.Header.Get(api.HeaderReceipts) != "" {
		c.ReadAs.Confirm, c.ReadAs.Lease = hub.ConfirmOnReceipt, receiptLease
	}
	if rd := r.Header.Get(api.HeaderReader); rd != "" {
		// A reader an earlier response named (api.HeaderReceipts): only
		// JSON API readers, never an MCP session's, and only the caller's
		// own (hub.ResumeReader checks).
		if !strings.HasPrefix(rd, "api-") {
			return nil, hub.Errorf("", hub.Invalid, "%s %q is not a reader the JSON API gave", api.HeaderReader, rd)
		}
		c.ReadAs.Confirm, c.ReadAs.Key = hub.ConfirmOnReceipt, rd
	}
	return c, nil
}

// decodeInput fills v from r's body (when it has one), query and path.
func decodeInput(w http.ResponseWriter, r *http.Request, wild []string, v any) error {
	if r.Method != http.MethodGet && r.Body != nil {
		if err := Decode(w, r, v); err != nil {
			return err
		}
	}
	if len(r.URL.RawQuery) == 0 && len(wild) == 0 {
		return nil
	}
	return setFields(v, r.URL.Query(), func(name string) (string, bool) {
		for _, w := range wild {
			if w == name {
				return r.PathValue(name), true
			}
		}
		return "", false
	})
}

// Decode reads a JSON body into v; an empty body leaves v as it is.
func Decode(w http.ResponseWriter, r *http.Request, v any) error {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return hub.Errorf("decode request", hub.TooLarge, "request body over %d bytes", mbe.Limit)
		}
		return hub.Errorf("decode request", hub.Invalid, "read body: %v", err)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return hub.Errorf("decode request", hub.Invalid, "invalid JSON body: %v", err)
	}
	// One JSON value and nothing after it: trailing bytes are a malformed
	// request, not something to ignore.
	if _, err := dec.Token(); err != io.EOF {
		return hub.Errorf("decode request", hub.Invalid, "invalid JSON body: unexpected data after the JSON value")
	}
	return nil
}

// setFields sets the fields of the struct v points to from the query and the
// path, by json name; the path wins. Fields of other kinds than strings,
// numbers and booleans (or pointers to them) are left alone.
func setFields(v any, q url.Values, path func(string) (string, bool)) error {
	rv := reflect.ValueOf(v).Elem()
	if rv.Kind() != reflect.Struct {
		return nil
	}
	rt := rv.Type()
	for i := range rt.NumField() {
		f := rt.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		s, ok := path(name)
		if !ok {
			if !q.Has(name) {
				continue
			}
			s = q.Get(name)
		}
		if err := setField(rv.Field(i), s); err != nil {
			return hub.Errorf("decode request", hub.Invalid, "invalid %s %q: %v", name, s, err)
		}
	}
	return nil
}

func setField(fv reflect.Value, s string) error {
	if fv.Kind() == reflect.Pointer {
		switch fv.Type().Elem().Kind() {
		case reflect.String, reflect.Int, reflect.Bool:
		default:
			return nil
		}
		p := reflect.New(fv.Type().Elem())
		if err := setField(p.Elem(), s); err != nil {
			return err
		}
		fv.Set(p)
		return nil
	}
	switch fv.Kind() {
	case reflect.String:
		fv.SetString(s)
	case reflect.Int:
		n, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("want a whole number")
		}
		fv.SetInt(int64(n))
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("want true or false")
		}
		fv.SetBool(b)
	}
	return nil
}

// WriteJSON writes v as the JSON body of a response with status code.
func WriteJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// WriteError writes err as an api.ErrorBody with the status of its kind.
func WriteError(w http.ResponseWriter, err error) {
	WriteJSON(w, api.HTTPStatus(hub.KindOf(err)), api.NewErrorBody(err))
}
