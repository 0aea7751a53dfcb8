package runner

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/parley-dev/parley/internal/hub"
)

// git runs git in dir and returns its trimmed stdout; errors carry stderr.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", &gitError{args: args, msg: msg}
	}
	return strings.TrimSpace(out.String()), nil
}

type gitError struct {
	args []string
	msg  string
}

func (e *gitError) Error() string { return "git " + strings.Join(e.args, " ") + ": " + e.msg }

// makeWorktree creates a git worktree for agent id from the HEAD of cwd's
// repository, on a new branch parley/<id>, under home/worktrees/<id>. It
// returns where the agent runs (the same subdirectory cwd was in), the
// branch, and the worktree's top directory.
func makeWorktree(ctx context.Context, home, cwd, id string) (dir, branch, top string, err error) {
	const op = "create_agent"
	if _, err := exec.LookPath("git"); err != nil {
		return "", "", "", hub.Errorf(op, hub.Invalid, "worktree needs git, which is not installed")
	}
	root, err := git(ctx, cwd, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", "", "", hub.Errorf(op, hub.Invalid, "worktree needs cwd inside a git repository: %s is not (%v)", cwd, err)
	}
	rel, err := filepath.Rel(root, cwd)
	if err != nil || strings.HasPrefix(rel, "..") {
		rel = "."
	}
	top = filepath.Join(home, "worktrees", id)
	if err := os.MkdirAll(filepath.Dir(top), 0o700); err != nil {
		return "", "", "", err
	}
	branch = "parley/" + id
	if _, err := git(ctx, root, "worktree", "add", "-b", branch, top); err != nil {
		return "", "", "", hub.Errorf(op, hub.Invalid, "create the worktree: %v", err)
	}
	return filepath.Join(top, rel), branch, top, nil
}

// SetBranch renames the branch of the agent's own Parley-made worktree (the
// self profile's set_branch).
func (r *Runner) SetBranch(ctx context.Context, ws, id, name string) (string, error) {
	const op = "set_branch"
	r.mu.Lock()
	st, err := r.lookup(op, ws, id)
	var wt, old string
	if err == nil {
		wt, old = st.rec.Worktree, st.rec.Branch
	}
	r.mu.Unlock()
	if err != nil {
		return "", notManaged(op, ws, id)
	}
	if wt == "" {
		return "", hub.Errorf(op, hub.Conflict, "set_branch only renames the branch of a worktree Parley made for the agent; %s runs in %s, which Parley did not make (create the agent with worktree=true)", id, st.rec.Cwd)
	}
	name = strings.TrimSpace(name)
	if name == "" || strings.HasPrefix(name, "-") {
		return "", hub.Errorf(op, hub.Invalid, "invalid branch name %q", name)
	}
	if _, err := git(ctx, wt, "check-ref-format", "--branch", name); err != nil {
		return "", hub.Errorf(op, hub.Invalid, "invalid branch name %q", name)
	}
	cur, err := git(ctx, wt, "rev-parse", "--abbrev-ref", "HEAD")
	if err != nil {
		return "", hub.Errorf(op, hub.Internal, "read the worktree's branch: %v", err)
	}
	if cur != old {
		return "", hub.Errorf(op, hub.Conflict, "the worktree is on %q, not on its branch %q: switch back before renaming", cur, old)
	}
	if cur == name {
		return name, nil
	}
	if _, err := git(ctx, wt, "branch", "-m", old, name); err != nil {
		return "", hub.Errorf(op, hub.Conflict, "rename the branch: %v", err)
	}
	r.mu.Lock()
	st.rec.Branch = name
	st.rec.UpdatedAt = time.Now().UTC()
	st.notify()
	r.mu.Unlock()
	if err := r.saveAgent(st); err != nil {
		return "", err
	}
	r.emit(st, &Event{Kind: EvNote, Text: "branch renamed from " + old + " to " + name})
	return name, nil
}
