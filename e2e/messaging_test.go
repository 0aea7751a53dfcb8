package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Seed 000's eleven tools, which the native profile must keep.
var seedTools = []string{"send_message", "check_messages", "wait_for_message", "list_agents", "broadcast_message",
	"create_group", "delete_group", "add_group_member", "remove_group_member", "list_groups", "get_group"}

type messageInfo struct {
	MessageID string            `json:"message_id"`
	From      string            `json:"from"`
	To        string            `json:"to"`
	Content   string            `json:"content"`
	Priority  string            `json:"priority"`
	Timestamp string            `json:"timestamp"`
	ReplyTo   string            `json:"reply_to"`
	ThreadID  string            `json:"thread_id"`
	Metadata  map[string]string `json:"metadata"`
}

type sendResult struct {
	Status          string   `json:"status"`
	MessageID       string   `json:"message_id"`
	RecipientStatus string   `json:"recipient_status"`
	Recipients      []string `json:"recipients"`
	ThreadID        string   `json:"thread_id"`
}

type checkResult struct {
	Status    string        `json:"status"`
	Messages  []messageInfo `json:"messages"`
	Remaining int           `json:"remaining"`
}

type waitResult struct {
	Status        string       `json:"status"`
	Message       *messageInfo `json:"message"`
	WaitedSeconds int          `json:"waited_seconds"`
}

func TestTwoAgentsTalk(t *testing.T) {
	e := newEnv(t)
	// mcp serve starts the daemon itself and registers the agents.
	alice := e.Session(nil, "--workspace", "proj", "--agent", "alice", "--role", "planner")
	bob := e.Session(nil, "--workspace", "proj", "--agent", "bob", "--role", "implementer")

	tools, err := alice.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		if tl.OutputSchema == nil {
			t.Errorf("tool %s has no output schema", tl.Name)
		}
	}
	for _, want := range seedTools {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list lacks %s; got %v", want, names)
		}
	}

	// Bob blocks; Alice's send wakes him.
	got := make(chan waitResult, 1)
	go func() {
		var w waitResult
		res, err := bob.CallTool(context.Background(), &mcp.CallToolParams{Name: "wait_for_message", Arguments: map[string]any{"timeout": 30}})
		if err == nil && !res.IsError {
			b, _ := json.Marshal(res.StructuredContent)
			json.Unmarshal(b, &w)
		}
		got <- w
	}()
	waitForWaiter(t, e, "proj", "bob")
	var sent sendResult
	mustCall(t, alice, "send_message", map[string]any{"to": "bob", "content": "please implement **X**", "priority": "high",
		"metadata": map[string]string{"ticket": "PAR-1"}}, &sent)
	if sent.Status != "delivered" || sent.MessageID == "" || !slices.Equal(sent.Recipients, []string{"bob"}) {
		t.Fatalf("send_message: got %+v", sent)
	}
	w := <-got
	if w.Status != "message_received" || w.Message == nil {
		t.Fatalf("wait_for_message: got %+v, want a message", w)
	}
	m := w.Message
	if m.MessageID != sent.MessageID || m.From != "alice" || m.Content != "please implement **X**" || m.Priority != "high" || m.Metadata["ticket"] != "PAR-1" {
		t.Errorf("received %+v, want alice's high-priority message %s", m, sent.MessageID)
	}
	if _, err := time.Parse(time.RFC3339Nano, m.Timestamp); err != nil {
		t.Errorf("timestamp %q: %v", m.Timestamp, err)
	}

	// The message was consumed: nothing left.
	var c checkResult
	mustCall(t, bob, "check_messages", nil, &c)
	if c.Status != "empty" || len(c.Messages) != 0 || c.Remaining != 0 {
		t.Errorf("check_messages after wait: got %+v, want empty", c)
	}

	// A reply threads.
	var reply sendResult
	mustCall(t, bob, "send_message", map[string]any{"to": "@planner", "content": "done", "reply_to": sent.MessageID}, &reply)
	mustCall(t, alice, "check_messages", nil, &c)
	if len(c.Messages) != 1 || c.Messages[0].ReplyTo != sent.MessageID || c.Messages[0].ThreadID != sent.MessageID {
		t.Errorf("alice's inbox: got %+v, want bob's reply threaded under %s", c.Messages, sent.MessageID)
	}
}

// waitForWaiter waits until a call is blocked waiting for the agent's next
// message (the waiting count of GET /api/v1/agents), so that the test
// exercises the blocked path: a message sent now wakes that wait. (The hub's
// no-lost-wake-up guarantee makes the order irrelevant for correctness.)
func waitForWaiter(t *testing.T, e *env, ws, agent string) {
	t.Helper()
	waitUntil(t, agent+" blocked in a wait", func() bool { return e.waiting(ws, agent) > 0 })
}

// waiting counts the calls blocked waiting for the agent's next message.
func (e *env) waiting(ws, agent string) int {
	e.t.Helper()
	var out struct {
		Agents []struct {
			Name    string `json:"name"`
			Waiting int    `json:"waiting"`
		} `json:"agents"`
	}
	e.mustAPI("GET", "/agents", ws, "", nil, &out)
	for _, a := range out.Agents {
		if a.Name == agent {
			return a.Waiting
		}
	}
	return 0
}

func TestInboxOrderAndPriorityFilter(t *testing.T) {
	e := newEnv(t)
	a := e.Session(nil, "--workspace", "w", "--agent", "a", "--role", "lead")
	b := e.Session(nil, "--workspace", "w", "--agent", "b", "--role", "dev")
	for i, p := range []string{"low", "normal", "critical", "high", "normal", "critical"} {
		mustCall(t, a, "send_message", map[string]any{"to": "b", "content": fmt.Sprintf("%d-%s", i, p), "priority": p}, nil)
	}
	// A critical-only wait takes the oldest critical message and leaves the rest.
	var w waitResult
	mustCall(t, b, "wait_for_message", map[string]any{"timeout": 5, "priority_filter": "critical"}, &w)
	if w.Message == nil || w.Message.Content != "2-critical" {
		t.Fatalf("critical wait: got %+v, want 2-critical", w.Message)
	}
	// high_and_above now finds the other critical first, then high.
	for _, want := range []string{"5-critical", "3-high"} {
		mustCall(t, b, "wait_for_message", map[string]any{"timeout": 5, "priority_filter": "high_and_above"}, &w)
		if w.Message == nil || w.Message.Content != want {
			t.Fatalf("high_and_above wait: got %+v, want %s", w.Message, want)
		}
	}
	// Nothing critical is left: a short critical wait times out, consuming nothing.
	mustCall(t, b, "wait_for_message", map[string]any{"timeout": 1, "priority_filter": "critical"}, &w)
	if w.Status != "timeout" || w.Message != nil {
		t.Fatalf("critical wait with none left: got %+v, want timeout", w)
	}
	var c checkResult
	mustCall(t, b, "check_messages", map[string]any{"limit": 2}, &c)
	if got := contents(c.Messages); !slices.Equal(got, []string{"1-normal", "4-normal"}) || c.Remaining != 1 {
		t.Fatalf("check_messages limit 2: got %v remaining %d, want [1-normal 4-normal] remaining 1", got, c.Remaining)
	}
	mustCall(t, b, "check_messages", nil, &c)
	if got := contents(c.Messages); !slices.Equal(got, []string{"0-low"}) || c.Remaining != 0 || c.Status != "messages" {
		t.Fatalf("check_messages: got %v %+v, want [0-low]", got, c)
	}
}

func contents(ms []messageInfo) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Content)
	}
	return out
}

func TestWaitSendsProgress(t *testing.T) {
	e := newEnv(t, "PARLEY_PROGRESS_EVERY=100ms")
	// n counts tok-1's notifications, others the rest: tok-1's last one may
	// arrive after its call returned, while the call without a token runs.
	var n, others atomic.Int32
	var lastToken atomic.Value
	opts := &mcp.ClientOptions{ProgressNotificationHandler: func(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
		tok := fmt.Sprint(req.Params.ProgressToken)
		if tok == "tok-1" {
			n.Add(1)
		} else {
			others.Add(1)
		}
		lastToken.Store(tok)
	}}
	s := e.Session(opts, "--workspace", "w", "--agent", "sleeper")
	params := &mcp.CallToolParams{Name: "wait_for_message", Arguments: map[string]any{"timeout": 1}}
	params.SetProgressToken("tok-1")
	res, err := s.CallTool(context.Background(), params)
	if err != nil || res.IsError {
		t.Fatalf("wait: %v %v", err, res)
	}
	if got := n.Load(); got < 3 {
		t.Errorf("got %d progress notifications in a 1 s wait at 100 ms, want at least 3", got)
	}
	if got := lastToken.Load(); got != "tok-1" {
		t.Errorf("progress token: got %v, want tok-1", got)
	}
	// Without a token, no progress is sent.
	call(t, s, "wait_for_message", map[string]any{"timeout": 1}, nil)
	if got := others.Load(); got != 0 {
		t.Errorf("got %d progress notifications without a token, want 0", got)
	}
}

func TestManyWaitersNoneLost(t *testing.T) {
	e := newEnv(t)
	const n = 4
	sender := e.Session(nil, "--workspace", "w", "--agent", "sender")
	var waiters []*mcp.ClientSession
	for i := 0; i < n; i++ {
		waiters = append(waiters, e.Session(nil, "--workspace", "w", "--agent", "w"+fmt.Sprint(i), "--role", "worker"))
	}
	// Two blocked waits per agent on one inbox, and @worker fan-out: each message
	// reaches each agent exactly once.
	results := make(chan string, 4*n)
	for i, s := range waiters {
		for j := 0; j < 2; j++ {
			go func() {
				var w waitResult
				res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "wait_for_message", Arguments: map[string]any{"timeout": 20}})
				if err == nil && !res.IsError {
					b, _ := json.Marshal(res.StructuredContent)
					json.Unmarshal(b, &w)
				}
				if w.Message == nil {
					results <- fmt.Sprintf("w%d:none", i)
					return
				}
				results <- fmt.Sprintf("w%d:%s", i, w.Message.Content)
			}()
		}
	}
	time.Sleep(100 * time.Millisecond)
	mustCall(t, sender, "send_message", map[string]any{"to": "@worker", "content": "m1"}, nil)
	mustCall(t, sender, "send_message", map[string]any{"to": "@worker", "content": "m2"}, nil)
	var got []string
	for i := 0; i < 2*n; i++ {
		select {
		case r := <-results:
			got = append(got, r)
		case <-time.After(20 * time.Second):
			t.Fatalf("only %d of %d waits returned: %v", i, 2*n, got)
		}
	}
	slices.Sort(got)
	var want []string
	for i := 0; i < n; i++ {
		want = append(want, fmt.Sprintf("w%d:m1", i), fmt.Sprintf("w%d:m2", i))
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("deliveries: got %v, want %v", got, want)
	}
}

func TestBadInputIsToolError(t *testing.T) {
	e := newEnv(t)
	a := e.Session(nil, "--workspace", "w", "--agent", "a", "--role", "dev")
	e.Session(nil, "--workspace", "w", "--agent", "b", "--role", "dev")
	tests := []struct {
		name string
		tool string
		args map[string]any
		want string
	}{
		{"invalid priority", "send_message", map[string]any{"to": "b", "content": "x", "priority": "urgent"}, "invalid priority"},
		{"unknown group", "send_message", map[string]any{"to": "@ghosts", "content": "x"}, "matches no group"},
		{"empty content", "send_message", map[string]any{"to": "b", "content": "  "}, "content must not be empty"},
		{"oversized content", "send_message", map[string]any{"to": "b", "content": strings.Repeat("x", 300<<10)}, "limit is 262144 bytes"},
		{"bad recipient name", "send_message", map[string]any{"to": "no spaces!", "content": "x"}, "invalid recipient"},
		{"unknown reply_to", "send_message", map[string]any{"to": "b", "content": "x", "reply_to": "01NOPE"}, "reply_to"},
		{"missing to", "send_message", map[string]any{"content": "x"}, "to"},
		{"wrong type", "send_message", map[string]any{"to": 7, "content": "x"}, "to"},
		{"timeout too long", "wait_for_message", map[string]any{"timeout": 601}, "out of range"},
		{"negative timeout", "wait_for_message", map[string]any{"timeout": -1}, "out of range"},
		{"zero timeout", "wait_for_message", map[string]any{"timeout": 0}, "between 1 and 600"},
		{"bad filter", "wait_for_message", map[string]any{"timeout": 1, "priority_filter": "loud"}, "invalid priority_filter"},
		{"bad group name", "create_group", map[string]any{"name": "a b"}, "invalid group name"},
		{"create everyone", "create_group", map[string]any{"name": "everyone"}, "built in"},
		{"delete everyone", "delete_group", map[string]any{"name": "everyone"}, "cannot be deleted"},
		{"delete unknown group", "delete_group", map[string]any{"name": "nope"}, "no group named"},
		{"bad member type", "add_group_member", map[string]any{"group": "nope", "member_type": "team", "member_id": "x"}, "invalid member_type"},
		{"member of unknown group", "add_group_member", map[string]any{"group": "nope", "member_type": "agent", "member_id": "x"}, "no group named"},
		{"unknown composite id", "send_message", map[string]any{"to": "agent:dev:000000000000", "content": "x"}, "no agent with id"},
		{"bad broadcast filter", "broadcast_message", map[string]any{"content": "x", "filter": map[string]any{"status": "asleep"}}, "invalid filter.status"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, a, tt.tool, tt.args, nil)
			if !res.IsError {
				t.Fatalf("got success %s, want a tool error containing %q", text(res), tt.want)
			}
			if !strings.Contains(text(res), tt.want) {
				t.Errorf("error %q does not contain %q", text(res), tt.want)
			}
		})
	}
	// Nothing was stored half-way: b's inbox is empty, and no group appeared.
	var hist struct {
		Messages []messageInfo `json:"messages"`
	}
	e.MustJSON(&hist, "history", "--workspace", "w")
	if len(hist.Messages) != 0 {
		t.Errorf("history after bad input: got %d messages, want 0", len(hist.Messages))
	}
	var groups struct {
		Groups []struct{ Name string } `json:"groups"`
	}
	mustCall(t, a, "list_groups", nil, &groups)
	if len(groups.Groups) != 1 || groups.Groups[0].Name != "everyone" {
		t.Errorf("groups after bad input: got %+v, want only everyone", groups.Groups)
	}
}

func TestGroupsAndBroadcast(t *testing.T) {
	e := newEnv(t)
	lead := e.Session(nil, "--workspace", "w", "--agent", "lead", "--role", "planner")
	r1 := e.Session(nil, "--workspace", "w", "--agent", "rev1", "--role", "reviewer")
	r2 := e.Session(nil, "--workspace", "w", "--agent", "rev2", "--role", "reviewer")
	dev := e.Session(nil, "--workspace", "w", "--agent", "dev1", "--role", "implementer")

	var gr struct{ Status, Name string }
	mustCall(t, lead, "create_group", map[string]any{"name": "backend", "description": "backend team"}, &gr)
	if gr.Status != "created" || gr.Name != "backend" {
		t.Fatalf("create_group: got %+v", gr)
	}
	if res := call(t, lead, "create_group", map[string]any{"name": "backend"}, nil); !res.IsError || !strings.Contains(text(res), "exists") {
		t.Errorf("duplicate create_group: got %s, want an 'exists' error", text(res))
	}
	var mr struct{ Status, Group, MemberType, MemberID string }
	mustCall(t, lead, "add_group_member", map[string]any{"group": "backend", "member_type": "role", "member_id": "reviewer"}, &mr)
	mustCall(t, lead, "add_group_member", map[string]any{"group": "backend", "member_type": "agent", "member_id": "dev1"}, &mr)
	if mr.Status != "added" {
		t.Errorf("add_group_member: got %+v", mr)
	}
	var detail struct {
		Name                string `json:"name"`
		Description         string `json:"description"`
		CreatedBy           string `json:"created_by"`
		Members             []struct{ Type, ID string }
		ExpandedAgents      []string `json:"expanded_agents"`
		ExpandedAgentsCount int      `json:"expanded_agents_count"`
	}
	mustCall(t, lead, "get_group", map[string]any{"name": "backend", "expand": true}, &detail)
	if len(detail.Members) != 2 || detail.ExpandedAgentsCount != 3 || !strings.HasPrefix(detail.CreatedBy, "agent:planner:") {
		t.Errorf("get_group expand: got %+v, want 2 members reaching 3 agents, created by the planner", detail)
	}
	var sent sendResult
	mustCall(t, lead, "send_message", map[string]any{"to": "@backend", "content": "standup"}, &sent)
	if !slices.Equal(sent.Recipients, []string{"dev1", "rev1", "rev2"}) {
		t.Errorf("@backend reached %v, want dev1 rev1 rev2", sent.Recipients)
	}
	for _, s := range []*mcp.ClientSession{r1, r2, dev} {
		var c checkResult
		mustCall(t, s, "check_messages", nil, &c)
		if len(c.Messages) != 1 || c.Messages[0].Content != "standup" {
			t.Errorf("member inbox: got %+v, want the standup", c.Messages)
		}
	}
	mustCall(t, lead, "remove_group_member", map[string]any{"group": "backend", "member_type": "role", "member_id": "reviewer"}, &mr)
	if res := call(t, lead, "remove_group_member", map[string]any{"group": "backend", "member_type": "role", "member_id": "reviewer"}, nil); !res.IsError {
		t.Errorf("removing a non-member: got success, want an error")
	}
	var lg struct {
		Groups []struct {
			Name        string `json:"name"`
			MemberCount int    `json:"member_count"`
		}
	}
	mustCall(t, lead, "list_groups", nil, &lg)
	if len(lg.Groups) != 2 || lg.Groups[1].Name != "backend" || lg.Groups[1].MemberCount != 1 {
		t.Errorf("list_groups: got %+v", lg.Groups)
	}
	mustCall(t, lead, "delete_group", map[string]any{"name": "backend"}, &gr)
	if res := call(t, lead, "send_message", map[string]any{"to": "@backend", "content": "x"}, nil); !res.IsError {
		t.Errorf("send to a deleted group: got success, want an error")
	}

	// Broadcast: everyone but the sender, minus exclusions.
	var br struct {
		Status     string   `json:"status"`
		SentTo     []string `json:"sent_to"`
		TotalSent  int      `json:"total_sent"`
		MessageIDs []string `json:"message_ids"`
	}
	mustCall(t, lead, "broadcast_message", map[string]any{"content": "all hands", "filter": map[string]any{"exclude": []string{"implementer", "rev2"}}}, &br)
	if br.Status != "sent" || !slices.Equal(br.SentTo, []string{"rev1"}) || br.TotalSent != 1 || len(br.MessageIDs) != 1 {
		t.Errorf("broadcast with exclude: got %+v, want sent to rev1 only", br)
	}
	mustCall(t, lead, "broadcast_message", map[string]any{"content": "x", "filter": map[string]any{"exclude": []string{"implementer", "reviewer"}}}, &br)
	if br.Status != "no_recipients" || br.TotalSent != 0 {
		t.Errorf("broadcast excluding all: got %+v, want no_recipients", br)
	}
	// Everyone is active here (open sessions); an offline agent is skipped by status=active.
	e.Must("join", "--workspace", "w", "--name", "ghost", "--role", "dev")
	mustCall(t, lead, "broadcast_message", map[string]any{"content": "y", "filter": map[string]any{"status": "active"}}, &br)
	if slices.Contains(br.SentTo, "lead") || br.TotalSent != 4 {
		t.Errorf("broadcast status=active: got %+v, want the 4 other agents (ghost was seen just now)", br)
	}
}

func TestPresenceAndIdentity(t *testing.T) {
	e := newEnv(t)
	a := e.Session(nil, "--workspace", "w", "--agent", "alice", "--role", "planner", "--module", "api")
	var who struct {
		Agent, Role, Module, Workspace string
		AgentID                        string `json:"agent_id"`
	}
	mustCall(t, a, "whoami", nil, &who)
	if who.Agent != "alice" || who.Role != "planner" || who.Module != "api" || who.Workspace != "w" || !strings.HasPrefix(who.AgentID, "agent:planner:") {
		t.Errorf("whoami: got %+v", who)
	}
	var la struct {
		Agents []struct {
			Name, Role, Module, Status string
			LastSeenAt                 string `json:"last_seen_at"`
			AgentID                    string `json:"agent_id"`
		}
		Count int
	}
	mustCall(t, a, "list_agents", nil, &la)
	if la.Count != 1 || la.Agents[0].Status != "active" || la.Agents[0].Module != "api" {
		t.Errorf("list_agents: got %+v", la)
	}
	// The composite id addresses the agent.
	var sent sendResult
	mustCall(t, a, "send_message", map[string]any{"to": who.AgentID, "content": "note to self"}, &sent)
	if !slices.Equal(sent.Recipients, []string{"alice"}) {
		t.Errorf("send to composite id: got %v", sent.Recipients)
	}
	// A name that has not joined gets an inbox; when it comes, the message waits.
	mustCall(t, a, "send_message", map[string]any{"to": "latecomer", "content": "welcome"}, &sent)
	if sent.RecipientStatus != "unregistered" {
		t.Errorf("recipient_status of an unknown name: got %q, want unregistered", sent.RecipientStatus)
	}
	late := e.Session(nil, "--workspace", "w", "--agent", "latecomer")
	var c checkResult
	mustCall(t, late, "check_messages", nil, &c)
	if len(c.Messages) != 1 || c.Messages[0].Content != "welcome" {
		t.Errorf("latecomer inbox: got %+v", c.Messages)
	}
	// set_status is seen by others.
	mustCall(t, late, "set_status", map[string]any{"status": "work"}, nil)
	var agents struct {
		Agents []struct {
			Name       string
			WorkStatus string `json:"work_status"`
		}
	}
	e.MustJSON(&agents, "agents", "--workspace", "w")
	for _, ag := range agents.Agents {
		if ag.Name == "latecomer" && ag.WorkStatus != "work" {
			t.Errorf("latecomer status: got %q, want work", ag.WorkStatus)
		}
	}
}

func TestWorkspaceIsolation(t *testing.T) {
	e := newEnv(t)
	a1 := e.Session(nil, "--workspace", "one", "--agent", "a", "--role", "dev")
	b1 := e.Session(nil, "--workspace", "one", "--agent", "b", "--role", "dev")
	a2 := e.Session(nil, "--workspace", "two", "--agent", "a", "--role", "dev")
	b2 := e.Session(nil, "--workspace", "two", "--agent", "b", "--role", "dev")
	mustCall(t, a1, "send_message", map[string]any{"to": "b", "content": "in one"}, nil)
	mustCall(t, a1, "create_group", map[string]any{"name": "team"}, nil)
	var c checkResult
	mustCall(t, b2, "check_messages", nil, &c)
	if len(c.Messages) != 0 {
		t.Errorf("workspace two's b sees %v", c.Messages)
	}
	if res := call(t, a2, "get_group", map[string]any{"name": "team"}, nil); !res.IsError {
		t.Errorf("workspace two sees workspace one's group")
	}
	if res := call(t, a2, "send_message", map[string]any{"to": "@team", "content": "x"}, nil); !res.IsError {
		t.Errorf("workspace two can address workspace one's group")
	}
	mustCall(t, b1, "check_messages", nil, &c)
	if len(c.Messages) != 1 {
		t.Errorf("workspace one's b: got %d messages, want 1", len(c.Messages))
	}
}

func TestProfilesThatClashAreRefused(t *testing.T) {
	e := newEnv(t)
	c := e.Cmd("mcp", "serve", "--workspace", "w", "--agent", "a", "--profile", "native,sidechat")
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := client.Connect(ctx, &mcp.CommandTransport{Command: c}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err == nil {
		s.Close()
		t.Fatal("native,sidechat: connected, want a refusal (both define send_message)")
	}
	if !strings.Contains(err.Error(), "both define the tool send_message") {
		t.Errorf("native,sidechat: got %v", err)
	}
	// Profiles without shared names combine.
	s2 := e.Session(nil, "--workspace", "w", "--agent", "a", "--profile", "native,self")
	tools, err := s2.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if !slices.Contains(names, "send_message") || !slices.Contains(names, "request_permission") {
		t.Errorf("native,self tools: got %v", names)
	}
}
