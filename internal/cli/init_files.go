package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/parley-dev/parley/internal/safefile"
)

// The files parley init changes inside a repository are the repository's:
// it may ship .claude as a link to a directory of the user's (~/.ssh), or
// .mcp.json as a link to a file of theirs (~/.claude.json). Following such a
// link, init would show the target in its diff, copy it into the repository,
// or write into the target. So a link anywhere on the way to such a file is
// refused, and the file is read and written through os.Root, which cannot
// leave the repository even if a link appears meanwhile. Files outside the
// repository (Codex's ~/.codex/config.toml) are the user's own and are
// followed as usual: dotfile managers link them.

// repoRel returns path relative to root when path is inside root.
func repoRel(root, path string) (string, bool) {
	if root == "" {
		return "", false
	}
	rel, err := filepath.Rel(root, path)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return rel, true
}

// checkNoLinks refuses a symbolic link, or anything but a directory or a
// regular file where one belongs, on the way from root to rel.
func checkNoLinks(root, rel string) error {
	parts := strings.Split(rel, string(filepath.Separator))
	cur := root
	for i, part := range parts {
		cur = filepath.Join(cur, part)
		st, err := os.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		at, _ := filepath.Rel(root, cur)
		last := i == len(parts)-1
		switch {
		case st.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(cur)
			return fmt.Errorf("refusing to use %s: %s in this repository is a symbolic link (to %s); parley init reads and writes only plain files inside the repository: replace the link with a real %s, then run again",
				rel, at, target, map[bool]string{true: "file", false: "directory"}[last])
		case !last && !st.IsDir():
			return fmt.Errorf("refusing to use %s: %s is not a directory", rel, at)
		case last && !st.Mode().IsRegular():
			return fmt.Errorf("refusing to use %s: it is not a regular file (%s)", rel, st.Mode().Type())
		}
	}
	return nil
}

// readExisting reads path; a missing file is not an error. A path inside
// root is read without following links (see above).
func readExisting(root, path string) ([]byte, bool, error) {
	var b []byte
	var err error
	if rel, ok := repoRel(root, path); ok {
		if err := checkNoLinks(root, rel); err != nil {
			return nil, false, err
		}
		var r *os.Root
		if r, err = os.OpenRoot(root); err != nil {
			return nil, false, err
		}
		defer r.Close()
		b, err = r.ReadFile(rel)
	} else {
		b, err = os.ReadFile(path)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return b, true, nil
}

// writeFileAtomic replaces path with b, keeping its mode. A path inside root
// is written through os.Root after the same refusal of links as reading.
func writeFileAtomic(root, path string, b []byte) error {
	rel, ok := repoRel(root, path)
	if !ok {
		mode := os.FileMode(0o644)
		if st, err := os.Stat(path); err == nil {
			mode = st.Mode().Perm()
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		if err := safefile.WriteFile(path, b, mode); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		return nil
	}
	if err := checkNoLinks(root, rel); err != nil {
		return err
	}
	if err := writeInRoot(root, rel, b); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func writeInRoot(root, rel string, b []byte) error {
	r, err := os.OpenRoot(root)
	if err != nil {
		return err
	}
	defer r.Close()
	mode := os.FileMode(0o644)
	if st, err := r.Lstat(rel); err == nil {
		mode = st.Mode().Perm()
	}
	if err := r.MkdirAll(filepath.Dir(rel), 0o755); err != nil {
		return err
	}
	return safefile.WriteIn(r, rel, b, mode)
}
