package codexrpc_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/parley-dev/parley/internal/codexrpc"
	"github.com/parley-dev/parley/internal/testenv"
	"github.com/parley-dev/parley/internal/testenv/standin"
)

// appServer starts the real `codex app-server` (test/npm), pointed at a
// stand-in model, and a Conn on its stdio read as internal/runner reads it.
// Closing stdin ends the process.
func appServer(t *testing.T) (c *codexrpc.Conn, stdin io.Closer) {
	t.Helper()
	codex := standin.CLI(t, "codex")
	model := standin.OpenAI(t, func(*standin.ResponsesRequest) []standin.Item { return nil })
	home := t.TempDir()
	cmd := exec.Command(codex, append(standin.CodexConfig(model), "app-server")...)
	cmd.Dir = home
	cmd.Env = []string{"HOME=" + home, "CODEX_HOME=" + standin.CodexHome(home), "PATH=" + os.Getenv("PATH"), "TMPDIR=" + home, testenv.GoRace()}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var wmu sync.Mutex
	c = codexrpc.New(func(_ context.Context, b []byte) error {
		wmu.Lock()
		defer wmu.Unlock()
		_, err := in.Write(append(b, '\n'))
		return err
	}, &codexrpc.Options{Timeout: time.Minute, Peer: "codex app-server"})
	read := make(chan struct{})
	go func() {
		defer close(read)
		br := bufio.NewReaderSize(out, 64<<10)
		for {
			line, err := br.ReadBytes('\n')
			var m codexrpc.Message
			if json.Unmarshal(line, &m) == nil && m.IsAnswer() {
				c.Answer(&m)
			}
			if err != nil {
				c.Fail(errors.New("the codex app-server exited"))
				return
			}
		}
	}()
	t.Cleanup(func() {
		in.Close()
		<-read
		cmd.Wait()
	})
	return c, in
}

// TestAppServer drives the real app-server: answers that come out of order
// reach their own calls, a refusal is an *Error with the server's words,
// and once the process is gone every call says so.
func TestAppServer(t *testing.T) {
	c, stdin := appServer(t)
	ctx := t.Context()
	var init struct {
		CodexHome string `json:"codexHome"`
	}
	if err := c.Call(ctx, "initialize", map[string]any{"clientInfo": map[string]string{"name": "parley-test", "version": "1"}}, &init); err != nil {
		t.Fatal(err)
	}
	if init.CodexHome == "" {
		t.Errorf("initialize: got no codexHome in the answer")
	}
	if err := c.Notify(ctx, "initialized"); err != nil {
		t.Fatal(err)
	}

	// thread/start takes the app-server a while; a refusal sent after it
	// is answered first.
	const unknown = "01a21a39-0000-7000-8000-000000000000"
	var thread struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	started := make(chan error, 1)
	go func() {
		started <- c.Call(ctx, "thread/start", map[string]any{"cwd": t.TempDir()}, &thread)
	}()
	err := c.Call(ctx, "thread/read", map[string]any{"threadId": unknown}, nil)
	var re *codexrpc.Error
	if !errors.As(err, &re) || re.Code != -32600 || !strings.Contains(re.Message, unknown) {
		t.Fatalf("thread/read of an unknown thread: got %v, want an error answer -32600 naming the thread", err)
	}
	if want := "thread/read: codex app-server: " + re.Message + " (code -32600)"; err.Error() != want {
		t.Errorf("refusal: got %q, want %q", err, want)
	}
	if err := <-started; err != nil || thread.Thread.ID == "" {
		t.Fatalf("thread/start: got %v, thread %q; want a thread id", err, thread.Thread.ID)
	}

	// Calls in flight together each get their own answer.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			var res struct {
				Thread struct {
					ID string `json:"id"`
				} `json:"thread"`
			}
			if err := c.Call(ctx, "thread/read", map[string]any{"threadId": thread.Thread.ID}, &res); err != nil || res.Thread.ID != thread.Thread.ID {
				t.Errorf("thread/read: got %v, thread %q; want thread %q", err, res.Thread.ID, thread.Thread.ID)
			}
		})
		wg.Go(func() {
			if err := c.Call(ctx, "thread/read", map[string]any{"threadId": unknown}, nil); !errors.As(err, new(*codexrpc.Error)) {
				t.Errorf("thread/read of an unknown thread: got %v, want an error answer", err)
			}
		})
	}
	wg.Wait()

	stdin.Close() // the app-server exits at the end of its input
	select {
	case <-c.Done():
	case <-time.After(time.Minute):
		t.Fatal("the app-server did not exit at the end of its input")
	}
	err = c.Call(ctx, "thread/read", map[string]any{"threadId": thread.Thread.ID}, nil)
	if err == nil || err.Error() != "thread/read: the codex app-server exited" {
		t.Errorf("call after the process ended: got %v, want thread/read: the codex app-server exited", err)
	}
}

// peer is the far end of a Conn in a synctest bubble: what the Conn wrote,
// one message each.
type peer chan []byte

func (p peer) write(_ context.Context, b []byte) error {
	p <- append([]byte(nil), b...)
	return nil
}

// next is the next message the Conn wrote, decoded.
func (p peer) next(t *testing.T) (raw string, m codexrpc.Message) {
	t.Helper()
	select {
	case b := <-p:
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("wrote %q: %v", b, err)
		}
		return string(b), m
	default:
		t.Fatal("nothing written")
	}
	return "", m
}

func answer(id json.RawMessage, result string) *codexrpc.Message {
	return &codexrpc.Message{ID: id, Result: json.RawMessage(result)}
}

// TestWire: the bytes of each kind of message, which the app-server reads.
func TestWire(t *testing.T) {
	p := make(peer, 4)
	c := codexrpc.New(p.write, nil)
	ctx := t.Context()
	done := make(chan error, 1)
	go func() { done <- c.Call(ctx, "turn/steer", map[string]any{"threadId": "t1", "input": []any{}}, nil) }()
	raw := string(<-p)
	if want := `{"id":1,"method":"turn/steer","params":{"input":[],"threadId":"t1"}}`; raw != want {
		t.Errorf("call: wrote %s, want %s", raw, want)
	}
	c.Answer(answer(json.RawMessage("1"), "{}"))
	if err := <-done; err != nil {
		t.Errorf("call: %v", err)
	}
	c.Notify(ctx, "initialized")
	c.Reply(ctx, json.RawMessage("7"), map[string]string{"decision": "accept"})
	c.ReplyError(ctx, json.RawMessage(`"r8"`), -32601, "parley does not handle x")
	for _, want := range []string{`{"method":"initialized"}`, `{"id":7,"result":{"decision":"accept"}}`,
		`{"error":{"code":-32601,"message":"parley does not handle x"},"id":"r8"}`} {
		if raw, _ := p.next(t); raw != want {
			t.Errorf("wrote %s, want %s", raw, want)
		}
	}
}

// TestCalls: answers find their calls by id in any order, an answer
// nobody waits for is dropped, a call gives up at its timeout, and a
// failed connection ends the calls in flight and refuses new ones.
func TestCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := make(peer, 8)
		c := codexrpc.New(p.write, &codexrpc.Options{Timeout: 10 * time.Second})
		ctx := context.Background()
		type result struct {
			N   int `json:"n"`
			err error
		}
		call := func(method string) <-chan result {
			ch := make(chan result, 1)
			go func() {
				var r result
				r.err = c.Call(ctx, method, nil, &r)
				ch <- r
			}()
			return ch
		}
		a, b := call("a"), call("b")
		synctest.Wait()
		_, m1 := p.next(t)
		_, m2 := p.next(t)
		if m1.Method == "b" {
			m1, m2 = m2, m1
		}
		if c.Answer(answer(m2.ID, `{"n":2}`)) != true || c.Answer(answer(m1.ID, `{"n":1}`)) != true {
			t.Fatal("an answer found no call")
		}
		if r := <-a; r.err != nil || r.N != 1 {
			t.Errorf("call a: got %d, %v; want 1", r.N, r.err)
		}
		if r := <-b; r.err != nil || r.N != 2 {
			t.Errorf("call b: got %d, %v; want 2", r.N, r.err)
		}
		if c.Answer(answer(m1.ID, `{"n":3}`)) {
			t.Error("a second answer to one call was taken")
		}
		for _, id := range []string{"99", `"1"`, "null"} {
			if c.Answer(answer(json.RawMessage(id), "{}")) {
				t.Errorf("answer with id %s, no call's: taken", id)
			}
		}

		// An error answer, and one that does not decode.
		e, bad := call("e"), call("bad")
		synctest.Wait()
		for range 2 {
			_, m := p.next(t)
			if m.Method == "e" {
				c.Answer(&codexrpc.Message{ID: m.ID, Error: &codexrpc.Error{Code: -32600, Message: "no such thread"}})
			} else {
				c.Answer(answer(m.ID, `[1]`))
			}
		}
		var re *codexrpc.Error
		if r := <-e; !errors.As(r.err, &re) || r.err.Error() != "e: no such thread (code -32600)" {
			t.Errorf("error answer: got %v, want e: no such thread (code -32600), an *Error", r.err)
		}
		if r := <-bad; r.err == nil || !strings.HasPrefix(r.err.Error(), "bad: read the answer: ") {
			t.Errorf("answer that does not decode: got %v, want bad: read the answer: ...", r.err)
		}

		start := time.Now()
		slow := call("slow")
		synctest.Wait()
		p.next(t)
		r := <-slow
		if !errors.Is(r.err, context.DeadlineExceeded) || r.err.Error() != "slow: context deadline exceeded" || time.Since(start) != 10*time.Second {
			t.Errorf("unanswered call: got %v after %v; want slow: context deadline exceeded after 10s", r.err, time.Since(start))
		}

		inflight := call("inflight")
		synctest.Wait()
		_, m := p.next(t)
		gone := errors.New("the codex app-server exited")
		c.Fail(gone)
		c.Fail(errors.New("a later failure"))
		if r := <-inflight; !errors.Is(r.err, gone) || r.err.Error() != "inflight: the codex app-server exited" {
			t.Errorf("call in flight when the connection failed: got %v", r.err)
		}
		if c.Answer(answer(m.ID, "{}")) {
			t.Error("an answer after the failure was taken")
		}
		if err := c.Call(ctx, "later", nil, nil); !errors.Is(err, gone) || err.Error() != "later: the codex app-server exited" {
			t.Errorf("call after the failure: got %v", err)
		}
		if c.Err() != gone {
			t.Errorf("Err: got %v, want the first failure", c.Err())
		}
	})
}

// TestPeerNamed: with Peer set, a refusal and a call left unanswered name
// the server.
func TestPeerNamed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := make(peer, 2)
		c := codexrpc.New(p.write, &codexrpc.Options{Timeout: time.Minute, Peer: "codex app-server"})
		errs := make(chan error, 1)
		go func() { errs <- c.Call(context.Background(), "turn/start", nil, nil) }()
		synctest.Wait()
		_, m := p.next(t)
		c.Answer(&codexrpc.Message{ID: m.ID, Error: &codexrpc.Error{Code: 1, Message: "busy"}})
		if err := <-errs; err == nil || err.Error() != "turn/start: codex app-server: busy (code 1)" {
			t.Errorf("refusal: got %v", err)
		}
		go func() { errs <- c.Call(context.Background(), "turn/start", nil, nil) }()
		err := <-errs
		if !errors.Is(err, context.DeadlineExceeded) || err.Error() != "turn/start: no answer from the codex app-server: context deadline exceeded" {
			t.Errorf("no answer: got %v", err)
		}
	})
}

// TestMessageKinds: how a decoded message is told apart.
func TestMessageKinds(t *testing.T) {
	for _, tc := range []struct {
		line            string
		answer, request bool
	}{
		{`{"id":3,"result":{}}`, true, false},
		{`{"id":3,"error":{"code":-32600,"message":"no"}}`, true, false},
		{`{"id":4,"method":"item/commandExecution/requestApproval","params":{}}`, false, true},
		{`{"method":"turn/completed","params":{}}`, false, false},
	} {
		var m codexrpc.Message
		if err := json.Unmarshal([]byte(tc.line), &m); err != nil {
			t.Fatal(err)
		}
		if m.IsAnswer() != tc.answer || m.IsRequest() != tc.request {
			t.Errorf("%s: answer %v, request %v; want %v, %v", tc.line, m.IsAnswer(), m.IsRequest(), tc.answer, tc.request)
		}
	}
}
