// Package notify pushes notices to people: a generic webhook (a JSON POST) or
// an ntfy-style topic URL, for permission requests, overdue acks, agents in
// error or stalled, and critical messages. Each endpoint has its own queue and
// goroutine, retries with exponential backoff, and drops what it cannot take:
// a slow or broken endpoint is logged and never blocks the caller or another
// endpoint. The daemon imports it; it imports nothing of Parley's.
package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Kind is what a notice is about.
type Kind string

// The kinds of notice.
const (
	Permission   Kind = "permission"    // an agent waits for a permission decision
	AckOverdue   Kind = "ack_overdue"   // a message asked for an ack that has not come
	AgentError   Kind = "agent_error"   // a managed agent's run failed
	AgentStalled Kind = "agent_stalled" // a managed agent has shown no activity for long
	Critical     Kind = "critical"      // a message of critical priority
	Held         Kind = "held"          // an agent's session holds a letter for its person
)

// Kinds lists every kind.
var Kinds = []Kind{Permission, AckOverdue, AgentError, AgentStalled, Critical, Held}

// Formats of an endpoint.
const (
	Webhook = "webhook" // POST the Notice as JSON
	Ntfy    = "ntfy"    // POST the text, with Title, Priority and Tags headers
)

// Notice is one thing to tell a person.
type Notice struct {
	Kind      Kind      `json:"kind"`
	Workspace string    `json:"workspace,omitempty"`
	Agent     string    `json:"agent,omitempty"`
	Title     string    `json:"title"`
	Message   string    `json:"message"`
	Time      time.Time `json:"time"`
	// ID names what the notice is about (a message or request id), so a
	// receiver can tell a retry from a new notice.
	ID string `json:"id,omitempty"`
}

// Endpoint is one place notices go.
type Endpoint struct {
	Name    string // for logs; "" means the URL's host
	URL     string
	Format  string            // Webhook (default) or Ntfy
	Kinds   []Kind            // nil: every kind
	Headers map[string]string // sent with every request (e.g. Authorization)
}

// Options configure a Notifier; zero values mean defaults.
type Options struct {
	Client *http.Client // nil: one with Timeout and no keep-alive
	Logger *slog.Logger // nil: discard
	// Attempts is how many times a notice is tried at most (default 6).
	Attempts int
	// Backoff is the wait before the first retry, doubled after each
	// (default 1s), up to MaxBackoff (default 1m).
	Backoff, MaxBackoff time.Duration
	// Timeout bounds one request (default 10s).
	Timeout time.Duration
	// Queue is how many notices an endpoint holds while it is slow
	// (default 64); more are dropped and logged.
	Queue int
}

// Notifier sends notices to its endpoints.
type Notifier struct {
	opts   Options
	log    *slog.Logger
	eps    []*endpoint
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

type endpoint struct {
	Endpoint
	name string
	q    chan Notice
}

// New starts a notifier for the endpoints. Close stops it.
func New(eps []Endpoint, opts *Options) *Notifier {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Attempts <= 0 {
		o.Attempts = 6
	}
	if o.Backoff <= 0 {
		o.Backoff = time.Second
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = time.Minute
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Queue <= 0 {
		o.Queue = 64
	}
	if o.Client == nil {
		// Notices are rare: no idle connections to keep.
		o.Client = &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, DisableKeepAlives: true}}
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &Notifier{opts: o, log: o.Logger, ctx: ctx, cancel: cancel}
	for _, e := range eps {
		ep := &endpoint{Endpoint: e, name: e.Name, q: make(chan Notice, o.Queue)}
		if ep.name == "" {
			if u, err := url.Parse(e.URL); err == nil {
				ep.name = u.Host
			}
		}
		n.eps = append(n.eps, ep)
		n.wg.Add(1)
		go n.run(ep)
	}
	return n
}

// Notify queues nt for every endpoint that wants its kind. It never blocks.
func (n *Notifier) Notify(nt Notice) {
	if nt.Time.IsZero() {
		nt.Time = time.Now().UTC()
	}
	for _, ep := range n.eps {
		if ep.Kinds != nil && !slices.Contains(ep.Kinds, nt.Kind) {
			continue
		}
		select {
		case ep.q <- nt:
		default:
			n.log.Warn("notify: endpoint is behind; notice dropped", "endpoint", ep.name, "kind", nt.Kind)
		}
	}
}

// Close stops sending: notices still queued or being retried are dropped.
func (n *Notifier) Close() {
	n.cancel()
	n.wg.Wait()
}

func (n *Notifier) run(ep *endpoint) {
	defer n.wg.Done()
	for {
		select {
		case <-n.ctx.Done():
			return
		case nt := <-ep.q:
			n.deliver(ep, nt)
		}
	}
}

// deliver tries nt until it is accepted, refused for good, or out of attempts.
func (n *Notifier) deliver(ep *endpoint, nt Notice) {
	wait := n.opts.Backoff
	for attempt := 1; ; attempt++ {
		retry, after, err := n.send(ep, nt)
		if err == nil {
			return
		}
		if !retry || attempt == n.opts.Attempts {
			n.log.Error("notify: notice not delivered", "endpoint", ep.name, "kind", nt.Kind, "attempts", attempt, "err", err)
			return
		}
		n.log.Warn("notify: retrying", "endpoint", ep.name, "kind", nt.Kind, "attempt", attempt, "in", max(wait, after), "err", err)
		t := time.NewTimer(max(wait, after))
		select {
		case <-n.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		wait = min(2*wait, n.opts.MaxBackoff)
	}
}

// send makes one attempt. It says whether a failure is worth retrying, and
// for how long the endpoint asked us to wait (Retry-After).
func (n *Notifier) send(ep *endpoint, nt Notice) (retry bool, after time.Duration, err error) {
	ctx, cancel := context.WithTimeout(n.ctx, n.opts.Timeout)
	defer cancel()
	req, err := request(ctx, ep, nt)
	if err != nil {
		return false, 0, err
	}
	resp, err := n.opts.Client.Do(req)
	if err != nil {
		// The URL may hold a secret (an ntfy topic): say what failed, not where.
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err
		}
		return true, 0, fmt.Errorf("post: %w", err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		return false, 0, nil
	}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		after = min(time.Duration(s)*time.Second, n.opts.MaxBackoff)
	}
	retry = resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusRequestTimeout
	return retry, after, fmt.Errorf("endpoint answered %s", resp.Status)
}

// request builds the POST for nt in the endpoint's format.
func request(ctx context.Context, ep *endpoint, nt Notice) (*http.Request, error) {
	var body []byte
	ctype := "application/json"
	if ep.Format == Ntfy {
		body, ctype = []byte(nt.Message), "text/plain; charset=utf-8"
	} else {
		var err error
		if body, err = json.Marshal(nt); err != nil {
			return nil, fmt.Errorf("encode notice: %w", err)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("notify request: %w", err)
	}
	req.Header.Set("Content-Type", ctype)
	req.Header.Set("User-Agent", "parley-notify/1")
	if ep.Format == Ntfy {
		// ntfy's publish headers; header values must be one line of Latin-1.
		req.Header.Set("Title", headerSafe(nt.Title))
		req.Header.Set("Priority", ntfyPriority(nt.Kind))
		req.Header.Set("Tags", "parley,"+string(nt.Kind))
	}
	for k, v := range ep.Headers {
		req.Header.Set(k, v)
	}
	return req, nil
}

func ntfyPriority(k Kind) string {
	switch k {
	case Permission, Critical:
		return "urgent"
	case AgentError, AgentStalled:
		return "high"
	}
	return "default"
}

// headerSafe keeps s to printable ASCII on one line.
func headerSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return '?'
		}
		return r
	}, s)
}
