package profile_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/mcpserver/mcptest"
	"github.com/parley-dev/parley/internal/ops"
	"github.com/parley-dev/parley/internal/profile"
)

// toolBudgets bound each profile's tools/list (the tools array as JSON, which
// is what a client puts in the model's context). A profile that grows past
// its budget fails here: raise the budget only on purpose.
var toolBudgets = map[string]int{
	"lean":      3_000,  // issue 38: every tool's annotations (readOnlyHint, destructiveHint, ...), about 90 bytes a tool, here and below
	"native":    35_400, // issue 11 added acks and receipts; issue 15 reservations, search and queues, each with its output schema; issue 24 the provenance of every message; issue 25 portable schemas (anyOf for nullable and free-form values); issue 27 deliver, ttl_seconds and the attention states; issue 28 health in list_agents and my_work; issue 39 send_message's warning for a name that never joined; issue 38 annotations
	"sidechat":  2_800,
	"agentmail": 1_450,
	"manager":   22_700, // issue 25: portable schemas; issue 28 budgets (create_agent's max_turns, max_cost, max_duration, and each agent's budget and spend)
	"self":      1_900,
	"identity":  1_000, // issue 25: set_identity, for a session whose name Parley derived
}

func TestToolListBudgets(t *testing.T) {
	e := newEnv(t)
	for _, p := range []string{"lean", "native", "sidechat", "agentmail", "manager", "self", profile.IdentityName} {
		s := e.Session(ops.Caller{Workspace: "w", Agent: "a", Profiles: []string{p}}, nil)
		res, err := s.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(res.Tools)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("profile %-9s %2d tools %6d bytes (budget %d)", p, len(res.Tools), len(b), toolBudgets[p])
		if len(b) > toolBudgets[p] {
			t.Errorf("profile %s: tools/list is %d bytes, over its budget of %d", p, len(b), toolBudgets[p])
		}
		if p == "lean" {
			var names []string
			for _, tool := range res.Tools {
				names = append(names, tool.Name)
				if len(tool.Description) > 80 {
					t.Errorf("lean tool %s: description of %d bytes, want a short one", tool.Name, len(tool.Description))
				}
			}
			if len(names) > 6 {
				t.Errorf("lean has %d tools %v, want at most 6", len(names), names)
			}
			for _, want := range []string{"send_message", "reply", "check_messages", "wait_for_message", "set_status"} {
				if !slices.Contains(names, want) {
					t.Errorf("lean lacks %s: has %v", want, names)
				}
			}
		}
	}
}

func TestLeanReply(t *testing.T) {
	e := newEnv(t)
	alice := e.Session(ops.Caller{Workspace: "w", Agent: "alice", Profiles: []string{"lean"}}, nil)
	bob := e.Session(ops.Caller{Workspace: "w", Agent: "bob", Profiles: []string{"lean"}}, nil)
	var sent struct {
		MessageID string `json:"message_id"`
	}
	mcptest.Call(t, alice, "send_message", map[string]any{"to": "bob", "content": "ping"}, &sent)
	mcptest.Call(t, bob, "reply", map[string]any{"message_id": sent.MessageID, "content": "pong"}, nil)
	var got struct {
		Messages []struct {
			From, Content string
			ReplyTo       string `json:"reply_to"`
		} `json:"messages"`
	}
	mcptest.Call(t, alice, "check_messages", nil, &got)
	if len(got.Messages) != 1 || got.Messages[0].From != "bob" || got.Messages[0].Content != "pong" || got.Messages[0].ReplyTo != sent.MessageID {
		t.Errorf("alice's inbox after bob's reply: %+v", got.Messages)
	}
	if res := mcptest.Call(t, bob, "reply", map[string]any{"message_id": "nope", "content": "x"}, nil); !res.IsError {
		t.Errorf("reply to an unknown message: got no error")
	}
}

// TestReservationTools drives the reservation and search tools as two agents.
func TestReservationTools(t *testing.T) {
	e := newEnv(t)
	alice := e.Session(ops.Caller{Workspace: "w", Agent: "alice", Profiles: []string{"native"}}, nil)
	bob := e.Session(ops.Caller{Workspace: "w", Agent: "bob", Profiles: []string{"native"}}, nil)
	var res struct {
		Status  string `json:"status"`
		Granted []struct {
			ID, Path string
		} `json:"granted"`
		Conflicts []struct {
			Path    string `json:"path"`
			Message string `json:"message"`
			HeldBy  struct {
				Agent, Reason string
				ExpiresAt     string `json:"expires_at"`
			} `json:"held_by"`
		} `json:"conflicts"`
	}
	mcptest.Call(t, alice, "reserve_paths", map[string]any{"paths": []string{"internal/store/**"}, "reason": "pgx port"}, &res)
	if res.Status != "granted" || len(res.Granted) != 1 {
		t.Fatalf("alice reserves: %+v", res)
	}
	mcptest.Call(t, bob, "reserve_paths", map[string]any{"paths": []string{"internal/store/sqlite/db.go"}, "exclusive": false}, &res)
	if res.Status != "conflict" || len(res.Conflicts) != 1 || res.Conflicts[0].HeldBy.Agent != "alice" ||
		res.Conflicts[0].HeldBy.Reason != "pgx port" || res.Conflicts[0].HeldBy.ExpiresAt == "" {
		t.Fatalf("bob runs into alice's reservation: %+v", res)
	}
	var who struct {
		Reservations []struct{ Agent string } `json:"reservations"`
	}
	mcptest.Call(t, bob, "who_has", map[string]any{"path": "internal/store/x.go"}, &who)
	if len(who.Reservations) != 1 || who.Reservations[0].Agent != "alice" {
		t.Errorf("who_has: %+v", who)
	}
	if r := mcptest.Call(t, bob, "reserve_paths", map[string]any{"paths": []string{"/abs"}}, nil); !r.IsError {
		t.Errorf("an absolute path: got no error")
	}
	if r := mcptest.Call(t, bob, "reserve_paths", map[string]any{"paths": []string{"a"}, "ttl_seconds": 5}, nil); !r.IsError {
		t.Errorf("ttl 5 s: got no error")
	}
	mcptest.Call(t, alice, "release_reservations", nil, &who)
	if len(who.Reservations) != 1 {
		t.Errorf("alice releases all: %+v", who)
	}
	mcptest.Call(t, bob, "reserve_paths", map[string]any{"paths": []string{"internal/store/sqlite/db.go"}}, &res)
	if res.Status != "granted" {
		t.Errorf("bob after alice released: %+v", res)
	}

	mcptest.Call(t, alice, "send_message", map[string]any{"to": "bob", "content": "the flaky migration test is fixed"}, nil)
	mcptest.Call(t, alice, "send_message", map[string]any{"to": "carol", "content": "flaky, but private to carol"}, nil)
	var found struct {
		Results []struct {
			From, Content, Snippet string
		} `json:"results"`
	}
	mcptest.Call(t, bob, "search_messages", map[string]any{"query": "flaky"}, &found)
	if len(found.Results) != 1 || !strings.Contains(found.Results[0].Snippet, "**flaky**") {
		t.Errorf("bob searches flaky: %+v; want his one message with a marked snippet", found.Results)
	}
	if r := mcptest.Call(t, bob, "search_messages", map[string]any{"query": "flaky", "since": "yesterday"}, nil); !r.IsError {
		t.Errorf("since=yesterday: got no error")
	}
}

// TestReservationRenewAndList: list_reservations shows the workspace's
// reservations (or one agent's), renew_reservations moves their expiry, and
// POST /api/v1/reservations/check, the commit guard's call, names the
// exclusive ones another agent's change runs into.
func TestReservationRenewAndList(t *testing.T) {
	e := newEnv(t)
	alice := e.Session(ops.Caller{Workspace: "w", Agent: "alice"}, nil)
	bob := e.Session(ops.Caller{Workspace: "w", Agent: "bob"}, nil)
	mustCall(t, alice, "reserve_paths", map[string]any{"paths": []string{"docs/**", "go.mod"}, "ttl_seconds": 60}, nil)
	mustCall(t, bob, "reserve_paths", map[string]any{"paths": []string{"README.md"}, "exclusive": false}, nil)

	var all, mine api.ReservationsResult
	mustCall(t, bob, "list_reservations", nil, &all)
	mustCall(t, bob, "list_reservations", map[string]any{"agent": "alice"}, &mine)
	if len(all.Reservations) != 3 || len(mine.Reservations) != 2 || mine.Reservations[0].Agent != "alice" {
		t.Fatalf("list_reservations: got %+v, and alice's %+v; want 3, of which alice's 2", all, mine)
	}
	var renewed api.ReservationsResult
	mustCall(t, alice, "renew_reservations", map[string]any{"ttl_seconds": 7200}, &renewed)
	if len(renewed.Reservations) != 2 {
		t.Fatalf("renew_reservations: got %+v, want alice's 2", renewed)
	}
	for i, r := range renewed.Reservations {
		if r.ExpiresAt <= mine.Reservations[i].ExpiresAt {
			t.Errorf("renewed %s expires %s, want later than %s", r.Path, r.ExpiresAt, mine.Reservations[i].ExpiresAt)
		}
	}
	if msg := toolError(t, alice, "renew_reservations", map[string]any{"ttl_seconds": 1}); !strings.Contains(msg, "out of range") {
		t.Errorf("renew for 1 s: got %q", msg)
	}

	code, body := e.Do("POST", "/reservations/check", "w", "bob", api.CheckPathsRequest{Paths: []string{"docs/api.md", "README.md", "main.go"}})
	var check api.CheckPathsResult
	if code != 200 || json.Unmarshal(body, &check) != nil {
		t.Fatalf("POST /reservations/check: %d %s", code, body)
	}
	if len(check.Conflicts) != 1 || check.Conflicts[0].Path != "docs/api.md" || check.Conflicts[0].Reservation.Agent != "alice" {
		t.Errorf("check of bob's change: got %+v, want docs/api.md held by alice alone", check.Conflicts)
	}
}
