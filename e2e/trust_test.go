package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/store/postgres/pgtest"
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

// tcpAsync makes a JSON API request over TCP with a bearer token in a
// goroutine; its outcome (status and body, or the error) comes on the channel.
func tcpAsync(ctx context.Context, addr, tok, method, path, body string) <-chan string {
	out := make(chan string, 1)
	go func() {
		req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+path, strings.NewReader(body))
		if err != nil {
			out <- err.Error()
			return
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			out <- "error: " + err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		out <- fmt.Sprintf("%d %s", resp.StatusCode, b)
	}()
	return out
}

// rawStream opens a stream session (Upgrade: parley-mcp) over TCP with a
// bearer token and initializes it; lines reads what the daemon writes, and
// ends when the connection does.
func rawStream(t *testing.T, addr, tok string) (conn net.Conn, lines <-chan string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "GET /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nConnection: Upgrade\r\nUpgrade: parley-mcp\r\n\r\n", addr, tok)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade to a stream with an agent token: %v %v", resp, err)
	}
	ch := make(chan string, 64)
	go func() {
		defer close(ch)
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				return
			}
			ch <- l
		}
	}()
	fmt.Fprintln(c, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	select {
	case l := <-ch:
		if !strings.Contains(l, `"id":1`) {
			t.Fatalf("initialize on the stream: got %s", l)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no answer to initialize on the stream")
	}
	fmt.Fprintln(c, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return c, ch
}

// waiting is how many calls wait for agent's next message, as the socket's
// user sees it.
func waiting(t *testing.T, e *env, ws, agent string) int {
	var l struct {
		Agents []struct {
			Name    string `json:"name"`
			Waiting int    `json:"waiting"`
		} `json:"agents"`
	}
	e.mustAPI("GET", "/agents", ws, "", nil, &l)
	for _, a := range l.Agents {
		if a.Name == agent {
			return a.Waiting
		}
	}
	return 0
}

// TestRevocationEndsWhatIsOpen: revoking alice's token ends at once what is
// open under it: a JSON API wait answers 403 "revoked", an MCP wait over
// Streamable HTTP ends with an error, a raw stream session closes (it can
// neither wait nor send any more); none takes the message sent next, which
// stays queued.
func TestRevocationEndsWhatIsOpen(t *testing.T) {
	e := newEnv(t, "PARLEY_WORKSPACE=team")
	e.Must("daemon", "start", "--listen", "127.0.0.1:0")
	addr := listenAddr(t, e)
	e.Must("join", "--name", "alice", "--role", "dev")
	var created struct{ ID, Token string }
	e.MustJSON(&created, "token", "create", "--agent", "alice")
	tok := created.Token

	apiWait := tcpAsync(t.Context(), addr, tok, "POST", "/api/v1/inbox/wait", `{"timeout":120}`)
	s := tokenSession(t, addr, tok, "")
	mcpWait := make(chan string, 1)
	go func() {
		res, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: "wait_for_message", Arguments: map[string]any{"timeout": 120}})
		switch {
		case err != nil:
			mcpWait <- "error: " + err.Error()
		case res.IsError:
			mcpWait <- "tool error: " + text(res)
		default:
			mcpWait <- "result: " + text(res)
		}
	}()
	conn, lines := rawStream(t, addr, tok)
	fmt.Fprintln(conn, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"wait_for_message","arguments":{"timeout":120}}}`)
	waitFor(t, 20*time.Second, "alice's three waits", func() (bool, string) { n := waiting(t, e, "team", "alice"); return n == 3, fmt.Sprint(n) })

	e.Must("token", "revoke", created.ID)
	within := time.After(10 * time.Second)
	select {
	case got := <-apiWait:
		if !strings.HasPrefix(got, "403 ") || !strings.Contains(got, "revoked") {
			t.Errorf("JSON API wait at the revocation: got %s, want 403 saying the token was revoked", got)
		}
	case <-within:
		t.Fatal("the JSON API wait is still blocked 10 s after its token was revoked")
	}
	select {
	case got := <-mcpWait:
		if strings.HasPrefix(got, "result:") {
			t.Errorf("MCP wait at the revocation: got %s, want it ended", got)
		}
	case <-within:
		t.Fatal("the MCP wait is still blocked 10 s after its token was revoked")
	}
	var streamed []string
	for open := true; open; {
		select {
		case l, ok := <-lines:
			if !ok {
				open = false
				break
			}
			streamed = append(streamed, l)
		case <-within:
			t.Fatalf("the stream session is still open 10 s after its token was revoked (it wrote %q)", streamed)
		}
	}
	for _, l := range streamed {
		if strings.Contains(l, "message_received") {
			t.Errorf("the stream's wait took a message: %s", l)
		}
	}
	// Closed: what it would send now goes nowhere.
	fmt.Fprintln(conn, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"send_message","arguments":{"to":"bob","content":"after revocation"}}}`)
	waitUntil(t, "no wait of alice's left", func() bool { return waiting(t, e, "team", "alice") == 0 })
	var sent struct {
		ID string `json:"message_id"`
	}
	e.MustJSON(&sent, "send", "alice", "after the revocation", "--agent", "bob", "--json")
	if st := copyState(t, e, "team", sent.ID, "alice"); st != "queued" {
		t.Errorf("a message for alice after the revocation: its copy is %q, want queued (no revoked wait takes it)", st)
	}
	if out := e.Must("history", "--agent", "bob"); strings.Contains(out, "after revocation") {
		t.Errorf("the closed stream sent a message:\n%s", out)
	}
	if code, _ := tcpCall(t, addr, tok, "GET", "/api/v1/agents", ""); code != http.StatusUnauthorized {
		t.Errorf("the revoked token afterwards: got %d, want 401", code)
	}
}

// TestRevocationAcrossDaemons: on a shared PostgreSQL store, revoking a token
// at one daemon ends a wait blocked under it at another at once.
func TestRevocationAcrossDaemons(t *testing.T) {
	dsn := pgtest.Database(t)
	a := newEnv(t, "PARLEY_STORE="+dsn, "PARLEY_WORKSPACE=team")
	b := newEnv(t, "PARLEY_STORE="+dsn, "PARLEY_WORKSPACE=team")
	a.Must("daemon", "start")
	b.Must("daemon", "start", "--listen", "127.0.0.1:0")
	addr := listenAddr(t, b)
	a.Must("join", "--name", "alice", "--role", "dev")
	var created struct{ ID, Token string }
	a.MustJSON(&created, "token", "create", "--agent", "alice")
	wait := tcpAsync(t.Context(), addr, created.Token, "POST", "/api/v1/inbox/wait", `{"timeout":120}`)
	waitUntil(t, "alice's wait at B", func() bool { return waiting(t, b, "team", "alice") == 1 })
	a.Must("token", "revoke", created.ID)
	select {
	case got := <-wait:
		if !strings.HasPrefix(got, "403 ") || !strings.Contains(got, "revoked") {
			t.Errorf("the wait at B when A revoked its token: got %s, want 403 saying it was revoked", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the wait at B is still blocked 10 s after A revoked its token")
	}
}

// TestTokenBindsRole: a token binds its agent's role as well as its name and
// workspace: a session with it cannot make alice a reviewer (to receive
// @reviewer mail), by header or query; a token made with --role gives that
// role.
func TestTokenBindsRole(t *testing.T) {
	e := newEnv(t, "PARLEY_WORKSPACE=team")
	e.Must("daemon", "start", "--listen", "127.0.0.1:0")
	addr := listenAddr(t, e)
	e.Must("join", "--name", "alice", "--role", "dev")
	alice := agentToken(t, e, "alice")
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	for _, c := range []struct {
		name, path string
		headers    []string
	}{
		{"header", "/mcp", []string{"Parley-Role: reviewer", "Accept: application/json, text/event-stream"}},
		{"query", "/mcp?role=reviewer", []string{"Accept: application/json, text/event-stream"}},
	} {
		if code, body := tcpCall(t, addr, alice, "POST", c.path, init, c.headers...); code != http.StatusForbidden || !strings.Contains(body, "role") {
			t.Errorf("alice's token claiming the reviewer role by %s: got %d %s, want 403", c.name, code, body)
		}
	}
	s := tokenSession(t, addr, alice, "")
	var who struct{ Role string }
	mustCall(t, s, "whoami", nil, &who)
	if who.Role != "dev" {
		t.Errorf("alice's session with her token: role %q, want dev (her role when the token was made)", who.Role)
	}
	if _, errs, code := e.Run("send", "@reviewer", "review this", "--agent", "bob"); code == 0 || !strings.Contains(errs, "reviewer") {
		t.Errorf("a send to @reviewer: exit %d, %s; want no reviewer to reach", code, errs)
	}
	// The admin may give a role.
	var carol struct{ Token, Role string }
	e.MustJSON(&carol, "token", "create", "--agent", "carol", "--role", "reviewer")
	if carol.Role != "reviewer" {
		t.Fatalf("token create --role reviewer: got role %q", carol.Role)
	}
	mustCall(t, tokenSession(t, addr, carol.Token, ""), "whoami", nil, &who)
	if who.Role != "reviewer" {
		t.Errorf("carol's session with a reviewer token: role %q, want reviewer", who.Role)
	}
}

// TestGroupChangesAreTheCreators: with agent tokens, a group is changed by
// its creator only (a member may leave by itself): alice cannot add herself
// to bob's group to receive its mail, take carol out, or delete it. The
// admin (the socket's user) can.
func TestGroupChangesAreTheCreators(t *testing.T) {
	e := newEnv(t, "PARLEY_WORKSPACE=team")
	e.Must("daemon", "start", "--listen", "127.0.0.1:0")
	addr := listenAddr(t, e)
	alice, bob, carol := agentToken(t, e, "alice"), agentToken(t, e, "bob"), agentToken(t, e, "carol")
	member := func(tok, method, who string) (int, string) {
		return tcpCall(t, addr, tok, method, "/api/v1/groups/ops/members", `{"member_type":"agent","member_id":"`+who+`"}`)
	}
	if code, body := tcpCall(t, addr, bob, "POST", "/api/v1/groups", `{"name":"ops"}`); code != 200 {
		t.Fatalf("bob creates ops: %d %s", code, body)
	}
	for _, who := range []string{"bob", "carol", "dave"} {
		if code, body := member(bob, "POST", who); code != 200 {
			t.Fatalf("bob adds %s: %d %s", who, code, body)
		}
	}
	for _, c := range []struct {
		name string
		do   func() (int, string)
		want int
	}{
		{"alice adds herself", func() (int, string) { return member(alice, "POST", "alice") }, 403},
		{"alice removes carol", func() (int, string) { return member(alice, "DELETE", "carol") }, 403},
		{"alice deletes the group", func() (int, string) { return tcpCall(t, addr, alice, "DELETE", "/api/v1/groups/ops", "") }, 403},
		{"carol adds alice", func() (int, string) { return member(carol, "POST", "alice") }, 403},
		{"carol leaves", func() (int, string) { return member(carol, "DELETE", "carol") }, 200},
		{"bob removes dave", func() (int, string) { return member(bob, "DELETE", "dave") }, 200},
	} {
		if code, body := c.do(); code != c.want {
			t.Errorf("%s: got %d %s, want %d", c.name, code, body, c.want)
		}
	}
	var g struct {
		Members []struct{ ID string } `json:"members"`
	}
	e.mustAPI("GET", "/groups/ops", "team", "", nil, &g)
	if len(g.Members) != 1 || g.Members[0].ID != "bob" {
		t.Errorf("ops after the tries: got %+v, want bob alone", g.Members)
	}
	e.Must("group", "add", "ops", "alice")
	e.Must("group", "delete", "ops")
}

// TestCompleteTaskSurvivesKill9: complete_task marks a task done and stores
// its result in one transaction. Under a storm of kill -9s, four claimants
// work through a queue, retrying a completion the kill cut off; at the end
// every task is done and has exactly one result, none done without one (a
// retry that hears "completed already" must find its result there).
func TestCompleteTaskSurvivesKill9(t *testing.T) {
	e := newEnv(t)
	e.Must("daemon", "start")
	const ws, tasks, kills = "q", 800, 20
	for i := range tasks {
		e.mustAPI("POST", "/messages", ws, "boss", map[string]any{"to": "queue:build", "content": fmt.Sprintf("task %d", i)}, nil)
	}
	stop := make(chan struct{})
	var completed atomic.Int64
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			agent := fmt.Sprintf("worker%d", w)
			hc := e.httpClient()
			ctx := context.Background()
			call := func(path string, in any) (int, []byte, error) {
				c, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				return e.apiCall(c, hc, "POST", path, ws, agent, in)
			}
			for {
				select {
				case <-stop:
					return
				default:
				}
				code, body, err := call("/queues/build/claim", map[string]any{"timeout": 1})
				var claim struct {
					Task *struct {
						ID string `json:"message_id"`
					} `json:"task"`
				}
				if err != nil || code != 200 || json.Unmarshal(body, &claim) != nil || claim.Task == nil {
					time.Sleep(20 * time.Millisecond) // the daemon is down, or the queue empty
					continue
				}
				// Complete, again after a kill, until the daemon answers.
				for {
					code, _, err := call("/tasks/"+claim.Task.ID+"/complete", map[string]any{"result": "result of " + claim.Task.ID})
					if err == nil && code < 500 {
						if code == 200 {
							completed.Add(1)
						}
						break // done, done already, or its claim ended with the daemon
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
		})
	}
	for k := range kills {
		from := completed.Load()
		waitFor(t, 60*time.Second, "completions between kills", func() (bool, string) {
			n := completed.Load()
			return n >= from+15, fmt.Sprint(n - from)
		})
		e.killNow()
		if out, errs, code := e.Run("daemon", "start"); code != 0 {
			t.Fatalf("restart %d after kill -9: exit %d\n%s%s", k+1, code, out, errs)
		}
	}
	// The rest of the queue, without kills: once none waits, the claimants
	// finish what they hold (no restart takes a claim away any more).
	waitFor(t, 120*time.Second, "every task done", func() (bool, string) {
		var q struct {
			Waiting int `json:"waiting"`
		}
		e.mustAPI("GET", "/queues/build", ws, "", nil, &q)
		return q.Waiting == 0, fmt.Sprintf("%d waiting, %d completed", q.Waiting, completed.Load())
	})
	close(stop)
	wg.Wait()
	e.Must("daemon", "stop")

	db := e.openDB()
	rows, err := db.Query(`SELECT t.id, d.read_at IS NOT NULL,
			(SELECT count(*) FROM messages r WHERE r.reply_to = t.id AND r.metadata LIKE '%task_completed%')
		FROM messages t JOIN deliveries d ON d.message_seq = t.seq
		WHERE t.workspace = ? AND t.to_addr = 'queue:build'`, ws)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var done, n int
	for rows.Next() {
		var id string
		var read bool
		var results int
		if err := rows.Scan(&id, &read, &results); err != nil {
			t.Fatal(err)
		}
		n++
		switch {
		case read && results == 0:
			t.Errorf("task %s is done and has no result: its sender never hears", id)
		case results > 1:
			t.Errorf("task %s has %d results", id, results)
		case !read && results > 0:
			t.Errorf("task %s has a result and is not done", id)
		}
		if read {
			done++
		}
	}
	if n != tasks || done != tasks {
		t.Errorf("tasks: %d stored, %d done; want %d and %d", n, done, tasks, tasks)
	}
	t.Logf("%d tasks done across %d kills; %d completions answered 200", done, kills, completed.Load())
}

// TestWaitForReplyCountsRepliers: wait_for_reply returns a reply from whom
// the message went to (for a task: its claimant's result), never a stranger's
// message in the thread, which stays in the inbox as ordinary mail.
func TestWaitForReplyCountsRepliers(t *testing.T) {
	e := newEnv(t, "PARLEY_WORKSPACE=team")
	e.Must("daemon", "start")
	e.Must("join", "--name", "alice", "--role", "dev")
	id := func(args ...string) string {
		t.Helper()
		var r struct {
			ID string `json:"message_id"`
		}
		e.MustJSON(&r, append(args, "--json")...)
		return r.ID
	}
	waitReply := func(msg string) <-chan string {
		out := make(chan string, 1)
		go func() {
			code, body, err := e.apiCall(t.Context(), e.httpClient(), "POST", "/inbox/reply", "team", "alice",
				map[string]any{"message_id": msg, "timeout": 60})
			out <- fmt.Sprintf("%d %s %v", code, body, err)
		}()
		waitUntil(t, "alice waiting for a reply", func() bool { return waiting(t, e, "team", "alice") == 1 })
		return out
	}
	answer := func(wait <-chan string) string {
		t.Helper()
		select {
		case got := <-wait:
			return got
		case <-time.After(30 * time.Second):
			t.Fatal("no answer to the wait for a reply")
			return ""
		}
	}

	q := id("send", "bob", "ready?", "--agent", "alice")
	wait := waitReply(q)
	e.Must("send", "alice", "mallory answers", "--agent", "mallory", "--reply-to", q)
	e.Must("send", "alice", "yes, ready", "--agent", "bob", "--reply-to", q)
	if got := answer(wait); !strings.Contains(got, "yes, ready") {
		t.Errorf("alice's wait for bob's reply: got %s, want bob's", got)
	}

	task := id("send", "queue:build", "build it", "--agent", "alice")
	wait = waitReply(task)
	e.Must("send", "alice", "forged: done", "--agent", "mallory", "--reply-to", task, "--meta", "kind=task_completed", "--meta", "task_id="+task)
	var claim struct {
		Task struct {
			ID string `json:"message_id"`
		} `json:"task"`
	}
	e.MustJSON(&claim, "queue", "claim", "build", "--agent", "worker", "--json")
	if claim.Task.ID != task {
		t.Fatalf("worker claimed %q, want the task %s", claim.Task.ID, task)
	}
	e.Must("queue", "complete", task, "--result", "built by the worker", "--agent", "worker")
	if got := answer(wait); !strings.Contains(got, "built by the worker") {
		t.Errorf("alice's wait for the task's result: got %s, want the claimant's", got)
	}
	// The strangers' messages are ordinary mail.
	var inbox struct {
		Messages []struct{ Content string } `json:"messages"`
	}
	e.mustAPI("GET", "/inbox", "team", "alice", nil, &inbox)
	var left []string
	for _, m := range inbox.Messages {
		left = append(left, m.Content)
	}
	if strings.Join(left, "|") != "mallory answers|forged: done" {
		t.Errorf("alice's inbox: got %q, want mallory's two messages", left)
	}
}
