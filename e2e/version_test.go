package e2e

import (
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/parley-dev/parley/internal/testenv"
)

// TestVersionStamped: a release build (scripts/release stamps the version and
// commit with the linker, as here) says both in `parley --version` and in
// what the daemon reports; a plain build says it is a development one.
func TestVersionStamped(t *testing.T) {
	const pkg = "github.com/parley-dev/parley/internal/cli"
	rel, err := testenv.Binary(testenv.Parley, "-ldflags", "-X "+pkg+".Version=1.2.3 -X "+pkg+".Commit=0123456789abcdef0123")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(rel, "--version").Output()
	want := "parley 1.2.3 (commit 0123456789abcdef0123, " + runtime.GOOS + "/" + runtime.GOARCH + ", " + runtime.Version() + ")\n"
	if err != nil || string(out) != want {
		t.Errorf("release --version: %q (%v), want %q", out, err, want)
	}
	e := newEnv(t)
	e.Bin = rel
	e.Must("daemon", "start")
	var st struct {
		Version string `json:"version"`
	}
	e.MustJSON(&st, "daemon", "status")
	if st.Version != "1.2.3+0123456789ab" {
		t.Errorf("daemon status version: %q, want 1.2.3+0123456789ab", st.Version)
	}
	e.Must("daemon", "stop")

	out, err = exec.Command(bin, "--version").Output()
	if err != nil || !strings.HasPrefix(string(out), "parley ") || !strings.Contains(string(out), runtime.GOOS+"/"+runtime.GOARCH) {
		t.Errorf("plain --version: %q (%v)", out, err)
	}
}
