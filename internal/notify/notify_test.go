package notify_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/parley-dev/parley/internal/notify"
)

// received is what a receiver saw of one request.
type received struct {
	header http.Header
	body   []byte
	at     time.Time
}

// receiver records requests and answers each with the next status of codes
// (200 once they run out).
type receiver struct {
	mu    sync.Mutex
	got   []received
	codes []int
	ch    chan received
}

func newReceiver(codes ...int) *receiver {
	return &receiver{codes: codes, ch: make(chan received, 100)}
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	rec := received{header: r.Header.Clone(), body: b, at: time.Now()}
	rc.mu.Lock()
	rc.got = append(rc.got, rec)
	code := 200
	if len(rc.codes) > 0 {
		code, rc.codes = rc.codes[0], rc.codes[1:]
	}
	rc.mu.Unlock()
	if code == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "10")
	}
	w.WriteHeader(code)
	rc.ch <- rec
}

func (rc *receiver) next(t *testing.T) received {
	t.Helper()
	select {
	case r := <-rc.ch:
		return r
	case <-time.After(10 * time.Minute): // in the bubble, fake minutes
		t.Fatal("no request reached the receiver")
	}
	return received{}
}

func TestWebhookAndNtfy(t *testing.T) {
	hook, topic := newReceiver(), newReceiver()
	hs, ts := httptest.NewServer(hook), httptest.NewServer(topic)
	defer hs.Close()
	defer ts.Close()
	// A broken endpoint: nothing listens there.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + ln.Addr().String() + "/"
	ln.Close()
	var logs bytes.Buffer
	n := notify.New([]notify.Endpoint{
		{Name: "dead", URL: dead},
		{URL: hs.URL + "/hook", Headers: map[string]string{"Authorization": "Bearer s3cret"}},
		{URL: ts.URL + "/parley-alerts", Format: notify.Ntfy, Kinds: []notify.Kind{notify.Permission}},
	}, &notify.Options{Backoff: time.Hour, Logger: slog.New(slog.NewTextHandler(&syncWriter{w: &logs}, nil))})
	defer n.Close()

	start := time.Now()
	n.Notify(notify.Notice{Kind: notify.Critical, Workspace: "w", Agent: "alice", Title: "critical from alice", Message: "prod is down", ID: "m1"})
	n.Notify(notify.Notice{Kind: notify.Permission, Workspace: "w", Agent: "w1", Title: "w1 asks to use Bash ✓", Message: "rm -rf build", ID: "perm-1"})
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("Notify took %v; it must not wait for endpoints", d)
	}

	for _, want := range []string{"m1", "perm-1"} {
		r := hook.next(t)
		var got notify.Notice
		if err := json.Unmarshal(r.body, &got); err != nil || got.ID != want || got.Time.IsZero() {
			t.Errorf("webhook body: got %s (%v), want the notice %s with a time", r.body, err, want)
		}
		if r.header.Get("Content-Type") != "application/json" || r.header.Get("Authorization") != "Bearer s3cret" {
			t.Errorf("webhook headers: %v", r.header)
		}
	}
	r := topic.next(t)
	if string(r.body) != "rm -rf build" || r.header.Get("Title") != "w1 asks to use Bash ?" || r.header.Get("Priority") != "urgent" || r.header.Get("Tags") != "parley,permission" {
		t.Errorf("ntfy request: body %q, headers %v", r.body, r.header)
	}
	select {
	case r := <-topic.ch:
		t.Errorf("the ntfy endpoint wants permissions only, got %s", r.body)
	default:
	}
	n.Close()
	if strings.Contains(logs.String(), "s3cret") || strings.Contains(logs.String(), "/parley-alerts") {
		t.Errorf("the log shows a secret or an endpoint's URL:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "endpoint=dead") {
		t.Errorf("the broken endpoint is not logged:\n%s", logs.String())
	}
}

// TestBackoff: failures are retried after 1s, 2s, 4s... (Retry-After when
// longer), a refusal for good is not retried, and a notice gives up after
// the last attempt. The receiver is a real HTTP server reached over an
// in-memory network, so the bubble's fake clock runs the waits.
func TestBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rc := newReceiver(503, 503, 429, 503, 200, // retried until accepted
			400,                     // refused for good
			500, 500, 500, 500, 500) // out of attempts
		l := newPipeListener()
		srv := &http.Server{Handler: rc}
		go srv.Serve(l)
		client := &http.Client{Transport: &http.Transport{DialContext: l.dial, DisableKeepAlives: true}}
		n := notify.New([]notify.Endpoint{{URL: "http://receiver/hook"}}, &notify.Options{Client: client, Attempts: 5,
			Logger: slog.New(slog.NewTextHandler(tWriter{t}, nil))})

		start := time.Now()
		n.Notify(notify.Notice{Kind: notify.Critical, ID: "a"})
		var at []time.Duration
		for range 5 {
			at = append(at, rc.next(t).at.Sub(start))
		}
		// After the 429 with Retry-After: 10, the wait is 10s instead of
		// 4s; the doubling goes on from there (8s).
		want := []time.Duration{0, 1 * time.Second, 3 * time.Second, 13 * time.Second, 21 * time.Second}
		for i := range want {
			if at[i] != want[i] {
				t.Fatalf("attempts at %v, want %v", at, want)
			}
		}

		n.Notify(notify.Notice{Kind: notify.Critical, ID: "b"})
		first := rc.next(t).at
		n.Notify(notify.Notice{Kind: notify.Critical, ID: "c"})
		// "b" was refused with 400: the next request is "c" at once.
		if r := rc.next(t); !bytes.Contains(r.body, []byte(`"id":"c"`)) || r.at != first {
			t.Fatalf("after a 400: got %s at +%v, want notice c at once", r.body, r.at.Sub(first))
		}
		for range 4 {
			rc.next(t)
		}
		synctest.Wait()
		time.Sleep(time.Hour)
		select {
		case r := <-rc.ch:
			t.Fatalf("a sixth attempt of c: %s", r.body)
		default:
		}
		n.Close()
		srv.Close()
	})
}

// pipeListener is an in-memory network: dial gives the server one end of a
// net.Pipe.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	c, s := net.Pipe()
	select {
	case l.conns <- s:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// tWriter logs through t.
type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
