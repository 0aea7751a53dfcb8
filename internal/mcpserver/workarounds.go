package mcpserver

import (
	"os"
	"slices"
	"strings"
	"sync"
)

// The daemon works around costs of the go-sdk, all from one cause (its
// decoder allocates a 32 KiB buffer for every JSON value it reads), and each
// is measured on and off in docs/performance.md so that an SDK upgrade can
// retire what it no longer needs (a schema cache was measured there and
// retired):
//
//	quickargs    arguments checked without the schema validator when sure (quickargs.go)
//	typed        tools decoded by our adapter, not mcp.AddTool's (tools.go)
//	hijackget    a session's GET stream on its hijacked connection (getstream.go)
//	gctuner      the daemon's collector goal (internal/daemon/gc.go)
//	stream       the bridge's stream session (stream.go, internal/bridge)
//
// PARLEY_SDK_WORKAROUNDS=-name[,-name] turns the named ones off, for that
// measurement only.
const workaroundsEnv = "PARLEY_SDK_WORKAROUNDS"

var workaroundsOff = sync.OnceValue(func() []string {
	var off []string
	for _, f := range strings.Split(os.Getenv(workaroundsEnv), ",") {
		if name, ok := strings.CutPrefix(strings.TrimSpace(f), "-"); ok {
			off = append(off, name)
		}
	}
	return off
})

// WorkaroundOff reports whether PARLEY_SDK_WORKAROUNDS turned the named
// workaround off.
func WorkaroundOff(name string) bool { return slices.Contains(workaroundsOff(), name) }
