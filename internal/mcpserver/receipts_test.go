package mcpserver

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestCallsCancel(t *testing.T) {
	var c calls
	// Cancelled after it handed out: the cancellation gets its messages.
	if c.handed("s", "1", []string{"m1"}) {
		t.Fatal("handed: got cancelled before any cancellation")
	}
	if got := c.cancel("s", "1"); !slices.Equal(got, []string{"m1"}) {
		t.Errorf("cancel after handed: got %v, want [m1]", got)
	}
	if got := c.cancel("s", "1"); got != nil {
		t.Errorf("second cancel: got %v, want nothing", got)
	}
	// Cancelled before its hand-out was recorded: the hand-out learns it.
	if got := c.cancel("s", `"a"`); got != nil {
		t.Errorf("cancel before handed: got %v, want nothing", got)
	}
	if !c.handed("s", `"a"`, []string{"m2"}) {
		t.Error("handed after its cancellation: got not cancelled")
	}
	// Other sessions and unknown ids are apart.
	c.handed("s", "2", []string{"m3"})
	if got := c.cancel("t", "2"); got != nil {
		t.Errorf("cancel in another session: got %v", got)
	}
	if c.handed("s", "", []string{"m4"}) || c.cancel("s", "") != nil {
		t.Error("a call without an id: got a match")
	}
	// Only the latest keepCalls are remembered.
	for i := range keepCalls + 5 {
		c.handed("u", requestID(float64(i)), []string{"x"})
	}
	if got := c.cancel("u", "0"); got != nil {
		t.Errorf("cancel of a forgotten call: got %v", got)
	}
	if got := c.cancel("u", requestID(float64(keepCalls+4))); len(got) != 1 {
		t.Errorf("cancel of the latest call: got %v", got)
	}
	c.end("u")
	if len(c.m["u"]) != 0 {
		t.Errorf("after end: %d calls remembered", len(c.m["u"]))
	}
}

// The id a request carries and the one a cancellation names compare equal.
func TestRequestID(t *testing.T) {
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
