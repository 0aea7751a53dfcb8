package profile

import (
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/ops"
)

// Registry is the profiles an endpoint offers, by name. A profile is built
// the first time a session asks for it: building one infers and resolves
// the JSON schemas of its tools, which an idle daemon need not hold (they
// were a fifth of its memory).
type Registry struct {
	host  *Host
	build map[string]func() Profile
}

// NewRegistry returns a registry of the Builtin profiles over h.
func NewRegistry(h *Host) *Registry {
	r := &Registry{host: h, build: map[string]func() Profile{}}
	for name, build := range Builtin {
		r.Register(name, build)
	}
	return r
}

// Register adds a profile. Call it before the endpoint serves.
func (r *Registry) Register(name string, build func(*Host) Profile) {
	r.build[name] = sync.OnceValue(func() Profile { return build(r.host) })
}

// Get returns the registered profile name, building it the first time.
func (r *Registry) Get(name string) Profile { return r.build[name]() }

// Names lists the registered profile names, sorted.
func (r *Registry) Names() []string {
	names := make([]string, 0, len(r.build))
	for n := range r.build {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Known returns the profiles a session asked for, each once, in its order,
// or an error naming one that is not registered.
func (r *Registry) Known(asked []string) ([]string, error) {
	var profiles []string
	for _, p := range asked {
		if p = strings.TrimSpace(p); p == "" || slices.Contains(profiles, p) {
			continue
		}
		if _, ok := r.build[p]; !ok {
			return nil, ops.Invalid("mcp", "unknown profile %q: want one of %s", p, strings.Join(r.Names(), ", "))
		}
		profiles = append(profiles, p)
	}
	return profiles, nil
}

// Settle returns the profiles a session serves, given the known ones it
// asked for: native if none; the identity profile beside native or lean for
// a session that may rename itself; sorted. It refuses a set in which two
// define the same tool (native and manager both have list_agents): one
// would silently replace the other.
func (r *Registry) Settle(known []string, renamable bool) ([]string, error) {
	profiles := slices.Clone(known)
	if len(profiles) == 0 {
		profiles = []string{"native"}
	}
	if renamable && !slices.Contains(profiles, IdentityName) &&
		(slices.Contains(profiles, "native") || slices.Contains(profiles, "lean")) {
		profiles = append(profiles, IdentityName)
	}
	sort.Strings(profiles)
	owner := map[string]string{}
	for _, p := range profiles {
		for _, t := range r.Get(p).Tools {
			if o, ok := owner[t.Tool.Name]; ok {
				return nil, ops.Invalid("mcp", "profiles %s and %s both define the tool %s: use them in separate sessions (separate MCP server entries)", o, p, t.Tool.Name)
			}
			owner[t.Tool.Name] = p
		}
	}
	return profiles, nil
}

// NewServer returns a server of the profiles (settled), with their tools,
// what they attach and their middleware, its options so as they adjust them.
func (r *Registry) NewServer(impl *mcp.Implementation, so *mcp.ServerOptions, profiles []string) *mcp.Server {
	for _, p := range profiles {
		if fn := r.Get(p).Options; fn != nil {
			fn(so)
		}
	}
	srv := mcp.NewServer(impl, so)
	for _, p := range profiles {
		prof := r.Get(p)
		for _, t := range prof.Tools {
			t.AddTo(srv)
		}
		if prof.Attach != nil {
			prof.Attach(srv)
		}
		if prof.Middleware != nil {
			srv.AddReceivingMiddleware(prof.Middleware)
		}
	}
	return srv
}
