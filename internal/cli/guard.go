package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/client"
	"github.com/parley-dev/parley/internal/home"
	"github.com/parley-dev/parley/internal/hub"
)

// guardMarker marks a hook script as ours, so that install can replace it and
// uninstall can tell it from the repository's own hooks.
const guardMarker = "# parley guard: installed by `parley guard install`"

// chainedSuffix names the repository's own hook once ours takes its place;
// ours runs it after its own check.
const chainedSuffix = ".parley-chained"

// guardHooks are the git hooks the guard installs.
var guardHooks = []string{"pre-commit", "pre-push", "post-commit"}

// guardBypassEnv turns the guard off for one command: PARLEY_GUARD=off git commit ...
const guardBypassEnv = "PARLEY_GUARD"

// guardTimeout bounds what a hook waits for the daemon: a commit must never
// hang on it.
const guardTimeout = 5 * time.Second

func guardCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "guard",
		Short: "Git hooks that keep commits off files other agents have reserved",
		Long: `The commit guard: git hooks that refuse a commit (pre-commit) or a push
(pre-push) that touches files another agent holds with an exclusive
reservation, naming the holder, its reason and when it ends; after a commit
(post-commit) the committer's reservations of the committed files are
released. Set ` + guardBypassEnv + `=off to let one command through
(` + guardBypassEnv + `=off git commit ...).

The committer is the agent of the repository's identity (--agent,
PARLEY_AGENT, or the single identity in .parley/identities); without one,
every exclusive reservation counts. When the daemon is not running, the hooks
let commits through with a warning: reservations are held by running agents.`,
	}
	cmd.AddCommand(guardInstallCmd(g), guardUninstallCmd(g), guardRunCmd(g))
	return cmd
}

func guardInstallCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "install",
		Short: "Install the guard's git hooks in this repository, beside any it has",
		Long: `Install pre-commit, pre-push and post-commit hooks in this repository's hooks
directory (core.hooksPath if set). A hook the repository already has is kept:
it is renamed NAME` + chainedSuffix + ` and the guard's hook runs it after its
own check, with the same arguments and input. Running install again changes
nothing; ` + "`parley guard uninstall`" + ` puts the original hooks back.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := hooksDir(cmd.Context())
			if err != nil {
				return err
			}
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("guard install: %w", err)
			}
			for _, name := range guardHooks {
				msg, err := installHook(dir, name, exe)
				if err != nil {
					return fmt.Errorf("guard install: %w", err)
				}
				fmt.Fprintln(g.stdout, msg)
			}
			return nil
		},
	}
}

func guardUninstallCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "uninstall",
		Short: "Remove the guard's git hooks and put back the ones they chained to",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := hooksDir(cmd.Context())
			if err != nil {
				return err
			}
			for _, name := range guardHooks {
				path := filepath.Join(dir, name)
				if !isGuardHook(path) {
					continue
				}
				if err := os.Remove(path); err != nil {
					return fmt.Errorf("guard uninstall: %w", err)
				}
				if _, err := os.Lstat(path + chainedSuffix); err == nil {
					if err := os.Rename(path+chainedSuffix, path); err != nil {
						return fmt.Errorf("guard uninstall: %w", err)
					}
					fmt.Fprintf(g.stdout, "%s: restored the repository's own hook\n", name)
					continue
				}
				fmt.Fprintf(g.stdout, "%s: removed\n", name)
			}
			return nil
		},
	}
}

// hooksDir is where git looks for this repository's hooks.
func hooksDir(ctx context.Context) (string, error) {
	out, err := git(ctx, nil, "rev-parse", "--path-format=absolute", "--git-path", "hooks")
	if err != nil {
		return "", fmt.Errorf("guard: not in a git repository? %w", err)
	}
	dir := strings.TrimSpace(string(out))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("guard: %w", err)
	}
	return dir, nil
}

func isGuardHook(path string) bool {
	b, err := os.ReadFile(path)
	return err == nil && bytes.Contains(b, []byte(guardMarker))
}

// installHook writes the guard's hook name into dir, moving a hook of the
// repository's own aside to chain to it.
func installHook(dir, name, exe string) (string, error) {
	path := filepath.Join(dir, name)
	script := hookScript(name, exe)
	msg := name + ": installed"
	switch fi, err := os.Lstat(path); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return "", err
	case isGuardHook(path):
		if old, _ := os.ReadFile(path); string(old) == script {
			return name + ": up to date", nil
		}
		msg = name + ": updated"
	case fi.Mode().IsRegular() || fi.Mode()&fs.ModeSymlink != 0:
		if _, err := os.Lstat(path + chainedSuffix); err == nil {
			return "", fmt.Errorf("%s exists and so does %s; move one of them aside", path, path+chainedSuffix)
		}
		if err := os.Rename(path, path+chainedSuffix); err != nil {
			return "", err
		}
		msg = fmt.Sprintf("%s: installed; the existing hook runs after it, as %s", name, name+chainedSuffix)
	default:
		return "", fmt.Errorf("%s is not a file", path)
	}
	// Write beside and rename, so git never runs half a script, and never
	// through a symbolic link someone left at the temporary name.
	tmp := fmt.Sprintf("%s.parley-%d.tmp", path, os.Getpid())
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return "", err
	}
	if _, err := f.WriteString(script); err != nil {
		f.Close()
		os.Remove(tmp)
		return "", err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return "", err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return "", err
	}
	return msg, nil
}

// hookScript is the shell script of hook name. It runs this parley binary
// (found again on PATH if it moved), then the repository's own hook, with the
// same arguments; pre-push's input (the refs) is handed to both.
func hookScript(name, exe string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/sh\n%s\n", guardMarker)
	fmt.Fprintf(&b, "# Let one command through: %s=off git ...\n", guardBypassEnv)
	fmt.Fprintf(&b, "parley=%s\n[ -x \"$parley\" ] || parley=parley\n", shellQuote(exe))
	fmt.Fprintf(&b, "chained=\"$(dirname \"$0\")/%s%s\"\n", name, chainedSuffix)
	if name == "pre-push" {
		b.WriteString(`input=$(cat)
feed() { if [ -n "$input" ]; then printf '%s\n' "$input"; fi; }
feed | "$parley" guard run pre-push "$@" || exit $?
if [ -x "$chained" ]; then feed | "$chained" "$@" || exit $?; fi
exit 0
`)
		return b.String()
	}
	fmt.Fprintf(&b, "\"$parley\" guard run %s \"$@\" || exit $?\n", name)
	b.WriteString("if [ -x \"$chained\" ]; then exec \"$chained\" \"$@\"; fi\nexit 0\n")
	return b.String()
}

func guardRunCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:    "run pre-commit|pre-push|post-commit",
		Short:  "Run one of the guard's hooks (git runs this)",
		Hidden: true,
		Args:   cobra.RangeArgs(1, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			if v := os.Getenv(guardBypassEnv); v == "off" || v == "0" || v == "false" {
				if args[0] != "post-commit" {
					fmt.Fprintf(g.stderr, "parley guard: %s=%s: not checking reservations\n", guardBypassEnv, v)
				}
				return nil
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), guardTimeout)
			defer cancel()
			var err error
			switch args[0] {
			case "pre-commit":
				err = guardCheck(ctx, g, "commit", func() ([]string, error) {
					return gitPaths(ctx, "diff", "--cached", "--name-only", "-z", "--no-renames")
				})
			case "pre-push":
				err = guardCheck(ctx, g, "push", func() ([]string, error) { return pushedPaths(ctx, cmd.InOrStdin()) })
			case "post-commit":
				guardRelease(ctx, g)
			default:
				return fmt.Errorf("unknown hook %q: want pre-commit, pre-push or post-commit", args[0])
			}
			return err
		},
	}
}

// guardClient returns a client for the committer, without starting the daemon.
func guardClient(ctx context.Context, g *globals) (*client.Client, string, error) {
	id, err := g.identity(ctx, false)
	if err != nil {
		return nil, "", err
	}
	paths, err := home.Resolve("")
	if err != nil {
		return nil, "", err
	}
	return client.New(paths).As(id.Workspace, id.Agent), id.Agent, nil
}

// guardCheck refuses the commit or push when its paths run into another
// agent's exclusive reservation. Trouble talking to the daemon lets it
// through with a warning: a guard that breaks commits by its own failure
// would soon be uninstalled.
func guardCheck(ctx context.Context, g *globals, what string, paths func() ([]string, error)) error {
	ps, err := paths()
	if err != nil {
		return fmt.Errorf("guard: list the %s's files: %w", what, err)
	}
	if len(ps) == 0 {
		return nil
	}
	c, agent, err := guardClient(ctx, g)
	if err != nil {
		fmt.Fprintf(g.stderr, "parley guard: warning: reservations not checked: %v\n", err)
		return nil
	}
	pats := make([]string, len(ps))
	for i, p := range ps {
		pats[i] = hub.EscapePath(p)
	}
	res, err := c.CheckPaths(ctx, pats)
	if err != nil {
		fmt.Fprintf(g.stderr, "parley guard: warning: reservations not checked: %v\n", err)
		return nil
	}
	if len(res.Conflicts) == 0 {
		return nil
	}
	who := "no agent: no --agent, $PARLEY_AGENT or single identity file here, so every reservation counts"
	if agent != "" {
		who = "you are " + agent
	}
	fmt.Fprintf(g.stderr, "parley guard: this %s touches files that other agents hold (%s):\n", what, who)
	for _, c := range res.Conflicts {
		fmt.Fprintf(g.stderr, "  %s\n", c.Message)
	}
	fmt.Fprintf(g.stderr, "Wait for them, ask them to release (parley send NAME ...), or let this one through: %s=off git %s ...\n", guardBypassEnv, what)
	if agent == "" {
		fmt.Fprintf(g.stderr, "If one of them is you, say so: PARLEY_AGENT=NAME git %s ...\n", what)
	}
	return &exitError{code: 1}
}

// guardRelease releases the committer's reservations of the files just
// committed. Only reservations of those very paths end: a pattern such as
// src/** covers more than one commit, and stays until released or expired.
func guardRelease(ctx context.Context, g *globals) {
	ps, err := gitPaths(ctx, "diff-tree", "--no-commit-id", "--name-only", "-r", "-z", "--no-renames", "--root", "HEAD")
	if err != nil || len(ps) == 0 {
		return
	}
	c, agent, err := guardClient(ctx, g)
	if err != nil || agent == "" {
		return
	}
	pats := make([]string, len(ps))
	for i, p := range ps {
		pats[i] = hub.EscapePath(p)
	}
	res, err := c.ReleaseReservations(ctx, api.ReleaseRequest{Paths: pats})
	if err != nil {
		if !client.IsNotRunning(err) {
			fmt.Fprintf(g.stderr, "parley guard: warning: reservations not released: %v\n", err)
		}
		return
	}
	if n := len(res.Reservations); n > 0 {
		fmt.Fprintf(g.stderr, "parley guard: released %s of the committed files\n", plural(n, "reservation"))
	}
}

// pushedPaths lists the files changed by the commits a push sends, from the
// refs git gives pre-push on stdin: "<local ref> <local sha> <remote ref> <remote sha>".
func pushedPaths(ctx context.Context, stdin io.Reader) ([]string, error) {
	var all []string
	sc := bufio.NewScanner(stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 4 || strings.Trim(f[1], "0") == "" {
			continue // malformed, or a deletion: nothing is sent
		}
		local, remote := f[1], f[3]
		args := []string{"log", "--format=", "--name-only", "-z", "--no-renames", local, "--not"}
		var ps []string
		var err error
		if strings.Trim(remote, "0") != "" {
			ps, err = gitPaths(ctx, append(args, remote)...)
		}
		if strings.Trim(remote, "0") == "" || err != nil {
			// A new branch, or a remote commit we do not have: whatever
			// no remote-tracking branch has yet.
			ps, err = gitPaths(ctx, append(args, "--remotes")...)
		}
		if err != nil {
			return nil, err
		}
		all = append(all, ps...)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	slices.Sort(all)
	return slices.Compact(all), nil
}

// gitPaths runs a git command that prints NUL-separated paths.
func gitPaths(ctx context.Context, args ...string) ([]string, error) {
	out, err := git(ctx, nil, args...)
	if err != nil {
		return nil, err
	}
	var ps []string
	for _, p := range strings.Split(string(out), "\x00") {
		if p = strings.TrimLeft(p, "\n"); p != "" {
			ps = append(ps, p)
		}
	}
	return ps, nil
}

func git(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Stdin = stdin
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}
