package home

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// A repository is data: it may ship a directory (.ph/config.toml with an
// [[upstream]] command, a provider's command) and name it as PARLEY_HOME
// in the environment it gives a client's MCP server (.mcp.json's env).
// A daemon started there would run the repository's commands as the user.
// So neither the daemon nor a client that starts one uses a state directory
// other than the default ~/.parley (which no repository chooses) inside a
// git checkout, nor one that Parley did not make: an existing directory
// that others may read or enter (what git, unzip and mkdir make with a
// usual umask; Parley makes its own 0700) and that already holds files.
// Owner and write bits are safefile.SecureDir's.

// Check refuses the state directory when a repository could have put it
// there. Call it before anything is written in it.
func (p Paths) Check() error {
	dir, chosen := p.Home, !p.Default
	real := dir
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		real = r
	}
	if chosen {
		if top := checkoutOf(real); top != "" {
			return fmt.Errorf("state directory %s is inside the git checkout %s: a repository's files are data, and a daemon there would run the commands its config.toml names; set PARLEY_HOME to a directory outside any repository (the default is ~/.parley)", dir, top)
		}
	}
	st, err := os.Stat(real)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // Parley makes it, 0700
	}
	if err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	if runtime.GOOS == "windows" || !st.IsDir() || st.Mode().Perm()&0o077 == 0 {
		return nil
	}
	ents, err := os.ReadDir(real)
	if err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	if len(ents) > 0 {
		return fmt.Errorf("state directory %s was not made by Parley (mode %04o; Parley makes its own 0700) and holds files already (%s): if you made it and they are yours, check them, then `chmod 700 %s`", dir, st.Mode().Perm(), ents[0].Name(), dir)
	}
	return nil
}

// checkoutOf is the top of the git checkout that holds dir, or "". The
// search stops at a directory anyone may write to (/tmp): a .git there is
// anyone's, not a checkout of the user's (and another user could make one
// to refuse every state directory below it).
func checkoutOf(dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		if st, err := os.Stat(d); err == nil && runtime.GOOS != "windows" && st.Mode().Perm()&0o002 != 0 {
			return ""
		}
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}
