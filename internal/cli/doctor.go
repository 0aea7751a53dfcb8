package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/parley-dev/parley/internal/client"
	"github.com/parley-dev/parley/internal/config"
	"github.com/parley-dev/parley/internal/daemon"
	"github.com/parley-dev/parley/internal/home"
	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/safefile"
	"github.com/parley-dev/parley/internal/store/sqlite"
	"github.com/parley-dev/parley/internal/workspace"
)

// finding is one result of parley doctor.
type finding struct {
	Check  string `json:"check"`
	Status string `json:"status"` // ok, warn or fail
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

type doctorResult struct {
	Findings []finding `json:"findings"`
	Failed   int       `json:"failed"`
	Warned   int       `json:"warned"`
}

func doctorCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check the daemon, the state directory, the database, this identity and the client configs",
		Long: `Check what Parley depends on and say how to fix what is wrong: the state
directory's and the socket's owner and mode, the daemon, config.toml,
daemon.log, the database (page by page, beside a running daemon), the identity
commands here act as, and each client configuration that ` + "`parley init`" + `
wrote in this repository. It changes nothing and never starts the daemon.
Exit status 1 when a check fails.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			res := runDoctor(cmd.Context(), g)
			if err := g.out(res, func(w io.Writer) {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				for _, f := range res.Findings {
					fmt.Fprintf(tw, "%s\t%s\t%s\n", map[string]string{"ok": "ok", "warn": "WARN", "fail": "FAIL"}[f.Status], f.Check, f.Detail)
					if f.Fix != "" {
						fmt.Fprintf(tw, "\t\tfix: %s\n", f.Fix)
					}
				}
				tw.Flush()
				fmt.Fprintf(w, "%d failed, %d warnings\n", res.Failed, res.Warned)
			}); err != nil {
				return err
			}
			if res.Failed > 0 {
				return &exitError{code: 1}
			}
			return nil
		},
	}
	addJSON(cmd, g)
	return cmd
}

func runDoctor(ctx context.Context, g *globals) doctorResult {
	var res doctorResult
	add := func(check, status, detail, fix string) {
		res.Findings = append(res.Findings, finding{Check: check, Status: status, Detail: detail, Fix: fix})
		switch status {
		case "fail":
			res.Failed++
		case "warn":
			res.Warned++
		}
	}
	paths, err := home.Resolve("")
	if err != nil {
		add("state directory", "fail", err.Error(), "set PARLEY_HOME to a shorter directory of your own")
		return res
	}
	homeOK := doctorHome(paths, add)
	conf := doctorConfig(paths, add)
	running := doctorDaemon(ctx, paths, homeOK, add)
	doctorFiles(paths, add)
	doctorDatabase(ctx, paths, conf, add)
	doctorIdentity(ctx, g, paths, running, add)
	doctorClients(ctx, add)
	return res
}

type addFunc func(check, status, detail, fix string)

func doctorHome(paths home.Paths, add addFunc) bool {
	st, err := os.Stat(paths.Home)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		add("state directory", "ok", paths.Home+" does not exist yet", "")
		return true
	case err != nil:
		add("state directory", "fail", err.Error(), "")
		return false
	}
	if err := safefile.CheckDir(paths.Home, st); err != nil {
		var ne *safefile.NotOwnedError
		fix := ""
		if errors.As(err, &ne) {
			fix = ne.Fix
		}
		add("state directory", "fail", err.Error(), fix)
		return false
	}
	if m := st.Mode().Perm(); m != 0o700 {
		add("state directory", "warn", fmt.Sprintf("%s has mode %04o; others can list it", paths.Home, m), "chmod 700 "+paths.Home+" (the daemon does so when it starts)")
		return true
	}
	add("state directory", "ok", paths.Home+" is yours, mode 0700", "")
	return true
}

func doctorConfig(paths home.Paths, add addFunc) *config.Config {
	conf, err := config.Load(paths.Config)
	if err != nil {
		add("config.toml", "fail", err.Error(), "fix the line named, or move "+paths.Config+" aside to use the defaults")
		return nil
	}
	store := "SQLite"
	if conf.Store != "" || os.Getenv(daemon.EnvStore) != "" {
		store = "PostgreSQL"
	}
	detail := fmt.Sprintf("store %s, %d upstreams", store, len(conf.Upstreams))
	if conf.Retention != "" {
		detail += ", retention " + conf.Retention
	} else {
		detail += ", no retention (messages are kept for ever)"
	}
	add("config.toml", "ok", detail, "")
	return conf
}

func doctorDaemon(ctx context.Context, paths home.Paths, homeOK bool, add addFunc) bool {
	if !homeOK {
		add("daemon", "fail", "not checked: the state directory is not safe to use", "")
		return false
	}
	if st, err := os.Lstat(paths.Socket); err == nil {
		if err := safefile.CheckSocket(paths.Socket); err != nil {
			add("socket", "fail", err.Error(), "remove "+paths.Socket+" if you did not make it; `parley daemon start` makes a new one")
			return false
		}
		if m := st.Mode().Perm(); m&0o077 != 0 {
			add("socket", "fail", fmt.Sprintf("%s has mode %04o: others may talk to the daemon as you", paths.Socket, m), "parley daemon stop && parley daemon start (the daemon makes it 0600)")
		} else {
			add("socket", "ok", paths.Socket+" is yours, mode 0600", "")
		}
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	h, err := client.New(paths).Health(cctx)
	switch {
	case err == nil:
		add("daemon", "ok", fmt.Sprintf("running, pid %d, version %s", h.PID, h.Version), "")
		return true
	case client.IsNotRunning(err):
		detail := "not running (commands start it when needed)"
		if li, live := daemon.ReadLock(paths.PID); li.PID > 0 && !live {
			detail += fmt.Sprintf("; a pid lock of a dead daemon (pid %d) is left behind, which the next start replaces", li.PID)
		}
		add("daemon", "warn", detail, "parley daemon start")
	default:
		add("daemon", "fail", err.Error(), "see "+paths.Log+"; `parley daemon stop` then `parley daemon start`")
	}
	return false
}

func doctorFiles(paths home.Paths, add addFunc) {
	st, err := os.Lstat(paths.Log)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return
	case err != nil:
		add("daemon.log", "fail", err.Error(), "")
	case st.Mode()&fs.ModeSymlink != 0:
		add("daemon.log", "fail", paths.Log+" is a symbolic link: the daemon refuses to write through it", "remove it (check where it points first)")
	case !st.Mode().IsRegular():
		add("daemon.log", "fail", paths.Log+" is not a regular file", "remove it")
	case notOwned(paths.Log, st) != "":
		add("daemon.log", "fail", notOwned(paths.Log, st), "remove it")
	case st.Size() > 100<<20:
		add("daemon.log", "warn", fmt.Sprintf("%s is %d MB", paths.Log, st.Size()>>20), "truncate it while the daemon is stopped, or rotate it")
	default:
		add("daemon.log", "ok", fmt.Sprintf("%d KB", st.Size()>>10), "")
	}
}

// notOwned says why the file at path does not belong to this user, or "".
func notOwned(path string, st fs.FileInfo) string {
	err := safefile.CheckOwner(path, st)
	var ne *safefile.NotOwnedError
	if errors.As(err, &ne) {
		return ne.Path + " " + ne.Reason
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

func doctorDatabase(ctx context.Context, paths home.Paths, conf *config.Config, add addFunc) {
	if conf != nil && (conf.Store != "" || os.Getenv(daemon.EnvStore) != "") {
		add("database", "ok", "PostgreSQL: not checked here (use its own tools)", "")
		return
	}
	st, err := os.Stat(paths.DB)
	if errors.Is(err, fs.ErrNotExist) {
		add("database", "ok", "not created yet", "")
		return
	}
	if err != nil {
		add("database", "fail", err.Error(), "")
		return
	}
	start := time.Now()
	if err := sqlite.Verify(ctx, paths.DB, true); err != nil {
		add("database", "fail", err.Error(), "`parley restore BACKUP` (daemon stopped), or move "+paths.DB+" aside to start empty")
		return
	}
	add("database", "ok", fmt.Sprintf("%s: %d MB, every page checked in %s", paths.DB, st.Size()>>20, time.Since(start).Round(time.Millisecond)), "")
}

func doctorIdentity(ctx context.Context, g *globals, paths home.Paths, running bool, add addFunc) {
	id, err := g.identity(ctx, false)
	if err != nil {
		add("identity", "fail", err.Error(), "")
		return
	}
	if id.Agent == "" {
		add("identity", "ok", "no agent identity here (workspace "+id.Workspace+")", "")
		return
	}
	detail := fmt.Sprintf("%s in workspace %s (from %s)", id.Agent, id.Workspace, id.Source)
	if running {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if _, err := client.New(paths).As(id.Workspace, id.Agent).GetAgent(cctx, id.Agent); hub.KindOf(err) == hub.NotFound {
			add("identity", "warn", detail+": not registered with the daemon", fmt.Sprintf("parley join --name %s --role ROLE", id.Agent))
			return
		}
	}
	add("identity", "ok", detail, "")
}

// doctorClients compares each client configuration that names a parley
// server with what `parley init` would write now, for the agent it names.
func doctorClients(ctx context.Context, add addFunc) {
	dir, err := os.Getwd()
	if err != nil {
		return
	}
	loc, err := workspace.Locate(dir)
	if err != nil {
		return
	}
	for _, c := range []string{"claude", "codex", "cursor", "gemini", "opencode", "qwen"} {
		p := initPlan{root: loc.Root, command: parleyCommand(), client: c}
		args := p.configuredArgs()
		if args == nil {
			continue
		}
		p.agent, p.role = agentArg(args), flagValue(args, "--role")
		if c == "claude" {
			// Whether its sessions take Parley's letters or hold them.
			if l := checkClaudeLetters(loc.Root, nil); l.Holds {
				add("claude letters", "warn", l.Detail, l.Fix)
			} else {
				add("claude letters", "ok", l.Detail, "")
			}
		}
		if c == "qwen" {
			doctorQwenLetters(add)
		}
		doctorDoor(ctx, c, add)
		var changes []fileChange
		switch c {
		case "claude":
			changes, err = p.claude()
		case "codex":
			changes, err = p.codex()
		case "cursor":
			changes, err = p.jsonServer(filepath.Join(loc.Root, ".cursor", "mcp.json"), false)
		case "gemini":
			changes, err = p.jsonServer(filepath.Join(loc.Root, ".gemini", "settings.json"), false)
		case "opencode":
			changes, err = p.opencode()
		case "qwen":
			changes, err = p.qwen()
		}
		fix := "parley init " + c
		if p.agent != "" {
			fix += " --agent " + p.agent
		}
		if p.role != "" {
			fix += " --role " + p.role
		}
		if err != nil {
			add("client "+c, "fail", err.Error(), "")
			continue
		}
		var stale []string
		for _, ch := range changes {
			if ch.note == "" && !(ch.exists && bytes.Equal(ch.old, ch.new)) {
				stale = append(stale, ch.path)
			}
		}
		if len(stale) > 0 {
			add("client "+c, "warn", "differs from what parley init writes: "+strings.Join(stale, ", "), fix)
			continue
		}
		who := "as agent " + p.agent
		if p.agent == "" {
			// (A zero-flag init: each session is named after itself.)
			who = fmt.Sprintf("each session as an agent of its own (%s-%s-...)", c, filepath.Base(loc.Root))
		}
		add("client "+c, "ok", "configured, "+who, "")
	}
}

// flagValue is the value of flag in args ("--role R" or "--role=R"), or "".
func flagValue(args []string, flag string) string {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v
		}
	}
	return ""
}
