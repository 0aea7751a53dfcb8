// Command parley is a message bus and control room for AI coding agents.
package main

import (
	"context"
	"os"
	"runtime/debug"

	"github.com/parley-dev/parley/internal/cli"
)

func main() {
	if os.Getenv("GOGC") == "" {
		// The MCP SDK allocates a 32 KiB buffer for every JSON message it
		// decodes, so the collector ran a third of the daemon's CPU under
		// load. Collecting at 200% cut CPU per MCP send by ~30% for ~20 MB
		// more RSS with 1,000 sessions (docs/performance.md). The process
		// decides this, not the daemon package; GOGC overrides. A daemon
		// goes further once running: see internal/daemon's tuneGC.
		debug.SetGCPercent(200)
	}
	os.Exit(cli.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
