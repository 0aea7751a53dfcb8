package hub

import (
	"context"
	"strings"
	"sync"
	"time"
)

// roleCache remembers agents' roles for the origin of their messages
// (Origin.Role), so that a send reads no agent record of its sender. An entry
// lasts roleTTL: a role changed through another daemon sharing the store
// shows within that; one changed here (Join) at once.
type roleCache struct {
	mu sync.Mutex
	m  map[inboxKey]roleEntry
}

type roleEntry struct {
	role string
	at   time.Time
}

const (
	roleTTL = 10 * time.Second
	// maxRoles bounds the cache: past it, it starts again empty.
	maxRoles = 10000
)

// of returns the role of name in ws as its agent record has it, "" for a
// person or a name that has not joined.
func (c *roleCache) of(ctx context.Context, h *Hub, ws, name string) (string, error) {
	if strings.HasPrefix(name, HumanPrefix) {
		return "", nil
	}
	k, now := inboxKey{ws, name}, h.now()
	c.mu.Lock()
	e, ok := c.m[k]
	c.mu.Unlock()
	if ok && now.Sub(e.at) < roleTTL {
		return e.role, nil
	}
	role := ""
	switch a, err := h.store.Agent(ctx, ws, name); {
	case err == nil:
		role = a.Role
	case !IsNotFound(err):
		return "", err
	}
	c.set(k, role, now)
	return role, nil
}

func (c *roleCache) set(k inboxKey, role string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxRoles {
		c.m = make(map[inboxKey]roleEntry)
	}
	c.m[k] = roleEntry{role, at}
}
