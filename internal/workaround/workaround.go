// Package workaround says which of the daemon's workarounds of go-sdk costs
// are on. They share one cause (the SDK's decoder allocates a 32 KiB buffer
// for every JSON value it reads), and each is measured on and off in
// docs/performance.md so that an SDK upgrade can retire what it no longer
// needs (a schema cache was measured there and retired):
//
//	quickargs    arguments checked without the schema validator when sure (internal/profile/quickargs.go)
//	typed        tools decoded by our adapter, not mcp.AddTool's (internal/profile/tools.go)
//	gctuner      the daemon's collector goal (internal/daemon/gc.go)
//
// PARLEY_SDK_WORKAROUNDS=-name[,-name] turns the named ones off, for that
// measurement only. It is a package of its own so that the transport
// (mcpserver), the tool surfaces (profile) and the daemon read it alike.
package workaround

import (
	"os"
	"slices"
	"strings"
	"sync"
)

const env = "PARLEY_SDK_WORKAROUNDS"

var off = sync.OnceValue(func() []string { return parse(os.Getenv(env)) })

// parse reads the value of PARLEY_SDK_WORKAROUNDS: the names prefixed with
// "-", comma-separated.
func parse(v string) []string {
	var off []string
	for _, f := range strings.Split(v, ",") {
		if name, ok := strings.CutPrefix(strings.TrimSpace(f), "-"); ok {
			off = append(off, name)
		}
	}
	return off
}

// Off reports whether PARLEY_SDK_WORKAROUNDS turned the named workaround
// off.
func Off(name string) bool { return slices.Contains(off(), name) }
