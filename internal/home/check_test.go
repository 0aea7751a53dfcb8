package home

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestCheck: a state directory inside a git checkout, or one Parley did
// not make that holds files already, is refused; a new one, an empty one,
// and Parley's own are fine; the default ~/.parley is no repository's
// choice.
func TestCheck(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("modes say nothing on Windows")
	}
	root := t.TempDir()
	repo := filepath.Join(root, "repo")
	os.MkdirAll(filepath.Join(repo, ".git"), 0o755)
	os.MkdirAll(filepath.Join(repo, ".ph"), 0o700)
	unzipped := filepath.Join(root, "unzipped", ".ph")
	os.MkdirAll(unzipped, 0o755)
	os.Chmod(unzipped, 0o755)
	os.WriteFile(filepath.Join(unzipped, "config.toml"), []byte("x = 1\n"), 0o644)
	empty := filepath.Join(root, "empty")
	os.MkdirAll(empty, 0o755)
	os.Chmod(empty, 0o755)
	// A .git in a directory anyone may write to (as /tmp) is anyone's.
	shared := filepath.Join(root, "shared")
	os.MkdirAll(filepath.Join(shared, ".git"), 0o755)
	os.Chmod(shared, 0o1777)
	mine := filepath.Join(root, "mine")
	os.MkdirAll(mine, 0o700)
	os.WriteFile(filepath.Join(mine, "config.toml"), nil, 0o600)
	for _, tc := range []struct {
		p    Paths
		want string
	}{
		{Paths{Home: filepath.Join(repo, ".ph")}, "inside the git checkout " + repo},
		{Paths{Home: filepath.Join(repo, "new", "home")}, "inside the git checkout"},
		{Paths{Home: unzipped}, "was not made by Parley (mode 0755"},
		{Paths{Home: filepath.Join(repo, ".ph"), Default: true}, ""},
		{Paths{Home: empty}, ""},
		{Paths{Home: mine}, ""},
		{Paths{Home: filepath.Join(root, "new")}, ""},
		{Paths{Home: filepath.Join(shared, "ph")}, ""},
	} {
		err := tc.p.Check()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s (default %v): got %v, want %q", tc.p.Home, tc.p.Default, err, tc.want)
		}
	}
}
