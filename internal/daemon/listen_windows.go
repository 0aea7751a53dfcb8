//go:build windows

package daemon

import "net"

// listenUnix listens on a new socket at path (AF_UNIX, Windows 10 1803 and
// later). Windows has no umask: the socket takes the ACL of the state
// directory, which in the user's profile only the user can reach.
func listenUnix(path string) (net.Listener, error) { return net.Listen("unix", path) }
