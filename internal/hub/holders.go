package hub

import (
	"slices"
	"sync"
)

// Which client sessions hold each agent name through live sessions of this
// daemon. A client session (a Claude Code session, a Codex thread) is known
// by a key its processes all derive alike (workspace.Session.Key): the MCP
// server and the hooks of one session speak as one agent, and a second
// session must not silently take a name that a live session of another
// holds (ops.Admit). It is this daemon's memory only: sessions are live
// here, and end with it.

// holders is the hub's record of who holds what.
type holders struct {
	mu sync.Mutex
	// byName counts, per agent, the live sessions of each client session.
	byName map[inboxKey]map[string]int
	// gave counts, per client session, the live sessions that speak as
	// their own name because they gave up the one they were asked by.
	gave map[gaveKey]int
}

type gaveKey struct{ ws, key, asked string }

// Hold records that a live session of the client session key speaks as the
// agent, until release is called (once); asked, if not "", is the name it
// was given and gave up (another client session held it). A key of ""
// holds nothing.
func (h *Hub) Hold(ws, agent, key, asked string) (release func()) {
	if key == "" || agent == "" {
		return func() {}
	}
	hs := &h.holders
	k := inboxKey{ws, agent}
	hs.mu.Lock()
	if hs.byName == nil {
		hs.byName = map[inboxKey]map[string]int{}
	}
	if hs.byName[k] == nil {
		hs.byName[k] = map[string]int{}
	}
	hs.byName[k][key]++
	g := gaveKey{ws, key, asked}
	if asked != "" {
		if hs.gave == nil {
			hs.gave = map[gaveKey]int{}
		}
		hs.gave[g]++
	}
	hs.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			hs.mu.Lock()
			defer hs.mu.Unlock()
			if hs.byName[k][key]--; hs.byName[k][key] <= 0 {
				delete(hs.byName[k], key)
			}
			if len(hs.byName[k]) == 0 {
				delete(hs.byName, k)
			}
			if asked != "" {
				if hs.gave[g]--; hs.gave[g] <= 0 {
					delete(hs.gave, g)
				}
			}
		})
	}
}

// Holders lists the client sessions whose live sessions speak as the
// agent, sorted.
func (h *Hub) Holders(ws, agent string) []string {
	hs := &h.holders
	hs.mu.Lock()
	defer hs.mu.Unlock()
	var keys []string
	for key := range hs.byName[inboxKey{ws, agent}] {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	return keys
}

// Gave reports whether a live session of the client session key speaks as
// its own name because it gave up asked (Hold).
func (h *Hub) Gave(ws, key, asked string) bool {
	hs := &h.holders
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return hs.gave[gaveKey{ws, key, asked}] > 0
}
