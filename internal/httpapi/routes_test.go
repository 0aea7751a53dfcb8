package httpapi

import (
	"net/http"
	"os"
	"regexp"
	"slices"
	"testing"

	"github.com/parley-dev/parley/internal/ops"
)

// patterns records the patterns Routes adds.
type patterns []string

func (p *patterns) Handle(pattern string, _ http.Handler) { *p = append(*p, pattern) }

// documented matches the first cell of a table row in docs/api.md.
var documented = regexp.MustCompile("(?m)^\\| `([^`]+)` \\|")

// TestRoutesDocumented keeps docs/api.md true: every route of the table is
// on the page, and the page lists no route the daemon does not serve.
func TestRoutesDocumented(t *testing.T) {
	var served patterns
	Routes(&served, new(ops.Ops), Endpoints{MCP: http.NotFoundHandler(), Events: new(Events)})
	page, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, m := range documented.FindAllStringSubmatch(string(page), -1) {
		listed = append(listed, m[1])
	}
	if len(served) < 60 {
		t.Fatalf("Routes added %d patterns, want every endpoint (more than 60)", len(served))
	}
	for _, p := range served {
		if !slices.Contains(listed, p) {
			t.Errorf("route %q is not in docs/api.md", p)
		}
	}
	for _, p := range listed {
		if !slices.Contains(served, p) {
			t.Errorf("docs/api.md lists %q, which the daemon does not serve", p)
		}
	}
	slices.Sort(listed)
	if d := slices.Compact(slices.Clone(listed)); len(d) != len(listed) {
		t.Errorf("docs/api.md lists a route twice")
	}
}
