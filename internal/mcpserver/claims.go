package mcpserver

import (
	"context"
	"sync"
)

// claims remembers, per session, the tasks claimed through it, so that the
// tasks go back to their queues as soon as the daemon learns the client is
// gone (its GET stream closed: a killed bridge), not only when the session
// expires or the claim's lease runs out. Releasing a task the session no
// longer holds (completed, released) changes nothing, so ids are only
// forgotten with their session.
type claims struct {
	mu  sync.Mutex
	ids map[string][]string // session id -> task ids
}

func (c *claims) add(session, id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ids == nil {
		c.ids = map[string][]string{}
	}
	c.ids[session] = append(c.ids[session], id)
}

func (c *claims) take(session string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := c.ids[session]
	delete(c.ids, session)
	return ids
}

// releaseClaims gives back the tasks the session claimed: its client is gone.
func (s *Server) releaseClaims(ctx context.Context, session string) {
	ids := s.claims.take(session)
	if len(ids) == 0 {
		return
	}
	if _, err := s.hub.Release(context.WithoutCancel(ctx), session, ids); err != nil {
		s.log.Warn("put back the tasks of a client that is gone", "err", err)
	}
}
