package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tcpDo is tcpCall that also returns the response's headers.
func tcpDo(t *testing.T, addr, tok, method, path, body string, headers ...string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// agentToken makes a token for agent (in the environment's workspace, or
// ws) and returns its secret.
func agentToken(t *testing.T, e *env, agent string, ws ...string) string {
	t.Helper()
	args := []string{"token", "create", "--agent", agent}
	if len(ws) > 0 {
		args = append(args, "--workspace", ws[0])
	}
	var created struct{ Token string }
	e.MustJSON(&created, args...)
	return created.Token
}

// copyState is the state of recipient's copy of a message, as the socket's
// user sees it.
func copyState(t *testing.T, e *env, ws, id, recipient string) string {
	t.Helper()
	var st struct {
		Recipients []struct{ Recipient, State string } `json:"recipients"`
	}
	e.mustAPI("GET", "/messages/"+id+"/status", ws, "", nil, &st)
	for _, r := range st.Recipients {
		if r.Recipient == recipient {
			return r.State
		}
	}
	return ""
}

// TestReceiptsAreTheReaders: a reader key of the JSON API (Parley-Reader,
// given to a read that confirms by itself) settles only its own agent's
// reads. alice, holding bob's key, can neither confirm his unread copy (he
// would never see it) nor push it back (he would see it twice), from her
// workspace or another; nor lend the key to a read of her own. Each refusal
// is logged, without the key. bob settles it. (hub.Reader binds the keys;
// this is the door-level regression test of issue 24.)
func TestReceiptsAreTheReaders(t *testing.T) {
	e := newEnv(t, "PARLEY_WORKSPACE=team")
	e.Must("daemon", "start", "--listen", "127.0.0.1:0")
	addr := listenAddr(t, e)
	alice, bob := agentToken(t, e, "alice"), agentToken(t, e, "bob")
	aliceElsewhere := agentToken(t, e, "alice", "elsewhere")
	var sent struct {
		ID string `json:"message_id"`
	}
	e.MustJSON(&sent, "send", "bob", "for bob's eyes", "--agent", "carol", "--json")

	code, body, h := tcpDo(t, addr, bob, "POST", "/api/v1/inbox/check", `{}`, "Parley-Receipts: 1")
	key := h.Get("Parley-Reader")
	if code != 200 || key == "" || !strings.Contains(body, "for bob's eyes") {
		t.Fatalf("bob's read with receipts: %d %s, reader %q", code, body, key)
	}
	receipt := func(received bool) string {
		b, _ := json.Marshal(map[string]any{"message_ids": []string{sent.ID}, "received": received})
		return string(b)
	}
	for _, c := range []struct {
		name, tok, path, body string
		want                  int
	}{
		{"alice confirms bob's copy", alice, "/api/v1/inbox/receipts", receipt(true), 403},
		{"alice pushes bob's copy back", alice, "/api/v1/inbox/receipts", receipt(false), 403},
		{"alice of another workspace confirms it", aliceElsewhere, "/api/v1/inbox/receipts", receipt(true), 403},
		{"alice reads under bob's key", alice, "/api/v1/inbox/check", `{}`, 403},
		{"alice waits under bob's key", alice, "/api/v1/inbox/wait", `{"timeout":1}`, 403},
	} {
		code, body := tcpCall(t, addr, c.tok, "POST", c.path, c.body, "Parley-Reader: "+key)
		if code != c.want {
			t.Errorf("%s: got %d %s, want %d", c.name, code, body, c.want)
		}
		if st := copyState(t, e, "team", sent.ID, "bob"); st != "delivered" {
			t.Fatalf("after %s: bob's copy is %q, want delivered (still his reader's)", c.name, st)
		}
	}
	if code, body := tcpCall(t, addr, bob, "POST", "/api/v1/inbox/receipts", receipt(true), "Parley-Reader: "+key); code != 200 || !strings.Contains(body, `"count":1`) {
		t.Errorf("bob's own receipt: got %d %s, want 200 and count 1", code, body)
	}
	if st := copyState(t, e, "team", sent.ID, "bob"); st != "read" {
		t.Errorf("after bob's receipt: his copy is %q, want read", st)
	}
	log, err := os.ReadFile(filepath.Join(e.home, "daemon.log"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(log), "refused a reader of another agent"); n != 5 {
		t.Errorf("daemon.log: %d refusals logged, want 5 (one per try)\n%s", n, log)
	}
	if strings.Contains(string(log), key) {
		t.Errorf("daemon.log holds the reader key itself")
	}
}
