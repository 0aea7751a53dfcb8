package e2e

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// deps lists the packages pkg imports, itself and transitively.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

// TestLayering holds issue 10's layering: the domain packages (hub, runner,
// gateway) import no wire package, and the shipped binary holds no test
// fixture, whatever its environment.
func TestLayering(t *testing.T) {
	const mod = "github.com/parley-dev/parley/internal/"
	wire := []string{"api", "ops", "httpapi", "mcpserver", "profile", "client", "daemon", "web"}
	for _, domain := range []string{"hub", "runner", "gateway"} {
		ds := deps(t, "../internal/"+domain)
		for _, w := range wire {
			if slices.Contains(ds, mod+w) {
				t.Errorf("internal/%s imports internal/%s, a wire package", domain, w)
			}
		}
	}
	// The daemon's /mcp and the bridge share wire names through api, not
	// through each other.
	if slices.Contains(deps(t, "../internal/mcpserver"), mod+"bridge") {
		t.Error("internal/mcpserver imports internal/bridge: wire names belong in internal/api")
	}
	// The MCP transport calls operations only (issue 38): sessions are
	// admitted by ops.OpenSession, naming rules live below it.
	mi, err := exec.Command("go", "list", "-f", `{{join .Imports " "}}`, "../internal/mcpserver").Output()
	if err != nil {
		t.Fatalf("go list -f {{.Imports}} ../internal/mcpserver: %v", err)
	}
	for _, below := range []string{"hub", "workspace"} {
		if slices.Contains(strings.Fields(string(mi)), mod+below) {
			t.Errorf("internal/mcpserver imports internal/%s: it calls ops, which calls the domain", below)
		}
	}
	// The tool surfaces (profiles) sit below the transport that serves them:
	// they know no HTTP (the go-sdk below them does, for its own handler),
	// and nothing of the doors above.
	pd := deps(t, "../internal/profile")
	for _, up := range []string{"mcpserver", "httpapi", "bridge", "daemon"} {
		if slices.Contains(pd, mod+up) {
			t.Errorf("internal/profile imports internal/%s: the transport registers profiles, not the other way round", up)
		}
	}
	if !slices.Contains(deps(t, "../internal/mcpserver"), mod+"profile") {
		t.Error("go list -deps ../internal/mcpserver lists no internal/profile: is the package path right?")
	}
	imports, err := exec.Command("go", "list", "-f", `{{join .Imports " "}}`, "../internal/profile").Output()
	if err != nil {
		t.Fatalf("go list -f {{.Imports}} ../internal/profile: %v", err)
	}
	if slices.Contains(strings.Fields(string(imports)), "net/http") {
		t.Error("internal/profile imports net/http: HTTP is the transport's (internal/mcpserver)")
	}
	// The Codex app-server's client serves the runner and the door alike:
	// it stands on the standard library alone.
	for _, d := range deps(t, "../internal/codexrpc") {
		if strings.HasPrefix(d, mod) && d != mod+"codexrpc" {
			t.Errorf("internal/codexrpc imports %s: it must stand on the standard library alone", d)
		}
	}
	ds := deps(t, "../cmd/parley")
	for _, fixture := range []string{"conformance", "testenv", "testenv/standin", "mcpserver/mcptest"} {
		if slices.Contains(ds, mod+fixture) {
			t.Errorf("the parley binary links internal/%s, a test fixture", fixture)
		}
	}
	if !slices.Contains(ds, mod+"daemon") {
		t.Fatalf("go list -deps ../cmd/parley lists no internal/daemon: is the package path right? got %d packages", len(ds))
	}

	// The daemon once registered the conformance profile when
	// PARLEY_CONFORMANCE=1: no environment brings it back.
	e := newEnv(t, "PARLEY_CONFORMANCE=1")
	e.Must("daemon", "start")
	_, errs, code := e.Run("mcp", "serve", "--agent", "a", "--workspace", "w", "--profile", "conformance")
	if code == 0 || !strings.Contains(errs, `unknown profile "conformance"`) {
		t.Errorf("mcp serve --profile conformance with PARLEY_CONFORMANCE=1: exit %d, stderr %q; want unknown profile", code, errs)
	}
}
