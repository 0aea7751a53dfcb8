package api

import (
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/hub"
)

func TestPreview(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"short", "hello", "hello"},
		{"exactly 120", strings.Repeat("a", 120), strings.Repeat("a", 120)},
		{"121 cut", strings.Repeat("a", 121), strings.Repeat("a", 120) + "…"},
		{"runes not bytes", strings.Repeat("é", 130), strings.Repeat("é", 120) + "…"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Preview(c.in); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestParseEventKinds(t *testing.T) {
	cases := []struct {
		name, in string
		want     []string // nil: every kind
		err      string
	}{
		{name: "empty means all", in: ""},
		{name: "one", in: "message.sent", want: []string{"message.sent"}},
		{name: "spaces and empties", in: " agent.left , ,group.changed", want: []string{"agent.left", "group.changed"}},
		{name: "unknown", in: "message.sent,message.exploded", err: `unknown event kind "message.exploded"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseEventKinds(c.in)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || hub.KindOf(err) != hub.Invalid {
					t.Fatalf("got %v, want an invalid error with %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (got == nil) != (c.want == nil) || len(got) != len(c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			for _, k := range c.want {
				if !got[k] {
					t.Errorf("got %v, want %s in it", got, k)
				}
			}
		})
	}
}

func TestEventLine(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.Local)
	m := &hub.Message{ID: "01X", From: "alice", To: "@dev", Content: "fix\nthe   build", Priority: hub.High}
	cases := []struct {
		name string
		e    hub.Event
		want string
	}{
		{"message", hub.Event{Kind: hub.EventMessageSent, Workspace: "w", Time: at, Agent: "alice", Message: m, Recipients: []string{"bob", "carol"}},
			"03:04:05 w  alice -> @dev (bob, carol) [high]: fix the build"},
		{"joined", hub.Event{Kind: hub.EventAgentJoined, Workspace: "w", Time: at, Agent: "bob", Role: "dev"}, "03:04:05 w  bob joined as dev"},
		{"left", hub.Event{Kind: hub.EventAgentLeft, Workspace: "w", Time: at, Agent: "bob"}, "03:04:05 w  bob left"},
		{"group", hub.Event{Kind: hub.EventGroupChanged, Workspace: "w", Time: at, Group: "team", Change: "member_added"}, "03:04:05 w  group team member added"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := EventOf(c.e).Line(); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}
