// Package workspace finds, for a directory, the workspace it belongs to and the
// agent identities registered there (.parley/identities/NAME.json). It reads
// git's files itself, without running git, so that `parley mcp serve` starts
// fast. The CLI imports it.
package workspace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/parley-dev/parley/internal/home"
	"github.com/parley-dev/parley/internal/safefile"
)

// Location is where a directory sits.
type Location struct {
	// Workspace is the default workspace name: the main worktree's directory
	// of the git repository (shared by all its worktrees), or the directory
	// itself outside git.
	Workspace string
	// Root is the directory that holds .parley/: the top of the current
	// worktree, or the directory itself outside git.
	Root string
}

// Locate finds the location of dir.
func Locate(dir string) (Location, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return Location{}, err
	}
	for d := dir; ; d = filepath.Dir(d) {
		gitPath := filepath.Join(d, ".git")
		st, err := os.Stat(gitPath)
		if err == nil {
			common, err := commonDir(gitPath, st.IsDir())
			if err != nil {
				return Location{}, err
			}
			ws := common
			if filepath.Base(common) == ".git" {
				ws = filepath.Dir(common)
			}
			return Location{Workspace: ws, Root: d}, nil
		}
		if filepath.Dir(d) == d {
			return Location{Workspace: dir, Root: dir}, nil
		}
	}
}

// commonDir resolves a .git entry to the repository's common git directory.
// A worktree's .git is a file "gitdir: PATH"; that git dir names the common
// dir in its "commondir" file.
func commonDir(gitPath string, isDir bool) (string, error) {
	gitDir := gitPath
	if !isDir {
		b, err := os.ReadFile(gitPath)
		if err != nil {
			return "", fmt.Errorf("read %s: %w", gitPath, err)
		}
		line := strings.TrimSpace(string(b))
		rest, ok := strings.CutPrefix(line, "gitdir:")
		if !ok {
			return "", fmt.Errorf("%s: not a gitdir file", gitPath)
		}
		gitDir = strings.TrimSpace(rest)
		if !filepath.IsAbs(gitDir) {
			gitDir = filepath.Join(filepath.Dir(gitPath), gitDir)
		}
	}
	if b, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		c := strings.TrimSpace(string(b))
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		gitDir = c
	}
	return filepath.Clean(gitDir), nil
}

// Identity is the content of an identity file.
type Identity struct {
	Name      string    `json:"name"`
	Role      string    `json:"role"`
	Module    string    `json:"module,omitempty"`
	Workspace string    `json:"workspace"`
	AgentID   string    `json:"agent_id,omitempty"`
	JoinedAt  time.Time `json:"joined_at,omitempty"`
	// Seal proves that this user's join wrote the workspace (seal.go).
	Seal string `json:"seal,omitempty"`
}

// maxIdentityFile bounds what is read of an identity file.
const maxIdentityFile = 64 << 10

// IdentityDir is where root keeps identity files.
func IdentityDir(root string) string { return filepath.Join(root, ".parley", "identities") }

// ParseIdentity decodes an identity file's content.
func ParseIdentity(b []byte) (Identity, error) {
	var id Identity
	if len(b) > maxIdentityFile {
		return id, fmt.Errorf("identity file is over %d bytes", maxIdentityFile)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&id); err != nil {
		return id, fmt.Errorf("invalid identity file: %w", err)
	}
	if id.Name == "" {
		return id, errors.New("invalid identity file: no name")
	}
	return id, nil
}

// LoadIdentity reads root's identity file of name.
func LoadIdentity(root, name string) (Identity, error) {
	if strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
		return Identity{}, fmt.Errorf("invalid agent name %q", name)
	}
	path := filepath.Join(IdentityDir(root), name+".json")
	b, err := os.ReadFile(path)
	if err != nil {
		return Identity{}, err
	}
	id, err := ParseIdentity(b)
	if err != nil {
		return id, fmt.Errorf("%s: %w", path, err)
	}
	return id, nil
}

// Identities lists the names with identity files under root.
func Identities(root string) ([]string, error) {
	ents, err := os.ReadDir(IdentityDir(root))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), ".json"); ok && !e.IsDir() {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names, nil
}

// SaveIdentity writes root's identity file for id.Name (0600, atomically).
// A repository is not to be trusted with where that lands: .parley and its
// identities directory must be real directories, not links, and the file
// itself replaces whatever link sits at its name instead of writing through it.
// The name and workspace are sealed with the key in home (seal.go).
func SaveIdentity(root, home string, id Identity) (string, error) {
	if strings.ContainsAny(id.Name, `/\`) || id.Name == "" || id.Name == "." || id.Name == ".." {
		return "", fmt.Errorf("save identity: invalid agent name %q", id.Name)
	}
	key, err := loadKey(home, true)
	if err != nil {
		return "", fmt.Errorf("save identity: seal key: %w", err)
	}
	id.Seal = seal(key, id.Name, id.Workspace)
	dir := IdentityDir(root)
	// One level at a time, each checked before the next is made in it: a
	// .parley that is a link must not get an identities directory made
	// wherever it points (Mkdir does not follow a link; MkdirAll would).
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("save identity: %w", err)
		}
		st, err := os.Lstat(d)
		if err != nil {
			return "", fmt.Errorf("save identity: %w", err)
		}
		if !st.IsDir() {
			return "", fmt.Errorf("save identity: %s is a %s, not a directory: remove it and join again", d, kindOf(st.Mode()))
		}
	}
	b, err := json.MarshalIndent(id, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, id.Name+".json")
	if err := safefile.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		return "", fmt.Errorf("save identity: %w", err)
	}
	ensureIgnored(root)
	return path, nil
}

func kindOf(m fs.FileMode) string {
	if m&fs.ModeSymlink != 0 {
		return "symbolic link"
	}
	return "file"
}

// ensureIgnored keeps identity files out of commits: .parley/ holds one
// person's agents, not the project's.
func ensureIgnored(root string) {
	path := filepath.Join(root, ".parley", ".gitignore")
	if _, err := os.Lstat(path); err == nil {
		return
	}
	safefile.WriteFile(path, []byte("*\n"), 0o644)
}

// Resolved is the identity a command speaks for.
type Resolved struct {
	Workspace string
	Agent     string
	Role      string
	Module    string
	Root      string
	Source    string // where the agent name came from: flag, env, identity file, tmux, session (VAR), or ""
}

// Lookup is the input of Resolve: values from flags and from the environment.
type Lookup struct {
	Dir                    string
	FlagAgent, FlagRole    string
	FlagModule, FlagWS     string
	EnvAgent, EnvRole      string
	EnvWS                  string
	TmuxWindow             string // the tmux window name, when inside tmux
	AllowTmux, RequireName bool
	// TrustFileWorkspace honours an identity file naming a workspace other
	// than the directory's own (EnvTrustWorkspace=1).
	TrustFileWorkspace bool
	// Home is the state directory, whose key verifies identity files' seals.
	Home string
	// Getenv reads the client session's id for SessionName, the last
	// resort for a name; nil: no session name.
	Getenv func(string) string
}

// EnvTrustWorkspace is the environment variable that, set to 1, lets an
// identity file name a workspace other than its repository's.
const EnvTrustWorkspace = "PARLEY_TRUST_IDENTITY_WORKSPACE"

// FromEnv fills l's environment fields from the process environment.
func (l Lookup) FromEnv() Lookup {
	l.EnvAgent, l.EnvRole, l.EnvWS = os.Getenv("PARLEY_AGENT"), os.Getenv("PARLEY_ROLE"), os.Getenv("PARLEY_WORKSPACE")
	l.TrustFileWorkspace = os.Getenv(EnvTrustWorkspace) == "1"
	l.Getenv = os.Getenv
	if p, err := home.Resolve(""); err == nil {
		l.Home = p.Home
	}
	return l
}

// Resolve finds the identity as seed 000 does: flag, then environment, then the
// single identity file of the directory's root (then, if allowed, the tmux
// window name). The workspace comes from the flag, the environment, the
// identity file, then the directory's git repository. An identity file that
// names another workspace than the repository's is refused unless the flag or
// the environment names one or l.TrustFileWorkspace is set: a cloned
// repository could otherwise ship one that joins its user to a workspace of
// the author's choosing. A file that this user's join wrote carries a seal
// that the key in l.Home verifies, and is honoured.
func Resolve(l Lookup) (Resolved, error) {
	loc, err := Locate(l.Dir)
	if err != nil {
		return Resolved{}, err
	}
	r := Resolved{Root: loc.Root, Agent: first(l.FlagAgent, l.EnvAgent), Role: first(l.FlagRole, l.EnvRole), Module: l.FlagModule}
	switch {
	case l.FlagAgent != "":
		r.Source = "flag"
	case l.EnvAgent != "":
		r.Source = "env"
	}
	var file *Identity
	if r.Agent != "" {
		if id, err := LoadIdentity(loc.Root, r.Agent); err == nil {
			file = &id
		}
	} else {
		names, err := Identities(loc.Root)
		if err != nil {
			return r, fmt.Errorf("read identities: %w", err)
		}
		switch {
		case len(names) == 1:
			id, err := LoadIdentity(loc.Root, names[0])
			if err != nil {
				return r, err
			}
			file, r.Agent, r.Source = &id, id.Name, "identity file"
		case len(names) > 1:
			if l.RequireName {
				return r, fmt.Errorf("several identities in %s (%s): choose one with --agent NAME or PARLEY_AGENT", IdentityDir(loc.Root), strings.Join(names, ", "))
			}
		case l.AllowTmux && l.TmuxWindow != "":
			r.Agent, r.Source = l.TmuxWindow, "tmux"
		}
	}
	if r.Agent == "" && file == nil && l.Getenv != nil {
		if name, from, ok := SessionName(l.Getenv, loc.Root); ok {
			r.Agent, r.Source = name, "session ("+from+")"
		}
	}
	if file != nil {
		r.Role = first(r.Role, file.Role)
		r.Module = first(r.Module, file.Module)
	}
	fileWS := ""
	if file != nil {
		fileWS = file.Workspace
		if fileWS != "" && fileWS != loc.Workspace && l.FlagWS == "" && l.EnvWS == "" && !l.TrustFileWorkspace && !sealed(l.Home, file) {
			return r, fmt.Errorf("identity file %s names workspace %q, not this directory's (%s), and was not written by your `parley join`: refusing it, since a repository can ship such a file; if you meant it, pass --workspace %s, set PARLEY_WORKSPACE, set %s=1, or join again",
				filepath.Join(IdentityDir(loc.Root), file.Name+".json"), fileWS, loc.Workspace, fileWS, EnvTrustWorkspace)
		}
	}
	r.Workspace = first(l.FlagWS, l.EnvWS, fileWS, loc.Workspace)
	if r.Agent == "" && l.RequireName {
		return r, errors.New("no agent identity: pass --agent NAME, set PARLEY_AGENT, or run `parley join --name NAME --role ROLE` here")
	}
	return r, nil
}

func first(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
