// Package httpapi is the daemon's HTTP routes: /mcp, the live event stream
// (events.go), and the JSON API, /api/v1, built from the table of operations
// of package ops (each one's route and who may call it). Each API endpoint
// is a thin adapter: it finds the caller in
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

// Routes adds every endpoint of the daemon to mux: e's and those of every
// operation in ops' table that has a route. docs/api.md lists them all
// (TestRoutesDocumented). It returns who may reach each.
func Routes(mux Mux, o *ops.Ops, e Endpoints) *Access {
	a := &Access{agent: map[string]bool{}}
	if e.MCP != nil {
		mux.Handle("/mcp", e.MCP)
	}
	if e.Events != nil {
		mux.Handle("GET "+api.Prefix+"/events", e.Events)
	}
	for _, op := range o.Table() {
		if op.Route == "" {
			continue
		}
		method, path, _ := strings.Cut(op.Route, " ")
		pattern := method + " " + api.Prefix + path
		a.agent[pattern] = op.Access == ops.Agent
		mux.Handle(pattern, handler(op, wildcards(pattern), adapters[op.Name]))
	}
	return a
}

// Access is who may reach each endpoint Routes added.
type Access struct{ agent map[string]bool }

// AgentMay reports whether an agent token may reach the endpoint of pattern
// (as http.ServeMux.Handler names it): only one whose operation is open to
// agent tokens. Endpoints that are no operation are refused.
func (a *Access) AgentMay(pattern string) bool { return a.agent[pattern] }

// adapters fit the caller of the routes whose path says more than their
// operation's input.
var adapters = map[string]func(r *http.Request, c *ops.Caller) error{
	// The path names the agent whose status changes: the caller itself
	// for an agent token.
	"SetStatus": func(r *http.Request, c *ops.Caller) error {
		name := r.PathValue("name")
		if r.Header.Get(api.HeaderAgentToken) != "" && name != c.Agent {
			return hub.Errorf("set status", hub.Forbidden, "this token speaks for agent %q only; it cannot set the status of %q", c.Agent, name)
		}
		c.Agent = name
		return nil
	},
	// A request is answered by its id in any workspace: ids are unique,
	// and the people at the CLI and the dashboard watch every workspace.
	"Respond": func(_ *http.Request, c *ops.Caller) error {
		c.Workspace = ""
		return nil
	},
	"RespondMany": func(_ *http.Request, c *ops.Caller) error {
		c.Workspace = ""
		return nil
	},
}

// handler serves op: it finds the caller in the request's headers, decodes
// the operation's input from the body, then the query, then the path's
// wildcards (each matched to the input's fields by their json names), runs
// the operation and writes its result, or its error with the status of its
// kind.
func handler(op ops.Op, wild []string, adapt func(*http.Request, *ops.Caller) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := CallerOf(r)
		in := op.NewInput()
		if err == nil {
			err = decodeInput(w, r, wild, in)
		}
		if err == nil && adapt != nil {
			err = adapt(r, c)
		}
		if err != nil {
			WriteError(w, err)
			return
		}
		// The messages a read hands out are leased to this request's reader
		// (ops opens it, CallerOf says how) until its response is written;
		// they go back if it cannot be.
		out, err := op.Call(r.Context(), c, in)
		settle := context.WithoutCancel(r.Context())
		if err != nil {
			WriteError(w, err)
			c.Reader.Written(settle, "", err)
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
		c.Reader.Written(settle, "", werr)
	})
}

// receiptLease is how long a reader that confirms by itself (api.HeaderReceipts)
// holds what it was handed: it confirms as soon as it handed it on, so a
// reader that died gives it back soon.
const receiptLease = time.Minute

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
			// Bigger than any message may be: say so in the terms of the
			// size limit, as a message just over it is told.
			return hub.Errorf("decode request", hub.TooLarge, "request body over %d bytes: more than any message may carry (the message size limit is max_message_bytes in config.toml, %d bytes by default)", mbe.Limit, hub.DefaultMaxContent)
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
