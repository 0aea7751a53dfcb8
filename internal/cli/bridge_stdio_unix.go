//go:build unix

package cli

import (
	"context"
	"io"
	"os"
	"syscall"

	"github.com/parley-dev/parley/internal/bridge"
)

// runBridge runs the bridge on the process's stdio, which it first hands to
// Go's poller where it is a pipe or a socket (what an MCP client spawns its
// servers with): a blocking read parks a thread in the kernel between
// messages, and the runtime's monitor then wakes every 20 µs to watch it,
// at about a third of the bridge's CPU and twice its context switches per
// call (docs/performance.md). The blocking mode of the client's ends is
// restored when the bridge ends.
func runBridge(ctx context.Context, in io.Reader, out io.Writer, opts *bridge.Options) error {
	if f, done := pollable(in); f != nil {
		in = f
		defer done()
	}
	if f, done := pollable(out); f != nil {
		out = f
		defer done()
	}
	return bridge.Run(ctx, in, out, opts)
}

// pollable is x, a pipe or a socket, as a new non-blocking file, or nil.
func pollable(x any) (*os.File, func()) {
	f, ok := x.(*os.File)
	if !ok {
		return nil, nil
	}
	sc, err := f.SyscallConn() // its fd, without making it blocking (Fd would)
	if err != nil {
		return nil, nil
	}
	var nf *os.File
	sc.Control(func(fd uintptr) {
		var st syscall.Stat_t
		if syscall.Fstat(int(fd), &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFIFO && st.Mode&syscall.S_IFMT != syscall.S_IFSOCK {
			return
		}
		dup, err := syscall.Dup(int(fd))
		if err != nil {
			return
		}
		if err := syscall.SetNonblock(dup, true); err != nil {
			syscall.Close(dup)
			return
		}
		nf = os.NewFile(uintptr(dup), f.Name()) // non-blocking: on the poller
	})
	if nf == nil {
		return nil, nil
	}
	return nf, func() {
		nf.Close()
		sc.Control(func(fd uintptr) { syscall.SetNonblock(int(fd), false) })
	}
}
