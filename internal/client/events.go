package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/coder/websocket"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/hub"
)

// EventStream is an open GET /api/v1/events WebSocket.
type EventStream struct {
	conn *websocket.Conn
}

// maxEvent bounds one event message (a recipients list can be long).
const maxEvent = 1 << 20

// Events opens the live event stream of the client's workspace, or of every
// workspace with all. kinds, if any, selects event kinds.
func (c *Client) Events(ctx context.Context, all bool, kinds []string) (*EventStream, error) {
	q := url.Values{}
	h := http.Header{}
	if all {
		q.Set("all", "true")
	} else {
		h.Set(api.HeaderWorkspace, c.Workspace)
	}
	if len(kinds) > 0 {
		q.Set("kinds", strings.Join(kinds, ","))
	}
	u := "ws" + strings.TrimPrefix(c.base, "http") + api.Prefix + "/events"
	if c.token != "" {
		h.Set("Authorization", "Bearer "+c.token)
	}
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	conn, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: c.hc, HTTPHeader: h})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if unreachable(err) {
			return nil, &hub.Error{Kind: hub.Unavailable, Err: fmt.Errorf("%w (socket %s)", ErrNotRunning, c.Paths.Socket)}
		}
		if resp != nil && resp.Body != nil {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
			var eb api.ErrorBody
			if json.Unmarshal(b, &eb) == nil && eb.Error.Message != "" {
				return nil, eb.Err()
			}
		}
		return nil, &hub.Error{Kind: hub.Unavailable, Err: fmt.Errorf("open event stream: %w", err)}
	}
	conn.SetReadLimit(maxEvent)
	return &EventStream{conn: conn}, nil
}

// Next returns the next event and its JSON. When the daemon ends the stream it
// returns an error that says why (a slow consumer is told how far behind it was).
func (s *EventStream) Next(ctx context.Context) (api.Event, []byte, error) {
	_, b, err := s.conn.Read(ctx)
	if err != nil {
		var ce websocket.CloseError
		if errors.As(err, &ce) {
			return api.Event{}, nil, &StreamClosedError{Code: int(ce.Code), Reason: ce.Reason}
		}
		return api.Event{}, nil, err
	}
	var e api.Event
	if err := json.Unmarshal(b, &e); err != nil {
		return api.Event{}, nil, fmt.Errorf("decode event: %w", err)
	}
	return e, b, nil
}

// Close ends the stream.
func (s *EventStream) Close() error {
	return s.conn.Close(websocket.StatusNormalClosure, "")
}

// StreamClosedError is the daemon closing an event stream, with the WebSocket
// close code and reason.
type StreamClosedError struct {
	Code   int
	Reason string
}

func (e *StreamClosedError) Error() string {
	if e.Reason == "" {
		return fmt.Sprintf("the daemon closed the event stream (code %d)", e.Code)
	}
	return fmt.Sprintf("the daemon closed the event stream: %s (code %d)", e.Reason, e.Code)
}
