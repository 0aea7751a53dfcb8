package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The races of issue 11: a reader that goes away at the moment a message comes
// must not take it with it. Each test ends by draining the inbox with a fresh
// session and checks that every message sent was received at least once, and
// that every repeat says so.
//
// PARLEY_RACE_ROUNDS sets the rounds (CI runs a few dozen; the figures in the
// issue come from 200: PARLEY_RACE_ROUNDS=200 PARLEY_RACE_KILLS=20 go test
// ./e2e -run Race -v). Each test logs its counts.

func raceRounds(t *testing.T, ci int) int {
	if s := os.Getenv("PARLEY_RACE_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("PARLEY_RACE_ROUNDS=%q: want a positive number", s)
		}
		return n
	}
	if testing.Short() {
		return max(ci/3, 3)
	}
	return ci
}

// got is what a reader received: message id -> the delivery counts it saw.
type got struct {
	mu   sync.Mutex
	seen map[string][]int
}

func (g *got) add(mi msgInfo) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.seen == nil {
		g.seen = map[string][]int{}
	}
	g.seen[mi.MessageID] = append(g.seen[mi.MessageID], max(mi.DeliveryCount, 1))
}

type msgInfo struct {
	MessageID     string `json:"message_id"`
	Content       string `json:"content"`
	DeliveryCount int    `json:"delivery_count"`
	Redelivered   bool   `json:"redelivered"`
}

// check verifies every sent message was received, and that a message
// received twice was marked as a repeat the second time. It returns how many
// received copies were repeats.
func (g *got) check(t *testing.T, sent []string) (lost, repeats int) {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, id := range sent {
		counts := g.seen[id]
		if len(counts) == 0 {
			lost++
			t.Errorf("message %s was never received", id)
			continue
		}
		for i, c := range counts {
			if c > 1 {
				repeats++
			}
			if i > 0 && c <= counts[i-1] {
				t.Errorf("message %s received again with delivery count %d after %d: a repeat must say so", id, c, counts[i-1])
			}
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d messages read but never received", lost, len(sent))
	}
	return lost, repeats
}

// drain reads the agent's inbox through a fresh session until every id in
// want was received or 20 s pass: messages that a gone reader held come back
// as the daemon notices it is gone.
func (e *env) drainInto(t *testing.T, g *got, ws, agent string, want []string) {
	t.Helper()
	s := e.Session(nil, "--agent", agent, "--workspace", ws)
	defer s.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var out struct {
			Messages []msgInfo `json:"messages"`
		}
		mustCall(t, s, "check_messages", map[string]any{"limit": 1000}, &out)
		for _, m := range out.Messages {
			g.add(m)
		}
		g.mu.Lock()
		missing := 0
		for _, id := range want {
			if len(g.seen[id]) == 0 {
				missing++
			}
		}
		g.mu.Unlock()
		if missing == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, id := range want {
				if len(g.seen[id]) == 0 {
					var st any
					call(t, s, "message_status", map[string]any{"message_id": id}, &st)
					t.Logf("missing %s: %v", id, st)
				}
			}
			return
		}
		if len(out.Messages) == 0 {
			// Wait for the next message instead of polling.
			var w struct {
				Message *msgInfo `json:"message"`
			}
			mustCall(t, s, "wait_for_message", map[string]any{"timeout": 2}, &w)
			if w.Message != nil {
				g.add(*w.Message)
			}
		}
	}
}

// offset returns a random duration in [-span, span]: how far from the send the
// reader goes away.
func offset(span time.Duration) time.Duration {
	return time.Duration(rand.Int64N(int64(2*span+1))) - span
}

// around runs gone and send about d apart: gone first when d < 0. The sleep
// is the race's offset, not a synchronisation: either order is a valid round.
func around(d time.Duration, gone, send func()) {
	first, second := send, gone
	if d < 0 {
		first, second, d = gone, send, -d
	}
	first()
	time.Sleep(d)
	second()
}

// race is one race test: rounds in which bob blocks in wait_for_message and
// is disturbed (killed, signalled, hung up on) around a send from alice.
type race struct {
	t      *testing.T
	e      *env
	ws     string
	sender *mcp.ClientSession
	g      got
	sent   []string
}

func newRace(t *testing.T, ws string) *race {
	e := newEnv(t)
	e.Must("join", "--name", "bob", "--role", "dev", "--workspace", ws)
	return &race{t: t, e: e, ws: ws, sender: e.Session(nil, "--agent", "alice", "--workspace", ws)}
}

// round runs wait (bob's blocked call; it returns what it received, or nil)
// until the daemon counts it as waiting, then disturbs it and sends to bob:
// within ±span of each other, or, with span 0, the send once wait returned.
// Every round starts with no wait left over from the one before: a wait
// whose client is gone has ended.
func (r *race) round(i int, span time.Duration, wait func() *msgInfo, disturb func()) {
	r.t.Helper()
	waitUntil(r.t, fmt.Sprintf("round %d: the last round's wait to end", i), func() bool { return r.e.waiting(r.ws, "bob") == 0 })
	done := make(chan struct{})
	go func() {
		defer close(done)
		if m := wait(); m != nil {
			r.g.add(*m)
		}
	}()
	// Blocked, or returned at once with a message an earlier round's reader
	// gave back.
	waitUntil(r.t, fmt.Sprintf("round %d: bob blocked in a wait", i), func() bool {
		select {
		case <-done:
			return true
		default:
			return r.e.waiting(r.ws, "bob") > 0
		}
	})
	send := func() {
		var out struct {
			MessageID string `json:"message_id"`
		}
		mustCall(r.t, r.sender, "send_message", map[string]any{"to": "bob", "content": fmt.Sprintf("round %d", i)}, &out)
		r.sent = append(r.sent, out.MessageID)
	}
	if span == 0 {
		disturb()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			r.t.Fatalf("round %d: the wait did not end within 10 s of its disturbance", i)
		}
		send()
		return
	}
	around(offset(span), disturb, send)
	<-done
}

// finish drains bob's inbox and checks that nothing sent was lost.
func (r *race) finish(what string, rounds int) {
	r.t.Helper()
	r.e.drainInto(r.t, &r.g, r.ws, "bob", r.sent)
	lost, repeats := r.g.check(r.t, r.sent)
	r.t.Logf("%s: %d rounds, %d sent, %d lost, %d received again marked as repeats", what, rounds, len(r.sent), lost, repeats)
}

// bridgeWait starts `parley mcp serve` as bob and returns its process and a
// wait_for_message through it.
func (r *race) bridgeWait(ctx context.Context) (*exec.Cmd, *mcp.ClientSession, func() *msgInfo) {
	r.t.Helper()
	cmd := exec.Command(bin, "mcp", "serve", "--agent", "bob", "--workspace", r.ws)
	cmd.Env = r.e.environ()
	client := mcp.NewClient(&mcp.Implementation{Name: "race", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		r.t.Fatalf("connect: %v", err)
	}
	return cmd, cs, func() *msgInfo { return waitedMessage(cs.CallTool(ctx, waitParams)) }
}

var waitParams = &mcp.CallToolParams{Name: "wait_for_message", Arguments: map[string]any{"timeout": 20}}

// waitedMessage is the message a wait_for_message call returned, if any.
func waitedMessage(res *mcp.CallToolResult, err error) *msgInfo {
	if err != nil || res.IsError {
		return nil // the reader went away first
	}
	var w struct {
		Message *msgInfo `json:"message"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	if json.Unmarshal(b, &w) != nil {
		return nil
	}
	return w.Message
}

// TestRaceKillBridge kills `parley mcp serve` with SIGKILL within 20 ms of a
// send while it waits for a message.
func TestRaceKillBridge(t *testing.T) {
	rounds := raceRounds(t, 30)
	r := newRace(t, "race")
	for i := range rounds {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd, cs, wait := r.bridgeWait(ctx)
		r.round(i, 20*time.Millisecond, wait, func() { cmd.Process.Kill() })
		cs.Close()
		cancel()
	}
	r.finish("kill -9 of parley mcp serve within ±20 ms of a send", rounds)
}

// TestRaceSIGHUPBridge: a bridge that gets SIGHUP while it waits ends its
// session, and the message sent next is not lost.
func TestRaceSIGHUPBridge(t *testing.T) {
	rounds := raceRounds(t, 5)
	r := newRace(t, "hup")
	for i := range rounds {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd, cs, wait := r.bridgeWait(ctx)
		// The blocked call ends when mcp serve closes its stdout, which it
		// does as it exits. (The SDK's transport owns cmd.Wait: a second
		// Wait here would race with it.)
		r.round(i, 0, wait, func() { cmd.Process.Signal(syscall.SIGHUP) })
		cs.Close() // reaps the process
		cancel()
	}
	r.finish("SIGHUP of parley mcp serve while it waits", rounds)
}

// TestRaceHTTPDisconnect cancels a go-sdk client's blocked wait_for_message
// over Streamable HTTP within 3 ms of a send; the session goes on and reads
// the rest. The client closes the request's connection, read or not, and
// sends notifications/cancelled from a goroutine: it may come after the
// session's next request.
func TestRaceHTTPDisconnect(t *testing.T) {
	rounds := raceRounds(t, 30)
	r := newRace(t, "drop")
	client := mcp.NewClient(&mcp.Implementation{Name: "drop", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: "http://parley/mcp?agent=bob&workspace=" + r.ws, HTTPClient: r.e.httpClient()},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for i := range rounds {
		ctx, cancel := context.WithCancel(context.Background())
		r.round(i, 3*time.Millisecond, func() *msgInfo { return waitedMessage(cs.CallTool(ctx, waitParams)) }, cancel)
		cancel()
		// The session's next request.
		r.check(cs)
	}
	r.finish("go-sdk client cancelling its wait over HTTP within ±3 ms of a send", rounds)
}

// TestRaceHTTPHangUp kills a plain HTTP client (its blocked
// wait_for_message's connection and its GET stream close, nothing read,
// no notifications/cancelled) within 3 ms of a send: a message written to
// it sits unread in its socket. Such a client never confirms it: its GET
// stream's end gives it back, and the next client reads it.
func TestRaceHTTPHangUp(t *testing.T) {
	rounds := raceRounds(t, 30)
	r := newRace(t, "hangup")
	for i := range rounds {
		s := r.e.dropSession(t, r.ws, "bob", "")
		s.openStream()
		wait, hangUp := hangUpRound[*msgInfo](t, i, func() (net.Conn, error) {
			return s.send("wait_for_message", map[string]any{"timeout": 20})
		})
		r.round(i, 3*time.Millisecond, wait, func() { hangUp(); s.die() })
	}
	r.finish("a plain HTTP client killed in a wait, unread, within ±3 ms of a send", rounds)
}

// TestNextRequestConfirms holds the rule for plain HTTP clients: a client
// that hangs up an answered request without reading it, and without
// cancelling it, and makes its next request in the session, has confirmed
// what the answer carried (a receipt is said, not guessed from its
// socket). One that dies with no GET stream leaves the copy leased to its
// session, unconfirmed, until the lease runs out or the session expires;
// nothing says it has it.
func TestNextRequestConfirms(t *testing.T) {
	e := newEnv(t)
	const ws = "rule"
	e.Must("join", "--name", "bob", "--role", "dev", "--workspace", ws)
	sender := e.Session(nil, "--agent", "alice", "--workspace", ws)
	send := func(text string) string {
		var out struct {
			MessageID string `json:"message_id"`
		}
		mustCall(t, sender, "send_message", map[string]any{"to": "bob", "content": text}, &out)
		return out.MessageID
	}
	state := func(id string) (string, string) {
		var st struct {
			Recipients []struct {
				State      string `json:"state"`
				LeaseUntil string `json:"lease_until"`
			} `json:"recipients"`
		}
		e.mustAPI("GET", "/messages/"+id+"/status", ws, "alice", nil, &st)
		return st.Recipients[0].State, st.Recipients[0].LeaseUntil
	}
	s := e.dropSession(t, ws, "bob", "")
	id := send("hung up on")
	conn, err := s.send("check_messages", nil)
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the check to take the message", func() bool { st, _ := state(id); return st != "queued" })
	conn.Close() // unread
	s.tool(context.Background(), "whoami", nil)
	if st, _ := state(id); st != "read" {
		t.Errorf("after the session's next request: %s, want read", st)
	}
	id = send("never confirmed")
	if conn, err = s.send("check_messages", nil); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the check to take the message", func() bool { st, _ := state(id); return st != "queued" })
	conn.Close() // and the client is gone
	if st, until := state(id); st != "delivered" || until == "" {
		t.Errorf("a copy its dead client never confirmed: %s (lease until %q), want delivered, leased", st, until)
	}
}

// check reads bob's inbox through cs.
func (r *race) check(cs *mcp.ClientSession) {
	var c struct {
		Messages []msgInfo `json:"messages"`
	}
	mustCall(r.t, cs, "check_messages", nil, &c)
	for _, m := range c.Messages {
		r.g.add(m)
	}
}

// dropSession is an MCP session over plain HTTP on the daemon's socket, so
// that a test can hang up a request's connection the way a client that dies
// does, without notifications/cancelled.
type dropSession struct {
	t       *testing.T
	e       *env
	hc      *http.Client
	id      string
	agent   string
	ws      string
	profile string // "": native
	next    int
	mu      sync.Mutex
	conns   []net.Conn // its GET stream's, once open
}

// openStream opens the session's GET stream, as the go-sdk's and the
// TypeScript SDK's clients do.
func (s *dropSession) openStream() {
	s.t.Helper()
	conn, err := net.Dial("unix", filepath.Join(s.e.home, "parley.sock"))
	if err != nil {
		s.t.Fatal(err)
	}
	req := s.request(context.Background(), "")
	req.Method, req.Body, req.ContentLength = "GET", nil, 0
	req.Header.Set("Accept", "text/event-stream")
	if err := req.Write(conn); err != nil {
		s.t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil || resp.StatusCode != http.StatusOK {
		s.t.Fatalf("GET stream: %v %v", resp, err)
	}
	s.mu.Lock()
	s.conns = append(s.conns, conn)
	s.mu.Unlock()
}

// die closes what the session's client keeps open, as a killed client's
// kernel does.
func (s *dropSession) die() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.Close()
	}
	s.conns = nil
}

func (e *env) dropSession(t *testing.T, ws, agent, profile string) *dropSession {
	t.Helper()
	s := &dropSession{t: t, e: e, hc: e.httpClient(), agent: agent, ws: ws, profile: profile}
	resp, body := s.post(context.Background(), `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte(`"result"`)) {
		t.Fatalf("initialize: HTTP %d %s", resp.StatusCode, body)
	}
	s.id = resp.Header.Get("Mcp-Session-Id")
	s.post(context.Background(), `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return s
}

func (s *dropSession) request(ctx context.Context, body string) *http.Request {
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://parley/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Parley-Agent", s.agent)
	req.Header.Set("Parley-Workspace", s.ws)
	if s.profile != "" {
		req.Header.Set("Parley-Profile", s.profile)
	}
	if s.id != "" {
		req.Header.Set("Mcp-Session-Id", s.id)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	return req
}

func (s *dropSession) post(ctx context.Context, body string) (*http.Response, []byte) {
	resp, err := s.hc.Do(s.request(ctx, body))
	if err != nil {
		return &http.Response{StatusCode: 0}, nil
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			buf.WriteString(d)
		} else if strings.HasPrefix(sc.Text(), "{") {
			buf.WriteString(sc.Text())
		}
	}
	return resp, buf.Bytes()
}

func (s *dropSession) callBody(name string, args map[string]any) string {
	s.next++
	a, _ := json.Marshal(args)
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, s.next, name, a)
}

// tool calls a tool and returns its structured content, or nil when the
// request broke.
func (s *dropSession) tool(ctx context.Context, name string, args map[string]any) json.RawMessage {
	_, body := s.post(ctx, s.callBody(name, args))
	var r struct {
		Result struct {
			Structured json.RawMessage `json:"structuredContent"`
		} `json:"result"`
	}
	if json.Unmarshal(body, &r) != nil {
		return nil
	}
	return r.Result.Structured
}

// send writes a tool call on a connection of its own and returns the
// connection, unread, for the caller to hang up.
func (s *dropSession) send(name string, args map[string]any) (net.Conn, error) {
	conn, err := net.Dial("unix", filepath.Join(s.e.home, "parley.sock"))
	if err != nil {
		return nil, err
	}
	if err := s.request(context.Background(), s.callBody(name, args)).Write(conn); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// TestRaceKillDaemonDuringConsume kills the daemon with SIGKILL while a
// session consumes a full inbox one message at a time; its bridge restarts
// the daemon and goes on.
func TestRaceKillDaemonDuringConsume(t *testing.T) {
	kills := raceRounds(t, 5)
	if s := os.Getenv("PARLEY_RACE_KILLS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("PARLEY_RACE_KILLS=%q: want a positive number", s)
		}
		kills = n
	}
	e := newEnv(t)
	const ws = "storm"
	e.Must("join", "--name", "bob", "--role", "dev", "--workspace", ws)
	var sent []string
	var g got
	for k := range kills {
		// The last round's bridge may have ended while the daemon it
		// restarted was still coming up: any CLI command waits for it (or
		// starts one), so the JSON API below is never refused mid-start.
		e.Must("agents", "--workspace", ws)
		// Fill the inbox over the JSON API, then consume it through a bridge.
		for j := range 40 {
			var out struct {
				MessageID string `json:"message_id"`
			}
			e.mustAPI("POST", "/messages", ws, "alice", map[string]any{"to": "bob", "content": fmt.Sprintf("kill %d msg %d", k, j)}, &out)
			sent = append(sent, out.MessageID)
		}
		s := e.Session(nil, "--agent", "bob", "--workspace", ws)
		stop := make(chan struct{})
		consumed := make(chan struct{})
		go func() {
			defer close(consumed)
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "check_messages", Arguments: map[string]any{"limit": 1}})
				cancel()
				if err != nil || res.IsError {
					continue // the daemon is down: the bridge brings it back
				}
				var out struct {
					Messages []msgInfo `json:"messages"`
				}
				b, _ := json.Marshal(res.StructuredContent)
				if json.Unmarshal(b, &out) == nil {
					for _, m := range out.Messages {
						g.add(m)
					}
				}
			}
		}()
		time.Sleep(time.Duration(20+rand.IntN(60)) * time.Millisecond) // mid-storm
		e.kill9()
		// The bridge restarts the daemon on its next call; let it consume a
		// little more, then end this round.
		time.Sleep(200 * time.Millisecond)
		close(stop)
		<-consumed
		s.Close()
	}
	e.drainInto(t, &g, ws, "bob", sent)
	lost, repeats := g.check(t, sent)
	t.Logf("daemon kill -9 during a consume storm: %d kills, %d sent, %d lost, %d received again marked as repeats", kills, len(sent), lost, repeats)
}

// TestAckStatusReply drives the delivery tools end to end: a send that asks
// for an ack within a deadline, its status as it moves, the overdue notice and
// list, the ack, a request answered by wait_for_reply, and the CLI.
func TestAckStatusReply(t *testing.T) {
	e := newEnv(t)
	const ws = "acks"
	alice := e.Session(nil, "--agent", "alice", "--workspace", ws)
	bob := e.Session(nil, "--agent", "bob", "--workspace", ws)

	var sent struct {
		MessageID string `json:"message_id"`
	}
	mustCall(t, alice, "send_message", map[string]any{"to": "bob", "content": "deploy now?", "ack_within": 1}, &sent)
	type status struct {
		AckRequired bool `json:"ack_required"`
		Recipients  []struct {
			Recipient     string `json:"recipient"`
			State         string `json:"state"`
			DeliveryCount int    `json:"delivery_count"`
		} `json:"recipients"`
	}
	stateOf := func(s *mcp.ClientSession) string {
		var st status
		mustCall(t, s, "message_status", map[string]any{"message_id": sent.MessageID}, &st)
		if !st.AckRequired || len(st.Recipients) != 1 || st.Recipients[0].Recipient != "bob" {
			t.Fatalf("message_status: got %+v, want bob's copy of an ack-required message", st)
		}
		return st.Recipients[0].State
	}
	if got := stateOf(alice); got != "queued" {
		t.Errorf("state before bob reads: got %s, want queued", got)
	}
	var in struct {
		Messages []struct {
			MessageID   string `json:"message_id"`
			AckRequired bool   `json:"ack_required"`
		} `json:"messages"`
	}
	mustCall(t, bob, "check_messages", nil, &in)
	if len(in.Messages) != 1 || !in.Messages[0].AckRequired {
		t.Fatalf("bob's check: got %+v, want the message asking for an ack", in)
	}
	// bob's bridge confirms right after writing the result to bob (its
	// confirmation may pass bob's next call on the way).
	for deadline := time.Now().Add(5 * time.Second); stateOf(bob) != "read"; {
		if time.Now().After(deadline) {
			t.Fatalf("state after bob read it: got %s 5 s later, want read", stateOf(bob))
		}
		time.Sleep(10 * time.Millisecond)
	}

	// The deadline passes: alice gets one notice, and the overdue list has it.
	var note struct {
		Message *struct {
			From     string            `json:"from"`
			Metadata map[string]string `json:"metadata"`
		} `json:"message"`
	}
	mustCall(t, alice, "wait_for_message", map[string]any{"timeout": 10}, &note)
	if note.Message == nil || note.Message.From != "parley" || note.Message.Metadata["message_id"] != sent.MessageID {
		t.Fatalf("overdue notice: got %+v, want one from parley about %s", note.Message, sent.MessageID)
	}
	var od struct {
		Overdue []struct {
			MessageID string   `json:"message_id"`
			Pending   []string `json:"pending"`
		} `json:"overdue"`
	}
	mustCall(t, alice, "list_overdue", nil, &od)
	if len(od.Overdue) != 1 || od.Overdue[0].MessageID != sent.MessageID || len(od.Overdue[0].Pending) != 1 {
		t.Errorf("list_overdue: got %+v, want the message, pending bob", od)
	}
	if out := e.Must("overdue", "--agent", "alice", "--workspace", ws); !strings.Contains(out, sent.MessageID) || !strings.Contains(out, "bob") {
		t.Errorf("parley overdue: got %q, want the message and bob", out)
	}

	// bob acks over the CLI; the status and the list follow.
	if out := e.Must("ack", sent.MessageID, "--agent", "bob", "--workspace", ws); !strings.Contains(out, "acknowledged 1") {
		t.Errorf("parley ack: got %q", out)
	}
	if got := stateOf(alice); got != "acked" {
		t.Errorf("state after the ack: got %s, want acked", got)
	}
	mustCall(t, alice, "list_overdue", nil, &od)
	if len(od.Overdue) != 0 {
		t.Errorf("list_overdue after the ack: got %+v, want none", od)
	}
	if out := e.Must("delivery", sent.MessageID, "--agent", "alice", "--workspace", ws); !strings.Contains(out, "acked") {
		t.Errorf("parley delivery: got %q, want bob's copy acked", out)
	}
	if res := call(t, bob, "ack_message", map[string]any{"message_ids": []string{"01NOSUCHMESSAGE0000000000"}}, nil); !res.IsError {
		t.Errorf("ack of an unknown message: got %s, want a tool error", text(res))
	}

	// A request answered in one call: alice asks, bob replies in the thread.
	mustCall(t, alice, "send_message", map[string]any{"to": "bob", "content": "which port?"}, &sent)
	mustCall(t, bob, "send_message", map[string]any{"to": "alice", "content": "unrelated"}, nil)
	go func() {
		waitForWaiter(t, e, ws, "alice") // alice's wait_for_reply is blocked: the reply wakes it
		var out any
		mustCall(t, bob, "send_message", map[string]any{"to": "alice", "content": "8080", "reply_to": sent.MessageID}, &out)
	}()
	var reply struct {
		Status  string `json:"status"`
		Message *struct {
			Content string `json:"content"`
		} `json:"message"`
	}
	mustCall(t, alice, "wait_for_reply", map[string]any{"message_id": sent.MessageID, "timeout": 10}, &reply)
	if reply.Message == nil || reply.Message.Content != "8080" {
		t.Errorf("wait_for_reply: got %+v, want the reply 8080", reply)
	}
	mustCall(t, alice, "check_messages", nil, &in)
	if len(in.Messages) != 1 {
		t.Errorf("alice's inbox after the reply: got %d messages, want the unrelated one left", len(in.Messages))
	}
}

// TestJSONReceipts: a JSON API read that asks for receipts stays leased to the
// reader its response names until that reader confirms it or gives it back
// (the channel push does this around its write to Claude Code).
func TestJSONReceipts(t *testing.T) {
	e := newEnv(t)
	const ws = "rcpt"
	e.Must("join", "--name", "bob", "--role", "dev", "--workspace", ws)
	var sent struct {
		MessageID string `json:"message_id"`
	}
	e.mustAPI("POST", "/messages", ws, "alice", map[string]any{"to": "bob", "content": "hi"}, &sent)
	post := func(path string, h http.Header, body string) (int, http.Header, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", "http://parley/api/v1"+path, strings.NewReader(body))
		req.Header = h
		req.Header.Set("Parley-Workspace", ws)
		req.Header.Set("Parley-Agent", "bob")
		resp, err := e.httpClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return resp.StatusCode, resp.Header, b.String()
	}
	state := func() (string, int) {
		var st struct {
			Recipients []struct {
				State         string `json:"state"`
				DeliveryCount int    `json:"delivery_count"`
			} `json:"recipients"`
		}
		e.mustAPI("GET", "/messages/"+sent.MessageID+"/status", ws, "alice", nil, &st)
		return st.Recipients[0].State, st.Recipients[0].DeliveryCount
	}
	wait := func() string {
		code, h, body := post("/inbox/wait", http.Header{"Parley-Receipts": {"1"}}, `{"timeout":5}`)
		if code != 200 || !strings.Contains(body, sent.MessageID) || !strings.HasPrefix(h.Get("Parley-Reader"), "api-") {
			t.Fatalf("wait with receipts: %d %s, reader %q; want the message and an api- reader", code, body, h.Get("Parley-Reader"))
		}
		return h.Get("Parley-Reader")
	}
	reader := wait()
	if st, n := state(); st != "delivered" || n != 1 {
		t.Errorf("after the read: got %s (%d), want delivered (1): written is not confirmed", st, n)
	}
	receipt := func(reader string, received bool) (int, string) {
		code, _, body := post("/inbox/receipts", http.Header{"Parley-Reader": {reader}, "Content-Type": {"application/json"}},
			fmt.Sprintf(`{"message_ids":[%q],"received":%v}`, sent.MessageID, received))
		return code, body
	}
	if code, body := receipt(reader, false); code != 200 || !strings.Contains(body, `"count":1`) {
		t.Fatalf("give back: %d %s", code, body)
	}
	if st, n := state(); st != "redelivered" || n != 1 {
		t.Errorf("after giving it back: got %s (%d), want redelivered (1)", st, n)
	}
	reader = wait()
	if code, body := receipt(reader, true); code != 200 || !strings.Contains(body, `"count":1`) {
		t.Fatalf("confirm: %d %s", code, body)
	}
	if st, n := state(); st != "read" || n != 2 {
		t.Errorf("after the confirmation: got %s (%d), want read (2)", st, n)
	}
	// A receipt needs a JSON API reader.
	if code, _ := receipt("", true); code != 400 {
		t.Errorf("receipt without a reader: got HTTP %d, want 400", code)
	}
	if code, _ := receipt("SOMEMCPSESSION", true); code != 400 {
		t.Errorf("receipt naming an MCP session: got HTTP %d, want 400", code)
	}
}

// TestNoFalseRepeats: go-sdk clients over HTTP that end each call's context
// as soon as the call returns (defer cancel(), the common way) read every
// message once. Their transport closes the connection as the context ends,
// with whatever came after the answer unread, and the kernel resets it just
// as for a client that hung up on an unread answer: nothing may follow an
// answer on the wire.
func TestNoFalseRepeats(t *testing.T) {
	const readers, each = 4, 100
	e := newEnv(t)
	const ws = "once"
	sender := e.Session(nil, "--agent", "alice", "--workspace", ws)
	var (
		g    got
		mu   sync.Mutex
		sent []string
		wg   sync.WaitGroup
	)
	for i := range readers {
		name := fmt.Sprintf("r%d", i)
		client := mcp.NewClient(&mcp.Implementation{Name: "once", Version: "1"}, nil)
		cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{
			Endpoint: "http://parley/mcp?agent=" + name + "&workspace=" + ws, HTTPClient: e.httpClient()},
			&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			seen := map[string]bool{}
			deadline := time.Now().Add(60 * time.Second)
			for n := 0; len(seen) < each && time.Now().Before(deadline); n++ {
				// Half block in a wait, half read the inbox: a wait's
				// answer comes alone, a check's may carry several.
				p := &mcp.CallToolParams{Name: "check_messages", Arguments: map[string]any{"limit": 20}}
				if n%2 == 0 {
					p = &mcp.CallToolParams{Name: "wait_for_message", Arguments: map[string]any{"timeout": 5}}
				}
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				res, err := cs.CallTool(ctx, p)
				cancel()
				if err != nil || res.IsError {
					t.Errorf("%s: %s: %v %v", name, p.Name, err, res)
					return
				}
				var out struct {
					Message  *msgInfo  `json:"message"`
					Messages []msgInfo `json:"messages"`
				}
				b, _ := json.Marshal(res.StructuredContent)
				json.Unmarshal(b, &out)
				if out.Message != nil {
					out.Messages = append(out.Messages, *out.Message)
				}
				for _, m := range out.Messages {
					g.add(m)
					seen[m.MessageID] = true
				}
			}
		}()
	}
	for n := range readers * each {
		var out struct {
			MessageID string `json:"message_id"`
		}
		mustCall(t, sender, "send_message", map[string]any{"to": fmt.Sprintf("r%d", n%readers), "content": fmt.Sprintf("once %d", n)}, &out)
		mu.Lock()
		sent = append(sent, out.MessageID)
		mu.Unlock()
	}
	wg.Wait()
	lost, repeats := g.check(t, sent)
	t.Logf("%d readers cancelling each call as it returns: %d sent, %d lost, %d received again", readers, len(sent), lost, repeats)
	// With the last chunk after the answer, 14 in 100 came again. Under
	// heavy load a rare one still does (TestSoak saw 3 in 5,978 at load 27,
	// cause not found); more than 1 in 100 is the old fault.
	if repeats*100 > len(sent) {
		t.Errorf("%d of %d messages came again: a client that read its answer was taken for one that hung up", repeats, len(sent))
	}
}

// TestCLIConfirmsAfterPrinting: `parley wait` and `parley inbox` confirm what
// they read only once they printed it. Killed with kill -9 while stuck
// printing (their stdout is a full pipe nobody reads), they confirmed
// nothing: the message stays leased to them, unread, until the lease ends a
// minute later and it goes back to the inbox. One that prints confirms.
func TestCLIConfirmsAfterPrinting(t *testing.T) {
	e := newEnv(t)
	const ws = "cli"
	e.Must("join", "--name", "bob", "--role", "dev", "--workspace", ws)
	send := func(content string) string {
		var sent struct {
			MessageID string `json:"message_id"`
		}
		e.mustAPI("POST", "/messages", ws, "alice", map[string]any{"to": "bob", "content": content}, &sent)
		return sent.MessageID
	}
	status := func(id string) (state, leaseUntil string) {
		var st struct {
			Recipients []struct {
				State      string `json:"state"`
				LeaseUntil string `json:"lease_until"`
			} `json:"recipients"`
		}
		e.mustAPI("GET", "/messages/"+id+"/status", ws, "alice", nil, &st)
		return st.Recipients[0].State, st.Recipients[0].LeaseUntil
	}
	for _, args := range [][]string{{"wait", "--timeout", "20s"}, {"inbox"}, {"wait", "--timeout", "20s", "--json"}} {
		what := strings.Join(args, " ")
		id := send("for " + what)
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		fillPipe(t, w)
		cmd := exec.Command(bin, append(args, "--agent", "bob", "--workspace", ws)...)
		cmd.Env, cmd.Stdout = e.environ(), w
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, what+" to read the message", func() bool { st, _ := status(id); return st != "queued" })
		cmd.Process.Kill()
		cmd.Wait()
		r.Close()
		w.Close()
		st, until := status(id)
		lease, _ := time.Parse(time.RFC3339Nano, until)
		if st != "delivered" || time.Until(lease) > time.Minute+5*time.Second {
			t.Errorf("%s killed before it printed: the message is %s (lease until %q), want delivered, leased for at most a minute", what, st, until)
		}
		e.mustAPI("POST", "/inbox/check", ws, "bob", map[string]any{"limit": 100}, nil) // the next test's inbox starts empty
	}
	id := send("printed")
	out := e.Must("wait", "--timeout", "20s", "--agent", "bob", "--workspace", ws)
	if !strings.Contains(out, "printed") {
		t.Fatalf("wait printed %q, want the message", out)
	}
	if st, _ := status(id); st != "read" {
		t.Errorf("after wait printed it: the message is %s, want read", st)
	}
}

// hangUpRound is one round's pair of a hang-up race: read sends a blocking
// read and returns when it is hung up (or answered at once with a message an
// earlier round gave back); hangUp closes its connection without reading.
func hangUpRound[T any](t *testing.T, i int, send func() (net.Conn, error)) (read func() T, hangUp func()) {
	conns := make(chan net.Conn, 1)
	hungUp := make(chan struct{})
	read = func() T {
		var zero T
		conn, err := send()
		if err != nil {
			t.Errorf("round %d: send the read: %v", i, err)
			close(conns)
			return zero
		}
		conns <- conn
		select {
		case <-hungUp:
		case <-answered(t, conn): // it took a message an earlier round gave back
		}
		return zero
	}
	hangUp = func() {
		if conn := <-conns; conn != nil {
			conn.Close()
		}
		close(hungUp)
	}
	return read, hangUp
}
