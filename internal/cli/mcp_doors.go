package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/door"
	"github.com/parley-dev/parley/internal/hub"
)

// clientDoors are the doors of the client session that started this
// server, besides Claude Code's inbox and Codex's thread (which the hello
// carries apart): a Qwen Code session's cross-session inbox (its socket
// in QWEN_CODE_MESSAGING_SOCKET, its record in $QWEN_HOME/sessions), and
// an opencode instance's local server (OPENCODE_PID, the port it listens
// on). What cannot be found is said on stderr: the session then wakes by
// its other paths only.
func clientDoors(ctx context.Context, stderr io.Writer) []api.DoorRequest {
	var out []api.DoorRequest
	if sock := os.Getenv(door.EnvQwenSocket); sock != "" {
		path, rec, err := door.FindQwenRecord(door.QwenHome(os.Getenv), sock, os.Getppid())
		if err != nil {
			fmt.Fprintf(stderr, "parley mcp serve: no door into this Qwen Code session: %v\n", err)
		} else {
			out = append(out, api.DoorRequest{Kind: string(hub.DoorQwen), Session: rec.SessionID, Address: path})
		}
	}
	if s := os.Getenv(door.EnvOpencodePID); s != "" && os.Getenv("OPENCODE") != "" {
		pid, _ := strconv.Atoi(s)
		dir, _ := os.Getwd()
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		url, _, err := door.OpencodeServer(ctx, pid, dir, opencodeConfigPort(dir))
		if err != nil {
			fmt.Fprintf(stderr, "parley mcp serve: no door into this opencode instance (start opencode with --port 0 to open its local server): %v\n", err)
		} else {
			out = append(out, api.DoorRequest{Kind: string(hub.DoorOpencode), Session: dir, Address: url})
		}
	}
	return out
}
