// Package tmux is what Parley knows of tmux: whether a process runs inside it,
// the window name an agent takes as its identity (AgentMail's model), whether
// the session is still there, and typing a notice into an idle pane. It runs
// the tmux command; it never links to tmux. The CLI (`mcp serve`) and the
// daemon's nudger import it.
package tmux

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Env is the tmux context of a process, from $TMUX and $TMUX_PANE.
type Env struct {
	Socket string // the server's socket path: the first field of $TMUX
	Pane   string // the pane id, e.g. %3
}

// FromEnv reads the process's tmux context; ok is false outside tmux.
func FromEnv() (e Env, ok bool) {
	t, pane := os.Getenv("TMUX"), os.Getenv("TMUX_PANE")
	if t == "" || pane == "" {
		return Env{}, false
	}
	sock, _, _ := strings.Cut(t, ",")
	return Env{Socket: sock, Pane: pane}, true
}

// Client runs tmux commands against one server.
type Client struct {
	// Socket is the server's socket path; "" means tmux's default (or $TMUX).
	Socket string
	// Bin is the tmux executable; "" means "tmux" on $PATH.
	Bin string
}

// ErrNoTmux means the tmux command is not installed.
var ErrNoTmux = errors.New("tmux is not installed")

// Unavailable says why tmux cannot run on this platform (it wraps
// ErrNoTmux), or is nil.
func Unavailable() error { return unavailable }

// cmdTimeout bounds one tmux command: a wedged server must not wedge us.
const cmdTimeout = 2 * time.Second

func (c Client) run(ctx context.Context, args ...string) (string, error) {
	if unavailable != nil {
		return "", unavailable
	}
	bin := c.Bin
	if bin == "" {
		bin = "tmux"
	}
	if c.Socket != "" {
		args = append([]string{"-S", c.Socket}, args...)
	}
	ctx, cancel := context.WithTimeout(ctx, cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return "", ErrNoTmux
		}
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("tmux %s: %s", args[firstCmd(args)], msg)
	}
	// display-message reports a missing target on stderr with status 0.
	if msg := strings.TrimSpace(errb.String()); msg != "" && strings.HasPrefix(msg, "can't find") {
		return "", fmt.Errorf("tmux: %s", msg)
	}
	return strings.TrimRight(out.String(), "\n"), nil
}

// firstCmd is the index of the tmux command in args (after -S PATH).
func firstCmd(args []string) int {
	if len(args) > 2 && args[0] == "-S" {
		return 2
	}
	return 0
}

// WindowName returns the name of the window holding pane.
func (c Client) WindowName(ctx context.Context, pane string) (string, error) {
	return c.run(ctx, "display-message", "-p", "-t", pane, "#W")
}

// Alive reports whether the session holding pane still exists. It is false
// when the pane, its session or the whole server is gone; err is set only when
// tmux itself cannot be run.
func (c Client) Alive(ctx context.Context, pane string) (bool, error) {
	_, err := c.run(ctx, "has-session", "-t", pane)
	if errors.Is(err, ErrNoTmux) {
		return false, err
	}
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	return err == nil, nil
}

// Watch polls every interval until the session holding pane is gone, then
// returns nil; it returns ctx's error when ctx ends first, and ErrNoTmux when
// tmux cannot be run. A failed check is confirmed by a second one right away,
// so that one slow tmux command is not taken for a loss.
func (c Client) Watch(ctx context.Context, pane string, every time.Duration) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		gone := 0
		for range 2 {
			ok, err := c.Alive(ctx, pane)
			if errors.Is(err, ErrNoTmux) {
				return err
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if ok {
				break
			}
			gone++
			time.Sleep(50 * time.Millisecond)
		}
		if gone == 2 {
			return nil
		}
	}
}

// PaneState is what a pane shows at its cursor.
type PaneState struct {
	Line    string // the text of the cursor's line
	CursorX int
	InMode  bool // copy mode or another mode: a person is using the pane
	Dead    bool // the pane's process exited
}

// State reads the cursor line and mode of pane.
func (c Client) State(ctx context.Context, pane string) (PaneState, error) {
	out, err := c.run(ctx, "display-message", "-p", "-t", pane, "#{cursor_x} #{cursor_y} #{pane_in_mode} #{pane_dead}")
	if err != nil {
		return PaneState{}, err
	}
	f := strings.Fields(out)
	if len(f) != 4 {
		return PaneState{}, fmt.Errorf("tmux: unexpected pane state %q", out)
	}
	x, _ := strconv.Atoi(f[0])
	y, err := strconv.Atoi(f[1])
	if err != nil {
		return PaneState{}, fmt.Errorf("tmux: unexpected cursor %q", out)
	}
	st := PaneState{CursorX: x, InMode: f[2] == "1", Dead: f[3] == "1"}
	line, err := c.run(ctx, "capture-pane", "-p", "-t", pane, "-S", strconv.Itoa(y), "-E", strconv.Itoa(y))
	if err != nil {
		return PaneState{}, err
	}
	st.Line = line
	return st, nil
}

// HasInput reports whether the cursor line holds text typed but not yet sent.
//
// The heuristic: a line that holds only a prompt is idle. Box-drawing
// characters (the frame of Claude Code's or Codex's input box) become spaces;
// then the line is cut after its first prompt marker (>, ›, ❯, $, %, #, »)
// that is followed by a space or ends the line, so "│ > │", "$ " and
// "user@host:~/src$ " are idle, and anything after the marker is input. A
// line with no such marker counts as input. It errs on the side of "has
// input": a false "busy" costs one missed nudge, a false "idle" splices text
// into a person's typing.
func (s PaneState) HasInput() bool {
	line := strings.Map(func(r rune) rune {
		if r >= 0x2500 && r <= 0x257F { // box drawing
			return ' '
		}
		return r
	}, s.Line)
	line = strings.TrimSpace(line)
	if line == "" {
		return false
	}
	// The text after the first prompt marker that is followed by a space (or
	// ends the line).
	for i, r := range line {
		if !isPromptMarker(r) {
			continue
		}
		rest := line[i+utf8.RuneLen(r):]
		if rest == "" || rest[0] == ' ' || rest[0] == '\t' {
			return strings.TrimSpace(rest) != ""
		}
	}
	return true
}

func isPromptMarker(r rune) bool { return strings.ContainsRune(">›❯$%#»", r) }

// Type types text into pane literally, then Enter.
func (c Client) Type(ctx context.Context, pane, text string) error {
	if _, err := c.run(ctx, "send-keys", "-t", pane, "-l", text); err != nil {
		return err
	}
	_, err := c.run(ctx, "send-keys", "-t", pane, "Enter")
	return err
}

// AgentName turns a window name into a valid agent name: characters other than
// letters, digits, '.', '_' and '-' become '-', leading punctuation is
// dropped, and the result is cut to 64 bytes. It returns "" when nothing is left.
func AgentName(window string) string {
	var b strings.Builder
	for _, r := range strings.TrimSpace(window) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		case b.Len() == 0:
		case r == '.' || r == '_' || r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	s := b.String()
	for len(s) > 64 {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	return s
}
