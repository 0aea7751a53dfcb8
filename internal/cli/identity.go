package cli

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/client"
	"github.com/parley-dev/parley/internal/runner"
	"github.com/parley-dev/parley/internal/workspace"
)

// settleName asks the daemon whether id, a name given to a process of a
// client session, is its session's to speak as (ops.Admit: another live
// client session may hold it, and then this session is its own name), and
// makes id the answer, saying so on stderr. It reports whether the name
// changed. Outside a client session, or with a name the session derived
// itself, there is nothing to ask.
func (g *globals) settleName(ctx context.Context, c *client.Client, id *workspace.Resolved) bool {
	key := id.Session.Key()
	if key == "" || id.Agent == "" || strings.HasPrefix(id.Source, "session") || id.Source == "tmux" {
		return false
	}
	own := id.Session.Name(id.Root)
	res, err := c.As(id.Workspace, id.Agent).Identify(ctx, api.IdentifyRequest{Agent: id.Agent, Session: key, Own: own,
		Fixed: os.Getenv(runner.EnvManagedAgent) == id.Agent})
	if err != nil || res.Agent == "" || res.Agent == id.Agent {
		return false
	}
	fmt.Fprintf(g.stderr, "parley: %s\n", res.Note)
	id.Asked, id.Agent = id.Agent, res.Agent
	id.Source = "session (" + id.Session.Env + ")"
	return true
}

// skippedNote says which identity files here a session does not speak as,
// and why, or "" when it took none of them for another reason.
func skippedNote(id workspace.Resolved) string {
	if len(id.Skipped) == 0 || id.Source == "flag" || id.Source == "env" || id.Source == "identity file" {
		return ""
	}
	return fmt.Sprintf("not speaking as an identity of %s: %s; a client session takes only an identity file `parley join` made inside it (or pass --agent NAME)",
		workspace.IdentityDir(id.Root), strings.Join(id.Skipped, "; "))
}
