package door

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Opencode is one opencode instance (1.18 and later), reached through the
// local HTTP server its TUI starts (127.0.0.1, port 4096 unless taken):
// POST /session/{id}/prompt_async adds a user message to a session and
// starts its turn (204 at once); the instance's event stream (GET /event,
// server-sent events) tells of the message (message.updated,
// message.part.updated with its text) and of the model's answer to it (an
// assistant message whose parentID is the letter's message): only then did
// the turn carry the letter.
//
// opencode starts its MCP servers once per instance and tells them of no
// session (no session id in their environment nor in tools/call): a letter
// goes to the instance's newest top-level session in its directory (the
// one its TUI shows, where one TUI runs in a checkout), or to a new one,
// which the TUI is asked to show, when there is none yet.
type Opencode struct {
	URL       string // http://127.0.0.1:PORT
	Directory string // the instance's directory (its project)
	// Client is the HTTP client; nil means one with a short timeout.
	Client *http.Client
}

// EnvOpencodePID is what opencode gives the processes it starts (its MCP
// servers among them): its own process id (and OPENCODE=1).
const EnvOpencodePID = "OPENCODE_PID"

// opencodeTimeout bounds one request to the server.
const opencodeTimeout = 10 * time.Second

func (o *Opencode) client() *http.Client {
	if o.Client != nil {
		return o.Client
	}
	return &http.Client{Timeout: opencodeTimeout}
}

func (o *Opencode) endpoint(path string) string {
	q := url.Values{}
	if o.Directory != "" {
		q.Set("directory", o.Directory)
	}
	u := strings.TrimRight(o.URL, "/") + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

// call does one request; out, if not nil, gets the JSON answer.
func (o *Opencode) call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, _ := json.Marshal(in)
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, o.endpoint(path), body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := o.client().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("%w: %s %s: %s", ErrRefused, method, path, bytes.TrimSpace(b))
	case resp.StatusCode >= 400:
		return fmt.Errorf("%w: %s %s: %s: %s", ErrRefused, method, path, resp.Status, bytes.TrimSpace(b))
	}
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
	return nil
}

// Health asks the server who it is: its version. An error means no
// opencode server answers there.
func (o *Opencode) Health(ctx context.Context) (string, error) {
	var h struct {
		Healthy bool   `json:"healthy"`
		Version string `json:"version"`
	}
	if err := o.call(ctx, http.MethodGet, "/global/health", nil, &h); err != nil {
		return "", &Error{Op: "opencode health", Kind: opencodeKind(err), Err: err}
	}
	if !h.Healthy || h.Version == "" {
		return "", &Error{Op: "opencode health", Err: errors.New("not an opencode server (no healthy version in /global/health)")}
	}
	return h.Version, nil
}

// opencodeSession is what the server lists of a session.
type opencodeSession struct {
	ID       string `json:"id"`
	ParentID string `json:"parentID"`
	Time     struct {
		Updated int64 `json:"updated"`
	} `json:"time"`
}

// Session is the session a letter goes to now: the newest top-level one
// of the directory, or "" when there is none.
func (o *Opencode) Session(ctx context.Context) (string, error) {
	var ss []opencodeSession
	if err := o.call(ctx, http.MethodGet, "/session", nil, &ss); err != nil {
		return "", &Error{Op: "opencode sessions", Kind: opencodeKind(err), Err: err}
	}
	best := opencodeSession{}
	for _, s := range ss {
		if s.ParentID == "" && s.ID != "" && (best.ID == "" || s.Time.Updated > best.Time.Updated) {
			best = s
		}
	}
	return best.ID, nil
}

// OpencodePrompt is a letter the server took into a session.
type OpencodePrompt struct {
	Session string

	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	err    error // why the watch ended, once done
}

// Write adds the letter to the instance's session as a user message,
// which starts a turn (an idle session) or joins the session's next step
// (a busy one). Watch the result for the turn that carries it (Carried),
// and Close it.
func (o *Opencode) Write(ctx context.Context, text string) (*OpencodePrompt, error) {
	const op = "opencode prompt"
	switch {
	case text == "":
		return nil, &Error{Op: op, Err: errors.New("empty letter")}
	case len(text) > MaxText:
		return nil, &Error{Op: op, Err: fmt.Errorf("letter is %d bytes; at most %d", len(text), MaxText)}
	}
	id, err := o.Session(ctx)
	if err != nil {
		return nil, err
	}
	if id == "" {
		var s opencodeSession
		if err := o.call(ctx, http.MethodPost, "/session", map[string]any{}, &s); err != nil || s.ID == "" {
			if err == nil {
				err = errors.New("no session id in the answer")
			}
			return nil, &Error{Op: op, Kind: opencodeKind(err), Err: fmt.Errorf("create a session: %w", err)}
		}
		id = s.ID
		// Best effort: the TUI shows the session the letter starts.
		o.call(ctx, http.MethodPost, "/tui/select-session", map[string]string{"sessionID": id}, nil)
	}
	// The event stream first, so that nothing it says of the letter is
	// missed.
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	events, err := o.events(wctx)
	if err != nil {
		cancel()
		return nil, &Error{Op: op, Kind: opencodeKind(err), Err: fmt.Errorf("event stream: %w", err)}
	}
	p := &OpencodePrompt{Session: id, cancel: cancel, done: make(chan struct{})}
	go p.watch(events, id, text)
	in := map[string]any{"parts": []any{map[string]string{"type": "text", "text": text}}}
	if err := o.call(ctx, http.MethodPost, "/session/"+url.PathEscape(id)+"/prompt_async", in, nil); err != nil {
		p.Close()
		return nil, &Error{Op: op, Kind: opencodeKind(err), Err: err}
	}
	return p, nil
}

// Carried waits until the model answers the letter's message in its
// session (the turn carried it), the stream ends (the server stopped:
// ErrGone), the session reports an error for the turn, or ctx ends.
func (p *OpencodePrompt) Carried(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-p.done:
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.err
	}
}

// Close stops watching.
func (p *OpencodePrompt) Close() {
	if p != nil && p.cancel != nil {
		p.cancel()
	}
}

// opencodeEvent is what the door reads of an event.
type opencodeEvent struct {
	Type       string `json:"type"`
	Properties struct {
		SessionID string `json:"sessionID"`
		Info      struct {
			ID       string `json:"id"`
			Role     string `json:"role"`
			ParentID string `json:"parentID"`
		} `json:"info"`
		Part struct {
			Type      string `json:"type"`
			Text      string `json:"text"`
			MessageID string `json:"messageID"`
		} `json:"part"`
		Error json.RawMessage `json:"error"`
	} `json:"properties"`
}

// watch follows the events until the letter's message has an answer.
func (p *OpencodePrompt) watch(events <-chan opencodeEvent, session, text string) {
	defer close(p.done)
	var msg string // the letter's message
	var answered []string
	for e := range events {
		if e.Properties.SessionID != session {
			continue
		}
		switch e.Type {
		case "message.part.updated":
			if msg == "" && e.Properties.Part.Type == "text" && e.Properties.Part.Text == text {
				msg = e.Properties.Part.MessageID
				for _, a := range answered {
					if a == msg {
						return
					}
				}
			}
		case "message.updated":
			if e.Properties.Info.Role == "assistant" && e.Properties.Info.ParentID != "" {
				if e.Properties.Info.ParentID == msg {
					return // the turn carried it
				}
				answered = append(answered, e.Properties.Info.ParentID)
			}
		case "session.error":
			if msg != "" {
				p.fail(fmt.Errorf("the session reported an error: %s", bytes.TrimSpace(e.Properties.Error)))
				return
			}
		}
	}
	p.fail(&Error{Op: "opencode events", Kind: ErrGone, Err: errors.New("the event stream ended")})
}

func (p *OpencodePrompt) fail(err error) {
	p.mu.Lock()
	p.err = err
	p.mu.Unlock()
}

// events opens the instance's event stream; the channel closes when the
// stream ends or ctx does.
func (o *Opencode) events(ctx context.Context) (<-chan opencodeEvent, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.endpoint("/event"), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := (&http.Client{}).Do(req) // no timeout: the stream lasts
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("%w: GET /event: %s", ErrRefused, resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	// The server says it is connected first: from then on nothing is
	// missed.
	connected := make(chan error, 1)
	ch := make(chan opencodeEvent, 64)
	go func() {
		defer resp.Body.Close()
		defer close(ch)
		first := true
		for sc.Scan() {
			data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:"))
			if !ok {
				continue
			}
			var e opencodeEvent
			if json.Unmarshal(bytes.TrimSpace(data), &e) != nil {
				continue
			}
			if first {
				first = false
				connected <- nil
				if e.Type == "server.connected" {
					continue
				}
			}
			select {
			case ch <- e:
			case <-ctx.Done():
				return
			}
		}
		if first {
			connected <- errors.New("the event stream ended before it began")
		}
	}()
	t := time.NewTimer(opencodeTimeout)
	defer t.Stop()
	select {
	case err := <-connected:
		if err != nil {
			return nil, err
		}
		return ch, nil
	case <-t.C:
		return nil, errors.New("no word from the event stream")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// opencodeKind classifies an error of the server: nobody listening means
// the instance is gone.
func opencodeKind(err error) error {
	switch {
	case errors.Is(err, ErrRefused):
		return ErrRefused
	case isConnRefused(err):
		return ErrGone
	}
	return nil
}

// OpencodeDefaultPort is where opencode's TUI starts its server unless
// the port is taken, or its config's server.port says otherwise.
const OpencodeDefaultPort = 4096

// OpencodeServer finds the server of the opencode process pid (an MCP
// server's OPENCODE_PID) that serves directory dir: on Linux, among the
// loopback ports the process listens on; elsewhere (or when none answers)
// at the ports given (the configured one, then the default), if the
// server there says it is opencode. It returns the server's URL and its
// version.
func OpencodeServer(ctx context.Context, pid int, dir string, ports ...int) (string, string, error) {
	var try []int
	if pid > 0 {
		if ps, err := opencodeListeners(pid); err == nil {
			try = append(try, ps...)
		}
	}
	try = append(try, ports...)
	try = append(try, OpencodeDefaultPort)
	seen := map[int]bool{}
	var last error = errors.New("no port to try")
	for _, p := range try {
		if p <= 0 || seen[p] {
			continue
		}
		seen[p] = true
		o := &Opencode{URL: fmt.Sprintf("http://127.0.0.1:%d", p), Directory: dir, Client: &http.Client{Timeout: 2 * time.Second}}
		v, err := o.Health(ctx)
		if err == nil {
			return o.URL, v, nil
		}
		last = err
	}
	return "", "", fmt.Errorf("no opencode server found (process %d, ports %v): %w", pid, try, last)
}
