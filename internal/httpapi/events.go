package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/hub"
)

const (
	defaultEventBuffer = 1024
	// eventWriteTimeout bounds one write to a subscriber: a peer that takes
	// longer to drain its socket is as slow as one whose queue overflowed.
	eventWriteTimeout = 10 * time.Second
	eventPingEvery    = 30 * time.Second

	// CloseSlowConsumer is the WebSocket close code of a subscriber dropped for
	// falling behind; the reason says by how many events.
	CloseSlowConsumer websocket.StatusCode = 4000
)

// Events is the live event stream, GET /api/v1/events: it fans the hub's
// events, and those the daemon publishes, out to WebSocket subscribers. The
// hub calls it on the sender's goroutine, so publishing never blocks: it
// encodes an event once and offers it to each subscriber's bounded queue,
// dropping a subscriber whose queue is full.
type Events struct {
	log     *slog.Logger
	buf     int
	origins func() []string
	cancel  func()

	mu     sync.RWMutex
	subs   map[*subscriber]struct{}
	closed bool
}

type subscriber struct {
	ws    string          // "" with all
	kinds map[string]bool // nil: every kind
	ch    chan []byte

	dropped  atomic.Bool
	behind   atomic.Int64
	gone     chan struct{} // closed when dropped or when the stream closes
	goneOnce sync.Once
}

// EventsOptions configure Events; nil means defaults.
type EventsOptions struct {
	Logger *slog.Logger // nil: discard
	// Buffer is each subscriber's queue (default 1024 events); a
	// subscriber that falls further behind is dropped.
	Buffer int
	// Origins are the browser origins the daemon issued (its dashboard's),
	// admitted by the WebSocket handshake besides same-origin requests.
	Origins func() []string
}

// NewEvents starts an event stream of h's events. Close stops it.
func NewEvents(h *hub.Hub, o *EventsOptions) *Events {
	if o == nil {
		o = &EventsOptions{}
	}
	b := &Events{log: o.Logger, buf: o.Buffer, origins: o.Origins, subs: map[*subscriber]struct{}{}}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	if b.buf <= 0 {
		b.buf = defaultEventBuffer
	}
	b.cancel = h.Subscribe(b.publish)
	return b
}

func (b *Events) publish(e hub.Event) {
	switch {
	case e.Kind == hub.EventResync:
		// Nothing to send: a dashboard refetches what it shows when its
		// stream reconnects, not on a notifier's.
	case e.Detail != nil:
		// The runner's and the permission inbox's events travel as their
		// wire form (api.Event), whichever daemon published them.
		b.fanout(e.Workspace, string(e.Kind), func() any { return e.Detail })
	default:
		b.fanout(e.Workspace, string(e.Kind), func() any { return api.EventOf(e) })
	}
}

// Publish sends an event that is not the hub's and stays on this daemon;
// the daemon's runner and permission events go through the hub
// (hub.Publish), to reach the other daemons' streams too.
func (b *Events) Publish(e api.Event) {
	b.fanout(e.Workspace, e.Kind, func() any { return e })
}

// fanout offers the event to every subscriber of its workspace and kind,
// encoding it once, when the first wants it.
func (b *Events) fanout(ws, kind string, event func() any) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	var data []byte
	for s := range b.subs {
		if s.dropped.Load() || (s.ws != "" && s.ws != ws) || (s.kinds != nil && !s.kinds[kind]) {
			continue
		}
		if data == nil {
			var err error
			if data, err = json.Marshal(event()); err != nil {
				b.log.Error("encode event", "kind", kind, "err", err)
				return
			}
		}
		select {
		case s.ch <- data:
		default:
			s.behind.Store(int64(len(s.ch)) + 1)
			s.dropped.Store(true)
			s.goneOnce.Do(func() { close(s.gone) })
		}
	}
}

func (b *Events) subscribe(ws string, kinds map[string]bool) (*subscriber, error) {
	s := &subscriber{ws: ws, kinds: kinds, ch: make(chan []byte, b.buf), gone: make(chan struct{})}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, hub.Errorf("events", hub.Unavailable, "the daemon is shutting down")
	}
	b.subs[s] = struct{}{}
	return s, nil
}

func (b *Events) unsubscribe(s *subscriber) {
	b.mu.Lock()
	delete(b.subs, s)
	b.mu.Unlock()
}

// Close ends every stream: WebSocket connections are hijacked, so the HTTP
// server's shutdown does not reach them.
func (b *Events) Close() {
	b.cancel()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for s := range b.subs {
		s.goneOnce.Do(func() { close(s.gone) })
	}
}

// ServeHTTP serves GET /api/v1/events: a WebSocket of api.Event JSON
// messages for one workspace (Parley-Workspace header or ?workspace=), or
// every workspace with ?all=true, optionally only ?kinds=k1,k2.
func (b *Events) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	ws := r.Header.Get(api.HeaderWorkspace)
	if ws == "" {
		ws = q.Get("workspace")
	}
	all := q.Get("all") == "true"
	var err error
	switch {
	case all && ws != "":
		err = hub.Errorf("events", hub.Invalid, "give a workspace or all=true, not both")
	case !all && ws == "":
		err = hub.Errorf("events", hub.Invalid, "no workspace: pass ?workspace=NAME (or the Parley-Workspace header), or all=true for every workspace")
	case ws != "":
		err = hub.ValidWorkspace(ws)
	}
	var kinds map[string]bool
	if err == nil {
		kinds, err = api.ParseEventKinds(q.Get("kinds"))
	}
	var sub *subscriber
	if err == nil {
		// Subscribe before the handshake completes, so that an event sent
		// right after the client's Dial returns is not missed.
		sub, err = b.subscribe(ws, kinds)
	}
	if err != nil {
		WriteError(w, err)
		return
	}
	defer b.unsubscribe(sub)

	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: b.originHosts()})
	if err != nil {
		b.log.Debug("events: handshake failed", "err", err)
		return
	}
	defer c.CloseNow()
	// We read nothing from the client; CloseRead answers its pings and close.
	// The request's context stays live after the upgrade until this returns,
	// and ends the stream when whoever serves it says so (the dashboard's
	// sign-out): closing it closes the connection.
	ctx := c.CloseRead(r.Context())
	go func() {
		t := time.NewTicker(eventPingEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				pctx, cancel := context.WithTimeout(ctx, eventWriteTimeout)
				err := c.Ping(pctx)
				cancel()
				if err != nil {
					c.CloseNow()
					return
				}
			}
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-sub.gone:
			if sub.dropped.Load() {
				b.slowConsumer(c, sub.behind.Load())
				return
			}
			c.Close(websocket.StatusGoingAway, "the daemon is shutting down")
			return
		case data := <-sub.ch:
			wctx, cancel := context.WithTimeout(ctx, eventWriteTimeout)
			err := c.Write(wctx, websocket.MessageText, data)
			cancel()
			if errors.Is(err, context.DeadlineExceeded) {
				b.slowConsumer(c, int64(len(sub.ch))+1)
				return
			}
			if err != nil {
				return
			}
		}
	}
}

func (b *Events) slowConsumer(c *websocket.Conn, behind int64) {
	b.log.Warn("events: dropped a slow consumer", "behind", behind)
	c.Close(CloseSlowConsumer, fmt.Sprintf("slow consumer: %d events behind", behind))
}

// originHosts are the hosts of the daemon's own origins, for the WebSocket
// handshake's origin check (the daemon has refused every other origin).
func (b *Events) originHosts() []string {
	if b.origins == nil {
		return nil
	}
	var hosts []string
	for _, o := range b.origins() {
		if u, err := url.Parse(o); err == nil && u.Host != "" {
			hosts = append(hosts, u.Host)
		}
	}
	return hosts
}
