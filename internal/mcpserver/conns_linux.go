//go:build linux && !parley_portable

package mcpserver

import "golang.org/x/sys/unix"

// platformProbe is the probe of WatchConns: Linux's own, unless the
// parley_portable build tag asks for the portable one.
var platformProbe sockProbe = linuxProbe{}

// linuxProbe asks the socket itself: poll's POLLRDHUP sees a peer's close
// before anyone reads it, and SIOCOUTQ counts what the peer's kernel has
// not acknowledged.
type linuxProbe struct{}

func (linuxProbe) peerGone(fd int) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
	if n, err := unix.Poll(fds, 0); err == nil && n > 0 {
		return fds[0].Revents&(unix.POLLRDHUP|unix.POLLHUP|unix.POLLERR) != 0
	}
	return false
}

func (linuxProbe) unread(fd int) int {
	n, _ := unix.IoctlGetInt(fd, unix.SIOCOUTQ) // 0 on error
	return n
}
