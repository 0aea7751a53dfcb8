package mcpserver

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The request-context shim: the one place where the SDK is not enough.
//
// A handler needs three things of the request that carries its call: the
// request's context (for protocol versions before 2026-07-28 the SDK does
// not cancel a handler whose POST was cut, so a blocked wait would hold a
// message for a client that is gone: FIELD-NOTES, go-sdk issue #1093), its
// JSON-RPC id (what a reader's call is named by, which the client's
// notifications/cancelled names), and, for an initialize, the session that
// the request was admitted as. The go-sdk (v1.8.0) hands a handler only the
// request's header (RequestExtra.Header); it keeps the request's id in an
// unexported context key, and dispatches calls apart from the transport's
// reads (upstream: modelcontextprotocol/go-sdk#1264). Until RequestExtra
// carries the request, the door registers each request here under the header map
// the SDK passes on unchanged, and the handlers look it up by
// RequestExtra.Header: no header is added, and nothing a client sends can
// name another's request. The stream session (stream.go) registers the
// messages of its connection the same way, with a header map of each.
type request struct {
	ctx  context.Context // ends when the client's request does
	call string          // the JSON-RPC id of the call it carries (requestID), or ""
	new  *session        // the session an initialize starts, admitted
}

// requests holds the requests in flight, by their header map.
type requests struct{ m sync.Map }

// headerKey is the identity of a header map (not its contents).
func headerKey(h http.Header) uintptr { return reflect.ValueOf(h).Pointer() }

// add registers rq under h until the returned func runs.
func (rs *requests) add(h http.Header, rq *request) (done func()) {
	k := headerKey(h)
	rs.m.Store(k, rq)
	return func() { rs.m.Delete(k) }
}

// of is the request a handler's req came in, or nil; ended reports that it
// came in one that has ended already (its client is gone).
func (rs *requests) of(req mcp.Request) (rq *request, ended bool) {
	ex := req.GetExtra()
	if ex == nil || ex.Header == nil {
		return nil, false // an in-memory transport's
	}
	return rs.ofHeader(ex.Header)
}

// ofHeader is the request registered under h, or nil and ended.
func (rs *requests) ofHeader(h http.Header) (rq *request, ended bool) {
	v, ok := rs.m.Load(headerKey(h))
	if !ok {
		return nil, true
	}
	return v.(*request), false
}

// callOf reads the JSON-RPC id and method of one message: a request's
// body, or a line of a stream.
func callOf(body []byte) (id, method string) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(body, &m) != nil || m.Method == "" {
		return "", ""
	}
	return requestID(m.ID), m.Method
}

// requestID is the canonical JSON of a JSON-RPC request id ("" if none), so
// that the id a request carried and the one a cancellation names compare
// equal.
func requestID(v any) string {
	if raw, ok := v.(json.RawMessage); ok {
		if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
			return ""
		}
	}
	if v == nil {
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}
