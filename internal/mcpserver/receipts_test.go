package mcpserver

import (
	"encoding/json"
	"testing"
)

// The id a request carries and the one a cancellation names compare equal.
func TestRequestID(t *testing.T) {
	bodyID := func(body []byte) string { return (&capture{buf: body}).id() }
	for _, tt := range []struct {
		body   string
		params string
	}{
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call"}`, `{"requestId":7}`},
		{`{"method":"tools/call","params":{"id":3},"id":"x-1"}`, `{"requestId":"x-1"}`},
		{`{"jsonrpc":"2.0","id": 12 ,"method":"tools/call"}`, `{"requestId":12.0}`},
	} {
		var p struct {
			RequestID any `json:"requestId"`
		}
		if err := json.Unmarshal([]byte(tt.params), &p); err != nil {
			t.Fatal(err)
		}
		if a, b := bodyID([]byte(tt.body)), requestID(p.RequestID); a == "" || a != b {
			t.Errorf("%s and %s: got %q and %q, want equal", tt.body, tt.params, a, b)
		}
	}
	if got := bodyID([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); got != "" {
		t.Errorf("notification: got id %q, want none", got)
	}
	if got := bodyID([]byte(`{"jsonrpc":"2.0","id":1,"method":`)); got != "" {
		t.Errorf("truncated body: got id %q, want none", got)
	}
}
