package cli

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/parley-dev/parley/internal/home"
)

func dashboardCmd(g *globals) *cobra.Command {
	var noOpen, signOutAll bool
	var as string
	cmd := &cobra.Command{
		Use:   "dashboard [--no-open] [--as NAME] [--sign-out-all]",
		Short: "Open the control room in a browser, signed in by a one-time link",
		Long: `Open the Parley control room: a live web page of the workspaces, agents,
messages and threads, managed agents, the permission inbox and the gateway.

The daemon serves it on a loopback TCP listener of its own (started on first
use, reused after) and gives a one-time sign-in link, valid for a few minutes,
which this command opens with the system's browser; --no-open prints it on
stdout instead. In the page you act as a person, human:NAME, NAME being your
OS user name unless --as says otherwise.

A sign-in lasts 12 hours, across daemon restarts on the same port. Before an
open page reconnects to a restarted daemon, it asks the listener to prove it
is this daemon, and sends its sign-in nowhere else. A daemon that comes back
on another port, or with a new admin token ($PARLEY_HOME/token), ends the
sign-ins; --sign-out-all ends them now: open pages show the sign-in screen.`,
		Example: `  parley dashboard
  parley dashboard --no-open          # print the link, e.g. to open it elsewhere on this machine
  parley dashboard --as alice
  parley dashboard --sign-out-all     # end every sign-in, say after a browser was left open elsewhere`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if as == "" {
				as = home.UserName()
			}
			c, id, err := g.client(cmd.Context(), false)
			if err != nil {
				return err
			}
			if signOutAll {
				res, err := c.DashboardSignOutAll(cmd.Context())
				if err != nil {
					return err
				}
				return g.out(res, func(w io.Writer) { fmt.Fprintf(w, "ended %d dashboard sign-in(s)\n", res.Ended) })
			}
			l, err := c.DashboardLogin(cmd.Context(), as)
			if err != nil {
				return err
			}
			link := l.URL
			if id.Workspace != "" {
				link += "&workspace=" + url.QueryEscape(id.Workspace)
			}
			if g.json {
				l.URL = link
				return g.printJSON(l)
			}
			if noOpen {
				fmt.Fprintln(g.stdout, link)
				return nil
			}
			if err := openBrowser(link); err != nil {
				fmt.Fprintf(g.stderr, "could not open a browser (%v); open this link (it works once):\n", err)
				fmt.Fprintln(g.stdout, link)
				return nil
			}
			fmt.Fprintf(g.stderr, "opened the control room at http://%s as human:%s\n", l.Addr, as)
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&noOpen, "no-open", false, "print the sign-in link instead of opening a browser")
	f.StringVar(&as, "as", "", "the name you act as in the page, human:NAME (default: your OS user name)")
	f.BoolVar(&signOutAll, "sign-out-all", false, "end every dashboard sign-in (open pages show the sign-in screen) and print no link")
	addJSON(cmd, g)
	return cmd
}

// openBrowser opens link with the desktop's opener. The link is an argument,
// never a shell string.
func openBrowser(link string) error {
	var c *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		c = exec.Command("open", link)
	case "windows":
		c = exec.Command("rundll32", "url.dll,FileProtocolHandler", link)
	default:
		if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
			return fmt.Errorf("no display")
		}
		c = exec.Command("xdg-open", link)
	}
	return c.Start()
}
