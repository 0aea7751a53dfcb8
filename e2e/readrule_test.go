package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/ops"
)

// tokenSession opens an MCP session over TCP with an agent token (and the
// profile, if any).
func tokenSession(t *testing.T, addr, tok, profile string) *mcp.ClientSession {
	t.Helper()
	url := "http://" + addr + "/mcp"
	if profile != "" {
		url += "?profile=" + profile
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	hc := &http.Client{Transport: headerRT{"Authorization": "Bearer " + tok}}
	s, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("MCP over TCP with an agent token: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestTokenReadRule is the read rule of agent tokens (internal/ops/read.go),
// tried through every door that can hand out a message: each operation open
// to agent tokens that reads messages, over the JSON API and over MCP, and
// the event stream. alice's token reads what she sent or received and the
// rest of her threads; never carol and bob's private thread, nor another
// workspace. A message she may not read answers as one that does not exist.
func TestTokenReadRule(t *testing.T) {
	e := newEnv(t, "PARLEY_WORKSPACE=team")
	e.Must("daemon", "start", "--listen", "127.0.0.1:0")
	addr := listenAddr(t, e)
	var created struct{ Token string }
	e.MustJSON(&created, "token", "create", "--agent", "alice")
	tok := created.Token
	for _, a := range []string{"alice", "bob", "carol"} {
		e.Must("join", "--name", a, "--role", "dev")
	}
	send := func(from, to, content, replyTo string, extra ...string) string {
		t.Helper()
		args := append([]string{"send", to, content, "--agent", from, "--json"}, extra...)
		if replyTo != "" {
			args = append(args, "--reply-to", replyTo)
		}
		var r struct {
			ID string `json:"message_id"`
		}
		e.MustJSON(&r, args...)
		return r.ID
	}
	// carol and bob's thread: never alice's.
	secret1 := send("carol", "bob", "carol-to-bob SECRET", "")
	send("bob", "carol", "bob-to-carol SECRET", secret1)
	// alice's thread, with a reply between the two others in it.
	own1 := send("alice", "bob", "alice-to-bob MINE", "")
	send("bob", "alice", "bob-to-alice MINE", own1)
	visible := send("bob", "carol", "bob-to-carol-in-alices-thread VISIBLE", own1)
	// Another workspace, where alice has a namesake.
	send("carol", "alice", "elsewhere-to-alice SECRET", "", "--workspace", "elsewhere")
	// A task waiting in a queue: any agent of the workspace may claim it.
	send("carol", "queue:jobs", "queue-task OPEN", "")
	const missing = "01JZZZZZZZZZZZZZZZZZZZZZZZ"

	mine := []string{"alice-to-bob MINE", "bob-to-alice MINE", "VISIBLE"}
	type check struct {
		name string
		op   string // the operation of ops (ops.ReadRuleOps) it tries
		// do runs the case and returns what came back (a body, a tool
		// result's text) and whether it was refused (an HTTP error, a tool
		// error).
		do      func(t *testing.T) (out string, refused bool)
		refused bool     // want an error
		want    []string // and these in the answer
	}
	api := func(method, path, body string) func(*testing.T) (string, bool) {
		return func(t *testing.T) (string, bool) {
			code, out := tcpCall(t, addr, tok, method, "/api/v1"+path, body)
			return fmt.Sprintf("%d %s", code, out), code != http.StatusOK
		}
	}
	native := tokenSession(t, addr, tok, "")
	lean := tokenSession(t, addr, tok, "lean")
	tool := func(s *mcp.ClientSession, name string, args map[string]any) func(*testing.T) (string, bool) {
		return func(t *testing.T) (string, bool) {
			res := call(t, s, name, args, nil)
			return text(res), res.IsError
		}
	}
	cases := []check{
		// JSON API.
		{"history", "History", api("GET", "/messages", ""), false, mine},
		{"history with bob", "History", api("GET", "/messages?with=bob", ""), false, mine},
		{"history with carol: only her reply in alice's thread", "History", api("GET", "/messages?with=carol", ""), false, []string{"VISIBLE"}},
		{"history of their thread", "History", api("GET", "/messages?thread="+secret1, ""), false, nil},
		{"one message of theirs", "GetMessage", api("GET", "/messages/"+secret1, ""), true, []string{`no message \"` + secret1}},
		{"one message that does not exist", "GetMessage", api("GET", "/messages/"+missing, ""), true, []string{`no message \"` + missing}},
		{"a reply in her thread", "GetMessage", api("GET", "/messages/"+visible, ""), false, []string{"VISIBLE"}},
		{"status of theirs", "MessageStatus", api("GET", "/messages/"+secret1+"/status", ""), true, nil},
		{"status of hers", "MessageStatus", api("GET", "/messages/"+own1+"/status", ""), false, []string{`"recipient":"bob"`}},
		{"status of a reply in her thread: no copy", "MessageStatus", api("GET", "/messages/"+visible+"/status", ""), false, []string{`"recipients":[]`}},
		{"search", "SearchMessages", api("GET", "/search?query=SECRET", ""), false, nil},
		{"search her thread", "SearchMessages", api("GET", "/search?query=VISIBLE", ""), false, []string{"VISIBLE"}},
		{"wait for a reply to theirs", "WaitForReply", api("POST", "/inbox/reply", `{"message_id":"`+secret1+`","timeout":1}`), true, nil},
		{"reply into their thread", "Send", api("POST", "/messages", `{"to":"bob","content":"joining","reply_to":"`+secret1+`"}`), true, nil},
		{"everyone's overdue", "Overdue", api("GET", "/overdue?all=true", ""), true, nil},
		{"her overdue", "Overdue", api("GET", "/overdue", ""), false, nil},
		{"everyone's bounced", "Bounced", api("GET", "/bounced?all=true", ""), true, nil},
		{"her bounced", "Bounced", api("GET", "/bounced", ""), false, []string{`"bounced":[]`}},
		{"redeliver theirs", "Redeliver", api("POST", "/messages/"+secret1+"/redeliver", `{}`), true, []string{`no message \"` + secret1}},
		{"the queue's waiting tasks", "Queue", api("GET", "/queues/jobs", ""), false, []string{"queue-task OPEN"}},
		{"peek at her inbox", "Peek", api("GET", "/inbox", ""), false, []string{"bob-to-alice MINE"}},
		{"check her inbox", "Check", api("POST", "/inbox/check", `{}`), false, []string{"bob-to-alice MINE"}},
		{"wait on her inbox", "Wait", api("POST", "/inbox/wait", `{"timeout":1}`), false, nil},
		{"claim the task", "ClaimTask", api("POST", "/queues/jobs/claim", `{"timeout":1}`), false, []string{"queue-task OPEN"}},
		// The profiles whose tools read any inbox by name are closed.
		{"sidechat's receive", "Receive", api("POST", "/mcp?profile=sidechat", `{}`), true, nil},
		{"agentmail's receive", "Receive", api("POST", "/mcp?profile=agentmail", `{}`), true, nil},
		{"sidechat's has_messages", "Unread", api("POST", "/mcp?profile=sidechat", `{}`), true, nil},
		// The event stream carries every message's preview: closed.
		{"events", "", api("GET", "/events", ""), true, nil},
		// MCP.
		{"get_thread of theirs", "Thread", tool(native, "get_thread", map[string]any{"message_id": secret1}), true, []string{`no message "` + secret1}},
		{"get_thread of hers", "Thread", tool(native, "get_thread", map[string]any{"message_id": visible}), false, mine},
		{"message_status of theirs", "MessageStatus", tool(native, "message_status", map[string]any{"message_id": secret1}), true, nil},
		{"search_messages", "SearchMessages", tool(native, "search_messages", map[string]any{"query": "SECRET"}), false, nil},
		{"wait_for_reply to theirs", "WaitForReply", tool(native, "wait_for_reply", map[string]any{"message_id": secret1, "timeout": 1}), true, nil},
		{"send_message into their thread", "Send", tool(native, "send_message", map[string]any{"to": "bob", "content": "x", "reply_to": secret1}), true, nil},
		{"list_overdue all", "Overdue", tool(native, "list_overdue", map[string]any{"all": true}), true, nil},
		{"check_messages", "Check", tool(native, "check_messages", nil), false, nil},
		{"lean reply to theirs", "Reply", tool(lean, "reply", map[string]any{"message_id": secret1, "content": "x"}), true, nil},
	}
	covered := map[string]bool{}
	for _, c := range cases {
		covered[c.op] = true
		t.Run(c.name, func(t *testing.T) {
			out, refused := c.do(t)
			if refused != c.refused {
				t.Errorf("refused: got %v, want %v: %s", refused, c.refused, out)
			}
			if strings.Contains(out, "SECRET") {
				t.Errorf("alice's token read another's message: %s", out)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("want %q in the answer: %s", w, out)
				}
			}
		})
	}
	for _, op := range ops.ReadRuleOps() {
		if !covered[op] {
			t.Errorf("operation %s reads messages, and no case here tries it", op)
		}
	}
	// Nothing alice tried joined carol and bob's thread.
	var h struct {
		Messages []struct{ Content string } `json:"messages"`
	}
	e.mustAPI("GET", "/messages?thread="+secret1, "team", "", nil, &h)
	if n := len(h.Messages); n != 2 || slices.ContainsFunc(h.Messages, func(m struct{ Content string }) bool { return !strings.Contains(m.Content, "SECRET") }) {
		t.Errorf("carol and bob's thread after alice's tries: got %+v, want their two messages", h.Messages)
	}
}
