package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Codex runs a hook from a user's config only once it is trusted: its key
// (the file, event and position) recorded in the same config as
// [hooks.state."KEY"] trusted_hash = HASH, the hash of the hook's definition
// as Codex normalizes it. /hooks in the Codex TUI writes that entry. So does
// the app-server's config/batchWrite, which is what trustCodexHook uses: the
// hash comes from Codex itself (hooks/list), so Parley does not copy Codex's
// hashing, which changes between versions (openai/codex#21615).

// codexTrustTimeout bounds the whole exchange with the app-server.
const codexTrustTimeout = 30 * time.Second

// codexHook is one hook as the app-server's hooks/list reports it.
type codexHook struct {
	Key         string `json:"key"`
	EventName   string `json:"eventName"`
	Command     string `json:"command"`
	SourcePath  string `json:"sourcePath"`
	CurrentHash string `json:"currentHash"`
	TrustStatus string `json:"trustStatus"`
}

// errNoCodex is trustCodexHook's answer when codex is not on PATH.
var errNoCodex = errors.New("codex is not on PATH")

// trustCodexHook records Codex's trust of the event hooks of config
// (Codex's user config.toml) that run command, through a `codex
// app-server` started in cwd, and checks that Codex then calls them trusted.
// It returns how many it trusted (0: they already were).
func trustCodexHook(ctx context.Context, cwd, config, event, command string) (int, error) {
	codex, err := exec.LookPath("codex")
	if err != nil {
		return 0, errNoCodex
	}
	ctx, cancel := context.WithTimeout(ctx, codexTrustTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, codex, "app-server")
	cmd.Dir = cwd
	in, err := cmd.StdinPipe()
	if err != nil {
		return 0, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start codex app-server: %w", err)
	}
	defer func() {
		in.Close() // its end of input ends it
		cmd.Wait()
	}()
	c := &appServer{in: in, out: bufio.NewReaderSize(out, 64<<10)}
	if err := c.call("initialize", map[string]any{"clientInfo": map[string]string{"name": "parley-init", "version": "1"}}, nil); err != nil {
		return 0, err
	}
	if err := c.send(map[string]any{"method": "initialized"}); err != nil {
		return 0, err
	}
	ours := func() ([]codexHook, error) {
		var res struct {
			Data []struct {
				Hooks []codexHook `json:"hooks"`
			} `json:"data"`
		}
		if err := c.call("hooks/list", map[string]any{"cwds": []string{cwd}}, &res); err != nil {
			return nil, err
		}
		var hs []codexHook
		for _, d := range res.Data {
			for _, h := range d.Hooks {
				if strings.EqualFold(h.EventName, event) && h.Command == command && sameFile(h.SourcePath, config) {
					hs = append(hs, h)
				}
			}
		}
		if len(hs) == 0 {
			return nil, fmt.Errorf("codex does not list the hook %q of %s", command, config)
		}
		return hs, nil
	}
	hs, err := ours()
	if err != nil {
		return 0, err
	}
	state := map[string]any{}
	for _, h := range hs {
		if h.TrustStatus != "trusted" {
			state[h.Key] = map[string]string{"trusted_hash": h.CurrentHash}
		}
	}
	if len(state) == 0 {
		return 0, nil
	}
	// upsert merges into hooks.state: the trust of the user's other hooks stays.
	edit := map[string]any{"keyPath": "hooks.state", "value": state, "mergeStrategy": "upsert"}
	if err := c.call("config/batchWrite", map[string]any{"edits": []any{edit}}, nil); err != nil {
		return 0, err
	}
	if hs, err = ours(); err != nil {
		return 0, err
	}
	for _, h := range hs {
		if h.TrustStatus != "trusted" {
			return 0, fmt.Errorf("codex still calls the hook %s %s after recording its trust", h.Key, h.TrustStatus)
		}
	}
	return len(state), nil
}

// appServer is the client side of a `codex app-server`'s JSON-RPC: one
// object a line, no "jsonrpc" member, one call at a time.
type appServer struct {
	in   io.Writer
	out  *bufio.Reader
	next int
}

func (c *appServer) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write to codex app-server: %w", err)
	}
	return nil
}

// call sends a request and reads up to its answer, passing over the
// notifications that come before it.
func (c *appServer) call(method string, params, result any) error {
	c.next++
	id := strconv.Itoa(c.next)
	if err := c.send(map[string]any{"id": c.next, "method": method, "params": params}); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	for {
		line, err := c.out.ReadBytes('\n')
		if err != nil {
			return fmt.Errorf("%s: codex app-server gave no answer: %w", method, err)
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(line, &m) != nil || m.Method != "" || string(m.ID) != id {
			continue
		}
		if m.Error != nil {
			return fmt.Errorf("%s: codex app-server: %s", method, m.Error.Message)
		}
		if result == nil {
			return nil
		}
		if err := json.Unmarshal(m.Result, result); err != nil {
			return fmt.Errorf("%s: read the answer: %w", method, err)
		}
		return nil
	}
}

// sameFile reports whether paths a and b name one file: Codex resolves the
// links of an explicit CODEX_HOME in the paths it reports.
func sameFile(a, b string) bool {
	if a == b {
		return true
	}
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}
