package workspace

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	c := exec.Command("git", args...)
	c.Dir = dir
	c.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func TestLocateSharesWorkspaceAcrossWorktrees(t *testing.T) {
	root := t.TempDir()
	repo := filepath.Join(root, "repo")
	os.MkdirAll(filepath.Join(repo, "sub", "dir"), 0o755)
	git(t, repo, "init", "-q")
	git(t, repo, "commit", "-q", "--allow-empty", "-m", "init")
	wt := filepath.Join(root, "wt")
	git(t, repo, "worktree", "add", "-q", wt)
	plain := filepath.Join(root, "plain")
	os.MkdirAll(plain, 0o755)

	tests := []struct {
		name, dir, ws, root string
	}{
		{"repo top", repo, repo, repo},
		{"repo subdir", filepath.Join(repo, "sub", "dir"), repo, repo},
		{"worktree", wt, repo, wt},
		{"outside git", plain, plain, plain},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			loc, err := Locate(tt.dir)
			if err != nil {
				t.Fatal(err)
			}
			if loc.Workspace != tt.ws || loc.Root != tt.root {
				t.Errorf("got %+v, want workspace %s root %s", loc, tt.ws, tt.root)
			}
		})
	}
	// git agrees on the common dir.
	out, err := exec.Command("git", "-C", wt, "rev-parse", "--path-format=absolute", "--git-common-dir").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := filepath.Dir(strings.TrimSpace(string(out))); got != repo {
		t.Errorf("git common dir parent: got %s, want %s", got, repo)
	}
}

func TestResolve(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	// No identity at all.
	if _, err := Resolve(Lookup{Dir: dir, RequireName: true}); err == nil || !strings.Contains(err.Error(), "no agent identity") {
		t.Errorf("no identity: got %v", err)
	}
	r, err := Resolve(Lookup{Dir: dir})
	if err != nil || r.Agent != "" || r.Workspace != dir {
		t.Errorf("optional identity: got %+v %v", r, err)
	}
	// One identity file: it is used, with its role and workspace.
	if _, err := SaveIdentity(dir, home, Identity{Name: "alice", Role: "planner", Workspace: "team"}); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(filepath.Join(IdentityDir(dir), "alice.json"))
	if st.Mode().Perm() != 0o600 {
		t.Errorf("identity file mode: got %o", st.Mode().Perm())
	}
	// Its workspace is not this directory's: refused unless asked for.
	if _, err := Resolve(Lookup{Dir: dir, RequireName: true}); err == nil || !strings.Contains(err.Error(), `names workspace "team"`) || !strings.Contains(err.Error(), EnvTrustWorkspace+"=1") {
		t.Errorf("identity file naming another workspace: got %v, want a refusal that says how to allow it", err)
	}
	r, _ = Resolve(Lookup{Dir: dir, RequireName: true, TrustFileWorkspace: true})
	if r.Agent != "alice" || r.Role != "planner" || r.Workspace != "team" || r.Source != "identity file" {
		t.Errorf("single identity: got %+v", r)
	}
	// Written by this user's join, it carries a seal that the user's key
	// verifies: honoured.
	r, err = Resolve(Lookup{Dir: dir, RequireName: true, Home: home})
	if err != nil || r.Workspace != "team" {
		t.Errorf("sealed identity naming another workspace: got %+v %v", r, err)
	}
	// The same file from elsewhere (another user's key), or changed by hand: refused.
	if _, err := Resolve(Lookup{Dir: dir, RequireName: true, Home: t.TempDir()}); err == nil {
		t.Error("identity sealed with another key: got no error")
	}
	path := filepath.Join(IdentityDir(dir), "alice.json")
	b, _ := os.ReadFile(path)
	os.WriteFile(path, bytes.Replace(b, []byte(`"team"`), []byte(`"other"`), 1), 0o600)
	if _, err := Resolve(Lookup{Dir: dir, RequireName: true, Home: home}); err == nil {
		t.Error("sealed identity edited to name another workspace: got no error")
	}
	SaveIdentity(dir, home, Identity{Name: "alice", Role: "planner", Workspace: "team"})
	r, _ = Resolve(Lookup{Dir: dir, RequireName: true, EnvWS: "team"})
	if r.Agent != "alice" || r.Workspace != "team" {
		t.Errorf("single identity, workspace named in the environment: got %+v", r)
	}
	SaveIdentity(dir, home, Identity{Name: "alice", Role: "planner", Workspace: dir})
	r, _ = Resolve(Lookup{Dir: dir, RequireName: true})
	if r.Agent != "alice" || r.Role != "planner" || r.Workspace != dir || r.Source != "identity file" {
		t.Errorf("single identity of this directory: got %+v", r)
	}
	// Env and flags win, in that order.
	r, _ = Resolve(Lookup{Dir: dir, EnvAgent: "bob", EnvWS: "envws"})
	if r.Agent != "bob" || r.Workspace != "envws" || r.Source != "env" {
		t.Errorf("env: got %+v", r)
	}
	r, _ = Resolve(Lookup{Dir: dir, FlagAgent: "carol", EnvAgent: "bob", FlagWS: "flagws", EnvWS: "envws"})
	if r.Agent != "carol" || r.Workspace != "flagws" || r.Source != "flag" {
		t.Errorf("flag: got %+v", r)
	}
	// A named agent with a file takes its role.
	r, _ = Resolve(Lookup{Dir: dir, FlagAgent: "alice"})
	if r.Role != "planner" {
		t.Errorf("named identity: got %+v", r)
	}
	// Two identities: ambiguous unless named.
	SaveIdentity(dir, home, Identity{Name: "bob", Role: "dev", Workspace: "team"})
	if _, err := Resolve(Lookup{Dir: dir, RequireName: true}); err == nil || !strings.Contains(err.Error(), "alice, bob") {
		t.Errorf("two identities: got %v", err)
	}
	// tmux window name, only when allowed and nothing else names the agent.
	other := t.TempDir()
	r, _ = Resolve(Lookup{Dir: other, AllowTmux: true, TmuxWindow: "win1"})
	if r.Agent != "win1" || r.Source != "tmux" {
		t.Errorf("tmux: got %+v", r)
	}
	// Inside tmux but outside a client session, the window names the agent;
	// inside a client session, the session does (two sessions in windows of
	// one name are two agents), unless tmux comes first (AgentMail).
	claude := func(id string) func(string) string {
		return func(k string) string {
			if k == "CLAUDE_CODE_SESSION_ID" {
				return id
			}
			return ""
		}
	}
	sessA, sessB := claude("aaaa-1111"), claude("bbbb-2222")
	ra, _ := Resolve(Lookup{Dir: other, AllowTmux: true, TmuxWindow: "claude", Getenv: sessA})
	rb, _ := Resolve(Lookup{Dir: other, AllowTmux: true, TmuxWindow: "claude", Getenv: sessB})
	if !strings.HasPrefix(ra.Agent, "claude-") || ra.Agent == rb.Agent || ra.Source != "session (CLAUDE_CODE_SESSION_ID)" {
		t.Errorf("two sessions in same-named tmux windows: %+v and %+v, want two session names", ra, rb)
	}
	if r, _ := Resolve(Lookup{Dir: other, AllowTmux: true, TmuxWindow: "claude", TmuxFirst: true, Getenv: sessA}); r.Agent != "claude" || r.Source != "tmux" {
		t.Errorf("tmux first: got %+v", r)
	}
	// The identity directory is kept out of git.
	if b, _ := os.ReadFile(filepath.Join(dir, ".parley", ".gitignore")); string(b) != "*\n" {
		t.Errorf(".parley/.gitignore: got %q", b)
	}
}

// TestIdentityFileMadeForItsSession: a client session takes an identity
// file only when `parley join` made it inside that session; a person's file
// (joined at a terminal) is for commands outside any client session, and a
// file of another session for that session only. Whoever does not take a
// file is told why.
func TestIdentityFileMadeForItsSession(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	none, sessA, sessB := env(), env("CLAUDE_CODE_SESSION_ID", "aaaa"), env("CLAUDE_CODE_SESSION_ID", "bbbb")
	if _, err := SaveIdentity(dir, home, Identity{Name: "alice", Role: "planner", Workspace: dir}); err != nil {
		t.Fatal(err)
	}
	// The person at the terminal is alice.
	if r, err := Resolve(Lookup{Dir: dir, RequireName: true, Getenv: none}); err != nil || r.Agent != "alice" || r.Source != "identity file" {
		t.Errorf("a person's command: %+v %v, want alice", r, err)
	}
	// A client session there is not.
	s, _ := FindSession(sessA)
	r, err := Resolve(Lookup{Dir: dir, RequireName: true, Getenv: sessA})
	if err != nil || r.Agent != s.Name(dir) || r.Role != "" || r.Session != s {
		t.Errorf("a session beside a person's file: %+v %v, want its own name %s", r, err, s.Name(dir))
	}
	if len(r.Skipped) != 1 || !strings.Contains(r.Skipped[0], "alice is a person's") {
		t.Errorf("skipped: %q, want alice named as a person's", r.Skipped)
	}
	// Session A joins as reviewer: A is reviewer, B is not, nor the person.
	if _, err := SaveIdentity(dir, home, Identity{Name: "reviewer", Role: "reviewer", Workspace: dir, Session: s.Key()}); err != nil {
		t.Fatal(err)
	}
	if r, _ := Resolve(Lookup{Dir: dir, Getenv: sessA}); r.Agent != "reviewer" || r.Role != "reviewer" {
		t.Errorf("the session the file was made for: %+v, want reviewer", r)
	}
	if r, _ := Resolve(Lookup{Dir: dir, Getenv: sessB}); !strings.HasPrefix(r.Agent, "claude-") || len(r.Skipped) != 2 || !strings.Contains(strings.Join(r.Skipped, " "), "reviewer was made for another client session") {
		t.Errorf("another session: %+v, want its own name, both files skipped", r)
	}
	if r, _ := Resolve(Lookup{Dir: dir, RequireName: true, Getenv: none}); r.Agent != "alice" {
		t.Errorf("the person, beside a session's file: %+v, want alice", r)
	}
	// A given name wins, file or not, and takes the file's role.
	if r, _ := Resolve(Lookup{Dir: dir, FlagAgent: "reviewer", Getenv: sessB}); r.Agent != "reviewer" || r.Role != "reviewer" || r.Source != "flag" {
		t.Errorf("a given name: %+v", r)
	}
	// A damaged file is skipped inside a session, not fatal.
	os.WriteFile(filepath.Join(IdentityDir(dir), "broken.json"), []byte("{"), 0o600)
	if r, err := Resolve(Lookup{Dir: dir, Getenv: sessA}); err != nil || r.Agent != "reviewer" || !strings.Contains(strings.Join(r.Skipped, " "), "broken is damaged") {
		t.Errorf("a damaged file: %+v %v", r, err)
	}
}

func TestParseIdentityRejectsBadFiles(t *testing.T) {
	for _, tt := range []struct{ name, in string }{
		{"empty", ""}, {"not json", "name: x"}, {"no name", `{"role":"r"}`}, {"wrong type", `{"name":7}`},
		{"huge", `{"name":"` + strings.Repeat("x", 70<<10) + `"}`},
	} {
		if _, err := ParseIdentity([]byte(tt.in)); err == nil {
			t.Errorf("%s: got no error", tt.name)
		}
	}
	if _, err := LoadIdentity(t.TempDir(), "../etc/passwd"); err == nil {
		t.Error("path traversal in a name: got no error")
	}
}

func FuzzParseIdentity(f *testing.F) {
	f.Add([]byte(`{"name":"alice","role":"planner","workspace":"/repo"}`))
	f.Add([]byte(`{"name":""}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		id, err := ParseIdentity(b)
		if err == nil && id.Name == "" {
			t.Fatalf("accepted an identity without a name: %q", b)
		}
	})
}

// TestSaveIdentityIgnoresPlantedLinks: a repository that ships links where
// join writes cannot turn the write against another file.
func TestSaveIdentityIgnoresPlantedLinks(t *testing.T) {
	victim := filepath.Join(t.TempDir(), "bashrc")
	os.WriteFile(victim, []byte("precious"), 0o600)

	repo := t.TempDir()
	dir := IdentityDir(repo)
	os.MkdirAll(dir, 0o755)
	os.Symlink(victim, filepath.Join(dir, "bob.json.tmp"))
	os.Symlink(victim, filepath.Join(repo, ".parley", ".gitignore"))
	if _, err := SaveIdentity(repo, t.TempDir(), Identity{Name: "bob", Role: "dev", Workspace: repo}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Errorf("link target: got %q, want it untouched", b)
	}
	if id, err := LoadIdentity(repo, "bob"); err != nil || id.Role != "dev" {
		t.Errorf("identity: got %+v %v", id, err)
	}

	// The identities directory itself a link elsewhere: refused.
	elsewhere := t.TempDir()
	repo2 := t.TempDir()
	os.Mkdir(filepath.Join(repo2, ".parley"), 0o755)
	os.Symlink(elsewhere, IdentityDir(repo2))
	if _, err := SaveIdentity(repo2, t.TempDir(), Identity{Name: "bob", Workspace: repo2}); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("identities directory is a link: got %v", err)
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
		t.Errorf("wrote through the link: %v", ents)
	}

	// .parley itself a link elsewhere: refused before anything is made
	// there (an identities directory included).
	elsewhere3 := t.TempDir()
	repo3 := t.TempDir()
	os.Symlink(elsewhere3, filepath.Join(repo3, ".parley"))
	if _, err := SaveIdentity(repo3, t.TempDir(), Identity{Name: "bob", Workspace: repo3}); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf(".parley is a link: got %v", err)
	}
	if ents, _ := os.ReadDir(elsewhere3); len(ents) != 0 {
		t.Errorf(".parley is a link: made %v in its target", ents)
	}
}
