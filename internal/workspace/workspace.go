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
	"slices"
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
	// Session is the client session the file was made for (Session.Key):
	// `parley join` run inside one (a Claude Code session's shell, a
	// Codex thread's) records it, and only that session takes the name.
	// Empty: a person's, joined at a terminal outside any client session,
	// which only commands outside client sessions take.
	Session string `json:"session,omitempty"`
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
	// Session is the client session the command runs in, if it names one.
	Session Session
	// Asked is the name the command was given and does not speak as:
	// another live client session holds it (the daemon said so).
	Asked string
	// Skipped are the identity files of the directory that this command
	// did not take, each with why (made for another client session, a
	// person's, damaged): a session is told why it does not speak as them.
	Skipped []string
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
	// TmuxFirst puts the tmux window's name before the client session's
	// own: the AgentMail profile's agents are their tmux windows (seed 002).
	TmuxFirst bool
	// TrustFileWorkspace honours an identity file naming a workspace other
	// than the directory's own (EnvTrustWorkspace=1).
	TrustFileWorkspace bool
	// Home is the state directory, whose key verifies identity files' seals.
	Home string
	// Getenv reads the client session (FindSession), whose own name comes
	// after a given one and an identity file made for it; nil: no session.
	Getenv func(string) string
	// Fallback is the session of a client that names none (for `parley mcp
	// serve`, the client process that started it): its name comes last,
	// after tmux's, and like any session it takes no person's identity
	// file. Nil: none.
	Fallback *Session
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

// Resolve finds the identity a command or a session speaks as, most
// explicit first:
//
//  1. a given name: the flag, then the environment;
//  2. the identity file made for this client session (one `parley join`
//     wrote inside it), or, outside any client session, the single
//     identity file a person joined at a terminal;
//  3. the client session's own name (Session.Name): two sessions in one
//     checkout are two agents, whatever the files here say;
//  4. inside tmux, if allowed, the window's name (before 3 with TmuxFirst).
//
// An identity file made for another session, or a person's file seen from
// inside a client session, is not taken (Resolved.Skipped says so): a
// repository holding alice's file must not make every session there alice.
//
// The workspace comes from the flag, the environment, the identity file,
// then the directory's git repository. An identity file that names another
// workspace than the repository's is refused unless the flag or the
// environment names one or l.TrustFileWorkspace is set: a cloned repository
// could otherwise ship one that joins its user to a workspace of the
// author's choosing. A file that this user's join wrote carries a seal that
// the key in l.Home verifies, and is honoured.
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
	sess, inSession := FindSession(l.Getenv)
	fileKey := sess.Key()
	if !inSession && l.Fallback != nil {
		fileKey = l.Fallback.Key()
	}
	r.Session = sess
	tmuxName := l.AllowTmux && l.TmuxWindow != ""
	var file *Identity
	if r.Agent != "" {
		if id, err := LoadIdentity(loc.Root, r.Agent); err == nil {
			file = &id
		}
	} else {
		ours, skipped, err := identitiesFor(loc.Root, fileKey)
		if err != nil {
			return r, err
		}
		r.Skipped = skipped
		switch {
		case len(ours) == 1 || len(ours) > 1 && fileKey != "":
			// (A session that joined twice is its newest name.)
			file, r.Agent, r.Source = ours[0], ours[0].Name, "identity file"
		case len(ours) > 1:
			if l.RequireName {
				names := make([]string, len(ours))
				for i, id := range ours {
					names[i] = id.Name
				}
				slices.Sort(names)
				return r, fmt.Errorf("several identities in %s (%s): choose one with --agent NAME or PARLEY_AGENT", IdentityDir(loc.Root), strings.Join(names, ", "))
			}
		case tmuxName && (l.TmuxFirst || !inSession):
			r.Agent, r.Source = l.TmuxWindow, "tmux"
		case inSession:
			r.Agent, r.Source = sess.Name(loc.Root), "session ("+sess.Env+")"
		case tmuxName:
			r.Agent, r.Source = l.TmuxWindow, "tmux"
		case l.Fallback != nil:
			r.Session = *l.Fallback
			r.Agent, r.Source = l.Fallback.Name(loc.Root), "session ("+l.Fallback.Env+")"
		}
	}
	if r.Session.ID == "" && l.Fallback != nil {
		// A given name, the client's process: still a client session.
		r.Session = *l.Fallback
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
		msg := "no agent identity: pass --agent NAME, set PARLEY_AGENT, or run `parley join --name NAME --role ROLE` here"
		if len(r.Skipped) > 0 {
			msg += " (not taken: " + strings.Join(r.Skipped, "; ") + ")"
		}
		return r, errors.New(msg)
	}
	return r, nil
}

// identitiesFor reads root's identity files and sorts them into those made
// for the client session of key (a person's, for key "") and the others,
// which it names with why they are not taken. Ours come newest first.
func identitiesFor(root, key string) (ours []*Identity, skipped []string, err error) {
	names, err := Identities(root)
	if err != nil {
		return nil, nil, fmt.Errorf("read identities: %w", err)
	}
	for _, n := range names {
		id, err := LoadIdentity(root, n)
		switch {
		case err != nil:
			skipped = append(skipped, fmt.Sprintf("%s is damaged (%v)", n, err))
		case id.Session == key:
			ours = append(ours, &id)
		case id.Session == "":
			skipped = append(skipped, fmt.Sprintf("%s is a person's (`parley join` at a terminal, outside any client session)", n))
		default:
			skipped = append(skipped, fmt.Sprintf("%s was made for another client session (%s)", n, id.Session))
		}
	}
	slices.SortStableFunc(ours, func(a, b *Identity) int { return b.JoinedAt.Compare(a.JoinedAt) })
	return ours, skipped, nil
}

func first(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
