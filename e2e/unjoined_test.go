package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/api"
)

// TestSendToANameNobodyHas: a send to a name that never joined (bbo, beside
// bob) answers queued, not delivered, with a warning that names bob, in the
// CLI (text and --json), the MCP result and the JSON API; the message waits
// in bbo's inbox and bounces back after unjoined_ttl (here 2s), with the
// sender told; a send to bob, or through the Sidechat profile, is as ever.
func TestSendToANameNobodyHas(t *testing.T) {
	e := newEnv(t)
	writeFile(t, filepath.Join(e.home, "config.toml"), "unjoined_ttl = \"2s\"\n")
	const ws = "w"
	e.Must("join", "--workspace", ws, "--name", "bob", "--role", "dev")
	e.Must("join", "--workspace", ws, "--name", "alice", "--role", "lead")

	out, errs, code := e.runIn(e.home, "send", "bbo", "hi there", "--workspace", ws, "--agent", "alice")
	if code != 0 || !strings.HasPrefix(out, "queued ") || !strings.Contains(out, "bbo has never joined this workspace; did you mean bob?") || !strings.Contains(out, "bounces back to you in 2s") {
		t.Errorf("parley send bbo: exit %d %q %q, want queued and a warning naming bob", code, out, errs)
	}
	out, errs, code = e.runIn(e.home, "send", "bbo", "again", "--workspace", ws, "--agent", "alice", "--json")
	var res api.SendResult
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res.Status != "queued" || res.RecipientStatus != "unregistered" || !strings.Contains(res.Warning, "did you mean bob?") || !strings.Contains(errs, "warning: bbo has never joined") {
		t.Errorf("parley send bbo --json: exit %d %s %s", code, out, errs)
	}
	if out := e.Must("send", "bob", "hi", "--workspace", ws, "--agent", "alice"); !strings.HasPrefix(out, "sent ") {
		t.Errorf("send to bob: %q, want sent", out)
	}

	// The MCP result.
	s := e.Session(nil, "--workspace", ws, "--agent", "alice")
	var sent api.SendResult
	mustCall(t, s, "send_message", map[string]any{"to": "bbo", "content": "over mcp"}, &sent)
	if sent.Status != "queued" || !strings.Contains(sent.Warning, "did you mean bob?") {
		t.Errorf("send_message to bbo: %+v", sent)
	}
	// Sidechat's seed keeps mail for an agent that does not exist yet: no
	// short time to live, its result as the seed's.
	sc := e.Session(nil, "--profile", "sidechat")
	var scOut struct {
		MessageID string `json:"message_id"`
	}
	mustCall(t, sc, "send_message", map[string]any{"session": ws, "to": "later", "message": map[string]any{"kind": "hello"}}, &scOut)

	// The JSON API, as README's curl example does it.
	body, _ := json.Marshal(api.SendRequest{To: "bbo", Content: "over the API"})
	req, _ := http.NewRequest(http.MethodPost, "http://parley/api/v1/messages", bytes.NewReader(body))
	req.Header.Set(api.HeaderWorkspace, ws)
	req.Header.Set(api.HeaderAgent, "alice")
	resp, err := e.httpClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var apiRes api.SendResult
	json.NewDecoder(resp.Body).Decode(&apiRes)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || apiRes.Status != "queued" || !strings.Contains(apiRes.Warning, "did you mean bob?") {
		t.Errorf("POST /api/v1/messages to bbo: %d %+v", resp.StatusCode, apiRes)
	}

	// After unjoined_ttl the copies to bbo bounce back, and alice is told;
	// Sidechat's waits.
	var dead api.BouncedResult
	waitFor(t, 30*time.Second, "the mail to bbo bounced", func() (bool, string) {
		out, _, _ := e.runIn(e.home, "bounced", "--workspace", ws, "--agent", "alice", "--json")
		json.Unmarshal([]byte(out), &dead)
		return len(dead.Bounced) == 4, out
	})
	for _, b := range dead.Bounced {
		if b.Recipient != "bbo" {
			t.Errorf("bounced: %+v, want only bbo's copies", b)
		}
	}
	var has struct {
		HasMessages bool `json:"has_messages"`
	}
	if mustCall(t, sc, "has_messages", map[string]any{"session": ws, "agent": "later"}, &has); !has.HasMessages {
		t.Errorf("Sidechat's later has no message %s after unjoined_ttl: want it kept", scOut.MessageID)
	}
}

// TestExitStatusesAsDocumented: README's table of exit statuses holds for
// the commands that used to exit 1: a bad --ttl is invalid input (2), a
// token with no agent is a usage error (2), a reservation that runs into
// another agent's is a conflict (5).
func TestExitStatusesAsDocumented(t *testing.T) {
	e := newEnv(t)
	repo := gitRepo(t)
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"send", "bob", "hi", "--ttl", "soon", "--agent", "alice"}, 2},
		{[]string{"send", "bob", "hi", "--ttl", "10ms", "--agent", "alice"}, 2},
		{[]string{"send", "bob", "hi", "--meta", "novalue", "--agent", "alice"}, 2},
		{[]string{"token", "create"}, 2},
	} {
		if out, errs, code := e.in(t, repo, tc.args...); code != tc.want {
			t.Errorf("parley %v: exit %d %s%s, want %d", tc.args, code, out, errs, tc.want)
		}
	}
	if _, errs, code := e.in(t, repo, "reserve", "src/a.go", "--agent", "alice"); code != 0 {
		t.Fatalf("alice reserves: exit %d %s", code, errs)
	}
	if out, _, code := e.in(t, repo, "reserve", "src/a.go", "--agent", "bob"); code != 5 {
		t.Errorf("bob reserves alice's file: exit %d %s, want 5 (conflict)", code, out)
	}
}
