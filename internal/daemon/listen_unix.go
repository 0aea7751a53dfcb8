//go:build unix

package daemon

import (
	"net"
	"syscall"
)

// listenUnix listens on a new socket at path that only this user may use:
// made under umask 077, so there is no moment when it is open to others.
func listenUnix(path string) (net.Listener, error) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	return net.Listen("unix", path)
}
