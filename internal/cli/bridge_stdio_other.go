//go:build !unix

package cli

import (
	"context"
	"io"

	"github.com/parley-dev/parley/internal/bridge"
)

// runBridge runs the bridge on the process's stdio.
func runBridge(ctx context.Context, in io.Reader, out io.Writer, opts *bridge.Options) error {
	return bridge.Run(ctx, in, out, opts)
}
