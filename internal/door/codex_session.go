package door

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"

	"github.com/coder/websocket"

	"github.com/parley-dev/parley/internal/codexrpc"
)

// When a Codex session ends. The interactive codex runs on an app-server
// daemon that outlives the TUI: after /quit the daemon, the thread and the
// thread's MCP servers stay up, and a letter queued to the thread would run
// a turn that nobody sees. What Codex says of it (0.171, observed): once no
// client is subscribed to a thread and no turn runs, the app-server waits
// thread_unload_delay_secs (default 30 minutes; `parley init codex` sets 0)
// and then unloads the thread: every connection gets
// thread/status/changed {notLoaded} and thread/closed, thread/read says
// notLoaded, and the thread's MCP servers exit. A CodexWatch tells of each
// thread that closes, so that its door closes with it. (The thread's status
// and loaded list do not change at /quit itself, nor do the daemon's
// diagnostics; the TUI's process is not the hooks' parent, the daemon is.)

// CodexWatch watches the app-server of one CODEX_HOME for threads that
// close.
type CodexWatch struct {
	Home string // CODEX_HOME
	// ClientName and ClientVersion name Parley to the app-server.
	ClientName, ClientVersion string
	// NotLoaded, if set, is called instead of closed with each thread of
	// open that the app-server knows and has not loaded when the watch
	// starts (a `codex exec` thread, or one that closed while nobody
	// watched): its queue would keep a letter until a client resumes it.
	NotLoaded func(thread string)
}

// Watch connects to the app-server and calls closed with each thread that
// closes: each of open (the threads whose doors are open) that is not
// loaded when the watch starts (it closed while nobody watched; NotLoaded
// instead, if set), then each
// thread that the app-server announces closed, until ctx ends or the
// connection is lost (the app-server stopped). It returns ErrGone when
// there is no app-server at Home (its control socket is gone: every
// thread's session there is over), else the error that ended the watch.
func (w *CodexWatch) Watch(ctx context.Context, open []string, closed func(thread string)) error {
	const op = "codex watch"
	sock := ControlSocket(w.Home)
	target, err := filepath.EvalSymlinks(sock)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return &Error{Op: op, Kind: ErrGone, Err: fmt.Errorf("no app-server at %s: %w", sock, err)}
		}
		return &Error{Op: op, Err: err}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return dialUnix(ctx, target)
	}}}
	dctx, dcancel := context.WithTimeout(ctx, codexTimeout)
	ws, _, err := websocket.Dial(dctx, "ws://localhost/rpc", &websocket.DialOptions{HTTPClient: hc})
	dcancel()
	if err != nil {
		return &Error{Op: op, Kind: kindOf(err), Err: fmt.Errorf("connect to the app-server: %w", err)}
	}
	defer ws.CloseNow()
	ws.SetReadLimit(16 << 20)
	rpc := codexrpc.New(func(ctx context.Context, msg []byte) error { return ws.Write(ctx, websocket.MessageText, msg) },
		&codexrpc.Options{Timeout: codexTimeout, Peer: "codex app-server"})
	var (
		mu     sync.Mutex
		told   = map[string]bool{}
		notify = func(thread string) {
			mu.Lock()
			first := !told[thread]
			told[thread] = true
			mu.Unlock()
			if first {
				closed(thread)
			}
		}
	)
	lost := make(chan error, 1)
	go func() {
		for {
			_, b, err := ws.Read(ctx)
			if err != nil {
				rpc.Fail(err)
				lost <- err
				return
			}
			var m codexrpc.Message
			if json.Unmarshal(b, &m) != nil {
				continue
			}
			switch {
			case m.IsAnswer():
				rpc.Answer(&m)
			case m.Method == "thread/closed":
				var p struct {
					ThreadID string `json:"threadId"`
				}
				if json.Unmarshal(m.Params, &p) == nil && p.ThreadID != "" {
					notify(p.ThreadID)
				}
			case m.Method == "thread/status/changed":
				var p struct {
					ThreadID string `json:"threadId"`
					Status   struct {
						Type string `json:"type"`
					} `json:"status"`
				}
				if json.Unmarshal(m.Params, &p) == nil && p.ThreadID != "" && p.Status.Type == "notLoaded" {
					notify(p.ThreadID)
				}
			}
		}
	}()
	name, version := w.ClientName, w.ClientVersion
	if name == "" {
		name = "parley"
	}
	if version == "" {
		version = "dev"
	}
	if err := rpc.Call(ctx, "initialize", map[string]any{"clientInfo": map[string]string{"name": name, "version": version},
		"capabilities": map[string]any{"experimentalApi": true}}, nil); err != nil {
		return codexErr(op, err)
	}
	if err := rpc.Notify(ctx, "initialized"); err != nil {
		return codexErr(op, err)
	}
	// What closed before the watch began.
	for _, t := range open {
		var res struct {
			Thread struct {
				Status struct {
					Type string `json:"type"`
				} `json:"status"`
			} `json:"thread"`
		}
		err := rpc.Call(ctx, "thread/read", map[string]any{"threadId": t, "includeTurns": false}, &res)
		var re *codexrpc.Error
		switch {
		case errors.As(err, &re):
			notify(t) // no such thread here: nothing to write to
		case err != nil:
			return codexErr(op, err)
		case res.Thread.Status.Type == "notLoaded" && w.NotLoaded != nil:
			w.NotLoaded(t)
		case res.Thread.Status.Type == "notLoaded":
			notify(t)
		}
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case err := <-lost:
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if _, serr := os.Stat(sock); errors.Is(serr, os.ErrNotExist) {
			return &Error{Op: op, Kind: ErrGone, Err: fmt.Errorf("the app-server stopped: %w", err)}
		}
		return &Error{Op: op, Err: fmt.Errorf("app-server connection: %w", err)}
	}
}
