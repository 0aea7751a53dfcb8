//go:build windows

package e2e

import (
	"net"
	"os"
	"testing"
)

// The hang-up races peek at sockets and fill pipes with Unix calls; on
// Windows those tests skip.

func answered(t *testing.T, conn net.Conn) <-chan struct{} {
	t.Skip("peeks at a socket: Unix only")
	return nil
}

func fillPipe(t *testing.T, w *os.File) { t.Skip("needs a non-blocking pipe write: Unix only") }

func mkfifo(t *testing.T, path string) { t.Skip("Windows has no FIFOs") }
